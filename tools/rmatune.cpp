/* SPDX-License-Identifier: MIT */
/*
 * rmatune: measure a node and, in later increments, recommend and apply a
 * placement of ranks, window memory and progress agents (issue 15).
 *
 *   rmatune probe [--effort quick|normal|thorough] [--format table|json]
 *                 [--output FILE] [--plot DIR] [--pairs all|sample:N]
 *   rmatune sweep -- PROGRAM [ARGS...]       not implemented yet
 *   rmatune recommend                        not implemented yet
 *
 * The topology is hwloc's (HWLOC_SYNTHETIC and HWLOC_XMLFILE inject one;
 * RMA_TOPOLOGY a fake sysfs tree). Measurements run only on the CPUs this
 * process may use. Exit status: 0 done, 1 a measurement or output failed,
 * 2 bad usage (and the subcommands not implemented yet).
 */
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include <CLI/CLI.hpp>

#include "bootstrap/binding.h"
#include "numa/topology.h"
#include "rmatune_probe.h"
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

int notYet(const char *what)
{
	std::fprintf(stderr,
		     "rmatune %s: not implemented yet (issue 15: this build has `rmatune probe` only; sweep and "
		     "recommend come in the next increments)\n",
		     what);
	return kUsage;
}

} /* namespace */

int main(int argc, char **argv)
{
	CLI::App app("rmatune: measure this node for placement tuning (issue 15: probe; sweep and recommend to come)",
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
	CLI::App *recommendCmd =
		app.add_subcommand("recommend", "recommend a placement from profile and sweep (not implemented yet)");
	recommendCmd->allow_extras();

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
	if (recommendCmd->parsed())
		return notYet("recommend");
	return probe(pa);
}
