/* SPDX-License-Identifier: MIT */
/*
 * The accumulate family's rules beyond arithmetic, over real processes:
 * every misuse is an error of MPI's class with nothing written; one
 * origin's accumulates to one target are ordered (rar, raw, war, waw) even
 * when a queued array accumulate is followed by a single-element atomic;
 * request-based forms deliver fetched data by completion; the info keys are
 * reported as set; and windows of every flavor give the same results.
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


struct DoubleInt {
	double v;
	int i;
};

/* ------------------------------------------------------------------------ */
/* Errors                                                                   */
/* ------------------------------------------------------------------------ */

constexpr unsigned char kSentinel = 0x5a;
constexpr int kErrWindowBytes = 256;

/* An op on a type MPI does not define it on. */
struct BadPair {
	rma_op op;
	rma_datatype type;
	const char *what;
};

const BadPair kBadPairs[] = {
	{ RMA_BAND, RMA_DOUBLE, "BAND on DOUBLE" },
	{ RMA_BOR, RMA_FLOAT, "BOR on FLOAT" },
	{ RMA_BXOR, RMA_LONG_DOUBLE, "BXOR on LONG_DOUBLE" },
	{ RMA_MAXLOC, RMA_INT, "MAXLOC on INT" },
	{ RMA_MINLOC, RMA_DOUBLE, "MINLOC on DOUBLE" },
	{ RMA_LAND, RMA_FLOAT, "LAND on FLOAT" },
	{ RMA_LOR, RMA_DOUBLE, "LOR on DOUBLE" },
	{ RMA_OP_NULL, RMA_INT, "OP_NULL on INT" },
	{ RMA_PREDEFINED_(rma_op, RMA_HANDLE_KIND_OP_, 99), RMA_INT, "an unknown op" },
	{ RMA_SUM, RMA_C_BOOL, "SUM on C_BOOL" },
	{ RMA_MAX, RMA_C_BOOL, "MAX on C_BOOL" },
	{ RMA_BAND, RMA_C_BOOL, "BAND on C_BOOL" },
	{ RMA_SUM, RMA_BYTE, "SUM on BYTE" },
	{ RMA_MAX, RMA_BYTE, "MAX on BYTE" },
	{ RMA_LAND, RMA_BYTE, "LAND on BYTE" },
	{ RMA_MAX, RMA_C_DOUBLE_COMPLEX, "MAX on C_DOUBLE_COMPLEX" },
	{ RMA_LAND, RMA_C_FLOAT_COMPLEX, "LAND on C_FLOAT_COMPLEX" },
	{ RMA_BAND, RMA_C_DOUBLE_COMPLEX, "BAND on C_DOUBLE_COMPLEX" },
	{ RMA_SUM, RMA_DOUBLE_INT, "SUM on DOUBLE_INT" },
	{ RMA_MAX, RMA_2INT, "MAX on 2INT" },
	{ RMA_BAND, RMA_2INT, "BAND on 2INT" },
};

