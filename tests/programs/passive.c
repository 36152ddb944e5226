/* SPDX-License-Identifier: MIT */
/*
 * A plain C program for a job of any launcher: passive-target atomics and a
 * shared window over a split communicator. Every rank adds 1 + rank to a
 * counter at rank 0, 100 times, under lock_all; then each rank reads its
 * right neighbour's slot of a shared window directly. Prints "passive ok on
 * N ranks" from rank 0; exits 1 with a message when a result is wrong.
 */
#include <stdint.h>
#include <stdio.h>

#include <rma/rma.h>

#define ROUNDS 100

static int fail(int rank, const char *what, long got, long expected)
{
	fprintf(stderr, "rank %d: %s is %ld, expected %ld\n", rank, what, got, expected);
	return 1;
}

int main(int argc, char **argv)
{
	int rank, size;
	if (rma_init(&argc, &argv) != RMA_SUCCESS)
		return 1;
	rma_comm_rank(RMA_COMM_WORLD, &rank);
	rma_comm_size(RMA_COMM_WORLD, &size);

	int64_t *counter;
	rma_win win;
	if (rma_win_allocate(rank == 0 ? sizeof(int64_t) : 0, sizeof(int64_t), RMA_INFO_NULL, RMA_COMM_WORLD, &counter,
			     &win) != RMA_SUCCESS)
		return 1;
	if (rank == 0)
		*counter = 0;
	rma_barrier(RMA_COMM_WORLD);
	rma_win_lock_all(0, win);
	int64_t add = 1 + rank, old = -1;
	for (int i = 0; i < ROUNDS; ++i) {
		rma_fetch_and_op(&add, &old, RMA_INT64_T, 0, 0, RMA_SUM, win);
		rma_win_flush(0, win);
	}
	rma_win_unlock_all(win);
	rma_barrier(RMA_COMM_WORLD);
	if (rank == 0) {
		long expected = (long)ROUNDS * size * (size + 1) / 2;
		if (*counter != expected)
			return fail(rank, "the counter", (long)*counter, expected);
	}
	rma_win_free(&win);

	/* A shared window over a communicator split in one color: direct loads of a neighbour's slot. */
	rma_comm comm;
	if (rma_comm_split(RMA_COMM_WORLD, 0, size - rank, &comm) != RMA_SUCCESS)
		return 1;
	int crank;
	rma_comm_rank(comm, &crank);
	int *mine;
	rma_win shared;
	if (rma_win_allocate_shared(sizeof(int), sizeof(int), RMA_INFO_NULL, comm, &mine, &shared) != RMA_SUCCESS)
		return 1;
	*mine = 1000 + rank;
	rma_win_fence(0, shared);
	int right = (crank + 1) % size;
	rma_aint bytes;
	int unit, *theirs;
	rma_win_shared_query(shared, right, &bytes, &unit, &theirs);
	int rightWorld = size - 1 - right;
	if (bytes != sizeof(int) || *theirs != 1000 + rightWorld)
		return fail(rank, "the neighbour's slot", *theirs, 1000 + rightWorld);
	rma_win_fence(0, shared);
	rma_win_free(&shared);
	rma_comm_free(&comm);
	if (rank == 0)
		printf("passive ok on %d ranks\n", size);
	return rma_finalize();
}
