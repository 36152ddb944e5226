/* mpi_attr_test: window attributes, keyvals and names.
 *  - the five predefined attributes (MPI_WIN_BASE, MPI_WIN_SIZE,
 *    MPI_WIN_DISP_UNIT, MPI_WIN_CREATE_FLAVOR, MPI_WIN_MODEL) with their exact
 *    values per flavor (create, allocate, allocate_shared, dynamic: base
 *    MPI_BOTTOM and size 0); the memory model is implementation-defined
 *    (separate or unified) and is required to be MPI_WIN_UNIFIED only through
 *    rmampi (MPI_TEST_RMAMPI=1 or --rmampi);
 *  - MPI_Win_get_group is the creating communicator's group;
 *  - a user keyval: the delete callback receives the program's window handle,
 *    the value and extra_state, on MPI_Win_delete_attr, on replacement by
 *    MPI_Win_set_attr and at MPI_Win_free; the copy callback is never called
 *    (windows are never duplicated);
 *  - MPI_Win_free_keyval while the attribute is attached: the key becomes
 *    MPI_KEYVAL_INVALID and the delete callback still runs at MPI_Win_free;
 *  - MPI_Win_set_name / MPI_Win_get_name. */
#include "mpi_check.h"

static int rank, size;
static int shim;

static int extra_token = 4242;
static int copy_calls;
static int delete_calls;
static MPI_Win delete_expect_win;
static void *delete_expect_val;
static int delete_bad;

static int copy_cb(MPI_Win oldwin, int keyval, void *extra, void *in, void *out, int *flag)
{
    (void)oldwin; (void)keyval; (void)extra; (void)in; (void)out;
    copy_calls++;
    *flag = 0;
    return MPI_SUCCESS;
}

static int delete_cb(MPI_Win win, int keyval, void *val, void *extra)
{
    (void)keyval;
    delete_calls++;
    if (win != delete_expect_win) {
        fprintf(stderr, "rank %d: delete callback: window handle is not the program's\n", rank);
        delete_bad = 1;
    }
    if (val != delete_expect_val) {
        fprintf(stderr, "rank %d: delete callback: expected value %p, got %p\n", rank, delete_expect_val, val);
        delete_bad = 1;
    }
    if (extra != &extra_token) {
        fprintf(stderr, "rank %d: delete callback: expected extra_state %p, got %p\n", rank,
                (void *)&extra_token, extra);
        delete_bad = 1;
    }
    return MPI_SUCCESS;
}

static void check_predefined(MPI_Win win, const char *fl, void *base, MPI_Aint bytes, int unit, int flavor)
{
    char w[160];
    void *vbase;
    MPI_Aint *vsize;
    int *vunit, *vflavor, *vmodel, flag;

    snprintf(w, sizeof w, "%s: MPI_WIN_BASE flag", fl);
    MT_MPI(MPI_Win_get_attr(win, MPI_WIN_BASE, &vbase, &flag));
    MT_EXPECT_INT(w, 1, flag);
    if (vbase != base)
        MT_FAIL("%s: MPI_WIN_BASE: expected %p, got %p", fl, base, vbase);

    snprintf(w, sizeof w, "%s: MPI_WIN_SIZE flag", fl);
    MT_MPI(MPI_Win_get_attr(win, MPI_WIN_SIZE, &vsize, &flag));
    MT_EXPECT_INT(w, 1, flag);
    snprintf(w, sizeof w, "%s: MPI_WIN_SIZE", fl);
    MT_EXPECT_INT(w, bytes, *vsize);

    snprintf(w, sizeof w, "%s: MPI_WIN_DISP_UNIT flag", fl);
    MT_MPI(MPI_Win_get_attr(win, MPI_WIN_DISP_UNIT, &vunit, &flag));
    MT_EXPECT_INT(w, 1, flag);
    snprintf(w, sizeof w, "%s: MPI_WIN_DISP_UNIT", fl);
    MT_EXPECT_INT(w, unit, *vunit);

    snprintf(w, sizeof w, "%s: MPI_WIN_CREATE_FLAVOR flag", fl);
    MT_MPI(MPI_Win_get_attr(win, MPI_WIN_CREATE_FLAVOR, &vflavor, &flag));
    MT_EXPECT_INT(w, 1, flag);
    snprintf(w, sizeof w, "%s: MPI_WIN_CREATE_FLAVOR", fl);
    MT_EXPECT_INT(w, flavor, *vflavor);

    snprintf(w, sizeof w, "%s: MPI_WIN_MODEL flag", fl);
    MT_MPI(MPI_Win_get_attr(win, MPI_WIN_MODEL, &vmodel, &flag));
    MT_EXPECT_INT(w, 1, flag);
    if (*vmodel != MPI_WIN_UNIFIED && *vmodel != MPI_WIN_SEPARATE)
        MT_FAIL("%s: MPI_WIN_MODEL: expected MPI_WIN_UNIFIED (%d) or MPI_WIN_SEPARATE (%d), got %d", fl,
                MPI_WIN_UNIFIED, MPI_WIN_SEPARATE, *vmodel);
    if (shim) {
        snprintf(w, sizeof w, "%s: MPI_WIN_MODEL through rmampi (MPI_WIN_UNIFIED)", fl);
        MT_EXPECT_INT(w, MPI_WIN_UNIFIED, *vmodel);
    }

    MPI_Group wg, g;
    int cmp;
    MT_MPI(MPI_Win_get_group(win, &g));
    MT_MPI(MPI_Comm_group(MPI_COMM_WORLD, &wg));
    MT_MPI(MPI_Group_compare(wg, g, &cmp));
    snprintf(w, sizeof w, "%s: MPI_Win_get_group vs the communicator's group (MPI_IDENT)", fl);
    MT_EXPECT_INT(w, MPI_IDENT, cmp);
    MT_MPI(MPI_Group_free(&g));
    MT_MPI(MPI_Group_free(&wg));
}