TEST(AccumulateErrorsTest, EveryMisuseIsAnErrorOfItsClassAndWritesNothing)
{
	EXPECT_RANKS_PASS(runRanks(2, [](int) {
		ASSERT_EQ(rma_init(nullptr, nullptr), RMA_SUCCESS);
		rma_comm_set_errhandler(RMA_COMM_SELF, RMA_ERRORS_RETURN);
		const int rank = worldRank(), peer = 1 - rank;
		unsigned char *base;
		rma_win win;
		ASSERT_EQ(rma_win_allocate(kErrWindowBytes, 1, RMA_INFO_NULL, RMA_COMM_WORLD, &base, &win), RMA_SUCCESS);
		ASSERT_EQ(rma_win_set_errhandler(win, RMA_ERRORS_RETURN), RMA_SUCCESS);
		std::memset(base, kSentinel, kErrWindowBytes);
		rma_barrier(RMA_COMM_WORLD);

		alignas(64) unsigned char origin[64], compare[64], result[64];
		std::memset(origin, 1, sizeof(origin));
		std::memset(compare, kSentinel, sizeof(compare)); /* a CAS would succeed if it ran */
		std::memset(result, kSentinel, sizeof(result));
		auto resultUntouched = [&] {
			return std::all_of(result, result + sizeof(result), [](unsigned char c) { return c == kSentinel; });
		};

		/* Outside any epoch. */
		rma_request req = RMA_REQUEST_NULL;
		EXPECT_CLASS(rma_accumulate(origin, 1, RMA_INT, peer, 0, 1, RMA_INT, RMA_SUM, win), RMA_ERR_RMA_SYNC);
		EXPECT_CLASS(rma_get_accumulate(origin, 1, RMA_INT, result, 1, RMA_INT, peer, 0, 1, RMA_INT, RMA_SUM, win),
			     RMA_ERR_RMA_SYNC);
		EXPECT_CLASS(rma_fetch_and_op(origin, result, RMA_INT, peer, 0, RMA_SUM, win), RMA_ERR_RMA_SYNC);
		EXPECT_CLASS(rma_compare_and_swap(origin, compare, result, RMA_INT, peer, 0, win), RMA_ERR_RMA_SYNC);
		EXPECT_CLASS(rma_raccumulate(origin, 1, RMA_INT, peer, 0, 1, RMA_INT, RMA_SUM, win, &req), RMA_ERR_RMA_SYNC);
		EXPECT_CLASS(rma_rget_accumulate(origin, 1, RMA_INT, result, 1, RMA_INT, peer, 0, 1, RMA_INT, RMA_SUM, win,
						 &req),
			     RMA_ERR_RMA_SYNC);
		EXPECT_EQ(req, RMA_REQUEST_NULL);
		EXPECT_TRUE(resultUntouched());

		/* Request-based forms belong to passive-target epochs only. */
		ASSERT_EQ(rma_win_fence(0, win), RMA_SUCCESS);
		EXPECT_CLASS(rma_raccumulate(origin, 1, RMA_INT, peer, 0, 1, RMA_INT, RMA_SUM, win, &req), RMA_ERR_RMA_SYNC);
		EXPECT_CLASS(rma_rget_accumulate(origin, 1, RMA_INT, result, 1, RMA_INT, peer, 0, 1, RMA_INT, RMA_NO_OP, win,
						 &req),
			     RMA_ERR_RMA_SYNC);
		EXPECT_EQ(req, RMA_REQUEST_NULL);
		ASSERT_EQ(rma_win_fence(RMA_MODE_NOSUCCEED, win), RMA_SUCCESS);

		ASSERT_EQ(rma_win_lock_all(0, win), RMA_SUCCESS);
		/* Ops not defined on the type: RMA_ERR_OP from every call of the family. */
		for (const BadPair &b : kBadPairs) {
			SCOPED_TRACE(b.what);
			EXPECT_CLASS(rma_accumulate(origin, 1, b.type, peer, 0, 1, b.type, b.op, win), RMA_ERR_OP);
			EXPECT_CLASS(rma_get_accumulate(origin, 1, b.type, result, 1, b.type, peer, 0, 1, b.type, b.op, win),
				     RMA_ERR_OP);
			EXPECT_CLASS(rma_fetch_and_op(origin, result, b.type, peer, 0, b.op, win), RMA_ERR_OP);
			EXPECT_CLASS(rma_raccumulate(origin, 1, b.type, peer, 0, 1, b.type, b.op, win, &req), RMA_ERR_OP);
			EXPECT_CLASS(rma_rget_accumulate(origin, 1, b.type, result, 1, b.type, peer, 0, 1, b.type, b.op, win,
							 &req),
				     RMA_ERR_OP);
			EXPECT_EQ(req, RMA_REQUEST_NULL);
		}
		/* NO_OP is for the calls that fetch; the multi-language integers take no logical op. */
		EXPECT_CLASS(rma_accumulate(origin, 1, RMA_INT, peer, 0, 1, RMA_INT, RMA_NO_OP, win), RMA_ERR_OP);
		EXPECT_CLASS(rma_raccumulate(origin, 1, RMA_INT, peer, 0, 1, RMA_INT, RMA_NO_OP, win, &req), RMA_ERR_OP);
		EXPECT_EQ(req, RMA_REQUEST_NULL);
		for (rma_datatype t : { RMA_AINT, RMA_OFFSET, RMA_COUNT }) {
			EXPECT_CLASS(rma_accumulate(origin, 1, t, peer, 0, 1, t, RMA_LAND, win), RMA_ERR_OP);
			EXPECT_CLASS(rma_fetch_and_op(origin, result, t, peer, 0, RMA_LXOR, win), RMA_ERR_OP);
		}
		/* ... also when the type is derived from one the op does not take. */
		rma_datatype vecDouble, vecInt, mixed, contigInt;
		ASSERT_EQ(rma_type_vector(2, 1, 2, RMA_DOUBLE, &vecDouble), RMA_SUCCESS);
		ASSERT_EQ(rma_type_commit(&vecDouble), RMA_SUCCESS);
		EXPECT_CLASS(rma_accumulate(origin, 2, RMA_DOUBLE, peer, 0, 1, vecDouble, RMA_BAND, win), RMA_ERR_OP);

		/* CAS on types that are not integer, logical or byte. */
		for (rma_datatype t : { RMA_FLOAT, RMA_DOUBLE, RMA_LONG_DOUBLE, RMA_C_DOUBLE_COMPLEX, RMA_DOUBLE_INT }) {
			EXPECT_CLASS(rma_compare_and_swap(origin, compare, result, t, peer, 0, win), RMA_ERR_TYPE);
		}
		/* Mismatched basic types between origin, target and result. */
		ASSERT_EQ(rma_type_vector(2, 1, 2, RMA_INT, &vecInt), RMA_SUCCESS);
		ASSERT_EQ(rma_type_commit(&vecInt), RMA_SUCCESS);
		EXPECT_CLASS(rma_accumulate(origin, 1, RMA_INT, peer, 0, 1, RMA_FLOAT, RMA_SUM, win), RMA_ERR_TYPE);
		EXPECT_CLASS(rma_accumulate(origin, 2, RMA_FLOAT, peer, 0, 1, vecInt, RMA_SUM, win), RMA_ERR_TYPE);
		EXPECT_CLASS(rma_accumulate(origin, 2, RMA_INT, peer, 0, 1, vecDouble, RMA_REPLACE, win), RMA_ERR_TYPE);
		EXPECT_CLASS(rma_get_accumulate(origin, 1, RMA_INT64_T, result, 1, RMA_DOUBLE, peer, 0, 1, RMA_INT64_T,
						RMA_SUM, win),
			     RMA_ERR_TYPE);
		EXPECT_CLASS(rma_get_accumulate(origin, 1, RMA_INT, result, 1, RMA_UNSIGNED, peer, 0, 1, RMA_INT, RMA_NO_OP,
						win),
			     RMA_ERR_TYPE);
		/* A type whose basic elements are not all of one type. */
		const int lens[] = { 1, 1 };
		const rma_aint disps[] = { 0, 8 };
		const rma_datatype parts[] = { RMA_INT, RMA_DOUBLE };
		ASSERT_EQ(rma_type_create_struct(2, lens, disps, parts, &mixed), RMA_SUCCESS);
		ASSERT_EQ(rma_type_commit(&mixed), RMA_SUCCESS);
		EXPECT_CLASS(rma_accumulate(origin, 1, mixed, peer, 0, 1, mixed, RMA_SUM, win), RMA_ERR_TYPE);
		EXPECT_CLASS(rma_accumulate(origin, 1, mixed, peer, 0, 1, mixed, RMA_REPLACE, win), RMA_ERR_TYPE);
		/* fetch_and_op and CAS take a predefined type only. */
		ASSERT_EQ(rma_type_contiguous(1, RMA_INT, &contigInt), RMA_SUCCESS);
		ASSERT_EQ(rma_type_commit(&contigInt), RMA_SUCCESS);
		EXPECT_CLASS(rma_fetch_and_op(origin, result, contigInt, peer, 0, RMA_SUM, win), RMA_ERR_TYPE);
		EXPECT_CLASS(rma_compare_and_swap(origin, compare, result, contigInt, peer, 0, win), RMA_ERR_TYPE);
		EXPECT_CLASS(rma_fetch_and_op(origin, result, RMA_DATATYPE_NULL, peer, 0, RMA_SUM, win), RMA_ERR_TYPE);

		/* Outside the target window, also when only the tail of the footprint leaves it. */
		const int lastInt64 = kErrWindowBytes - 8;
		EXPECT_CLASS(rma_accumulate(origin, 1, RMA_INT64_T, peer, kErrWindowBytes, 1, RMA_INT64_T, RMA_SUM, win),
			     RMA_ERR_RMA_RANGE);
		EXPECT_CLASS(rma_accumulate(origin, 4, RMA_INT64_T, peer, lastInt64 - 8, 4, RMA_INT64_T, RMA_SUM, win),
			     RMA_ERR_RMA_RANGE);
		EXPECT_CLASS(rma_accumulate(origin, 2, RMA_INT, peer, kErrWindowBytes - 8, 1, vecInt, RMA_SUM, win),
			     RMA_ERR_RMA_RANGE);
		EXPECT_CLASS(rma_get_accumulate(origin, 4, RMA_INT64_T, result, 4, RMA_INT64_T, peer, lastInt64 - 16, 4,
						RMA_INT64_T, RMA_SUM, win),
			     RMA_ERR_RMA_RANGE);
		EXPECT_CLASS(rma_fetch_and_op(origin, result, RMA_INT64_T, peer, kErrWindowBytes, RMA_SUM, win),
			     RMA_ERR_RMA_RANGE);
		EXPECT_CLASS(rma_fetch_and_op(origin, result, RMA_INT64_T, peer, kErrWindowBytes - 4, RMA_NO_OP, win),
			     RMA_ERR_RMA_RANGE);
		EXPECT_CLASS(rma_compare_and_swap(origin, compare, result, RMA_INT64_T, peer, kErrWindowBytes - 4, win),
			     RMA_ERR_RMA_RANGE);
		EXPECT_CLASS(rma_raccumulate(origin, 4, RMA_INT64_T, peer, lastInt64, 4, RMA_INT64_T, RMA_SUM, win, &req),
			     RMA_ERR_RMA_RANGE);
		EXPECT_EQ(req, RMA_REQUEST_NULL);

		/* The checks rma_put makes. */
		EXPECT_CLASS(rma_accumulate(origin, 1, RMA_INT, 2, 0, 1, RMA_INT, RMA_SUM, win), RMA_ERR_RANK);
		EXPECT_CLASS(rma_fetch_and_op(origin, result, RMA_INT, -7, 0, RMA_SUM, win), RMA_ERR_RANK);
		EXPECT_CLASS(rma_accumulate(origin, -1, RMA_INT, peer, 0, 1, RMA_INT, RMA_SUM, win), RMA_ERR_COUNT);
		EXPECT_CLASS(rma_accumulate(origin, 1, RMA_INT, peer, -4, 1, RMA_INT, RMA_SUM, win), RMA_ERR_DISP);
		EXPECT_CLASS(rma_accumulate(origin, 4, RMA_INT, peer, 0, 2, RMA_INT, RMA_SUM, win), RMA_ERR_TRUNCATE);
		EXPECT_CLASS(rma_get_accumulate(origin, 4, RMA_INT, result, 2, RMA_INT, peer, 0, 4, RMA_INT, RMA_SUM, win),
			     RMA_ERR_TRUNCATE);
		EXPECT_TRUE(resultUntouched()) << "a failed call wrote its result buffer";

		/* Nothing reached the target. */
		ASSERT_EQ(rma_win_flush_all(win), RMA_SUCCESS);
		ASSERT_EQ(rma_win_unlock_all(win), RMA_SUCCESS);
		rma_barrier(RMA_COMM_WORLD);
		rma_win_sync(win);
		for (int i = 0; i < kErrWindowBytes; ++i) {
			ASSERT_EQ(base[i], kSentinel) << "byte " << i << " written by a call that failed";
		}
		EXPECT_TRUE(resultUntouched());

		/* And the window still works. */
		rma_barrier(RMA_COMM_WORLD);
		ASSERT_EQ(rma_win_lock_all(0, win), RMA_SUCCESS);
		int64_t add = 3, old = 0;
		ASSERT_EQ(rma_fetch_and_op(&add, &old, RMA_INT64_T, peer, 0, RMA_SUM, win), RMA_SUCCESS);
		ASSERT_EQ(rma_win_unlock_all(win), RMA_SUCCESS);
		int64_t sentinel64;
		std::memset(&sentinel64, kSentinel, sizeof(sentinel64));
		EXPECT_EQ(old, sentinel64);
		rma_barrier(RMA_COMM_WORLD);
		rma_win_sync(win);
		int64_t now;
		std::memcpy(&now, base, sizeof(now));
		EXPECT_EQ(now, sentinel64 + 3);

		for (rma_datatype *t : { &vecDouble, &vecInt, &mixed, &contigInt })
			EXPECT_EQ(rma_type_free(t), RMA_SUCCESS);
		ASSERT_EQ(rma_win_free(&win), RMA_SUCCESS);
		ASSERT_EQ(rma_finalize(), RMA_SUCCESS);
	}));
}

