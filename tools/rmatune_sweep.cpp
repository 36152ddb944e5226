/* SPDX-License-Identifier: MIT */
#include "rmatune_sweep.h"

#include <algorithm>
#include <cmath>
#include <map>
#include <set>

#include "bootstrap/binding.h"
#include "rmatune_text.h"

using nlohmann::json;

namespace rmatune {

namespace {

using Map = std::vector<std::vector<int>>; /* rank -> CPUs */

/* Cores taken one domain at a time: @domainOf(core) in [0, domains). */
template<typename DomainOf>
Map scatter(const librma::Topology &t, int ranks, int domains, DomainOf domainOf)
{
	std::vector<std::vector<int>> byDomain(static_cast<std::size_t>(domains));
	for (std::size_t c = 0; c < t.cores().size(); ++c) {
		int d = domainOf(t.cores()[c]);
		if (d >= 0 && d < domains)
			byDomain[static_cast<std::size_t>(d)].push_back(static_cast<int>(c));
	}
	Map map;
	std::vector<std::size_t> next(byDomain.size(), 0);
	while (static_cast<int>(map.size()) < ranks) {
		bool any = false;
		for (std::size_t d = 0; d < byDomain.size() && static_cast<int>(map.size()) < ranks; ++d) {
			if (next[d] >= byDomain[d].size())
				continue;
			map.push_back(t.cores()[static_cast<std::size_t>(byDomain[d][next[d]++])].cpus);
			any = true;
		}
		if (!any)
			break;
	}
	return map;
}

std::string aliasNote(const std::string &name, const std::string &other)
{
	return cat(name, " gives the same placement as ", other, " on this topology");
}

} /* namespace */

bool sweepCandidates(const librma::Topology &t, const SweepPlan &plan, std::vector<SweepCandidate> &out,
		     std::vector<SweepSkip> &skipped, std::string &err)
{
	out.clear();
	skipped.clear();
	const int n = plan.ranks;
	const int cores = static_cast<int>(t.cores().size());
	std::vector<int> pus;
	std::size_t maxThreads = 0;
	for (const librma::CpuCore &c : t.cores()) {
		pus.insert(pus.end(), c.cpus.begin(), c.cpus.end());
		maxThreads = std::max(maxThreads, c.cpus.size());
	}
	if (n < 1 || n > static_cast<int>(pus.size())) {
		err = cat(std::to_string(n), " ranks: this topology has ", std::to_string(pus.size()),
			  " hardware threads (", std::to_string(cores), " cores; ", t.source(), ")");
		return false;
	}

	librma::PlacementFile base;
	base.memoryDefault = librma::Placement{};
	base.progressMode = "thread";
	base.topologyIdentity = plan.topologyIdentity;
	base.topologySource = plan.topologySource;
	if (plan.freeHugePages > 0)
		base.hugePages = librma::HugePages::Off;

	auto addMap = [&](const std::string &name, const std::string &description, Map map) {
		for (SweepCandidate &c : out)
			if (c.placement.rankCpus == map) {
				c.aliases.push_back(name);
				skipped.push_back({ name, aliasNote(name, c.name) });
				return;
			}
		SweepCandidate c;
		c.name = name;
		c.description = description;
		c.placement = base;
		c.placement.rankCpus = std::move(map);
		out.push_back(std::move(c));
	};

	const std::string tooFew = cat(std::to_string(n), " ranks, one per core, need ", std::to_string(n),
				       " cores; this topology has ", std::to_string(cores));
	if (n <= cores) {
		Map compact;
		for (int r = 0; r < n; ++r)
			compact.push_back(t.cores()[static_cast<std::size_t>(r)].cpus);
		addMap("compact", "consecutive physical cores, one rank each (SMT avoided)", std::move(compact));
	} else {
		skipped.push_back({ "compact", tooFew });
	}
	if (maxThreads > 1) {
		Map smt;
		for (int r = 0; r < n; ++r)
			smt.push_back({ pus[static_cast<std::size_t>(r)] });
		addMap("compact-smt", "consecutive hardware threads, SMT siblings shared (SMT used)", std::move(smt));
	} else {
		skipped.push_back({ "compact-smt", "one hardware thread per core: no SMT to use" });
	}
	if (n <= cores) {
		addMap("scatter-package", "one core of each package in turn",
		       scatter(t, n, t.packageCount(), [](const librma::CpuCore &c) { return c.package; }));
		addMap("scatter-numa", "one core of each NUMA node in turn",
		       scatter(t, n, t.nodeCount(), [&](const librma::CpuCore &c) { return t.indexOfNode(c.node); }));
		if (t.l3Count() > 0)
			addMap("scatter-l3", "one core of each L3 domain in turn",
			       scatter(t, n, t.l3Count(), [](const librma::CpuCore &c) { return c.l3; }));
		else
			skipped.push_back({ "scatter-l3", "the topology names no L3 domains" });
		Map last;
		for (int r = 0; r < n; ++r)
			last.push_back(t.cores()[static_cast<std::size_t>(cores - n + r)].cpus);
		addMap("compact-last", "the last cores, away from CPU 0 (kernel housekeeping, interrupts)",
		       std::move(last));
	} else {
		for (const char *name : { "scatter-package", "scatter-numa", "scatter-l3", "compact-last" })
			skipped.push_back({ name, tooFew });
	}
	if (out.empty()) {
		err = cat("no rank-to-core map fits ", std::to_string(n), " ranks on this topology");
		return false;
	}

	/* One dimension at a time, on compact (or the first map when compact does not fit). */
	const SweepCandidate first = out.front();
	auto addVariant = [&](const std::string &suffix, const std::string &description,
			      const librma::PlacementFile &placement) {
		SweepCandidate c;
		c.name = cat(first.name, "+", suffix);
		c.description = description;
		c.placement = placement;
		out.push_back(std::move(c));
	};
	int memoryNodes = 0;
	for (const librma::NumaNode &node : t.nodes())
		memoryNodes += node.hasMemory ? 1 : 0;
	const std::string oneNode = "one NUMA node with memory: the same as local";
	if (memoryNodes > 1) {
		librma::PlacementFile p = first.placement;
		p.memoryDefault.kind = librma::Placement::Kind::Interleave;
		addVariant("interleave", "window memory interleaved over every node with memory", p);
	} else {
		skipped.push_back({ cat(first.name, "+interleave"), oneNode });
	}
	if (plan.originBytes.empty()) {
		skipped.push_back({ cat(first.name, "+heaviest-node"), "needs a traffic matrix (--traffic FILE)" });
	} else if (memoryNodes <= 1) {
		skipped.push_back({ cat(first.name, "+heaviest-node"), oneNode });
	} else {
		std::size_t heaviest = 0;
		for (std::size_t r = 0; r < plan.originBytes.size() && r < first.placement.rankCpus.size(); ++r)
			if (plan.originBytes[r] > plan.originBytes[heaviest])
				heaviest = r;
		const int node = t.nodeOfCpu(first.placement.rankCpus[heaviest].front());
		const int index = t.indexOfNode(node);
		if (index < 0 || !t.nodes()[static_cast<std::size_t>(index)].hasMemory) {
			skipped.push_back({ cat(first.name, "+heaviest-node"),
					    cat("rank ", std::to_string(heaviest), "'s node has no memory") });
		} else {
			librma::PlacementFile p = first.placement;
			p.memoryDefault.kind = librma::Placement::Kind::Node;
			p.memoryDefault.node = node;
			addVariant("heaviest-node",
				   cat("window memory on node ", std::to_string(node), ", that of rank ",
				       std::to_string(heaviest), ", the heaviest origin"),
				   p);
		}
	}

	std::set<int> used;
	for (const std::vector<int> &cpus : first.placement.rankCpus)
		used.insert(cpus.begin(), cpus.end());
	int freeCpu = -1;
	for (auto it = pus.rbegin(); it != pus.rend(); ++it)
		if (!used.count(*it) &&
		    (plan.allowed.empty() || std::binary_search(plan.allowed.begin(), plan.allowed.end(), *it))) {
			freeCpu = *it;
			break;
		}
	if (freeCpu >= 0) {
		librma::PlacementFile p = first.placement;
		p.progressMode = "agent";
		p.agentCpus = { freeCpu };
		addVariant("agent-dedicated", cat("progress agent on CPU ", std::to_string(freeCpu),
						  ", which no rank uses"),
			   p);
	} else {
		skipped.push_back({ cat(first.name, "+agent-dedicated"), "every CPU this process may use holds a rank" });
	}
	{
		librma::PlacementFile p = first.placement;
		p.progressMode = "agent";
		p.agentCpus = { first.placement.rankCpus.back().back() };
		addVariant("agent-shared",
			   cat("progress agent on CPU ", std::to_string(p.agentCpus.front()),
			       ", shared with rank ", std::to_string(n - 1)),
			   p);
	}
	{
		librma::PlacementFile p = first.placement;
		p.progressMode = "none";
		addVariant("progress-none", "no progress thread or agent: origins drain the rings while they wait", p);
	}
	{
		/*
		 * One agent per NUMA node holding ranks (librma runs each in the
		 * lowest rank bound there): on the node's last CPU no rank uses,
		 * else its last rank's CPU, shared.
		 */
		std::map<int, std::pair<int, int>> nodes; /* node -> (free CPU or -1, last rank CPU) */
		for (const std::vector<int> &cpus : first.placement.rankCpus)
			for (int cpu : cpus)
				if (int node = t.nodeOfCpu(cpu); node >= 0) {
					auto &slot = nodes.try_emplace(node, -1, cpu).first->second;
					slot.second = std::max(slot.second, cpu);
				}
		for (auto it = pus.rbegin(); it != pus.rend(); ++it) {
			auto at = nodes.find(t.nodeOfCpu(*it));
			if (at != nodes.end() && at->second.first < 0 && !used.count(*it) &&
			    (plan.allowed.empty() || std::binary_search(plan.allowed.begin(), plan.allowed.end(), *it)))
				at->second.first = *it;
		}
		if (nodes.size() > 1) {
			librma::PlacementFile p = first.placement;
			p.progressMode = "agent";
			std::string where;
			for (const auto &[node, cpus] : nodes) {
				const int cpu = cpus.first >= 0 ? cpus.first : cpus.second;
				p.agentCpus.push_back(cpu);
				where.append(cat(where.empty() ? "" : ", ", "node ", std::to_string(node), " on CPU ",
						 std::to_string(cpu), cpus.first >= 0 ? "" : " (shared)"));
			}
			std::sort(p.agentCpus.begin(), p.agentCpus.end());
			addVariant("agent-per-node", cat("one progress agent per NUMA node: ", where), p);
		} else {
			skipped.push_back({ cat(first.name, "+agent-per-node"),
					    "the ranks are on one NUMA node: the same as one agent" });
		}
	}
	if (plan.freeHugePages > 0) {
		librma::PlacementFile p = first.placement;
		p.hugePages = librma::HugePages::Require;
		addVariant("huge", cat("window memory in 2 MiB huge pages, required (", std::to_string(plan.freeHugePages),
				       " free in the pool)"),
			   p);
	} else {
		skipped.push_back({ cat(first.name, "+huge"),
				    "no free 2 MiB huge pages in the host's pool (HugePages_Free 0): huge pages on is "
				    "not tried" });
	}
	return true;
}

bool restrictCandidates(std::vector<SweepCandidate> &candidates, const std::vector<SweepSkip> &skipped,
			const std::vector<std::string> &names, std::string &err)
{
	if (names.empty())
		return true;
	std::vector<SweepCandidate> kept;
	for (const std::string &name : names) {
		auto match = [&](const SweepCandidate &c) {
			return c.name == name || std::find(c.aliases.begin(), c.aliases.end(), name) != c.aliases.end();
		};
		auto it = std::find_if(candidates.begin(), candidates.end(), match);
		if (it == candidates.end()) {
			auto s = std::find_if(skipped.begin(), skipped.end(),
					      [&](const SweepSkip &k) { return k.name == name; });
			if (s != skipped.end() && s->reason.find("gives the same placement") == std::string::npos) {
				err = cat("--candidates ", name, ": not a candidate here: ", s->reason);
				return false;
			}
			std::string known;
			for (const SweepCandidate &c : candidates)
				known.append(cat(known.empty() ? "" : ", ", c.name));
			err = cat("--candidates ", name, ": no such candidate (this topology has: ", known, ")");
			return false;
		}
		if (std::none_of(kept.begin(), kept.end(), [&](const SweepCandidate &c) { return c.name == it->name; }))
			kept.push_back(*it);
	}
	candidates = std::move(kept);
	return true;
}

std::vector<std::pair<int, int>> runOrder(int candidates, int repeat)
{
	std::vector<std::pair<int, int>> order;
	for (int r = 0; r < repeat; ++r)
		for (int c = 0; c < candidates; ++c)
			order.emplace_back(r, c);
	return order;
}

void rankResults(std::vector<CandidateResult> &results, const Metric &metric)
{
	std::vector<CandidateResult *> ranked;
	for (CandidateResult &r : results) {
		r.rank = 0;
		std::vector<double> values;
		for (const SweepRun &run : r.runs) {
			if (run.ok) {
				values.push_back(run.value);
			} else if (!r.failed) {
				r.failed = true;
				r.failedStatus = run.status;
				r.failure = run.error;
			}
		}
		if (values.empty())
			continue;
		std::sort(values.begin(), values.end());
		const std::size_t m = values.size();
		r.median = m % 2 ? values[m / 2] : (values[m / 2 - 1] + values[m / 2]) / 2;
		r.min = values.front();
		r.max = values.back();
		r.spreadPercent = r.median > 0 ? 100 * (r.max - r.min) / r.median : 0;
		if (!r.failed && r.refused.empty())
			ranked.push_back(&r);
	}
	std::stable_sort(ranked.begin(), ranked.end(), [&](const CandidateResult *a, const CandidateResult *b) {
		return metric.higherIsBetter ? a->median > b->median : a->median < b->median;
	});
	for (std::size_t i = 0; i < ranked.size(); ++i)
		ranked[i]->rank = static_cast<int>(i) + 1;
}

bool rmabenchFigure(const std::string &text, double &value, Metric &metric, std::string &err)
{
	/* rmabench prints one JSON document per line; the last one that parses is the run's. */
	json doc;
	std::size_t pos = 0;
	while (pos < text.size()) {
		std::size_t end = text.find('\n', pos);
		if (end == std::string::npos)
			end = text.size();
		json j = json::parse(text.substr(pos, end - pos), nullptr, false);
		if (!j.is_discarded() && j.is_object())
			doc = std::move(j);
		pos = end + 1;
	}
	if (doc.is_null() && !text.empty()) {
		json j = json::parse(text, nullptr, false);
		if (!j.is_discarded())
			doc = std::move(j);
	}
	if (!doc.is_object() || doc.value("tool", "") != "rmabench" || !doc.contains("results") ||
	    !doc["results"].is_array() || doc["results"].empty() || !doc.contains("unit") || !doc["unit"].is_string()) {
		err = "the program's output is not rmabench JSON (run rmabench with --format json)";
		return false;
	}
	const json *largest = nullptr;
	for (const json &row : doc["results"]) {
		if (!row.is_object() || !row.contains("median") || !row["median"].is_number() || !row.contains("size") ||
		    !row["size"].is_number())
			continue;
		if (!largest || row["size"].get<double>() >= (*largest)["size"].get<double>())
			largest = &row;
	}
	if (!largest) {
		err = "rmabench JSON without a result row holding size and median";
		return false;
	}
	value = (*largest)["median"].get<double>();
	metric.name = "rmabench";
	metric.unit = doc["unit"].get<std::string>();
	metric.higherIsBetter = metric.unit != "us";
	metric.description = cat("rmabench ", doc.value("test", std::string("?")), ": median at ",
				 std::to_string((*largest)["size"].get<long long>()), " bytes, ", metric.unit,
				 metric.higherIsBetter ? " (higher is better)" : " (lower is better)");
	return true;
}

namespace {

json placementJson(const librma::PlacementFile &p)
{
	return json::parse(librma::writePlacementFile(p));
}

const CandidateResult *byName(const SweepReport &report, const std::string &name)
{
	for (const CandidateResult &r : report.results)
		if (r.candidate.name == name)
			return &r;
	return nullptr;
}

std::string statusOf(const CandidateResult &r)
{
	return !r.refused.empty() ? "refused" : r.failed ? "failed" : "ok";
}

/* Candidates in ranked order, then failed, then refused. */
std::vector<const CandidateResult *> ordered(const SweepReport &report)
{
	std::vector<const CandidateResult *> v;
	for (const CandidateResult &r : report.results)
		v.push_back(&r);
	auto key = [](const CandidateResult *r) { return r->rank > 0 ? r->rank : !r->refused.empty() ? 1 << 21 : 1 << 20; };
	std::stable_sort(v.begin(), v.end(), [&](auto *a, auto *b) { return key(a) < key(b); });
	return v;
}

std::string num(double v)
{
	return fmt(std::fabs(v) >= 100 ? "%.1f" : std::fabs(v) >= 1 ? "%.3f" : "%.4f", v);
}

/* Gain of @r over compact, percent (positive: better); nullopt without compact. */
std::optional<double> gainVsCompact(const SweepReport &report, const CandidateResult &r)
{
	const CandidateResult *c = byName(report, "compact");
	if (!c || c->rank == 0 || r.rank == 0 || c->median == 0)
		return std::nullopt;
	return report.metric.higherIsBetter ? 100 * (r.median - c->median) / c->median
					    : 100 * (c->median - r.median) / c->median;
}

} /* namespace */

json sweepJson(const SweepReport &report)
{
	json j;
	j["schema"] = "rmatune-sweep";
	j["schema_version"] = kSweepSchemaVersion;
	j["command"] = report.command;
	j["ranks"] = report.ranks;
	j["repeat"] = report.repeat;
	j["timeout_seconds"] = report.timeoutSeconds;
	j["metric"] = { { "name", report.metric.name },
			{ "unit", report.metric.unit },
			{ "better", report.metric.higherIsBetter ? "higher" : "lower" },
			{ "description", report.metric.description } };
	j["topology"] = { { "identity", report.topologyIdentity }, { "source", report.topologySource } };
	j["order"] = "round-robin: every candidate once per round, in the listed order, repeat rounds";
	json runs = json::array();
	for (const auto &[round, index] : report.order)
		runs.push_back({ { "round", round }, { "candidate", report.results[static_cast<std::size_t>(index)].candidate.name } });
	j["runs_in_order"] = std::move(runs);
	json candidates = json::array();
	for (const CandidateResult *r : ordered(report)) {
		json c = { { "name", r->candidate.name },
			   { "description", r->candidate.description },
			   { "aliases", r->candidate.aliases },
			   { "status", statusOf(*r) },
			   { "rank", r->rank },
			   { "placement", placementJson(r->candidate.placement) } };
		if (!r->refused.empty())
			c["reason"] = r->refused;
		if (r->failed)
			c["failure"] = { { "exit_status", r->failedStatus }, { "error", r->failure } };
		json rr = json::array();
		for (const SweepRun &run : r->runs) {
			json one = { { "round", run.round }, { "ok", run.ok }, { "exit_status", run.status } };
			if (run.ok)
				one["value"] = run.value;
			else
				one["error"] = run.error;
			rr.push_back(std::move(one));
		}
		c["runs"] = std::move(rr);
		if (std::any_of(r->runs.begin(), r->runs.end(), [](const SweepRun &x) { return x.ok; })) {
			c["median"] = r->median;
			c["min"] = r->min;
			c["max"] = r->max;
			c["spread_percent"] = r->spreadPercent;
		}
		if (auto g = gainVsCompact(report, *r))
			c["gain_vs_compact_percent"] = *g;
		candidates.push_back(std::move(c));
	}
	j["candidates"] = std::move(candidates);
	json skipped = json::array();
	for (const SweepSkip &s : report.skipped)
		skipped.push_back({ { "name", s.name }, { "reason", s.reason } });
	j["skipped"] = std::move(skipped);
	for (const CandidateResult &r : report.results)
		if (r.rank == 1)
			j["best"] = r.candidate.name;
	return j;
}

std::string sweepTable(const SweepReport &report)
{
	std::string s = cat("rmatune sweep: ", std::to_string(report.results.size()), " candidates x ",
			    std::to_string(report.repeat), " runs, round-robin, ", std::to_string(report.ranks),
			    " ranks; ", report.metric.description, "\n");
	char line[512];
	std::snprintf(line, sizeof(line), "%4s  %-26s %10s %10s %10s %8s %9s  %s\n", "rank", "candidate",
		      cat("median ", report.metric.unit).c_str(), "min", "max", "spread", "vs compact", "placement");
	s.append(line);
	for (const CandidateResult *r : ordered(report)) {
		const auto &p = r->candidate.placement;
		std::string where = cat("ranks");
		for (std::size_t i = 0; i < p.rankCpus.size() && i < 8; ++i)
			where.append(cat(" ", librma::cpuListText(p.rankCpus[i])));
		if (p.rankCpus.size() > 8)
			where.append(" ...");
		where.append(cat("; memory ", p.memoryDefault.str(), "; progress ", p.progressMode));
		if (!p.agentCpus.empty())
			where.append(cat(" on ", librma::cpuListText(p.agentCpus)));
		if (p.hugePages)
			where.append(*p.hugePages == librma::HugePages::Require ? "; huge pages" : "; no huge pages");
		if (!r->refused.empty()) {
			std::snprintf(line, sizeof(line), "%4s  %-26s refused: %s\n", "-", r->candidate.name.c_str(),
				      r->refused.c_str());
		} else if (r->failed) {
			std::snprintf(line, sizeof(line), "%4s  %-26s failed (exit status %d): %s\n", "-",
				      r->candidate.name.c_str(), r->failedStatus, r->failure.c_str());
		} else {
			auto g = gainVsCompact(report, *r);
			std::snprintf(line, sizeof(line), "%4d  %-26s %10s %10s %10s %7.1f%% %9s  %s\n", r->rank,
				      r->candidate.name.c_str(), num(r->median).c_str(), num(r->min).c_str(),
				      num(r->max).c_str(), r->spreadPercent, g ? fmt("%+.1f%%", *g).c_str() : "-",
				      where.c_str());
		}
		s.append(line);
	}
	for (const SweepSkip &k : report.skipped)
		s.append(cat("  not tried: ", k.name, ": ", k.reason, "\n"));
	return s;
}

std::string sweepCsv(const SweepReport &report)
{
	std::string s = "rank,candidate,status,exit_status,median,min,max,spread_percent,gain_vs_compact_percent,unit,runs\n";
	for (const CandidateResult *r : ordered(report)) {
		const bool any = std::any_of(r->runs.begin(), r->runs.end(), [](const SweepRun &x) { return x.ok; });
		auto g = gainVsCompact(report, *r);
		s.append(cat(std::to_string(r->rank), ",", r->candidate.name, ",", statusOf(*r), ",",
			     std::to_string(r->failedStatus), ",", any ? fmt("%.6g", r->median) : "", ",",
			     any ? fmt("%.6g", r->min) : "", ",", any ? fmt("%.6g", r->max) : "", ",",
			     any ? fmt("%.3g", r->spreadPercent) : "", ",", g ? fmt("%.3g", *g) : "", ",",
			     report.metric.unit, ",", std::to_string(r->runs.size()), "\n"));
	}
	return s;
}

bool bestOfSweep(const json &sweep, const std::string &origin, SweepBest &out, std::string &err)
{
	if (!sweep.is_object() || sweep.value("schema", "") != "rmatune-sweep") {
		err = cat(origin, ": not an rmatune sweep result (\"schema\": \"rmatune-sweep\")");
		return false;
	}
	if (!sweep.contains("schema_version") || sweep["schema_version"] != kSweepSchemaVersion) {
		err = cat(origin, ": schema_version is not one this rmatune reads (", std::to_string(kSweepSchemaVersion), ")");
		return false;
	}
	if (!sweep.contains("candidates") || !sweep["candidates"].is_array()) {
		err = cat(origin, ": no \"candidates\" array");
		return false;
	}
	const json *best = nullptr, *compact = nullptr;
	for (const json &c : sweep["candidates"]) {
		if (!c.is_object() || c.value("status", "") != "ok" || !c.contains("median") || !c["median"].is_number())
			continue;
		if (c.value("rank", 0) == 1)
			best = &c;
		if (c.value("name", "") == "compact")
			compact = &c;
	}
	if (!best) {
		err = cat(origin, ": no candidate ran successfully in that sweep: nothing measured to recommend");
		return false;
	}
	if (!best->contains("placement")) {
		err = cat(origin, ": the best candidate has no \"placement\"");
		return false;
	}
	auto parsed = librma::parsePlacementFile((*best)["placement"].dump(), cat(origin, ": placement"), err);
	if (!parsed)
		return false;
	out.placement = std::move(*parsed);
	out.name = best->value("name", "");
	out.median = (*best)["median"].get<double>();
	const json metric = sweep.value("metric", json::object());
	out.unit = metric.value("unit", "");
	const bool higher = metric.value("better", "lower") == "higher";
	out.haveCompact = compact != nullptr;
	if (compact) {
		out.compactMedian = (*compact)["median"].get<double>();
		if (out.compactMedian != 0)
			out.gainPercent = higher ? 100 * (out.median - out.compactMedian) / out.compactMedian
						 : 100 * (out.compactMedian - out.median) / out.compactMedian;
	}
	json ranking = json::array();
	for (const json &c : sweep["candidates"])
		if (c.is_object() && c.value("status", "") == "ok")
			ranking.push_back({ { "name", c.value("name", "") },
					    { "median", c.value("median", 0.0) },
					    { "min", c.value("min", 0.0) },
					    { "max", c.value("max", 0.0) } });
	json evidence = { { "source", "rmatune sweep (measured)" },
			  { "sweep_file", origin },
			  { "command", sweep.value("command", json::array()) },
			  { "metric", metric },
			  { "repeat", sweep.value("repeat", 0) },
			  { "best", out.name },
			  { "best_median", out.median },
			  { "ranking", ranking } };
	if (compact) {
		evidence["compact_median"] = out.compactMedian;
		evidence["measured_gain_vs_compact_percent"] = out.gainPercent;
	} else {
		evidence["measured_gain_vs_compact_percent"] = nullptr;
		evidence["note"] = "compact was not among the candidates that ran: no gain against it";
	}
	out.placement.evidenceJson = evidence.dump();
	return true;
}

} /* namespace rmatune */
