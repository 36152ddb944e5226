/* SPDX-License-Identifier: MIT */
/*
 * Traffic statistics (RMA_STATS): the cold half of the counting, and the
 * job's JSON file (format in stats.h). Nothing here runs unless RMA_STATS
 * turned statistics on: the data paths reach it only through a branch on
 * Window::stats_.
 */
#include "win/stats.h"

#include <fcntl.h>
#include <sys/file.h>
#include <unistd.h>

#include <cerrno>
#include <climits>
#include <cstdio>
#include <cstring>

#include <nlohmann/json.hpp>

#include "common/knobs.h"
#include "common/unique_fd.h"
#include "error/error.h"
#include "win/window.h"

namespace librma {

namespace {

using json = nlohmann::json;

constexpr const char *kFormat = "librma-stats";
constexpr const char *kFileName = "rma-stats.json";

std::string &statsPath()
{
	static std::string path;
	return path;
}

json freshFile(int worldSize)
{
	json j = json::object();
	j["format"] = kFormat;
	j["version"] = 1;
	j["world_size"] = worldSize;
	j["kinds"] = json::array();
	for (const char *k : kTrafficKindNames)
		j["kinds"].push_back(k);
	j["windows"] = json::array();
	return j;
}

/* Whether @m is an n x n matrix of unsigned numbers. */
bool squareMatrix(const json &m, std::size_t n)
{
	if (!m.is_array() || m.size() != n)
		return false;
	for (const json &row : m) {
		if (!row.is_array() || row.size() != n)
			return false;
		for (const json &v : row)
			if (!v.is_number_unsigned())
				return false;
	}
	return true;
}

/* Whether @w is a window entry of @n members this code can merge into. */
bool mergeable(const json &w, std::size_t n)
{
	if (!w.is_object() || !w.contains("ranks") || !w["ranks"].is_array() || w["ranks"].size() != n ||
	    !w.contains("sizes") || !w["sizes"].is_array() || w["sizes"].size() != n || !w.contains("reported") ||
	    !w["reported"].is_array() || !w.contains("ops") || !w.contains("bytes") || !w["ops"].is_object() ||
	    !w["bytes"].is_object())
		return false;
	for (const json &s : w["sizes"])
		if (!s.is_number_unsigned())
			return false;
	for (const char *k : kTrafficKindNames)
		if (!w["ops"].contains(k) || !squareMatrix(w["ops"][k], n) || !w["bytes"].contains(k) ||
		    !squareMatrix(w["bytes"][k], n))
			return false;
	return true;
}

bool writeAll(int fd, const std::string &text)
{
	std::size_t done = 0;
	while (done < text.size()) {
		ssize_t n = pwrite(fd, text.data() + done, text.size() - done, static_cast<off_t>(done));
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			return false;
		done += static_cast<std::size_t>(n);
	}
	return ftruncate(fd, static_cast<off_t>(text.size())) == 0;
}

std::string readAll(int fd)
{
	std::string text;
	char buf[65536];
	for (off_t at = 0;;) {
		ssize_t n = pread(fd, buf, sizeof(buf), at);
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			break;
		text.append(buf, static_cast<std::size_t>(n));
		at += n;
	}
	return text;
}

} /* namespace */

const std::string &trafficStatsPath()
{
	return statsPath();
}

int initTrafficStats(int worldRank, int worldSize)
{
	std::string &path = statsPath();
	path.clear();
	const char *v = knobValue("RMA_STATS");
	if (!v || !std::strcmp(v, "0"))
		return RMA_SUCCESS;
	std::string p = !std::strcmp(v, "1") ? kFileName : v;
	if (std::strcmp(v, "1") && knobs::directory(v))
		p = std::string(v) + "/" + kFileName;
	if (p[0] != '/') {
		char cwd[PATH_MAX];
		if (!getcwd(cwd, sizeof(cwd)))
			return makeError(RMA_ERR_OTHER, "rma_init: RMA_STATS: cannot read the working directory (%s)",
					 std::strerror(errno));
		p = std::string(cwd) + "/" + p;
	}
	path = p;
	if (worldRank != 0)
		return RMA_SUCCESS;
	UniqueFd fd(open(path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0644));
	if (fd.get() < 0 || flock(fd.get(), LOCK_EX) != 0 || !writeAll(fd.get(), freshFile(worldSize).dump(1) + "\n"))
		return makeError(RMA_ERR_OTHER, "rma_init: RMA_STATS: cannot write %s (%s)", path.c_str(),
				 std::strerror(errno));
	return RMA_SUCCESS;
}

void Window::startTraffic(uint64_t id)
{
	stats_ = true;
	statsId_ = id;
	traffic_.assign(static_cast<std::size_t>(nTargets_) * kTrafficKinds * 2, 0);
}

void Window::countTraffic(TrafficKind kind, int target, uint64_t bytes)
{
	const std::size_t at = (static_cast<std::size_t>(target) * kTrafficKinds + static_cast<std::size_t>(kind)) * 2;
	if (at + 1 >= traffic_.size())
		return;
	traffic_[at] += 1;
	traffic_[at + 1] += bytes;
}

void Window::countAccumulate(const AccArgs &a)
{
	if (a.target < 0)
		return;
	if (const Datatype *td = lookupDatatype(a.ttype))
		countTraffic(a.fetchAndOp ? TrafficKind::FetchAndOp
			     : a.fetch	  ? TrafficKind::GetAccumulate
					  : TrafficKind::Accumulate,
			     a.target, static_cast<uint64_t>(td->size) * static_cast<uint64_t>(a.tcount));
}

int Window::accumulateCounted(const char *call, const AccArgs &a)
{
	int rc = accumulateChecked(call, a);
	if (rc == RMA_SUCCESS)
		countAccumulate(a);
	return rc;
}

int Window::compareAndSwapCounted(const char *call, const void *origin, const void *compare, void *result,
				  rma_datatype type, int target, rma_aint disp, uint64_t *queuedSeq)
{
	int rc = compareAndSwapBody(call, origin, compare, result, type, target, disp, queuedSeq);
	if (rc == RMA_SUCCESS && target >= 0)
		if (const Datatype *d = lookupDatatype(type))
			countTraffic(TrafficKind::CompareAndSwap, target, static_cast<uint64_t>(d->size));
	return rc;
}

/*
 * Every member's row to the window's rank 0, which writes them all (the
 * others write nothing). Collective: every member of a window has stats_
 * (RMA_STATS is the job's). A row is this rank's memory size, then its
 * traffic_.
 */
int Window::gatherTraffic()
{
	const std::size_t n = static_cast<std::size_t>(size());
	if (traffic_.size() != n * kTrafficKinds * 2)
		return RMA_SUCCESS; /* never started: nothing counted, nothing to write */
	std::vector<uint64_t> row(1 + traffic_.size());
	row[0] = static_cast<uint64_t>(localSize_);
	std::copy(traffic_.begin(), traffic_.end(), row.begin() + 1);
	GatherResult out;
	RMA_TRY(comm_->allgather(std::as_bytes(std::span(row)), {}, out));
	if (out.data.size() != n * row.size() * sizeof(uint64_t))
		return makeError(RMA_ERR_INTERN, "rma_win_free: RMA_STATS rows of window '%s' did not gather",
				 name.c_str());
	if (rank() != 0) {
		stats_ = false;
		return RMA_SUCCESS;
	}
	std::vector<uint64_t> all(n * row.size());
	std::memcpy(all.data(), out.data.data(), out.data.size());
	writeTraffic(&all);
	return RMA_SUCCESS;
}

/*
 * Merge rows into the job's file: @all, every member's (gatherTraffic()),
 * else this rank's own. Failures are reported on stderr and otherwise
 * ignored: statistics never fail a job's rma_win_free.
 */
void Window::writeTraffic(const std::vector<uint64_t> *all)
{
	if (!stats_)
		return;
	stats_ = false;
	const std::string &path = trafficStatsPath();
	const std::vector<int> &world = group()->worldRanks();
	const std::size_t n = world.size();
	const int me = rank();
	if (path.empty() || n == 0 || traffic_.size() != n * kTrafficKinds * 2)
		return;
	const std::size_t rowWords = 1 + traffic_.size();
	if (all && all->size() != n * rowWords)
		return;
	UniqueFd fd(open(path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0644));
	if (fd.get() < 0 || flock(fd.get(), LOCK_EX) != 0) {
		std::fprintf(stderr, "librma: RMA_STATS: cannot open %s (%s); window '%s' not reported\n", path.c_str(),
			     std::strerror(errno), name.c_str());
		return;
	}
	json j = json::parse(readAll(fd.get()), nullptr, false);
	if (!j.is_object() || !j.contains("format") || j["format"] != kFormat || !j.contains("windows") ||
	    !j["windows"].is_array())
		j = freshFile(static_cast<int>(n)); /* only rank 0 of world starts it; a singleton job may not */
	json *entry = nullptr;
	for (json &w : j["windows"])
		if (w.is_object() && w.contains("id") && w["id"] == statsId_ && mergeable(w, n))
			entry = &w;
	if (!entry) {
		json w = json::object();
		w["id"] = statsId_;
		w["name"] = name;
		w["flavor"] = flavor_ == Flavor::Create	    ? "create"
			      : flavor_ == Flavor::Allocate ? "allocate"
			      : flavor_ == Flavor::Dynamic  ? "dynamic"
							    : "shared";
		w["ranks"] = world;
		w["sizes"] = std::vector<uint64_t>(n, 0);
		w["size"] = 0;
		w["reported"] = json::array();
		const json zero = std::vector<std::vector<uint64_t>>(n, std::vector<uint64_t>(n, 0));
		w["ops"] = json::object();
		w["bytes"] = json::object();
		for (const char *k : kTrafficKindNames) {
			w["ops"][k] = zero;
			w["bytes"][k] = zero;
		}
		j["windows"].push_back(std::move(w));
		entry = &j["windows"].back();
	}
	json &w = *entry;
	if (!name.empty())
		w["name"] = name;
	/* One member's row: @r its window rank, @size its memory, @counts its traffic_. */
	auto put = [&](std::size_t r, uint64_t size, const uint64_t *counts) {
		w["sizes"][r] = size;
		w["reported"].push_back(world[r]);
		for (std::size_t t = 0; t < n; ++t)
			for (int k = 0; k < kTrafficKinds; ++k) {
				const std::size_t at = (t * kTrafficKinds + static_cast<std::size_t>(k)) * 2;
				w["ops"][kTrafficKindNames[k]][r][t] = counts[at];
				w["bytes"][kTrafficKindNames[k]][r][t] = counts[at + 1];
			}
	};
	if (all) {
		for (std::size_t r = 0; r < n; ++r)
			put(r, (*all)[r * rowWords], all->data() + r * rowWords + 1);
	} else {
		put(static_cast<std::size_t>(me), static_cast<uint64_t>(localSize_), traffic_.data());
	}
	uint64_t total = 0;
	for (const json &s : w["sizes"])
		total += s.get<uint64_t>();
	w["size"] = total;
	if (!writeAll(fd.get(), j.dump(1) + "\n"))
		std::fprintf(stderr, "librma: RMA_STATS: cannot write %s (%s); window '%s' not reported\n", path.c_str(),
			     std::strerror(errno), name.c_str());
}

} /* namespace librma */
