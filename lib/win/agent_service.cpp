/* SPDX-License-Identifier: MIT */
#include "win/agent_service.h"

#include <fcntl.h>
#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <string>
#include <memory>
#include <mutex>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "common/knobs.h"
#include "common/unique_fd.h"
#include "core/core.h"
#include "error/error.h"
#include "progress/directory.h"
#include "shm/segment.h"
#include "win/acc_area.h"
#include "win/control.h"

namespace librma {

namespace {

/* One window's control segment as this agent maps it, and the rings it serves there. */
struct ServedWindow {
	uint64_t controlDev = 0, controlIno = 0;
	uint32_t nranks = 0;
	Segment control;
	RankSlot *slots = nullptr;
	std::vector<MpscRing> rings; /* per window rank */
	AccArea acc;
	struct Memory {
		uint64_t dev, ino;
		Segment segment;
	};
	std::vector<Memory> memory; /* segments mapped, shared by targets in one segment */
	struct Target {
		int rank;
		uint64_t state; /* the directory publication it came from */
		std::byte *base;
	};
	std::vector<Target> targets;
};

/* Whether window rank @producer of @w is alive (the ring's dead-slot recovery asks). */
bool producerAlive(void *context, uint32_t producer)
{
	const auto *w = static_cast<const ServedWindow *>(context);
	if (producer >= w->nranks)
		return false;
	/* Relaxed: written once at the member's window creation; 0 until then (assume alive, ask again later). */
	const pid_t pid = w->slots[producer].pid.load(std::memory_order_relaxed);
	return pid == 0 || kill(pid, 0) == 0 || errno != ESRCH;
}

/* Open descriptor @fd of process @pid if it is still the memfd (@dev, @ino). */
UniqueFd openPeerFd(int32_t pid, int32_t fd, uint64_t dev, uint64_t ino)
{
	if (pid <= 0 || fd < 0 || ino == 0)
		return UniqueFd();
	char path[64];
	std::snprintf(path, sizeof(path), "/proc/%d/fd/%d", static_cast<int>(pid), static_cast<int>(fd));
	UniqueFd opened(open(path, O_RDWR | O_CLOEXEC));
	if (opened.get() < 0)
		return UniqueFd();
	struct stat st;
	if (fstat(opened.get(), &st) != 0 || static_cast<uint64_t>(st.st_dev) != dev ||
	    static_cast<uint64_t>(st.st_ino) != ino)
		return UniqueFd(); /* the number now names something else */
	return opened;
}

/*
 * The test hook (armAgentStallForTesting): the flag to raise, then the exit
 * status. Relaxed status, release/acquire flag: see armAgentStallForTesting().
 */
std::atomic<std::atomic<int64_t> *> gStallFlag{ nullptr };
std::atomic<int> gStallStatus{ 0 };

class AgentService
{
public:
	explicit AgentService(ServedDirectory dir) : dir_(dir), holder_(agentHolder(static_cast<int32_t>(getpid()))) {}

	int poll() noexcept
	{
		int work = 0;
		/* Acquire: pairs with the release in publish()/withdraw(); entries changed before it are seen. */
		const uint64_t changes = dir_.changes();
		if (changes != seen_) {
			rescan();
			seen_ = changes;
			work = 1;
		}
		/* Acquire: pairs with the release in armAgentStallForTesting(); the status is set. */
		if (std::atomic<int64_t> *stalled = gStallFlag.load(std::memory_order_acquire)) [[unlikely]]
			return work + stallForTesting(*stalled);
		for (auto &w : windows_)
			for (const ServedWindow::Target &t : w->targets)
				work += w->acc.drain(t.rank, holder_, t.base);
		return work;
	}

	bool pending() noexcept
	{
		if (dir_.changes() != seen_)
			return true;
		for (auto &w : windows_)
			for (const ServedWindow::Target &t : w->targets)
				if (w->rings[static_cast<std::size_t>(t.rank)].pending())
					return true;
		return false;
	}

