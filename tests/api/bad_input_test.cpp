/* SPDX-License-Identifier: MIT */
/*
 * Bad input is an error, never a crash or a silent success; and the edge
 * cases MPI defines (RMA_PROC_NULL, zero counts, RMA_BOTTOM) behave as MPI
 * says. Each case here was a crash, a wrong success or a wrong error once.
 */
#include <gtest/gtest.h>

#include <unistd.h>

#include <climits>
#include <cstdio>
#include <cstdlib>
#include <cstdint>
#include <cstring>
#include <vector>

#include <rma/rma.h>

#include "win/window_test_util.h"

using namespace rmatest;

namespace {

void *firstPage(uintptr_t off) { return reinterpret_cast<void *>(off); }

/* Two ranks, an allocate window of 64 int64 each, errors returned; @body runs inside a lock_all epoch. */
template<typename Body>
void withLockAll(Body body)
{
	EXPECT_RANKS_PASS(runRanks(2, [&](int) {
		ASSERT_EQ(rma_init(nullptr, nullptr), RMA_SUCCESS);
		rma_comm_set_errhandler(RMA_COMM_WORLD, RMA_ERRORS_RETURN);
		rma_comm_set_errhandler(RMA_COMM_SELF, RMA_ERRORS_RETURN);
		int64_t *base = nullptr;
		rma_win win;
		ASSERT_EQ(rma_win_allocate(64 * sizeof(int64_t), sizeof(int64_t), RMA_INFO_NULL, RMA_COMM_WORLD, &base,
					   &win),
			  RMA_SUCCESS);
		rma_win_set_errhandler(win, RMA_ERRORS_RETURN);
		std::memset(base, 0, 64 * sizeof(int64_t));
		rma_barrier(RMA_COMM_WORLD);
		ASSERT_EQ(rma_win_lock_all(0, win), RMA_SUCCESS);
		body(win, base);
		ASSERT_EQ(rma_win_unlock_all(win), RMA_SUCCESS);
		rma_barrier(RMA_COMM_WORLD);
		ASSERT_EQ(rma_win_free(&win), RMA_SUCCESS);
		ASSERT_EQ(rma_finalize(), RMA_SUCCESS);
	}));
}

TEST(BadInputTest, NullAndFirstPageBuffersAreBufferErrors)
{
	withLockAll([](rma_win win, int64_t *base) {
		const int t = 1 - worldRank();
		int64_t v[4] = { 1, 2, 3, 4 }, r[4] = {};
		rma_request req;
		for (uintptr_t off : { uintptr_t(0), uintptr_t(8), uintptr_t(4095) }) {
			void *bad = firstPage(off);
			SCOPED_TRACE(off);
			EXPECT_EQ(errorClassOf(rma_put(bad, 1, RMA_INT64_T, t, 0, 1, RMA_INT64_T, win)), RMA_ERR_BUFFER);
			EXPECT_EQ(errorClassOf(rma_put(bad, 4, RMA_INT64_T, t, 0, 4, RMA_INT64_T, win)), RMA_ERR_BUFFER);
			EXPECT_EQ(errorClassOf(rma_get(bad, 1, RMA_INT64_T, t, 0, 1, RMA_INT64_T, win)), RMA_ERR_BUFFER);
			EXPECT_EQ(errorClassOf(rma_put(bad, 2, RMA_INT, t, 0, 1, RMA_INT64_T, win)), RMA_ERR_TYPE);
			EXPECT_EQ(errorClassOf(rma_accumulate(bad, 1, RMA_INT64_T, t, 0, 1, RMA_INT64_T, RMA_SUM, win)),
				  RMA_ERR_BUFFER);
			EXPECT_EQ(errorClassOf(rma_accumulate(bad, 32, RMA_INT64_T, t, 0, 32, RMA_INT64_T, RMA_SUM, win)),
				  RMA_ERR_BUFFER);
			EXPECT_EQ(errorClassOf(rma_get_accumulate(v, 1, RMA_INT64_T, bad, 1, RMA_INT64_T, t, 0, 1,
								  RMA_INT64_T, RMA_SUM, win)),
				  RMA_ERR_BUFFER);
			EXPECT_EQ(errorClassOf(rma_get_accumulate(bad, 1, RMA_INT64_T, r, 1, RMA_INT64_T, t, 0, 1,
								  RMA_INT64_T, RMA_SUM, win)),
				  RMA_ERR_BUFFER);
			EXPECT_EQ(errorClassOf(rma_get_accumulate(v, 4, RMA_INT64_T, bad, 4, RMA_INT64_T, t, 0, 4,
								  RMA_INT64_T, RMA_MAX, win)),
				  RMA_ERR_BUFFER);
			EXPECT_EQ(errorClassOf(rma_fetch_and_op(v, bad, RMA_INT64_T, t, 0, RMA_SUM, win)), RMA_ERR_BUFFER);
			EXPECT_EQ(errorClassOf(rma_fetch_and_op(bad, r, RMA_INT64_T, t, 0, RMA_SUM, win)), RMA_ERR_BUFFER);
			EXPECT_EQ(errorClassOf(rma_compare_and_swap(v, bad, r, RMA_INT64_T, t, 0, win)), RMA_ERR_BUFFER);
			EXPECT_EQ(errorClassOf(rma_rput(bad, 1, RMA_INT64_T, t, 0, 1, RMA_INT64_T, win, &req)),
				  RMA_ERR_BUFFER);
			EXPECT_EQ(errorClassOf(rma_rget(bad, 1, RMA_INT64_T, t, 0, 1, RMA_INT64_T, win, &req)),
				  RMA_ERR_BUFFER);
			EXPECT_EQ(errorClassOf(rma_raccumulate(bad, 2, RMA_INT64_T, t, 0, 2, RMA_INT64_T, RMA_SUM, win,
							       &req)),
				  RMA_ERR_BUFFER);
			EXPECT_EQ(errorClassOf(rma_rget_accumulate(v, 2, RMA_INT64_T, bad, 2, RMA_INT64_T, t, 0, 2,
								   RMA_INT64_T, RMA_SUM, win, &req)),
				  RMA_ERR_BUFFER);
		}
		/* fetch_and_op with NO_OP reads no origin. */
		EXPECT_EQ(rma_fetch_and_op(nullptr, r, RMA_INT64_T, t, 0, RMA_NO_OP, win), RMA_SUCCESS);
		/* A count of zero touches no buffer: NULL is fine. */
		EXPECT_EQ(rma_put(nullptr, 0, RMA_INT64_T, t, 0, 0, RMA_INT64_T, win), RMA_SUCCESS);
		EXPECT_EQ(rma_get(nullptr, 0, RMA_INT64_T, t, 0, 0, RMA_INT64_T, win), RMA_SUCCESS);
		EXPECT_EQ(rma_accumulate(nullptr, 0, RMA_INT64_T, t, 0, 0, RMA_INT64_T, RMA_SUM, win), RMA_SUCCESS);
		EXPECT_EQ(rma_get_accumulate(nullptr, 0, RMA_INT64_T, nullptr, 0, RMA_INT64_T, t, 0, 0, RMA_INT64_T,
					     RMA_SUM, win),
			  RMA_SUCCESS);
		ASSERT_EQ(rma_win_flush_all(win), RMA_SUCCESS);
		/* Nothing was written by any refused call. */
		rma_barrier(RMA_COMM_WORLD);
		for (int i = 0; i < 64; ++i)
			EXPECT_EQ(base[i], 0) << i;
	});
}

TEST(BadInputTest, PackAndUnpackRefuseNullBuffers)
{
	EXPECT_RANKS_PASS(runRanks(1, [](int) {
		ASSERT_EQ(rma_init(nullptr, nullptr), RMA_SUCCESS);
		rma_comm_set_errhandler(RMA_COMM_WORLD, RMA_ERRORS_RETURN);
		rma_comm_set_errhandler(RMA_COMM_SELF, RMA_ERRORS_RETURN);
		int in[4] = { 1, 2, 3, 4 };
		char packed[64];
		int pos = 0;
		EXPECT_EQ(errorClassOf(rma_pack(nullptr, 4, RMA_INT, packed, 64, &pos, RMA_COMM_WORLD)), RMA_ERR_BUFFER);
		EXPECT_EQ(errorClassOf(rma_pack(in, 4, RMA_INT, firstPage(16), 64, &pos, RMA_COMM_WORLD)),
			  RMA_ERR_BUFFER);
		EXPECT_EQ(pos, 0);
		EXPECT_EQ(errorClassOf(rma_unpack(packed, 64, &pos, nullptr, 4, RMA_INT, RMA_COMM_WORLD)),
			  RMA_ERR_BUFFER);
		EXPECT_EQ(rma_pack(nullptr, 0, RMA_INT, nullptr, 0, &pos, RMA_COMM_WORLD), RMA_SUCCESS);
		ASSERT_EQ(rma_pack(in, 4, RMA_INT, packed, 64, &pos, RMA_COMM_WORLD), RMA_SUCCESS);
		EXPECT_EQ(pos, 16);
		ASSERT_EQ(rma_finalize(), RMA_SUCCESS);
	}));
}

TEST(BadInputTest, StaleAndForeignRequestsAreRequestErrors)
{
	withLockAll([](rma_win win, int64_t *) {
		const int t = 1 - worldRank();
		int64_t v = 7, r = 0;
		rma_request req, copy;
		/* Completed at the call (put), and queued (a ring record): both become stale when freed. */
		ASSERT_EQ(rma_rput(&v, 1, RMA_INT64_T, t, 0, 1, RMA_INT64_T, win, &req), RMA_SUCCESS);
		copy = req;
		ASSERT_EQ(rma_wait(&req, nullptr), RMA_SUCCESS);
		EXPECT_EQ(req, RMA_REQUEST_NULL);
		EXPECT_EQ(errorClassOf(rma_wait(&copy, nullptr)), RMA_ERR_REQUEST);
		int flag = 0;
		EXPECT_EQ(errorClassOf(rma_test(&copy, &flag, nullptr)), RMA_ERR_REQUEST);
		EXPECT_EQ(errorClassOf(rma_request_free(&copy)), RMA_ERR_REQUEST);

		ASSERT_EQ(rma_rget_accumulate(&v, 1, RMA_INT64_T, &r, 1, RMA_INT64_T, t, 1, 1, RMA_INT64_T, RMA_SUM, win,
					      &req),
			  RMA_SUCCESS);
		copy = req;
		ASSERT_EQ(rma_request_free(&req), RMA_SUCCESS);
		EXPECT_EQ(errorClassOf(rma_wait(&copy, nullptr)), RMA_ERR_REQUEST);
		/* The freed operation still completes at the flush. */
		ASSERT_EQ(rma_win_flush(t, win), RMA_SUCCESS);

		/* Handles of another kind, and made-up values. */
		rma_request foreign = reinterpret_cast<rma_request>(reinterpret_cast<uintptr_t>(win));
		EXPECT_EQ(errorClassOf(rma_wait(&foreign, nullptr)), RMA_ERR_REQUEST);
		rma_request junk = reinterpret_cast<rma_request>(uintptr_t(0x0700001200000400ull));
		EXPECT_EQ(errorClassOf(rma_test(&junk, &flag, nullptr)), RMA_ERR_REQUEST);
		rma_request reqs[2];
		ASSERT_EQ(rma_rput(&v, 1, RMA_INT64_T, t, 2, 1, RMA_INT64_T, win, &reqs[0]), RMA_SUCCESS);
		reqs[1] = copy;
		EXPECT_EQ(errorClassOf(rma_waitall(2, reqs, nullptr)), RMA_ERR_REQUEST);
		ASSERT_EQ(rma_wait(&reqs[0], nullptr), RMA_SUCCESS);
	});
}

TEST(BadInputTest, UnknownErrorCodesKeyvalsAndOverflowingSizes)
{
	EXPECT_RANKS_PASS(runRanks(1, [](int) {
		ASSERT_EQ(rma_init(nullptr, nullptr), RMA_SUCCESS);
		rma_comm_set_errhandler(RMA_COMM_WORLD, RMA_ERRORS_RETURN);
		rma_comm_set_errhandler(RMA_COMM_SELF, RMA_ERRORS_RETURN);
		int cls = -1, len = 0;
		char text[RMA_MAX_ERROR_STRING];
		for (int code : { 99999, -1, RMA_ERR_LASTCODE, INT_MAX }) {
			EXPECT_EQ(rma_error_class(code, &cls), RMA_ERR_ARG) << code;
			EXPECT_EQ(rma_error_string(code, text, &len), RMA_ERR_ARG) << code;
		}
		/* Real codes still answer: bare classes and codes with a message. */
		EXPECT_EQ(rma_error_class(RMA_ERR_RANK, &cls), RMA_SUCCESS);
		EXPECT_EQ(cls, RMA_ERR_RANK);
		int rank;
		int code = rma_comm_rank(RMA_COMM_NULL, &rank);
		ASSERT_NE(code, RMA_SUCCESS);
		EXPECT_EQ(rma_error_class(code, &cls), RMA_SUCCESS);
		EXPECT_EQ(rma_error_string(code, text, &len), RMA_SUCCESS);

		rma_count size = 0;
		rma_datatype big;
		ASSERT_EQ(rma_type_contiguous(1 << 30, RMA_DOUBLE, &big), RMA_SUCCESS);
		ASSERT_EQ(rma_type_commit(&big), RMA_SUCCESS);
		EXPECT_EQ(errorClassOf(rma_pack_size_c(rma_count(1) << 40, big, RMA_COMM_WORLD, &size)), RMA_ERR_COUNT);
		EXPECT_EQ(errorClassOf(rma_pack_size_c(INT64_MAX, RMA_INT, RMA_COMM_WORLD, &size)), RMA_ERR_COUNT);
		ASSERT_EQ(rma_pack_size_c(1000, RMA_INT, RMA_COMM_WORLD, &size), RMA_SUCCESS);
		EXPECT_EQ(size, 4000);
		int isize = 0;
		ASSERT_EQ(rma_pack_size(4, big, RMA_COMM_WORLD, &isize), RMA_SUCCESS);
		EXPECT_EQ(isize, RMA_UNDEFINED); /* does not fit an int */
		rma_type_free(&big);

		int64_t *base;
		rma_win win;
		ASSERT_EQ(rma_win_allocate(64, 8, RMA_INFO_NULL, RMA_COMM_WORLD, &base, &win), RMA_SUCCESS);
		rma_win_set_errhandler(win, RMA_ERRORS_RETURN);
		void *val = nullptr;
		int flag = -1;
		EXPECT_EQ(errorClassOf(rma_win_get_attr(win, 12345, &val, &flag)), RMA_ERR_KEYVAL);
		EXPECT_EQ(errorClassOf(rma_win_get_attr(win, -7, &val, &flag)), RMA_ERR_KEYVAL);
		ASSERT_EQ(rma_win_get_attr(win, RMA_WIN_SIZE, &val, &flag), RMA_SUCCESS);
		EXPECT_EQ(flag, 1);
		EXPECT_EQ(*static_cast<rma_aint *>(val), 64);
		ASSERT_EQ(rma_win_free(&win), RMA_SUCCESS);
		ASSERT_EQ(rma_finalize(), RMA_SUCCESS);
	}));
}

/* Every RMA call to RMA_PROC_NULL is a no-op in every kind of access epoch, requests included. */
TEST(BadInputTest, ProcNullIsANoOpInEveryEpoch)
{
	EXPECT_RANKS_PASS(runRanks(2, [](int rank) {
		ASSERT_EQ(rma_init(nullptr, nullptr), RMA_SUCCESS);
		int64_t *base;
		rma_win win;
		ASSERT_EQ(rma_win_allocate(64, 8, RMA_INFO_NULL, RMA_COMM_WORLD, &base, &win), RMA_SUCCESS);
		rma_win_set_errhandler(win, RMA_ERRORS_RETURN);
		std::memset(base, 0, 64);
		rma_group peer = pairGroup(1 - rank, 1 - rank);
		auto allCalls = [&](const char *epoch) {
			SCOPED_TRACE(epoch);
			int64_t v = 5, r = -1, c = 0;
			const int N = RMA_PROC_NULL;
			EXPECT_EQ(rma_put(&v, 1, RMA_INT64_T, N, 0, 1, RMA_INT64_T, win), RMA_SUCCESS);
			EXPECT_EQ(rma_get(&r, 1, RMA_INT64_T, N, 0, 1, RMA_INT64_T, win), RMA_SUCCESS);
			EXPECT_EQ(rma_accumulate(&v, 1, RMA_INT64_T, N, 0, 1, RMA_INT64_T, RMA_SUM, win), RMA_SUCCESS);
			EXPECT_EQ(rma_get_accumulate(&v, 1, RMA_INT64_T, &r, 1, RMA_INT64_T, N, 0, 1, RMA_INT64_T, RMA_SUM,
						     win),
				  RMA_SUCCESS);
			EXPECT_EQ(rma_fetch_and_op(&v, &r, RMA_INT64_T, N, 0, RMA_SUM, win), RMA_SUCCESS);
			EXPECT_EQ(rma_compare_and_swap(&v, &c, &r, RMA_INT64_T, N, 0, win), RMA_SUCCESS);
			EXPECT_EQ(r, -1); /* nothing came back */
			rma_request q[4];
			EXPECT_EQ(rma_rput(&v, 1, RMA_INT64_T, N, 0, 1, RMA_INT64_T, win, &q[0]), RMA_SUCCESS);
			EXPECT_EQ(rma_rget(&r, 1, RMA_INT64_T, N, 0, 1, RMA_INT64_T, win, &q[1]), RMA_SUCCESS);
			EXPECT_EQ(rma_raccumulate(&v, 1, RMA_INT64_T, N, 0, 1, RMA_INT64_T, RMA_SUM, win, &q[2]),
				  RMA_SUCCESS);
			EXPECT_EQ(rma_rget_accumulate(&v, 1, RMA_INT64_T, &r, 1, RMA_INT64_T, N, 0, 1, RMA_INT64_T,
						      RMA_SUM, win, &q[3]),
				  RMA_SUCCESS);
			int flag = 0;
			EXPECT_EQ(rma_test(&q[0], &flag, nullptr), RMA_SUCCESS);
			EXPECT_EQ(flag, 1);
			EXPECT_EQ(rma_waitall(3, &q[1], nullptr), RMA_SUCCESS);
		};
		ASSERT_EQ(rma_win_fence(0, win), RMA_SUCCESS);
		allCalls("fence");
		ASSERT_EQ(rma_win_fence(RMA_MODE_NOSUCCEED, win), RMA_SUCCESS);
		ASSERT_EQ(rma_win_post(peer, 0, win), RMA_SUCCESS);
		ASSERT_EQ(rma_win_start(peer, 0, win), RMA_SUCCESS);
		allCalls("pscw");
		ASSERT_EQ(rma_win_complete(win), RMA_SUCCESS);
		ASSERT_EQ(rma_win_wait(win), RMA_SUCCESS);
		ASSERT_EQ(rma_win_lock(RMA_LOCK_SHARED, 1 - rank, 0, win), RMA_SUCCESS);
		allCalls("lock");
		ASSERT_EQ(rma_win_unlock(1 - rank, win), RMA_SUCCESS);
		ASSERT_EQ(rma_win_lock_all(0, win), RMA_SUCCESS);
		allCalls("lock_all");
		ASSERT_EQ(rma_win_unlock_all(win), RMA_SUCCESS);
		/* Outside every epoch it is still an epoch error, as MPI requires. */
		int64_t v = 1;
		EXPECT_EQ(errorClassOf(rma_put(&v, 1, RMA_INT64_T, RMA_PROC_NULL, 0, 1, RMA_INT64_T, win)),
			  RMA_ERR_RMA_SYNC);
		rma_barrier(RMA_COMM_WORLD);
		for (int i = 0; i < 8; ++i)
			EXPECT_EQ(base[i], 0);
		rma_group_free(&peer);
		ASSERT_EQ(rma_win_free(&win), RMA_SUCCESS);
		ASSERT_EQ(rma_finalize(), RMA_SUCCESS);
	}));
}

/* Zero-count operations succeed whatever their types; rank and epoch are still checked. */
TEST(BadInputTest, ZeroCountOperationsSucceedWithAnyTypes)
{
	withLockAll([](rma_win win, int64_t *base) {
		const int t = 1 - worldRank();
		double d = 1.5;
		int64_t r = -1;
		EXPECT_EQ(rma_accumulate(&d, 0, RMA_DOUBLE, t, 0, 0, RMA_INT64_T, RMA_SUM, win), RMA_SUCCESS);
		EXPECT_EQ(rma_accumulate(&d, 0, RMA_DOUBLE, t, 0, 0, RMA_INT64_T, RMA_BXOR, win), RMA_SUCCESS);
		EXPECT_EQ(rma_accumulate(&d, 0, RMA_FLOAT_INT, t, 0, 0, RMA_INT64_T, RMA_MAXLOC, win), RMA_SUCCESS);
		EXPECT_EQ(rma_get_accumulate(&d, 0, RMA_DOUBLE, &r, 0, RMA_CHAR, t, 0, 0, RMA_INT64_T, RMA_SUM, win),
			  RMA_SUCCESS);
		EXPECT_EQ(rma_put(&d, 0, RMA_DOUBLE, t, 0, 0, RMA_INT64_T, win), RMA_SUCCESS);
		EXPECT_EQ(rma_get(&d, 0, RMA_DOUBLE, t, 0, 0, RMA_INT, win), RMA_SUCCESS);
		rma_request q;
		EXPECT_EQ(rma_raccumulate(&d, 0, RMA_DOUBLE, t, 0, 0, RMA_INT64_T, RMA_SUM, win, &q), RMA_SUCCESS);
		EXPECT_EQ(rma_wait(&q, nullptr), RMA_SUCCESS);
		/* The rank is still checked. */
		EXPECT_EQ(errorClassOf(rma_accumulate(&d, 0, RMA_DOUBLE, 7, 0, 0, RMA_INT64_T, RMA_SUM, win)),
			  RMA_ERR_RANK);
		/* Non-empty mismatches are still errors. */
		EXPECT_EQ(errorClassOf(rma_accumulate(&d, 1, RMA_DOUBLE, t, 0, 1, RMA_INT64_T, RMA_SUM, win)),
			  RMA_ERR_TYPE);
		EXPECT_EQ(r, -1);
		rma_win_flush_all(win);
		rma_barrier(RMA_COMM_WORLD);
		EXPECT_EQ(base[0], 0);
	});
}

/* RMA_BOTTOM with absolute-address datatypes: origin, result and a dynamic window's target. */
TEST(BadInputTest, BottomWithAbsoluteAddresses)
{
	EXPECT_RANKS_PASS(runRanks(2, [](int rank) {
		ASSERT_EQ(rma_init(nullptr, nullptr), RMA_SUCCESS);
		rma_comm_set_errhandler(RMA_COMM_WORLD, RMA_ERRORS_RETURN);
		rma_comm_set_errhandler(RMA_COMM_SELF, RMA_ERRORS_RETURN);
		TestWindow tw;
		ASSERT_TRUE(makeWindow(Kind::Dynamic, 16 * sizeof(int64_t), 1, tw));
		rma_win win = tw.win;
		rma_win_set_errhandler(win, RMA_ERRORS_RETURN);
		auto *mem = reinterpret_cast<int64_t *>(tw.local);
		std::memset(mem, 0, 16 * sizeof(int64_t));
		const std::vector<rma_aint> &addrs = tw.disps;
		rma_barrier(RMA_COMM_WORLD);
		const int t = 1 - rank;

		/* Origin: two scattered values, described by absolute addresses. */
		int64_t a = 100 + rank, b = 200 + rank;
		rma_aint disps[2];
		rma_get_address(&a, &disps[0]);
		rma_get_address(&b, &disps[1]);
		int lens[2] = { 1, 1 };
		rma_datatype scattered;
		ASSERT_EQ(rma_type_create_hindexed(2, lens, disps, RMA_INT64_T, &scattered), RMA_SUCCESS);
		ASSERT_EQ(rma_type_commit(&scattered), RMA_SUCCESS);

		ASSERT_EQ(rma_win_lock_all(0, win), RMA_SUCCESS);
		/* Target: RMA_BOTTOM-based, i.e. the peer's absolute address as displacement. */
		ASSERT_EQ(rma_put(RMA_BOTTOM, 1, scattered, t, addrs[t], 2, RMA_INT64_T, win), RMA_SUCCESS);
		ASSERT_EQ(rma_accumulate(RMA_BOTTOM, 1, scattered, t, addrs[t] + 2 * 8, 2, RMA_INT64_T, RMA_SUM, win),
			  RMA_SUCCESS);
		ASSERT_EQ(rma_win_flush(t, win), RMA_SUCCESS);
		rma_barrier(RMA_COMM_WORLD);
		EXPECT_EQ(mem[0], 100 + t);
		EXPECT_EQ(mem[1], 200 + t);
		EXPECT_EQ(mem[2], 100 + t);
		EXPECT_EQ(mem[3], 200 + t);
		rma_barrier(RMA_COMM_WORLD);
		/* Result side: get and get_accumulate into absolute addresses. */
		a = b = 0;
		ASSERT_EQ(rma_get(RMA_BOTTOM, 1, scattered, t, addrs[t], 2, RMA_INT64_T, win), RMA_SUCCESS);
		ASSERT_EQ(rma_win_flush(t, win), RMA_SUCCESS);
		EXPECT_EQ(a, 100 + rank);
		EXPECT_EQ(b, 200 + rank);
		int64_t add[2] = { 1, 1 };
		ASSERT_EQ(rma_get_accumulate(add, 2, RMA_INT64_T, RMA_BOTTOM, 1, scattered, t, addrs[t] + 2 * 8, 2,
					     RMA_INT64_T, RMA_SUM, win),
			  RMA_SUCCESS);
		ASSERT_EQ(rma_win_flush(t, win), RMA_SUCCESS);
		EXPECT_EQ(a, 100 + rank);
		EXPECT_EQ(b, 200 + rank);
		/* RMA_BOTTOM with a plain type is a NULL buffer. */
		EXPECT_EQ(errorClassOf(rma_put(RMA_BOTTOM, 1, RMA_INT64_T, t, addrs[t], 1, RMA_INT64_T, win)),
			  RMA_ERR_BUFFER);
		ASSERT_EQ(rma_win_unlock_all(win), RMA_SUCCESS);
		rma_barrier(RMA_COMM_WORLD);
		EXPECT_EQ(mem[2], 101 + t);
		EXPECT_EQ(mem[3], 201 + t);
		rma_type_free(&scattered);
		freeWindow(tw);
		ASSERT_EQ(rma_finalize(), RMA_SUCCESS);
	}));
}

} /* namespace */

