/* mpi_comm_test: every communication call (put, get, accumulate,
 * get_accumulate, fetch_and_op, compare_and_swap) in every synchronization
 * mode (fence, PSCW, lock/unlock, lock_all with flush, flush_local, flush_all,
 * flush_local_all) on every window flavor (create over malloc, create over
 * MPI_Alloc_mem, allocate, allocate_shared with shared_query, dynamic with two
 * adjacent attached regions). Each epoch also issues zero-count operations and
 * operations to MPI_PROC_NULL, which must change nothing.
 *
 * Ring: rank r targets right = r+1 and is targeted by left = r-1 (mod size).
 * Target layout (N = 16 ints; a dynamic window attaches [0,8) and [8,16) as
 * two regions, and no operation spans both):
 *   [0] fetch_and_op   [1..3] put        [4..6] accumulate  [7] cas (match)
 *   [8] zero counts    [9..11] get       [12..14] get_acc   [15] cas (no match)
 * Run with 2 or 3 ranks. */
#include "mpi_check.h"

#define N 16
#define INIT(r, i) ((r) * 1000 + (i))

enum flavor { F_CREATE_MALLOC, F_CREATE_ALLOC_MEM, F_ALLOCATE, F_SHARED, F_DYNAMIC, F_COUNT };
static const char *flavor_name[] = { "create(malloc)", "create(MPI_Alloc_mem)", "allocate",
                                     "allocate_shared", "dynamic" };
enum sync { S_FENCE, S_PSCW, S_LOCK, S_FLUSH, S_FLUSH_LOCAL, S_FLUSH_ALL, S_FLUSH_LOCAL_ALL, S_COUNT };
static const char *sync_name[] = { "fence", "pscw", "lock", "lock_all+flush", "lock_all+flush_local",
                                   "lock_all+flush_all", "lock_all+flush_local_all" };

static int rank, size, left, right;

struct win {
    MPI_Win win;
    int *mem;               /* this rank's N ints */
    void *to_free;          /* malloc'd or MPI_Alloc_mem'd (or NULL) */
    int flavor;
    MPI_Aint disp0[3 + 64]; /* per rank: displacement of element 0 (dynamic: address) */
};

static MPI_Aint disp(const struct win *w, int target, int idx)
{
    if (w->flavor == F_DYNAMIC)
        return w->disp0[target] + (MPI_Aint)idx * (MPI_Aint)sizeof(int);
    return idx;
}

