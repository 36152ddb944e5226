/* mpi_large_count_test (MPI-4 large-count forms; MPICH only here: Open MPI
 * 4.1 has no _c functions, so the program exits 77 there).
 *  - windows from MPI_Win_allocate_c, MPI_Win_create_c (MPI_Aint disp_unit)
 *    and MPI_Win_allocate_shared_c + MPI_Win_shared_query_c;
 *  - MPI_Put_c, MPI_Get_c, MPI_Accumulate_c, MPI_Get_accumulate_c and the
 *    request forms MPI_Rput_c, MPI_Rget_c, MPI_Raccumulate_c,
 *    MPI_Rget_accumulate_c, with values checked;
 *  - with --large: a count above INT_MAX (MPI_BYTE) put into and got back
 *    from a 2 GiB+ window, when MemAvailable allows (about 6.5 GiB); otherwise
 *    that part is reported as skipped. Ring: rank r targets r+1.
 *    Plain MPICH 4.0.2 (ch4:ucx) crashes there: MPI_Put_c of more than
 *    INT_MAX bytes dies with SIGSEGV in uct_sm_ep_put_short, so --large is
 *    run through rmampi only. */
#include "mpi_check.h"
#include <limits.h>

#if MPI_VERSION >= 4 && defined(MPICH_VERSION)

#define N 16

static int rank, size, left, right;

static long long mem_available_kib(void)
{
    FILE *f = fopen("/proc/meminfo", "r");
    char line[256];
    long long kib = -1;
    while (f && fgets(line, sizeof line, f))
        if (sscanf(line, "MemAvailable: %lld kB", &kib) == 1)
            break;
    if (f)
        fclose(f);
    return kib;
}

static void small_counts(MPI_Win win, long long *mem, const char *fl)
{
    char w[160];
    MT_MPI(MPI_Win_lock(MPI_LOCK_EXCLUSIVE, rank, 0, win));
    for (int i = 0; i < N; i++)
        mem[i] = 1000LL * rank + i;
    MT_MPI(MPI_Win_unlock(rank, win));
    MT_MPI(MPI_Barrier(MPI_COMM_WORLD));

    long long pv[2] = { 5000 + rank, 5001 + rank }, gv[2] = { -1, -1 }, av[2] = { rank + 1, rank + 2 },
              gav[2] = { 7, 8 }, gar[2] = { -1, -1 };
    long long rpv = 6000 + rank, rgv = -1, rav = 3, rgav = 4, rgar = -1;
    MPI_Request req[4];
    MT_MPI(MPI_Win_lock_all(0, win));
    MT_MPI(MPI_Put_c(pv, 2, MPI_LONG_LONG, right, 0, 2, MPI_LONG_LONG, win));
    MT_MPI(MPI_Get_c(gv, 2, MPI_LONG_LONG, right, 2, 2, MPI_LONG_LONG, win));
    MT_MPI(MPI_Accumulate_c(av, 2, MPI_LONG_LONG, right, 4, 2, MPI_LONG_LONG, MPI_SUM, win));
    MT_MPI(MPI_Get_accumulate_c(gav, 2, MPI_LONG_LONG, gar, 2, MPI_LONG_LONG, right, 6, 2, MPI_LONG_LONG, MPI_SUM,
                                win));
    MT_MPI(MPI_Rput_c(&rpv, 1, MPI_LONG_LONG, right, 8, 1, MPI_LONG_LONG, win, &req[0]));
    MT_MPI(MPI_Rget_c(&rgv, 1, MPI_LONG_LONG, right, 9, 1, MPI_LONG_LONG, win, &req[1]));
    MT_MPI(MPI_Raccumulate_c(&rav, 1, MPI_LONG_LONG, right, 10, 1, MPI_LONG_LONG, MPI_SUM, win, &req[2]));
    MT_MPI(MPI_Rget_accumulate_c(&rgav, 1, MPI_LONG_LONG, &rgar, 1, MPI_LONG_LONG, right, 11, 1, MPI_LONG_LONG,
                                 MPI_SUM, win, &req[3]));
    MPI_Status st[4]; /* not MPI_STATUSES_IGNORE: GCC -Wstringop-overflow on MPICH's definition */
    MT_MPI(MPI_Waitall(4, req, st));
    MT_MPI(MPI_Win_unlock_all(win));
    snprintf(w, sizeof w, "%s: MPI_Get_c [2]", fl);
    MT_EXPECT_INT(w, 1000LL * right + 2, gv[0]);
    snprintf(w, sizeof w, "%s: MPI_Get_c [3]", fl);
    MT_EXPECT_INT(w, 1000LL * right + 3, gv[1]);
    snprintf(w, sizeof w, "%s: MPI_Get_accumulate_c result [6]", fl);
    MT_EXPECT_INT(w, 1000LL * right + 6, gar[0]);
    snprintf(w, sizeof w, "%s: MPI_Rget_c [9]", fl);
    MT_EXPECT_INT(w, 1000LL * right + 9, rgv);
    snprintf(w, sizeof w, "%s: MPI_Rget_accumulate_c result [11]", fl);
    MT_EXPECT_INT(w, 1000LL * right + 11, rgar);
    MT_MPI(MPI_Barrier(MPI_COMM_WORLD));

    long long e[N];
    for (int i = 0; i < N; i++)
        e[i] = 1000LL * rank + i;
    e[0] = 5000 + left;
    e[1] = 5001 + left;
    e[4] += left + 1;
    e[5] += left + 2;
    e[6] += 7;
    e[7] += 8;
    e[8] = 6000 + left;
    e[10] += 3;
    e[11] += 4;
    MT_MPI(MPI_Win_lock(MPI_LOCK_SHARED, rank, 0, win));
    for (int i = 0; i < N; i++)
        if (mem[i] != e[i])
            MT_FAIL("%s: target [%d] after the _c operations of rank %d: expected %lld, got %lld", fl, i, left, e[i],
                    mem[i]);
    MT_MPI(MPI_Win_unlock(rank, win));
    MT_MPI(MPI_Barrier(MPI_COMM_WORLD));
}

