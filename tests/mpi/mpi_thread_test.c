/* mpi_thread_test: MPI_THREAD_MULTIPLE (exit 77 when not provided).
 *  1. per-thread windows: each of T threads creates a window on its own
 *     communicator (MPI_Comm_dup'ed by the main thread), concurrently with
 *     the other threads; then lock_all, ring put/accumulate/get, flush,
 *     unlock_all, a barrier on its communicator, a check, MPI_Win_free;
 *  2. one shared window: the main thread opens lock_all; T threads put,
 *     accumulate and flush concurrently to distinct displacements; the main
 *     thread closes the epoch and checks.
 * Ring: rank r targets r+1. */
#include "mpi_check.h"
#include <pthread.h>

#define T 2
#define ROUNDS 50
#define N 64

static int rank, size, left, right;
static MPI_Comm comms[T];
static MPI_Win shared_win;

struct arg {
    int t;
    char err[200];
};

static void *per_thread_window(void *p)
{
    struct arg *a = p;
    MPI_Comm comm = comms[a->t];
    int *mem;
    MPI_Win win;
    if (MPI_Win_allocate(N * sizeof(int), sizeof(int), MPI_INFO_NULL, comm, &mem, &win) != MPI_SUCCESS) {
        snprintf(a->err, sizeof a->err, "thread %d: MPI_Win_allocate failed", a->t);
        return NULL;
    }
    MPI_Win_lock(MPI_LOCK_EXCLUSIVE, rank, 0, win);
    for (int i = 0; i < N; i++)
        mem[i] = 1000 * a->t + 100 * rank + i;
    MPI_Win_unlock(rank, win);
    MPI_Barrier(comm);
    MPI_Win_lock_all(0, win);
    for (int k = 0; k < ROUNDS; k++) {
        int v = 10000 * (a->t + 1) + 100 * rank + k, one = 1, got = -1;
        MPI_Put(&v, 1, MPI_INT, right, k % 32, 1, MPI_INT, win);
        MPI_Accumulate(&one, 1, MPI_INT, right, 40, 1, MPI_INT, MPI_SUM, win);
        MPI_Get(&got, 1, MPI_INT, right, 41, 1, MPI_INT, win);
        MPI_Win_flush(right, win);
        if (got != 1000 * a->t + 100 * right + 41 && !a->err[0])
            snprintf(a->err, sizeof a->err, "thread %d round %d: get [41]: expected %d, got %d", a->t, k,
                     1000 * a->t + 100 * right + 41, got);
    }
    MPI_Win_unlock_all(win);
    MPI_Barrier(comm);
    MPI_Win_lock(MPI_LOCK_SHARED, rank, 0, win);
    int exp40 = 1000 * a->t + 100 * rank + 40 + ROUNDS;
    if (mem[40] != exp40 && !a->err[0])
        snprintf(a->err, sizeof a->err, "thread %d: [40] accumulated by rank %d: expected %d, got %d", a->t, left,
                 exp40, mem[40]);
    for (int i = 0; i < 32 && !a->err[0]; i++) {
        int last = ROUNDS - 1 - ((ROUNDS - 1 - i) % 32); /* the last round k with k % 32 == i */
        int e = 10000 * (a->t + 1) + 100 * left + last;
        if (mem[i] != e)
            snprintf(a->err, sizeof a->err, "thread %d: [%d] put by rank %d: expected %d, got %d", a->t, i, left,
                     e, mem[i]);
    }
    MPI_Win_unlock(rank, win);
    MPI_Win_free(&win);
    return NULL;
}

static void *shared_window_ops(void *p)
{
    struct arg *a = p;
    for (int k = 0; k < ROUNDS; k++) {
        int v = 20000 + 1000 * a->t + k, one = 1;
        MPI_Put(&v, 1, MPI_INT, right, a->t, 1, MPI_INT, shared_win);
        MPI_Accumulate(&one, 1, MPI_INT, right, T + a->t, 1, MPI_INT, MPI_SUM, shared_win);
        MPI_Win_flush(right, shared_win);
    }
    return NULL;
}

static void run_threads(void *(*fn)(void *), const char *what)
{
    pthread_t th[T];
    struct arg args[T];
    for (int t = 0; t < T; t++) {
        args[t].t = t;
        args[t].err[0] = '\0';
        if (pthread_create(&th[t], NULL, fn, &args[t]) != 0)
            MT_FAIL("%s: pthread_create: expected 0, got an error", what);
    }
    for (int t = 0; t < T; t++)
        pthread_join(th[t], NULL);
    for (int t = 0; t < T; t++)
        if (args[t].err[0])
            MT_FAIL("%s: %s", what, args[t].err);
}

int main(int argc, char **argv)
{
    int provided;
    MT_MPI(MPI_Init_thread(&argc, &argv, MPI_THREAD_MULTIPLE, &provided));
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    mt_rank = rank;
    if (provided < MPI_THREAD_MULTIPLE) {
        if (rank == 0)
            printf("mpi_thread_test: SKIP: MPI_THREAD_MULTIPLE not provided (got %d)\n", provided);
        MPI_Finalize();
        return MT_SKIP;
    }
    if (size < 2)
        MT_FAIL("needs at least 2 ranks: expected >= 2, got %d", size);
    left = (rank + size - 1) % size;
    right = (rank + 1) % size;

    for (int t = 0; t < T; t++)
        MT_MPI(MPI_Comm_dup(MPI_COMM_WORLD, &comms[t]));
    run_threads(per_thread_window, "per-thread windows");
    for (int t = 0; t < T; t++)
        MT_MPI(MPI_Comm_free(&comms[t]));

    int *mem;
    MT_MPI(MPI_Win_allocate(N * sizeof(int), sizeof(int), MPI_INFO_NULL, MPI_COMM_WORLD, &mem, &shared_win));
    MT_MPI(MPI_Win_lock(MPI_LOCK_EXCLUSIVE, rank, 0, shared_win));
    for (int i = 0; i < N; i++)
        mem[i] = 0;
    MT_MPI(MPI_Win_unlock(rank, shared_win));
    MT_MPI(MPI_Barrier(MPI_COMM_WORLD));
    MT_MPI(MPI_Win_lock_all(0, shared_win));
    run_threads(shared_window_ops, "one window, concurrent operations");
    MT_MPI(MPI_Win_unlock_all(shared_win));
    MT_MPI(MPI_Barrier(MPI_COMM_WORLD));
    MT_MPI(MPI_Win_lock(MPI_LOCK_SHARED, rank, 0, shared_win));
    for (int t = 0; t < T; t++) {
        char w[120];
        snprintf(w, sizeof w, "one window: [%d] last put of thread %d of rank %d", t, t, left);
        MT_EXPECT_INT(w, 20000 + 1000 * t + ROUNDS - 1, mem[t]);
        snprintf(w, sizeof w, "one window: [%d] accumulates of thread %d of rank %d", T + t, t, left);
        MT_EXPECT_INT(w, ROUNDS, mem[T + t]);
    }
    MT_MPI(MPI_Win_unlock(rank, shared_win));
    MT_MPI(MPI_Win_free(&shared_win));
    mt_pass("mpi_thread_test");
    MPI_Finalize();
    return 0;
}
