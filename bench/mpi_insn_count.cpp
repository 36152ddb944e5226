/* SPDX-License-Identifier: MIT */
/*
 * Instructions per operation + flush through the MPI drop-in against the same
 * rma_* calls (issue 13, docs/design/mpi-dropin.md §6.3), counted by
 * callgrind: the shim's cost in instructions, which this shared machine
 * cannot blur the way it blurs nanoseconds.
 *
 * A one-rank MPI job (singleton, no launcher), a window to self: the MPI
 * window the linked librmampi-<abi>.so serves, and a native librma window on
 * the runtime the shim brought up. The operations are those of the OSU
 * one-sided latency tests at 8 bytes: put/get of 8 MPI_CHAR, accumulate
 * and get_accumulate of 2 MPI_INT with MPI_SUM, fetch-and-op and
 * compare-and-swap of one MPI_LONG_LONG, each followed by a flush, inside a
 * lock_all epoch.
 * bench/insn_count.sh runs it (PROG=...) and prints the table:
 *
 *   PROG=build/bench/mpi_insn_count-mpich RANKS=1 bash bench/insn_count.sh build
 *
 * Outside valgrind the client requests are no-ops and it only checks that
 * every case runs and the shim's window is librma's.
 */
#include <valgrind/callgrind.h>

#include <mpi.h>

#include "mpi_bench_window.h"

#include <rma/rma.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>

namespace {

constexpr int kWarm = 200;
constexpr int kIters = 2000; /* iters in bench/insn_count.sh */

struct Ctx {
	MPI_Win mwin = MPI_WIN_NULL;
	rma_win rwin = RMA_WIN_NULL;
	void *mbase = nullptr;
	void *rbase = nullptr;
	char bytes[8] = {};
	int ints[4] = { 1, 1, 0, 0 }; /* 2 operands, 2 results */
	long long one = 1, compare = 0, result = 0;
};

template <typename Body> void runCase(const char *name, Body body)
{
	for (int i = 0; i < kWarm; ++i)
		body();
	CALLGRIND_ZERO_STATS;
	CALLGRIND_TOGGLE_COLLECT;
	for (int i = 0; i < kIters; ++i)
		body();
	CALLGRIND_TOGGLE_COLLECT;
	CALLGRIND_DUMP_STATS_AT(name);
}

} /* namespace */

int main(int argc, char **argv)
{
	MPI_Init(&argc, &argv);
	Ctx c;
	rmabench_mpi::allocateServedWindow("mpi_insn_count", 4096, 1, &c.mbase, &c.mwin);
	/* librma is up (the shim initialized it): the native window shares its runtime. */
	if (rma_win_allocate(4096, 1, RMA_INFO_NULL, RMA_COMM_WORLD, &c.rbase, &c.rwin) != RMA_SUCCESS) {
		std::fprintf(stderr, "mpi_insn_count: rma_win_allocate failed\n");
		MPI_Abort(MPI_COMM_WORLD, 1);
	}
	std::memset(c.mbase, 0, 4096);
	std::memset(c.rbase, 0, 4096);
	MPI_Win_lock_all(0, c.mwin);
	rma_win_lock_all(0, c.rwin);
	MPI_Win m = c.mwin;
	rma_win r = c.rwin;

	runCase("native_put_flush", [&] {
		rma_put(c.bytes, 8, RMA_CHAR, 0, 0, 8, RMA_CHAR, r);
		rma_win_flush(0, r);
	});
	runCase("shim_put_flush", [&] {
		MPI_Put(c.bytes, 8, MPI_CHAR, 0, 0, 8, MPI_CHAR, m);
		MPI_Win_flush(0, m);
	});
	runCase("native_get_flush", [&] {
		rma_get(c.bytes, 8, RMA_CHAR, 0, 0, 8, RMA_CHAR, r);
		rma_win_flush(0, r);
	});
	runCase("shim_get_flush", [&] {
		MPI_Get(c.bytes, 8, MPI_CHAR, 0, 0, 8, MPI_CHAR, m);
		MPI_Win_flush(0, m);
	});
	runCase("native_acc_flush", [&] {
		rma_accumulate(c.ints, 2, RMA_INT, 0, 8, 2, RMA_INT, RMA_SUM, r);
		rma_win_flush(0, r);
	});
	runCase("shim_acc_flush", [&] {
		MPI_Accumulate(c.ints, 2, MPI_INT, 0, 8, 2, MPI_INT, MPI_SUM, m);
		MPI_Win_flush(0, m);
	});
	runCase("native_get_acc_flush", [&] {
		rma_get_accumulate(c.ints, 2, RMA_INT, c.ints + 2, 2, RMA_INT, 0, 32, 2, RMA_INT, RMA_SUM, r);
		rma_win_flush(0, r);
	});
	runCase("shim_get_acc_flush", [&] {
		MPI_Get_accumulate(c.ints, 2, MPI_INT, c.ints + 2, 2, MPI_INT, 0, 32, 2, MPI_INT, MPI_SUM, m);
		MPI_Win_flush(0, m);
	});
	runCase("native_fop_flush", [&] {
		rma_fetch_and_op(&c.one, &c.result, RMA_LONG_LONG, 0, 16, RMA_SUM, r);
		rma_win_flush(0, r);
	});
	runCase("shim_fop_flush", [&] {
		MPI_Fetch_and_op(&c.one, &c.result, MPI_LONG_LONG, 0, 16, MPI_SUM, m);
		MPI_Win_flush(0, m);
	});
	runCase("native_cas_flush", [&] {
		rma_compare_and_swap(&c.one, &c.compare, &c.result, RMA_LONG_LONG, 0, 24, r);
		rma_win_flush(0, r);
	});
	runCase("shim_cas_flush", [&] {
		MPI_Compare_and_swap(&c.one, &c.compare, &c.result, MPI_LONG_LONG, 0, 24, m);
		MPI_Win_flush(0, m);
	});
	runCase("native_flush", [&] { rma_win_flush(0, r); });
	runCase("shim_flush", [&] { MPI_Win_flush(0, m); });

	/* The calls must have done their work, or the counts mean nothing. */
	long long macc = 0, racc = 0;
	std::memcpy(&macc, static_cast<char *>(c.mbase) + 16, sizeof macc);
	std::memcpy(&racc, static_cast<char *>(c.rbase) + 16, sizeof racc);
	int rc = 0;
	if (macc != kWarm + kIters || racc != kWarm + kIters) {
		std::fprintf(stderr, "mpi_insn_count: wrong fetch-and-op sums: shim %lld, native %lld (want %d)\n",
			     macc, racc, kWarm + kIters);
		rc = 1;
	}
	rma_win_unlock_all(r);
	MPI_Win_unlock_all(m);
	rma_win_free(&c.rwin);
	MPI_Win_free(&c.mwin);
	if (rc == 0)
		std::printf("mpi_insn_count: 14 cases x %d iterations ran\n", kIters);
	MPI_Finalize();
	return rc;
}
