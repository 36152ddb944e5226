/* mpi_mixed_test: one window created with info librma_engine=mpi (served by
 * the MPI itself through rmampi) and one default window (served by librma
 * through rmampi) in one program, with operations on the two interleaved
 * inside the same epochs: lock_all with flushes, then fence on both.
 * Under plain MPI the info key is unknown and ignored; the values must be
 * the same. Through rmampi (MPI_TEST_RMAMPI=1) and unless RMA_MPI_ENGINE=mpi,
 * MPI_Win_get_info of the default window must carry librma_engine=librma.
 * Ring: rank r targets r+1. Expected stats through rmampi:
 * windows 2 (librma 1, mpi 1); with RMA_MPI_ENGINE=mpi: (librma 0, mpi 2). */
#include "mpi_check.h"

#define N 8

int main(int argc, char **argv)
{
    int rank, size;
    mt_init(&argc, &argv, 2, &rank, &size);
    int left = (rank + size - 1) % size, right = (rank + 1) % size;

    MPI_Info info;
    MT_MPI(MPI_Info_create(&info));
    MT_MPI(MPI_Info_set(info, "librma_engine", "mpi"));
    int *a, *b = malloc(N * sizeof(int));
    MPI_Win wa, wb;
    MT_MPI(MPI_Win_allocate(N * sizeof(int), sizeof(int), info, MPI_COMM_WORLD, &a, &wa));
    MT_MPI(MPI_Info_free(&info));
    MT_MPI(MPI_Win_create(b, N * sizeof(int), sizeof(int), MPI_INFO_NULL, MPI_COMM_WORLD, &wb));

    const char *eng = getenv("RMA_MPI_ENGINE");
    if (mt_flag(argc, argv, "--rmampi", "MPI_TEST_RMAMPI") && !(eng && strcmp(eng, "mpi") == 0)) {
        MPI_Info got;
        char val[64] = "";
        int flag = 0;
        MT_MPI(MPI_Win_get_info(wb, &got));
        MT_MPI(MPI_Info_get(got, "librma_engine", (int)sizeof val - 1, val, &flag));
        MT_EXPECT_INT("default window: MPI_Win_get_info has librma_engine", 1, flag);
        if (strcmp(val, "librma") != 0)
            MT_FAIL("default window: librma_engine: expected \"librma\", got \"%s\"", val);
        MT_MPI(MPI_Info_free(&got));
    }

    MT_MPI(MPI_Win_lock(MPI_LOCK_EXCLUSIVE, rank, 0, wa));
    MT_MPI(MPI_Win_lock(MPI_LOCK_EXCLUSIVE, rank, 0, wb));
    for (int i = 0; i < N; i++) {
        a[i] = 100 * rank + i;
        b[i] = 1000 * rank + i;
    }
    MT_MPI(MPI_Win_unlock(rank, wb));
    MT_MPI(MPI_Win_unlock(rank, wa));
    MT_MPI(MPI_Barrier(MPI_COMM_WORLD));

    /* lock_all on both, operations interleaved */
    MT_MPI(MPI_Win_lock_all(0, wa));
    MT_MPI(MPI_Win_lock_all(0, wb));
    int pa = 7000 + rank, pb = 8000 + rank, ga = -1, gb = -1, one = 1, fa = -1, fb = -1;
    int cmp = 1000 * right + 3, swap = 9000 + rank, cas = -1;
    MT_MPI(MPI_Put(&pa, 1, MPI_INT, right, 0, 1, MPI_INT, wa));
    MT_MPI(MPI_Put(&pb, 1, MPI_INT, right, 0, 1, MPI_INT, wb));
    MT_MPI(MPI_Get(&ga, 1, MPI_INT, right, 1, 1, MPI_INT, wa));
    MT_MPI(MPI_Get(&gb, 1, MPI_INT, right, 1, 1, MPI_INT, wb));
    MT_MPI(MPI_Accumulate(&one, 1, MPI_INT, right, 2, 1, MPI_INT, MPI_SUM, wa));
    MT_MPI(MPI_Fetch_and_op(&one, &fb, MPI_INT, right, 2, MPI_SUM, wb));
    MT_MPI(MPI_Fetch_and_op(&one, &fa, MPI_INT, right, 3, MPI_SUM, wa));
    MT_MPI(MPI_Compare_and_swap(&swap, &cmp, &cas, MPI_INT, right, 3, wb));
    MT_MPI(MPI_Win_flush(right, wa));
    MT_MPI(MPI_Win_flush_all(wb));
    MT_EXPECT_INT("engine=mpi window: get [1]", 100 * right + 1, ga);
    MT_EXPECT_INT("default window: get [1]", 1000 * right + 1, gb);
    MT_EXPECT_INT("default window: fetch_and_op [2]", 1000 * right + 2, fb);
    MT_EXPECT_INT("engine=mpi window: fetch_and_op [3]", 100 * right + 3, fa);
    MT_EXPECT_INT("default window: compare_and_swap [3]", 1000 * right + 3, cas);
    /* what was read from one window goes into the other */
    MT_MPI(MPI_Put(&gb, 1, MPI_INT, right, 4, 1, MPI_INT, wa));
    MT_MPI(MPI_Put(&ga, 1, MPI_INT, right, 4, 1, MPI_INT, wb));
    MT_MPI(MPI_Win_unlock_all(wb));
    MT_MPI(MPI_Win_unlock_all(wa));
    MT_MPI(MPI_Barrier(MPI_COMM_WORLD));

    /* fence on both */
    MT_MPI(MPI_Win_fence(0, wa));
    MT_MPI(MPI_Win_fence(0, wb));
    int q = 50 + rank, r = 60 + rank;
    MT_MPI(MPI_Accumulate(&q, 1, MPI_INT, right, 5, 1, MPI_INT, MPI_SUM, wb));
    MT_MPI(MPI_Accumulate(&r, 1, MPI_INT, right, 5, 1, MPI_INT, MPI_SUM, wa));
    MT_MPI(MPI_Win_fence(0, wb));
    MT_MPI(MPI_Win_fence(0, wa));

    MT_MPI(MPI_Win_lock(MPI_LOCK_SHARED, rank, 0, wa));
    MT_MPI(MPI_Win_lock(MPI_LOCK_SHARED, rank, 0, wb));
    int ea[N], eb[N];
    for (int i = 0; i < N; i++) {
        ea[i] = 100 * rank + i;
        eb[i] = 1000 * rank + i;
    }
    ea[0] = 7000 + left;
    eb[0] = 8000 + left;
    ea[2] += 1;
    eb[2] += 1;
    ea[3] += 1;
    eb[3] = 9000 + left;
    ea[4] = 1000 * rank + 1;
    eb[4] = 100 * rank + 1;
    ea[5] += 60 + left;
    eb[5] += 50 + left;
    MT_EXPECT_INTS("engine=mpi window memory", ea, a, N);
    MT_EXPECT_INTS("default window memory", eb, b, N);
    MT_MPI(MPI_Win_unlock(rank, wb));
    MT_MPI(MPI_Win_unlock(rank, wa));

    MT_MPI(MPI_Win_free(&wb));
    MT_MPI(MPI_Win_free(&wa));
    free(b);
    mt_pass("mpi_mixed_test");
    MPI_Finalize();
    return 0;
}
