/* SPDX-License-Identifier: MIT */
#include "bootstrap/pmix_bootstrap.h"

#include <unistd.h>

#include <pmix.h>

#include <algorithm>
#include <atomic>
#include <charconv>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "bootstrap/bootstrap_base.h"
#include "bootstrap/local_fd_channel.h"
#include "bootstrap/protocol.h"
#include "common/knobs.h"
#include "error/error.h"

namespace librma {

namespace {

/* What each member puts for one collective, before its data. */
struct Contribution {
	uint32_t fdCount;
	uint32_t reserved;
	/* The member's own exchange counter: the hub's makes the instance id. */
	uint64_t counter;
};

/* Bits of the instance id below the hub's world rank. */
constexpr int kInstanceRankShift = 40;

uint64_t fnv1a(std::string_view text)
{
	uint64_t hash = 0xcbf29ce484222325ull;
	for (char c : text) {
		hash ^= static_cast<unsigned char>(c);
		hash *= 0x100000001b3ull;
	}
	return hash;
}

/* "0,1,2" (PMIX_LOCAL_PEERS) -> ranks; false if anything else is in it. */
bool parseRanks(std::string_view text, std::vector<int> &ranks)
{
	while (!text.empty()) {
		std::size_t comma = text.find(',');
		std::string_view item = text.substr(0, comma);
		int value;
		auto [end, ec] = std::from_chars(item.data(), item.data() + item.size(), value);
		if (ec != std::errc() || end != item.data() + item.size())
			return false;
		ranks.push_back(value);
		if (comma == std::string_view::npos)
			break;
		text.remove_prefix(comma + 1);
	}
	return !ranks.empty();
}

/* One PMIx value, released on scope exit. */
class PmixValue
{
public:
	PmixValue() = default;
	~PmixValue()
	{
		if (value_)
			PMIX_VALUE_RELEASE(value_);
	}
	PmixValue(const PmixValue &) = delete;
	PmixValue &operator=(const PmixValue &) = delete;

	pmix_value_t **out() { return &value_; }
	const pmix_value_t *get() const { return value_; }

private:
	pmix_value_t *value_ = nullptr;
};

class PmixBootstrap final : public BootstrapBase
{
public:
	PmixBootstrap() = default;
	PmixBootstrap(const PmixBootstrap &) = delete;
	PmixBootstrap &operator=(const PmixBootstrap &) = delete;

	~PmixBootstrap() override
	{
		/* The channel's sockets go first; PMIx_Finalize is reference-counted (an MPI may hold it too). */
		channel_.reset();
		if (initialized_)
			PMIx_Finalize(nullptr, 0);
	}

	const char *kind() const override { return "pmix"; }

	std::string hostName() const override
	{
		std::string own = Bootstrap::hostName();
		if (pmixHost_.empty() || pmixHost_ == own)
			return own;
		return own + " (PMIx: " + pmixHost_ + ")";
	}

	[[noreturn]] void abort(int code) override
	{
		std::fflush(nullptr);
		/* The launcher ends every rank of the job. */
		PMIx_Abort(code, "librma: the job was aborted", nullptr, 0);
		_exit(code);
	}

	/* PMIx_Init, the launcher's facts, the channel, the start-up exchanges. */
	int start();

protected:
	uint64_t hostKey() const override { return static_cast<uint64_t>(localPeers_.front()); }

	int exchange(uint64_t ctx, uint64_t seq, std::span<const int> members, int myIndex,
		     std::span<const std::byte> data, std::span<const int> fds, GatherResult &out) override;

private:
	/* Get @key of @rank (PMIX_RANK_WILDCARD for the job's) into @value. */
	int get(pmix_rank_t rank, const char *key, PmixValue &value) const;
	int getUint(pmix_rank_t rank, const char *key, uint64_t &out) const;
	/* The host's status page: created by its smallest rank, handed to the others. */
	int shareJobStatus();

