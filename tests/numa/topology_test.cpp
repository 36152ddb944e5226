/* SPDX-License-Identifier: MIT */
#include "numa/topology.h"

#include <sched.h>
#include <stdlib.h>
#include <unistd.h>

#include <fstream>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "fake_sysfs.h"

namespace librma {
namespace {

using test::FakeSysfs;

std::vector<int> range(int first, int last)
{
	std::vector<int> ids;
	for (int id = first; id <= last; ++id)
		ids.push_back(id);
	return ids;
}

std::vector<int> nodeIds(const Topology &topology)
{
	std::vector<int> ids;
	for (const NumaNode &node : topology.nodes())
		ids.push_back(node.id);
	return ids;
}

/* What a host without a node tree has: every online CPU. */
std::vector<int> onlineCpus()
{
	std::ifstream in("/sys/devices/system/cpu/online");
	std::string text;
	if (std::getline(in, text))
		return parseCpuList(text);
	return range(0, static_cast<int>(sysconf(_SC_NPROCESSORS_ONLN)) - 1);
}

TEST(CpuListTest, ParsesRangesAndSingles)
{
	std::vector<int> expected = range(0, 3);
	std::vector<int> high = range(8, 11);
	expected.insert(expected.end(), high.begin(), high.end());
	EXPECT_EQ(parseCpuList("0-3,8-11\n"), expected);
	EXPECT_EQ(parseCpuList("5"), std::vector<int>{ 5 });
	EXPECT_EQ(parseCpuList("7,1,3-4"), (std::vector<int>{ 1, 3, 4, 7 }));
}

TEST(CpuListTest, EmptyListHasNoCpus)
{
	EXPECT_TRUE(parseCpuList("").empty());
	EXPECT_TRUE(parseCpuList("\n").empty());
}

TEST(CpuListTest, MergesOverlapsAndSkipsMalformedItems)
{
	EXPECT_EQ(parseCpuList("0-3,2-5"), range(0, 5));
	EXPECT_EQ(parseCpuList("a,3,5-2,-1,7,8-,9x"), (std::vector<int>{ 3, 7 }));
}

TEST(TopologyTest, ReadsTwoNodes)
{
	FakeSysfs sysfs;
	sysfs.addNode(0, "0-3");
	sysfs.addNode(1, "4-7");
	sysfs.setHasMemory("0-1");

	Topology topology = Topology::fromSysfs(sysfs.root());

	ASSERT_EQ(topology.nodeCount(), 2);
	EXPECT_EQ(topology.nodes()[0].cpus, range(0, 3));
	EXPECT_EQ(topology.nodes()[1].cpus, range(4, 7));
	EXPECT_TRUE(topology.nodes()[0].hasMemory);
	EXPECT_TRUE(topology.nodes()[1].hasMemory);
	EXPECT_EQ(topology.nodeOfCpu(2), 0);
	EXPECT_EQ(topology.nodeOfCpu(7), 1);
	EXPECT_EQ(topology.nodeOfCpu(8), -1);
}

/* memoryNodeCount(): the nodes fromSysfs() would mark hasMemory, without the rest of the tree. */
TEST(TopologyTest, CountsTheNodesWithMemoryAsTheTopologyDoes)
{
	FakeSysfs two;
	two.addNode(0, "0-3");
	two.addNode(1, "4-7");
	two.setHasMemory("0-1");
	EXPECT_EQ(memoryNodeCount(two.root()), 2);

	FakeSysfs memoryless;
	memoryless.addNode(0, "0-3");
	memoryless.addNode(1, "4-7");
	memoryless.setHasMemory("1");
	EXPECT_EQ(memoryNodeCount(memoryless.root()), 1);

	/* No has_memory: each node's meminfo decides. */
	FakeSysfs meminfo;
	meminfo.addNode(0, "0-1");
	meminfo.addNode(1, "2-3");
	meminfo.setNodeMemory(0, 1024);
	meminfo.setNodeMemory(1, 0);
	EXPECT_EQ(memoryNodeCount(meminfo.root()), 1);

	EXPECT_EQ(memoryNodeCount(two.root() + "/absent"), 1) << "no node tree: a kernel without NUMA";
	int real = 0;
	const Topology topology = Topology::fromSysfs();
	for (const NumaNode &node : topology.nodes())
		real += node.hasMemory;
	EXPECT_EQ(memoryNodeCount(), real);
}

TEST(TopologyTest, ReadsMemorylessAndCpulessNodes)
{
	FakeSysfs sysfs;
	sysfs.addNode(0, "0-3,8-11");
	sysfs.addNode(1, "4-7,12-15");
	sysfs.addNode(2, "16-19"); /* CPUs, no memory */
	sysfs.addNode(3, "");	   /* memory, no CPUs (CXL, PMEM) */
	sysfs.setHasMemory("0-1,3");

	Topology topology = Topology::fromSysfs(sysfs.root());

	ASSERT_EQ(topology.nodeCount(), 4);
	EXPECT_EQ(nodeIds(topology), (std::vector<int>{ 0, 1, 2, 3 }));
	EXPECT_FALSE(topology.nodes()[2].hasMemory);
	EXPECT_EQ(topology.nodes()[2].cpus, range(16, 19));
	EXPECT_TRUE(topology.nodes()[3].hasMemory);
	EXPECT_TRUE(topology.nodes()[3].cpus.empty());
	EXPECT_EQ(topology.nodeOfCpu(9), 0);
	EXPECT_EQ(topology.nodeOfCpu(13), 1);
	EXPECT_EQ(topology.nodeOfCpu(18), 2);
}

TEST(TopologyTest, FallsBackToNodeMeminfoWithoutHasMemory)
{
	FakeSysfs sysfs;
	sysfs.addNode(0, "0-1");
	sysfs.addNode(1, "2-3");
	sysfs.setNodeMemory(0, 1048576);
	sysfs.setNodeMemory(1, 0);

	Topology topology = Topology::fromSysfs(sysfs.root());

	ASSERT_EQ(topology.nodeCount(), 2);
	EXPECT_TRUE(topology.nodes()[0].hasMemory);
	EXPECT_FALSE(topology.nodes()[1].hasMemory);
}

TEST(TopologyTest, KeepsHolesInNodeNumbering)
{
	FakeSysfs sysfs;
	sysfs.addNode(5, "6-7");
	sysfs.addNode(0, "0-1");
	sysfs.addNode(2, "2-5");

	Topology topology = Topology::fromSysfs(sysfs.root());

	EXPECT_EQ(nodeIds(topology), (std::vector<int>{ 0, 2, 5 }));
	EXPECT_EQ(topology.indexOfNode(0), 0);
	EXPECT_EQ(topology.indexOfNode(2), 1);
	EXPECT_EQ(topology.indexOfNode(5), 2);
	EXPECT_EQ(topology.indexOfNode(1), -1);
	EXPECT_EQ(topology.indexOfNode(-1), -1);
	EXPECT_EQ(topology.nodeOfCpu(3), 2);
	EXPECT_EQ(topology.nodeOfCpu(7), 5);
}

TEST(TopologyTest, IgnoresEntriesThatAreNotNodes)
{
	FakeSysfs sysfs;
	sysfs.addNode(0, "0-1");
	std::filesystem::create_directories(sysfs.root() + "/nodeX");
	std::filesystem::create_directories(sysfs.root() + "/power");

	Topology topology = Topology::fromSysfs(sysfs.root());

	EXPECT_EQ(nodeIds(topology), std::vector<int>{ 0 });
}

TEST(TopologyTest, MissingTreeGivesOneNodeWithEveryOnlineCpu)
{
	Topology topology = Topology::fromSysfs("/nonexistent/rma/sysfs");

	ASSERT_EQ(topology.nodeCount(), 1);
	EXPECT_EQ(topology.nodes()[0].id, 0);
	EXPECT_TRUE(topology.nodes()[0].hasMemory);
	EXPECT_EQ(topology.nodes()[0].cpus, onlineCpus());
}

TEST(TopologyTest, TreeWithoutNodesGivesOneNode)
{
	FakeSysfs sysfs;

	Topology topology = Topology::fromSysfs(sysfs.root());

	ASSERT_EQ(topology.nodeCount(), 1);
	EXPECT_EQ(topology.nodes()[0].cpus, onlineCpus());
}

TEST(TopologyTest, SyntheticNodesHoldConsecutiveCpus)
{
	Topology topology = Topology::synthetic(2, 4);

	ASSERT_EQ(topology.nodeCount(), 2);
	EXPECT_EQ(topology.nodes()[1].id, 1);
	EXPECT_EQ(topology.nodes()[1].cpus, range(4, 7));
	EXPECT_TRUE(topology.nodes()[1].hasMemory);
	EXPECT_EQ(topology.nodeOfCpu(5), 1);
	EXPECT_EQ(topology.nodeOfCpu(8), -1);
}

TEST(TopologyTest, RealTreeCoversEveryOnlineCpu)
{
	Topology topology = Topology::fromSysfs();

	ASSERT_GE(topology.nodeCount(), 1);
	for (int cpu : onlineCpus())
		EXPECT_GE(topology.nodeOfCpu(cpu), 0) << "cpu " << cpu;
}

class SystemTopologyTest : public ::testing::Test
{
protected:
	void TearDown() override
	{
		unsetenv("RMA_TOPOLOGY");
		Topology::resetSystemForTesting();
	}
};

TEST_F(SystemTopologyTest, HonoursRmaTopology)
{
	FakeSysfs sysfs;
	sysfs.addNode(0, "0");
	sysfs.addNode(3, "1");
	setenv("RMA_TOPOLOGY", sysfs.root().c_str(), 1);
	Topology::resetSystemForTesting();

	const Topology &topology = Topology::system();

	EXPECT_EQ(nodeIds(topology), (std::vector<int>{ 0, 3 }));
}

TEST_F(SystemTopologyTest, ReadsRealTreeWithoutOverride)
{
	unsetenv("RMA_TOPOLOGY");
	Topology::resetSystemForTesting();

	EXPECT_EQ(nodeIds(Topology::system()), nodeIds(Topology::fromSysfs()));
}

TEST_F(SystemTopologyTest, ReadsOnceAndCaches)
{
	Topology::resetSystemForTesting();
	const Topology &first = Topology::system();

	FakeSysfs sysfs;
	sysfs.addNode(7, "0");
	setenv("RMA_TOPOLOGY", sysfs.root().c_str(), 1);

	EXPECT_EQ(&Topology::system(), &first);
	EXPECT_EQ(Topology::system().indexOfNode(7), -1);
}

/* Pins the calling thread to some CPUs for one test and restores the old mask. */
class AffinityGuard
{
public:
	AffinityGuard() { sched_getaffinity(0, sizeof(saved_), &saved_); }
	~AffinityGuard() { sched_setaffinity(0, sizeof(saved_), &saved_); }

