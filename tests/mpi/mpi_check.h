/* Shared helpers for the MPI RMA conformance programs (tests/mpi/).
 * Plain MPI-3.1 C; every program includes this once. A failed check prints
 * "rank R: FILE:LINE: what: expected E, got G" to stderr and aborts the job
 * with status 1, so no rank is left waiting in a collective. */
#ifndef RMA_TESTS_MPI_CHECK_H
#define RMA_TESTS_MPI_CHECK_H

#include <mpi.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Exit status meaning "skipped" for meson and run_mpi.sh. */
#define MT_SKIP 77

static int mt_rank = -1;

static void mt_fail_at(const char *file, int line, const char *fmt, ...)
    __attribute__((format(printf, 3, 4), noreturn));
static void mt_fail_at(const char *file, int line, const char *fmt, ...)
{
    va_list ap;
    fprintf(stderr, "FAIL rank %d: %s:%d: ", mt_rank, file, line);
    va_start(ap, fmt);
    vfprintf(stderr, fmt, ap);
    va_end(ap);
    fputc('\n', stderr);
    fflush(stderr);
    MPI_Abort(MPI_COMM_WORLD, 1);
    exit(1);
}

#define MT_FAIL(...) mt_fail_at(__FILE__, __LINE__, __VA_ARGS__)

/* An MPI call that must succeed (whatever the window's error handler). */
#define MT_MPI(call)                                                          \
    do {                                                                      \
        int mt_rc_ = (call);                                                  \
        if (mt_rc_ != MPI_SUCCESS) {                                          \
            char mt_s_[MPI_MAX_ERROR_STRING];                                 \
            int mt_l_ = 0;                                                    \
            MPI_Error_string(mt_rc_, mt_s_, &mt_l_);                          \
            MT_FAIL("%s: expected MPI_SUCCESS, got %d (%s)", #call, mt_rc_,   \
                    mt_s_);                                                   \
        }                                                                     \
    } while (0)

#define MT_EXPECT_INT(what, expected, got)                                    \
    do {                                                                      \
        long long mt_e_ = (long long)(expected), mt_g_ = (long long)(got);    \
        if (mt_e_ != mt_g_)                                                   \
            MT_FAIL("%s: expected %lld, got %lld", (what), mt_e_, mt_g_);     \
    } while (0)

#define MT_EXPECT_TRUE(what, cond)                                            \
    do {                                                                      \
        if (!(cond))                                                          \
            MT_FAIL("%s: expected true, got false (%s)", (what), #cond);      \
    } while (0)

/* Compare n ints; `what` names the case (flavor/sync/op). */
__attribute__((unused)) static void mt_expect_ints_at(const char *file, int line, const char *what,
                              const int *expected, const int *got, int n)
{
    for (int i = 0; i < n; i++)
        if (expected[i] != got[i])
            mt_fail_at(file, line, "%s: element %d: expected %d, got %d",
                       what, i, expected[i], got[i]);
}
#define MT_EXPECT_INTS(what, expected, got, n)                                \
    mt_expect_ints_at(__FILE__, __LINE__, (what), (expected), (got), (n))

/* MPI_Init + world rank/size; requires at least min_np ranks. */
__attribute__((unused)) static void mt_init(int *argc, char ***argv, int min_np, int *rank, int *size)
{
    MT_MPI(MPI_Init(argc, argv));
    MPI_Comm_rank(MPI_COMM_WORLD, rank);
    MPI_Comm_size(MPI_COMM_WORLD, size);
    mt_rank = *rank;
    if (*size < min_np)
        MT_FAIL("needs at least %d ranks: expected >= %d, got %d", min_np,
                min_np, *size);
}

/* Called by every rank after its last check: rank 0 prints one line. */
__attribute__((unused)) static void mt_pass(const char *prog)
{
    MT_MPI(MPI_Barrier(MPI_COMM_WORLD));
    if (mt_rank == 0)
        printf("%s: PASS\n", prog);
    fflush(stdout);
}

/* True when argv holds `flag`, or the environment variable `env` is "1". */
__attribute__((unused)) static int mt_flag(int argc, char **argv, const char *flag, const char *env)
{
    for (int i = 1; i < argc; i++)
        if (strcmp(argv[i], flag) == 0)
            return 1;
    const char *v = env ? getenv(env) : NULL;
    return v && strcmp(v, "1") == 0;
}

#endif
