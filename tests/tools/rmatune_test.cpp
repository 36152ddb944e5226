/* SPDX-License-Identifier: MIT */
/*
 * rmatune as its users run it: probe's JSON profile (keys, matrix shapes,
 * positive finite medians, empty diagonal), a topology injected through
 * HWLOC_SYNTHETIC, --output, --plot's SVG heatmaps, the tables, and bad
 * usage. Effort quick: this checks behaviour and shape, never speed.
 */
#include <gtest/gtest.h>

#include <sched.h>
#include <sys/stat.h>

#include <cmath>
#include <cstdlib>
#include <fstream>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "support/multiproc.h"

using librma::test::CommandResult;
using librma::test::readFile;
using librma::test::runCommand;
using librma::test::ScratchDir;
using nlohmann::json;

namespace {

std::string rmatune()
{
	const char *v = std::getenv("RMA_BUILD_ROOT");
	return std::string(v ? v : "").append("/tools/rmatune");
}

CommandResult run(const std::vector<std::string> &args, const std::string &synthetic = "")
{
	std::vector<std::string> argv;
	if (!synthetic.empty()) {
		argv.push_back("env");
		argv.push_back(std::string("HWLOC_SYNTHETIC=").append(synthetic));
	}
	argv.push_back(rmatune());
	argv.insert(argv.end(), args.begin(), args.end());
	return runCommand(argv, 120);
}

/* CPUs this test may run on; rmatune sees the same. */
int allowedCpuCount()
{
	cpu_set_t set;
	CPU_ZERO(&set);
	if (sched_getaffinity(0, sizeof(set), &set) != 0)
		return -1;
	return CPU_COUNT(&set);
}

bool positiveFinite(const json &v)
{
	return v.is_number() && std::isfinite(v.get<double>()) && v.get<double>() > 0;
}

/* @m is an @rows x @cols array of arrays. */
void expectShape(const json &m, std::size_t rows, std::size_t cols, const std::string &what)
{
	ASSERT_TRUE(m.is_array()) << what;
	ASSERT_EQ(m.size(), rows) << what;
	for (const json &row : m) {
		ASSERT_TRUE(row.is_array()) << what;
		EXPECT_EQ(row.size(), cols) << what;
	}
}

/* The checks every profile passes, whatever the topology. */
void expectProfile(const json &p)
{
	for (const char *key : { "schema", "schema_version", "tool", "timestamp", "host", "topology", "measurement",
				 "core_to_core", "memory" })
		EXPECT_TRUE(p.contains(key)) << key;
	EXPECT_EQ(p["schema"], "rmatune-profile");
	EXPECT_EQ(p["schema_version"], 1);
	EXPECT_FALSE(p["host"]["hostname"].get<std::string>().empty());
	EXPECT_FALSE(p["host"]["kernel"].get<std::string>().empty());
	EXPECT_EQ(p["measurement"]["effort"], "quick");
	EXPECT_GT(p["measurement"]["duration_seconds"].get<double>(), 0);

	const json &t = p["topology"];
	for (const char *key : { "source", "identity", "description", "packages", "l3_domains", "numa_nodes", "cores",
				 "allowed_cpus", "huge_pages" })
		EXPECT_TRUE(t.contains(key)) << key;
	EXPECT_EQ(t["identity"].get<std::string>().rfind("fnv1a64:", 0), 0u);
	EXPECT_TRUE(t["huge_pages"]["total"].is_number());
	EXPECT_TRUE(t["huge_pages"]["free"].is_number());
	EXPECT_EQ(t["huge_pages"]["page_size_bytes"], 2u << 20);
	for (const json &n : t["numa_nodes"]) {
		EXPECT_TRUE(n["cpus"].is_array());
		EXPECT_TRUE(n["has_memory"].is_boolean());
	}

	/* Core to core: one row and column per measured core, empty diagonal, every pair measured. */
	const json &cc = p["core_to_core"];
	EXPECT_EQ(cc["unit"], "ns");
	const std::size_t n = cc["cores"].size();
	EXPECT_EQ(cc["cpus"].size(), n);
	for (const char *k : { "median", "min", "p25", "p75", "max" })
		expectShape(cc[k], n, n, std::string("core_to_core.").append(k));
	EXPECT_EQ(cc["pairs"]["mode"], "all");
	EXPECT_EQ(cc["pairs"]["measured"].get<std::size_t>(), n * (n - 1) / 2);
	for (std::size_t i = 0; i < n; ++i)
		for (std::size_t j = 0; j < n; ++j) {
			if (i == j) {
				EXPECT_TRUE(cc["median"][i][j].is_null()) << i;
				continue;
			}
			EXPECT_TRUE(positiveFinite(cc["median"][i][j])) << i << "," << j;
			EXPECT_LE(cc["min"][i][j].get<double>(), cc["median"][i][j].get<double>());
			EXPECT_LE(cc["median"][i][j].get<double>(), cc["max"][i][j].get<double>());
			EXPECT_LE(cc["p25"][i][j].get<double>(), cc["p75"][i][j].get<double>());
			EXPECT_EQ(cc["median"][i][j], cc["median"][j][i]);
		}
	EXPECT_GT(cc["method"]["round_trips_per_sample"].get<int>(), 0);
	EXPECT_GT(cc["method"]["samples_per_pair"].get<int>(), 0);

	/* Node to node: rows are nodes with allowed cores, columns nodes with memory. */
	const json &m = p["memory"];
	std::size_t withMemory = 0;
	for (const json &node : t["numa_nodes"])
		withMemory += node["has_memory"].get<bool>() ? 1 : 0;
	const std::size_t rows = m["from_nodes"].size(), cols = m["to_nodes"].size();
	EXPECT_GE(rows, 1u);
	EXPECT_LE(rows, t["numa_nodes"].size());
	EXPECT_EQ(cols, withMemory);
	for (const char *part : { "latency", "bandwidth" }) {
		for (const char *k : { "median", "min", "p25", "p75", "max" })
			expectShape(m[part][k], rows, cols, std::string(part).append(".").append(k));
		for (std::size_t r = 0; r < rows; ++r)
			for (std::size_t c = 0; c < cols; ++c) {
				EXPECT_TRUE(positiveFinite(m[part]["median"][r][c])) << part << " " << r << "," << c;
				EXPECT_LE(m[part]["min"][r][c].get<double>(), m[part]["max"][r][c].get<double>());
			}
	}
	EXPECT_EQ(m["latency"]["unit"], "ns");
	EXPECT_EQ(m["bandwidth"]["unit"], "GB/s");
	EXPECT_GE(m["method"]["buffer_bytes"].get<std::size_t>(), 64u << 20);
	EXPECT_GT(m["method"]["latency_samples"].get<int>(), 0);
}

TEST(RmatuneTest, ProbeJsonIsAWellFormedProfile)
{
	CommandResult r = run({ "probe", "--effort", "quick", "--format", "json" });
	ASSERT_EQ(r.status, 0) << r.err;
	json p = json::parse(r.out, nullptr, false);
	ASSERT_FALSE(p.is_discarded()) << r.out;
	expectProfile(p);
	/* This host's cores, as many as this process may use (one thread per core here: no SMT assumed). */
	const json &cc = p["core_to_core"];
	int cpus = allowedCpuCount();
	ASSERT_GT(cpus, 0);
	EXPECT_GE(cc["cores"].size(), 1u);
	EXPECT_LE(cc["cores"].size(), static_cast<std::size_t>(cpus));
	EXPECT_EQ(p["topology"]["source"].get<std::string>().find("HWLOC_SYNTHETIC"), std::string::npos);
}

TEST(RmatuneTest, InjectedTopologyIsReportedAndMeasuredOnAllowedCores)
{
	CommandResult r = run({ "probe", "--effort", "quick", "--format", "json" }, "pack:1 numa:1 l3:1 core:2 pu:1");
	ASSERT_EQ(r.status, 0) << r.err;
	json p = json::parse(r.out, nullptr, false);
	ASSERT_FALSE(p.is_discarded()) << r.out;
	expectProfile(p);
	const json &t = p["topology"];
	EXPECT_NE(t["source"].get<std::string>().find("HWLOC_SYNTHETIC"), std::string::npos) << t["source"];
	EXPECT_EQ(t["cores"].size(), 2u);
	EXPECT_EQ(t["numa_nodes"].size(), 1u);
	EXPECT_EQ(t["packages"], 1);
	EXPECT_EQ(t["l3_domains"], 1);
	for (const json &c : t["cores"])
		EXPECT_EQ(c["cpus"].size(), 1u);
	/* Both synthetic cores (CPUs 0 and 1) are measured when this process may use both. */
	if (allowedCpuCount() >= 2 && p["topology"]["allowed_cpus"][0] == 0 && p["topology"]["allowed_cpus"][1] == 1) {
		EXPECT_EQ(p["core_to_core"]["cores"].size(), 2u);
		EXPECT_EQ(p["core_to_core"]["pairs"]["measured"], 1);
	}
}

TEST(RmatuneTest, SyntheticMultiNodeTopologyGivesNodeSizedMatrices)
{
	/* Four nodes with memory: four columns, measured from the nodes whose cores we may use. */
	CommandResult r = run({ "probe", "--effort", "quick", "--format", "json" }, "pack:2 numa:2 l3:1 core:1 pu:1");
	ASSERT_EQ(r.status, 0) << r.err;
	json p = json::parse(r.out, nullptr, false);
	ASSERT_FALSE(p.is_discarded()) << r.out;
	expectProfile(p);
	EXPECT_EQ(p["topology"]["numa_nodes"].size(), 4u);
	EXPECT_EQ(p["memory"]["to_nodes"].size(), 4u);
	EXPECT_EQ(p["topology"]["packages"], 2);
}

TEST(RmatuneTest, IdentityDependsOnTheTopologyNotOnTheRun)
{
	CommandResult a = run({ "probe", "--effort", "quick", "--format", "json" }, "pack:1 numa:1 l3:1 core:2 pu:1");
	CommandResult b = run({ "probe", "--effort", "quick", "--format", "json" }, "pack:1 numa:1 l3:1 core:2 pu:1");
	CommandResult c = run({ "probe", "--effort", "quick", "--format", "json" }, "pack:1 numa:1 l3:1 core:2 pu:2");
	ASSERT_EQ(a.status, 0) << a.err;
	ASSERT_EQ(b.status, 0) << b.err;
	ASSERT_EQ(c.status, 0) << c.err;
	json pa = json::parse(a.out), pb = json::parse(b.out), pc = json::parse(c.out);
	EXPECT_EQ(pa["topology"]["identity"], pb["topology"]["identity"]);
	EXPECT_NE(pa["topology"]["identity"], pc["topology"]["identity"]);
}

TEST(RmatuneTest, TableAndOutputFile)
{
	ScratchDir dir;
	std::string file = dir.file("profile.json");
	CommandResult r = run({ "probe", "--effort", "quick", "--output", file });
	ASSERT_EQ(r.status, 0) << r.err;
	EXPECT_NE(r.out.find("topology:"), std::string::npos) << r.out;
	EXPECT_NE(r.out.find("core-to-core cache-line round trip"), std::string::npos) << r.out;
	EXPECT_NE(r.out.find("memory latency"), std::string::npos) << r.out;
	EXPECT_NE(r.out.find("memory bandwidth"), std::string::npos) << r.out;
	json p = json::parse(readFile(file), nullptr, false);
	ASSERT_FALSE(p.is_discarded()) << readFile(file);
	expectProfile(p);
}

/* An SVG file parses as XML and is an <svg> with @rects cells or more. */
void expectSvg(const std::string &path, int rects)
{
	std::string err;
	EXPECT_GE(librma::test::svgElements(path, "rect", err), rects) << path << ": " << err;
}

TEST(RmatuneTest, PlotWritesHeatmaps)
{
	ScratchDir dir;
	std::string plots = dir.file("plots"); /* created by rmatune */
	CommandResult r = run({ "probe", "--effort", "quick", "--format", "json", "--plot", plots });
	ASSERT_EQ(r.status, 0) << r.err;
	json p = json::parse(r.out);
	const int n = static_cast<int>(p["core_to_core"]["cores"].size());
	const int rows = static_cast<int>(p["memory"]["from_nodes"].size());
	const int cols = static_cast<int>(p["memory"]["to_nodes"].size());
	/* Background + cells + legend. */
	expectSvg(plots + "/core_to_core.svg", 2 + n * n);
	expectSvg(plots + "/memory_latency.svg", 2 + rows * cols);
	expectSvg(plots + "/memory_bandwidth.svg", 2 + rows * cols);
}

TEST(RmatuneTest, BadUsageExitsTwoWithAMessage)
{
	const std::vector<std::vector<std::string>> bad = {
		{},
		{ "frobnicate" },
		{ "probe", "--effort", "fast" },
		{ "probe", "--format", "xml" },
		{ "probe", "--pairs", "some" },
		{ "probe", "--pairs", "sample:0" },
		{ "probe", "--no-such-option" },
	};
	for (const auto &args : bad) {
		CommandResult r = run(args);
		std::string line;
		for (const std::string &a : args)
			line.append(a).append(" ");
		EXPECT_EQ(r.status, 2) << line << r.err;
		EXPECT_NE(r.err.find("rmatune"), std::string::npos) << line << r.err;
		EXPECT_TRUE(r.out.empty()) << line << r.out;
	}
}

/*
 * A profile of an injected node written by hand: 2 packages x 2 NUMA
 * nodes x 4 cores (CPUs 2i, 2i+1 on core i), round trips 40 / 120 / 240 ns
 * within a node / package / apart, memory 90 / 140 / 220 ns.
 */
json handProfile()
{
	json cores = json::array(), ids = json::array(), rt = json::array();
	std::vector<int> allowed;
	for (int i = 0; i < 16; ++i) {
		cores.push_back({ { "index", i }, { "cpus", { 2 * i, 2 * i + 1 } }, { "node", i / 4 }, { "l3", i / 4 },
				  { "package", i / 8 } });
		allowed.push_back(2 * i);
		allowed.push_back(2 * i + 1);
		ids.push_back(i);
		json row = json::array();
		for (int j = 0; j < 16; ++j)
			row.push_back(i == j ? json(nullptr) : json(i / 4 == j / 4 ? 40.0 : i / 8 == j / 8 ? 120.0 : 240.0));
		rt.push_back(row);
	}
	json lat = json::array();
	for (int a = 0; a < 4; ++a) {
		json row = json::array();
		for (int b = 0; b < 4; ++b)
			row.push_back(a == b ? 90.0 : a / 2 == b / 2 ? 140.0 : 220.0);
		lat.push_back(row);
	}
	return { { "schema", "rmatune-profile" },
		 { "schema_version", 1 },
		 { "timestamp", "by hand" },
		 { "topology",
		   { { "source", "by hand" }, { "identity", "fnv1a64:hand" }, { "cores", cores }, { "allowed_cpus", allowed } } },
		 { "core_to_core", { { "cores", ids }, { "median", rt } } },
		 { "memory", { { "from_nodes", { 0, 1, 2, 3 } }, { "to_nodes", { 0, 1, 2, 3 } }, { "latency", { { "median", lat } } } } } };
}

TEST(RmatuneTest, RecommendWritesAPlacementFileWithTheGain)
{
	ScratchDir dir;
	std::string profile = dir.file("profile.json"), traffic = dir.file("traffic.csv"), out = dir.file("placement.json");
	std::ofstream(profile) << handProfile().dump();
	/* Pairs (i, i + 4) for i < 4: compact puts every pair across nodes; each pair fits in one node. */
	{
		std::ofstream csv(traffic);
		csv << "origin,target,bytes\n";
		for (int i = 0; i < 4; ++i)
			csv << i << "," << i + 4 << ",6400\n" << i + 4 << "," << i << ",6400\n";
	}
	CommandResult r = run({ "recommend", "--profile", profile, "--traffic", traffic, "--output", out });
	ASSERT_EQ(r.status, 0) << r.err;
	EXPECT_NE(r.out.find("expected gain"), std::string::npos) << r.out;
	EXPECT_NE(r.out.find("rank 7: core"), std::string::npos) << r.out;
	json f = json::parse(readFile(out), nullptr, false);
	ASSERT_FALSE(f.is_discarded()) << readFile(out);
	EXPECT_EQ(f["schema"], "rmatune-placement");
	ASSERT_EQ(f["ranks"].size(), 8u);
	/* Each pair shares a node: CPUs 8k..8k+7 are node k. */
	for (int i = 0; i < 4; ++i) {
		auto firstCpu = [&](int rank) { return std::stoi(f["ranks"][rank]["cpus"].get<std::string>()); };
		EXPECT_EQ(firstCpu(i) / 8, firstCpu(i + 4) / 8) << i;
	}
	const json &e = f["evidence"];
	EXPECT_DOUBLE_EQ(e["cost"].get<double>(), 4 * 2 * 110 * 100.0);
	EXPECT_DOUBLE_EQ(e["compact_cost"].get<double>(), 4 * 2 * 200 * 100.0);
	EXPECT_NEAR(e["expected_gain_percent"].get<double>(), 45.0, 1e-9);
	EXPECT_FALSE(e["method"].get<std::string>().empty());
	EXPECT_GE(e["search_seconds"].get<double>(), 0);
	/* --format json prints the same file. */
	r = run({ "recommend", "--profile", profile, "--traffic", traffic, "--format", "json" });
	ASSERT_EQ(r.status, 0) << r.err;
	EXPECT_EQ(json::parse(r.out)["ranks"], f["ranks"]);
}

/*
 * The pairs of RecommendWritesAPlacementFileWithTheGain, as a job run with
 * RMA_STATS writes them (lib/win/stats.h): split over two windows, one with
 * its members in another order than world's, plus a window of noise that
 * --windows leaves out.
 */
TEST(RmatuneTest, RecommendReadsLibrmaStatistics)
{
	ScratchDir dir;
	std::string profile = dir.file("profile.json"), stats = dir.file("rma-stats.json");
	std::ofstream(profile) << handProfile().dump();
	auto zero = [](std::size_t n) { return json(std::vector<std::vector<uint64_t>>(n, std::vector<uint64_t>(n, 0))); };
	json low = { { "id", 1 }, { "name", "low" }, { "ranks", { 0, 1, 4, 5 } } };
	json high = { { "id", 2 }, { "name", "high" }, { "ranks", { 7, 6, 3, 2 } } };
	json noise = { { "id", 3 }, { "name", "noise" }, { "ranks", { 0, 1, 2, 3, 4, 5, 6, 7 } } };
	for (json *w : { &low, &high, &noise })
		for (const char *k : { "put", "get" }) {
			(*w)["bytes"][k] = zero((*w)["ranks"].size());
			(*w)["ops"][k] = zero((*w)["ranks"].size());
		}
	/* low: world 0<->4 and 1<->5 (window ranks 0<->2, 1<->3), half as puts, half as gets. */
	for (int i = 0; i < 2; ++i) {
		low["bytes"]["put"][i][i + 2] = 3200;
		low["bytes"]["get"][i][i + 2] = 3200;
		low["bytes"]["put"][i + 2][i] = 6400;
	}
	/* high: world 7<->3 and 6<->2 (window ranks 0<->2, 1<->3). */
	for (int i = 0; i < 2; ++i) {
		high["bytes"]["put"][i][i + 2] = 6400;
		high["bytes"]["put"][i + 2][i] = 6400;
	}
	/* noise: everything to rank 0, which --windows low,high leaves out. */
	for (int i = 1; i < 8; ++i)
		noise["bytes"]["put"][i][0] = 1e6;
	json file = { { "format", "librma-stats" }, { "version", 1 }, { "world_size", 8 },
		      { "kinds", { "put", "get" } }, { "windows", { low, high, noise } } };
	std::ofstream(stats) << file.dump(1);

	CommandResult r = run({ "recommend", "--profile", profile, "--traffic", stats, "--windows", "low,high",
				"--format", "json" });
	ASSERT_EQ(r.status, 0) << r.err;
	json f = json::parse(r.out, nullptr, false);
	ASSERT_FALSE(f.is_discarded()) << r.out;
	ASSERT_EQ(f["ranks"].size(), 8u);
	for (int i = 0; i < 4; ++i) {
		auto firstCpu = [&](int rank) { return std::stoi(f["ranks"][rank]["cpus"].get<std::string>()); };
		EXPECT_EQ(firstCpu(i) / 8, firstCpu(i + 4) / 8) << i;
	}
	EXPECT_DOUBLE_EQ(f["evidence"]["cost"].get<double>(), 4 * 2 * 110 * 100.0);
	/* All windows by default: the noise is in. */
	r = run({ "recommend", "--profile", profile, "--traffic", stats, "--format", "json" });
	ASSERT_EQ(r.status, 0) << r.err;
	EXPECT_GT(json::parse(r.out)["evidence"]["cost"].get<double>(), 4 * 2 * 110 * 100.0);
	r = run({ "recommend", "--profile", profile, "--traffic", stats, "--windows", "absent" });
	EXPECT_NE(r.status, 0);
	EXPECT_NE(r.err.find("no window named \"absent\""), std::string::npos) << r.err;
}

TEST(RmatuneTest, RecommendRefusesBadInputs)
{
	ScratchDir dir;
	std::string profile = dir.file("profile.json"), traffic = dir.file("traffic.csv");
	std::ofstream(profile) << handProfile().dump();
	std::ofstream(traffic) << "0,20,5\n";
	CommandResult r = run({ "recommend", "--profile", profile, "--traffic", traffic });
	EXPECT_EQ(r.status, 1);
	EXPECT_NE(r.err.find("21 ranks but the profile has 16 cores"), std::string::npos) << r.err;
	r = run({ "recommend", "--profile", dir.file("absent.json"), "--traffic", traffic });
	EXPECT_EQ(r.status, 1);
	EXPECT_NE(r.err.find("cannot read it"), std::string::npos) << r.err;
	std::ofstream(dir.file("bad.json")) << "{\"schema\":\"something\"}";
	r = run({ "recommend", "--profile", dir.file("bad.json"), "--traffic", traffic });
	EXPECT_EQ(r.status, 1);
	EXPECT_NE(r.err.find("not an rmatune profile"), std::string::npos) << r.err;
	r = run({ "recommend", "--traffic", traffic });
	EXPECT_EQ(r.status, 2) << "--profile is required";
	r = run({ "recommend", "--profile", profile, "--traffic", traffic, "--method", "magic" });
	EXPECT_EQ(r.status, 2);
}

/* ---- sweep ---------------------------------------------------------------------- */

/*
 * A program that is slow on CPU 0 and fast elsewhere: it reads its own
 * affinity, so the test knows which candidate must win (compact-last, on
 * CPU 1). It exits 3 when RMA_PROGRESS is none, for the failure case.
 */
std::string fakeProgram(const ScratchDir &dir)
{
	const std::string path = dir.file("fake.sh");
	std::ofstream(path) << "#!/bin/sh\n"
			       "[ \"$RMA_PROGRESS\" = none ] && { echo 'fake: no progress, giving up' >&2; exit 3; }\n"
			       "cpus=$(awk '/^Cpus_allowed_list/ {print $2}' /proc/self/status)\n"
			       "if [ \"$cpus\" = 0 ]; then sleep 0.4; else sleep 0.02; fi\n";
	chmod(path.c_str(), 0755);
	return path;
}

bool haveCpusZeroAndOne()
{
	cpu_set_t set;
	CPU_ZERO(&set);
	return sched_getaffinity(0, sizeof(set), &set) == 0 && CPU_ISSET(0, &set) && CPU_ISSET(1, &set);
}

TEST(RmatuneSweepTest, ListsTheDistinctCandidatesOfAnInjectedTopology)
{
	CommandResult r = run({ "sweep", "-n", "4", "--list", "--format", "json" }, "pack:2 numa:2 core:4 pu:2");
	if (r.err.find("hwloc") != std::string::npos && r.status != 0)
		GTEST_SKIP() << r.err;
	ASSERT_EQ(r.status, 0) << r.err;
	json j = json::parse(r.out);
	std::vector<std::string> names;
	for (const json &c : j["candidates"])
		names.push_back(c["name"].get<std::string>());
	EXPECT_EQ(names, (std::vector<std::string>{ "compact", "compact-smt", "scatter-package", "scatter-numa",
						    "compact-last", "compact+interleave", "compact+agent-shared",
						    "compact+progress-none" }));
	/* Made for 32 CPUs, these cannot run on this one: each says why. */
	EXPECT_NE(j["candidates"][1]["refused"].get<std::string>().find("not one this process may use"),
		  std::string::npos);
	EXPECT_EQ(j["candidates"][3]["placement"]["ranks"][1]["cpus"], "8-9");
}

TEST(RmatuneSweepTest, RanksTheFastCandidateFirstAndRecommendTakesIt)
{
	if (!haveCpusZeroAndOne())
		GTEST_SKIP() << "needs CPUs 0 and 1";
	ScratchDir dir;
	const std::string program = fakeProgram(dir);
	CommandResult r = run({ "sweep", "-n", "1", "--repeat", "2", "--candidates", "compact,compact-last",
				"--format", "json", "--out", dir.file("sweep.json"), "--plot", dir.file("plots"),
				"--keep", dir.file("kept"), "--", program });
	ASSERT_EQ(r.status, 0) << r.err;
	json j = json::parse(r.out);
	EXPECT_EQ(j["best"], "compact-last");
	ASSERT_EQ(j["candidates"].size(), 2u);
	EXPECT_EQ(j["candidates"][0]["name"], "compact-last");
	EXPECT_EQ(j["candidates"][0]["rank"], 1);
	EXPECT_GT(j["candidates"][0]["gain_vs_compact_percent"].get<double>(), 30);
	EXPECT_GE(j["candidates"][1]["min"].get<double>(), 0.4);
	for (const json &c : j["candidates"]) {
		EXPECT_EQ(c["runs"].size(), 2u);
		EXPECT_LE(c["min"].get<double>(), c["median"].get<double>());
		EXPECT_LE(c["median"].get<double>(), c["max"].get<double>());
	}
	/* Round-robin: compact, compact-last, compact, compact-last. */
	ASSERT_EQ(j["runs_in_order"].size(), 4u);
	for (std::size_t i = 0; i < 4; ++i) {
		EXPECT_EQ(j["runs_in_order"][i]["candidate"], i % 2 ? "compact-last" : "compact");
		EXPECT_EQ(j["runs_in_order"][i]["round"], static_cast<int>(i / 2));
	}
	EXPECT_TRUE(std::ifstream(dir.file("kept/compact.placement.json")).good());
	EXPECT_TRUE(std::ifstream(dir.file("kept/compact-last.placement.json")).good());
	std::string err;
	EXPECT_GE(librma::test::svgElements(dir.file("plots/sweep.svg"), "rect", err), 3) << err;

	/* The sweep file back through recommend: the measured best, the gain as evidence. */
	CommandResult rec = run({ "recommend", "--sweep", dir.file("sweep.json"), "--format", "json", "--output",
				  dir.file("best.json") });
	ASSERT_EQ(rec.status, 0) << rec.err;
	json p = json::parse(rec.out);
	EXPECT_EQ(p["schema"], "rmatune-placement");
	EXPECT_EQ(p["ranks"][0]["cpus"], "1");
	EXPECT_EQ(p["evidence"]["best"], "compact-last");
	EXPECT_GT(p["evidence"]["measured_gain_vs_compact_percent"].get<double>(), 30);
	EXPECT_EQ(json::parse(readFile(dir.file("best.json"))), p);
	CommandResult table = run({ "recommend", "--sweep", dir.file("sweep.json") });
	EXPECT_EQ(table.status, 0) << table.err;
	EXPECT_NE(table.out.find("against compact"), std::string::npos) << table.out;
}

TEST(RmatuneSweepTest, FailedCandidateIsReportedWithItsExitStatus)
{
	ScratchDir dir;
	const std::string program = fakeProgram(dir);
	CommandResult r = run({ "sweep", "-n", "1", "--repeat", "1", "--candidates", "compact,compact+progress-none",
				"--format", "csv", "--", program });
	EXPECT_EQ(r.status, 1) << "a failed candidate fails the sweep: " << r.err;
	EXPECT_NE(r.out.find("rank,candidate,status,exit_status"), std::string::npos) << r.out;
	EXPECT_NE(r.out.find("1,compact,ok,0"), std::string::npos) << r.out;
	EXPECT_NE(r.out.find("0,compact+progress-none,failed,3"), std::string::npos) << r.out;
	r = run({ "sweep", "-n", "1", "--repeat", "1", "--candidates", "compact+progress-none", "--", program });
	EXPECT_EQ(r.status, 1);
	EXPECT_NE(r.out.find("failed (exit status 3): fake: no progress, giving up"), std::string::npos) << r.out;
	EXPECT_NE(r.err.find("no candidate ran successfully"), std::string::npos) << r.err;
}

TEST(RmatuneSweepTest, RmabenchMetricIsTheFigureItReports)
{
	const char *root = std::getenv("RMA_BUILD_ROOT");
	const std::string rmabench = std::string(root ? root : "").append("/tools/rmabench");
	CommandResult r = run({ "sweep", "-n", "2", "--repeat", "1", "--candidates", "compact", "--metric", "rmabench",
				"--format", "json", "--", rmabench, "put_latency", "--size", "8", "--iterations", "200",
				"--format", "json" });
	ASSERT_EQ(r.status, 0) << r.err;
	json j = json::parse(r.out);
	EXPECT_EQ(j["metric"]["name"], "rmabench");
	EXPECT_EQ(j["metric"]["unit"], "us");
	EXPECT_EQ(j["metric"]["better"], "lower");
	EXPECT_TRUE(positiveFinite(j["candidates"][0]["median"])) << j["candidates"][0];
	/* Output that is not rmabench's JSON fails the run, saying so. */
	r = run({ "sweep", "-n", "1", "--repeat", "1", "--candidates", "compact", "--metric", "rmabench", "--", "true" });
	EXPECT_EQ(r.status, 1);
	EXPECT_NE(r.out.find("not rmabench JSON"), std::string::npos) << r.out;
}

TEST(RmatuneSweepTest, ClearErrors)
{
	CommandResult r = run({ "sweep", "-n", "1", "--", "/nonexistent/app" });
	EXPECT_EQ(r.status, 2);
	EXPECT_NE(r.err.find("/nonexistent/app: program not found"), std::string::npos) << r.err;
	r = run({ "sweep", "-n", "1", "--", "no-such-program-anywhere" });
	EXPECT_EQ(r.status, 2);
	EXPECT_NE(r.err.find("nor on PATH"), std::string::npos) << r.err;
	r = run({ "sweep", "-n", "1", "--rmarun", "/nonexistent/rmarun", "--", "true" });
	EXPECT_EQ(r.status, 2);
	EXPECT_NE(r.err.find("--rmarun /nonexistent/rmarun: not an executable"), std::string::npos) << r.err;
	r = run({ "sweep", "-n", "1", "--candidates", "bogus", "--", "true" });
	EXPECT_EQ(r.status, 2);
	EXPECT_NE(r.err.find("no such candidate"), std::string::npos) << r.err;
	r = run({ "sweep", "-n", "100000", "--", "true" });
	EXPECT_EQ(r.status, 2);
	r = run({ "sweep", "--", "true" });
	EXPECT_EQ(r.status, 2) << "-n is required";
	r = run({ "sweep", "-n", "1" });
	EXPECT_EQ(r.status, 2);
	EXPECT_NE(r.err.find("no program to run"), std::string::npos) << r.err;
	/* On an injected 32-CPU topology nothing fits this process's CPUs: refused with the reason, not run. */
	r = run({ "sweep", "-n", "4", "--repeat", "1", "--", "true" }, "pack:2 numa:2 core:4 pu:2");
	EXPECT_EQ(r.status, 1);
	EXPECT_NE(r.out.find("refused: librma cannot apply it here"), std::string::npos) << r.out;
	/* A run past --timeout fails its candidate, saying so. */
	r = run({ "sweep", "-n", "1", "--repeat", "1", "--candidates", "compact", "--timeout", "0.5", "--", "sleep",
		  "20" });
	EXPECT_EQ(r.status, 1);
	EXPECT_NE(r.out.find("failed (exit status 124): timed out after 0.5 s"), std::string::npos) << r.out;
	r = run({ "recommend", "--sweep", "/nonexistent.json" });
	EXPECT_EQ(r.status, 1);
	EXPECT_NE(r.err.find("cannot read it"), std::string::npos) << r.err;
}

TEST(RmatuneTest, HelpExitsZero)
{
	CommandResult r = run({ "probe", "--help" });
	EXPECT_EQ(r.status, 0) << r.err;
	EXPECT_NE(r.out.find("--effort"), std::string::npos) << r.out;
	EXPECT_NE(r.out.find("--pairs"), std::string::npos) << r.out;
}

} /* namespace */
