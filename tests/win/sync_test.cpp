/* SPDX-License-Identifier: MIT */
/*
 * Every synchronization mode over real processes: data movement under each,
 * lock semantics (mutual exclusion, shared overlap, writer exclusion), a
 * truly passive target, mixed and switched modes, every misuse with its
 * error, request-based operations, and a lock holder that dies.
 */
#include <gtest/gtest.h>

#include <signal.h>
#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <fstream>
#include <functional>
#include <string>
#include <thread>

#include <rma/rma.h>

#include "win/control.h"
#include "win/window_test_util.h"

using namespace rmatest;
using librma::test::RanksOptions;
using librma::test::ScratchDir;

namespace {

enum class Mode { Fence, Pscw, LockShared, LockExclusive, LockAll, LockAllNoCheck };

const char *modeName(Mode m)
{
	switch (m) {
	case Mode::Fence: return "Fence";
	case Mode::Pscw: return "Pscw";
	case Mode::LockShared: return "LockShared";
	case Mode::LockExclusive: return "LockExclusive";
	case Mode::LockAll: return "LockAll";
	case Mode::LockAllNoCheck: return "LockAllNoCheck";
	}
	return "?";
}

class ModeTest : public ::testing::TestWithParam<std::tuple<Mode, int>>
{
};

/* Each rank writes a block to its right neighbour and to itself, then reads the neighbour's back. */
TEST_P(ModeTest, MovesDataToNeighbourAndSelf)
{
	auto [mode, ranks] = GetParam();
	int status = runRanks(ranks, [mode = mode](int) {
		ASSERT_EQ(rma_init(nullptr, nullptr), RMA_SUCCESS);
		const int rank = worldRank(), size = worldSize();
		const int right = (rank + 1) % size, left = (rank + size - 1) % size;
		constexpr int kN = 64;
		int64_t *base;
		rma_win win;
		ASSERT_EQ(rma_win_allocate(2 * kN * sizeof(int64_t), sizeof(int64_t), RMA_INFO_NULL, RMA_COMM_WORLD,
					   &base, &win),
			  RMA_SUCCESS);
		rma_win_set_errhandler(win, RMA_ERRORS_RETURN);
		int64_t out[kN], back[kN];
		for (int i = 0; i < kN; ++i)
			out[i] = rank * 1000 + i;
		rma_group targets = pairGroup(right, rank);  /* whom I access */
		rma_group origins = pairGroup(left, rank);   /* who accesses me */

		auto open = [&] {
			switch (mode) {
			case Mode::Fence: return rma_win_fence(0, win);
			case Mode::Pscw:
				EXPECT_EQ(rma_win_post(origins, 0, win), RMA_SUCCESS);
				return rma_win_start(targets, 0, win);
			case Mode::LockShared:
			case Mode::LockExclusive: {
				int type = mode == Mode::LockShared ? RMA_LOCK_SHARED : RMA_LOCK_EXCLUSIVE;
				/* Lower rank first: two ranks each holding one exclusive lock and wanting the other's would deadlock. */
				int rc = rma_win_lock(type, std::min(right, rank), 0, win);
				if (rc == RMA_SUCCESS && right != rank)
					rc = rma_win_lock(type, std::max(right, rank), 0, win);
				return rc;
			}
			case Mode::LockAll: return rma_win_lock_all(0, win);
			case Mode::LockAllNoCheck: return rma_win_lock_all(RMA_MODE_NOCHECK, win);
			}
			return -1;
		};
		auto close = [&] {
			switch (mode) {
			case Mode::Fence: return rma_win_fence(0, win);
			case Mode::Pscw:
				EXPECT_EQ(rma_win_complete(win), RMA_SUCCESS);
				return rma_win_wait(win);
			case Mode::LockShared:
			case Mode::LockExclusive: {
				int rc = rma_win_unlock(right, win);
				if (rc == RMA_SUCCESS && right != rank)
					rc = rma_win_unlock(rank, win);
				if (rc == RMA_SUCCESS)
					rc = rma_barrier(RMA_COMM_WORLD); /* the targets learn the epoch ended */
				rma_win_sync(win);
				return rc;
			}
			case Mode::LockAll:
			case Mode::LockAllNoCheck: {
				int rc = rma_win_unlock_all(win);
				rma_barrier(RMA_COMM_WORLD);
				rma_win_sync(win);
				return rc;
			}
			}
			return -1;
		};

		if (mode == Mode::Fence) {
			ASSERT_EQ(rma_win_fence(0, win), RMA_SUCCESS);
		}
		ASSERT_EQ(open(), RMA_SUCCESS);
		ASSERT_EQ(rma_put(out, kN, RMA_INT64_T, right, 0, kN, RMA_INT64_T, win), RMA_SUCCESS);
		ASSERT_EQ(rma_put(out, kN, RMA_INT64_T, rank, kN, kN, RMA_INT64_T, win), RMA_SUCCESS);
		ASSERT_EQ(close(), RMA_SUCCESS);
		for (int i = 0; i < kN; ++i) {
			ASSERT_EQ(base[i], left * 1000 + i) << modeName(mode) << " element " << i;
			ASSERT_EQ(base[kN + i], out[i]) << modeName(mode) << " self element " << i;
		}
		ASSERT_EQ(open(), RMA_SUCCESS);
		ASSERT_EQ(rma_get(back, kN, RMA_INT64_T, right, 0, kN, RMA_INT64_T, win), RMA_SUCCESS);
		if (mode != Mode::Fence && mode != Mode::Pscw) {
			ASSERT_EQ(rma_win_flush(right, win), RMA_SUCCESS);
		}
		ASSERT_EQ(close(), RMA_SUCCESS);
		for (int i = 0; i < kN; ++i) {
			ASSERT_EQ(back[i], out[i]);
		}
		if (mode == Mode::Fence) {
			ASSERT_EQ(rma_win_fence(RMA_MODE_NOSUCCEED, win), RMA_SUCCESS);
		}
		rma_group_free(&targets);
		rma_group_free(&origins);
		ASSERT_EQ(rma_win_free(&win), RMA_SUCCESS);
		ASSERT_EQ(rma_finalize(), RMA_SUCCESS);
	});
	EXPECT_EQ(status, 0);
}

std::string modeTestName(const ::testing::TestParamInfo<std::tuple<Mode, int>> &info)
{
	return std::string(modeName(std::get<0>(info.param))) + "_" + std::to_string(std::get<1>(info.param)) + "ranks";
}

INSTANTIATE_TEST_SUITE_P(AllModes, ModeTest,
			 ::testing::Combine(::testing::Values(Mode::Fence, Mode::Pscw, Mode::LockShared, Mode::LockExclusive,
							      Mode::LockAll, Mode::LockAllNoCheck),
					    ::testing::Values(1, 2, 4)),
			 modeTestName);

TEST(PscwTest, EmptyGroupsAndTest)
{
	EXPECT_RANKS_PASS(runRanks(2, [](int) {
			  ASSERT_EQ(rma_init(nullptr, nullptr), RMA_SUCCESS);
			  rma_win win;
			  void *base;
			  ASSERT_EQ(rma_win_allocate(8, 1, RMA_INFO_NULL, RMA_COMM_WORLD, &base, &win), RMA_SUCCESS);
			  /* Empty groups: nothing to wait for. */
			  ASSERT_EQ(rma_win_post(RMA_GROUP_EMPTY, 0, win), RMA_SUCCESS);
			  ASSERT_EQ(rma_win_start(RMA_GROUP_EMPTY, 0, win), RMA_SUCCESS);
			  ASSERT_EQ(rma_win_complete(win), RMA_SUCCESS);
			  int flag = 0;
			  ASSERT_EQ(rma_win_test(win, &flag), RMA_SUCCESS);
			  EXPECT_EQ(flag, 1);
			  /* rma_win_test reports 0 until the origin completes. */
			  const int rank = worldRank();
			  rma_group peer = pairGroup(1 - rank, 1 - rank);
			  if (rank == 0) {
				  ASSERT_EQ(rma_win_post(peer, 0, win), RMA_SUCCESS);
				  ASSERT_EQ(rma_win_test(win, &flag), RMA_SUCCESS);
				  EXPECT_EQ(flag, 0); /* rank 1 waits for our barrier before completing */
				  rma_barrier(RMA_COMM_WORLD);
				  ASSERT_TRUE(eventually([&] { return rma_win_test(win, &flag) == RMA_SUCCESS && flag; }));
				  EXPECT_EQ(static_cast<char *>(base)[3], 'z');
			  } else {
				  ASSERT_EQ(rma_win_start(peer, 0, win), RMA_SUCCESS);
				  char z = 'z';
				  ASSERT_EQ(rma_put(&z, 1, RMA_CHAR, 0, 3, 1, RMA_CHAR, win), RMA_SUCCESS);
				  rma_barrier(RMA_COMM_WORLD);
				  ASSERT_EQ(rma_win_complete(win), RMA_SUCCESS);
			  }
			  rma_group_free(&peer);
			  ASSERT_EQ(rma_win_free(&win), RMA_SUCCESS);
			  ASSERT_EQ(rma_finalize(), RMA_SUCCESS);
		  }));
}

/* Phase-fair writer preference: give way until one exclusive grant, then never again; escape a count stuck for good. */
TEST(GrantWatchTest, GivesWayUntilOneExclusiveGrantComes)
{
	librma::GrantWatch w;
	EXPECT_TRUE(w.yieldTo(5)); /* starts watching */
	EXPECT_TRUE(w.yieldTo(5)); /* no grant yet */
	EXPECT_FALSE(w.yieldTo(6)); /* one came */
	EXPECT_FALSE(w.yieldTo(6));
	EXPECT_FALSE(w.yieldTo(7));

	librma::GrantWatch stuck;
	ASSERT_TRUE(stuck.yieldTo(1));
	unsigned polls = 0;
	while (stuck.yieldTo(1) && polls <= librma::lockword::kPatience)
		++polls;
	EXPECT_EQ(polls, librma::lockword::kPatience);
	EXPECT_FALSE(stuck.yieldTo(1));
}

/* N ranks x M read-modify-writes of one counter under an exclusive lock: nothing is lost. */
TEST(LockTest, ExclusiveLockGivesMutualExclusion)
{
	constexpr int kRanks = 4, kIters = 300;
	EXPECT_RANKS_PASS(runRanks(kRanks, [](int) {
			  ASSERT_EQ(rma_init(nullptr, nullptr), RMA_SUCCESS);
			  int64_t *base;
			  rma_win win;
			  ASSERT_EQ(rma_win_allocate(sizeof(int64_t), sizeof(int64_t), RMA_INFO_NULL, RMA_COMM_WORLD, &base,
						     &win),
				    RMA_SUCCESS);
			  *base = 0;
			  rma_barrier(RMA_COMM_WORLD);
			  for (int i = 0; i < kIters; ++i) {
				  int64_t v = -1;
				  ASSERT_EQ(rma_win_lock(RMA_LOCK_EXCLUSIVE, 0, 0, win), RMA_SUCCESS);
				  ASSERT_EQ(rma_get(&v, 1, RMA_INT64_T, 0, 0, 1, RMA_INT64_T, win), RMA_SUCCESS);
				  ASSERT_EQ(rma_win_flush(0, win), RMA_SUCCESS);
				  ++v;
				  ASSERT_EQ(rma_put(&v, 1, RMA_INT64_T, 0, 0, 1, RMA_INT64_T, win), RMA_SUCCESS);
				  ASSERT_EQ(rma_win_unlock(0, win), RMA_SUCCESS);
			  }
			  rma_barrier(RMA_COMM_WORLD);
			  if (worldRank() == 0) {
				  rma_win_sync(win);
				  EXPECT_EQ(*base, int64_t(kRanks) * kIters);
			  }
			  ASSERT_EQ(rma_win_free(&win), RMA_SUCCESS);
			  ASSERT_EQ(rma_finalize(), RMA_SUCCESS);
		  }));
}

/*
 * The lock protocol under load: ranks 0 and 1 increment counters on
 * targets 0 and 1 under exclusive locks with a non-atomic get/flush/put;
 * rank 2 reads both counters twice per lock_all epoch and rank 3 twice per
 * shared lock, with a pause between the reads. A reader that sees a
 * counter move inside its epoch, or a final count short of the
 * increments, means an exclusive holder overlapped another holder (as a
 * wrong memory order in the lock words would allow).
 */
TEST(LockTest, ExclusiveSharedAndLockAllExcludeEachOtherUnderLoad)
{
	constexpr int kReads = 600;
	EXPECT_RANKS_PASS(runRanks(4, [](int) {
			  ASSERT_EQ(rma_init(nullptr, nullptr), RMA_SUCCESS);
			  /* 0, 1: increments made on target 0, 1; 2: readers done. */
			  SharedWords shared;
			  int64_t *base;
			  rma_win win;
			  ASSERT_EQ(rma_win_allocate(sizeof(int64_t), sizeof(int64_t), RMA_INFO_NULL, RMA_COMM_WORLD, &base,
						     &win),
				    RMA_SUCCESS);
			  *base = 0;
			  rma_barrier(RMA_COMM_WORLD);
			  const int rank = worldRank();
			  auto read = [&](int t) {
				  int64_t v = -1;
				  EXPECT_EQ(rma_get(&v, 1, RMA_INT64_T, t, 0, 1, RMA_INT64_T, win), RMA_SUCCESS);
				  EXPECT_EQ(rma_win_flush(t, win), RMA_SUCCESS);
				  return v;
			  };
			  auto pause = [](int n) {
				  for (int k = 0; k < n; ++k)
					  asm volatile("" ::: "memory");
			  };
			  if (rank < 2) {
				  /* Writers go on until both readers are done. */
				  for (int i = 0; shared.at(2).load() < 2; ++i) {
					  const int t = (i + rank) % 2;
					  ASSERT_EQ(rma_win_lock(RMA_LOCK_EXCLUSIVE, t, 0, win), RMA_SUCCESS);
					  int64_t v = read(t);
					  pause(200);
					  ++v;
					  ASSERT_EQ(rma_put(&v, 1, RMA_INT64_T, t, 0, 1, RMA_INT64_T, win), RMA_SUCCESS);
					  ASSERT_EQ(rma_win_unlock(t, win), RMA_SUCCESS);
					  shared.at(t).fetch_add(1);
				  }
			  } else {
				  int moved = 0;
				  for (int i = 0; i < kReads; ++i) {
					  const int t = i % 2;
					  if (rank == 2)
						  ASSERT_EQ(rma_win_lock_all(0, win), RMA_SUCCESS);
					  else
						  ASSERT_EQ(rma_win_lock(RMA_LOCK_SHARED, t, 0, win), RMA_SUCCESS);
					  int64_t first = read(t);
					  pause(20000); /* long epochs: the writers keep trying meanwhile */
					  moved += read(t) != first;
					  ASSERT_EQ(rank == 2 ? rma_win_unlock_all(win) : rma_win_unlock(t, win), RMA_SUCCESS);
				  }
				  EXPECT_EQ(moved, 0) << "a counter changed inside " << (rank == 2 ? "lock_all" : "shared lock")
						      << " epochs";
				  shared.at(2).fetch_add(1);
			  }
			  rma_barrier(RMA_COMM_WORLD);
			  if (rank < 2) {
				  rma_win_sync(win);
				  EXPECT_EQ(*base, shared.at(rank).load()) << "increments were lost on target " << rank;
			  }
			  ASSERT_EQ(rma_win_free(&win), RMA_SUCCESS);
			  ASSERT_EQ(rma_finalize(), RMA_SUCCESS);
		  }));
}

/* Two shared holders at once: each waits, holding its lock, until both are inside. */
TEST(LockTest, SharedLocksOverlap)
{
	EXPECT_RANKS_PASS(runRanks(3, [](int) {
			  ASSERT_EQ(rma_init(nullptr, nullptr), RMA_SUCCESS);
			  SharedWords flags;
			  rma_win win;
			  void *base;
			  ASSERT_EQ(rma_win_allocate(8, 1, RMA_INFO_NULL, RMA_COMM_WORLD, &base, &win), RMA_SUCCESS);
			  if (worldRank() != 0) {
				  ASSERT_EQ(rma_win_lock(RMA_LOCK_SHARED, 0, 0, win), RMA_SUCCESS);
				  flags.at(0).fetch_add(1);
				  EXPECT_TRUE(eventually([&] { return flags.at(0).load() == 2; }))
					  << "the other shared holder never got in: shared locks exclude each other";
				  ASSERT_EQ(rma_win_unlock(0, win), RMA_SUCCESS);
			  }
			  rma_barrier(RMA_COMM_WORLD);
			  ASSERT_EQ(rma_win_free(&win), RMA_SUCCESS);
			  ASSERT_EQ(rma_finalize(), RMA_SUCCESS);
		  }));
}

/*
 * A process may hold locks on several targets. Rank 0 holds target 1
 * exclusively while rank 2 waits in lock_all, then locks target 2 too:
 * both must be granted in turn (a lock_all that kept its count while
 * waiting for rank 0 would refuse rank 0's second lock for ever).
 */
TEST(LockTest, LockAllWaitingDoesNotBlockAHolderLockingASecondTarget)
{
	EXPECT_RANKS_PASS(runRanks(3, [](int) {
			  ASSERT_EQ(rma_init(nullptr, nullptr), RMA_SUCCESS);
			  SharedWords flags; /* 0: rank 0 holds target 1; 1: rank 2 is in lock_all; 2: it got it */
			  rma_win win;
			  void *base;
			  ASSERT_EQ(rma_win_allocate(8, 1, RMA_INFO_NULL, RMA_COMM_WORLD, &base, &win), RMA_SUCCESS);
			  const int rank = worldRank();
			  if (rank == 0) {
				  ASSERT_EQ(rma_win_lock(RMA_LOCK_EXCLUSIVE, 1, 0, win), RMA_SUCCESS);
				  flags.at(0).store(1);
				  ASSERT_TRUE(eventually([&] { return flags.at(1).load() == 1; }));
				  std::this_thread::sleep_for(std::chrono::milliseconds(50)); /* rank 2 waits meanwhile */
				  EXPECT_EQ(flags.at(2).load(), 0) << "lock_all was granted over an exclusive holder";
				  ASSERT_EQ(rma_win_lock(RMA_LOCK_EXCLUSIVE, 2, 0, win), RMA_SUCCESS);
				  ASSERT_EQ(rma_win_unlock(2, win), RMA_SUCCESS);
				  ASSERT_EQ(rma_win_unlock(1, win), RMA_SUCCESS);
			  } else if (rank == 2) {
				  ASSERT_TRUE(eventually([&] { return flags.at(0).load() == 1; }));
				  flags.at(1).store(1);
				  ASSERT_EQ(rma_win_lock_all(0, win), RMA_SUCCESS);
				  flags.at(2).store(1);
				  ASSERT_EQ(rma_win_unlock_all(win), RMA_SUCCESS);
			  }
			  rma_barrier(RMA_COMM_WORLD);
			  EXPECT_EQ(flags.at(2).load(), 1);
			  ASSERT_EQ(rma_win_free(&win), RMA_SUCCESS);
			  ASSERT_EQ(rma_finalize(), RMA_SUCCESS);
		  }));
}

/* While rank 1 holds the exclusive lock, neither a shared locker nor lock_all gets in. */
TEST(LockTest, ExclusiveExcludesSharedAndLockAll)
{
	EXPECT_RANKS_PASS(runRanks(4, [](int) {
			  ASSERT_EQ(rma_init(nullptr, nullptr), RMA_SUCCESS);
			  SharedWords flags; /* 0: exclusive holder inside, 1: it has let go */
			  rma_win win;
			  void *base;
			  ASSERT_EQ(rma_win_allocate(8, 1, RMA_INFO_NULL, RMA_COMM_WORLD, &base, &win), RMA_SUCCESS);
			  const int rank = worldRank();
			  if (rank == 1) {
				  ASSERT_EQ(rma_win_lock(RMA_LOCK_EXCLUSIVE, 0, 0, win), RMA_SUCCESS);
				  flags.at(0).store(1);
				  std::this_thread::sleep_for(std::chrono::milliseconds(100));
				  flags.at(1).store(1);
				  ASSERT_EQ(rma_win_unlock(0, win), RMA_SUCCESS);
			  } else if (rank == 2 || rank == 3) {
				  ASSERT_TRUE(eventually([&] { return flags.at(0).load() == 1; }));
				  if (rank == 2) {
					  ASSERT_EQ(rma_win_lock(RMA_LOCK_SHARED, 0, 0, win), RMA_SUCCESS);
				  }
				  else
					  ASSERT_EQ(rma_win_lock_all(0, win), RMA_SUCCESS);
				  EXPECT_EQ(flags.at(1).load(), 1) << "got in while the exclusive lock was held";
				  ASSERT_EQ(rank == 2 ? rma_win_unlock(0, win) : rma_win_unlock_all(win), RMA_SUCCESS);
			  }
			  rma_barrier(RMA_COMM_WORLD);
			  ASSERT_EQ(rma_win_free(&win), RMA_SUCCESS);
			  ASSERT_EQ(rma_finalize(), RMA_SUCCESS);
		  }));
}

/* An exclusive locker is not starved by a stream of shared lockers. */
TEST(LockTest, SharedStreamDoesNotStarveExclusive)
{
	EXPECT_RANKS_PASS(runRanks(3, [](int) {
			  ASSERT_EQ(rma_init(nullptr, nullptr), RMA_SUCCESS);
			  SharedWords flags; /* 0: exclusive done */
			  rma_win win;
			  void *base;
			  ASSERT_EQ(rma_win_allocate(8, 1, RMA_INFO_NULL, RMA_COMM_WORLD, &base, &win), RMA_SUCCESS);
			  const int rank = worldRank();
			  if (rank == 1 || rank == 2) {
				  /* Overlapping shared holders, back to back, until the exclusive one got through. */
				  auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
				  while (flags.at(0).load() == 0 && std::chrono::steady_clock::now() < deadline) {
					  ASSERT_EQ(rma_win_lock(RMA_LOCK_SHARED, 0, 0, win), RMA_SUCCESS);
					  std::this_thread::sleep_for(std::chrono::microseconds(200));
					  ASSERT_EQ(rma_win_unlock(0, win), RMA_SUCCESS);
				  }
				  EXPECT_EQ(flags.at(0).load(), 1) << "the exclusive locker starved";
			  } else {
				  std::this_thread::sleep_for(std::chrono::milliseconds(20));
				  ASSERT_EQ(rma_win_lock(RMA_LOCK_EXCLUSIVE, 0, 0, win), RMA_SUCCESS);
				  ASSERT_EQ(rma_win_unlock(0, win), RMA_SUCCESS);
				  flags.at(0).store(1);
			  }
			  rma_barrier(RMA_COMM_WORLD);
			  ASSERT_EQ(rma_win_free(&win), RMA_SUCCESS);
			  ASSERT_EQ(rma_finalize(), RMA_SUCCESS);
		  }));
}

/*
 * Truly passive: rank 0 computes (no librma call) for a while; the others
 * lock it, put, get, flush and unlock, and finish before it stops computing.
 */
TEST(LockTest, TargetBusyComputingIsTrulyPassive)
{
	EXPECT_RANKS_PASS(runRanks(3, [](int) {
			  ASSERT_EQ(rma_init(nullptr, nullptr), RMA_SUCCESS);
			  SharedWords flags; /* 0: origins done; 1: target stopped computing */
			  const int rank = worldRank();
			  int64_t *base;
			  rma_win win;
			  ASSERT_EQ(rma_win_allocate(16 * sizeof(int64_t), sizeof(int64_t), RMA_INFO_NULL, RMA_COMM_WORLD,
						     &base, &win),
				    RMA_SUCCESS);
			  rma_barrier(RMA_COMM_WORLD);
			  if (rank == 0) {
				  EXPECT_TRUE(computeUntil(flags, 0, 2)) << "origins could not finish while the target computed";
			  } else {
				  for (int i = 0; i < 200; ++i) {
					  int type = i % 2 ? RMA_LOCK_SHARED : RMA_LOCK_EXCLUSIVE;
					  int64_t v = rank * 100000 + i, got = -1;
					  ASSERT_EQ(rma_win_lock(type, 0, 0, win), RMA_SUCCESS);
					  ASSERT_EQ(rma_put(&v, 1, RMA_INT64_T, 0, rank, 1, RMA_INT64_T, win), RMA_SUCCESS);
					  ASSERT_EQ(rma_win_flush(0, win), RMA_SUCCESS);
					  ASSERT_EQ(rma_get(&got, 1, RMA_INT64_T, 0, rank, 1, RMA_INT64_T, win), RMA_SUCCESS);
					  ASSERT_EQ(rma_win_unlock(0, win), RMA_SUCCESS);
					  ASSERT_EQ(got, v);
				  }
				  ASSERT_EQ(rma_win_lock_all(0, win), RMA_SUCCESS);
				  int64_t last = rank * 100000 + 199;
				  ASSERT_EQ(rma_put(&last, 1, RMA_INT64_T, 0, 8 + rank, 1, RMA_INT64_T, win), RMA_SUCCESS);
				  ASSERT_EQ(rma_win_unlock_all(win), RMA_SUCCESS);
				  flags.at(0).fetch_add(1);
			  }
			  rma_barrier(RMA_COMM_WORLD);
			  if (rank == 0) {
				  rma_win_sync(win);
				  for (int o = 1; o < 3; ++o) {
					  EXPECT_EQ(base[o], o * 100000 + 199);
					  EXPECT_EQ(base[8 + o], o * 100000 + 199);
				  }
			  }
			  ASSERT_EQ(rma_win_free(&win), RMA_SUCCESS);
			  ASSERT_EQ(rma_finalize(), RMA_SUCCESS);
		  }));
}

/* Three windows at once, each in its own mode; then one window through every mode in turn. */
TEST(SyncTest, MixedModesOnWindowsAndSwitchingModesOnOne)
{
	EXPECT_RANKS_PASS(runRanks(4, [](int) {
			  ASSERT_EQ(rma_init(nullptr, nullptr), RMA_SUCCESS);
			  const int rank = worldRank(), size = worldSize();
			  const int right = (rank + 1) % size, left = (rank + size - 1) % size;
			  int *a, *b, *c;
			  rma_win wa, wb, wc;
			  ASSERT_EQ(rma_win_allocate(sizeof(int), sizeof(int), RMA_INFO_NULL, RMA_COMM_WORLD, &a, &wa), RMA_SUCCESS);
			  ASSERT_EQ(rma_win_allocate(sizeof(int), sizeof(int), RMA_INFO_NULL, RMA_COMM_WORLD, &b, &wb), RMA_SUCCESS);
			  ASSERT_EQ(rma_win_allocate(sizeof(int), sizeof(int), RMA_INFO_NULL, RMA_COMM_WORLD, &c, &wc), RMA_SUCCESS);
			  rma_group to = pairGroup(right, right), from = pairGroup(left, left);
			  for (int round = 0; round < 20; ++round) {
				  int v = round * 10 + rank;
				  ASSERT_EQ(rma_win_fence(0, wa), RMA_SUCCESS);
				  ASSERT_EQ(rma_win_lock_all(0, wb), RMA_SUCCESS);
				  ASSERT_EQ(rma_win_post(from, 0, wc), RMA_SUCCESS);
				  ASSERT_EQ(rma_win_start(to, 0, wc), RMA_SUCCESS);
				  ASSERT_EQ(rma_put(&v, 1, RMA_INT, right, 0, 1, RMA_INT, wa), RMA_SUCCESS);
				  ASSERT_EQ(rma_put(&v, 1, RMA_INT, right, 0, 1, RMA_INT, wb), RMA_SUCCESS);
				  ASSERT_EQ(rma_put(&v, 1, RMA_INT, right, 0, 1, RMA_INT, wc), RMA_SUCCESS);
				  ASSERT_EQ(rma_win_complete(wc), RMA_SUCCESS);
				  ASSERT_EQ(rma_win_wait(wc), RMA_SUCCESS);
				  ASSERT_EQ(rma_win_unlock_all(wb), RMA_SUCCESS);
				  ASSERT_EQ(rma_win_fence(RMA_MODE_NOSUCCEED, wa), RMA_SUCCESS);
				  rma_barrier(RMA_COMM_WORLD);
				  rma_win_sync(wb);
				  int expect = round * 10 + left;
				  ASSERT_EQ(*a, expect);
				  ASSERT_EQ(*b, expect);
				  ASSERT_EQ(*c, expect);
				  rma_barrier(RMA_COMM_WORLD);
			  }
			  /* One window, every mode in turn. */
			  int v = 7000 + rank;
			  ASSERT_EQ(rma_win_fence(0, wa), RMA_SUCCESS);
			  ASSERT_EQ(rma_put(&v, 1, RMA_INT, right, 0, 1, RMA_INT, wa), RMA_SUCCESS);
			  ASSERT_EQ(rma_win_fence(RMA_MODE_NOSUCCEED, wa), RMA_SUCCESS);
			  ASSERT_EQ(*a, 7000 + left);
			  rma_barrier(RMA_COMM_WORLD); /* everyone has read before the next epoch writes */
			  ASSERT_EQ(rma_win_lock(RMA_LOCK_EXCLUSIVE, right, 0, wa), RMA_SUCCESS);
			  ++v;
			  ASSERT_EQ(rma_put(&v, 1, RMA_INT, right, 0, 1, RMA_INT, wa), RMA_SUCCESS);
			  ASSERT_EQ(rma_win_unlock(right, wa), RMA_SUCCESS);
			  rma_barrier(RMA_COMM_WORLD);
			  ASSERT_EQ(*a, 7001 + left);
			  ASSERT_EQ(rma_win_post(from, 0, wa), RMA_SUCCESS);
			  ASSERT_EQ(rma_win_start(to, 0, wa), RMA_SUCCESS);
			  ++v;
			  ASSERT_EQ(rma_put(&v, 1, RMA_INT, right, 0, 1, RMA_INT, wa), RMA_SUCCESS);
			  ASSERT_EQ(rma_win_complete(wa), RMA_SUCCESS);
			  ASSERT_EQ(rma_win_wait(wa), RMA_SUCCESS);
			  ASSERT_EQ(*a, 7002 + left);
			  rma_barrier(RMA_COMM_WORLD); /* everyone has read before the next epoch writes */
			  ASSERT_EQ(rma_win_lock_all(0, wa), RMA_SUCCESS);
			  ++v;
			  ASSERT_EQ(rma_put(&v, 1, RMA_INT, right, 0, 1, RMA_INT, wa), RMA_SUCCESS);
			  ASSERT_EQ(rma_win_unlock_all(wa), RMA_SUCCESS);
			  ASSERT_EQ(rma_win_fence(0, wa), RMA_SUCCESS);
			  ASSERT_EQ(*a, 7003 + left);
			  ASSERT_EQ(rma_win_fence(RMA_MODE_NOSUCCEED, wa), RMA_SUCCESS);
			  rma_group_free(&to);
			  rma_group_free(&from);
			  ASSERT_EQ(rma_win_free(&wa), RMA_SUCCESS);
			  ASSERT_EQ(rma_win_free(&wb), RMA_SUCCESS);
			  ASSERT_EQ(rma_win_free(&wc), RMA_SUCCESS);
			  ASSERT_EQ(rma_finalize(), RMA_SUCCESS);
		  }));
}

#define EXPECT_SYNC(call)                                                                    \
	do {                                                                                 \
		int rc_ = (call);                                                            \
		EXPECT_EQ(errorClassOf(rc_), RMA_ERR_RMA_SYNC) << #call << ": " << errorText(rc_); \
	} while (0)

TEST(SyncTest, EveryMisuseIsAnErrorAndTheWindowStaysUsable)
{
	EXPECT_RANKS_PASS(runRanks(2, [](int) {
			  ASSERT_EQ(rma_init(nullptr, nullptr), RMA_SUCCESS);
			  const int rank = worldRank(), peer = 1 - rank;
			  int *base;
			  rma_win win;
			  ASSERT_EQ(rma_win_allocate(4 * sizeof(int), sizeof(int), RMA_INFO_NULL, RMA_COMM_WORLD, &base, &win),
				    RMA_SUCCESS);
			  rma_win_set_errhandler(win, RMA_ERRORS_RETURN);
			  int v = 1;
			  rma_request req;
			  rma_group g = pairGroup(peer, peer);

			  EXPECT_SYNC(rma_put(&v, 1, RMA_INT, peer, 0, 1, RMA_INT, win));
			  EXPECT_SYNC(rma_win_unlock(peer, win));
			  EXPECT_SYNC(rma_win_unlock_all(win));
			  EXPECT_SYNC(rma_win_flush(peer, win));
			  EXPECT_SYNC(rma_win_flush_all(win));
			  EXPECT_SYNC(rma_win_flush_local(peer, win));
			  EXPECT_SYNC(rma_win_flush_local_all(win));
			  EXPECT_SYNC(rma_win_complete(win));
			  EXPECT_SYNC(rma_win_wait(win));
			  int flag;
			  EXPECT_SYNC(rma_win_test(win, &flag));
			  EXPECT_EQ(errorClassOf(rma_win_lock(99, peer, 0, win)), RMA_ERR_LOCKTYPE);
			  EXPECT_EQ(errorClassOf(rma_win_lock(RMA_LOCK_SHARED, 5, 0, win)), RMA_ERR_RANK);
			  EXPECT_EQ(errorClassOf(rma_win_lock(RMA_LOCK_SHARED, peer, RMA_MODE_NOPUT, win)), RMA_ERR_ASSERT);

			  /* Inside a lock epoch. */
			  ASSERT_EQ(rma_win_lock(RMA_LOCK_SHARED, peer, 0, win), RMA_SUCCESS);
			  int rc = rma_win_lock(RMA_LOCK_EXCLUSIVE, peer, 0, win);
			  EXPECT_EQ(errorClassOf(rc), RMA_ERR_RMA_SYNC);
			  EXPECT_NE(errorText(rc).find("already open"), std::string::npos) << errorText(rc);
			  EXPECT_NE(errorText(rc).find("rank " + std::to_string(peer) + " (shared)"), std::string::npos)
				  << errorText(rc);
			  EXPECT_SYNC(rma_put(&v, 1, RMA_INT, rank, 0, 1, RMA_INT, win)); /* not locked */
			  EXPECT_SYNC(rma_win_fence(0, win));
			  EXPECT_SYNC(rma_win_lock_all(0, win));
			  EXPECT_SYNC(rma_win_start(g, 0, win));
			  EXPECT_SYNC(rma_win_free(&win));
			  EXPECT_NE(win, RMA_WIN_NULL);
			  EXPECT_EQ(rma_put(&v, 1, RMA_INT, peer, 0, 1, RMA_INT, win), RMA_SUCCESS);
			  EXPECT_EQ(rma_rput(&v, 1, RMA_INT, peer, 1, 1, RMA_INT, win, &req), RMA_SUCCESS);
			  EXPECT_EQ(rma_wait(&req, RMA_STATUS_IGNORE), RMA_SUCCESS);
			  EXPECT_EQ(req, RMA_REQUEST_NULL);
			  EXPECT_EQ(rma_win_flush(peer, win), RMA_SUCCESS);
			  EXPECT_EQ(rma_win_unlock(peer, win), RMA_SUCCESS);
			  EXPECT_SYNC(rma_win_unlock(peer, win));

			  /* Inside a fence epoch: no request-based operations, no passive flush. */
			  ASSERT_EQ(rma_win_fence(0, win), RMA_SUCCESS);
			  EXPECT_SYNC(rma_rput(&v, 1, RMA_INT, peer, 0, 1, RMA_INT, win, &req));
			  EXPECT_SYNC(rma_win_flush(peer, win));
			  EXPECT_EQ(rma_put(&v, 1, RMA_INT, peer, 2, 1, RMA_INT, win), RMA_SUCCESS);
			  rc = rma_win_lock(RMA_LOCK_SHARED, peer, 0, win);
			  EXPECT_EQ(errorClassOf(rc), RMA_ERR_RMA_SYNC);
			  EXPECT_NE(errorText(rc).find("fence epoch with operations"), std::string::npos) << errorText(rc);
			  ASSERT_EQ(rma_win_fence(0, win), RMA_SUCCESS);
			  /* A fence epoch with no operation gives way to a lock epoch. */
			  ASSERT_EQ(rma_win_lock(RMA_LOCK_SHARED, peer, 0, win), RMA_SUCCESS);
			  ASSERT_EQ(rma_win_unlock(peer, win), RMA_SUCCESS);

			  /* PSCW misuse. */
			  ASSERT_EQ(rma_win_post(g, 0, win), RMA_SUCCESS);
			  EXPECT_SYNC(rma_win_post(g, 0, win));
			  EXPECT_SYNC(rma_win_free(&win));
			  ASSERT_EQ(rma_win_start(g, 0, win), RMA_SUCCESS);
			  EXPECT_SYNC(rma_win_start(g, 0, win));
			  EXPECT_SYNC(rma_win_lock(RMA_LOCK_SHARED, peer, 0, win));
			  EXPECT_SYNC(rma_win_fence(0, win));
			  EXPECT_EQ(rma_put(&v, 1, RMA_INT, peer, 3, 1, RMA_INT, win), RMA_SUCCESS);
			  EXPECT_SYNC(rma_put(&v, 1, RMA_INT, rank, 3, 1, RMA_INT, win)); /* not in the start group */
			  ASSERT_EQ(rma_win_complete(win), RMA_SUCCESS);
			  ASSERT_EQ(rma_win_wait(win), RMA_SUCCESS);
			  EXPECT_EQ(base[3], 1);

			  /* lock_all misuse. */
			  ASSERT_EQ(rma_win_lock_all(0, win), RMA_SUCCESS);
			  EXPECT_SYNC(rma_win_lock_all(0, win));
			  EXPECT_SYNC(rma_win_lock(RMA_LOCK_SHARED, peer, 0, win));
			  EXPECT_EQ(rma_rget(&v, 1, RMA_INT, peer, 0, 1, RMA_INT, win, &req), RMA_SUCCESS);
			  EXPECT_EQ(rma_win_flush_local_all(win), RMA_SUCCESS);
			  ASSERT_EQ(rma_win_unlock_all(win), RMA_SUCCESS);
			  EXPECT_EQ(rma_request_free(&req), RMA_SUCCESS);

			  rma_group_free(&g);
			  ASSERT_EQ(rma_win_free(&win), RMA_SUCCESS);

			  /* no_locks: locking is refused, fences still work. */
			  rma_info info;
			  rma_info_create(&info);
			  rma_info_set(info, "no_locks", "true");
			  ASSERT_EQ(rma_win_allocate(8, 1, info, RMA_COMM_WORLD, &base, &win), RMA_SUCCESS);
			  rma_info_free(&info);
			  rma_win_set_errhandler(win, RMA_ERRORS_RETURN);
			  rc = rma_win_lock(RMA_LOCK_SHARED, peer, 0, win);
			  EXPECT_EQ(errorClassOf(rc), RMA_ERR_RMA_SYNC);
			  EXPECT_NE(errorText(rc).find("no_locks"), std::string::npos) << errorText(rc);
			  EXPECT_SYNC(rma_win_lock_all(0, win));
			  ASSERT_EQ(rma_win_fence(0, win), RMA_SUCCESS);
			  ASSERT_EQ(rma_win_fence(RMA_MODE_NOSUCCEED, win), RMA_SUCCESS);
			  ASSERT_EQ(rma_win_free(&win), RMA_SUCCESS);
			  ASSERT_EQ(rma_finalize(), RMA_SUCCESS);
		  }));
}

TEST(RequestTest, RputRgetAndTheWaitFamily)
{
	EXPECT_RANKS_PASS(runRanks(2, [](int) {
			  ASSERT_EQ(rma_init(nullptr, nullptr), RMA_SUCCESS);
			  const int rank = worldRank(), peer = 1 - rank;
			  int *base;
			  rma_win win;
			  ASSERT_EQ(rma_win_allocate(8 * sizeof(int), sizeof(int), RMA_INFO_NULL, RMA_COMM_WORLD, &base, &win),
				    RMA_SUCCESS);
			  rma_barrier(RMA_COMM_WORLD);
			  ASSERT_EQ(rma_win_lock_all(0, win), RMA_SUCCESS);
			  rma_request reqs[4];
			  int vals[4] = { 10 + rank, 20 + rank, 30 + rank, 40 + rank };
			  for (int i = 0; i < 4; ++i) {
				  ASSERT_EQ(rma_rput(&vals[i], 1, RMA_INT, peer, i, 1, RMA_INT, win, &reqs[i]), RMA_SUCCESS);
			  }
			  ASSERT_EQ(rma_waitall(4, reqs, RMA_STATUSES_IGNORE), RMA_SUCCESS);
			  for (rma_request r : reqs) {
				  EXPECT_EQ(r, RMA_REQUEST_NULL);
			  }
			  ASSERT_EQ(rma_win_flush(peer, win), RMA_SUCCESS);
			  rma_barrier(RMA_COMM_WORLD);
			  int got[4] = { -1, -1, -1, -1 };
			  for (int i = 0; i < 4; ++i) {
				  ASSERT_EQ(rma_rget(&got[i], 1, RMA_INT, peer, i, 1, RMA_INT, win, &reqs[i]), RMA_SUCCESS);
			  }
			  int flag = 0;
			  ASSERT_EQ(rma_testall(4, reqs, &flag, RMA_STATUSES_IGNORE), RMA_SUCCESS);
			  EXPECT_EQ(flag, 1);
			  for (int i = 0; i < 4; ++i) {
				  EXPECT_EQ(got[i], vals[i]);
			  }
			  rma_request one;
			  ASSERT_EQ(rma_rget(&got[0], 1, RMA_INT, rank, 0, 1, RMA_INT, win, &one), RMA_SUCCESS);
			  ASSERT_EQ(rma_test(&one, &flag, RMA_STATUS_IGNORE), RMA_SUCCESS);
			  EXPECT_EQ(flag, 1);
			  EXPECT_EQ(got[0], 10 + peer);
			  rma_request null = RMA_REQUEST_NULL;
			  EXPECT_EQ(rma_wait(&null, RMA_STATUS_IGNORE), RMA_SUCCESS);
			  rma_comm_set_errhandler(RMA_COMM_SELF, RMA_ERRORS_RETURN);
			  rma_request bogus = reinterpret_cast<rma_request>(uintptr_t(0x0700000000000055ull));
			  EXPECT_EQ(errorClassOf(rma_wait(&bogus, RMA_STATUS_IGNORE)), RMA_ERR_REQUEST);
			  ASSERT_EQ(rma_win_unlock_all(win), RMA_SUCCESS);
			  ASSERT_EQ(rma_win_free(&win), RMA_SUCCESS);
			  ASSERT_EQ(rma_finalize(), RMA_SUCCESS);
		  }));
}

/*
 * Rank 1 dies holding the exclusive lock on rank 0. The survivors' lock
 * calls fail with RMA_ERR_PROC_FAILED within seconds instead of hanging.
 */
/* @lock() fails with RMA_ERR_PROC_FAILED naming rank 1, within 10 s. */
template<typename Lock>
void expectFailsNamingRankOne(Lock &&lock)
{
	auto t0 = std::chrono::steady_clock::now();
	int rc = lock();
	double waited = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
	EXPECT_EQ(errorClassOf(rc), RMA_ERR_PROC_FAILED) << errorText(rc);
	EXPECT_NE(errorText(rc).find("rank 1"), std::string::npos) << errorText(rc);
	EXPECT_LT(waited, 10.0);
}

/* The SharedWords word in which the survivors of runWhileRankOneDiesLocking() count themselves. */
constexpr int kSurvivorsDone = 63;

/*
 * An @n-rank job on an 8-byte window (errors returned) whose rank 1 takes a
 * @lockType lock on rank 0 and dies holding it (SIGKILL). Every other rank
 * runs @survivor(flags, win) once rank 1 holds the lock (flags.at(0) is 1),
 * then leaves when all survivors are done (the window cannot be freed
 * collectively any more). EXPECTs rank 1's death and each survivor's
 * passing.
 */
void runWhileRankOneDiesLocking(int n, int lockType, std::function<void(SharedWords &, rma_win)> survivor)
{
	ScratchDir dir;
	std::string okFile = dir.file("ok");
	RanksOptions opts;
	opts.keepGoing = true;
	opts.timeoutSeconds = 60;
	int status = runRanks(
		n,
		[n, lockType, okFile, survivor](int) {
			ASSERT_EQ(rma_init(nullptr, nullptr), RMA_SUCCESS);
			SharedWords flags;
			rma_win win;
			void *base;
			ASSERT_EQ(rma_win_allocate(8, 1, RMA_INFO_NULL, RMA_COMM_WORLD, &base, &win), RMA_SUCCESS);
			rma_win_set_errhandler(win, RMA_ERRORS_RETURN);
			rma_barrier(RMA_COMM_WORLD);
			if (worldRank() == 1) {
				ASSERT_EQ(rma_win_lock(lockType, 0, 0, win), RMA_SUCCESS);
				flags.at(0).store(1);
				raise(SIGKILL);
			}
			ASSERT_TRUE(eventually([&] { return flags.at(0).load() == 1; }));
			survivor(flags, win);
			if (!::testing::Test::HasFailure())
				std::ofstream(okFile + std::to_string(worldRank())) << "ok";
			/* Leave only once every survivor is done, so none blames another's exit. */
			flags.at(kSurvivorsDone).fetch_add(1);
			eventually([&] { return flags.at(kSurvivorsDone).load() == n - 1; });
			_exit(0);
		},
		opts);
	EXPECT_EQ(status, 128 + SIGKILL);
	for (int rank = 0; rank < n; ++rank) {
		if (rank != 1) {
			EXPECT_EQ(librma::test::readFile(okFile + std::to_string(rank)), "ok") << "rank " << rank;
		}
	}
}

TEST(FaultTest, DeadLockHolderGivesProcFailedToWaiters)
{
	runWhileRankOneDiesLocking(3, RMA_LOCK_EXCLUSIVE, [](SharedWords &, rma_win win) {
		expectFailsNamingRankOne([&] {
			return worldRank() == 0 ? rma_win_lock(RMA_LOCK_SHARED, 0, 0, win) : rma_win_lock_all(0, win);
		});
	});
}

/*
 * A dead rank fails only the lock waits it can block. Rank 1 dies holding a
 * shared lock on rank 0. A shared lock that waits for a live exclusive holder
 * is then granted (the dead rank holds nothing that blocks it), while an
 * exclusive lock on rank 0 fails naming rank 1 (its shared lock is never
 * given back).
 */
TEST(FaultTest, ADeadRankFailsOnlyTheLockWaitsItBlocks)
{
	/* flags: 1: rank 2 holds target 3 exclusively; 2: rank 0 is about to wait for it. */
	runWhileRankOneDiesLocking(4, RMA_LOCK_SHARED, [](SharedWords &flags, rma_win win) {
		/* Until this rank sees the death: a lock on rank 1 fails then. */
		ASSERT_TRUE(eventually([&] {
			int rc = rma_win_lock(RMA_LOCK_SHARED, 1, 0, win);
			if (rc == RMA_SUCCESS)
				rma_win_unlock(1, win);
			return errorClassOf(rc) == RMA_ERR_PROC_FAILED;
		}));
		const int rank = worldRank();
		if (rank == 2) {
			ASSERT_EQ(rma_win_lock(RMA_LOCK_EXCLUSIVE, 3, 0, win), RMA_SUCCESS);
			flags.at(1).store(1);
			ASSERT_TRUE(eventually([&] { return flags.at(2).load() == 1; }));
			std::this_thread::sleep_for(std::chrono::milliseconds(100)); /* rank 0 waits meanwhile */
			EXPECT_EQ(rma_win_unlock(3, win), RMA_SUCCESS);
		} else if (rank == 0) {
			ASSERT_TRUE(eventually([&] { return flags.at(1).load() == 1; }));
			flags.at(2).store(1);
			int rc = rma_win_lock(RMA_LOCK_SHARED, 3, 0, win);
			EXPECT_EQ(rc, RMA_SUCCESS) << errorText(rc);
			if (rc == RMA_SUCCESS) {
				EXPECT_EQ(rma_win_unlock(3, win), RMA_SUCCESS);
			}
		} else {
			expectFailsNamingRankOne([&] { return rma_win_lock(RMA_LOCK_EXCLUSIVE, 0, 0, win); });
		}
	});
}

} /* namespace */

