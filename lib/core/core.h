/* SPDX-License-Identifier: MIT */
/*
 * The runtime's objects that are not windows: the job (bootstrap), groups,
 * communicators, info objects, error handlers, and the progress hook (the
 * configuration, the host's doorbells and this process's agent). This
 * header is the component's only door.
 *
 * Thread safety: control path; callers serialize (RMA_THREAD_SERIALIZED),
 * except where a function says otherwise.
 */
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include <rma/rma.h>

#include "bootstrap/bootstrap.h"
#include "common/result.h"
#include "core/handle_table.h"
#include "progress/agent.h"
#include "progress/directory.h"

namespace librma {

/* An ordered set of world ranks. Immutable once built. */
class Group
{
public:
	explicit Group(std::vector<int> worldRanks);

	int size() const { return static_cast<int>(ranks_.size()); }
	int worldRank(int rank) const { return ranks_[rank]; }
	const std::vector<int> &worldRanks() const { return ranks_; }
	/* Rank in this group of a world rank, or RMA_UNDEFINED. */
	int rankOf(int worldRank) const;

private:
	std::vector<int> ranks_;
	std::vector<std::pair<int, int>> sorted_; /* (world rank, group rank) */
};

struct Errhandler {
	enum class Kind { Fatal, Return, Abort, UserComm, UserWin };
	Kind kind = Kind::Fatal;
	rma_comm_errhandler_function *commFn = nullptr;
	rma_win_errhandler_function *winFn = nullptr;
};

/* A communicator: a group, this process's rank in it, and a context. */
class Comm
{
public:
	Comm(std::shared_ptr<const Group> group, int rank, uint64_t context);

	int rank() const { return rank_; }
	int size() const { return group_->size(); }
	const std::shared_ptr<const Group> &group() const { return group_; }
	uint64_t context() const { return context_; }

	/*
	 * Collective over this communicator: every member contributes @data
	 * (same length everywhere) and @fds. Runs through the bootstrap, so
	 * it is for the setup path only.
	 */
	int allgather(std::span<const std::byte> data, std::span<const int> fds, GatherResult &out);
	/* Collective barrier (through the bootstrap). */
	int barrier();

	/* Split by color/key (collective). Sets @out to nullptr for RMA_UNDEFINED. */
	int split(int color, int key, std::shared_ptr<Comm> &out);

	/*
	 * A communicator of @group's members, in @group's order (collective
	 * over those members only). @group must be a subset of this
	 * communicator's group (the caller checks); a process outside it gets
	 * nullptr without communicating. Calls of one member set and @tag on
	 * this communicator meet in the order they are made.
	 */
	int createGroup(const Group &group, int tag, std::shared_ptr<Comm> &out);

	std::shared_ptr<Errhandler> errhandler;
	std::string name;

private:
	std::shared_ptr<const Group> group_;
	int rank_;
	uint64_t context_;
	uint64_t sequence_ = 0;
	/* createGroup() calls made so far, per (tag, member list) digest. */
	std::map<uint64_t, uint64_t> groupSequence_;
};

/* An info object: keys in insertion order. */
class Info
{
public:
	/* nullptr if unset. */
	const std::string *get(std::string_view key) const;
	void set(std::string_view key, std::string_view value);
	bool erase(std::string_view key);
	const std::vector<std::pair<std::string, std::string>> &entries() const { return entries_; }

private:
	std::vector<std::pair<std::string, std::string>> entries_;
};

/* ---- Attribute caching (MPI's keyvals) ------------------------------------ */

/*
 * A keyval: the callbacks and extra state an attribute key was made with.
 * Made for one kind of object (windows today; communicators and datatypes
 * can add their callback types here). Attributes hold it by shared_ptr, so
 * a freed keyval lives on while a value set with it remains.
 */
struct Keyval {
	enum class Kind : uint8_t { Win = 1 };
	Kind kind = Kind::Win;
	rma_win_copy_attr_function *winCopy = nullptr;
	rma_win_delete_attr_function *winDelete = nullptr;
	void *extraState = nullptr;
	bool freed = false;
};

/*
 * The process's keyvals. An id is (1 << 30) | (kind << 24) | serial with a
 * serial that is never reused, so a stale id is recognised, and no id equals
 * a predefined key (small numbers) or RMA_KEYVAL_INVALID. Thread-safe.
 */
class KeyvalRegistry
{
public:
	static constexpr uint32_t kMaxSerial = (1u << 24) - 1;

