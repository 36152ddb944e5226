/* SPDX-License-Identifier: MIT */
/*
 * Which processes share a host (docs/design/mpi-dropin.md §3.1, §3.5 and the
 * implementation notes): the shim's own answer, not MPI_COMM_TYPE_SHARED's.
 * MPICH with MPIR_CVAR_NOLOCAL=1 (which its own RMA needs on this machine)
 * puts every process on a node of its own, yet librma's processes there
 * still share memory: what librma needs is what this file compares.
 */
#include "shim.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <climits>
#include <cstdio>
#include <cstring>
#include <map>
#include <string_view>
#include <type_traits>

namespace rmampi {

namespace {

/*
 * What two processes must have in common to share librma's memory. Fixed
 * size, no padding, compared byte for byte.
 */
struct HostIdentity {
	char host[80]; /* gethostname() */
	/* The kernel's boot id: two machines may share a host name (and the initial namespaces' inode numbers). */
	char boot[48];
	/* The network namespace: librma passes descriptors over abstract Unix sockets, which it scopes. */
	uint64_t netDev, netIno;
	/* The PID namespace: librma names its peers by pid (pidfds, cross-memory attach). */
	uint64_t pidDev, pidIno;
};
static_assert(sizeof(HostIdentity::host) > HOST_NAME_MAX);
static_assert(std::has_unique_object_representations_v<HostIdentity>, "padding would take part in the comparison");

/* The first line of @path into @out, which is zero-filled; unchanged if the file cannot be read. */
void readLine(const char *path, char *out, size_t size)
{
	char buf[128] = {};
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return;
	ssize_t n = read(fd, buf, sizeof buf - 1);
	close(fd);
	if (n <= 0)
		return;
	std::memcpy(out, buf, std::min(std::strcspn(buf, "\n"), size - 1));
}

/* The namespace @path (/proc/self/ns/...) names, as its nsfs device and inode (0, 0 if unknown). */
void namespaceOf(const char *path, uint64_t &dev, uint64_t &ino)
{
	struct stat st = {};
	if (stat(path, &st) == 0) {
		dev = st.st_dev;
		ino = st.st_ino;
	}
}

HostIdentity ownIdentity()
{
	HostIdentity id;
	std::memset(&id, 0, sizeof id);
	if (gethostname(id.host, sizeof id.host - 1) != 0)
		std::memset(id.host, 0, sizeof id.host);
	readLine("/proc/sys/kernel/random/boot_id", id.boot, sizeof id.boot);
	namespaceOf("/proc/self/ns/net", id.netDev, id.netIno);
	namespaceOf("/proc/self/ns/pid", id.pidDev, id.pidIno);
	return id;
}

} /* namespace */

void mapHosts()
{
	Shim &s = shim();
	s.hostOf.assign(s.worldSize, 0);
	for (int r = 0; r < s.worldSize; r++)
		s.hostOf[r] = r;

	HostIdentity mine = ownIdentity();
	std::vector<HostIdentity> all(s.worldSize);
	if (PMPI_Allgather(&mine, sizeof mine, MPI_BYTE, all.data(), sizeof mine, MPI_BYTE, s.world) == MPI_SUCCESS) {
		/* Host id: the first world rank with the same identity. */
		std::map<std::string_view, int> first;
		for (int r = 0; r < s.worldSize; r++) {
			std::string_view key(reinterpret_cast<const char *>(&all[r]), sizeof(HostIdentity));
			s.hostOf[r] = first.emplace(key, r).first->second;
		}
	} else if (s.worldRank == 0) {
		/* Every process stays a host of its own: windows of several processes go through the MPI. */
		std::fprintf(stderr, "librma-mpi: the host identity allgather failed: every window of several "
				     "processes goes through the MPI\n");
	}
	PMPI_Comm_split(s.world, s.hostOf[s.worldRank], s.worldRank, &s.node);
}

bool onOneHost(const std::vector<int> &worldRanks)
{
	const Shim &s = shim();
	if (s.hostOf.size() != static_cast<size_t>(s.worldSize))
		return false;
	int mine = s.hostOf[s.worldRank];
	for (int r : worldRanks)
		if (r < 0 || r >= s.worldSize || s.hostOf[r] != mine)
			return false;
	return true;
}

} /* namespace rmampi */
