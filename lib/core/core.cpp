/* SPDX-License-Identifier: MIT */
#include "core/core.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstddef>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <mutex>

#include "bootstrap/external_bootstrap.h"
#include "bootstrap/pidfd.h"
#include "common/knobs.h"
#include "common/spin_wait.h"
#include "common/cache.h"
#include "common/tsan.h"
#include "common/unique_fd.h"
#include "error/error.h"
#include "numa/topology.h"
#include "shm/segment.h"
#include "win/agent_service.h"
#include "win/remote.h"
#include "win/stats.h"
#include "win/window.h"

namespace librma {

/* ---- Group ---------------------------------------------------------------- */

Group::Group(std::vector<int> worldRanks) : ranks_(std::move(worldRanks))
{
	sorted_.reserve(ranks_.size());
	for (int i = 0; i < static_cast<int>(ranks_.size()); ++i)
		sorted_.emplace_back(ranks_[i], i);
	std::sort(sorted_.begin(), sorted_.end());
}

int Group::rankOf(int worldRank) const
{
	auto it = std::lower_bound(sorted_.begin(), sorted_.end(), std::make_pair(worldRank, -1));
	if (it == sorted_.end() || it->first != worldRank)
		return RMA_UNDEFINED;
	return it->second;
}

/* ---- Comm ----------------------------------------------------------------- */

Comm::Comm(std::shared_ptr<const Group> group, int rank, uint64_t context)
	: group_(std::move(group)), rank_(rank), context_(context)
{
}

int Comm::allgather(std::span<const std::byte> data, std::span<const int> fds, GatherResult &out)
{
	if (size() == 1) {
		/* Nothing to meet: answer locally, with copies of the fds. */
		static uint64_t localInstance = 0;
		out.data.assign(data.begin(), data.end());
		out.fds.clear();
		for (int fd : fds) {
			int copy = fcntl(fd, F_DUPFD_CLOEXEC, 0);
			if (copy < 0)
				return makeErrnoError(RMA_ERR_INTERN, errno, "cannot duplicate fd %d", fd);
			out.fds.emplace_back(copy);
		}
		out.fdCounts.assign(1, static_cast<int>(fds.size()));
		out.instance = ++localInstance;
		return RMA_SUCCESS;
	}
	crossProcessEdge(); /* ThreadSanitizer: see common/tsan.h */
	int rc = runtime().bootstrap->consistentAllgather(context_, sequence_++, group_->worldRanks(), rank_, data, fds, out);
	crossProcessEdge();
	return rc;
}

int Comm::barrier()
{
	GatherResult out;
	return allgather({}, {}, out);
}

int Comm::split(int color, int key, std::shared_ptr<Comm> &newComm)
{
	int mine[2] = { color, key };
	GatherResult out;
	RMA_TRY(allgather(std::as_bytes(std::span(mine)), {}, out));
	newComm = nullptr;
	if (color == RMA_UNDEFINED)
		return RMA_SUCCESS;

	const int *all = reinterpret_cast<const int *>(out.data.data());
	/* (key, old rank) of every process with my color, in new-rank order. */
	std::vector<std::pair<int, int>> members;
	for (int r = 0; r < size(); ++r)
		if (all[2 * r] == color)
			members.emplace_back(all[2 * r + 1], r);
	std::sort(members.begin(), members.end());

	std::vector<int> world;
	int newRank = -1;
	int lowest = members.front().second;
	for (const auto &[k, r] : members) {
		if (r == rank_)
			newRank = static_cast<int>(world.size());
		lowest = std::min(lowest, r);
		world.push_back(group_->worldRank(r));
	}
	/*
	 * The instance id is unique to this split across the job and the
	 * lowest old rank is unique to each color: together a fresh context.
	 */
	uint64_t context = freshContext(out.instance, static_cast<uint64_t>(lowest));
	newComm = std::make_shared<Comm>(std::make_shared<const Group>(std::move(world)), newRank, context);
	newComm->errhandler = errhandler;
	return RMA_SUCCESS;
}

namespace {

/* FNV-1a over 64-bit words. */
uint64_t digest(uint64_t hash, uint64_t word)
{
	for (int i = 0; i < 8; ++i) {
		hash ^= (word >> (8 * i)) & 0xff;
		hash *= 0x100000001b3ull;
	}
	return hash;
}


} /* namespace */

/*
 * A new communicator's context from its meeting's instance id (unique in
 * the job, any 64 bits: the launcher's counter, a hub's rank and counter)
 * and, for split(), the lowest old rank of the color (unique in the
 * meeting). Shifting the instance left lost a hub's rank (two hubs with
 * equal counters made equal contexts); a 64-bit mix keeps every bit, and
 * a collision has odds of 2^-62 per pair. Bits 62-63 stay clear (group
 * keys and one-member communicators use them), and the fixed contexts
 * below 16 are never made.
 */
uint64_t freshContext(uint64_t instance, uint64_t lowest)
{
	uint64_t h = digest(digest(0xcbf29ce484222325ull, instance), lowest);
	/* A finalizer (MurmurHash3's fmix64): FNV's low bits mix poorly. */
	h ^= h >> 33;
	h *= 0xff51afd7ed558ccdull;
	h ^= h >> 33;
	h *= 0xc4ceb9fe1a85ec53ull;
	h ^= h >> 33;
	h &= (uint64_t(1) << 62) - 1;
	return h < 16 ? h + 16 : h;
}

int Comm::createGroup(const Group &group, int tag, std::shared_ptr<Comm> &newComm)
{
	newComm = nullptr;
	Runtime &rt = runtime();
	int myIndex = group.rankOf(rt.bootstrap->rank());
	if (myIndex == RMA_UNDEFINED)
		return RMA_SUCCESS; /* not a member: local, as MPI says */

	/*
	 * Only the group's members meet, so this communicator's own sequence
	 * (which every member of it advances) cannot number the meeting. The
	 * key is a digest of (context, tag, members), with the top bit set so
	 * that it never equals the context of a communicator; the sequence
	 * counts the calls with that key. Members of one call compute the same
	 * pair; the bootstrap refuses a pair met with other member lists.
	 */
	uint64_t key = digest(0xcbf29ce484222325ull, context_);
	key = digest(key, static_cast<uint32_t>(tag));
	for (int w : group.worldRanks())
		key = digest(key, static_cast<uint32_t>(w));
	key |= 1ull << 63;
	uint64_t seq = groupSequence_[key]++;

	uint64_t context;
	if (group.size() == 1) {
		/* Nothing to meet. A one-member communicator never reaches the bootstrap, so any context works. */
		static uint64_t localInstance = 0;
		context = (1ull << 62) | ++localInstance;
	} else {
		GatherResult out;
		crossProcessEdge(); /* ThreadSanitizer: see common/tsan.h */
		int rc = rt.bootstrap->consistentAllgather(key, seq, group.worldRanks(), myIndex, {}, {}, out);
		crossProcessEdge();
		if (rc != RMA_SUCCESS)
			return rc;
		/* The instance is unique to this meeting across the job: a fresh context, as in split(). */
		context = freshContext(out.instance, 0);
	}
	newComm = std::make_shared<Comm>(std::make_shared<const Group>(group.worldRanks()), myIndex, context);
	newComm->errhandler = errhandler;
	return RMA_SUCCESS;
}

/* ---- Info ----------------------------------------------------------------- */

const std::string *Info::get(std::string_view key) const
{
	for (const auto &[k, v] : entries_)
		if (k == key)
			return &v;
	return nullptr;
}

void Info::set(std::string_view key, std::string_view value)
{
	for (auto &[k, v] : entries_) {
		if (k == key) {
			v = value;
			return;
		}
	}
	entries_.emplace_back(std::string(key), std::string(value));
}

bool Info::erase(std::string_view key)
{
	auto it = std::find_if(entries_.begin(), entries_.end(), [&](const auto &e) { return e.first == key; });
	if (it == entries_.end())
		return false;
	entries_.erase(it);
	return true;
}

/* ---- Runtime -------------------------------------------------------------- */

Runtime &runtime()
{
	static Runtime rt;
	return rt;
}

namespace {

constexpr uint64_t kWorldContext = 1;
constexpr uint64_t kSelfContext = 2;

std::shared_ptr<Errhandler> predefinedHandler(Errhandler::Kind kind)
{
	auto h = std::make_shared<Errhandler>();
	h->kind = kind;
	return h;
}

} /* namespace */

/* ---- Progress ------------------------------------------------------------- */

namespace {

inline constexpr uint64_t kDoorbellMagic = 0x534c4c4542414d52ull; /* "RMABELLS" */
inline constexpr uint32_t kDoorbellVersion = 2; /* 2: the served directory after the doorbells */

/* The host segment: this header, one Doorbell per world rank, then the ServedDirectory. */
struct alignas(kFalseSharingPad) DoorbellTableHeader {
	uint64_t magic;
	uint32_t version;
	uint32_t count;
};
static_assert(sizeof(DoorbellTableHeader) == kFalseSharingPad);
static_assert(offsetof(DoorbellTableHeader, magic) == 0);
static_assert(offsetof(DoorbellTableHeader, count) == 12);

std::size_t directoryOffset(int count)
{
	const std::size_t end = sizeof(DoorbellTableHeader) + static_cast<std::size_t>(count) * sizeof(Doorbell);
	return (end + kFalseSharingPad - 1) / kFalseSharingPad * kFalseSharingPad;
}

std::size_t doorbellSegmentBytes(int count)
{
	return directoryOffset(count) + ServedDirectory::bytes();
}

struct ProgressState {
	ProgressConfig config;
	int worldRank = 0;
	Segment segment;
	Doorbell *bells = nullptr;
	int count = 0;
	ProgressAgent agent;
	std::mutex lock; /* ensureAgentThread() */
	bool stopAtExit = false;
	/* Agent mode: the host's served rings, and which world rank's agent serves which node. */
	ServedDirectory directory;
	std::vector<std::pair<int, int>> nodeAgents; /* (NUMA node, world rank), by node */
	int defaultAgent = -1;                       /* serves nodes without an agent of their own, and -1 */
	int boundNode = -1;                          /* this process's (boundNode()) */
	/* The host's agents in other processes, watched for death (hostAgentDead()). */
	struct AgentWatch {
		int worldRank;
		int32_t pid;
		UniqueFd pidfd; /* invalid: pidfd_open() missing (kill() then), or the agent already gone */
		bool gone;      /* it had exited before its pidfd could be opened */
	};
	std::vector<AgentWatch> agentWatch;
};

/*
 * Never destroyed: the agent's thread may run until exit(), and a static
 * destructor could run before the windows its sources point to are gone.
 * stopAgentAtExit() stops the thread first instead.
 */
ProgressState &progressState()
{
	static ProgressState *state = new ProgressState;
	return *state;
}

/*
 * Registered when the thread first starts, so it runs before the static
 * destructors of everything built earlier (the runtime, the windows).
 */
void stopAgentAtExit()
{
	progressState().agent.stop();
}

/*
 * Agent mode: one agent per NUMA node of the host, in the lowest world rank
 * bound to that node; the default agent (for memory on no node or on a
 * node without an agent) is the lowest node's, or, if no rank is bound to
 * one node, the host's lowest world rank. Every rank of the host computes
 * the same from the same gathered records (@ranks: world rank, node).
 */
template<typename Record>
void chooseAgents(ProgressState &p, const std::vector<Record> &ranks)
{
	p.nodeAgents.clear();
	p.defaultAgent = -1;
	int lowest = INT32_MAX;
	for (const Record &r : ranks) {
		lowest = std::min(lowest, static_cast<int>(r.worldRank));
		if (r.node < 0)
			continue;
		auto at = std::lower_bound(p.nodeAgents.begin(), p.nodeAgents.end(),
					   std::make_pair(static_cast<int>(r.node), INT32_MIN));
		if (at != p.nodeAgents.end() && at->first == r.node)
			at->second = std::min(at->second, static_cast<int>(r.worldRank));
		else
			p.nodeAgents.insert(at, { static_cast<int>(r.node), static_cast<int>(r.worldRank) });
	}
	p.defaultAgent = p.nodeAgents.empty() ? lowest : p.nodeAgents.front().second;
}

/*
 * Agent mode: open a pidfd of each of the host's agents in another process
 * (@ranks: world rank, pid), right after the allgather they answered, so
 * the pidfd names that very process whatever happens to its pid later.
 * A failed open is not an error: without pidfd_open() hostAgentDead()
 * falls back to kill(); ESRCH means the agent has exited already.
 */
template<typename Record>
void watchAgents(ProgressState &p, const std::vector<Record> &ranks, int me)
{
	p.agentWatch.clear();
	if (p.config.mode != ProgressConfig::Mode::Agent)
		return;
	for (const Record &r : ranks) {
		const int rank = static_cast<int>(r.worldRank);
		bool agent = rank == p.defaultAgent;
		for (const auto &[node, agentRank] : p.nodeAgents)
			agent |= agentRank == rank;
		if (rank == me || !agent || r.pid <= 0)
			continue;
		UniqueFd pidfd(pidfdOpen(r.pid));
		const bool gone = !pidfd.isValid() && errno == ESRCH;
		p.agentWatch.push_back({ rank, r.pid, std::move(pidfd), gone });
	}
}

/* Rank 0 makes the segment, the others map it from the fd it passes. */
int setUpDoorbells(Comm &world)
{
	ProgressState &p = progressState();
	const int n = world.size();
	const std::size_t bytes = doorbellSegmentBytes(n);
	struct Mine {
		int32_t status;
		uint32_t count;
		int32_t worldRank;
		int32_t node; /* boundNode(): where this rank's agent would serve */
		int32_t pid;  /* watched by the others if this rank runs an agent */
	} mine = { RMA_SUCCESS, static_cast<uint32_t>(n), world.rank(), boundNode(Topology::system()),
		   static_cast<int32_t>(getpid()) };
	p.boundNode = mine.node;
	std::vector<int> fds;
	int status = RMA_SUCCESS;

	/*
	 * One segment per host, made by the host's first world rank and handed
	 * to the host's other ranks (descriptors never cross hosts). It keeps
	 * one doorbell per world rank, so a rank's index is its world rank
	 * whichever host it is on.
	 */
	std::shared_ptr<Comm> host;
	if (world.size() > 1) {
		Runtime &rt = runtime();
		RMA_TRY(world.split(rt.bootstrap->host(world.rank()), world.rank(), host));
	}
	const bool leader = !host || host->rank() == 0;
	if (leader) {
		SegmentOptions options;
		options.size = bytes;
		options.hugePages = HugePages::Off;
		options.name = "rma-doorbells";
		auto seg = Segment::create(options);
		if (seg) {
			p.segment = std::move(seg.value());
			auto *h = reinterpret_cast<DoorbellTableHeader *>(p.segment.data());
			/* Zero-filled: every doorbell is awake. The allgather publishes these stores. */
			h->version = kDoorbellVersion;
			h->count = static_cast<uint32_t>(n);
			h->magic = kDoorbellMagic;
			fds.push_back(p.segment.fd());
		} else {
			status = seg.code();
			mine.status = errorClass(status);
		}
	}
	if (host) {
		GatherResult out;
		RMA_TRY(host->allgather(std::as_bytes(std::span(&mine, 1)), fds, out));
		if (status != RMA_SUCCESS)
			return status;
		std::vector<Mine> ranks(static_cast<std::size_t>(host->size()));
		std::memcpy(ranks.data(), out.data.data(), ranks.size() * sizeof(Mine));
		chooseAgents(p, ranks);
		watchAgents(p, ranks, world.rank());
		int32_t rootStatus;
		std::memcpy(&rootStatus, out.data.data(), sizeof(rootStatus));
		if (rootStatus != RMA_SUCCESS)
			return makeError(rootStatus,
					 "rma_init: the host's first rank could not make its doorbell segment (%s)",
					 className(rootStatus));
		if (!leader) {
			if (out.fdCounts.empty() || out.fdCounts[0] != 1)
				return makeError(RMA_ERR_INTERN, "rma_init: the host's first rank passed no doorbell segment");
			auto seg = Segment::attach(std::move(out.fds[0]), bytes, false);
			if (!seg)
				return seg.code();
			p.segment = std::move(seg.value());
			const auto *h = reinterpret_cast<const DoorbellTableHeader *>(p.segment.data());
			if (h->magic != kDoorbellMagic || h->version != kDoorbellVersion ||
			    h->count != static_cast<uint32_t>(n)) {
				p.segment = Segment();
				return makeError(RMA_ERR_INTERN,
						 "rma_init: the host's doorbell segment is not a version %u table of %d",
						 kDoorbellVersion, n);
			}
		}
	} else if (status != RMA_SUCCESS) {
		return status;
	} else {
		chooseAgents(p, std::vector<Mine>{ mine });
	}
	p.segment.closeFd();
	p.bells = reinterpret_cast<Doorbell *>(p.segment.data() + sizeof(DoorbellTableHeader));
	p.directory = ServedDirectory(p.segment.data() + directoryOffset(n));
	p.count = n;
	p.worldRank = world.rank();
	return p.agent.setDoorbell(&p.bells[world.rank()]);
}

} /* namespace */

const ProgressConfig &progressConfig()
{
	return progressState().config;
}

bool hostAgentDead(int32_t pid, int &worldRank)
{
	ProgressState &p = progressState();
	worldRank = -1;
	for (const ProgressState::AgentWatch &w : p.agentWatch) {
		if (w.pid != pid)
			continue;
		worldRank = w.worldRank;
		if (w.gone)
			return true;
		const Runtime &rt = runtime();
		if (rt.bootstrap && rt.bootstrap->dead(w.worldRank))
			return true;
		if (w.pidfd.isValid()) {
			/* Readable once the process has exited (zombie or reaped); EINTR: asked again next time. */
			pollfd f{ w.pidfd.get(), POLLIN, 0 };
			return poll(&f, 1, 0) > 0;
		}
		break;
	}
	/* Our own agent is alive while we are; an unknown pid is asked by number. */
	if (pid == static_cast<int32_t>(getpid()))
		return false;
	return kill(pid, 0) < 0 && errno == ESRCH;
}

Doorbell *hostDoorbell(int worldRank)
{
	ProgressState &p = progressState();
	if (!p.bells || worldRank < 0 || worldRank >= p.count)
		return nullptr;
	return &p.bells[worldRank];
}

int agentWorldRank(int node)
{
	ProgressState &p = progressState();
	if (p.config.mode != ProgressConfig::Mode::Agent || !p.bells)
		return -1;
	if (node >= 0) {
		auto at = std::lower_bound(p.nodeAgents.begin(), p.nodeAgents.end(), std::make_pair(node, INT32_MIN));
		if (at != p.nodeAgents.end() && at->first == node)
			return at->second;
	}
	return p.defaultAgent;
}

bool servesNode(int node)
{
	ProgressState &p = progressState();
	return p.bells && agentWorldRank(node) == p.worldRank;
}

bool isHostAgent()
{
	ProgressState &p = progressState();
	if (p.config.mode != ProgressConfig::Mode::Agent || !p.bells)
		return false;
	if (p.defaultAgent == p.worldRank)
		return true;
	for (const auto &[node, rank] : p.nodeAgents)
		if (rank == p.worldRank)
			return true;
	return false;
}

std::vector<int> agentNodes()
{
	ProgressState &p = progressState();
	std::vector<int> nodes;
	if (p.config.mode != ProgressConfig::Mode::Agent || !p.bells)
		return nodes;
	for (const auto &[node, rank] : p.nodeAgents)
		if (rank == p.worldRank)
			nodes.push_back(node);
	if (p.defaultAgent == p.worldRank)
		nodes.push_back(-1);
	return nodes;
}

ServedDirectory servedDirectory()
{
	ProgressState &p = progressState();
	return p.config.mode == ProgressConfig::Mode::Agent ? p.directory : ServedDirectory();
}

Doorbell *progressDoorbell(int targetWorldRank, int node)
{
	switch (progressState().config.mode) {
	case ProgressConfig::Mode::None:
		return nullptr;
	case ProgressConfig::Mode::Thread:
		return hostDoorbell(targetWorldRank);
	case ProgressConfig::Mode::Agent:
		return hostDoorbell(targetWorldRank) ? hostDoorbell(agentWorldRank(node)) : nullptr;
	}
	return nullptr;
}

ProgressAgent &localAgent()
{
	return progressState().agent;
}

int ensureAgentThread()
{
	ProgressState &p = progressState();
	std::lock_guard lock(p.lock);
	int core = -1;
	switch (p.config.mode) {
	case ProgressConfig::Mode::None:
		return RMA_SUCCESS;
	case ProgressConfig::Mode::Thread:
		break;
	case ProgressConfig::Mode::Agent: {
		if (!isHostAgent())
			return RMA_SUCCESS;
		/* A listed CPU of our node; a single CPU pins the only agent of the host. */
		const Topology &topology = Topology::system();
		for (int cpu : p.config.cores)
			if (p.boundNode >= 0 && topology.nodeOfCpu(cpu) == p.boundNode)
				core = cpu;
		const bool onlyAgent = p.nodeAgents.size() <= 1;
		if (core < 0 && onlyAgent && p.config.cores.size() == 1)
			core = p.config.cores.front();
		break;
	}
	}
	if (p.agent.running())
		return RMA_SUCCESS;
	RMA_TRY(p.agent.start(core));
	if (!p.stopAtExit) {
		p.stopAtExit = true;
		std::atexit(stopAgentAtExit);
	}
	return RMA_SUCCESS;
}

/* ---- Runtime (init, finalize) ---------------------------------------------- */

namespace {

/* "0-2,5" for ascending ranks; "none" for no ranks. */
std::string rankRanges(const std::vector<int> &ranks)
{
	std::string text;
	for (std::size_t i = 0; i < ranks.size();) {
		std::size_t j = i;
		while (j + 1 < ranks.size() && ranks[j + 1] == ranks[j] + 1)
			++j;
		/* append, not "," + string: GCC 12 at -O3 warns falsely (-Wrestrict) on the latter. */
		if (!text.empty())
			text += ',';
		text += std::to_string(ranks[i]);
		if (j > i) {
			text += '-';
			text += std::to_string(ranks[j]);
		}
		i = j + 1;
	}
	return text.empty() ? "none" : text;
}

/*
 * A job that spans hosts: every rank listens for other hosts' requests and
 * publishes where, with rank 0's secret (docs/design/inter-host.md §6), in
 * one allgather over the world. A rank that cannot listen still takes part
 * (with an empty card), so every rank fails alike.
 */
int startNetEngine(Comm &world)
{
#ifdef RMA_HAVE_NET
	Runtime &rt = runtime();
	net::EngineConfig config;
	config.rank = rt.bootstrap->rank();
	for (int r = 0; r < rt.bootstrap->size(); ++r)
		config.hostOf.push_back(static_cast<uint32_t>(rt.bootstrap->host(r)));
	if (const char *v = knobValue("RMA_NET_IF"))
		config.interface = v;
	if (const char *v = knobValue("RMA_NET_TIMEOUT_MS"))
		config.timeoutMs = std::atoi(v);
	if (const char *v = knobValue("RMA_NET_SPIN_US"))
		config.spinUs = std::atoi(v);
	/* A host whose connection timed out is dead: its ranks fail this host's waits (job status page). */
	config.hostLost = [](uint32_t host) {
		Runtime &r = runtime();
		if (!r.bootstrap)
			return;
		for (int q = 0; q < r.bootstrap->size(); ++q)
			if (static_cast<uint32_t>(r.bootstrap->host(q)) == host)
				r.bootstrap->markDead(q);
	};
	auto policy = net::uringPolicyFromEnvironment();
	if (!policy)
		return policy.code();
	config.policy = policy.value();
	auto zc = net::zcPolicyFromEnvironment();
	if (!zc)
		return zc.code();
	config.zc = zc.value();
	if (const char *v = knobValue("RMA_VERBOSE"))
		config.verbose = !std::strcmp(v, "1");
	if (const char *v = knobValue("RMA_NET_ZC_MIN"))
		config.zcMinBytes = static_cast<uint32_t>(std::min<long>(std::atol(v), UINT32_MAX));
	if (const char *v = knobValue("RMA_NET_BULK"))
		config.bulkLinks = static_cast<uint32_t>(std::clamp(std::atol(v), 0L, 16L));
	if (const char *v = knobValue("RMA_NET_FIXED_BUFFERS"))
		config.fixedBuffers = std::strcmp(v, "0") != 0;
	if (const char *v = knobValue("RMA_NET_SQPOLL"))
		config.sqpollIdleMs = static_cast<uint32_t>(std::clamp(std::atol(v), 0L, 10000L));
	if (const char *v = knobValue("RMA_NET_SERVER_PRIORITY"); v && !std::strcmp(v, "fifo")) {
		config.realtime = true;
		/* A FIFO server keeps its CPU while it spins: 50 us after a frame, not 200 (README, "Across hosts"). */
		if (!knobValue("RMA_NET_SPIN_US"))
			config.spinUs = 50;
	}
	if (config.sqpollIdleMs && !knobValue("RMA_NET_SPIN_US")) {
		/*
		 * An SQ thread and a spinning server beside this host's ranks: if
		 * they outnumber the CPUs, the three busy threads take turns by
		 * scheduler slices (808 us per put + flush on 2 CPUs, against 24.5
		 * us with a server that parks at once). Park at once then.
		 */
		const long cpus = sysconf(_SC_NPROCESSORS_ONLN);
		long local = 0;
		for (int r = 0; r < rt.bootstrap->size(); ++r)
			local += rt.bootstrap->host(r) == rt.bootstrap->host(config.rank);
		if (cpus > 0 && local + 2 > cpus)
			config.spinUs = 0;
	}
	if (const char *v = knobValue("RMA_NET_BULK_MIN"))
		config.bulkMinBytes = static_cast<uint64_t>(std::max(std::atoll(v), 1LL));
	net::EndpointCard card;
	auto e = net::Engine::listen(std::move(config), card);
	if (!e)
		card = net::EndpointCard{};
	GatherResult out;
	int rc = world.allgather(std::as_bytes(std::span(&card, 1)), {}, out);
	std::fill(std::begin(card.secret), std::end(card.secret), uint8_t{ 0 }); /* the secret */
	RMA_TRY(rc);
	/*
	 * A rank that cannot listen (no interface RMA_NET_IF admits) does not
	 * fail the job: a job across hosts may never make a window across them
	 * (the MPI drop-in routes those to the MPI). Such a window then fails
	 * at creation with this reason; a peer's link to such a rank fails.
	 */
	if (!e) {
		net::netStartError() = errorMessage(e.code());
		std::memset(out.data.data(), 0, out.data.size());
		return RMA_SUCCESS;
	}
	std::vector<net::EndpointCard> cards(static_cast<std::size_t>(world.size()));
	std::memcpy(cards.data(), out.data.data(), cards.size() * sizeof(net::EndpointCard));
	std::memset(out.data.data(), 0, out.data.size()); /* the secret */
	if (cards[0].ipv4 == 0) {
		net::netStartError() = "rank 0 could not listen for other hosts' operations, so the job has no key";
		return RMA_SUCCESS;
	}
	RMA_TRY(e.value()->setPeers(cards));
	net::setEngine(std::move(e.value()));
	/*
	 * Waits yield early when the spinning threads outnumber the CPUs. Here
	 * each host's server thread spins too, and "hosts" that are network
	 * namespaces of one machine share its CPUs: count every rank and every
	 * host on this machine (the same kernel boot id). RMA_SPIN overrides.
	 */
	if (const char *spin = knobValue("RMA_SPIN"); !spin || !std::strcmp(spin, "auto")) {
		const uint64_t mine = cards[static_cast<std::size_t>(world.rank())].machine;
		std::vector<int> hosts;
		long threads = 0;
		for (std::size_t r = 0; r < cards.size(); ++r) {
			if (cards[r].machine != mine)
				continue;
			++threads;
			const int h = runtime().bootstrap->host(static_cast<int>(r));
			if (std::find(hosts.begin(), hosts.end(), h) == hosts.end())
				hosts.push_back(h);
		}
		threads += static_cast<long>(hosts.size());
		const long cpus = sysconf(_SC_NPROCESSORS_ONLN);
		if (cpus > 0 && threads > cpus)
			SpinWait::setOversubscribed(true);
	}
	return RMA_SUCCESS;
#else
	(void)world;
	return RMA_SUCCESS; /* windows that span hosts fail at creation, naming what is missing */
#endif
}

/* RMA_VERBOSE=1: where this rank runs and how it reaches every other rank (one line, stderr). */
void printReach(const Bootstrap &boot)
{
	std::vector<int> local, remote;
	int hosts = 0;
	for (int r = 0; r < boot.size(); ++r) {
		hosts = std::max(hosts, boot.host(r) + 1);
		if (r != boot.rank())
			(boot.host(r) == boot.host(boot.rank()) ? local : remote).push_back(r);
	}
#ifdef RMA_HAVE_NET
	std::string listen;
	if (net::Engine *e = net::engine())
		listen = " (listening on " + e->address() + ")";
	const char *missing = "";
#else
	std::string listen;
	const char *missing = remote.empty() ? "" : " (built without the transport: windows cannot span hosts)";
#endif
	std::fprintf(
		stderr,
		"librma: rank %d of %d on %s (host %d of %d, bootstrap %s): shared memory with %s; TCP with %s%s%s\n",
		boot.rank(), boot.size(), boot.hostName().c_str(), boot.host(boot.rank()), hosts, boot.kind(),
		rankRanges(local).c_str(), rankRanges(remote).c_str(), listen.c_str(), missing);
}

} /* namespace */

int initRuntime(const rma_bootstrap_ops *external, bool concurrent)
{
	Runtime &rt = runtime();
	/* First, so that a bad variable fails every rank alike before any collective. */
	if (std::string bad = checkKnobs(); !bad.empty())
		return makeError(RMA_ERR_ARG, "rma_init: environment variable %s", bad.c_str());
	auto progress = progressConfigFromEnvironment();
	if (!progress)
		return progress.code();
	progressState().config = progress.value();

	{
		auto boot = external ? startExternalBootstrap(*external, concurrent) : Bootstrap::fromEnvironment();
		if (!boot)
			return boot.code();
		rt.bootstrap = std::move(boot.value());
	}
	int rank = rt.bootstrap->rank();
	int size = rt.bootstrap->size();
	bool multiHost = false;
	for (int r = 0; r < size; ++r)
		multiHost = multiHost || rt.bootstrap->host(r) != rt.bootstrap->host(0);
	/*
	 * More ranks on this host than online CPUs means a waiter's spinning
	 * takes the CPU from the rank it waits for. RMA_SPIN=yield|spin
	 * overrides the guess.
	 */
	{
		long cpus = sysconf(_SC_NPROCESSORS_ONLN);
		long local = 0;
		for (int r = 0; r < size; ++r)
			local += rt.bootstrap->host(r) == rt.bootstrap->host(rank);
		bool over = cpus > 0 && local > cpus;
		if (const char *spin = knobValue("RMA_SPIN"); spin && std::strcmp(spin, "auto"))
			over = !std::strcmp(spin, "yield");
		SpinWait::setOversubscribed(over);
	}

	auto fatal = predefinedHandler(Errhandler::Kind::Fatal);
	rt.errhandlers.setPredefined(1, fatal);
	rt.errhandlers.setPredefined(2, predefinedHandler(Errhandler::Kind::Return));
	rt.errhandlers.setPredefined(3, predefinedHandler(Errhandler::Kind::Abort));

	std::vector<int> all(size);
	for (int r = 0; r < size; ++r)
		all[r] = r;
	auto world = std::make_shared<Comm>(std::make_shared<const Group>(std::move(all)), rank, kWorldContext);
	world->errhandler = fatal;
	world->name = "RMA_COMM_WORLD";
	auto self = std::make_shared<Comm>(std::make_shared<const Group>(std::vector<int>{ rank }), 0,
					   kSelfContext);
	self->errhandler = fatal;
	self->name = "RMA_COMM_SELF";
	rt.comms.setPredefined(1, world);
	rt.comms.setPredefined(2, self);
	rt.groups.setPredefined(1, std::make_shared<Group>(std::vector<int>{}));

	auto env = std::make_shared<Info>();
	env->set("maxprocs", std::to_string(size));
	env->set("thread_level", "RMA_THREAD_SERIALIZED");
	rt.infos.setPredefined(1, env);

	/* Before the first collective: no window can be freed before the file is started. */
	RMA_TRY(initTrafficStats(rank, size));
	RMA_TRY(setUpDoorbells(*world));
	if (multiHost)
		RMA_TRY(startNetEngine(*world));
	if (const char *verbose = knobValue("RMA_VERBOSE"); verbose && !std::strcmp(verbose, "1"))
		printReach(*rt.bootstrap);
	/* Agent mode: this process may be a node's agent, serving windows it never joins. */
	RMA_TRY(startAgentService());

	rt.initialized = true;
	return RMA_SUCCESS;
}

int finalizeRuntime()
{
	Runtime &rt = runtime();
	/*
	 * A rank that died cannot join the barrier: the survivors finalize
	 * without it (the launcher reports the job's failure), as MPI's
	 * fault-tolerance extensions let them.
	 */
	if (int rc = rt.comms.lookup(reinterpret_cast<uintptr_t>(RMA_COMM_WORLD))->barrier();
	    rc != RMA_SUCCESS && errorClass(rc) != RMA_ERR_PROC_FAILED)
		return rc;
	/* Every rank is past its last RMA call: the agent has nothing left to serve. */
	ProgressState &p = progressState();
	p.agent.stop();
	stopAgentService();
	releaseControlPool();
#ifdef RMA_HAVE_NET
	net::setEngine(nullptr);
#endif
	p.agent.setDoorbell(nullptr);
	p.agentWatch.clear();
	p.bells = nullptr;
	p.count = 0;
	p.segment = Segment();
	rt.bootstrap.reset();
	rt.finalized = true;
	return RMA_SUCCESS;
}

/* ---- Error handlers ------------------------------------------------------- */

void fatalError(const char *objectName, int code)
{
	std::string msg = errorMessage(code);
	std::fprintf(stderr, "librma: fatal error on %s: %s\n", objectName, msg.c_str());
	std::fflush(nullptr);
	int status = errorClass(code) > 0 ? errorClass(code) : 1;
	Runtime &rt = runtime();
	if (rt.bootstrap)
		rt.bootstrap->abort(status);
	_exit(status);
}

int invokeCommErrhandler(const Errhandler &handler, rma_comm comm, int code)
{
	switch (handler.kind) {
	case Errhandler::Kind::Return:
		return code;
	case Errhandler::Kind::UserComm: {
		rma_comm c = comm;
		int e = code;
		handler.commFn(&c, &e);
		return code;
	}
	default: {
		Comm *c = toComm(comm);
		fatalError(c && !c->name.empty() ? c->name.c_str() : "a communicator", code);
	}
	}
}

int invokeWinErrhandler(const Errhandler &handler, rma_win win, int code)
{
	switch (handler.kind) {
	case Errhandler::Kind::Return:
		return code;
	case Errhandler::Kind::UserWin: {
		rma_win w = win;
		int e = code;
		handler.winFn(&w, &e);
		return code;
	}
	default:
		fatalError("a window", code);
	}
}

} /* namespace librma */
