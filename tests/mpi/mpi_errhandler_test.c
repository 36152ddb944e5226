/* mpi_errhandler_test: errors raised on a window.
 *  - a new window's handler is MPI_ERRORS_ARE_FATAL;
 *  - MPI_ERRORS_RETURN: MPI_Put outside any epoch returns a code of class
 *    MPI_ERR_RMA_SYNC; MPI_Put to rank = group size (inside lock_all)
 *    returns class MPI_ERR_RANK; MPI_Error_string gives a non-empty text;
 *  - a user handler (MPI_Win_create_errhandler) is called with the
 *    program's window handle and a code of the right class, for a detected
 *    error and for MPI_Win_call_errhandler (which then returns MPI_SUCCESS);
 *  - MPI_Win_get_errhandler returns the handler that was set.
 * With --fatal: a put outside an epoch under MPI_ERRORS_ARE_FATAL, which
 * must end the job with a non-zero status (a should_fail test). */
#include "mpi_check.h"

static int rank, size;
static MPI_Win expect_win;
static int calls, last_code, bad_handle;

static void handler(MPI_Win *win, int *code, ...)
{
    calls++;
    last_code = *code;
    if (*win != expect_win)
        bad_handle = 1;
}

static int error_class(int code)
{
    int cls = -1;
    MT_MPI(MPI_Error_class(code, &cls));
    return cls;
}

int main(int argc, char **argv)
{
    mt_init(&argc, &argv, 2, &rank, &size);
    int right = (rank + 1) % size;
    int *mem, one = 1;
    MPI_Win win;
    MT_MPI(MPI_Win_allocate(4 * sizeof(int), sizeof(int), MPI_INFO_NULL, MPI_COMM_WORLD, &mem, &win));

    MPI_Errhandler eh;
    MT_MPI(MPI_Win_get_errhandler(win, &eh));
    MT_EXPECT_TRUE("a new window's error handler is MPI_ERRORS_ARE_FATAL", eh == MPI_ERRORS_ARE_FATAL);
    MT_MPI(MPI_Errhandler_free(&eh));

    if (mt_flag(argc, argv, "--fatal", NULL)) {
        /* Only rank 0 errs; MPI_ERRORS_ARE_FATAL must abort the job. */
        if (rank == 0) {
            MPI_Put(&one, 1, MPI_INT, right, 0, 1, MPI_INT, win);
            fprintf(stderr, "FAIL rank 0: MPI_Put outside an epoch under MPI_ERRORS_ARE_FATAL: expected the job "
                            "to abort, got a return\n");
            fflush(stderr);
            exit(3); /* also non-zero, but says what went wrong */
        }
        /* bounded: the abort from rank 0 ends this wait */
        MPI_Barrier(MPI_COMM_WORLD);
        MPI_Finalize();
        return 0;
    }

    /* MPI_ERRORS_RETURN */
    MT_MPI(MPI_Win_set_errhandler(win, MPI_ERRORS_RETURN));
    int rc = MPI_Put(&one, 1, MPI_INT, right, 0, 1, MPI_INT, win);
    if (rc == MPI_SUCCESS)
        MT_FAIL("MPI_Put outside an epoch under MPI_ERRORS_RETURN: expected class MPI_ERR_RMA_SYNC (%d), got "
                "MPI_SUCCESS",
                MPI_ERR_RMA_SYNC);
    MT_EXPECT_INT("MPI_Put outside an epoch: error class (MPI_ERR_RMA_SYNC)", MPI_ERR_RMA_SYNC, error_class(rc));
    {
        char s[MPI_MAX_ERROR_STRING];
        int len = 0;
        MT_MPI(MPI_Error_string(rc, s, &len));
        MT_EXPECT_TRUE("MPI_Error_string of the MPI_ERR_RMA_SYNC code is not empty", len > 0 && s[0] != '\0');
    }

    MT_MPI(MPI_Win_lock_all(0, win));
    rc = MPI_Put(&one, 1, MPI_INT, size, 0, 1, MPI_INT, win);
    if (rc == MPI_SUCCESS)
        MT_FAIL("MPI_Put to rank %d (= group size): expected class MPI_ERR_RANK (%d), got MPI_SUCCESS", size,
                MPI_ERR_RANK);
    MT_EXPECT_INT("MPI_Put to rank = group size: error class (MPI_ERR_RANK)", MPI_ERR_RANK, error_class(rc));
    /* the epoch is still usable: a correct put afterwards */
    int v = 500 + rank;
    MT_MPI(MPI_Put(&v, 1, MPI_INT, right, 1, 1, MPI_INT, win));
    MT_MPI(MPI_Win_unlock_all(win));
    MT_MPI(MPI_Barrier(MPI_COMM_WORLD));
    MT_MPI(MPI_Win_lock(MPI_LOCK_SHARED, rank, 0, win));
    MT_EXPECT_INT("put after the failed put landed", 500 + (rank + size - 1) % size, mem[1]);
    MT_MPI(MPI_Win_unlock(rank, win));
    MT_MPI(MPI_Barrier(MPI_COMM_WORLD));

    /* user handler */
    MPI_Errhandler user;
    MT_MPI(MPI_Win_create_errhandler(handler, &user));
    MT_MPI(MPI_Win_set_errhandler(win, user));
    MT_MPI(MPI_Win_get_errhandler(win, &eh));
    MT_EXPECT_TRUE("MPI_Win_get_errhandler returns the user handler", eh == user);
    MT_MPI(MPI_Errhandler_free(&eh));
    expect_win = win;
    calls = 0;
    MPI_Put(&one, 1, MPI_INT, right, 0, 1, MPI_INT, win); /* outside an epoch; return code not checked */
    MT_EXPECT_INT("user handler calls after a put outside an epoch", 1, calls);
    MT_EXPECT_INT("user handler: handle is the program's window", 0, bad_handle);
    MT_EXPECT_INT("user handler: code class (MPI_ERR_RMA_SYNC)", MPI_ERR_RMA_SYNC, error_class(last_code));

    rc = MPI_Win_call_errhandler(win, MPI_ERR_OTHER);
    MT_EXPECT_INT("MPI_Win_call_errhandler return code", MPI_SUCCESS, rc);
    MT_EXPECT_INT("user handler calls after MPI_Win_call_errhandler", 2, calls);
    MT_EXPECT_INT("MPI_Win_call_errhandler: code passed to the handler", MPI_ERR_OTHER, last_code);
    MT_EXPECT_INT("MPI_Win_call_errhandler: handle is the program's window", 0, bad_handle);

    /* the program's own error code, with its own string */
    int myclass, mycode;
    MT_MPI(MPI_Add_error_class(&myclass));
    MT_MPI(MPI_Add_error_code(myclass, &mycode));
    MT_MPI(MPI_Add_error_string(mycode, "mpi_errhandler_test's own error"));
    MT_MPI(MPI_Win_call_errhandler(win, mycode));
    MT_EXPECT_INT("user handler calls after call_errhandler(user code)", 3, calls);
    MT_EXPECT_INT("call_errhandler(user code): code passed to the handler", mycode, last_code);
    MT_EXPECT_INT("call_errhandler(user code): its class", myclass, error_class(last_code));

    MT_MPI(MPI_Errhandler_free(&user)); /* still attached to win: stays valid */
    calls = 0;
    MT_MPI(MPI_Win_call_errhandler(win, MPI_ERR_OTHER));
    MT_EXPECT_INT("user handler still called after MPI_Errhandler_free while attached", 1, calls);

    MT_MPI(MPI_Win_free(&win));
    mt_pass("mpi_errhandler_test");
    MPI_Finalize();
    return 0;
}
