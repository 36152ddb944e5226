/* SPDX-License-Identifier: MIT */
/*
 * rmarun --placement FILE end to end: each rank reports, from the kernel,
 * the CPUs it may run on (sched_getaffinity) and the policy of its window
 * memory (get_mempolicy), and these must be what the file says. What
 * librma cannot apply yet must be refused with a message, and --report
 * must say what was applied. Per-window policies reach the windows created
 * with info key rma_win_name, under an explicit rma_placement key.
 */
#include <sched.h>

#include <algorithm>
#include <cstdlib>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "support/multiproc.h"

namespace librma {
namespace {

using test::CommandResult;
using test::runCommand;
using test::ScratchDir;

std::vector<int> allowedCpus()
{
	cpu_set_t set;
	std::vector<int> cpus;
	if (sched_getaffinity(0, sizeof(set), &set) == 0)
		for (int cpu = 0; cpu < CPU_SETSIZE; ++cpu)
			if (CPU_ISSET(cpu, &set))
				cpus.push_back(cpu);
	return cpus;
}

/* "0-3,6" for sorted @cpus. */
std::string listText(const std::vector<int> &cpus)
{
	std::string text;
	for (std::size_t i = 0; i < cpus.size();) {
		std::size_t j = i;
		while (j + 1 < cpus.size() && cpus[j + 1] == cpus[j] + 1)
			++j;
		/* Appends, not "literal" + std::string: GCC 12 at -O3 warns falsely (-Wrestrict) on that. */
		text.append(text.empty() ? "" : ",").append(std::to_string(cpus[i]));
		if (j > i)
			text.append("-").append(std::to_string(cpus[j]));
		i = j + 1;
	}
	return text;
}

/* The first NUMA node with memory on this host (0 when sysfs does not say). */
int firstMemoryNode()
{
	std::ifstream in("/sys/devices/system/node/has_memory");
	int node = 0;
	if (in >> node)
		return node;
	return 0;
}

std::vector<std::string> sortedLines(const std::string &text)
{
	std::vector<std::string> lines;
	std::istringstream in(text);
	for (std::string line; std::getline(in, line);)
		lines.push_back(line);
	std::sort(lines.begin(), lines.end());
	return lines;
}

class RmarunPlacementTest : public testing::Test
{
protected:
	void SetUp() override
	{
		const char *rmarun = std::getenv("RMA_RMARUN");
		const char *check = std::getenv("RMA_PLACEMENT_CHECK");
		if (!rmarun || !check)
			GTEST_SKIP() << "RMA_RMARUN and RMA_PLACEMENT_CHECK name the programs (meson test sets them)";
		rmarun_ = rmarun;
		check_ = check;
		cpus_ = allowedCpus();
		ASSERT_FALSE(cpus_.empty());
	}

	/* Write @json to a file and run rmarun --placement on it with @args before the program. */
	CommandResult run(const std::string &json, std::vector<std::string> program, std::vector<std::string> args = {})
	{
		std::string path = dir_.file("placement.json");
		std::ofstream(path) << json;
		std::vector<std::string> argv = { "/usr/bin/env",   "-u", "RMA_PLACEMENT",	   "-u",
						  "RMA_HUGE_PAGES", "-u", "RMA_PLACEMENT_WINDOWS", rmarun_,
						  "--placement",    path };
		argv.insert(argv.end(), args.begin(), args.end());
		argv.insert(argv.end(), program.begin(), program.end());
		return runCommand(argv, 60);
	}

	/* A file placing one rank per entry of @ranks (CPU lists), with @rest appended to the top object. */
	static std::string file(const std::vector<std::string> &ranks, const std::string &rest = "")
	{
		std::string s = R"({"schema":"rmatune-placement","schema_version":1,"ranks":[)";
		for (std::size_t r = 0; r < ranks.size(); ++r)
			s.append(r ? "," : "")
				.append(R"({"rank":)")
				.append(std::to_string(r))
				.append(R"(,"cpus":")")
				.append(ranks[r])
				.append("\"}");
		s += "]";
		if (!rest.empty())
			s.append(",").append(rest);
		return s + "}";
	}

