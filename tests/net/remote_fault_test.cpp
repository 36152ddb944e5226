/* SPDX-License-Identifier: MIT */
/*
 * Faults across simulated hosts (issue #14, docs/design/inter-host.md §7),
 * with remote_fault as the ranks:
 *  - a link cut in the middle of an epoch: rank 0 cuts its own host's link
 *    while it puts and flushes to rank 1; rank 1 waits in a fence. Both
 *    must fail with RMA_ERR_PROC_FAILED instead of hanging, within the
 *    liveness bound (RMA_NET_TIMEOUT_MS, set to 1500 here, plus slack for a
 *    loaded machine), and free their windows;
 *  - a lock holder lost with its host: rank 0 holds a shared lock, lock_all
 *    or an exclusive lock on rank 1 (another host) when it cuts its host's
 *    link; rank 2 (a third host) must then get an exclusive lock on rank 1
 *    within the liveness bound and see rank 0's flushed value.
 * mpirun itself cannot finish (its daemon is behind the cut): the harness's
 * timeout ends it, and the ranks' results come through files.
 *
 * Needs root, PMIx and mpirun.openmpi (skipped otherwise).
 */
#include <sys/stat.h>
#include <unistd.h>

#include <cstdlib>
#include <fstream>
#include <sstream>
#include <string>

#include <gtest/gtest.h>

#include "net/netns_fixture.h"
#include "support/multiproc.h"

#include "config.h"

namespace librma {
namespace {

using test::CommandResult;
using test::netns::NetnsFixture;

class RemoteFaultTest : public NetnsFixture
{
protected:
	const char *programVariable() const override { return "RMA_REMOTE_FAULT"; }

