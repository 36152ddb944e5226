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
