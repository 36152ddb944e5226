/* SPDX-License-Identifier: MIT */
#include "rmatune_recommend.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <limits>
#include <map>
#include <numeric>
#include <random>
#include <sstream>

#include "bootstrap/binding.h"
#include "placement_file.h"
#include "rmatune_text.h"

using nlohmann::json;

namespace rmatune {

namespace {

constexpr double kLineBytes = 64;

/* How two slots relate: 0 same L3, 1 same node, 2 same package, 3 apart (as probe's sampling groups them). */
int relation(const Slot &a, const Slot &b)
{
	if (a.l3 >= 0 && a.l3 == b.l3)
		return 0;
	if (a.node >= 0 && a.node == b.node)
		return 1;
	if (a.package >= 0 && a.package == b.package)
		return 2;
	return 3;
}

const char *const kRelationNames[] = { "same L3", "same NUMA node", "same package", "other package" };

double median(std::vector<double> v)
{
	if (v.empty())
		return std::nan("");
	std::sort(v.begin(), v.end());
	const std::size_t h = v.size() / 2;
	return v.size() % 2 ? v[h] : (v[h - 1] + v[h]) / 2;
}

bool isNumber(const json &v)
{
	return v.is_number() && std::isfinite(v.get<double>()) && v.get<double>() >= 0;
}

} /* namespace */

bool costModelFromProfile(const json &p, CostModel &model, std::string &err)
{
	model = CostModel();
	try {
		if (!p.is_object() || p.value("schema", "") != "rmatune-profile") {
			err = "not an rmatune profile (\"schema\": \"rmatune-profile\"; rmatune probe --output writes one)";
			return false;
		}
		if (p.value("schema_version", 0) != 1) {
			err = "profile schema_version is not 1";
			return false;
		}
		const json &t = p.at("topology");
		std::vector<int> allowed = t.value("allowed_cpus", std::vector<int>());
		std::sort(allowed.begin(), allowed.end());
		model.topologyIdentity = t.value("identity", "");
		model.topologySource = t.value("source", "");
		model.profileTimestamp = p.value("timestamp", "");
		for (const json &c : t.at("cores")) {
			Slot s;
			s.core = c.at("index").get<int>();
			for (int cpu : c.at("cpus").get<std::vector<int>>())
				if (allowed.empty() || std::binary_search(allowed.begin(), allowed.end(), cpu))
					s.cpus.push_back(cpu);
			s.node = c.value("node", -1);
			s.l3 = c.value("l3", -1);
			s.package = c.value("package", -1);
			if (!s.cpus.empty())
				model.slots.push_back(std::move(s));
		}
		if (model.slots.empty()) {
			err = "the profile's topology has no core with an allowed CPU";
			return false;
		}
		const std::size_t m = model.slots.size();
		model.halfRoundTripNs.assign(m * m, std::nan(""));
		model.memoryNs.assign(m * m, std::nan(""));

		/* Core to core: measured cells, by core index. */
		const json &cc = p.at("core_to_core");
		const std::vector<int> measuredCores = cc.at("cores").get<std::vector<int>>();
		const json &rt = cc.at("median");
		std::map<int, std::size_t> slotOfCore;
		for (std::size_t i = 0; i < m; ++i)
			slotOfCore[model.slots[i].core] = i;
		std::vector<std::vector<double>> byRelation(4);
		for (std::size_t i = 0; i < measuredCores.size(); ++i)
			for (std::size_t j = 0; j < measuredCores.size(); ++j) {
				if (i == j || !isNumber(rt.at(i).at(j)))
					continue;
				auto a = slotOfCore.find(measuredCores[i]), b = slotOfCore.find(measuredCores[j]);
				if (a == slotOfCore.end() || b == slotOfCore.end())
					continue;
				const double half = rt[i][j].get<double>() / 2;
				model.halfRoundTripNs[a->second * m + b->second] = half;
				byRelation[static_cast<std::size_t>(relation(model.slots[a->second], model.slots[b->second]))]
					.push_back(half);
			}
		/* Estimates for the rest, by relation: the median of that kind, else the nearest kind measured farther out, else nearer. */
		std::vector<double> classValue(4);
		std::vector<std::string> classFrom(4);
		for (int k = 0; k < 4; ++k) {
			int from = -1;
			for (int f = k; f < 4 && from < 0; ++f)
				if (!byRelation[static_cast<std::size_t>(f)].empty())
					from = f;
			for (int f = k - 1; f >= 0 && from < 0; --f)
				if (!byRelation[static_cast<std::size_t>(f)].empty())
					from = f;
			classValue[static_cast<std::size_t>(k)] = from < 0 ? 0 : median(byRelation[static_cast<std::size_t>(from)]);
			classFrom[static_cast<std::size_t>(k)] = from < 0 ? "nothing measured: 0" : kRelationNames[from];
		}
		std::vector<long long> estimatedByRelation(4, 0);
		for (std::size_t a = 0; a < m; ++a)
			for (std::size_t b = 0; b < m; ++b) {
				double &cell = model.halfRoundTripNs[a * m + b];
				if (a == b) {
					cell = 0;
				} else if (std::isnan(cell)) {
					const int k = relation(model.slots[a], model.slots[b]);
					cell = classValue[static_cast<std::size_t>(k)];
					++estimatedByRelation[static_cast<std::size_t>(k)];
				}
			}
		for (int k = 0; k < 4; ++k)
			if (estimatedByRelation[static_cast<std::size_t>(k)] > 0)
				model.estimates.push_back(cat(
					"core-to-core, ", kRelationNames[k], ": ",
					std::to_string(estimatedByRelation[static_cast<std::size_t>(k)] / 2),
					" unmeasured core pairs take ", fmt("%.1f", 2 * classValue[static_cast<std::size_t>(k)]),
					" ns round trip (median of measured pairs: ", classFrom[static_cast<std::size_t>(k)], ")"));

		/* Memory: latency from the origin core's node to the target core's node. */
		const json &mem = p.at("memory");
		const std::vector<int> fromNodes = mem.at("from_nodes").get<std::vector<int>>();
		const std::vector<int> toNodes = mem.at("to_nodes").get<std::vector<int>>();
		const json &lat = mem.at("latency").at("median");
		std::map<std::pair<int, int>, double> nodeLatency;
		std::vector<double> local, remote;
		for (std::size_t r = 0; r < fromNodes.size(); ++r)
			for (std::size_t c = 0; c < toNodes.size(); ++c)
				if (isNumber(lat.at(r).at(c))) {
					nodeLatency[{ fromNodes[r], toNodes[c] }] = lat[r][c].get<double>();
					(fromNodes[r] == toNodes[c] ? local : remote).push_back(lat[r][c].get<double>());
				}
		const double localEstimate = !local.empty() ? median(local) : !remote.empty() ? median(remote) : 0;
		const double remoteEstimate = !remote.empty() ? median(remote) : localEstimate;
		long long estimatedLocal = 0, estimatedRemote = 0;
		for (std::size_t a = 0; a < m; ++a)
			for (std::size_t b = 0; b < m; ++b) {
				const int from = model.slots[a].node, to = model.slots[b].node;
				auto it = nodeLatency.find({ from, to });
				if (it != nodeLatency.end()) {
					model.memoryNs[a * m + b] = it->second;
				} else if (from == to) {
					model.memoryNs[a * m + b] = localEstimate;
					++estimatedLocal;
				} else {
					model.memoryNs[a * m + b] = remoteEstimate;
					++estimatedRemote;
				}
			}
		/*
		 * By node, for the memory policy: the nodes with memory (the
		 * topology's, else the measured columns, else the cores' nodes),
		 * latency from each node with a core to each of them.
		 */
		std::vector<int> withMemory;
		if (t.contains("numa_nodes") && t["numa_nodes"].is_array()) {
			for (const json &n : t["numa_nodes"])
				if (n.value("has_memory", true))
					withMemory.push_back(n.at("id").get<int>());
		}
		if (withMemory.empty())
			withMemory = toNodes;
		if (withMemory.empty())
			for (const Slot &slot : model.slots)
				withMemory.push_back(slot.node);
		std::sort(withMemory.begin(), withMemory.end());
		withMemory.erase(std::unique(withMemory.begin(), withMemory.end()), withMemory.end());
		model.memoryNodes = withMemory;
		for (const Slot &slot : model.slots)
			for (int to : withMemory) {
				auto it = nodeLatency.find({ slot.node, to });
				const bool measured = it != nodeLatency.end();
				if (!measured && !model.nodeLatencyNs.count({ slot.node, to })) {
					if (slot.node == to)
						++estimatedLocal;
					else
						++estimatedRemote;
				}
				model.nodeLatencyNs[{ slot.node, to }] = measured	   ? it->second
									 : slot.node == to ? localEstimate
											   : remoteEstimate;
			}
		if (mem.contains("bandwidth") && mem["bandwidth"].contains("median")) {
			const json &bw = mem["bandwidth"]["median"];
			for (std::size_t r = 0; r < fromNodes.size() && r < bw.size(); ++r)
				for (std::size_t c = 0; c < toNodes.size() && c < bw[r].size(); ++c)
					if (isNumber(bw[r][c]) && bw[r][c].get<double>() > 0) {
						double &best = model.nodeBandwidthGBs[toNodes[c]];
						best = std::max(best, bw[r][c].get<double>());
					}
			/* A memory node without a figure takes the median of those measured, and the evidence says so.
			 */
			std::vector<double> measured;
			for (const auto &[node, gbs] : model.nodeBandwidthGBs)
				measured.push_back(gbs);
			for (int node : withMemory)
				if (!measured.empty() && !model.nodeBandwidthGBs.count(node)) {
					model.nodeBandwidthGBs[node] = median(measured);
					model.estimates.push_back(cat("memory bandwidth of node ", std::to_string(node),
								      ": unmeasured, taken as ",
								      fmt("%.1f", median(measured)),
								      " GB/s (median of measured nodes)"));
				}
		}
		if (t.contains("huge_pages") && t["huge_pages"].contains("free") &&
		    t["huge_pages"]["free"].is_number_integer())
			model.hugePagesFree = t["huge_pages"]["free"].get<long long>();
		if (estimatedLocal > 0)
			model.estimates.push_back(cat("memory, local: unmeasured node pairs take ", fmt("%.1f", localEstimate),
						      " ns (median of measured local cells", local.empty() ? ", none: remote" : "",
						      ")"));
		if (estimatedRemote > 0)
			model.estimates.push_back(cat("memory, remote: unmeasured node pairs take ",
						      fmt("%.1f", remoteEstimate), " ns (median of measured remote cells",
						      remote.empty() ? ", none: local" : "", ")"));
	} catch (const json::exception &e) {
		err = cat("the profile lacks a part the model needs: ", e.what());
		return false;
	}
	return true;
}

namespace {

/*
 * Entries of a librma statistics file (lib/win/stats.h): every kind's bytes
 * of the chosen windows, by world rank. False with @err naming the place.
 */
struct StatsBytes {
	long long origin, target;
	double bytes;
};

/* @bytes rounded up to whole 2 MiB pages. */
long long hugeRounded(double bytes)
{
	const auto page = static_cast<long long>(librma::kHugePageSize);
	return (static_cast<long long>(bytes) + page - 1) / page * page;
}

bool statsEntries(const json &j, const std::string &origin, const std::vector<std::string> &windows,
		  std::vector<StatsBytes> &entries, int &size, std::string &err, Traffic &out)
{
	out.hugePageBytes = 0;
	out.windowsInPool = 0;
	if (!j.contains("world_size") || !j["world_size"].is_number_integer() || j["world_size"].get<int>() <= 0 ||
	    !j.contains("windows") || !j["windows"].is_array()) {
		err = cat(origin, ": a librma-stats file needs \"world_size\" and \"windows\"");
		return false;
	}
	size = j["world_size"].get<int>();
	std::vector<bool> found(windows.size(), false);
	std::size_t i = 0;
	for (const json &w : j["windows"]) {
		const std::string where = cat(origin, ": windows[", std::to_string(i++), "]");
		if (!w.is_object() || !w.contains("ranks") || !w["ranks"].is_array() || !w.contains("bytes") ||
		    !w["bytes"].is_object()) {
			err = cat(where, " needs \"ranks\" and \"bytes\"");
			return false;
		}
		const std::string name = w.value("name", std::string());
		const std::string id = w.contains("id") ? w["id"].dump() : std::string();
		/* Every window that takes pool pages counts for huge pages, chosen or not. */
		std::vector<double> sizes;
		if (w.contains("sizes") && w["sizes"].is_array())
			for (const json &b : w["sizes"])
				sizes.push_back(isNumber(b) ? b.get<double>() : 0);
		const std::string flavor = w.value("flavor", std::string());
		if (flavor == "allocate" || flavor == "shared") {
			for (double b : sizes)
				out.hugePageBytes += hugeRounded(b);
			++out.windowsInPool;
		}
		if (!windows.empty()) {
			bool chosen = false;
			for (std::size_t k = 0; k < windows.size(); ++k)
				if (windows[k] == name || windows[k] == id)
					chosen = found[k] = true;
			if (!chosen)
				continue;
		}
		const json &ranks = w["ranks"];
		const std::size_t n = ranks.size();
		for (const json &r : ranks)
			if (!r.is_number_integer() || r.get<long long>() < 0 || r.get<long long>() >= size) {
				err = cat(where, ": \"ranks\" must list world ranks (0..", std::to_string(size - 1),
					  ")");
				return false;
			}
		WindowTraffic own;
		own.name = name;
		own.id = id;
		own.traffic.ranks = size;
		own.traffic.bytes.assign(static_cast<std::size_t>(size) * static_cast<std::size_t>(size), 0);
		for (std::size_t r = 0; r < n; ++r) {
			own.worldRanks.push_back(ranks[r].get<int>());
			own.sizes.push_back(r < sizes.size() ? sizes[r] : 0);
		}
		for (auto it = w["bytes"].begin(); it != w["bytes"].end(); ++it) {
			const std::string kind = it.key();
			const json &m = it.value();
			if (!m.is_array() || m.size() != n) {
				err = cat(where, ": bytes.", kind, " must be a ", std::to_string(n), " x ", std::to_string(n),
					  " matrix");
				return false;
			}
			for (std::size_t r = 0; r < n; ++r) {
				if (!m[r].is_array() || m[r].size() != n) {
					err = cat(where, ": bytes.", kind, "[", std::to_string(r), "] must hold ",
						  std::to_string(n), " numbers");
					return false;
				}
				for (std::size_t c = 0; c < n; ++c) {
					if (!isNumber(m[r][c])) {
						err = cat(where, ": bytes.", kind, "[", std::to_string(r), "][",
							  std::to_string(c), "] is not a non-negative number");
						return false;
					}
					if (const double b = m[r][c].get<double>(); b > 0) {
						entries.push_back({ ranks[r].get<long long>(), ranks[c].get<long long>(), b });
						own.traffic.bytes[ranks[r].get<std::size_t>() *
									  static_cast<std::size_t>(size) +
								  ranks[c].get<std::size_t>()] += b;
					}
				}
			}
		}
		out.windows.push_back(std::move(own));
	}
	for (std::size_t k = 0; k < windows.size(); ++k)
		if (!found[k]) {
			err = cat(origin, ": no window named \"", windows[k], "\" (nor with that id)");
			return false;
		}
	return true;
}

} /* namespace */

bool parseTraffic(std::string_view text, const std::string &origin, int ranks, Traffic &traffic, std::string &err,
		  const std::vector<std::string> &windows)
{
	traffic = Traffic();
	Traffic statsTraffic; /* the per-window parts of a librma statistics file */
	struct Entry {
		long long origin, target;
		double bytes;
	};
	std::vector<Entry> entries;
	int size = 0;
	const std::size_t first = text.find_first_not_of(" \t\r\n");
	if (first != std::string_view::npos && text[first] == '{') {
		json j;
		try {
			j = json::parse(text.begin(), text.end());
		} catch (const json::parse_error &e) {
			err = cat(origin, ": malformed JSON at byte ", std::to_string(e.byte));
			return false;
		}
		try {
			if (j.is_object() && j.value("format", std::string()) == "librma-stats") {
				std::vector<StatsBytes> found;
				if (!statsEntries(j, origin, windows, found, size, err, statsTraffic))
					return false;
				for (const StatsBytes &e : found)
					entries.push_back({ e.origin, e.target, e.bytes });
			} else if (j.contains("bytes")) {
				const json &rows = j["bytes"];
				if (!rows.is_array() || rows.empty()) {
					err = cat(origin, ": \"bytes\" must be a square matrix (an array of rows)");
					return false;
				}
				size = static_cast<int>(rows.size());
				for (std::size_t r = 0; r < rows.size(); ++r) {
					if (!rows[r].is_array() || rows[r].size() != rows.size()) {
						err = cat(origin, ": bytes[", std::to_string(r), "] must hold ",
							  std::to_string(rows.size()), " numbers (the matrix is square)");
						return false;
					}
					for (std::size_t c = 0; c < rows.size(); ++c) {
						if (!isNumber(rows[r][c])) {
							err = cat(origin, ": bytes[", std::to_string(r), "][", std::to_string(c),
								  "] is not a non-negative number");
							return false;
						}
						entries.push_back({ static_cast<long long>(r), static_cast<long long>(c),
								    rows[r][c].get<double>() });
					}
				}
			} else if (j.contains("pairs")) {
				if (j.contains("ranks"))
					size = j["ranks"].get<int>();
				std::size_t i = 0;
				for (const json &e : j["pairs"]) {
					if (!e.is_object() || !e.contains("origin") || !e.contains("target") ||
					    !e["origin"].is_number_integer() || !e["target"].is_number_integer() ||
					    !isNumber(e.value("bytes", json()))) {
						err = cat(origin, ": pairs[", std::to_string(i),
							  "] must be { \"origin\": R, \"target\": S, \"bytes\": B }");
						return false;
					}
					entries.push_back({ e["origin"].get<long long>(), e["target"].get<long long>(),
							    e["bytes"].get<double>() });
					++i;
				}
			} else {
				err = cat(origin, ": expected \"bytes\" (a matrix) or \"pairs\"");
				return false;
			}
		} catch (const json::exception &e) {
			err = cat(origin, ": ", e.what());
			return false;
		}
	} else {
		std::istringstream in{ std::string(text) };
		std::string line;
		for (int number = 1; std::getline(in, line); ++number) {
			if (const std::size_t hash = line.find('#'); hash != std::string::npos)
				line.erase(hash);
			std::replace(line.begin(), line.end(), ',', ' ');
			std::istringstream fields(line);
			std::string a, b, c, extra;
			if (!(fields >> a))
				continue;
			if (a == "origin")
				continue; /* the header */
			char *end = nullptr;
			Entry e{};
			bool ok = static_cast<bool>(fields >> b >> c) && !(fields >> extra);
			if (ok) {
				e.origin = std::strtoll(a.c_str(), &end, 10);
				ok = *end == '\0' && !a.empty();
				e.target = std::strtoll(b.c_str(), &end, 10);
				ok = ok && *end == '\0';
				e.bytes = std::strtod(c.c_str(), &end);
				ok = ok && *end == '\0' && std::isfinite(e.bytes) && e.bytes >= 0;
			}
			if (!ok) {
				err = cat(origin, ":", std::to_string(number),
					  ": expected \"origin,target,bytes\" (two ranks and a non-negative byte count)");
				return false;
			}
			entries.push_back(e);
		}
	}
	long long largest = -1;
	for (const Entry &e : entries) {
		if (e.origin < 0 || e.target < 0) {
			err = cat(origin, ": rank ", std::to_string(std::min(e.origin, e.target)), " is negative");
			return false;
		}
		largest = std::max({ largest, e.origin, e.target });
	}
	if (ranks > 0)
		size = ranks;
	else if (size == 0)
		size = static_cast<int>(largest + 1);
	if (size <= 0) {
		err = cat(origin, ": no traffic and no number of ranks");
		return false;
	}
	if (largest >= size) {
		err = cat(origin, ": rank ", std::to_string(largest), " is outside a ", std::to_string(size), "-rank job");
		return false;
	}
	traffic.ranks = size;
	traffic.windows = std::move(statsTraffic.windows);
	traffic.hugePageBytes = statsTraffic.hugePageBytes;
	traffic.windowsInPool = statsTraffic.windowsInPool;
	/* --ranks may be larger than the job that wrote the statistics: the windows' matrices follow. */
	for (WindowTraffic &w : traffic.windows) {
		Traffic grown;
		grown.ranks = size;
		grown.bytes.assign(static_cast<std::size_t>(size) * static_cast<std::size_t>(size), 0);
		for (int r = 0; r < std::min(size, w.traffic.ranks); ++r)
			for (int c = 0; c < std::min(size, w.traffic.ranks); ++c)
				grown.bytes[static_cast<std::size_t>(r) * static_cast<std::size_t>(size) +
					    static_cast<std::size_t>(c)] = w.traffic.at(r, c);
		w.traffic = std::move(grown);
	}
	traffic.bytes.assign(static_cast<std::size_t>(size) * static_cast<std::size_t>(size), 0);
	for (const Entry &e : entries)
		traffic.bytes[static_cast<std::size_t>(e.origin) * static_cast<std::size_t>(size) +
			      static_cast<std::size_t>(e.target)] += e.bytes;
	return true;
}

double placementCost(const CostModel &model, const Traffic &traffic, const std::vector<int> &slotOf)
{
	double cost = 0;
	for (int r = 0; r < traffic.ranks; ++r)
		for (int s = 0; s < traffic.ranks; ++s)
			if (double t = traffic.at(r, s); t > 0)
				cost += t / kLineBytes * model.d(slotOf[static_cast<std::size_t>(r)], slotOf[static_cast<std::size_t>(s)]);
	return cost;
}

namespace {

/* Memory latency from @from to memory node @to; estimated pairs are in the model already. */
double latencyNs(const CostModel &model, int from, int to)
{
	auto it = model.nodeLatencyNs.find({ from, to });
	return it != model.nodeLatencyNs.end() ? it->second : 0;
}

/*
 * Where "local" puts memory owned on @node: that node, or, for a node
 * without memory, the memory node nearest to it (the kernel's choice under
 * MPOL_DEFAULT, which librma uses there).
 */
int localMemoryNode(const CostModel &model, int node)
{
	const std::vector<int> &nodes = model.memoryNodes;
	if (nodes.empty() || std::binary_search(nodes.begin(), nodes.end(), node))
		return node;
	int nearest = nodes.front();
	for (int k : nodes)
		if (latencyNs(model, node, k) < latencyNs(model, node, nearest))
			nearest = k;
	return nearest;
}

/* The figures of @placement for @traffic with ranks on @slotOf (see the header). */
PolicyCost policyCost(const CostModel &model, const Traffic &traffic, const std::vector<int> &slotOf,
		      const librma::Placement &placement)
{
	PolicyCost out;
	out.placement = placement;
	std::map<int, double> served; /* bytes by memory node */
	const std::vector<int> &nodes = model.memoryNodes;
	for (int r = 0; r < traffic.ranks; ++r)
		for (int s = 0; s < traffic.ranks; ++s) {
			const double t = traffic.at(r, s);
			if (t <= 0)
				continue;
			const int from =
				model.slots[static_cast<std::size_t>(slotOf[static_cast<std::size_t>(r)])].node;
			const int owner = localMemoryNode(
				model, model.slots[static_cast<std::size_t>(slotOf[static_cast<std::size_t>(s)])].node);
			switch (placement.kind) {
			case librma::Placement::Kind::Interleave: {
				double sum = 0;
				for (int k : nodes) {
					sum += latencyNs(model, from, k);
					served[k] += t / static_cast<double>(nodes.size());
				}
				out.latency += t / kLineBytes * sum / static_cast<double>(nodes.size());
				break;
			}
			case librma::Placement::Kind::Node:
				out.latency += t / kLineBytes * latencyNs(model, from, placement.node);
				served[placement.node] += t;
				break;
			default:
				out.latency += t / kLineBytes * latencyNs(model, from, owner);
				served[owner] += t;
				break;
			}
		}
	for (const auto &[node, bytes] : served) {
		auto bw = model.nodeBandwidthGBs.find(node);
		/* Without measured bandwidth every node counts alike: 1 byte per ns. */
		const double gbs = bw != model.nodeBandwidthGBs.end() ? bw->second : 1.0;
		out.bottleneckNs = std::max(out.bottleneckNs, bytes / gbs);
	}
	return out;
}

} /* namespace */

MemoryChoice chooseMemoryPolicy(const CostModel &model, const Traffic &traffic, const std::vector<int> &slotOf)
{
	using librma::Placement;
	MemoryChoice choice;
	/* In the order ties go: local, node:k, interleave. */
	std::vector<Placement> policies = { Placement{ Placement::Kind::Local, -1 } };
	for (int k : model.memoryNodes)
		policies.push_back(Placement{ Placement::Kind::Node, k });
	if (model.memoryNodes.size() >= 2)
		policies.push_back(Placement{ Placement::Kind::Interleave, -1 });
	for (const Placement &p : policies)
		choice.candidates.push_back(policyCost(model, traffic, slotOf, p));
	double least = std::numeric_limits<double>::infinity();
	for (const PolicyCost &c : choice.candidates)
		least = std::min(least, c.latency);
	/* Within kLatencyTie of the least latency: the least bottleneck, the earlier on a tie (1e-9 relative). */
	const PolicyCost *best = nullptr;
	for (const PolicyCost &c : choice.candidates) {
		if (c.latency > least * (1 + kLatencyTie) + 1e-9)
			continue;
		if (!best || c.bottleneckNs < best->bottleneckNs * (1 - 1e-9))
			best = &c;
	}
	choice.placement = best->placement;
	const PolicyCost &local = choice.candidates.front();
	if (least <= 0) {
		choice.why = "no traffic: local";
	} else if (best == &local) {
		choice.why = "local has the least latency cost, or is within " + fmt("%.0f", 100 * kLatencyTie) +
			     " % of it with no smaller bottleneck";
	} else if (best->latency <= least * (1 + 1e-9) && best->bottleneckNs >= local.bottleneckNs * (1 - 1e-9)) {
		choice.why = cat(best->placement.str(), " has the least latency cost: ", fmt("%.4g", best->latency),
				 " against local's ", fmt("%.4g", local.latency));
	} else {
		choice.why =
			cat(best->placement.str(), " is within ", fmt("%.0f", 100 * kLatencyTie),
			    " % of the least latency cost and spreads the load best: its busiest memory node needs ",
			    fmt("%.4g", best->bottleneckNs), " ns against local's ", fmt("%.4g", local.bottleneckNs));
	}
	return choice;
}

std::optional<librma::HugePages> chooseHugePages(const CostModel &model, const Traffic &traffic, std::string &why)
{
	if (traffic.hugePageBytes < 0) {
		why = "left alone: the traffic gives no window sizes (a librma statistics file, RMA_STATS, does)";
		return std::nullopt;
	}
	if (model.hugePagesFree < 0) {
		why = "left alone: the profile does not give the 2 MiB pool (rmatune probe writes topology.huge_pages)";
		return std::nullopt;
	}
	const long long pool = model.hugePagesFree * static_cast<long long>(librma::kHugePageSize);
	const std::string figures =
		cat(std::to_string(traffic.windowsInPool), " allocate/allocate_shared windows need ",
		    std::to_string(traffic.hugePageBytes), " bytes in 2 MiB pages; the pool has ",
		    std::to_string(model.hugePagesFree), " free pages (", std::to_string(pool), " bytes)");
	if (traffic.hugePageBytes > 0 && traffic.hugePageBytes <= pool) {
		why = cat("prefer: ", figures);
		return librma::HugePages::Prefer;
	}
	why = cat("off: ", figures, traffic.hugePageBytes > 0 ? "" : " (no window memory to put there)");
	return librma::HugePages::Off;
}

namespace {

constexpr int kTwinCoreLimit = 512;

/* The search state: who is where, and what each move would change. */
class Search
{
public:
	Search(const CostModel &model, const Traffic &traffic) : model_(model), t_(traffic), n_(traffic.ranks), m_(model.size())
	{
		/* Lines per pair, symmetric weight for ordering. */
		w_.assign(static_cast<std::size_t>(n_) * static_cast<std::size_t>(n_), 0);
		for (int r = 0; r < n_; ++r)
			for (int s = 0; s < n_; ++s)
				w_[idx(r, s)] = t_.at(r, s) / kLineBytes;
	}

