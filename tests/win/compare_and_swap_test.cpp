/* SPDX-License-Identifier: MIT */
/*
 * rma_compare_and_swap's inline path (Window::casSmall) and the fallbacks
 * around it, over real processes: CAS-based counters from 3 ranks mixed
 * with fetch_and_op and accumulate on the same word come out exact in every
 * window flavor, with and without rma_accumulate_path=ring; every type
 * compare-and-swap takes swaps and misses correctly at aligned and
 * misaligned targets in every kind of epoch; a CAS after a queued
 * accumulate to the same target sees it; and every misuse is the same
 * error as on the out-of-line path, with nothing written.
 * Results only: nothing here is timed.
 */
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <string>
#include <tuple>
#include <vector>

#include <rma/rma.h>

#include "support/multiproc.h"
#include "win/accumulate_test_util.h"
#include "win/window_test_util.h"

using namespace rmatest;

namespace {


/* An info object with rma_accumulate_path=ring (@ring), or RMA_INFO_NULL. */
rma_info ringInfo(bool ring)
{
	if (!ring)
		return RMA_INFO_NULL;
	rma_info info;
	EXPECT_EQ(rma_info_create(&info), RMA_SUCCESS);
	EXPECT_EQ(rma_info_set(info, "rma_accumulate_path", "ring"), RMA_SUCCESS);
	return info;
}

/* ------------------------------------------------------------------------ */
/* CAS counters mixed with fetch_and_op and accumulate on one word          */
/* ------------------------------------------------------------------------ */

constexpr int kMixIters = 200;
constexpr int kMixWords = 64; /* the array accumulate covers them all */
constexpr int kMixWord = 9;   /* the word everyone hits */
constexpr int kArrayEvery = 8;

class CasMixTest : public ::testing::TestWithParam<std::tuple<Kind, bool>>
{
};

TEST_P(CasMixTest, CountersFromThreeRanksAreExact)
{
	const Kind kind = std::get<0>(GetParam());
	const bool ring = std::get<1>(GetParam());
	EXPECT_RANKS_PASS(runRanks(3, [kind, ring](int) {
		ASSERT_EQ(rma_init(nullptr, nullptr), RMA_SUCCESS);
		const int rank = worldRank(), size = worldSize();
		rma_info info = ringInfo(ring);
		TestWindow w;
		ASSERT_TRUE(makeWindow(kind, kMixWords * 8, 8, w, info));
		if (info != RMA_INFO_NULL)
			rma_info_free(&info);
		std::memset(w.local, 0, kMixWords * 8);
		rma_win_sync(w.win);
		rma_barrier(RMA_COMM_WORLD);

		const int64_t one = 1;
		std::vector<int64_t> ones(kMixWords, 1);
		const rma_aint word = w.disp(0, kMixWord);
		int64_t cmp = 0, casAttempts = 0;
		ASSERT_EQ(rma_win_lock_all(0, w.win), RMA_SUCCESS);
		for (int it = 0; it < kMixIters; ++it) {
			/* A CAS-based increment: retry with what the target held until the swap takes. */
			for (;;) {
				int64_t want = cmp + 1, got = -1;
				ASSERT_EQ(rma_compare_and_swap(&want, &cmp, &got, RMA_INT64_T, 0, word, w.win), RMA_SUCCESS);
				ASSERT_EQ(rma_win_flush(0, w.win), RMA_SUCCESS);
				ASSERT_LT(++casAttempts, 10000000) << "CAS never succeeds";
				if (got == cmp) {
					cmp = want;
					break;
				}
				ASSERT_GT(got, cmp) << "the word went backwards";
				cmp = got;
			}
			int64_t before = -1;
			ASSERT_EQ(rma_fetch_and_op(&one, &before, RMA_INT64_T, 0, word, RMA_SUM, w.win), RMA_SUCCESS);
			ASSERT_EQ(rma_accumulate(&one, 1, RMA_INT64_T, 0, word, 1, RMA_INT64_T, RMA_SUM, w.win),
				  RMA_SUCCESS);
			/* Now and then an array over the word too: queued, or applied in place in plain mode. */
			if (it % kArrayEvery == rank) {
				ASSERT_EQ(rma_accumulate(ones.data(), kMixWords, RMA_INT64_T, 0, w.disp(0, 0), kMixWords,
							 RMA_INT64_T, RMA_SUM, w.win),
					  RMA_SUCCESS);
			}
			ASSERT_EQ(rma_win_flush(0, w.win), RMA_SUCCESS);
			ASSERT_GE(before, 0);
		}
		ASSERT_EQ(rma_win_unlock_all(w.win), RMA_SUCCESS);
		rma_barrier(RMA_COMM_WORLD);
		if (rank == 0) {
			rma_win_sync(w.win);
			const int64_t arrays = static_cast<int64_t>(size) * (kMixIters / kArrayEvery);
			const int64_t *words = reinterpret_cast<const int64_t *>(w.local);
			EXPECT_EQ(words[kMixWord], 3 * static_cast<int64_t>(size) * kMixIters + arrays);
			for (int e = 0; e < kMixWords; ++e) {
				if (e != kMixWord) {
					EXPECT_EQ(words[e], arrays) << "word " << e;
				}
			}
		}
		rma_barrier(RMA_COMM_WORLD);
		freeWindow(w);
		ASSERT_EQ(rma_finalize(), RMA_SUCCESS);
	}));
}

INSTANTIATE_TEST_SUITE_P(Flavors, CasMixTest,
			 ::testing::Combine(::testing::Values(Kind::Allocate, Kind::Shared, Kind::CreatePlain,
							      Kind::Dynamic),
					    ::testing::Bool()),
			 [](const ::testing::TestParamInfo<std::tuple<Kind, bool>> &i) {
				 return std::string(kindName(std::get<0>(i.param))) +
					(std::get<1>(i.param) ? "_Ring" : "_Auto");
			 });

/* ------------------------------------------------------------------------ */
/* Every type, aligned and misaligned, in every kind of epoch               */
/* ------------------------------------------------------------------------ */

struct CasType {
	rma_datatype type;
	int size;
	const char *name;
};

const CasType kCasTypes[] = {
	{ RMA_CHAR, 1, "CHAR" },
	{ RMA_SIGNED_CHAR, 1, "SIGNED_CHAR" },
	{ RMA_UNSIGNED_CHAR, 1, "UNSIGNED_CHAR" },
	{ RMA_SHORT, 2, "SHORT" },
	{ RMA_UNSIGNED_SHORT, 2, "UNSIGNED_SHORT" },
	{ RMA_INT, 4, "INT" },
	{ RMA_UNSIGNED, 4, "UNSIGNED" },
	{ RMA_LONG, 8, "LONG" },
	{ RMA_UNSIGNED_LONG, 8, "UNSIGNED_LONG" },
	{ RMA_LONG_LONG, 8, "LONG_LONG" },
	{ RMA_UNSIGNED_LONG_LONG, 8, "UNSIGNED_LONG_LONG" },
	{ RMA_INT8_T, 1, "INT8_T" },
	{ RMA_INT16_T, 2, "INT16_T" },
	{ RMA_INT32_T, 4, "INT32_T" },
	{ RMA_INT64_T, 8, "INT64_T" },
	{ RMA_UINT8_T, 1, "UINT8_T" },
	{ RMA_UINT16_T, 2, "UINT16_T" },
	{ RMA_UINT32_T, 4, "UINT32_T" },
	{ RMA_UINT64_T, 8, "UINT64_T" },
	{ RMA_AINT, sizeof(rma_aint), "AINT" },
	{ RMA_OFFSET, 8, "OFFSET" },
	{ RMA_COUNT, 8, "COUNT" },
	{ RMA_C_BOOL, sizeof(bool), "C_BOOL" },
	{ RMA_BYTE, 1, "BYTE" },
};
constexpr int kNumCasTypes = sizeof(kCasTypes) / sizeof(kCasTypes[0]);
/* Byte offsets of the element in its slot: aligned for every size, then misaligned for all but 1-byte types. */
constexpr int kOffsets[] = { 0, 8, 1, 3, 5 };
constexpr int kNumOffsets = sizeof(kOffsets) / sizeof(kOffsets[0]);
constexpr int kSlot = 24;
constexpr unsigned char kFill = 0xa5;

/* Value @which (0: at the target, 1: swapped in, 2: refused) of type @t, little-endian low bytes. */
void casValue(const CasType &t, int which, unsigned char *out)
{
	if (t.type == RMA_C_BOOL) {
		bool b = which == 1;
		std::memcpy(out, &b, sizeof(b));
		return;
	}
	const uint64_t v[] = { 0x8182838485868788ull, 0x1112131415161718ull, 0x2122232425262728ull };
	std::memcpy(out, &v[which], t.size);
}

enum class Epoch { LockAll, LockExclusive, LockShared, Fence };

const char *epochName(Epoch e)
{
	switch (e) {
	case Epoch::LockAll: return "LockAll";
	case Epoch::LockExclusive: return "LockExclusive";
	case Epoch::LockShared: return "LockShared";
	case Epoch::Fence: return "Fence";
	}
	return "?";
}

class CasTypesTest : public ::testing::TestWithParam<std::tuple<Epoch, bool>>
{
};

TEST_P(CasTypesTest, SwapsAndMissesOnEveryTypeAtEveryAlignment)
{
	const Epoch epoch = std::get<0>(GetParam());
	const bool ring = std::get<1>(GetParam());
	EXPECT_RANKS_PASS(runRanks(2, [epoch, ring](int) {
		ASSERT_EQ(rma_init(nullptr, nullptr), RMA_SUCCESS);
		const int rank = worldRank(), peer = 1 - rank;
		constexpr int kCases = kNumCasTypes * kNumOffsets;
		rma_info info = ringInfo(ring);
		unsigned char *base;
		rma_win win;
		ASSERT_EQ(rma_win_allocate(kCases * kSlot, 1, info, RMA_COMM_WORLD, &base, &win), RMA_SUCCESS);
		if (info != RMA_INFO_NULL)
			rma_info_free(&info);
		rma_win_set_errhandler(win, RMA_ERRORS_RETURN);
		/* Every slot: fill bytes, and value 0 of its type at its offset. */
		std::memset(base, kFill, kCases * kSlot);
		for (int i = 0; i < kNumCasTypes; ++i)
			for (int k = 0; k < kNumOffsets; ++k)
				casValue(kCasTypes[i], 0, base + (i * kNumOffsets + k) * kSlot + kOffsets[k]);
		rma_win_sync(win);
		rma_barrier(RMA_COMM_WORLD);

		switch (epoch) {
		case Epoch::LockAll: ASSERT_EQ(rma_win_lock_all(0, win), RMA_SUCCESS); break;
		case Epoch::LockExclusive: ASSERT_EQ(rma_win_lock(RMA_LOCK_EXCLUSIVE, peer, 0, win), RMA_SUCCESS); break;
		case Epoch::LockShared: ASSERT_EQ(rma_win_lock(RMA_LOCK_SHARED, peer, 0, win), RMA_SUCCESS); break;
		case Epoch::Fence: ASSERT_EQ(rma_win_fence(0, win), RMA_SUCCESS); break;
		}
		/* Per slot: swap value 0 for 1, then a CAS comparing with 0 again must leave 1 there (ordered). */
		std::vector<unsigned char> r1(kCases * 8, 0), r2(kCases * 8, 0);
		for (int i = 0; i < kNumCasTypes; ++i) {
			for (int k = 0; k < kNumOffsets; ++k) {
				const int c = i * kNumOffsets + k;
				unsigned char a[8] = {}, b[8] = {}, d[8] = {};
				casValue(kCasTypes[i], 0, a);
				casValue(kCasTypes[i], 1, b);
				casValue(kCasTypes[i], 2, d);
				const rma_aint disp = c * kSlot + kOffsets[k];
				ASSERT_EQ(rma_compare_and_swap(b, a, &r1[c * 8], kCasTypes[i].type, peer, disp, win),
					  RMA_SUCCESS);
				ASSERT_EQ(rma_compare_and_swap(d, a, &r2[c * 8], kCasTypes[i].type, peer, disp, win),
					  RMA_SUCCESS);
			}
		}
		switch (epoch) {
		case Epoch::LockAll: ASSERT_EQ(rma_win_unlock_all(win), RMA_SUCCESS); break;
		case Epoch::LockExclusive:
		case Epoch::LockShared: ASSERT_EQ(rma_win_unlock(peer, win), RMA_SUCCESS); break;
		case Epoch::Fence: ASSERT_EQ(rma_win_fence(RMA_MODE_NOSUCCEED, win), RMA_SUCCESS); break;
		}
		rma_barrier(RMA_COMM_WORLD);
		rma_win_sync(win);
		for (int i = 0; i < kNumCasTypes; ++i) {
			for (int k = 0; k < kNumOffsets; ++k) {
				SCOPED_TRACE(std::string(kCasTypes[i].name) + " at offset " + std::to_string(kOffsets[k]));
				const int c = i * kNumOffsets + k, n = kCasTypes[i].size;
				unsigned char a[8] = {}, b[8] = {};
				casValue(kCasTypes[i], 0, a);
				casValue(kCasTypes[i], 1, b);
				EXPECT_EQ(std::memcmp(&r1[c * 8], a, n), 0) << "the swapping CAS fetched the wrong old value";
				EXPECT_EQ(std::memcmp(&r2[c * 8], b, n), 0) << "the refused CAS fetched the wrong old value";
				const unsigned char *slot = base + c * kSlot;
				EXPECT_EQ(std::memcmp(slot + kOffsets[k], b, n), 0) << "the target is not the swapped-in value";
				for (int j = 0; j < kSlot; ++j) {
					if (j < kOffsets[k] || j >= kOffsets[k] + n) {
						EXPECT_EQ(slot[j], kFill) << "CAS wrote byte " << j << " of its slot";
					}
				}
			}
		}
		rma_barrier(RMA_COMM_WORLD);
		ASSERT_EQ(rma_win_free(&win), RMA_SUCCESS);
		ASSERT_EQ(rma_finalize(), RMA_SUCCESS);
	}));
}

INSTANTIATE_TEST_SUITE_P(Epochs, CasTypesTest,
			 ::testing::Combine(::testing::Values(Epoch::LockAll, Epoch::LockExclusive, Epoch::LockShared,
							      Epoch::Fence),
					    ::testing::Bool()),
			 [](const ::testing::TestParamInfo<std::tuple<Epoch, bool>> &i) {
				 return std::string(epochName(std::get<0>(i.param))) +
					(std::get<1>(i.param) ? "_Ring" : "_Auto");
			 });

/* ------------------------------------------------------------------------ */
/* Ordering: a CAS after a queued accumulate to the same target             */
/* ------------------------------------------------------------------------ */

TEST(CasOrderingTest, CasSeesEarlierAccumulatesWithoutAFlush)
{
	EXPECT_RANKS_PASS(runRanks(2, [](int) {
		ASSERT_EQ(rma_init(nullptr, nullptr), RMA_SUCCESS);
		const int rank = worldRank(), peer = 1 - rank;
		constexpr int kWords = 4096, kRounds = 50, kWord = 8;
		int64_t *base;
		rma_win win;
		ASSERT_EQ(rma_win_allocate(kWords * 8, 8, RMA_INFO_NULL, RMA_COMM_WORLD, &base, &win), RMA_SUCCESS);
		rma_win_set_errhandler(win, RMA_ERRORS_RETURN);
		std::fill(base, base + kWords, 0);
		/* Every other word: a target type no origin applies in place, so it is queued to the ring. */
		rma_datatype evens;
		ASSERT_EQ(rma_type_vector(kWords / 2, 1, 2, RMA_INT64_T, &evens), RMA_SUCCESS);
		ASSERT_EQ(rma_type_commit(&evens), RMA_SUCCESS);
		rma_win_sync(win);
		rma_barrier(RMA_COMM_WORLD);
		std::vector<int64_t> ones(kWords, 1);
		ASSERT_EQ(rma_win_lock_all(0, win), RMA_SUCCESS);
		/*
		 * The first half queues only (nothing puts the target in plain mode, so
		 * the CAS itself must see the queued record); the second half also
		 * applies a large contiguous accumulate in place first.
		 */
		for (int r = 0; r < kRounds; ++r) {
			const bool inPlace = r >= kRounds / 2;
			/* Word kWord holds r * 1000 (the previous round swapped it in); each accumulate adds 1. */
			if (inPlace) {
				ASSERT_EQ(rma_accumulate(ones.data(), kWords, RMA_INT64_T, peer, 0, kWords, RMA_INT64_T,
							 RMA_SUM, win),
					  RMA_SUCCESS);
			}
			ASSERT_EQ(rma_accumulate(ones.data(), kWords / 2, RMA_INT64_T, peer, 0, 1, evens, RMA_SUM, win),
				  RMA_SUCCESS);
			const int64_t cmp = r * 1000 + (inPlace ? 2 : 1), want = (r + 1) * 1000;
			int64_t got = -1;
			ASSERT_EQ(rma_compare_and_swap(&want, &cmp, &got, RMA_INT64_T, peer, kWord, win), RMA_SUCCESS);
			ASSERT_EQ(rma_win_flush(peer, win), RMA_SUCCESS);
			ASSERT_EQ(got, cmp) << "round " << r << ": the CAS overtook an accumulate issued before it";
		}
		ASSERT_EQ(rma_win_unlock_all(win), RMA_SUCCESS);
		rma_barrier(RMA_COMM_WORLD);
		rma_win_sync(win);
		EXPECT_EQ(base[kWord], kRounds * 1000);
		EXPECT_EQ(base[0], kRounds + kRounds / 2);
		EXPECT_EQ(base[1], kRounds / 2);
		EXPECT_EQ(base[kWords - 2], kRounds + kRounds / 2);
		EXPECT_EQ(base[kWords - 1], kRounds / 2);
		rma_barrier(RMA_COMM_WORLD);
		rma_type_free(&evens);
		ASSERT_EQ(rma_win_free(&win), RMA_SUCCESS);
		ASSERT_EQ(rma_finalize(), RMA_SUCCESS);
	}));
}

/* ------------------------------------------------------------------------ */
/* Errors: the same classes as the out-of-line path, nothing written        */
/* ------------------------------------------------------------------------ */

class CasErrorsTest : public ::testing::TestWithParam<bool>
{
};

TEST_P(CasErrorsTest, MisuseIsTheSameErrorAndWritesNothing)
{
	const bool ring = GetParam();
	EXPECT_RANKS_PASS(runRanks(2, [ring](int) {
		ASSERT_EQ(rma_init(nullptr, nullptr), RMA_SUCCESS);
		rma_comm_set_errhandler(RMA_COMM_SELF, RMA_ERRORS_RETURN);
		const int rank = worldRank(), peer = 1 - rank;
		constexpr int kBytes = 256;
		rma_info info = ringInfo(ring);
		unsigned char *base, *base8;
		rma_win win, win8;
		/* disp_unit 1 (byte displacements) and 8 (overflowing products). */
		ASSERT_EQ(rma_win_allocate(kBytes, 1, info, RMA_COMM_WORLD, &base, &win), RMA_SUCCESS);
		ASSERT_EQ(rma_win_allocate(kBytes, 8, info, RMA_COMM_WORLD, &base8, &win8), RMA_SUCCESS);
		if (info != RMA_INFO_NULL)
			rma_info_free(&info);
		rma_win_set_errhandler(win, RMA_ERRORS_RETURN);
		rma_win_set_errhandler(win8, RMA_ERRORS_RETURN);
		std::memset(base, kFill, kBytes);
		std::memset(base8, kFill, kBytes);
		rma_win_sync(win);
		rma_win_sync(win8);
		rma_barrier(RMA_COMM_WORLD);

		alignas(16) unsigned char origin[16], compare[16], result[16];
		std::memset(origin, 1, sizeof(origin));
		std::memset(compare, kFill, sizeof(compare)); /* a CAS would swap if it ran */
		std::memset(result, kFill, sizeof(result));
		auto resultUntouched = [&] {
			return std::all_of(result, result + sizeof(result), [](unsigned char c) { return c == kFill; });
		};

		/* No epoch: also for PROC_NULL. */
		EXPECT_CLASS(rma_compare_and_swap(origin, compare, result, RMA_INT64_T, peer, 0, win), RMA_ERR_RMA_SYNC);
		EXPECT_CLASS(rma_compare_and_swap(origin, compare, result, RMA_INT64_T, RMA_PROC_NULL, 0, win),
			     RMA_ERR_RMA_SYNC);
		EXPECT_TRUE(resultUntouched());

		ASSERT_EQ(rma_win_lock_all(0, win), RMA_SUCCESS);
		ASSERT_EQ(rma_win_lock_all(0, win8), RMA_SUCCESS);
		/* PROC_NULL: success, nothing fetched. */
		EXPECT_EQ(rma_compare_and_swap(origin, compare, result, RMA_INT64_T, RMA_PROC_NULL, 0, win), RMA_SUCCESS);
		EXPECT_EQ(rma_compare_and_swap(origin, compare, result, RMA_INT64_T, RMA_PROC_NULL, -5, win), RMA_SUCCESS);
		EXPECT_TRUE(resultUntouched());
		/* Ranks outside the window. */
		EXPECT_CLASS(rma_compare_and_swap(origin, compare, result, RMA_INT64_T, 2, 0, win), RMA_ERR_RANK);
		EXPECT_CLASS(rma_compare_and_swap(origin, compare, result, RMA_INT64_T, -7, 0, win), RMA_ERR_RANK);
		/* Displacements: negative, past the end, the tail past the end (also misaligned), overflowing. */
		EXPECT_CLASS(rma_compare_and_swap(origin, compare, result, RMA_INT64_T, peer, -1, win), RMA_ERR_DISP);
		EXPECT_CLASS(rma_compare_and_swap(origin, compare, result, RMA_INT64_T, peer, kBytes, win),
			     RMA_ERR_RMA_RANGE);
		EXPECT_CLASS(rma_compare_and_swap(origin, compare, result, RMA_INT64_T, peer, kBytes - 4, win),
			     RMA_ERR_RMA_RANGE);
		EXPECT_CLASS(rma_compare_and_swap(origin, compare, result, RMA_INT64_T, peer, kBytes - 7, win),
			     RMA_ERR_RMA_RANGE);
		EXPECT_CLASS(rma_compare_and_swap(origin, compare, result, RMA_INT8_T, peer, kBytes, win),
			     RMA_ERR_RMA_RANGE);
		EXPECT_CLASS(rma_compare_and_swap(origin, compare, result, RMA_INT64_T, peer, kBytes / 8, win8),
			     RMA_ERR_RMA_RANGE);
		EXPECT_CLASS(rma_compare_and_swap(origin, compare, result, RMA_INT64_T, peer, INT64_MAX / 4, win8),
			     RMA_ERR_RMA_RANGE);
		/* Types compare-and-swap does not take, predefined or derived. */
		for (rma_datatype t : { RMA_FLOAT, RMA_DOUBLE, RMA_LONG_DOUBLE, RMA_C_FLOAT_COMPLEX, RMA_2INT }) {
			EXPECT_CLASS(rma_compare_and_swap(origin, compare, result, t, peer, 0, win), RMA_ERR_TYPE);
		}
		rma_datatype contig;
		ASSERT_EQ(rma_type_contiguous(1, RMA_INT64_T, &contig), RMA_SUCCESS);
		ASSERT_EQ(rma_type_commit(&contig), RMA_SUCCESS);
		EXPECT_CLASS(rma_compare_and_swap(origin, compare, result, contig, peer, 0, win), RMA_ERR_TYPE);
		EXPECT_CLASS(rma_compare_and_swap(origin, compare, result, RMA_DATATYPE_NULL, peer, 0, win), RMA_ERR_TYPE);
		rma_type_free(&contig);
		/* Buffers NULL or in the first page. */
		EXPECT_CLASS(rma_compare_and_swap(nullptr, compare, result, RMA_INT64_T, peer, 0, win), RMA_ERR_BUFFER);
		EXPECT_CLASS(rma_compare_and_swap(origin, nullptr, result, RMA_INT64_T, peer, 0, win), RMA_ERR_BUFFER);
		EXPECT_CLASS(rma_compare_and_swap(origin, compare, nullptr, RMA_INT64_T, peer, 0, win), RMA_ERR_BUFFER);
		EXPECT_CLASS(rma_compare_and_swap(origin, compare, reinterpret_cast<void *>(16), RMA_INT64_T, peer, 0, win),
			     RMA_ERR_BUFFER);
		ASSERT_EQ(rma_win_flush_all(win), RMA_SUCCESS);
		EXPECT_TRUE(resultUntouched());

		/* The largest in-bounds displacements still work: aligned (inline) and misaligned (queued). */
		unsigned char want[8], r1[8] = {}, r2[8] = {};
		std::memset(want, 0x3c, sizeof(want));
		ASSERT_EQ(rma_compare_and_swap(want, compare, r1, RMA_INT64_T, peer, kBytes - 8, win), RMA_SUCCESS);
		ASSERT_EQ(rma_compare_and_swap(want, compare, r2, RMA_INT32_T, peer, kBytes - 13, win), RMA_SUCCESS);
		ASSERT_EQ(rma_win_flush(peer, win), RMA_SUCCESS);
		EXPECT_EQ(std::memcmp(r1, compare, 8), 0);
		EXPECT_EQ(std::memcmp(r2, compare, 4), 0);
		ASSERT_EQ(rma_win_unlock_all(win8), RMA_SUCCESS);
		ASSERT_EQ(rma_win_unlock_all(win), RMA_SUCCESS);
		rma_barrier(RMA_COMM_WORLD);
		rma_win_sync(win);
		rma_win_sync(win8);
		/* Only the two successful CAS wrote. */
		for (int j = 0; j < kBytes; ++j) {
			const bool swapped = (j >= kBytes - 8) || (j >= kBytes - 13 && j < kBytes - 9);
			EXPECT_EQ(base[j], swapped ? 0x3c : kFill) << "byte " << j;
			EXPECT_EQ(base8[j], kFill) << "byte " << j << " of the disp_unit 8 window";
		}
		rma_barrier(RMA_COMM_WORLD);
		ASSERT_EQ(rma_win_free(&win8), RMA_SUCCESS);
		ASSERT_EQ(rma_win_free(&win), RMA_SUCCESS);
		ASSERT_EQ(rma_finalize(), RMA_SUCCESS);
	}));
}

INSTANTIATE_TEST_SUITE_P(Paths, CasErrorsTest, ::testing::Bool(),
			 [](const ::testing::TestParamInfo<bool> &i) { return i.param ? "Ring" : "Auto"; });

} /* namespace */
