/* SPDX-License-Identifier: MIT */
/* The C++ API: RAII windows, typed spans, errors as values. */
#include <gtest/gtest.h>

#include <array>
#include <cstdlib>
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

/* Spans of any constness, vectors, arrays and single values each pick the right overload. */
TEST(CxxApiTest, RangesAndValuesPickTheirOverloads)
{
	EXPECT_RANKS_PASS(runRanks(2, [](int) {
		rma::Environment env;
		ASSERT_TRUE(env.status().ok());
		const int rank = rma::Comm::world().rank(), peer = 1 - rank;
		auto win = rma::Window::allocate(8 * sizeof(int), sizeof(int));
		ASSERT_TRUE(win.ok());
		std::vector<int> v{ 10 * rank, 10 * rank + 1 };
		std::array<int, 2> a{ 10 * rank + 2, 10 * rank + 3 };
		const int one = 10 * rank + 4;
		ASSERT_TRUE(win->fence().ok());
		EXPECT_TRUE(win->put(std::span(v), peer, 0).ok()); /* std::span<int>: was the value overload */
		EXPECT_TRUE(win->put(a, peer, 2).ok());
		EXPECT_TRUE(win->put(one, peer, 4).ok());
		EXPECT_TRUE(win->accumulate(std::vector<int>{ 5, 5 }, peer, 5, RMA_SUM).ok());
		ASSERT_TRUE(win->fence().ok());
		std::span<int> local = win->local<int>();
		EXPECT_EQ(local[0], 10 * peer);
		EXPECT_EQ(local[1], 10 * peer + 1);
		EXPECT_EQ(local[2], 10 * peer + 2);
		EXPECT_EQ(local[3], 10 * peer + 3);
		EXPECT_EQ(local[4], 10 * peer + 4);
		EXPECT_EQ(local[5], 5);
		std::vector<int> back(2);
		EXPECT_TRUE(win->get(back, peer, 0).ok());
		ASSERT_TRUE(win->fence(RMA_MODE_NOSUCCEED).ok());
		EXPECT_EQ(back[0], 10 * rank);
	}));
}

TEST(CxxApiTest, GroupsAndRequests)
{
	EXPECT_RANKS_PASS(runRanks(3, [](int) {
		rma::Environment env;
		ASSERT_TRUE(env.status().ok());
		const int rank = rma::Comm::world().rank();
		auto world = rma::Group::of(rma::Comm::world());
		ASSERT_TRUE(world.ok());
		EXPECT_EQ(world->size(), 3);
		EXPECT_EQ(world->rank(), rank);
		const int others[] = { 2, 0 };
		auto pair = world->incl(others);
		ASSERT_TRUE(pair.ok());
		EXPECT_EQ(pair->size(), 2);
		auto in = pair->translate(std::vector<int>{ 0, 1 }, *world);
		ASSERT_TRUE(in.ok());
		EXPECT_EQ((*in), (std::vector<int>{ 2, 0 }));
		const int first[] = { 0 };
		auto rest = world->excl(first);
		ASSERT_TRUE(rest.ok());
		EXPECT_EQ(rest->size(), 2);
		EXPECT_EQ(rest->rank(), rank == 0 ? RMA_UNDEFINED : rank - 1);

		auto win = rma::Window::allocate(4 * sizeof(long), sizeof(long));
		ASSERT_TRUE(win.ok());
		auto wg = win->group();
		ASSERT_TRUE(wg.ok());
		EXPECT_EQ(wg->size(), 3);
		/* PSCW with Groups: rank 0 exposes to 1 and 2, which write into it. */
		if (rank == 0) {
			const int writers[] = { 1, 2 };
			auto g = world->incl(writers);
			ASSERT_TRUE(win->post(*g).ok());
			ASSERT_TRUE(win->wait().ok());
			EXPECT_EQ(win->local<long>()[1], 1);
			EXPECT_EQ(win->local<long>()[2], 2);
		} else {
			const int target[] = { 0 };
			auto g = world->incl(target);
			ASSERT_TRUE(win->start(*g).ok());
			ASSERT_TRUE(win->put(long(rank), 0, rank).ok());
			ASSERT_TRUE(win->complete().ok());
		}
		ASSERT_TRUE(rma::Comm::world().barrier().ok());
		/* Requests: wait, test, and a dropped request that the unlock still completes. */
		ASSERT_TRUE(win->lockAll().ok());
		std::array<long, 1> v{ 40 + rank };
		auto r = win->rput(v, (rank + 1) % 3, 3);
		ASSERT_TRUE(r.ok()) << r.status().message();
		EXPECT_TRUE(r->active());
		EXPECT_TRUE(r->wait().ok());
		EXPECT_FALSE(r->active());
		std::vector<long> got(1, -1);
		auto g2 = win->rget(got, (rank + 1) % 3, 0);
		ASSERT_TRUE(g2.ok());
		auto done = g2->test();
		ASSERT_TRUE(done.ok());
		EXPECT_TRUE(*done);
		{
			auto dropped = win->rput(v, (rank + 2) % 3, 0);
			ASSERT_TRUE(dropped.ok());
		}
		ASSERT_TRUE(win->unlockAll().ok());
		ASSERT_TRUE(rma::Comm::world().barrier().ok());
		EXPECT_EQ(win->local<long>()[3], 40 + (rank + 2) % 3);
		EXPECT_EQ(win->local<long>()[0], 40 + (rank + 1) % 3);
	}));
}

/* value() on an error has no value: it says why and aborts, instead of undefined behaviour. */
TEST(CxxApiDeathTest, ValueOfAnErrorAbortsWithTheMessage)
{
	EXPECT_DEATH(
		{
			rma::Result<int> r{ rma::Status(RMA_ERR_RANK) };
			(void)r.value();
		},
		"rma::Result::value\\(\\) called on an error: RMA_ERR_RANK");
}

/* rma.hpp refuses a C++ below 20 with a message, not a page of template errors. */
TEST(CxxApiTest, HeaderNeedsCxx20)
{
	const char *source = std::getenv("RMA_SOURCE_ROOT");
	ASSERT_NE(source, nullptr);
	librma::test::CommandResult r = librma::test::runCommand(
		{ "/bin/sh", "-c",
		  std::string("echo '#include <rma/rma.hpp>' | c++ -std=c++17 -fsyntax-only -I'") + source +
			  "/include' -x c++ - 2>&1" });
	EXPECT_NE(r.status, 0);
	EXPECT_NE(r.out.find("librma's C++ API (rma/rma.hpp) needs C++20"), std::string::npos) << r.out;
}

} /* namespace */
