/* SPDX-License-Identifier: MIT */
/*
 * The reduction-op kernels' costs.
 *
 * Latency of one element (the fetch_and_op fast path): applyOp() through
 * the dispatch table for int64 SUM (fetch_add), double SUM (compare-exchange
 * loop) and compareAndSwap(), next to the raw builtins they stand for and to
 * the inline fetchAdd64(). One thread hits a private hot line; two threads
 * (->Threads(2)) share one word, so the line bounces between cores.
 *
 * Bandwidth of arrays (what the progress agent does with a queued
 * accumulate): double SUM on n = 1 Ki .. 1 Mi elements, applyOpPlain()
 * (vectorized, no locked instruction) against applyOp() (one atomic
 * compare-exchange per element), reported as target bytes per second.
 */
#include <benchmark/benchmark.h>

#include <cstdint>
#include <cstring>
#include <vector>

#include "op/op.h"

namespace {

using librma::Op;

constexpr uint8_t kInt64 = static_cast<uint8_t>(librma::BasicType::Int64);
constexpr uint8_t kDouble = static_cast<uint8_t>(librma::BasicType::Double);

/* The word the threads of one benchmark share (one line of its own). */
struct alignas(128) Word {
	int64_t i = 0;
	double d = 0;
};
Word gWord;

void BM_RawFetchAdd(benchmark::State &state)
{
	int64_t one = 1, old = 0;
	for (auto _ : state) {
		old = __atomic_fetch_add(&gWord.i, one, __ATOMIC_RELAXED);
		benchmark::DoNotOptimize(old);
	}
}
BENCHMARK(BM_RawFetchAdd)->Threads(1)->Threads(2);

void BM_FetchAdd64Inline(benchmark::State &state)
{
	int64_t one = 1, old = 0;
	for (auto _ : state) {
		librma::fetchAdd64(&gWord.i, &one, &old);
		benchmark::DoNotOptimize(old);
	}
}
BENCHMARK(BM_FetchAdd64Inline)->Threads(1)->Threads(2);

void BM_ApplyOpInt64Sum(benchmark::State &state)
{
	int64_t one = 1, old = 0;
	for (auto _ : state) {
		librma::applyOp(Op::Sum, kInt64, &gWord.i, &one, &old, 1);
		benchmark::DoNotOptimize(old);
	}
}
BENCHMARK(BM_ApplyOpInt64Sum)->Threads(1)->Threads(2);

/* What a hand-written double fetch-add is: a compare-exchange loop. */
void BM_RawDoubleCasAdd(benchmark::State &state)
{
	for (auto _ : state) {
		double prev, next;
		__atomic_load(&gWord.d, &prev, __ATOMIC_RELAXED);
		do
			next = prev + 1.0;
		while (!__atomic_compare_exchange(&gWord.d, &prev, &next, true, __ATOMIC_RELAXED, __ATOMIC_RELAXED));
		benchmark::DoNotOptimize(prev);
	}
}
BENCHMARK(BM_RawDoubleCasAdd)->Threads(1)->Threads(2);

void BM_ApplyOpDoubleSum(benchmark::State &state)
{
	double one = 1.0, old = 0;
	for (auto _ : state) {
		librma::applyOp(Op::Sum, kDouble, &gWord.d, &one, &old, 1);
		benchmark::DoNotOptimize(old);
	}
}
BENCHMARK(BM_ApplyOpDoubleSum)->Threads(1)->Threads(2);

void BM_RawCas(benchmark::State &state)
{
	int64_t expected = 0, desired = 1;
	for (auto _ : state) {
		int64_t e = expected;
		__atomic_compare_exchange_n(&gWord.i, &e, desired, false, __ATOMIC_RELAXED, __ATOMIC_RELAXED);
		benchmark::DoNotOptimize(e);
	}
}
BENCHMARK(BM_RawCas)->Threads(1)->Threads(2);

void BM_CompareAndSwap(benchmark::State &state)
{
	int64_t compare = 0, origin = 1, old = 0;
	for (auto _ : state) {
		librma::compareAndSwap(kInt64, &gWord.i, &compare, &origin, &old);
		benchmark::DoNotOptimize(old);
	}
}
BENCHMARK(BM_CompareAndSwap)->Threads(1)->Threads(2);

/* n doubles += n doubles; state.range(1): 0 plain, 1 atomic per element; 2 with the old values. */
void arraySum(benchmark::State &state, bool atomic)
{
	const size_t n = static_cast<size_t>(state.range(0));
	const bool withOld = state.range(1) != 0;
	std::vector<double> target(n, 1.0), origin(n, 0.5), old(withOld ? n : 0);
	double *o = withOld ? old.data() : nullptr;
	for (auto _ : state) {
		if (atomic)
			librma::applyOp(Op::Sum, kDouble, target.data(), origin.data(), o, n);
		else
			librma::applyOpPlain(Op::Sum, kDouble, target.data(), origin.data(), o, n);
		benchmark::ClobberMemory();
	}
	state.SetBytesProcessed(int64_t(state.iterations()) * int64_t(n * sizeof(double)));
	state.SetLabel(withOld ? "with old" : "no old");
}

void BM_DoubleSumPlain(benchmark::State &state)
{
	arraySum(state, false);
}
BENCHMARK(BM_DoubleSumPlain)->ArgsProduct({ benchmark::CreateRange(1 << 10, 1 << 20, 4), { 0, 1 } });

void BM_DoubleSumAtomic(benchmark::State &state)
{
	arraySum(state, true);
}
BENCHMARK(BM_DoubleSumAtomic)->ArgsProduct({ benchmark::CreateRange(1 << 10, 1 << 20, 4), { 0, 1 } });

/* int32 SUM, plain, through each ISA's table (range(1): 0 baseline, 1 AVX2, the one applyOpPlain takes here). */
void BM_Int32SumPlainIsa(benchmark::State &state)
{
	const size_t n = static_cast<size_t>(state.range(0));
	const librma::detail::KernelTable *table = &librma::detail::kPlainKernels;
#if defined(__x86_64__)
	if (state.range(1) == 1) {
		if (librma::detail::plainKernels != &librma::detail::kPlainKernelsAvx2) {
			state.SkipWithError("this CPU has no AVX2");
			return;
		}
		table = &librma::detail::kPlainKernelsAvx2;
	}
#endif
	constexpr uint8_t kInt32 = static_cast<uint8_t>(librma::BasicType::Int32);
	std::vector<int32_t> target(n, 1), origin(n, 2);
	for (auto _ : state) {
		(*table)[static_cast<uint32_t>(Op::Sum)][kInt32](target.data(), origin.data(), nullptr, n);
		benchmark::ClobberMemory();
	}
	state.SetBytesProcessed(int64_t(state.iterations()) * int64_t(n * sizeof(int32_t)));
	state.SetLabel(state.range(1) ? "avx2" : "baseline");
}
BENCHMARK(BM_Int32SumPlainIsa)->ArgsProduct({ { 256, 4096, 16384, 262144 }, { 0, 1 } });

/* The same bytes through memcpy: the ceiling for a plain pass over the target. */
void BM_MemcpyReference(benchmark::State &state)
{
	const size_t n = static_cast<size_t>(state.range(0));
	std::vector<double> target(n, 1.0), origin(n, 0.5);
	for (auto _ : state) {
		std::memcpy(target.data(), origin.data(), n * sizeof(double));
		benchmark::ClobberMemory();
	}
	state.SetBytesProcessed(int64_t(state.iterations()) * int64_t(n * sizeof(double)));
}
BENCHMARK(BM_MemcpyReference)->RangeMultiplier(4)->Range(1 << 10, 1 << 20);

} /* namespace */

BENCHMARK_MAIN();
