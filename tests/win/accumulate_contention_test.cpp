/* SPDX-License-Identifier: MIT */
/*
 * The accumulate family under contention, over real processes: N origins
 * hammer the same elements of one target at once with fetch_and_op,
 * array accumulates (int64 and double), CAS-based increments and MAXLOC on
 * DOUBLE_INT pairs, mixing single-element atomics with queued array
 * accumulates on overlapping elements; every total must be exact and every
 * fetch_and_op ticket unique; two int32 summed lane-wise in one word
 * keep their lanes apart (the low one wraps through zero). Then a target that computes and never calls
 * librma while origins accumulate into it (truly passive), in every
 * accumulate path (RMA_ACC_PATH) and progress mode (RMA_PROGRESS).
 */
#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <string>
#include <tuple>
#include <vector>

#include <rma/rma.h>

#include "support/multiproc.h"
#include "win/accumulate_test_util.h"
#include "win/window_test_util.h"

using namespace rmatest;

namespace {

struct DoubleInt {
	double v;
	int i;
};

/* Layout of rank 0's window, in 8-byte units (disp_unit 8). */
constexpr int kCounter = 0;       /* fetch_and_op SUM tickets */
constexpr int kCasCounter = 1;    /* CAS-based increments */
constexpr int kLanes = 2;         /* 2 int32 in one word: accumulate + get_accumulate SUM of {1, 2} */
constexpr int kIntArray = 8;      /* 64 int64: accumulate SUM */
constexpr int kDoubleArray = 72;  /* 64 doubles: accumulate SUM */
constexpr int kPairs = 136;       /* 8 DOUBLE_INT (2 units each): MAXLOC */
constexpr int kMixed = 152;       /* 16 int64: array accumulates + fetch_and_op on 0..3 */
constexpr int kWindowUnits = 168;
constexpr int kArray = 64, kNumPairs = 8, kMixedLen = 16, kMixedFop = 4;

/* Rounds per origin: seconds, not minutes, on 2 shared cores. */
constexpr int kIters = 2000;

constexpr int kPassiveIters = 200, kPassiveLen = 32;

double pairValue(int rank, int it, int e) { return static_cast<double>((rank * 7 + it * 3 + e) % 11); }
int pairIndex(int rank, int it) { return rank * 1000 + it; }

class ContentionTest : public ::testing::TestWithParam<std::tuple<AccPath, Progress, int>>
{
};

/*
 * Every rank, rank 0 included, issues kIters rounds of every kind of
 * operation to rank 0 at once, inside one lock_all epoch.
 */
void contendOnRankZero(int)
{
	ASSERT_EQ(rma_init(nullptr, nullptr), RMA_SUCCESS);
	const int rank = worldRank(), size = worldSize();
	SharedWords tickets(size * kIters);
	int64_t *base;
	rma_win win;
	ASSERT_EQ(rma_win_allocate(rank == 0 ? kWindowUnits * 8 : 0, 8, RMA_INFO_NULL, RMA_COMM_WORLD, &base,
				   &win),
		  RMA_SUCCESS);
	rma_win_set_errhandler(win, RMA_ERRORS_RETURN);
	if (rank == 0) {
		auto *pairs = reinterpret_cast<DoubleInt *>(base + kPairs);
		for (int e = 0; e < kNumPairs; ++e)
			pairs[e] = { -1.0, 1 << 30 };
		auto *lanes = reinterpret_cast<int32_t *>(base + kLanes);
		lanes[0] = -1000; /* wraps through zero: a carry out of it would show in lane 1 */
		lanes[1] = 7;
	}
	rma_barrier(RMA_COMM_WORLD);

	const int64_t one = 1, mine = rank + 1;
	std::vector<int64_t> ones(kMixedLen, 1), adds(kArray, mine);
	std::vector<double> dadds(kArray, 0.5 * (rank + 1));
	int64_t cmp = 0, casAttempts = 0, prevTicket = -1;
	ASSERT_EQ(rma_win_lock_all(0, win), RMA_SUCCESS);
	for (int it = 0; it < kIters; ++it) {
		/* A ticket: the counter before my increment. */
		int64_t ticket = -1;
		ASSERT_EQ(rma_fetch_and_op(&one, &ticket, RMA_INT64_T, 0, kCounter, RMA_SUM, win), RMA_SUCCESS);
		/* Two int32 lanes of one word: neither carries into the other. */
		const int32_t lanes[2] = { 1, 2 };
		int32_t oldLanes[2] = { 0, 0 };
		ASSERT_EQ(rma_accumulate(lanes, 2, RMA_INT32_T, 0, kLanes, 2, RMA_INT32_T, RMA_SUM, win), RMA_SUCCESS);
		ASSERT_EQ(rma_get_accumulate(lanes, 2, RMA_INT32_T, oldLanes, 2, RMA_INT32_T, 0, kLanes, 2, RMA_INT32_T,
					     RMA_SUM, win),
			  RMA_SUCCESS);
		ASSERT_EQ(rma_win_flush(0, win), RMA_SUCCESS);
		/*
		 * Per element (MPI's atomicity): lane 0 counts ops from -1000,
		 * lane 1 grows by 2 from 7, so a carry out of lane 0 (it wraps
		 * through zero) would make lane 1 even.
		 */
		ASSERT_GE(oldLanes[0], -1000);
		ASSERT_LT(oldLanes[0], -1000 + 2 * size * kIters);
		ASSERT_EQ((static_cast<int64_t>(oldLanes[1]) - 7) % 2, 0) << "a carry crossed into lane 1: " << oldLanes[1];
		/* Arrays: queued accumulates on every element. */
		ASSERT_EQ(rma_accumulate(adds.data(), kArray, RMA_INT64_T, 0, kIntArray, kArray, RMA_INT64_T, RMA_SUM,
					 win),
			  RMA_SUCCESS);
		ASSERT_EQ(rma_accumulate(dadds.data(), kArray, RMA_DOUBLE, 0, kDoubleArray, kArray, RMA_DOUBLE,
					 RMA_SUM, win),
			  RMA_SUCCESS);
		/* MAXLOC on every pair. */
		DoubleInt mineP[kNumPairs];
		for (int e = 0; e < kNumPairs; ++e)
			mineP[e] = { pairValue(rank, it, e), pairIndex(rank, it) };
		ASSERT_EQ(rma_accumulate(mineP, kNumPairs, RMA_DOUBLE_INT, 0, kPairs, kNumPairs, RMA_DOUBLE_INT,
					 RMA_MAXLOC, win),
			  RMA_SUCCESS);
		/* Overlap: the whole mixed array by accumulate, its first elements by fetch_and_op too. */
		ASSERT_EQ(rma_accumulate(ones.data(), kMixedLen, RMA_INT64_T, 0, kMixed, kMixedLen, RMA_INT64_T,
					 RMA_SUM, win),
			  RMA_SUCCESS);
		int64_t ignored[kMixedFop];
		for (int e = 0; e < kMixedFop; ++e) {
			ASSERT_EQ(rma_fetch_and_op(&one, &ignored[e], RMA_INT64_T, 0, kMixed + e, RMA_SUM, win),
				  RMA_SUCCESS);
		}
		ASSERT_EQ(rma_win_flush(0, win), RMA_SUCCESS);
		ASSERT_GE(ticket, 0);
		ASSERT_GT(ticket, prevTicket) << "my own fetch_and_ops went backwards";
		prevTicket = ticket;
		tickets.at(rank * kIters + it).store(ticket);

		/* One CAS-based increment: retry with what the target held until the swap takes. */
		for (;;) {
			int64_t want = cmp + 1, got = -1;
			ASSERT_EQ(rma_compare_and_swap(&want, &cmp, &got, RMA_INT64_T, 0, kCasCounter, win),
				  RMA_SUCCESS);
			ASSERT_EQ(rma_win_flush(0, win), RMA_SUCCESS);
			++casAttempts;
			if (got == cmp) {
				cmp = want;
				break;
			}
			ASSERT_GT(got, cmp) << "the CAS counter went backwards";
			cmp = got;
			ASSERT_LT(casAttempts, 1000000) << "CAS never succeeds";
		}
	}
	ASSERT_EQ(rma_win_unlock_all(win), RMA_SUCCESS);
	rma_barrier(RMA_COMM_WORLD);

	if (rank == 0) {
		rma_win_sync(win);
		const int64_t n = static_cast<int64_t>(size) * kIters;
		EXPECT_EQ(base[kCounter], n);
		EXPECT_EQ(base[kCasCounter], n);
		const auto *lanes = reinterpret_cast<const int32_t *>(base + kLanes);
		EXPECT_EQ(lanes[0], -1000 + 2 * n);
		EXPECT_EQ(lanes[1], 7 + 4 * n);
		int64_t perIter = 0;
		for (int r = 0; r < size; ++r)
			perIter += r + 1;
		auto *doubles = reinterpret_cast<double *>(base + kDoubleArray);
		for (int e = 0; e < kArray; ++e) {
			EXPECT_EQ(base[kIntArray + e], perIter * kIters) << "int64 element " << e;
			EXPECT_EQ(doubles[e], 0.5 * static_cast<double>(perIter * kIters)) << "double element " << e;
		}
		for (int e = 0; e < kMixedLen; ++e) {
			EXPECT_EQ(base[kMixed + e], e < kMixedFop ? 2 * n : n) << "mixed element " << e;
		}
		/* MAXLOC: the largest value, and of its holders the smallest index. */
		auto *pairs = reinterpret_cast<DoubleInt *>(base + kPairs);
		for (int e = 0; e < kNumPairs; ++e) {
			DoubleInt want{ -1.0, 1 << 30 };
			for (int r = 0; r < size; ++r) {
				for (int it = 0; it < kIters; ++it) {
					double v = pairValue(r, it, e);
					if (v > want.v || (v == want.v && pairIndex(r, it) < want.i))
						want = { v, pairIndex(r, it) };
				}
			}
			EXPECT_EQ(pairs[e].v, want.v) << "pair " << e;
			EXPECT_EQ(pairs[e].i, want.i) << "pair " << e;
		}
		/* Tickets: each of 0..n-1 handed out exactly once. */
		std::vector<int64_t> all;
		for (int64_t i = 0; i < n; ++i)
			all.push_back(tickets.at(static_cast<int>(i)).load());
		std::sort(all.begin(), all.end());
		for (int64_t i = 0; i < n; ++i) {
			ASSERT_EQ(all[i], i) << "fetch_and_op tickets are not 0..n-1 once each";
		}
	}
	rma_barrier(RMA_COMM_WORLD);
	ASSERT_EQ(rma_win_free(&win), RMA_SUCCESS);
	ASSERT_EQ(rma_finalize(), RMA_SUCCESS);
}

TEST_P(ContentionTest, ConcurrentAccumulatesOnTheSameElementsAreExact)
{
	auto [path, progress, ranks] = GetParam();
	AccKnobs knobs(path, progress);
	EXPECT_RANKS_PASS(runRanks(ranks, contendOnRankZero));
}

/*
 * A kernel without membarrier() (RMA_NO_MEMBARRIER=1 stands in for one):
 * windows keep origin atomics and the atomic ring, with no plain mode, and
 * the same mix stays exact.
 */
TEST(ContentionWithoutMembarrierTest, AtomicsAndArraysStillCompose)
{
	AccKnobs knobs(AccPath::Auto, Progress::Thread);
	ScopedEnv noMembarrier("RMA_NO_MEMBARRIER", "1");
	EXPECT_RANKS_PASS(runRanks(2, contendOnRankZero));
}

/*
 * In-place array accumulates (plain stores under the target's consumer role
 * and plain mode) and origin atomics on the same elements: rank 0 applies
 * whole arrays to its own window and pauses now and then past the plain-mode
 * lease, so the lease ends and rank 1's fetch_and_ops go back to their
 * atomic path; every array after a pause must enter plain mode again before
 * its plain stores. An array applied plainly outside plain mode would lose
 * concurrent fetch_and_op increments, and the totals would be short.
 */
TEST(InPlaceContentionTest, ArraysAfterTheLeaseEndsStillComposeWithAtomics)
{
	AccKnobs knobs(AccPath::Auto, Progress::Thread);
	EXPECT_RANKS_PASS(runRanks(2, [](int) {
		constexpr int kLen = 256, kArrays = 3000;
		ASSERT_EQ(rma_init(nullptr, nullptr), RMA_SUCCESS);
		SharedWords flags(kLen + 1); /* 0: arrays done; 1 + e: fetch_and_ops on element e */
		const int rank = worldRank();
		int64_t *base;
		rma_win win;
		ASSERT_EQ(rma_win_allocate(rank == 0 ? kLen * 8 : 0, 8, RMA_INFO_NULL, RMA_COMM_WORLD, &base, &win),
			  RMA_SUCCESS);
		rma_win_set_errhandler(win, RMA_ERRORS_RETURN);
		rma_barrier(RMA_COMM_WORLD);
		ASSERT_EQ(rma_win_lock_all(0, win), RMA_SUCCESS);
		if (rank == 0) {
			std::vector<int64_t> ones(kLen, 1);
			for (int it = 0; it < kArrays; ++it) {
				ASSERT_EQ(rma_accumulate(ones.data(), kLen, RMA_INT64_T, 0, 0, kLen, RMA_INT64_T, RMA_SUM, win),
					  RMA_SUCCESS);
				ASSERT_EQ(rma_win_flush(0, win), RMA_SUCCESS);
				if (it % 8 == 7) {
					/* Past the lease (20-40 us): plain mode ends at the next consumer. */
					auto until = std::chrono::steady_clock::now() + std::chrono::microseconds(100);
					while (std::chrono::steady_clock::now() < until) {
					}
				}
			}
			flags.at(0).store(1);
		} else {
			const int64_t one = 1;
			int64_t old = 0;
			for (int e = 0; flags.at(0).load() == 0; e = (e + 1) % kLen) {
				ASSERT_EQ(rma_fetch_and_op(&one, &old, RMA_INT64_T, 0, e, RMA_SUM, win), RMA_SUCCESS);
				ASSERT_EQ(rma_win_flush(0, win), RMA_SUCCESS);
				flags.at(1 + e).fetch_add(1);
			}
		}
		ASSERT_EQ(rma_win_unlock_all(win), RMA_SUCCESS);
		rma_barrier(RMA_COMM_WORLD);
		if (rank == 0) {
			rma_win_sync(win);
			int64_t fops = 0;
			for (int e = 0; e < kLen; ++e) {
				const int64_t mine = flags.at(1 + e).load();
				fops += mine;
				EXPECT_EQ(base[e], kArrays + mine) << "element " << e;
			}
			EXPECT_GT(fops, 0) << "the fetch_and_ops never overlapped the arrays";
		}
		ASSERT_EQ(rma_win_free(&win), RMA_SUCCESS);
		ASSERT_EQ(rma_finalize(), RMA_SUCCESS);
	}));
}

std::string knobName(AccPath path, Progress progress)
{
	return std::string(accPathName(path)) + "_progress_" + progressName(progress);
}

std::string contentionName(const ::testing::TestParamInfo<std::tuple<AccPath, Progress, int>> &info)
{
	return knobName(std::get<0>(info.param), std::get<1>(info.param)) + "_" +
	       std::to_string(std::get<2>(info.param)) + "ranks";
}

INSTANTIATE_TEST_SUITE_P(AllPathsAndProgress, ContentionTest,
			 ::testing::Combine(::testing::Values(AccPath::Auto, AccPath::Origin, AccPath::Ring),
					    ::testing::Values(Progress::None, Progress::Thread, Progress::Agent),
					    ::testing::Values(2, 4)),
			 contentionName);

class TrulyPassiveTest : public ::testing::TestWithParam<std::tuple<AccPath, Progress>>
{
};

/*
 * Rank 0 computes and makes no librma call until both origins are done;
 * they lock_all, accumulate (queued arrays, single-element atomics,
 * get_accumulate) and flush. With RMA_PROGRESS=none the origins must
 * apply the queued work themselves while they wait.
 */
TEST_P(TrulyPassiveTest, OriginsFinishWhileTheTargetComputes)
{
	auto [path, progress] = GetParam();
	AccKnobs knobs(path, progress);
	EXPECT_RANKS_PASS(runRanks(3, [](int) {
		ASSERT_EQ(rma_init(nullptr, nullptr), RMA_SUCCESS);
		SharedWords flags; /* 0: origins done */
		const int rank = worldRank();
		int64_t *base;
		rma_win win;
		ASSERT_EQ(rma_win_allocate(rank == 0 ? (2 * kPassiveLen + 8) * 8 : 0, 8, RMA_INFO_NULL, RMA_COMM_WORLD, &base,
					   &win),
			  RMA_SUCCESS);
		rma_win_set_errhandler(win, RMA_ERRORS_RETURN);
		rma_barrier(RMA_COMM_WORLD);
		if (rank == 0) {
			EXPECT_TRUE(computeUntil(flags, 0, 2)) << "origins could not finish while the target computed";
		} else {
			std::vector<int64_t> ones(kPassiveLen, 1);
			const int64_t one = 1;
			int64_t prev = -1;
			ASSERT_EQ(rma_win_lock_all(0, win), RMA_SUCCESS);
			for (int it = 0; it < kPassiveIters; ++it) {
				/* A queued array accumulate, a counter, and a fetch of my own array. */
				ASSERT_EQ(rma_accumulate(ones.data(), kPassiveLen, RMA_INT64_T, 0, 8, kPassiveLen, RMA_INT64_T, RMA_SUM, win),
					  RMA_SUCCESS);
				int64_t ticket = -1;
				ASSERT_EQ(rma_fetch_and_op(&one, &ticket, RMA_INT64_T, 0, 0, RMA_SUM, win), RMA_SUCCESS);
				std::vector<int64_t> before(kPassiveLen, -1);
				const rma_aint mineAt = 8 + kPassiveLen + (rank - 1) * (kPassiveLen / 2);
				ASSERT_EQ(rma_get_accumulate(ones.data(), kPassiveLen / 2, RMA_INT64_T, before.data(), kPassiveLen / 2,
							     RMA_INT64_T, 0, mineAt, kPassiveLen / 2, RMA_INT64_T, RMA_SUM, win),
					  RMA_SUCCESS);
				ASSERT_EQ(rma_win_flush(0, win), RMA_SUCCESS);
				ASSERT_GT(ticket, prev);
				prev = ticket;
				for (int e = 0; e < kPassiveLen / 2; ++e) {
					ASSERT_EQ(before[e], it) << "get_accumulate fetched a stale value of element " << e;
				}
			}
			ASSERT_EQ(rma_win_unlock_all(win), RMA_SUCCESS);
			flags.at(0).fetch_add(1);
		}
		rma_barrier(RMA_COMM_WORLD);
		if (rank == 0) {
			rma_win_sync(win);
			EXPECT_EQ(base[0], 2 * kPassiveIters);
			for (int e = 0; e < kPassiveLen; ++e) {
				EXPECT_EQ(base[8 + e], 2 * kPassiveIters) << "element " << e;
				EXPECT_EQ(base[8 + kPassiveLen + e], kPassiveIters) << "fetched element " << e;
			}
		}
		ASSERT_EQ(rma_win_free(&win), RMA_SUCCESS);
		ASSERT_EQ(rma_finalize(), RMA_SUCCESS);
	}));
}

std::string passiveName(const ::testing::TestParamInfo<std::tuple<AccPath, Progress>> &info)
{
	return knobName(std::get<0>(info.param), std::get<1>(info.param));
}

INSTANTIATE_TEST_SUITE_P(AllPathsAndProgress, TrulyPassiveTest,
			 ::testing::Combine(::testing::Values(AccPath::Auto, AccPath::Origin, AccPath::Ring),
					    ::testing::Values(Progress::None, Progress::Thread, Progress::Agent)),
			 passiveName);

} /* namespace */
