/* SPDX-License-Identifier: MIT */
/*
 * Shared-memory segments: the memory behind every window. This header is the
 * component's only door.
 *
 * A segment is a memfd: 2 MiB huge pages (MFD_HUGETLB | MFD_HUGE_2MB) when
 * the policy allows and the host's pool has room, else plain pages with
 * transparent-huge-page advice. Its memory is bound to a NUMA node before
 * first touch and reserved in full at creation (huge-page reservation or
 * fallocate), so running out of memory is an error from create() and never a
 * SIGBUS later. Peers map it from the fd (passed over the bootstrap). The
 * memory disappears with the last fd and mapping: nothing is ever left in
 * /dev/shm, whatever way the job ends.
 */
#pragma once

#include <cstddef>
#include <cstdint>
#include <map>
#include <mutex>
#include <optional>
#include <string_view>
#include <vector>

#include "common/result.h"
#include "common/unique_fd.h"
#include "numa/topology.h"

namespace librma {

enum class HugePages { Off, Prefer, Require };

/* "prefer" | "require" | "off"; RMA_ERR_INFO_VALUE otherwise. */
Result<HugePages> parseHugePages(std::string_view text);

inline constexpr std::size_t kHugePageSize = 2u << 20;
/* Plain-page segments up to this size are reserved without the host check and lock (HostReservation). */
inline constexpr std::size_t kUncheckedBytes = 64u << 10;

class HostReservation;

struct SegmentOptions {
	std::size_t size = 0; /* bytes wanted; 0 is allowed (no memory) */
	HugePages hugePages = HugePages::Prefer;
	MemPolicy policy;     /* applied before first touch */
	const char *name = "rma";
	/*
	 * Page tables are made at creation for at most this many leading
	 * bytes of a small plain-page segment (the rest is reserved all the
	 * same, and mapped at first touch). Huge pages are populated whole,
	 * unless the segment is large and a fault cannot fail (see create()).
	 */
	std::size_t eagerBytes = SIZE_MAX;
	/*
	 * Plain pages are claimed from this reservation (which holds the host
	 * lock across several segments) instead of a lock and a check of
	 * their own. Not owned; may be null.
	 */
	HostReservation *reservation = nullptr;
	/* Per-range policies inside the segment (allocate_shared): applied after @policy. */
	struct Range {
		std::size_t offset;
		std::size_t length;
		MemPolicy policy;
	};
	std::vector<Range> ranges;
};

class Segment
{
public:
	Segment() = default;
	Segment(Segment &&other) noexcept;
	Segment &operator=(Segment &&other) noexcept;
	Segment(const Segment &) = delete;
	Segment &operator=(const Segment &) = delete;
	~Segment();

	/*
	 * Create, reserve, bind and map a new segment (zero-filled).
	 * RMA_ERR_NO_MEM when the memory cannot be had (with the policy
	 * Require, also when no huge page is free; plain pages also when
	 * the size exceeds availableMemory()), RMA_ERR_ARG when a range lies
	 * outside the segment. The memfd is sealed against shrinking and
	 * growing, so no peer can truncate it under another's mapping.
	 * Under Prefer, any failure of the hugetlb path falls back to plain
	 * pages. Thread-safe.
	 */
	static Result<Segment> create(const SegmentOptions &options);

	/*
	 * Map a peer's segment from its fd (takes ownership of @fd).
	 * @size is the segment's mapped size, @hugePages whether it is hugetlb.
	 * Page tables of a small segment are populated at once, so the data
	 * path takes no faults; of its first @eagerBytes only, when the rest is
	 * rarely touched (a window's control segment).
	 */
	static Result<Segment> attach(UniqueFd fd, std::size_t size, bool hugePages,
				      std::size_t eagerBytes = SIZE_MAX);

	bool isValid() const { return data_ != nullptr || size_ == 0; }
	std::byte *data() const { return data_; }
	std::size_t size() const { return size_; }             /* bytes asked for */
	std::size_t mappedSize() const { return mappedSize_; } /* rounded to pages */
	std::size_t pageSize() const { return pageSize_; }
	bool hugePages() const { return pageSize_ == kHugePageSize; }
	int numaNode() const { return numaNode_; } /* -1: none/interleaved */
	int fd() const { return fd_.get(); }
	/* Close the fd (the mapping keeps the memory alive). */
	void closeFd() { fd_.reset(); }
	/* Unique within this process, never reused. */
	uint64_t serial() const { return serial_; }

private:
	/* create() with or without hugetlb: the policy decision is made by the caller. */
	static Result<Segment> createBacked(const SegmentOptions &options, bool huge);
	void unmap();

