/* SPDX-License-Identifier: MIT */
/*
 * Smoke test of the MPI drop-in (issue 13): one body of communication calls
 * under fence, lock, lock_all + flush and a request form, run on an allocate,
 * a create and an allocate_shared window (served by librma when the shim is
 * preloaded) and on an allocate window with librma_engine=mpi (the MPI's
 * own). Any number of ranks (one is a window to self); checks every value.
 *
 * Rank 0 prints, on stdout, the RMA_MPI_STATS line the shim must print at
 * MPI_Finalize (tests/mpi/shim_smoke.sh compares them):
 *   expect: librma-mpi: windows W (librma L, mpi P), operations N
 * L counts the windows whose MPI_Win_get_info says librma_engine=librma.
 */
#include <mpi.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define N 16
#define OPS_PER_BODY 9

static int rank, size, failures;

#define CHECK(cond, ...)                                                       \
	do {                                                                   \
		if (!(cond)) {                                                 \
			fprintf(stderr, "shim_smoke: rank %d: %s:%d: ", rank, \
				__FILE__, __LINE__);                           \
			fprintf(stderr, __VA_ARGS__);                          \
			fputc('\n', stderr);                                   \
			failures++;                                            \
		}                                                              \
	} while (0)

#define MPI_OK(call)                                                               \
	do {                                                                       \
		int rc_ = (call);                                                  \
		if (rc_ != MPI_SUCCESS) {                                          \
			char text_[MPI_MAX_ERROR_STRING];                          \
			int len_ = 0;                                              \
			MPI_Error_string(rc_, text_, &len_);                       \
			fprintf(stderr, "shim_smoke: rank %d: %s failed: %s\n", \
				rank, #call, text_);                               \
			MPI_Abort(MPI_COMM_WORLD, 1);                              \
		}                                                                  \
	} while (0)

/* Reads this rank's own window memory after the peers' updates are complete. */
static int readSelf(MPI_Win win, const int *mem, int i)
{
	int v;
	MPI_OK(MPI_Win_lock(MPI_LOCK_SHARED, rank, 0, win));
	MPI_OK(MPI_Win_sync(win));
	v = ((volatile const int *)mem)[i];
	MPI_OK(MPI_Win_unlock(rank, win));
	return v;
}

static void body(MPI_Win win, int *mem, const char *what)
{
	int peer = (rank + 1) % size;
	int from = (rank + size - 1) % size;
	int one = 1, v = 0, result = -1;
	MPI_Request req;

	/* Fence: put, get, accumulate. */
	MPI_OK(MPI_Win_fence(0, win));
	v = 100 * (rank + 1);
	MPI_OK(MPI_Put(&v, 1, MPI_INT, peer, 0, 1, MPI_INT, win));
	MPI_OK(MPI_Win_fence(0, win));
	CHECK(mem[0] == 100 * (from + 1), "%s: put: slot 0 is %d, want %d", what, mem[0], 100 * (from + 1));
	v = -1;
	MPI_OK(MPI_Get(&v, 1, MPI_INT, peer, 0, 1, MPI_INT, win));
	MPI_OK(MPI_Win_fence(0, win));
	CHECK(v == 100 * (rank + 1), "%s: get: %d, want %d", what, v, 100 * (rank + 1));
	v = rank + 1;
	MPI_OK(MPI_Accumulate(&v, 1, MPI_INT, peer, 1, 1, MPI_INT, MPI_SUM, win));
	MPI_OK(MPI_Accumulate(&v, 1, MPI_INT, rank, 1, 1, MPI_INT, MPI_SUM, win));
	MPI_OK(MPI_Win_fence(MPI_MODE_NOSUCCEED, win));
	CHECK(mem[1] == (rank + 1) + (from + 1), "%s: accumulate: slot 1 is %d, want %d", what, mem[1],
	      (rank + 1) + (from + 1));

	/* Lock: fetch_and_op and compare_and_swap on rank 0. */
	MPI_OK(MPI_Win_lock(MPI_LOCK_EXCLUSIVE, 0, 0, win));
	MPI_OK(MPI_Fetch_and_op(&one, &result, MPI_INT, 0, 2, MPI_SUM, win));
	MPI_OK(MPI_Win_unlock(0, win));
	CHECK(result >= 0 && result < size, "%s: fetch_and_op fetched %d", what, result);
	int cmp = 0, swap = rank + 1;
	MPI_OK(MPI_Win_lock(MPI_LOCK_EXCLUSIVE, 0, 0, win));
	MPI_OK(MPI_Compare_and_swap(&swap, &cmp, &result, MPI_INT, 0, 3, win));
	MPI_OK(MPI_Win_unlock(0, win));
	int won = result == 0, winners = 0;
	MPI_OK(MPI_Allreduce(&won, &winners, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD));
	CHECK(winners == 1, "%s: compare_and_swap: %d ranks swapped, want 1", what, winners);
	if (rank == 0) {
		int f = readSelf(win, mem, 2), c = readSelf(win, mem, 3);
		CHECK(f == size, "%s: fetch_and_op: slot 2 is %d, want %d", what, f, size);
		CHECK(c >= 1 && c <= size, "%s: compare_and_swap: slot 3 is %d", what, c);
	}

	/* lock_all + flush: get_accumulate (NO_OP), put, then a request-based put. */
	MPI_OK(MPI_Win_lock_all(0, win));
	result = -1;
	MPI_OK(MPI_Get_accumulate(NULL, 0, MPI_INT, &result, 1, MPI_INT, peer, 1, 1, MPI_INT, MPI_NO_OP, win));
	MPI_OK(MPI_Win_flush(peer, win));
	CHECK(result == (peer + 1) + (rank + 1), "%s: get_accumulate: %d, want %d", what, result,
	      (peer + 1) + (rank + 1));
	v = 7 + rank;
	MPI_OK(MPI_Put(&v, 1, MPI_INT, peer, 4, 1, MPI_INT, win));
	MPI_OK(MPI_Win_flush_all(win));
	int w5 = 11 + rank;
	MPI_OK(MPI_Rput(&w5, 1, MPI_INT, peer, 5, 1, MPI_INT, win, &req));
	MPI_OK(MPI_Wait(&req, MPI_STATUS_IGNORE));
	MPI_OK(MPI_Win_flush_local(peer, win));
	MPI_OK(MPI_Win_unlock_all(win));
	MPI_OK(MPI_Barrier(MPI_COMM_WORLD));
	v = readSelf(win, mem, 4);
	CHECK(v == 7 + from, "%s: put under lock_all: slot 4 is %d, want %d", what, v, 7 + from);
	v = readSelf(win, mem, 5);
	CHECK(v == 11 + from, "%s: rput: slot 5 is %d, want %d", what, v, 11 + from);
	MPI_OK(MPI_Barrier(MPI_COMM_WORLD));
}

/* 1 if librma serves @win (the shim reports librma_engine=librma), else 0. */
static int servedByLibrma(MPI_Win win)
{
	MPI_Info info;
	char value[64] = "";
	int flag = 0;
	MPI_OK(MPI_Win_get_info(win, &info));
#if MPI_VERSION >= 4
	int len = sizeof value;
	MPI_Info_get_string(info, "librma_engine", &len, value, &flag);
#else
	MPI_Info_get(info, "librma_engine", sizeof value - 1, value, &flag);
#endif
	MPI_Info_free(&info);
	return flag && strcmp(value, "librma") == 0;
}

static int checkAttrs(MPI_Win win, void *base, MPI_Aint bytes, int flavor, const char *what)
{
	void *b = NULL;
	MPI_Aint *sz = NULL;
	int *du = NULL, *fl = NULL, flag = 0;
	MPI_OK(MPI_Win_get_attr(win, MPI_WIN_BASE, &b, &flag));
	CHECK(flag && b == base, "%s: MPI_WIN_BASE %p, want %p", what, b, base);
	MPI_OK(MPI_Win_get_attr(win, MPI_WIN_SIZE, &sz, &flag));
	CHECK(flag && *sz == bytes, "%s: MPI_WIN_SIZE %ld, want %ld", what, (long)*sz, (long)bytes);
	MPI_OK(MPI_Win_get_attr(win, MPI_WIN_DISP_UNIT, &du, &flag));
	CHECK(flag && *du == (int)sizeof(int), "%s: MPI_WIN_DISP_UNIT %d", what, *du);
	MPI_OK(MPI_Win_get_attr(win, MPI_WIN_CREATE_FLAVOR, &fl, &flag));
	CHECK(flag && *fl == flavor, "%s: MPI_WIN_CREATE_FLAVOR %d, want %d", what, *fl, flavor);
	return servedByLibrma(win);
}

int main(int argc, char **argv)
{
	int librma = 0, windows = 0;
	MPI_Win win;
	int *mem;
	MPI_Aint bytes = N * sizeof(int);

	MPI_Init(&argc, &argv);
	MPI_Comm_rank(MPI_COMM_WORLD, &rank);
	MPI_Comm_size(MPI_COMM_WORLD, &size);
	MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);

	/* allocate */
	MPI_OK(MPI_Win_allocate(bytes, sizeof(int), MPI_INFO_NULL, MPI_COMM_WORLD, &mem, &win));
	MPI_Win_set_errhandler(win, MPI_ERRORS_RETURN);
	memset(mem, 0, bytes);
	MPI_Barrier(MPI_COMM_WORLD);
	librma += checkAttrs(win, mem, bytes, MPI_WIN_FLAVOR_ALLOCATE, "allocate");
	windows++;
	body(win, mem, "allocate");
	MPI_OK(MPI_Win_free(&win));
	CHECK(win == MPI_WIN_NULL, "allocate: MPI_Win_free left the handle");

	/* create, over MPI_Alloc_mem memory */
	int *cmem;
	MPI_OK(MPI_Alloc_mem(bytes, MPI_INFO_NULL, &cmem));
	memset(cmem, 0, bytes);
	MPI_OK(MPI_Win_create(cmem, bytes, sizeof(int), MPI_INFO_NULL, MPI_COMM_WORLD, &win));
	MPI_Win_set_errhandler(win, MPI_ERRORS_RETURN);
	librma += checkAttrs(win, cmem, bytes, MPI_WIN_FLAVOR_CREATE, "create");
	windows++;
	body(win, cmem, "create");
	MPI_OK(MPI_Win_free(&win));
	MPI_Free_mem(cmem);

	/* allocate_shared, and shared_query of the peer */
	MPI_OK(MPI_Win_allocate_shared(bytes, sizeof(int), MPI_INFO_NULL, MPI_COMM_WORLD, &mem, &win));
	MPI_Win_set_errhandler(win, MPI_ERRORS_RETURN);
	memset(mem, 0, bytes);
	MPI_Barrier(MPI_COMM_WORLD);
	librma += checkAttrs(win, mem, bytes, MPI_WIN_FLAVOR_SHARED, "allocate_shared");
	windows++;
	{
		MPI_Aint qsize = 0;
		int qdu = 0;
		int *qbase = NULL;
		MPI_OK(MPI_Win_shared_query(win, (rank + 1) % size, &qsize, &qdu, &qbase));
		CHECK(qsize == bytes && qdu == (int)sizeof(int) && qbase != NULL,
		      "allocate_shared: shared_query size %ld disp_unit %d base %p", (long)qsize, qdu, (void *)qbase);
	}
	body(win, mem, "allocate_shared");
	MPI_OK(MPI_Win_free(&win));

	/* allocate, forced to the MPI */
	MPI_Info info;
	MPI_Info_create(&info);
	MPI_Info_set(info, "librma_engine", "mpi");
	MPI_OK(MPI_Win_allocate(bytes, sizeof(int), info, MPI_COMM_WORLD, &mem, &win));
	MPI_Info_free(&info);
	MPI_Win_set_errhandler(win, MPI_ERRORS_RETURN);
	memset(mem, 0, bytes);
	MPI_Barrier(MPI_COMM_WORLD);
	CHECK(!servedByLibrma(win), "librma_engine=mpi: the window is librma's");
	windows++;
	body(win, mem, "librma_engine=mpi");
	MPI_OK(MPI_Win_free(&win));

	int all = 0;
	MPI_Allreduce(&failures, &all, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
	if (rank == 0) {
		printf("expect: librma-mpi: windows %d (librma %d, mpi %d), operations %d\n", windows, librma,
		       windows - librma, windows * OPS_PER_BODY * size);
		printf("shim_smoke: %s (%d failures)\n", all ? "FAIL" : "ok", all);
		fflush(stdout);
	}
	MPI_Finalize();
	return all ? 1 : 0;
}
