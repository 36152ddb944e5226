/* SPDX-License-Identifier: MIT */
/*
 * What the tests that run jobs across simulated hosts share: a GoogleTest
 * fixture around tools/netns/rma-netns (namespaces as hosts, mpirun.openmpi
 * or Slurm's srun inside host 1), with its prefix per build directory, its clean-up on
 * SIGTERM/SIGINT, and checks that `up` made and `down` removed exactly our
 * namespaces. Used by harness_test.cpp and remote_rma_test.cpp.
 *
 * A test's fixture derives from NetnsFixture and names, with
 * programVariable(), the environment variable (set by meson test) that
 * holds the path of its rank program; that path also keys the prefix.
 * SetUp skips the test when librma was built without PMIx, when RMA_NETNS or
 * that variable is unset, or when not root; bringUp() skips it where the
 * harness cannot run (exit 77: no mpirun.openmpi, no network namespaces).
 */
#pragma once

#include <signal.h>
#include <unistd.h>

#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <sstream>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "support/multiproc.h"

#include "config.h"

namespace librma::test::netns {

/* How many times @needle occurs in @text (overlaps counted). */
inline int countOf(const std::string &text, const std::string &needle)
{
	int n = 0;
	for (std::size_t at = text.find(needle); at != std::string::npos; at = text.find(needle, at + 1))
		++n;
	return n;
}

/*
 * The "trap ... INT TERM" of these tests: when meson's timeout or ^C stops
 * one mid-run (SIGTERM/SIGINT to the test's process group, SIGKILL soon
 * after), a child in a session of its own runs `rma-netns down PREFIX`, so
 * the namespaces and the mpirun inside them go at once, not at the next
 * run's setup. Only async-signal-safe calls in the handler: the arguments
 * are prepared in armCleanup().
 */
inline char gNetns[4096];
inline char gPrefix[64];

extern "C" inline void netnsCleanupAndDie(int sig)
{
	pid_t pid = fork();
	if (pid == 0) {
		setsid();
		char down[] = "down";
		char *argv[] = { gNetns, down, gPrefix, nullptr };
		execv(gNetns, argv);
		_exit(127);
	}
	signal(sig, SIG_DFL);
	raise(sig);
}

inline void armCleanup(const std::string &netns, const std::string &prefix)
{
	if (netns.size() >= sizeof(gNetns) || prefix.size() >= sizeof(gPrefix))
		return;
	std::memcpy(gNetns, netns.c_str(), netns.size() + 1);
	std::memcpy(gPrefix, prefix.c_str(), prefix.size() + 1);
	struct sigaction action = {};
	action.sa_handler = netnsCleanupAndDie;
	sigemptyset(&action.sa_mask);
	sigaction(SIGTERM, &action, nullptr);
	sigaction(SIGINT, &action, nullptr);
}

inline void disarmCleanup()
{
	signal(SIGTERM, SIG_DFL);
	signal(SIGINT, SIG_DFL);
}

/*
 * The harness prefix for @path (a program of this build directory): stable
 * across runs (so setup removes what a killed run left), different between
 * build directories and worktrees (so parallel runs do not meet), ending in
 * a letter as the harness requires.
 */
inline std::string prefixFor(const std::string &path)
{
	uint64_t hash = 0xcbf29ce484222325ull;
	for (char c : path) {
		hash ^= static_cast<unsigned char>(c);
		hash *= 0x100000001b3ull;
	}
	return "rmt" + std::to_string(hash % 10000) + "h";
}

class NetnsFixture : public testing::Test
{
protected:
	/* The environment variable naming this test's rank program (meson test sets it). */
	virtual const char *programVariable() const = 0;

