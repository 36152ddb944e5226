/* SPDX-License-Identifier: MIT */
/*
 * rmatune sweep's pure parts (tools/rmatune_sweep.h) on injected
 * topologies: the candidates and their deduplication, the round-robin run
 * order, statistics and ranking, rmabench's figure, and the sweep result
 * read back by recommend --sweep.
 */
#include <gtest/gtest.h>

#include <algorithm>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "rmatune_sweep.h"

using librma::Topology;
using nlohmann::json;
using namespace rmatune;

namespace {

using Map = std::vector<std::vector<int>>;

class SweepTest : public ::testing::Test
{
protected:
	/* An injected topology, or skip: the synthetic ones need hwloc. */
	bool load(const char *description)
	{
		auto t = Topology::fromHwlocSynthetic(description);
		if (!t.ok())
			return false;
		topology_ = t.value();
		return true;
	}

	std::vector<SweepCandidate> candidates(int ranks, std::vector<SweepSkip> *skippedOut = nullptr,
					       std::size_t hugePages = 0, std::vector<double> originBytes = {})
	{
		SweepPlan plan;
		plan.ranks = ranks;
		plan.freeHugePages = hugePages;
		plan.originBytes = std::move(originBytes);
		std::vector<SweepCandidate> out;
		std::vector<SweepSkip> skipped;
		std::string err;
		EXPECT_TRUE(sweepCandidates(topology_, plan, out, skipped, err)) << err;
		if (skippedOut)
			*skippedOut = skipped;
		return out;
	}

	static const SweepCandidate *find(const std::vector<SweepCandidate> &v, const std::string &name)
	{
		auto it = std::find_if(v.begin(), v.end(), [&](const SweepCandidate &c) { return c.name == name; });
		return it == v.end() ? nullptr : &*it;
	}

	static std::vector<std::string> names(const std::vector<SweepCandidate> &v)
	{
		std::vector<std::string> n;
		for (const SweepCandidate &c : v)
			n.push_back(c.name);
		return n;
	}

