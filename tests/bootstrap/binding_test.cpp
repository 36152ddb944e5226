/* SPDX-License-Identifier: MIT */
#include "bootstrap/binding.h"

#include <thread>

#include <gtest/gtest.h>

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