	long long evaluations = 0;

	double cost(const std::vector<int> &slotOf) const { return placementCost(model_, t_, slotOf); }

	/* Cost of every term that involves rank @i or @j (each counted once), with @slotOf. */
	double termsOf(int i, int j, const std::vector<int> &slotOf) const
	{
		double c = 0;
		for (int k = 0; k < n_; ++k) {
			const int sk = slotOf[static_cast<std::size_t>(k)];
			for (int x : { i, j }) {
				if (x < 0)
					continue;
				const int sx = slotOf[static_cast<std::size_t>(x)];
				c += w_[idx(x, k)] * model_.d(sx, sk);
				/* k -> x, unless k is i or j (counted as x -> k already). */
				if (k != i && k != j)
					c += w_[idx(k, x)] * model_.d(sk, sx);
			}
		}
		return c;
	}

	/* Improve @slotOf by swaps and moves to free slots until none helps. */
	void localSearch(std::vector<int> &slotOf)
	{
		std::vector<int> rankOf(static_cast<std::size_t>(m_), -1);
		for (int r = 0; r < n_; ++r)
			rankOf[static_cast<std::size_t>(slotOf[static_cast<std::size_t>(r)])] = r;
		bool improved = true;
		while (improved) {
			improved = false;
			for (int i = 0; i < n_; ++i) {
				/* Swap i with the rank on slot b, or move i to free slot b. */
				for (int b = 0; b < m_; ++b) {
					const int a = slotOf[static_cast<std::size_t>(i)];
					if (a == b)
						continue;
					const int j = rankOf[static_cast<std::size_t>(b)];
					const double before = termsOf(i, j, slotOf);
					slotOf[static_cast<std::size_t>(i)] = b;
					if (j >= 0)
						slotOf[static_cast<std::size_t>(j)] = a;
					const double after = termsOf(i, j, slotOf);
					++evaluations;
					if (after < before - 1e-9 * std::max(1.0, before)) {
						rankOf[static_cast<std::size_t>(b)] = i;
						rankOf[static_cast<std::size_t>(a)] = j;
						improved = true;
					} else {
						slotOf[static_cast<std::size_t>(i)] = a;
						if (j >= 0)
							slotOf[static_cast<std::size_t>(j)] = b;
					}
				}
			}
		}
	}