	AgentServiceStats stats() const
	{
		AgentServiceStats s;
		/* Relaxed: statistics. */
		s.windows = windowsCount_.load(std::memory_order_relaxed);
		s.rings = ringsCount_.load(std::memory_order_relaxed);
		s.skipped = skippedCount_.load(std::memory_order_relaxed);
		s.rescans = rescans_.load(std::memory_order_relaxed);
		return s;
	}

private:
	/*
	 * The test hook: take the first ring with records as drain() would,
	 * apply one record, raise @stalled and end the process holding the
	 * role. Returns 0 (nothing pending yet: nothing drained either).
	 */
	[[gnu::cold]] int stallForTesting(std::atomic<int64_t> &stalled) noexcept
	{
		for (auto &w : windows_) {
			for (const ServedWindow::Target &t : w->targets) {
				if (!w->rings[static_cast<std::size_t>(t.rank)].pending())
					continue;
				uint64_t idle = 0;
				/* Acquire: as in AccArea::drain(). */
				if (!w->acc.lines[t.rank].consumer.compare_exchange_strong(
					    idle, holder_, std::memory_order_acquire, std::memory_order_relaxed))
					continue;
				w->rings[static_cast<std::size_t>(t.rank)].read(
					[&w, &t](const MpscRecord &r) { w->acc.applyRecord(t.rank, r, t.base); }, 1);
				/* Release: the test's ranks read the applied record after they see the flag (acquire). */
				stalled.store(1, std::memory_order_release);
				/* Relaxed: ordered by the acquire of the flag in poll(). */
				_exit(gStallStatus.load(std::memory_order_relaxed));
			}
		}
		return 0;
	}

	/* Bring the served set in line with the directory (control path; see the header). */
	void rescan()
	{
		std::unordered_set<uint64_t> live;
		for (uint32_t i = 0; i < ServedDirectory::kEntries; ++i) {
			const uint64_t state = dir_.state(static_cast<int>(i));
			if (state == 0 || (state & 1))
				continue;
			live.insert(state);
			if (known_.count(state) || skipped_.count(state))
				continue;
			ServedTarget t;
			uint64_t read;
			if (!dir_.read(static_cast<int>(i), t, read) || read != state) {
				live.erase(state); /* changing under us: the next change brings it back */
				continue;
			}
			if (!servesNode(t.node) || !serve(t, state))
				skipped_.insert(state);
			else
				known_.insert(state);
		}
		/* Withdrawn or reused entries: drop their targets, then windows left with none. */
		for (auto &w : windows_) {
			auto &ts = w->targets;
			for (std::size_t k = 0; k < ts.size();) {
				if (live.count(ts[k].state)) {
					++k;
					continue;
				}
				known_.erase(ts[k].state);
				ts[k] = ts.back();
				ts.pop_back();
			}
		}
		for (std::size_t k = 0; k < windows_.size();) {
			if (windows_[k]->targets.empty()) {
				windows_[k] = std::move(windows_.back());
				windows_.pop_back();
			} else {
				++k;
			}
		}
		for (auto it = skipped_.begin(); it != skipped_.end();)
			it = live.count(*it) ? std::next(it) : skipped_.erase(it);
		int rings = 0;
		for (auto &w : windows_)
			rings += static_cast<int>(w->targets.size());
		/* Relaxed: statistics. */
		windowsCount_.store(static_cast<int>(windows_.size()), std::memory_order_relaxed);
		ringsCount_.store(rings, std::memory_order_relaxed);
		skippedCount_.store(static_cast<int>(skipped_.size()), std::memory_order_relaxed);
		rescans_.fetch_add(1, std::memory_order_relaxed);
	}

