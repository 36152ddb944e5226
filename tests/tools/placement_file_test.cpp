/* SPDX-License-Identifier: MIT */
/*
 * Placement files: what the writer writes the parser reads back equal, and
 * each kind of bad file is refused with a message naming the place.
 */
#include "placement_file.h"

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "config.h"
#include "numa/fake_sysfs.h"

namespace librma {
namespace {

PlacementFile sample()
{
	PlacementFile f;
	f.rankCpus = { { 0, 1 }, { 2, 3 }, { 16, 17 }, { 18 } };
	f.memoryDefault = Placement{ Placement::Kind::Local, -1 };
	/* Not in name order: the file keeps windows as a JSON object. */
	f.windowPolicies = { { "result", Placement{ Placement::Kind::Node, 1 } },
			     { "halo", Placement{ Placement::Kind::Interleave, -1 } } };
	f.hugePages = HugePages::Prefer;
	f.progressMode = "agent";
	f.agentCpus = { 31 };
	f.topologyIdentity = "fnv1a64:0123456789abcdef";
	f.topologySource = "hwloc synthetic pack:2 numa:2 core:8 pu:2";
	f.evidenceJson = R"({"gain_percent":12.5,"method":"greedy + swaps"})";
	return f;
}

std::string errorOf(const std::string &text)
{
	std::string err;
	EXPECT_FALSE(parsePlacementFile(text, "p.json", err).has_value()) << text;
	return err;
}

/* A minimal valid file with @extra members added at the top. */
std::string withTop(const std::string &extra)
{
	return R"({"schema":"rmatune-placement","schema_version":1,"ranks":[{"rank":0,"cpus":"0"}])" +
	       (extra.empty() ? std::string() : "," + extra) + "}";
}

TEST(PlacementFileTest, WriteThenParseGivesTheSameFile)
{
	PlacementFile f = sample();
	std::string text = writePlacementFile(f);
	std::string err;
	auto back = parsePlacementFile(text, "round-trip", err);
	ASSERT_TRUE(back.has_value()) << err << "\n" << text;
	EXPECT_TRUE(*back == f) << text;
	/* And the text is stable: writing the parsed file gives the same bytes. */
	EXPECT_EQ(writePlacementFile(*back), text);
}

TEST(PlacementFileTest, WindowPoliciesReachTheRanksVariableAndBack)
{
	std::string err;
	auto f = parsePlacementFile(
		withTop(R"("memory":{"default":"owner","windows":{"halo":"interleave","ghost cells":"node:1","r":"owner"}})"),
		"p.json", err);
	ASSERT_TRUE(f.has_value()) << err;
	ASSERT_EQ(f->windowPolicies.size(), 3u);
	/* What rmarun passes: the file's windows as RMA_PLACEMENT_WINDOWS text, parsed back by librma. */
	std::vector<WindowPlacement> list;
	for (const auto &[name, policy] : f->windowPolicies)
		list.push_back({ name, policy });
	Result<std::vector<WindowPlacement>> back = parseWindowPlacements(windowPlacementsText(list));
	ASSERT_TRUE(back.ok()) << windowPlacementsText(list);
	ASSERT_EQ(back->size(), 3u);
	EXPECT_EQ(findWindowPlacement(*back, "halo")->kind, Placement::Kind::Interleave);
	EXPECT_EQ(findWindowPlacement(*back, "ghost cells")->kind, Placement::Kind::Node);
	EXPECT_EQ(findWindowPlacement(*back, "ghost cells")->node, 1);
	EXPECT_EQ(findWindowPlacement(*back, "r")->kind, Placement::Kind::Local);
	/* And the file itself round-trips with them. */
	auto again = parsePlacementFile(writePlacementFile(*f), "again.json", err);
	ASSERT_TRUE(again.has_value()) << err;
	EXPECT_TRUE(*again == *f);
}

TEST(PlacementFileTest, MinimalFileTakesTheDefaults)
{
	std::string err;
	auto f = parsePlacementFile(withTop(""), "p.json", err);
	ASSERT_TRUE(f.has_value()) << err;
	EXPECT_EQ(f->rankCpus, (std::vector<std::vector<int>>{ { 0 } }));
	EXPECT_EQ(f->memoryDefault.kind, Placement::Kind::Local);
	EXPECT_FALSE(f->hugePages.has_value());
	EXPECT_TRUE(f->progressMode.empty());
	EXPECT_TRUE(f->agentCpus.empty());
}

TEST(PlacementFileTest, AcceptsCpuArraysRanksInAnyOrderAndSynonyms)
{
	std::string err;
	auto f = parsePlacementFile(
		R"({"schema":"rmatune-placement","schema_version":1,
		    "ranks":[{"rank":1,"cpus":[5,4]},{"rank":0,"cpus":"0-2,7"}],
		    "memory":{"default":"owner"},"huge_pages":"on"})",
		"p.json", err);
	ASSERT_TRUE(f.has_value()) << err;
	EXPECT_EQ(f->rankCpus, (std::vector<std::vector<int>>{ { 0, 1, 2, 7 }, { 4, 5 } }));
	EXPECT_EQ(f->memoryDefault.kind, Placement::Kind::Local);
	EXPECT_EQ(f->hugePages, HugePages::Require);
}

