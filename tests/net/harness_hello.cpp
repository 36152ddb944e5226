/* SPDX-License-Identifier: MIT */
/*
 * A rank of a job that mpirun.openmpi starts across the namespace hosts of
 * tools/netns/rma-netns (harness_test). It joins through the PMIx bootstrap
 * and checks what the bootstrap says about hosts against what the kernel
 * says: ranks share a host index exactly when they share a network
 * namespace (and the host name the harness gave that namespace).
 *
 * Usage: harness_hello HOSTS
 *
 * On stdout, one line per rank:
 *   "hello rank R of N: host H of NH, local peers A,B, netns I, hostname X"
 * then, after the descriptor checks,
 *   "rank R: fds among local peers ok", "rank R: fds across hosts refused ok"
 *   (the second only with two hosts or more) and "rank R: done".
 * A failed check prints "rank R: check failed: ..." on stderr and exits 1.
 */
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
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

/* One write per failure, so that the ranks' messages do not interleave. */
#define CHECK(cond, ...)                                                                                               \
	do {                                                                                                           \
		if (!(cond)) {                                                                                         \
			char why[512];                                                                                 \
			std::snprintf(why, sizeof(why), __VA_ARGS__);                                                  \
			std::fprintf(stderr, "rank %d: check failed: %s: %s\n", myRank, #cond, why);                   \
			std::exit(1);                                                                                  \
		}                                                                                                      \
	} while (0)

/* What each rank tells the others about where the kernel put it. */
struct Where {
	uint64_t netns;	   /* inode of /proc/self/ns/net */
	char hostname[64]; /* gethostname(): the harness names it after the namespace */
};

Where whereAmI()
{
	Where w{};
	struct stat st;
	CHECK(stat("/proc/self/ns/net", &st) == 0, "stat /proc/self/ns/net: %s", std::strerror(errno));
	w.netns = st.st_ino;
	CHECK(gethostname(w.hostname, sizeof(w.hostname) - 1) == 0, "gethostname: %s", std::strerror(errno));
	return w;
}

std::string joined(const std::vector<int> &ranks)
{
	std::string text;
	for (int r : ranks) {
		if (!text.empty())
			text += ',';
		text += std::to_string(r);
	}
	return text;
}

UniqueFd tagged(int rank)
{
	UniqueFd fd(memfd_create("harness-hello", MFD_CLOEXEC));
	/* append, not "lit" + string: GCC 12 at -O3 warns falsely (-Wrestrict) on the latter. */
	std::string tag("from ");
	tag.append(std::to_string(rank));
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

/* One memfd per member, among this host's ranks: each gets every other's, tagged with its sender. */
void fdsAmongLocalPeers(Bootstrap &b, const std::vector<int> &local)
{
	const int myIndex = static_cast<int>(std::find(local.begin(), local.end(), b.rank()) - local.begin());
	UniqueFd mine = tagged(b.rank());
	CHECK(mine.isValid(), "memfd: %s", std::strerror(errno));
	const int raw = mine.get();
	GatherResult out;
	int rc = b.allgather(1, 1, local, myIndex, {}, { &raw, 1 }, out);
	CHECK(rc == RMA_SUCCESS, "allgather with fds over local peers %s: %s", joined(local).c_str(),
	      errorMessage(rc).c_str());
	CHECK(out.fds.size() == local.size(), "%zu fds from %zu local peers", out.fds.size(), local.size());
	for (std::size_t i = 0; i < local.size(); ++i) {
		CHECK(out.fdCounts[i] == 1, "member %zu gave %d fds", i, out.fdCounts[i]);
		std::string expect("from ");
		expect.append(std::to_string(local[i]));
		CHECK(tagOf(out.fds[i].get()) == expect, "fd %zu holds '%s', expected '%s'", i,
		      tagOf(out.fds[i].get()).c_str(), expect.c_str());
	}
	std::printf("rank %d: fds among local peers ok\n", b.rank());
}

/* The same over the whole job, which spans hosts: every member is refused, none hangs. */
void fdsAcrossHostsRefused(Bootstrap &b, const std::vector<int> &world)
{
	UniqueFd mine = tagged(b.rank());
	const int raw = mine.get();
	GatherResult out;
	int rc = b.allgather(1, 2, world, b.rank(), {}, { &raw, 1 }, out);
	CHECK(rc != RMA_SUCCESS, "descriptors crossed hosts");
	std::string message = errorMessage(rc);
	CHECK(errorClass(rc) == RMA_ERR_INTERN && message.find("descriptors cannot cross hosts") != std::string::npos,
	      "refused with class %d: %s", errorClass(rc), message.c_str());
	std::printf("rank %d: fds across hosts refused ok\n", b.rank());
}

} /* namespace */

int main(int argc, char **argv)
{
	const int expectedHosts = argc > 1 ? std::atoi(argv[1]) : -1;
	auto boot = Bootstrap::fromEnvironment();
	if (!boot.ok()) {
		std::fprintf(stderr, "harness_hello: %s\n", errorMessage(boot.code()).c_str());
		return 1;
	}
	Bootstrap &b = **boot;
	myRank = b.rank();
	CHECK(std::string(b.kind()) == "pmix", "bootstrap %s, expected pmix", b.kind());
	const int n = b.size();
	std::vector<int> world(n);
	std::iota(world.begin(), world.end(), 0);

	/* Where every rank is, according to the kernel. */
	const Where me = whereAmI();
	GatherResult out;
	int rc = b.allgather(1, 0, world, b.rank(), { reinterpret_cast<const std::byte *>(&me), sizeof(me) }, {}, out);
	CHECK(rc == RMA_SUCCESS, "allgather of locations: %s", errorMessage(rc).c_str());
	CHECK(out.data.size() == n * sizeof(Where), "%zu bytes of locations", out.data.size());
	std::vector<Where> where(n);
	std::memcpy(where.data(), out.data.data(), out.data.size());

	std::set<int> hosts;
	std::vector<int> local;
	for (int r = 0; r < n; ++r) {
		hosts.insert(b.host(r));
		const bool sameHost = b.host(r) == b.host(b.rank());
		const bool sameNetns = where[r].netns == me.netns;
		const bool sameName = std::strncmp(where[r].hostname, me.hostname, sizeof(me.hostname)) == 0;
		CHECK(sameHost == sameNetns, "rank %d: host %d (mine %d) but netns %llu (mine %llu)", r, b.host(r),
		      b.host(b.rank()), (unsigned long long)where[r].netns, (unsigned long long)me.netns);
		CHECK(sameHost == sameName, "rank %d: host %d (mine %d) but host name '%s' (mine '%s')", r, b.host(r),
		      b.host(b.rank()), where[r].hostname, me.hostname);
		if (sameHost)
			local.push_back(r);
	}
	/* Host indices are numbered in order of first appearance: 0..NH-1. */
	CHECK(*hosts.begin() == 0 && *hosts.rbegin() == int(hosts.size()) - 1, "host indices %d..%d for %zu hosts",
	      *hosts.begin(), *hosts.rbegin(), hosts.size());
	if (expectedHosts > 0)
		CHECK(int(hosts.size()) == expectedHosts, "%zu hosts, expected %d", hosts.size(), expectedHosts);
	std::printf("hello rank %d of %d: host %d of %zu, local peers %s, netns %llu, hostname %s\n", b.rank(), n,
		    b.host(b.rank()), hosts.size(), joined(local).c_str(), (unsigned long long)me.netns,
		    b.hostName().c_str());

	if (local.size() > 1)
		fdsAmongLocalPeers(b, local);
	if (hosts.size() > 1)
		fdsAcrossHostsRefused(b, world);

	/* The bootstrap still works after the refusal; nobody leaves before everyone is done. */
	rc = b.allgather(1, 3, world, b.rank(), {}, {}, out);
	CHECK(rc == RMA_SUCCESS, "closing barrier: %s", errorMessage(rc).c_str());
	std::printf("rank %d: done\n", b.rank());
	std::fflush(stdout);
	return 0;
}
