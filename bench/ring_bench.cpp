/* SPDX-License-Identifier: MIT */
/*
 * MpscRing throughput: 1, 2 and 4 producer threads write into one ring that
 * the benchmark's own thread drains (the consumer), and the cost of one
 * write + read in a single thread with no contention. Records are 16 B
 * (inline), 256 B (inline in a 512 B slot) and 4 KiB (staged).
 */
#include "progress/mpsc_ring.h"

#include <cstdlib>
#include <cstring>
#include <memory>
#include <thread>
#include <vector>

#include <benchmark/benchmark.h>

namespace librma {
namespace {

struct FreeDeleter {
	void operator()(void *p) const { std::free(p); }
};

struct Ring {
	explicit Ring(uint32_t producers)
	{
		config = { .slots = 1024, .slotBytes = 512, .producers = producers, .stageBytes = 1u << 20 };
		bytes = MpscRing::bytesFor(config);
		mem.reset(std::aligned_alloc(kFalseSharingPad, (bytes + 127) / 128 * 128));
		auto r = MpscRing::init(mem.get(), bytes, config);
		if (r.ok())
			ring = *r;
	}
	MpscRingConfig config;
	std::size_t bytes;
	std::unique_ptr<void, FreeDeleter> mem;
	MpscRing ring;
};

/* Args: producers, payload bytes. Each iteration moves kBatch records. */
void BM_RingThroughput(benchmark::State &state)
{
	constexpr uint32_t kBatch = 1 << 16;
	const auto producers = static_cast<uint32_t>(state.range(0));
	const auto length = static_cast<std::size_t>(state.range(1));
	Ring r(producers);
	std::vector<std::byte> payload(length, std::byte{ 0x5a });
	uint64_t sink = 0;

	for (auto _ : state) {
		std::vector<std::thread> threads;
		for (uint32_t p = 0; p < producers; p++) {
			threads.emplace_back([&, p] {
				for (uint32_t i = 0; i < kBatch / producers; i++) {
					if (r.ring.write(p, i, { payload.data(), payload.size() }) != MpscStatus::Ok)
						std::abort();
				}
			});
		}
		uint32_t got = 0;
		const uint32_t want = kBatch / producers * producers;
		while (got < want) {
			int n = r.ring.read([&](const MpscRecord &rec) { sink += rec.payload.size() + rec.type; },
					    256);
			if (n == 0)
				cpuRelax();
			got += static_cast<uint32_t>(n);
		}
		for (std::thread &t : threads)
			t.join();
	}
	benchmark::DoNotOptimize(sink);
	state.SetItemsProcessed(int64_t(state.iterations()) * (kBatch / producers * producers));
	state.SetBytesProcessed(int64_t(state.iterations()) * (kBatch / producers * producers) * int64_t(length));
	state.counters["hw_threads"] = std::thread::hardware_concurrency();
}
BENCHMARK(BM_RingThroughput)
	->ArgsProduct({ { 1, 2, 4 }, { 16, 256, 4096 } })
	->ArgNames({ "producers", "bytes" })
	->UseRealTime()
	->Unit(benchmark::kMillisecond);

/* One write and one read in the same thread: the uncontended cost of a record. */
void BM_RingWriteRead(benchmark::State &state)
{
	const auto length = static_cast<std::size_t>(state.range(0));
	Ring r(1);
	std::vector<std::byte> payload(length, std::byte{ 0x5a });
	uint64_t sink = 0;
	for (auto _ : state) {
		if (r.ring.tryWrite(0, 1, { payload.data(), payload.size() }) != MpscStatus::Ok)
			std::abort();
		r.ring.read([&](const MpscRecord &rec) { sink += rec.payload.size(); }, 1);
	}
	benchmark::DoNotOptimize(sink);
	state.SetItemsProcessed(int64_t(state.iterations()));
}
BENCHMARK(BM_RingWriteRead)->Arg(16)->Arg(256)->Arg(4096);

} /* namespace */
} /* namespace librma */

BENCHMARK_MAIN();
