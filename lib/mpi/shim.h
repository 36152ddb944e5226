/* SPDX-License-Identifier: MIT */
/*
 * The MPI drop-in's state (docs/design/mpi-dropin.md). Compiled once per MPI
 * ABI into librmampi-<abi>.so; MPI handles are whatever that mpi.h says and
 * are only compared with == or hashed (handle_table.h).
 *
 * The shim uses librma through include/rma/rma.h only.
 *
 * Threads (§6.1): below MPI_THREAD_MULTIPLE the program serializes its MPI
 * calls, so the shim takes no lock anywhere. Under MULTIPLE, the shim's
 * tables (windows, types, communicators), init, finalize and decoding on a
 * cache miss run under the control mutex, and every librma call on a window
 * runs under that window's spinlock (WinGuard). Window creation and free
 * take neither while they wait for the peers: librma serializes per window
 * and per communicator, and MPI already forbids two threads in collectives
 * on one communicator.
 */
#pragma once

#include <mpi.h>

#include <rma/rma.h>

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <mutex>
#include <string>
#include <type_traits>
#include <vector>

#include "handle_table.h"
#include "types.h"

#define RMAMPI_EXPORT extern "C" __attribute__((visibility("default")))

/*
 * The shim's own declarations are hidden like its definitions
 * (-fvisibility=hidden covers only those): its globals are then reached
 * PC-relative, with no GOT load on the hot path.
 */
#pragma GCC visibility push(hidden)