	/*
	 * Greedy construction from @firstSlot: the rank with the most traffic
	 * goes there; then, in turn, the unplaced rank with the most traffic
	 * to placed ones goes to the free slot that adds least.
	 */
	std::vector<int> greedy(int firstSlot)
	{
		std::vector<int> slotOf(static_cast<std::size_t>(n_), -1);
		std::vector<bool> used(static_cast<std::size_t>(m_), false);
		std::vector<double> total(static_cast<std::size_t>(n_), 0), toPlaced(static_cast<std::size_t>(n_), 0);
		for (int r = 0; r < n_; ++r)
			for (int s = 0; s < n_; ++s)
				total[static_cast<std::size_t>(r)] += w_[idx(r, s)] + w_[idx(s, r)];
		for (int placed = 0; placed < n_; ++placed) {
			int next = -1;
			for (int r = 0; r < n_; ++r) {
				if (slotOf[static_cast<std::size_t>(r)] >= 0)
					continue;
				if (next < 0 || toPlaced[static_cast<std::size_t>(r)] > toPlaced[static_cast<std::size_t>(next)] ||
				    (toPlaced[static_cast<std::size_t>(r)] == toPlaced[static_cast<std::size_t>(next)] &&
				     total[static_cast<std::size_t>(r)] > total[static_cast<std::size_t>(next)]))
					next = r;
			}
			int best = -1;
			double bestAdd = std::numeric_limits<double>::infinity();
			for (int b = 0; b < m_; ++b) {
				if (used[static_cast<std::size_t>(b)])
					continue;
				if (placed == 0 && b != firstSlot)
					continue;
				double add = w_[idx(next, next)] * model_.d(b, b);
				for (int k = 0; k < n_; ++k) {
					const int sk = slotOf[static_cast<std::size_t>(k)];
					if (sk >= 0)
						add += w_[idx(next, k)] * model_.d(b, sk) + w_[idx(k, next)] * model_.d(sk, b);
				}
				++evaluations;
				if (add < bestAdd - 1e-12) {
					bestAdd = add;
					best = b;
				}
			}
			slotOf[static_cast<std::size_t>(next)] = best;
			used[static_cast<std::size_t>(best)] = true;
			for (int r = 0; r < n_; ++r)
				toPlaced[static_cast<std::size_t>(r)] += w_[idx(r, next)] + w_[idx(next, r)];
		}
		return slotOf;
	}

