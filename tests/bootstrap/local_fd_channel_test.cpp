/* SPDX-License-Identifier: MIT */
/*
 * LocalFdChannel between real processes forked here, without a launcher:
 * the members learn each other's pids through a shared page, as a PMIx or
 * MPI job learns them through its data round.
 */
#include "bootstrap/local_fd_channel.h"

#include <signal.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstring>
#include <functional>
#include <string>
#include <thread>
#include <vector>

#include <gtest/gtest.h>

#include "bootstrap/protocol.h"
#include "error/error.h"
#include "support/multiproc.h"

namespace librma {
namespace {

using namespace std::chrono_literals;
using test::SharedMemory;

constexpr int kMaxMembers = 8;

/* What the forked members share. */
struct Board {
	std::atomic<pid_t> pids[kMaxMembers];
	std::atomic<int> flags[kMaxMembers];
};

/* A job id of its own for each test, so that tests running at once never meet. */
uint64_t freshJobId()
{
	static int counter = 0;
	return (uint64_t(getpid()) << 20) ^ (uint64_t(++counter) << 4) ^
	       uint64_t(std::chrono::steady_clock::now().time_since_epoch().count() & 0xf);
}

/* Whether a GoogleTest assertion failed since @before parts. */
bool failedSince(int before)
{
	const testing::TestResult *r = testing::UnitTest::GetInstance()->current_test_info()->result();
	for (int i = before; i < r->total_part_count(); ++i) {
		if (r->GetTestPartResult(i).failed())
			return true;
	}
	return false;
}

/*
 * Fork @n members; each publishes its pid, waits for the others' and runs
 * @body(index, pids, board). Returns the exit statuses (0: passed; 1: an
 * assertion failed; 124: the member hung past 30 s and was killed).
 */
std::vector<int> forkMembers(int n, const std::function<void(int, const std::vector<pid_t> &, Board &)> &body)
{
	SharedMemory shared(sizeof(Board));
	auto *board = static_cast<Board *>(shared.data());
	std::vector<pid_t> children;
	for (int i = 0; i < n; ++i) {
		pid_t pid = fork();
		if (pid == 0) {
			int before =
				testing::UnitTest::GetInstance()->current_test_info()->result()->total_part_count();
			board->pids[i].store(getpid());
			std::vector<pid_t> pids(n);
			for (int j = 0; j < n; ++j) {
				while (board->pids[j].load() == 0)
					std::this_thread::sleep_for(100us);
				pids[j] = board->pids[j].load();
			}
			body(i, pids, *board);
			std::fflush(nullptr);
			_exit(failedSince(before) ? 1 : 0);
		}
		children.push_back(pid);
	}
	std::vector<int> status(n, -1);
	auto deadline = std::chrono::steady_clock::now() + 30s;
	for (int i = 0; i < n; ++i) {
		int ws = 0;
		while (waitpid(children[i], &ws, WNOHANG) == 0) {
			if (std::chrono::steady_clock::now() > deadline) {
				kill(children[i], SIGKILL);
				waitpid(children[i], &ws, 0);
				ws = -1;
				break;
			}
			std::this_thread::sleep_for(1ms);
		}
		status[i] = ws == -1 ? 124 : test::exitStatus(ws);
	}
	return status;
}

/* A memfd whose content names its owner and position. */
UniqueFd tagged(int member, int k)
{
	UniqueFd fd(memfd_create("fdchan-test", MFD_CLOEXEC));
	std::string tag = std::to_string(member) + ":" + std::to_string(k);
	if (fd.isValid() && pwrite(fd.get(), tag.data(), tag.size(), 0) != ssize_t(tag.size()))
		fd.reset();
	return fd;
}

std::string tagOf(int fd)
{
	char buf[32] = {};
	ssize_t n = pread(fd, buf, sizeof(buf), 0);
	return n > 0 ? std::string(buf, n) : std::string("<unreadable>");
}

/* Check that @out holds member m's k-th descriptor at its place, for the given counts. */
void expectTagged(const GatherResult &out, const std::vector<int> &counts)
{
	ASSERT_EQ(out.fdCounts, counts);
	std::size_t at = 0;
	for (std::size_t m = 0; m < counts.size(); ++m) {
		for (int k = 0; k < counts[m]; ++k, ++at) {
			ASSERT_LT(at, out.fds.size());
			ASSERT_EQ(tagOf(out.fds[at].get()), std::to_string(m) + ":" + std::to_string(k))
				<< "descriptor " << at;
		}
	}
	EXPECT_EQ(at, out.fds.size());
}

struct Contribution {
	std::vector<UniqueFd> owned;
	std::vector<int> raw;
};

Contribution contribute(int member, int count)
{
	Contribution c;
	for (int k = 0; k < count; ++k) {
		c.owned.push_back(tagged(member, k));
		c.raw.push_back(c.owned.back().get());
	}
	return c;
}

bool allPassed(const std::vector<int> &status)
{
	for (int s : status) {
		if (s != 0)
			return false;
	}
	return true;
}

#define EXPECT_MEMBERS_PASS(status)                                                                                    \
	do {                                                                                                           \
		auto rma_status_ = (status);                                                                           \
		EXPECT_TRUE(allPassed(rma_status_)) << "a member failed: its output is above";                         \
	} while (0)

TEST(LocalFdChannelTest, GathersDescriptorsInMemberOrderWithTheFirstMemberAsHub)
{
	const uint64_t job = freshJobId();
	/* World ranks in an order that is not the members' order: the hub is world rank 2. */
	const std::vector<int> members = { 2, 0, 1 };
	const std::vector<int> counts = { 1, 0, 3 };
	EXPECT_MEMBERS_PASS(forkMembers(3, [&](int i, const std::vector<pid_t> &pids, Board &) {
		auto channel = LocalFdChannel::listen(job, members[i]);
		ASSERT_TRUE(channel.ok()) << errorMessage(channel.code());
		Contribution mine = contribute(i, counts[i]);
		for (uint64_t seq = 1; seq <= 3; ++seq) {
			GatherResult out;
			out.instance = 77;
			int rc = channel->exchange(5, seq, members, i, pids, mine.raw, counts, out);
			ASSERT_EQ(rc, RMA_SUCCESS) << "seq " << seq << ": " << errorMessage(rc);
			expectTagged(out, counts);
			EXPECT_EQ(out.instance, 77u) << "the channel leaves the instance to the data round";
		}
		EXPECT_EQ(channel->refusedCount(), 0u);
	}));
}

TEST(LocalFdChannelTest, ExchangeWithoutDescriptorsOpensNoConnection)
{
	const uint64_t job = freshJobId();
	const std::vector<int> members = { 0, 1 };
	/* The hub has not started listening (or has left): nobody may try to reach it. */
	EXPECT_MEMBERS_PASS(forkMembers(2, [&](int i, const std::vector<pid_t> &pids, Board &) {
		if (i == 0)
			return;
		auto channel = LocalFdChannel::listen(job, members[i], { 200ms });
		ASSERT_TRUE(channel.ok()) << errorMessage(channel.code());
		GatherResult out;
		EXPECT_EQ(channel->exchange(1, 1, members, i, pids, {}, std::vector<int>{ 0, 0 }, out), RMA_SUCCESS);
		EXPECT_TRUE(out.fds.empty());
		EXPECT_EQ(out.fdCounts, (std::vector<int>{ 0, 0 }));
	}));
}

TEST(LocalFdChannelTest, SingleMemberGetsDuplicatesOfItsOwnDescriptors)
{
	auto channel = LocalFdChannel::listen(freshJobId(), 0);
	ASSERT_TRUE(channel.ok()) << errorMessage(channel.code());
	Contribution mine = contribute(0, 2);
	GatherResult out;
	std::vector<pid_t> pids = { getpid() };
	ASSERT_EQ(channel->exchange(1, 1, std::vector<int>{ 0 }, 0, pids, mine.raw, std::vector<int>{ 2 }, out),
		  RMA_SUCCESS);
	expectTagged(out, { 2 });
	EXPECT_NE(out.fds[0].get(), mine.raw[0]);
}

TEST(LocalFdChannelTest, ManyDescriptorsTravelInSeveralPackets)
{
	const uint64_t job = freshJobId();
	const std::vector<int> members = { 0, 1, 2 };
	/* 600 = 250 + 250 + 100 from one member; 251 from the hub; one from the last. */
	const std::vector<int> counts = { 251, 600, 1 };
	EXPECT_MEMBERS_PASS(forkMembers(3, [&](int i, const std::vector<pid_t> &pids, Board &) {
		auto channel = LocalFdChannel::listen(job, members[i]);
		ASSERT_TRUE(channel.ok()) << errorMessage(channel.code());
		Contribution mine = contribute(i, counts[i]);
		ASSERT_EQ(mine.raw.size(), std::size_t(counts[i]));
		GatherResult out;
		int rc = channel->exchange(9, 1, members, i, pids, mine.raw, counts, out);
		ASSERT_EQ(rc, RMA_SUCCESS) << errorMessage(rc);
		expectTagged(out, counts);
	}));
}

TEST(LocalFdChannelTest, ConcurrentExchangesOfOneProcessMeetTheirOwnPeers)
{
	const uint64_t job = freshJobId();
	const std::vector<int> members = { 0, 1 };
	const std::vector<int> counts = { 1, 2 };
	/* Two threads per process, each in its own collective; a connection one thread accepts may be the other's. */
	EXPECT_MEMBERS_PASS(forkMembers(2, [&](int i, const std::vector<pid_t> &pids, Board &) {
		auto channel = LocalFdChannel::listen(job, members[i]);
		ASSERT_TRUE(channel.ok()) << errorMessage(channel.code());
		Contribution mine = contribute(i, counts[i]);
		std::atomic<int> failures{ 0 };
		auto run = [&](uint64_t ctx) {
			for (uint64_t seq = 1; seq <= 20; ++seq) {
				GatherResult out;
				int rc = channel->exchange(ctx, seq, members, i, pids, mine.raw, counts, out);
				if (rc != RMA_SUCCESS || out.fds.size() != 3 || tagOf(out.fds[2].get()) != "1:1") {
					std::fprintf(stderr, "ctx %llu seq %llu: %s\n", (unsigned long long)ctx,
						     (unsigned long long)seq, errorMessage(rc).c_str());
					failures.fetch_add(1);
				}
			}
		};
		std::thread a(run, 1), b(run, 2);
		a.join();
		b.join();
		EXPECT_EQ(failures.load(), 0);
	}));
}

TEST(LocalFdChannelTest, SecondListenerOnOneAddressIsRefused)
{
	const uint64_t job = freshJobId();
	auto first = LocalFdChannel::listen(job, 3);
	ASSERT_TRUE(first.ok()) << errorMessage(first.code());
	auto second = LocalFdChannel::listen(job, 3);
	ASSERT_FALSE(second.ok());
	EXPECT_EQ(errorClass(second.code()), RMA_ERR_INTERN);
	EXPECT_NE(errorMessage(second.code()).find(LocalFdChannel::addressName(job, 3)), std::string::npos)
		<< errorMessage(second.code());
}

TEST(LocalFdChannelTest, RejectsInconsistentArguments)
{
	auto channel = LocalFdChannel::listen(freshJobId(), 0);
	ASSERT_TRUE(channel.ok());
	GatherResult out;
	std::vector<pid_t> pids = { getpid(), getpid() };
	int fd = 0;
	/* Counts say this member gives 2, it gives 1. */
	EXPECT_EQ(errorClass(channel->exchange(1, 1, std::vector<int>{ 0, 1 }, 0, pids, { &fd, 1 },
					       std::vector<int>{ 2, 0 }, out)),
		  RMA_ERR_ARG);
	/* This process is rank 0, not member 1's rank. */
	EXPECT_EQ(errorClass(channel->exchange(1, 1, std::vector<int>{ 0, 1 }, 1, pids, {}, std::vector<int>{ 0, 0 },
					       out)),
		  RMA_ERR_ARG);
	/* A negative count. */
	EXPECT_EQ(errorClass(channel->exchange(1, 1, std::vector<int>{ 0, 1 }, 0, pids, {}, std::vector<int>{ 0, -1 },
					       out)),
		  RMA_ERR_ARG);
	EXPECT_TRUE(out.fds.empty());
}

TEST(LocalFdChannelTest, MemberRefusesAHubThatIsNotTheExpectedProcess)
{
	/* Both ends in this process: the hub's address is served by this pid, the member expects another. */
	const uint64_t job = freshJobId();
	auto hub = LocalFdChannel::listen(job, 0);
	auto member = LocalFdChannel::listen(job, 1, { 2s });
	ASSERT_TRUE(hub.ok() && member.ok());
	pid_t notTheHub = getppid();
	std::vector<pid_t> pids = { notTheHub, getpid() };
	UniqueFd secret = tagged(1, 0);
	int raw = secret.get();
	GatherResult out;
	int rc = member->exchange(1, 1, std::vector<int>{ 0, 1 }, 1, pids, { &raw, 1 }, std::vector<int>{ 0, 1 }, out);
	EXPECT_EQ(errorClass(rc), RMA_ERR_INTERN);
	EXPECT_NE(errorMessage(rc).find("refused"), std::string::npos) << errorMessage(rc);
	EXPECT_TRUE(out.fds.empty());
}

/* Connect to @job's rank 0 as the protocol says; -1 on failure. */
int connectToHub(uint64_t job)
{
	int sock = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0);
	sockaddr_un addr{};
	addr.sun_family = AF_UNIX;
	std::string name = LocalFdChannel::addressName(job, 0);
	std::memcpy(addr.sun_path + 1, name.data(), name.size());
	if (connect(sock, reinterpret_cast<sockaddr *>(&addr), offsetof(sockaddr_un, sun_path) + 1 + name.size()) < 0) {
		close(sock);
		return -1;
	}
	return sock;
}

/* Whether the hub closed @sock without an answer (a refusal). */
bool closedUnanswered(int sock)
{
	char buf[256];
	ssize_t n = recv(sock, buf, sizeof(buf), 0);
	return n == 0 || (n < 0 && errno == ECONNRESET);
}

TEST(LocalFdChannelTest, HubRefusesAMemberRunningAsAnotherUid)
{
	if (geteuid() != 0)
		GTEST_SKIP() << "needs root to run a process of another uid";
	const uint64_t job = freshJobId();
	const std::vector<int> members = { 0, 1 };
	const std::vector<int> counts = { 0, 1 };
	/*
	 * Member 1 is the right pid at the right place and speaks the protocol
	 * byte for byte (bypassing its own check of the hub), but runs as
	 * nobody: only the uid check can turn it away.
	 */
	EXPECT_MEMBERS_PASS(forkMembers(2, [&](int i, const std::vector<pid_t> &pids, Board &board) {
		if (i == 1) {
			while (board.flags[0].load() == 0)
				std::this_thread::sleep_for(100us);
			ASSERT_EQ(setresuid(65534, 65534, 65534), 0);
			int sock = connectToHub(job);
			ASSERT_GE(sock, 0);
			UniqueFd bait = tagged(1, 0);
			int raw = bait.get();
			std::vector<std::byte> body;
			boot::appendPod(body, fdchan::Hello{ fdchan::kHelloMagic, 1, 1, 1, 1, 2 });
			boot::OutMessage hello{ body, { &raw, 1 }, nullptr };
			/* The hub may close before the Hello is even sent: the uid is known at accept. */
			int sent = boot::sendPacket(sock, hello, 0);
			EXPECT_TRUE(sent == -EPIPE || sent == -ECONNRESET || (sent == 0 && hello.done()))
				<< "sendPacket: " << sent;
			EXPECT_TRUE(closedUnanswered(sock)) << "the hub answered a process of another uid";
			close(sock);
			/* Alive until the hub gives up: its death would end the wait instead. */
			while (board.flags[0].load() != 2)
				std::this_thread::sleep_for(1ms);
			return;
		}
		auto channel = LocalFdChannel::listen(job, 0, { 500ms });
		ASSERT_TRUE(channel.ok()) << errorMessage(channel.code());
		board.flags[0].store(1);
		GatherResult out;
		int rc = channel->exchange(1, 1, members, 0, pids, {}, counts, out);
		EXPECT_EQ(errorClass(rc), RMA_ERR_INTERN) << errorMessage(rc);
		EXPECT_NE(errorMessage(rc).find("waiting for rank(s) 1"), std::string::npos) << errorMessage(rc);
		EXPECT_TRUE(out.fds.empty());
		EXPECT_EQ(channel->refusedCount(), 1u);
		board.flags[0].store(2);
	}));
}

TEST(LocalFdChannelTest, HubRefusesGarbageAndCompletesWithTheRealMember)
{
	const uint64_t job = freshJobId();
	const std::vector<int> members = { 0, 1 };
	const std::vector<int> counts = { 0, 1 };
	/* Member 2 is not in the member list: it connects and sends junk first. */
	EXPECT_MEMBERS_PASS(forkMembers(3, [&](int i, const std::vector<pid_t> &pids, Board &board) {
		if (i == 2) {
			while (board.flags[0].load() == 0)
				std::this_thread::sleep_for(100us);
			int sock = connectToHub(job);
			ASSERT_GE(sock, 0);
			char junk[64] = {};
			EXPECT_EQ(send(sock, junk, sizeof(junk), MSG_NOSIGNAL), ssize_t(sizeof(junk)));
			EXPECT_TRUE(closedUnanswered(sock)) << "the hub answered junk";
			close(sock);
			board.flags[2].store(1);
			return;
		}
		auto channel = LocalFdChannel::listen(job, members[i]);
		ASSERT_TRUE(channel.ok()) << errorMessage(channel.code());
		board.flags[i].store(1);
		/* The real member comes only after the junk has been turned away. */
		if (i == 1) {
			while (board.flags[2].load() == 0)
				std::this_thread::sleep_for(100us);
		}
		Contribution mine = contribute(i, counts[i]);
		GatherResult out;
		std::vector<pid_t> memberPids(pids.begin(), pids.begin() + 2);
		int rc = channel->exchange(1, 1, members, i, memberPids, mine.raw, counts, out);
		ASSERT_EQ(rc, RMA_SUCCESS) << errorMessage(rc);
		expectTagged(out, counts);
		if (i == 0) {
			EXPECT_EQ(channel->refusedCount(), 1u);
		}
	}));
}

TEST(LocalFdChannelTest, HubRefusesAProcessOfTheSameUidThatClaimsAMembersPlace)
{
	const uint64_t job = freshJobId();
	const std::vector<int> members = { 0, 1, 2 };
	const std::vector<int> counts = { 0, 1, 1 };
	/* Member 3 is an impostor of this uid: it speaks the protocol, claiming member 1's place. */
	EXPECT_MEMBERS_PASS(forkMembers(4, [&](int i, const std::vector<pid_t> &pids, Board &board) {
		std::vector<pid_t> memberPids(pids.begin(), pids.begin() + 3);
		if (i == 3) {
			while (board.flags[0].load() == 0)
				std::this_thread::sleep_for(100us);
			/* Its own channel as rank 1 of a look-alike job member list whose rank 1 is itself. */
			auto own = LocalFdChannel::listen(job, 7, { 5s });
			ASSERT_TRUE(own.ok()) << errorMessage(own.code());
			std::vector<pid_t> fake = { memberPids[0], getpid(), memberPids[2] };
			Contribution bait = contribute(9, 1);
			GatherResult out;
			int rc = own->exchange(1, 1, std::vector<int>{ 0, 7, 2 }, 1, fake, bait.raw, counts, out);
			EXPECT_NE(rc, RMA_SUCCESS);
			EXPECT_TRUE(out.fds.empty());
			board.flags[3].store(1);
			return;
		}
		auto channel = LocalFdChannel::listen(job, members[i]);
		ASSERT_TRUE(channel.ok()) << errorMessage(channel.code());
		board.flags[i].store(1);
		if (i == 1) {
			while (board.flags[3].load() == 0)
				std::this_thread::sleep_for(100us);
		}
		Contribution mine = contribute(i, counts[i]);
		GatherResult out;
		int rc = channel->exchange(1, 1, members, i, memberPids, mine.raw, counts, out);
		ASSERT_EQ(rc, RMA_SUCCESS) << errorMessage(rc);
		expectTagged(out, counts);
		if (i == 0) {
			EXPECT_EQ(channel->refusedCount(), 1u);
		}
	}));
}

TEST(LocalFdChannelTest, MemberThatDiesFailsTheExchangeAtTheHubAndTheOthers)
{
	const uint64_t job = freshJobId();
	const std::vector<int> members = { 0, 1, 2 };
	const std::vector<int> counts = { 1, 1, 1 };
	EXPECT_MEMBERS_PASS(forkMembers(3, [&](int i, const std::vector<pid_t> &pids, Board &board) {
		if (i == 2) {
			/* Dies after the data round, before its descriptors. */
			while (board.flags[1].load() == 0)
				std::this_thread::sleep_for(100us);
			std::this_thread::sleep_for(50ms);
			_exit(0);
		}
		/* A long timeout: the death, not the clock, must end the wait. */
		std::vector<int> reported;
		auto channel =
			LocalFdChannel::listen(job, members[i], { 20s, [&](int rank) { reported.push_back(rank); } });
		ASSERT_TRUE(channel.ok()) << errorMessage(channel.code());
		Contribution mine = contribute(i, counts[i]);
		board.flags[i].store(1);
		auto start = std::chrono::steady_clock::now();
		GatherResult out;
		int rc = channel->exchange(1, 1, members, i, pids, mine.raw, counts, out);
		EXPECT_LT(std::chrono::steady_clock::now() - start, 10s);
		EXPECT_EQ(errorClass(rc), RMA_ERR_PROC_FAILED) << errorMessage(rc);
		EXPECT_NE(errorMessage(rc).find("rank 2"), std::string::npos) << errorMessage(rc);
		EXPECT_TRUE(out.fds.empty());
		/* The hub saw it die; member 1 heard it from the hub or saw it itself. */
		EXPECT_EQ(reported, std::vector<int>{ 2 });
	}));
}

TEST(LocalFdChannelTest, HubThatDiesFailsTheMembers)
{
	const uint64_t job = freshJobId();
	const std::vector<int> members = { 0, 1 };
	const std::vector<int> counts = { 0, 1 };
	EXPECT_MEMBERS_PASS(forkMembers(2, [&](int i, const std::vector<pid_t> &pids, Board &board) {
		std::vector<int> reported;
		auto channel =
			LocalFdChannel::listen(job, members[i], { 20s, [&](int rank) { reported.push_back(rank); } });
		ASSERT_TRUE(channel.ok()) << errorMessage(channel.code());
		if (i == 0) {
			while (board.flags[1].load() == 0)
				std::this_thread::sleep_for(100us);
			std::this_thread::sleep_for(50ms);
			_exit(0);
		}
		board.flags[1].store(1);
		Contribution mine = contribute(i, counts[i]);
		auto start = std::chrono::steady_clock::now();
		GatherResult out;
		int rc = channel->exchange(1, 1, members, i, pids, mine.raw, counts, out);
		EXPECT_LT(std::chrono::steady_clock::now() - start, 10s);
		EXPECT_EQ(errorClass(rc), RMA_ERR_PROC_FAILED) << errorMessage(rc);
		EXPECT_NE(errorMessage(rc).find("rank 0"), std::string::npos) << errorMessage(rc);
		EXPECT_EQ(reported, std::vector<int>{ 0 });
	}));
}

TEST(LocalFdChannelTest, LiveMemberThatNeverComesTimesOutWithItsRankNamed)
{
	const uint64_t job = freshJobId();
	const std::vector<int> members = { 0, 1, 2 };
	const std::vector<int> counts = { 0, 1, 1 };
	EXPECT_MEMBERS_PASS(forkMembers(3, [&](int i, const std::vector<pid_t> &pids, Board &board) {
		auto channel = LocalFdChannel::listen(job, members[i], { 300ms });
		ASSERT_TRUE(channel.ok()) << errorMessage(channel.code());
		if (i == 2) {
			/* Alive, listening, never joins; leaves once the others are done. */
			while (board.flags[0].load() == 0 || board.flags[1].load() == 0)
				std::this_thread::sleep_for(1ms);
			return;
		}
		Contribution mine = contribute(i, counts[i]);
		GatherResult out;
		int rc = channel->exchange(1, 1, members, i, pids, mine.raw, counts, out);
		EXPECT_EQ(errorClass(rc), RMA_ERR_INTERN) << errorMessage(rc);
		if (i == 0) {
			EXPECT_NE(errorMessage(rc).find("timed out after 300 ms waiting for rank(s) 2"),
				  std::string::npos)
				<< errorMessage(rc);
		}
		board.flags[i].store(1);
	}));
}

} /* namespace */
} /* namespace librma */
