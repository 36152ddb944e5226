/* SPDX-License-Identifier: MIT */
/*
 * Reduction-op kernels racing on one MAP_SHARED buffer from 2 and 4 forked
 * processes (and, for ThreadSanitizer's sake, as many threads): every atomic
 * form the kernels use (fetch_add on bytes and words, compare-exchange loops
 * for double/float/float-complex SUM and PROD, integer and floating MIN/MAX,
 * compare-and-swap of every size) hammers the same elements, and the totals
 * must come out exact. A lost update from a non-atomic read-modify-write
 * shows as a wrong total. The fetch-add's returned values are stamped per
 * rank and checked as tickets: every value 0..N*iters-1 handed out exactly
 * once, each rank's increasing.
 */
#include <gtest/gtest.h>

#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstdint>
#include <cstring>
#include <functional>
#include <string>
#include <thread>
#include <vector>

#include "op/op.h"

using namespace librma;

namespace {

constexpr int kMaxRanks = 4;
constexpr int kIters = 40000;
constexpr int64_t kWantInterleaved = 20000;

constexpr uint8_t elem(BasicType b)
{
	return static_cast<uint8_t>(b);
}

/* The shared targets, each on its own line but the byte counters, which share one. */
struct alignas(64) Shared {
	std::atomic<int> ready;
	alignas(64) double dsum;
	alignas(64) double dhot;
	alignas(64) float fsum;
	alignas(64) float fcomplex[2];
	alignas(64) int64_t ticket;
	alignas(64) uint8_t bytes[8]; /* neighbours: a byte RMW must not clobber the next */
	alignas(64) int64_t prod3;
	alignas(64) double dprod;
	alignas(64) int32_t imax;
	alignas(64) int32_t imin;
	alignas(64) double dmax;
	alignas(64) uint8_t cas8;
	alignas(64) uint16_t cas16;
	alignas(64) uint32_t cas32;
	alignas(64) uint64_t cas64;
	alignas(64) uint64_t casWins[kMaxRanks];
	alignas(64) int64_t hotDone[kMaxRanks];
	int64_t hotInterleaved[kMaxRanks];
	alignas(64) int64_t tickets[kMaxRanks][kIters];
	alignas(64) int32_t maxSeen[kMaxRanks][kIters]; /* old values of MAX, per rank */
};

/* One rank's share of the race; every op on shared words goes through lib/op. */
void rankBody(Shared *s, int rank, int ranks)
{
	/* Start together: the race is the point. */
	s->ready.fetch_add(1);
	while (s->ready.load() < ranks)
		;
	const double one = 1.0, two = 2.0, half = 0.5;
	const float fone = 1.0f;
	const float fc[2] = { 1.0f, -2.0f };
	const int64_t i1 = 1, three = 3;
	const uint8_t b1 = 1;
	for (int i = 0; i < kIters; ++i) {
		applyOp(Op::Sum, elem(BasicType::Double), &s->dsum, &one, nullptr, 1);
		applyOp(Op::Sum, elem(BasicType::Float), &s->fsum, &fone, nullptr, 1);
		applyOp(Op::Sum, elem(BasicType::FloatComplex), s->fcomplex, fc, nullptr, 1);
		applyOp(Op::Sum, elem(BasicType::Int64), &s->ticket, &i1, &s->tickets[rank][i], 1);
		/* 8 adjacent byte counters, each one a fetch_add of one byte. */
		for (int b = 0; b < 8; ++b)
			applyOp(Op::Sum, elem(BasicType::Uint8), &s->bytes[b], &b1, nullptr, 1);
		applyOp(Op::Prod, elem(BasicType::Int64), &s->prod3, &three, nullptr, 1);
		/* Each rank doubles and halves in turn: exact powers of two, 1.0 at the end. */
		applyOp(Op::Prod, elem(BasicType::Double), &s->dprod, (i & 1) ? &half : &two, nullptr, 1);
		/* Ranks' values interleave: rank r offers i * ranks + r. */
		int32_t v = i * ranks + rank, nv = -v;
		applyOp(Op::Max, elem(BasicType::Int32), &s->imax, &v, &s->maxSeen[rank][i], 1);
		applyOp(Op::Min, elem(BasicType::Int32), &s->imin, &nv, nullptr, 1);
		double dv = v;
		applyOp(Op::Max, elem(BasicType::Double), &s->dmax, &dv, nullptr, 1);
		/* CAS increments of every size, until this rank's increment lands once. */
		auto casIncrement = [&](uint8_t e, void *target, auto zero) {
			using U = decltype(zero);
			U cur;
			applyOp(Op::NoOp, e, target, nullptr, &cur, 1);
			for (;;) {
				U next = static_cast<U>(cur + 1), old;
				compareAndSwap(e, target, &cur, &next, &old);
				if (old == cur)
					break;
				cur = old;
			}
		};
		casIncrement(elem(BasicType::Uint8), &s->cas8, uint8_t{});
		casIncrement(elem(BasicType::Uint16), &s->cas16, uint16_t{});
		casIncrement(elem(BasicType::Uint32), &s->cas32, uint32_t{});
		casIncrement(elem(BasicType::Uint64), &s->cas64, uint64_t{});
		s->casWins[rank] += 1; /* this rank's own word */
	}
	/*
	 * One element only, back to back: the tightest race a compare-exchange
	 * loop can face. On a loaded 2-core machine ranks may take turns instead
	 * of racing, so go on (up to a second) until this rank has seen other
	 * ranks' updates land between two of its own many times.
	 */
	auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(1);
	int64_t done = 0, interleaved = 0;
	double prev = -1, old;
	while (done < 4 * kIters || (interleaved < kWantInterleaved && ranks > 1)) {
		applyOp(Op::Sum, elem(BasicType::Double), &s->dhot, &one, &old, 1);
		if (done > 0 && old != prev + 1)
			++interleaved;
		prev = old;
		if ((++done & 1023) == 0 && std::chrono::steady_clock::now() > deadline)
			break;
	}
	s->hotDone[rank] = done;
	s->hotInterleaved[rank] = interleaved;
}

struct SharedMapping {
	Shared *s = nullptr;
	SharedMapping()
	{
		void *p = mmap(nullptr, sizeof(Shared), PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
		if (p != MAP_FAILED)
			s = new (p) Shared{};
	}
	~SharedMapping()
	{
		if (s)
			munmap(s, sizeof(Shared));
	}
};

void prepare(Shared *s)
{
	s->ready.store(0);
	s->dsum = 0;
	s->dhot = 0;
	s->fsum = 0;
	s->fcomplex[0] = s->fcomplex[1] = 0;
	s->ticket = 0;
	std::memset(s->bytes, 0, sizeof(s->bytes));
	s->prod3 = 1;
	s->dprod = 1.0;
	s->imax = INT32_MIN;
	s->imin = INT32_MAX;
	s->dmax = -1e300;
	s->cas8 = 0;
	s->cas16 = 0;
	s->cas32 = 0;
	s->cas64 = 0;
	std::memset(s->casWins, 0, sizeof(s->casWins));
	std::memset(s->hotDone, 0, sizeof(s->hotDone));
	std::memset(s->hotInterleaved, 0, sizeof(s->hotInterleaved));
}

void checkTotals(const Shared *s, int ranks)
{
	const int64_t total = int64_t(ranks) * kIters;
	EXPECT_EQ(s->dsum, double(total));
	int64_t hot = 0, interleaved = 0;
	for (int r = 0; r < ranks; ++r) {
		hot += s->hotDone[r];
		interleaved += s->hotInterleaved[r];
	}
	EXPECT_EQ(s->dhot, double(hot));
	::testing::Test::RecordProperty("hot_updates", std::to_string(hot));
	::testing::Test::RecordProperty("hot_interleaved", std::to_string(interleaved));
	EXPECT_EQ(s->fsum, float(total)); /* exact: below 2^24 */
	EXPECT_EQ(s->fcomplex[0], float(total));
	EXPECT_EQ(s->fcomplex[1], float(-2 * total));
	EXPECT_EQ(s->ticket, total);
	for (int b = 0; b < 8; ++b) {
		EXPECT_EQ(s->bytes[b], uint8_t(total)) << "byte " << b;
	}
	uint64_t p = 1;
	for (int64_t k = 0; k < total; ++k)
		p *= 3;
	EXPECT_EQ(uint64_t(s->prod3), p);
	EXPECT_EQ(s->dprod, 1.0);
	EXPECT_EQ(s->imax, (kIters - 1) * ranks + ranks - 1);
	EXPECT_EQ(s->imin, -((kIters - 1) * ranks + ranks - 1));
	EXPECT_EQ(s->dmax, double((kIters - 1) * ranks + ranks - 1));
	EXPECT_EQ(s->cas8, uint8_t(total));
	EXPECT_EQ(s->cas16, uint16_t(total));
	EXPECT_EQ(s->cas32, uint32_t(total));
	EXPECT_EQ(s->cas64, uint64_t(total));
	for (int r = 0; r < ranks; ++r) {
		EXPECT_EQ(s->casWins[r], uint64_t(kIters));
	}

	/* Tickets: each value handed out once, each rank's in increasing order. */
	std::vector<uint8_t> seen(total, 0);
	for (int r = 0; r < ranks; ++r) {
		for (int i = 0; i < kIters; ++i) {
			int64_t t = s->tickets[r][i];
			ASSERT_TRUE(t >= 0 && t < total) << "rank " << r << " ticket " << t;
			ASSERT_EQ(seen[t], 0) << "ticket " << t << " handed out twice (rank " << r << ")";
			seen[t] = 1;
			if (i > 0) {
				ASSERT_LT(s->tickets[r][i - 1], t) << "rank " << r;
			}
		}
	}
	/* MAX's old values as one rank saw them never go down (one location's coherence order). */
	for (int r = 0; r < ranks; ++r) {
		for (int i = 1; i < kIters; ++i) {
			ASSERT_LE(s->maxSeen[r][i - 1], s->maxSeen[r][i]) << "rank " << r << " step " << i;
		}
	}
}

class OpConcurrentTest : public ::testing::TestWithParam<int>
{
};

TEST_P(OpConcurrentTest, ProcessesRacingOnSharedElementsLoseNoUpdate)
{
	int ranks = GetParam();
	SharedMapping m;
	ASSERT_NE(m.s, nullptr) << "mmap MAP_SHARED failed";
	prepare(m.s);
	std::vector<pid_t> pids;
	for (int r = 0; r < ranks; ++r) {
		pid_t pid = fork();
		ASSERT_GE(pid, 0) << "fork failed";
		if (pid == 0) {
			rankBody(m.s, r, ranks);
			_exit(0);
		}
		pids.push_back(pid);
	}
	for (pid_t pid : pids) {
		int status = 0;
		ASSERT_EQ(waitpid(pid, &status, 0), pid);
		EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << "status " << status;
	}
	checkTotals(m.s, ranks);
}

/* The same race among threads of one process, so ThreadSanitizer can see it. */
TEST_P(OpConcurrentTest, ThreadsRacingOnSharedElementsLoseNoUpdate)
{
	int ranks = GetParam();
	SharedMapping m;
	ASSERT_NE(m.s, nullptr) << "mmap MAP_SHARED failed";
	prepare(m.s);
	std::vector<std::thread> threads;
	for (int r = 0; r < ranks; ++r)
		threads.emplace_back(rankBody, m.s, r, ranks);
	for (std::thread &t : threads)
		t.join();
	checkTotals(m.s, ranks);
}

/*
 * applyOpWord (several lanes of one aligned word in one compare-exchange)
 * racing per-element applyOp on the same lanes, and a third thread
 * fetching the whole word: no update is lost, and every fetched snapshot
 * shows the word-wide updates whole (bytes 2..7, which only they touch,
 * are always equal). A plain store of the recomputed word instead of the
 * compare-exchange would lose the per-element increments.
 */
TEST(OpWordTest, WordUpdatesAndElementUpdatesLoseNothing)
{
	alignas(64) static uint8_t lanes[16];
	std::memset(lanes, 0, sizeof(lanes));
	constexpr int kRounds = 1000000;
	const uint8_t ones[8] = { 1, 1, 1, 1, 1, 1, 1, 1 };
	ASSERT_TRUE(wordAt(Op::Sum, elem(BasicType::Uint8), lanes + 2, 6));
	ASSERT_FALSE(wordAt(Op::Sum, elem(BasicType::Uint8), lanes + 4, 6)) << "crosses the word";
	ASSERT_FALSE(wordAt(Op::Sum, elem(BasicType::Uint8), lanes, 1)) << "one element: plain applyOp";
	ASSERT_FALSE(wordAt(Op::Sum, elem(BasicType::Uint16), lanes + 1, 2)) << "misaligned element";
	std::atomic<bool> go{ false };
	auto wordBody = [&] {
		while (!go.load(std::memory_order_acquire))
			;
		for (int i = 0; i < kRounds; ++i)
			applyOpWord(Op::Sum, elem(BasicType::Uint8), lanes, ones, nullptr, 8);
	};
	auto elementBody = [&] {
		while (!go.load(std::memory_order_acquire))
			;
		for (int i = 0; i < kRounds; ++i)
			applyOp(Op::Sum, elem(BasicType::Uint8), lanes, ones, nullptr, 2); /* bytes 0 and 1, one RMW each */
	};
	int torn = 0;
	auto fetchBody = [&] {
		while (!go.load(std::memory_order_acquire))
			;
		uint8_t seen[8];
		for (int i = 0; i < kRounds / 4; ++i) {
			applyOpWord(Op::NoOp, elem(BasicType::Uint8), lanes, nullptr, seen, 8);
			for (int k = 3; k < 8; ++k)
				torn += seen[k] != seen[2];
		}
	};
	std::thread a(wordBody), b(elementBody), c(fetchBody);
	go.store(true, std::memory_order_release);
	a.join();
	b.join();
	c.join();
	/* Bytes 0 and 1: +1 per word update and +1 per element update; the others only the word's. */
	EXPECT_EQ(lanes[0], static_cast<uint8_t>(2 * kRounds));
	EXPECT_EQ(lanes[1], static_cast<uint8_t>(2 * kRounds));
	for (int k = 2; k < 8; ++k)
		EXPECT_EQ(lanes[k], static_cast<uint8_t>(kRounds)) << "byte " << k;
	EXPECT_EQ(torn, 0) << "a fetched word showed a word-wide update in part";
	for (int k = 8; k < 16; ++k)
		EXPECT_EQ(lanes[k], 0) << "byte " << k << " outside the word changed";
}

INSTANTIATE_TEST_SUITE_P(Ranks, OpConcurrentTest, ::testing::Values(2, 4),
			 [](const ::testing::TestParamInfo<int> &info) { return std::to_string(info.param); });

} /* namespace */