/*
 * A derived type built from RMA_2INT is made of 2INT pairs, so MAXLOC takes
 * it and a plain 2INT buffer matches it (MPI: all basic components of one
 * predefined type). Its signature is {int, int}, so an engine that looks at
 * the signature alone takes it for RMA_INT (a bug this test caught).
 */
TEST(AccumulatePairTypesTest, DerivedTypesOf2IntArePairs)
{
	EXPECT_RANKS_PASS(runRanks(2, [](int) {
		ASSERT_EQ(rma_init(nullptr, nullptr), RMA_SUCCESS);
		const int rank = worldRank(), peer = 1 - rank;
		struct TwoInt {
			int v, i;
		};
		TwoInt *base;
		rma_win win;
		ASSERT_EQ(rma_win_allocate(4 * sizeof(TwoInt), sizeof(TwoInt), RMA_INFO_NULL, RMA_COMM_WORLD, &base, &win),
			  RMA_SUCCESS);
		rma_win_set_errhandler(win, RMA_ERRORS_RETURN);
		for (int k = 0; k < 4; ++k)
			base[k] = { 5, 9 };
		rma_datatype pairs2;
		ASSERT_EQ(rma_type_contiguous(2, RMA_2INT, &pairs2), RMA_SUCCESS);
		ASSERT_EQ(rma_type_commit(&pairs2), RMA_SUCCESS);
		rma_barrier(RMA_COMM_WORLD);
		const TwoInt mine[4] = { { 7, 1 }, { 5, 2 }, { 3, 3 }, { 5, 20 } };
		ASSERT_EQ(rma_win_lock_all(0, win), RMA_SUCCESS);
		int rc = rma_accumulate(mine, 1, pairs2, peer, 0, 1, pairs2, RMA_MAXLOC, win);
		EXPECT_EQ(rc, RMA_SUCCESS) << "contiguous(2, 2INT) with MAXLOC: " << errorText(rc);
		rc = rma_accumulate(mine + 2, 2, RMA_2INT, peer, 2, 1, pairs2, RMA_MAXLOC, win);
		EXPECT_EQ(rc, RMA_SUCCESS) << "2 x 2INT into contiguous(2, 2INT): " << errorText(rc);
		ASSERT_EQ(rma_win_unlock_all(win), RMA_SUCCESS);
		rma_barrier(RMA_COMM_WORLD);
		rma_win_sync(win);
		const TwoInt want[4] = { { 7, 1 }, { 5, 2 }, { 5, 9 }, { 5, 9 } };
		for (int k = 0; k < 4; ++k) {
			EXPECT_EQ(base[k].v, want[k].v) << "pair " << k;
			EXPECT_EQ(base[k].i, want[k].i) << "pair " << k;
		}
		ASSERT_EQ(rma_type_free(&pairs2), RMA_SUCCESS);
		ASSERT_EQ(rma_win_free(&win), RMA_SUCCESS);
		ASSERT_EQ(rma_finalize(), RMA_SUCCESS);
	}));
}

/*
 * RMA_CHAR takes the arithmetic and bitwise ops as the platform's char, as
 * MPICH and Open MPI do (MPI lists it as a character type): one element
 * (origin atomics), arrays (ring or in place) and fetch_and_op. The MIN
 * mixes negative and positive values, so an unsigned kernel would fail it.
 */
TEST(AccumulateCharTest, CharTakesArithmeticOpsAsThePlatformsChar)
{
	EXPECT_RANKS_PASS(runRanks(2, [](int) {
		ASSERT_EQ(rma_init(nullptr, nullptr), RMA_SUCCESS);
		const int rank = worldRank(), peer = 1 - rank;
		char *base;
		rma_win win;
		ASSERT_EQ(rma_win_allocate(64, 1, RMA_INFO_NULL, RMA_COMM_WORLD, &base, &win), RMA_SUCCESS);
		rma_win_set_errhandler(win, RMA_ERRORS_RETURN);
		for (int k = 0; k < 64; ++k)
			base[k] = static_cast<char>(k - 20);
		rma_barrier(RMA_COMM_WORLD);
		char src[32];
		for (int k = 0; k < 32; ++k)
			src[k] = static_cast<char>(3 - k);
		char old = 0, one = 1;
		ASSERT_EQ(rma_win_lock_all(0, win), RMA_SUCCESS);
		EXPECT_EQ(rma_accumulate(src, 1, RMA_CHAR, peer, 0, 1, RMA_CHAR, RMA_SUM, win), RMA_SUCCESS);
		EXPECT_EQ(rma_accumulate(src, 32, RMA_CHAR, peer, 1, 32, RMA_CHAR, RMA_MIN, win), RMA_SUCCESS);
		EXPECT_EQ(rma_accumulate(src, 8, RMA_CHAR, peer, 40, 8, RMA_CHAR, RMA_BXOR, win), RMA_SUCCESS);
		EXPECT_EQ(rma_fetch_and_op(&one, &old, RMA_CHAR, peer, 50, RMA_PROD, win), RMA_SUCCESS);
		ASSERT_EQ(rma_win_unlock_all(win), RMA_SUCCESS);
		EXPECT_EQ(old, static_cast<char>(30));
		rma_barrier(RMA_COMM_WORLD);
		rma_win_sync(win);
		EXPECT_EQ(base[0], static_cast<char>(-20 + 3));
		for (int k = 0; k < 32; ++k)
			EXPECT_EQ(base[1 + k], std::min<char>(static_cast<char>(1 + k - 20), src[k])) << k;
		for (int k = 0; k < 8; ++k)
			EXPECT_EQ(base[40 + k], static_cast<char>((40 + k - 20) ^ src[k])) << k;
		EXPECT_EQ(base[50], static_cast<char>(30));
		ASSERT_EQ(rma_win_free(&win), RMA_SUCCESS);
		ASSERT_EQ(rma_finalize(), RMA_SUCCESS);
	}));
}

