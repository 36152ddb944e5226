/* SPDX-License-Identifier: MIT */
/*
 * rmatune recommend's search on injected topologies (hwloc synthetic
 * descriptions) with injected latency matrices: for nearest-neighbour
 * rings, all-to-one and pairs it must reach the cost a hand computation
 * proves optimal; on random matrices the heuristic must come within 5 % of
 * an exhaustive search, which itself must agree with plain enumeration.
 * Search times are recorded (RecordProperty), never asserted.
 */
#include "rmatune_recommend.h"

#include <algorithm>
#include <functional>
#include <numeric>
#include <random>

#include <gtest/gtest.h>

#include "config.h"
#include "numa/topology.h"
#include "placement_file.h"

namespace rmatune {
namespace {

using librma::CpuCore;
using librma::Topology;
using nlohmann::json;

/* Round trip (ns) between two cores; memory latency (ns) from node to node. */
using CoreCost = std::function<double(const CpuCore &, const CpuCore &)>;
using NodeCost = std::function<double(int from, int to)>;

/* A profile as rmatune probe writes it, for @topology with every pair "measured" as @rt and @mem say. */
json profileFor(const Topology &topology, const CoreCost &rt, const NodeCost &mem)
{
	json p;
	p["schema"] = "rmatune-profile";
	p["schema_version"] = 1;
	p["timestamp"] = "injected";
	json t;
	t["source"] = topology.source();
	t["identity"] = "fnv1a64:injected";
	std::vector<int> allowed;
	json cores = json::array();
	for (std::size_t i = 0; i < topology.cores().size(); ++i) {
		const CpuCore &c = topology.cores()[i];
		cores.push_back({ { "index", i }, { "cpus", c.cpus }, { "node", c.node }, { "l3", c.l3 }, { "package", c.package } });
		allowed.insert(allowed.end(), c.cpus.begin(), c.cpus.end());
	}
	std::sort(allowed.begin(), allowed.end());
	t["cores"] = cores;
	t["allowed_cpus"] = allowed;
	p["topology"] = t;
	const std::size_t n = topology.cores().size();
	json ids = json::array(), median = json::array();
	for (std::size_t i = 0; i < n; ++i) {
		ids.push_back(i);
		json row = json::array();
		for (std::size_t j = 0; j < n; ++j)
			row.push_back(i == j ? json(nullptr) : json(rt(topology.cores()[i], topology.cores()[j])));
		median.push_back(row);
	}
	p["core_to_core"] = { { "cores", ids }, { "median", median } };
	json nodes = json::array(), lat = json::array();
	for (const librma::NumaNode &a : topology.nodes()) {
		nodes.push_back(a.id);
		json row = json::array();
		for (const librma::NumaNode &b : topology.nodes())
			row.push_back(mem(a.id, b.id));
		lat.push_back(row);
	}
	p["memory"] = { { "from_nodes", nodes }, { "to_nodes", nodes }, { "latency", { { "median", lat } } } };
	return p;
}

Topology synthetic(const char *description)
{
	auto t = Topology::fromHwlocSynthetic(description);
	EXPECT_TRUE(t.ok()) << description;
	return t.ok() ? t.value() : Topology::synthetic(1, 1);
}

/* 2 packages x 2 NUMA nodes x 8 cores x 2 threads; one L3 per node. */
CostModel twoSocketModel()
{
	Topology t = synthetic("pack:2 numa:2 l3:1 core:8 pu:2");
	auto rt = [](const CpuCore &a, const CpuCore &b) {
		return a.node == b.node ? 40.0 : a.package == b.package ? 120.0 : 240.0;
	};
	auto mem = [](int from, int to) { return from == to ? 90.0 : from / 2 == to / 2 ? 140.0 : 220.0; };
	CostModel m;
	std::string err;
	EXPECT_TRUE(costModelFromProfile(profileFor(t, rt, mem), m, err)) << err;
	return m;
}

/* EPYC-like: one package, 4 NUMA nodes (two halves of two), 2 L3 domains of 4 cores each per node, SMT 2. */
CostModel epycModel()
{
	Topology t = synthetic("pack:1 numa:4 l3:2 core:4 pu:2");
	auto rt = [](const CpuCore &a, const CpuCore &b) {
		if (a.l3 == b.l3)
			return 30.0;
		if (a.node == b.node)
			return 80.0;
		return a.node / 2 == b.node / 2 ? 140.0 : 180.0;
	};
	auto mem = [](int from, int to) { return from == to ? 100.0 : from / 2 == to / 2 ? 120.0 : 150.0; };
	CostModel m;
	std::string err;
	EXPECT_TRUE(costModelFromProfile(profileFor(t, rt, mem), m, err)) << err;
	return m;
}

Traffic emptyTraffic(int n)
{
	Traffic t;
	t.ranks = n;
	t.bytes.assign(static_cast<std::size_t>(n * n), 0);
	return t;
}

void add(Traffic &t, int r, int s, double bytes)
{
	t.bytes[static_cast<std::size_t>(r * t.ranks + s)] += bytes;
}

/* A ring through @order: each rank sends @bytes to both neighbours. */
Traffic ring(const std::vector<int> &order, double bytes)
{
	const int n = static_cast<int>(order.size());
	Traffic t = emptyTraffic(n);
	for (int k = 0; k < n; ++k) {
		add(t, order[k], order[(k + 1) % n], bytes);
		add(t, order[(k + 1) % n], order[k], bytes);
	}
	return t;
}

Recommendation run(const CostModel &m, const Traffic &t, Method method = Method::Auto)
{
	Recommendation rec;
	std::string err;
	EXPECT_TRUE(recommend(m, t, method, rec, err)) << err;
	::testing::Test::RecordProperty("search_seconds_x1e6", static_cast<int>(rec.seconds * 1e6));
	return rec;
}

/* Each test case: its model needs hwloc's synthetic topologies. */
class RecommendTest : public ::testing::Test
{
protected:
	void SetUp() override
	{
#ifndef HAVE_HWLOC
		GTEST_SKIP() << "the injected topologies need hwloc";
#endif
	}
};

/*
 * D(a, b) on the two-socket model (half round trip + memory):
 * same node 20 + 90 = 110, same package 60 + 140 = 200, apart 120 + 220 = 340.
 * Bytes are 6400, i.e. 100 lines.
 */
constexpr double kLines = 100, kBytes = 6400;

TEST_F(RecommendTest, ModelReadsTheProfilesMatrices)
{
	CostModel m = twoSocketModel();
	ASSERT_EQ(m.size(), 32);
	EXPECT_DOUBLE_EQ(m.d(0, 1), 110);
	EXPECT_DOUBLE_EQ(m.d(0, 8), 200);
	EXPECT_DOUBLE_EQ(m.d(0, 16), 340);
	EXPECT_DOUBLE_EQ(m.d(3, 3), 90);
	EXPECT_TRUE(m.estimates.empty());
	EXPECT_EQ(m.slots[1].cpus, (std::vector<int>{ 2, 3 }));
}

TEST_F(RecommendTest, RingOfSixteenCutsTwiceWithinAPackage)
{
	/*
	 * 16 ranks need two nodes (8 cores each); a ring split in two groups
	 * has at least two cut edges, cheapest within a package: 14 x 110 +
	 * 2 x 200 per direction.
	 */
	const double best = (14 * 110 + 2 * 200) * 2 * kLines;
	CostModel m = twoSocketModel();
	std::vector<int> natural(16);
	std::iota(natural.begin(), natural.end(), 0);
	Recommendation rec = run(m, ring(natural, kBytes));
	EXPECT_DOUBLE_EQ(rec.cost, best);
	EXPECT_DOUBLE_EQ(rec.compactCost, best) << "compact is already optimal for a natural ring";

	/* The same ring through ranks 0, 8, 1, 9, ...: compact cuts every edge across nodes. */
	std::vector<int> interleaved;
	for (int i = 0; i < 8; ++i) {
		interleaved.push_back(i);
		interleaved.push_back(i + 8);
	}
	rec = run(m, ring(interleaved, kBytes));
	EXPECT_DOUBLE_EQ(rec.cost, best);
	EXPECT_DOUBLE_EQ(rec.compactCost, 16 * 200 * 2 * kLines);
	EXPECT_FALSE(rec.exact) << "16 of 32 cores is far beyond exhaustive search";
	/* rmarun's other orders, for comparison: --map-by numa puts rank r on node r mod 4, ... */
	ASSERT_EQ(rec.alternatives.size(), 3u);
	EXPECT_EQ(rec.alternatives[0].second, rec.compactCost);
	for (const auto &[name, cost] : rec.alternatives)
		EXPECT_LE(rec.cost, cost) << name;
	/* ... so half the ring's edges, (i, i + 8), stay in a node, and the other half cross, two in four packages apart. */
	EXPECT_GT(rec.alternatives[1].second, rec.cost);
}

TEST_F(RecommendTest, AllToOneFillsTheRootsNodeThenItsPackage)
{
	/* 11 origins to root 11: 7 share its node (110), 4 go to the other node of its package (200). */
	CostModel m = twoSocketModel();
	Traffic t = emptyTraffic(12);
	for (int r = 0; r < 11; ++r)
		add(t, r, 11, kBytes);
	Recommendation rec = run(m, t);
	EXPECT_DOUBLE_EQ(rec.cost, (7 * 110 + 4 * 200) * kLines);
	/* Compact puts the root on node 1 with only ranks 8..10. */
	EXPECT_DOUBLE_EQ(rec.compactCost, (3 * 110 + 8 * 200) * kLines);
	const int rootNode = m.slots[static_cast<std::size_t>(rec.slotOf[11])].node;
	int withRoot = 0;
	for (int r = 0; r < 11; ++r)
		withRoot += m.slots[static_cast<std::size_t>(rec.slotOf[static_cast<std::size_t>(r)])].node == rootNode;
	EXPECT_EQ(withRoot, 7);
}

TEST_F(RecommendTest, PairsShareAnL3OnTheEpycLikeNode)
{
	/* Pairs (i, i + 8): each in one L3 domain, 15 + 100 = 115 a line each way. */
	CostModel m = epycModel();
	ASSERT_EQ(m.size(), 32);
	Traffic t = emptyTraffic(16);
	for (int i = 0; i < 8; ++i) {
		add(t, i, i + 8, kBytes);
		add(t, i + 8, i, kBytes);
	}
	Recommendation rec = run(m, t);
	EXPECT_DOUBLE_EQ(rec.cost, 8 * 2 * 115 * kLines);
	/* Compact: i on node 0, i + 8 on node 1 (same half): 70 + 120. */
	EXPECT_DOUBLE_EQ(rec.compactCost, 8 * 2 * 190 * kLines);
	for (int i = 0; i < 8; ++i)
		EXPECT_EQ(m.slots[static_cast<std::size_t>(rec.slotOf[static_cast<std::size_t>(i)])].l3,
			  m.slots[static_cast<std::size_t>(rec.slotOf[static_cast<std::size_t>(i + 8)])].l3)
			<< i;
}

TEST_F(RecommendTest, RingOfSixteenOnTheEpycLikeNode)
{
	/*
	 * Four L3 domains of 4 at least, so 4 cuts; with the domains on two
	 * nodes of one half, two cuts stay in a node (40 + 100) and two cross
	 * (70 + 120): 12 x 115 + 2 x 140 + 2 x 190 per direction.
	 */
	CostModel m = epycModel();
	std::vector<int> order(16);
	std::iota(order.begin(), order.end(), 0);
	std::shuffle(order.begin(), order.end(), std::mt19937(7));
	Recommendation rec = run(m, ring(order, kBytes));
	EXPECT_DOUBLE_EQ(rec.cost, (12 * 115 + 2 * 140 + 2 * 190) * 2 * kLines);
	EXPECT_GT(rec.compactCost, rec.cost);
}

/* The cheapest placement by plain enumeration of every injective map (independent of the search). */
double enumerate(const CostModel &m, const Traffic &t)
{
	const int n = t.ranks, k = m.size();
	std::vector<int> pick(static_cast<std::size_t>(k));
	std::iota(pick.begin(), pick.end(), 0);
	double best = 1e300;
	/* Every ordered choice of n slots: permutations of the whole set, deduplicated by the first n. */
	do {
		std::vector<int> slotOf(pick.begin(), pick.begin() + n);
		best = std::min(best, placementCost(m, t, slotOf));
		std::reverse(pick.begin() + n, pick.end());
	} while (std::next_permutation(pick.begin(), pick.end()));
	return best;
}

Traffic randomTraffic(int n, unsigned seed)
{
	std::mt19937 rng(seed);
	std::uniform_real_distribution<double> bytes(0, 1e6);
	std::bernoulli_distribution present(0.4);
	Traffic t = emptyTraffic(n);
	for (int r = 0; r < n; ++r)
		for (int s = 0; s < n; ++s)
			if (present(rng))
				add(t, r, s, bytes(rng));
	return t;
}

TEST_F(RecommendTest, HeuristicIsWithinFivePercentOfExhaustiveSearch)
{
	struct Case {
		const char *topology;
		int ranks;
	} cases[] = {
		{ "pack:2 numa:2 l3:1 core:2 pu:1", 8 },
		{ "pack:2 numa:2 l3:1 core:2 pu:1", 6 },
		{ "pack:2 numa:2 l3:1 core:3 pu:1", 6 },
		{ "pack:1 numa:4 l3:1 core:2 pu:2", 7 },
	};
	auto rt = [](const CpuCore &a, const CpuCore &b) {
		return a.node == b.node ? 45.0 : a.package == b.package ? 110.0 : 260.0;
	};
	auto mem = [](int from, int to) { return from == to ? 95.0 : from / 2 == to / 2 ? 150.0 : 230.0; };
	double worst = 0;
	for (const Case &c : cases) {
		Topology topo = synthetic(c.topology);
		CostModel m;
		std::string err;
		ASSERT_TRUE(costModelFromProfile(profileFor(topo, rt, mem), m, err)) << err;
		for (unsigned seed = 1; seed <= 6; ++seed) {
			Traffic t = randomTraffic(c.ranks, seed);
			Recommendation heuristic = run(m, t, Method::Heuristic);
			Recommendation exact = run(m, t, Method::Exhaustive);
			EXPECT_TRUE(exact.exact);
			const double truth = enumerate(m, t);
			EXPECT_NEAR(exact.cost, truth, 1e-9 * truth) << c.topology << " seed " << seed;
			EXPECT_LE(heuristic.cost, 1.05 * exact.cost) << c.topology << " seed " << seed;
			EXPECT_LE(exact.cost, exact.compactCost + 1e-9 * exact.compactCost);
			worst = std::max(worst, heuristic.cost / exact.cost - 1);
		}
	}
	RecordProperty("worst_heuristic_excess_ppm", static_cast<int>(worst * 1e6));
}

TEST_F(RecommendTest, HeuristicIsWithinFivePercentOfExhaustiveSearchAtSixteenRanks)
{
	/*
	 * 16 ranks on 32 cores: exhaustive only because twin cores (one node
	 * here) are tried once; the EPYC-like model, with twice the domains,
	 * takes 8 ranks (its 16-rank search runs for minutes).
	 */
	double worst = 0;
	struct Case {
		CostModel model;
		int ranks;
	};
	for (const Case &c : { Case{ twoSocketModel(), 16 }, Case{ epycModel(), 8 } })
		for (unsigned seed = 11; seed <= 12; ++seed) {
			const CostModel &m = c.model;
			Traffic t = randomTraffic(c.ranks, seed);
			Recommendation heuristic = run(m, t, Method::Heuristic);
			Recommendation exact = run(m, t, Method::Exhaustive);
			EXPECT_TRUE(exact.exact);
			EXPECT_LE(exact.cost, heuristic.cost * (1 + 1e-12)) << "seed " << seed;
			EXPECT_LE(heuristic.cost, 1.05 * exact.cost) << "seed " << seed;
			worst = std::max(worst, heuristic.cost / exact.cost - 1);
			RecordProperty("exhaustive_seconds_x1e6", static_cast<int>(exact.seconds * 1e6));
		}
	RecordProperty("worst_heuristic_excess_ppm", static_cast<int>(worst * 1e6));
}

TEST_F(RecommendTest, UnmeasuredPairsAreEstimatedAndSaidSo)
{
	Topology t = synthetic("pack:2 numa:1 l3:1 core:2 pu:1");
	auto rt = [](const CpuCore &a, const CpuCore &b) { return a.package == b.package ? 50.0 : 200.0; };
	auto mem = [](int from, int to) { return from == to ? 80.0 : 160.0; };
	json p = profileFor(t, rt, mem);
	/* Only cores 0 and 1 (one package) measured; node 1's row of memory missing. */
	p["core_to_core"]["cores"] = { 0, 1 };
	p["core_to_core"]["median"] = { { nullptr, 50.0 }, { 50.0, nullptr } };
	p["memory"]["from_nodes"] = { 0 };
	p["memory"]["latency"]["median"] = { { 80.0, 160.0 } };
	CostModel m;
	std::string err;
	ASSERT_TRUE(costModelFromProfile(p, m, err)) << err;
	EXPECT_DOUBLE_EQ(m.d(2, 3), 25 + 80) << "same-L3 pair estimated from the measured one, local memory estimated";
	EXPECT_DOUBLE_EQ(m.d(0, 2), 25 + 160) << "no cross-package pair measured: the nearer kind, said so";
	ASSERT_FALSE(m.estimates.empty());
	std::string all;
	for (const std::string &e : m.estimates)
		all += e + "\n";
	EXPECT_NE(all.find("other package"), std::string::npos) << all;
	EXPECT_NE(all.find("memory, local"), std::string::npos) << all;
}

TEST_F(RecommendTest, TooManyRanksIsAClearError)
{
	CostModel m = twoSocketModel();
	Recommendation rec;
	std::string err;
	EXPECT_FALSE(recommend(m, emptyTraffic(33), Method::Auto, rec, err));
	EXPECT_NE(err.find("33 ranks but the profile has 32 cores"), std::string::npos) << err;
}

TEST_F(RecommendTest, FileIsAPlacementFileWithTheEvidence)
{
	CostModel m = twoSocketModel();
	Traffic t = emptyTraffic(4);
	add(t, 0, 3, kBytes);
	Recommendation rec = run(m, t);
	std::string text = recommendationFile(m, t, rec);
	std::string err;
	auto f = librma::parsePlacementFile(text, "recommended", err);
	ASSERT_TRUE(f.has_value()) << err << text;
	ASSERT_EQ(f->rankCpus.size(), 4u);
	for (int r = 0; r < 4; ++r)
		EXPECT_EQ(f->rankCpus[static_cast<std::size_t>(r)], m.slots[static_cast<std::size_t>(rec.slotOf[static_cast<std::size_t>(r)])].cpus);
	json e = json::parse(f->evidenceJson);
	EXPECT_DOUBLE_EQ(e["cost"].get<double>(), rec.cost);
	EXPECT_DOUBLE_EQ(e["compact_cost"].get<double>(), rec.compactCost);
	EXPECT_TRUE(e.contains("expected_gain_percent"));
	EXPECT_TRUE(e.contains("cost_model"));
	EXPECT_EQ(e["rmarun_placements_cost"].size(), 3u);
	EXPECT_EQ(e["heaviest_pairs"][0]["origin"], 0);
	EXPECT_EQ(e["heaviest_pairs"][0]["target"], 3);
}

/*
 * Memory policies. Two NUMA nodes of 4 cores (slots 0-3 on node 0, 4-7 on
 * node 1), memory 100 ns local and 150 ns remote; no bandwidth measured, so
 * the bottleneck is the busiest node's bytes. 64 000 bytes are 1000 lines.
 */
CostModel twoNodeModel()
{
	Topology t = synthetic("pack:1 numa:2 l3:1 core:4 pu:1");
	auto rt = [](const CpuCore &a, const CpuCore &b) { return a.node == b.node ? 40.0 : 120.0; };
	auto mem = [](int from, int to) { return from == to ? 100.0 : 150.0; };
	CostModel m;
	std::string err;
	EXPECT_TRUE(costModelFromProfile(profileFor(t, rt, mem), m, err)) << err;
	return m;
}

const PolicyCost &candidate(const MemoryChoice &c, const std::string &policy)
{
	for (const PolicyCost &p : c.candidates)
		if (p.placement.str() == policy)
			return p;
	ADD_FAILURE() << "no candidate " << policy;
	return c.candidates.front();
}

std::vector<int> identity(int n)
{
	std::vector<int> v(static_cast<std::size_t>(n));
	std::iota(v.begin(), v.end(), 0);
	return v;
}

constexpr double kKiloLines = 64000;

TEST_F(RecommendTest, ModelKnowsTheMemoryNodesAndTheirLatency)
{
	CostModel m = twoNodeModel();
	ASSERT_EQ(m.size(), 8);
	EXPECT_EQ(m.slots[3].node, 0);
	EXPECT_EQ(m.slots[4].node, 1);
	EXPECT_EQ(m.memoryNodes, (std::vector<int>{ 0, 1 }));
	EXPECT_DOUBLE_EQ(m.nodeLatencyNs.at({ 0, 1 }), 150);
	EXPECT_DOUBLE_EQ(m.nodeLatencyNs.at({ 1, 1 }), 100);
	EXPECT_TRUE(m.nodeBandwidthGBs.empty());
	EXPECT_EQ(m.hugePagesFree, -1);
}

TEST_F(RecommendTest, EvenOriginsOnTwoNodesInterleaveTheWindow)
{
	/* Rank 0's window (node 0), read evenly by rank 1 (node 0) and rank 4 (node 1). */
	CostModel m = twoNodeModel();
	Traffic t = emptyTraffic(8);
	add(t, 1, 0, kKiloLines);
	add(t, 4, 0, kKiloLines);
	MemoryChoice c = chooseMemoryPolicy(m, t, identity(8));
	/* Latency: every policy 1000 x 100 + 1000 x 150 (interleave: 2000 x 125). */
	ASSERT_EQ(c.candidates.size(), 4u); /* local, node:0, node:1, interleave */
	for (const char *p : { "local", "node:0", "node:1", "interleave" })
		EXPECT_DOUBLE_EQ(candidate(c, p).latency, 250000) << p;
	/* Bottleneck: one node serves all 128 000 bytes, or each half of them. */
	EXPECT_DOUBLE_EQ(candidate(c, "local").bottleneckNs, 128000);
	EXPECT_DOUBLE_EQ(candidate(c, "node:1").bottleneckNs, 128000);
	EXPECT_DOUBLE_EQ(candidate(c, "interleave").bottleneckNs, 64000);
	EXPECT_EQ(c.placement.str(), "interleave") << c.why;
	EXPECT_NE(c.why.find("spreads the load"), std::string::npos) << c.why;
}

TEST_F(RecommendTest, OneHeavyOriginOnAnotherNodeTakesTheMemoryThere)
{
	/* Rank 4 (node 1) moves 10 000 lines of rank 0's window (node 0); rank 1 (node 0) 100. */
	CostModel m = twoNodeModel();
	Traffic t = emptyTraffic(8);
	add(t, 4, 0, 100 * kBytes);
	add(t, 1, 0, kBytes);
	MemoryChoice c = chooseMemoryPolicy(m, t, identity(8));
	EXPECT_DOUBLE_EQ(candidate(c, "local").latency, 10000 * 150 + 100 * 100);
	EXPECT_DOUBLE_EQ(candidate(c, "node:1").latency, 10000 * 100 + 100 * 150);
	EXPECT_DOUBLE_EQ(candidate(c, "interleave").latency, 10100 * 125);
	EXPECT_EQ(c.placement.str(), "node:1") << c.why;
	EXPECT_NE(c.why.find("least latency"), std::string::npos) << c.why;
}

TEST_F(RecommendTest, AllToAllAcrossBothNodesStaysLocal)
{
	/* Every rank to every other: each node already serves half, as interleave would. */
	CostModel m = twoNodeModel();
	Traffic t = emptyTraffic(8);
	for (int r = 0; r < 8; ++r)
		for (int s = 0; s < 8; ++s)
			if (r != s)
				add(t, r, s, kKiloLines);
	MemoryChoice c = chooseMemoryPolicy(m, t, identity(8));
	/* Per origin 3 targets on its node, 4 across: 8 x (3 x 100 + 4 x 150) x 1000. */
	EXPECT_DOUBLE_EQ(candidate(c, "local").latency, 7200000);
	/* node:0: node 0's origins 4 x 7 x 100, node 1's 4 x 7 x 150. */
	EXPECT_DOUBLE_EQ(candidate(c, "node:0").latency, 7000000);
	EXPECT_DOUBLE_EQ(candidate(c, "interleave").latency, 7000000);
	/* local is within 5 % (7.2 <= 7.35) and ties interleave's bottleneck (28 x 64 000 per node). */
	EXPECT_DOUBLE_EQ(candidate(c, "local").bottleneckNs, 28 * kKiloLines);
	EXPECT_DOUBLE_EQ(candidate(c, "interleave").bottleneckNs, 28 * kKiloLines);
	EXPECT_EQ(c.placement.str(), "local") << c.why;
}

TEST_F(RecommendTest, OneMemoryNodeOffersNoInterleave)
{
	Topology topo = synthetic("pack:1 numa:1 l3:1 core:4 pu:1");
	CostModel m;
	std::string err;
	ASSERT_TRUE(costModelFromProfile(
		profileFor(
			topo, [](const CpuCore &, const CpuCore &) { return 40.0; }, [](int, int) { return 100.0; }),
		m, err))
		<< err;
	Traffic t = emptyTraffic(4);
	add(t, 1, 0, kKiloLines);
	add(t, 2, 0, kKiloLines);
	MemoryChoice c = chooseMemoryPolicy(m, t, identity(4));
	ASSERT_EQ(c.candidates.size(), 2u); /* local, node:0 */
	EXPECT_EQ(c.placement.str(), "local");
}

TEST_F(RecommendTest, MeasuredBandwidthWeighsTheBottleneck)
{
	/* As the even case, but node 1's memory reads 4x faster: node:1 serves everything sooner than interleave. */
	Topology topo = synthetic("pack:1 numa:2 l3:1 core:4 pu:1");
	json p = profileFor(
		topo, [](const CpuCore &a, const CpuCore &b) { return a.node == b.node ? 40.0 : 120.0; },
		[](int from, int to) { return from == to ? 100.0 : 150.0; });
	p["memory"]["bandwidth"] = { { "median", { { 10.0, 40.0 }, { 10.0, 40.0 } } } };
	CostModel m;
	std::string err;
	ASSERT_TRUE(costModelFromProfile(p, m, err)) << err;
	EXPECT_DOUBLE_EQ(m.nodeBandwidthGBs.at(1), 40);
	Traffic t = emptyTraffic(8);
	add(t, 1, 0, kKiloLines);
	add(t, 4, 0, kKiloLines);
	MemoryChoice c = chooseMemoryPolicy(m, t, identity(8));
	/* local: 128 000 / 10; node:1: 128 000 / 40; interleave: max(64 000 / 10, 64 000 / 40). */
	EXPECT_DOUBLE_EQ(candidate(c, "local").bottleneckNs, 12800);
	EXPECT_DOUBLE_EQ(candidate(c, "node:1").bottleneckNs, 3200);
	EXPECT_DOUBLE_EQ(candidate(c, "interleave").bottleneckNs, 6400);
	EXPECT_EQ(c.placement.str(), "node:1") << c.why;
}

TEST_F(RecommendTest, LocalOnANodeWithoutMemoryCountsTheNearestMemoryNode)
{
	/* Node 1 has cores but no memory: its ranks' "local" memory is on node 0 (MPOL_DEFAULT, nearest). */
	Topology topo = synthetic("pack:1 numa:2 l3:1 core:4 pu:1");
	json p = profileFor(
		topo, [](const CpuCore &a, const CpuCore &b) { return a.node == b.node ? 40.0 : 120.0; },
		[](int from, int to) { return from == to ? 100.0 : 150.0; });
	p["topology"]["numa_nodes"] = { { { "id", 0 }, { "has_memory", true } },
					{ { "id", 1 }, { "has_memory", false } } };
	CostModel m;
	std::string err;
	ASSERT_TRUE(costModelFromProfile(p, m, err)) << err;
	EXPECT_EQ(m.memoryNodes, (std::vector<int>{ 0 }));
	Traffic t = emptyTraffic(8);
	add(t, 4, 4, kKiloLines); /* rank 4 (node 1) reads its own window */
	MemoryChoice c = chooseMemoryPolicy(m, t, identity(8));
	ASSERT_EQ(c.candidates.size(), 2u); /* local, node:0 */
	EXPECT_DOUBLE_EQ(candidate(c, "local").latency, 1000 * 150);
	EXPECT_DOUBLE_EQ(candidate(c, "node:0").latency, 1000 * 150);
	EXPECT_EQ(c.placement.str(), "local");
}

/* A librma statistics file for 8 ranks: @windows as (name, flavor, sizes, bytes matrix by world rank). */
struct StatsWindow {
	std::string name, flavor;
	std::vector<double> sizes;
	std::vector<std::vector<double>> bytes;
};

std::string statsFile(const std::vector<StatsWindow> &windows)
{
	json j = { { "format", "librma-stats" }, { "version", 1 }, { "world_size", 8 }, { "kinds", { "put" } } };
	json list = json::array();
	int id = 0;
	for (const StatsWindow &w : windows) {
		std::vector<int> ranks(8);
		std::iota(ranks.begin(), ranks.end(), 0);
		list.push_back({ { "id", ++id },
				 { "name", w.name },
				 { "flavor", w.flavor },
				 { "ranks", ranks },
				 { "sizes", w.sizes },
				 { "bytes", { { "put", w.bytes } } } });
	}
	j["windows"] = list;
	return j.dump();
}

std::vector<std::vector<double>> matrix8()
{
	return std::vector<std::vector<double>>(8, std::vector<double>(8, 0));
}

TEST_F(RecommendTest, FileGetsTheDefaultAndEachNamedWindowsOwnPolicy)
{
	/*
	 * 8 ranks fill both nodes, 4 each, wherever the search puts them.
	 * "halo": every rank (the owner too) to rank 0: 4 origins on each node,
	 * every policy 1000 x (4 x 100 + 4 x 150) = 1 000 000, interleave halves
	 * the bottleneck. "result": each rank its own window: local 800 000,
	 * any other policy 1 000 000. "win#3" like halo, but unnamed. All of it:
	 * local 2.8e6, node:k and interleave 3.0e6: the default is local.
	 */
	auto allToZero = matrix8(), self = matrix8();
	for (int r = 0; r < 8; ++r) {
		allToZero[static_cast<std::size_t>(r)][0] = kKiloLines;
		self[static_cast<std::size_t>(r)][static_cast<std::size_t>(r)] = kKiloLines;
	}
	const std::vector<double> sizes(8, 4096);
	std::string text = statsFile({ { "halo", "allocate", sizes, allToZero },
				       { "result", "allocate", sizes, self },
				       { "win#3", "create", sizes, allToZero } });
	Traffic t;
	std::string err;
	ASSERT_TRUE(parseTraffic(text, "s.json", 0, t, err)) << err;
	ASSERT_EQ(t.windows.size(), 3u);
	EXPECT_EQ(t.windows[0].name, "halo");
	EXPECT_EQ(t.windows[0].traffic.at(5, 0), kKiloLines);

	CostModel m = twoNodeModel();
	Recommendation rec = run(m, t);
	EXPECT_EQ(rec.memoryDefault.placement.str(), "local") << rec.memoryDefault.why;
	EXPECT_DOUBLE_EQ(candidate(rec.memoryDefault, "local").latency, 2800000);
	EXPECT_DOUBLE_EQ(candidate(rec.memoryDefault, "interleave").latency, 3000000);
	ASSERT_EQ(rec.windowMemory.size(), 1u);
	EXPECT_EQ(rec.windowMemory[0].first, "halo");
	EXPECT_EQ(rec.windowMemory[0].second.placement.str(), "interleave");
	ASSERT_EQ(rec.windowNotes.size(), 1u);
	EXPECT_NE(rec.windowNotes[0].find("\"win#3\" would take interleave"), std::string::npos) << rec.windowNotes[0];

	auto f = librma::parsePlacementFile(recommendationFile(m, t, rec), "recommended", err);
	ASSERT_TRUE(f.has_value()) << err;
	EXPECT_EQ(f->memoryDefault.str(), "local");
	ASSERT_EQ(f->windowPolicies.size(), 1u);
	EXPECT_EQ(f->windowPolicies[0].first, "halo");
	EXPECT_EQ(f->windowPolicies[0].second.str(), "interleave");
	/* The profile gives no pool: huge pages are left alone, and the evidence says why. */
	EXPECT_FALSE(f->hugePages.has_value());
	json e = json::parse(f->evidenceJson);
	EXPECT_EQ(e["memory"]["default"]["policy"], "local");
	EXPECT_EQ(e["memory"]["windows"]["halo"]["policy"], "interleave");
	EXPECT_EQ(e["memory"]["windows"]["halo"]["candidates"].size(), 4u);
	EXPECT_EQ(e["huge_pages"]["choice"], "unset");
}

TEST_F(RecommendTest, HugePagesWhenThePoolHoldsEveryWindow)
{
	/* Pool windows: halo 1 MiB + 3 MiB -> 2 + 4 MiB; shared 2 x 2 MiB; the create window takes no pool pages. */
	std::vector<double> halo(8, 0), shared(8, 0), created(8, 1 << 30);
	halo[0] = 1 << 20;
	halo[1] = 3 << 20;
	shared[2] = shared[3] = 2 << 20;
	auto traffic = matrix8();
	traffic[1][0] = kKiloLines;
	std::string text = statsFile({ { "halo", "allocate", halo, traffic },
				       { "s", "shared", shared, matrix8() },
				       { "c", "create", created, matrix8() } });
	Traffic t;
	std::string err;
	ASSERT_TRUE(parseTraffic(text, "s.json", 0, t, err, { "halo" })) << err;
	EXPECT_EQ(t.hugePageBytes, 10LL << 20); /* 5 pages, whichever windows were chosen */
	EXPECT_EQ(t.windowsInPool, 2);

	CostModel m = twoNodeModel();
	std::string why;
	m.hugePagesFree = 5;
	EXPECT_EQ(chooseHugePages(m, t, why), librma::HugePages::Prefer) << why;
	EXPECT_NE(why.find("need 10485760 bytes"), std::string::npos) << why;
	m.hugePagesFree = 4;
	EXPECT_EQ(chooseHugePages(m, t, why), librma::HugePages::Off) << why;
	m.hugePagesFree = -1;
	EXPECT_FALSE(chooseHugePages(m, t, why).has_value());
	EXPECT_NE(why.find("does not give the 2 MiB pool"), std::string::npos) << why;
	/* A plain matrix has no window sizes. */
	m.hugePagesFree = 5;
	ASSERT_TRUE(parseTraffic(R"({"bytes":[[0,5],[7,0]]})", "t.json", 0, t, err)) << err;
	EXPECT_FALSE(chooseHugePages(m, t, why).has_value());
	EXPECT_NE(why.find("no window sizes"), std::string::npos) << why;
	/* And the profile's pool is read. */
	Topology topo = synthetic("pack:1 numa:2 l3:1 core:4 pu:1");
	json p = profileFor(
		topo, [](const CpuCore &, const CpuCore &) { return 40.0; }, [](int, int) { return 100.0; });
	p["topology"]["huge_pages"] = { { "free", 7 }, { "total", 8 } };
	ASSERT_TRUE(costModelFromProfile(p, m, err)) << err;
	EXPECT_EQ(m.hugePagesFree, 7);
}

TEST_F(RecommendTest, ProgressAgentsPerNodeOnlyWhereACoreIsFree)
{
	/* Two nodes of 4 cores (slots 0-3 node 0, 4-7 node 1). */
	CostModel m = twoNodeModel();
	/* Ranks on slots 0, 1 and 4: each node keeps a free core, the last one. */
	ProgressChoice c = chooseProgress(m, { 0, 1, 4 });
	EXPECT_EQ(c.mode, "agent") << c.why;
	ASSERT_EQ(c.cpus.size(), 2u);
	EXPECT_EQ(c.cpus[0], m.slots[3].cpus.back());
	EXPECT_EQ(c.cpus[1], m.slots[7].cpus.back());
	/* Ranks on node 0 only: one agent, on node 0. */
	c = chooseProgress(m, { 0, 1 });
	EXPECT_EQ(c.mode, "agent");
	EXPECT_EQ(c.cpus, std::vector<int>{ m.slots[3].cpus.back() });
	/* Node 0 full: no agents (a rank's core would be shared), the default stays. */
	c = chooseProgress(m, { 0, 1, 2, 3, 4 });
	EXPECT_EQ(c.mode, "");
	EXPECT_TRUE(c.cpus.empty());
	EXPECT_NE(c.why.find("node 0 has no core free"), std::string::npos) << c.why;
}

TEST(TrafficTest, ReadsMatricesPairsAndCsv)
{
	Traffic t;
	std::string err;
	ASSERT_TRUE(parseTraffic(R"({"bytes":[[0,5],[7,0]]})", "t.json", 0, t, err)) << err;
	EXPECT_EQ(t.ranks, 2);
	EXPECT_EQ(t.at(0, 1), 5);
	EXPECT_EQ(t.at(1, 0), 7);
	ASSERT_TRUE(parseTraffic(R"({"ranks":4,"pairs":[{"origin":3,"target":1,"bytes":9}]})", "t.json", 0, t, err)) << err;
	EXPECT_EQ(t.ranks, 4);
	EXPECT_EQ(t.at(3, 1), 9);
	ASSERT_TRUE(parseTraffic("origin,target,bytes\n# a comment\n0,2,10\n0,2,5\n2,1,1e3\n", "t.csv", 0, t, err)) << err;
	EXPECT_EQ(t.ranks, 3);
	EXPECT_EQ(t.at(0, 2), 15);
	EXPECT_EQ(t.at(2, 1), 1000);
	ASSERT_TRUE(parseTraffic("0,1,8\n", "t.csv", 5, t, err)) << err;
	EXPECT_EQ(t.ranks, 5);
}

/* librma's RMA_STATS file (lib/win/stats.h): every kind's bytes, window ranks mapped to world ranks. */
constexpr const char *kStatsFile = R"({"format":"librma-stats","version":1,"world_size":4,
  "kinds":["put","get"],
  "windows":[
    {"id":7,"name":"halo","ranks":[0,1,2,3],
     "ops":{"put":[[0,1,0,0],[0,0,0,0],[0,0,0,0],[0,0,0,0]],"get":[[0,0,0,0],[0,0,0,0],[0,0,0,0],[0,0,0,0]]},
     "bytes":{"put":[[0,8,0,0],[0,0,0,0],[0,0,0,0],[0,0,0,0]],"get":[[0,0,0,0],[0,0,0,0],[0,0,0,0],[0,0,0,0]]}},
    {"id":9,"name":"pairs","ranks":[3,1],
     "ops":{"put":[[0,1],[0,0]],"get":[[0,0],[2,0]]},
     "bytes":{"put":[[0,100],[0,0]],"get":[[0,0],[50,0]]}}]})";