namespace rmampi {

/* Per MPI communicator a librma window was asked for (§3.5). */
struct CommEntry {
	MPI_Comm dup = MPI_COMM_NULL;	  /* the shim's private duplicate of C */
	MPI_Group group = MPI_GROUP_NULL; /* C's group (PSCW translation) */
	std::vector<int> worldRanks;	  /* C's rank r is world rank worldRanks[r] */
	int rank = 0;			  /* this process in C */
	bool inWorld = false;		  /* every member is in this MPI_COMM_WORLD */
	bool onHost = false;		  /* every member shares memory with this process */
	rma_comm rmaComm = RMA_COMM_NULL; /* rank r of C is rank r here; made at the first librma window */
	bool freed = false;		  /* released at finalize; the attribute callback only deletes */
	/*
	 * Below MPI_THREAD_MULTIPLE the librma windows made on C share @dup for
	 * their free (one PMPI_Comm_dup, a collective, less per window). @dup
	 * outlives C while any of them does: the last window frees it, and the
	 * entry too if C is gone (@dropped).
	 */
	int windows = 0;
	bool dropped = false;
};

/* The last MPI group a PSCW call translated, and the librma group made of it (§4.4). */
struct GroupCache {
	std::vector<int> ranks;
	rma_group group = RMA_GROUP_NULL;
};

/* A window librma serves; the program's handle is @shadow. */
struct ShimWin {
	MPI_Win shadow = MPI_WIN_NULL;
	rma_win win = RMA_WIN_NULL;
	MPI_Group group = MPI_GROUP_NULL;    /* the window communicator's group (MPI_Win_get_group, PSCW) */
	MPI_Comm dup = MPI_COMM_NULL;	     /* librma's collectives on this window (free) run here */
	CommEntry *entry = nullptr;	     /* @dup is entry->dup, shared (not MULTIPLE); else its own */
	std::vector<int> worldRanks;	     /* its members, as librma names them */
	rma_group winGroup = RMA_GROUP_NULL; /* the librma window's group (PSCW) */
	GroupCache post, start;
	/* The predefined attributes: MPI_Win_get_attr returns pointers to these. */
	void *base = nullptr;
	MPI_Aint size = 0;
	int dispUnit = 1;
	int flavor = 0;
	int model = 0;
	/* Serializes librma calls on this window under MPI_THREAD_MULTIPLE. */
	std::atomic_flag busy = ATOMIC_FLAG_INIT;
};

/* Process-wide shim state. */
struct Shim {
	bool initialized = false; /* MPI_Init went through the shim */
	bool rmaUp = false;	  /* librma is initialized (rma_init_external succeeded) */
	bool finalized = false;	  /* the finalize hook ran */
	bool versionMismatch = false;
	bool forceMpi = false; /* RMA_MPI_ENGINE=mpi at init: every window passes through */
	/* RMA_MPI_ENGINE=librma: windows across hosts are librma's too (its TCP transport), unless info says mpi */
	bool forceLibrma = false;
	bool multiple = false; /* MPI_THREAD_MULTIPLE */
	int worldRank = 0;
	int worldSize = 1;
	MPI_Comm world = MPI_COMM_NULL; /* PMPI_Comm_dup(MPI_COMM_WORLD) */
	MPI_Comm node = MPI_COMM_NULL;	/* world split by host (mapHosts) */
	std::vector<int> hostOf;	/* world rank -> host id (smallest world rank on its host, mapHosts) */
	int commKeyval = MPI_KEYVAL_INVALID;
	int typeKeyval = MPI_KEYVAL_INVALID;
	int hookKeyval = MPI_KEYVAL_INVALID;
	std::mutex control;
	/* Windows created through the shim, counted by rank 0 of their communicator (§6.2). */
	std::atomic<uint64_t> winLibrma{ 0 }, winMpi{ 0 };
};

/* A plain global, not a function-local static: no guard check on the hot path (WinGuard reads it). */
extern Shim gShim;
inline Shim &shim()
{
	return gShim;
}
extern HandleTable<ShimWin> winTable;
extern HandleTable<const TypeEntry> typeTable;
extern HandleTable<rma_op_handle_> opTable;

/* ---- statistics (stats.cpp) ---- */
struct ThreadStats {
	uint64_t ops = 0;
	bool registered = false;
};
/* initial-exec: one %fs-relative access, not a __tls_get_addr call (the shim is loaded at start-up). */
/* constinit: no TLS wrapper call in other files either. */
extern thread_local constinit ThreadStats tStats [[gnu::tls_model("initial-exec")]];
void registerThreadStats();
/* Sum of every thread's operation count (finalize). */
uint64_t totalOps();

/*
 * Operations the fast paths made (below MULTIPLE only: they need fastWin()).
 * The program serializes those calls, so a plain per-process increment is
 * enough, and costs one instruction with no registration check.
 */
extern uint64_t gFastPathOps;

inline void countOp() noexcept
{
	if (!tStats.registered) [[unlikely]]
		registerThreadStats();
	tStats.ops++;
}

/* ---- locking (§6.1) ---- */
/* The control mutex, taken only under MPI_THREAD_MULTIPLE; knows whether this thread holds it. */
class ControlLock
{
public:
	ControlLock();
	~ControlLock();
	ControlLock(const ControlLock &) = delete;
	ControlLock &operator=(const ControlLock &) = delete;
	/* Release around a blocking MPI collective (the bootstrap callback). */
	static void suspend();
	static void resume();

private:
	bool taken_;
};

/* Serializes librma calls on one window under MPI_THREAD_MULTIPLE. */
class WinGuard
{
public:
	explicit WinGuard(ShimWin &w) noexcept : w_(shim().multiple ? &w : nullptr)
	{
		if (w_)
			while (w_->busy.test_and_set(std::memory_order_acquire))
				while (w_->busy.test(std::memory_order_relaxed))
					__builtin_ia32_pause();
	}
	~WinGuard()
	{
		if (w_)
			w_->busy.clear(std::memory_order_release);
	}
	WinGuard(const WinGuard &) = delete;
	WinGuard &operator=(const WinGuard &) = delete;

private:
	ShimWin *w_;
};

/* ---- lookups ---- */
/* Pre-insert the predefined types and ops; make the datatype keyval (init). */
void fillTables();

/*
 * The hot path's lookups (issue 13: the shim adds a handful of instructions
 * per call). Each answers the common case with a load or two and a compare,
 * or misses, and the caller then takes its general path (the hash tables,
 * decoding, WinGuard).
 *
 * gLastWin: the window record the program used last, kept below
 * MPI_THREAD_MULTIPLE only. Set by window creation and findWinSlow(), cleared
 * by MPI_Win_free before the record is deleted and by the finalize hook.
 * Below MULTIPLE the program serializes its MPI calls, so the plain pointer
 * needs no atomics. Under MULTIPLE it is never set (stays nullptr): a record
 * can be freed under another thread's feet, and every call must take its
 * window's WinGuard anyway, so fastWin() always misses there.
 */
extern ShimWin *gLastWin;

/* @win's record if @win is the last window used (never under MULTIPLE), else nullptr. */
inline ShimWin *fastWin(MPI_Win win) noexcept
{
	ShimWin *w = gLastWin;
	return w && w->shadow == win ? w : nullptr;
}

/*
 * raiseRma() on gLastWin: the error path of a call that went through
 * fastWin(). The window is still gLastWin when the librma call returns (no
 * other MPI call can run in between below MULTIPLE, and librma's data path
 * never calls back into MPI), so the fast path keeps nothing live across
 * that call.
 */
[[gnu::cold]] int raiseRmaLast(int rmaCode, const char *call);

/* findWin()'s miss: the hash table, and gLastWin below MULTIPLE. */
[[gnu::noinline]] ShimWin *findWinSlow(MPI_Win win) noexcept;

/* @win's record, or nullptr for the MPI's own windows and invalid handles. Thread-safe. */
inline ShimWin *findWin(MPI_Win win) noexcept
{
	if (ShimWin *w = fastWin(win)) [[likely]]
		return w;
	return findWinSlow(win);
}

/*
 * Predefined datatypes with a librma twin (about 60: none is opaque, §4.2, so
 * the fast paths need not check for MPI_ERR_TYPE) and the 14 predefined ops;
 * a collision-free multiplier takes a few tries at these sizes.
 */
extern FastMap<MPI_Datatype, rma_datatype, 10> gFastTypes;
extern FastMap<MPI_Op, rma_op, 8> gFastOps;

/* True with @out set to its librma twin if @type is a predefined type in the fast map. */
inline bool fastType(MPI_Datatype type, rma_datatype &out) noexcept
{
	return gFastTypes.find(type, out);
}

/* True with @out set if @op is a predefined op (in the fast map). */
inline bool fastOp(MPI_Op op, rma_op &out) noexcept
{
	return gFastOps.find(op, out);
}

/* Slow path of findType(): decode, cache, set the lifetime attribute. nullptr with @rc set on failure. */
const TypeEntry *decodeType(MPI_Datatype type, int &rc, std::string &why);

/* MPI rank -> librma rank (MPI_PROC_NULL differs; every other rank is the same number). */
inline int rmaRank(int rank) noexcept
{
	return rank == MPI_PROC_NULL ? RMA_PROC_NULL : rank;
}

/* MPI_MODE_* bits -> RMA_MODE_*; false if an unknown bit is set. */
bool translateAssert(int mpiAssert, int &rmaAssert) noexcept;

/* ---- hosts (host.cpp) ---- */
/*
 * Init, collective over the shim's world: allgather each process's host
 * identity (host name, boot id, network and PID namespaces: what librma's
 * processes need in common to share memory, whatever MPI_COMM_TYPE_SHARED
 * says) into hostOf, and split the world by it into node.
 */
void mapHosts();
/* Every process of @worldRanks is on this process's host (by hostOf); local, no collective. */
bool onOneHost(const std::vector<int> &worldRanks);

/* ---- communicators (comm.cpp) ---- */
/* The keyval CommEntry hangs on (init). */
int createCommKeyval();
/* The entry of intracommunicator @comm, made collectively over @comm on first use. */
CommEntry *commEntry(MPI_Comm comm, int &rc);
/* rmaComm of @e, made collectively over its members on first use. */
int ensureRmaComm(CommEntry &e);
/* The bootstrap collective: allgather over exactly @members (world ranks). */
int bootstrapAllgather(const int *members, int count, int myIndex, const void *send, size_t len, void *recv);
/*
 * While alive, librma collectives of this thread over exactly @members run on
 * @comm. The member list alone is ambiguous: two communicators with the same
 * members may be in collectives at once from two threads (MPI_THREAD_MULTIPLE),
 * and they must not meet on one MPI communicator. librma calls its allgather
 * from the thread inside the rma_ call, so a thread-local scope tells them apart.
 */
class CollectiveScope
{
public:
	CollectiveScope(MPI_Comm comm, const std::vector<int> &members);
	~CollectiveScope();
	CollectiveScope(const CollectiveScope &) = delete;
	CollectiveScope &operator=(const CollectiveScope &) = delete;

private:
	MPI_Comm prevComm_;
	const std::vector<int> *prevMembers_;
};
/* Remember that @comm's ranks are exactly @members (seeds bootstrapAllgather's hash). */
void seedMembers(const std::vector<int> &members, MPI_Comm comm);
/* A librma window made on @e's communicator no longer needs @e's duplicate (MPI_Win_free). */
void unshareEntry(CommEntry &e);
/* Finalize, before rma_finalize: free every CommEntry's rma_comm and duplicate. */
void releaseComms();
/* Finalize, after rma_finalize: free the communicators bootstrapAllgather made. */
void releaseBootstrapComms();

/* ---- errors (errors.cpp) ---- */
/* MPI error class of librma code @rmaCode (by name). */
int mpiClassOf(int rmaCode);
/* A code of librma error @rmaCode's class that carries its text. */
int mpiCodeFor(int rmaCode);
/* A code of MPI class @mpiClass that carries @text. */
int mpiCodeWithText(int mpiClass, const char *text);
/* A code of MPI class @mpiClass that carries "@call: @what". */
int mpiCodeWithText(int mpiClass, const char *call, const std::string &what);
/* Raise librma error @rmaCode on @w's program handle; returns what the program's handler leaves. */
[[gnu::cold]] int raiseRma(ShimWin &w, int rmaCode, const char *call);
/* Raise an MPI code on @w. */
[[gnu::cold]] int raiseMpi(ShimWin &w, int mpiCode, const char *call);
/* Raise on a communicator (creation calls). */
[[gnu::cold]] int raiseOnComm(MPI_Comm comm, int mpiCode, const char *call);

/* ---- start-up (init.cpp) ---- */
/* The shim's set-up after the MPI's own init at thread level @provided (once; MPI_Init and Fortran's mpi_init_). */
void initAfterMpi(int provided);

/* ---- info (win.cpp) ---- */
/* @info as an rma_info (RMA_INFO_NULL if none); librma_engine is consumed into @engine. */
int translateInfo(MPI_Info info, rma_info &out, std::string &engine);

} /* namespace rmampi */

#pragma GCC visibility pop
