/* SPDX-License-Identifier: MIT */
/*
 * A link cut in the middle of an epoch across two simulated hosts (issue
 * #14, docs/design/inter-host.md §7): remote_fault's rank 0 cuts its own
 * host's link while it puts and flushes to rank 1; rank 1 waits in a fence.
 * Both must fail with RMA_ERR_PROC_FAILED instead of hanging, within the
 * liveness bound (RMA_NET_TIMEOUT_MS, set to 1500 here, plus slack for a
 * loaded machine), and free their windows. mpirun itself cannot finish
 * (its daemon is behind the cut): the harness's timeout ends it, and the
 * ranks' results come through files.
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
};

std::string slurp(const std::string &path)
{
	std::ifstream in(path);
	std::stringstream s;
	s << in.rdbuf();
	return s.str();
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
	const std::string results = dir_ + "/fault";
	ASSERT_EQ(mkdir(results.c_str(), 0755), 0) << results;
	/* mpirun cannot end on its own: bounded by the harness. */
	setenv("RMA_NETNS_TIMEOUT", "20", 1);
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

} /* namespace */
} /* namespace librma */
