/* mpi_subcomm_test: windows over communicators other than MPI_COMM_WORLD,
 * where a window's rank differs from the world rank. 3 ranks.
 *  1. first of all, a window over a sub-communicator that excludes world
 *     rank 0 (no window over the world exists yet);
 *  2. MPI_Comm_split with a reversed key (comm rank = size-1-world rank);
 *  3. MPI_Comm_create_group over world ranks {2, 0}, in that order;
 *  4. MPI_Comm_split by parity: {0, 2} and a one-rank window on {1}, used
 *     at the same time;
 *  5. two windows on a split of the world whose communicator is freed
 *     before them: they are used and freed afterwards, one at a time (the
 *     shim shares the communicator's private duplicate between its windows
 *     below MPI_THREAD_MULTIPLE and must keep it until the last one goes).
 * In each: ring put / accumulate / get by comm rank, under fence and then
 * under lock_all; the values carry world ranks, so a rank translated wrongly
 * shows as a wrong value. */
#include "mpi_check.h"

#define N 8

static int wrank, wsize;

static void exercise(MPI_Comm comm, const char *label)
{
    int r, n;
    MT_MPI(MPI_Comm_rank(comm, &r));
    MT_MPI(MPI_Comm_size(comm, &n));
    int world_of[16];
    if (n > 16)
        MT_FAIL("%s: expected at most 16 ranks, got %d", label, n);
    MT_MPI(MPI_Allgather(&wrank, 1, MPI_INT, world_of, 1, MPI_INT, comm));
    int right = (r + 1) % n, left = (r + n - 1) % n;
    int *mem;
    MPI_Win win;
    MT_MPI(MPI_Win_allocate(N * sizeof(int), sizeof(int), MPI_INFO_NULL, comm, &mem, &win));
    MT_MPI(MPI_Win_lock(MPI_LOCK_EXCLUSIVE, r, 0, win));
    for (int i = 0; i < N; i++)
        mem[i] = 100 * wrank + i;
    MT_MPI(MPI_Win_unlock(r, win));
    MT_MPI(MPI_Barrier(comm));

    char w[160];
    for (int mode = 0; mode < 2; mode++) {
        const char *m = mode ? "lock_all" : "fence";
        int pv = 10 * wrank + 1 + mode, av = wrank + 1, got = -1;
        if (mode)
            MT_MPI(MPI_Win_lock_all(0, win));
        else
            MT_MPI(MPI_Win_fence(0, win));
        MT_MPI(MPI_Put(&pv, 1, MPI_INT, right, 0, 1, MPI_INT, win));
        MT_MPI(MPI_Accumulate(&av, 1, MPI_INT, right, 1, 1, MPI_INT, MPI_SUM, win));
        MT_MPI(MPI_Get(&got, 1, MPI_INT, right, 2, 1, MPI_INT, win));
        if (mode)
            MT_MPI(MPI_Win_unlock_all(win));
        else
            MT_MPI(MPI_Win_fence(0, win));
        snprintf(w, sizeof w, "%s/%s: get [2] from comm rank %d (world rank %d)", label, m, right,
                 world_of[right]);
        MT_EXPECT_INT(w, 100 * world_of[right] + 2, got);
        MT_MPI(MPI_Barrier(comm));
        MT_MPI(MPI_Win_lock(MPI_LOCK_SHARED, r, 0, win));
        snprintf(w, sizeof w, "%s/%s: [0] put by comm rank %d (world rank %d)", label, m, left, world_of[left]);
        MT_EXPECT_INT(w, 10 * world_of[left] + 1 + mode, mem[0]);
        snprintf(w, sizeof w, "%s/%s: [1] accumulated by comm rank %d (world rank %d)", label, m, left,
                 world_of[left]);
        MT_EXPECT_INT(w, 100 * wrank + 1 + (mode + 1) * (world_of[left] + 1), mem[1]);
        MT_MPI(MPI_Win_unlock(r, win));
        MT_MPI(MPI_Barrier(comm));
    }
    MPI_Group wg, cg;
    int cmp;
    MT_MPI(MPI_Win_get_group(win, &wg));
    MT_MPI(MPI_Comm_group(comm, &cg));
    MT_MPI(MPI_Group_compare(wg, cg, &cmp));
    snprintf(w, sizeof w, "%s: MPI_Win_get_group vs the communicator's group (MPI_IDENT)", label);
    MT_EXPECT_INT(w, MPI_IDENT, cmp);
    MT_MPI(MPI_Group_free(&wg));
    MT_MPI(MPI_Group_free(&cg));
    MT_MPI(MPI_Win_free(&win));
}