static void win_open(struct win *w, int flavor)
{
    memset(w, 0, sizeof *w);
    w->flavor = flavor;
    MPI_Aint bytes = N * sizeof(int);
    switch (flavor) {
    case F_CREATE_MALLOC:
        w->mem = w->to_free = malloc(bytes);
        MT_MPI(MPI_Win_create(w->mem, bytes, sizeof(int), MPI_INFO_NULL, MPI_COMM_WORLD, &w->win));
        break;
    case F_CREATE_ALLOC_MEM:
        MT_MPI(MPI_Alloc_mem(bytes, MPI_INFO_NULL, &w->mem));
        MT_MPI(MPI_Win_create(w->mem, bytes, sizeof(int), MPI_INFO_NULL, MPI_COMM_WORLD, &w->win));
        if (getenv("MPI_TEST_RMAMPI") && !getenv("RMA_MPI_ENGINE")) {
            /* Through the drop-in, MPI_Alloc_mem memory is librma's: peers reach it with loads and stores. */
            MPI_Info info;
            char value[64] = "";
            int flag = 0;
            MT_MPI(MPI_Win_get_info(w->win, &info));
            MT_MPI(MPI_Info_get(info, "rma_memory", (int)sizeof(value) - 1, value, &flag));
            MT_MPI(MPI_Info_free(&info));
            MT_EXPECT_TRUE("create(MPI_Alloc_mem) through rmampi: info rma_memory=alloc_mem",
                           flag && strcmp(value, "alloc_mem") == 0);
        }
        break;
    case F_ALLOCATE:
        MT_MPI(MPI_Win_allocate(bytes, sizeof(int), MPI_INFO_NULL, MPI_COMM_WORLD, &w->mem, &w->win));
        break;
    case F_SHARED: {
        MT_MPI(MPI_Win_allocate_shared(bytes, sizeof(int), MPI_INFO_NULL, MPI_COMM_WORLD, &w->mem,
                                       &w->win));
        /* shared_query for self and each neighbour: size, disp_unit, and a
         * pointer whose load is checked after the first initialization. */
        MPI_Aint qsize;
        int qunit;
        int *qbase;
        MT_MPI(MPI_Win_shared_query(w->win, rank, &qsize, &qunit, &qbase));
        MT_EXPECT_INT("allocate_shared: shared_query(self) size", bytes, qsize);
        MT_EXPECT_INT("allocate_shared: shared_query(self) disp_unit", sizeof(int), qunit);
        MT_EXPECT_TRUE("allocate_shared: shared_query(self) base == baseptr", qbase == w->mem);
        MT_MPI(MPI_Win_shared_query(w->win, right, &qsize, &qunit, &qbase));
        MT_EXPECT_INT("allocate_shared: shared_query(right) size", bytes, qsize);
        MT_EXPECT_INT("allocate_shared: shared_query(right) disp_unit", sizeof(int), qunit);
        MT_EXPECT_TRUE("allocate_shared: shared_query(right) base not NULL", qbase != NULL);
        break;
    }
    case F_DYNAMIC: {
        w->mem = w->to_free = malloc(bytes);
        MT_MPI(MPI_Win_create_dynamic(MPI_INFO_NULL, MPI_COMM_WORLD, &w->win));
        /* Two adjacent regions, attached separately. */
        MT_MPI(MPI_Win_attach(w->win, w->mem, bytes / 2));
        MT_MPI(MPI_Win_attach(w->win, w->mem + N / 2, bytes / 2));
        MPI_Aint mine;
        MT_MPI(MPI_Get_address(w->mem, &mine));
        MT_MPI(MPI_Allgather(&mine, 1, MPI_AINT, w->disp0, 1, MPI_AINT, MPI_COMM_WORLD));
        break;
    }
    }
}

static void win_close(struct win *w)
{
    if (w->flavor == F_DYNAMIC) {
        MT_MPI(MPI_Win_detach(w->win, w->mem + N / 2));
        MT_MPI(MPI_Win_detach(w->win, w->mem));
    }
    MT_MPI(MPI_Win_free(&w->win));
    if (w->flavor == F_CREATE_ALLOC_MEM)
        MT_MPI(MPI_Free_mem(w->mem));
    else
        free(w->to_free);
}

/* Local window memory is written and read only inside a lock epoch on self,
 * which is correct in the separate and the unified model alike. */
static void local_init(struct win *w)
{
    MT_MPI(MPI_Win_lock(MPI_LOCK_EXCLUSIVE, rank, 0, w->win));
    for (int i = 0; i < N; i++)
        w->mem[i] = INIT(rank, i);
    MT_MPI(MPI_Win_unlock(rank, w->win));
    MT_MPI(MPI_Barrier(MPI_COMM_WORLD));
}

static void local_read(struct win *w, int *out)
{
    MT_MPI(MPI_Win_lock(MPI_LOCK_SHARED, rank, 0, w->win));
    memcpy(out, w->mem, N * sizeof(int));
    MT_MPI(MPI_Win_unlock(rank, w->win));
}

static void check_shared_pointer(struct win *w)
{
    /* A direct load through shared_query's pointer sees the neighbour's
     * initialization (lock_all + win_sync + barrier + win_sync). */
    MPI_Aint qsize;
    int qunit;
    int *q;
    MT_MPI(MPI_Win_shared_query(w->win, right, &qsize, &qunit, &q));
    MT_MPI(MPI_Win_lock_all(0, w->win));
    MT_MPI(MPI_Win_sync(w->win));
    MT_MPI(MPI_Barrier(MPI_COMM_WORLD));
    MT_MPI(MPI_Win_sync(w->win));
    for (int i = 0; i < N; i++)
        if (q[i] != INIT(right, i))
            MT_FAIL("allocate_shared: load through shared_query(right) element %d: expected %d, got %d", i,
                    INIT(right, i), q[i]);
    MT_MPI(MPI_Barrier(MPI_COMM_WORLD));
    MT_MPI(MPI_Win_unlock_all(w->win));
}