static unsigned char pattern(MPI_Count i) { return (unsigned char)((i * 131 + 7) & 0xff); }

static void large(void)
{
    const MPI_Count count = (MPI_Count)INT_MAX + 4099;
    long long need_kib = 2 * (count / 1024) + 512 * 1024; /* window + buffer on the two busy ranks + slack */
    int ok = mem_available_kib() >= need_kib + (long long)(count / 1024);
    int all_ok;
    MT_MPI(MPI_Allreduce(&ok, &all_ok, 1, MPI_INT, MPI_MIN, MPI_COMM_WORLD));
    /* The window exists either way, so the RMA_MPI_STATS window count does
     * not depend on the machine's memory. */
    unsigned char *wmem, *buf = NULL;
    MPI_Win win;
    MT_MPI(MPI_Win_allocate_c(rank == 1 && all_ok ? count : 0, 1, MPI_INFO_NULL, MPI_COMM_WORLD, &wmem, &win));
    if (!all_ok) {
        if (rank == 0)
            printf("mpi_large_count_test: large part skipped: MemAvailable below %lld MiB\n",
                   (need_kib + (long long)(count / 1024)) / 1024);
        MT_MPI(MPI_Win_free(&win));
        return;
    }
    /* rank 1 exposes count bytes; rank 0 puts them from, and gets them back into, its buffer */
    if (rank == 0) {
        buf = malloc((size_t)count);
        if (!buf)
            MT_FAIL("malloc(%lld): expected memory, got NULL", (long long)count);
        for (MPI_Count i = 0; i < count; i++)
            buf[i] = pattern(i);
        MT_MPI(MPI_Win_lock(MPI_LOCK_EXCLUSIVE, 1, 0, win));
        MT_MPI(MPI_Put_c(buf, count, MPI_BYTE, 1, 0, count, MPI_BYTE, win));
        MT_MPI(MPI_Win_unlock(1, win));
    }
    MT_MPI(MPI_Barrier(MPI_COMM_WORLD));
    if (rank == 1) {
        MT_MPI(MPI_Win_lock(MPI_LOCK_SHARED, 1, 0, win));
        for (MPI_Count i = 0; i < count; i++)
            if (wmem[i] != pattern(i))
                MT_FAIL("MPI_Put_c of %lld bytes: byte %lld: expected %d, got %d", (long long)count, (long long)i,
                        pattern(i), wmem[i]);
        MT_MPI(MPI_Win_unlock(1, win));
    }
    MT_MPI(MPI_Barrier(MPI_COMM_WORLD));
    if (rank == 0) {
        memset(buf, 0, (size_t)count);
        MT_MPI(MPI_Win_lock(MPI_LOCK_SHARED, 1, 0, win));
        MT_MPI(MPI_Get_c(buf, count, MPI_BYTE, 1, 0, count, MPI_BYTE, win));
        MT_MPI(MPI_Win_unlock(1, win));
        for (MPI_Count i = 0; i < count; i++)
            if (buf[i] != pattern(i))
                MT_FAIL("MPI_Get_c of %lld bytes: byte %lld: expected %d, got %d", (long long)count, (long long)i,
                        pattern(i), buf[i]);
        free(buf);
        printf("mpi_large_count_test: %lld bytes (> INT_MAX) put and got back\n", (long long)count);
    }
    MT_MPI(MPI_Win_free(&win));
}

