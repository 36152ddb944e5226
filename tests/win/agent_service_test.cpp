/* SPDX-License-Identifier: MIT */
/*
 * Agent mode (RMA_PROGRESS=agent, issue #15): a host's agents serve the
 * accumulate rings of every window, whether or not their process is a
 * member, and each NUMA node has its own agent.
 *
 * Each case makes the agent the only possible consumer of a ring: the
 * origin queues a ring accumulate (a ring-only window) and then waits for
 * a flag without any librma call, the target reads its own memory without
 * any librma call, so the value can only appear if an agent applied it.
 * Without an agent serving the window (the case before agents read the
 * served directory) the target waits out its bound and the test fails.
 *
 * AgentFaultTest kills the agent (rmarun --keep-going): holding a ring of
 * a window its process is no member of (a test hook), the waiting origin
 * must get RMA_ERR_PROC_FAILED instead of waiting for ever; idle, its
 * rings must fall back to the origins.
 */
#include <gtest/gtest.h>
#include <sched.h>
#include <signal.h>

#include <atomic>
#include <chrono>
#include <cstdint>
#include <cstdlib>
#include <string>
#include <thread>

#include <rma/rma.h>

#include "core/core.h"
#include "numa/topology.h"
#include "support/multiproc.h"
#include "win/agent_service.h"
#include "win/window_test_util.h"

#include <new>

using namespace rmatest;

