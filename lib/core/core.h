/* SPDX-License-Identifier: MIT */
/*
 * The runtime's objects that are not windows: the job (bootstrap), groups,
 * communicators, info objects and error handlers. This header is the
 * component's only door.
 *
 * Thread safety: control path; callers serialize (RMA_THREAD_SERIALIZED).
 */
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include <rma/rma.h>

#include "bootstrap/bootstrap.h"
#include "common/result.h"
#include "core/handle_table.h"

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

	std::shared_ptr<Errhandler> errhandler;
	std::string name;

private:
	std::shared_ptr<const Group> group_;
	int rank_;
	uint64_t context_;
	uint64_t sequence_ = 0;
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

/* Process-wide state. */
struct Runtime {
	bool initialized = false;
	bool finalized = false;
	std::unique_ptr<Bootstrap> bootstrap;
	HandleTable<Comm, HandleKind::Comm> comms;
	HandleTable<Group, HandleKind::Group> groups;
	HandleTable<Info, HandleKind::Info> infos;
	HandleTable<Errhandler, HandleKind::Errhandler> errhandlers;
};

Runtime &runtime();

/* Join the job (bootstrap, world and self communicators, predefined handles). */
int initRuntime();
/* Barrier over the world, then drop everything. */
int finalizeRuntime();

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