/*
 * Operations larger than a ring record (the staging area) and than the
 * reply area are cut into chunks: 1 MiB of doubles from each of two origins
 * sums exactly, and a get_accumulate of 96 KiB through a strided result
 * type fetches every old value, in every path and progress mode.
 */
class LargeAccumulateTest : public ::testing::TestWithParam<std::tuple<AccPath, Progress>>
{
};

TEST_P(LargeAccumulateTest, ChunkedOperationsAreExact)
{
	AccKnobs knobs(std::get<0>(GetParam()), std::get<1>(GetParam()));
	EXPECT_RANKS_PASS(runRanks(2, [](int) {
		ASSERT_EQ(rma_init(nullptr, nullptr), RMA_SUCCESS);
		const int rank = worldRank();
		constexpr int kN = 128 << 10; /* 1 MiB of doubles */
		constexpr int kFetch = 12 << 10; /* 96 KiB fetched */
		double *base;
		rma_win win;
		ASSERT_EQ(rma_win_allocate(kN * sizeof(double), sizeof(double), RMA_INFO_NULL, RMA_COMM_WORLD, &base, &win),
			  RMA_SUCCESS);
		for (int k = 0; k < kN; ++k)
			base[k] = k;
		std::vector<double> mine(kN);
		for (int k = 0; k < kN; ++k)
			mine[k] = (rank + 1) * (k % 7);
		rma_barrier(RMA_COMM_WORLD);
		ASSERT_EQ(rma_win_lock_all(0, win), RMA_SUCCESS);
		ASSERT_EQ(rma_accumulate(mine.data(), kN, RMA_DOUBLE, 0, 0, kN, RMA_DOUBLE, RMA_SUM, win), RMA_SUCCESS);
		ASSERT_EQ(rma_win_unlock_all(win), RMA_SUCCESS);
		rma_barrier(RMA_COMM_WORLD);
		if (rank == 0) {
			rma_win_sync(win);
			for (int k = 0; k < kN; ++k) {
				ASSERT_EQ(base[k], k + 3.0 * (k % 7)) << "element " << k;
			}
		}
		rma_barrier(RMA_COMM_WORLD);
		/* Rank 1 fetches and replaces rank 0's first kFetch elements, results every other double. */
		if (rank == 1) {
			rma_datatype every2;
			ASSERT_EQ(rma_type_vector(kFetch, 1, 2, RMA_DOUBLE, &every2), RMA_SUCCESS);
			ASSERT_EQ(rma_type_commit(&every2), RMA_SUCCESS);
			std::vector<double> result(2 * kFetch, -1.0);
			std::vector<double> zeros(kFetch, 0.5);
			ASSERT_EQ(rma_win_lock(RMA_LOCK_SHARED, 0, 0, win), RMA_SUCCESS);
			ASSERT_EQ(rma_get_accumulate(zeros.data(), kFetch, RMA_DOUBLE, result.data(), 1, every2, 0, 0, kFetch,
						     RMA_DOUBLE, RMA_REPLACE, win),
				  RMA_SUCCESS);
			ASSERT_EQ(rma_win_unlock(0, win), RMA_SUCCESS);
			for (int k = 0; k < kFetch; ++k) {
				ASSERT_EQ(result[2 * k], k + 3.0 * (k % 7)) << "fetched " << k;
				ASSERT_EQ(result[2 * k + 1], -1.0) << "gap " << k << " was written";
			}
			ASSERT_EQ(rma_type_free(&every2), RMA_SUCCESS);
		}
		rma_barrier(RMA_COMM_WORLD);
		if (rank == 0) {
			rma_win_sync(win);
			for (int k = 0; k < kFetch; ++k) {
				ASSERT_EQ(base[k], 0.5) << "replaced " << k;
			}
			EXPECT_EQ(base[kFetch], kFetch + 3.0 * (kFetch % 7));
		}
		ASSERT_EQ(rma_win_free(&win), RMA_SUCCESS);
		ASSERT_EQ(rma_finalize(), RMA_SUCCESS);
	}));
}

INSTANTIATE_TEST_SUITE_P(AllPathsAndProgress, LargeAccumulateTest,
			 ::testing::Values(std::make_tuple(AccPath::Auto, Progress::None),
					   std::make_tuple(AccPath::Ring, Progress::None),
					   std::make_tuple(AccPath::Ring, Progress::Thread),
					   std::make_tuple(AccPath::Ring, Progress::Agent),
					   std::make_tuple(AccPath::Origin, Progress::None)));

/* ------------------------------------------------------------------------ */
/* Ordering                                                                 */
/* ------------------------------------------------------------------------ */

class OrderingTest : public ::testing::TestWithParam<std::tuple<AccPath, Progress>>
{
};

constexpr int kOrderLen = 64, kOrderRounds = 60;

/*
 * One origin, one target, no flush between the calls of a round: a queued
 * array accumulate followed by single-element fetch_and_op / accumulate
 * (done by the origin's atomics in the auto path) and by get_accumulate on
 * the same elements. With the default accumulate_ordering each later call
 * sees (raw), does not overtake (war) and is not overwritten by (waw) the
 * earlier ones.
 */
