/* SPDX-License-Identifier: MIT */
#include "placement_file.h"

#include <algorithm>
#include <charconv>

#include <nlohmann/json.hpp>

#include "bootstrap/binding.h"
#include "error/error.h"

using nlohmann::json;

namespace librma {

namespace {

template<typename... Parts>
std::string cat(const Parts &...parts)
{
	std::string s;
	(s.append(parts), ...);
	return s;
}

/* A JSON value as it appeared, shortened, for messages. */
std::string shown(const json &v)
{
	std::string s = v.dump();
	return s.size() > 40 ? s.substr(0, 37) + "..." : s;
}

/* CPUs from a string ("0-3,8") or an array of non-negative integers. */
bool cpusOf(const json &v, std::vector<int> &out)
{
	if (v.is_string()) {
		auto cpus = parseCpuListStrict(v.get<std::string>());
		if (!cpus)
			return false;
		out = std::move(*cpus);
		return true;
	}
	if (!v.is_array() || v.empty())
		return false;
	out.clear();
	for (const json &c : v) {
		if (!c.is_number_integer() || c.get<long long>() < 0 || c.get<long long>() > (1 << 22))
			return false;
		out.push_back(c.get<int>());
	}
	std::sort(out.begin(), out.end());
	out.erase(std::unique(out.begin(), out.end()), out.end());
	return true;
}

bool policyOf(const json &v, Placement &out)
{
	if (!v.is_string())
		return false;
	std::string text = v.get<std::string>();
	if (text == "owner")
		text = "local";
	auto p = Placement::parse(text);
	if (!p)
		return false;
	out = p.value();
	return true;
}

const char *hugePagesWord(HugePages h)
{
	switch (h) {
	case HugePages::Off:
		return "off";
	case HugePages::Prefer:
		return "prefer";
	case HugePages::Require:
		return "require";
	}
	return "off";
}

constexpr const char *kPolicyWords = "local (the owner's node), interleave, node:N or none";

/* Parse into @f; false with @err naming the place. */
bool fromJson(const json &j, PlacementFile &f, std::string &err)
{
	if (!j.is_object()) {
		err = "expected a JSON object at the top";
		return false;
	}
	if (!j.contains("schema") || j["schema"] != "rmatune-placement") {
		err = "\"schema\" must be \"rmatune-placement\"";
		return false;
	}
	if (!j.contains("schema_version") || !j["schema_version"].is_number_integer()) {
		err = "\"schema_version\" must be an integer";
		return false;
	}
	if (j["schema_version"].get<long long>() != kPlacementSchemaVersion) {
		err = cat("schema_version ", shown(j["schema_version"]), " is not one this librma reads (",
			  std::to_string(kPlacementSchemaVersion), ")");
		return false;
	}
	static const char *const known[] = { "schema", "schema_version", "topology", "ranks", "memory",
					     "huge_pages", "progress", "evidence" };
	for (auto it = j.begin(); it != j.end(); ++it)
		if (std::find_if(std::begin(known), std::end(known), [&](const char *k) { return it.key() == k; }) ==
		    std::end(known)) {
			err = cat("unknown key \"", it.key(), "\" (a misspelling would otherwise be ignored)");
			return false;
		}

	if (j.contains("topology")) {
		const json &t = j["topology"];
		if (!t.is_object() || (t.contains("identity") && !t["identity"].is_string()) ||
		    (t.contains("source") && !t["source"].is_string())) {
			err = "\"topology\" must be an object with string \"identity\" and \"source\"";
			return false;
		}
		f.topologyIdentity = t.value("identity", "");
		f.topologySource = t.value("source", "");
	}

	if (!j.contains("ranks") || !j["ranks"].is_array() || j["ranks"].empty()) {
		err = "\"ranks\" must be a non-empty array of { \"rank\": R, \"cpus\": \"LIST\" }";
		return false;
	}
	const json &ranks = j["ranks"];
	f.rankCpus.assign(ranks.size(), {});
	std::vector<bool> seen(ranks.size(), false);
	for (std::size_t i = 0; i < ranks.size(); ++i) {
		const std::string where = cat("ranks[", std::to_string(i), "]");
		const json &r = ranks[i];
		if (!r.is_object() || !r.contains("rank") || !r.contains("cpus")) {
			err = cat(where, ": expected { \"rank\": R, \"cpus\": \"LIST\" }, not ", shown(r));
			return false;
		}
		const json &rank = r["rank"];
		if (!rank.is_number_integer() || rank.get<long long>() < 0 ||
		    rank.get<long long>() >= static_cast<long long>(ranks.size())) {
			err = cat(where, ".rank: ", shown(rank), " is not a rank of a ", std::to_string(ranks.size()),
				  "-rank job (0..", std::to_string(ranks.size() - 1), ")");
			return false;
		}
		const std::size_t n = rank.get<std::size_t>();
		if (seen[n]) {
			err = cat(where, ".rank: rank ", std::to_string(n), " is placed twice");
			return false;
		}
		seen[n] = true;
		if (!cpusOf(r["cpus"], f.rankCpus[n])) {
			err = cat(where, ".cpus: ", shown(r["cpus"]),
				  " is not a CPU list (\"0-3,8\" or an array of CPU numbers, not empty)");
			return false;
		}
		for (auto it = r.begin(); it != r.end(); ++it)
			if (it.key() != "rank" && it.key() != "cpus" && it.key() != "note") {
				err = cat(where, ": unknown key \"", it.key(), "\"");
				return false;
			}
	}

	if (j.contains("memory")) {
		const json &m = j["memory"];
		if (!m.is_object()) {
			err = "\"memory\" must be an object { \"default\": POLICY, \"windows\": { NAME: POLICY } }";
			return false;
		}
		for (auto it = m.begin(); it != m.end(); ++it)
			if (it.key() != "default" && it.key() != "windows") {
				err = cat("memory: unknown key \"", it.key(), "\"");
				return false;
			}
		if (m.contains("default") && !policyOf(m["default"], f.memoryDefault)) {
			err = cat("memory.default: ", shown(m["default"]), " is not a policy: expected ", kPolicyWords);
			return false;
		}
		if (m.contains("windows")) {
			if (!m["windows"].is_object()) {
				err = "memory.windows must be an object { NAME: POLICY }";
				return false;
			}
			for (auto it = m["windows"].begin(); it != m["windows"].end(); ++it) {
				/* The names reach the ranks in RMA_PLACEMENT_WINDOWS: refuse one it cannot carry. */
				if (std::string why = windowNameProblem(it.key()); !why.empty()) {
					err = cat("memory.windows: ", shown(json(it.key())), ": ", why);
					return false;
				}
				Placement p;
				if (!policyOf(it.value(), p)) {
					err = cat("memory.windows.", it.key(), ": ", shown(it.value()),
						  " is not a policy: expected ", kPolicyWords);
					return false;
				}
				f.windowPolicies.emplace_back(it.key(), p);
			}
		}
	}

	if (j.contains("huge_pages")) {
		const json &h = j["huge_pages"];
		std::string word = h.is_string() ? h.get<std::string>() : "";
		if (word == "on")
			word = "require";
		auto parsed = parseHugePages(word);
		if (!h.is_string() || !parsed) {
			err = cat("huge_pages: ", shown(h), " is not one of off, prefer, require (or on)");
			return false;
		}
		f.hugePages = parsed.value();
	}

	if (j.contains("progress")) {
		const json &p = j["progress"];
		if (!p.is_object()) {
			err = "\"progress\" must be an object { \"mode\": none|thread|agent, \"cores\": \"LIST\" }";
			return false;
		}
		for (auto it = p.begin(); it != p.end(); ++it)
			if (it.key() != "mode" && it.key() != "cores") {
				err = cat("progress: unknown key \"", it.key(), "\"");
				return false;
			}
		if (p.contains("mode")) {
			const json &m = p["mode"];
			if (!m.is_string() || (m != "none" && m != "thread" && m != "agent")) {
				err = cat("progress.mode: ", shown(m), " is not one of none, thread, agent");
				return false;
			}
			f.progressMode = m.get<std::string>();
		}
		if (p.contains("cores") && !cpusOf(p["cores"], f.agentCpus)) {
			err = cat("progress.cores: ", shown(p["cores"]), " is not a CPU list");
			return false;
		}
	}

	if (j.contains("evidence")) {
		if (!j["evidence"].is_object()) {
			err = "\"evidence\" must be an object";
			return false;
		}
		f.evidenceJson = j["evidence"].dump();
	}
	return true;
}

} /* namespace */

std::optional<PlacementFile> parsePlacementFile(std::string_view text, const std::string &origin, std::string &err)
{
	json j;
	try {
		j = json::parse(text.begin(), text.end());
	} catch (const json::parse_error &e) {
		err = cat(origin, ": malformed JSON at byte ", std::to_string(e.byte), ": ", e.what());
		return std::nullopt;
	}
	PlacementFile f;
	std::string why;
	try {
		if (!fromJson(j, f, why)) {
			err = cat(origin, ": ", why);
			return std::nullopt;
		}
	} catch (const json::exception &e) {
		/* A shape the checks above did not foresee: still an error, never a crash. */
		err = cat(origin, ": ", e.what());
		return std::nullopt;
	}
	return f;
}

std::string writePlacementFile(const PlacementFile &f)
{
	json j;
	j["schema"] = "rmatune-placement";
	j["schema_version"] = kPlacementSchemaVersion;
	if (!f.topologyIdentity.empty() || !f.topologySource.empty()) {
		j["topology"] = json::object();
		if (!f.topologyIdentity.empty())
			j["topology"]["identity"] = f.topologyIdentity;
		if (!f.topologySource.empty())
			j["topology"]["source"] = f.topologySource;
	}
	json ranks = json::array();
	for (std::size_t r = 0; r < f.rankCpus.size(); ++r)
		ranks.push_back({ { "rank", r }, { "cpus", cpuListText(f.rankCpus[r]) } });
	j["ranks"] = std::move(ranks);
	json memory = { { "default", f.memoryDefault.str() } };
	if (!f.windowPolicies.empty()) {
		json windows = json::object();
		for (const auto &[name, p] : f.windowPolicies)
			windows[name] = p.str();
		memory["windows"] = std::move(windows);
	}
	j["memory"] = std::move(memory);
	if (f.hugePages)
		j["huge_pages"] = hugePagesWord(*f.hugePages);
	if (!f.progressMode.empty() || !f.agentCpus.empty()) {
		json p = json::object();
		if (!f.progressMode.empty())
			p["mode"] = f.progressMode;
		if (!f.agentCpus.empty())
			p["cores"] = cpuListText(f.agentCpus);
		j["progress"] = std::move(p);
	}
	if (!f.evidenceJson.empty())
		j["evidence"] = json::parse(f.evidenceJson, nullptr, false);
	return j.dump(2) + "\n";
}

bool checkPlacementFile(const PlacementFile &f, const Topology &topology, const std::vector<int> &allowed,
			std::string &err)
{
	std::vector<int> all;
	for (const CpuCore &core : topology.cores())
		all.insert(all.end(), core.cpus.begin(), core.cpus.end());
	std::sort(all.begin(), all.end());
	auto checkCpus = [&](const std::vector<int> &cpus, const std::string &where) {
		for (int cpu : cpus) {
			if (!std::binary_search(all.begin(), all.end(), cpu)) {
				err = cat(where, ": CPU ", std::to_string(cpu), " is not a CPU of this topology (",
					  cpuListText(all), "; ", topology.source(), ")");
				return false;
			}
			if (!allowed.empty() && !std::binary_search(allowed.begin(), allowed.end(), cpu)) {
				err = cat(where, ": CPU ", std::to_string(cpu), " is not one this process may use (",
					  cpuListText(allowed), ")");
				return false;
			}
		}
		return true;
	};
	for (std::size_t r = 0; r < f.rankCpus.size(); ++r)
		if (!checkCpus(f.rankCpus[r], cat("rank ", std::to_string(r))))
			return false;
	if (!checkCpus(f.agentCpus, "progress.cores"))
		return false;
	auto checkPolicy = [&](const Placement &p, const std::string &where) {
		if (p.kind != Placement::Kind::Node)
			return true;
		int index = topology.indexOfNode(p.node);
		if (index < 0) {
			err = cat(where, ": node:", std::to_string(p.node), ": this topology has no NUMA node ",
				  std::to_string(p.node));
			return false;
		}
		if (!topology.nodes()[static_cast<std::size_t>(index)].hasMemory) {
			err = cat(where, ": node:", std::to_string(p.node), ": NUMA node ", std::to_string(p.node),
				  " has no memory");
			return false;
		}
		return true;
	};
	if (!checkPolicy(f.memoryDefault, "memory.default"))
		return false;
	for (const auto &[name, p] : f.windowPolicies)
		if (!checkPolicy(p, cat("memory.windows.", name)))
			return false;
	return true;
}

bool operator==(const PlacementFile &a, const PlacementFile &b)
{
	auto same = [](const Placement &x, const Placement &y) {
		return x.kind == y.kind && (x.kind != Placement::Kind::Node || x.node == y.node);
	};
	/* Windows are a JSON object: their order carries no meaning. */
	auto byName = [](std::vector<std::pair<std::string, Placement>> v) {
		std::sort(v.begin(), v.end(), [](const auto &x, const auto &y) { return x.first < y.first; });
		return v;
	};
	const auto wa = byName(a.windowPolicies), wb = byName(b.windowPolicies);
	if (wa.size() != wb.size())
		return false;
	for (std::size_t i = 0; i < wa.size(); ++i)
		if (wa[i].first != wb[i].first || !same(wa[i].second, wb[i].second))
			return false;
	auto evidence = [](const std::string &s) { return s.empty() ? json() : json::parse(s, nullptr, false); };
	return a.rankCpus == b.rankCpus && same(a.memoryDefault, b.memoryDefault) && a.hugePages == b.hugePages &&
	       a.progressMode == b.progressMode && a.agentCpus == b.agentCpus &&
	       a.topologyIdentity == b.topologyIdentity && a.topologySource == b.topologySource &&
	       evidence(a.evidenceJson) == evidence(b.evidenceJson);
}

} /* namespace librma */
