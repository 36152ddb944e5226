/* SPDX-License-Identifier: MIT */
/*
 * What the MPI drop-in's benchmarks (mpi_shim_bench, mpi_insn_count) share:
 * a one-process MPI job with a window to self, and the check that the shim
 * gave that window to librma (else they would measure the MPI's own RMA).
 */
#pragma once

#include <mpi.h>

#include <cstdio>
#include <cstring>

namespace rmabench_mpi {

/* Whether the shim serves @win with librma (its librma_engine info key). */
inline bool servedByLibrma(MPI_Win win)
{
	MPI_Info info;
	char value[64] = "";
	int flag = 0;
	MPI_Win_get_info(win, &info);
#if MPI_VERSION >= 4
	int len = sizeof value;
	MPI_Info_get_string(info, "librma_engine", &len, value, &flag);
#else
	MPI_Info_get(info, "librma_engine", sizeof value - 1, value, &flag);
#endif
	MPI_Info_free(&info);
	return flag && std::strcmp(value, "librma") == 0;
}

/*
 * MPI_Win_allocate of @bytes (displacement unit @dispUnit) over a job of one
 * process, served by librma; aborts the job with a message naming @program
 * otherwise.
 */
template<typename T>
void allocateServedWindow(const char *program, MPI_Aint bytes, int dispUnit, T **base, MPI_Win *win)
{
	int size = 0;
	MPI_Comm_size(MPI_COMM_WORLD, &size);
	if (size != 1) {
		std::fprintf(stderr, "%s: run it as one process (a window to self)\n", program);
		MPI_Abort(MPI_COMM_WORLD, 2);
	}
	MPI_Win_allocate(bytes, dispUnit, MPI_INFO_NULL, MPI_COMM_WORLD, base, win);
	if (!servedByLibrma(*win)) {
		std::fprintf(stderr,
			     "%s: the shim did not give the window to librma "
			     "(is librmampi linked ahead of the MPI, and RMA_MPI_ENGINE unset?)\n",
			     program);
		MPI_Abort(MPI_COMM_WORLD, 1);
	}
}

} /* namespace rmabench_mpi */
