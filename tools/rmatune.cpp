/* SPDX-License-Identifier: MIT */
/*
 * rmatune: measure a node and recommend a placement of ranks (and, in
 * later increments, of window memory and progress agents) that
 * `rmarun --placement` applies (issue 15).
 *
 *   rmatune probe [--effort quick|normal|thorough] [--format table|json]
 *                 [--output FILE] [--plot DIR] [--pairs all|sample:N]
 *   rmatune recommend --profile FILE --traffic FILE [--ranks N]
 *                 [--method auto|exhaustive|heuristic] [--output FILE]
 *                 [--format table|json]
 *   rmatune sweep -- PROGRAM [ARGS...]       not implemented yet
 *
 * The topology is hwloc's (HWLOC_SYNTHETIC and HWLOC_XMLFILE inject one;
 * RMA_TOPOLOGY a fake sysfs tree). Measurements run only on the CPUs this
 * process may use. Exit status: 0 done, 1 a measurement, an input file or
 * an output failed, 2 bad usage (and the subcommand not implemented yet).
 */
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include <CLI/CLI.hpp>

#include "bootstrap/binding.h"
#include "numa/topology.h"
#include "rmatune_probe.h"
#include "rmatune_recommend.h"
#include "rmatune_report.h"

using namespace rmatune;

namespace {

constexpr int kUsage = 2;

template<typename... Parts>
std::string cat(const Parts &...parts)
{
	std::string s;
	(s.append(parts), ...);
	return s;
}

struct ProbeArgs {
	std::string effort = "normal";
	std::string format = "table";
	std::string output;
	std::string plot;
	std::string pairs;
};

/* "all" or "sample:N" with N >= 1. */
bool parsePairs(const std::string &text, PairsChoice &out)
{
	out = PairsChoice();
	if (text.empty())
		return true;
	if (text == "all") {
		out.explicitAll = true;
		return true;
	}
	const std::string prefix = "sample:";
	if (text.compare(0, prefix.size(), prefix) != 0 || text.size() == prefix.size())
		return false;
	char *end = nullptr;
	long n = std::strtol(text.c_str() + prefix.size(), &end, 10);
	if (*end != '\0' || n < 1 || n > 1000000)
		return false;
	out.sample = static_cast<int>(n);
	return true;
}

CLI::Validator pairsValidator()
{
	return CLI::Validator(
		[](std::string &v) {
			PairsChoice p;
			if (parsePairs(v, p))
				return std::string();
			return cat("--pairs '", v, "': expected all or sample:N (N >= 1)");
		},
		"all|sample:N", "pairs");
}

int probe(const ProbeArgs &args)
{
	Effort effort = args.effort == "quick" ? Effort::Quick
			: args.effort == "thorough" ? Effort::Thorough
						    : Effort::Normal;
	PairsChoice pairs;
	parsePairs(args.pairs, pairs);

	auto t0 = std::chrono::steady_clock::now();
	const librma::Topology &topology = librma::Topology::system();
	Probe result;
	result.effort = effort;
	result.params = effortParams(effort);
	result.allowedCpus = librma::affinityCpus();
	if (result.allowedCpus.empty()) {
		std::fprintf(stderr, "rmatune: cannot read this process's CPU affinity\n");
		return 1;
	}
	if (usableCores(topology, result.allowedCpus).empty()) {
		std::fprintf(stderr,
			     "rmatune: none of the topology's cores holds an allowed CPU (%s; topology from %s)\n",
			     librma::cpuListText(result.allowedCpus).c_str(), topology.source().c_str());
		return 1;
	}
	std::string err;
	if (!measureCoreToCore(topology, result.allowedCpus, result.params, pairs, result.cores, err) ||
	    !measureMemory(topology, result.allowedCpus, result.params, result.memory, err)) {
		std::fprintf(stderr, "rmatune: probe: %s\n", err.c_str());
		return 1;
	}
	result.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();

	nlohmann::json profile = profileJson(topology, result);
	if (args.format == "json")
		std::printf("%s\n", profile.dump(2).c_str());
	else
		printTables(stdout, profile);
	std::fflush(stdout);

	int status = 0;
	if (!args.output.empty()) {
		FILE *f = std::fopen(args.output.c_str(), "w");
		bool ok = f && std::fprintf(f, "%s\n", profile.dump(2).c_str()) >= 0;
		ok = f && std::fclose(f) == 0 && ok;
		if (!ok) {
			std::fprintf(stderr, "rmatune: --output: cannot write %s\n", args.output.c_str());
			status = 1;
		}
	}
	if (!args.plot.empty()) {
		std::vector<std::string> written;
		if (!writePlots(args.plot, profile, written, err)) {
			std::fprintf(stderr, "rmatune: --plot: %s\n", err.c_str());
			status = 1;
		}
	}
	return status;
}

struct RecommendArgs {
	std::string profile;
	std::string traffic;
	std::vector<std::string> windows;
	int ranks = 0;
	std::string method = "auto";
	std::string output;
	std::string format = "table";
};

bool readText(const std::string &path, std::string &text)
{
	std::ifstream in(path);
	if (!in)
		return false;
	std::ostringstream s;
	s << in.rdbuf();
	text = s.str();
	return !in.bad();
}

int recommendCmd(const RecommendArgs &args)
{
	std::string profileText, trafficText, err;
	if (!readText(args.profile, profileText)) {
		std::fprintf(stderr, "rmatune recommend: --profile %s: cannot read it\n", args.profile.c_str());
		return 1;
	}
	if (!readText(args.traffic, trafficText)) {
		std::fprintf(stderr, "rmatune recommend: --traffic %s: cannot read it\n", args.traffic.c_str());
		return 1;
	}
	nlohmann::json profile = nlohmann::json::parse(profileText, nullptr, false);
	if (profile.is_discarded()) {
		std::fprintf(stderr, "rmatune recommend: --profile %s: malformed JSON\n", args.profile.c_str());
		return 1;
	}
	CostModel model;
	if (!costModelFromProfile(profile, model, err)) {
		std::fprintf(stderr, "rmatune recommend: --profile %s: %s\n", args.profile.c_str(), err.c_str());
		return 1;
	}
	Traffic traffic;
	if (!parseTraffic(trafficText, args.traffic, args.ranks, traffic, err, args.windows)) {
		std::fprintf(stderr, "rmatune recommend: --traffic %s\n", err.c_str());
		return 1;
	}
	const Method method = args.method == "exhaustive"  ? Method::Exhaustive
			      : args.method == "heuristic" ? Method::Heuristic
							   : Method::Auto;
	Recommendation rec;
	if (!recommend(model, traffic, method, rec, err)) {
		std::fprintf(stderr, "rmatune recommend: %s\n", err.c_str());
		return 1;
	}
	const std::string file = recommendationFile(model, traffic, rec);
	if (args.format == "json")
		std::fputs(file.c_str(), stdout);
	else
		std::fputs(recommendationTable(model, traffic, rec).c_str(), stdout);
	std::fflush(stdout);
	if (!args.output.empty()) {
		FILE *f = std::fopen(args.output.c_str(), "w");
		bool ok = f && std::fputs(file.c_str(), f) >= 0;
		ok = f && std::fclose(f) == 0 && ok;
		if (!ok) {
			std::fprintf(stderr, "rmatune recommend: --output: cannot write %s\n", args.output.c_str());
			return 1;
		}
	}
	return 0;
}

int notYet(const char *what)
{
	std::fprintf(stderr,
		     "rmatune %s: not implemented yet (issue 15: this build has `rmatune probe` and `rmatune "
		     "recommend`; sweep comes in a later increment)\n",
		     what);
	return kUsage;
}

} /* namespace */

