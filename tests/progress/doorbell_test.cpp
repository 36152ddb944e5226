/* SPDX-License-Identifier: MIT */
/*
 * Doorbell: the park/ring handshake in one thread, between threads and
 * between processes; and a missed-wake stress test: a producer publishes
 * and rings, a consumer parks with no timeout, round after round. If the
 * handshake could lose a wake, a round would hang: each must end in 1 s.
 */
#include "progress/doorbell.h"

#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <new>
#include <random>
#include <thread>

#include <gtest/gtest.h>

#include "common/spin_wait.h"
#include "support/multiproc.h"

namespace librma {
namespace {

using Clock = std::chrono::steady_clock;
using test::SharedMemory;
using test::waitFor;
using namespace std::chrono_literals;

/* A doorbell and a work counter, each on its own lines, as the runtime lays them out. */
struct Handshake {
	Doorbell bell;
	alignas(kFalseSharingPad) std::atomic<uint64_t> work;
	alignas(kFalseSharingPad) std::atomic<uint64_t> done;
	std::atomic<uint64_t> slept;  /* parks that ended in Woken */
	std::atomic<uint64_t> skipped; /* parks that found the work on the re-check */
};
static_assert(std::is_trivially_destructible_v<Handshake>);

TEST(DoorbellTest, ZeroedMemoryIsAnAwakeDoorbell)
{
	alignas(Doorbell) unsigned char raw[sizeof(Doorbell)] = {};
	auto *bell = reinterpret_cast<Doorbell *>(raw);
	EXPECT_FALSE(bell->asleep());
	EXPECT_EQ(bell->wakesIssued(), 0u);
}

TEST(DoorbellTest, RingingAnAwakeConsumerIssuesNoWake)
{
	Doorbell bell{};
	for (int i = 0; i < 10000; ++i)
		bell.ring();
	EXPECT_EQ(bell.wakesIssued(), 0u);
	EXPECT_FALSE(bell.asleep());
}

TEST(DoorbellTest, ParkReturnsAtOnceWhenTheReCheckFindsWork)
{
	Doorbell bell{};
	bool asleepDuringCheck = false;
	ParkResult r = bell.park(
		[&]() noexcept {
			asleepDuringCheck = bell.asleep();
			return true;
		},
		-1);
	EXPECT_EQ(r, ParkResult::Work);
	EXPECT_TRUE(asleepDuringCheck) << "the consumer must announce its sleep before the re-check";
	EXPECT_FALSE(bell.asleep()) << "park() must leave the consumer marked awake";
}

TEST(DoorbellTest, ParkTimesOutWithoutARing)
{
	Doorbell bell{};
	auto start = Clock::now();
	ParkResult r = bell.park([]() noexcept { return false; }, 2000000);
	auto elapsed = Clock::now() - start;
	EXPECT_EQ(r, ParkResult::TimedOut);
	EXPECT_GE(elapsed, 2ms);
	EXPECT_LT(elapsed, 2s);
	EXPECT_FALSE(bell.asleep());
}

TEST(DoorbellTest, RingWakesAThreadParkedWithoutTimeout)
{
	Handshake h{};
	std::thread consumer([&] {
		while (h.work.load(std::memory_order_acquire) == 0) {
			if (h.bell.park([&]() noexcept { return h.work.load(std::memory_order_relaxed) != 0; }, -1) ==
			    ParkResult::Woken)
				h.slept.fetch_add(1, std::memory_order_relaxed);
		}
		h.done.store(1, std::memory_order_release);
	});
	ASSERT_TRUE(waitFor([&] { return h.bell.asleep(); }, 5s));
	/* Let it reach FUTEX_WAIT: the wake must come from the syscall, not the re-check. */
	std::this_thread::sleep_for(20ms);
	h.work.store(1, std::memory_order_release);
	h.bell.ring();
	bool woke = waitFor([&] { return h.done.load(std::memory_order_acquire) == 1; }, 1s);
	if (!woke) {
		/* Rescue the thread so that the test can fail instead of hanging. */
		h.bell.wake();
	}
	consumer.join();
	EXPECT_TRUE(woke) << "a parked consumer was not woken within 1 s";
	EXPECT_EQ(h.bell.wakesIssued(), 1u);
	EXPECT_EQ(h.slept.load(), 1u);
}

TEST(DoorbellTest, RingWakesAConsumerInAnotherProcess)
{
	SharedMemory shm(sizeof(Handshake));
	ASSERT_NE(shm.data(), nullptr);
	auto *h = new (shm.data()) Handshake{};

	pid_t child = fork();
	ASSERT_GE(child, 0);
	if (child == 0) {
		/* The consumer: parks on the shared doorbell, 10 s safety timeout. */
		auto deadline = Clock::now() + 10s;
		while (h->work.load(std::memory_order_acquire) == 0 && Clock::now() < deadline)
			h->bell.park([&]() noexcept { return h->work.load(std::memory_order_relaxed) != 0; },
				     10000000000);
		h->done.store(1, std::memory_order_release);
		_exit(h->work.load(std::memory_order_acquire) == 1 ? 0 : 1);
	}
	bool parked = waitFor([&] { return h->bell.asleep(); }, 5s);
	std::this_thread::sleep_for(20ms);
	auto rang = Clock::now();
	h->work.store(1, std::memory_order_release);
	h->bell.ring();
	bool woke = waitFor([&] { return h->done.load(std::memory_order_acquire) == 1; }, 1s);
	auto latency = Clock::now() - rang;
	int status = 0;
	ASSERT_EQ(waitpid(child, &status, 0), child);
	EXPECT_TRUE(parked) << "the child never parked";
	EXPECT_TRUE(woke) << "the child was not woken within 1 s";
	EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << "status " << status;
	EXPECT_EQ(h->bell.wakesIssued(), 1u) << "one FUTEX_WAKE, from the producer in the parent";
	RecordProperty("wake_latency_us",
		       static_cast<int>(std::chrono::duration_cast<std::chrono::microseconds>(latency).count()));
}

TEST(DoorbellTest, OnlyOneOfManyProducersWakesASleeper)
{
	Handshake h{};
	std::thread consumer([&] {
		while (h.work.load(std::memory_order_acquire) < 4)
			h.bell.park([&]() noexcept { return h.work.load(std::memory_order_relaxed) >= 4; }, 1000000000);
	});
	ASSERT_TRUE(waitFor([&] { return h.bell.asleep(); }, 5s));
	std::this_thread::sleep_for(20ms);
	std::atomic<bool> go{ false };
	std::thread producers[4];
	for (auto &p : producers)
		p = std::thread([&] {
			while (!go.load(std::memory_order_acquire))
				cpuRelax();
			h.work.fetch_add(1, std::memory_order_release);
			h.bell.ring();
		});
	go.store(true, std::memory_order_release);
	for (auto &p : producers)
		p.join();
	consumer.join();
	/*
	 * Producers that ring after the consumer has gone back to sleep may
	 * each wake it once more; never more wakes than rings, at least one.
	 */
	EXPECT_GE(h.bell.wakesIssued(), 1u);
	EXPECT_LE(h.bell.wakesIssued(), 4u);
}

/* ---- Missed-wake stress ------------------------------------------------------- */

constexpr uint64_t kGiveUp = UINT64_MAX;

/*
 * The consumer's side of one stress run: for each round r, wait a random
 * few hundred cycles, park (no timeout) until work >= r, then say done = r.
 */
void consumeRounds(Handshake &h, uint64_t rounds)
{
	std::minstd_rand rng(54321);
	for (uint64_t r = 1; r <= rounds; ++r) {
		/* Start parking at a random moment, so that both sides' jitters overlap. */
		unsigned jitter = rng() % 1024;
		for (unsigned i = 0; i < jitter; ++i)
			cpuRelax();
		while (h.work.load(std::memory_order_acquire) < r) {
			ParkResult res = h.bell.park(
				[&]() noexcept { return h.work.load(std::memory_order_relaxed) >= r; }, -1);
			if (res == ParkResult::Woken)
				h.slept.fetch_add(1, std::memory_order_relaxed);
			else if (res == ParkResult::Work)
				h.skipped.fetch_add(1, std::memory_order_relaxed);
		}
		if (h.work.load(std::memory_order_acquire) == kGiveUp)
			return;
		h.done.store(r, std::memory_order_release);
	}
}

struct StressOutcome {
	uint64_t rounds = 0;      /* completed */
	uint64_t stuckRound = 0;  /* the first round that took over 1 s (0: none) */
	Clock::duration worst{};  /* slowest round */
};

/*
 * The producer's side: round r waits for the consumer to finish r - 1,
 * waits a random few hundred cycles (so that its publish lands anywhere in
 * the consumer's park: before the announce, between the re-check and the
 * futex wait, in the wait), publishes r and rings. Stops after @rounds or
 * @budget, or at the first round not done within 1 s.
 */
StressOutcome produceRounds(Handshake &h, uint64_t rounds, Clock::duration budget)
{
	StressOutcome out;
	std::minstd_rand rng(12345);
	auto end = Clock::now() + budget;
	for (uint64_t r = 1; r <= rounds; ++r) {
		/* A third of the rounds publish at once, to race the consumer's re-check. */
		unsigned jitter = rng() % 3 == 0 ? 0 : rng() % 1024;
		for (unsigned i = 0; i < jitter; ++i)
			cpuRelax();
		auto start = Clock::now();
		h.work.store(r, std::memory_order_release);
		h.bell.ring();
		SpinWait wait;
		while (h.done.load(std::memory_order_acquire) < r) {
			wait.once();
			if ((wait.count() & 63) == 0 && Clock::now() - start > 1s)
				break;
		}
		auto took = Clock::now() - start;
		out.worst = std::max(out.worst, took);
		if (h.done.load(std::memory_order_acquire) < r) {
			out.stuckRound = r;
			break;
		}
		out.rounds = r;
		if (Clock::now() > end)
			break;
	}
	/* Release the consumer whatever happened (a stuck one sleeps with state Asleep). */
	h.work.store(kGiveUp, std::memory_order_release);
	h.bell.ring();
	return out;
}

void expectNoMissedWake(const Handshake &h, const StressOutcome &out)
{
	EXPECT_EQ(out.stuckRound, 0u) << "round " << out.stuckRound << " was not done within 1 s: a lost wake";
	EXPECT_GE(out.rounds, 500u) << "too few rounds ran to mean anything";
	EXPECT_GT(h.slept.load(), 0u) << "the consumer never slept: the wake path was not exercised";
	std::printf("rounds %lu, consumer slept %lu times, re-check found the work %lu times, %lu wakes, "
		    "slowest round %ld us\n",
		    static_cast<unsigned long>(out.rounds), static_cast<unsigned long>(h.slept.load()),
		    static_cast<unsigned long>(h.skipped.load()), static_cast<unsigned long>(h.bell.wakesIssued()),
		    static_cast<long>(std::chrono::duration_cast<std::chrono::microseconds>(out.worst).count()));
}

constexpr uint64_t kStressRounds = 20000;
constexpr auto kStressBudget = 3s;

TEST(DoorbellStressTest, NoWakeIsLostBetweenThreads)
{
	auto h = std::make_unique<Handshake>();
	std::thread consumer([&] { consumeRounds(*h, kStressRounds); });
	StressOutcome out = produceRounds(*h, kStressRounds, kStressBudget);
	consumer.join();
	expectNoMissedWake(*h, out);
}

TEST(DoorbellStressTest, NoWakeIsLostBetweenProcesses)
{
	SharedMemory shm(sizeof(Handshake));
	ASSERT_NE(shm.data(), nullptr);
	auto *h = new (shm.data()) Handshake{};
	pid_t child = fork();
	ASSERT_GE(child, 0);
	if (child == 0) {
		consumeRounds(*h, kStressRounds);
		_exit(0);
	}
	StressOutcome out = produceRounds(*h, kStressRounds, kStressBudget);
	int status = 0;
	ASSERT_EQ(waitpid(child, &status, 0), child);
	EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << "status " << status;
	expectNoMissedWake(*h, out);
}

} /* namespace */
} /* namespace librma */
