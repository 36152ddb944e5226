/* SPDX-License-Identifier: MIT */
/*
 * A plain C program, built outside the build tree against the installed
 * librma: every rank puts its rank into its right neighbour's window and
 * reads its left neighbour's back. Prints "ring ok" from rank 0.
 */
#include <stdio.h>

#include <rma/rma.h>

int main(int argc, char **argv)
{
	int rank, size, *base, got = -1;
	rma_win win;
	if (rma_init(&argc, &argv) != RMA_SUCCESS)
		return 1;
	rma_comm_rank(RMA_COMM_WORLD, &rank);
	rma_comm_size(RMA_COMM_WORLD, &size);
	rma_win_allocate(sizeof(int), sizeof(int), RMA_INFO_NULL, RMA_COMM_WORLD, &base, &win);
	rma_win_fence(0, win);
	rma_put(&rank, 1, RMA_INT, (rank + 1) % size, 0, 1, RMA_INT, win);
	rma_win_fence(0, win);
	rma_get(&got, 1, RMA_INT, (rank + size - 1) % size, 0, 1, RMA_INT, win);
	rma_win_fence(RMA_MODE_NOSUCCEED, win);
	int expect = (rank + size - 2) % size;
	if (*base != (rank + size - 1) % size || got != expect) {
		fprintf(stderr, "rank %d: window holds %d, got %d (expected %d)\n", rank, *base, got, expect);
		return 1;
	}
	rma_win_free(&win);
	if (rank == 0)
		printf("ring ok on %d ranks\n", size);
	return rma_finalize();
}