TEST(TrafficTest, ReadsLibrmaStatisticsSummingTheChosenWindowsByWorldRank)
{
	Traffic t;
	std::string err;
	ASSERT_TRUE(parseTraffic(kStatsFile, "s.json", 0, t, err)) << err;
	EXPECT_EQ(t.ranks, 4);
	EXPECT_EQ(t.at(0, 1), 8);
	/* Window rank 0 of "pairs" is world rank 3, window rank 1 world rank 1; get and put add up. */
	EXPECT_EQ(t.at(3, 1), 100);
	EXPECT_EQ(t.at(1, 3), 50);
	EXPECT_EQ(t.at(1, 0), 0);
	ASSERT_TRUE(parseTraffic(kStatsFile, "s.json", 0, t, err, { "pairs" })) << err;
	EXPECT_EQ(t.at(0, 1), 0);
	EXPECT_EQ(t.at(3, 1), 100);
	ASSERT_TRUE(parseTraffic(kStatsFile, "s.json", 0, t, err, { "7" })) << err; /* by id */
	EXPECT_EQ(t.at(0, 1), 8);
	EXPECT_EQ(t.at(3, 1), 0);
	EXPECT_FALSE(parseTraffic(kStatsFile, "s.json", 0, t, err, { "nope" }));
	EXPECT_NE(err.find("no window named \"nope\""), std::string::npos) << err;
	EXPECT_FALSE(parseTraffic(R"({"format":"librma-stats","world_size":2,"windows":[{"ranks":[0,1],"bytes":{"put":[[0]]}}]})",
				  "s.json", 0, t, err));
	EXPECT_NE(err.find("windows[0]: bytes.put must be a 2 x 2 matrix"), std::string::npos) << err;
}