	/* Register @keyval; returns its id, or 0 when the kind's serials are used up. */
	int create(std::shared_ptr<Keyval> keyval);
	/*
	 * The keyval @id of @kind if it is live, or freed but still held by an
	 * attribute (a freed one is dropped from the registry once nothing
	 * holds it); nullptr otherwise.
	 */
	std::shared_ptr<Keyval> find(Keyval::Kind kind, int id);
	/* Mark @id freed. False if it is not a live (unfreed) keyval of @kind. */
	bool free(Keyval::Kind kind, int id);

private:
	std::mutex lock_;
	uint32_t nextSerial_ = 1;
	std::map<int, std::shared_ptr<Keyval>> keyvals_;
};

/*
 * The attributes cached on one object, in the order they were set (a
 * replaced value counts as set anew). Callers serialize, as for the object.
 */
class AttributeSet
{
public:
	struct Entry {
		int keyval;
		std::shared_ptr<Keyval> key;
		void *value;
	};

	/* nullptr if @keyval has no value here. */
	const Entry *find(int keyval) const;
	void set(int keyval, std::shared_ptr<Keyval> key, void *value);
	/* False if @keyval had no value. */
	bool erase(int keyval);
	/* The most recently set entry, or nullptr when empty. */
	const Entry *newest() const { return entries_.empty() ? nullptr : &entries_.back(); }
	std::size_t size() const { return entries_.size(); }

private:
	std::vector<Entry> entries_;
};

/* Process-wide state. */
struct Runtime {
	bool initialized = false;
	bool finalized = false;
	std::unique_ptr<Bootstrap> bootstrap;
	HandleTable<Comm, HandleKind::Comm> comms;
	HandleTable<Group, HandleKind::Group> groups;
	HandleTable<Info, HandleKind::Info> infos;
	HandleTable<Errhandler, HandleKind::Errhandler> errhandlers;
	KeyvalRegistry keyvals;
};

Runtime &runtime();

/*
 * Join the job: the progress configuration (RMA_PROGRESS, RMA_PROGRESS_CORE:
 * RMA_ERR_ARG naming the variable when one is bad), the bootstrap (over @external
 * when given, rma_init_external's runtime; else Bootstrap::fromEnvironment()), world
 * and self communicators, predefined handles, and the host's doorbell segment.
 */
/* @concurrent: rma_init_external() with RMA_THREAD_MULTIPLE (collectives of several threads at once). */
int initRuntime(const rma_bootstrap_ops *external = nullptr, bool concurrent = false);
/*
 * A new communicator's context from its meeting's instance id (unique in
 * the job, any 64 bits) and the lowest old rank of a split's color: a
 * 64-bit mix, in [16, 2^62) (bit 63: group keys, bit 62: one-member
 * communicators, below 16: fixed contexts).
 */
uint64_t freshContext(uint64_t instance, uint64_t lowest);
/* Barrier over the world, stop this process's agent thread, then drop everything. */
int finalizeRuntime();

/* ---- Progress ------------------------------------------------------------- */
/*
 * The host's doorbells: one per world rank, in one memfd segment made by
 * the host's first rank in initRuntime() and mapped by every rank of the
 * host (with the served directory after them). A rank's doorbell is where
 * its progress thread parks (thread mode), or its agent (agent mode). Producers ring the one
 * progressDoorbell() names after queueing work on a target's ring.
 */

/* The configuration read at initRuntime() (the defaults before). Thread-safe once initialized. */
const ProgressConfig &progressConfig();

/*
 * The doorbell of world rank @worldRank on this host, or nullptr (not
 * initialized, out of range). Valid until finalizeRuntime(). Thread-safe.
 */
Doorbell *hostDoorbell(int worldRank);

/*
 * Agent mode: the world rank whose agent serves ring memory on NUMA node
 * @node of this host: the lowest world rank bound to @node (boundNode()),
 * else, for -1 and nodes without one, the host's default agent (the lowest
 * node's, or the host's lowest world rank when no rank is bound to one
 * node). -1 in the other modes or before initRuntime(). Thread-safe.
 */
int agentWorldRank(int node = -1);

/* Agent mode: whether this process's agent serves ring memory on @node. Thread-safe. */
bool servesNode(int node);

/* Agent mode: whether this process runs one of the host's agents. Thread-safe. */
bool isHostAgent();

/*
 * Agent mode: whether the host agent in process @pid (a consumer-role
 * holder id's pid, win/acc_area.h) has died, for a waiter that found it
 * holding a ring. Sets @worldRank to that agent's world rank (-1: @pid is
 * none of this host's agents). Pid reuse cannot make a dead agent look
 * alive: every process opens a pidfd of each of its host's agents in
 * initRuntime(), right after the allgather in which they took part, and
 * asks that pidfd (readable once the process has exited, zombie or
 * reaped); the launcher's job status page is asked first. Only where
 * pidfd_open() is missing does it fall back to kill(@pid, 0), which a
 * reused pid can fool. Slow path (system calls): callers rate-limit it.
 * Thread-safe between initRuntime() and finalizeRuntime().
 */
bool hostAgentDead(int32_t pid, int &worldRank);

/* The nodes this process's agent serves (-1 last for the default role); empty if none. */
std::vector<int> agentNodes();

/*
 * Agent mode: the host's directory of rings the agents serve (lives in the
 * doorbell segment until finalizeRuntime()); invalid in the other modes.
 */
ServedDirectory servedDirectory();

/*
 * The doorbell to ring after queueing work for @targetWorldRank whose
 * memory is on NUMA node @node: the target's own in thread mode, the
 * node's agent's in agent mode; nullptr in none mode (no thread to wake:
 * origins drain the rings themselves) or when @targetWorldRank is out of
 * range. Thread-safe.
 */
Doorbell *progressDoorbell(int targetWorldRank, int node = -1);

/*
 * This process's agent: its sources are the rings this process drains (its
 * own windows' in thread mode; in agent mode, on a node's agent rank, the
 * served directory's, win/agent_service.h). Parks on hostDoorbell(own world rank) once initialized. Its thread
 * runs only after ensureAgentThread(). The object lives as long as the
 * process; add/remove its sources as ProgressAgent says (thread-safe).
 */
ProgressAgent &localAgent();

/*
 * Start localAgent()'s thread if this process should run one and it does
 * not run yet: thread mode, every rank (keeping the rank's binding); agent
 * mode, the host agents only (isHostAgent(); each pinned to the listed
 * core of its node, else keeping its rank's binding);
 * none mode, nobody. Returns RMA_SUCCESS (also when there is nothing to
 * start) or start()'s error (RMA_ERR_ARG: the core cannot be used).
 * Thread-safe. The thread stops in finalizeRuntime() (or at exit()); the
 * window code removes its sources before it unmaps their memory.
 */
int ensureAgentThread();

/* Handle conversions. */
inline Comm *toComm(rma_comm h) { return runtime().comms.lookup(reinterpret_cast<uintptr_t>(h)); }
inline Group *toGroup(rma_group h) { return runtime().groups.lookup(reinterpret_cast<uintptr_t>(h)); }
inline Info *toInfo(rma_info h) { return runtime().infos.lookup(reinterpret_cast<uintptr_t>(h)); }
inline Errhandler *toErrhandler(rma_errhandler h)
{
	return runtime().errhandlers.lookup(reinterpret_cast<uintptr_t>(h));
}

/*
 * Deliver an error to an object's handler: Fatal/Abort print the message and
 * end the job; Return hands the code back; user handlers are called first.
 * @what names the object in the fatal message. Returns @code.
 */
int invokeCommErrhandler(const Errhandler &handler, rma_comm comm, int code);
int invokeWinErrhandler(const Errhandler &handler, rma_win win, int code);
/* The fatal path itself, shared by all handlers. */
[[noreturn]] void fatalError(const char *objectName, int code);

} /* namespace librma */