TEST_P(OrderingTest, LaterCallsSeeEarlierOnesWithoutAFlush)
{
	auto [path, progress] = GetParam();
	AccKnobs knobs(path, progress);
	EXPECT_RANKS_PASS(runRanks(2, [](int) {
		ASSERT_EQ(rma_init(nullptr, nullptr), RMA_SUCCESS);
		const int rank = worldRank(), peer = 1 - rank;
		int64_t *base;
		rma_win win;
		ASSERT_EQ(rma_win_allocate(kOrderLen * 8, 8, RMA_INFO_NULL, RMA_COMM_WORLD, &base, &win), RMA_SUCCESS);
		rma_win_set_errhandler(win, RMA_ERRORS_RETURN);
		rma_barrier(RMA_COMM_WORLD);
		ASSERT_EQ(rma_win_lock_all(0, win), RMA_SUCCESS);
		for (int r = 0; r < kOrderRounds; ++r) {
			SCOPED_TRACE("round " + std::to_string(r));
			std::vector<int64_t> v(kOrderLen), g1(kOrderLen, -1), g2(kOrderLen, -1), fin(kOrderLen, -1);
			for (int k = 0; k < kOrderLen; ++k)
				v[k] = rank * 1000000 + r * 1000 + k;
			std::vector<int64_t> ones(kOrderLen, 1), u(kOrderLen / 2);
			for (int k = 0; k < kOrderLen / 2; ++k)
				u[k] = -(r * 1000 + k);
			const int64_t hundred = 100, w = -7777 - r, z = -8888 - r, u2[8] = { 1, 2, 3, 4, 5, 6, 7, 8 };
			int64_t f1 = -1, f2 = -1, f3 = -1;

			/* waw: the array replaces; raw: a single fetch sees it, and so does a fetch of the array. */
			ASSERT_EQ(rma_accumulate(v.data(), kOrderLen, RMA_INT64_T, peer, 0, kOrderLen, RMA_INT64_T,
						 RMA_REPLACE, win),
				  RMA_SUCCESS);
			ASSERT_EQ(rma_fetch_and_op(nullptr, &f1, RMA_INT64_T, peer, 5, RMA_NO_OP, win), RMA_SUCCESS);
			ASSERT_EQ(rma_get_accumulate(nullptr, 0, RMA_INT64_T, g1.data(), kOrderLen, RMA_INT64_T, peer, 0,
						     kOrderLen, RMA_INT64_T, RMA_NO_OP, win),
				  RMA_SUCCESS);
			/* raw: a single fetch_and_op SUM after an array SUM. */
			ASSERT_EQ(rma_accumulate(ones.data(), kOrderLen, RMA_INT64_T, peer, 0, kOrderLen, RMA_INT64_T, RMA_SUM,
						 win),
				  RMA_SUCCESS);
			ASSERT_EQ(rma_fetch_and_op(&hundred, &f2, RMA_INT64_T, peer, 7, RMA_SUM, win), RMA_SUCCESS);
			/* waw: a single REPLACE after the array SUM wins. */
			ASSERT_EQ(rma_accumulate(&w, 1, RMA_INT64_T, peer, 9, 1, RMA_INT64_T, RMA_REPLACE, win), RMA_SUCCESS);
			/* war: an array fetch, then a single REPLACE that must not show in it. */
			ASSERT_EQ(rma_get_accumulate(nullptr, 0, RMA_INT64_T, g2.data(), kOrderLen, RMA_INT64_T, peer, 0,
						     kOrderLen, RMA_INT64_T, RMA_NO_OP, win),
				  RMA_SUCCESS);
			ASSERT_EQ(rma_fetch_and_op(&z, &f3, RMA_INT64_T, peer, 11, RMA_REPLACE, win), RMA_SUCCESS);
			/* waw between arrays: the later, smaller one wins where they overlap. */
			ASSERT_EQ(rma_accumulate(u.data(), kOrderLen / 2, RMA_INT64_T, peer, kOrderLen / 2, kOrderLen / 2,
						 RMA_INT64_T, RMA_REPLACE, win),
				  RMA_SUCCESS);
			ASSERT_EQ(rma_accumulate(u2, 8, RMA_INT64_T, peer, 40, 8, RMA_INT64_T, RMA_REPLACE, win), RMA_SUCCESS);
			ASSERT_EQ(rma_win_flush(peer, win), RMA_SUCCESS);
			ASSERT_EQ(rma_get_accumulate(nullptr, 0, RMA_INT64_T, fin.data(), kOrderLen, RMA_INT64_T, peer, 0,
						     kOrderLen, RMA_INT64_T, RMA_NO_OP, win),
				  RMA_SUCCESS);
			ASSERT_EQ(rma_win_flush(peer, win), RMA_SUCCESS);

			EXPECT_EQ(f1, v[5]) << "raw: fetch_and_op did not see the array REPLACE before it";
			EXPECT_EQ(g1, v) << "raw: get_accumulate did not see the array REPLACE before it";
			EXPECT_EQ(f2, v[7] + 1) << "raw: fetch_and_op SUM did not see the array SUM before it";
			std::vector<int64_t> wantG2(kOrderLen);
			for (int k = 0; k < kOrderLen; ++k)
				wantG2[k] = v[k] + 1 + (k == 7 ? 100 : 0);
			wantG2[9] = w;
			EXPECT_EQ(g2, wantG2) << "raw/waw: get_accumulate fetched the wrong state";
			EXPECT_EQ(f3, wantG2[11]) << "war: fetch_and_op REPLACE overtook or lost the earlier fetch";
			std::vector<int64_t> want = wantG2;
			want[11] = z;
			for (int k = 0; k < kOrderLen / 2; ++k)
				want[kOrderLen / 2 + k] = u[k];
			for (int k = 0; k < 8; ++k)
				want[40 + k] = u2[k];
			EXPECT_EQ(fin, want) << "waw: the final state is not that of the last writes";
			if (::testing::Test::HasFailure())
				break;
		}
		ASSERT_EQ(rma_win_unlock_all(win), RMA_SUCCESS);
		rma_barrier(RMA_COMM_WORLD);
		ASSERT_EQ(rma_win_free(&win), RMA_SUCCESS);
		ASSERT_EQ(rma_finalize(), RMA_SUCCESS);
	}));
}

/* accumulate_ordering=none: no order promised, but after a flush everything is applied exactly once. */
TEST_P(OrderingTest, WithoutOrderingEverythingLandsByTheFlush)
{
	auto [path, progress] = GetParam();
	AccKnobs knobs(path, progress);
	EXPECT_RANKS_PASS(runRanks(2, [](int) {
		ASSERT_EQ(rma_init(nullptr, nullptr), RMA_SUCCESS);
		const int rank = worldRank(), peer = 1 - rank;
		rma_info info;
		rma_info_create(&info);
		rma_info_set(info, "accumulate_ordering", "none");
		int64_t *base;
		rma_win win;
		ASSERT_EQ(rma_win_allocate(kOrderLen * 8, 8, info, RMA_COMM_WORLD, &base, &win), RMA_SUCCESS);
		rma_info_free(&info);
		rma_win_set_errhandler(win, RMA_ERRORS_RETURN);
		rma_barrier(RMA_COMM_WORLD);
		ASSERT_EQ(rma_win_lock_all(0, win), RMA_SUCCESS);
		std::vector<int64_t> ones(kOrderLen, 1), fin(kOrderLen, -1);
		const int64_t hundred = 100;
		for (int r = 0; r < kOrderRounds; ++r) {
			int64_t f = -1;
			ASSERT_EQ(rma_accumulate(ones.data(), kOrderLen, RMA_INT64_T, peer, 0, kOrderLen, RMA_INT64_T, RMA_SUM,
						 win),
				  RMA_SUCCESS);
			ASSERT_EQ(rma_fetch_and_op(&hundred, &f, RMA_INT64_T, peer, 5, RMA_SUM, win), RMA_SUCCESS);
			ASSERT_EQ(rma_win_flush(peer, win), RMA_SUCCESS);
			/* Before this round: r * 101; the array's +1 may or may not be in. */
			EXPECT_TRUE(f == r * 101 || f == r * 101 + 1) << "round " << r << " fetched " << f;
		}
		ASSERT_EQ(rma_get_accumulate(nullptr, 0, RMA_INT64_T, fin.data(), kOrderLen, RMA_INT64_T, peer, 0, kOrderLen,
					     RMA_INT64_T, RMA_NO_OP, win),
			  RMA_SUCCESS);
		ASSERT_EQ(rma_win_unlock_all(win), RMA_SUCCESS);
		for (int k = 0; k < kOrderLen; ++k) {
			EXPECT_EQ(fin[k], kOrderRounds * (k == 5 ? 101 : 1)) << "element " << k;
		}
		rma_barrier(RMA_COMM_WORLD);
		ASSERT_EQ(rma_win_free(&win), RMA_SUCCESS);
		ASSERT_EQ(rma_finalize(), RMA_SUCCESS);
	}));
}

std::string knobName(const ::testing::TestParamInfo<std::tuple<AccPath, Progress>> &info)
{
	return std::string(accPathName(std::get<0>(info.param))) + "_progress_" + progressName(std::get<1>(info.param));
}

INSTANTIATE_TEST_SUITE_P(AllPathsAndProgress, OrderingTest,
			 ::testing::Combine(::testing::Values(AccPath::Auto, AccPath::Origin, AccPath::Ring),
					    ::testing::Values(Progress::None, Progress::Thread, Progress::Agent)),
			 knobName);

/* ------------------------------------------------------------------------ */
/* Requests                                                                 */
/* ------------------------------------------------------------------------ */

class AccumulateRequestTest : public ::testing::TestWithParam<std::tuple<AccPath, Progress>>
{
};

