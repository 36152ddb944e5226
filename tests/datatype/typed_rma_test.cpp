/* SPDX-License-Identifier: MIT */
/*
 * put and get with derived datatypes on both sides, over 1 to 4 real
 * processes and windows reached directly and through cross-memory attach:
 * every origin type against every target type (contiguous, vector,
 * negative stride, indexed, struct with gaps, subarrays in both orders,
 * nested, interleaved resized), each result checked element by element
 * against the reference built from the type map, including that no byte
 * outside the target entries changed. Then the checks that must fail with
 * nothing written.
 */
#include <gtest/gtest.h>

#include <algorithm>
#include <cstddef>
#include <cstring>
#include <functional>
#include <string>
#include <tuple>
#include <vector>

#include <rma/rma.h>

#include "datatype/datatype.h"

#include "datatype/type_test_util.h"
#include "support/multiproc.h"
#include "win/window_test_util.h"

using namespace rmatest;

namespace {

constexpr double kUntouched = -1.0;
constexpr int kWindowDoubles = 1024;
constexpr int kTargetDisp = 256; /* in doubles: leaves room for negative lower bounds */
constexpr int kCount = 2;        /* of each type, on both sides */

/* Every type is 12 doubles, so any two match at count kCount. */
struct NamedType {
	const char *name;
	rma_datatype type;
};

std::vector<NamedType> makeTypes()
{
	std::vector<NamedType> out;
	rma_datatype t;
	auto commit = [&](const char *name) {
		EXPECT_EQ(rma_type_commit(&t), RMA_SUCCESS);
		out.push_back({ name, t });
	};
	EXPECT_EQ(rma_type_contiguous(12, RMA_DOUBLE, &t), RMA_SUCCESS);
	commit("contiguous");
	EXPECT_EQ(rma_type_vector(4, 3, 5, RMA_DOUBLE, &t), RMA_SUCCESS);
	commit("vector");
	EXPECT_EQ(rma_type_vector(6, 2, -3, RMA_DOUBLE, &t), RMA_SUCCESS);
	commit("negative_vector");
	int lengths[] = { 3, 1, 5, 3 };
	int disps[] = { 10, 0, 2, 20 };
	EXPECT_EQ(rma_type_indexed(4, lengths, disps, RMA_DOUBLE, &t), RMA_SUCCESS);
	commit("indexed");
	int slen[] = { 1, 3, 8 };
	rma_aint sdisp[] = { 0, 16, 56 };
	rma_datatype stypes[] = { RMA_DOUBLE, RMA_DOUBLE, RMA_DOUBLE };
	EXPECT_EQ(rma_type_create_struct(3, slen, sdisp, stypes, &t), RMA_SUCCESS);
	commit("struct");
	int sizes[] = { 5, 6 }, sub[] = { 3, 4 }, starts[] = { 1, 2 };
	EXPECT_EQ(rma_type_create_subarray(2, sizes, sub, starts, RMA_ORDER_C, RMA_DOUBLE, &t), RMA_SUCCESS);
	commit("subarray_c");
	EXPECT_EQ(rma_type_create_subarray(2, sizes, sub, starts, RMA_ORDER_FORTRAN, RMA_DOUBLE, &t), RMA_SUCCESS);
	commit("subarray_fortran");
	rma_datatype inner;
	int bdisps[] = { 0, 3, 7 };
	EXPECT_EQ(rma_type_create_indexed_block(3, 2, bdisps, RMA_DOUBLE, &inner), RMA_SUCCESS);
	EXPECT_EQ(rma_type_create_hvector(2, 1, 200, inner, &t), RMA_SUCCESS);
	EXPECT_EQ(rma_type_free(&inner), RMA_SUCCESS);
	commit("nested");
	/* 12 doubles every other slot, resized so the next copy fills the gaps. */
	rma_datatype every2;
	EXPECT_EQ(rma_type_vector(12, 1, 2, RMA_DOUBLE, &every2), RMA_SUCCESS);
	EXPECT_EQ(rma_type_create_resized(every2, 0, 8, &t), RMA_SUCCESS);
	EXPECT_EQ(rma_type_free(&every2), RMA_SUCCESS);
	commit("interleaved");
	return out;
}

void freeTypes(std::vector<NamedType> &types)
{
	for (NamedType &t : types)
		EXPECT_EQ(rma_type_free(&t.type), RMA_SUCCESS);
}

/* An origin buffer covering the footprint of kCount x @r, and where its byte 0 of the type is. */
struct Buffer {
	std::vector<double> data;
	int64_t low = 0; /* footprint low, in bytes */