int main(int argc, char **argv)
{
    mt_init(&argc, &argv, 2, &rank, &size);
    left = (rank + size - 1) % size;
    right = (rank + 1) % size;

    long long *mem;
    MPI_Win win;
    MT_MPI(MPI_Win_allocate_c(N * sizeof(long long), (MPI_Aint)sizeof(long long), MPI_INFO_NULL, MPI_COMM_WORLD,
                              &mem, &win));
    small_counts(win, mem, "allocate_c");
    MT_MPI(MPI_Win_free(&win));

    long long *cmem = malloc(N * sizeof(long long));
    MT_MPI(MPI_Win_create_c(cmem, N * sizeof(long long), (MPI_Aint)sizeof(long long), MPI_INFO_NULL,
                            MPI_COMM_WORLD, &win));
    small_counts(win, cmem, "create_c");
    MT_MPI(MPI_Win_free(&win));
    free(cmem);

    /* allocate_shared_c over the shared-memory communicator */
    MPI_Comm shm;
    int srank;
    MT_MPI(MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED, 0, MPI_INFO_NULL, &shm));
    MT_MPI(MPI_Comm_rank(shm, &srank));
    MT_MPI(MPI_Win_allocate_shared_c((MPI_Aint)(N * sizeof(long long)), (MPI_Aint)sizeof(long long), MPI_INFO_NULL,
                                     shm, &mem, &win));
    MPI_Aint qsize, qunit;
    long long *q;
    MT_MPI(MPI_Win_shared_query_c(win, srank, &qsize, &qunit, &q));
    MT_EXPECT_INT("shared_query_c(self): size", N * sizeof(long long), qsize);
    MT_EXPECT_INT("shared_query_c(self): disp_unit", sizeof(long long), qunit);
    MT_EXPECT_TRUE("shared_query_c(self): base is the allocated memory", q == mem);
    MT_MPI(MPI_Win_free(&win));
    MT_MPI(MPI_Comm_free(&shm));

    if (mt_flag(argc, argv, "--large", "MPI_TEST_LARGE"))
        large();
    mt_pass("mpi_large_count_test");
    MPI_Finalize();
    return 0;
}

#else

int main(int argc, char **argv)
{
    int rank;
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    if (rank == 0)
        printf("mpi_large_count_test: SKIP: this MPI has no MPI-4 large-count (_c) functions\n");
    MPI_Finalize();
    return MT_SKIP;
}

#endif
