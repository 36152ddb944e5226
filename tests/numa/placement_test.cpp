/* SPDX-License-Identifier: MIT */
#include "numa/topology.h"

#include <linux/mempolicy.h>

#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "error/error.h"
#include "fake_sysfs.h"

namespace librma {
namespace {

using test::FakeSysfs;

TEST(PlacementTest, ParsesEveryKind)
{
	struct Case {
		const char *text;
		Placement::Kind kind;
		int node;
	};
	for (const Case &c :
	     { Case{ "local", Placement::Kind::Local, -1 }, Case{ "interleave", Placement::Kind::Interleave, -1 },
	       Case{ "none", Placement::Kind::None, -1 }, Case{ "node:0", Placement::Kind::Node, 0 },
	       Case{ "node:17", Placement::Kind::Node, 17 } }) {
		Result<Placement> placement = Placement::parse(c.text);
		ASSERT_TRUE(placement.ok()) << c.text;
		EXPECT_EQ(placement->kind, c.kind) << c.text;
		if (c.kind == Placement::Kind::Node) {
			EXPECT_EQ(placement->node, c.node) << c.text;
		}
	}
}

TEST(PlacementTest, StrRoundTrips)
{
	for (const char *text : { "local", "interleave", "none", "node:0", "node:3", "node:1023" }) {
		Result<Placement> placement = Placement::parse(text);
		ASSERT_TRUE(placement.ok()) << text;
		EXPECT_EQ(placement->str(), text);
	}
}

TEST(PlacementTest, DefaultIsLocal)
{
	EXPECT_EQ(Placement{}.kind, Placement::Kind::Local);
	EXPECT_EQ(Placement{}.str(), "local");
}

TEST(PlacementTest, RejectsMalformedValuesQuotingThem)
{
	for (const char *text : { "", "Local", "local ", "bogus", "node", "node:", "node:-1", "node:x", "node:1x",
				  "node: 1", "node:99999999999", "node:+1" }) {
		Result<Placement> placement = Placement::parse(text);
		ASSERT_FALSE(placement.ok()) << '"' << text << '"';
		EXPECT_EQ(errorClass(placement.code()), RMA_ERR_INFO_VALUE) << text;
		EXPECT_NE(errorMessage(placement.code()).find('"' + std::string(text) + '"'), std::string::npos)
			<< errorMessage(placement.code());
	}
}

TEST(PlacementTest, TruncatesLongValuesInTheMessage)
{
	std::string text(1000, 'x');

	Result<Placement> placement = Placement::parse(text);

	ASSERT_FALSE(placement.ok());
	std::string message = errorMessage(placement.code());
	EXPECT_NE(message.find(std::string(64, 'x') + "\"..."), std::string::npos) << message;
	EXPECT_LT(message.size(), 200u);
}

TEST(WindowPlacementsTest, ParsesNamesAndPoliciesInOrder)
{
	Result<std::vector<WindowPlacement>> list = parseWindowPlacements("halo=interleave;ghost cells=node:3;r=none");

	ASSERT_TRUE(list.ok()) << errorMessage(list.code());
	ASSERT_EQ(list->size(), 3u);
	EXPECT_EQ((*list)[0].name, "halo");
	EXPECT_EQ((*list)[0].placement.kind, Placement::Kind::Interleave);
	EXPECT_EQ((*list)[1].name, "ghost cells");
	EXPECT_EQ((*list)[1].placement.kind, Placement::Kind::Node);
	EXPECT_EQ((*list)[1].placement.node, 3);
	EXPECT_EQ((*list)[2].placement.kind, Placement::Kind::None);
	EXPECT_EQ(windowPlacementsText(*list), "halo=interleave;ghost cells=node:3;r=none");
	ASSERT_NE(findWindowPlacement(*list, "ghost cells"), nullptr);
	EXPECT_EQ(findWindowPlacement(*list, "ghost cells")->node, 3);
	EXPECT_EQ(findWindowPlacement(*list, "ghost"), nullptr);
	EXPECT_EQ(findWindowPlacement(*list, "Halo"), nullptr);
}

TEST(WindowPlacementsTest, EmptyTextIsNoWindows)
{
	Result<std::vector<WindowPlacement>> list = parseWindowPlacements("");

	ASSERT_TRUE(list.ok());
	EXPECT_TRUE(list->empty());
	EXPECT_EQ(windowPlacementsProblem(""), "");
}

TEST(WindowPlacementsTest, RefusesMalformedTextNamingTheVariableAndTheItem)
{
	struct Case {
		std::string text;
		const char *message;
	} cases[] = {
		{ "halo", "item 1 \"halo\": expected NAME=POLICY" },
		{ "halo=interleave;", "item 2 \"\": expected NAME=POLICY" },
		{ ";halo=local", "item 1 \"\": expected NAME=POLICY" },
		{ "=local", "a window name cannot be empty" },
		{ "halo=fast", "\"fast\" is not a policy: expected local, interleave, node:N or none" },
		{ "halo=node:x", "\"node:x\" is not a policy" },
		{ "halo=local=x", "\"local=x\" is not a policy" },
		{ "a=local;b=none;a=interleave", "item 3 \"a=interleave\": window \"a\" is given a policy twice" },
		{ std::string(128, 'w') + "=local", "a window name has at most 127 characters, not 128" },
	};
	for (const Case &c : cases) {
		Result<std::vector<WindowPlacement>> list = parseWindowPlacements(c.text);
		ASSERT_FALSE(list.ok()) << c.text;
		EXPECT_EQ(errorClass(list.code()), RMA_ERR_ARG) << c.text;
		const std::string message = errorMessage(list.code());
		EXPECT_NE(message.find("RMA_PLACEMENT_WINDOWS \""), std::string::npos) << message;
		EXPECT_NE(message.find(c.message), std::string::npos) << c.text << "\n  gave: " << message;
		EXPECT_NE(windowPlacementsProblem(c.text.c_str()).find(c.message), std::string::npos) << c.text;
	}
}

TEST(WindowPlacementsTest, NameRulesAreThoseOfWindowNamesAndTheSeparators)
{
	EXPECT_EQ(windowNameProblem("halo"), "");
	EXPECT_EQ(windowNameProblem(std::string(127, 'n')), "");
	EXPECT_NE(windowNameProblem(""), "");
	EXPECT_NE(windowNameProblem(std::string(128, 'n')), "");
	EXPECT_NE(windowNameProblem("a;b").find("cannot contain ';' or '='"), std::string::npos);
	EXPECT_NE(windowNameProblem("a=b"), "");
}

class ResolvePlacementTest : public ::testing::Test
{
protected:
	/* Four nodes: 2 has CPUs but no memory, 3 has memory but no CPUs. */
	static Topology fourNodes(FakeSysfs &sysfs)
	{
		sysfs.addNode(0, "0-3");
		sysfs.addNode(1, "4-7");
		sysfs.addNode(2, "8-11");
		sysfs.addNode(3, "");
		sysfs.setHasMemory("0-1,3");
		return Topology::fromSysfs(sysfs.root());
	}

