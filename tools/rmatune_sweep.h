/* SPDX-License-Identifier: MIT */
/*
 * rmatune sweep: candidate placements for N ranks on a topology, the order
 * their runs take, and the statistics and ranking of what was measured.
 * The running itself (rmarun --placement FILE) is rmatune.cpp's; what is
 * here is pure, so tests drive it on injected topologies.
 *
 * Candidates. Rank-to-core maps first, each with window memory local (the
 * owner's node) and progress thread:
 *   compact          ranks on consecutive physical cores, one each (SMT avoided)
 *   compact-smt      ranks on consecutive hardware threads (SMT used; only
 *                    when cores have several)
 *   scatter-package  one core of each package in turn
 *   scatter-numa     one core of each NUMA node in turn
 *   scatter-l3       one core of each L3 domain in turn
 *   compact-last     the last N cores: away from CPU 0, where the kernel's
 *                    housekeeping and interrupts often land
 * Two strategies that give the same map on this topology make one candidate
 * (the other named as an alias). Then one dimension at a time on compact:
 *   compact+interleave      window memory interleaved (several nodes with memory)
 *   compact+heaviest-node   window memory on the node of the heaviest origin
 *                           rank (with a traffic matrix; several nodes)
 *   compact+agent-dedicated progress agent on a CPU no rank uses
 *   compact+agent-per-node  one agent per NUMA node holding ranks (when the
 *                           ranks span nodes), each on a free CPU of its node
 *   compact+agent-shared    progress agent on the last rank's CPU
 *   compact+progress-none   no progress thread: origins drain the rings
 *   compact+huge            huge pages required (only when the 2 MiB pool
 *                           has free pages; the others then say off)
 * Choices left out are listed with the reason (an agent per NUMA node: not
 * in this librma; interleave on one node: the same as local).
 */
#pragma once

#include <optional>
#include <string>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "numa/topology.h"
#include "placement_file.h"

namespace rmatune {

inline constexpr int kSweepSchemaVersion = 1;

struct SweepCandidate {
	std::string name;
	std::string description;
	std::vector<std::string> aliases; /* strategies that gave the same placement */
	librma::PlacementFile placement;
};

struct SweepSkip {
	std::string name;
	std::string reason;
};

struct SweepPlan {
	int ranks = 1;
	/* CPUs rmarun may use: an agent's dedicated CPU is chosen among them (all CPUs when empty). */
	std::vector<int> allowed;
	/* Free 2 MiB huge pages of the host's pool. */
	std::size_t freeHugePages = 0;
	/* Bytes by origin, per rank (from a traffic file); empty: none given. */
	std::vector<double> originBytes;
	/* Topology identity and source written into every placement file. */
	std::string topologyIdentity, topologySource;
};

/*
 * The candidates for @plan on @topology, deduplicated, in the order above,
 * and the choices skipped with their reason. False with @err if no map
 * fits (more ranks than hardware threads).
 */
bool sweepCandidates(const librma::Topology &topology, const SweepPlan &plan, std::vector<SweepCandidate> &out,
		     std::vector<SweepSkip> &skipped, std::string &err);

/*
 * Keep the candidates @names asks for (a candidate's name or alias); false
 * with @err naming an unknown one and the names there are (a skipped name
 * says why it was skipped).
 */
bool restrictCandidates(std::vector<SweepCandidate> &candidates, const std::vector<SweepSkip> &skipped,
			const std::vector<std::string> &names, std::string &err);

/* The runs in order: round-robin, every candidate once per round, @repeat rounds: (round, candidate). */
std::vector<std::pair<int, int>> runOrder(int candidates, int repeat);

/* One run's outcome. */
struct SweepRun {
	int round = 0;
	bool ok = false;
	double value = 0;  /* the metric, when ok */
	int status = 0;    /* rmarun's exit status; 128 + signal */
	std::string error; /* why it failed, in words */
};

struct CandidateResult {
	SweepCandidate candidate;
	std::string refused; /* why it was not run ("" when it was) */
	std::vector<SweepRun> runs;
	/* Over the successful runs; a candidate with a failed run is failed and unranked. */
	bool failed = false;
	int failedStatus = 0;
	std::string failure;
	double median = 0, min = 0, max = 0;
	double spreadPercent = 0; /* (max - min) / median */
	int rank = 0;             /* 1 = best; 0 unranked */
};

struct Metric {
	std::string name = "wall_time"; /* wall_time | rmabench */
	std::string unit = "s";
	bool higherIsBetter = false;
	std::string description = "wall-clock time of rmarun, start to exit";
};

/* Summarize each candidate's runs and rank the ones that all succeeded. */
void rankResults(std::vector<CandidateResult> &results, const Metric &metric);

/*
 * The figure an rmabench run reports, from its --format json output: the
 * median of the largest message size; its unit and direction in @metric.
 * False with @err if the text is not rmabench JSON.
 */
bool rmabenchFigure(const std::string &text, double &value, Metric &metric, std::string &err);

struct SweepReport {
	std::vector<std::string> command;
	int ranks = 0, repeat = 0;
	double timeoutSeconds = 0;
	Metric metric;
	std::string topologyIdentity, topologySource;
	std::vector<std::pair<int, int>> order; /* as run: (round, index into results) */
	std::vector<CandidateResult> results;
	std::vector<SweepSkip> skipped;
};

/* The sweep result (what --out writes and recommend --sweep reads). */
nlohmann::json sweepJson(const SweepReport &report);
std::string sweepTable(const SweepReport &report);
std::string sweepCsv(const SweepReport &report);

/* The measured best of a sweep file, as recommend --sweep uses it. */
struct SweepBest {
	librma::PlacementFile placement; /* with the evidence */
	std::string name;
	double median = 0, compactMedian = 0;
	double gainPercent = 0; /* vs compact, positive: better */
	bool haveCompact = false;
	std::string unit;
};

/* False with @err if @sweep is not a sweep file or no candidate ran successfully. */
bool bestOfSweep(const nlohmann::json &sweep, const std::string &origin, SweepBest &out, std::string &err);

} /* namespace rmatune */