	void SetUp() override
	{
#ifndef HAVE_PMIX
		GTEST_SKIP() << "librma was built without PMIx (libpmix-dev)";
#endif
		const char *netns = std::getenv("RMA_NETNS");
		const char *program = std::getenv(programVariable());
		if (!netns || !program)
			GTEST_SKIP() << "RMA_NETNS and " << programVariable()
				     << " name the harness and the program (meson test sets them)";
		if (geteuid() != 0)
			GTEST_SKIP() << "network namespaces need root";
		netns_ = netns;
		program_ = program;
		prefix_ = prefixFor(program_);
		const char *tmp = std::getenv("TMPDIR");
		dir_ = std::string(tmp && *tmp ? tmp : "/tmp") + "/" + prefix_;
		unsetenv("RMA_BOOT");
		unsetenv("RMA_BOOT_FD");
		/* A run killed before its TearDown left these: they are ours (same build directory). */
		runCommand({ netns_, "down", prefix_ }, 60);
		armCleanup(netns_, prefix_);
	}

	void TearDown() override
	{
		if (!prefix_.empty())
			runCommand({ netns_, "down", prefix_ }, 60);
		disarmCleanup();
	}

	/* rma-netns up: @hosts hosts, checked; skips the test where the harness cannot run. */
	void bringUp(int hosts)
	{
		CommandResult up =
			runCommand({ netns_, "up", "--hosts", std::to_string(hosts), "--prefix", prefix_ }, 60);
		if (up.status == 77)
			GTEST_SKIP() << up.err;
		ASSERT_EQ(up.status, 0) << up.out << up.err;
		EXPECT_NE(up.out.find("SUBNET=10.77."), std::string::npos) << up.out;
		/* 3 hosts and more: one more namespace, the bridge's. */
		EXPECT_EQ(ownNamespaces().size(), std::size_t(hosts >= 3 ? hosts + 1 : hosts));
		EXPECT_EQ(access((dir_ + "/nsagent").c_str(), X_OK), 0) << dir_;
		EXPECT_EQ(access((dir_ + "/hostfile").c_str(), R_OK), 0) << dir_;
	}

	/* rma-netns run PREFIX -- @mpirunArgs: mpirun.openmpi inside host 1. */
	CommandResult run(const std::vector<std::string> &mpirunArgs, double timeoutSeconds)
	{
		std::vector<std::string> args = { netns_, "run", prefix_, "--" };
		args.insert(args.end(), mpirunArgs.begin(), mpirunArgs.end());
		return runCommand(args, timeoutSeconds);
	}

	/*
	 * rma-netns srun PREFIX -- @srunArgs: srun --mpi=pmix inside host 1,
	 * Slurm started in the hosts on first use. Status 77: Slurm or its
	 * PMIx plugin is not installed (the caller skips).
	 */
	CommandResult srun(const std::vector<std::string> &srunArgs, double timeoutSeconds)
	{
		std::vector<std::string> args = { netns_, "srun", prefix_, "--" };
		args.insert(args.end(), srunArgs.begin(), srunArgs.end());
		return runCommand(args, timeoutSeconds);
	}

	/* rma-netns down, and nothing of ours is left. */
	void takeDown()
	{
		CommandResult down = runCommand({ netns_, "down", prefix_ }, 60);
		EXPECT_EQ(down.status, 0) << down.out << down.err;
		EXPECT_TRUE(ownNamespaces().empty());
		EXPECT_NE(access(dir_.c_str(), F_OK), 0) << dir_ << " is still there";
	}

	/* The namespaces of @prefix (ours by default) that exist: prefix<digits> and prefix"br". */
	std::vector<std::string> ownNamespaces(std::string prefix = "")
	{
		if (prefix.empty())
			prefix = prefix_;
		CommandResult r = runCommand({ "ip", "netns", "list" }, 30);
		EXPECT_EQ(r.status, 0) << r.err;
		std::vector<std::string> own;
		std::istringstream lines(r.out);
		for (std::string line; std::getline(lines, line);) {
			std::string name = line.substr(0, line.find(' '));
			if (name.rfind(prefix, 0) != 0)
				continue;
			std::string rest = name.substr(prefix.size());
			if (rest == "br" ||
			    (!rest.empty() && rest.find_first_not_of("0123456789") == std::string::npos))
				own.push_back(name);
		}
		return own;
	}

	std::string netns_;
	/* The rank program; its path keys prefix_. */
	std::string program_;
	std::string prefix_;
	std::string dir_;
};

} /* namespace librma::test::netns */