static void check_keyval_and_name(MPI_Win *winp, const char *fl)
{
    char w[200];
    MPI_Win win = *winp;
    int key, flag;
    static int v1 = 1, v2 = 2, v3 = 3;
    void *got;

    copy_calls = delete_calls = delete_bad = 0;
    delete_expect_win = win;
    MT_MPI(MPI_Win_create_keyval(copy_cb, delete_cb, &key, &extra_token));

    MT_MPI(MPI_Win_get_attr(win, key, &got, &flag));
    snprintf(w, sizeof w, "%s: user attribute not set yet: flag", fl);
    MT_EXPECT_INT(w, 0, flag);

    MT_MPI(MPI_Win_set_attr(win, key, &v1));
    MT_MPI(MPI_Win_get_attr(win, key, &got, &flag));
    snprintf(w, sizeof w, "%s: user attribute flag after set", fl);
    MT_EXPECT_INT(w, 1, flag);
    if (got != &v1)
        MT_FAIL("%s: user attribute value: expected %p, got %p", fl, (void *)&v1, got);

    /* replacing calls delete on the old value */
    delete_expect_val = &v1;
    MT_MPI(MPI_Win_set_attr(win, key, &v2));
    snprintf(w, sizeof w, "%s: delete callback calls after replacing the value", fl);
    MT_EXPECT_INT(w, 1, delete_calls);

    /* explicit delete */
    delete_expect_val = &v2;
    MT_MPI(MPI_Win_delete_attr(win, key));
    snprintf(w, sizeof w, "%s: delete callback calls after MPI_Win_delete_attr", fl);
    MT_EXPECT_INT(w, 2, delete_calls);
    MT_MPI(MPI_Win_get_attr(win, key, &got, &flag));
    snprintf(w, sizeof w, "%s: user attribute flag after delete", fl);
    MT_EXPECT_INT(w, 0, flag);

    /* attached, then the keyval freed: the attribute stays until MPI_Win_free */
    MT_MPI(MPI_Win_set_attr(win, key, &v3));
    int key_copy = key;
    MT_MPI(MPI_Win_free_keyval(&key));
    snprintf(w, sizeof w, "%s: MPI_Win_free_keyval sets the key to MPI_KEYVAL_INVALID", fl);
    MT_EXPECT_INT(w, MPI_KEYVAL_INVALID, key);
    MT_MPI(MPI_Win_get_attr(win, key_copy, &got, &flag));
    snprintf(w, sizeof w, "%s: attribute still attached after MPI_Win_free_keyval: flag", fl);
    MT_EXPECT_INT(w, 1, flag);
    if (got != &v3)
        MT_FAIL("%s: attribute after MPI_Win_free_keyval: expected %p, got %p", fl, (void *)&v3, got);
    snprintf(w, sizeof w, "%s: delete callback calls before MPI_Win_free", fl);
    MT_EXPECT_INT(w, 2, delete_calls);

    /* names */
    char name[MPI_MAX_OBJECT_NAME];
    int len = -1;
    MT_MPI(MPI_Win_set_name(win, "librma test window"));
    MT_MPI(MPI_Win_get_name(win, name, &len));
    if (strcmp(name, "librma test window") != 0)
        MT_FAIL("%s: MPI_Win_get_name: expected \"librma test window\", got \"%s\"", fl, name);
    snprintf(w, sizeof w, "%s: MPI_Win_get_name length", fl);
    MT_EXPECT_INT(w, (int)strlen("librma test window"), len);
    MT_MPI(MPI_Win_set_name(win, "renamed"));
    MT_MPI(MPI_Win_get_name(win, name, &len));
    if (strcmp(name, "renamed") != 0)
        MT_FAIL("%s: MPI_Win_get_name after a second set: expected \"renamed\", got \"%s\"", fl, name);

    /* MPI_Win_free runs the delete callback with the program's handle */
    delete_expect_val = &v3;
    MT_MPI(MPI_Win_free(winp));
    snprintf(w, sizeof w, "%s: MPI_Win_free returns MPI_WIN_NULL", fl);
    MT_EXPECT_TRUE(w, *winp == MPI_WIN_NULL);
    snprintf(w, sizeof w, "%s: delete callback calls after MPI_Win_free", fl);
    MT_EXPECT_INT(w, 3, delete_calls);
    snprintf(w, sizeof w, "%s: copy callback calls (windows are never copied)", fl);
    MT_EXPECT_INT(w, 0, copy_calls);
    snprintf(w, sizeof w, "%s: delete callback arguments (see above)", fl);
    MT_EXPECT_INT(w, 0, delete_bad);
}