	const cpu_set_t &saved() const { return saved_; }
	bool pin(const std::vector<int> &cpus)
	{
		cpu_set_t set;
		CPU_ZERO(&set);
		for (int cpu : cpus)
			CPU_SET(cpu, &set);
		return sched_setaffinity(0, sizeof(set), &set) == 0;
	}
	std::vector<int> allowed() const
	{
		std::vector<int> cpus;
		for (int cpu = 0; cpu < CPU_SETSIZE; ++cpu) {
			if (CPU_ISSET(cpu, &saved_))
				cpus.push_back(cpu);
		}
		return cpus;
	}

private:
	cpu_set_t saved_;
};

TEST(CurrentNodeTest, IsTheNodeHoldingEveryAllowedCpu)
{
	AffinityGuard affinity;
	std::vector<int> allowed = affinity.allowed();
	ASSERT_FALSE(allowed.empty());
	int cpu = allowed.back();
	ASSERT_TRUE(affinity.pin({ cpu }));

	/* One CPU per node: the pinned CPU's node is the answer. */
	Topology topology = Topology::synthetic(cpu + 1, 1);

	EXPECT_EQ(currentNode(topology), cpu);
}

TEST(CurrentNodeTest, IsTheRunningCpusNodeWhenAffinitySpansNodes)
{
	AffinityGuard affinity;
	std::vector<int> allowed = affinity.allowed();
	if (allowed.size() < 2)
		GTEST_SKIP() << "needs two allowed CPUs to span two nodes";
	int a = allowed[0];
	int b = allowed[1];
	ASSERT_TRUE(affinity.pin({ a, b }));
	Topology topology = Topology::synthetic(b + 1, 1);

	int node = currentNode(topology);

	EXPECT_TRUE(node == a || node == b) << "node " << node;
}

TEST(CurrentNodeTest, IsUnknownWhenTheTopologyLacksOurCpus)
{
	AffinityGuard affinity;
	std::vector<int> allowed = affinity.allowed();
	ASSERT_FALSE(allowed.empty());
	ASSERT_TRUE(affinity.pin({ allowed.back() }));
	FakeSysfs sysfs;
	sysfs.addNode(0, std::to_string(allowed.back() + 1));

	EXPECT_EQ(currentNode(Topology::fromSysfs(sysfs.root())), -1);
}

TEST(CurrentNodeTest, IsARealNodeOnThisHost)
{
	Topology topology = Topology::fromSysfs();

	EXPECT_GE(topology.indexOfNode(currentNode(topology)), 0);
}

} /* namespace */
} /* namespace librma */
