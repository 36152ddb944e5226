/* SPDX-License-Identifier: MIT */
/*
 * MpscRing under concurrency: producers in real processes (and threads)
 * write stamped records (producer id, sequence number, checksum) through a
 * small ring, so that it wraps and pushes back; the consumer checks that
 * every producer's records arrive once, intact and in order. The consumer
 * poisons every record it has read, and a producer checks that the room it
 * claims holds only the poison (or the zeroes of a fresh ring): bytes of a
 * record not yet consumed there mean a slot or staging run was handed out
 * twice. And a producer killed between claim and publish must not wedge
 * the ring.
 */
#include "progress/mpsc_ring.h"

#include <signal.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstdio>
#include <chrono>
#include <cstring>
#include <memory>
#include <thread>
#include <vector>

#include <gtest/gtest.h>

#include "support/multiproc.h"

namespace librma {
namespace {

using Clock = std::chrono::steady_clock;
using test::SharedMemory;
using test::waitFor;

/* Every record starts with this stamp; the rest is a pattern the checksum covers. */
struct Stamp {
	uint32_t producer;
	uint32_t sequence;
	uint64_t checksum;
};

/* Mostly inline records, every 8th staged (longer than a 128-byte slot's room). */
uint32_t recordLength(uint32_t sequence)
{
	if (sequence % 8 == 7)
		return 200 + (sequence * 37) % 1400;
	return sizeof(Stamp) + (sequence * 7) % 80;
}

uint64_t fillAndSum(std::byte *body, std::size_t n, uint32_t producer, uint32_t sequence)
{
	uint64_t sum = 1469598103934665603ull;
	uint32_t x = (producer << 24) ^ sequence ^ 0x9e3779b9u;
	for (std::size_t i = 0; i < n; i++) {
		x = x * 1664525u + 1013904223u;
		body[i] = static_cast<std::byte>(x >> 24);
		sum = (sum ^ (x >> 24)) * 1099511628211ull;
	}
	return sum;
}

uint64_t checksum(const std::byte *body, std::size_t n)
{
	uint64_t sum = 1469598103934665603ull;
	for (std::size_t i = 0; i < n; i++)
		sum = (sum ^ static_cast<uint8_t>(body[i])) * 1099511628211ull;
	return sum;
}

/* What the consumer leaves in every byte it has read. */
constexpr std::byte kFreed{ 0xa5 };

/*
 * Write @count stamped records as @producer; false on an unexpected status
 * or when claimed room still held a record's bytes (neither poison nor zero).
 */
bool produce(MpscRing &ring, uint32_t producer, uint32_t count)
{
	std::byte buffer[2048];
	for (uint32_t seq = 0; seq < count; seq++) {
		const uint32_t length = recordLength(seq);
		Stamp stamp{ producer, seq, 0 };
		stamp.checksum = fillAndSum(buffer + sizeof(Stamp), length - sizeof(Stamp), producer, seq);
		std::memcpy(buffer, &stamp, sizeof(stamp));
		MpscClaim claim;
		MpscStatus status;
		for (SpinWait wait; (status = ring.tryClaim(producer, seq % 5, length, &claim)) == MpscStatus::Again;)
			wait.once();
		if (status != MpscStatus::Ok)
			return false;
		for (std::byte b : claim.payload) {
			if (b != kFreed && b != std::byte{ 0 }) {
				ADD_FAILURE() << "producer " << producer << " seq " << seq
					      << ": claimed room still holds another record's bytes";
				return false;
			}
		}
		std::memcpy(claim.payload.data(), buffer, length);
		ring.commit(claim);
	}
	return true;
}

/*
 * Consume until every producer's @count records have arrived or @timeout
 * passed, checking ownership, per-producer FIFO and integrity.
 */
void consume(MpscRing &ring, uint32_t producers, uint32_t count, std::chrono::seconds timeout)
{
	std::vector<uint32_t> next(producers, 0);
	uint64_t total = 0, bad = 0;
	const auto deadline = Clock::now() + timeout;
	auto check = [&](const MpscRecord &r) {
		Stamp stamp;
		if (r.producer >= producers || r.payload.size() < sizeof(Stamp)) {
			bad++;
			return;
		}
		std::memcpy(&stamp, r.payload.data(), sizeof(stamp));
		const std::size_t body = r.payload.size() - sizeof(Stamp);
		if (stamp.producer != r.producer || stamp.sequence != next[r.producer] ||
		    r.payload.size() != recordLength(stamp.sequence) || r.type != stamp.sequence % 5 ||
		    stamp.checksum != checksum(r.payload.data() + sizeof(Stamp), body)) {
			if (bad++ < 5)
				ADD_FAILURE() << "producer " << r.producer << " stamp " << stamp.producer << "/"
					      << stamp.sequence << " expected seq " << next[r.producer]
					      << " length " << r.payload.size();
		}
		next[r.producer] = stamp.sequence + 1;
		total++;
		/* The record is ours until read() returns: poison it for the ownership check in produce(). */
		std::memset(const_cast<std::byte *>(r.payload.data()), static_cast<int>(kFreed), r.payload.size());
	};
	while (total < uint64_t(producers) * count && Clock::now() < deadline) {
		SpinWait idle;
		while (ring.read(check, 64) == 0 && idle.count() < 100000)
			idle.once();
	}
	EXPECT_EQ(bad, 0u);
	EXPECT_EQ(total, uint64_t(producers) * count);
	for (uint32_t p = 0; p < producers; p++)
		EXPECT_EQ(next[p], count) << "producer " << p;
	EXPECT_EQ(ring.deadProducerSlots(), 0u);
}

/* A small ring: it wraps thousands of times and pushes back on the producers. */
MpscRingConfig smallRing(uint32_t producers)
{
	return { .slots = 8, .slotBytes = 128, .producers = producers, .stageBytes = 4096 };
}

/* Each test gets a small ring for GetParam() producers in memory its children share. */
class MpscRingConcurrentTest : public ::testing::TestWithParam<uint32_t>
{
protected:
	void SetUp() override
	{
		producers_ = GetParam();
		count_ = 20000 / producers_;
		const MpscRingConfig config = smallRing(producers_);
		bytes_ = MpscRing::bytesFor(config);
		mem_ = std::make_unique<SharedMemory>(bytes_);
		ASSERT_NE(mem_->data(), nullptr);
		ASSERT_TRUE(MpscRing::init(mem_->data(), bytes_, config).ok());
	}