namespace {

/* Until @word (in memory another process writes) reaches @value, at most 20 s, with no librma call. */
bool waitForValue(const int64_t *word, int64_t value)
{
	auto end = std::chrono::steady_clock::now() + std::chrono::seconds(20);
	std::atomic_ref<const int64_t> w(*word);
	while (w.load(std::memory_order_acquire) != value && std::chrono::steady_clock::now() < end)
		std::this_thread::sleep_for(std::chrono::microseconds(50));
	return w.load(std::memory_order_acquire) == value;
}

/* Flags in memory the forked ranks inherit: no window of their own (the agents would serve it too). */
struct Flags {
	std::atomic<int64_t> at[8];
};

/* Until @flag reaches @value, at most 20 s, computing (no librma call). */
bool spinUntil(std::atomic<int64_t> &flag, int64_t value)
{
	volatile double x = 1.0;
	auto end = std::chrono::steady_clock::now() + std::chrono::seconds(20);
	while (flag.load(std::memory_order_acquire) < value && std::chrono::steady_clock::now() < end)
		for (int i = 0; i < 1000; ++i)
			x = x * 1.0000001 + 1e-9;
	return flag.load(std::memory_order_acquire) >= value;
}

/* Until the agent in this process has skipped @targets targets (not its node's), at most 10 s. */
bool agentSkips(int targets)
{
	auto end = std::chrono::steady_clock::now() + std::chrono::seconds(10);
	while (librma::agentServiceStats().skipped != targets && std::chrono::steady_clock::now() < end)
		std::this_thread::sleep_for(std::chrono::milliseconds(1));
	return librma::agentServiceStats().skipped == targets;
}

/* Until the agent in this process serves @rings rings, at most 10 s. */
bool agentServes(int rings)
{
	auto end = std::chrono::steady_clock::now() + std::chrono::seconds(10);
	while (librma::agentServiceStats().rings != rings && std::chrono::steady_clock::now() < end)
		std::this_thread::sleep_for(std::chrono::milliseconds(1));
	return librma::agentServiceStats().rings == rings;
}

void setAgentMode()
{
	setenv("RMA_PROGRESS", "agent", 1);
	unsetenv("RMA_PROGRESS_CORE");
	unsetenv("RMA_ACC_PATH");
}

/* A ring-only window: every accumulate is queued for the ring's consumer. */
rma_info ringInfo()
{
	rma_info info;
	EXPECT_EQ(rma_info_create(&info), RMA_SUCCESS);
	EXPECT_EQ(rma_info_set(info, "rma_accumulate_path", "ring"), RMA_SUCCESS);
	return info;
}

/*
 * World rank 0 runs the host's agent (one NUMA node) but is no member of
 * the window of ranks 1 and 2: its agent serves the window anyway.
 */
TEST(AgentServiceTest, TheAgentServesAWindowItsProcessIsNoMemberOf)
{
	librma::test::SharedMemory memory(sizeof(Flags));
	ASSERT_NE(memory.data(), nullptr);
	Flags &flags = *new (memory.data()) Flags{};
	EXPECT_RANKS_PASS(librma::test::runRanks(3, [&flags](int) {
		setAgentMode();
		ASSERT_EQ(rma_init(nullptr, nullptr), RMA_SUCCESS);
		const int rank = worldRank();
		EXPECT_EQ(librma::agentWorldRank(), 0);
		EXPECT_EQ(librma::isHostAgent(), rank == 0);
		/* flags [0]: the target saw the value; [1]: the window is freed; [2]: the agent checked */
		rma_comm pair;
		ASSERT_EQ(rma_comm_split(RMA_COMM_WORLD, rank == 0 ? RMA_UNDEFINED : 1, rank, &pair), RMA_SUCCESS);
		if (rank == 0) {
			EXPECT_TRUE(spinUntil(flags.at[0], 1)) << "the target never saw the accumulate applied";
			/* Rank 2's ring (the one target with memory) is served by this process. */
			librma::AgentServiceStats s = librma::agentServiceStats();
			EXPECT_EQ(s.rings, 1) << "windows " << s.windows << ", skipped " << s.skipped;
			EXPECT_EQ(s.windows, 1);
			EXPECT_EQ(s.skipped, 0);
			flags.at[2].store(1);
			EXPECT_TRUE(spinUntil(flags.at[1], 1));
			/* The freed window's ring was withdrawn: the agent drops it at its next pass. */
			EXPECT_TRUE(agentServes(0));
			EXPECT_EQ(librma::agentServiceStats().windows, 0);
		} else {
			rma_info info = ringInfo();
			int64_t *base = nullptr;
			rma_win win;
			ASSERT_EQ(rma_win_allocate(rank == 2 ? 64 : 0, 8, info, pair, &base, &win), RMA_SUCCESS);
			rma_info_free(&info);
			ASSERT_EQ(rma_barrier(pair), RMA_SUCCESS);
			if (rank == 1) {
				const int64_t v[2] = { 5, 7 };
				ASSERT_EQ(rma_win_lock_all(0, win), RMA_SUCCESS);
				ASSERT_EQ(rma_accumulate(v, 2, RMA_INT64_T, 1, 2, 2, RMA_INT64_T, RMA_SUM, win), RMA_SUCCESS);
				/* No librma call until the target has seen it: only the agent can apply it. */
				EXPECT_TRUE(spinUntil(flags.at[0], 1));
				ASSERT_EQ(rma_win_unlock_all(win), RMA_SUCCESS);
			} else {
				EXPECT_TRUE(waitForValue(base + 3, 7)) << "no agent applied the queued accumulate";
				EXPECT_EQ(std::atomic_ref<int64_t>(base[2]).load(), 5);
				flags.at[0].fetch_add(1);
			}
			/* Freed once the agent has looked at what it serves. */
			EXPECT_TRUE(spinUntil(flags.at[2], 1));
			ASSERT_EQ(rma_win_free(&win), RMA_SUCCESS);
			ASSERT_EQ(rma_comm_free(&pair), RMA_SUCCESS);
			if (rank == 1)
				flags.at[1].fetch_add(1);
		}
		rma_barrier(RMA_COMM_WORLD);
		ASSERT_EQ(rma_finalize(), RMA_SUCCESS);
	}));
}

/*
 * Two NUMA nodes (an injected topology over this host's CPUs 0 and 1):
 * ranks 0 and 2 bound to CPU 0 (node 0), ranks 1 and 3 to CPU 1 (node 1).
 * Node 0's agent runs in rank 0, node 1's in rank 1; the window of ranks 2
 * and 3 has one target on each node, and each node's agent serves its own.
 */
TEST(AgentServiceTest, EachNumaNodeHasAnAgentServingTheTargetsOnIt)
{
	if (sysconf(_SC_NPROCESSORS_ONLN) < 2)
		GTEST_SKIP() << "needs two CPUs";
	librma::test::SharedMemory memory(sizeof(Flags));
	ASSERT_NE(memory.data(), nullptr);
	Flags &flags = *new (memory.data()) Flags{};
	EXPECT_RANKS_PASS(librma::test::runRanks(4, [&flags](int early) {
		setAgentMode();
		setenv("HWLOC_SYNTHETIC", "numa:2 core:1 pu:1", 1);
		unsetenv("RMA_TOPOLOGY");
		librma::Topology::resetSystemForTesting();
		cpu_set_t set;
		CPU_ZERO(&set);
		/* Bound before rma_init, as a launcher binds: the world rank is the launcher's. */
		CPU_SET(early % 2, &set);
		ASSERT_EQ(sched_setaffinity(0, sizeof(set), &set), 0);
		ASSERT_EQ(rma_init(nullptr, nullptr), RMA_SUCCESS);
		const int rank = worldRank();
		ASSERT_EQ(rank, early);
		ASSERT_EQ(librma::Topology::system().nodeCount(), 2);
		EXPECT_EQ(librma::boundNode(librma::Topology::system()), rank % 2);
		EXPECT_EQ(librma::agentWorldRank(0), 0);
		EXPECT_EQ(librma::agentWorldRank(1), 1);
		EXPECT_EQ(librma::agentWorldRank(-1), 0) << "the default agent is the lowest node's";
		EXPECT_EQ(librma::isHostAgent(), rank < 2);

		/* flags [0], [1]: targets 2 and 3 saw their values; [2]: the pair is done; [3]: agents checked */
		rma_comm pair;
		ASSERT_EQ(rma_comm_split(RMA_COMM_WORLD, rank < 2 ? RMA_UNDEFINED : 1, rank, &pair), RMA_SUCCESS);
		if (rank < 2) {
			EXPECT_TRUE(spinUntil(flags.at[0], 1));
			EXPECT_TRUE(spinUntil(flags.at[1], 1));
			/*
			 * The other node's target may have been published after this
			 * agent's last rescan (its own target was served already): wait
			 * for the rescan that skips it (seen once under ThreadSanitizer).
			 */
			EXPECT_TRUE(agentSkips(1));
			librma::AgentServiceStats s = librma::agentServiceStats();
			/* Each agent serves its node's target of the pair, and skips the other node's. */
			EXPECT_EQ(s.rings, 1) << "windows " << s.windows << ", skipped " << s.skipped;
			EXPECT_EQ(s.skipped, 1);
			flags.at[3].fetch_add(1);
			EXPECT_TRUE(spinUntil(flags.at[2], 2));
			EXPECT_TRUE(agentServes(0));
		} else {
			rma_info info = ringInfo();
			int64_t *base = nullptr;
			rma_win win;
			ASSERT_EQ(rma_win_allocate(64, 8, info, pair, &base, &win), RMA_SUCCESS);
			rma_info_free(&info);
			ASSERT_EQ(rma_win_get_info(win, &info), RMA_SUCCESS);
			char server[32] = {};
			int flag = 0;
			ASSERT_EQ(rma_info_get(info, "rma_progress_server", sizeof server - 1, server, &flag), RMA_SUCCESS);
			EXPECT_TRUE(flag);
			EXPECT_STREQ(server, rank == 2 ? "agent:0" : "agent:1");
			rma_info_free(&info);
			ASSERT_EQ(rma_barrier(pair), RMA_SUCCESS);
			const int other = rank == 2 ? 1 : 0; /* in the pair */
			const int64_t v = 10 + rank;
			ASSERT_EQ(rma_win_lock_all(0, win), RMA_SUCCESS);
			ASSERT_EQ(rma_accumulate(&v, 1, RMA_INT64_T, other, 4, 1, RMA_INT64_T, RMA_SUM, win), RMA_SUCCESS);
			/* Our own value comes from the other rank, applied by our node's agent. */
			EXPECT_TRUE(waitForValue(base + 4, 10 + (rank == 2 ? 3 : 2))) << "rank " << rank;
			flags.at[rank - 2].fetch_add(1);
			EXPECT_TRUE(spinUntil(flags.at[rank == 2 ? 1 : 0], 1));
			/* Freed once both agents have looked at what they serve. */
			EXPECT_TRUE(spinUntil(flags.at[3], 2));
			ASSERT_EQ(rma_win_unlock_all(win), RMA_SUCCESS);
			ASSERT_EQ(rma_win_free(&win), RMA_SUCCESS);
			ASSERT_EQ(rma_comm_free(&pair), RMA_SUCCESS);
			flags.at[2].fetch_add(1);
		}
		rma_barrier(RMA_COMM_WORLD);
		ASSERT_EQ(rma_finalize(), RMA_SUCCESS);
	}));
}

/* ---- The agent's death (rmarun --keep-going) -------------------------------- */

/* Flags the agent fault cases share with their forked ranks (a mapping made before the fork). */
struct DeathFlags {
	std::atomic<int64_t> stalled{ 0 }; /* the agent died holding the ring's consumer role */
	std::atomic<int64_t> dead{ 0 };    /* the idle agent is about to die */
	std::atomic<int64_t> done{ 0 };    /* survivors past their checks */
};

/*
 * World rank 0 runs the host's agent and is no member of the window of
 * ranks 1 and 2. Its agent dies (the test hook: _exit(@exitStatus) while
 * it holds the consumer role of rank 2's ring, one of the origin's two
 * records applied). The origin's flush must fail with RMA_ERR_PROC_FAILED
 * naming the agent, within seconds, and so must its later completions to
 * that target; then the pair frees the window and finalizes. Exit status 0
 * is the case the launcher's job status page does not report (a process
 * that exits cleanly by mistake): only the agent's pid tells.
 */
void agentDiesHoldingTheRing(int exitStatus)
{
	librma::test::SharedMemory memory(sizeof(DeathFlags));
	ASSERT_NE(memory.data(), nullptr);
	DeathFlags &flags = *new (memory.data()) DeathFlags{};
	librma::test::RanksOptions opts;
	opts.keepGoing = true;
	opts.timeoutSeconds = 20; /* the hang guard: without the fix the origin's flush never returns */
	int status = librma::test::runRanks(
		3,
		[&flags, exitStatus](int) {
			setAgentMode();
			ASSERT_EQ(rma_init(nullptr, nullptr), RMA_SUCCESS);
			const int rank = worldRank();
			ASSERT_EQ(librma::isHostAgent(), rank == 0);
			if (rank == 0)
				librma::armAgentStallForTesting(exitStatus, &flags.stalled);
			rma_comm pair;
			ASSERT_EQ(rma_comm_split(RMA_COMM_WORLD, rank == 0 ? RMA_UNDEFINED : 1, rank, &pair),
				  RMA_SUCCESS);
			if (rank == 0) {
				/* The agent's thread ends this process; computing until then. */
				spinUntil(flags.done, 2);
				ADD_FAILURE() << "the agent never took the ring";
				return;
			}
			rma_info info = ringInfo();
			int64_t *base = nullptr;
			rma_win win;
			ASSERT_EQ(rma_win_allocate(rank == 2 ? 64 : 0, 8, info, pair, &base, &win), RMA_SUCCESS);
			rma_info_free(&info);
			rma_win_set_errhandler(win, RMA_ERRORS_RETURN);
			ASSERT_EQ(rma_barrier(pair), RMA_SUCCESS);
			ASSERT_EQ(rma_win_lock_all(0, win), RMA_SUCCESS);
			if (rank == 1) {
				const int64_t v = 5;
				ASSERT_EQ(rma_accumulate(&v, 1, RMA_INT64_T, 1, 0, 1, RMA_INT64_T, RMA_SUM, win), RMA_SUCCESS);
				rma_request req;
				ASSERT_EQ(rma_raccumulate(&v, 1, RMA_INT64_T, 1, 1, 1, RMA_INT64_T, RMA_SUM, win, &req),
					  RMA_SUCCESS);
				/* No librma call until the agent holds the ring: the calls below cannot drain it first. */
				ASSERT_TRUE(spinUntil(flags.stalled, 1)) << "the agent never took the ring";
				/* A program polling the request is told too (once the agent's process is gone). */
				int done = 0, rc = RMA_SUCCESS;
				auto t0 = std::chrono::steady_clock::now();
				while (rc == RMA_SUCCESS && !done && std::chrono::steady_clock::now() - t0 < std::chrono::seconds(10))
					rc = rma_test(&req, &done, RMA_STATUS_IGNORE);
				EXPECT_EQ(errorClassOf(rc), RMA_ERR_PROC_FAILED) << errorText(rc) << (done ? " (completed)" : "");
				t0 = std::chrono::steady_clock::now();
				rc = rma_win_flush(1, win);
				double waited = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
				EXPECT_EQ(errorClassOf(rc), RMA_ERR_PROC_FAILED) << errorText(rc);
				EXPECT_NE(errorText(rc).find("agent"), std::string::npos) << errorText(rc);
				EXPECT_LT(waited, 10.0) << "the failure took long to show";
				EXPECT_EQ(errorClassOf(rma_wait(&req, RMA_STATUS_IGNORE)), RMA_ERR_PROC_FAILED);
				/* Later completions to that target fail the same way rather than hang. */
				int64_t r = 0;
				rc = rma_fetch_and_op(&v, &r, RMA_INT64_T, 1, 2, RMA_SUM, win);
				if (rc == RMA_SUCCESS)
					rc = rma_win_flush_all(win);
				EXPECT_EQ(errorClassOf(rc), RMA_ERR_PROC_FAILED) << errorText(rc);
				EXPECT_EQ(errorClassOf(rma_win_unlock_all(win)), RMA_ERR_PROC_FAILED);
			} else {
				ASSERT_TRUE(spinUntil(flags.stalled, 1));
				EXPECT_EQ(rma_win_unlock_all(win), RMA_SUCCESS);
				/* The agent applied the first record before it died, and never the second. */
				EXPECT_EQ(std::atomic_ref<int64_t>(base[0]).load(), 5);
				EXPECT_EQ(std::atomic_ref<int64_t>(base[1]).load(), 0);
			}
			/* The survivors free the window (it may report the failure) and finalize. */
			int rc = rma_win_free(&win);
			EXPECT_TRUE(rc == RMA_SUCCESS || errorClassOf(rc) == RMA_ERR_PROC_FAILED) << errorText(rc);
			EXPECT_EQ(win, RMA_WIN_NULL);
			EXPECT_EQ(rma_comm_free(&pair), RMA_SUCCESS);
			flags.done.fetch_add(1);
			EXPECT_EQ(rma_finalize(), RMA_SUCCESS);
		},
		opts);
	EXPECT_EQ(status, exitStatus) << "a survivor failed, or the job hung (124): its output is above";
	EXPECT_EQ(flags.stalled.load(), 1);
	EXPECT_EQ(flags.done.load(), 2);
}

TEST(AgentFaultTest, AgentDyingWhileItHoldsARingFailsTheWaitingOrigin)
{
	agentDiesHoldingTheRing(3);
}

TEST(AgentFaultTest, AgentExitingCleanlyWhileItHoldsARingFailsTheWaitingOrigin)
{
	agentDiesHoldingTheRing(0);
}

/*
 * World rank 0, the host's agent, dies idle (SIGKILL) with no ring in
 * hand: the rings it served fall back to their origins, which apply them
 * while they wait, so the pair's accumulates and fetches complete.
 */
TEST(AgentFaultTest, AgentDyingIdleLeavesItsRingsToTheOrigins)
{
	librma::test::SharedMemory memory(sizeof(DeathFlags));
	ASSERT_NE(memory.data(), nullptr);
	DeathFlags &flags = *new (memory.data()) DeathFlags{};
	librma::test::RanksOptions opts;
	opts.keepGoing = true;
	opts.timeoutSeconds = 60;
	int status = librma::test::runRanks(
		3,
		[&flags](int) {
			setAgentMode();
			ASSERT_EQ(rma_init(nullptr, nullptr), RMA_SUCCESS);
			const int rank = worldRank();
			rma_comm pair;
			ASSERT_EQ(rma_comm_split(RMA_COMM_WORLD, rank == 0 ? RMA_UNDEFINED : 1, rank, &pair),
				  RMA_SUCCESS);
			if (rank == 0) {
				flags.dead.store(1);
				raise(SIGKILL);
			}
			ASSERT_TRUE(spinUntil(flags.dead, 1));
			rma_info info = ringInfo();
			int64_t *base = nullptr;
			rma_win win;
			ASSERT_EQ(rma_win_allocate(64, 8, info, pair, &base, &win), RMA_SUCCESS);
			rma_info_free(&info);
			rma_win_set_errhandler(win, RMA_ERRORS_RETURN);
			ASSERT_EQ(rma_win_fence(0, win), RMA_SUCCESS);
			const int other = rank == 1 ? 1 : 0; /* in the pair */
			const int64_t v = 10 + rank;
			int64_t old = -1;
			ASSERT_EQ(rma_win_lock_all(0, win), RMA_SUCCESS);
			for (int i = 0; i < 100; ++i)
				ASSERT_EQ(rma_accumulate(&v, 1, RMA_INT64_T, other, 0, 1, RMA_INT64_T, RMA_SUM, win),
					  RMA_SUCCESS);
			ASSERT_EQ(rma_get_accumulate(&v, 1, RMA_INT64_T, &old, 1, RMA_INT64_T, other, 1, 1, RMA_INT64_T,
						     RMA_REPLACE, win),
				  RMA_SUCCESS);
			EXPECT_EQ(rma_win_flush(other, win), RMA_SUCCESS);
			EXPECT_EQ(old, 0) << "each target's second element is only replaced by the other rank";
			EXPECT_EQ(rma_win_unlock_all(win), RMA_SUCCESS);
			ASSERT_EQ(rma_win_fence(0, win), RMA_SUCCESS);
			EXPECT_EQ(base[0], 100 * (10 + (3 - rank)));
			EXPECT_EQ(rma_win_free(&win), RMA_SUCCESS);
			EXPECT_EQ(rma_comm_free(&pair), RMA_SUCCESS);
			EXPECT_EQ(rma_finalize(), RMA_SUCCESS);
		},
		opts);
	EXPECT_EQ(status, 128 + SIGKILL);
}

} /* namespace */