/* raccumulate / rget_accumulate: fetched data is in place when wait or test says complete, no flush needed. */
TEST_P(AccumulateRequestTest, FetchedDataIsThereAtCompletion)
{
	auto [path, progress] = GetParam();
	AccKnobs knobs(path, progress);
	EXPECT_RANKS_PASS(runRanks(2, [](int) {
		ASSERT_EQ(rma_init(nullptr, nullptr), RMA_SUCCESS);
		const int rank = worldRank(), peer = 1 - rank;
		constexpr int kLen = 256;
		double *base;
		rma_win win;
		ASSERT_EQ(rma_win_allocate(2 * kLen * sizeof(double), sizeof(double), RMA_INFO_NULL, RMA_COMM_WORLD, &base,
					   &win),
			  RMA_SUCCESS);
		rma_win_set_errhandler(win, RMA_ERRORS_RETURN);
		for (int k = 0; k < 2 * kLen; ++k)
			base[k] = k;
		rma_barrier(RMA_COMM_WORLD);
		ASSERT_EQ(rma_win_lock_all(0, win), RMA_SUCCESS);

		/* raccumulate, then its origin buffer is reusable at once after wait. */
		std::vector<double> add(kLen, 0.5), got(kLen, -1);
		rma_request req = RMA_REQUEST_NULL;
		ASSERT_EQ(rma_raccumulate(add.data(), kLen, RMA_DOUBLE, peer, 0, kLen, RMA_DOUBLE, RMA_SUM, win, &req),
			  RMA_SUCCESS);
		ASSERT_NE(req, RMA_REQUEST_NULL);
		ASSERT_EQ(rma_wait(&req, RMA_STATUS_IGNORE), RMA_SUCCESS);
		EXPECT_EQ(req, RMA_REQUEST_NULL);
		std::fill(add.begin(), add.end(), 1000.0); /* must not reach the target */

		/* rget_accumulate NO_OP: the fetch sees the raccumulate (raw) once wait returns. */
		ASSERT_EQ(rma_rget_accumulate(nullptr, 0, RMA_DOUBLE, got.data(), kLen, RMA_DOUBLE, peer, 0, kLen, RMA_DOUBLE,
					      RMA_NO_OP, win, &req),
			  RMA_SUCCESS);
		ASSERT_EQ(rma_wait(&req, RMA_STATUS_IGNORE), RMA_SUCCESS);
		for (int k = 0; k < kLen; ++k) {
			ASSERT_EQ(got[k], k + 0.5) << "element " << k;
		}

		/* rget_accumulate SUM into a strided result, completed by polling rma_test. */
		rma_datatype every2;
		ASSERT_EQ(rma_type_vector(kLen / 2, 1, 2, RMA_DOUBLE, &every2), RMA_SUCCESS);
		ASSERT_EQ(rma_type_commit(&every2), RMA_SUCCESS);
		std::vector<double> twos(kLen / 2, 2.0), strided(kLen, -1);
		ASSERT_EQ(rma_rget_accumulate(twos.data(), kLen / 2, RMA_DOUBLE, strided.data(), 1, every2, peer, kLen,
					      kLen / 2, RMA_DOUBLE, RMA_SUM, win, &req),
			  RMA_SUCCESS);
		int flag = 0;
		ASSERT_TRUE(eventually([&] { return rma_test(&req, &flag, RMA_STATUS_IGNORE) == RMA_SUCCESS && flag; }));
		EXPECT_EQ(req, RMA_REQUEST_NULL);
		for (int k = 0; k < kLen; ++k) {
			ASSERT_EQ(strided[k], k % 2 ? -1.0 : static_cast<double>(kLen + k / 2)) << "result element " << k;
		}

		/* Several single-element fetches at once, completed by waitall. */
		constexpr int kReqs = 8;
		rma_request reqs[kReqs];
		double one = 1.0, olds[kReqs];
		for (int i = 0; i < kReqs; ++i) {
			ASSERT_EQ(rma_rget_accumulate(&one, 1, RMA_DOUBLE, &olds[i], 1, RMA_DOUBLE, peer, kLen + kLen / 2, 1,
						      RMA_DOUBLE, RMA_SUM, win, &reqs[i]),
				  RMA_SUCCESS);
		}
		ASSERT_EQ(rma_waitall(kReqs, reqs, RMA_STATUSES_IGNORE), RMA_SUCCESS);
		for (int i = 0; i < kReqs; ++i) {
			EXPECT_EQ(olds[i], kLen + kLen / 2 + i) << "request " << i << " (ordered after the ones before it)";
			EXPECT_EQ(reqs[i], RMA_REQUEST_NULL);
		}

		/* A freed request's accumulate still completes with the flush. */
		const double ten = 10.0;
		ASSERT_EQ(rma_raccumulate(&ten, 1, RMA_DOUBLE, peer, 2 * kLen - 1, 1, RMA_DOUBLE, RMA_SUM, win, &req),
			  RMA_SUCCESS);
		ASSERT_EQ(rma_request_free(&req), RMA_SUCCESS);
		ASSERT_EQ(rma_win_flush(peer, win), RMA_SUCCESS);
		ASSERT_EQ(rma_win_unlock_all(win), RMA_SUCCESS);
		ASSERT_EQ(rma_type_free(&every2), RMA_SUCCESS);

		rma_barrier(RMA_COMM_WORLD);
		rma_win_sync(win);
		for (int k = 0; k < kLen; ++k) {
			ASSERT_EQ(base[k], k + 0.5) << "element " << k;
		}
		for (int k = 0; k < kLen / 2; ++k) {
			ASSERT_EQ(base[kLen + k], kLen + k + 2.0) << "element " << kLen + k;
		}
		EXPECT_EQ(base[kLen + kLen / 2], kLen + kLen / 2 + kReqs);
		EXPECT_EQ(base[2 * kLen - 1], 2 * kLen - 1 + 10.0);
		ASSERT_EQ(rma_win_free(&win), RMA_SUCCESS);
		ASSERT_EQ(rma_finalize(), RMA_SUCCESS);
	}));
}

INSTANTIATE_TEST_SUITE_P(AllPathsAndProgress, AccumulateRequestTest,
			 ::testing::Combine(::testing::Values(AccPath::Auto, AccPath::Origin, AccPath::Ring),
					    ::testing::Values(Progress::None, Progress::Thread)),
			 knobName);

/* ------------------------------------------------------------------------ */
/* Info keys                                                                */
/* ------------------------------------------------------------------------ */

std::string infoValue(rma_win win, const char *key)
{
	rma_info used;
	EXPECT_EQ(rma_win_get_info(win, &used), RMA_SUCCESS);
	char value[RMA_MAX_INFO_VAL + 1];
	int flag = 0;
	EXPECT_EQ(rma_info_get(used, key, RMA_MAX_INFO_VAL, value, &flag), RMA_SUCCESS);
	rma_info_free(&used);
	EXPECT_EQ(flag, 1) << key << " is not reported";
	return flag ? std::string(value) : std::string("<unset>");
}

