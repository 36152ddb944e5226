/* SPDX-License-Identifier: MIT */
/*
 * rmarun end to end, through its path in the build (RMA_RMARUN), with
 * boot_client (RMA_BOOT_CLIENT) as a program that joins the job.
 */
#include <sched.h>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <sstream>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "support/multiproc.h"

namespace librma {
namespace {

using test::CommandResult;
using test::runCommand;

class RmarunTest : public testing::Test
{
protected:
	void SetUp() override
	{
		const char *rmarun = std::getenv("RMA_RMARUN");
		const char *client = std::getenv("RMA_BOOT_CLIENT");
		if (!rmarun || !client)
			GTEST_SKIP() << "RMA_RMARUN and RMA_BOOT_CLIENT name the programs (meson test sets them)";
		rmarun_ = rmarun;
		client_ = client;
	}

	CommandResult rmarun(std::vector<std::string> args)
	{
		args.insert(args.begin(), rmarun_);
		return runCommand(args);
	}

	std::string rmarun_;
	std::string client_;
};

/* The CPUs this process may use, as rmarun sees them. */
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

std::vector<std::string> sortedLines(const std::string &text)
{
	std::vector<std::string> lines;
	std::istringstream in(text);
	for (std::string line; std::getline(in, line);)
		lines.push_back(line);
	std::sort(lines.begin(), lines.end());
	return lines;
}

TEST_F(RmarunTest, ExitsZeroWhenEveryRankDoes)
{
	CommandResult r = rmarun({ "-n", "2", "/bin/sh", "-c", "exit 0" });
	EXPECT_EQ(r.status, 0) << r.err;
}

TEST_F(RmarunTest, ExitsWithTheStatusOfAFailingRank)
{
	CommandResult r = rmarun({ "-n", "2", "/bin/sh", "-c", "exit 3" });
	EXPECT_EQ(r.status, 3) << r.err;
	EXPECT_NE(r.err.find("exited with status 3"), std::string::npos) << r.err;
}

TEST_F(RmarunTest, KilledRankGives128PlusSignalAndStopsTheOthers)
{
	auto start = std::chrono::steady_clock::now();
	CommandResult r =
		rmarun({ "-n", "3", "/bin/sh", "-c", "if [ $RMA_RANK = 1 ]; then kill -9 $$; fi; exec sleep 30" });
	EXPECT_EQ(r.status, 128 + 9) << r.err;
	EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(5));
}

TEST_F(RmarunTest, TimeoutGives124)
{
	auto start = std::chrono::steady_clock::now();
	CommandResult r = rmarun({ "--timeout", "0.3", "-n", "2", "/bin/sh", "-c", "exec sleep 30" });
	EXPECT_EQ(r.status, 124) << r.err;
	EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(5));
}

TEST_F(RmarunTest, MissingProgramGives127)
{
	CommandResult r = rmarun({ "-n", "1", "/nonexistent/program" });
	EXPECT_EQ(r.status, 127);
	EXPECT_NE(r.err.find("cannot execute /nonexistent/program"), std::string::npos) << r.err;
}

TEST_F(RmarunTest, TagOutputPrefixesEachRanksLines)
{
	CommandResult r = rmarun({ "--tag-output", "-n", "2", "--", "/bin/sh", "-c",
				   "echo rank $RMA_RANK of $RMA_SIZE; echo err $RMA_RANK >&2" });
	EXPECT_EQ(r.status, 0) << r.err;
	EXPECT_EQ(sortedLines(r.out), (std::vector<std::string>{ "[0] rank 0 of 2", "[1] rank 1 of 2" }));
	EXPECT_EQ(sortedLines(r.err), (std::vector<std::string>{ "[0] err 0", "[1] err 1" }));
}

TEST_F(RmarunTest, ProgramOptionsAreNotRmarunOptions)
{
	CommandResult r = rmarun({ "-n", "1", "/bin/echo", "-n", "--help" });
	EXPECT_EQ(r.status, 0) << r.err;
	EXPECT_EQ(r.out, "--help");
}

TEST_F(RmarunTest, RanksJoinTheJobThroughTheBootstrap)
{
	for (const char *bind : { "core", "numa", "none" }) {
		CommandResult r = rmarun({ "-n", "3", "--bind", bind, client_ });
		EXPECT_EQ(r.status, 0) << bind << ": " << r.err;
		EXPECT_EQ(sortedLines(r.out),
			  (std::vector<std::string>{ "rank 0 of 3 ok", "rank 1 of 3 ok", "rank 2 of 3 ok" }))
			<< bind;
	}
}

