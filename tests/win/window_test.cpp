/* SPDX-License-Identifier: MIT */
/*
 * Windows of every flavor over 1, 2 and 4 real processes: put/get round
 * trips, ring exchange, self-targets, disp_units, zero-size windows.
 */
#include <gtest/gtest.h>

#include <cstring>
#include <unistd.h>
#include <tuple>

#include <rma/rma.h>

#include "support/multiproc.h"
#include "win/window_test_util.h"

using namespace rmatest;

namespace {

constexpr size_t kElems = 1024;

class FlavorTest : public ::testing::TestWithParam<std::tuple<Kind, int>>
{
};

TEST_P(FlavorTest, RingExchangeRoundTrips)
{
	auto [kind, ranks] = GetParam();
	int status = runRanks(ranks, [kind = kind](int) {
		ASSERT_EQ(rma_init(nullptr, nullptr), RMA_SUCCESS);
		int rank, size;
		rma_comm_rank(RMA_COMM_WORLD, &rank);
		rma_comm_size(RMA_COMM_WORLD, &size);
		TestWindow w;
		ASSERT_TRUE(makeWindow(kind, 2 * kElems * sizeof(double), sizeof(double), w));
		int right = (rank + 1) % size;
		int left = (rank + size - 1) % size;

		std::vector<double> mine(kElems), back(kElems, -1.0);
		for (size_t i = 0; i < kElems; ++i)
			mine[i] = rank * 1e6 + static_cast<double>(i);

		ASSERT_EQ(rma_win_fence(0, w.win), RMA_SUCCESS);
		/* First half: my data into my right neighbour. */
		ASSERT_EQ(rma_put(mine.data(), kElems, RMA_DOUBLE, right, w.disp(right, 0), kElems, RMA_DOUBLE,
				  w.win),
			  RMA_SUCCESS);
		/* Second half: my data into myself. */
		ASSERT_EQ(rma_put(mine.data(), kElems, RMA_DOUBLE, rank, w.disp(rank, kElems), kElems, RMA_DOUBLE,
				  w.win),
			  RMA_SUCCESS);
		ASSERT_EQ(rma_win_fence(0, w.win), RMA_SUCCESS);

		/* The target sees the data in its own memory. */
		const double *local = reinterpret_cast<const double *>(w.local);
		for (size_t i = 0; i < kElems; ++i) {
			ASSERT_EQ(local[i], left * 1e6 + static_cast<double>(i)) << "element " << i;
			ASSERT_EQ(local[kElems + i], mine[i]) << "self element " << i;
		}

		/* And the origin reads back what it wrote. */
		ASSERT_EQ(rma_get(back.data(), kElems, RMA_DOUBLE, right, w.disp(right, 0), kElems, RMA_DOUBLE, w.win),
			  RMA_SUCCESS);
		ASSERT_EQ(rma_win_fence(RMA_MODE_NOSUCCEED, w.win), RMA_SUCCESS);
		EXPECT_EQ(back, mine);

		freeWindow(w);
		ASSERT_EQ(rma_finalize(), RMA_SUCCESS);
	});
	EXPECT_EQ(status, 0);
}

TEST_P(FlavorTest, EveryRankWritesEveryTarget)
{
	auto [kind, ranks] = GetParam();
	int status = runRanks(ranks, [kind = kind](int) {
		ASSERT_EQ(rma_init(nullptr, nullptr), RMA_SUCCESS);
		int rank, size;
		rma_comm_rank(RMA_COMM_WORLD, &rank);
		rma_comm_size(RMA_COMM_WORLD, &size);
		TestWindow w;
		ASSERT_TRUE(makeWindow(kind, size * sizeof(int64_t), sizeof(int64_t), w));
		ASSERT_EQ(rma_win_fence(RMA_MODE_NOPRECEDE, w.win), RMA_SUCCESS);
		for (int t = 0; t < size; ++t) {
			int64_t v = 100 * rank + t;
			ASSERT_EQ(rma_put(&v, 1, RMA_INT64_T, t, w.disp(t, rank), 1, RMA_INT64_T, w.win), RMA_SUCCESS);
		}
		ASSERT_EQ(rma_win_fence(0, w.win), RMA_SUCCESS);
		const int64_t *local = reinterpret_cast<const int64_t *>(w.local);
		for (int o = 0; o < size; ++o) {
			EXPECT_EQ(local[o], 100 * o + rank);
		}
		/* Gets of every slot everywhere. */
		std::vector<int64_t> all(size * size, -1);
		for (int t = 0; t < size; ++t) {
			ASSERT_EQ(rma_get(&all[t * size], size, RMA_INT64_T, t, w.disp(t, 0), size, RMA_INT64_T, w.win),
				  RMA_SUCCESS);
		}
		ASSERT_EQ(rma_win_fence(RMA_MODE_NOSUCCEED, w.win), RMA_SUCCESS);
		for (int t = 0; t < size; ++t)
			for (int o = 0; o < size; ++o) {
				EXPECT_EQ(all[t * size + o], 100 * o + t);
			}
		freeWindow(w);
		ASSERT_EQ(rma_finalize(), RMA_SUCCESS);
	});
	EXPECT_EQ(status, 0);
}

TEST_P(FlavorTest, OutOfRangeWritesNothing)
{
	auto [kind, ranks] = GetParam();
	int status = runRanks(ranks, [kind = kind](int) {
		ASSERT_EQ(rma_init(nullptr, nullptr), RMA_SUCCESS);
		int rank, size;
		rma_comm_rank(RMA_COMM_WORLD, &rank);
		rma_comm_size(RMA_COMM_WORLD, &size);
		TestWindow w;
		ASSERT_TRUE(makeWindow(kind, 64, 1, w));
		ASSERT_EQ(rma_win_fence(0, w.win), RMA_SUCCESS);
		int target = (rank + 1) % size;
		char data[16];
		std::memset(data, 0x5a, sizeof(data));
		/* 16 bytes at 56 overrun a 64-byte window by 8. */
		int rc = rma_put(data, 16, RMA_BYTE, target, w.disp(target, 56), 16, RMA_BYTE, w.win);
		EXPECT_EQ(errorClassOf(rc), RMA_ERR_RMA_RANGE) << errorText(rc);
		rc = rma_get(data, 16, RMA_BYTE, target, w.disp(target, 60), 16, RMA_BYTE, w.win);
		EXPECT_EQ(errorClassOf(rc), RMA_ERR_RMA_RANGE) << errorText(rc);
		/* Exactly up to the end is fine. */
		EXPECT_EQ(rma_put(data, 8, RMA_BYTE, target, w.disp(target, 56), 8, RMA_BYTE, w.win), RMA_SUCCESS);
		ASSERT_EQ(rma_win_fence(RMA_MODE_NOSUCCEED, w.win), RMA_SUCCESS);
		for (int i = 0; i < 56; ++i) {
			ASSERT_EQ(static_cast<int>(w.local[i]), 0) << "byte " << i << " was written";
		}
		for (int i = 56; i < 64; ++i) {
			ASSERT_EQ(static_cast<int>(w.local[i]), 0x5a);
		}
		freeWindow(w);
		ASSERT_EQ(rma_finalize(), RMA_SUCCESS);
	});
	EXPECT_EQ(status, 0);
}

std::string flavorName(const ::testing::TestParamInfo<std::tuple<Kind, int>> &info)
{
	return std::string(kindName(std::get<0>(info.param))) + "_" + std::to_string(std::get<1>(info.param)) +
	       "ranks";
}

INSTANTIATE_TEST_SUITE_P(AllFlavors, FlavorTest,
			 ::testing::Combine(::testing::Values(Kind::Allocate, Kind::Shared, Kind::SharedNoncontig,
							      Kind::CreatePlain, Kind::CreateAllocMem, Kind::Dynamic,
							      Kind::DynamicAllocMem),
					    ::testing::Values(1, 2, 4)),
			 flavorName);

/* Each rank exposes a different size with a different disp_unit. */
TEST(WindowTest, PerRankSizesAndDispUnits)
{
	EXPECT_RANKS_PASS(runRanks(4, [](int) {
			  ASSERT_EQ(rma_init(nullptr, nullptr), RMA_SUCCESS);
			  int rank, size;
			  rma_comm_rank(RMA_COMM_WORLD, &rank);
			  rma_comm_size(RMA_COMM_WORLD, &size);
			  const int units[] = { 1, 4, 8, 16 };
			  int unit = units[rank % 4];
			  rma_aint bytes = 256 * (rank + 1);
			  rma_win win;
			  std::byte *base;
			  ASSERT_EQ(rma_win_allocate(bytes, unit, RMA_INFO_NULL, RMA_COMM_WORLD, &base, &win), RMA_SUCCESS);
			  rma_win_set_errhandler(win, RMA_ERRORS_RETURN);
			  int v;
			  /* Each rank writes its own slot at byte 64 + 16 * rank, in the target's units. */
			  ASSERT_EQ(rma_win_fence(0, win), RMA_SUCCESS);
			  for (int t = 0; t < size; ++t) {
				  int tunit = units[t % 4];
				  rma_aint byteOffset = 64 + 16 * rank; /* a multiple of every unit */
				  ASSERT_EQ(rma_put(&rank, 1, RMA_INT, t, byteOffset / tunit, 1, RMA_INT, win), RMA_SUCCESS);
			  }
			  ASSERT_EQ(rma_win_fence(0, win), RMA_SUCCESS);
			  for (int o = 0; o < size; ++o) {
				  std::memcpy(&v, base + 64 + 16 * o, sizeof(v));
				  EXPECT_EQ(v, o);
			  }
			  /* The bound is the target's own size: rank 0 has 256 bytes. */
			  int rc = rma_put(&rank, 1, RMA_INT, 0, 256, 1, RMA_INT, win);
			  EXPECT_EQ(errorClassOf(rc), RMA_ERR_RMA_RANGE) << errorText(rc);
			  if (size > 3) {
				  /* Rank 3 has 1024 bytes in units of 16: unit 63 is bytes 1008..1023. */
				  EXPECT_EQ(rma_put(&rank, 1, RMA_INT, 3, 63, 1, RMA_INT, win), RMA_SUCCESS);
				  rc = rma_put(&rank, 1, RMA_INT, 3, 64, 1, RMA_INT, win);
				  EXPECT_EQ(errorClassOf(rc), RMA_ERR_RMA_RANGE) << errorText(rc);
			  }
			  ASSERT_EQ(rma_win_fence(RMA_MODE_NOSUCCEED, win), RMA_SUCCESS);
			  rma_aint *sizeAttr;
			  int *unitAttr;
			  int flag;
			  ASSERT_EQ(rma_win_get_attr(win, RMA_WIN_SIZE, &sizeAttr, &flag), RMA_SUCCESS);
			  EXPECT_EQ(*sizeAttr, bytes);
			  ASSERT_EQ(rma_win_get_attr(win, RMA_WIN_DISP_UNIT, &unitAttr, &flag), RMA_SUCCESS);
			  EXPECT_EQ(*unitAttr, unit);
			  ASSERT_EQ(rma_win_free(&win), RMA_SUCCESS);
			  ASSERT_EQ(rma_finalize(), RMA_SUCCESS);
		  }));
}

TEST(WindowTest, ZeroSizeWindows)
{
	EXPECT_RANKS_PASS(runRanks(2, [](int) {
			  ASSERT_EQ(rma_init(nullptr, nullptr), RMA_SUCCESS);
			  int rank;
			  rma_comm_rank(RMA_COMM_WORLD, &rank);
			  /* Rank 0 exposes nothing, rank 1 exposes 8 bytes. */
			  rma_win win;
			  void *base;
			  ASSERT_EQ(rma_win_allocate(rank == 0 ? 0 : 8, 1, RMA_INFO_NULL, RMA_COMM_WORLD, &base, &win),
				    RMA_SUCCESS);
			  rma_win_set_errhandler(win, RMA_ERRORS_RETURN);
			  if (rank == 0) {
				  EXPECT_EQ(base, nullptr);
			  }
			  ASSERT_EQ(rma_win_fence(0, win), RMA_SUCCESS);
			  char c = 'x';
			  /* Nothing fits in a zero-size window, but a zero-count transfer does. */
			  EXPECT_EQ(errorClassOf(rma_put(&c, 1, RMA_CHAR, 0, 0, 1, RMA_CHAR, win)), RMA_ERR_RMA_RANGE);
			  EXPECT_EQ(rma_put(&c, 0, RMA_CHAR, 0, 0, 0, RMA_CHAR, win), RMA_SUCCESS);
			  EXPECT_EQ(rma_put(&c, 1, RMA_CHAR, 1, 7, 1, RMA_CHAR, win), RMA_SUCCESS);
			  ASSERT_EQ(rma_win_fence(0, win), RMA_SUCCESS);
			  if (rank == 1) {
				  EXPECT_EQ(static_cast<char *>(base)[7], 'x');
			  }
			  rma_aint qsize;
			  int qunit;
			  void *qbase;
			  /* RMA_PROC_NULL: the lowest rank with memory, here rank 1. */
			  ASSERT_EQ(rma_win_shared_query(win, RMA_PROC_NULL, &qsize, &qunit, &qbase), RMA_SUCCESS);
			  EXPECT_EQ(qsize, 8);
			  EXPECT_EQ(static_cast<char *>(qbase)[7], 'x');
			  ASSERT_EQ(rma_win_free(&win), RMA_SUCCESS);

			  /* Every rank zero. */
			  ASSERT_EQ(rma_win_allocate_shared(0, 1, RMA_INFO_NULL, RMA_COMM_WORLD, &base, &win), RMA_SUCCESS);
			  ASSERT_EQ(rma_win_shared_query(win, RMA_PROC_NULL, &qsize, &qunit, &qbase), RMA_SUCCESS);
			  EXPECT_EQ(qsize, 0);
			  EXPECT_EQ(qbase, nullptr);
			  ASSERT_EQ(rma_win_free(&win), RMA_SUCCESS);
			  ASSERT_EQ(rma_finalize(), RMA_SUCCESS);
		  }));
}

TEST(WindowTest, SharedQueryGivesLoadableContiguousMemory)
{
	for (bool noncontig : { false, true }) {
		SCOPED_TRACE(noncontig ? "noncontig" : "contiguous");
		EXPECT_RANKS_PASS(runRanks(4, [noncontig](int) {
				  ASSERT_EQ(rma_init(nullptr, nullptr), RMA_SUCCESS);
				  int rank, size;
				  rma_comm_rank(RMA_COMM_WORLD, &rank);
				  rma_comm_size(RMA_COMM_WORLD, &size);
				  rma_info info;
				  rma_info_create(&info);
				  rma_info_set(info, "alloc_shared_noncontig", noncontig ? "true" : "false");
				  rma_aint bytes = 24 * (rank + 1); /* unequal, not page multiples */
				  int64_t *base;
				  rma_win win;
				  ASSERT_EQ(rma_win_allocate_shared(bytes, 8, info, RMA_COMM_WORLD, &base, &win), RMA_SUCCESS);
				  rma_info_free(&info);
				  for (int i = 0; i < 3 * (rank + 1); ++i)
					  base[i] = rank * 100 + i;
				  ASSERT_EQ(rma_win_fence(0, win), RMA_SUCCESS);
				  std::byte *prevEnd = nullptr;
				  for (int r = 0; r < size; ++r) {
					  rma_aint qsize;
					  int qunit;
					  int64_t *qbase;
					  ASSERT_EQ(rma_win_shared_query(win, r, &qsize, &qunit, &qbase), RMA_SUCCESS);
					  EXPECT_EQ(qsize, 24 * (r + 1));
					  EXPECT_EQ(qunit, 8);
					  for (int i = 0; i < 3 * (r + 1); ++i) {
						  EXPECT_EQ(qbase[i], r * 100 + i);
					  }
					  if (!noncontig && prevEnd) {
						  EXPECT_EQ(reinterpret_cast<std::byte *>(qbase), prevEnd) << "rank " << r;
					  }
					  prevEnd = reinterpret_cast<std::byte *>(qbase) + qsize;
				  }
				  ASSERT_EQ(rma_win_fence(RMA_MODE_NOSUCCEED, win), RMA_SUCCESS);
				  ASSERT_EQ(rma_win_free(&win), RMA_SUCCESS);
				  ASSERT_EQ(rma_finalize(), RMA_SUCCESS);
			  }));
	}
}

/*
 * Two ranks swap the addresses of @mine through a tiny allocate window
 * (collective): the peer's addresses, in order, or nothing on a failure.
 */
std::vector<rma_aint> addressesOfPeer(std::vector<const void *> mine, int peer)
{
	std::vector<rma_aint> addrs(mine.size()), theirs;
	for (size_t i = 0; i < mine.size(); ++i)
		rma_get_address(mine[i], &addrs[i]);
	const int n = static_cast<int>(addrs.size());
	rma_win ex;
	rma_aint *slot;
	if (rma_win_allocate(n * sizeof(rma_aint), 1, RMA_INFO_NULL, RMA_COMM_WORLD, &slot, &ex) != RMA_SUCCESS)
		return theirs;
	if (rma_win_fence(0, ex) == RMA_SUCCESS &&
	    rma_put(addrs.data(), n, RMA_AINT, peer, 0, n, RMA_AINT, ex) == RMA_SUCCESS &&
	    rma_win_fence(0, ex) == RMA_SUCCESS)
		theirs.assign(slot, slot + n);
	rma_win_free(&ex);
	return theirs;
}

/*
 * A target range may cross from one attached region into an adjacent or
 * overlapping one: MPI asks only that it lie in attached memory. Halves of
 * one malloc'ed array (cross-memory attach), halves of one rma_alloc_mem
 * block (one segment, stored directly), overlapping regions, and a range
 * over a hole (refused, naming the hole), for put, get and accumulate.
 */
TEST(WindowTest, DynamicRangesMayCrossAdjacentAndOverlappingRegions)
{
	EXPECT_RANKS_PASS(runRanks(2, [](int rank) {
		ASSERT_EQ(rma_init(nullptr, nullptr), RMA_SUCCESS);
		const int peer = 1 - rank;
		rma_win win;
		ASSERT_EQ(rma_win_create_dynamic(RMA_INFO_NULL, RMA_COMM_WORLD, &win), RMA_SUCCESS);
		rma_win_set_errhandler(win, RMA_ERRORS_RETURN);
		std::vector<int64_t> heap(64, 0);
		int64_t *seg;
		ASSERT_EQ(rma_alloc_mem(64 * sizeof(int64_t), RMA_INFO_NULL, &seg), RMA_SUCCESS);
		std::memset(seg, 0, 64 * sizeof(int64_t));
		/* heap: [0,32) and [32,64) separately; seg: [0,40) and [24,64) overlapping; heap[63] stays out. */
		ASSERT_EQ(rma_win_attach(win, heap.data() + 32, 31 * sizeof(int64_t)), RMA_SUCCESS);
		ASSERT_EQ(rma_win_attach(win, heap.data(), 32 * sizeof(int64_t)), RMA_SUCCESS);
		ASSERT_EQ(rma_win_attach(win, seg, 40 * sizeof(int64_t)), RMA_SUCCESS);
		ASSERT_EQ(rma_win_attach(win, seg + 24, 40 * sizeof(int64_t)), RMA_SUCCESS);

		std::vector<rma_aint> theirs = addressesOfPeer({ heap.data(), seg }, peer);
		ASSERT_EQ(theirs.size(), 2u);

		std::vector<int64_t> src(64);
		for (int i = 0; i < 64; ++i)
			src[i] = 100 * rank + i;
		ASSERT_EQ(rma_win_lock_all(0, win), RMA_SUCCESS);
		/* heap[24..40) crosses the boundary at 32; seg[16..48) spans both overlapping regions. */
		EXPECT_EQ(rma_put(src.data(), 16, RMA_INT64_T, peer, theirs[0] + 24 * 8, 16, RMA_INT64_T, win), RMA_SUCCESS);
		EXPECT_EQ(rma_put(src.data(), 32, RMA_INT64_T, peer, theirs[1] + 16 * 8, 32, RMA_INT64_T, win), RMA_SUCCESS);
		EXPECT_EQ(rma_accumulate(src.data(), 8, RMA_INT64_T, peer, theirs[1] + 36 * 8, 8, RMA_INT64_T, RMA_SUM, win),
			  RMA_SUCCESS);
		/* heap[60..64) reaches the unattached last element: a hole. */
		int rc = rma_put(src.data(), 4, RMA_INT64_T, peer, theirs[0] + 60 * 8, 4, RMA_INT64_T, win);
		EXPECT_EQ(errorClassOf(rc), RMA_ERR_RMA_RANGE) << errorText(rc);
		EXPECT_NE(errorText(rc).find("no region holds address"), std::string::npos) << errorText(rc);
		ASSERT_EQ(rma_win_flush(peer, win), RMA_SUCCESS);
		std::vector<int64_t> back(32, -1);
		EXPECT_EQ(rma_get(back.data(), 32, RMA_INT64_T, peer, theirs[0] + 16 * 8, 32, RMA_INT64_T, win),
			  RMA_SUCCESS);
		ASSERT_EQ(rma_win_unlock_all(win), RMA_SUCCESS);
		rma_barrier(RMA_COMM_WORLD);
		for (int i = 0; i < 16; ++i)
			EXPECT_EQ(heap[24 + i], 100 * peer + i) << i;
		EXPECT_EQ(heap[63], 0);
		for (int i = 0; i < 32; ++i) {
			int64_t want = 100 * peer + i + (i >= 20 && i < 28 ? 100 * peer + (i - 20) : 0);
			EXPECT_EQ(seg[16 + i], want) << i;
		}
		/* What the get read: heap[16..48) of the peer (this rank wrote [24, 40) there). */
		for (int i = 0; i < 32; ++i)
			EXPECT_EQ(back[i], (i >= 8 && i < 24) ? 100 * rank + (i - 8) : 0) << i;
		ASSERT_EQ(rma_win_free(&win), RMA_SUCCESS);
		rma_free_mem(seg);
		ASSERT_EQ(rma_finalize(), RMA_SUCCESS);
	}));
}

TEST(WindowTest, DynamicAttachDetachSeveralRegions)
{
	EXPECT_RANKS_PASS(runRanks(2, [](int) {
			  ASSERT_EQ(rma_init(nullptr, nullptr), RMA_SUCCESS);
			  int rank;
			  rma_comm_rank(RMA_COMM_WORLD, &rank);
			  int peer = 1 - rank;
			  rma_win win;
			  ASSERT_EQ(rma_win_create_dynamic(RMA_INFO_NULL, RMA_COMM_WORLD, &win), RMA_SUCCESS);
			  rma_win_set_errhandler(win, RMA_ERRORS_RETURN);
			  /* Three regions: two malloc'ed, one from rma_alloc_mem. */
			  std::vector<int> a(16, 0), b(32, 0);
			  int *c;
			  ASSERT_EQ(rma_alloc_mem(64 * sizeof(int), RMA_INFO_NULL, &c), RMA_SUCCESS);
			  std::memset(c, 0, 64 * sizeof(int));
			  ASSERT_EQ(rma_win_attach(win, a.data(), a.size() * sizeof(int)), RMA_SUCCESS);
			  ASSERT_EQ(rma_win_attach(win, b.data(), b.size() * sizeof(int)), RMA_SUCCESS);
			  ASSERT_EQ(rma_win_attach(win, c, 64 * sizeof(int)), RMA_SUCCESS);
			  /* Overlapping attachments are allowed (and detached one by one); unknown detaches are errors. */
			  EXPECT_EQ(rma_win_attach(win, a.data() + 4, 8), RMA_SUCCESS);
			  EXPECT_EQ(errorClassOf(rma_win_detach(win, a.data() + 1)), RMA_ERR_RMA_ATTACH);
			  EXPECT_EQ(rma_win_detach(win, a.data() + 4), RMA_SUCCESS);
			  EXPECT_EQ(errorClassOf(rma_win_detach(win, a.data() + 4)), RMA_ERR_RMA_ATTACH);

			  std::vector<rma_aint> theirs = addressesOfPeer({ a.data(), b.data(), c }, peer);
			  ASSERT_EQ(theirs.size(), 3u);

			  ASSERT_EQ(rma_win_fence(0, win), RMA_SUCCESS);
			  int v = 1000 + rank;
			  ASSERT_EQ(rma_put(&v, 1, RMA_INT, peer, theirs[0] + 15 * sizeof(int), 1, RMA_INT, win), RMA_SUCCESS);
			  ASSERT_EQ(rma_put(&v, 1, RMA_INT, peer, theirs[1], 1, RMA_INT, win), RMA_SUCCESS);
			  ASSERT_EQ(rma_put(&v, 1, RMA_INT, peer, theirs[2] + 63 * sizeof(int), 1, RMA_INT, win), RMA_SUCCESS);
			  /* Straddling the end of a region is out of range. */
			  int two[2] = { 1, 2 };
			  EXPECT_EQ(errorClassOf(rma_put(two, 2, RMA_INT, peer, theirs[0] + 15 * sizeof(int), 2, RMA_INT, win)),
				    RMA_ERR_RMA_RANGE);
			  ASSERT_EQ(rma_win_fence(0, win), RMA_SUCCESS);
			  EXPECT_EQ(a[15], 1000 + peer);
			  EXPECT_EQ(b[0], 1000 + peer);
			  EXPECT_EQ(c[63], 1000 + peer);
			  int got = 0;
			  ASSERT_EQ(rma_get(&got, 1, RMA_INT, peer, theirs[2] + 63 * sizeof(int), 1, RMA_INT, win), RMA_SUCCESS);
			  ASSERT_EQ(rma_win_fence(0, win), RMA_SUCCESS);
			  EXPECT_EQ(got, 1000 + rank);

			  /* After both detach b, accesses to it fail and the others still work. */
			  ASSERT_EQ(rma_win_detach(win, b.data()), RMA_SUCCESS);
			  ASSERT_EQ(rma_win_fence(0, win), RMA_SUCCESS);
			  EXPECT_EQ(errorClassOf(rma_put(&v, 1, RMA_INT, peer, theirs[1], 1, RMA_INT, win)), RMA_ERR_RMA_RANGE);
			  EXPECT_EQ(rma_put(&v, 1, RMA_INT, peer, theirs[0], 1, RMA_INT, win), RMA_SUCCESS);
			  ASSERT_EQ(rma_win_fence(RMA_MODE_NOSUCCEED, win), RMA_SUCCESS);
			  EXPECT_EQ(a[0], 1000 + peer);
			  ASSERT_EQ(rma_win_detach(win, a.data()), RMA_SUCCESS);
			  ASSERT_EQ(rma_win_detach(win, c), RMA_SUCCESS);
			  ASSERT_EQ(rma_win_free(&win), RMA_SUCCESS);
			  ASSERT_EQ(rma_free_mem(c), RMA_SUCCESS);
			  ASSERT_EQ(rma_finalize(), RMA_SUCCESS);
		  }));
}

} /* namespace */