TEST(PlacementFileTest, RefusesMalformedFilesSayingWhere)
{
	struct Case {
		std::string text;
		const char *message;
	} cases[] = {
		{ "{\"schema\": ", "p.json: malformed JSON at byte" },
		{ "[1,2]", "expected a JSON object" },
		{ R"({"schema":"rmatune-profile","schema_version":1})", "\"schema\" must be \"rmatune-placement\"" },
		{ R"({"schema":"rmatune-placement","schema_version":9,"ranks":[]})", "schema_version 9 is not one" },
		{ R"({"schema":"rmatune-placement","schema_version":1,"ranks":[]})", "\"ranks\" must be a non-empty" },
		{ withTop(R"("rank":3)"), "unknown key \"rank\"" },
		{ R"({"schema":"rmatune-placement","schema_version":1,"ranks":[{"rank":0,"cpus":"0-"}]})",
		  "ranks[0].cpus: \"0-\" is not a CPU list" },
		{ R"({"schema":"rmatune-placement","schema_version":1,"ranks":[{"rank":0,"cpus":"3-1"}]})",
		  "ranks[0].cpus" },
		{ R"({"schema":"rmatune-placement","schema_version":1,"ranks":[{"rank":0,"cpus":[]}]})",
		  "ranks[0].cpus" },
		{ R"({"schema":"rmatune-placement","schema_version":1,"ranks":[{"rank":1,"cpus":"0"}]})",
		  "ranks[0].rank: 1 is not a rank of a 1-rank job" },
		{ R"({"schema":"rmatune-placement","schema_version":1,"ranks":[{"rank":0,"cpus":"0"},{"rank":0,"cpus":"1"}]})",
		  "ranks[1].rank: rank 0 is placed twice" },
		{ withTop(R"("memory":{"default":"nearest"})"), "memory.default: \"nearest\" is not a policy" },
		{ withTop(R"("memory":{"windows":{"halo":"node:x"}})"), "memory.windows.halo: \"node:x\" is not a policy" },
		{ withTop(R"("memory":{"windows":{"a;b":"local"}})"),
		  "memory.windows: \"a;b\": a window name cannot contain ';' or '='" },
		{ withTop(R"("memory":{"windows":{"":"local"}})"),
		  "memory.windows: \"\": a window name cannot be empty" },
		{ withTop(R"("huge_pages":true)"), "huge_pages: true is not one of off, prefer, require" },
		{ withTop(R"("progress":{"mode":"fast"})"), "progress.mode: \"fast\" is not one of none, thread, agent" },
		{ withTop(R"("progress":{"cores":"a"})"), "progress.cores: \"a\" is not a CPU list" },
		{ withTop(R"("evidence":3)"), "\"evidence\" must be an object" },
	};
	for (const Case &c : cases) {
		std::string err = errorOf(c.text);
		EXPECT_NE(err.find(c.message), std::string::npos) << c.text << "\n  gave: " << err;
		EXPECT_EQ(err.rfind("p.json: ", 0), 0u) << err;
	}
}