	std::byte *base() { return reinterpret_cast<std::byte *>(data.data()) - low; }
	double at(int64_t byteOffset) const
	{
		double v;
		std::memcpy(&v, reinterpret_cast<const std::byte *>(data.data()) + byteOffset - low, sizeof(v));
		return v;
	}
};

Buffer bufferFor(const RefType &r, double fill)
{
	auto [lo, hi] = refFootprint(r, kCount);
	Buffer b;
	b.low = lo;
	b.data.assign(static_cast<size_t>(hi - lo + 7) / 8, fill);
	return b;
}

/* The value rank @rank puts from its origin byte offset @off in round @round. */
double stamp(int rank, int round, int64_t off)
{
	return rank * 1e7 + round * 1e4 + static_cast<double>(off);
}

/*
 * Run @body(window, rank, size) in each of @ranks ranks, around a window of
 * @kind of kWindowDoubles doubles (disp_unit 8), set to kUntouched.
 */
void withWindow(Kind kind, int ranks, const std::function<void(TestWindow &, int, int)> &body)
{
	int status = runRanks(ranks, [&](int) {
		ASSERT_EQ(rma_init(nullptr, nullptr), RMA_SUCCESS);
		int rank, size;
		rma_comm_rank(RMA_COMM_WORLD, &rank);
		rma_comm_size(RMA_COMM_WORLD, &size);
		TestWindow w;
		ASSERT_TRUE(makeWindow(kind, kWindowDoubles * sizeof(double), sizeof(double), w));
		auto *local = reinterpret_cast<double *>(w.local);
		std::fill(local, local + kWindowDoubles, kUntouched);
		body(w, rank, size);
		freeWindow(w);
		ASSERT_EQ(rma_finalize(), RMA_SUCCESS);
	});
	EXPECT_EQ(status, 0);
}

class TypedRmaTest : public ::testing::TestWithParam<std::tuple<Kind, int>>
{
};

TEST_P(TypedRmaTest, EveryOriginTypeIntoEveryTargetTypeRoundTrips)
{
	auto [kind, ranks] = GetParam();
	withWindow(kind, ranks, [](TestWindow &w, int rank, int size) {
		const int right = (rank + 1) % size;
		const int left = (rank + size - 1) % size;
		std::vector<NamedType> types = makeTypes();
		auto *local = reinterpret_cast<double *>(w.local);
		int round = 0;
		for (const NamedType &o : types) {
			for (const NamedType &t : types) {
				SCOPED_TRACE(std::string(o.name) + " -> " + t.name);
				RefType ro = refOf(o.type), rt = refOf(t.type);
				std::vector<RefEntry> oe = refElements(ro, kCount), te = refElements(rt, kCount);
				ASSERT_EQ(oe.size(), te.size());
				Buffer origin = bufferFor(ro, 0);
				for (size_t i = 0; i < origin.data.size(); ++i) {
					int64_t off = origin.low + static_cast<int64_t>(i) * 8;
					origin.data[i] = stamp(rank, round, off);
				}
				std::fill(local, local + kWindowDoubles, kUntouched);
				ASSERT_EQ(rma_win_fence(0, w.win), RMA_SUCCESS);
				ASSERT_EQ(rma_put(origin.base(), kCount, o.type, right, w.disp(right, kTargetDisp), kCount,
						  t.type, w.win),
					  RMA_SUCCESS);
				ASSERT_EQ(rma_win_fence(0, w.win), RMA_SUCCESS);

				/* My window holds my left neighbour's origin data at the target entries, nothing else. */
				std::vector<double> want(kWindowDoubles, kUntouched);
				for (size_t k = 0; k < te.size(); ++k)
					want[kTargetDisp + te[k].disp / 8] = stamp(left, round, oe[k].disp);
				for (int i = 0; i < kWindowDoubles; ++i)
					ASSERT_EQ(local[i], want[i]) << "window double " << i - kTargetDisp;

				/* Read back what I put at my right neighbour into a fresh origin buffer. */
				Buffer back = bufferFor(ro, kUntouched);
				ASSERT_EQ(rma_get(back.base(), kCount, o.type, right, w.disp(right, kTargetDisp), kCount,
						  t.type, w.win),
					  RMA_SUCCESS);
				ASSERT_EQ(rma_win_fence(0, w.win), RMA_SUCCESS);
				std::vector<double> wantBack(back.data.size(), kUntouched);
				for (size_t k = 0; k < oe.size(); ++k)
					wantBack[(oe[k].disp - back.low) / 8] = stamp(rank, round, oe[k].disp);
				ASSERT_EQ(back.data, wantBack);
				++round;
			}
		}
		ASSERT_EQ(rma_win_fence(RMA_MODE_NOSUCCEED, w.win), RMA_SUCCESS);
		freeTypes(types);
	});
}

INSTANTIATE_TEST_SUITE_P(Windows, TypedRmaTest,
			 ::testing::Combine(::testing::Values(Kind::Allocate, Kind::CreatePlain, Kind::DynamicAllocMem),
					    ::testing::Values(1, 2, 4)),
			 [](const ::testing::TestParamInfo<std::tuple<Kind, int>> &info) {
				 return std::string(kindName(std::get<0>(info.param))) + "_" +
					std::to_string(std::get<1>(info.param)) + "ranks";
			 });

TEST(TypedRmaPairs, PairTypesMoveWithoutTheirPadding)
{
	struct SI {
		short v;
		int i;
	};
	struct DI {
		double v;
		int i;
	};
	withWindow(Kind::CreateAllocMem, 2, [](TestWindow &w, int rank, int) {
		const int peer = 1 - rank;
		SI si[3];
		DI di[2];
		std::memset(si, 0x11, sizeof(si));
		std::memset(di, 0x22, sizeof(di));
		for (int k = 0; k < 3; ++k)
			si[k] = { static_cast<short>(100 * rank + k), 1000 * rank + k };
		for (int k = 0; k < 2; ++k)
			di[k] = { 0.5 + rank + k, -k };
		/* A struct of the same signature as RMA_SHORT_INT, written by hand. */
		int lengths[] = { 1, 1 };
		rma_aint disps[] = { offsetof(SI, v), offsetof(SI, i) };
		rma_datatype types[] = { RMA_SHORT, RMA_INT };
		rma_datatype mine;
		ASSERT_EQ(rma_type_create_struct(2, lengths, disps, types, &mine), RMA_SUCCESS);
		ASSERT_EQ(rma_type_commit(&mine), RMA_SUCCESS);
		ASSERT_EQ(rma_win_fence(0, w.win), RMA_SUCCESS);
		ASSERT_EQ(rma_put(si, 3, mine, peer, 0, 3, RMA_SHORT_INT, w.win), RMA_SUCCESS);
		ASSERT_EQ(rma_put(di, 2, RMA_DOUBLE_INT, peer, 64, 2, RMA_DOUBLE_INT, w.win), RMA_SUCCESS);
		ASSERT_EQ(errorClassOf(rma_put(di, 2, RMA_DOUBLE_INT, peer, 64, 2, RMA_SHORT_INT, w.win)), RMA_ERR_TYPE);
		ASSERT_EQ(rma_win_fence(0, w.win), RMA_SUCCESS);
		const std::byte *local = w.local;
		for (int k = 0; k < 3; ++k) {
			SI got;
			std::memcpy(&got, local + k * sizeof(SI), sizeof(SI));
			EXPECT_EQ(got.v, 100 * peer + k);
			EXPECT_EQ(got.i, 1000 * peer + k);
			/* The padding between v and i kept the window's fill. */
			double fill = kUntouched;
			for (size_t b = sizeof(short); b < offsetof(SI, i); ++b)
				EXPECT_EQ(local[k * sizeof(SI) + b], reinterpret_cast<const std::byte *>(&fill)[b % 8]);
		}
		for (int k = 0; k < 2; ++k) {
			DI got;
			std::memcpy(&got, local + 64 * 8 + k * sizeof(DI), sizeof(DI));
			EXPECT_EQ(got.v, 0.5 + peer + k);
			EXPECT_EQ(got.i, -k);
		}
		ASSERT_EQ(rma_win_fence(RMA_MODE_NOSUCCEED, w.win), RMA_SUCCESS);
		EXPECT_EQ(rma_type_free(&mine), RMA_SUCCESS);
	});
}

TEST(TypedRmaErrors, FailuresAreReportedAtTheOriginAndWriteNothing)
{
	withWindow(Kind::Allocate, 2, [](TestWindow &w, int rank, int) {
		auto *local = reinterpret_cast<double *>(w.local);
		const int peer = 1 - rank;
		std::vector<double> data(4 * kWindowDoubles, 5.0);
		double *origin = data.data() + 2 * kWindowDoubles;

		rma_datatype vec, overlapping, negative, uncommitted, ints;
		ASSERT_EQ(rma_type_vector(4, 1, 2, RMA_DOUBLE, &vec), RMA_SUCCESS);
		ASSERT_EQ(rma_type_vector(2, 2, 1, RMA_DOUBLE, &overlapping), RMA_SUCCESS);
		ASSERT_EQ(rma_type_vector(3, 1, -4, RMA_DOUBLE, &negative), RMA_SUCCESS);
		ASSERT_EQ(rma_type_contiguous(4, RMA_DOUBLE, &uncommitted), RMA_SUCCESS);
		ASSERT_EQ(rma_type_contiguous(8, RMA_INT, &ints), RMA_SUCCESS);
		for (rma_datatype *t : { &vec, &overlapping, &negative, &ints })
			ASSERT_EQ(rma_type_commit(t), RMA_SUCCESS);

		ASSERT_EQ(rma_win_fence(0, w.win), RMA_SUCCESS);
		/* Signatures: 4 doubles into 8 ints. */
		EXPECT_EQ(errorClassOf(rma_put(origin, 1, vec, peer, 0, 1, ints, w.win)), RMA_ERR_TYPE);
		/* Truncation: 8 doubles into one vector of 4. */
		EXPECT_EQ(errorClassOf(rma_put(origin, 8, RMA_DOUBLE, peer, 0, 1, vec, w.win)), RMA_ERR_TRUNCATE);
		/* A target with overlapping entries. */
		EXPECT_EQ(errorClassOf(rma_put(origin, 4, RMA_DOUBLE, peer, 0, 1, overlapping, w.win)), RMA_ERR_TYPE);
		/* A get into an overlapping origin. */
		EXPECT_EQ(errorClassOf(rma_get(origin, 1, overlapping, peer, 0, 4, RMA_DOUBLE, w.win)), RMA_ERR_TYPE);
		/* Uncommitted types on either side. */
		EXPECT_EQ(errorClassOf(rma_put(origin, 1, uncommitted, peer, 0, 4, RMA_DOUBLE, w.win)), RMA_ERR_TYPE);
		EXPECT_EQ(errorClassOf(rma_put(origin, 4, RMA_DOUBLE, peer, 0, 1, uncommitted, w.win)), RMA_ERR_TYPE);
		/* Footprint past the end: the vector spans 7 doubles. */
		EXPECT_EQ(errorClassOf(rma_put(origin, 4, RMA_DOUBLE, peer, kWindowDoubles - 6, 1, vec, w.win)),
			  RMA_ERR_RMA_RANGE);
		EXPECT_EQ(rma_put(origin, 4, RMA_DOUBLE, peer, kWindowDoubles - 7, 1, vec, w.win), RMA_SUCCESS);
		/* Footprint before the start: the negative vector reaches 8 doubles below its origin. */
		EXPECT_EQ(errorClassOf(rma_put(origin, 3, RMA_DOUBLE, peer, 7, 1, negative, w.win)),
			  RMA_ERR_RMA_RANGE);
		EXPECT_EQ(rma_put(origin, 3, RMA_DOUBLE, peer, 8, 1, negative, w.win), RMA_SUCCESS);
		ASSERT_EQ(rma_win_fence(0, w.win), RMA_SUCCESS);

		/* Only the two good puts landed. */
		std::vector<double> want(kWindowDoubles, kUntouched);
		for (int k = 0; k < 4; ++k)
			want[kWindowDoubles - 7 + 2 * k] = 5.0;
		for (int k = 0; k < 3; ++k)
			want[8 - 4 * k] = 5.0;
		for (int i = 0; i < kWindowDoubles; ++i)
			ASSERT_EQ(local[i], want[i]) << "window double " << i;

		ASSERT_EQ(rma_win_fence(RMA_MODE_NOSUCCEED, w.win), RMA_SUCCESS);
		for (rma_datatype *t : { &vec, &overlapping, &negative, &uncommitted, &ints })
			EXPECT_EQ(rma_type_free(t), RMA_SUCCESS);
	});
}

/*
 * Issue 11 §1: a 4-D subarray of single ints on two nested strides, the
 * issue's shape with a smaller first dimension (sizes kRows+1 x 3 x 2 x 2,
 * subsizes kRows x 2 x 1 x 1): put, get and accumulate with it as the target
 * type move exactly its elements. Flattened (two nodes) and, with the
 * flattening limit at 0, lazy (walked from its recipe): then put, get and
 * accumulate still work (an accumulate record cannot carry a lazy type: the
 * origin applies it, see LazyTargetAccumulate below).
 */
class NestedStrideRma : public ::testing::TestWithParam<std::tuple<Kind, bool>>
{
};

TEST_P(NestedStrideRma, SubarrayOfSingleIntsMovesExactlyItsElements)
{
	auto [kind, lazy] = GetParam();
	constexpr int kRows = 100000;
	constexpr int kElements = 2 * kRows;
	constexpr size_t kInts = size_t(kRows + 1) * 3 * 2 * 2;
	int status = runRanks(2, [&, kind = kind, lazy = lazy](int) {
		ASSERT_EQ(rma_init(nullptr, nullptr), RMA_SUCCESS);
		int rank;
		rma_comm_rank(RMA_COMM_WORLD, &rank);
		const int peer = 1 - rank;
		TestWindow w;
		ASSERT_TRUE(makeWindow(kind, kInts * sizeof(int), sizeof(int), w));
		auto *local = reinterpret_cast<int *>(w.local);
		std::fill(local, local + kInts, -1);

		int sizes[] = { kRows + 1, 3, 2, 2 }, sub[] = { kRows, 2, 1, 1 }, starts[] = { 1, 1, 1, 1 };
		rma_datatype t;
		ASSERT_EQ(rma_type_create_subarray(4, sizes, sub, starts, RMA_ORDER_C, RMA_INT, &t), RMA_SUCCESS);
		size_t &limit = librma::flattenNodeLimit();
		const size_t saved = limit;
		if (lazy)
			limit = 0;
		ASSERT_EQ(rma_type_commit(&t), RMA_SUCCESS);
		limit = saved;
		const librma::Datatype &d = engine(t);
		ASSERT_EQ(d.detail->lazy, lazy);
		if (!lazy) {
			EXPECT_EQ(d.detail->nodes.size(), 2u);
		}

		/* Where element k of the type lies, in ints from the window start (C order, starts 1). */
		auto at = [](int k) { return ((size_t(1 + k / 2) * 3 + 1 + k % 2) * 2 + 1) * 2 + 1; };
		std::vector<int> origin(kElements);
		for (int k = 0; k < kElements; ++k)
			origin[k] = rank * 10000000 + k;
		ASSERT_EQ(rma_win_fence(0, w.win), RMA_SUCCESS);
		ASSERT_EQ(rma_put(origin.data(), kElements, RMA_INT, peer, 0, 1, t, w.win), RMA_SUCCESS);
		ASSERT_EQ(rma_win_fence(0, w.win), RMA_SUCCESS);
		std::vector<int> want(kInts, -1);
		for (int k = 0; k < kElements; ++k)
			want[at(k)] = peer * 10000000 + k;
		ASSERT_TRUE(std::equal(want.begin(), want.end(), local)) << "the put wrote other ints than its elements";

		std::vector<int> back(kElements, -1);
		ASSERT_EQ(rma_get(back.data(), kElements, RMA_INT, peer, 0, 1, t, w.win), RMA_SUCCESS);
		ASSERT_EQ(rma_win_fence(0, w.win), RMA_SUCCESS);
		ASSERT_EQ(back, origin);

		/* Lazy or not, directly reached or not: the accumulate lands on exactly its elements. */
		std::vector<int> ones(kElements, 1);
		ASSERT_EQ(rma_accumulate(ones.data(), kElements, RMA_INT, peer, 0, 1, t, RMA_SUM, w.win), RMA_SUCCESS);
		ASSERT_EQ(rma_win_fence(0, w.win), RMA_SUCCESS);
		for (int k = 0; k < kElements; ++k)
			++want[at(k)];
		ASSERT_TRUE(std::equal(want.begin(), want.end(), local)) << "the accumulate wrote other ints than its elements";
		ASSERT_EQ(rma_win_fence(RMA_MODE_NOSUCCEED, w.win), RMA_SUCCESS);
		EXPECT_EQ(rma_type_free(&t), RMA_SUCCESS);
		freeWindow(w);
		ASSERT_EQ(rma_finalize(), RMA_SUCCESS);
	});
	EXPECT_EQ(status, 0);
}

INSTANTIATE_TEST_SUITE_P(Windows, NestedStrideRma,
			 ::testing::Combine(::testing::Values(Kind::Allocate, Kind::CreatePlain), ::testing::Bool()),
			 [](const ::testing::TestParamInfo<std::tuple<Kind, bool>> &info) {
				 return std::string(kindName(std::get<0>(info.param))) +
					(std::get<1>(info.param) ? "_lazy" : "_flattened");
			 });

/*
 * Accumulates whose target type is lazy (no flattened form for a record to
 * carry), to directly mapped targets and through cross-memory attach, with
 * 3 ranks hitting the same elements at once: SUM through rma_accumulate,
 * and get_accumulate whose fetched values prove each element was updated
 * atomically (every rank's fetches of one element, together, are exactly
 * the values that element went through). Mixed in: contiguous accumulates
 * on the same ints, which take origin atomics (small) or plain mode
 * (large), so the origin's typed apply must compose with both.
 */
class LazyTargetAccumulate : public ::testing::TestWithParam<std::tuple<Kind, bool>>
{
};

TEST_P(LazyTargetAccumulate, SumsAndFetchesAreExactAndAtomic)
{
	auto [kind, ringHint] = GetParam();
	constexpr int kRanks = 3;
	constexpr int kBlocks = 300;
	constexpr int kRounds = 12;
	int status = runRanks(kRanks, [&, kind = kind, ringHint = ringHint](int) {
		ASSERT_EQ(rma_init(nullptr, nullptr), RMA_SUCCESS);
		int rank, size;
		rma_comm_rank(RMA_COMM_WORLD, &rank);
		rma_comm_size(RMA_COMM_WORLD, &size);
		/* Irregular blocks: block b of 1 + b % 3 ints, gaps of 1 + b % 2 ints. */
		std::vector<int> lengths(kBlocks), disps(kBlocks);
		std::vector<size_t> where; /* int index of element k of the type */
		int at = 0;
		for (int b = 0; b < kBlocks; ++b) {
			lengths[b] = 1 + b % 3;
			disps[b] = at;
			for (int j = 0; j < lengths[b]; ++j)
				where.push_back(static_cast<size_t>(at + j));
			at += lengths[b] + 1 + b % 2;
		}
		const int elements = static_cast<int>(where.size());
		const size_t dataInts = static_cast<size_t>(at);
		/* The window: the data, then where every rank's fetched values are gathered. */
		const size_t gatherInts = size_t(kRanks) * kRounds * elements;
		TestWindow w;
		rma_info info = RMA_INFO_NULL;
		if (ringHint) {
			rma_info_create(&info);
			rma_info_set(info, "rma_accumulate_path", "ring");
		}
		ASSERT_TRUE(makeWindow(kind, (dataInts + gatherInts) * sizeof(int), sizeof(int), w, info));
		if (info != RMA_INFO_NULL)
			rma_info_free(&info);
		auto *local = reinterpret_cast<int *>(w.local);
		for (size_t i = 0; i < dataInts; ++i)
			local[i] = static_cast<int>(i) * 1000;
		std::fill(local + dataInts, local + dataInts + gatherInts, -1);

		rma_datatype t;
		ASSERT_EQ(rma_type_indexed(kBlocks, lengths.data(), disps.data(), RMA_INT, &t), RMA_SUCCESS);
		size_t &limit = librma::flattenNodeLimit();
		const size_t saved = limit;
		limit = 0;
		ASSERT_EQ(rma_type_commit(&t), RMA_SUCCESS);
		limit = saved;
		ASSERT_TRUE(engine(t).detail->lazy);
		rma_datatype strided; /* a non-contiguous result type: every other int */
		ASSERT_EQ(rma_type_vector(elements, 1, 2, RMA_INT, &strided), RMA_SUCCESS);
		ASSERT_EQ(rma_type_commit(&strided), RMA_SUCCESS);
		const int target = 0;
		ASSERT_EQ(rma_win_fence(0, w.win), RMA_SUCCESS);

		/* 1. SUM from every rank at once, and contiguous accumulates of 1 to the same ints. */
		std::vector<int> add(elements);
		for (int k = 0; k < elements; ++k)
			add[k] = (rank + 1) * (k + 1);
		std::vector<int> ones(dataInts, 1);
		for (int r = 0; r < kRounds; ++r) {
			ASSERT_EQ(rma_accumulate(add.data(), elements, RMA_INT, target, w.disp(target, 0), 1, t, RMA_SUM,
						 w.win),
				  RMA_SUCCESS);
			int one = 1;
			size_t i = where[static_cast<size_t>(r * 37) % where.size()];
			ASSERT_EQ(rma_accumulate(&one, 1, RMA_INT, target, w.disp(target, static_cast<rma_aint>(i)), 1,
						 RMA_INT, RMA_SUM, w.win),
				  RMA_SUCCESS);
			ASSERT_EQ(rma_accumulate(ones.data(), static_cast<int>(dataInts), RMA_INT, target,
						 w.disp(target, 0), static_cast<int>(dataInts), RMA_INT, RMA_SUM, w.win),
				  RMA_SUCCESS);
		}
		ASSERT_EQ(rma_win_fence(0, w.win), RMA_SUCCESS);
		std::vector<int> want(dataInts);
		for (size_t i = 0; i < dataInts; ++i)
			want[i] = static_cast<int>(i) * 1000 + size * kRounds;
		const int perRound = size * (size + 1) / 2; /* sum of (rank + 1) */
		for (int k = 0; k < elements; ++k)
			want[where[k]] += kRounds * perRound * (k + 1);
		for (int r = 0; r < kRounds; ++r)
			want[where[static_cast<size_t>(r * 37) % where.size()]] += size;
		if (rank == target) {
			for (size_t i = 0; i < dataInts; ++i)
				ASSERT_EQ(local[i], want[i]) << "int " << i;
		}
		std::vector<int> before = want;
		ASSERT_EQ(rma_win_fence(0, w.win), RMA_SUCCESS);

		/* 2. One get_accumulate alone: the old values, into a strided result, and the new ones in place. */
		std::vector<int> result(size_t(2) * elements, -7), contiguous(elements, -7);
		if (rank == 1) {
			ASSERT_EQ(rma_get_accumulate(add.data(), elements, RMA_INT, result.data(), 1, strided, target,
						     w.disp(target, 0), 1, t, RMA_SUM, w.win),
				  RMA_SUCCESS);
			/* Ordered after the first (accumulate_ordering): it sees its sums. */
			ASSERT_EQ(rma_get_accumulate(nullptr, 0, RMA_INT, contiguous.data(), elements, RMA_INT, target,
						     w.disp(target, 0), 1, t, RMA_NO_OP, w.win),
				  RMA_SUCCESS);
		}
		ASSERT_EQ(rma_win_fence(0, w.win), RMA_SUCCESS);
		if (rank == 1) {
			for (int k = 0; k < elements; ++k) {
				ASSERT_EQ(result[2 * k], before[where[k]]) << "fetched element " << k;
				ASSERT_EQ(result[2 * k + 1], -7) << "the result's gap " << k << " was written";
				ASSERT_EQ(contiguous[k], result[2 * k] + add[k]) << "element " << k;
			}
		}
		std::vector<int> start(elements);
		if (rank == target) {
			for (int k = 0; k < elements; ++k)
				before[where[k]] += 2 * (k + 1);
			for (size_t i = 0; i < dataInts; ++i)
				ASSERT_EQ(local[i], before[i]) << "int " << i;
			for (int k = 0; k < elements; ++k)
				start[k] = local[where[k]];
		}
		ASSERT_EQ(rma_win_fence(0, w.win), RMA_SUCCESS);

		/* 3. Every rank fetches-and-adds 1 on every element, kRounds times, all at once. */
		std::vector<int> fetched(size_t(kRounds) * elements);
		std::vector<int> inc(elements, 1);
		for (int r = 0; r < kRounds; ++r) {
			ASSERT_EQ(rma_get_accumulate(inc.data(), elements, RMA_INT, fetched.data() + size_t(r) * elements,
						     elements, RMA_INT, target, w.disp(target, 0), 1, t, RMA_SUM, w.win),
				  RMA_SUCCESS);
			if (r % 4 == 0) {
				int one = 1;
				ASSERT_EQ(rma_accumulate(&one, 1, RMA_INT, target, w.disp(target, 0), 1, RMA_INT, RMA_SUM,
							 w.win),
					  RMA_SUCCESS);
			}
		}
		ASSERT_EQ(rma_win_fence(0, w.win), RMA_SUCCESS);
		ASSERT_EQ(rma_put(fetched.data(), static_cast<int>(fetched.size()), RMA_INT, target,
				  w.disp(target, static_cast<rma_aint>(dataInts + size_t(rank) * kRounds * elements)),
				  static_cast<int>(fetched.size()), RMA_INT, w.win),
			  RMA_SUCCESS);
		ASSERT_EQ(rma_win_fence(0, w.win), RMA_SUCCESS);
		if (rank == target) {
			const int *all = local + dataInts;
			const int extra = size * ((kRounds + 3) / 4); /* the single-int adds on int 0 */
			for (int k = 0; k < elements; ++k) {
				std::vector<int> seen;
				for (int r = 0; r < size; ++r)
					for (int x = 0; x < kRounds; ++x)
						seen.push_back(all[(size_t(r) * kRounds + x) * elements + k]);
				std::sort(seen.begin(), seen.end());
				/* Atomic fetch-and-adds of 1 see every value once (int 0 also gets single adds between). */
				ASSERT_EQ(std::adjacent_find(seen.begin(), seen.end()), seen.end())
					<< "element " << k << " was fetched twice at one value: not atomic";
				ASSERT_GE(seen.front(), start[k]) << "element " << k;
				if (where[k] != 0) {
					ASSERT_EQ(seen.front(), start[k]) << "element " << k;
					ASSERT_EQ(seen.back(), start[k] + size * kRounds - 1) << "element " << k;
				}
				const int adds = size * kRounds + (where[k] == 0 ? extra : 0);
				ASSERT_EQ(local[where[k]], start[k] + adds) << "element " << k;
			}
		}
		ASSERT_EQ(rma_win_fence(RMA_MODE_NOSUCCEED, w.win), RMA_SUCCESS);
		EXPECT_EQ(rma_type_free(&t), RMA_SUCCESS);
		EXPECT_EQ(rma_type_free(&strided), RMA_SUCCESS);
		freeWindow(w);
		ASSERT_EQ(rma_finalize(), RMA_SUCCESS);
	});
	EXPECT_EQ(status, 0);
}

INSTANTIATE_TEST_SUITE_P(Windows, LazyTargetAccumulate,
			 ::testing::Values(std::make_tuple(Kind::Allocate, false), std::make_tuple(Kind::Allocate, true),
					   std::make_tuple(Kind::Shared, false), std::make_tuple(Kind::CreatePlain, false)),
			 [](const ::testing::TestParamInfo<std::tuple<Kind, bool>> &info) {
				 return std::string(kindName(std::get<0>(info.param))) +
					(std::get<1>(info.param) ? "_ring" : "_auto");
			 });

} /* namespace */
