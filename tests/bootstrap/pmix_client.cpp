/* SPDX-License-Identifier: MIT */
/*
 * A rank of a job started by a PMIx launcher (mpirun.openmpi), for
 * pmix_test. Each scenario checks what the PMIx bootstrap gives and prints
 * "rank R of N: SCENARIO ok (BOOTSTRAP)" on stdout; a failed check prints
 * "rank R: WHAT" on stderr and exits 1.
 *
 * Usage: pmix_client facts N      rank, size N, kind, pids, hosts, status page clean
 *        pmix_client gather       allgather of data and descriptors, world and subsets, instance ids
 *        pmix_client status       a death recorded by one rank is seen by the others (shared page)
 *        pmix_client abort C      the last rank aborts the job with code C while the others wait in a collective
 *        pmix_client join         only join; on failure print the error and exit 3
 */
#include <sys/mman.h>
#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <numeric>
#include <set>
#include <string>
#include <vector>

#include "bootstrap/bootstrap.h"
#include "error/error.h"

using namespace librma;

namespace {

int myRank = -1;

#define CHECK(cond, ...)                                                                                               \
	do {                                                                                                           \
		if (!(cond)) {                                                                                         \
			std::fprintf(stderr, "rank %d: check failed: %s: ", myRank, #cond);                            \
			std::fprintf(stderr, __VA_ARGS__);                                                             \
			std::fprintf(stderr, "\n");                                                                    \
			std::exit(1);                                                                                  \
		}                                                                                                      \
	} while (0)

std::vector<int> worldOf(const Bootstrap &b)
{
	std::vector<int> world(b.size());
	std::iota(world.begin(), world.end(), 0);
	return world;
}

UniqueFd tagged(int rank, int k)
{
	UniqueFd fd(memfd_create("pmix-client", MFD_CLOEXEC));
	std::string tag = std::to_string(rank) + ":" + std::to_string(k);
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

void barrier(Bootstrap &b, uint64_t seq)
{
	GatherResult out;
	int rc = b.allgather(99, seq, worldOf(b), b.rank(), {}, {}, out);
	CHECK(rc == RMA_SUCCESS, "barrier: %s", errorMessage(rc).c_str());
}

void facts(Bootstrap &b, int expectedSize)
{
	const char *envRank = std::getenv("PMIX_RANK");
	CHECK(std::string(b.kind()) == "pmix", "kind %s", b.kind());
	CHECK(envRank && std::atoi(envRank) == b.rank(), "PMIX_RANK=%s", envRank ? envRank : "(unset)");
	CHECK(b.size() == expectedSize, "size %d", b.size());
	std::set<pid_t> pids;
	for (int r = 0; r < b.size(); ++r) {
		pids.insert(b.pid(r));
		CHECK(b.host(r) == 0, "rank %d on host %d: one host expected", r, b.host(r));
		CHECK(kill(b.pid(r), 0) == 0, "rank %d's pid %d is not alive", r, b.pid(r));
		CHECK(!b.dead(r), "rank %d marked dead", r);
	}
	CHECK(b.pid(b.rank()) == getpid(), "own pid %d", b.pid(b.rank()));
	CHECK(pids.size() == std::size_t(b.size()), "%zu distinct pids", pids.size());
	CHECK(b.deadCountWord()->load() == 0, "dead count %llu", (unsigned long long)b.deadCountWord()->load());
	CHECK(!b.hostName().empty(), "no host name");
	/* Nobody leaves before everyone has looked at every pid. */
	barrier(b, 1);
}

void gather(Bootstrap &b)
{
	const int n = b.size();
	const int me = b.rank();
	std::vector<int> world = worldOf(b);

	/* Data and descriptors over the world: rank r gives r + 1 tagged memfds and 3 bytes. */
	std::vector<UniqueFd> owned;
	std::vector<int> raw;
	for (int k = 0; k <= me; ++k) {
		owned.push_back(tagged(me, k));
		raw.push_back(owned.back().get());
	}
	const std::byte data[3] = { std::byte(me), std::byte(0xa5), std::byte(me * 3) };
	GatherResult out;
	int rc = b.allgather(1, 1, world, me, data, raw, out);
	CHECK(rc == RMA_SUCCESS, "world allgather: %s", errorMessage(rc).c_str());
	CHECK(out.data.size() == std::size_t(3 * n), "%zu bytes", out.data.size());
	std::size_t at = 0;
	for (int r = 0; r < n; ++r) {
		CHECK(out.data[3 * r] == std::byte(r) && out.data[3 * r + 1] == std::byte(0xa5) &&
			      out.data[3 * r + 2] == std::byte(r * 3),
		      "data of rank %d", r);
		CHECK(out.fdCounts[r] == r + 1, "rank %d gave %d fds", r, out.fdCounts[r]);
		for (int k = 0; k <= r; ++k, ++at) {
			CHECK(at < out.fds.size(), "only %zu fds", out.fds.size());
			std::string expect = std::to_string(r) + ":" + std::to_string(k);
			CHECK(tagOf(out.fds[at].get()) == expect, "fd %zu holds %s, expected %s", at,
			      tagOf(out.fds[at].get()).c_str(), expect.c_str());
		}
	}
	CHECK(at == out.fds.size(), "%zu fds, expected %zu", out.fds.size(), at);
	const uint64_t worldInstance = out.instance;

	/* Every member got the same instance id: gather them. */
	GatherResult ids;
	rc = b.allgather(1, 2, world, me, { reinterpret_cast<const std::byte *>(&worldInstance), 8 }, {}, ids);
	CHECK(rc == RMA_SUCCESS, "instance allgather: %s", errorMessage(rc).c_str());
	for (int r = 0; r < n; ++r) {
		uint64_t theirs;
		std::memcpy(&theirs, ids.data.data() + 8 * r, 8);
		CHECK(theirs == worldInstance, "rank %d saw instance %llx, I saw %llx", r, (unsigned long long)theirs,
		      (unsigned long long)worldInstance);
	}
	CHECK(ids.instance != worldInstance, "two collectives share instance %llx", (unsigned long long)ids.instance);

	/* A subset in reverse order (the last rank is the hub), with descriptors from the hub only. */
	if (n >= 2) {
		std::vector<int> pair = { n - 1, 0 };
		if (me == n - 1 || me == 0) {
			int myIndex = me == n - 1 ? 0 : 1;
			std::vector<int> mine = myIndex == 0 ? std::vector<int>{ raw[0] } : std::vector<int>{};
			const std::byte one[1] = { std::byte(me) };
			GatherResult sub;
			rc = b.allgather(2, 1, pair, myIndex, one, mine, sub);
			CHECK(rc == RMA_SUCCESS, "pair allgather: %s", errorMessage(rc).c_str());
			CHECK(sub.data.size() == 2 && sub.data[0] == std::byte(n - 1) && sub.data[1] == std::byte(0),
			      "pair data");
			CHECK(sub.fdCounts == (std::vector<int>{ 1, 0 }), "pair counts");
			CHECK(sub.fds.size() == 1 && tagOf(sub.fds[0].get()) == std::to_string(n - 1) + ":0",
			      "pair fd");
			CHECK(sub.instance >> 40 == uint64_t(n - 1), "instance %llx not the hub's",
			      (unsigned long long)sub.instance);
		}
	}
	/* Reserved context and bad members are refused, not sent. */
	CHECK(errorClass(b.allgather(0, 5, world, me, {}, {}, out)) == RMA_ERR_ARG, "ctx 0 accepted");
	std::vector<int> bogus = { me, n };
	CHECK(errorClass(b.allgather(3, 1, bogus, 0, {}, {}, out)) == RMA_ERR_ARG, "rank %d accepted", n);
	barrier(b, 2);
}

void status(Bootstrap &b)
{
	const int n = b.size();
	CHECK(n >= 3, "needs 3 ranks");
	/* The last rank records a (pretend) death of rank 1; the page is the host's, so all see it. */
	if (b.rank() == n - 1)
		b.markDead(1);
	barrier(b, 3);
	CHECK(b.dead(1), "rank 1 not seen dead");
	CHECK(!b.dead(0) && !b.dead(n - 1), "others seen dead");
	CHECK(b.deadCountWord()->load() == 1, "dead count %llu", (unsigned long long)b.deadCountWord()->load());
	barrier(b, 4);
}

} /* namespace */

int main(int argc, char **argv)
{
	std::string scenario = argc > 1 ? argv[1] : "";
	auto boot = Bootstrap::fromEnvironment();
	if (!boot.ok()) {
		std::fprintf(stderr, "pmix_client: %s\n", errorMessage(boot.code()).c_str());
		return scenario == "join" ? 3 : 1;
	}
	Bootstrap &b = **boot;
	myRank = b.rank();
	if (scenario == "facts") {
		facts(b, argc > 2 ? std::atoi(argv[2]) : -1);
	} else if (scenario == "gather") {
		gather(b);
	} else if (scenario == "status") {
		status(b);
	} else if (scenario == "abort") {
		int code = argc > 2 ? std::atoi(argv[2]) : 1;
		if (b.rank() == b.size() - 1)
			b.abort(code);
		/* Never succeeds: the last rank does not come. It may fail once the launcher sees the abort. */
		GatherResult out;
		int rc = b.allgather(1, 1, worldOf(b), b.rank(), {}, {}, out);
		if (rc == RMA_SUCCESS)
			std::fprintf(stderr, "rank %d: a collective completed without the aborted rank\n", b.rank());
		else
			std::fprintf(stderr, "rank %d: %s\n", b.rank(), errorMessage(rc).c_str());
		return 1;
	} else if (scenario != "join") {
		std::fprintf(stderr, "pmix_client: unknown scenario '%s'\n", scenario.c_str());
		return 2;
	}
	std::printf("rank %d of %d: %s ok (%s)\n", b.rank(), b.size(), scenario.c_str(), b.kind());
	std::fflush(stdout);
	return 0;
}
