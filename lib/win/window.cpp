/* SPDX-License-Identifier: MIT */
/*
 * Window creation, attributes, info, dynamic attach and free.
 * The data path and synchronization are in window_ops.cpp.
 */
#include "win/window.h"

#include <fcntl.h>
#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <charconv>
#include <chrono>
#include <cstring>
#include <numeric>
#include <mutex>
#include <optional>

#include "common/knobs.h"
#include "error/error.h"
#include "win/remote.h"
#include "win/stats.h"

namespace librma {

/* Windows from this size per rank are checked against the host's memory collectively before any is reserved. */
constexpr int64_t kFirstCheckBytes = int64_t{ 64 } << 20;


/* ---- Hints ---------------------------------------------------------------- */

namespace {

int parseBool(const char *call, const char *key, const std::string &value, bool &out)
{
	if (value == "true") {
		out = true;
		return RMA_SUCCESS;
	}
	if (value == "false") {
		out = false;
		return RMA_SUCCESS;
	}
	return makeError(RMA_ERR_INFO_VALUE, "%s: info key %s must be \"true\" or \"false\", not \"%s\"", call, key,
			 value.c_str());
}

bool validOrdering(const std::string &value)
{
	if (value == "none")
		return true;
	size_t start = 0;
	while (start <= value.size()) {
		size_t end = value.find(',', start);
		if (end == std::string::npos)
			end = value.size();
		std::string item = value.substr(start, end - start);
		if (item != "rar" && item != "raw" && item != "war" && item != "waw")
			return false;
		start = end + 1;
	}
	return true;
}

/*
 * The job's policy for the window named @name (RMA_PLACEMENT_WINDOWS), or
 * nullopt. rma_init has refused a malformed value; one set later is an error
 * here rather than silently ignored.
 */
Result<std::optional<Placement>> jobWindowPlacement(const std::string &name)
{
	const char *v = knobValue("RMA_PLACEMENT_WINDOWS");
	if (!v)
		return std::optional<Placement>();
	auto list = parseWindowPlacements(v);
	if (!list)
		return Result<std::optional<Placement>>::failure(list.code());
	const Placement *p = findWindowPlacement(list.value(), name);
	return p ? std::optional<Placement>(*p) : std::optional<Placement>();
}

} /* namespace */

int WindowHints::parse(const char *call, const Info *info)
{
	if (!info)
		return RMA_SUCCESS;
	if (const std::string *v = info->get("no_locks"))
		RMA_TRY(parseBool(call, "no_locks", *v, noLocks));
	if (const std::string *v = info->get("same_size"))
		RMA_TRY(parseBool(call, "same_size", *v, sameSize));
	if (const std::string *v = info->get("same_disp_unit"))
		RMA_TRY(parseBool(call, "same_disp_unit", *v, sameDispUnit));
	if (const std::string *v = info->get("alloc_shared_noncontig"))
		RMA_TRY(parseBool(call, "alloc_shared_noncontig", *v, allocSharedNoncontig));
	if (const std::string *v = info->get("accumulate_ordering")) {
		if (!validOrdering(*v))
			return makeError(RMA_ERR_INFO_VALUE,
					 "%s: accumulate_ordering must be \"none\" or a comma-separated list of "
					 "rar, raw, war, waw, not \"%s\"",
					 call, v->c_str());
		accumulateOrdering = *v;
	}
	if (const std::string *v = info->get("accumulate_ops")) {
		if (*v != "same_op_no_op" && *v != "same_op")
			return makeError(RMA_ERR_INFO_VALUE,
					 "%s: accumulate_ops must be \"same_op_no_op\" or \"same_op\", not \"%s\"", call,
					 v->c_str());
		accumulateOps = *v;
	}
	if (const std::string *v = info->get("mpi_accumulate_granularity")) {
		long long g = -1;
		auto [p, ec] = std::from_chars(v->data(), v->data() + v->size(), g);
		if (ec != std::errc() || p != v->data() + v->size() || g < 0)
			return makeError(RMA_ERR_INFO_VALUE,
					 "%s: mpi_accumulate_granularity must be a non-negative integer, not \"%s\"",
					 call, v->c_str());
		accumulateGranularity = g;
	}
	if (const std::string *v = info->get("rma_accumulate_path")) {
		if (*v != "auto" && *v != "ring")
			return makeError(RMA_ERR_INFO_VALUE, "%s: rma_accumulate_path must be \"auto\" or \"ring\", not \"%s\"",
					 call, v->c_str());
		accumulateRing = *v == "ring";
	}
	if (const std::string *v = info->get("rma_huge_pages")) {
		auto h = parseHugePages(*v);
		if (!h)
			return h.code();
		hugePages = h.value();
	}
	const std::string *nameKey = info->get("rma_win_name");
	if (nameKey) {
		if (nameKey->empty() || nameKey->size() >= RMA_MAX_OBJECT_NAME)
			return makeError(RMA_ERR_INFO_VALUE,
					 "%s: info key rma_win_name must have 1 to %d characters, not %zu", call,
					 RMA_MAX_OBJECT_NAME - 1, nameKey->size());
		name = *nameKey;
	}
	if (const std::string *v = info->get("rma_placement")) {
		auto p = Placement::parse(*v);
		if (!p)
			return p.code();
		placement = p.value();
	} else if (nameKey) {
		auto p = jobWindowPlacement(name);
		if (!p)
			return p.code();
		if (p.value())
			placement = *p.value();
	}
	return RMA_SUCCESS;
}

WindowHints WindowHints::jobDefaults()
{
	WindowHints hints;
	if (const char *v = knobValue("RMA_PLACEMENT")) {
		if (auto p = Placement::parse(v))
			hints.placement = p.value();
	}
	if (const char *v = knobValue("RMA_HUGE_PAGES")) {
		if (auto h = parseHugePages(v))
			hints.hugePages = h.value();
	}
	return hints;
}

/* ---- Creation ------------------------------------------------------------- */

namespace {

/* What each member tells the others at creation. */
struct Record {
	int32_t status;    /* RMA_SUCCESS or the class of this member's failure */
	int32_t dispUnit;
	int64_t size;
	uint64_t remoteBase; /* the member's own address of its memory */
	uint64_t mapSize;    /* bytes to map of the memory fd, 0 if none passed */
	uint64_t offset;     /* of the window memory in that mapping */
	int32_t pid;
	int32_t reach;       /* Reach */
	int32_t hugePages;
	int32_t hasControl;  /* the control fd follows the memory fd */
	int32_t numaNode;
	int32_t accumulateRing; /* rma_accumulate_path=ring here */
	int32_t membarrier;     /* registered for membarrier(GLOBAL_EXPEDITED) */
	int32_t pad;
	/* The descriptors passed, by number in this member and memfd identity (agents open them: agent_service.h). */
	int32_t memoryFd;
	int32_t controlFd;
	uint64_t memoryDev, memoryIno;
	uint64_t controlDev, controlIno;
};

/* The st_dev and st_ino of @fd (0, 0 if it cannot be told). */
void fdIdentity(int fd, uint64_t &dev, uint64_t &ino)
{
	struct stat st;
	dev = ino = 0;
	if (fd >= 0 && fstat(fd, &st) == 0) {
		dev = static_cast<uint64_t>(st.st_dev);
		ino = static_cast<uint64_t>(st.st_ino);
	}
}

const char *flavorCall(Flavor flavor)
{
	switch (flavor) {
	case Flavor::Create: return "rma_win_create";
	case Flavor::Allocate: return "rma_win_allocate";
	case Flavor::Dynamic: return "rma_win_create_dynamic";
	case Flavor::Shared: return "rma_win_allocate_shared";
	}
	return "rma_win_create";
}

std::atomic<uint64_t> windowCounter{ 0 };

/*
 * Control segments of freed windows, kept by their maker for its next window
 * of the same shape. Reserving a fresh one (520 KiB for 2 ranks, most of it
 * accumulate rings) and freeing it again was the largest cost of a small
 * window's create+free (issue #12: fallocate() 240 us, the release 150 us).
 *
 * Reuse: a segment is taken only once every member of its old window has
 * stored RankSlot::detached (last thing in a clean rma_win_free, after its
 * progress thread let go of the rings); its words are then zeroed up to the
 * rings, which build() lays out again. Staging areas and reply areas are
 * written before they are read, so what they held does not matter. A member
 * that died or failed never detaches: its segment is only evicted.
 *
 * Not in agent mode (agents map control segments by identity and unmap them
 * lazily) and not for windows spanning hosts. The maker keeps each such
 * window's control descriptor open, to pass it again, within kMaxKeptFds
 * (beyond, windows are made and freed as before); the pool holds at most
 * kMaxEntries segments and kMaxBytes. Thread-safe (setup path).
 */
class ControlPool
{
public:
	static ControlPool &instance()
	{
		static ControlPool *pool = new ControlPool; /* never destroyed: windows may outlive statics */
		return *pool;
	}