namespace {

/*
 * Every knob of common/knobs.h with a garbage value: rma_init fails with a
 * message naming the variable and what it accepts, and so does rmarun before
 * it starts a rank.
 */
TEST(KnobTest, GarbageEnvironmentValuesFailInitNamingTheVariable)
{
	const std::pair<const char *, const char *> cases[] = {
		{ "RMA_ACC_PATH", "banana" },	  { "RMA_NO_MEMBARRIER", "maybe" }, { "RMA_PROGRESS", "fast" },
		{ "RMA_PROGRESS_CORE", "-3" },	  { "RMA_NO_PIDFD", "yes" },	    { "RMA_TOPOLOGY", "/nonexistent/sys" },
		{ "RMA_NET_URING", "sometimes" }, { "RMA_STATS", "yes" },
	};
	for (const auto &knob : cases) {
		/* Named copies: clang 14 lets no lambda capture a structured binding. */
		const char *name = knob.first;
		const char *value = knob.second;
		SCOPED_TRACE(name);
		int status = -1;
		librma::test::CapturedStdio out = librma::test::captureStdio([&] {
			status = runRanks(1, [name = name, value = value](int) {
				setenv(name, value, 1);
				int rc = rma_init(nullptr, nullptr);
				std::fflush(stderr);
				_exit(rc == RMA_SUCCESS ? 0 : 3);
			});
		});
		EXPECT_EQ(status, 3);
		EXPECT_NE(out.err.find(std::string(name) + "='" + value + "': accepts"), std::string::npos) << out.err;
	}
	/* Valid values pass. */
	EXPECT_RANKS_PASS(runRanks(1, [](int) {
		setenv("RMA_ACC_PATH", "ring", 1);
		setenv("RMA_NO_MEMBARRIER", "0", 1);
		ASSERT_EQ(rma_init(nullptr, nullptr), RMA_SUCCESS);
		ASSERT_EQ(rma_finalize(), RMA_SUCCESS);
	}));
}

TEST(KnobTest, RmarunRefusesGarbageKnobsBeforeStartingRanks)
{
	const char *rmarun = std::getenv("RMA_RMARUN");
	ASSERT_NE(rmarun, nullptr);
	librma::test::CommandResult r = librma::test::runCommand(
		{ "/usr/bin/env", "RMA_ACC_PATH=banana", rmarun, "-n", "2", "/bin/echo", "started" }, 30);
	EXPECT_EQ(r.status, 2) << r.out << r.err;
	EXPECT_EQ(r.out.find("started"), std::string::npos) << r.out;
	EXPECT_NE(r.err.find("RMA_ACC_PATH='banana': accepts auto, origin or ring"), std::string::npos) << r.err;
}

} /* namespace */
