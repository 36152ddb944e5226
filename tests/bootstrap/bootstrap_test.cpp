/* SPDX-License-Identifier: MIT */
/*
 * Bootstrap::allgather() between real ranks forked by the launcher. Each
 * body runs in a rank; its assertions fail the job (runRanks() != 0).
 */
#include "bootstrap/bootstrap.h"

#include <signal.h>
#include <sys/mman.h>
#include <unistd.h>

#include <chrono>
#include <cstring>
#include <numeric>
#include <set>
#include <string>
#include <thread>

#include <gtest/gtest.h>

#include "error/error.h"
#include "support/multiproc.h"

namespace librma {
namespace {

using test::runRanks;

/* Join the job this rank belongs to; on failure the calling body returns. */
#define JOIN(boot)                                                                                                     \
	auto boot##Result = Bootstrap::fromEnvironment();                                                              \
	ASSERT_TRUE(boot##Result.ok()) << errorMessage(boot##Result.code());                                           \
	Bootstrap &boot = **boot##Result

std::vector<int> worldOf(const Bootstrap &b)
{
	std::vector<int> world(b.size());
	std::iota(world.begin(), world.end(), 0);
	return world;
}

/* Byte @i of rank @rank's contribution. */
std::byte pattern(int rank, std::size_t i)
{
	return std::byte((rank * 131 + i * 7 + (i >> 8)) & 0xff);
}

std::vector<std::byte> contribution(int rank, std::size_t len)
{
	std::vector<std::byte> data(len);
	for (std::size_t i = 0; i < len; ++i)
		data[i] = pattern(rank, i);
	return data;
}

/* Check that @data holds each member's contribution, in member order. */
void expectGathered(const std::vector<std::byte> &data, std::span<const int> members, std::size_t len)
{
	ASSERT_EQ(data.size(), members.size() * len);
	for (std::size_t m = 0; m < members.size(); ++m) {
		for (std::size_t i = 0; i < len; ++i) {
			if (data[m * len + i] != pattern(members[m], i)) {
				ADD_FAILURE() << "byte " << i << " of member " << m << " (rank " << members[m]
					      << ") is wrong";
				return;
			}
		}
	}
}

UniqueFd fileWith(const std::string &text)
{
	UniqueFd fd(memfd_create("bootstrap-test", MFD_CLOEXEC));
	if (fd.isValid() && write(fd.get(), text.data(), text.size()) != ssize_t(text.size()))
		fd.reset();
	return fd;
}

std::string contentOf(int fd)
{
	char buf[64] = {};
	ssize_t n = pread(fd, buf, sizeof(buf), 0);
	return n > 0 ? std::string(buf, n) : std::string();
}

TEST(BootstrapTest, RanksKnowRankSizeAndEveryPid)
{
	int status = runRanks(3, [](int rank) {
		JOIN(b);
		EXPECT_EQ(b.rank(), rank);
		EXPECT_EQ(b.size(), 3);
		EXPECT_EQ(b.pid(rank), getpid());
		std::set<pid_t> pids;
		for (int r = 0; r < 3; ++r) {
			pids.insert(b.pid(r));
			EXPECT_EQ(b.host(r), 0);
			/* A live process: no peer can leave before the barrier below. */
			EXPECT_EQ(kill(b.pid(r), 0), 0) << "rank " << r;
		}
		EXPECT_EQ(pids.size(), 3u);
		GatherResult out;
		EXPECT_EQ(b.allgather(1, 1, worldOf(b), rank, {}, {}, out), RMA_SUCCESS);
	});
	EXPECT_EQ(status, 0);
}

class AllgatherTest : public testing::TestWithParam<int>
{
};

TEST_P(AllgatherTest, GathersEveryContributionInMemberOrder)
{
	int status = runRanks(GetParam(), [](int rank) {
		JOIN(b);
		std::vector<int> world = worldOf(b);
		std::vector<std::byte> mine = contribution(rank, 40);
		GatherResult out;
		ASSERT_EQ(b.allgather(1, 1, world, rank, mine, {}, out), RMA_SUCCESS);
		expectGathered(out.data, world, 40);
		EXPECT_EQ(out.fdCounts, std::vector<int>(world.size(), 0));
		EXPECT_TRUE(out.fds.empty());

		/* Group order other than rank order: reversed. */
		std::vector<int> reversed(world.rbegin(), world.rend());
		int myIndex = b.size() - 1 - rank;
		ASSERT_EQ(b.allgather(1, 2, reversed, myIndex, mine, {}, out), RMA_SUCCESS);
		expectGathered(out.data, reversed, 40);

		/* No data at all: a barrier. */
		ASSERT_EQ(b.allgather(1, 3, world, rank, {}, {}, out), RMA_SUCCESS);
		EXPECT_TRUE(out.data.empty());
	});
	EXPECT_EQ(status, 0);
}

INSTANTIATE_TEST_SUITE_P(Ranks, AllgatherTest, testing::Values(1, 2, 4),
			 [](const testing::TestParamInfo<int> &info) { return std::to_string(info.param); });

TEST(BootstrapTest, AllgatherCarriesMegabytes)
{
	/* 4 x 512 KiB: each reply is 2 MiB, many packets each way. */
	constexpr std::size_t kLen = 512 * 1024;
	int status = runRanks(4, [](int rank) {
		JOIN(b);
		std::vector<int> world = worldOf(b);
		GatherResult out;
		ASSERT_EQ(b.allgather(1, 1, world, rank, contribution(rank, kLen), {}, out), RMA_SUCCESS);
		expectGathered(out.data, world, kLen);
	});
	EXPECT_EQ(status, 0);
}

TEST(BootstrapTest, EveryRankReadsEveryPeersDescriptors)
{
	int status = runRanks(4, [](int rank) {
		JOIN(b);
		/* Rank r gives r + 1 files: "r:0", "r:1", ... */
		std::vector<UniqueFd> files;
		std::vector<int> fds;
		for (int i = 0; i <= rank; ++i) {
			files.push_back(fileWith(std::to_string(rank) + ":" + std::to_string(i)));
			ASSERT_TRUE(files.back().isValid());
			fds.push_back(files.back().get());
		}
		std::vector<int> world = worldOf(b);
		GatherResult out;
		ASSERT_EQ(b.allgather(1, 1, world, rank, {}, fds, out), RMA_SUCCESS);
		ASSERT_EQ(out.fdCounts, (std::vector<int>{ 1, 2, 3, 4 }));
		ASSERT_EQ(out.fds.size(), 10u);
		std::size_t next = 0;
		for (int r = 0; r < 4; ++r) {
			for (int i = 0; i <= r; ++i)
				EXPECT_EQ(contentOf(out.fds[next++].get()),
					  std::to_string(r) + ":" + std::to_string(i));
		}
	});
	EXPECT_EQ(status, 0);
}

TEST(BootstrapTest, PassesMoreDescriptorsThanOnePacketHolds)
{
	constexpr int kMany = 300; /* over the 250 per packet */
	int status = runRanks(2, [](int rank) {
		JOIN(b);
		int count = rank == 0 ? kMany : 1;
		std::vector<UniqueFd> files;
		std::vector<int> fds;
		for (int i = 0; i < count; ++i) {
			files.push_back(fileWith(std::to_string(rank) + "/" + std::to_string(i)));
			ASSERT_TRUE(files.back().isValid());
			fds.push_back(files.back().get());
		}
		std::vector<int> world = worldOf(b);
		GatherResult out;
		ASSERT_EQ(b.allgather(1, 1, world, rank, {}, fds, out), RMA_SUCCESS);
		ASSERT_EQ(out.fdCounts, (std::vector<int>{ kMany, 1 }));
		ASSERT_EQ(out.fds.size(), std::size_t(kMany + 1));
		for (int i = 0; i < kMany; ++i)
			EXPECT_EQ(contentOf(out.fds[i].get()), "0/" + std::to_string(i));
		EXPECT_EQ(contentOf(out.fds[kMany].get()), "1/0");
	});
	EXPECT_EQ(status, 0);
}

TEST(BootstrapTest, ConcurrentCollectivesOnOverlappingSubsets)
{
	/*
	 * A = ctx 1 over {0,1,2}; B = ctx 2 over {3,1,2} (group order differs
	 * from rank order); C = ctx 3 over {0,3}; all with seq 7. Rank 3
	 * waits in B while A runs, rank 0 waits in C while B runs.
	 */
	int status = runRanks(4, [](int rank) {
		JOIN(b);
		const std::vector<int> a = { 0, 1, 2 }, bMembers = { 3, 1, 2 }, c = { 0, 3 };
		auto index = [rank](const std::vector<int> &members) {
			return int(std::find(members.begin(), members.end(), rank) - members.begin());
		};
		std::vector<std::byte> mine = contribution(rank, 16);
		GatherResult out;
		if (rank != 3) {
			ASSERT_EQ(b.allgather(1, 7, a, index(a), mine, {}, out), RMA_SUCCESS);
			expectGathered(out.data, a, 16);
		}
		if (rank != 0) {
			ASSERT_EQ(b.allgather(2, 7, bMembers, index(bMembers), mine, {}, out), RMA_SUCCESS);
			expectGathered(out.data, bMembers, 16);
		}
		if (rank == 0 || rank == 3) {
			ASSERT_EQ(b.allgather(3, 7, c, index(c), mine, {}, out), RMA_SUCCESS);
			expectGathered(out.data, c, 16);
		}
	});
	EXPECT_EQ(status, 0);
}

TEST(BootstrapTest, InstanceIdsAreSharedByMembersAndUniqueAcrossInstances)
{
	int status = runRanks(4, [](int rank) {
		JOIN(b);
		std::vector<int> world = worldOf(b);
		std::vector<int> pair = rank < 2 ? std::vector<int>{ 0, 1 } : std::vector<int>{ 2, 3 };
		uint64_t ids[3];
		GatherResult out;
		ASSERT_EQ(b.allgather(1, 1, world, rank, {}, {}, out), RMA_SUCCESS);
		ids[0] = out.instance;
		ASSERT_EQ(b.allgather(1, 2, world, rank, {}, {}, out), RMA_SUCCESS);
		ids[1] = out.instance;
		ASSERT_EQ(b.allgather(2 + rank / 2, 1, pair, rank % 2, {}, {}, out), RMA_SUCCESS);
		ids[2] = out.instance;

		ASSERT_EQ(b.allgather(9, 1, world, rank, std::as_bytes(std::span(ids)), {}, out), RMA_SUCCESS);
		std::vector<uint64_t> all(12);
		std::memcpy(all.data(), out.data.data(), out.data.size());
		for (int r = 0; r < 4; ++r) {
			EXPECT_EQ(all[3 * r + 0], all[0]);
			EXPECT_EQ(all[3 * r + 1], all[1]);
		}
		EXPECT_EQ(all[3 * 0 + 2], all[3 * 1 + 2]);
		EXPECT_EQ(all[3 * 2 + 2], all[3 * 3 + 2]);
		std::set<uint64_t> distinct = { all[0], all[1], all[2], all[8] };
		EXPECT_EQ(distinct.size(), 4u);
		EXPECT_EQ(distinct.count(0), 0u);
	});
	EXPECT_EQ(status, 0);
}

TEST(BootstrapTest, LengthMismatchFailsEveryMemberAndTheJobGoesOn)
{
	int status = runRanks(2, [](int rank) {
		JOIN(b);
		std::vector<int> world = worldOf(b);
		GatherResult out;
		int rc = b.allgather(1, 1, world, rank, contribution(rank, rank == 0 ? 8 : 16), {}, out);
		EXPECT_EQ(errorClass(rc), RMA_ERR_INTERN);
		EXPECT_NE(errorMessage(rc).find("lengths must match"), std::string::npos) << errorMessage(rc);
		EXPECT_TRUE(out.data.empty());

		ASSERT_EQ(b.allgather(1, 2, world, rank, contribution(rank, 8), {}, out), RMA_SUCCESS);
		expectGathered(out.data, world, 8);
	});
	EXPECT_EQ(status, 0);
}

TEST(BootstrapTest, MemberListMismatchFailsEveryMember)
{
	int status = runRanks(3, [](int rank) {
		JOIN(b);
		GatherResult out;
		if (rank != 0) {
			/* Rank 2 believes rank 0 is not in it; rank 0 does not take part. */
			std::vector<int> members = rank == 2 ? std::vector<int>{ 1, 2 } : std::vector<int>{ 0, 1, 2 };
			int rc = b.allgather(1, 1, members, 1, {}, {}, out);
			EXPECT_EQ(errorClass(rc), RMA_ERR_INTERN) << errorMessage(rc);
			EXPECT_NE(errorMessage(rc).find("gave members"), std::string::npos) << errorMessage(rc);
		}
		/* Keeps rank 0 alive until the others are done (else they would see it gone). */
		EXPECT_EQ(b.allgather(2, 1, worldOf(b), rank, {}, {}, out), RMA_SUCCESS);
	});
	EXPECT_EQ(status, 0);
}

TEST(BootstrapTest, PendingAllgatherFailsWhenAMemberExits)
{
	int status = runRanks(3, [](int rank) {
		JOIN(b);
		if (rank == 2) {
			/* Leave while the others wait for us. */
			std::this_thread::sleep_for(std::chrono::milliseconds(200));
			return;
		}
		auto start = std::chrono::steady_clock::now();
		GatherResult out;
		int rc = b.allgather(1, 1, worldOf(b), rank, {}, {}, out);
		EXPECT_EQ(errorClass(rc), RMA_ERR_PROC_FAILED);
		EXPECT_NE(errorMessage(rc).find("rank 2"), std::string::npos) << errorMessage(rc);
		EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(5));
	});
	EXPECT_EQ(status, 0);
}

TEST(BootstrapTest, AllgatherNamingAnExitedRankFailsAtOnce)
{
	int status = runRanks(2, [](int rank) {
		JOIN(b);
		if (rank == 1)
			return;
		/* The launcher reaps rank 1 (then kill() fails) before reading our request. */
		auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
		while (kill(b.pid(1), 0) == 0 && std::chrono::steady_clock::now() < deadline)
			std::this_thread::sleep_for(std::chrono::milliseconds(2));
		GatherResult out;
		int rc = b.allgather(1, 1, worldOf(b), rank, {}, {}, out);
		EXPECT_EQ(errorClass(rc), RMA_ERR_PROC_FAILED);
		EXPECT_NE(errorMessage(rc).find("rank 1"), std::string::npos) << errorMessage(rc);
		/* A collective without it still works. */
		int self[] = { 0 };
		EXPECT_EQ(b.allgather(1, 2, self, 0, {}, {}, out), RMA_SUCCESS);
	});
	EXPECT_EQ(status, 0);
}

/*
 * consistentAllgather(): every member on this host, so the host's board
 * (bootstrap/host_board.h) serves it, descriptors reopened through /proc.
 * RMA_BOOT_BOARD=1: even with more ranks than CPUs (the ranks inherit it).
 */
class BoardTest : public testing::Test
{
protected:
	void SetUp() override { setenv("RMA_BOOT_BOARD", "1", 1); }
	void TearDown() override { unsetenv("RMA_BOOT_BOARD"); }
};

TEST_F(BoardTest, GathersDataAndDescriptorsInMemberOrderWithOneInstance)
{
	int status = runRanks(4, [](int rank) {
		JOIN(b);
		std::vector<UniqueFd> files;
		std::vector<int> fds;
		for (int i = 0; i <= rank; ++i) {
			files.push_back(fileWith(std::to_string(rank) + ":" + std::to_string(i)));
			ASSERT_TRUE(files.back().isValid());
			fds.push_back(files.back().get());
		}
		std::vector<int> world = worldOf(b);
		std::vector<std::byte> mine = contribution(rank, 200);
		GatherResult out;
		ASSERT_EQ(b.consistentAllgather(1, 1, world, rank, mine, fds, out), RMA_SUCCESS);
		expectGathered(out.data, world, 200);
		ASSERT_EQ(out.fdCounts, (std::vector<int>{ 1, 2, 3, 4 }));
		ASSERT_EQ(out.fds.size(), 10u);
		std::size_t next = 0;
		for (int r = 0; r < 4; ++r)
			for (int i = 0; i <= r; ++i)
				EXPECT_EQ(contentOf(out.fds[next++].get()), std::to_string(r) + ":" + std::to_string(i));
		/* The same instance at every member (the hub is member 0: rank 0), a new one each time. */
		uint64_t ids[2] = { out.instance, 0 };
		std::vector<int> reversed(world.rbegin(), world.rend());
		ASSERT_EQ(b.consistentAllgather(1, 2, reversed, 3 - rank, mine, {}, out), RMA_SUCCESS);
		expectGathered(out.data, reversed, 200);
		ids[1] = out.instance;
		EXPECT_EQ(ids[0] >> 40, 0u);
		EXPECT_EQ(ids[1] >> 40, 3u);
		ASSERT_EQ(b.consistentAllgather(1, 3, world, rank, std::as_bytes(std::span(ids)), {}, out), RMA_SUCCESS);
		std::vector<uint64_t> all(8);
		std::memcpy(all.data(), out.data.data(), out.data.size());
		for (int r = 0; r < 4; ++r) {
			EXPECT_EQ(all[2 * r], all[0]);
			EXPECT_EQ(all[2 * r + 1], all[1]);
		}
		EXPECT_NE(all[0], all[1]);
		EXPECT_NE(out.instance, all[0]);
		/* Many in a row: no contribution is overwritten before its readers are done. */
		for (uint64_t s = 10; s < 2010; ++s) {
			std::vector<std::byte> round = contribution(rank + int(s), 24);
			ASSERT_EQ(b.consistentAllgather(1, s, world, rank, round, {}, out), RMA_SUCCESS);
			for (int r = 0; r < 4; ++r)
				ASSERT_EQ(out.data[std::size_t(r) * 24 + 5], pattern(r + int(s), 5)) << "seq " << s;
		}
	});
	EXPECT_EQ(status, 0);
}

TEST_F(BoardTest, MoreDescriptorsThanASlotHoldsTravelThroughTheLauncher)
{
	constexpr int kMany = 40; /* over HostBoard::kFds */
	int status = runRanks(3, [](int rank) {
		JOIN(b);
		int count = rank == 1 ? kMany : 1;
		std::vector<UniqueFd> files;
		std::vector<int> fds;
		for (int i = 0; i < count; ++i) {
			files.push_back(fileWith(std::to_string(rank) + "/" + std::to_string(i)));
			fds.push_back(files.back().get());
		}
		std::vector<std::byte> mine = contribution(rank, 8);
		GatherResult out;
		ASSERT_EQ(b.consistentAllgather(1, 1, worldOf(b), rank, mine, fds, out), RMA_SUCCESS);
		expectGathered(out.data, worldOf(b), 8);
		ASSERT_EQ(out.fdCounts, (std::vector<int>{ 1, kMany, 1 }));
		ASSERT_EQ(out.fds.size(), std::size_t(kMany + 2));
		EXPECT_EQ(contentOf(out.fds[0].get()), "0/0");
		for (int i = 0; i < kMany; ++i)
			EXPECT_EQ(contentOf(out.fds[1 + i].get()), "1/" + std::to_string(i));
		EXPECT_EQ(contentOf(out.fds[kMany + 1].get()), "2/0");
	});
	EXPECT_EQ(status, 0);
}

TEST_F(BoardTest, ConcurrentCollectivesOnOverlappingSubsets)
{
	int status = runRanks(4, [](int rank) {
		JOIN(b);
		const std::vector<int> a = { 0, 1, 2 }, bMembers = { 3, 1, 2 }, c = { 0, 3 };
		auto index = [rank](const std::vector<int> &members) {
			return int(std::find(members.begin(), members.end(), rank) - members.begin());
		};
		std::vector<std::byte> mine = contribution(rank, 16);
		GatherResult out;
		for (uint64_t round = 0; round < 200; ++round) {
			if (rank != 3) {
				ASSERT_EQ(b.consistentAllgather(1, round, a, index(a), mine, {}, out), RMA_SUCCESS);
				expectGathered(out.data, a, 16);
			}
			if (rank != 0) {
				ASSERT_EQ(b.consistentAllgather(2, round, bMembers, index(bMembers), mine, {}, out),
					  RMA_SUCCESS);
				expectGathered(out.data, bMembers, 16);
			}
			if (rank == 0 || rank == 3) {
				ASSERT_EQ(b.consistentAllgather(3, round, c, index(c), mine, {}, out), RMA_SUCCESS);
				expectGathered(out.data, c, 16);
			}
		}
	});
	EXPECT_EQ(status, 0);
}

TEST_F(BoardTest, LengthMismatchFailsEveryMemberAndTheJobGoesOn)
{
	int status = runRanks(3, [](int rank) {
		JOIN(b);
		std::vector<int> world = worldOf(b);
		GatherResult out;
		int rc = b.consistentAllgather(1, 1, world, rank, contribution(rank, rank == 0 ? 8 : 16), {}, out);
		EXPECT_EQ(errorClass(rc), RMA_ERR_INTERN);
		EXPECT_NE(errorMessage(rc).find("lengths must match"), std::string::npos) << errorMessage(rc);
		ASSERT_EQ(b.consistentAllgather(1, 2, world, rank, contribution(rank, 8), {}, out), RMA_SUCCESS);
		expectGathered(out.data, world, 8);
	});
	EXPECT_EQ(status, 0);
}

TEST_F(BoardTest, RanksThatDisagreeAboutTheBoardAllMeetThroughTheLauncher)
{
	/* RMA_BOOT_BOARD may differ between ranks: set-up must neither hang nor split the host. */
	int status = runRanks(3, [](int rank) {
		if (rank == 1)
			setenv("RMA_BOOT_BOARD", "0", 1);
		JOIN(b);
		std::vector<std::byte> mine = contribution(rank, 32);
		GatherResult out;
		for (uint64_t s = 1; s <= 20; ++s) {
			ASSERT_EQ(b.consistentAllgather(1, s, worldOf(b), rank, mine, {}, out), RMA_SUCCESS);
			expectGathered(out.data, worldOf(b), 32);
		}
		/* The launcher's instance ids (a job-wide count), not the board's (bit 39). */
		EXPECT_EQ(out.instance & (uint64_t(1) << 39), 0u);
	});
	EXPECT_EQ(status, 0);
}

TEST_F(BoardTest, AMemberThatExitsFailsTheWaitersInsteadOfHanging)
{
	int status = runRanks(3, [](int rank) {
		JOIN(b);
		if (rank == 2) {
			std::this_thread::sleep_for(std::chrono::milliseconds(200));
			return;
		}
		auto start = std::chrono::steady_clock::now();
		GatherResult out;
		int rc = b.consistentAllgather(1, 1, worldOf(b), rank, {}, {}, out);
		EXPECT_EQ(errorClass(rc), RMA_ERR_PROC_FAILED);
		EXPECT_NE(errorMessage(rc).find("rank 2"), std::string::npos) << errorMessage(rc);
		EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(5));
	});
	EXPECT_EQ(status, 0);
}

} /* namespace */
} /* namespace librma */