int main(int argc, char **argv)
{
    mt_init(&argc, &argv, 1, &rank, &size);
    shim = mt_flag(argc, argv, "--rmampi", "MPI_TEST_RMAMPI");
    MPI_Win win;

    /* create, over malloc, disp_unit 8 */
    {
        MPI_Aint bytes = 96 + 8 * rank;
        void *buf = malloc(bytes);
        MT_MPI(MPI_Win_create(buf, bytes, 8, MPI_INFO_NULL, MPI_COMM_WORLD, &win));
        check_predefined(win, "create", buf, bytes, 8, MPI_WIN_FLAVOR_CREATE);
        check_keyval_and_name(&win, "create");
        free(buf);
    }
    /* allocate, disp_unit 4 */
    {
        MPI_Aint bytes = 64 + 4 * rank;
        void *base;
        MT_MPI(MPI_Win_allocate(bytes, 4, MPI_INFO_NULL, MPI_COMM_WORLD, &base, &win));
        check_predefined(win, "allocate", base, bytes, 4, MPI_WIN_FLAVOR_ALLOCATE);
        check_keyval_and_name(&win, "allocate");
    }
    /* rmampi: a window named at creation (info key rma_win_name) has that MPI name too */
    if (shim) {
        MPI_Info info;
        void *base;
        char name[MPI_MAX_OBJECT_NAME];
        int len = -1;
        MT_MPI(MPI_Info_create(&info));
        MT_MPI(MPI_Info_set(info, "rma_win_name", "halo"));
        MT_MPI(MPI_Win_allocate(64, 1, info, MPI_COMM_WORLD, &base, &win));
        MT_MPI(MPI_Info_free(&info));
        MT_MPI(MPI_Win_get_name(win, name, &len));
        if (strcmp(name, "halo") != 0)
            MT_FAIL("rma_win_name: MPI_Win_get_name: expected \"halo\", got \"%s\"", name);
        MT_EXPECT_INT("rma_win_name: MPI_Win_get_name length", 4, len);
        MT_MPI(MPI_Win_free(&win));
    }
    /* allocate_shared over the shared-memory communicator, disp_unit 2 */
    {
        MPI_Comm shm;
        int srank;
        MT_MPI(MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED, 0, MPI_INFO_NULL, &shm));
        MT_MPI(MPI_Comm_rank(shm, &srank));
        MPI_Aint bytes = 32 + 2 * srank;
        void *base;
        MT_MPI(MPI_Win_allocate_shared(bytes, 2, MPI_INFO_NULL, shm, &base, &win));
        /* get_group is compared with MPI_COMM_WORLD's when shm covers it */
        int ssize;
        MT_MPI(MPI_Comm_size(shm, &ssize));
        if (ssize == size) {
            check_predefined(win, "allocate_shared", base, bytes, 2, MPI_WIN_FLAVOR_SHARED);
        } else {
            /* no group check: shm is smaller than the world */
            void *vbase;
            MPI_Aint *vsize;
            int *vflavor, flag;
            MT_MPI(MPI_Win_get_attr(win, MPI_WIN_BASE, &vbase, &flag));
            if (!flag || vbase != base)
                MT_FAIL("allocate_shared: MPI_WIN_BASE: expected %p, got %p (flag %d)", base, vbase, flag);
            MT_MPI(MPI_Win_get_attr(win, MPI_WIN_SIZE, &vsize, &flag));
            MT_EXPECT_INT("allocate_shared: MPI_WIN_SIZE", bytes, *vsize);
            MT_MPI(MPI_Win_get_attr(win, MPI_WIN_CREATE_FLAVOR, &vflavor, &flag));
            MT_EXPECT_INT("allocate_shared: MPI_WIN_CREATE_FLAVOR", MPI_WIN_FLAVOR_SHARED, *vflavor);
        }
        check_keyval_and_name(&win, "allocate_shared");
        MT_MPI(MPI_Comm_free(&shm));
    }
    /* dynamic: base MPI_BOTTOM, size 0, disp_unit 1, with memory attached */
    {
        char *buf = malloc(64);
        MT_MPI(MPI_Win_create_dynamic(MPI_INFO_NULL, MPI_COMM_WORLD, &win));
        MT_MPI(MPI_Win_attach(win, buf, 64));
        check_predefined(win, "dynamic", MPI_BOTTOM, 0, 1, MPI_WIN_FLAVOR_DYNAMIC);
        MT_MPI(MPI_Win_detach(win, buf));
        check_keyval_and_name(&win, "dynamic");
        free(buf);
    }
    mt_pass("mpi_attr_test");
    MPI_Finalize();
    return 0;
}