TEST_F(RmarunTest, ClientAloneIsASingleton)
{
	CommandResult r = runCommand({ client_ });
	EXPECT_EQ(r.status, 0) << r.err;
	EXPECT_EQ(r.out, "rank 0 of 1 ok\n");
}

TEST_F(RmarunTest, AbortGivesItsCode)
{
	CommandResult r = rmarun({ "-n", "3", client_, "abort", "7" });
	EXPECT_EQ(r.status, 7) << r.err;
	EXPECT_NE(r.err.find("rank 2 called abort(7)"), std::string::npos) << r.err;
}

TEST_F(RmarunTest, VerboseReportsBindingsAndExits)
{
	CommandResult r = rmarun({ "-v", "-n", "2", "--bind", "none", "/bin/true" });
	EXPECT_EQ(r.status, 0) << r.err;
	EXPECT_NE(r.err.find("rank 1: pid"), std::string::npos) << r.err;
	EXPECT_NE(r.err.find("rank 0 exited with status 0"), std::string::npos) << r.err;
}

/*
 * Physical cores and --map-by on injected topologies (hwloc reads
 * HWLOC_SYNTHETIC): each rank reports RMA_BIND and the CPUs it may use.
 */
TEST_F(RmarunTest, BindCoreTakesWholePhysicalCoresAndMapByOrdersThem)
{
	std::vector<int> cpus = allowedCpus();
	if (cpus.size() < 2 || cpus[0] != 0 || cpus[1] != 1)
		GTEST_SKIP() << "needs CPUs 0 and 1";
	const std::string show = "echo $RMA_RANK $RMA_BIND $(grep Cpus_allowed_list /proc/self/status | cut -f2)";
	/* One core with two hardware threads: both ranks get both threads. */
	CommandResult r = runCommand({ "/usr/bin/env", "HWLOC_SYNTHETIC=core:1 pu:2", rmarun_, "-n", "2", "--bind", "core",
				       "/bin/sh", "-c", show });
	EXPECT_EQ(r.status, 0) << r.err;
	EXPECT_EQ(sortedLines(r.out), (std::vector<std::string>{ "0 core:0-1 0-1", "1 core:0-1 0-1" })) << r.out;
	/* Two L3 domains of one core each: --map-by l3 spreads, --map-by core packs (wrapping). */
	r = runCommand({ "/usr/bin/env", "HWLOC_SYNTHETIC=pack:1 l3:2 core:1 pu:1", rmarun_, "-n", "2", "--map-by", "l3",
			 "/bin/sh", "-c", show });
	EXPECT_EQ(r.status, 0) << r.err;
	EXPECT_EQ(sortedLines(r.out), (std::vector<std::string>{ "0 core:0 0", "1 core:1 1" })) << r.out;
	/* --report says what it used, in one line. */
	r = runCommand({ "/usr/bin/env", "HWLOC_SYNTHETIC=pack:1 l3:2 core:1 pu:1", rmarun_, "-n", "3", "--map-by", "l3",
			 "--report", "/bin/true" });
	EXPECT_EQ(r.status, 0) << r.err;
	EXPECT_NE(r.err.find("rmarun: placement: 3 ranks; topology hwloc (HWLOC_SYNTHETIC=pack:1 l3:2 core:1 pu:1) (1 "
			     "packages, 1 NUMA nodes, 2 L3, 2 cores)"),
		  std::string::npos)
		<< r.err;
	EXPECT_NE(r.err.find("bind core, map-by l3: 0=core:0 1=core:1 2=core:0"), std::string::npos) << r.err;
	r = rmarun({ "-n", "1", "--map-by", "socket", "/bin/true" });
	EXPECT_EQ(r.status, 2);
	EXPECT_NE(r.err.find("--map-by wants core, numa or l3"), std::string::npos) << r.err;
}

/* What each rank finds in RMA_PROGRESS and RMA_PROGRESS_CORE ("-" when unset). */
const char kShowProgress[] = "echo $RMA_RANK ${RMA_PROGRESS:--} ${RMA_PROGRESS_CORE:--}";

TEST_F(RmarunTest, ProgressOptionsReachEveryRank)
{
	std::vector<int> cpus = allowedCpus();
	ASSERT_FALSE(cpus.empty());
	std::string core = std::to_string(cpus.front());
	for (const char *mode : { "none", "thread", "agent" }) {
		CommandResult r = rmarun({ "--progress", mode, "--progress-core", core, "-n", "2", "/bin/sh", "-c",
					   kShowProgress });
		EXPECT_EQ(r.status, 0) << r.err;
		std::string tail = std::string(" ") + mode + " " + core;
		EXPECT_EQ(sortedLines(r.out), (std::vector<std::string>{ "0" + tail, "1" + tail })) << mode;
	}
}

