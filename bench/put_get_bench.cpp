/* SPDX-License-Identifier: MIT */
/*
 * The put/get fast path in one process (a window of one rank, target =
 * self): what librma adds to a memcpy (handle lookup, epoch and bounds
 * checks, signature match). Cross-core latency and bandwidth are rmabench's.
 *
 *   build/bench/put_get_bench --benchmark_repetitions=5 --benchmark_report_aggregates_only
 */
#include <benchmark/benchmark.h>

#include <algorithm>
#include <cstdlib>
#include <cstring>

#include <rma/rma.h>

namespace {

constexpr long kMaxBytes = 4 << 20;

struct Fixture {
	Fixture()
	{
		rma_init(nullptr, nullptr);
		rma_win_allocate(kMaxBytes, 1, RMA_INFO_NULL, RMA_COMM_WORLD, &base, &win);
		rma_win_fence(0, win);
		src = static_cast<char *>(std::aligned_alloc(4096, kMaxBytes));
		std::memset(src, 1, kMaxBytes);
	}
	rma_win win = RMA_WIN_NULL;
	char *base = nullptr;
	char *src = nullptr;
};

Fixture &fixture()
{
	static Fixture f;
	return f;
}

void BM_PutLatency(benchmark::State &state)
{
	Fixture &f = fixture();
	int n = static_cast<int>(state.range(0));
	for (auto _ : state) {
		rma_put(f.src, n, RMA_BYTE, 0, 0, n, RMA_BYTE, f.win);
		benchmark::ClobberMemory();
	}
	state.SetBytesProcessed(state.iterations() * n);
}

void BM_GetLatency(benchmark::State &state)
{
	Fixture &f = fixture();
	int n = static_cast<int>(state.range(0));
	for (auto _ : state) {
		rma_get(f.src, n, RMA_BYTE, 0, 0, n, RMA_BYTE, f.win);
		benchmark::ClobberMemory();
	}
	state.SetBytesProcessed(state.iterations() * n);
}

/* The floor: the same copy with no librma in the way. */
void BM_RawMemcpy(benchmark::State &state)
{
	Fixture &f = fixture();
	size_t n = static_cast<size_t>(state.range(0));
	for (auto _ : state) {
		std::memcpy(f.base, f.src, n);
		benchmark::ClobberMemory();
	}
	state.SetBytesProcessed(state.iterations() * static_cast<int64_t>(n));
}

/* The copy librma makes for large puts (common/copy.h): 256 KiB memcpys, the cached path. */
void BM_PiecewiseMemcpy(benchmark::State &state)
{
	Fixture &f = fixture();
	size_t n = static_cast<size_t>(state.range(0));
	constexpr size_t kPiece = 256 << 10;
	for (auto _ : state) {
		for (size_t done = 0; done < n; done += kPiece)
			std::memcpy(f.base + done, f.src + done, std::min(kPiece, n - done));
		benchmark::ClobberMemory();
	}
	state.SetBytesProcessed(state.iterations() * static_cast<int64_t>(n));
}

/* A fence of one rank: the fixed cost of the call (no peer to wait for). */
void BM_FenceAlone(benchmark::State &state)
{
	Fixture &f = fixture();
	for (auto _ : state)
		rma_win_fence(0, f.win);
}

/* Rejecting an out-of-range put: the error path must stay cheap enough to test in loops. */
void BM_PutOutOfRange(benchmark::State &state)
{
	Fixture &f = fixture();
	rma_win_set_errhandler(f.win, RMA_ERRORS_RETURN);
	for (auto _ : state)
		benchmark::DoNotOptimize(rma_put(f.src, 8, RMA_BYTE, 0, kMaxBytes, 8, RMA_BYTE, f.win));
}

BENCHMARK(BM_PutLatency)->RangeMultiplier(2)->Range(8, kMaxBytes);
BENCHMARK(BM_GetLatency)->RangeMultiplier(2)->Range(8, kMaxBytes);
BENCHMARK(BM_RawMemcpy)->RangeMultiplier(2)->Range(8, kMaxBytes);
BENCHMARK(BM_PiecewiseMemcpy)->RangeMultiplier(4)->Range(256 << 10, kMaxBytes);
BENCHMARK(BM_FenceAlone);
BENCHMARK(BM_PutOutOfRange);

} /* namespace */

BENCHMARK_MAIN();
