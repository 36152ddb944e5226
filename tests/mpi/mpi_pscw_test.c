/* mpi_pscw_test: general active target synchronization with 3 ranks.
 *  A. subset and reordered groups: ranks 0 and 1 access rank 2, whose
 *     exposure group lists them as {1, 0}; rank 2 is in no access group;
 *     put, accumulate and get.
 *  B. every rank in a different role at once: 0 exposes to 2 and accesses
 *     1; 1 exposes to 0 and polls MPI_Win_test (bounded); 2 only accesses 0.
 *  C. groups derived from a sub-communicator (ranks 2 and 1, reversed key)
 *     with MPI_Group_excl: ranks 1 and 2 expose to and access each other;
 *     rank 0 takes no part.
 *  D. two consecutive exposure epochs on rank 0 with different groups.
 * Exactly 3 ranks. */
#include "mpi_check.h"

#define N 16

static int rank, size;
static int *mem;
static MPI_Win win;
static MPI_Group world;

static MPI_Group group_of(int n, const int *ranks)
{
    MPI_Group g;
    MT_MPI(MPI_Group_incl(world, n, ranks, &g));
    return g;
}

static void reset(int base)
{
    for (int i = 0; i < N; i++)
        mem[i] = base + i;
    MT_MPI(MPI_Barrier(MPI_COMM_WORLD));
}

static void wait_by_test(const char *what)
{
    int flag = 0;
    long polls = 0;
    double t0 = MPI_Wtime();
    while (!flag) {
        MT_MPI(MPI_Win_test(win, &flag));
        polls++;
        if (!flag && MPI_Wtime() - t0 > 20.0)
            MT_FAIL("%s: MPI_Win_test: expected flag 1 within 20 s, got 0 after %ld polls", what, polls);
    }
}