	/* Depth-first branch and bound over every assignment; @best holds a bound on entry. */
	void exhaustive(std::vector<int> &best, double &bestCost)
	{
		/* Heaviest ranks first: their terms make partial costs grow early, so more is cut. */
		order_.resize(static_cast<std::size_t>(n_));
		std::iota(order_.begin(), order_.end(), 0);
		std::vector<double> total(static_cast<std::size_t>(n_), 0);
		for (int r = 0; r < n_; ++r)
			for (int s = 0; s < n_; ++s)
				total[static_cast<std::size_t>(r)] += w_[idx(r, s)] + w_[idx(s, r)];
		std::stable_sort(order_.begin(), order_.end(), [&](int a, int b) {
			return total[static_cast<std::size_t>(a)] > total[static_cast<std::size_t>(b)];
		});
		cur_.assign(static_cast<std::size_t>(n_), -1);
		used_.assign(static_cast<std::size_t>(m_), false);
		twinClasses();
		best_ = &best;
		bestCost_ = &bestCost;
		dfs(0, 0);
	}

private:
	std::size_t idx(int r, int s) const { return static_cast<std::size_t>(r) * static_cast<std::size_t>(n_) + static_cast<std::size_t>(s); }

	/*
	 * Slots a and b are twins when swapping them changes no cost: D(a, x)
	 * = D(b, x) and D(x, a) = D(x, b) for every other x, D(a, a) = D(b, b),
	 * D(a, b) = D(b, a) (the cores of one L3 domain, as measured classes
	 * make them). A rank tried on one free slot need not be tried on its
	 * free twins: every completion has an equal-cost mirror.
	 */
	void twinClasses()
	{
		twin_.assign(static_cast<std::size_t>(m_), -1);
		/* The test is cubic in the cores: past kTwinCoreLimit every core is its own class. */
		if (m_ > kTwinCoreLimit) {
			std::iota(twin_.begin(), twin_.end(), 0);
			return;
		}
		for (int a = 0; a < m_; ++a) {
			if (twin_[static_cast<std::size_t>(a)] >= 0)
				continue;
			twin_[static_cast<std::size_t>(a)] = a;
			for (int b = a + 1; b < m_; ++b) {
				if (twin_[static_cast<std::size_t>(b)] >= 0)
					continue;
				bool same = model_.d(a, a) == model_.d(b, b) && model_.d(a, b) == model_.d(b, a);
				for (int x = 0; x < m_ && same; ++x)
					if (x != a && x != b)
						same = model_.d(a, x) == model_.d(b, x) && model_.d(x, a) == model_.d(x, b);
				if (same)
					twin_[static_cast<std::size_t>(b)] = a;
			}
		}
	}

