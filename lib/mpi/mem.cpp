/* SPDX-License-Identifier: MIT */
/*
 * MPI_Alloc_mem and MPI_Free_mem (docs/design/mpi-dropin.md §1.3): memory
 * the standard says is meant for RMA. While librma is up it comes from
 * rma_alloc_mem, a shared-memory segment, so that a later MPI_Win_create
 * over it is reached by the peers with loads and stores instead of through
 * cross-memory attach. Everything else is the MPI's: before init, after
 * finalize, with RMA_MPI_ENGINE=mpi or info librma_engine=mpi, and when
 * librma cannot serve the request (the MPI then decides, and reports its
 * own errors). MPI_Free_mem frees through librma exactly the addresses the
 * shim got from it.
 */
#include "shim.h"

#include <string>
#include <unordered_set>

namespace rmampi {

namespace {

/* Addresses rma_alloc_mem gave the program and it has not freed (under the control lock). */
std::unordered_set<void *> &librmaBlocks()
{
	static std::unordered_set<void *> blocks;
	return blocks;
}

} /* namespace */

} /* namespace rmampi */

using namespace rmampi;

RMAMPI_EXPORT int MPI_Alloc_mem(MPI_Aint size, MPI_Info info, void *baseptr)
{
	Shim &s = shim();
	if (!s.rmaUp || s.finalized || s.forceMpi || size <= 0 || !baseptr)
		return PMPI_Alloc_mem(size, info, baseptr);
	std::string engine;
	rma_info ri = RMA_INFO_NULL;
	int rc = translateInfo(info, ri, engine);
	void *base = nullptr;
	int rrc = RMA_ERR_OTHER;
	if (rc == MPI_SUCCESS && engine != "mpi") {
		ControlLock lock;
		rrc = rma_alloc_mem(size, ri, &base);
		if (rrc == RMA_SUCCESS)
			librmaBlocks().insert(base);
	}
	if (ri != RMA_INFO_NULL)
		rma_info_free(&ri);
	if (rrc != RMA_SUCCESS)
		return PMPI_Alloc_mem(size, info, baseptr);
	*static_cast<void **>(baseptr) = base;
	return MPI_SUCCESS;
}

RMAMPI_EXPORT int MPI_Free_mem(void *base)
{
	Shim &s = shim();
	if (base && s.rmaUp) {
		ControlLock lock;
		if (librmaBlocks().erase(base)) {
			/* After finalize librma has released the segment already. */
			if (!s.finalized)
				rma_free_mem(base);
			return MPI_SUCCESS;
		}
	}
	return PMPI_Free_mem(base);
}
