/* SPDX-License-Identifier: MIT */
#include "bootstrap/external_bootstrap.h"

#include <unistd.h>

#include <cstdio>

#include "bootstrap/channel_bootstrap.h"
#include "error/error.h"

namespace librma {

namespace {

/* Ranks of one job: the limit PMIx jobs have too (instance ids keep 24 bits of rank). */
constexpr int kMaxRanks = 1 << 24;

class ExternalBootstrap final : public ChannelBootstrap
{
public:
	ExternalBootstrap(const rma_bootstrap_ops &ops, bool concurrent) : ops_(ops), concurrent_(concurrent) {}
	ExternalBootstrap(const ExternalBootstrap &) = delete;
	ExternalBootstrap &operator=(const ExternalBootstrap &) = delete;
	~ExternalBootstrap() override { closeChannel(); }

	const char *kind() const override { return "external"; }

	[[noreturn]] void abort(int code) override
	{
		std::fflush(nullptr);
		/* The runtime ends every rank of the job; if it returns anyway, this rank at least ends. */
		ops_.abort(ops_.arg, code);
		_exit(code);
	}

	int start()
	{
		for (int r = 0; r < ops_.size; ++r)
			if (ops_.host_of[r] == ops_.host_of[ops_.rank])
				localPeers_.push_back(r);
		/* host_of is not kept: the start-up exchange makes hosts_ from hostKey(). */
		ops_.host_of = nullptr;
		return startChannel(ops_.job_id, ops_.rank, ops_.size);
	}

protected:
	/*
	 * No board when the caller runs collectives of several threads at once
	 * (the MPI drop-in under MPI_THREAD_MULTIPLE, mpi_thread_test): the
	 * board has one slot per process.
	 */
	bool boardAllowed() const override { return !concurrent_; }
	int dataRound(uint64_t ctx, uint64_t seq, std::span<const int> members, int myIndex,
		      std::span<const std::byte> mine, std::span<std::byte> gathered) override
	{
		int rc = ops_.allgather(ops_.arg, members.data(), static_cast<int>(members.size()), myIndex,
					mine.data(), mine.size(), gathered.data());
		if (rc != 0)
			return makeError(RMA_ERR_INTERN,
					 "allgather ctx=%llu seq=%llu over %zu ranks: the external runtime's "
					 "allgather failed (it returned %d)",
					 (unsigned long long)ctx, (unsigned long long)seq, members.size(), rc);
		return RMA_SUCCESS;
	}

private:
	rma_bootstrap_ops ops_;
	bool concurrent_;
};

} /* namespace */

Result<std::unique_ptr<Bootstrap>> startExternalBootstrap(const rma_bootstrap_ops &ops, bool concurrent)
{
	using Ptr = std::unique_ptr<Bootstrap>;
	if (ops.version != RMA_BOOTSTRAP_OPS_VERSION)
		return Result<Ptr>::failure(makeError(RMA_ERR_ARG,
						      "rma_init_external: ops version %u, this librma knows %u",
						      ops.version, static_cast<unsigned>(RMA_BOOTSTRAP_OPS_VERSION)));
	if (!ops.allgather || !ops.abort || !ops.host_of)
		return Result<Ptr>::failure(makeError(RMA_ERR_ARG, "rma_init_external: %s is NULL",
						      !ops.allgather ? "ops->allgather"
						      : !ops.abort   ? "ops->abort"
								     : "ops->host_of"));
	if (ops.size < 1 || ops.size > kMaxRanks || ops.rank < 0 || ops.rank >= ops.size)
		return Result<Ptr>::failure(
			makeError(RMA_ERR_ARG, "rma_init_external: rank %d of a world of %d", ops.rank, ops.size));
	auto boot = std::make_unique<ExternalBootstrap>(ops, concurrent);
	if (int rc = boot->start(); rc != RMA_SUCCESS)
		return Result<Ptr>::failure(rc);
	return Ptr(std::move(boot));
}

} /* namespace librma */