TEST(AccumulateInfoTest, GetInfoReportsTheAccumulateKeysAsSet)
{
	EXPECT_RANKS_PASS(runRanks(2, [](int) {
		ASSERT_EQ(rma_init(nullptr, nullptr), RMA_SUCCESS);
		rma_comm_set_errhandler(RMA_COMM_WORLD, RMA_ERRORS_RETURN);
		const int rank = worldRank(), peer = 1 - rank;
		void *base;
		rma_win win;

		/* Defaults. */
		ASSERT_EQ(rma_win_allocate(64, 8, RMA_INFO_NULL, RMA_COMM_WORLD, &base, &win), RMA_SUCCESS);
		EXPECT_EQ(infoValue(win, "accumulate_ordering"), "rar,raw,war,waw");
		EXPECT_EQ(infoValue(win, "accumulate_ops"), "same_op_no_op");
		EXPECT_EQ(infoValue(win, "mpi_accumulate_granularity"), "0");
		ASSERT_EQ(rma_win_free(&win), RMA_SUCCESS);

		struct Set {
			const char *ordering, *ops, *granularity;
		};
		for (Set s : { Set{ "none", "same_op", "64" }, Set{ "rar,waw", "same_op_no_op", "8" },
			       Set{ "raw", "same_op", "4096" } }) {
			SCOPED_TRACE(std::string(s.ordering) + " / " + s.ops + " / " + s.granularity);
			rma_info info;
			rma_info_create(&info);
			rma_info_set(info, "accumulate_ordering", s.ordering);
			rma_info_set(info, "accumulate_ops", s.ops);
			rma_info_set(info, "mpi_accumulate_granularity", s.granularity);
			int64_t *mine;
			ASSERT_EQ(rma_win_allocate(64, 8, info, RMA_COMM_WORLD, &mine, &win), RMA_SUCCESS);
			rma_info_free(&info);
			rma_win_set_errhandler(win, RMA_ERRORS_RETURN);
			EXPECT_EQ(infoValue(win, "accumulate_ordering"), s.ordering);
			EXPECT_EQ(infoValue(win, "accumulate_ops"), s.ops);
			EXPECT_EQ(infoValue(win, "mpi_accumulate_granularity"), s.granularity);
			/* The window still accumulates correctly with one op (same_op allows that). */
			ASSERT_EQ(rma_win_lock_all(0, win), RMA_SUCCESS);
			const int64_t two = 2;
			int64_t old = -1;
			std::vector<int64_t> ones(8, 1);
			ASSERT_EQ(rma_accumulate(ones.data(), 8, RMA_INT64_T, peer, 0, 8, RMA_INT64_T, RMA_SUM, win),
				  RMA_SUCCESS);
			ASSERT_EQ(rma_win_flush(peer, win), RMA_SUCCESS);
			ASSERT_EQ(rma_fetch_and_op(&two, &old, RMA_INT64_T, peer, 3, RMA_SUM, win), RMA_SUCCESS);
			ASSERT_EQ(rma_win_unlock_all(win), RMA_SUCCESS);
			EXPECT_EQ(old, 1);
			rma_barrier(RMA_COMM_WORLD);
			rma_win_sync(win);
			for (int k = 0; k < 8; ++k) {
				EXPECT_EQ(mine[k], k == 3 ? 3 : 1) << "element " << k;
			}
			ASSERT_EQ(rma_win_free(&win), RMA_SUCCESS);
		}

		/* Values the keys do not take. */
		for (auto [key, value] : { std::pair{ "accumulate_ops", "bogus" },
					   std::pair{ "mpi_accumulate_granularity", "-1" },
					   std::pair{ "mpi_accumulate_granularity", "lots" },
					   std::pair{ "accumulate_ordering", "raw,none" } }) {
			rma_info info;
			rma_info_create(&info);
			rma_info_set(info, key, value);
			win = RMA_WIN_NULL;
			int rc = rma_win_allocate(64, 8, info, RMA_COMM_WORLD, &base, &win);
			rma_info_free(&info);
			EXPECT_EQ(errorClassOf(rc), RMA_ERR_INFO_VALUE) << key << "=" << value << ": " << errorText(rc);
			if (rc == RMA_SUCCESS)
				rma_win_free(&win);
		}
		ASSERT_EQ(rma_finalize(), RMA_SUCCESS);
	}));
}

/* ------------------------------------------------------------------------ */
/* Compare and swap on every type it takes                                  */
/* ------------------------------------------------------------------------ */

class CompareAndSwapTest : public ::testing::TestWithParam<AccPath>
{
};

/* Swaps when the target equals the compare value, not otherwise; the old value comes back either way. */
TEST_P(CompareAndSwapTest, SwapsOnlyOnEqualOnEveryIntegerLogicalAndByteType)
{
	AccKnobs knobs(GetParam());
	EXPECT_RANKS_PASS(runRanks(2, [](int) {
		ASSERT_EQ(rma_init(nullptr, nullptr), RMA_SUCCESS);
		const int rank = worldRank(), peer = 1 - rank;
		struct CasType {
			rma_datatype type;
			size_t size;
			const char *name;
		};
		const CasType types[] = {
			{ RMA_SIGNED_CHAR, 1, "SIGNED_CHAR" },   { RMA_UNSIGNED_CHAR, 1, "UNSIGNED_CHAR" },
			{ RMA_SHORT, sizeof(short), "SHORT" },   { RMA_UNSIGNED_SHORT, sizeof(short), "UNSIGNED_SHORT" },
			{ RMA_INT, sizeof(int), "INT" },         { RMA_UNSIGNED, sizeof(int), "UNSIGNED" },
			{ RMA_LONG, sizeof(long), "LONG" },      { RMA_UNSIGNED_LONG, sizeof(long), "UNSIGNED_LONG" },
			{ RMA_LONG_LONG, 8, "LONG_LONG" },       { RMA_UNSIGNED_LONG_LONG, 8, "UNSIGNED_LONG_LONG" },
			{ RMA_INT8_T, 1, "INT8_T" },             { RMA_INT16_T, 2, "INT16_T" },
			{ RMA_INT32_T, 4, "INT32_T" },           { RMA_INT64_T, 8, "INT64_T" },
			{ RMA_UINT8_T, 1, "UINT8_T" },           { RMA_UINT16_T, 2, "UINT16_T" },
			{ RMA_UINT32_T, 4, "UINT32_T" },         { RMA_UINT64_T, 8, "UINT64_T" },
			{ RMA_AINT, sizeof(rma_aint), "AINT" },  { RMA_OFFSET, 8, "OFFSET" },
			{ RMA_COUNT, 8, "COUNT" },               { RMA_C_BOOL, sizeof(bool), "C_BOOL" },
			{ RMA_BYTE, 1, "BYTE" },
		};
		constexpr int kSlot = 16, kTypes = sizeof(types) / sizeof(types[0]);
		unsigned char *base;
		rma_win win;
		ASSERT_EQ(rma_win_allocate(kTypes * kSlot, 1, RMA_INFO_NULL, RMA_COMM_WORLD, &base, &win), RMA_SUCCESS);
		rma_win_set_errhandler(win, RMA_ERRORS_RETURN);
		/* Per type: A at the target, swapped for B; the second CAS (compare A again) must not swap C in. */
		auto value = [](const CasType &t, int which, unsigned char *out) {
			if (t.type == RMA_C_BOOL) {
				bool b = which == 1;
				std::memcpy(out, &b, sizeof(b));
				return;
			}
			const uint64_t v[] = { 0x8182838485868788ull, 0x1112131415161718ull, 0x2122232425262728ull };
			std::memcpy(out, &v[which], t.size); /* little-endian: the low bytes */
		};
		std::memset(base, 0, kTypes * kSlot);
		for (int i = 0; i < kTypes; ++i)
			value(types[i], 0, base + i * kSlot);
		rma_barrier(RMA_COMM_WORLD);
		ASSERT_EQ(rma_win_lock_all(0, win), RMA_SUCCESS);
		for (int i = 0; i < kTypes; ++i) {
			SCOPED_TRACE(types[i].name);
			unsigned char a[8] = {}, b[8] = {}, c[8] = {}, r1[8] = {}, r2[8] = {};
			value(types[i], 0, a);
			value(types[i], 1, b);
			value(types[i], 2, c);
			if (types[i].type == RMA_C_BOOL)
				std::memcpy(c, b, sizeof(bool)); /* two values only: a no-swap CAS that writes b again */
			ASSERT_EQ(rma_compare_and_swap(b, a, r1, types[i].type, peer, i * kSlot, win), RMA_SUCCESS);
			ASSERT_EQ(rma_compare_and_swap(c, a, r2, types[i].type, peer, i * kSlot, win), RMA_SUCCESS);
			ASSERT_EQ(rma_win_flush(peer, win), RMA_SUCCESS);
			EXPECT_EQ(std::memcmp(r1, a, types[i].size), 0) << "first CAS fetched the wrong old value";
			EXPECT_EQ(std::memcmp(r2, b, types[i].size), 0) << "second CAS fetched the wrong old value";
		}
		ASSERT_EQ(rma_win_unlock_all(win), RMA_SUCCESS);
		rma_barrier(RMA_COMM_WORLD);
		rma_win_sync(win);
		for (int i = 0; i < kTypes; ++i) {
			unsigned char want[8] = {};
			value(types[i], 1, want);
			EXPECT_EQ(std::memcmp(base + i * kSlot, want, types[i].size), 0)
				<< types[i].name << ": the target is not the swapped-in value";
			for (int k = types[i].size; k < kSlot; ++k) {
				EXPECT_EQ(base[i * kSlot + k], 0) << types[i].name << ": CAS wrote past its element";
			}
		}
		ASSERT_EQ(rma_win_free(&win), RMA_SUCCESS);
		ASSERT_EQ(rma_finalize(), RMA_SUCCESS);
	}));
}