	/*
	 * The directory the ranks write their results to (the hosts share the
	 * file system), made now; mpirun cannot always end on its own (its
	 * daemons may be behind a cut link), so the harness bounds it.
	 */
	std::string makeResultsDir()
	{
		const std::string results = dir_ + "/fault";
		EXPECT_EQ(mkdir(results.c_str(), 0755), 0) << results;
		setenv("RMA_NETNS_TIMEOUT", "20", 1);
		return results;
	}
};

std::string slurp(const std::string &path)
{
	std::ifstream in(path);
	std::stringstream s;
	s << in.rdbuf();
	return s.str();
}

/* What each of a 3-rank job's ranks wrote, and all of it with mpirun's output (for failure messages). */
struct ThreeRanks {
	std::string texts[3];
	std::string all;
};

ThreeRanks readRanks(const std::string &results, const CommandResult &r)
{
	ThreeRanks out;
	for (int rank = 0; rank < 3; ++rank) {
		out.texts[rank] = slurp(results + "/rank" + std::to_string(rank));
		out.all += "rank " + std::to_string(rank) + ":\n" + out.texts[rank];
	}
	out.all += "mpirun said:\n" + r.out + r.err;
	return out;
}

/* The "after M ms" of a result line, or -1. */
long millisOf(const std::string &text)
{
	auto at = text.find(" after ");
	return at == std::string::npos ? -1 : std::atol(text.c_str() + at + 7);
}

TEST_F(RemoteFaultTest, LinkCutMidEpochFailsEveryRankWithProcFailed)
{
	bringUp(2);
	if (IsSkipped() || HasFatalFailure())
		return;
	const std::string results = makeResultsDir();
	CommandResult r = run({ "-np", "2", "--map-by", "node", "-x", "RMA_NET_TIMEOUT_MS=1500", program_, results,
				"ip link set dev eth0 down" },
			      60);
	(void)r; /* 124 (the harness's timeout) or an abort: the ranks' files say what happened */
	for (int rank = 0; rank < 2; ++rank) {
		SCOPED_TRACE("rank " + std::to_string(rank));
		const std::string text = slurp(results + "/rank" + std::to_string(rank));
		EXPECT_NE(text.find("class 38 after"), std::string::npos)
			<< "expected RMA_ERR_PROC_FAILED (38); the rank wrote:\n"
			<< text << "\nmpirun said:\n"
			<< r.out << r.err;
		EXPECT_EQ(text.find("watchdog"), std::string::npos) << text;
		/* The operation failed within the liveness bound: 1.5 s of silence, plus slack for a busy machine. */
		long ms = millisOf(text);
		EXPECT_GE(ms, 0) << text;
		EXPECT_LT(ms, 10000) << text;
		/* The survivors could free their window (it reports the dead peer, and releases). */
		EXPECT_NE(text.find("free class"), std::string::npos) << text;
	}
	takeDown();
}

/*
 * A dead rank on a host whose server lives: its host's server must refuse
 * it (RMA_ERR_PROC_FAILED at the origin, on another host) instead of
 * serving a dead process's memory, and go on serving the host's live rank.
 * Open MPI's recovery mode keeps the job running past the death.
 */
TEST_F(RemoteFaultTest, ADeadTargetIsRefusedWhileItsHostServesTheOthers)
{
	bringUp(2);
	if (IsSkipped() || HasFatalFailure())
		return;
	const std::string results = makeResultsDir();
	/* --map-by node: ranks 0 and 2 on host 1 (rank 0 serves it), rank 1 on host 2. */
	CommandResult r = run({ "-np", "3", "--map-by", "node", "--oversubscribe", "--mca", "orte_enable_recovery", "1",
				"-x", "RMA_NET_TIMEOUT_MS=1500", program_, results, "true", "deadtarget" },
			      60);
	const ThreeRanks ranks = readRanks(results, r);
	const std::string(&texts)[3] = ranks.texts;
	const std::string &all = ranks.all;
	EXPECT_NE(texts[2].find("dying"), std::string::npos) << all;
	/* The origin's operations to the dead rank failed with RMA_ERR_PROC_FAILED (38), bounded by the watchdog. */
	EXPECT_NE(texts[1].find("class 38 after"), std::string::npos) << all;
	EXPECT_LT(millisOf(texts[1]), 10000) << all;
	/* The live rank of the same host was still served, and saw the value. */
	EXPECT_NE(texts[1].find("live target class 0"), std::string::npos) << all;
	EXPECT_NE(texts[0].find("value 55"), std::string::npos) << all;
	for (int rank = 0; rank < 2; ++rank) {
		EXPECT_EQ(texts[rank].find("watchdog"), std::string::npos) << "rank " << rank << "\n" << all;
		EXPECT_NE(texts[rank].find("free class"), std::string::npos) << "rank " << rank << "\n" << all;
	}
	takeDown();
}

/*
 * A remote origin's exclusive LOCK parked behind the lock of a rank that
 * died on the target's host: the server must refuse it (it used to check
 * only the target itself and park it for ever), and the put the origin
 * sent behind it without waiting for the grant.
 */
TEST_F(RemoteFaultTest, ALockThatADeadLocalRankHoldsIsRefusedToAnotherHost)
{
	bringUp(2);
	if (IsSkipped() || HasFatalFailure())
		return;
	const std::string results = makeResultsDir();
	/* --map-by node: ranks 0 and 2 on host 1 (rank 0 serves it), rank 1 on host 2. */
	CommandResult r = run({ "-np", "3", "--map-by", "node", "--oversubscribe", "--mca", "orte_enable_recovery", "1",
				"-x", "RMA_NET_TIMEOUT_MS=1500", program_, results, "true", "deadholder" },
			      60);
	const ThreeRanks ranks = readRanks(results, r);
	const std::string(&texts)[3] = ranks.texts;
	const std::string &all = ranks.all;
	EXPECT_NE(texts[2].find("dying holding"), std::string::npos) << all;
	/* Refused with RMA_ERR_PROC_FAILED (38) naming the dead holder, well within the watchdog. */
	EXPECT_NE(texts[1].find("class 38 after"), std::string::npos) << all;
	EXPECT_NE(texts[1].find("rank 2 of the window"), std::string::npos) << all;
	EXPECT_LT(millisOf(texts[1]), 10000) << all;
	/* Rank 1's put behind its refused lock was refused too: rank 0 still holds dead rank 2's value. */
	EXPECT_NE(texts[0].find("served, holds 2002"), std::string::npos) << all;
	for (int rank = 0; rank < 2; ++rank) {
		EXPECT_EQ(texts[rank].find("watchdog"), std::string::npos) << "rank " << rank << "\n" << all;
		EXPECT_NE(texts[rank].find("free class"), std::string::npos) << "rank " << rank << "\n" << all;
	}
	takeDown();
}

/*
 * An unlock_all that reports a dead rank (rank 2, on another host) must
 * still give back its lock_all part on that host: the live rank there then
 * gets an exclusive lock on itself (it would wait for ever, until the
 * watchdog, had the part been kept).
 */
TEST_F(RemoteFaultTest, AnUnlockAllThatReportsADeadRankReleasesTheOtherHostsParts)
{
	bringUp(2);
	if (IsSkipped() || HasFatalFailure())
		return;
	const std::string results = makeResultsDir();
	/* --map-by node: ranks 0 and 2 on host 1 (rank 0 serves it), rank 1 on host 2. */
	CommandResult r = run({ "-np", "3", "--map-by", "node", "--oversubscribe", "--mca", "orte_enable_recovery", "1",
				"-x", "RMA_NET_TIMEOUT_MS=1500", program_, results, "true", "deadunlock" },
			      60);
	const ThreeRanks ranks = readRanks(results, r);
	const std::string(&texts)[3] = ranks.texts;
	const std::string &all = ranks.all;
	EXPECT_NE(texts[2].find("dying"), std::string::npos) << all;
	/* Rank 1 learned of the death (RMA_ERR_PROC_FAILED, 38), and unlock_all reported it. */
	EXPECT_NE(texts[1].find("class 38 after"), std::string::npos) << all;
	EXPECT_NE(texts[1].find("unlock_all class 38"), std::string::npos) << all;
	/* Its part on host 1 was given back: rank 0's exclusive lock on itself came, with rank 1's put. */
	EXPECT_NE(texts[0].find("exclusive on rank 0 after"), std::string::npos) << all;
	EXPECT_NE(texts[0].find("read 77"), std::string::npos) << all;
	EXPECT_LT(millisOf(texts[0]), 10000) << all;
	for (int rank = 0; rank < 2; ++rank) {
		EXPECT_EQ(texts[rank].find("watchdog"), std::string::npos) << "rank " << rank << "\n" << all;
		EXPECT_NE(texts[rank].find("free class"), std::string::npos) << "rank " << rank << "\n" << all;
	}
	takeDown();
}

/* The lock kind rank 0 holds on rank 1 when its host drops off the network. */
class RemoteLockFaultTest : public RemoteFaultTest, public testing::WithParamInterface<std::string>
{
};

TEST_P(RemoteLockFaultTest, ALostHoldersLockIsReleasedForTheNextExclusiveLocker)
{
	const std::string kind = GetParam();
	bringUp(3);
	if (IsSkipped() || HasFatalFailure())
		return;
	const std::string results = makeResultsDir();
	/* --map-by node: rank r on host r + 1; rank 0 shares host 1 with mpirun. */
	CommandResult r = run({ "-np", "3", "--map-by", "node", "-x", "RMA_NET_TIMEOUT_MS=1500", program_, results,
				"ip link set dev eth0 down", kind },
			      60);
	const ThreeRanks ranks = readRanks(results, r);
	const std::string(&texts)[3] = ranks.texts;
	const std::string &all = ranks.all;
	EXPECT_NE(texts[0].find("holding " + kind), std::string::npos) << all;
	/* The lost holder's lock came back within the liveness bound (1.5 s of silence), plus slack. */
	const std::string &survivor = texts[2];
	auto at = survivor.find("exclusive after ");
	ASSERT_NE(at, std::string::npos) << "rank 2 never got its exclusive lock on rank 1\n" << all;
	const long ms = std::atol(survivor.c_str() + at + 16);
	RecordProperty("exclusive_ms", static_cast<int>(ms));
	EXPECT_LT(ms, 10000) << all;
	/* It saw what the lost holder had flushed, then its own write. */
	const long theirs = kind == "shared" ? 1001 : kind == "lockall" ? 1002 : 1003;
	EXPECT_NE(survivor.find("read " + std::to_string(theirs) + ", then 7"), std::string::npos) << all;
	for (int rank = 0; rank < 3; ++rank)
		EXPECT_EQ(texts[rank].find("watchdog"), std::string::npos) << "rank " << rank << "\n" << all;
	EXPECT_NE(texts[1].find("served"), std::string::npos) << all;
	/* The survivors could free their window. */
	EXPECT_NE(texts[1].find("free class"), std::string::npos) << all;
	EXPECT_NE(texts[2].find("free class"), std::string::npos) << all;
	takeDown();
}

INSTANTIATE_TEST_SUITE_P(LockKinds, RemoteLockFaultTest, testing::Values("shared", "lockall", "exclusive"),
			 [](const testing::TestParamInfo<std::string> &info) { return info.param; });

} /* namespace */
} /* namespace librma */
