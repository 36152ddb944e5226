/* SPDX-License-Identifier: MIT */
/*
 * The external bootstrap (rma_init_external, docs/design/mpi-dropin.md
 * §3.2–3.3): a process whose job another runtime started (the program's MPI,
 * for the drop-in shim) hands librma that runtime's rank, size, hosts and an
 * allgather. Data travels through the runtime's allgather, descriptors
 * between the ranks of a host through LocalFdChannel. Internal to
 * lib/bootstrap.
 */
#pragma once

#include <memory>

#include <rma/rma.h>

#include "bootstrap/bootstrap.h"
#include "common/result.h"

namespace librma {

/*
 * Join the external job described by @ops (copied, with host_of; collective
 * over the external world). Errors: RMA_ERR_ARG for an unknown ops version,
 * a NULL callback or host_of, rank or size out of range; RMA_ERR_INTERN when
 * the runtime's allgather fails or the host channel cannot listen.
 * @concurrent: the caller may run collectives of several threads at once
 * (the MPI drop-in under MPI_THREAD_MULTIPLE): then no host board.
 */
Result<std::unique_ptr<Bootstrap>> startExternalBootstrap(const rma_bootstrap_ops &ops, bool concurrent = false);

} /* namespace librma */