INSTANTIATE_TEST_SUITE_P(AllPaths, CompareAndSwapTest,
			 ::testing::Values(AccPath::Auto, AccPath::Origin, AccPath::Ring),
			 [](const ::testing::TestParamInfo<AccPath> &info) { return std::string(accPathName(info.param)); });

/* ------------------------------------------------------------------------ */
/* Window flavors                                                           */
/* ------------------------------------------------------------------------ */

/* Layout of every rank's window, in 8-byte units. */
constexpr int kFlCounter = 0, kFlCas = 1, kFlArray = 8, kFlArrayLen = 16, kFlPair = 24, kFlFetch = 32;
constexpr int kFlUnits = 64, kFlIters = 20, kFlCasIters = 5;

class FlavorTest : public ::testing::TestWithParam<std::tuple<Kind, AccPath, int>>
{
};

/*
 * Every rank accumulates into every rank (itself included) at once:
 * fetch_and_op counters, CAS increments, array SUMs, MAXLOC, and a
 * get_accumulate on a region of its own; the same totals in every flavor.
 */
TEST_P(FlavorTest, SameResultsInEveryFlavor)
{
	auto [kind, path, ranks] = GetParam();
	AccKnobs knobs(path);
	EXPECT_RANKS_PASS(runRanks(ranks, [kind = kind](int) {
		ASSERT_EQ(rma_init(nullptr, nullptr), RMA_SUCCESS);
		const int rank = worldRank(), size = worldSize();
		TestWindow w;
		ASSERT_TRUE(makeWindow(kind, kFlUnits * 8, 8, w));
		auto *mine = reinterpret_cast<int64_t *>(w.local);
		std::fill(mine, mine + kFlUnits, 0);
		auto *pair = reinterpret_cast<DoubleInt *>(mine + kFlPair);
		*pair = { -1.0, -1 };
		rma_barrier(RMA_COMM_WORLD);

		ASSERT_EQ(rma_win_lock_all(0, w.win), RMA_SUCCESS);
		const int64_t one = 1;
		std::vector<int64_t> adds(kFlArrayLen, rank + 1);
		for (int t = 0; t < size; ++t) {
			const int target = (rank + t) % size;
			int64_t prev = -1;
			for (int i = 0; i < kFlIters; ++i) {
				int64_t got = -1;
				ASSERT_EQ(rma_fetch_and_op(&one, &got, RMA_INT64_T, target, w.disp(target, kFlCounter), RMA_SUM,
							   w.win),
					  RMA_SUCCESS);
				ASSERT_EQ(rma_accumulate(adds.data(), kFlArrayLen, RMA_INT64_T, target,
							 w.disp(target, kFlArray), kFlArrayLen, RMA_INT64_T, RMA_SUM, w.win),
					  RMA_SUCCESS);
				ASSERT_EQ(rma_win_flush(target, w.win), RMA_SUCCESS);
				ASSERT_GT(got, prev);
				prev = got;
			}
			int64_t cmp = 0;
			for (int i = 0; i < kFlCasIters;) {
				int64_t want = cmp + 1, got = -1;
				ASSERT_EQ(rma_compare_and_swap(&want, &cmp, &got, RMA_INT64_T, target, w.disp(target, kFlCas),
							       w.win),
					  RMA_SUCCESS);
				ASSERT_EQ(rma_win_flush(target, w.win), RMA_SUCCESS);
				if (got == cmp) {
					cmp = want;
					++i;
				} else {
					cmp = got;
				}
			}
			DoubleInt p{ static_cast<double>(rank % 2), rank };
			ASSERT_EQ(rma_accumulate(&p, 1, RMA_DOUBLE_INT, target, w.disp(target, kFlPair), 1, RMA_DOUBLE_INT,
						 RMA_MAXLOC, w.win),
				  RMA_SUCCESS);
			/* My own region at the target: fetch and add, twice. */
			int64_t before[4] = { -1, -1, -1, -1 }, again[4] = { -1, -1, -1, -1 };
			std::vector<int64_t> incs = { 1, 2, 3, 4 };
			const rma_aint region = w.disp(target, kFlFetch + rank * 4);
			ASSERT_EQ(rma_get_accumulate(incs.data(), 4, RMA_INT64_T, before, 4, RMA_INT64_T, target, region, 4,
						     RMA_INT64_T, RMA_SUM, w.win),
				  RMA_SUCCESS);
			ASSERT_EQ(rma_get_accumulate(incs.data(), 4, RMA_INT64_T, again, 4, RMA_INT64_T, target, region, 4,
						     RMA_INT64_T, RMA_SUM, w.win),
				  RMA_SUCCESS);
			ASSERT_EQ(rma_win_flush(target, w.win), RMA_SUCCESS);
			for (int k = 0; k < 4; ++k) {
				EXPECT_EQ(before[k], 0) << "target " << target << " element " << k;
				EXPECT_EQ(again[k], incs[k]) << "target " << target << " element " << k;
			}
		}
		ASSERT_EQ(rma_win_unlock_all(w.win), RMA_SUCCESS);
		rma_barrier(RMA_COMM_WORLD);
		rma_win_sync(w.win);

		EXPECT_EQ(mine[kFlCounter], int64_t(size) * kFlIters);
		EXPECT_EQ(mine[kFlCas], int64_t(size) * kFlCasIters);
		int64_t perIter = 0;
		for (int r = 0; r < size; ++r)
			perIter += r + 1;
		for (int k = 0; k < kFlArrayLen; ++k) {
			EXPECT_EQ(mine[kFlArray + k], perIter * kFlIters) << "array element " << k;
		}
		/* Odd ranks bring value 1; the smallest odd rank is 1. */
		EXPECT_EQ(pair->v, 1.0);
		EXPECT_EQ(pair->i, 1);
		for (int r = 0; r < size; ++r) {
			for (int k = 0; k < 4; ++k) {
				EXPECT_EQ(mine[kFlFetch + r * 4 + k], 2 * (k + 1)) << "region of " << r << " element " << k;
			}
		}
		rma_barrier(RMA_COMM_WORLD);
		freeWindow(w);
		ASSERT_EQ(rma_finalize(), RMA_SUCCESS);
	}));
}

std::string flavorName(const ::testing::TestParamInfo<std::tuple<Kind, AccPath, int>> &info)
{
	return std::string(kindName(std::get<0>(info.param))) + "_" + accPathName(std::get<1>(info.param)) + "_" +
	       std::to_string(std::get<2>(info.param)) + "ranks";
}

INSTANTIATE_TEST_SUITE_P(AllFlavors, FlavorTest,
			 ::testing::Combine(::testing::Values(Kind::Allocate, Kind::Shared, Kind::SharedNoncontig,
							      Kind::CreatePlain, Kind::CreateAllocMem, Kind::Dynamic,
							      Kind::DynamicAllocMem),
					    ::testing::Values(AccPath::Auto, AccPath::Ring), ::testing::Values(2, 4)),
			 flavorName);

} /* namespace */