TEST(TrafficTest, RefusesBadInputSayingWhere)
{
	struct Case {
		const char *text;
		int ranks;
		const char *message;
	} cases[] = {
		{ "{\"bytes\":", 0, "t: malformed JSON" },
		{ R"({"bytes":[[0,1],[2]]})", 0, "bytes[1] must hold 2 numbers" },
		{ R"({"bytes":[[0,-1],[2,0]]})", 0, "bytes[0][1] is not a non-negative number" },
		{ R"({"pairs":[{"origin":0}]})", 0, "pairs[0] must be" },
		{ R"({"other":1})", 0, "expected \"bytes\" (a matrix) or \"pairs\"" },
		{ "0,1,8\n1,x,2\n", 0, "t:2: expected \"origin,target,bytes\"" },
		{ "0,1,8,9\n", 0, "t:1:" },
		{ "0,1,-8\n", 0, "t:1:" },
		{ "0,7,8\n", 4, "rank 7 is outside a 4-rank job" },
		{ "", 0, "no traffic and no number of ranks" },
	};
	for (const Case &c : cases) {
		Traffic t;
		std::string err;
		EXPECT_FALSE(parseTraffic(c.text, "t", c.ranks, t, err)) << c.text;
		EXPECT_NE(err.find(c.message), std::string::npos) << c.text << "\n  gave: " << err;
	}
}

} /* namespace */
} /* namespace rmatune */