namespace {

/* What the ranks of DeadTargetFailsFast share: a mapping made before the fork. */
struct DeathBoard {
	std::atomic<int> dying{ 0 };
	std::atomic<int64_t> diedAtNs{ 0 };
	std::atomic<int64_t> detectNs[4];
};

int64_t nowNs()
{
	return std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now().time_since_epoch())
		.count();
}

} /* namespace */

/*
 * Rank 1 dies (SIGKILL) in the middle of a lock_all epoch. Within a second
 * every operation, flush and synchronization that involves it fails with
 * RMA_ERR_PROC_FAILED in every mode (the launcher's job status page), the
 * ones that do not involve it still work, the survivors free the window
 * (released although it fails), create a new one among themselves, use it,
 * and finalize.
 */
TEST(FaultTest, DeadTargetFailsFastAndSurvivorsGoOn)
{
	void *mem = mmap(nullptr, sizeof(DeathBoard), PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	ASSERT_NE(mem, MAP_FAILED);
	auto *board = new (mem) DeathBoard{};
	ScratchDir dir;
	std::string okFile = dir.file("ok");
	RanksOptions opts;
	opts.keepGoing = true;
	opts.timeoutSeconds = 60;
	int status = runRanks(
		4,
		[board, okFile](int) {
			ASSERT_EQ(rma_init(nullptr, nullptr), RMA_SUCCESS);
			const int rank = worldRank();
			rma_comm survivors;
			ASSERT_EQ(rma_comm_split(RMA_COMM_WORLD, rank == 1 ? 1 : 0, rank, &survivors), RMA_SUCCESS);
			rma_win win;
			int64_t *base;
			ASSERT_EQ(rma_win_allocate(64, 8, RMA_INFO_NULL, RMA_COMM_WORLD, &base, &win), RMA_SUCCESS);
			rma_win_set_errhandler(win, RMA_ERRORS_RETURN);
			ASSERT_EQ(rma_win_lock_all(0, win), RMA_SUCCESS);
			rma_barrier(RMA_COMM_WORLD);
			if (rank == 1) {
				board->diedAtNs.store(nowNs());
				board->dying.store(1);
				raise(SIGKILL);
			}
			ASSERT_TRUE(eventually([&] { return board->dying.load() == 1; }));
			int64_t v = rank, r = 0, c = 0;
			/* Keep operating on rank 1 until the failure shows. */
			int rc;
			do {
				rc = rma_put(&v, 1, RMA_INT64_T, 1, 0, 1, RMA_INT64_T, win);
				if (rc == RMA_SUCCESS)
					rc = rma_win_flush(1, win);
			} while (rc == RMA_SUCCESS && nowNs() - board->diedAtNs.load() < 5'000'000'000);
			board->detectNs[rank].store(nowNs() - board->diedAtNs.load());
			ASSERT_EQ(errorClassOf(rc), RMA_ERR_PROC_FAILED) << errorText(rc);
			EXPECT_NE(errorText(rc).find("rank 1"), std::string::npos) << errorText(rc);
			EXPECT_LT(board->detectNs[rank].load(), 1'000'000'000) << "the failure took more than 1 s to show";

			/* Every kind of operation to rank 1 fails the same way. */
			rma_request req;
			EXPECT_EQ(errorClassOf(rma_put(&v, 1, RMA_INT64_T, 1, 0, 1, RMA_INT64_T, win)), RMA_ERR_PROC_FAILED);
			EXPECT_EQ(errorClassOf(rma_get(&r, 1, RMA_INT64_T, 1, 0, 1, RMA_INT64_T, win)), RMA_ERR_PROC_FAILED);
			EXPECT_EQ(errorClassOf(rma_accumulate(&v, 1, RMA_INT64_T, 1, 0, 1, RMA_INT64_T, RMA_SUM, win)),
				  RMA_ERR_PROC_FAILED);
			EXPECT_EQ(errorClassOf(rma_get_accumulate(&v, 1, RMA_INT64_T, &r, 1, RMA_INT64_T, 1, 0, 1,
								  RMA_INT64_T, RMA_SUM, win)),
				  RMA_ERR_PROC_FAILED);
			EXPECT_EQ(errorClassOf(rma_fetch_and_op(&v, &r, RMA_INT64_T, 1, 0, RMA_SUM, win)),
				  RMA_ERR_PROC_FAILED);
			EXPECT_EQ(errorClassOf(rma_compare_and_swap(&v, &c, &r, RMA_INT64_T, 1, 0, win)),
				  RMA_ERR_PROC_FAILED);
			EXPECT_EQ(errorClassOf(rma_rput(&v, 1, RMA_INT64_T, 1, 0, 1, RMA_INT64_T, win, &req)),
				  RMA_ERR_PROC_FAILED);
			EXPECT_EQ(errorClassOf(rma_win_flush(1, win)), RMA_ERR_PROC_FAILED);
			EXPECT_EQ(errorClassOf(rma_win_flush_all(win)), RMA_ERR_PROC_FAILED);
			/* Operations that do not involve rank 1 still work. */
			const int other = rank == 0 ? 2 : 0;
			EXPECT_EQ(rma_fetch_and_op(&v, &r, RMA_INT64_T, other, 1, RMA_SUM, win), RMA_SUCCESS);
			EXPECT_EQ(rma_win_flush(other, win), RMA_SUCCESS);
			/* The epoch ends although the unlock reports the failure. */
			EXPECT_EQ(errorClassOf(rma_win_unlock_all(win)), RMA_ERR_PROC_FAILED);
			EXPECT_EQ(errorClassOf(rma_win_fence(0, win)), RMA_ERR_PROC_FAILED);
			EXPECT_EQ(errorClassOf(rma_win_lock(RMA_LOCK_SHARED, 1, 0, win)), RMA_ERR_PROC_FAILED);
			EXPECT_EQ(errorClassOf(rma_win_lock_all(0, win)), RMA_ERR_PROC_FAILED);
			rma_group world, dead;
			rma_comm_group(RMA_COMM_WORLD, &world);
			const int one = 1;
			rma_group_incl(world, 1, &one, &dead);
			EXPECT_EQ(errorClassOf(rma_win_start(dead, 0, win)), RMA_ERR_PROC_FAILED);
			EXPECT_EQ(errorClassOf(rma_win_post(dead, 0, win)), RMA_ERR_PROC_FAILED);
			rma_group_free(&dead);
			rma_group_free(&world);
			/* A lock on a live rank works. */
			EXPECT_EQ(rma_win_lock(RMA_LOCK_SHARED, other, 0, win), RMA_SUCCESS);
			EXPECT_EQ(rma_win_unlock(other, win), RMA_SUCCESS);

			/* Free releases the window although the barrier cannot happen. */
			EXPECT_EQ(errorClassOf(rma_win_free(&win)), RMA_ERR_PROC_FAILED);
			EXPECT_EQ(win, RMA_WIN_NULL);

			/* The survivors make a new window among themselves and use it. */
			int srank = -1, ssize = 0;
			rma_comm_rank(survivors, &srank);
			rma_comm_size(survivors, &ssize);
			ASSERT_EQ(ssize, 3);
			int64_t *mine;
			ASSERT_EQ(rma_win_allocate(8, 8, RMA_INFO_NULL, survivors, &mine, &win), RMA_SUCCESS);
			ASSERT_EQ(rma_win_fence(0, win), RMA_SUCCESS);
			int64_t val = 100 + srank;
			ASSERT_EQ(rma_put(&val, 1, RMA_INT64_T, (srank + 1) % ssize, 0, 1, RMA_INT64_T, win), RMA_SUCCESS);
			ASSERT_EQ(rma_win_fence(0, win), RMA_SUCCESS);
			EXPECT_EQ(*mine, 100 + (srank + ssize - 1) % ssize);
			ASSERT_EQ(rma_win_free(&win), RMA_SUCCESS);
			ASSERT_EQ(rma_comm_free(&survivors), RMA_SUCCESS);
			EXPECT_EQ(rma_finalize(), RMA_SUCCESS);
			if (!::testing::Test::HasFailure())
				std::ofstream(okFile + std::to_string(rank)) << "ok";
		},
		opts);
	EXPECT_EQ(status, 128 + SIGKILL);
	for (int rank : { 0, 2, 3 }) {
		EXPECT_EQ(librma::test::readFile(okFile + std::to_string(rank)), "ok") << "rank " << rank;
		std::printf("rank %d saw the death after %.3f ms\n", rank, board->detectNs[rank].load() / 1e6);
	}
	munmap(mem, sizeof(DeathBoard));
}