TEST_F(RmarunTest, DefaultProgressCoreIsOneNoRankIsBoundTo)
{
	std::vector<int> cpus = allowedCpus();
	if (cpus.size() < 2)
		GTEST_SKIP() << "needs two CPUs to leave one free";
	/* The mode stays unset (the library's default); the core is chosen. */
	CommandResult r = runCommand({ "/usr/bin/env", "-u", "RMA_PROGRESS", "-u", "RMA_PROGRESS_CORE", rmarun_, "-n",
				       "1", "--bind", "core", "/bin/sh", "-c", kShowProgress });
	EXPECT_EQ(r.status, 0) << r.err;
	EXPECT_EQ(r.out, "0 - " + std::to_string(cpus.back()) + "\n") << "rank 0 is on the first CPU, so the last is free";

	/* Every CPU taken (or unbound ranks): the last CPU, shared. */
	r = runCommand({ "/usr/bin/env", "-u", "RMA_PROGRESS_CORE", rmarun_, "-n", "1", "--bind", "none", "/bin/sh",
			 "-c", kShowProgress });
	EXPECT_EQ(r.status, 0) << r.err;
	EXPECT_EQ(r.out, "0 - " + std::to_string(cpus.back()) + "\n");
}

TEST_F(RmarunTest, ProgressVariablesFromTheEnvironmentPassThrough)
{
	CommandResult r = runCommand({ "/usr/bin/env", "RMA_PROGRESS=agent", "RMA_PROGRESS_CORE=0", rmarun_, "-n", "1",
				       "/bin/sh", "-c", kShowProgress });
	EXPECT_EQ(r.status, 0) << r.err;
	EXPECT_EQ(r.out, "0 agent 0\n");
}

TEST_F(RmarunTest, VerboseReportsTheProgressChoice)
{
	CommandResult r = rmarun({ "-v", "--progress", "agent", "-n", "1", "/bin/true" });
	EXPECT_EQ(r.status, 0) << r.err;
	EXPECT_NE(r.err.find("rmarun: progress agent (--progress); agent cores"), std::string::npos) << r.err;
}

TEST_F(RmarunTest, RefusesBadProgressValuesWithAClearMessage)
{
	struct Case {
		std::vector<std::string> args;
		const char *message;
	} cases[] = {
		{ { "--progress", "fast" }, "--progress wants none, thread or agent, not 'fast'" },
		{ { "--progress", "" }, "--progress wants none, thread or agent" },
		{ { "--progress-core", "one" }, "--progress-core wants a CPU number or list (7, 7,15), not 'one'" },
		{ { "--progress-core", "-1" }, "--progress-core wants a CPU number or list (7, 7,15), not '-1'" },
		{ { "--progress-core", "1-0" }, "--progress-core wants a CPU number or list (7, 7,15), not '1-0'" },
		{ { "--progress-core", "100000" }, "CPU 100000 is not one rmarun may use" },
	};
	for (const Case &k : cases) {
		std::vector<std::string> args = k.args;
		for (const char *a : { "-n", "1", "/bin/true" })
			args.push_back(a);
		CommandResult r = rmarun(args);
		EXPECT_EQ(r.status, 2) << k.message;
		EXPECT_NE(r.err.find(k.message), std::string::npos) << r.err;
		EXPECT_TRUE(r.out.empty());
	}
}

TEST_F(RmarunTest, BadUsageExitsTwoWithAMessage)
{
	std::vector<std::vector<std::string>> bad = {
		{},
		{ "/bin/true" },
		{ "-n" },
		{ "-n", "0", "/bin/true" },
		{ "-n", "two", "/bin/true" },
		{ "-n", "1" },
		{ "-n", "1", "--bind", "socket", "/bin/true" },
		{ "-n", "1", "--timeout", "-1", "/bin/true" },
		{ "-n", "1", "--timeout", "soon", "/bin/true" },
		{ "--no-such-option", "-n", "1", "/bin/true" },
	};
	for (const auto &args : bad) {
		CommandResult r = rmarun(args);
		std::string line;
		for (const auto &arg : args)
			line += arg + " ";
		EXPECT_EQ(r.status, 2) << line;
		EXPECT_NE(r.err.find("rmarun"), std::string::npos) << line << ": " << r.err;
		EXPECT_TRUE(r.out.empty()) << line;
	}
}

