/* SPDX-License-Identifier: MIT */
/*
 * Shared pieces of the shim: per-thread statistics, the control lock, the
 * datatype and op caches (docs/design/mpi-dropin.md §4.2, §4.3, §6.1, §6.2).
 */
#include "shim.h"

#include <algorithm>

namespace rmampi {

/* ---- statistics --------------------------------------------------------- */

thread_local constinit ThreadStats tStats [[gnu::tls_model("initial-exec")]];

namespace {

std::mutex statsMutex;
std::vector<ThreadStats *> liveStats;
uint64_t retiredOps = 0;

/* Folds a dying thread's count into retiredOps (its ThreadStats goes with it). */
struct StatsReaper {
	~StatsReaper()
	{
		std::lock_guard<std::mutex> g(statsMutex);
		retiredOps += tStats.ops;
		liveStats.erase(std::remove(liveStats.begin(), liveStats.end(), &tStats), liveStats.end());
	}
};
thread_local StatsReaper tReaper;

} /* namespace */

void registerThreadStats()
{
	std::lock_guard<std::mutex> g(statsMutex);
	(void)&tReaper; /* odr-use: registers the thread-exit destructor */
	liveStats.push_back(&tStats);
	tStats.registered = true;
}

uint64_t gFastPathOps = 0;

uint64_t totalOps()
{
	std::lock_guard<std::mutex> g(statsMutex);
	uint64_t n = retiredOps + gFastPathOps;
	for (ThreadStats *t : liveStats)
		n += t->ops;
	return n;
}

/* ---- hot-path lookups (shim.h) --------------------------------------------- */

ShimWin *gLastWin = nullptr;
FastMap<MPI_Datatype, rma_datatype, 10> gFastTypes;
FastMap<MPI_Op, rma_op, 8> gFastOps;

ShimWin *findWinSlow(MPI_Win win) noexcept
{
	ShimWin *w = winTable.find(handleKey(win));
	if (w && !shim().multiple)
		gLastWin = w;
	return w;
}

int raiseRmaLast(int rmaCode, const char *call)
{
	return raiseRma(*gLastWin, rmaCode, call);
}

/* ---- control lock -------------------------------------------------------- */

namespace {
/* This thread holds the control mutex (through an outer ControlLock), and has it released in a callback. */
thread_local bool tControlHeld = false;
thread_local bool tControlSuspended = false;
} /* namespace */

ControlLock::ControlLock() : taken_(shim().multiple && !tControlHeld)
{
	if (taken_) {
		shim().control.lock();
		tControlHeld = true;
	}
}

ControlLock::~ControlLock()
{
	if (taken_) {
		tControlHeld = false;
		shim().control.unlock();
	}
}

/* Keyed on what this thread holds, not on the thread level: initShim() sets that under a lock. */
void ControlLock::suspend()
{
	if (tControlHeld && !tControlSuspended) {
		tControlSuspended = true;
		shim().control.unlock();
	}
}

void ControlLock::resume()
{
	if (tControlSuspended) {
		shim().control.lock();
		tControlSuspended = false;
	}
}

/* ---- assertions ----------------------------------------------------------- */

bool translateAssert(int mpiAssert, int &rmaAssert) noexcept
{
	static constexpr struct {
		int mpi, rma;
	} bits[] = {
		{ MPI_MODE_NOCHECK, RMA_MODE_NOCHECK },	    { MPI_MODE_NOSTORE, RMA_MODE_NOSTORE },
		{ MPI_MODE_NOPUT, RMA_MODE_NOPUT },	    { MPI_MODE_NOPRECEDE, RMA_MODE_NOPRECEDE },
		{ MPI_MODE_NOSUCCEED, RMA_MODE_NOSUCCEED },
	};
	int out = 0;
	for (const auto &b : bits)
		if (mpiAssert & b.mpi) {
			out |= b.rma;
			mpiAssert &= ~b.mpi;
		}
	rmaAssert = out;
	return mpiAssert == 0;
}

/* ---- datatype cache ------------------------------------------------------- */

namespace {

/* The attribute's delete callback (MPI_Type_free): forget the entry, free librma's type. */
int typeDeleted(MPI_Datatype type, int, void *value, void *)
{
	ControlLock lock;
	auto *e = static_cast<TypeEntry *>(value);
	typeTable.erase(handleKey(type));
	if (e && !e->predefined && shim().rmaUp)
		rma_type_free(&e->type);
	delete e;
	return MPI_SUCCESS;
}

} /* namespace */

void fillTables()
{
	const auto &predefined = predefinedTypes();
	for (const auto &[mpiType, rmaType] : predefined) {
		if (typeTable.find(handleKey(mpiType)))
			continue;
		auto *e = new TypeEntry;
		e->type = rmaType;
		e->predefined = true;
		typeTable.insert(handleKey(mpiType), e);
	}
	gFastTypes.fill(predefined);
	static const MPI_Op ops[] = { MPI_MAX, MPI_MIN,	 MPI_SUM,  MPI_PROD,   MPI_LAND,   MPI_BAND,	MPI_LOR,
				      MPI_BOR, MPI_LXOR, MPI_BXOR, MPI_MAXLOC, MPI_MINLOC, MPI_REPLACE, MPI_NO_OP };
	std::vector<std::pair<MPI_Op, rma_op>> translated;
	for (MPI_Op op : ops) {
		rma_op r = RMA_OP_NULL;
		if (translateOp(op, r) == MPI_SUCCESS) {
			opTable.insert(handleKey(op), r);
			translated.emplace_back(op, r);
		}
	}
	gFastOps.fill(translated);
	PMPI_Type_create_keyval(MPI_TYPE_NULL_COPY_FN, typeDeleted, &shim().typeKeyval, nullptr);
}

const TypeEntry *decodeType(MPI_Datatype type, int &rc, std::string &why)
{
	ControlLock lock;
	if (const TypeEntry *e = typeTable.find(handleKey(type)))
		return e; /* another thread decoded it meanwhile */
	if (type == MPI_DATATYPE_NULL || !shim().rmaUp) {
		rc = MPI_ERR_TYPE;
		why = "MPI_DATATYPE_NULL";
		return nullptr;
	}
	auto *e = new TypeEntry;
	rc = translateType(type, *e, why);
	if (rc != MPI_SUCCESS) {
		delete e;
		return nullptr;
	}
	/* Named types (an MPI predefined type without a librma twin) live until finalize. */
	int ni = 0, na = 0, nt = 0, combiner = MPI_COMBINER_NAMED;
	PMPI_Type_get_envelope(type, &ni, &na, &nt, &combiner);
	if (combiner != MPI_COMBINER_NAMED)
		PMPI_Type_set_attr(type, shim().typeKeyval, e);
	typeTable.insert(handleKey(type), e);
	return e;
}

} /* namespace rmampi */