	uint32_t producers_ = 0;
	uint32_t count_ = 0;
	std::size_t bytes_ = 0;
	std::unique_ptr<SharedMemory> mem_;
};

TEST_P(MpscRingConcurrentTest, ProcessesKeepPerProducerFifo)
{
	test::RanksOptions options;
	options.timeoutSeconds = 30;
	EXPECT_RANKS_PASS(test::runRanks(static_cast<int>(producers_) + 1, [&](int rank) {
		auto ring = MpscRing::attach(mem_->data(), bytes_);
		ASSERT_TRUE(ring.ok());
		if (rank == 0)
			consume(*ring, producers_, count_, std::chrono::seconds(20));
		else
			EXPECT_TRUE(produce(*ring, static_cast<uint32_t>(rank - 1), count_));
	}, options));
}

TEST_P(MpscRingConcurrentTest, ThreadsKeepPerProducerFifo)
{
	std::atomic<uint32_t> failures{ 0 };
	std::vector<std::thread> threads;
	for (uint32_t p = 0; p < producers_; p++) {
		threads.emplace_back([&, p] {
			auto mine = MpscRing::attach(mem_->data(), bytes_);
			if (!mine.ok() || !produce(*mine, p, count_))
				failures++;
		});
	}
	auto ring = MpscRing::attach(mem_->data(), bytes_);
	ASSERT_TRUE(ring.ok());
	consume(*ring, producers_, count_, std::chrono::seconds(20));
	for (std::thread &t : threads)
		t.join();
	EXPECT_EQ(failures.load(), 0u);
}

INSTANTIATE_TEST_SUITE_P(Producers, MpscRingConcurrentTest, ::testing::Values(1u, 2u, 4u),
			 [](const ::testing::TestParamInfo<uint32_t> &info) {
				 return std::to_string(info.param) + "Producers";
			 });

/* Shared with the forked producers of the dead-producer test. */
struct DeadTestShared {
	std::atomic<uint32_t> claimed;
	pid_t pids[3];
};

bool pidAlive(void *context, uint32_t producer)
{
	const auto *shared = static_cast<const DeadTestShared *>(context);
	pid_t pid = shared->pids[producer];
	return pid == 0 || kill(pid, 0) == 0 || errno != ESRCH;
}

TEST(MpscRingDeadProducerTest, SkipsSlotOfKilledClaimer)
{
	constexpr uint32_t kCount = 3000;
	const MpscRingConfig config = smallRing(3);
	const std::size_t bytes = MpscRing::bytesFor(config);
	SharedMemory mem(bytes);
	SharedMemory sharedMem(sizeof(DeadTestShared));
	ASSERT_NE(mem.data(), nullptr);
	ASSERT_NE(sharedMem.data(), nullptr);
	auto *shared = new (sharedMem.data()) DeadTestShared{};
	auto ring = MpscRing::init(mem.data(), bytes, config);
	ASSERT_TRUE(ring.ok());

	/* Producer 0 claims position 0 and stops before publishing it. */
	pid_t victim = fork();
	ASSERT_GE(victim, 0);
	if (victim == 0) {
		MpscClaim claim;
		if (ring->tryClaim(0, 0, 16, &claim) != MpscStatus::Ok)
			_exit(1);
		shared->claimed.store(1, std::memory_order_release);
		for (;;)
			pause();
	}
	shared->pids[0] = victim;
	const auto waitUntil = Clock::now() + std::chrono::seconds(10);
	while (shared->claimed.load(std::memory_order_acquire) == 0 && Clock::now() < waitUntil)
		std::this_thread::sleep_for(std::chrono::milliseconds(1));
	ASSERT_EQ(shared->claimed.load(), 1u);
	ASSERT_EQ(kill(victim, SIGKILL), 0);
	int status = 0;
	ASSERT_EQ(waitpid(victim, &status, 0), victim);
	EXPECT_TRUE(WIFSIGNALED(status));
	const auto killedAt = Clock::now();

	/* Two producers write behind the dead slot, through a ring of 8. */
	std::vector<pid_t> children;
	for (uint32_t p = 1; p <= 2; p++) {
		pid_t child = fork();
		ASSERT_GE(child, 0);
		if (child == 0)
			_exit(produce(*ring, p, kCount) ? 0 : 1);
		shared->pids[p] = child;
		children.push_back(child);
	}

	ring->setLiveness(&pidAlive, shared, 100'000'000);
	std::vector<uint32_t> next(3, 0);
	uint64_t total = 0, bad = 0;
	auto recoveredAt = Clock::time_point::max();
	const auto deadline = Clock::now() + std::chrono::seconds(15);
	while (total < 2 * kCount && Clock::now() < deadline) {
		int n = ring->read([&](const MpscRecord &r) {
			Stamp stamp;
			std::memcpy(&stamp, r.payload.data(), sizeof(stamp));
			if (r.producer == 0 || stamp.producer != r.producer || stamp.sequence != next[r.producer] ||
			    stamp.checksum != checksum(r.payload.data() + sizeof(Stamp),
						       r.payload.size() - sizeof(Stamp)))
				bad++;
			next[r.producer] = stamp.sequence + 1;
			total++;
			std::memset(const_cast<std::byte *>(r.payload.data()), static_cast<int>(kFreed), r.payload.size());
		}, 64);
		if (ring->deadProducerSlots() > 0 && recoveredAt == Clock::time_point::max())
			recoveredAt = Clock::now();
		if (n == 0)
			std::this_thread::yield();
	}
	for (pid_t child : children) {
		ASSERT_EQ(waitpid(child, &status, 0), child);
		EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0);
	}

	EXPECT_EQ(ring->deadProducerSlots(), 1u);
	EXPECT_EQ(ring->lastDeadProducer(), 0u);
	EXPECT_LT(recoveredAt - killedAt, std::chrono::seconds(2));
	if (recoveredAt != Clock::time_point::max())
		std::printf("recovered %lld ms after the kill\n",
			    static_cast<long long>(std::chrono::duration_cast<std::chrono::milliseconds>(
							   recoveredAt - killedAt).count()));
	EXPECT_EQ(bad, 0u);
	EXPECT_EQ(total, 2u * kCount);
	EXPECT_EQ(next[1], kCount);
	EXPECT_EQ(next[2], kCount);
}

} /* namespace */
} /* namespace librma */
