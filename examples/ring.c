/* SPDX-License-Identifier: MIT */
/*
 * The README's first program: every rank puts its rank into its right
 * neighbour's window, then prints what its left neighbour put there.
 *
 *   cc ring.c $(pkg-config --cflags --libs rma) -o ring && rmarun -n 4 ./ring
 */
#include <stdio.h>

#include <rma/rma.h>

int main(int argc, char **argv)
{
	int rank, size, *base;
	rma_win win;
	rma_init(&argc, &argv);
	rma_comm_rank(RMA_COMM_WORLD, &rank);
	rma_comm_size(RMA_COMM_WORLD, &size);
	rma_win_allocate(sizeof(int), sizeof(int), RMA_INFO_NULL, RMA_COMM_WORLD, &base, &win);
	rma_win_fence(0, win);
	rma_put(&rank, 1, RMA_INT, (rank + 1) % size, 0, 1, RMA_INT, win);
	rma_win_fence(0, win); /* *base now holds the left neighbour's rank */
	printf("rank %d of %d: my left neighbour put %d\n", rank, size, *base);
	rma_win_free(&win);
	return rma_finalize();
}
