/* SPDX-License-Identifier: MIT */
/*
 * What the MPI drop-in adds to librma's own call (docs/design/mpi-dropin.md
 * §6.3, budget 10 ns): in a one-rank MPI job, a window to self, each
 * operation through MPI_* (the linked librmampi-<abi>.so: window, datatype
 * and op lookups) against the same rma_* call on a native librma window.
 * Built once per MPI with a shim, linked ahead of the MPI:
 *
 *   build/bench/mpi_shim_bench-mpich --benchmark_repetitions=5 --benchmark_report_aggregates_only
 *
 * Every operation is one int to rank 0 inside a lock_all epoch; the window
 * the shim gives must be librma's (checked through librma_engine in
 * MPI_Win_get_info), or the run stops.
 */
#include <benchmark/benchmark.h>

#include <mpi.h>

#include "mpi_bench_window.h"

#include <rma/rma.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>

namespace {

constexpr int kInts = 1024;

struct Fixture {
	MPI_Win mwin = MPI_WIN_NULL;
	int *mbase = nullptr;
	rma_win rwin = RMA_WIN_NULL;
	int *rbase = nullptr;
};

Fixture fx;


/* ---- put / get ---- */

void BM_PutNative(benchmark::State &state)
{
	int v = 1;
	for (auto _ : state)
		rma_put(&v, 1, RMA_INT, 0, 0, 1, RMA_INT, fx.rwin);
}

void BM_PutShim(benchmark::State &state)
{
	int v = 1;
	for (auto _ : state)
		MPI_Put(&v, 1, MPI_INT, 0, 0, 1, MPI_INT, fx.mwin);
}

void BM_GetNative(benchmark::State &state)
{
	int v = 0;
	for (auto _ : state) {
		rma_get(&v, 1, RMA_INT, 0, 0, 1, RMA_INT, fx.rwin);
		benchmark::DoNotOptimize(v);
	}
}

void BM_GetShim(benchmark::State &state)
{
	int v = 0;
	for (auto _ : state) {
		MPI_Get(&v, 1, MPI_INT, 0, 0, 1, MPI_INT, fx.mwin);
		benchmark::DoNotOptimize(v);
	}
}

/* ---- accumulate family ---- */

void BM_AccumulateNative(benchmark::State &state)
{
	int v = 1;
	for (auto _ : state)
		rma_accumulate(&v, 1, RMA_INT, 0, 1, 1, RMA_INT, RMA_SUM, fx.rwin);
}

void BM_AccumulateShim(benchmark::State &state)
{
	int v = 1;
	for (auto _ : state)
		MPI_Accumulate(&v, 1, MPI_INT, 0, 1, 1, MPI_INT, MPI_SUM, fx.mwin);
}

void BM_FetchAndOpNative(benchmark::State &state)
{
	int v = 1, r = 0;
	for (auto _ : state) {
		rma_fetch_and_op(&v, &r, RMA_INT, 0, 2, RMA_SUM, fx.rwin);
		benchmark::DoNotOptimize(r);
	}
}

void BM_FetchAndOpShim(benchmark::State &state)
{
	int v = 1, r = 0;
	for (auto _ : state) {
		MPI_Fetch_and_op(&v, &r, MPI_INT, 0, 2, MPI_SUM, fx.mwin);
		benchmark::DoNotOptimize(r);
	}
}

void BM_CompareAndSwapNative(benchmark::State &state)
{
	int v = 1, c = 0, r = 0;
	for (auto _ : state) {
		rma_compare_and_swap(&v, &c, &r, RMA_INT, 0, 3, fx.rwin);
		benchmark::DoNotOptimize(r);
	}
}

void BM_CompareAndSwapShim(benchmark::State &state)
{
	int v = 1, c = 0, r = 0;
	for (auto _ : state) {
		MPI_Compare_and_swap(&v, &c, &r, MPI_INT, 0, 3, fx.mwin);
		benchmark::DoNotOptimize(r);
	}
}

void BM_FlushNative(benchmark::State &state)
{
	for (auto _ : state)
		rma_win_flush(0, fx.rwin);
}

void BM_FlushShim(benchmark::State &state)
{
	for (auto _ : state)
		MPI_Win_flush(0, fx.mwin);
}

BENCHMARK(BM_PutNative);
BENCHMARK(BM_PutShim);
BENCHMARK(BM_GetNative);
BENCHMARK(BM_GetShim);
BENCHMARK(BM_AccumulateNative);
BENCHMARK(BM_AccumulateShim);
BENCHMARK(BM_FetchAndOpNative);
BENCHMARK(BM_FetchAndOpShim);
BENCHMARK(BM_CompareAndSwapNative);
BENCHMARK(BM_CompareAndSwapShim);
BENCHMARK(BM_FlushNative);
BENCHMARK(BM_FlushShim);

} /* namespace */

int main(int argc, char **argv)
{
	MPI_Init(&argc, &argv);
	rmabench_mpi::allocateServedWindow("mpi_shim_bench", kInts * sizeof(int), sizeof(int), &fx.mbase, &fx.mwin);
	/* librma is initialized by the shim: the native window shares its runtime. */
	rma_win_allocate(kInts * sizeof(int), sizeof(int), RMA_INFO_NULL, RMA_COMM_WORLD, &fx.rbase, &fx.rwin);
	MPI_Win_lock_all(0, fx.mwin);
	rma_win_lock_all(0, fx.rwin);

	benchmark::Initialize(&argc, argv);
	benchmark::RunSpecifiedBenchmarks();
	benchmark::Shutdown();

	rma_win_unlock_all(fx.rwin);
	MPI_Win_unlock_all(fx.mwin);
	rma_win_free(&fx.rwin);
	MPI_Win_free(&fx.mwin);
	MPI_Finalize();
	return 0;
}