TEST_F(RmarunTest, HelpListsEveryOption)
{
	CommandResult r = rmarun({ "--help" });
	EXPECT_EQ(r.status, 0);
	for (const char *option :
	     { "-n, -np, --nranks", "-x VAR[=VALUE]", "--bind", "--map-by", "--report", "--placement FILE", "--tag-output", "--timeout", "--keep-going", "--progress MODE",
	       "--progress-core LIST", "-v, --verbose", "-h, --help", "--version" })
		EXPECT_NE(r.out.find(option), std::string::npos) << option;
}

TEST_F(RmarunTest, VersionNamesTheProgram)
{
	CommandResult r = rmarun({ "--version" });
	EXPECT_EQ(r.status, 0);
	EXPECT_TRUE(r.out.starts_with("rmarun (librma) ")) << r.out;
}

} /* namespace */
} /* namespace librma */

namespace librma {
namespace {

class RmarunLimitsTest : public RmarunTest
{
};

/* Under a low descriptor limit, jobs that fit run, and one that does not says what ran out and what to set. */
TEST_F(RmarunLimitsTest, LowDescriptorLimitIsExplainedNotOpaque)
{
	/* 64 descriptors: enough for 4 ranks (it failed with an opaque status 127 before). */
	CommandResult r = runCommand({ "/bin/sh", "-c", "ulimit -n 64 && exec '" + rmarun_ + "' -n 4 '" + client_ + "'" });
	EXPECT_EQ(r.status, 0) << r.err;
	EXPECT_EQ(sortedLines(r.out).size(), 4u) << r.out << r.err;
	/* 30 descriptors cannot hold 16 ranks: the message names the limit and the fix. */
	r = runCommand({ "/bin/sh", "-c", "ulimit -n 30 && exec '" + rmarun_ + "' -n 16 /bin/sleep 2" });
	EXPECT_EQ(r.status, 127) << r.err;
	EXPECT_NE(r.err.find("Too many open files"), std::string::npos) << r.err;
	EXPECT_NE(r.err.find("RLIMIT_NOFILE"), std::string::npos) << r.err;
	EXPECT_NE(r.err.find("ulimit -n"), std::string::npos) << r.err;
}

/* More ranks than CPUs: one warning line, and the job still runs. */
TEST_F(RmarunLimitsTest, OversubscriptionIsWarnedOnce)
{
	cpu_set_t set;
	ASSERT_EQ(sched_getaffinity(0, sizeof(set), &set), 0);
	int cpus = CPU_COUNT(&set);
	CommandResult r = runCommand({ rmarun_, "-n", std::to_string(cpus + 1), "/bin/true" });
	EXPECT_EQ(r.status, 0) << r.err;
	std::string needle = "rmarun: warning: " + std::to_string(cpus + 1) + " ranks on " + std::to_string(cpus) +
			     " CPUs";
	auto at = r.err.find(needle);
	EXPECT_NE(at, std::string::npos) << r.err;
	EXPECT_EQ(r.err.find("oversubscribes", at + needle.size() + 20), std::string::npos) << "warned twice";
	r = runCommand({ rmarun_, "-n", std::to_string(cpus), "/bin/true" });
	EXPECT_EQ(r.err.find("oversubscribes"), std::string::npos) << r.err;
}

/* mpiexec users' habits: -np N, and -x VAR[=VALUE] into the ranks' environment. */
TEST_F(RmarunLimitsTest, MpiexecSpellingsNpAndX)
{
	setenv("RMARUN_TEST_PASSED", "through", 1);
	CommandResult r = runCommand({ rmarun_, "-np", "2", "-x", "RMARUN_TEST_SET=a=b", "-x", "RMARUN_TEST_PASSED",
				       "/bin/sh", "-c", "echo $RMA_SIZE $RMARUN_TEST_SET $RMARUN_TEST_PASSED", "-np" });
	unsetenv("RMARUN_TEST_PASSED");
	EXPECT_EQ(r.status, 0) << r.err;
	EXPECT_EQ(sortedLines(r.out), (std::vector<std::string>{ "2 a=b through", "2 a=b through" })) << r.out;
	/* -x of an unset variable is a usage error, and --help lists both. */
	r = runCommand({ rmarun_, "-n", "1", "-x", "RMARUN_TEST_UNSET_VARIABLE", "/bin/true" });
	EXPECT_EQ(r.status, 2);
	EXPECT_NE(r.err.find("RMARUN_TEST_UNSET_VARIABLE is not set"), std::string::npos) << r.err;
	r = runCommand({ rmarun_, "--help" });
	EXPECT_NE(r.out.find("-np"), std::string::npos);
	EXPECT_NE(r.out.find("-x VAR[=VALUE]"), std::string::npos);
}

} /* namespace */
} /* namespace librma */
