/* SPDX-License-Identifier: MIT */
#include "bootstrap/binding.h"

#include <cstdlib>
#include <thread>

#include <gtest/gtest.h>

#include "config.h"
#include "numa/topology.h"

namespace librma {
namespace {

TEST(BindingTest, CoreTakesAllowedCpusInTurnAndWrapsAround)
{
	std::vector<int> allowed = { 2, 5, 7 };
	const char *texts[] = { "core:2", "core:5", "core:7", "core:2", "core:5" };
	for (int rank = 0; rank < 5; ++rank) {
		Binding b = bindingFor(Bind::Core, rank, allowed, nullptr);
		EXPECT_EQ(b.cpus, std::vector<int>{ allowed[rank % 3] });
		EXPECT_EQ(b.text, texts[rank]);
	}
}

TEST(BindingTest, NumaGivesEachRankAllAllowedCpusOfANode)
{
	Topology topology = Topology::synthetic(2, 2); /* node 0: cpus 0-1, node 1: cpus 2-3 */
	std::vector<int> allowed = { 0, 1, 2, 3 };
	Binding b0 = bindingFor(Bind::Numa, 0, allowed, &topology);
	Binding b1 = bindingFor(Bind::Numa, 1, allowed, &topology);
	Binding b2 = bindingFor(Bind::Numa, 2, allowed, &topology);
	EXPECT_EQ(b0.cpus, (std::vector<int>{ 0, 1 }));
	EXPECT_EQ(b0.text, "numa:0");
	EXPECT_EQ(b1.cpus, (std::vector<int>{ 2, 3 }));
	EXPECT_EQ(b1.text, "numa:1");
	EXPECT_EQ(b2.cpus, b0.cpus);
	EXPECT_EQ(b2.text, "numa:0");
}

TEST(BindingTest, NumaUsesOnlyAllowedCpusAndSkipsNodesWithoutAny)
{
	Topology topology = Topology::synthetic(3, 2); /* cpus 0-1, 2-3, 4-5 */
	std::vector<int> allowed = { 1, 4, 5 };
	Binding b0 = bindingFor(Bind::Numa, 0, allowed, &topology);
	Binding b1 = bindingFor(Bind::Numa, 1, allowed, &topology);
	Binding b2 = bindingFor(Bind::Numa, 2, allowed, &topology);
	EXPECT_EQ(b0.cpus, std::vector<int>{ 1 });
	EXPECT_EQ(b0.text, "numa:0");
	EXPECT_EQ(b1.cpus, (std::vector<int>{ 4, 5 }));
	EXPECT_EQ(b1.text, "numa:2");
	EXPECT_EQ(b2.text, "numa:0");
}

TEST(BindingTest, NoneOrNothingAllowedLeavesAffinityAlone)
{
	Topology topology = Topology::synthetic(1, 2);
	for (Binding b : { bindingFor(Bind::None, 1, std::vector<int>{ 0, 1 }, &topology),
			   bindingFor(Bind::Core, 1, std::vector<int>{}, &topology),
			   bindingFor(Bind::Numa, 1, std::vector<int>{ 7 }, &topology) }) {
		EXPECT_TRUE(b.cpus.empty());
		EXPECT_EQ(b.text, "none");
	}
}

#ifdef HAVE_HWLOC
Topology hwlocTopology(const char *description)
{
	auto t = Topology::fromHwlocSynthetic(description);
	EXPECT_TRUE(t.ok()) << description;
	return t.ok() ? std::move(t.value()) : Topology::synthetic(1, 1);
}

std::vector<int> upTo(int n)
{
	std::vector<int> v;
	for (int i = 0; i < n; ++i)
		v.push_back(i);
	return v;
}

TEST(HwlocTopologyTest, SyntheticTopologiesGiveCoresThreadsL3AndNodes)
{
	Topology t = hwlocTopology("pack:2 numa:2 l3:1 core:2 pu:2");
	EXPECT_EQ(t.nodeCount(), 4);
	EXPECT_EQ(t.packageCount(), 2);
	EXPECT_EQ(t.l3Count(), 4);
	ASSERT_EQ(t.cores().size(), 8u);
	EXPECT_EQ(t.cores()[0].cpus, (std::vector<int>{ 0, 1 }));
	EXPECT_EQ(t.cores()[3].cpus, (std::vector<int>{ 6, 7 }));
	EXPECT_EQ(t.cores()[3].node, 1);
	EXPECT_EQ(t.cores()[3].l3, 1);
	EXPECT_EQ(t.cores()[7].package, 1);
	EXPECT_EQ(t.nodes()[2].cpus, (std::vector<int>{ 8, 9, 10, 11 }));
	EXPECT_FALSE(Topology::fromHwlocSynthetic("banana:3").ok());
}

TEST(HwlocTopologyTest, HonoursHwlocSyntheticInTheEnvironment)
{
	setenv("HWLOC_SYNTHETIC", "pack:1 l3:3 core:1 pu:2", 1);
	Topology t = Topology::fromHwloc();
	unsetenv("HWLOC_SYNTHETIC");
	EXPECT_EQ(t.cores().size(), 3u);
	EXPECT_EQ(t.l3Count(), 3);
	EXPECT_NE(t.source().find("HWLOC_SYNTHETIC"), std::string::npos) << t.source();
}

TEST(BindingTest, CoreBindsAPhysicalCoreWithAllItsSmtThreads)
{
	Topology t = hwlocTopology("core:4 pu:2");
	const char *texts[] = { "core:0-1", "core:2-3", "core:4-5", "core:6-7", "core:0-1" };
	for (int rank = 0; rank < 5; ++rank) {
		Binding b = bindingFor(Bind::Core, MapBy::Core, rank, upTo(8), &t);
		EXPECT_EQ(b.text, texts[rank]);
		EXPECT_EQ(b.cpus.size(), 2u);
	}
	/* Only the allowed threads of a core; cores with none are skipped. */
	std::vector<int> allowed = { 0, 4, 5 };
	EXPECT_EQ(bindingFor(Bind::Core, MapBy::Core, 0, allowed, &t).cpus, std::vector<int>{ 0 });
	EXPECT_EQ(bindingFor(Bind::Core, MapBy::Core, 1, allowed, &t).cpus, (std::vector<int>{ 4, 5 }));
	EXPECT_EQ(bindingFor(Bind::Core, MapBy::Core, 2, allowed, &t).cpus, std::vector<int>{ 0 });
}

TEST(BindingTest, MapByL3AndNumaSpreadRanksOverDomains)
{
	Topology t = hwlocTopology("pack:2 numa:2 l3:1 core:2 pu:1"); /* 8 cores, 4 nodes = 4 L3s, 2 cores each */
	auto cpuOf = [&](MapBy map, int rank) { return bindingFor(Bind::Core, map, rank, upTo(8), &t).cpus.at(0); };
	const int byCore[] = { 0, 1, 2, 3, 4 };
	const int bySpread[] = { 0, 2, 4, 6, 1 };
	for (int rank = 0; rank < 5; ++rank) {
		EXPECT_EQ(cpuOf(MapBy::Core, rank), byCore[rank]) << rank;
		EXPECT_EQ(cpuOf(MapBy::Default, rank), byCore[rank]) << rank;
		EXPECT_EQ(cpuOf(MapBy::L3, rank), bySpread[rank]) << rank;
		EXPECT_EQ(cpuOf(MapBy::Numa, rank), bySpread[rank]) << rank;
	}
	/* Two L3 domains per node: --map-by l3 and numa differ. */
	Topology u = hwlocTopology("pack:1 numa:2 l3:2 core:1 pu:1"); /* node 0: cpus 0-1, node 1: 2-3 */
	EXPECT_EQ(bindingFor(Bind::Core, MapBy::L3, 1, upTo(4), &u).cpus.at(0), 1);
	EXPECT_EQ(bindingFor(Bind::Core, MapBy::Numa, 1, upTo(4), &u).cpus.at(0), 2);
	/* --bind numa --map-by core: the node of the rank's core. */
	Binding b = bindingFor(Bind::Numa, MapBy::Core, 1, upTo(4), &u);
	EXPECT_EQ(b.text, "numa:0");
	EXPECT_EQ(b.cpus, (std::vector<int>{ 0, 1 }));
	b = bindingFor(Bind::Numa, MapBy::Core, 2, upTo(4), &u);
	EXPECT_EQ(b.text, "numa:1");
}
#endif

TEST(BindingTest, SetAffinityRestrictsTheCallingThread)
{
	std::vector<int> allowed = affinityCpus();
	ASSERT_FALSE(allowed.empty());
	/* A thread of its own, so the test process keeps its affinity. */
	std::thread([&] {
		std::vector<int> one = { allowed.back() };
		EXPECT_EQ(setAffinityCpus(one), 0);
		EXPECT_EQ(affinityCpus(), one);
	}).join();
	EXPECT_EQ(affinityCpus(), allowed);
}

} /* namespace */
} /* namespace librma */
