/* SPDX-License-Identifier: MIT */
/*
 * The job's status page: which ranks are dead, readable by every rank with
 * one load on the data path.
 *
 * The launcher creates it (a memfd of one page per 32768 ranks or part,
 * plus a header page), maps it read-write, and hands the descriptor to each
 * rank (RMA_JOB_FD). Under PMIx there is no launcher of ours: the host's
 * smallest rank creates it and hands it to the host's other ranks, which
 * map it writable (several writers are safe: see markDead()). When it reaps a rank that did not exit with status 0
 * it sets the rank's bit and then counts it. Ranks map the page read-only;
 * operations check the count (one relaxed load of a line nobody writes
 * until a rank dies, so it stays shared in every cache) and only when it
 * is non-zero look at the bits of the ranks they involve.
 *
 * Memory orderings: the writer sets the bit (relaxed fetch_or) and then
 * bumps the count with a release RMW; a reader that sees the count with
 * acquire (deadCountAcquire()) sees every bit set before it. The data
 * path's relaxed load of the count is only a hint: a stale zero delays
 * detection by the time a store takes to become visible, never more.
 */
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>

#include "common/unique_fd.h"

namespace librma {

struct JobStatusHeader {
	uint64_t magic;
	uint32_t nranks;
	uint32_t reserved;
	alignas(64) std::atomic<uint64_t> deadCount;
};
static_assert(std::atomic<uint64_t>::is_always_lock_free);

inline constexpr uint64_t kJobStatusMagic = 0x6c6962726d614a53ull; /* "libr maJS" */
inline constexpr size_t kJobStatusBitsOffset = 4096;

/* Bytes of a status page for @nranks ranks. */
inline size_t jobStatusBytes(int nranks)
{
	size_t words = (static_cast<size_t>(nranks) + 63) / 64;
	return kJobStatusBitsOffset + ((words * 8 + 4095) & ~size_t(4095));
}

/* A mapped status page: the launcher's (writable) or a rank's (read-only). */
class JobStatus
{
public:
	JobStatus() = default;
	~JobStatus();
	JobStatus(const JobStatus &) = delete;
	JobStatus &operator=(const JobStatus &) = delete;

	/* Launcher: create the page for @nranks. Returns 0 or -errno. */
	int create(int nranks);
	/*
	 * Rank: map the page behind @fd and close @fd; read-only unless
	 * @writable (under PMIx, where no launcher watches, every local rank
	 * may record deaths). Returns 0 or -errno (-EINVAL: not a status page).
	 */
	int attach(int fd, int nranks, bool writable = false);

	/* The descriptor the ranks inherit (launcher only; -1 once attached). */
	int fd() const { return fd_.get(); }
	bool valid() const { return header_ != nullptr; }

	/* Record that @rank died (idempotent; safe with several writers). Only on a writable page; else nothing. */
	void markDead(int rank);

	/* The count of dead ranks, for the data path (relaxed: a hint, see above). */
	const std::atomic<uint64_t> *deadCountWord() const { return header_ ? &header_->deadCount : &kNone; }
	/* Whether @rank is known dead (acquire on the count first: see above). */
	bool dead(int rank) const;

private:
	static const std::atomic<uint64_t> kNone;
	UniqueFd fd_;
	JobStatusHeader *header_ = nullptr;
	std::atomic<uint64_t> *bits_ = nullptr;
	size_t bytes_ = 0;
	int nranks_ = 0;
	bool writable_ = false;
};

} /* namespace librma */
