/* SPDX-License-Identifier: MIT */
/*
 * launch(): job rules (statuses, stopping, signals, abort), output tagging,
 * binding, and hygiene (descriptors, other children of the caller).
 */
#include "bootstrap/launcher.h"

#include <dirent.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <set>
#include <sstream>
#include <string>
#include <thread>

#include <gtest/gtest.h>

#include "bootstrap/binding.h"
#include "bootstrap/bootstrap.h"
#include "bootstrap/protocol.h"
#include "error/error.h"
#include "numa/topology.h"
#include "support/multiproc.h"

namespace librma {
namespace {

using Clock = std::chrono::steady_clock;

/*
 * A job of @n forked ranks. The grace before SIGKILL is long, so that a job
 * stopped within a few seconds shows that SIGTERM did it.
 */
LaunchOptions jobOf(int n, std::function<int(int)> childMain)
{
	LaunchOptions options;
	options.nranks = n;
	options.bind = Bind::None;
	options.timeoutSeconds = 30;
	options.killGraceSeconds = 10;
	options.childMain = std::move(childMain);
	return options;
}

[[noreturn]] void spinForever()
{
	for (;;)
		std::this_thread::sleep_for(std::chrono::milliseconds(1));
}

std::set<int> openFds()
{
	std::set<int> fds;
	DIR *dir = opendir("/proc/self/fd");
	while (dirent *entry = readdir(dir)) {
		if (entry->d_name[0] != '.')
			fds.insert(std::atoi(entry->d_name));
	}
	fds.erase(dirfd(dir));
	closedir(dir);
	return fds;
}

double secondsSince(Clock::time_point start)
{
	return std::chrono::duration<double>(Clock::now() - start).count();
}

/*
 * The job rules, once with pidfds watching the ranks and once with SIGCHLD
 * (the fallback for kernels without pidfd_open, forced by RMA_NO_PIDFD).
 */
class LauncherJobTest : public testing::TestWithParam<bool>
{
protected:
	void SetUp() override
	{
		if (GetParam())
			setenv("RMA_NO_PIDFD", "1", 1);
	}
	void TearDown() override { unsetenv("RMA_NO_PIDFD"); }
};

TEST_P(LauncherJobTest, AllRanksExitingZeroGiveZero)
{
	EXPECT_EQ(launch(jobOf(3, [](int) { return 0; })), 0);
}

TEST_P(LauncherJobTest, FailingRankExitCodeIsTheJobStatus)
{
	auto start = Clock::now();
	int status = launch(jobOf(3, [](int rank) -> int {
		if (rank == 1)
			return 3;
		spinForever();
	}));
	EXPECT_EQ(status, 3);
	EXPECT_LT(secondsSince(start), 5);
}

TEST_P(LauncherJobTest, KilledRankFailsTheJobWith128PlusSignal)
{
	auto start = Clock::now();
	int status = launch(jobOf(3, [](int rank) -> int {
		if (rank == 2) {
			std::this_thread::sleep_for(std::chrono::milliseconds(50));
			raise(SIGKILL);
		}
		spinForever();
	}));
	EXPECT_EQ(status, 128 + SIGKILL);
	EXPECT_LT(secondsSince(start), 5);
}

TEST_P(LauncherJobTest, RankIgnoringSigtermIsKilledAfterTheGrace)
{
	LaunchOptions options = jobOf(2, [](int rank) -> int {
		if (rank == 0) {
			std::this_thread::sleep_for(std::chrono::milliseconds(100));
			return 5;
		}
		signal(SIGTERM, SIG_IGN);
		spinForever();
	});
	options.killGraceSeconds = 0.3;
	auto start = Clock::now();
	EXPECT_EQ(launch(options), 5);
	EXPECT_GE(secondsSince(start), 0.3);
	EXPECT_LT(secondsSince(start), 5);
}

TEST_P(LauncherJobTest, TimeLimitStopsTheJobWith124)
{
	LaunchOptions options = jobOf(2, [](int) -> int { spinForever(); });
	options.timeoutSeconds = 0.3;
	auto start = Clock::now();
	EXPECT_EQ(launch(options), 124);
	EXPECT_LT(secondsSince(start), 5);
}

TEST_P(LauncherJobTest, AbortEndsTheJobWithItsCode)
{
	auto start = Clock::now();
	int status = launch(jobOf(3, [](int rank) -> int {
		auto boot = Bootstrap::fromEnvironment();
		if (!boot.ok())
			return 99;
		if (rank == 1)
			(*boot)->abort(7);
		/* The others wait in a collective that rank 1 never joins. */
		int members[] = { 0, 1, 2 };
		GatherResult out;
		(*boot)->allgather(1, 1, members, rank, {}, {}, out);
		spinForever();
	}));
	EXPECT_EQ(status, 7);
	EXPECT_LT(secondsSince(start), 5);
}

INSTANTIATE_TEST_SUITE_P(Watch, LauncherJobTest, testing::Values(false, true),
			 [](const testing::TestParamInfo<bool> &info) { return info.param ? "Sigchld" : "Pidfd"; });

/* keep-going: the survivors finish their work, and the failure is still the job's status. */
TEST(LauncherTest, KeepGoingLetsSurvivorsFinishAndReportsTheFailure)
{
	LaunchOptions options;
	options.nranks = 3;
	options.bind = Bind::None;
	options.keepGoing = true;
	options.timeoutSeconds = 30;
	options.childMain = [](int rank) -> int {
		if (rank == 1)
			raise(SIGKILL);
		/* The survivors outlive rank 1 and exit normally. */
		std::this_thread::sleep_for(std::chrono::milliseconds(200));
		return 0;
	};
	auto start = Clock::now();
	EXPECT_EQ(launch(options), 128 + SIGKILL);
	EXPECT_GE(secondsSince(start), 0.2) << "the survivors were stopped early";
	EXPECT_LT(secondsSince(start), 5);
}

TEST(LauncherTest, AbortWithZeroStillStopsEveryRank)
{
	auto start = Clock::now();
	int status = launch(jobOf(2, [](int rank) -> int {
		auto boot = Bootstrap::fromEnvironment();
		if (boot.ok() && rank == 0)
			(*boot)->abort(0);
		spinForever();
	}));
	EXPECT_EQ(status, 0);
	EXPECT_LT(secondsSince(start), 5);
}

TEST(LauncherTest, SignalToTheLauncherIsForwardedAndFailsTheJob)
{
	for (int signo : { SIGTERM, SIGINT }) {
		auto start = Clock::now();
		int status = launch(jobOf(2, [signo](int rank) -> int {
			if (rank == 0)
				kill(getppid(), signo);
			spinForever();
		}));
		EXPECT_EQ(status, 128 + signo);
		EXPECT_LT(secondsSince(start), 5);
	}
}

TEST(LauncherTest, ProgramThatCannotBeExecutedGives127)
{
	LaunchOptions options;
	options.nranks = 2;
	options.bind = Bind::None;
	options.argv = { "/nonexistent/librma-test-program" };
	test::CapturedStdio captured = test::captureStdio([&] { EXPECT_EQ(launch(options), 127); });
	EXPECT_NE(captured.err.find("cannot execute /nonexistent/librma-test-program"), std::string::npos)
		<< captured.err;
}

TEST(LauncherTest, ExecutedProgramGetsTheBootstrapEnvironment)
{
	LaunchOptions options;
	options.nranks = 3;
	options.bind = Bind::None;
	options.argv = { "/bin/sh", "-c",
			 "test \"$RMA_SIZE\" = 3 && test \"$RMA_RANK\" -ge 0 && test \"$RMA_RANK\" -lt 3 && "
			 "test \"$RMA_BOOT_FD\" = 100 && test \"$RMA_BIND\" = none && test -S /dev/fd/100" };
	EXPECT_EQ(launch(options), 0);
}

TEST(LauncherTest, NothingToLaunchGives127)
{
	LaunchOptions options;
	options.nranks = 0;
	options.childMain = [](int) { return 0; };
	EXPECT_EQ(launch(options), 127);
	options.nranks = 1;
	options.childMain = nullptr;
	EXPECT_EQ(launch(options), 127);
}

TEST(LauncherTest, TagOutputPrefixesEveryLineAndKeepsStreamsApart)
{
	constexpr int kLines = 500;
	LaunchOptions options = jobOf(2, [](int rank) {
		for (int i = 0; i < kLines; ++i)
			std::printf("line %d of %d\n", i, rank);
		std::fprintf(stderr, "warning from %d\n", rank);
		std::printf("unfinished %d", rank);
		return 0;
	});
	options.tagOutput = true;
	test::CapturedStdio captured = test::captureStdio([&] { EXPECT_EQ(launch(options), 0); });

	std::istringstream out(captured.out);
	std::string line;
	int count[2] = {};
	while (std::getline(out, line)) {
		ASSERT_TRUE(line.starts_with("[0] ") || line.starts_with("[1] ")) << line;
		int rank = line[1] - '0';
		std::string rest = line.substr(4);
		if (rest.starts_with("line ")) {
			EXPECT_EQ(rest, "line " + std::to_string(count[rank]) + " of " + std::to_string(rank));
			++count[rank];
		} else {
			EXPECT_EQ(rest, "unfinished " + std::to_string(rank));
		}
	}
	EXPECT_EQ(count[0], kLines);
	EXPECT_EQ(count[1], kLines);
	EXPECT_NE(captured.out.find("[1] unfinished 1\n"), std::string::npos);
	EXPECT_EQ(captured.out.find("warning"), std::string::npos);
	EXPECT_NE(captured.err.find("[0] warning from 0\n"), std::string::npos) << captured.err;
	EXPECT_NE(captured.err.find("[1] warning from 1\n"), std::string::npos) << captured.err;
}

TEST(LauncherTest, JobEndsWhenARankLeavesAWriterBehind)
{
	test::ScratchDir dir;
	std::string pidFile = dir.file("writer.pid");
	LaunchOptions options = jobOf(1, [&pidFile](int) {
		pid_t writer = fork();
		if (writer == 0) {
			/* Holds the rank's stdout pipe open and keeps writing. */
			for (;;) {
				std::printf("still here\n");
				std::fflush(stdout);
				std::this_thread::sleep_for(std::chrono::milliseconds(1));
			}
		}
		FILE *f = std::fopen(pidFile.c_str(), "w");
		std::fprintf(f, "%d\n", writer);
		std::fclose(f);
		std::this_thread::sleep_for(std::chrono::milliseconds(20));
		return 0;
	});
	options.tagOutput = true;
	auto start = Clock::now();
	test::CapturedStdio captured = test::captureStdio([&] { EXPECT_EQ(launch(options), 0); });
	EXPECT_LT(secondsSince(start), 5);
	pid_t writer = std::atoi(test::readFile(pidFile).c_str());
	ASSERT_GT(writer, 0);
	kill(writer, SIGKILL);
	EXPECT_NE(captured.out.find("[0] still here\n"), std::string::npos);
}

TEST(LauncherTest, BindCorePinsEachRankToOneAllowedCpu)
{
	std::vector<int> allowed = affinityCpus();
	ASSERT_FALSE(allowed.empty());
	LaunchOptions options = jobOf(3, [&allowed](int rank) {
		int cpu = allowed[rank % allowed.size()];
		const char *bind = std::getenv("RMA_BIND");
		bool ok = affinityCpus() == std::vector<int>{ cpu } && bind && bind == "core:" + std::to_string(cpu);
		return ok ? 0 : 1;
	});
	options.bind = Bind::Core;
	EXPECT_EQ(launch(options), 0);
}

TEST(LauncherTest, BindNumaPinsEachRankToTheCpusOfANode)
{
	std::vector<int> allowed = affinityCpus();
	if (allowed.size() < 2 || allowed[0] != 0 || allowed[1] != 1)
		GTEST_SKIP() << "needs CPUs 0 and 1";
	/* Two synthetic nodes of one CPU each: ranks alternate between them. */
	Topology topology = Topology::synthetic(2, 1);
	LaunchOptions options = jobOf(4, [](int rank) {
		int node = rank % 2;
		const char *bind = std::getenv("RMA_BIND");
		bool ok = affinityCpus() == std::vector<int>{ node } && bind && bind == "numa:" + std::to_string(node);
		return ok ? 0 : 1;
	});
	options.bind = Bind::Numa;
	options.topology = &topology;
	EXPECT_EQ(launch(options), 0);

	/* One node holding every CPU: each rank may use all of them. */
	Topology one = Topology::synthetic(1, static_cast<int>(allowed.back()) + 1);
	options.topology = &one;
	options.childMain = [&allowed](int) { return affinityCpus() == allowed ? 0 : 1; };
	EXPECT_EQ(launch(options), 0);
}

TEST(LauncherTest, BindNoneLeavesTheAffinityAlone)
{
	std::vector<int> allowed = affinityCpus();
	LaunchOptions options = jobOf(2, [&allowed](int) {
		const char *bind = std::getenv("RMA_BIND");
		return affinityCpus() == allowed && bind && std::string(bind) == "none" ? 0 : 1;
	});
	EXPECT_EQ(launch(options), 0);
}

TEST(LauncherTest, RanksInheritNoDescriptorOfTheLauncher)
{
	std::set<int> before = openFds();
	LaunchOptions options = jobOf(3, [&before](int) {
		auto boot = Bootstrap::fromEnvironment(); /* also checks that 100 is the socket */
		if (!boot.ok())
			return 2;
		std::set<int> allowed = before;
		allowed.insert(100);
		for (int fd : openFds()) {
			if (!allowed.count(fd)) {
				std::fprintf(stderr, "unexpected descriptor %d\n", fd);
				return 1;
			}
		}
		return 0;
	});
	EXPECT_EQ(launch(options), 0);
	EXPECT_EQ(openFds(), before) << "launch() leaked descriptors";
}

TEST(LauncherTest, OtherChildrenOfTheCallerAreLeftAlone)
{
	std::fflush(nullptr);
	pid_t other = fork();
	ASSERT_GE(other, 0);
	if (other == 0) {
		std::this_thread::sleep_for(std::chrono::milliseconds(50));
		_exit(42);
	}
	/* The other child exits while the job runs; the launcher must not reap it. */
	int status = launch(jobOf(2, [](int) {
		std::this_thread::sleep_for(std::chrono::milliseconds(200));
		return 0;
	}));
	EXPECT_EQ(status, 0);
	int otherStatus = 0;
	ASSERT_EQ(waitpid(other, &otherStatus, 0), other);
	EXPECT_EQ(test::exitStatus(otherStatus), 42);
}

TEST(LauncherTest, RunRanksReportsAssertionFailuresInRanks)
{
	/* Expected: rank 1 prints a failure; the job reports it. */
	int status = 0;
	test::CapturedStdio captured = test::captureStdio([&] {
		status = test::runRanks(2, [](int rank) {
			if (rank == 1)
				ADD_FAILURE() << "deliberate failure in rank 1";
		});
	});
	EXPECT_EQ(status, 1);
	EXPECT_NE(captured.out.find("deliberate failure in rank 1"), std::string::npos) << captured.out;
}

} /* namespace */
} /* namespace librma */

