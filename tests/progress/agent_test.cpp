/* SPDX-License-Identifier: MIT */
/*
 * ProgressAgent: doWork() stepped by hand over fake sources; the thread's
 * idle strategy (spin, then park on the doorbell, woken by a ring); sources
 * added and removed under a running thread; the configuration parser; and
 * the runtime hook (RMA_PROGRESS at rma_init, the host's doorbell segment,
 * localAgent()) over real ranks.
 */
#include "progress/agent.h"

#include <sched.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <memory>
#include <new>
#include <string>
#include <thread>
#include <vector>

#include <gtest/gtest.h>

#include <rma/rma.h>

#include "core/core.h"
#include "error/error.h"
#include "support/multiproc.h"

namespace librma {
namespace {

using Clock = std::chrono::steady_clock;
using test::SharedMemory;
using test::waitFor;
using namespace std::chrono_literals;

#ifdef __SANITIZE_THREAD__
constexpr bool kThreadSanitizer = true;
#else
constexpr bool kThreadSanitizer = false;
#endif

/*
 * A source with a counter of published items; poll() consumes them all.
 * Placement-new it in shared memory to produce from another process.
 */
struct FakeSource {
	static constexpr uint64_t kAlive = 0xa11fe5a11fe5a11full;
	static constexpr uint64_t kDead = 0xdeaddeaddeaddeadull;

	std::atomic<uint64_t> magic{ kAlive };
	alignas(kFalseSharingPad) std::atomic<uint64_t> published{ 0 };
	alignas(kFalseSharingPad) std::atomic<uint64_t> consumed{ 0 };
	std::atomic<uint64_t> polls{ 0 };
	std::atomic<uint64_t> badPolls{ 0 }; /* polls of a source that was already removed */
	std::atomic<int> lastCpu{ -1 };