int main(int argc, char **argv)
{
    mt_init(&argc, &argv, 3, &wrank, &wsize);
    if (wsize != 3)
        MT_FAIL("needs exactly 3 ranks: expected 3, got %d", wsize);

    /* 1: without rank 0, before any world-wide window */
    MPI_Comm c;
    MT_MPI(MPI_Comm_split(MPI_COMM_WORLD, wrank == 0 ? MPI_UNDEFINED : 1, wrank, &c));
    if (wrank == 0) {
        MT_EXPECT_TRUE("split with MPI_UNDEFINED gives MPI_COMM_NULL", c == MPI_COMM_NULL);
    } else {
        exercise(c, "without rank 0 (first window)");
        MT_MPI(MPI_Comm_free(&c));
    }
    MT_MPI(MPI_Barrier(MPI_COMM_WORLD));

    /* 2: reversed key */
    MT_MPI(MPI_Comm_split(MPI_COMM_WORLD, 0, -wrank, &c));
    int r;
    MT_MPI(MPI_Comm_rank(c, &r));
    MT_EXPECT_INT("reversed split: comm rank", wsize - 1 - wrank, r);
    exercise(c, "split with reversed key");
    MT_MPI(MPI_Comm_free(&c));

    /* 3: MPI_Comm_create_group over {2, 0} */
    if (wrank != 1) {
        MPI_Group world, g;
        int members[2] = { 2, 0 };
        MT_MPI(MPI_Comm_group(MPI_COMM_WORLD, &world));
        MT_MPI(MPI_Group_incl(world, 2, members, &g));
        MT_MPI(MPI_Comm_create_group(MPI_COMM_WORLD, g, 17, &c));
        MT_MPI(MPI_Comm_rank(c, &r));
        MT_EXPECT_INT("create_group {2,0}: comm rank", wrank == 2 ? 0 : 1, r);
        exercise(c, "create_group {2,0}");
        MT_MPI(MPI_Comm_free(&c));
        MT_MPI(MPI_Group_free(&g));
        MT_MPI(MPI_Group_free(&world));
    }
    MT_MPI(MPI_Barrier(MPI_COMM_WORLD));

    /* 4: two disjoint communicators at once, one of them a single rank */
    MT_MPI(MPI_Comm_split(MPI_COMM_WORLD, wrank % 2, wrank, &c));
    exercise(c, wrank % 2 ? "parity split {1}" : "parity split {0,2}");
    MT_MPI(MPI_Comm_free(&c));

    /* 5: the communicator goes first, its two windows after */
    MT_MPI(MPI_Comm_split(MPI_COMM_WORLD, 0, wrank, &c));
    MPI_Win w5[2];
    int *m5[2];
    for (int i = 0; i < 2; i++) {
        MT_MPI(MPI_Win_allocate(sizeof(int), sizeof(int), MPI_INFO_NULL, c, &m5[i], &w5[i]));
        *m5[i] = -1;
    }
    MT_MPI(MPI_Comm_free(&c));
    int right5 = (wrank + 1) % wsize, left5 = (wrank + wsize - 1) % wsize;
    for (int round = 0; round < 2; round++) {
        for (int i = round; i < 2; i++) {
            int v = 100 * round + 10 * wrank + i;
            MT_MPI(MPI_Win_fence(0, w5[i]));
            MT_MPI(MPI_Put(&v, 1, MPI_INT, right5, 0, 1, MPI_INT, w5[i]));
            MT_MPI(MPI_Win_fence(0, w5[i]));
            MT_EXPECT_INT("window outliving its communicator: value put by the left rank",
                          100 * round + 10 * left5 + i, *m5[i]);
        }
        MT_MPI(MPI_Win_free(&w5[round]));
    }

    mt_pass("mpi_subcomm_test");
    MPI_Finalize();
    return 0;
}