	ScratchDir dir_;
	std::string rmarun_;
	std::string check_;
	std::vector<int> cpus_;
};

TEST_F(RmarunPlacementTest, RanksRunOnExactlyTheFilesCpusWithItsMemoryPolicy)
{
	const std::string first = std::to_string(cpus_.front());
	const std::string last = std::to_string(cpus_.back());
	const std::string node = std::to_string(firstMemoryNode());
	/* Rank 0 on the first allowed CPU, rank 1 on the last (the same CPU on a one-CPU host). */
	CommandResult r = run(file({ first, last }, R"("memory":{"default":"node:)" + node + R"("},"huge_pages":"off")"),
			      { check_ });
	ASSERT_EQ(r.status, 0) << r.err;
	EXPECT_EQ(sortedLines(r.out),
		  (std::vector<std::string>{ "rank 0 cpus " + first + " policy bind nodes " + node + " placement node:" +
						     node + " huge off",
					     "rank 1 cpus " + last + " policy bind nodes " + node + " placement node:" +
						     node + " huge off" }))
		<< r.out;
}

TEST_F(RmarunPlacementTest, EveryMemoryPolicyReachesTheWindow)
{
	const std::string node = std::to_string(firstMemoryNode());
	struct Case {
		const char *policy;
		std::string expect; /* "policy MODE nodes LIST placement P" */
	} cases[] = {
		{ "interleave", "policy interleave nodes " },
		{ "local", "policy bind nodes " + node + " placement local" },
		{ "none", "policy default nodes - placement none" },
	};
	const std::string all = listText(cpus_);
	for (const Case &c : cases) {
		CommandResult r =
			run(file({ all }, std::string(R"("memory":{"default":")") + c.policy + "\"}"), { check_ });
		ASSERT_EQ(r.status, 0) << c.policy << ": " << r.err;
		EXPECT_EQ(r.out.rfind("rank 0 cpus " + all + " ", 0), 0u) << r.out;
		EXPECT_NE(r.out.find(c.expect), std::string::npos) << c.policy << ": " << r.out;
		/* The huge-page default is left alone when the file does not say. */
		EXPECT_NE(r.out.find(" huge prefer"), std::string::npos) << r.out;
	}
}

TEST_F(RmarunPlacementTest, ProgressAgentCoreReachesTheRanks)
{
	const std::string core = std::to_string(cpus_.back());
	CommandResult r = run(file({ std::to_string(cpus_.front()) }, R"("progress":{"mode":"agent","cores":")" + core +
									       "\"}"),
			      { "/bin/sh", "-c", "echo $RMA_BIND $RMA_PROGRESS $RMA_PROGRESS_CORE $RMA_PLACEMENT" });
	ASSERT_EQ(r.status, 0) << r.err;
	EXPECT_EQ(r.out, "cpus:" + std::to_string(cpus_.front()) + " agent " + core + " local\n");
}

TEST_F(RmarunPlacementTest, ReportSaysWhatWasApplied)
{
	const std::string first = std::to_string(cpus_.front());
	CommandResult r = run(file({ first, first }, R"("memory":{"default":"interleave"},"huge_pages":"off")"),
			      { "/bin/true" }, { "--report" });
	ASSERT_EQ(r.status, 0) << r.err;
	EXPECT_NE(r.err.find("rmarun: placement: 2 ranks from "), std::string::npos) << r.err;
	EXPECT_NE(r.err.find("window memory interleave, huge pages off"), std::string::npos) << r.err;
	EXPECT_NE(r.err.find(": 0=cpus:" + first + " 1=cpus:" + first), std::string::npos) << r.err;
}

/* Each rank's line for the window named @name ("" when @out has none, or more than one for that rank). */
std::string windowLine(const std::string &out, int rank, const std::string &name)
{
	std::string found;
	int count = 0;
	for (const std::string &line : sortedLines(out)) {
		const std::string suffix = " name " + name;
		if (line.rfind("rank " + std::to_string(rank) + " ", 0) == 0 && line.size() >= suffix.size() &&
		    line.compare(line.size() - suffix.size(), suffix.size(), suffix) == 0) {
			found = line;
			++count;
		}
	}
	return count == 1 ? found : "";
}

TEST_F(RmarunPlacementTest, WindowsCreatedWithANameGetTheFilesPolicyForIt)
{
	const std::string node = std::to_string(firstMemoryNode());
	const std::string first = std::to_string(cpus_.front());
	const std::string last = std::to_string(cpus_.back());
	/*
	 * halo: the file's interleave; other (named, not in the file) and an
	 * unnamed window: the default, bound to the owner's node; ghost with an
	 * explicit rma_placement: the key wins over the file's none; ghost
	 * without it: none.
	 */
	CommandResult r = run(file({ first, last },
				   R"("memory":{"default":"local","windows":{"halo":"interleave","ghost":"none"}},)"
				   R"("huge_pages":"off")"),
			      { check_, "halo", "other", "-", "ghost/node:" + node, "ghost" });
	ASSERT_EQ(r.status, 0) << r.err;
	for (int rank = 0; rank < 2; ++rank) {
		SCOPED_TRACE("rank " + std::to_string(rank));
		const std::string cpus = "rank " + std::to_string(rank) + " cpus " + (rank ? last : first) + " ";
		const std::string halo = windowLine(r.out, rank, "halo");
		EXPECT_EQ(halo.rfind(cpus + "policy interleave nodes ", 0), 0u) << r.out;
		EXPECT_NE(halo.find(" placement interleave huge off name halo"), std::string::npos) << r.out;
		EXPECT_EQ(windowLine(r.out, rank, "other"),
			  cpus + "policy bind nodes " + node + " placement local huge off name other")
			<< r.out;
		const std::vector<std::string> lines = sortedLines(r.out);
		EXPECT_NE(std::find(lines.begin(), lines.end(),
				    cpus + "policy bind nodes " + node + " placement node:" + node +
					    " huge off name ghost"),
			  lines.end())
			<< r.out;
		EXPECT_NE(std::find(lines.begin(), lines.end(),
				    cpus + "policy default nodes - placement none huge off name ghost"),
			  lines.end())
			<< r.out;
		/* The unnamed window keeps librma's own name and the default policy. */
		bool unnamed = false;
		for (const std::string &line : lines)
			unnamed =
				unnamed ||
				(line.rfind(cpus + "policy bind nodes " + node + " placement local huge off name win#",
					    0) == 0);
		EXPECT_TRUE(unnamed) << r.out;
	}
}

TEST_F(RmarunPlacementTest, FileWithoutWindowsReplacesAnInheritedWindowsVariable)
{
	const std::string node = std::to_string(firstMemoryNode());
	std::string path = dir_.file("placement.json");
	std::ofstream(path) << file({ listText(cpus_) }, R"("memory":{"default":"none"})");
	CommandResult r = runCommand({ "/usr/bin/env", "-u", "RMA_PLACEMENT", "RMA_PLACEMENT_WINDOWS=halo=interleave",
				       rmarun_, "--placement", path, check_, "halo" });
	ASSERT_EQ(r.status, 0) << r.err;
	EXPECT_NE(r.out.find("policy default nodes - placement none huge prefer name halo"), std::string::npos)
		<< r.out;
}

TEST_F(RmarunPlacementTest, ReportSaysWhichWindowPoliciesItPassed)
{
	const std::string first = std::to_string(cpus_.front());
	CommandResult r =
		run(file({ first }, R"("memory":{"default":"local","windows":{"halo":"interleave","ghost":"none"}})"),
		    { "/bin/sh", "-c", "echo $RMA_PLACEMENT_WINDOWS" }, { "--report" });
	ASSERT_EQ(r.status, 0) << r.err;
	EXPECT_EQ(r.out, "ghost=none;halo=interleave\n");
	EXPECT_NE(r.err.find("window memory local, by window name ghost=none;halo=interleave (RMA_PLACEMENT_WINDOWS), "
			     "huge pages prefer (default)"),
		  std::string::npos)
		<< r.err;
}

TEST_F(RmarunPlacementTest, WindowsVariableIsCheckedAtInitAndByRmarun)
{
	/* Malformed: rma_init refuses it naming the variable and the item, and rmarun before any rank starts. */
	CommandResult r = runCommand({ "/usr/bin/env", "RMA_PLACEMENT_WINDOWS=halo=fast", check_, "halo" });
	EXPECT_NE(r.status, 0);
	EXPECT_TRUE(r.out.empty()) << r.out;
	EXPECT_NE(r.err.find("RMA_PLACEMENT_WINDOWS='halo=fast': item 1 \"halo=fast\": \"fast\" is not a policy"),
		  std::string::npos)
		<< r.err;
	r = runCommand({ "/usr/bin/env", "RMA_PLACEMENT_WINDOWS=halo", rmarun_, "-n", "1", "/bin/echo", "started" });
	EXPECT_EQ(r.status, 2);
	EXPECT_EQ(r.out.find("started"), std::string::npos) << r.out;
	EXPECT_NE(r.err.find("RMA_PLACEMENT_WINDOWS='halo': item 1 \"halo\": expected NAME=POLICY"), std::string::npos)
		<< r.err;
	/* Well-formed, set by hand: it applies without rmarun too. */
	r = runCommand({ "/usr/bin/env", "-u", "RMA_PLACEMENT", "RMA_PLACEMENT_WINDOWS=a=none;halo=interleave", check_,
			 "halo", "a", "b" });
	ASSERT_EQ(r.status, 0) << r.err;
	EXPECT_NE(windowLine(r.out, 0, "halo").find("policy interleave nodes "), std::string::npos) << r.out;
	EXPECT_NE(windowLine(r.out, 0, "a").find("policy default nodes - placement none"), std::string::npos) << r.out;
	EXPECT_NE(windowLine(r.out, 0, "b").find("policy bind nodes"), std::string::npos) << r.out;
	/* A name librma cannot take is an info error at creation. */
	r = runCommand({ check_, std::string(200, 'w') });
	EXPECT_NE(r.status, 0);
	EXPECT_NE(r.err.find("info key rma_win_name must have 1 to 127 characters, not 128"), std::string::npos)
		<< r.err;
}

TEST_F(RmarunPlacementTest, RefusesWhatItCannotApplyWithAClearMessage)
{
	const std::string cpu = std::to_string(cpus_.front());
	struct Case {
		std::string json;
		std::vector<std::string> args;
		const char *message;
	} cases[] = {
		{ "{\"schema\":", {}, "malformed JSON at byte" },
		{ file({ "100000" }), {}, "rank 0: CPU 100000 is not a CPU of this topology" },
		{ file({ cpu }, R"("memory":{"default":"node:4000"})"), {}, "this topology has no NUMA node 4000" },
		{ file({ cpu }, R"("memory":{"windows":{"a;b":"interleave"}})"),
		  {},
		  "memory.windows: \"a;b\": a window name cannot contain ';' or '='" },
		{ file({ cpu }, R"("progress":{"mode":"agent","cores":")" + cpu + "," + cpu + "\"}"),
		  {},
		  "" /* one core after dedup: accepted, checked below */ },
		{ file({ cpu }, R"("progress":{"mode":"thread","cores":")" + cpu + "\"}"),
		  {},
		  "progress.cores names agent cores, but progress.mode is thread" },
		{ file({ cpu, cpu }), { "-n", "3" }, "places 2 ranks, but -n asks for 3" },
		{ file({ cpu }), { "--bind", "core" }, "--bind cannot be given with it" },
		{ file({ cpu }), { "--progress-core", cpu }, "--progress-core cannot be given with it" },
	};
	for (const Case &c : cases) {
		CommandResult r = run(c.json, { "/bin/true" }, c.args);
		if (!*c.message) {
			EXPECT_EQ(r.status, 0) << r.err;
			continue;
		}
		EXPECT_EQ(r.status, 2) << c.json << "\n" << r.err;
		EXPECT_NE(r.err.find(c.message), std::string::npos) << c.json << "\n" << r.err;
		EXPECT_TRUE(r.out.empty()) << r.out;
	}
	CommandResult missing = runCommand({ rmarun_, "--placement", dir_.file("absent.json"), "/bin/true" });
	EXPECT_EQ(missing.status, 2);
	EXPECT_NE(missing.err.find("absent.json: cannot read it"), std::string::npos) << missing.err;
}