	pmix_proc_t me_{};
	bool initialized_ = false;
	uint64_t jobId_ = 0;
	std::string pmixHost_;
	/* This host's ranks, ascending (PMIX_LOCAL_PEERS). */
	std::vector<int> localPeers_;
	std::optional<LocalFdChannel> channel_;
	std::atomic<uint64_t> counter_{ 0 };
};

int PmixBootstrap::get(pmix_rank_t rank, const char *key, PmixValue &value) const
{
	pmix_proc_t proc;
	PMIX_PROC_LOAD(&proc, me_.nspace, rank);
	pmix_status_t rc = PMIx_Get(&proc, key, nullptr, 0, value.out());
	if (rc != PMIX_SUCCESS || !value.get())
		return makeError(RMA_ERR_INTERN, "PMIx_Get(%s, rank %s, %s): %s", me_.nspace,
				 rank == PMIX_RANK_WILDCARD ? "*" : std::to_string(rank).c_str(), key,
				 PMIx_Error_string(rc));
	return RMA_SUCCESS;
}

int PmixBootstrap::getUint(pmix_rank_t rank, const char *key, uint64_t &out) const
{
	PmixValue v;
	RMA_TRY(get(rank, key, v));
	switch (v.get()->type) {
	case PMIX_UINT32:
		out = v.get()->data.uint32;
		return RMA_SUCCESS;
	case PMIX_UINT16:
		out = v.get()->data.uint16;
		return RMA_SUCCESS;
	case PMIX_UINT64:
		out = v.get()->data.uint64;
		return RMA_SUCCESS;
	default:
		return makeError(RMA_ERR_INTERN, "PMIx_Get(%s): unexpected type %u", key,
				 static_cast<unsigned>(v.get()->type));
	}
}

int PmixBootstrap::start()
{
	pmix_status_t prc = PMIx_Init(&me_, nullptr, 0);
	if (prc != PMIX_SUCCESS) {
		const char *ns = std::getenv("PMIX_NAMESPACE");
		return makeError(RMA_ERR_INTERN,
				 "PMIx_Init failed (%s): PMIX_NAMESPACE=%s names a PMIx job but no PMIx server "
				 "answers (start the program with its launcher, or unset the PMIX_ variables)",
				 PMIx_Error_string(prc), ns ? ns : "(unset)");
	}
	initialized_ = true;

	uint64_t size = 0;
	RMA_TRY(getUint(PMIX_RANK_WILDCARD, PMIX_JOB_SIZE, size));
	if (size < 1 || size > (uint64_t(1) << 24) || me_.rank >= size)
		return makeError(RMA_ERR_INTERN, "PMIx: rank %u of a job of %llu", me_.rank,
				 static_cast<unsigned long long>(size));
	{
		PmixValue peers;
		RMA_TRY(get(PMIX_RANK_WILDCARD, PMIX_LOCAL_PEERS, peers));
		bool ok = peers.get()->type == PMIX_STRING && peers.get()->data.string &&
			  parseRanks(peers.get()->data.string, localPeers_);
		std::sort(localPeers_.begin(), localPeers_.end());
		ok = ok && std::adjacent_find(localPeers_.begin(), localPeers_.end()) == localPeers_.end() &&
		     localPeers_.front() >= 0 && static_cast<uint64_t>(localPeers_.back()) < size &&
		     std::binary_search(localPeers_.begin(), localPeers_.end(), static_cast<int>(me_.rank));
		if (!ok)
			return makeError(
				RMA_ERR_INTERN,
				"PMIx: PMIX_LOCAL_PEERS of rank %u is not a list of ranks that holds it: %s", me_.rank,
				peers.get()->type == PMIX_STRING && peers.get()->data.string ? peers.get()->data.string
											     : "(not a string)");
	}
	{
		/* For messages only: the launcher's name of this host. */
		PmixValue host;
		if (get(me_.rank, PMIX_HOSTNAME, host) == RMA_SUCCESS && host.get()->type == PMIX_STRING &&
		    host.get()->data.string)
			pmixHost_ = host.get()->data.string;
	}

	jobId_ = fnv1a(me_.nspace);
	/* A local rank the channel finds dead is recorded for every rank of the host (the page is shared). */
	LocalFdChannel::Options options;
	options.peerDied = [this](int worldRank) { jobStatus_.markDead(worldRank); };
	auto channel = LocalFdChannel::listen(jobId_, static_cast<int>(me_.rank), std::move(options));
	if (!channel)
		return channel.code();
	channel_.emplace(std::move(channel.value()));

	RMA_TRY(init(static_cast<int>(me_.rank), static_cast<int>(size)));
	return shareJobStatus();
}

int PmixBootstrap::shareJobStatus()
{
	const int leader = localPeers_.front();
	if (rank_ == leader) {
		if (int rc = jobStatus_.create(size_); rc < 0)
			return makeErrnoError(RMA_ERR_INTERN, -rc, "PMIx: cannot create the job status page");
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
		return makeError(RMA_ERR_INTERN, "PMIx: rank %d did not receive the job status page from rank %d",
				 rank_, leader);
	if (rank_ == leader)
		return RMA_SUCCESS;
	if (int rc = jobStatus_.attach(out.fds.front().release(), size_, true); rc < 0)
		return makeErrnoError(RMA_ERR_INTERN, -rc, "PMIx: cannot map the job status page of rank %d", leader);
	return RMA_SUCCESS;
}

int PmixBootstrap::exchange(uint64_t ctx, uint64_t seq, std::span<const int> members, int myIndex,
			    std::span<const std::byte> data, std::span<const int> fds, GatherResult &out)
{
	const std::size_t n = members.size();
	const std::size_t len = data.size();
	const std::size_t itemBytes = sizeof(Contribution) + len;
	const uint64_t counter = counter_.fetch_add(1, std::memory_order_relaxed) + 1;

	std::vector<std::byte> mine;
	boot::appendPod(mine, Contribution{ static_cast<uint32_t>(fds.size()), 0, counter });
	boot::appendBytes(mine, data.data(), len);

	/* The data round: one Put per member under a key of this collective, one fence, one Get per member. */
	std::vector<std::byte> gathered(n * itemBytes);
	std::memcpy(gathered.data() + myIndex * itemBytes, mine.data(), itemBytes);
	if (n > 1) {
		char key[PMIX_MAX_KEYLEN];
		std::snprintf(key, sizeof(key), "librma.g.%llu.%llu", (unsigned long long)ctx, (unsigned long long)seq);
		pmix_value_t value;
		PMIX_VALUE_CONSTRUCT(&value);
		value.type = PMIX_BYTE_OBJECT;
		value.data.bo.bytes = reinterpret_cast<char *>(mine.data());
		value.data.bo.size = mine.size();
		/* PMIx_Put copies the value; @mine stays ours. */
		pmix_status_t rc = PMIx_Put(PMIX_GLOBAL, key, &value);
		if (rc == PMIX_SUCCESS)
			rc = PMIx_Commit();
		if (rc != PMIX_SUCCESS)
			return makeError(RMA_ERR_INTERN, "allgather ctx=%llu seq=%llu: PMIx_Put/Commit: %s",
					 (unsigned long long)ctx, (unsigned long long)seq, PMIx_Error_string(rc));

		std::vector<pmix_proc_t> procs(n);
		for (std::size_t i = 0; i < n; ++i)
			PMIX_PROC_LOAD(&procs[i], me_.nspace, static_cast<pmix_rank_t>(members[i]));
		pmix_info_t info;
		bool collect = true;
		PMIX_INFO_CONSTRUCT(&info);
		PMIX_INFO_LOAD(&info, PMIX_COLLECT_DATA, &collect, PMIX_BOOL);
		rc = PMIx_Fence(procs.data(), n, &info, 1);
		PMIX_INFO_DESTRUCT(&info);
		if (rc != PMIX_SUCCESS) {
			int cls = rc == PMIX_ERR_PROC_ABORTED || rc == PMIX_ERR_PROC_TERM_WO_SYNC ||
						  rc == PMIX_ERR_LOST_CONNECTION
					  ? RMA_ERR_PROC_FAILED
					  : RMA_ERR_INTERN;
			return makeError(cls, "allgather ctx=%llu seq=%llu over %zu ranks: PMIx_Fence: %s",
					 (unsigned long long)ctx, (unsigned long long)seq, n, PMIx_Error_string(rc));
		}
		for (std::size_t i = 0; i < n; ++i) {
			if (static_cast<int>(i) == myIndex)
				continue;
			PmixValue theirs;
			rc = PMIx_Get(&procs[i], key, nullptr, 0, theirs.out());
			const pmix_value_t *v = theirs.get();
			if (rc != PMIX_SUCCESS || !v || v->type != PMIX_BYTE_OBJECT || v->data.bo.size != itemBytes)
				return makeError(RMA_ERR_INTERN,
						 "allgather ctx=%llu seq=%llu: rank %d's contribution: %s (%zu bytes, "
						 "expected %zu)",
						 (unsigned long long)ctx, (unsigned long long)seq, members[i],
						 rc != PMIX_SUCCESS ? PMIx_Error_string(rc) : "wrong type or size",
						 v && v->type == PMIX_BYTE_OBJECT ? v->data.bo.size : 0, itemBytes);
			std::memcpy(gathered.data() + i * itemBytes, v->data.bo.bytes, itemBytes);
		}
	}

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

} /* namespace */

bool pmixEnvironment()
{
	return knobValue("PMIX_NAMESPACE") && knobValue("PMIX_RANK");
}

Result<std::unique_ptr<Bootstrap>> startPmixBootstrap()
{
	using Ptr = std::unique_ptr<Bootstrap>;
	auto boot = std::make_unique<PmixBootstrap>();
	if (int rc = boot->start(); rc != RMA_SUCCESS)
		return Result<Ptr>::failure(rc);
	return Ptr(std::move(boot));
}

} /* namespace librma */