	void dfs(int depth, double partial)
	{
		if (depth == n_) {
			if (partial < *bestCost_) {
				*bestCost_ = partial;
				*best_ = cur_;
			}
			return;
		}
		const int r = order_[static_cast<std::size_t>(depth)];
		std::vector<bool> triedClass(static_cast<std::size_t>(m_), false);
		for (int b = 0; b < m_; ++b) {
			const std::size_t cls = static_cast<std::size_t>(twin_[static_cast<std::size_t>(b)]);
			if (used_[static_cast<std::size_t>(b)] || triedClass[cls])
				continue;
			triedClass[cls] = true;
			double add = w_[idx(r, r)] * model_.d(b, b);
			for (int k = 0; k < depth; ++k) {
				const int q = order_[static_cast<std::size_t>(k)];
				const int sq = cur_[static_cast<std::size_t>(q)];
				add += w_[idx(r, q)] * model_.d(b, sq) + w_[idx(q, r)] * model_.d(sq, b);
			}
			++evaluations;
			/* Every term is >= 0: this branch cannot beat the best any more. */
			if (partial + add >= *bestCost_)
				continue;
			cur_[static_cast<std::size_t>(r)] = b;
			used_[static_cast<std::size_t>(b)] = true;
			dfs(depth + 1, partial + add);
			used_[static_cast<std::size_t>(b)] = false;
			cur_[static_cast<std::size_t>(r)] = -1;
		}
	}