TEST_F(RmarunPlacementTest, PassesOneAgentCorePerNodeAndRefusesCpusOutsideTheCpuset)
{
	/* An injected topology larger than the host: its CPUs exist there but not for this process. */
	std::string path = dir_.file("big.json");
	std::ofstream(path) << file({ "40" });
	CommandResult r = runCommand({ "/usr/bin/env", "HWLOC_SYNTHETIC=pack:2 numa:2 l3:1 core:8 pu:2", rmarun_,
				       "--placement", path, "/bin/true" });
	EXPECT_EQ(r.status, 2) << r.err;
	EXPECT_NE(r.err.find("rank 0: CPU 40 is not one this process may use"), std::string::npos) << r.err;

	if (cpus_.size() < 2)
		GTEST_SKIP() << "two agent cores need two CPUs";
	const std::string two = std::to_string(cpus_[0]) + "," + std::to_string(cpus_[1]);
	/* One agent per NUMA node: the list reaches the ranks whole, for each node's agent to pick its own. */
	r = run(file({ std::to_string(cpus_[0]) }, R"("progress":{"mode":"agent","cores":")" + two + "\"}"),
		{ "/bin/sh", "-c", "echo \"$RMA_PROGRESS $RMA_PROGRESS_CORE\"" });
	EXPECT_EQ(r.status, 0) << r.err;
	const std::string list = std::to_string(cpus_[0]) + (cpus_[1] == cpus_[0] + 1 ? "-" : ",") +
				 std::to_string(cpus_[1]);
	EXPECT_EQ(r.out, "agent " + list + "\n");
}

TEST_F(RmarunPlacementTest, PlacementKnobsRefuseBadValues)
{
	/* rmarun before any rank starts, and rma_init in a program started alone. */
	CommandResult r = runCommand({ "/usr/bin/env", "RMA_PLACEMENT=node:x", rmarun_, "-n", "1", "/bin/true" });
	EXPECT_EQ(r.status, 2);
	EXPECT_NE(r.err.find("RMA_PLACEMENT='node:x': accepts local, interleave, node:N or none"), std::string::npos)
		<< r.err;
	r = runCommand({ "/usr/bin/env", "RMA_HUGE_PAGES=yes", check_ });
	EXPECT_NE(r.status, 0);
	EXPECT_NE(r.err.find("RMA_HUGE_PAGES='yes': accepts off, prefer or require"), std::string::npos) << r.err;
	/* Good values reach a window created alone, under its info keys' defaults. */
	r = runCommand({ "/usr/bin/env", "RMA_PLACEMENT=none", "RMA_HUGE_PAGES=off", check_ });
	EXPECT_EQ(r.status, 0) << r.err;
	EXPECT_NE(r.out.find("policy default nodes - placement none huge off"), std::string::npos) << r.out;
}

} /* namespace */
} /* namespace librma */