	UniqueFd fd_;
	std::byte *data_ = nullptr;
	std::size_t size_ = 0;
	std::size_t mappedSize_ = 0;
	std::size_t pageSize_ = 0;
	int numaNode_ = -1;
	uint64_t serial_ = 0;
};

/* Free 2 MiB pages in the host's pool (free minus reserved), 0 if none. */
std::size_t freeHugePages();

/*
 * Whether a limit charged at fault time could apply to huge pages of this
 * host: a hugetlb cgroup other than the root exists (/proc/cgroups; v1 or
 * v2, any process's: a window's peers may sit in other cgroups), or cgroup
 * v2 is mounted with memory_hugetlb_accounting (memory.max charged at
 * fault). A fault past such a limit fails (SIGBUS or OOM) although the
 * mmap() reservation succeeded. True too when the files cannot be read.
 */
bool hugeFaultsLimited();
/* The same from the texts of /proc/cgroups and /proc/self/mountinfo (tests). */
bool hugeFaultLimitsPossible(const std::string &cgroups, const std::string &mountinfo);

/*
 * Bytes of plain memory this process can still be given without reclaiming
 * more than page cache: the smaller of /proc/meminfo's MemAvailable and the
 * headroom under each memory cgroup limit that applies to us (v1 or v2).
 * SIZE_MAX when nothing can be read. Segment::create() refuses more than
 * this, because filling shared memory past it invokes the OOM killer.
 */
std::size_t availableMemory();

/*
 * Host-wide mutual exclusion for "is there room?" and the reservation that
 * follows it, among every librma process of the host (every job): without
 * it, two jobs' checks both pass and their fallocate()s together invoke the
 * OOM killer. An exclusive flock() on kHostReservationLockPath (created
 * mode 0666 on first use), held from the check to the end of fallocate();
 * released by the kernel if the holder dies. Where the file cannot be
 * opened (a read-only /dev/shm), held() is false and creation goes on
 * unserialized, as before.
 */
inline constexpr const char *kHostReservationLockPath = "/dev/shm/librma-reserve.lock";
class HostReservationLock
{
public:
	HostReservationLock();
	~HostReservationLock();
	HostReservationLock(const HostReservationLock &) = delete;
	HostReservationLock &operator=(const HostReservationLock &) = delete;
	bool held() const { return fd_ >= 0; }

private:
	int fd_ = -1;
};

/*
 * One look at availableMemory() for several plain-page segments made back to
 * back (a window's control segment and a rank's memory), under one
 * HostReservationLock: the lock is taken at the first claim() and released
 * after @segments fallocate()s have charged their pages (or with the
 * object). Each claim is checked against what the earlier claims left.
 * One thread; setup path.
 */
class HostReservation
{
public:
	explicit HostReservation(int segments) : pending_(segments) {}
	HostReservation(const HostReservation &) = delete;
	HostReservation &operator=(const HostReservation &) = delete;

	/*
	 * Take the lock if not held, and room for @bytes: true, or false
	 * (nothing claimed) when fewer than @bytes remain, with what did
	 * remain in @remaining.
	 */
	bool claim(std::size_t bytes, std::size_t &remaining);
	/* A claimed segment's pages are charged (after its fallocate()). */
	void charged();
	/* Drop the lock now, whatever is pending (a segment that took huge pages claims nothing). */
	void release() { lock_.reset(); }

private:
	std::optional<HostReservationLock> lock_;
	std::size_t available_ = 0;
	int pending_;
};

/*
 * The segments handed out by rma_alloc_mem(). Thread-safe (control path).
 * Tests may build their own; the engine uses instance().
 */
class SegmentRegistry
{
public:
	static SegmentRegistry &instance();

	/*
	 * Keep @segment; returns its base address. An empty segment (size 0)
	 * has no address: it is not kept and nullptr is returned.
	 */
	void *add(Segment segment);
	/* Drop the segment based at @base; false if there is none. */
	bool remove(void *base);

	struct Hit {
		const Segment *segment;
		std::size_t offset; /* of the queried address in the segment */
	};
	/*
	 * The registered segment holding all of [p, p+len) within its size(),
	 * if any (len 0: p itself must lie inside). The pointer stays valid
	 * until that segment is removed.
	 */
	std::optional<Hit> find(const void *p, std::size_t len) const;

private:
	mutable std::mutex lock_;
	/* Keyed by base address, so find() is one upper_bound(). */
	std::map<std::uintptr_t, Segment> segments_;
};

} /* namespace librma */
