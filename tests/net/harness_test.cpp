/* SPDX-License-Identifier: MIT */
/*
 * The namespace harness (tools/netns/rma-netns) and the PMIx bootstrap
 * across its simulated hosts: 2 hosts (a veth pair) and 3 hosts (a bridge),
 * 2 ranks each, started by mpirun.openmpi inside host 1. The ranks
 * (harness_hello) check host indices against their network namespaces and
 * pass descriptors among local ranks; this test checks what they print and
 * that `down` leaves no namespace of its prefix behind. RmaNetnsTest checks
 * the harness alone: down spares other prefixes, link-cut/link-restore.
 *
 * Skipped when not root, without PMIx, without mpirun.openmpi, or where
 * network namespaces cannot be made (the harness exits 77).
 */
#include <signal.h>
#include <unistd.h>

#include <cstdlib>
#include <cstring>
#include <sstream>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "support/multiproc.h"

#include "config.h"

namespace librma {
namespace {

using test::CommandResult;
using test::runCommand;

constexpr int kRanksPerHost = 2;

/*
 * The "trap ... INT TERM" of this test: when meson's timeout or ^C stops it
 * mid-run (SIGTERM/SIGINT to the test's process group, SIGKILL soon after),
 * a child in a session of its own runs `rma-netns down PREFIX`, so the
 * namespaces and the mpirun inside them go at once, not at the next run's
 * setup. Only async-signal-safe calls in the handler: the arguments are
 * prepared in armCleanup().
 */
char gNetns[4096];
char gPrefix[64];

extern "C" void cleanupAndDie(int sig)
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

void armCleanup(const std::string &netns, const std::string &prefix)
{
	if (netns.size() >= sizeof(gNetns) || prefix.size() >= sizeof(gPrefix))
		return;
	std::memcpy(gNetns, netns.c_str(), netns.size() + 1);
	std::memcpy(gPrefix, prefix.c_str(), prefix.size() + 1);
	struct sigaction action = {};
	action.sa_handler = cleanupAndDie;
	sigemptyset(&action.sa_mask);
	sigaction(SIGTERM, &action, nullptr);
	sigaction(SIGINT, &action, nullptr);
}

void disarmCleanup()
{
	signal(SIGTERM, SIG_DFL);
	signal(SIGINT, SIG_DFL);
}

int countOf(const std::string &text, const std::string &needle)
{
	int n = 0;
	for (std::size_t at = text.find(needle); at != std::string::npos; at = text.find(needle, at + 1))
		++n;
	return n;
}

/* Ascending ranks as the verbose line writes them: "0-1,4-5", "2-5", "3". */
std::string rangesOf(const std::vector<int> &ranks)
{
	std::string text;
	for (std::size_t i = 0; i < ranks.size();) {
		std::size_t j = i;
		while (j + 1 < ranks.size() && ranks[j + 1] == ranks[j] + 1)
			++j;
		text += (text.empty() ? "" : ",") + std::to_string(ranks[i]);
		if (j > i)
			text += "-" + std::to_string(ranks[j]);
		i = j + 1;
	}
	return text;
}

/*
 * The harness prefix of this build directory: stable across runs (so setup
 * removes what a killed run left), different between build directories and
 * worktrees (so parallel runs do not meet), ending in a letter as the
 * harness requires.
 */
std::string prefixFor(const std::string &path)
{
	uint64_t hash = 0xcbf29ce484222325ull;
	for (char c : path) {
		hash ^= static_cast<unsigned char>(c);
		hash *= 0x100000001b3ull;
	}
	return "rmt" + std::to_string(hash % 10000) + "h";
}

class HarnessFixture : public testing::Test
{
protected:
	void SetUp() override
	{
#ifndef HAVE_PMIX
		GTEST_SKIP() << "librma was built without PMIx (libpmix-dev)";
#endif
		const char *netns = std::getenv("RMA_NETNS");
		const char *hello = std::getenv("RMA_HARNESS_HELLO");
		if (!netns || !hello)
			GTEST_SKIP() << "RMA_NETNS and RMA_HARNESS_HELLO name the harness and the program (meson test "
					"sets them)";
		if (geteuid() != 0)
			GTEST_SKIP() << "network namespaces need root";
		netns_ = netns;
		hello_ = hello;
		prefix_ = prefixFor(hello_);
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

	void runHello(int hosts, bool roundRobin);

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
	std::string hello_;
	std::string prefix_;
	std::string dir_;
};

/*
 * harness_hello on @hosts hosts x 2 ranks, placed by slot (ranks 2h, 2h+1 on
 * host h: the hostfile gives each host 2 slots) or round-robin (--map-by
 * node: ranks h and h + hosts). Host h is namespace prefix<h+1> either way:
 * host indices follow the first rank of each host.
 */
void HarnessFixture::runHello(int hosts, bool roundRobin)
{
	const int n = hosts * kRanksPerHost;
	bringUp(hosts);
	if (IsSkipped() || HasFatalFailure())
		return;

	std::vector<std::string> args = { netns_, "run", prefix_, "--", "-np", std::to_string(n) };
	if (roundRobin)
		args.insert(args.end(), { "--map-by", "node" });
	args.insert(args.end(), { hello_, std::to_string(hosts) });
	CommandResult run = runCommand(args, 150);
	EXPECT_EQ(run.status, 0) << "(124: mpirun ran out of time)\n" << run.out << run.err;
	for (int r = 0; r < n; ++r) {
		const int h = roundRobin ? r % hosts : r / kRanksPerHost;
		const std::string peers =
			roundRobin ? std::to_string(h) + "," + std::to_string(h + hosts)
				   : std::to_string(h * kRanksPerHost) + "," + std::to_string(h * kRanksPerHost + 1);
		const std::string rank = std::to_string(r);
		const std::string hello = "hello rank " + rank + " of " + std::to_string(n) + ": host " +
					  std::to_string(h) + " of " + std::to_string(hosts) + ", local peers " +
					  peers + ", netns ";
		EXPECT_EQ(countOf(run.out, hello), 1) << hello << "\n" << run.out << run.err;
		std::size_t at = run.out.find(hello);
		if (at != std::string::npos) {
			std::string line = run.out.substr(at, run.out.find('\n', at) - at);
			EXPECT_NE(line.find(", hostname " + prefix_ + std::to_string(h + 1)), std::string::npos)
				<< line;
		}
		EXPECT_EQ(countOf(run.out, "rank " + rank + ": fds among local peers ok"), 1) << run.out << run.err;
		EXPECT_EQ(countOf(run.out, "rank " + rank + ": fds across hosts refused ok"), 1) << run.out << run.err;
		EXPECT_EQ(countOf(run.out, "rank " + rank + ": done"), 1) << run.out << run.err;
	}
	takeDown();
}

class HarnessHelloTest : public HarnessFixture, public testing::WithParamInterface<int>
{
};

TEST_P(HarnessHelloTest, RanksOnEachNamespaceHostShareOneHostAndItsDescriptors)
{
	runHello(GetParam(), false);
}

TEST_P(HarnessHelloTest, RoundRobinPlacementGivesInterleavedLocalPeers)
{
	runHello(GetParam(), true);
}

/*
 * The public path: rma_init succeeds across hosts (each host's first rank
 * makes that host's doorbell segment) and its RMA_VERBOSE line names the
 * same hosts. The ring's window spans hosts, which needs the transport
 * (increments G-H), so the job's status is not checked.
 */
TEST_P(HarnessHelloTest, RmaInitNamesTheSameHostsInItsVerboseLine)
{
	const char *ring = std::getenv("RMA_PMIX_RING");
	if (!ring)
		GTEST_SKIP() << "RMA_PMIX_RING names the program (meson test sets it)";
	const int hosts = GetParam();
	const int n = hosts * kRanksPerHost;
	bringUp(hosts);
	if (IsSkipped() || HasFatalFailure())
		return;

	CommandResult run = runCommand(
		{ netns_, "run", prefix_, "--", "-np", std::to_string(n), "-x", "RMA_VERBOSE=1", ring }, 150);
	EXPECT_NE(run.status, 124) << "mpirun ran out of time\n" << run.out << run.err;
	EXPECT_EQ(countOf(run.err, "rma_init failed"), 0) << run.err;
	for (int r = 0; r < n; ++r) {
		const int h = r / kRanksPerHost;
		const int peer = r ^ 1;
		EXPECT_EQ(countOf(run.err, "librma: rank " + std::to_string(r) + " of " + std::to_string(n) + " on " +
						   prefix_ + std::to_string(h + 1) + " "),
			  1)
			<< run.err;
		if (r % kRanksPerHost == 0) {
			EXPECT_EQ(countOf(run.err, "(host " + std::to_string(h) + " of " + std::to_string(hosts) +
							   ", bootstrap pmix): shared memory with "),
				  kRanksPerHost)
				<< run.err;
		}
		std::vector<int> remote;
		for (int q = 0; q < n; ++q) {
			if (q / kRanksPerHost != h)
				remote.push_back(q);
		}
		EXPECT_EQ(countOf(run.err, ", bootstrap pmix): shared memory with " + std::to_string(peer) +
						   "; TCP with " + rangesOf(remote)),
			  1)
			<< rangesOf(remote) << "\n"
			<< run.err;
	}
	takeDown();
}

/* 2 hosts: a veth pair; 3 hosts: a bridge in its own namespace. */
INSTANTIATE_TEST_SUITE_P(Hosts, HarnessHelloTest, testing::Values(2, 3),
			 [](const testing::TestParamInfo<int> &info) { return std::to_string(info.param); });

class RmaNetnsTest : public HarnessFixture
{
};

/*
 * Another harness whose prefix starts with ours (ours + "x") keeps its
 * namespaces through our down; link-cut and link-restore take host 2's eth0
 * down and up. No mpirun.
 */
TEST_F(RmaNetnsTest, DownLeavesOtherPrefixesAloneAndLinkCutTakesEth0Down)
{
	const std::string other = prefix_ + "x";
	runCommand({ netns_, "down", other }, 60);
	bringUp(3);
	if (IsSkipped() || HasFatalFailure())
		return;
	CommandResult up = runCommand({ netns_, "up", "--hosts", "2", "--prefix", other }, 60);
	ASSERT_EQ(up.status, 0) << up.out << up.err;
	EXPECT_EQ(ownNamespaces(other).size(), 2u);

	auto eth0 = [&](const std::string &ns) {
		return runCommand({ "ip", "-n", ns, "link", "show", "eth0" }, 30).out;
	};
	CommandResult cut = runCommand({ netns_, "link-cut", prefix_, "2" }, 30);
	EXPECT_EQ(cut.status, 0) << cut.err;
	EXPECT_NE(eth0(prefix_ + "2").find("state DOWN"), std::string::npos) << eth0(prefix_ + "2");
	EXPECT_NE(eth0(prefix_ + "1").find("state UP"), std::string::npos) << eth0(prefix_ + "1");
	CommandResult restore = runCommand({ netns_, "link-restore", prefix_, "2" }, 30);
	EXPECT_EQ(restore.status, 0) << restore.err;
	EXPECT_NE(eth0(prefix_ + "2").find("state UP"), std::string::npos) << eth0(prefix_ + "2");

	takeDown();
	EXPECT_EQ(ownNamespaces(other).size(), 2u) << "down " << prefix_ << " took " << other << "'s namespaces";
	CommandResult down = runCommand({ netns_, "down", other }, 60);
	EXPECT_EQ(down.status, 0) << down.err;
	EXPECT_TRUE(ownNamespaces(other).empty());
}

} /* namespace */
} /* namespace librma */