	/* Whether a window may keep its control descriptor for the pool (then put() or releaseFd() once). */
	bool keepFd()
	{
		std::lock_guard<std::mutex> guard(lock_);
		if (keptFds_ >= kMaxKeptFds)
			return false;
		++keptFds_;
		return true;
	}

	void releaseFd()
	{
		std::lock_guard<std::mutex> guard(lock_);
		--keptFds_;
	}

	/* Keep @segment, a freed window's control segment for @nranks (its descriptor open). */
	void put(Segment segment, uint32_t nranks)
	{
		std::vector<Segment> evicted; /* unmapped outside the lock */
		{
			std::lock_guard<std::mutex> guard(lock_);
			--keptFds_;
			if (segment.mappedSize() > kMaxBytes || segment.fd() < 0)
				return;
			bytes_ += segment.mappedSize();
			entries_.insert(entries_.begin(), Entry{ std::move(segment), nranks });
			while (entries_.size() > kMaxEntries || bytes_ > kMaxBytes) {
				bytes_ -= entries_.back().segment.mappedSize();
				evicted.push_back(std::move(entries_.back().segment));
				entries_.pop_back();
			}
		}
	}

	/* A kept segment laid out as @layout for @nranks that every old member has let go of; else none. */
	Segment take(const ControlLayout &layout, uint32_t nranks)
	{
		std::lock_guard<std::mutex> guard(lock_);
		for (auto it = entries_.begin(); it != entries_.end(); ++it) {
			if (it->nranks != nranks || it->segment.size() != layout.size || !detached(*it, layout))
				continue;
			Segment segment = std::move(it->segment);
			bytes_ -= segment.mappedSize();
			entries_.erase(it);
			crossProcessEdge(); /* ThreadSanitizer: the acquires above, from other processes */
			return segment;
		}
		return Segment();
	}

	void clear()
	{
		std::vector<Entry> dropped;
		std::lock_guard<std::mutex> guard(lock_);
		dropped.swap(entries_);
		bytes_ = 0;
	}

private:
	static constexpr int kMaxKeptFds = 64;
	static constexpr std::size_t kMaxEntries = 4;
	static constexpr std::size_t kMaxBytes = 8u << 20;

	struct Entry {
		Segment segment;
		uint32_t nranks;
	};

	static bool detached(const Entry &entry, const ControlLayout &layout)
	{
		const auto *slots = reinterpret_cast<const RankSlot *>(entry.segment.data() + layout.slots);
		for (uint32_t r = 0; r < entry.nranks; ++r) {
			/*
			 * Acquire: pairs with the release store of detached in
			 * Window::detachControl() of rank r; every access of
			 * that rank to the segment happens before its reuse.
			 */
			if (slots[r].detached.load(std::memory_order_acquire) != 1)
				return false;
		}
		return true;
	}

