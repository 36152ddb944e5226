/* SPDX-License-Identifier: MIT */
#include "shm/segment.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cstdint>
#include <optional>
#include <utility>

#include "config.h"
#include "error/error.h"

#ifdef HAVE_MFD_HUGE_2MB
#include <linux/memfd.h>
#endif

namespace librma {

namespace {

#ifdef HAVE_MFD_HUGETLB
#ifdef HAVE_MFD_HUGE_2MB
constexpr unsigned kHugeFlags = MFD_HUGETLB | MFD_HUGE_2MB;
#else
/*
 * Without MFD_HUGE_2MB, MFD_HUGETLB alone would pick the default huge
 * page size, maybe 1 GiB; the size is a fixed kernel ABI encoding:
 * log2(2 MiB) << MFD_HUGE_SHIFT (26).
 */
constexpr unsigned kHugeFlags = MFD_HUGETLB | (21U << 26);
#endif
#endif

/* Only uniqueness matters, so relaxed increments are enough. */
std::atomic<uint64_t> nextSerial{ 1 };

uint64_t newSerial()
{
	return nextSerial.fetch_add(1, std::memory_order_relaxed);
}

std::size_t basePageSize()
{
	return static_cast<std::size_t>(sysconf(_SC_PAGESIZE));
}

/* @size rounded up to @page (a power of two); 0 if that overflows. */
std::size_t roundUp(std::size_t size, std::size_t page)
{
	if (size > SIZE_MAX - (page - 1))
		return 0;
	return (size + page - 1) & ~(page - 1);
}

/*
 * Fault every page of the mapping in. For hugetlb this is the step that
 * takes the pages: the mmap() reservation is drawn from the host-wide pool,
 * but a fault under a bind policy must find a page on the bound node, and
 * MADV_POPULATE_WRITE reports a shortage as an error where a first touch
 * would raise SIGBUS. For plain pages (already allocated by fallocate) it
 * only fills the page tables, as attach() does with MAP_POPULATE: worth it
 * for small segments (no fault on a window's first operations), not for
 * large ones, where it costs as much again as the reservation (300 ms a GiB
 * here) for pages a rank may never touch, and every peer's attach paid it
 * once more. Past kEagerMapBytes plain pages are mapped at first touch
 * (minor faults: they exist since fallocate).
 * Kernels before 5.14 lack it (EINVAL); the reservation then has to do.
 */
constexpr std::size_t kEagerMapBytes = 4u << 20;

int populate(void *data, std::size_t size)
{
	if (madvise(data, size, MADV_POPULATE_WRITE) == 0)
		return RMA_SUCCESS;
	int err = errno;
	if (err == EINVAL)
		return RMA_SUCCESS;
	return makeErrnoError(RMA_ERR_NO_MEM, err, "populating a %zu-byte segment", size);
}

/*
 * Whether a huge-page segment of @mappedSize bytes may be left to first
 * touch, its pages held by the mmap() reservation alone: only where no fault
 * can fail after it and no placement can be lost. The reservation counts the
 * whole pool, but a fault draws from the nodes the faulting process's
 * cpuset and policy allow, and hugetlbfs keeps no shared policy (our mbind()
 * covers our mapping only; a peer's fault follows the peer's policy): with
 * more than one memory node a fault could find its nodes empty (SIGBUS) or
 * put a page where the window's placement did not ask, so such hosts keep
 * the populate. So does any host where a limit charged at fault time could
 * apply (hugeFaultsLimited()). One memory node and no such limit (this host,
 * most single-socket nodes): a large window is made in microseconds instead
 * of the time to zero all its pages (95 ms a GiB here), and each page is
 * zeroed where a rank first touches it. Small segments are populated all the
 * same (no fault on first operations).
 */
bool lazyHugePages(std::size_t mappedSize)
{
	return mappedSize > kEagerMapBytes && memoryNodeCount() == 1 && !hugeFaultsLimited();
}

/* The first @eagerBytes of a @mappedSize-byte mapping, in whole base pages. */
std::size_t eagerPrefix(std::size_t mappedSize, std::size_t eagerBytes)
{
	if (eagerBytes >= mappedSize)
		return mappedSize;
	return std::min(mappedSize, roundUp(eagerBytes, basePageSize()));
}

} /* namespace */

Segment::Segment(Segment &&other) noexcept
    : fd_(std::move(other.fd_)), data_(std::exchange(other.data_, nullptr)), size_(std::exchange(other.size_, 0)),
      mappedSize_(std::exchange(other.mappedSize_, 0)), pageSize_(std::exchange(other.pageSize_, 0)),
      numaNode_(std::exchange(other.numaNode_, -1)), serial_(std::exchange(other.serial_, 0))
{
}

Segment &Segment::operator=(Segment &&other) noexcept
{
	if (this != &other) {
		unmap();
		fd_ = std::move(other.fd_);
		data_ = std::exchange(other.data_, nullptr);
		size_ = std::exchange(other.size_, 0);
		mappedSize_ = std::exchange(other.mappedSize_, 0);
		pageSize_ = std::exchange(other.pageSize_, 0);
		numaNode_ = std::exchange(other.numaNode_, -1);
		serial_ = std::exchange(other.serial_, 0);
	}
	return *this;
}

Segment::~Segment()
{
	unmap();
}

void Segment::unmap()
{
	if (data_)
		munmap(data_, mappedSize_);
	data_ = nullptr;
}

Result<Segment> Segment::create(const SegmentOptions &options)
{
	for (const SegmentOptions::Range &range : options.ranges) {
		if (range.offset > options.size || range.length > options.size - range.offset)
			return Result<Segment>::failure(makeError(RMA_ERR_ARG,
								  "range [%zu, +%zu) lies outside a %zu-byte segment",
								  range.offset, range.length, options.size));
	}

	if (options.size == 0) {
		Segment segment;
		segment.pageSize_ = basePageSize();
		segment.serial_ = newSerial();
		return segment;
	}

	if (options.hugePages != HugePages::Off) {
		std::size_t needed = options.size / kHugePageSize + (options.size % kHugePageSize != 0);
		std::size_t free = freeHugePages();
		if (free >= needed) {
			Result<Segment> huge = createBacked(options, true);
			if (huge.ok() || options.hugePages == HugePages::Require)
				return huge;
			/* Prefer: lost a race for the pool, or no hugetlbfs; plain pages do. */
		} else if (options.hugePages == HugePages::Require) {
			return Result<Segment>::failure(makeError(
				RMA_ERR_NO_MEM, "no 2 MiB huge pages free for a %zu-byte segment: %zu needed, %zu free",
				options.size, needed, free));
		}
	}
	return createBacked(options, false);
}

Result<Segment> Segment::createBacked(const SegmentOptions &options, bool huge)
{
	using R = Result<Segment>;
	Segment segment;
	segment.size_ = options.size;
	segment.pageSize_ = huge ? kHugePageSize : basePageSize();
	segment.mappedSize_ = roundUp(options.size, segment.pageSize_);
	if (segment.mappedSize_ == 0)
		return R::failure(makeError(RMA_ERR_NO_MEM, "a %zu-byte segment cannot be mapped", options.size));

	unsigned flags = MFD_CLOEXEC | MFD_ALLOW_SEALING;
	if (huge) {
#ifdef HAVE_MFD_HUGETLB
		flags |= kHugeFlags;
#else
		return R::failure(makeError(RMA_ERR_NO_MEM, "this build has no MFD_HUGETLB"));
#endif
	}
	int fd = memfd_create(options.name, flags);
	if (fd < 0) {
		int err = errno;
		return R::failure(makeErrnoError(RMA_ERR_NO_MEM, err, "memfd_create(\"%s\"%s)", options.name,
						 huge ? ", MFD_HUGETLB" : ""));
	}
	segment.fd_.reset(fd);

	if (ftruncate(fd, static_cast<off_t>(segment.mappedSize_)) != 0) {
		int err = errno;
		return R::failure(
			makeErrnoError(RMA_ERR_NO_MEM, err, "sizing a segment to %zu bytes", segment.mappedSize_));
	}
	/*
	 * From here on the size is fixed for good: a peer that shrank the file
	 * would make every other process's accesses past the end SIGBUS.
	 * F_SEAL_SEAL stops anyone adding seals (F_SEAL_WRITE) later.
	 */
	if (fcntl(fd, F_ADD_SEALS, F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_SEAL) != 0) {
		int err = errno;
		return R::failure(makeErrnoError(RMA_ERR_INTERN, err, "sealing a segment"));
	}

	/* No MAP_NORESERVE: for hugetlb, this mmap() reserves the pages or fails. */
	void *data = mmap(nullptr, segment.mappedSize_, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	if (data == MAP_FAILED) {
		int err = errno;
		return R::failure(makeErrnoError(RMA_ERR_NO_MEM, err, "mapping a %zu-byte segment%s",
						 segment.mappedSize_, huge ? " of huge pages" : ""));
	}
	segment.data_ = static_cast<std::byte *>(data);

	/* Policies must be in place before the first page is allocated. */
	int rc = applyMemPolicy(data, segment.mappedSize_, options.policy);
	if (rc != RMA_SUCCESS)
		return R::failure(rc);
	/*
	 * Ranges are widened to whole pages; a page shared by two ranges
	 * follows the later one, whose data starts in it.
	 */
	for (const SegmentOptions::Range &range : options.ranges) {
		if (range.length == 0)
			continue;
		std::size_t begin = range.offset & ~(segment.pageSize_ - 1);
		std::size_t end = roundUp(range.offset + range.length, segment.pageSize_);
		rc = applyMemPolicy(segment.data_ + begin, end - begin, range.policy);
		if (rc != RMA_SUCCESS)
			return R::failure(rc);
	}

	if (!huge) {
		/* Transparent huge pages where the kernel allows; a hint only. */
		madvise(data, segment.mappedSize_, MADV_HUGEPAGE);
		/*
		 * From the check to the end of fallocate() no other librma
		 * process of the host checks or reserves (another job's check
		 * would not see our reservation yet); everything above is
		 * outside that section, which serializes the host's creations.
		 * fallocate() of more than the host can give does not fail:
		 * the OOM killer picks a victim first (maybe a peer, maybe us).
		 */
		std::optional<HostReservation> own;
		HostReservation *reserving = options.reservation;
		if (!reserving)
			reserving = &own.emplace(1);
		std::size_t available = 0;
		/*
		 * A few pages are not worth the check (reading /proc/meminfo and
		 * the cgroup's files was a fifth of a small window's creation)
		 * nor the host lock: fallocate() of them cannot be what exhausts
		 * the host. Still counted as charged, for the lock's release.
		 */
		if (segment.mappedSize_ > kUncheckedBytes && !reserving->claim(segment.mappedSize_, available))
			return R::failure(makeError(
				RMA_ERR_NO_MEM, "a %zu-byte segment exceeds the %zu bytes of memory this host can give",
				segment.mappedSize_, available));
		if (fallocate(fd, 0, 0, static_cast<off_t>(segment.mappedSize_)) != 0) {
			int err = errno;
			return R::failure(makeErrnoError(RMA_ERR_NO_MEM, err, "reserving %zu bytes of shared memory",
							 segment.mappedSize_));
		}
		/* The pages are charged now: MemAvailable and the cgroups show them to the next checker. */
		reserving->charged();
	}
	if ((huge && !lazyHugePages(segment.mappedSize_)) || segment.mappedSize_ <= kEagerMapBytes) {
		rc = populate(data, huge ? segment.mappedSize_ : eagerPrefix(segment.mappedSize_, options.eagerBytes));
		if (rc != RMA_SUCCESS)
			return R::failure(rc);
	}

	segment.numaNode_ = options.policy.reportedNode();
	segment.serial_ = newSerial();
	return segment;
}

Result<Segment> Segment::attach(UniqueFd fd, std::size_t size, bool hugePages, std::size_t eagerBytes)
{
	using R = Result<Segment>;
	Segment segment;
	segment.size_ = size;
	segment.pageSize_ = hugePages ? kHugePageSize : basePageSize();
	segment.fd_ = std::move(fd);
	segment.serial_ = newSerial();
	if (size == 0)
		return segment;

	segment.mappedSize_ = roundUp(size, segment.pageSize_);
	if (segment.mappedSize_ == 0)
		return R::failure(makeError(RMA_ERR_ARG, "a %zu-byte segment cannot be mapped", size));
	/* Mapping past the end of the file would SIGBUS on first access. */
	struct stat st;
	if (fstat(segment.fd_.get(), &st) != 0) {
		int err = errno;
		return R::failure(makeErrnoError(RMA_ERR_ARG, err, "attaching segment fd %d", segment.fd_.get()));
	}
	if (static_cast<uint64_t>(st.st_size) < segment.mappedSize_)
		return R::failure(makeError(RMA_ERR_ARG, "segment fd %d holds %lld bytes, fewer than the %zu to map",
					    segment.fd_.get(), static_cast<long long>(st.st_size),
					    segment.mappedSize_));

	/* Page tables up front for small segments only (see populate()), of a prefix where asked. */
	const bool eager = segment.mappedSize_ <= kEagerMapBytes;
	const std::size_t prefix = hugePages ? segment.mappedSize_ : eagerPrefix(segment.mappedSize_, eagerBytes);
	const int populateFlag = eager && prefix == segment.mappedSize_ ? MAP_POPULATE : 0;
	void *data = mmap(nullptr, segment.mappedSize_, PROT_READ | PROT_WRITE, MAP_SHARED | populateFlag,
			  segment.fd_.get(), 0);
	if (data == MAP_FAILED) {
		int err = errno;
		return R::failure(
			makeErrnoError(RMA_ERR_NO_MEM, err, "mapping a peer's %zu-byte segment", segment.mappedSize_));
	}
	segment.data_ = static_cast<std::byte *>(data);
	if (eager && !populateFlag && prefix > 0) {
		int rc = populate(data, prefix);
		if (rc != RMA_SUCCESS)
			return R::failure(rc);
	}
	return segment;
}

} /* namespace librma */