	/* Map what @t names (reusing what is mapped) and serve its ring; false if it cannot be had. */
	bool serve(const ServedTarget &t, uint64_t state)
	{
		if (t.nranks <= 0 || t.target < 0 || t.target >= t.nranks || t.memorySize == 0 ||
		    t.memoryOffset + t.memorySize > t.memoryBytes)
			return false;
		const bool dynamicLayout = (t.flags & kServedDynamicLayout) != 0;
		const auto nranks = static_cast<uint32_t>(t.nranks);
		ServedWindow *w = nullptr;
		for (auto &have : windows_)
			if (have->controlDev == t.controlDev && have->controlIno == t.controlIno)
				w = have.get();
		std::unique_ptr<ServedWindow> fresh;
		if (!w) {
			UniqueFd fd = openPeerFd(t.controlPid, t.controlFd, t.controlDev, t.controlIno);
			const std::size_t bytes = ControlLayout(nranks, dynamicLayout).size;
			if (fd.get() < 0 || t.controlBytes != bytes)
				return false;
			auto seg = Segment::attach(std::move(fd), bytes, false);
			if (!seg)
				return false;
			fresh = std::make_unique<ServedWindow>();
			fresh->controlDev = t.controlDev;
			fresh->controlIno = t.controlIno;
			fresh->nranks = nranks;
			fresh->control = std::move(seg.value());
			fresh->control.closeFd();
			const ControlHeader *h = controlHeader(fresh->control.data());
			if (h->magic != kControlMagic || h->version != kControlVersion || h->nranks != nranks)
				return false;
			const ControlLayout layout(nranks, dynamicLayout);
			fresh->slots = reinterpret_cast<RankSlot *>(fresh->control.data() + layout.slots);
			fresh->rings.resize(nranks);
			for (uint32_t r = 0; r < nranks; ++r) {
				auto ring = MpscRing::attach(fresh->control.data() + layout.accRings + r * layout.accRingBytes,
							     layout.accRingBytes);
				if (!ring)
					return false;
				fresh->rings[r] = ring.value();
				fresh->rings[r].setLiveness(producerAlive, fresh.get(), 100'000'000);
			}
			fresh->acc.attach(fresh->control.data(), nranks, dynamicLayout);
			fresh->acc.rings = fresh->rings.data();
			fresh->acc.plainApply = (t.flags & kServedPlainApply) != 0;
			w = fresh.get();
		} else if (w->nranks != nranks) {
			return false;
		}
		std::byte *segmentBase = nullptr;
		for (auto &m : w->memory)
			if (m.dev == t.memoryDev && m.ino == t.memoryIno)
				segmentBase = m.segment.data();
		if (!segmentBase) {
			UniqueFd fd = openPeerFd(t.memoryPid, t.memoryFd, t.memoryDev, t.memoryIno);
			if (fd.get() < 0)
				return false;
			auto seg = Segment::attach(std::move(fd), t.memoryBytes, t.memoryHuge != 0);
			if (!seg)
				return false;
			seg->closeFd();
			segmentBase = seg->data();
			w->memory.push_back({ t.memoryDev, t.memoryIno, std::move(seg.value()) });
		}
		w->targets.push_back({ t.target, state, segmentBase + t.memoryOffset });
		if (fresh)
			windows_.push_back(std::move(fresh));
		return true;
	}

	ServedDirectory dir_;
	const uint64_t holder_; /* our consumer-role holder id: agentHolder(our pid) */
	uint64_t seen_ = 0;
	std::vector<std::unique_ptr<ServedWindow>> windows_;
	std::unordered_set<uint64_t> known_;   /* publications served */
	std::unordered_set<uint64_t> skipped_; /* publications not ours, or that could not be opened */
	std::atomic<int> windowsCount_{ 0 }, ringsCount_{ 0 }, skippedCount_{ 0 };
	std::atomic<uint64_t> rescans_{ 0 };
};

std::mutex gServiceLock;
std::unique_ptr<AgentService> gService; /* guarded by gServiceLock; its poll runs on the agent's thread */

} /* namespace */

int startAgentService()
{
	if (!isHostAgent())
		return RMA_SUCCESS;
	std::lock_guard lock(gServiceLock);
	if (!gService) {
		gService = std::make_unique<AgentService>(servedDirectory());
		ProgressSource source;
		source.poll = [](void *self) noexcept { return static_cast<AgentService *>(self)->poll(); };
		source.pending = [](void *self) noexcept { return static_cast<AgentService *>(self)->pending(); };
		source.ctx = gService.get();
		if (int rc = localAgent().addSource(source); rc != RMA_SUCCESS) {
			gService.reset();
			return rc;
		}
	}
	RMA_TRY(ensureAgentThread());
	if (const char *verbose = knobValue("RMA_VERBOSE"); verbose && !std::strcmp(verbose, "1")) {
		std::string nodes;
		for (int node : agentNodes())
			nodes.append(nodes.empty() ? "" : ", ").append(node < 0 ? "the default" : std::to_string(node));
		const int core = localAgent().core();
		std::fprintf(stderr, "librma: rank %d runs the progress agent of NUMA node %s, %s%s\n",
			     runtime().bootstrap->rank(), nodes.c_str(), core >= 0 ? "on CPU " : "on its rank's CPUs",
			     core >= 0 ? std::to_string(core).c_str() : "");
	}
	return RMA_SUCCESS;
}

void stopAgentService()
{
	std::lock_guard lock(gServiceLock);
	if (!gService)
		return;
	(void)localAgent().removeSource(gService.get());
	gService.reset();
}

void armAgentStallForTesting(int exitStatus, std::atomic<int64_t> *stalled)
{
	/* Relaxed: published by the release below. */
	gStallStatus.store(exitStatus, std::memory_order_relaxed);
	/* Release: pairs with the acquire in AgentService::poll(); publishes the status. */
	gStallFlag.store(stalled, std::memory_order_release);
}

AgentServiceStats agentServiceStats()
{
	std::lock_guard lock(gServiceLock);
	return gService ? gService->stats() : AgentServiceStats{};
}

} /* namespace librma */
