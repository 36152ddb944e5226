/* SPDX-License-Identifier: MIT */
/*
 * The bootstrap: how the processes of a job find each other.
 *
 * This header is the component's only door. The interface is deliberately
 * small so that other launchers (PMIx under Slurm or mpirun) can implement
 * it later: rank, size, host and pid of each rank, and one collective,
 * allgather-with-file-descriptors, from which barrier, allgather and fd
 * passing are all made. It is used on the setup path only (window and
 * communicator creation), never on the data path.
 *
 * Implementations (chosen by fromEnvironment()):
 *  - under rmarun (RMA_BOOT_FD in the environment): a SOCK_SEQPACKET socket
 *    to the launcher, which matches the collective's members and answers;
 *  - under a PMIx launcher (PMIX_NAMESPACE and PMIX_RANK: Open MPI's
 *    mpirun, prterun, srun --mpi=pmix; built with -Dpmix): data through
 *    PMIx Put/Commit/Fence, descriptors between the ranks of a host through
 *    LocalFdChannel (pmix_bootstrap.cpp);
 *  - otherwise a singleton job of one rank;
 *  - and, not from the environment, rma_init_external's: data through the
 *    allgather of a runtime that already connected the job (the program's
 *    MPI, for the drop-in shim), descriptors through LocalFdChannel
 *    (external_bootstrap.cpp; it shares channel_bootstrap.cpp with PMIx).
 *
 * Under every one of them, collectives of communicators whose members all
 * share this host (consistentAllgather()) meet on the host's shared-memory
 * board instead (host_board.h): no launcher round trip, descriptors
 * reopened through /proc. A barrier of 2 ranks there costs 0.2 µs where
 * rmarun's socket costs 35-55 µs.
 */
#pragma once

#include <sys/types.h>

#include <cstddef>
#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "common/result.h"
#include "common/unique_fd.h"
#include "bootstrap/job_status.h"

namespace librma {

/* What every member gets back from Bootstrap::allgather(). */
struct GatherResult {
	/* Each member's data, concatenated in member order (n * len bytes). */
	std::vector<std::byte> data;
	/* Each member's file descriptors, concatenated in member order. */
	std::vector<UniqueFd> fds;
	/* How many descriptors each member gave (n entries). */
	std::vector<int> fdCounts;
	/*
	 * Unique id of this collective instance: the same at every member,
	 * never returned for another instance in the job. Used to derive
	 * context ids of new communicators.
	 */
	uint64_t instance = 0;
};

class Bootstrap
{
public:
	virtual ~Bootstrap() = default;

	int rank() const { return rank_; }
	int size() const { return size_; }
	/* Pid of a rank (valid for ranks on this host). */
	pid_t pid(int worldRank) const { return pids_[worldRank]; }
	/* Host index of a rank (equal indices share memory); 0 for all today. */
	int host(int worldRank) const { return hosts_[worldRank]; }

	/*
	 * Collective over @members (world ranks, in group order; this process
	 * is members[myIndex]). Every member passes the same @ctx, @seq and
	 * data length; (ctx, seq) must be unique to this collective instance.
	 * Each member contributes @data and @fds (any number, may be none).
	 * Returns RMA_SUCCESS or an error code (RMA_ERR_PROC_FAILED when a
	 * member died, RMA_ERR_INTERN on a protocol failure).
	 */
	virtual int allgather(uint64_t ctx, uint64_t seq, std::span<const int> members, int myIndex,
			      std::span<const std::byte> data, std::span<const int> fds,
			      GatherResult &out) = 0;
	/*
	 * allgather() for callers whose members are sure to pass the same
	 * data length and member list (communicators: librma's own code makes
	 * both): may meet on the host's shared-memory board when every member
	 * is on this host (host_board.h), where mismatches are not refereed
	 * by the launcher. Same results and errors otherwise.
	 */
	virtual int consistentAllgather(uint64_t ctx, uint64_t seq, std::span<const int> members, int myIndex,
					std::span<const std::byte> data, std::span<const int> fds, GatherResult &out)
	{
		return allgather(ctx, seq, members, myIndex, data, fds, out);
	}

	/*
	 * Failure detection without a system call: the count of ranks the
	 * launcher saw die (a relaxed load of it is the data path's check; it
	 * is 0 forever without a launcher), and whether @worldRank is one.
	 */
	const std::atomic<uint64_t> *deadCountWord() const { return jobStatus_.deadCountWord(); }
	bool dead(int worldRank) const { return jobStatus_.dead(worldRank); }
	/* Map the launcher's status page from @fd (taken); 0 or -errno. */
	int attachJobStatus(int fd, int nranks) { return jobStatus_.attach(fd, nranks); }
	/*
	 * Record that @worldRank died, where this process may write the
	 * status page (under PMIx every local rank may); else nothing.
	 * Thread-safe.
	 */
	void markDead(int worldRank) { jobStatus_.markDead(worldRank); }

	/* End the whole job with @code (the launcher stops every rank). */
	[[noreturn]] virtual void abort(int code) = 0;

	/* Which implementation this is: "rmarun", "pmix" or "singleton" (RMA_BOOT's words), or "external". */
	virtual const char *kind() const = 0;
	/* This host's name for messages: gethostname(), plus the launcher's name for it where that differs. */
	virtual std::string hostName() const;

	/*
	 * The bootstrap this process was started with (docs/design/inter-host.md
	 * §1.1): RMA_BOOT=rmarun|pmix|singleton forces one; else RMA_BOOT_FD
	 * means rmarun (with RMA_RANK, RMA_SIZE); else PMIX_NAMESPACE and
	 * PMIX_RANK mean PMIx; else a singleton. Fills pids and hosts of all
	 * ranks (one allgather). Errors (RMA_ERR_INTERN, the message says
	 * which): a bad RMA_BOOT or rmarun environment, a forced or detected
	 * bootstrap that cannot start (PMIx_Init failing is an error, not a
	 * quiet singleton), or "built without PMIx".
	 */
	static Result<std::unique_ptr<Bootstrap>> fromEnvironment();

protected:
	int rank_ = 0;
	int size_ = 1;
	std::vector<pid_t> pids_;
	std::vector<int> hosts_;
	JobStatus jobStatus_;
};

} /* namespace librma */
