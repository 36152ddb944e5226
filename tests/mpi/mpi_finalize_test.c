/* mpi_finalize_test: MPI_Finalize with windows that were never freed.
 * Three windows (allocate, create over malloc, dynamic with memory
 * attached) are used in a fence epoch that is closed, then left alone;
 * MPI_Finalize must return (an attribute delete callback on the allocate
 * window may run there, and must then see the program's handle). The
 * create window's memory is the program's and stays readable afterwards.
 * With --abort: rank 0 calls MPI_Abort(MPI_COMM_WORLD, 5) inside an open
 * lock_all epoch while the other ranks wait in a barrier (a should_fail
 * test: the job must end, non-zero). */
#include "mpi_check.h"

static MPI_Win wa;
static int delete_calls, delete_bad;

static int delete_cb(MPI_Win win, int keyval, void *val, void *extra)
{
    (void)keyval; (void)val; (void)extra;
    delete_calls++;
    if (win != wa)
        delete_bad = 1;
    return MPI_SUCCESS;
}

int main(int argc, char **argv)
{
    int rank, size;
    mt_init(&argc, &argv, 2, &rank, &size);
    int right = (rank + 1) % size, left = (rank + size - 1) % size;
    int *a, *c = malloc(4 * sizeof(int)), *d = malloc(4 * sizeof(int));
    MPI_Win wc, wd;
    MT_MPI(MPI_Win_allocate(4 * sizeof(int), sizeof(int), MPI_INFO_NULL, MPI_COMM_WORLD, &a, &wa));
    MT_MPI(MPI_Win_create(c, 4 * sizeof(int), sizeof(int), MPI_INFO_NULL, MPI_COMM_WORLD, &wc));
    MT_MPI(MPI_Win_create_dynamic(MPI_INFO_NULL, MPI_COMM_WORLD, &wd));
    MT_MPI(MPI_Win_attach(wd, d, 4 * sizeof(int)));
    int key;
    static int val = 1;
    MT_MPI(MPI_Win_create_keyval(MPI_WIN_NULL_COPY_FN, delete_cb, &key, NULL));
    MT_MPI(MPI_Win_set_attr(wa, key, &val));

    if (mt_flag(argc, argv, "--abort", NULL)) {
        if (rank == 0) {
            MT_MPI(MPI_Win_lock_all(0, wa));
            int v = 1;
            MT_MPI(MPI_Put(&v, 1, MPI_INT, right, 0, 1, MPI_INT, wa));
            MPI_Abort(MPI_COMM_WORLD, 5);
            fprintf(stderr, "FAIL rank 0: MPI_Abort: expected no return, got one\n");
            return 3;
        }
        MPI_Barrier(MPI_COMM_WORLD); /* ended by rank 0's abort */
        MPI_Finalize();
        return 0;
    }

    for (int i = 0; i < 4; i++)
        a[i] = c[i] = -1;
    MT_MPI(MPI_Win_fence(0, wa));
    MT_MPI(MPI_Win_fence(0, wc));
    int v = 100 + rank;
    MT_MPI(MPI_Put(&v, 1, MPI_INT, right, 1, 1, MPI_INT, wa));
    MT_MPI(MPI_Put(&v, 1, MPI_INT, right, 2, 1, MPI_INT, wc));
    MT_MPI(MPI_Win_fence(0, wa));
    MT_MPI(MPI_Win_fence(0, wc));
    MT_EXPECT_INT("allocate window [1] put by left", 100 + left, a[1]);
    MT_EXPECT_INT("create window [2] put by left", 100 + left, c[2]);

    mt_pass("mpi_finalize_test");
    /* no MPI_Win_free, no MPI_Win_detach */
    MT_MPI(MPI_Finalize());
    int fin = 0;
    MPI_Finalized(&fin);
    if (!fin) {
        fprintf(stderr, "FAIL rank %d: MPI_Finalized after MPI_Finalize: expected 1, got 0\n", rank);
        return 1;
    }
    if (delete_calls > 1 || delete_bad) {
        fprintf(stderr, "FAIL rank %d: delete callback at MPI_Finalize: expected at most one call with the "
                        "program's handle, got %d call(s)%s\n",
                rank, delete_calls, delete_bad ? ", wrong handle" : "");
        return 1;
    }
    if (c[2] != 100 + left) {
        fprintf(stderr, "FAIL rank %d: create window memory after MPI_Finalize: expected %d, got %d\n", rank,
                100 + left, c[2]);
        return 1;
    }
    free(c);
    free(d);
    return 0;
}
