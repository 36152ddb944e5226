/* mpi_passive_test: truly passive target.
 * Rank 0 is the origin; every other rank is a target that, right after a
 * barrier, spins in a compute loop with no MPI call at all. Meanwhile the
 * origin runs 20 rounds of lock/put/unlock, lock/get/accumulate/
 * fetch_and_op/unlock per target, checks every value it reads, and finally
 * puts a marker into each target's window.
 *
 * A target keeps spinning for at least 1 s and until it sees the marker in
 * its own (MPI_Win_allocate, unified) memory, at most 3 s. With --rmampi (or
 * MPI_TEST_RMAMPI=1, which run_mpi.sh sets when it runs through rmampi)
 * the marker must arrive while the target spins: librma's windows need no
 * target-side progress. Without it, only the values are checked, since a
 * plain MPI may legitimately wait for the target's next MPI call. */
#include "mpi_check.h"
#include <time.h>

#define N 16
#define ROUNDS 20
#define MARKER 0x5eed

static double now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec + 1e-9 * ts.tv_nsec;
}

int main(int argc, char **argv)
{
    int rank, size;
    mt_init(&argc, &argv, 2, &rank, &size);
    int strict = mt_flag(argc, argv, "--rmampi", "MPI_TEST_RMAMPI");
    int *mem;
    MPI_Win win;
    MT_MPI(MPI_Win_allocate(N * sizeof(int), sizeof(int), MPI_INFO_NULL, MPI_COMM_WORLD, &mem, &win));
    MT_MPI(MPI_Win_lock(MPI_LOCK_EXCLUSIVE, rank, 0, win));
    for (int i = 0; i < N; i++)
        mem[i] = 0;
    MT_MPI(MPI_Win_unlock(rank, win));
    MT_MPI(MPI_Barrier(MPI_COMM_WORLD));

    if (rank != 0) {
        /* compute loop: no MPI call until the marker is seen (or 3 s) */
        volatile int *m = mem;
        volatile double x = 1.0;
        double t0 = now(), seen_at = -1.0, t = t0;
        while (t - t0 < 3.0) {
            for (int i = 0; i < 10000; i++)
                x = x * 1.0000001 + 1e-9;
            t = now();
            if (seen_at < 0 && m[15] == MARKER)
                seen_at = t - t0;
            if (seen_at >= 0 && t - t0 >= 1.0)
                break;
        }
        MT_MPI(MPI_Barrier(MPI_COMM_WORLD));
        if (strict && seen_at < 0)
            MT_FAIL("truly passive target: expected the origin's marker during 3 s without MPI calls, got "
                    "none (the origin's operations waited for this rank)");
        MT_MPI(MPI_Win_lock(MPI_LOCK_SHARED, rank, 0, win));
        int sum = 0;
        for (int r = 1; r <= ROUNDS; r++)
            sum += r;
        MT_EXPECT_INT("target [4]: sum of the accumulates", sum, mem[4]);
        MT_EXPECT_INT("target [5]: fetch_and_op count", ROUNDS, mem[5]);
        for (int k = 0; k < 4; k++)
            MT_EXPECT_INT("target [0..3]: last round's put", ROUNDS * 100 + rank * 10 + k, mem[k]);
        MT_EXPECT_INT("target [15]: marker", MARKER, mem[15]);
        MT_MPI(MPI_Win_unlock(rank, win));
        if (rank == 1)
            printf("mpi_passive_test: marker seen after %.3f s of the target's compute loop%s\n", seen_at,
                   seen_at < 0 ? " (never: the MPI needed target progress)" : "");
    } else {
        double t0 = now();
        for (int t = 1; t < size; t++) {
            for (int r = 1; r <= ROUNDS; r++) {
                int v[4], back[4] = { -1, -1, -1, -1 }, one = 1, old = -1;
                for (int k = 0; k < 4; k++)
                    v[k] = r * 100 + t * 10 + k;
                MT_MPI(MPI_Win_lock(MPI_LOCK_EXCLUSIVE, t, 0, win));
                MT_MPI(MPI_Put(v, 4, MPI_INT, t, 0, 4, MPI_INT, win));
                MT_MPI(MPI_Win_unlock(t, win));
                MT_MPI(MPI_Win_lock(MPI_LOCK_SHARED, t, 0, win));
                MT_MPI(MPI_Get(back, 4, MPI_INT, t, 0, 4, MPI_INT, win));
                MT_MPI(MPI_Accumulate(&r, 1, MPI_INT, t, 4, 1, MPI_INT, MPI_SUM, win));
                MT_MPI(MPI_Fetch_and_op(&one, &old, MPI_INT, t, 5, MPI_SUM, win));
                MT_MPI(MPI_Win_unlock(t, win));
                char w[120];
                snprintf(w, sizeof w, "target %d round %d: get after put", t, r);
                MT_EXPECT_INTS(w, v, back, 4);
                snprintf(w, sizeof w, "target %d round %d: fetch_and_op old value", t, r);
                MT_EXPECT_INT(w, r - 1, old);
            }
            int marker = MARKER;
            MT_MPI(MPI_Win_lock(MPI_LOCK_EXCLUSIVE, t, 0, win));
            MT_MPI(MPI_Put(&marker, 1, MPI_INT, t, 15, 1, MPI_INT, win));
            MT_MPI(MPI_Win_unlock(t, win));
        }
        double took = now() - t0;
        MT_MPI(MPI_Barrier(MPI_COMM_WORLD));
        printf("mpi_passive_test: origin finished in %.3f s%s\n", took, strict ? " (truly passive required)" : "");
    }
    MT_MPI(MPI_Win_free(&win));
    mt_pass("mpi_passive_test");
    MPI_Finalize();
    return 0;
}