	std::mutex lock_;
	std::vector<Entry> entries_; /* newest first */
	std::size_t bytes_ = 0;
	int keptFds_ = 0;
};

} /* namespace */

void releaseControlPool()
{
	ControlPool::instance().clear();
}

int Window::create(Flavor flavor, void *base, rma_aint size, int dispUnit, const Info *info,
		   std::shared_ptr<Comm> comm, std::unique_ptr<Window> &out)
{
	std::unique_ptr<Window> win(new Window());
	win->flavor_ = flavor;
	win->flavorAttr_ = static_cast<int>(flavor);
	win->comm_ = std::move(comm);
	win->deadCount_ = runtime().bootstrap->deadCountWord();
	win->name = "win#" + std::to_string(++windowCounter);
	win->errhandler = runtime().errhandlers.share(reinterpret_cast<uintptr_t>(RMA_ERRORS_ARE_FATAL));
	/*
	 * Validation errors do not return early: the member still takes part
	 * in the exchange with a failure status, so no peer is left waiting.
	 */
	const char *call = flavorCall(flavor);
	win->hints_ = WindowHints::jobDefaults();
	win->hints_.accumulateRing = accumulateRingByDefault();
	int status = win->hints_.parse(call, info);
	if (!win->hints_.name.empty())
		win->name = win->hints_.name;
	if (status == RMA_SUCCESS && size < 0)
		status = makeError(RMA_ERR_SIZE, "%s: size %lld is negative", call, static_cast<long long>(size));
	if (status == RMA_SUCCESS && static_cast<uint64_t>(win->comm_->size()) > lockword::kMaxRanks)
		status = makeError(RMA_ERR_COMM, "%s: windows span at most %llu ranks, not %d", call,
				   static_cast<unsigned long long>(lockword::kMaxRanks), win->comm_->size());
	if (status == RMA_SUCCESS && dispUnit <= 0)
		status = makeError(RMA_ERR_DISP, "%s: disp_unit %d must be positive", call, dispUnit);
	if (status == RMA_SUCCESS && flavor == Flavor::Create && size > 0 && base == nullptr)
		status = makeError(RMA_ERR_ARG, "%s: base is NULL but size is %lld", call,
				   static_cast<long long>(size));
	int rc = win->build(status, base, size, dispUnit);
	if (rc != RMA_SUCCESS)
		return rc;
	out = std::move(win);
	return RMA_SUCCESS;
}

int Window::build(int status, void *base, rma_aint size, int dispUnit)
{
	const char *call = flavorCall(flavor_);
	const int me = comm_->rank();
	const int n = comm_->size();
	const Topology &topology = Topology::system();
	const int myNode = currentNode(topology);
	const bool contiguous = flavor_ == Flavor::Shared && !hints_.allocSharedNoncontig;

	/*
	 * Members on other hosts (docs/design/inter-host.md §3.1): each host
	 * makes its own control segment (its lowest window rank does), memory
	 * descriptors go only to the members of their host, and the others
	 * reach a member through its host's server (win/remote.h).
	 */
	std::vector<uint32_t> hostOf(static_cast<std::size_t>(n));
	bool spans = false;
	for (int r = 0; r < n; ++r) {
		hostOf[r] = static_cast<uint32_t>(runtime().bootstrap->host(comm_->group()->worldRank(r)));
		spans = spans || hostOf[r] != hostOf[0];
	}
	std::shared_ptr<Comm> local; /* this host's members (spanning windows only) */
	int localMe = me;            /* rank in it */
	if (spans) {
		RMA_TRY(comm_->split(static_cast<int>(hostOf[me]), me, local));
		localMe = local->rank();
		if (status == RMA_SUCCESS) {
#ifndef RMA_HAVE_NET
			status = makeError(RMA_ERR_NOT_SUPPORTED,
					   "%s: the communicator spans hosts, and librma was built without the inter-host "
					   "transport (it needs liburing and libcrypto)",
					   call);
#else
			if (!net::engine())
				status = makeError(RMA_ERR_INTERN,
						   "%s: the communicator spans hosts, but this rank's inter-host engine did "
						   "not start at rma_init: %s",
						   call, net::netStartError().c_str());
#endif
		}
		if (status == RMA_SUCCESS && flavor_ == Flavor::Shared)
			status = makeError(RMA_ERR_RMA_SHARED,
					   "%s: the communicator spans hosts: memory cannot be shared among all of its "
					   "processes (split it with rma_comm_split_type(RMA_COMM_TYPE_SHARED) first)",
					   call);
	}

	MemPolicy policy;
	if (status == RMA_SUCCESS) {
		auto p = resolvePlacement(hints_.placement, topology, myNode);
		if (p)
			policy = p.value();
		else
			status = p.code();
	}

	/*
	 * The window's memory is reserved collectively: every member learns
	 * every size first, so a window whose total exceeds what the host can
	 * give fails on every rank with RMA_ERR_NO_MEM before any memory is
	 * touched (ranks checking alone all passed, then the OOM killer chose
	 * one). Contiguous shared memory is one segment made by rank 0, which
	 * also needs every member's policy.
	 */
	std::vector<int64_t> sizes;
	struct First {
		int32_t status;
		int32_t mode;
		int64_t size;
		int32_t node;
		int32_t pad;
		uint64_t available; /* what this host can give, as this rank sees it */
	};
	GatherResult firstOut;
	const First *firsts = nullptr;
	const bool allocates = flavor_ == Flavor::Allocate || flavor_ == Flavor::Shared;
	if (allocates) {
		/*
		 * What the host can give, read only for a large window (the files
		 * cost tens of microseconds): below kFirstCheckBytes a rank says
		 * "no limit", and the reservation's own check under the host lock
		 * (Segment::create) still refuses memory the host cannot give.
		 */
		First first{ errorClass(status), policy.mode, size, policy.nodes.empty() ? -1 : policy.nodes[0], 0,
			     size >= kFirstCheckBytes ? availableMemory() : UINT64_MAX };
		RMA_TRY(comm_->allgather(std::as_bytes(std::span(&first, 1)), {}, firstOut));
		firsts = reinterpret_cast<const First *>(firstOut.data.data());
		/* Every rank computes the same verdict from the same gathered numbers. */
		uint64_t total = 0, available = UINT64_MAX;
		const uint64_t page = static_cast<uint64_t>(sysconf(_SC_PAGESIZE));
		for (int r = 0; r < n; ++r) {
			if (hostOf[r] != hostOf[me])
				continue; /* memory of another host */
			total += (static_cast<uint64_t>(std::max<int64_t>(firsts[r].size, 0)) + page - 1) / page * page;
			available = std::min(available, firsts[r].available);
		}
		/* The huge-page pool is read (two sysfs files) only when plain memory would not do. */
		if (status == RMA_SUCCESS && total > available &&
		    !(hints_.hugePages != HugePages::Off && freeHugePages() * kHugePageSize >= total))
			status = makeError(RMA_ERR_NO_MEM,
					   "%s: the window needs %llu bytes on this host in all (%lld on this rank, %d "
					   "ranks), more than the %llu bytes the host can give (MemAvailable and cgroup "
					   "limits); nothing was reserved",
					   call, static_cast<unsigned long long>(total), static_cast<long long>(size), n,
					   static_cast<unsigned long long>(available));
	}
	if (contiguous) {
		SegmentOptions options;
		options.hugePages = hints_.hugePages;
		options.name = "rma-win-shared";
		for (int r = 0; r < n; ++r) {
			if (firsts[r].status != RMA_SUCCESS && status == RMA_SUCCESS)
				status = makeError(firsts[r].status, "%s: rank %d of the communicator failed (%s)", call, r,
						   className(firsts[r].status));
			sizes.push_back(firsts[r].size);
			if (me == 0 && firsts[r].size > 0) {
				MemPolicy rp;
				rp.mode = firsts[r].mode;
				if (firsts[r].node >= 0)
					rp.nodes.push_back(firsts[r].node);
				options.ranges.push_back({ options.size, static_cast<size_t>(firsts[r].size), rp });
			}
			options.size += static_cast<size_t>(std::max<int64_t>(firsts[r].size, 0));
		}
		if (me == 0 && status == RMA_SUCCESS) {
			auto seg = Segment::create(options);
			if (seg)
				own_ = std::move(seg.value());
			else
				status = seg.code();
		}
	}

	/* This member's memory. */
	Record mine{};
	mine.dispUnit = dispUnit;
	mine.size = size;
	mine.pid = getpid();
	mine.numaNode = -1;
	mine.accumulateRing = hints_.accumulateRing;
	mine.membarrier = membarrierReady();
	mine.memoryFd = mine.controlFd = -1;
	std::vector<int> fds;
	const bool makesMemory = (flavor_ == Flavor::Allocate || flavor_ == Flavor::Shared) && !contiguous && size > 0;
	HostReservation reservation((localMe == 0 ? 1 : 0) + (makesMemory ? 1 : 0));
	/*
	 * The control segment, made by rank 0 (of each host), before this
	 * rank's memory: both are checked and reserved under one hold of the
	 * host's reservation lock, which the memory's fallocate() releases, so
	 * populating that memory does not hold up the host's other creations.
	 */
	if (localMe == 0 && status == RMA_SUCCESS) {
		const ControlLayout layout(static_cast<uint32_t>(n), flavor_ == Flavor::Dynamic);
		const bool poolable = progressConfig().mode != ProgressConfig::Mode::Agent && !spans;
		Segment reused = poolable ? ControlPool::instance().take(layout, static_cast<uint32_t>(n)) : Segment();
		if (reused.data()) {
			control_ = std::move(reused);
			/* A fresh segment's words are zero: so are a reused one's, up to the rings laid out below. */
			std::memset(control_.data(), 0, layout.accRings);
		} else {
			SegmentOptions options;
			options.size = layout.size;
			options.hugePages = HugePages::Off;
			options.name = "rma-win-control";
			/*
			 * Page tables for the words every synchronization touches;
			 * the accumulate rings and reply areas (most of the segment:
			 * 520 KiB for 2 ranks) are reserved but mapped on first use,
			 * which most windows never make. Populating them was a third
			 * of a small window's creation.
			 */
			options.eagerBytes = layout.accRings;
			options.reservation = &reservation;
			auto seg = Segment::create(options);
			if (seg)
				control_ = std::move(seg.value());
			else
				status = seg.code();
		}
		if (status == RMA_SUCCESS) {
			ControlHeader *h = controlHeader(control_.data());
			h->magic = kControlMagic;
			h->version = kControlVersion;
			h->nranks = static_cast<uint32_t>(n);
			h->flavor = static_cast<uint32_t>(flavor_);
			for (int r = 0; r < n && status == RMA_SUCCESS; ++r) {
				auto ring = MpscRing::init(control_.data() + layout.accRings + r * layout.accRingBytes,
							   layout.accRingBytes, accRingConfig(static_cast<uint32_t>(n)));
				if (!ring)
					status = ring.code();
			}
			mine.hasControl = 1;
			mine.controlFd = control_.fd();
		}
	}

	/* This member's memory (the control fd, if any, is passed after it). */
	if (status == RMA_SUCCESS) {
		switch (flavor_) {
		case Flavor::Allocate:
		case Flavor::Shared:
			if (!contiguous && size > 0) {
				SegmentOptions options;
				options.size = static_cast<size_t>(size);
				options.hugePages = hints_.hugePages;
				options.policy = policy;
				options.name = flavor_ == Flavor::Shared ? "rma-win-shared" : "rma-win";
				options.reservation = &reservation;
				auto seg = Segment::create(options);
				if (seg)
					own_ = std::move(seg.value());
				else
					status = seg.code();
			}
			if (status == RMA_SUCCESS && own_.size() > 0) {
				mine.reach = static_cast<int32_t>(Reach::Direct);
				mine.mapSize = own_.mappedSize();
				mine.hugePages = own_.hugePages();
				fds.push_back(own_.fd());
				mine.memoryFd = own_.fd();
				local_ = { own_.pageSize(), own_.numaNode(), "segment" };
			}
			if (contiguous && size > 0)
				local_.kind = "segment";
			if (contiguous && size > 0)
				local_.numaNode = policy.reportedNode();
			break;
		case Flavor::Create:
			if (size > 0) {
				auto hit = SegmentRegistry::instance().find(base, static_cast<size_t>(size));
				if (hit) {
					mine.reach = static_cast<int32_t>(Reach::Direct);
					mine.mapSize = hit->segment->mappedSize();
					mine.offset = hit->offset;
					mine.hugePages = hit->segment->hugePages();
					fds.push_back(hit->segment->fd());
					mine.memoryFd = hit->segment->fd();
					local_ = { hit->segment->pageSize(), hit->segment->numaNode(), "alloc_mem" };
				} else {
					mine.reach = static_cast<int32_t>(Reach::Process);
					local_ = { static_cast<size_t>(sysconf(_SC_PAGESIZE)), -1, "process" };
				}
				mine.remoteBase = reinterpret_cast<uint64_t>(base);
			}
			break;
		case Flavor::Dynamic:
			mine.reach = static_cast<int32_t>(Reach::Dynamic);
			break;
		}
		mine.numaNode = local_.numaNode;
	}

	/* Never held into the exchange: a peer of this host may be waiting for it to make its memory. */
	reservation.release();
	if (mine.hasControl)
		fds.push_back(control_.fd());
	fdIdentity(mine.memoryFd, mine.memoryDev, mine.memoryIno);
	fdIdentity(mine.controlFd, mine.controlDev, mine.controlIno);
	mine.status = status == RMA_SUCCESS ? RMA_SUCCESS : errorClass(status);
	GatherResult out;
	/* Spanning: every record to everyone, the descriptors to the members of this host only. */
	GatherResult localOut;
	RMA_TRY(comm_->allgather(std::as_bytes(std::span(&mine, 1)), spans ? std::span<const int>() : fds, out));
	if (spans)
		RMA_TRY(local->allgather(std::as_bytes(std::span(&mine, 1)), fds, localOut));
	if (status != RMA_SUCCESS)
		return status;
	const Record *all = reinterpret_cast<const Record *>(out.data.data());
	for (int r = 0; r < n; ++r)
		if (all[r].status != RMA_SUCCESS)
			return makeError(all[r].status, "%s: rank %d of the communicator failed (%s); no window was made",
					 call, r, className(all[r].status));

	/* Map what the others passed: firstFd[r] indexes the descriptors of window rank r (this host's only). */
	GatherResult &fdOut = spans ? localOut : out;
	std::vector<int> firstFd(n, 0);
	int controlRank = 0; /* the window rank that made this host's control segment */
	if (spans) {
		std::vector<int> localFirst(static_cast<std::size_t>(local->size()) + 1, 0);
		for (int l = 0; l < local->size(); ++l)
			localFirst[l + 1] = localFirst[l] + localOut.fdCounts[l];
		/* Local ranks are in window rank order (split by key = window rank). */
		int l = 0;
		for (int r = 0; r < n; ++r)
			if (hostOf[r] == hostOf[me]) {
				if (l == 0)
					controlRank = r;
				firstFd[r] = localFirst[l++];
			}
	} else {
		for (int r = 0; r + 1 < n; ++r)
			firstFd[r + 1] = firstFd[r] + out.fdCounts[r];
	}
	targets_.resize(n);
	nTargets_ = static_cast<uint32_t>(n);
	if (!trafficStatsPath().empty()) [[unlikely]]
		startTraffic(out.instance);
	for (int r = 0; r < n; ++r) {
		const Record &rec = all[r];
		TargetView &t = targets_[r];
		t.size = rec.size;
		t.dispUnit = rec.dispUnit;
		t.pid = rec.pid;
		t.node = static_cast<int16_t>(rec.numaNode);
		t.remoteBase = rec.remoteBase;
		t.reach = rec.size > 0 || rec.reach == static_cast<int32_t>(Reach::Dynamic) ? static_cast<Reach>(rec.reach)
											       : Reach::None;
		if (spans && hostOf[r] != hostOf[me]) {
			/* Even a member without memory: its lock word lives on its host. */
			t.reach = Reach::Remote;
			continue;
		}
		if (contiguous)
			continue;
		if (t.reach == Reach::Direct) {
			if (r == me) {
				t.base = flavor_ == Flavor::Create ? static_cast<std::byte *>(base) : own_.data();
				continue;
			}
			auto seg = Segment::attach(std::move(fdOut.fds[firstFd[r]]), rec.mapSize, rec.hugePages);
			if (!seg)
				return seg.code();
			seg->closeFd();
			t.base = seg->data() + rec.offset;
			mapped_.push_back(std::move(seg.value()));
		} else if (t.reach == Reach::Process && r == me) {
			/* Our own plain memory: reach it directly. */
			t.reach = Reach::Direct;
			t.base = static_cast<std::byte *>(base);
		}
	}
	if (contiguous) {
		std::byte *segBase;
		if (me == 0) {
			segBase = own_.data();
		} else if (all[0].mapSize > 0) {
			auto seg = Segment::attach(std::move(out.fds[0]), all[0].mapSize, all[0].hugePages);
			if (!seg)
				return seg.code();
			seg->closeFd();
			segBase = seg->data();
			local_.pageSize = seg->pageSize();
			mapped_.push_back(std::move(seg.value()));
		} else {
			segBase = nullptr; /* every size is 0 */
		}
		if (me == 0)
			local_.pageSize = own_.pageSize();
		size_t offset = 0;
		for (int r = 0; r < n; ++r) {
			TargetView &t = targets_[r];
			if (t.size > 0) {
				t.reach = Reach::Direct;
				t.base = segBase + offset;
			}
			offset += static_cast<size_t>(sizes[r] > 0 ? sizes[r] : 0);
		}
		if (size > 0)
			local_.numaNode = policy.reportedNode();
	}

	/* The control segment. */
	if (localMe != 0) {
		/* Its maker passed its memory fd (if any) first, then the control fd. */
		int fdIndex = firstFd[controlRank] + (all[controlRank].mapSize > 0 ? 1 : 0);
		const ControlLayout layout(static_cast<uint32_t>(n), flavor_ == Flavor::Dynamic);
		/* Eagerly mapped as far as its maker did (see above). */
		auto seg = Segment::attach(std::move(fdOut.fds[fdIndex]), layout.size, false, layout.accRings);
		if (!seg)
			return seg.code();
		control_ = std::move(seg.value());
		const ControlHeader *h = controlHeader(control_.data());
		if (h->magic != kControlMagic || h->version != kControlVersion || h->nranks != static_cast<uint32_t>(n))
			return makeError(RMA_ERR_INTERN, "%s: control segment from rank %d is not a version %u control block",
					 call, controlRank, kControlVersion);
	}
	/*
	 * Agent mode: the host's agents open our descriptors (win/agent_service.h),
	 * so the control segment's maker and each memory's maker keep theirs
	 * for the window's life (rma_alloc_mem memory keeps its own anyway).
	 */
	const bool agents = progressConfig().mode == ProgressConfig::Mode::Agent;
	if (agents && targets_[me].reach == Reach::Direct && targets_[me].size > 0 && flavor_ != Flavor::Dynamic) {
		const Record &c = all[controlRank];
		const Record &m = contiguous ? all[0] : all[me];
		ringHome_.controlPid = c.pid;
		ringHome_.controlFd = c.controlFd;
		ringHome_.controlDev = c.controlDev;
		ringHome_.controlIno = c.controlIno;
		ringHome_.memoryPid = m.pid;
		ringHome_.memoryFd = m.memoryFd;
		ringHome_.memoryDev = m.memoryDev;
		ringHome_.memoryIno = m.memoryIno;
		ringHome_.memoryBytes = m.mapSize;
		ringHome_.memoryHuge = m.hugePages != 0 ? 1 : 0;
		ringHome_.memoryOffset = m.offset;
		if (contiguous)
			for (int r = 0; r < me; ++r)
				ringHome_.memoryOffset += static_cast<uint64_t>(std::max<int64_t>(sizes[r], 0));
	}
	/* The maker keeps its descriptor to pass the segment again when another window reuses it. */
	poolControl_ = !agents && !spans && localMe == 0 && control_.fd() >= 0 && ControlPool::instance().keepFd();
	if ((!agents || localMe != 0) && !poolControl_)
		control_.closeFd(); /* agents open the maker's only */
	if (!agents)
		own_.closeFd();
	const ControlLayout layout(static_cast<uint32_t>(n), flavor_ == Flavor::Dynamic);
	globalLocks_ = reinterpret_cast<GlobalLocks *>(control_.data() + layout.globals);
	slots_ = reinterpret_cast<RankSlot *>(control_.data() + layout.slots);
	mySlot_ = &slots_[rank()];
	myHolder_ = static_cast<uint64_t>(rank() + 1) << lockword::kHolderShift;
	/* Relaxed: read by agents for liveness only, re-read each time they ask (0: not known yet). */
	slots_[me].pid.store(static_cast<int32_t>(getpid()), std::memory_order_relaxed);
	pscwPosted_ = reinterpret_cast<uint32_t *>(control_.data() + layout.posted);
	pscwCompleted_ = reinterpret_cast<uint32_t *>(control_.data() + layout.completed);
	pscwRow_ = pscwRowBytes(static_cast<uint32_t>(n)) / sizeof(uint32_t);
	if (flavor_ == Flavor::Dynamic)
		attach_ = reinterpret_cast<AttachTable *>(control_.data() + layout.attach);
	/* One member asking for ring-only accumulates makes the window ring-only (a collective choice). */
	bool plainCapable = true;
	for (int r = 0; r < n; ++r) {
		hints_.accumulateRing = hints_.accumulateRing || all[r].accumulateRing;
		plainCapable = plainCapable && all[r].membarrier;
	}
	std::vector<uint8_t> locked(n);
	for (int r = 0; r < n; ++r)
		locked[r] = flavor_ == Flavor::Dynamic || all[r].reach == static_cast<int32_t>(Reach::Process);
	RMA_TRY(setUpAccumulates(call, control_.data(), locked, plainCapable));
	access_.assign(n, 0);
	locks_.assign(n, 0);
	postsConsumed_.assign(n, 0);
	completesExpected_.assign(n, 0);
	completesSent_.assign(n, 0);

	localBase_ = targets_[me].reach == Reach::Direct ? targets_[me].base : nullptr;
	if (flavor_ == Flavor::Create)
		localBase_ = base;
	localSize_ = size;
	localDispUnit_ = dispUnit;
	if (flavor_ == Flavor::Dynamic) {
		localBase_ = nullptr; /* MPI_BOTTOM */
		localSize_ = 0;
	}
#ifdef RMA_HAVE_NET
	if (spans) {
		/* Each host's server: its lowest window rank (it maps every member of its host). */
		std::vector<int> serverOf(static_cast<std::size_t>(n), -1);
		std::vector<int> first;
		for (int r = 0; r < n; ++r) {
			if (hostOf[r] >= first.size())
				first.resize(hostOf[r] + 1, -1);
			if (first[hostOf[r]] < 0)
				first[hostOf[r]] = comm_->group()->worldRank(r);
			serverOf[r] = first[hostOf[r]];
		}
		auto rw = RemoteWindow::create(*this, out.instance, hostOf, std::move(serverOf));
		if (!rw)
			return rw.code();
		remote_ = std::move(rw.value());
		/* No origin sends before every server knows the window. */
		RMA_TRY(comm_->barrier());
	}
#endif
	return startServing();
}


Window::~Window()
{
	/* First: no frame of another host is applied once the memory below goes. */
	remote_.reset();
	stopServing();
	if (poolControl_)
		ControlPool::instance().releaseFd();
}

void Window::detachControl()
{
	if (!slots_)
		return;
	/*
	 * Release: pairs with the acquire in ControlPool::detached() of the
	 * segment's maker. Last in a clean free: the progress thread let go of
	 * the rings in abandon(), and nothing here touches the segment again.
	 */
	slots_[rank()].detached.store(1, std::memory_order_release);
	if (poolControl_) {
		poolControl_ = false;
		ControlPool::instance().put(std::move(control_), static_cast<uint32_t>(size()));
	}
}

void Window::abandon()
{
	if (stats_) [[unlikely]]
		writeTraffic();
	remote_.reset();
	stopServing();
	targets_.clear();
	nTargets_ = 0;
	mapped_.clear();
	dynamicMaps_.clear();
}

int Window::free()
{
	/*
	 * A member died: nothing collective can complete. Release this
	 * process's part (open epochs included), so the survivors can go on
	 * and create windows among themselves, and report the failure.
	 */
	if (memberDead()) [[unlikely]] {
		int rc = deadAmong("rma_win_free", nullptr);
		abandon();
		released_ = true;
		return rc == RMA_SUCCESS ? makeError(RMA_ERR_PROC_FAILED, "rma_win_free: a rank of window '%s' has died",
						     name.c_str())
					 : rc;
	}
	if (passiveOrPscwOpen())
		return makeError(RMA_ERR_RMA_SYNC, "rma_win_free: window '%s' still has %s open; close it first",
				 name.c_str(), describeEpochs().c_str());
	if (pendingOps_)
		return makeError(RMA_ERR_RMA_SYNC,
				 "rma_win_free: window '%s' has RMA operations that no synchronization has completed "
				 "(call rma_win_fence first)",
				 name.c_str());
	RMA_TRY(barrier("rma_win_free"));
	if (stats_) [[unlikely]]
		RMA_TRY(gatherTraffic());
	abandon();
	detachControl();
	return RMA_SUCCESS;
}

/* ---- Queries -------------------------------------------------------------- */

int Window::sharedQuery(int rank, rma_aint *size, int *dispUnit, void *baseptr) const
{
	if (flavor_ == Flavor::Dynamic)
		return makeError(RMA_ERR_RMA_FLAVOR, "rma_win_shared_query: window '%s' is dynamic: it has no memory to query",
				 name.c_str());
	int n = static_cast<int>(targets_.size());
	if (rank == RMA_PROC_NULL) {
		rank = -1;
		for (int r = 0; r < n && rank < 0; ++r)
			if (targets_[r].size > 0 && targets_[r].reach == Reach::Direct)
				rank = r;
		if (rank < 0) {
			*size = 0;
			*dispUnit = targets_.empty() ? 1 : targets_[0].dispUnit;
			*static_cast<void **>(baseptr) = nullptr;
			return RMA_SUCCESS;
		}
	}
	if (rank < 0 || rank >= n)
		return makeError(RMA_ERR_RANK, "rma_win_shared_query: rank %d is not in window '%s' (size %d)", rank,
				 name.c_str(), n);
	const TargetView &t = targets_[rank];
	/*
	 * MPI-4.1 allows the query on every flavor: memory this process cannot
	 * load and store (another process's private memory, reached through
	 * cross-memory attach) is reported as size 0 and NULL.
	 */
	if (t.reach != Reach::Direct) {
		*size = 0;
		*dispUnit = t.dispUnit;
		*static_cast<void **>(baseptr) = nullptr;
		return RMA_SUCCESS;
	}
	*size = t.size;
	*dispUnit = t.dispUnit;
	*static_cast<void **>(baseptr) = t.size > 0 ? t.base : nullptr;
	return RMA_SUCCESS;
}

void Window::reportInfo(Info &out) const
{
	auto b = [](bool v) { return v ? "true" : "false"; };
	out.set("no_locks", b(hints_.noLocks));
	out.set("accumulate_ordering", hints_.accumulateOrdering);
	out.set("accumulate_ops", hints_.accumulateOps);
	out.set("mpi_accumulate_granularity", std::to_string(hints_.accumulateGranularity));
	out.set("rma_accumulate_path", hints_.accumulateRing ? "ring" : "auto");
	out.set("rma_progress", progressModeName(progressConfig().mode));
	/* Who drains this rank's ring: its own thread, a node's agent (world rank), or only waiting origins. */
	{
		std::string server = "origins";
		if (progressConfig().mode == ProgressConfig::Mode::Thread && !served_.empty())
			server = "thread";
		else if (servedEntry_ >= 0)
			server = "agent:" + std::to_string(agentWorldRank(targets_[rank()].node));
		out.set("rma_progress_server", server);
	}
	out.set("same_size", b(hints_.sameSize));
	out.set("same_disp_unit", b(hints_.sameDispUnit));
	out.set("alloc_shared_noncontig", b(hints_.allocSharedNoncontig));
	out.set("rma_huge_pages", hints_.hugePages == HugePages::Off	   ? "off"
				  : hints_.hugePages == HugePages::Require ? "require"
									   : "prefer");
	out.set("rma_placement", hints_.placement.str());
	out.set("rma_page_size", std::to_string(local_.pageSize));
	out.set("rma_numa_node", std::to_string(local_.numaNode));
	out.set("rma_memory", local_.kind);
}

int Window::setInfo(const Info *info)
{
	/*
	 * Memory hints (pages, placement, sharing) describe memory that
	 * exists already: MPI lets them be ignored after creation.
	 */
	WindowHints next = hints_;
	RMA_TRY(next.parse("rma_win_set_info", info));
	next.hugePages = hints_.hugePages;
	next.placement = hints_.placement;
	/* A window is renamed by rma_win_set_name; the key only names it at creation. */
	next.name = hints_.name;
	next.allocSharedNoncontig = hints_.allocSharedNoncontig;
	/* How accumulates are applied was agreed by every member at creation. */
	next.accumulateRing = hints_.accumulateRing;
	hints_ = next;
	orderingNone_ = hints_.accumulateOrdering == "none";
	return RMA_SUCCESS;
}

/* ---- Dynamic windows ------------------------------------------------------ */

namespace {

template<typename T>
void storeRelaxed(T &field, T value)
{
	std::atomic_ref<T>(field).store(value, std::memory_order_relaxed);
}

} /* namespace */

/*
 * Sequence-lock writer: make `sequence` odd, write @entries (sorted by
 * base, coverEnd filled in) from index @from on and the count, make it even
 * again. Readers are in resolveDynamic().
 */
void Window::publishAttachTable(AttachTable &table, const std::vector<AttachEntry> &entries, uint32_t from)
{
	uint64_t seq = table.sequence.load(std::memory_order_relaxed);
	table.sequence.store(seq + 1, std::memory_order_relaxed);
	/* Release fence: the odd sequence is ordered before the entry stores (pairs with the readers' acquire fence). */
	std::atomic_thread_fence(std::memory_order_release);
	for (uint32_t i = from; i < entries.size(); ++i) {
		const AttachEntry &e = entries[i];
		AttachEntry &slot = table.entries[i];
		storeRelaxed(slot.base, e.base);
		storeRelaxed(slot.size, e.size);
		storeRelaxed(slot.coverEnd, e.coverEnd);
		storeRelaxed(slot.segmentInode, e.segmentInode);
		storeRelaxed(slot.segmentOffset, e.segmentOffset);
		storeRelaxed(slot.segmentSize, e.segmentSize);
		storeRelaxed(slot.segmentFd, e.segmentFd);
		storeRelaxed(slot.hugePages, e.hugePages);
	}
	storeRelaxed(table.count, static_cast<uint32_t>(entries.size()));
	/* Release: pairs with the acquire load of `sequence` in readers; publishes the entries. */
	table.sequence.store(seq + 2, std::memory_order_release);
}

namespace {

/* Recompute coverEnd from @from on. */
void fillCoverEnds(std::vector<AttachEntry> &entries, uint32_t from)
{
	uint64_t cover = from == 0 ? 0 : entries[from - 1].coverEnd;
	for (uint32_t i = from; i < entries.size(); ++i) {
		cover = std::max(cover, entries[i].base + entries[i].size);
		entries[i].coverEnd = cover;
	}
}

} /* namespace */

int Window::attach(void *base, rma_aint size)
{
	if (flavor_ != Flavor::Dynamic)
		return makeError(RMA_ERR_RMA_FLAVOR, "rma_win_attach: window '%s' is not dynamic", name.c_str());
	if (size < 0)
		return makeError(RMA_ERR_SIZE, "rma_win_attach: size %lld is negative", static_cast<long long>(size));
	if (size > 0 && base == nullptr)
		return makeError(RMA_ERR_RMA_ATTACH, "rma_win_attach: base is NULL");
	if (size == 0)
		return RMA_SUCCESS;
	uint64_t lo = reinterpret_cast<uint64_t>(base);
	if (lo + static_cast<uint64_t>(size) < lo)
		return makeError(RMA_ERR_RMA_ATTACH, "rma_win_attach: [%p, +%lld) wraps around the address space", base,
				 static_cast<long long>(size));
	if (attached_.size() == kMaxAttach)
		return makeError(RMA_ERR_RMA_ATTACH, "rma_win_attach: window '%s' already has %u regions attached (the limit)",
				 name.c_str(), kMaxAttach);

	AttachEntry e{};
	e.base = lo;
	e.size = static_cast<uint64_t>(size);
	if (auto hit = SegmentRegistry::instance().find(base, static_cast<size_t>(size))) {
		struct stat st;
		if (fstat(hit->segment->fd(), &st) == 0) {
			e.segmentInode = st.st_ino;
			e.segmentFd = hit->segment->fd();
			e.segmentOffset = hit->offset;
			e.segmentSize = hit->segment->mappedSize();
			e.hugePages = hit->segment->hugePages();
		}
	}
	/* Sorted by base; regions may be adjacent to or overlap those already there (MPI allows both). */
	auto at = std::upper_bound(attached_.begin(), attached_.end(), lo,
				   [](uint64_t b, const AttachEntry &x) { return b < x.base; });
	auto index = static_cast<uint32_t>(at - attached_.begin());
	attached_.insert(at, e);
	fillCoverEnds(attached_, index);
	publishAttachTable(attach_[comm_->rank()], attached_, index);
	return RMA_SUCCESS;
}

int Window::detach(const void *base)
{
	if (flavor_ != Flavor::Dynamic)
		return makeError(RMA_ERR_RMA_FLAVOR, "rma_win_detach: window '%s' is not dynamic", name.c_str());
	uint64_t addr = reinterpret_cast<uint64_t>(base);
	/* A region attached more than once goes one attachment at a time: the last one made. */
	auto it = std::upper_bound(attached_.begin(), attached_.end(), addr,
				   [](uint64_t b, const AttachEntry &x) { return b < x.base; });
	if (it == attached_.begin() || std::prev(it)->base != addr)
		return makeError(RMA_ERR_RMA_ATTACH, "rma_win_detach: no region of window '%s' starts at %p", name.c_str(),
				 base);
	auto index = static_cast<uint32_t>(std::prev(it) - attached_.begin());
	attached_.erase(std::prev(it));
	fillCoverEnds(attached_, index);
	AttachTable &table = attach_[comm_->rank()];
	publishAttachTable(table, attached_, index);
	/*
	 * Another host's operation that found the region before it went may
	 * still be copying: the memory is the caller's again only after it.
	 * A server applies in microseconds, but a slow one (stopped, starved)
	 * may still write: wait as long as it lives. Only its death ends the
	 * wait early (a dead process writes nothing); its counter then stays
	 * raised, so every later detach of this rank reports it too.
	 */
	auto next = std::chrono::steady_clock::now() + std::chrono::milliseconds(100);
	for (SpinWait wait; !finishRemoteAccesses(table); wait.once()) {
		if (std::chrono::steady_clock::now() < next)
			continue;
		next += std::chrono::milliseconds(100);
		/* The window's lowest rank on this host serves the other hosts (RemoteWindow::create). */
		int server = rank();
		for (int r = 0; r < rank(); ++r)
			if (targets_[r].reach != Reach::Remote) {
				server = r;
				break;
			}
		if (server != rank() && kill(targets_[server].pid, 0) != 0 && errno == ESRCH)
			return makeError(RMA_ERR_PROC_FAILED,
					 "rma_win_detach: region %p of window '%s' is detached, but rank %d, which applied "
					 "another host's operation to it, died during the copy",
					 base, name.c_str(), server);
	}
	return RMA_SUCCESS;
}

} /* namespace librma */
