/* SPDX-License-Identifier: MIT */
/*
 * The PMIx bootstrap (docs/design/inter-host.md §1): a rank started by a
 * PMIx launcher (Open MPI's mpirun, prterun, srun --mpi=pmix) learns rank,
 * size and its host's ranks from PMIx, exchanges collective data with
 * PMIx_Put/Commit/Fence, and passes descriptors between the ranks of its
 * host through LocalFdChannel. Internal to lib/bootstrap.
 *
 * Hosts are the launcher's: a rank's host is named by the smallest rank of
 * its PMIX_LOCAL_PEERS (never by host name: PMIx spells one node in several
 * ways). The host's smallest rank creates the job status page and hands it
 * to the other local ranks in the start-up exchange; every local rank maps
 * it writable, since no launcher of ours watches the pids.
 */
#pragma once

#include <memory>

#include "bootstrap/bootstrap.h"
#include "common/result.h"

namespace librma {

/* Whether the environment says a PMIx launcher started this process (PMIX_NAMESPACE and PMIX_RANK set). */
bool pmixEnvironment();

/*
 * Join the PMIx job (collective over the job: one fence). Errors
 * (RMA_ERR_INTERN, the message names the step): librma was built without
 * PMIx, PMIx_Init fails (no server answers), or the launcher's answers are
 * inconsistent (job size, local peers); the fd channel cannot listen.
 */
Result<std::unique_ptr<Bootstrap>> startPmixBootstrap();

} /* namespace librma */
