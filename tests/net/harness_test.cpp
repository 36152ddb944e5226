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
#include <cstdlib>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "net/netns_fixture.h"
#include "support/multiproc.h"

namespace librma {
namespace {

using test::CommandResult;
using test::runCommand;
using test::netns::countOf;
using test::netns::NetnsFixture;

constexpr int kRanksPerHost = 2;

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

/* The harness with harness_hello (RMA_HARNESS_HELLO) as its program: its path keys the prefix. */
class HarnessFixture : public NetnsFixture
{
protected:
	const char *programVariable() const override { return "RMA_HARNESS_HELLO"; }

	void runHello(int hosts, bool roundRobin);
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

	std::vector<std::string> args = { "-np", std::to_string(n) };
	if (roundRobin)
		args.insert(args.end(), { "--map-by", "node" });
	args.insert(args.end(), { program_, std::to_string(hosts) });
	CommandResult run = this->run(args, 150);
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

	CommandResult run = this->run({ "-np", std::to_string(n), "-x", "RMA_VERBOSE=1", ring }, 150);
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