	static MemPolicy resolve(const char *placement, const Topology &topology, int ownerNode)
	{
		Result<Placement> parsed = Placement::parse(placement);
		EXPECT_TRUE(parsed.ok()) << placement;
		Result<MemPolicy> policy = resolvePlacement(*parsed, topology, ownerNode);
		EXPECT_TRUE(policy.ok()) << placement << ": " << errorMessage(policy.code());
		return policy.ok() ? *policy : MemPolicy{};
	}

	static int failure(const char *placement, const Topology &topology)
	{
		Result<Placement> parsed = Placement::parse(placement);
		EXPECT_TRUE(parsed.ok()) << placement;
		Result<MemPolicy> policy = resolvePlacement(*parsed, topology, 0);
		EXPECT_FALSE(policy.ok()) << placement;
		return policy.code();
	}
};

TEST_F(ResolvePlacementTest, LocalBindsToTheOwnerNode)
{
	Topology two = Topology::synthetic(2, 2);

	MemPolicy policy = resolve("local", two, 1);

	EXPECT_EQ(policy.mode, MPOL_BIND);
	EXPECT_EQ(policy.nodes, std::vector<int>{ 1 });
	EXPECT_EQ(policy.reportedNode(), 1);
}

TEST_F(ResolvePlacementTest, LocalBindsOnAOneNodeHostToo)
{
	Topology one = Topology::synthetic(1, 4);

	MemPolicy policy = resolve("local", one, 0);

	EXPECT_EQ(policy.mode, MPOL_BIND);
	EXPECT_EQ(policy.nodes, std::vector<int>{ 0 });
	EXPECT_EQ(policy.reportedNode(), 0);
}

TEST_F(ResolvePlacementTest, LocalWithAnUnknownOwnerIsDefault)
{
	Topology two = Topology::synthetic(2, 2);

	for (int owner : { -1, 2, 100 }) {
		MemPolicy policy = resolve("local", two, owner);
		EXPECT_EQ(policy.mode, MPOL_DEFAULT) << owner;
		EXPECT_TRUE(policy.nodes.empty()) << owner;
		EXPECT_EQ(policy.reportedNode(), -1) << owner;
	}
}

TEST_F(ResolvePlacementTest, LocalOnAMemorylessOwnerIsDefault)
{
	FakeSysfs sysfs;
	Topology four = fourNodes(sysfs);

	MemPolicy policy = resolve("local", four, 2);

	EXPECT_EQ(policy.mode, MPOL_DEFAULT);
	EXPECT_EQ(policy.reportedNode(), -1);
}

TEST_F(ResolvePlacementTest, LocalOnACpulessOwnerBinds)
{
	FakeSysfs sysfs;
	Topology four = fourNodes(sysfs);

	MemPolicy policy = resolve("local", four, 3);

	EXPECT_EQ(policy.mode, MPOL_BIND);
	EXPECT_EQ(policy.nodes, std::vector<int>{ 3 });
}

TEST_F(ResolvePlacementTest, InterleaveSpansEveryNodeWithMemory)
{
	FakeSysfs sysfs;
	Topology four = fourNodes(sysfs);

	MemPolicy policy = resolve("interleave", four, 0);

	EXPECT_EQ(policy.mode, MPOL_INTERLEAVE);
	EXPECT_EQ(policy.nodes, (std::vector<int>{ 0, 1, 3 }));
	EXPECT_EQ(policy.reportedNode(), -1);
}

TEST_F(ResolvePlacementTest, InterleaveOnTwoNodes)
{
	MemPolicy policy = resolve("interleave", Topology::synthetic(2, 1), -1);

	EXPECT_EQ(policy.mode, MPOL_INTERLEAVE);
	EXPECT_EQ(policy.nodes, (std::vector<int>{ 0, 1 }));
}

TEST_F(ResolvePlacementTest, InterleaveOnOneNodeReportsThatNode)
{
	MemPolicy policy = resolve("interleave", Topology::synthetic(1, 1), 0);

	EXPECT_EQ(policy.mode, MPOL_INTERLEAVE);
	EXPECT_EQ(policy.reportedNode(), 0);
}

TEST_F(ResolvePlacementTest, InterleaveWithoutMemoryNodesIsDefault)
{
	FakeSysfs sysfs;
	sysfs.addNode(0, "0");
	sysfs.setHasMemory("");

	MemPolicy policy = resolve("interleave", Topology::fromSysfs(sysfs.root()), 0);

	EXPECT_EQ(policy.mode, MPOL_DEFAULT);
}

TEST_F(ResolvePlacementTest, NodeBindsToThatNode)
{
	FakeSysfs sysfs;
	Topology four = fourNodes(sysfs);

	MemPolicy policy = resolve("node:3", four, 0);

	EXPECT_EQ(policy.mode, MPOL_BIND);
	EXPECT_EQ(policy.nodes, std::vector<int>{ 3 });
	EXPECT_EQ(policy.reportedNode(), 3);
}

TEST_F(ResolvePlacementTest, NodeIgnoresTheOwner)
{
	MemPolicy policy = resolve("node:0", Topology::synthetic(2, 1), 1);

	EXPECT_EQ(policy.nodes, std::vector<int>{ 0 });
}

TEST_F(ResolvePlacementTest, NodeTheTopologyLacksIsAnInfoValueError)
{
	FakeSysfs sysfs;
	Topology four = fourNodes(sysfs);

	int code = failure("node:4", four);

	EXPECT_EQ(errorClass(code), RMA_ERR_INFO_VALUE);
	EXPECT_NE(errorMessage(code).find("no NUMA node 4"), std::string::npos) << errorMessage(code);
	EXPECT_EQ(errorClass(failure("node:1", Topology::synthetic(1, 1))), RMA_ERR_INFO_VALUE);
}

TEST_F(ResolvePlacementTest, NodeInAHoleIsAnInfoValueError)
{
	FakeSysfs sysfs;
	sysfs.addNode(0, "0");
	sysfs.addNode(2, "1");

	EXPECT_EQ(errorClass(failure("node:1", Topology::fromSysfs(sysfs.root()))), RMA_ERR_INFO_VALUE);
}

TEST_F(ResolvePlacementTest, NodeWithoutMemoryIsAnInfoValueError)
{
	FakeSysfs sysfs;
	Topology four = fourNodes(sysfs);

	int code = failure("node:2", four);

	EXPECT_EQ(errorClass(code), RMA_ERR_INFO_VALUE);
	EXPECT_NE(errorMessage(code).find("no memory"), std::string::npos) << errorMessage(code);
}

TEST_F(ResolvePlacementTest, NoneIsDefault)
{
	for (const Topology &topology :
	     { Topology::synthetic(1, 1), Topology::synthetic(2, 1), Topology::synthetic(4, 1) }) {
		MemPolicy policy = resolve("none", topology, 0);
		EXPECT_EQ(policy.mode, MPOL_DEFAULT);
		EXPECT_TRUE(policy.nodes.empty());
		EXPECT_EQ(policy.reportedNode(), -1);
	}
}

} /* namespace */
} /* namespace librma */
