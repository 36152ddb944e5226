/* SPDX-License-Identifier: MIT */
#include "bootstrap/pmix_bootstrap.h"

#include <unistd.h>

#include <pmix.h>

#include <algorithm>
#include <atomic>
#include <charconv>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "bootstrap/channel_bootstrap.h"
#include "bootstrap/protocol.h"
#include "common/knobs.h"
#include "error/error.h"

namespace librma {

namespace {

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

	/* Where PMIx_Get stores a value (any held before is released: a retried Get reuses it). */
	pmix_value_t **out()
	{
		if (value_)
			PMIX_VALUE_RELEASE(value_);
		value_ = nullptr;
		return &value_;
	}
	const pmix_value_t *get() const { return value_; }

private:
	pmix_value_t *value_ = nullptr;
};

class PmixBootstrap final : public ChannelBootstrap
{
public:
	PmixBootstrap() = default;
	PmixBootstrap(const PmixBootstrap &) = delete;
	PmixBootstrap &operator=(const PmixBootstrap &) = delete;

	~PmixBootstrap() override
	{
		/* The channel's sockets go first; PMIx_Finalize is reference-counted (an MPI may hold it too). */
		closeChannel();
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
	/* One PMIx_Put under a key of this collective, one fence over the members, one Get per member. */
	int dataRound(uint64_t ctx, uint64_t seq, std::span<const int> members, int myIndex,
		      std::span<const std::byte> mine, std::span<std::byte> gathered) override;

private:
	/* Get @key of @rank (PMIX_RANK_WILDCARD for the job's) into @value. */
	int get(pmix_rank_t rank, const char *key, PmixValue &value) const;
	int getUint(pmix_rank_t rank, const char *key, uint64_t &out) const;

	pmix_proc_t me_{};
	bool initialized_ = false;
	uint64_t jobId_ = 0;
	std::string pmixHost_;
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
	return startChannel(jobId_, static_cast<int>(me_.rank), static_cast<int>(size));
}

int PmixBootstrap::dataRound(uint64_t ctx, uint64_t seq, std::span<const int> members, int myIndex,
			     std::span<const std::byte> mine, std::span<std::byte> gathered)
{
	const std::size_t n = members.size();
	const std::size_t itemBytes = mine.size();
	char key[PMIX_MAX_KEYLEN];
	std::snprintf(key, sizeof(key), "librma.g.%llu.%llu", (unsigned long long)ctx, (unsigned long long)seq);
	pmix_value_t value;
	PMIX_VALUE_CONSTRUCT(&value);
	value.type = PMIX_BYTE_OBJECT;
	value.data.bo.bytes = const_cast<char *>(reinterpret_cast<const char *>(mine.data()));
	value.data.bo.size = itemBytes;
	/* PMIx_Put copies the value; @mine stays the caller's. */
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
	/*
	 * Slurm 22.05's PMIx plugin (srun --mpi=pmix) was seen completing a
	 * fence on each node alone, without the other nodes (the tree fence;
	 * its ring fence fails outright): a member on another node may not
	 * have committed yet, and PMIx_Get says NOT_FOUND. Each member's data
	 * is what this collective waits for anyway, so a missing contribution
	 * is asked for again (backing off to 10 ms) until it comes, for
	 * kNotFoundWaitSeconds at most. With a launcher whose fences hold,
	 * the first Get finds it.
	 */
	constexpr int kNotFoundWaitSeconds = 60;
	const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(kNotFoundWaitSeconds);
	for (std::size_t i = 0; i < n; ++i) {
		if (static_cast<int>(i) == myIndex)
			continue;
		PmixValue theirs;
		rc = PMIx_Get(&procs[i], key, nullptr, 0, theirs.out());
		for (useconds_t pause = 50; rc == PMIX_ERR_NOT_FOUND && std::chrono::steady_clock::now() < deadline;
		     pause = std::min<useconds_t>(pause * 2, 10000)) {
			usleep(pause);
			rc = PMIx_Get(&procs[i], key, nullptr, 0, theirs.out());
		}
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