TEST(PlacementFileTest, StrictCpuListsRefuseWhatTheLenientParserSkips)
{
	EXPECT_EQ(parseCpuListStrict("0-3,8"), (std::vector<int>{ 0, 1, 2, 3, 8 }));
	EXPECT_EQ(parseCpuListStrict("5"), (std::vector<int>{ 5 }));
	for (const char *bad : { "", ",", "1,", "a", "-1", "1-", "4-2", "1 2", "0x3" })
		EXPECT_FALSE(parseCpuListStrict(bad).has_value()) << bad;
}

/* 2 packages x 2 NUMA nodes x 8 cores x 2 threads: 64 CPUs, nodes 0..3. */
Topology bigTopology()
{
	auto t = Topology::fromHwlocSynthetic("pack:2 numa:2 l3:1 core:8 pu:2");
	EXPECT_TRUE(t.ok());
	return t.value();
}

TEST(PlacementFileTest, CheckRefusesCpusAndNodesTheTopologyLacks)
{
#ifndef HAVE_HWLOC
	GTEST_SKIP() << "needs hwloc for the injected topology";
#endif
	Topology t = bigTopology();
	std::string err;
	PlacementFile f = sample();
	f.windowPolicies.clear();
	EXPECT_TRUE(checkPlacementFile(f, t, {}, err)) << err;

	PlacementFile noCpu = f;
	noCpu.rankCpus[2] = { 64 };
	EXPECT_FALSE(checkPlacementFile(noCpu, t, {}, err));
	EXPECT_NE(err.find("rank 2: CPU 64 is not a CPU of this topology (0-63"), std::string::npos) << err;

	PlacementFile notAllowed = f;
	EXPECT_FALSE(checkPlacementFile(notAllowed, t, { 0, 1, 2, 3 }, err));
	EXPECT_NE(err.find("rank 2: CPU 16 is not one this process may use (0-3)"), std::string::npos) << err;

	PlacementFile agent = f;
	agent.agentCpus = { 99 };
	EXPECT_FALSE(checkPlacementFile(agent, t, {}, err));
	EXPECT_NE(err.find("progress.cores: CPU 99"), std::string::npos) << err;

	PlacementFile noNode = f;
	noNode.memoryDefault = Placement{ Placement::Kind::Node, 7 };
	EXPECT_FALSE(checkPlacementFile(noNode, t, {}, err));
	EXPECT_NE(err.find("memory.default: node:7: this topology has no NUMA node 7"), std::string::npos) << err;
}

TEST(PlacementFileTest, CheckRefusesANodeWithoutMemory)
{
	test::FakeSysfs sysfs;
	sysfs.addNode(0, "0-1");
	sysfs.addNode(1, "2-3");
	sysfs.setHasMemory("0");
	Topology t = Topology::fromSysfs(sysfs.root());
	PlacementFile f;
	f.rankCpus = { { 0 } };
	f.memoryDefault = Placement{ Placement::Kind::Node, 0 };
	std::string err;
	EXPECT_TRUE(checkPlacementFile(f, t, {}, err)) << err;
	f.windowPolicies = { { "halo", Placement{ Placement::Kind::Node, 1 } } };
	EXPECT_FALSE(checkPlacementFile(f, t, {}, err));
	EXPECT_NE(err.find("memory.windows.halo: node:1: NUMA node 1 has no memory"), std::string::npos) << err;
}

} /* namespace */
} /* namespace librma */