int main(int argc, char **argv)
{
	CLI::App app("rmatune: measure this node and recommend a placement (issue 15: probe, recommend; sweep to come)",
		     "rmatune");
	app.require_subcommand(1, 1);

	ProbeArgs pa;
	CLI::App *probeCmd = app.add_subcommand(
		"probe", "the node's topology (hwloc) and measured core-to-core and node-to-node matrices");
	probeCmd->add_option("--effort", pa.effort, "quick | normal (default; under 30 s on a small node) | thorough")
		->check(CLI::IsMember({ "quick", "normal", "thorough" }));
	probeCmd->add_option("--format", pa.format, "table (default) | json, on standard output")
		->check(CLI::IsMember({ "table", "json" }));
	probeCmd->add_option("--output", pa.output, "also write the profile (JSON) to FILE");
	probeCmd->add_option("--plot", pa.plot, "write SVG heatmaps of the matrices into DIR (created if missing)");
	probeCmd->add_option("--pairs", pa.pairs,
			     "core pairs measured: all (the default up to 32 cores), or sample:N (a stated, "
			     "stratified sample; the default is sample:256 above 32 cores)")
		->check(pairsValidator());

	CLI::App *sweepCmd = app.add_subcommand("sweep", "run a program under candidate placements (not implemented yet)");
	std::vector<std::string> sweepCommand;
	sweepCmd->add_option("command", sweepCommand, "-- PROGRAM [ARGS...]");
	sweepCmd->allow_extras();
	RecommendArgs ra;
	CLI::App *recommendApp = app.add_subcommand(
		"recommend", "the rank-to-core placement that minimises the modelled cost of a traffic matrix on a "
			     "profiled node, as a placement file for rmarun --placement");
	recommendApp->add_option("--profile", ra.profile, "the machine profile (rmatune probe --output FILE)")
		->required();
	recommendApp->add_option("--traffic", ra.traffic,
				 "bytes by origin and target: JSON {\"bytes\": [[...]]} or {\"pairs\": [...]}, CSV "
				 "lines origin,target,bytes, or the file a job run with RMA_STATS writes")
		->required();
	recommendApp->add_option("--windows", ra.windows,
				 "with an RMA_STATS file: the windows (names or ids) whose traffic is summed "
				 "(default: all)")
		->delimiter(',');
	recommendApp->add_option("--ranks", ra.ranks, "the number of ranks (default: the matrix's size)")
		->check(CLI::Range(1, 1 << 20));
	recommendApp->add_option("--method", ra.method,
				 "auto (default: exhaustive when there are at most 2e6 assignments, else heuristic) | "
				 "exhaustive | heuristic")
		->check(CLI::IsMember({ "auto", "exhaustive", "heuristic" }));
	recommendApp->add_option("--output", ra.output, "write the placement file to FILE");
	recommendApp->add_option("--format", ra.format,
				 "table (default: the choice, gain and evidence) | json (the placement file), on "
				 "standard output")
		->check(CLI::IsMember({ "table", "json" }));

	try {
		app.parse(argc, argv);
	} catch (const CLI::CallForHelp &e) {
		return app.exit(e);
	} catch (const CLI::CallForAllHelp &e) {
		return app.exit(e);
	} catch (const CLI::ParseError &e) {
		std::fprintf(stderr, "rmatune: %s\nTry 'rmatune --help' for more information.\n", e.what());
		return kUsage;
	}
	if (sweepCmd->parsed())
		return notYet("sweep");
	if (recommendApp->parsed())
		return recommendCmd(ra);
	return probe(pa);
}
