/* SPDX-License-Identifier: MIT */
#include "core/core.h"

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstring>

#include "error/error.h"

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
	return runtime().bootstrap->allgather(context_, sequence_++, group_->worldRanks(), rank_, data, fds,
					      out);
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
	uint64_t context = (out.instance << 24) | static_cast<uint64_t>(lowest);
	newComm = std::make_shared<Comm>(std::make_shared<const Group>(std::move(world)), newRank, context);
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

int initRuntime()
{
	Runtime &rt = runtime();
	auto boot = Bootstrap::fromEnvironment();
	if (!boot)
		return boot.code();
	rt.bootstrap = std::move(boot.value());
	int rank = rt.bootstrap->rank();
	int size = rt.bootstrap->size();

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

	rt.initialized = true;
	return RMA_SUCCESS;
}

int finalizeRuntime()
{
	Runtime &rt = runtime();
	RMA_TRY(rt.comms.lookup(reinterpret_cast<uintptr_t>(RMA_COMM_WORLD))->barrier());
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
