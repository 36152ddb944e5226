/* SPDX-License-Identifier: MIT */
/*
 * rmabench's backend interface: the handful of one-sided calls every test
 * is written against, once. Two implementations exist and each executable
 * links exactly one of them, so a call is one direct (non-virtual) call into
 * the library under test:
 *
 *   rmabench_rma.cpp   librma's public C API (the `rmabench` executable)
 *   rmabench_mpi.cpp   the MPI library's own RMA (`rmabench-mpich`,
 *                      `rmabench-openmpi`, built when that MPI is found)
 *
 * Every call aborts the job with a message naming the call when the library
 * reports an error: a benchmark has nothing better to do with one. Handles
 * are the library's own, carried as integers. None of these is thread-safe;
 * rmabench is single-threaded.
 */
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

namespace rmabench {

using Handle = std::uintptr_t;
/* A target displacement in bytes (MPI_Aint / rma_aint). */
using Disp = std::int64_t;

enum class Flavor { Allocate, AllocateShared, Create, Dynamic };
enum class Elem { Byte, Int32, Int64, Uint64, Float, Double };
enum class AccOp { Sum, Prod, Max, Min, Band, Bor, Bxor, Replace, NoOp };

size_t elemSize(Elem e);

struct WinSpec {
	Flavor flavor = Flavor::Allocate;
	size_t bytes = 0;
	std::string hugePages; /* "" leaves the library's default */
	std::string placement; /* "" leaves the library's default */
};

struct Window {
	Handle win = 0;
	std::byte *base = nullptr; /* this rank's memory */
	size_t bytes = 0;
	std::vector<Disp> disp0; /* per rank: the target_disp of its byte 0 */
	void *owned = nullptr;	 /* memory this rank allocated for create/dynamic */
	bool dynamic = false;
};

/* What the library says it used for a window ("" when it does not say). */
struct WinReport {
	std::string pageSize;
	std::string numaNode;
	std::string placement;
	std::string hugePages;
	std::string memory;
	std::string progress;
};

namespace be {

/* "librma", "mpich" or "openmpi". */
const char *kind();
/* The library's version line. */
std::string library();
/* Progress mode actually in force, as far as the library tells. */
std::string progress();

/* @progress: "" or none|thread|agent, applied before the library starts. */
void init(int *argc, char ***argv, const std::string &progress);
void finalize();
[[noreturn]] void abort(int code);
int rank();
int size();
void barrier();
double wtime();
/* Every rank's @bytes at @mine, in rank order, into @all. */
void allgather(const void *mine, size_t bytes, void *all);

Handle basicType(Elem e);
Handle vectorType(int count, int blocklen, int stride, Handle old);
Handle indexedType(int count, const int *blocklens, const int *displs, Handle old);
void freeType(Handle &type);
Handle op(AccOp op);
Handle group(const std::vector<int> &ranks);
void freeGroup(Handle &group);

/* Collective: a window of @spec.bytes on every rank. */
Window allocate(const WinSpec &spec);
WinReport report(const Window &w);
void free(Window &w);
/* Base of @rank's memory in an allocate_shared window (direct loads/stores). */
void *sharedBase(const Window &w, int rank);

void put(const void *origin, int count, Handle type, int target, Disp disp, int tcount, Handle ttype, Handle win);
void get(void *origin, int count, Handle type, int target, Disp disp, int tcount, Handle ttype, Handle win);
void accumulate(const void *origin, int count, Handle type, int target, Disp disp, int tcount, Handle ttype,
		Handle op, Handle win);
void getAccumulate(const void *origin, int count, Handle type, void *result, int rcount, Handle rtype, int target,
		   Disp disp, int tcount, Handle ttype, Handle op, Handle win);
void fetchAndOp(const void *origin, void *result, Handle type, int target, Disp disp, Handle op, Handle win);
void compareAndSwap(const void *origin, const void *compare, void *result, Handle type, int target, Disp disp,
		    Handle win);

void fence(int assertNoSucceed, Handle win);
void post(Handle group, Handle win);
void start(Handle group, Handle win);
void complete(Handle win);
void wait(Handle win);
void lock(bool exclusive, int target, Handle win);
void unlock(int target, Handle win);
void lockAll(Handle win);
void unlockAll(Handle win);
void flush(int target, Handle win);
void flushLocal(int target, Handle win);

/*
 * A latency test's timed loop in one call (rmabench_tight.h): @n times the
 * operation (None: only the synchronization, as a fence's bystanders and
 * targets do) and then its synchronization, with no rmabench code between
 * the library's calls, as OSU's loops are written.
 */
enum class TightOp { None, Put, Get, Acc, GetAcc, Fop, Cas };
enum class TightSync { Flush, FlushLocal, Lock, LockExclusive, LockAll, Fence };
struct TightCase {
	TightOp op = TightOp::None;
	TightSync sync = TightSync::Flush;
	const void *origin = nullptr;
	void *result = nullptr;		/* get's destination; the fetching operations' results */
	const void *compare = nullptr;	/* compare_and_swap */
	int count = 0;			/* of @type, on both sides */
	Handle type = 0;
	int target = 0;
	Disp disp = 0;
	Handle accOp = 0;
	Handle win = 0;
};
void tightLoop(const TightCase &c, long n);

} /* namespace be */

} /* namespace rmabench */
