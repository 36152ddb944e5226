/* SPDX-License-Identifier: MIT */
/* The C++ API: RAII windows, typed spans, errors as values. */
#include <gtest/gtest.h>

#include <array>
#include <numeric>
#include <vector>

#include <rma/rma.hpp>

#include "support/multiproc.h"

namespace {

using librma::test::runRanks;

TEST(CxxApiTest, WindowRoundTripAndErrorsAsValues)
{
	EXPECT_RANKS_PASS(runRanks(2, [](int) {
			  rma::Environment env;
			  ASSERT_TRUE(env.status().ok());
			  rma::Comm world = rma::Comm::world();
			  int peer = 1 - world.rank();
			  {
				  auto win = rma::Window::allocate(16 * sizeof(long), sizeof(long));
				  ASSERT_TRUE(win.ok()) << win.status().message();
				  std::span<long> local = win->local<long>();
				  ASSERT_EQ(local.size(), 16u);
				  std::array<long, 16> data;
				  std::iota(data.begin(), data.end(), 100L * world.rank());
				  ASSERT_TRUE(win->fence().ok());
				  ASSERT_TRUE(win->put(std::span<const long>(data), peer, 0).ok());
				  ASSERT_TRUE(win->fence().ok());
				  for (int i = 0; i < 16; ++i) {
					  EXPECT_EQ(local[i], 100L * peer + i);
				  }
				  std::vector<long> back(16);
				  ASSERT_TRUE(win->get(std::span<long>(back), peer, 0).ok());
				  ASSERT_TRUE(win->fence().ok());
				  EXPECT_TRUE(std::equal(back.begin(), back.end(), data.begin()));

				  /* An error comes back as a value with a message. */
				  rma::Status s = win->put(1L, peer, 16);
				  EXPECT_FALSE(s.ok());
				  EXPECT_EQ(s.errorClass(), RMA_ERR_RMA_RANGE);
				  EXPECT_NE(s.message().find("rma_put"), std::string::npos) << s.message();
				  ASSERT_TRUE(win->fence(RMA_MODE_NOSUCCEED).ok());
				  rma::Info used = win->info();
				  EXPECT_EQ(used.get("rma_memory").value_or(""), "segment");
			  } /* freed here, collectively */

			  /* Creation errors are values too, and the job goes on. */
			  auto bad = rma::Window::allocate(std::size_t(1) << 50);
			  EXPECT_FALSE(bad.ok());
			  EXPECT_EQ(bad.status().errorClass(), RMA_ERR_NO_MEM);

			  std::vector<int> mem(4, 0);
			  auto created = rma::Window::create(std::span<int>(mem));
			  ASSERT_TRUE(created.ok());
			  ASSERT_TRUE(created->fence().ok());
			  ASSERT_TRUE(created->put(7 + world.rank(), peer, 3).ok());
			  ASSERT_TRUE(created->fence().ok());
			  EXPECT_EQ(mem[3], 7 + peer);
		  }));
}

TEST(CxxApiTest, LockGuardAndPassiveTarget)
{
	EXPECT_RANKS_PASS(runRanks(2, [](int) {
		rma::Environment env;
		ASSERT_TRUE(env.status().ok());
		rma::Comm world = rma::Comm::world();
		int peer = 1 - world.rank();
		auto win = rma::Window::allocate(4 * sizeof(int), sizeof(int));
		ASSERT_TRUE(win.ok());
		{
			auto guard = win->lockGuard(peer, RMA_LOCK_EXCLUSIVE);
			ASSERT_TRUE(guard.status().ok()) << guard.status().message();
			ASSERT_TRUE(win->put(40 + world.rank(), peer, 2).ok());
			ASSERT_TRUE(win->flush(peer).ok());
		} /* unlocked here */
		/* Outside the epoch, operations are refused, as values. */
		rma::Status outside = win->put(1, peer, 0);
		EXPECT_EQ(outside.errorClass(), RMA_ERR_RMA_SYNC);
		ASSERT_TRUE(world.barrier().ok());
		ASSERT_TRUE(win->sync().ok());
		EXPECT_EQ(win->local<int>()[2], 40 + peer);
		ASSERT_TRUE(win->lockAll().ok());
		int got = 0;
		ASSERT_TRUE(win->get(std::span<int>(&got, 1), peer, 2).ok());
		ASSERT_TRUE(win->flushLocal().ok());
		ASSERT_TRUE(win->unlockAll().ok());
		EXPECT_EQ(got, 40 + world.rank());
		ASSERT_TRUE(world.barrier().ok());
	}));
}

TEST(CxxApiTest, AccumulateFamily)
{
	EXPECT_RANKS_PASS(runRanks(2, [](int) {
		rma::Environment env;
		ASSERT_TRUE(env.status().ok());
		rma::Comm world = rma::Comm::world();
		auto win = rma::Window::allocate(8 * sizeof(int64_t), sizeof(int64_t));
		ASSERT_TRUE(win.ok());
		for (int64_t &v : win->local<int64_t>())
			v = 0;
		ASSERT_TRUE(world.barrier().ok());
		ASSERT_TRUE(win->lockAll().ok());
		int64_t ticket = -1;
		ASSERT_TRUE(win->fetchAndOp<int64_t>(1, &ticket, 0, 0, RMA_SUM).ok());
		const int64_t ones[4] = { 1, 2, 3, 4 };
		ASSERT_TRUE(win->accumulate(std::span<const int64_t>(ones), 0, 1, RMA_SUM).ok());
		ASSERT_TRUE(win->flush(0).ok());
		EXPECT_TRUE(ticket == 0 || ticket == 1) << ticket;
		ASSERT_TRUE(world.barrier().ok());
		int64_t seen[4] = {};
		ASSERT_TRUE(win->getAccumulate(std::span<const int64_t>(), std::span<int64_t>(seen), 0, 1, RMA_NO_OP).ok());
		ASSERT_TRUE(win->flush(0).ok());
		for (int k = 0; k < 4; ++k) {
			EXPECT_EQ(seen[k], 2 * ones[k]);
		}
		int64_t old = -1;
		ASSERT_TRUE(win->compareAndSwap<int64_t>(100 + world.rank(), 2, &old, 0, 0).ok());
		ASSERT_TRUE(win->flush(0).ok());
		ASSERT_TRUE(win->unlockAll().ok());
		ASSERT_TRUE(world.barrier().ok());
		if (world.rank() == 0) {
			ASSERT_TRUE(win->sync().ok());
			int64_t final = win->local<int64_t>()[0];
			EXPECT_TRUE(final == 100 || final == 101) << final; /* exactly one CAS won */
		}
		/* A wrong op/type pairing is an error value. */
		ASSERT_TRUE(win->lockAll().ok());
		double d = 0;
		rma::Status bad = win->fetchAndOp<double>(1.0, &d, 0, 0, RMA_BAND);
		EXPECT_EQ(bad.errorClass(), RMA_ERR_OP);
		ASSERT_TRUE(win->unlockAll().ok());
		ASSERT_TRUE(world.barrier().ok());
	}));
}

} /* namespace */