namespace {

std::string infoValue(rma_win win, const char *key)
{
	rma_info used;
	EXPECT_EQ(rma_win_get_info(win, &used), RMA_SUCCESS);
	char value[RMA_MAX_INFO_VAL + 1] = "";
	int flag = 0;
	rma_info_get(used, key, RMA_MAX_INFO_VAL, value, &flag);
	rma_info_free(&used);
	return flag ? value : "<unset>";
}

/* rma_win_create over rma_alloc_mem memory is mapped by peers; over other memory it is reached from outside. */
TEST(WindowTest, CreateTakesTheDirectPathOverAllocMem)
{
	int status = runRanks(2, [](int) {
		ASSERT_EQ(rma_init(nullptr, nullptr), RMA_SUCCESS);
		int rank;
		rma_comm_rank(RMA_COMM_WORLD, &rank);
		TestWindow direct, plain;
		ASSERT_TRUE(makeWindow(Kind::CreateAllocMem, 64, 1, direct));
		ASSERT_TRUE(makeWindow(Kind::CreatePlain, 64, 1, plain));
		EXPECT_EQ(infoValue(direct.win, "rma_memory"), "alloc_mem");
		EXPECT_EQ(infoValue(plain.win, "rma_memory"), "process");
		/*
		 * MPI-4.1: the query works on create windows. Shared memory
		 * gives a pointer that loads the peer's data; another
		 * process's private memory gives size 0 and NULL.
		 */
		rma_aint size = -1;
		int unit = 0;
		void *peerBase = nullptr;
		rma_win_fence(0, direct.win);
		std::memset(direct.local, 'a' + rank, 64);
		rma_win_fence(0, direct.win);
		EXPECT_EQ(rma_win_shared_query(direct.win, 1 - rank, &size, &unit, &peerBase), RMA_SUCCESS);
		EXPECT_EQ(size, 64);
		EXPECT_EQ(unit, 1);
		ASSERT_NE(peerBase, nullptr);
		EXPECT_EQ(static_cast<char *>(peerBase)[63], 'a' + (1 - rank));
		peerBase = &size;
		EXPECT_EQ(rma_win_shared_query(plain.win, 1 - rank, &size, &unit, &peerBase), RMA_SUCCESS);
		EXPECT_EQ(size, 0);
		EXPECT_EQ(peerBase, nullptr);
		EXPECT_EQ(unit, 1);
		/* Its own memory is mapped in this process, whatever the flavor. */
		EXPECT_EQ(rma_win_shared_query(plain.win, rank, &size, &unit, &peerBase), RMA_SUCCESS);
		EXPECT_EQ(size, 64);
		EXPECT_EQ(peerBase, plain.local);
		freeWindow(direct);
		freeWindow(plain);
		ASSERT_EQ(rma_finalize(), RMA_SUCCESS);
	});
	EXPECT_EQ(status, 0);
}

/*
 * Creation in a loop, as test suites do: windows of the world (4 ranks) and
 * of two halves (2 ranks each) in turn, so a maker's freed control segments
 * of two shapes are reused for the next windows of the same shape. Each
 * window must start clean: lock words, accumulate rings (ring path on every
 * other window), fetch replies, barrier counts.
 */
TEST(WindowLoopTest, ManyWindowsInALoopStartClean)
{
	int status = runRanks(4, [](int) {
		ASSERT_EQ(rma_init(nullptr, nullptr), RMA_SUCCESS);
		int worldRank;
		rma_comm_rank(RMA_COMM_WORLD, &worldRank);
		rma_comm half;
		ASSERT_EQ(rma_comm_split(RMA_COMM_WORLD, worldRank % 2, worldRank, &half), RMA_SUCCESS);
		for (int i = 0; i < 40; ++i) {
			rma_comm comm = i % 2 == 0 ? RMA_COMM_WORLD : half;
			int rank, n;
			rma_comm_rank(comm, &rank);
			rma_comm_size(comm, &n);
			rma_info info;
			ASSERT_EQ(rma_info_create(&info), RMA_SUCCESS);
			ASSERT_EQ(rma_info_set(info, "rma_accumulate_path", i % 4 < 2 ? "ring" : "auto"), RMA_SUCCESS);
			int64_t *base = nullptr;
			rma_win win;
			ASSERT_EQ(rma_win_allocate(3 * sizeof(int64_t), sizeof(int64_t), info, comm, &base, &win), RMA_SUCCESS)
				<< "window " << i;
			rma_info_free(&info);
			EXPECT_EQ(base[0], 0);
			EXPECT_EQ(base[1], 0);
			/* The window's fences wait for a late rank (barrier counts start at zero). */
			const int64_t mark = 1000 + i;
			ASSERT_EQ(rma_win_fence(0, win), RMA_SUCCESS);
			if (rank == n - 1) {
				usleep(2000);
				ASSERT_EQ(rma_put(&mark, 1, RMA_INT64_T, 0, 2, 1, RMA_INT64_T, win), RMA_SUCCESS);
			}
			ASSERT_EQ(rma_win_fence(0, win), RMA_SUCCESS);
			if (rank == 0) {
				EXPECT_EQ(base[2], mark) << "window " << i << ": the fence did not wait for rank " << n - 1;
			}

			const int64_t add = i + 1;
			int64_t fetched = -1, one = 1;
			ASSERT_EQ(rma_win_lock_all(0, win), RMA_SUCCESS);
			for (int t = 0; t < n; ++t)
				ASSERT_EQ(rma_accumulate(&add, 1, RMA_INT64_T, t, 0, 1, RMA_INT64_T, RMA_SUM, win), RMA_SUCCESS);
			ASSERT_EQ(rma_fetch_and_op(&one, &fetched, RMA_INT64_T, 0, 1, RMA_SUM, win), RMA_SUCCESS);
			ASSERT_EQ(rma_win_unlock_all(win), RMA_SUCCESS);
			EXPECT_GE(fetched, 0) << "window " << i;
			EXPECT_LT(fetched, n) << "window " << i;
			/* Exclusive epochs on the next rank: its lock word starts unlocked. */
			ASSERT_EQ(rma_win_lock(RMA_LOCK_EXCLUSIVE, (rank + 1) % n, 0, win), RMA_SUCCESS);
			ASSERT_EQ(rma_win_unlock((rank + 1) % n, win), RMA_SUCCESS);
			ASSERT_EQ(rma_win_fence(0, win), RMA_SUCCESS);
			EXPECT_EQ(base[0], n * add) << "window " << i;
			if (rank == 0) {
				EXPECT_EQ(base[1], n) << "window " << i;
			}
			ASSERT_EQ(rma_win_fence(0, win), RMA_SUCCESS);
			ASSERT_EQ(rma_win_free(&win), RMA_SUCCESS);
		}
		rma_comm_free(&half);
		ASSERT_EQ(rma_finalize(), RMA_SUCCESS);
	});
	EXPECT_EQ(status, 0);
}

} /* namespace */
