/* SPDX-License-Identifier: MIT */
#include "bootstrap/channel_bootstrap.h"

#include <algorithm>
#include <cstring>

#include "bootstrap/protocol.h"
#include "error/error.h"

namespace librma {

namespace {

/* What each member gives for one collective, before its data. */
struct Contribution {
	uint32_t fdCount;
	uint32_t reserved;
	/* The member's own exchange counter: the hub's makes the instance id. */
	uint64_t counter;
};

/* Bits of the instance id below the hub's world rank. */
constexpr int kInstanceRankShift = 40;

} /* namespace */

ChannelBootstrap::~ChannelBootstrap() = default;

int ChannelBootstrap::startChannel(uint64_t jobId, int rank, int size)
{
	/* A local rank the channel finds dead is recorded for every rank of the host (the page is shared). */
	LocalFdChannel::Options options;
	options.peerDied = [this](int worldRank) { jobStatus_.markDead(worldRank); };
	auto channel = LocalFdChannel::listen(jobId, rank, std::move(options));
	if (!channel)
		return channel.code();
	channel_.emplace(std::move(channel.value()));
	RMA_TRY(init(rank, size));
	RMA_TRY(shareJobStatus());
	return setUpHostBoard();
}

int ChannelBootstrap::shareJobStatus()
{
	const int leader = localPeers_.front();
	if (rank_ == leader) {
		if (int rc = jobStatus_.create(size_); rc < 0)
			return makeErrnoError(RMA_ERR_INTERN, -rc, "%s: cannot create the job status page", kind());
	}
	if (localPeers_.size() == 1)
		return RMA_SUCCESS;
	const int myIndex =
		static_cast<int>(std::lower_bound(localPeers_.begin(), localPeers_.end(), rank_) - localPeers_.begin());
	const int pageFd = jobStatus_.fd();
	GatherResult out;
	RMA_TRY(bootstrapExchange(1, localPeers_, myIndex, {},
				  rank_ == leader ? std::span<const int>(&pageFd, 1) : std::span<const int>(), out));
	if (out.fds.size() != 1 || out.fdCounts.front() != 1)
		return makeError(RMA_ERR_INTERN, "%s: rank %d did not receive the job status page from rank %d",
				 kind(), rank_, leader);
	if (rank_ == leader)
		return RMA_SUCCESS;
	if (int rc = jobStatus_.attach(out.fds.front().release(), size_, true); rc < 0)
		return makeErrnoError(RMA_ERR_INTERN, -rc, "%s: cannot map the job status page of rank %d", kind(),
				      leader);
	return RMA_SUCCESS;
}

int ChannelBootstrap::exchange(uint64_t ctx, uint64_t seq, std::span<const int> members, int myIndex,
			       std::span<const std::byte> data, std::span<const int> fds, GatherResult &out)
{
	const std::size_t n = members.size();
	const std::size_t len = data.size();
	const std::size_t itemBytes = sizeof(Contribution) + len;
	const uint64_t counter = counter_.fetch_add(1, std::memory_order_relaxed) + 1;

	std::vector<std::byte> mine;
	boot::appendPod(mine, Contribution{ static_cast<uint32_t>(fds.size()), 0, counter });
	boot::appendBytes(mine, data.data(), len);

	std::vector<std::byte> gathered(n * itemBytes);
	std::memcpy(gathered.data() + myIndex * itemBytes, mine.data(), itemBytes);
	if (n > 1)
		RMA_TRY(dataRound(ctx, seq, members, myIndex, mine, gathered));

	std::vector<int> fdCounts(n);
	std::vector<std::byte> all(n * len);
	uint64_t hubCounter = 0;
	std::size_t total = 0;
	for (std::size_t i = 0; i < n; ++i) {
		Contribution c;
		std::memcpy(&c, gathered.data() + i * itemBytes, sizeof(c));
		if (c.fdCount > boot::kMaxMessageFds)
			return makeError(RMA_ERR_INTERN, "allgather ctx=%llu seq=%llu: rank %d claims %u descriptors",
					 (unsigned long long)ctx, (unsigned long long)seq, members[i], c.fdCount);
		fdCounts[i] = static_cast<int>(c.fdCount);
		total += c.fdCount;
		if (i == 0)
			hubCounter = c.counter;
		if (len > 0) /* an empty vector's data() may be null: memcpy must not see it */
			std::memcpy(all.data() + i * len, gathered.data() + i * itemBytes + sizeof(Contribution), len);
	}

	GatherResult result;
	if (total > 0) {
		std::vector<pid_t> pids(n);
		for (std::size_t i = 0; i < n; ++i) {
			if (hosts_.empty() || hosts_[members[i]] != hosts_[rank_])
				return makeError(
					RMA_ERR_INTERN,
					"allgather ctx=%llu seq=%llu: descriptors cannot cross hosts (rank %d is on "
					"host %d, rank %d on host %d)",
					(unsigned long long)ctx, (unsigned long long)seq, members[i],
					hosts_.empty() ? -1 : hosts_[members[i]], rank_,
					hosts_.empty() ? -1 : hosts_[rank_]);
			pids[i] = pids_[members[i]];
		}
		RMA_TRY(channel_->exchange(ctx, seq, members, myIndex, pids, fds, fdCounts, result));
	}
	out.data = std::move(all);
	out.fds = std::move(result.fds);
	out.fdCounts = std::move(fdCounts);
	out.instance = (static_cast<uint64_t>(members[0]) << kInstanceRankShift) |
		       (hubCounter & ((uint64_t(1) << kInstanceRankShift) - 1));
	return RMA_SUCCESS;
}

} /* namespace librma */
