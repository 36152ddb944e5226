/* SPDX-License-Identifier: MIT */
/*
 * Every rank allocates a window of MiB megabytes (argv[1]) and fills it;
 * then the last rank kills itself with SIGKILL while the others wait in a
 * fence that can never complete. The launcher must end the job and the
 * memory must go back to the system.
 */
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <rma/rma.h>

int main(int argc, char **argv)
{
	int rank, size;
	char *base;
	rma_win win;
	rma_aint bytes = (rma_aint)atoi(argc > 1 ? argv[1] : "64") << 20;
	rma_init(&argc, &argv);
	rma_comm_rank(RMA_COMM_WORLD, &rank);
	rma_comm_size(RMA_COMM_WORLD, &size);
	rma_win_allocate(bytes, 1, RMA_INFO_NULL, RMA_COMM_WORLD, &base, &win);
	memset(base, rank + 1, (size_t)bytes);
	rma_win_fence(0, win);
	if (rank == size - 1)
		raise(SIGKILL);
	rma_win_fence(0, win); /* never completes */
	rma_win_free(&win);
	rma_finalize();
	return 0;
}