#define SENTINEL (-77777)

static void run_case(struct win *w, int sync)
{
    char what[160];
    snprintf(what, sizeof what, "%s/%s", flavor_name[w->flavor], sync_name[sync]);
    MPI_Win win = w->win;
    MPI_Group world_group, left_group, right_group;

    local_init(w);

    int putbuf[3], accbuf[3], gaccbuf[3], getres[3], gaccres[3], fopval, fopres, casval, cascmp, casres,
        cas2val, cas2cmp, cas2res, nullres[3], zero_res[3], nullfop, nullcas;
    for (int k = 0; k < 3; k++) {
        putbuf[k] = 50000 + rank * 100 + k;
        accbuf[k] = rank * 100 + k + 1;
        gaccbuf[k] = rank * 10 + k + 7;
        getres[k] = gaccres[k] = nullres[k] = zero_res[k] = SENTINEL;
    }
    fopval = rank + 3;
    fopres = SENTINEL;
    casval = 90000 + rank;
    cascmp = INIT(right, 7); /* matches: swapped */
    casres = SENTINEL;
    cas2val = 91000 + rank;
    cas2cmp = INIT(right, 15) + 1; /* does not match: unchanged */
    cas2res = SENTINEL;
    nullfop = nullcas = SENTINEL;

    /* open the epoch */
    switch (sync) {
    case S_FENCE:
        MT_MPI(MPI_Win_fence(0, win));
        break;
    case S_PSCW:
        MT_MPI(MPI_Comm_group(MPI_COMM_WORLD, &world_group));
        MT_MPI(MPI_Group_incl(world_group, 1, &left, &left_group));
        MT_MPI(MPI_Group_incl(world_group, 1, &right, &right_group));
        MT_MPI(MPI_Win_post(left_group, 0, win));
        MT_MPI(MPI_Win_start(right_group, 0, win));
        break;
    case S_LOCK:
        MT_MPI(MPI_Win_lock(MPI_LOCK_EXCLUSIVE, right, 0, win));
        break;
    default:
        MT_MPI(MPI_Win_lock_all(0, win));
        break;
    }

    MT_MPI(MPI_Fetch_and_op(&fopval, &fopres, MPI_INT, right, disp(w, right, 0), MPI_SUM, win));
    MT_MPI(MPI_Put(putbuf, 3, MPI_INT, right, disp(w, right, 1), 3, MPI_INT, win));
    MT_MPI(MPI_Accumulate(accbuf, 3, MPI_INT, right, disp(w, right, 4), 3, MPI_INT, MPI_SUM, win));
    MT_MPI(MPI_Compare_and_swap(&casval, &cascmp, &casres, MPI_INT, right, disp(w, right, 7), win));
    MT_MPI(MPI_Get(getres, 3, MPI_INT, right, disp(w, right, 9), 3, MPI_INT, win));
    MT_MPI(MPI_Get_accumulate(gaccbuf, 3, MPI_INT, gaccres, 3, MPI_INT, right, disp(w, right, 12), 3,
                              MPI_INT, MPI_SUM, win));
    MT_MPI(MPI_Compare_and_swap(&cas2val, &cas2cmp, &cas2res, MPI_INT, right, disp(w, right, 15), win));

    /* zero counts: no data moves */
    MT_MPI(MPI_Put(putbuf, 0, MPI_INT, right, disp(w, right, 8), 0, MPI_INT, win));
    MT_MPI(MPI_Get(zero_res, 0, MPI_INT, right, disp(w, right, 8), 0, MPI_INT, win));
    MT_MPI(MPI_Accumulate(accbuf, 0, MPI_INT, right, disp(w, right, 8), 0, MPI_INT, MPI_SUM, win));
    MT_MPI(MPI_Get_accumulate(gaccbuf, 0, MPI_INT, zero_res, 0, MPI_INT, right, disp(w, right, 8), 0, MPI_INT,
                              MPI_SUM, win));

    /* MPI_PROC_NULL: no effect, result buffers unchanged */
    MT_MPI(MPI_Put(putbuf, 3, MPI_INT, MPI_PROC_NULL, 0, 3, MPI_INT, win));
    MT_MPI(MPI_Get(nullres, 3, MPI_INT, MPI_PROC_NULL, 0, 3, MPI_INT, win));
    MT_MPI(MPI_Accumulate(accbuf, 3, MPI_INT, MPI_PROC_NULL, 0, 3, MPI_INT, MPI_SUM, win));
    MT_MPI(MPI_Get_accumulate(gaccbuf, 3, MPI_INT, nullres, 3, MPI_INT, MPI_PROC_NULL, 0, 3, MPI_INT, MPI_SUM,
                              win));
    MT_MPI(MPI_Fetch_and_op(&fopval, &nullfop, MPI_INT, MPI_PROC_NULL, 0, MPI_SUM, win));
    MT_MPI(MPI_Compare_and_swap(&casval, &cascmp, &nullcas, MPI_INT, MPI_PROC_NULL, 0, win));

    /* close (or flush) the epoch */
    int check_again = 0;
    switch (sync) {
    case S_FENCE:
        MT_MPI(MPI_Win_fence(0, win));
        break;
    case S_PSCW:
        MT_MPI(MPI_Win_complete(win));
        MT_MPI(MPI_Win_wait(win));
        MT_MPI(MPI_Group_free(&left_group));
        MT_MPI(MPI_Group_free(&right_group));
        MT_MPI(MPI_Group_free(&world_group));
        break;
    case S_LOCK:
        MT_MPI(MPI_Win_unlock(right, win));
        break;
    case S_FLUSH:
    case S_FLUSH_ALL:
        if (sync == S_FLUSH)
            MT_MPI(MPI_Win_flush(right, win));
        else
            MT_MPI(MPI_Win_flush_all(win));
        /* Remote completion: a later get in the same epoch sees the put and
         * the accumulate. */
        {
            int back[6] = { SENTINEL, SENTINEL, SENTINEL, SENTINEL, SENTINEL, SENTINEL };
            MT_MPI(MPI_Get(back, 6, MPI_INT, right, disp(w, right, 1), 6, MPI_INT, win));
            MT_MPI(MPI_Win_flush(right, win));
            int exp[6];
            for (int k = 0; k < 3; k++) {
                exp[k] = putbuf[k];
                exp[3 + k] = INIT(right, 4 + k) + accbuf[k];
            }
            char w2[320];
            snprintf(w2, sizeof w2, "%s: get after flush of put+accumulate at right's [1..6]", what);
            MT_EXPECT_INTS(w2, exp, back, 6);
        }
        check_again = 1;
        break;
    case S_FLUSH_LOCAL:
    case S_FLUSH_LOCAL_ALL:
        if (sync == S_FLUSH_LOCAL)
            MT_MPI(MPI_Win_flush_local(right, win));
        else
            MT_MPI(MPI_Win_flush_local_all(win));
        /* Local completion: origin buffers may be reused; results are in. */
        for (int k = 0; k < 3; k++)
            putbuf[k] = accbuf[k] = gaccbuf[k] = -1;
        check_again = 1;
        break;
    }

    /* origin-side results */
    for (int pass = 0; pass <= check_again; pass++) {
        int exp_get[3], exp_gacc[3], none[3] = { SENTINEL, SENTINEL, SENTINEL };
        char w2[320];
        for (int k = 0; k < 3; k++) {
            exp_get[k] = INIT(right, 9 + k);
            exp_gacc[k] = INIT(right, 12 + k);
        }
        snprintf(w2, sizeof w2, "%s: get result", what);
        MT_EXPECT_INTS(w2, exp_get, getres, 3);
        snprintf(w2, sizeof w2, "%s: get_accumulate result", what);
        MT_EXPECT_INTS(w2, exp_gacc, gaccres, 3);
        snprintf(w2, sizeof w2, "%s: fetch_and_op result", what);
        MT_EXPECT_INT(w2, INIT(right, 0), fopres);
        snprintf(w2, sizeof w2, "%s: compare_and_swap (match) result", what);
        MT_EXPECT_INT(w2, INIT(right, 7), casres);
        snprintf(w2, sizeof w2, "%s: compare_and_swap (no match) result", what);
        MT_EXPECT_INT(w2, INIT(right, 15), cas2res);
        snprintf(w2, sizeof w2, "%s: zero-count get/get_accumulate result buffer", what);
        MT_EXPECT_INTS(w2, none, zero_res, 3);
        snprintf(w2, sizeof w2, "%s: MPI_PROC_NULL get/get_accumulate result buffer", what);
        MT_EXPECT_INTS(w2, none, nullres, 3);
        snprintf(w2, sizeof w2, "%s: MPI_PROC_NULL fetch_and_op result", what);
        MT_EXPECT_INT(w2, SENTINEL, nullfop);
        snprintf(w2, sizeof w2, "%s: MPI_PROC_NULL compare_and_swap result", what);
        MT_EXPECT_INT(w2, SENTINEL, nullcas);
        if (pass == 0 && check_again)
            MT_MPI(MPI_Win_unlock_all(win));
    }

    /* target side: what left did to this rank's memory */
    MT_MPI(MPI_Barrier(MPI_COMM_WORLD));
    int got[N], exp[N];
    local_read(w, got);
    for (int i = 0; i < N; i++)
        exp[i] = INIT(rank, i);
    exp[0] += left + 3;
    for (int k = 0; k < 3; k++) {
        exp[1 + k] = 50000 + left * 100 + k;
        exp[4 + k] += left * 100 + k + 1;
        exp[12 + k] += left * 10 + k + 7;
    }
    exp[7] = 90000 + left;
    char w2[320];
    snprintf(w2, sizeof w2, "%s: target memory after epoch (written by rank %d)", what, left);
    MT_EXPECT_INTS(w2, exp, got, N);
    MT_MPI(MPI_Barrier(MPI_COMM_WORLD));
}

