/* SPDX-License-Identifier: MIT */
/*
 * Start and end of the shim (docs/design/mpi-dropin.md §2.2, §3.1, §3.2,
 * §1.5, §6.2): the load-time ABI guard, MPI_Init/MPI_Init_thread, librma's
 * bootstrap over MPI, and the finalize hook on MPI_COMM_SELF.
 */
#include "shim.h"

#include <dlfcn.h>
#include <link.h>
#include <sys/random.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>

namespace rmampi {

Shim gShim;

HandleTable<ShimWin> winTable;
HandleTable<const TypeEntry> typeTable;
HandleTable<rma_op_handle_> opTable;

namespace {

/* ---- load-time ABI guard (§2.2) ---------------------------------------- */

#if defined(OPEN_MPI) && OPEN_MPI
constexpr const char *kSelf = "librmampi-openmpi.so";
constexpr const char *kMine = "libmpi.so.40";
constexpr const char *kOtherPrefix = "libmpich.so";
constexpr const char *kOtherName = "MPICH";
#else
constexpr const char *kSelf = "librmampi-mpich.so";
constexpr const char *kMine = "libmpich.so.12";
constexpr const char *kOtherPrefix = "libmpi.so.";
constexpr const char *kOtherName = "Open MPI";
#endif

int findOther(struct dl_phdr_info *info, size_t, void *data)
{
	const char *path = info->dlpi_name ? info->dlpi_name : "";
	const char *base = std::strrchr(path, '/');
	base = base ? base + 1 : path;
	if (std::strncmp(base, kOtherPrefix, std::strlen(kOtherPrefix)) == 0) {
		*static_cast<const char **>(data) = base;
		return 1;
	}
	return 0;
}

/* Refuse to run next to the other MPI: its handles would reach this ABI's PMPI_ calls. */
[[gnu::constructor]] void abiGuard()
{
	const char *other = nullptr;
	dl_iterate_phdr(findOther, &other);
	if (!other)
		return;
	std::fprintf(stderr,
		     "librma-mpi: %s serves programs built with %s, but this process (pid %d) also loads %s "
		     "(%s): rebuild the program with the other MPI's mpicc, or preload the matching librmampi "
		     "library (rmampi picks it for you). Stopping before MPI_Init.\n",
		     kSelf, kMine, static_cast<int>(getpid()), other, kOtherName);
	_exit(127);
}

/* ---- version guard (§1.5) ---------------------------------------------- */

/* "X.Y" of the first version number after @marker in @s; false if absent. */
bool parseVersion(const char *s, const char *marker, int &major, int &minor)
{
	const char *p = std::strstr(s, marker);
	if (!p)
		return false;
	p += std::strlen(marker);
	while (*p && (*p < '0' || *p > '9'))
		p++;
	return std::sscanf(p, "%d.%d", &major, &minor) == 2;
}

/* True if the MPI loaded now has the major.minor version this shim was compiled against. */
bool versionMatches()
{
	char text[MPI_MAX_LIBRARY_VERSION_STRING + 1] = {};
	int len = 0;
	if (PMPI_Get_library_version(text, &len) != MPI_SUCCESS)
		return false;
	int major = -1, minor = -1;
#if defined(OPEN_MPI) && OPEN_MPI
	bool ok = parseVersion(text, "Open MPI v", major, minor);
	int wantMajor = OMPI_MAJOR_VERSION, wantMinor = OMPI_MINOR_VERSION;
#else
	bool ok = parseVersion(text, "MPICH Version:", major, minor);
	int wantMajor = MPICH_NUMVERSION / 10000000, wantMinor = MPICH_NUMVERSION / 100000 % 100;
#endif
	if (ok && major == wantMajor && minor == wantMinor)
		return true;
	if (shim().worldRank == 0)
		std::fprintf(stderr,
			     "librma-mpi: %s was built for MPI library version %d.%d but runs with \"%.60s\": "
			     "every window goes through the MPI\n",
			     kSelf, wantMajor, wantMinor, text);
	return false;
}

/* ---- librma's bootstrap callbacks (§3.2) ------------------------------- */

int allgatherCb(void *, const int *members, int count, int myIndex, const void *send, size_t len, void *recv)
{
	return bootstrapAllgather(members, count, myIndex, send, len, recv);
}

[[noreturn]] void abortCb(void *, int code)
{
	PMPI_Abort(MPI_COMM_WORLD, code);
	_exit(code ? code : 1);
}

/* ---- finalize hook (§6.2) ---------------------------------------------- */

void printStats()
{
	const char *env = std::getenv("RMA_MPI_STATS");
	if (!env || std::strcmp(env, "1") != 0)
		return;
	Shim &s = shim();
	unsigned long long mine[3] = { s.winLibrma.load(), s.winMpi.load(), totalOps() };
	unsigned long long sum[3] = {};
	PMPI_Reduce(mine, sum, 3, MPI_UNSIGNED_LONG_LONG, MPI_SUM, 0, s.world);
	if (s.worldRank == 0)
		std::fprintf(stderr, "librma-mpi: windows %llu (librma %llu, mpi %llu), operations %llu\n",
			     sum[0] + sum[1], sum[0], sum[1], sum[2]);
}

int finalizeHook(MPI_Comm, int, void *, void *)
{
	Shim &s = shim();
	if (s.finalized)
		return MPI_SUCCESS;
	ControlLock lock;
	printStats();
	/* Windows the program did not free: librma frees them in rma_finalize. */
	gLastWin = nullptr;
	for (ShimWin *w : winTable.values())
		winTable.erase(handleKey(w->shadow));
	releaseComms();
	if (s.rmaUp)
		rma_finalize();
	s.rmaUp = false;
	releaseBootstrapComms();
	s.finalized = true;
	/* Attributes still set keep their keyval alive until MPI deletes them (their callbacks only free memory now).
	 */
	if (s.typeKeyval != MPI_KEYVAL_INVALID)
		PMPI_Type_free_keyval(&s.typeKeyval);
	if (s.commKeyval != MPI_KEYVAL_INVALID)
		PMPI_Comm_free_keyval(&s.commKeyval);
	if (s.hookKeyval != MPI_KEYVAL_INVALID)
		PMPI_Comm_free_keyval(&s.hookKeyval);
	if (s.node != MPI_COMM_NULL)
		PMPI_Comm_free(&s.node);
	if (s.world != MPI_COMM_NULL)
		PMPI_Comm_free(&s.world);
	return MPI_SUCCESS;
}

bool engineForcedToMpi()
{
	const char *e = std::getenv("RMA_MPI_ENGINE");
	return e && std::strcmp(e, "mpi") == 0;
}

bool engineForcedToLibrma()
{
	const char *e = std::getenv("RMA_MPI_ENGINE");
	return e && std::strcmp(e, "librma") == 0;
}

/* Every step is collective over MPI_COMM_WORLD, which the program's init already is. */
void initShim(int provided)
{
	Shim &s = shim();
	if (s.initialized)
		return;
	s.multiple = provided == MPI_THREAD_MULTIPLE; /* before the lock: it decides whether to take it */
	ControlLock lock;
	if (PMPI_Comm_dup(MPI_COMM_WORLD, &s.world) != MPI_SUCCESS)
		return;
	PMPI_Comm_set_errhandler(s.world, MPI_ERRORS_RETURN);
	PMPI_Comm_rank(s.world, &s.worldRank);
	PMPI_Comm_size(s.world, &s.worldSize);
	s.initialized = true;

	/* The finalize hook, even in forwarding mode: RMA_MPI_STATS counts pass-through windows too. */
	PMPI_Comm_create_keyval(MPI_COMM_NULL_COPY_FN, finalizeHook, &s.hookKeyval, nullptr);
	PMPI_Comm_set_attr(MPI_COMM_SELF, s.hookKeyval, nullptr);

	s.forceMpi = engineForcedToMpi();
	s.forceLibrma = engineForcedToLibrma();
	s.versionMismatch = !versionMatches();
	if (s.forceMpi || s.versionMismatch)
		return;

	fillTables();
	createCommKeyval();
	std::vector<int> world(s.worldSize);
	for (int r = 0; r < s.worldSize; r++)
		world[r] = r;
	seedMembers(world, s.world);

	/* The shim's own host map, not MPI_COMM_TYPE_SHARED's (MPICH's NOLOCAL hides the host there). */
	mapHosts();

	uint64_t jobId = 0;
	if (s.worldRank == 0)
		while (getrandom(&jobId, sizeof jobId, 0) != sizeof jobId || jobId == 0)
			;
	PMPI_Bcast(&jobId, 1, MPI_UINT64_T, 0, s.world);

	rma_bootstrap_ops ops = {};
	ops.version = RMA_BOOTSTRAP_OPS_VERSION;
	ops.rank = s.worldRank;
	ops.size = s.worldSize;
	ops.host_of = s.hostOf.data();
	ops.job_id = jobId;
	ops.arg = nullptr;
	ops.allgather = allgatherCb;
	ops.abort = abortCb;
	int rmaProvided = 0;
	/*
	 * librma provides at most SERIALIZED: the shim serializes calls per
	 * window under MULTIPLE (§6.1). MULTIPLE still tells librma that
	 * window creations of several threads may run at once (no host board).
	 */
	int required = provided == MPI_THREAD_SINGLE	 ? RMA_THREAD_SINGLE
		       : provided == MPI_THREAD_FUNNELED ? RMA_THREAD_FUNNELED
		       : provided == MPI_THREAD_MULTIPLE ? RMA_THREAD_MULTIPLE
							 : RMA_THREAD_SERIALIZED;
	int rc = rma_init_external(&ops, required, &rmaProvided);
	/* Every rank must agree, or the windows' votes would split the job. */
	int ok = rc == RMA_SUCCESS, all = 0;
	PMPI_Allreduce(&ok, &all, 1, MPI_INT, MPI_MIN, s.world);
	if (!all) {
		if (rc != RMA_SUCCESS) {
			char text[RMA_MAX_ERROR_STRING];
			int len = 0;
			rma_error_string(rc, text, &len);
			std::fprintf(stderr,
				     "librma-mpi: rank %d: librma did not start (%s): every window goes "
				     "through the MPI\n",
				     s.worldRank, text);
		}
		if (rc == RMA_SUCCESS)
			rma_finalize();
		return;
	}
	s.rmaUp = true;
	rma_comm_set_errhandler(RMA_COMM_WORLD, RMA_ERRORS_RETURN);
	rma_comm_set_errhandler(RMA_COMM_SELF, RMA_ERRORS_RETURN);
}

} /* namespace */

void initAfterMpi(int provided)
{
	initShim(provided);
}

} /* namespace rmampi */

using namespace rmampi;

RMAMPI_EXPORT int MPI_Init(int *argc, char ***argv)
{
	int rc = PMPI_Init(argc, argv);
	if (rc != MPI_SUCCESS)
		return rc;
	int provided = MPI_THREAD_SINGLE;
	PMPI_Query_thread(&provided);
	initShim(provided);
	return rc;
}

RMAMPI_EXPORT int MPI_Init_thread(int *argc, char ***argv, int required, int *provided)
{
	int rc = PMPI_Init_thread(argc, argv, required, provided);
	if (rc != MPI_SUCCESS)
		return rc;
	initShim(*provided);
	return rc;
}