	static int poll(void *ctx) noexcept
	{
		auto *self = static_cast<FakeSource *>(ctx);
		if (self->magic.load(std::memory_order_relaxed) != kAlive)
			self->badPolls.fetch_add(1, std::memory_order_relaxed);
		self->polls.fetch_add(1, std::memory_order_relaxed);
		self->lastCpu.store(sched_getcpu(), std::memory_order_relaxed);
		uint64_t p = self->published.load(std::memory_order_acquire);
		uint64_t c = self->consumed.load(std::memory_order_relaxed);
		if (p == c)
			return 0;
		self->consumed.store(p, std::memory_order_release);
		return static_cast<int>(p - c);
	}
	static bool pending(void *ctx) noexcept
	{
		auto *self = static_cast<FakeSource *>(ctx);
		return self->published.load(std::memory_order_acquire) != self->consumed.load(std::memory_order_relaxed);
	}
	ProgressSource source() { return { poll, pending, this }; }
	void post(uint64_t n = 1) { published.fetch_add(n, std::memory_order_release); }
	uint64_t consumedNow() const { return consumed.load(std::memory_order_acquire); }
};

/* ---- doWork() by hand -------------------------------------------------------- */

TEST(ProgressAgentTest, DoWorkWithNoSourcesDoesNothing)
{
	ProgressAgent agent;
	EXPECT_EQ(agent.doWork(), 0);
	EXPECT_FALSE(agent.hasPending());
	EXPECT_EQ(agent.stats().passes, 1u);
	EXPECT_EQ(agent.stats().work, 0u);
}

TEST(ProgressAgentTest, DoWorkPollsEverySourceOnceAndSumsTheirWork)
{
	ProgressAgent agent;
	FakeSource a, b, c;
	ASSERT_EQ(agent.addSource(a.source()), RMA_SUCCESS);
	ASSERT_EQ(agent.addSource(b.source()), RMA_SUCCESS);
	ASSERT_EQ(agent.addSource(c.source()), RMA_SUCCESS);
	EXPECT_EQ(agent.sourceCount(), 3u);

	a.post(2);
	c.post(5);
	EXPECT_TRUE(agent.hasPending());
	EXPECT_EQ(agent.doWork(), 7);
	EXPECT_EQ(a.polls.load(), 1u);
	EXPECT_EQ(b.polls.load(), 1u);
	EXPECT_EQ(c.polls.load(), 1u);
	EXPECT_FALSE(agent.hasPending());
	EXPECT_EQ(agent.doWork(), 0);

	ProgressStats s = agent.stats();
	EXPECT_EQ(s.passes, 2u);
	EXPECT_EQ(s.work, 7u);
	EXPECT_EQ(s.parks, 0u);
}

TEST(ProgressAgentTest, HasPendingAsksOnlyThePendingFunctions)
{
	ProgressAgent agent;
	FakeSource a;
	ProgressSource noPending = a.source();
	noPending.pending = nullptr;
	ASSERT_EQ(agent.addSource(noPending), RMA_SUCCESS);
	a.post();
	EXPECT_FALSE(agent.hasPending()) << "a source without pending() never keeps the agent awake";
	EXPECT_EQ(a.polls.load(), 0u) << "hasPending() must not poll";
	EXPECT_EQ(agent.doWork(), 1);
}

TEST(ProgressAgentTest, RemovedSourceIsNotPolledAgain)
{
	ProgressAgent agent;
	FakeSource a, b;
	ASSERT_EQ(agent.addSource(a.source()), RMA_SUCCESS);
	ASSERT_EQ(agent.addSource(b.source()), RMA_SUCCESS);
	ASSERT_EQ(agent.removeSource(&a), RMA_SUCCESS);
	EXPECT_EQ(agent.sourceCount(), 1u);
	a.post();
	b.post();
	EXPECT_EQ(agent.doWork(), 1);
	EXPECT_EQ(a.polls.load(), 0u);
	EXPECT_EQ(b.polls.load(), 1u);
	/* A source may come back after removal. */
	ASSERT_EQ(agent.addSource(a.source()), RMA_SUCCESS);
	EXPECT_EQ(agent.doWork(), 1);
}

TEST(ProgressAgentTest, RefusesBadSourcesWithAnArgError)
{
	ProgressAgent agent;
	FakeSource a;
	ProgressSource noPoll{ nullptr, FakeSource::pending, &a };
	EXPECT_EQ(errorClass(agent.addSource(noPoll)), RMA_ERR_ARG);
	ASSERT_EQ(agent.addSource(a.source()), RMA_SUCCESS);
	int rc = agent.addSource(a.source());
	EXPECT_EQ(errorClass(rc), RMA_ERR_ARG);
	EXPECT_NE(errorMessage(rc).find("already served"), std::string::npos) << errorMessage(rc);
	FakeSource other;
	EXPECT_EQ(errorClass(agent.removeSource(&other)), RMA_ERR_ARG);
	EXPECT_EQ(agent.sourceCount(), 1u);
}

TEST(ProgressAgentTest, ControlCallsRefuseChangesWhileRunning)
{
	ProgressAgent agent;
	ASSERT_EQ(agent.start(-1), RMA_SUCCESS);
	EXPECT_TRUE(agent.running());
	EXPECT_EQ(errorClass(agent.start(-1)), RMA_ERR_OTHER);
	EXPECT_EQ(errorClass(agent.setIdleStrategy({})), RMA_ERR_OTHER);
	EXPECT_EQ(errorClass(agent.setDoorbell(nullptr)), RMA_ERR_OTHER);
	agent.stop();
	EXPECT_FALSE(agent.running());
	agent.stop(); /* twice is fine */
	EXPECT_EQ(agent.setIdleStrategy({}), RMA_SUCCESS);
	/* And it can run again. */
	ASSERT_EQ(agent.start(-1), RMA_SUCCESS);
	agent.stop();
}

/* ---- The thread ---------------------------------------------------------------- */

IdleStrategy quickPark(int64_t timeoutNs = -1)
{
	IdleStrategy idle;
	idle.spinNs = 5000;
	idle.idleNs = 10000;
	idle.parkTimeoutNs = timeoutNs;
	return idle;
}

TEST(ProgressAgentThreadTest, ConsumesWorkPostedWhileItRuns)
{
	ProgressAgent agent(nullptr, quickPark(100000000));
	FakeSource a;
	ASSERT_EQ(agent.addSource(a.source()), RMA_SUCCESS);
	ASSERT_EQ(agent.start(-1), RMA_SUCCESS);
	for (int i = 0; i < 1000; ++i) {
		a.post();
		agent.wake();
	}
	EXPECT_TRUE(waitFor([&] { return a.consumedNow() == 1000; }, 5s));
	agent.stop();
	EXPECT_EQ(agent.stats().work, 1000u);
}

TEST(ProgressAgentThreadTest, ParksWhenIdleAndARingWakesIt)
{
	/* No safety timeout: only the ring can wake it. */
	ProgressAgent agent(nullptr, quickPark(-1));
	FakeSource a;
	ASSERT_EQ(agent.addSource(a.source()), RMA_SUCCESS);
	ASSERT_EQ(agent.start(-1), RMA_SUCCESS);

	ASSERT_TRUE(waitFor([&] { return agent.doorbell()->asleep(); }, 5s)) << "the idle agent never parked";
	std::this_thread::sleep_for(20ms);
	uint64_t passesAsleep = agent.stats().passes;
	std::this_thread::sleep_for(20ms);
	EXPECT_EQ(agent.stats().passes, passesAsleep) << "a parked agent must not poll";

	auto rang = Clock::now();
	a.post();
	agent.doorbell()->ring();
	bool done = waitFor([&] { return a.consumedNow() == 1; }, 1s);
	auto latency = Clock::now() - rang;
	EXPECT_TRUE(done) << "work was not done within 1 s of the ring";
	EXPECT_EQ(agent.doorbell()->wakesIssued(), 1u);
	agent.stop();
	EXPECT_GE(agent.stats().wakeups, 1u);
	auto us = std::chrono::duration_cast<std::chrono::microseconds>(latency).count();
	RecordProperty("wake_latency_us", static_cast<int>(us));
	std::printf("ring to work done by a parked agent: %ld us\n", static_cast<long>(us));
}

TEST(ProgressAgentThreadTest, NoWakeIsIssuedWhileTheAgentSpins)
{
	/* Never idle long enough to park. */
	IdleStrategy busy;
	busy.spinNs = busy.idleNs = 3600ull * 1000000000ull;
	ProgressAgent agent(nullptr, busy);
	FakeSource a;
	ASSERT_EQ(agent.addSource(a.source()), RMA_SUCCESS);
	ASSERT_EQ(agent.start(-1), RMA_SUCCESS);
	for (uint64_t i = 1; i <= 20000; ++i) {
		a.post();
		agent.doorbell()->ring();
		if (i % 1000 == 0) {
			ASSERT_TRUE(waitFor([&] { return a.consumedNow() == i; }, 5s));
		}
	}
	agent.stop();
	EXPECT_EQ(agent.doorbell()->wakesIssued(), 0u) << "a producer made a system call to an awake agent";
	EXPECT_EQ(agent.stats().parks, 0u);
	EXPECT_EQ(agent.stats().work, 20000u);
}

TEST(ProgressAgentThreadTest, SafetyTimeoutPollsAParkedAgent)
{
	ProgressAgent agent(nullptr, quickPark(5000000)); /* 5 ms */
	FakeSource a;
	ProgressSource silent = a.source();
	silent.pending = nullptr; /* work nobody rings for, like a dead producer's slot */
	ASSERT_EQ(agent.addSource(silent), RMA_SUCCESS);
	ASSERT_EQ(agent.start(-1), RMA_SUCCESS);
	ASSERT_TRUE(waitFor([&] { return agent.doorbell()->asleep(); }, 5s));
	a.post();
	EXPECT_TRUE(waitFor([&] { return a.consumedNow() == 1; }, 2s)) << "the safety timeout never fired";
	EXPECT_EQ(agent.doorbell()->wakesIssued(), 0u) << "nobody rang";
	EXPECT_GE(agent.stats().timeouts, 1u);
	agent.stop();
}

TEST(ProgressAgentThreadTest, AddingASourceWakesAParkedAgentForItsQueuedWork)
{
	ProgressAgent agent(nullptr, quickPark(-1));
	ASSERT_EQ(agent.start(-1), RMA_SUCCESS);
	ASSERT_TRUE(waitFor([&] { return agent.doorbell()->asleep(); }, 5s));
	FakeSource a;
	a.post(3);
	ASSERT_EQ(agent.addSource(a.source()), RMA_SUCCESS);
	EXPECT_TRUE(waitFor([&] { return a.consumedNow() == 3; }, 1s));
	agent.stop();
}

TEST(ProgressAgentThreadTest, StopEndsAParkedThreadWithoutTimeout)
{
	ProgressAgent agent(nullptr, quickPark(-1));
	ASSERT_EQ(agent.start(-1), RMA_SUCCESS);
	ASSERT_TRUE(waitFor([&] { return agent.doorbell()->asleep(); }, 5s));
	auto start = Clock::now();
	agent.stop();
	EXPECT_LT(Clock::now() - start, 1s);
}

TEST(ProgressAgentThreadTest, RunsPinnedToTheCoreItIsGiven)
{
	cpu_set_t set;
	ASSERT_EQ(sched_getaffinity(0, sizeof(set), &set), 0);
	int core = -1;
	for (int c = CPU_SETSIZE - 1; c >= 0; --c) {
		if (CPU_ISSET(c, &set)) {
			core = c;
			break;
		}
	}
	ASSERT_GE(core, 0);
	ProgressAgent agent(nullptr, quickPark(1000000));
	FakeSource a;
	ASSERT_EQ(agent.addSource(a.source()), RMA_SUCCESS);
	ASSERT_EQ(agent.start(core), RMA_SUCCESS);
	EXPECT_EQ(agent.core(), core);
	a.post();
	agent.wake();
	ASSERT_TRUE(waitFor([&] { return a.consumedNow() == 1; }, 2s));
	EXPECT_EQ(a.lastCpu.load(), core);
	agent.stop();
}

TEST(ProgressAgentThreadTest, RefusesACoreItCannotUse)
{
	ProgressAgent agent;
	long cpus = sysconf(_SC_NPROCESSORS_CONF);
	int rc = agent.start(static_cast<int>(cpus) + 7); /* configured nowhere */
	EXPECT_EQ(errorClass(rc), RMA_ERR_ARG) << errorMessage(rc);
	EXPECT_NE(errorMessage(rc).find("CPU"), std::string::npos) << errorMessage(rc);
	EXPECT_FALSE(agent.running());
	EXPECT_EQ(errorClass(agent.start(1 << 30)), RMA_ERR_ARG);
	EXPECT_FALSE(agent.running());
}

TEST(ProgressAgentThreadTest, IdleAgentCostsLittleCpu)
{
	ProgressAgent agent; /* the default idle strategy */
	FakeSource a;
	ASSERT_EQ(agent.addSource(a.source()), RMA_SUCCESS);
	ASSERT_EQ(agent.start(-1), RMA_SUCCESS);
	std::this_thread::sleep_for(50ms);
	uint64_t before = agent.cpuTimeNs();
	std::this_thread::sleep_for(500ms);
	uint64_t used = agent.cpuTimeNs() - before;
	agent.stop();
	EXPECT_GT(agent.cpuTimeNs(), 0u) << "the CPU time survives stop()";
	/* About 5 timeouts of 100 ms, each one pass: microseconds. Allow noise. */
	EXPECT_LT(used, 25000000u) << "an idle agent used " << used / 1000 << " us of CPU in 500 ms";
	RecordProperty("idle_cpu_us_per_500ms", static_cast<int>(used / 1000));
	std::printf("idle agent: %lu us of CPU in 500 ms (%lu parks, %lu timeouts)\n",
		    static_cast<unsigned long>(used / 1000), static_cast<unsigned long>(agent.stats().parks),
		    static_cast<unsigned long>(agent.stats().timeouts));
}

TEST(ProgressAgentThreadTest, ARingFromAnotherProcessWakesTheAgent)
{
	/* The doorbell and the source's counters in shared memory; the child produces. */
	struct Shared {
		Doorbell bell;
		FakeSource source;
	};
	SharedMemory mem(sizeof(Shared));
	ASSERT_NE(mem.data(), nullptr);
	auto *shared = new (mem.data()) Shared{};
	{
		ProgressAgent agent(&shared->bell, quickPark(-1));
		ASSERT_EQ(agent.addSource(shared->source.source()), RMA_SUCCESS);
		ASSERT_EQ(agent.start(-1), RMA_SUCCESS);
		ASSERT_TRUE(waitFor([&] { return shared->bell.asleep(); }, 5s));
		std::this_thread::sleep_for(20ms);

		pid_t child = fork();
		ASSERT_GE(child, 0);
		if (child == 0) {
			shared->source.post(5);
			shared->bell.ring();
			_exit(0);
		}
		int status = 0;
		ASSERT_EQ(waitpid(child, &status, 0), child);
		EXPECT_TRUE(waitFor([&] { return shared->source.consumedNow() == 5; }, 1s));
		EXPECT_EQ(shared->bell.wakesIssued(), 1u);
		agent.stop();
	}
}

TEST(ProgressAgentThreadTest, AChildForkedWhileItRunsUsesTheAgentAfresh)
{
	/* Spinning, so the fork likely lands inside a pass. */
	IdleStrategy busy;
	busy.spinNs = busy.idleNs = 3600ull * 1000000000ull;
	ProgressAgent agent(nullptr, busy);
	FakeSource a;
	ASSERT_EQ(agent.addSource(a.source()), RMA_SUCCESS);
	ASSERT_EQ(agent.start(-1), RMA_SUCCESS);
	for (int round = 0; round < 20; ++round) {
		pid_t child = fork();
		ASSERT_GE(child, 0);
		if (child == 0) {
			alarm(10); /* a removeSource() waiting for the parent's pass would hang */
			int bad = 0;
			bad |= agent.running();
			bad |= (agent.removeSource(&a) != RMA_SUCCESS) << 1;
			bad |= (agent.addSource(a.source()) != RMA_SUCCESS) << 2;
			a.post();
			if (kThreadSanitizer) {
				/* TSan refuses new threads after a multi-threaded fork: step by hand. */
				bad |= (agent.doWork() != 1) << 3;
			} else {
				bad |= (agent.start(-1) != RMA_SUCCESS) << 3;
				bad |= !waitFor([&] { return a.consumedNow() == a.published.load(); }, 5s) << 4;
				agent.stop();
			}
			_exit(bad);
		}
		int status = 0;
		ASSERT_EQ(waitpid(child, &status, 0), child);
		ASSERT_TRUE(WIFEXITED(status)) << "the child hung or crashed: status " << status;
		EXPECT_EQ(WEXITSTATUS(status), 0) << "failed checks (bit mask)";
	}
	EXPECT_TRUE(agent.running());
	agent.stop();
}

/* ---- Sources under a running thread -------------------------------------------- */

TEST(ProgressAgentConcurrentTest, RemovedSourceIsNeverPolledAfterRemoveReturns)
{
	/* Spinning (never parks), so passes run all the time during the churn. */
	IdleStrategy busy;
	busy.spinNs = busy.idleNs = 3600ull * 1000000000ull;
	ProgressAgent agent(nullptr, busy);
	FakeSource steady;
	ASSERT_EQ(agent.addSource(steady.source()), RMA_SUCCESS);
	ASSERT_EQ(agent.start(-1), RMA_SUCCESS);

	uint64_t bad = 0, pollsAfter = 0, pollsSeen = 0;
	auto end = Clock::now() + 1s;
	int cycles = 0;
	/* On a loaded machine the agent may not run for a while: go on (up to 1 s) until it overlapped. */
	while (cycles < 200 || (Clock::now() < end && (cycles < 5000 || pollsSeen == 0))) {
		auto s = std::make_unique<FakeSource>();
		ASSERT_EQ(agent.addSource(s->source()), RMA_SUCCESS);
		s->post();
		if (cycles % 16 == 0)
			std::this_thread::yield();
		ASSERT_EQ(agent.removeSource(s.get()), RMA_SUCCESS);
		/* After removeSource(), no poll may start or be under way: poison it and watch. */
		uint64_t polls = s->polls.load();
		s->magic.store(FakeSource::kDead);
		for (int i = 0; i < 50; ++i)
			cpuRelax();
		pollsAfter += s->polls.load() - polls;
		bad += s->badPolls.load();
		pollsSeen += polls;
		s.reset(); /* freed: ASan reports any later use */
		++cycles;
	}
	agent.stop();
	EXPECT_EQ(bad, 0u) << "a removed source was polled";
	EXPECT_EQ(pollsAfter, 0u) << "a removed source was polled after removeSource() returned";
	EXPECT_GT(pollsSeen, 0u) << "the agent never polled a short-lived source: the test saw no overlap";
	EXPECT_EQ(agent.sourceCount(), 1u);
	std::printf("%d add/remove cycles, %lu polls of short-lived sources\n", cycles,
		    static_cast<unsigned long>(pollsSeen));
}

TEST(ProgressAgentConcurrentTest, ManyProducersThreadsAndAParkingAgentLoseNothing)
{
	ProgressAgent agent(nullptr, quickPark(-1));
	constexpr int kProducers = 3;
	constexpr uint64_t kItems = 20000;
	FakeSource sources[kProducers];
	for (auto &s : sources)
		ASSERT_EQ(agent.addSource(s.source()), RMA_SUCCESS);
	ASSERT_EQ(agent.start(-1), RMA_SUCCESS);
	std::vector<std::thread> producers;
	for (int p = 0; p < kProducers; ++p)
		producers.emplace_back([&, p] {
			for (uint64_t i = 0; i < kItems; ++i) {
				sources[p].post();
				agent.doorbell()->ring();
				if (i % 97 == 0)
					std::this_thread::sleep_for(50us); /* let the agent park now and then */
			}
		});
	for (auto &t : producers)
		t.join();
	for (auto &s : sources) {
		EXPECT_TRUE(waitFor([&] { return s.consumedNow() == kItems; }, 1s)) << "work stranded with no timeout";
	}
	agent.stop();
	EXPECT_EQ(agent.stats().work, kProducers * kItems);
}

/* ---- Configuration ---------------------------------------------------------------- */

TEST(ProgressConfigTest, UnsetMeansTheDefaultUnpinned)
{
	auto c = parseProgressConfig(nullptr, nullptr, 2);
	ASSERT_TRUE(c.ok());
	EXPECT_EQ(c->mode, kDefaultProgressMode);
	EXPECT_TRUE(c->cores.empty());
	auto empty = parseProgressConfig("", "", 2);
	ASSERT_TRUE(empty.ok());
	EXPECT_EQ(empty->mode, kDefaultProgressMode);
}

TEST(ProgressConfigTest, ParsesEveryModeAndACore)
{
	for (auto mode : { ProgressConfig::Mode::None, ProgressConfig::Mode::Thread, ProgressConfig::Mode::Agent }) {
		auto c = parseProgressConfig(progressModeName(mode), "1", 2);
		ASSERT_TRUE(c.ok()) << progressModeName(mode);
		EXPECT_EQ(c->mode, mode);
		EXPECT_EQ(c->cores, std::vector<int>{ 1 });
	}
	/* One CPU per NUMA node's agent. */
	auto list = parseProgressConfig("agent", "0-1", 2);
	ASSERT_TRUE(list.ok());
	EXPECT_EQ(list->cores, (std::vector<int>{ 0, 1 }));
}

TEST(ProgressConfigTest, BadValuesAreArgErrorsNamingTheVariableAndValue)
{
	struct Case {
		const char *mode, *core, *variable, *value;
	} cases[] = {
		{ "fast", nullptr, "RMA_PROGRESS", "fast" },
		{ "Agent", nullptr, "RMA_PROGRESS", "Agent" },
		{ "agent", "one", "RMA_PROGRESS_CORE", "one" },
		{ "agent", "-1", "RMA_PROGRESS_CORE", "-1" },
		{ "agent", "1x", "RMA_PROGRESS_CORE", "1x" },
		{ "agent", "2", "RMA_PROGRESS_CORE", "2" }, /* the host has CPUs 0 and 1 */
		{ "agent", "0,2", "RMA_PROGRESS_CORE", "0,2" },
		{ "agent", "1-0", "RMA_PROGRESS_CORE", "1-0" },
		{ "agent", "0,", "RMA_PROGRESS_CORE", "0," },
		{ "agent", "99999999999999999999", "RMA_PROGRESS_CORE", "99999999999999999999" },
	};
	for (const Case &k : cases) {
		auto c = parseProgressConfig(k.mode, k.core, 2);
		ASSERT_FALSE(c.ok()) << k.mode << " " << (k.core ? k.core : "");
		EXPECT_EQ(errorClass(c.code()), RMA_ERR_ARG);
		std::string msg = errorMessage(c.code());
		EXPECT_NE(msg.find(std::string(k.variable) + "='" + k.value + "'"), std::string::npos) << msg;
	}
}

/* ---- The runtime hook ------------------------------------------------------------- */

/* Each rank is a forked child: its environment and runtime are its own. */
void setProgressEnv(const char *mode, const char *core)
{
	if (mode)
		setenv("RMA_PROGRESS", mode, 1);
	else
		unsetenv("RMA_PROGRESS");
	if (core)
		setenv("RMA_PROGRESS_CORE", core, 1);
	else
		unsetenv("RMA_PROGRESS_CORE");
}

TEST(ProgressRuntimeTest, RanksShareTheHostDoorbellsAndWakeEachOthersThreads)
{
	/* Inherited by every forked rank: rank 0 produces, rank 1's thread consumes. */
	SharedMemory mem(sizeof(FakeSource));
	ASSERT_NE(mem.data(), nullptr);
	auto *shared = new (mem.data()) FakeSource{};
	EXPECT_RANKS_PASS(test::runRanks(3, [&](int rank) {
		setProgressEnv("thread", nullptr);
		ASSERT_EQ(rma_init(nullptr, nullptr), RMA_SUCCESS);
		EXPECT_EQ(progressConfig().mode, ProgressConfig::Mode::Thread);
		EXPECT_EQ(agentWorldRank(), -1);
		for (int r = 0; r < 3; ++r) {
			ASSERT_NE(hostDoorbell(r), nullptr);
			EXPECT_EQ(progressDoorbell(r), hostDoorbell(r));
		}
		EXPECT_EQ(hostDoorbell(3), nullptr);
		EXPECT_EQ(hostDoorbell(-1), nullptr);
		EXPECT_EQ(localAgent().doorbell(), hostDoorbell(rank));

		if (rank == 1) {
			ASSERT_EQ(localAgent().addSource(shared->source()), RMA_SUCCESS);
			ASSERT_EQ(ensureAgentThread(), RMA_SUCCESS);
			EXPECT_TRUE(localAgent().running());
			EXPECT_EQ(localAgent().core(), -1) << "thread mode keeps the rank's binding";
			ASSERT_EQ(ensureAgentThread(), RMA_SUCCESS) << "a second call is a no-op";
		}
		ASSERT_EQ(rma_barrier(RMA_COMM_WORLD), RMA_SUCCESS);
		if (rank == 0) {
			/* Rank 1's thread parks on its doorbell, which this process maps too. */
			ASSERT_TRUE(waitFor([] { return hostDoorbell(1)->asleep(); }, 5s));
			shared->post(4);
			progressDoorbell(1)->ring();
		}
		if (rank == 1) {
			EXPECT_TRUE(waitFor([&] { return shared->consumedNow() == 4; }, 1s));
		}
		ASSERT_EQ(rma_barrier(RMA_COMM_WORLD), RMA_SUCCESS);
		EXPECT_GE(hostDoorbell(1)->wakesIssued(), 1u) << "rank 0's ring must have woken rank 1";
		if (rank == 1) {
			ASSERT_EQ(localAgent().removeSource(shared), RMA_SUCCESS);
		}
		ASSERT_EQ(rma_finalize(), RMA_SUCCESS);
		EXPECT_FALSE(localAgent().running()) << "finalize stops the thread";
		EXPECT_EQ(hostDoorbell(0), nullptr);
	}));
}

TEST(ProgressRuntimeTest, AgentModeRunsOneThreadInRankZeroPinnedToTheCore)
{
	EXPECT_RANKS_PASS(test::runRanks(3, [](int rank) {
		setProgressEnv("agent", "0");
		ASSERT_EQ(rma_init(nullptr, nullptr), RMA_SUCCESS);
		EXPECT_EQ(progressConfig().mode, ProgressConfig::Mode::Agent);
		EXPECT_EQ(progressConfig().cores, std::vector<int>{ 0 });
		EXPECT_EQ(agentWorldRank(), 0);
		for (int r = 0; r < 3; ++r)
			EXPECT_EQ(progressDoorbell(r), hostDoorbell(0));
		ASSERT_EQ(ensureAgentThread(), RMA_SUCCESS);
		EXPECT_EQ(localAgent().running(), rank == 0);
		if (rank == 0) {
			EXPECT_EQ(localAgent().core(), 0);
		}
		ASSERT_EQ(rma_finalize(), RMA_SUCCESS);
		EXPECT_FALSE(localAgent().running());
	}));
}

TEST(ProgressRuntimeTest, NoneModeStartsNoThreadAndNamesNoDoorbell)
{
	EXPECT_RANKS_PASS(test::runRanks(2, [](int) {
		setProgressEnv("none", nullptr);
		ASSERT_EQ(rma_init(nullptr, nullptr), RMA_SUCCESS);
		EXPECT_EQ(progressDoorbell(0), nullptr);
		EXPECT_NE(hostDoorbell(0), nullptr);
		ASSERT_EQ(ensureAgentThread(), RMA_SUCCESS);
		EXPECT_FALSE(localAgent().running());
		ASSERT_EQ(rma_finalize(), RMA_SUCCESS);
	}));
}

TEST(ProgressRuntimeTest, BadVariablesFailInitWithAnArgErrorNamingThem)
{
	struct Case {
		const char *mode, *core, *text;
	} cases[] = {
		{ "fast", nullptr, "RMA_PROGRESS='fast'" },
		{ "agent", "zero", "RMA_PROGRESS_CORE='zero'" },
		{ "agent", "100000", "RMA_PROGRESS_CORE='100000'" },
	};
	for (const Case &k : cases) {
		EXPECT_RANKS_PASS(test::runRanks(2, [&](int) {
			setProgressEnv(k.mode, k.core);
			int rc = rma_init(nullptr, nullptr);
			EXPECT_EQ(errorClass(rc), RMA_ERR_ARG);
			EXPECT_NE(errorMessage(rc).find(k.text), std::string::npos) << errorMessage(rc);
			int flag = 1;
			ASSERT_EQ(rma_initialized(&flag), RMA_SUCCESS);
			EXPECT_EQ(flag, 0);
		}));
	}
}

TEST(ProgressRuntimeTest, SingletonWithoutLauncherGetsItsDoorbell)
{
	pid_t child = fork();
	ASSERT_GE(child, 0);
	if (child == 0) {
		for (const char *name : { "RMA_BOOT_FD", "RMA_RANK", "RMA_SIZE", "RMA_PROGRESS", "RMA_PROGRESS_CORE" })
			unsetenv(name);
		int bad = 0;
		bad |= rma_init(nullptr, nullptr) != RMA_SUCCESS;
		bad |= (progressConfig().mode != kDefaultProgressMode) << 1;
		bad |= (hostDoorbell(0) == nullptr || hostDoorbell(1) != nullptr) << 2;
		FakeSource source;
		bad |= (localAgent().addSource(source.source()) != RMA_SUCCESS) << 3;
		bad |= (ensureAgentThread() != RMA_SUCCESS) << 4;
		source.post();
		if (Doorbell *bell = progressDoorbell(0))
			bell->ring();
		bad |= !waitFor([&] { return source.consumedNow() == 1; }, 2s) << 5;
		bad |= (localAgent().removeSource(&source) != RMA_SUCCESS) << 6;
		bad |= (rma_finalize() != RMA_SUCCESS) << 7;
		_exit(bad);
	}
	int status = 0;
	ASSERT_EQ(waitpid(child, &status, 0), child);
	ASSERT_TRUE(WIFEXITED(status));
	EXPECT_EQ(WEXITSTATUS(status), 0) << "failed checks (bit mask)";
}

} /* namespace */
} /* namespace librma */