	const CostModel &model_;
	const Traffic &t_;
	const int n_, m_;
	std::vector<double> w_;
	std::vector<int> order_, cur_, twin_;
	std::vector<bool> used_;
	std::vector<int> *best_ = nullptr;
	double *bestCost_ = nullptr;
};

/* m!/(m-n)!, capped at @cap. */
double assignments(int m, int n, double cap)
{
	double count = 1;
	for (int i = 0; i < n && count <= cap; ++i)
		count *= m - i;
	return count;
}

/*
 * rmarun --map-by numa / l3 with --bind core: one core of each domain in
 * turn, domains in the order they first appear, rank i on the i-th.
 */
std::vector<int> roundRobin(const CostModel &model, int n, bool byNode)
{
	std::vector<int> keys;
	std::vector<std::vector<int>> groups;
	for (int b = 0; b < model.size(); ++b) {
		const Slot &s = model.slots[static_cast<std::size_t>(b)];
		const int key = byNode ? s.node : s.l3;
		auto it = std::find(keys.begin(), keys.end(), key);
		if (it == keys.end()) {
			keys.push_back(key);
			groups.emplace_back();
			it = keys.end() - 1;
		}
		groups[static_cast<std::size_t>(it - keys.begin())].push_back(b);
	}
	std::vector<int> order;
	for (std::size_t round = 0; order.size() < static_cast<std::size_t>(model.size()); ++round)
		for (const std::vector<int> &g : groups)
			if (round < g.size())
				order.push_back(g[round]);
	order.resize(static_cast<std::size_t>(n));
	return order;
}

constexpr int kRandomStarts = 8;
constexpr unsigned kSeed = 0x5107u;

} /* namespace */

bool recommend(const CostModel &model, const Traffic &traffic, Method method, Recommendation &out, std::string &err)
{
	out = Recommendation();
	const int n = traffic.ranks, m = model.size();
	if (n > m) {
		err = cat(std::to_string(n), " ranks but the profile has ", std::to_string(m),
			  " cores with an allowed CPU: rmatune places one rank per physical core");
		return false;
	}
	const auto t0 = std::chrono::steady_clock::now();
	Search search(model, traffic);
	out.compactSlotOf.resize(static_cast<std::size_t>(n));
	std::iota(out.compactSlotOf.begin(), out.compactSlotOf.end(), 0);
	out.compactCost = search.cost(out.compactSlotOf);
	out.alternatives = { { "compact (--map-by core)", out.compactCost },
			     { "--map-by numa", search.cost(roundRobin(model, n, true)) },
			     { "--map-by l3", search.cost(roundRobin(model, n, false)) } };

	/* Starts: compact, greedy from the first slot of each NUMA node and L3 domain, random. */
	std::vector<std::vector<int>> starts = { out.compactSlotOf };
	std::vector<int> firsts;
	for (int b = 0; b < m; ++b) {
		bool newDomain = b == 0 || model.slots[static_cast<std::size_t>(b)].node != model.slots[static_cast<std::size_t>(b - 1)].node ||
				 model.slots[static_cast<std::size_t>(b)].l3 != model.slots[static_cast<std::size_t>(b - 1)].l3;
		if (newDomain && firsts.size() < 16)
			firsts.push_back(b);
	}
	for (int b : firsts)
		starts.push_back(search.greedy(b));
	std::mt19937 rng(kSeed);
	for (int i = 0; i < kRandomStarts; ++i) {
		std::vector<int> all(static_cast<std::size_t>(m));
		std::iota(all.begin(), all.end(), 0);
		std::shuffle(all.begin(), all.end(), rng);
		all.resize(static_cast<std::size_t>(n));
		starts.push_back(std::move(all));
	}
	double bestCost = std::numeric_limits<double>::infinity();
	for (std::vector<int> &s : starts) {
		search.localSearch(s);
		double c = search.cost(s);
		if (c < bestCost) {
			bestCost = c;
			out.slotOf = s;
		}
	}
	out.method = cat("greedy construction from ", std::to_string(firsts.size()),
			 " first cores, the compact placement and ", std::to_string(kRandomStarts),
			 " seeded random starts, each improved by swaps and moves to free cores until none helps");

	const bool small = assignments(m, n, kExhaustiveLimit) <= kExhaustiveLimit;
	if (method == Method::Exhaustive || (method == Method::Auto && small)) {
		/* The heuristic's best is the first bound; a tie keeps it. */
		search.exhaustive(out.slotOf, bestCost);
		out.exact = true;
		out.method = cat("exhaustive: depth-first branch and bound over all ",
				 fmt("%.0f", assignments(m, n, std::numeric_limits<double>::max())),
				 " assignments of ranks to cores (cores that are twins in the model tried once), bounded by the "
				 "heuristic's best");
	}
	out.cost = search.cost(out.slotOf);
	out.evaluations = search.evaluations;
	out.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();

	/* Memory, for the placement found (the search above assumed local memory). */
	out.memoryDefault = chooseMemoryPolicy(model, traffic, out.slotOf);
	for (const WindowTraffic &w : traffic.windows) {
		const std::string label = w.name.empty() ? cat("id ", w.id) : cat("\"", w.name, "\"");
		MemoryChoice own = chooseMemoryPolicy(model, w.traffic, out.slotOf);
		const bool same = own.placement.kind == out.memoryDefault.placement.kind &&
				  own.placement.node == out.memoryDefault.placement.node;
		if (same)
			continue;
		if (w.name.empty() || w.name.rfind("win#", 0) == 0 || !librma::windowNameProblem(w.name).empty()) {
			out.windowNotes.push_back(cat("window ", label, " would take ", own.placement.str(),
						      ", but it has no name a program can give at creation (info key "
						      "rma_win_name): left to the default"));
			continue;
		}
		out.windowMemory.emplace_back(w.name, std::move(own));
	}
	out.hugePages = chooseHugePages(model, traffic, out.hugePagesWhy);
	out.progress = chooseProgress(model, out.slotOf);
	return true;
}

ProgressChoice chooseProgress(const CostModel &model, const std::vector<int> &slotOf)
{
	ProgressChoice c;
	std::vector<bool> taken(model.slots.size(), false);
	std::map<int, int> agentOf; /* node with ranks -> an agent CPU there, -1 while none found */
	for (int slot : slotOf) {
		taken[static_cast<std::size_t>(slot)] = true;
		agentOf.emplace(model.slots[static_cast<std::size_t>(slot)].node, -1);
	}
	/* The last free core of each node: away from the ranks, which compact placements put first. */
	for (std::size_t i = model.slots.size(); i-- > 0;) {
		const Slot &s = model.slots[i];
		auto at = agentOf.find(s.node);
		if (!taken[i] && at != agentOf.end() && at->second < 0 && !s.cpus.empty())
			at->second = s.cpus.back();
	}
	std::string where, missing;
	for (const auto &[node, cpu] : agentOf) {
		if (cpu < 0)
			missing.append(cat(missing.empty() ? "" : ", ", std::to_string(node)));
		else
			where.append(cat(where.empty() ? "" : ", ", "node ", std::to_string(node), " on CPU ", std::to_string(cpu)));
	}
	if (!missing.empty() || agentOf.empty()) {
		c.why = cat("each rank's own progress thread (librma's default): node ", missing.empty() ? "-" : missing,
			    " has no core free of ranks for an agent, and an agent sharing a rank's core takes CPU the rank "
			    "needs, while a rank's own thread parks beside it when idle");
		return c;
	}
	c.mode = "agent";
	for (const auto &[node, cpu] : agentOf)
		c.cpus.push_back(cpu);
	std::sort(c.cpus.begin(), c.cpus.end());
	c.why = cat("one agent per NUMA node with ranks, each on a core no rank takes (", where,
		    "): accumulates to idle targets are applied at once without taking a rank's CPU");
	return c;
}

namespace {

std::string slotText(const CostModel &model, int slot)
{
	const Slot &s = model.slots[static_cast<std::size_t>(slot)];
	return cat("core ", std::to_string(s.core), " (CPUs ", librma::cpuListText(s.cpus), ", node ",
		   std::to_string(s.node), ")");
}

struct Pair {
	int origin, target;
	double bytes;
};

std::vector<Pair> heaviestPairs(const Traffic &t, std::size_t count)
{
	std::vector<Pair> pairs;
	for (int r = 0; r < t.ranks; ++r)
		for (int s = 0; s < t.ranks; ++s)
			if (t.at(r, s) > 0)
				pairs.push_back({ r, s, t.at(r, s) });
	std::stable_sort(pairs.begin(), pairs.end(), [](const Pair &a, const Pair &b) { return a.bytes > b.bytes; });
	if (pairs.size() > count)
		pairs.resize(count);
	return pairs;
}

double gainPercent(const Recommendation &rec)
{
	return rec.compactCost > 0 ? 100 * (rec.compactCost - rec.cost) / rec.compactCost : 0;
}

} /* namespace */

std::string recommendationFile(const CostModel &model, const Traffic &traffic, const Recommendation &rec)
{
	librma::PlacementFile file;
	for (int slot : rec.slotOf)
		file.rankCpus.push_back(model.slots[static_cast<std::size_t>(slot)].cpus);
	file.memoryDefault = rec.memoryDefault.placement;
	for (const auto &[name, choice] : rec.windowMemory)
		file.windowPolicies.emplace_back(name, choice.placement);
	file.hugePages = rec.hugePages;
	file.progressMode = rec.progress.mode;
	file.agentCpus = rec.progress.cpus;
	file.topologyIdentity = model.topologyIdentity;
	file.topologySource = model.topologySource;

	json e;
	e["cost_model"] = "cost = sum over origin r, target s of bytes(r,s) / 64 x (round_trip_ns(core r, core s) / 2 + "
			  "memory_latency_ns(node of core r -> node of core s)); window memory on its owner's node";
	e["cost_unit"] = "ns of 64-byte line transfers (a ranking of placements, not a run time)";
	e["cost"] = rec.cost;
	e["compact_cost"] = rec.compactCost;
	e["compact"] = "rank i on the i-th core with an allowed CPU, in topology order (rmarun --bind core)";
	e["expected_gain_percent"] = gainPercent(rec);
	json alternatives = json::object();
	for (const auto &[name, cost] : rec.alternatives)
		alternatives[name] = cost;
	e["rmarun_placements_cost"] = std::move(alternatives);
	e["method"] = rec.method;
	e["exact"] = rec.exact;
	e["evaluations"] = rec.evaluations;
	e["search_seconds"] = rec.seconds;
	e["profile"] = { { "identity", model.topologyIdentity }, { "timestamp", model.profileTimestamp } };
	e["estimates"] = model.estimates;
	double total = 0;
	for (double b : traffic.bytes)
		total += b;
	e["traffic_bytes"] = total;
	json pairs = json::array();
	for (const Pair &p : heaviestPairs(traffic, 8)) {
		const int a = rec.slotOf[static_cast<std::size_t>(p.origin)], b = rec.slotOf[static_cast<std::size_t>(p.target)];
		const int ca = rec.compactSlotOf[static_cast<std::size_t>(p.origin)],
			  cb = rec.compactSlotOf[static_cast<std::size_t>(p.target)];
		pairs.push_back({ { "origin", p.origin },
				  { "target", p.target },
				  { "bytes", p.bytes },
				  { "ns_per_line", model.d(a, b) },
				  { "compact_ns_per_line", model.d(ca, cb) } });
	}
	e["heaviest_pairs"] = std::move(pairs);
	json memory;
	memory["model"] =
		"per policy: latency = sum bytes(r,s) / 64 x memory_latency_ns(node of r -> where s's memory "
		"is); bottleneck_ns = the busiest memory node's bytes / its read bandwidth; the least latency "
		"wins, unless others are within " +
		fmt("%.0f", 100 * kLatencyTie) + " %: then the least bottleneck (ties: local, node:N, interleave)";
	memory["bandwidth_gbs"] = json::object();
	for (const auto &[node, gbs] : model.nodeBandwidthGBs)
		memory["bandwidth_gbs"][std::to_string(node)] = gbs;
	auto choiceJson = [](const MemoryChoice &c) {
		json j = { { "policy", c.placement.str() }, { "why", c.why } };
		json candidates = json::array();
		for (const PolicyCost &p : c.candidates)
			candidates.push_back({ { "policy", p.placement.str() },
					       { "latency", p.latency },
					       { "bottleneck_ns", p.bottleneckNs } });
		j["candidates"] = std::move(candidates);
		return j;
	};
	memory["default"] = choiceJson(rec.memoryDefault);
	json windows = json::object();
	for (const auto &[name, choice] : rec.windowMemory)
		windows[name] = choiceJson(choice);
	memory["windows"] = std::move(windows);
	memory["notes"] = rec.windowNotes;
	e["memory"] = std::move(memory);
	e["huge_pages"] = { { "choice", rec.hugePages ? (*rec.hugePages == librma::HugePages::Prefer ? "prefer" : "off")
						      : "unset" },
			    { "why", rec.hugePagesWhy } };
	e["progress"] = { { "choice", rec.progress.mode.empty() ? "unset" : rec.progress.mode },
			  { "cpus", rec.progress.cpus },
			  { "why", rec.progress.why } };
	file.evidenceJson = e.dump();
	return librma::writePlacementFile(file);
}

std::string recommendationTable(const CostModel &model, const Traffic &traffic, const Recommendation &rec)
{
	std::string s = cat("rmatune recommend: ", std::to_string(traffic.ranks), " ranks on ",
			    std::to_string(model.size()), " cores (", model.topologySource, ")\n");
	s += cat("  modelled cost ", fmt("%.4g", rec.cost), " against ", fmt("%.4g", rec.compactCost),
		 " for the compact placement: expected gain ", fmt("%.1f", gainPercent(rec)), " %\n");
	s += "  rmarun's own placements, modelled:";
	for (const auto &[name, cost] : rec.alternatives)
		s += cat(" ", name, " ", fmt("%.4g", cost), ";");
	s.back() = '\n';
	s += cat("  search: ", rec.method, "; ", std::to_string(rec.evaluations), " evaluations in ",
		 fmt("%.3f", rec.seconds), " s\n");
	for (const std::string &e : model.estimates)
		s += cat("  estimated: ", e, "\n");
	s += cat("  window memory ", rec.memoryDefault.placement.str(), ": ", rec.memoryDefault.why, "\n");
	for (const auto &[name, choice] : rec.windowMemory)
		s += cat("  window \"", name, "\" memory ", choice.placement.str(), ": ", choice.why, "\n");
	for (const std::string &note : rec.windowNotes)
		s += cat("  ", note, "\n");
	s += cat("  huge pages ", rec.hugePagesWhy, "\n");
	s += cat("  progress ", rec.progress.mode.empty() ? "default" : rec.progress.mode, ": ", rec.progress.why, "\n");
	s += "  placement:\n";
	for (int r = 0; r < traffic.ranks; ++r)
		s += cat("    rank ", std::to_string(r), ": ", slotText(model, rec.slotOf[static_cast<std::size_t>(r)]), "\n");
	s += "  heaviest pairs (origin -> target: bytes, ns per line here / compact):\n";
	for (const Pair &p : heaviestPairs(traffic, 8)) {
		const int a = rec.slotOf[static_cast<std::size_t>(p.origin)], b = rec.slotOf[static_cast<std::size_t>(p.target)];
		const int ca = rec.compactSlotOf[static_cast<std::size_t>(p.origin)],
			  cb = rec.compactSlotOf[static_cast<std::size_t>(p.target)];
		s += cat("    ", std::to_string(p.origin), " -> ", std::to_string(p.target), ": ", fmt("%.0f", p.bytes), ", ",
			 fmt("%.1f", model.d(a, b)), " / ", fmt("%.1f", model.d(ca, cb)), "\n");
	}
	return s;
}

} /* namespace rmatune */