int main(int argc, char **argv)
{
    mt_init(&argc, &argv, 3, &rank, &size);
    if (size != 3)
        MT_FAIL("needs exactly 3 ranks: expected 3, got %d", size);
    MT_MPI(MPI_Comm_group(MPI_COMM_WORLD, &world));
    MT_MPI(MPI_Win_allocate(N * sizeof(int), sizeof(int), MPI_INFO_NULL, MPI_COMM_WORLD, &mem, &win));

    /* A */
    reset(rank * 100);
    if (rank == 2) {
        int r[2] = { 1, 0 };
        MPI_Group g = group_of(2, r);
        MT_MPI(MPI_Win_post(g, 0, win));
        MT_MPI(MPI_Win_wait(win));
        MT_EXPECT_INT("A: rank 2 [0] put by rank 0", 1000, mem[0]);
        MT_EXPECT_INT("A: rank 2 [1] put by rank 1", 1001, mem[1]);
        MT_EXPECT_INT("A: rank 2 [5] accumulated by ranks 0 and 1", 205 + 5 + 7, mem[5]);
        MT_EXPECT_INT("A: rank 2 [8] untouched", 208, mem[8]);
        MT_MPI(MPI_Group_free(&g));
    } else {
        int r = 2, v = 1000 + rank, a = rank ? 7 : 5, got = -1;
        MPI_Group g = group_of(1, &r);
        MT_MPI(MPI_Win_start(g, 0, win));
        MT_MPI(MPI_Put(&v, 1, MPI_INT, 2, rank, 1, MPI_INT, win));
        MT_MPI(MPI_Accumulate(&a, 1, MPI_INT, 2, 5, 1, MPI_INT, MPI_SUM, win));
        MT_MPI(MPI_Get(&got, 1, MPI_INT, 2, 8, 1, MPI_INT, win));
        MT_MPI(MPI_Win_complete(win));
        MT_EXPECT_INT("A: get from rank 2 [8]", 208, got);
        MT_MPI(MPI_Group_free(&g));
    }
    MT_MPI(MPI_Barrier(MPI_COMM_WORLD));

    /* B */
    reset(rank * 100);
    if (rank == 0) {
        int two = 2, one = 1, v = 3000;
        MPI_Group e = group_of(1, &two), a = group_of(1, &one);
        MT_MPI(MPI_Win_post(e, 0, win));
        MT_MPI(MPI_Win_start(a, 0, win));
        MT_MPI(MPI_Put(&v, 1, MPI_INT, 1, 3, 1, MPI_INT, win));
        MT_MPI(MPI_Win_complete(win));
        MT_MPI(MPI_Win_wait(win));
        MT_EXPECT_INT("B: rank 0 [4] put by rank 2", 3002, mem[4]);
        MT_MPI(MPI_Group_free(&e));
        MT_MPI(MPI_Group_free(&a));
    } else if (rank == 1) {
        int zero = 0;
        MPI_Group e = group_of(1, &zero);
        MT_MPI(MPI_Win_post(e, 0, win));
        wait_by_test("B: rank 1");
        MT_EXPECT_INT("B: rank 1 [3] put by rank 0", 3000, mem[3]);
        MT_MPI(MPI_Group_free(&e));
    } else {
        int zero = 0, v = 3002;
        MPI_Group a = group_of(1, &zero);
        MT_MPI(MPI_Win_start(a, 0, win));
        MT_MPI(MPI_Put(&v, 1, MPI_INT, 0, 4, 1, MPI_INT, win));
        MT_MPI(MPI_Win_complete(win));
        MT_MPI(MPI_Group_free(&a));
    }
    MT_MPI(MPI_Barrier(MPI_COMM_WORLD));

    /* C */
    reset(rank * 100);
    MPI_Comm sub;
    MT_MPI(MPI_Comm_split(MPI_COMM_WORLD, rank > 0, -rank, &sub));
    if (rank > 0) {
        MPI_Group sg, other;
        int me;
        MT_MPI(MPI_Comm_group(sub, &sg));
        MT_MPI(MPI_Comm_rank(sub, &me));
        MT_EXPECT_INT("C: rank in the reversed sub-communicator", 2 - rank, me);
        MT_MPI(MPI_Group_excl(sg, 1, &me, &other));
        int peer = 3 - rank, v = 4000 + rank;
        MT_MPI(MPI_Win_post(other, 0, win));
        MT_MPI(MPI_Win_start(other, 0, win));
        MT_MPI(MPI_Put(&v, 1, MPI_INT, peer, 6, 1, MPI_INT, win));
        MT_MPI(MPI_Win_complete(win));
        wait_by_test("C");
        MT_EXPECT_INT("C: [6] put by the peer", 4000 + peer, mem[6]);
        MT_MPI(MPI_Group_free(&sg));
        MT_MPI(MPI_Group_free(&other));
    }
    MT_MPI(MPI_Comm_free(&sub));
    MT_MPI(MPI_Barrier(MPI_COMM_WORLD));

    /* D */
    reset(rank * 100);
    if (rank == 0) {
        for (int round = 1; round <= 2; round++) {
            MPI_Group g = group_of(1, &round);
            MT_MPI(MPI_Win_post(g, 0, win));
            MT_MPI(MPI_Win_wait(win));
            MT_MPI(MPI_Group_free(&g));
        }
        MT_EXPECT_INT("D: rank 0 [10] put by rank 1 in the first epoch", 5001, mem[10]);
        MT_EXPECT_INT("D: rank 0 [11] put by rank 2 in the second epoch", 5002, mem[11]);
    } else {
        int zero = 0, v = 5000 + rank;
        MPI_Group g = group_of(1, &zero);
        MT_MPI(MPI_Win_start(g, 0, win));
        MT_MPI(MPI_Put(&v, 1, MPI_INT, 0, 9 + rank, 1, MPI_INT, win));
        MT_MPI(MPI_Win_complete(win));
        MT_MPI(MPI_Group_free(&g));
    }

    MT_MPI(MPI_Win_free(&win));
    MT_MPI(MPI_Group_free(&world));
    mt_pass("mpi_pscw_test");
    MPI_Finalize();
    return 0;
}