int main(int argc, char **argv)
{
    mt_init(&argc, &argv, 2, &rank, &size);
    if (size > 64)
        MT_FAIL("at most 64 ranks: expected <= 64, got %d", size);
    left = (rank + size - 1) % size;
    right = (rank + 1) % size;

    /* allocate_shared needs a communicator whose ranks share memory: skip
     * that flavor (with a note) when MPI_COMM_TYPE_SHARED does not cover the
     * job (MPICH with MPIR_CVAR_NOLOCAL=1 puts every rank on its own node). */
    MPI_Comm shm;
    int shm_size;
    MT_MPI(MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED, 0, MPI_INFO_NULL, &shm));
    MT_MPI(MPI_Comm_size(shm, &shm_size));
    MT_MPI(MPI_Comm_free(&shm));
    int min_shm;
    MT_MPI(MPI_Allreduce(&shm_size, &min_shm, 1, MPI_INT, MPI_MIN, MPI_COMM_WORLD));
    for (int f = 0; f < F_COUNT; f++) {
        struct win w;
        if (f == F_SHARED && min_shm != size) {
            if (rank == 0)
                printf("mpi_comm_test: allocate_shared skipped: MPI_COMM_TYPE_SHARED has %d of %d ranks\n",
                       min_shm, size);
            continue;
        }
        win_open(&w, f);
        if (f == F_SHARED) {
            local_init(&w);
            check_shared_pointer(&w);
        }
        for (int s = 0; s < S_COUNT; s++)
            run_case(&w, s);
        win_close(&w);
    }
    mt_pass("mpi_comm_test");
    MPI_Finalize();
    return 0;
}