	Topology topology_ = Topology::synthetic(1, 1);
};

#define LOAD_OR_SKIP(description)                                                   \
	do {                                                                        \
		if (!load(description))                                             \
			GTEST_SKIP() << "the injected topologies need hwloc";       \
	} while (0)

TEST_F(SweepTest, TwoPackagesOfTwoNodesGiveFiveDistinctMaps)
{
	LOAD_OR_SKIP("pack:2 numa:2 core:4 pu:2");
	std::vector<SweepSkip> skipped;
	auto c = candidates(4, &skipped);
	ASSERT_NE(find(c, "compact"), nullptr);
	/* Cores are CPU pairs 2k, 2k+1; 4 cores per node, 2 nodes per package. */
	EXPECT_EQ(find(c, "compact")->placement.rankCpus, (Map{ { 0, 1 }, { 2, 3 }, { 4, 5 }, { 6, 7 } }));
	ASSERT_NE(find(c, "compact-smt"), nullptr);
	EXPECT_EQ(find(c, "compact-smt")->placement.rankCpus, (Map{ { 0 }, { 1 }, { 2 }, { 3 } }));
	ASSERT_NE(find(c, "scatter-package"), nullptr);
	EXPECT_EQ(find(c, "scatter-package")->placement.rankCpus, (Map{ { 0, 1 }, { 16, 17 }, { 2, 3 }, { 18, 19 } }));
	ASSERT_NE(find(c, "scatter-numa"), nullptr);
	EXPECT_EQ(find(c, "scatter-numa")->placement.rankCpus, (Map{ { 0, 1 }, { 8, 9 }, { 16, 17 }, { 24, 25 } }));
	ASSERT_NE(find(c, "compact-last"), nullptr);
	EXPECT_EQ(find(c, "compact-last")->placement.rankCpus, (Map{ { 24, 25 }, { 26, 27 }, { 28, 29 }, { 30, 31 } }));
	/* No L3 in the description: scatter-l3 is not tried, and says why. */
	EXPECT_EQ(find(c, "scatter-l3"), nullptr);
	EXPECT_TRUE(std::any_of(skipped.begin(), skipped.end(), [](const SweepSkip &s) {
		return s.name == "scatter-l3" && s.reason.find("no L3") != std::string::npos;
	}));
	/* Several nodes with memory: interleave is a candidate, on compact's map. */
	ASSERT_NE(find(c, "compact+interleave"), nullptr);
	EXPECT_EQ(find(c, "compact+interleave")->placement.memoryDefault.kind, librma::Placement::Kind::Interleave);
	EXPECT_EQ(find(c, "compact+interleave")->placement.rankCpus, find(c, "compact")->placement.rankCpus);
	/* The agent-dedicated CPU: the last one no rank uses. */
	ASSERT_NE(find(c, "compact+agent-dedicated"), nullptr);
	EXPECT_EQ(find(c, "compact+agent-dedicated")->placement.agentCpus, std::vector<int>{ 31 });
	EXPECT_EQ(find(c, "compact+agent-shared")->placement.agentCpus, std::vector<int>{ 7 });
	EXPECT_EQ(find(c, "compact+progress-none")->placement.progressMode, "none");
	/* No pool: huge pages skipped with the reason, and no file says off. */
	EXPECT_EQ(find(c, "compact+huge"), nullptr);
	EXPECT_FALSE(find(c, "compact")->placement.hugePages.has_value());
}

TEST_F(SweepTest, SameMapFromTwoStrategiesIsOneCandidateWithAnAlias)
{
	/* One L3 per NUMA node: scatter-l3 is scatter-numa. */
	LOAD_OR_SKIP("pack:2 numa:2 l3:1 core:4 pu:2");
	std::vector<SweepSkip> skipped;
	auto c = candidates(4, &skipped);
	EXPECT_EQ(find(c, "scatter-l3"), nullptr);
	ASSERT_NE(find(c, "scatter-numa"), nullptr);
	EXPECT_EQ(find(c, "scatter-numa")->aliases, std::vector<std::string>{ "scatter-l3" });
	/* No two candidates with the default policies share a map. */
	for (std::size_t i = 0; i < c.size(); ++i)
		for (std::size_t j = i + 1; j < c.size(); ++j)
			if (c[i].name.find('+') == std::string::npos && c[j].name.find('+') == std::string::npos) {
				EXPECT_NE(c[i].placement.rankCpus, c[j].placement.rankCpus) << c[i].name << " " << c[j].name;
			}
}

TEST_F(SweepTest, OneNodeTwoCoresLikeThisMachine)
{
	LOAD_OR_SKIP("pack:1 numa:1 l3:1 core:2 pu:1");
	std::vector<SweepSkip> skipped;
	/* Two ranks fill the machine: every map is compact's. */
	auto two = candidates(2, &skipped);
	EXPECT_EQ(names(two), (std::vector<std::string>{ "compact", "compact+agent-shared", "compact+progress-none" }));
	EXPECT_EQ(two.front().aliases,
		  (std::vector<std::string>{ "scatter-package", "scatter-numa", "scatter-l3", "compact-last" }));
	for (const char *name : { "compact-smt", "compact+interleave", "compact+heaviest-node", "compact+huge",
				  "compact+agent-dedicated", "compact+agent-per-node" })
		EXPECT_TRUE(std::any_of(skipped.begin(), skipped.end(), [&](const SweepSkip &s) { return s.name == name; }))
			<< name << " is not listed as skipped";
	/* One rank: compact (CPU 0) and compact-last (CPU 1) differ; a free CPU for a dedicated agent. */
	auto one = candidates(1);
	EXPECT_EQ(names(one), (std::vector<std::string>{ "compact", "compact-last", "compact+agent-dedicated",
							 "compact+agent-shared", "compact+progress-none" }));
	EXPECT_EQ(find(one, "compact-last")->placement.rankCpus, (Map{ { 1 } }));
	EXPECT_EQ(find(one, "compact+agent-dedicated")->placement.agentCpus, std::vector<int>{ 1 });
}

TEST_F(SweepTest, HugePagesAndHeaviestOriginWhenTheirInputsExist)
{
	LOAD_OR_SKIP("pack:2 numa:2 core:4 pu:2");
	/* A pool of 16 free pages; rank 5 sends the most. */
	auto c = candidates(8, nullptr, 16, { 1, 1, 1, 1, 1, 50, 1, 1 });
	ASSERT_NE(find(c, "compact+huge"), nullptr);
	EXPECT_EQ(find(c, "compact+huge")->placement.hugePages, librma::HugePages::Require);
	EXPECT_EQ(find(c, "compact")->placement.hugePages, librma::HugePages::Off);
	ASSERT_NE(find(c, "compact+heaviest-node"), nullptr);
	/* Compact puts rank 5 on core 5, the second core of node 1. */
	EXPECT_EQ(find(c, "compact+heaviest-node")->placement.memoryDefault.kind, librma::Placement::Kind::Node);
	EXPECT_EQ(find(c, "compact+heaviest-node")->placement.memoryDefault.node, 1);
	/* Compact's 8 ranks span both nodes: one agent per node, each on a CPU of its node. */
	const auto *perNode = find(c, "compact+agent-per-node");
	ASSERT_NE(perNode, nullptr);
	EXPECT_EQ(perNode->placement.progressMode, "agent");
	ASSERT_EQ(perNode->placement.agentCpus.size(), 2u);
	EXPECT_EQ(topology_.nodeOfCpu(perNode->placement.agentCpus[0]), 0);
	EXPECT_EQ(topology_.nodeOfCpu(perNode->placement.agentCpus[1]), 1);
}

TEST_F(SweepTest, TooManyRanksIsAClearError)
{
	LOAD_OR_SKIP("pack:1 numa:1 l3:1 core:2 pu:1");
	SweepPlan plan;
	plan.ranks = 3;
	std::vector<SweepCandidate> out;
	std::vector<SweepSkip> skipped;
	std::string err;
	EXPECT_FALSE(sweepCandidates(topology_, plan, out, skipped, err));
	EXPECT_NE(err.find("2 hardware threads"), std::string::npos) << err;
}

TEST_F(SweepTest, CandidatesRestrictByNameOrAliasAndRefuseUnknownOnes)
{
	LOAD_OR_SKIP("pack:1 numa:1 l3:1 core:2 pu:1");
	std::vector<SweepSkip> skipped;
	auto c = candidates(2, &skipped);
	std::string err;
	auto kept = c;
	EXPECT_TRUE(restrictCandidates(kept, skipped, { "scatter-numa", "compact+progress-none" }, err)) << err;
	EXPECT_EQ(names(kept), (std::vector<std::string>{ "compact", "compact+progress-none" }));
	kept = c;
	EXPECT_FALSE(restrictCandidates(kept, skipped, { "bogus" }, err));
	EXPECT_NE(err.find("no such candidate"), std::string::npos) << err;
	kept = c;
	EXPECT_FALSE(restrictCandidates(kept, skipped, { "compact+interleave" }, err));
	EXPECT_NE(err.find("same as local"), std::string::npos) << err;
}

TEST(SweepOrderTest, RunsGoRoundRobinNeverOneCandidateBackToBack)
{
	auto order = runOrder(4, 3);
	ASSERT_EQ(order.size(), 12u);
	for (std::size_t i = 0; i < order.size(); ++i) {
		EXPECT_EQ(order[i].first, static_cast<int>(i / 4));
		EXPECT_EQ(order[i].second, static_cast<int>(i % 4));
		if (i > 0) {
			EXPECT_NE(order[i].second, order[i - 1].second);
		}
	}
	EXPECT_EQ(runOrder(1, 3).size(), 3u);
	EXPECT_TRUE(runOrder(0, 3).empty());
}

CandidateResult result(const std::string &name, std::vector<double> values, int failStatus = 0)
{
	CandidateResult r;
	r.candidate.name = name;
	r.candidate.placement.rankCpus = { { 0 } };
	int round = 0;
	for (double v : values)
		r.runs.push_back({ round++, true, v, 0, "" });
	if (failStatus)
		r.runs.push_back({ round, false, 0, failStatus, "exit status 3" });
	return r;
}

TEST(SweepStatsTest, MedianMinMaxSpreadAndRankingLowerIsBetter)
{
	std::vector<CandidateResult> v = { result("compact", { 3, 1, 2 }), result("fast", { 0.5, 0.7, 0.6, 0.4 }),
					   result("broken", { 0.1 }, 3) };
	v.push_back(result("refused", {}));
	v.back().refused = "CPU 9 is not one this process may use";
	rankResults(v, Metric{});
	EXPECT_DOUBLE_EQ(v[0].median, 2);
	EXPECT_DOUBLE_EQ(v[0].min, 1);
	EXPECT_DOUBLE_EQ(v[0].max, 3);
	EXPECT_DOUBLE_EQ(v[0].spreadPercent, 100);
	EXPECT_DOUBLE_EQ(v[1].median, 0.55);
	EXPECT_EQ(v[1].rank, 1);
	EXPECT_EQ(v[0].rank, 2);
	/* A failed run makes the candidate failed, unranked, with its status: not dropped. */
	EXPECT_TRUE(v[2].failed);
	EXPECT_EQ(v[2].failedStatus, 3);
	EXPECT_EQ(v[2].rank, 0);
	EXPECT_EQ(v[3].rank, 0);
	Metric higher;
	higher.higherIsBetter = true;
	rankResults(v, higher);
	EXPECT_EQ(v[0].rank, 1);
	EXPECT_EQ(v[1].rank, 2);
}

TEST(SweepStatsTest, RmabenchFigureIsTheMedianAtTheLargestSize)
{
	const std::string text =
		"{\"tool\":\"rmabench\",\"backend\":\"librma\",\"test\":\"put_bw\",\"unit\":\"MB/s\",\"results\":["
		"{\"size\":8,\"median\":10.0},{\"size\":4096,\"median\":2500.5},{\"size\":64,\"median\":90.0}]}\n";
	double value = 0;
	Metric m;
	std::string err;
	ASSERT_TRUE(rmabenchFigure(text, value, m, err)) << err;
	EXPECT_DOUBLE_EQ(value, 2500.5);
	EXPECT_EQ(m.unit, "MB/s");
	EXPECT_TRUE(m.higherIsBetter);
	EXPECT_NE(m.description.find("4096"), std::string::npos);
	ASSERT_TRUE(rmabenchFigure("{\"tool\":\"rmabench\",\"unit\":\"us\",\"results\":[{\"size\":8,\"median\":1.5}]}",
				   value, m, err));
	EXPECT_FALSE(m.higherIsBetter);
	EXPECT_FALSE(rmabenchFigure("# size latency\n8 1.0\n", value, m, err));
	EXPECT_NE(err.find("not rmabench JSON"), std::string::npos) << err;
}

TEST(SweepResultTest, RoundTripsToRecommendWithTheGainVsCompact)
{
	SweepReport report;
	report.command = { "./app", "--size", "8" };
	report.ranks = 1;
	report.repeat = 3;
	report.results = { result("compact", { 4, 4.2, 3.9 }), result("compact-last", { 2, 2.1, 1.9 }),
			   result("compact+progress-none", { 1 }, 9) };
	report.results[1].candidate.placement.rankCpus = { { 1 } };
	report.results[1].candidate.placement.progressMode = "thread";
	for (auto &r : report.results)
		report.order.emplace_back(0, static_cast<int>(&r - report.results.data()));
	rankResults(report.results, report.metric);
	json j = json::parse(sweepJson(report).dump());
	EXPECT_EQ(j["best"], "compact-last");
	EXPECT_EQ(j["candidates"][0]["name"], "compact-last");
	EXPECT_EQ(j["candidates"][2]["status"], "failed");
	EXPECT_EQ(j["candidates"][2]["failure"]["exit_status"], 9);

	SweepBest best;
	std::string err;
	ASSERT_TRUE(bestOfSweep(j, "sweep.json", best, err)) << err;
	EXPECT_EQ(best.name, "compact-last");
	EXPECT_EQ(best.placement.rankCpus, (Map{ { 1 } }));
	EXPECT_NEAR(best.gainPercent, 50, 1e-9);
	json evidence = json::parse(best.placement.evidenceJson);
	EXPECT_NEAR(evidence["measured_gain_vs_compact_percent"].get<double>(), 50, 1e-9);
	EXPECT_EQ(evidence["best"], "compact-last");
	/* The recommended file parses as a placement file, evidence included. */
	std::string text = librma::writePlacementFile(best.placement);
	auto back = librma::parsePlacementFile(text, "out", err);
	ASSERT_TRUE(back) << err;
	EXPECT_EQ(*back, best.placement);

	/* Nothing ran: a clear error, not an empty recommendation. */
	for (auto &c : j["candidates"])
		c["status"] = "failed";
	EXPECT_FALSE(bestOfSweep(j, "sweep.json", best, err));
	EXPECT_NE(err.find("no candidate ran successfully"), std::string::npos) << err;
	EXPECT_FALSE(bestOfSweep(json{ { "schema", "rmatune-profile" } }, "p.json", best, err));
	EXPECT_NE(err.find("not an rmatune sweep"), std::string::npos) << err;
}

} /* namespace */