namespace librma {
namespace {

/* The bootstrap channel of a rank that launch() forked. */
int bootFd()
{
	const char *fd = std::getenv("RMA_BOOT_FD");
	return fd ? std::atoi(fd) : -1;
}

/* Junk on the bootstrap channel fails the job at once, with a message naming the rank. */
TEST(LauncherTest, GarbageBootstrapMessageFailsTheJob)
{
	for (int kind = 0; kind < 2; ++kind) {
		SCOPED_TRACE(kind);
		auto start = Clock::now();
		int status = -1;
		auto out = test::captureStdio([&] {
			status = launch(jobOf(3, [kind](int rank) -> int {
				if (rank == 1) {
					if (kind == 0) {
						const char junk[] = "this is not a bootstrap packet";
						(void)!send(bootFd(), junk, sizeof(junk), MSG_NOSIGNAL);
					} else {
						/* A well-formed packet whose message type does not exist. */
						struct {
							boot::PacketHeader h;
							uint32_t type;
						} m{ { boot::kPacketMagic, 4, 0, boot::kLastPacket }, 77 };
						(void)!send(bootFd(), &m, sizeof(m), MSG_NOSIGNAL);
					}
				}
				spinForever();
			}));
		});
		EXPECT_EQ(status, 1);
		EXPECT_LT(secondsSince(start), 5) << "the job went on with a broken rank";
		EXPECT_NE(out.err.find(kind == 0 ? "rank 1 sent a malformed bootstrap message"
						 : "rank 1 sent a bootstrap message of unknown type 77"),
			  std::string::npos)
			<< out.err;
	}
}

/* A rank flooding collective traffic cannot grow the launcher without bound. */
TEST(LauncherTest, FloodingRankFailsTheJobInsteadOfGrowingTheLauncher)
{
	setenv("RMA_LAUNCHER_MAX_MIB", "16", 1);
	auto start = Clock::now();
	int status = -1;
	auto out = test::captureStdio([&] {
		status = launch(jobOf(2, [](int rank) -> int {
			if (rank == 0) {
				/* Allgathers rank 1 never joins, each with 1 MiB of data, forever. */
				std::vector<std::byte> body(sizeof(boot::GatherRequest) + 2 * sizeof(int32_t) + (1 << 20));
				for (uint64_t seq = 1;; ++seq) {
					boot::GatherRequest g{ boot::MsgType::Gather, 2, 99, seq, 1 << 20, 0, 0 };
					int32_t members[2] = { 0, 1 };
					std::memcpy(body.data(), &g, sizeof(g));
					std::memcpy(body.data() + sizeof(g), members, sizeof(members));
					boot::OutMessage m;
					m.body = body;
					while (!m.done())
						if (boot::sendPacket(bootFd(), m, 0) < 0)
							return 3;
				}
			}
			spinForever();
		}));
	});
	unsetenv("RMA_LAUNCHER_MAX_MIB");
	EXPECT_EQ(status, 1);
	EXPECT_LT(secondsSince(start), 20);
	EXPECT_NE(out.err.find("rank 0: the launcher holds"), std::string::npos) << out.err;
	EXPECT_NE(out.err.find("over its limit"), std::string::npos) << out.err;
}

} /* namespace */
} /* namespace librma */
