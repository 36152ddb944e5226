/* SPDX-License-Identifier: MIT */
/*
 * Every environment variable librma and its tools read, in one table: its
 * accepted values, default and meaning. rma_init (and rmarun for the ones it
 * reads) checks them all first, so a garbage value fails the job at start
 * with a message naming the variable and what it accepts, instead of being
 * taken silently. The README's knob table is this table.
 *
 * Header-only: rmarun links the bootstrap library, not librma's core. A
 * knob whose value has structure is checked by its own parser, declared
 * below and defined beside it (RMA_PLACEMENT_WINDOWS: lib/numa); rmarun and
 * librma both link that component.
 */
#pragma once

#include <sys/stat.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <span>
#include <string>

#include "common/cpu_list.h"

namespace librma {

struct Knob {
	const char *name;
	const char *accepts; /* for the error message and the README */
	const char *byDefault;
	const char *what;
	bool (*valid)(const char *value);
	/* Instead of @valid for structured values: what is wrong with the value, "" if nothing. */
	std::string (*problem)(const char *value) = nullptr;
};

/* RMA_PLACEMENT_WINDOWS's check (lib/numa/placement.cpp). */
std::string windowPlacementsProblem(const char *text);

namespace knobs {

inline bool oneOf(const char *v, std::initializer_list<const char *> words)
{
	for (const char *w : words)
		if (!std::strcmp(v, w))
			return true;
	return false;
}

inline bool boolean(const char *v) { return oneOf(v, { "0", "1" }); }

inline bool number(const char *v)
{
	char *end;
	errno = 0;
	long n = std::strtol(v, &end, 10);
	return !errno && end != v && !*end && n >= 0;
}

inline bool cpuList(const char *v)
{
	return parseCpuListStrict(v).has_value();
}

inline bool directory(const char *v)
{
	struct stat st;
	return stat(v, &st) == 0 && S_ISDIR(st.st_mode);
}

inline bool accPath(const char *v) { return oneOf(v, { "auto", "origin", "ring" }); }
inline bool progress(const char *v) { return oneOf(v, { "none", "thread", "agent" }); }
inline bool spin(const char *v) { return oneOf(v, { "auto", "spin", "yield" }); }
inline bool netUring(const char *v) { return oneOf(v, { "auto", "off", "require" }); }
inline bool netZc(const char *v) { return oneOf(v, { "auto", "on", "off" }); }
inline bool netTimeout(const char *v) { return number(v) && std::atol(v) >= 100 && std::atol(v) <= 600000; }
inline bool sqpollIdle(const char *v) { return number(v) && std::atol(v) <= 10000; }
inline bool serverPriority(const char *v) { return oneOf(v, { "normal", "fifo" }); }
inline bool hugePages(const char *v) { return oneOf(v, { "off", "prefer", "require" }); }

/* The rma_placement words: local, interleave, none or node:N. */
inline bool placement(const char *v)
{
	if (oneOf(v, { "local", "interleave", "none" }))
		return true;
	return !std::strncmp(v, "node:", 5) && number(v + 5);
}

/*
 * RMA_STATS: 0 or 1, an existing directory (the file goes in it), or the
 * path of a .json file whose directory exists.
 */
inline bool stats(const char *v)
{
	if (oneOf(v, { "0", "1" }) || directory(v))
		return true;
	const std::size_t n = std::strlen(v);
	if (n < 6 || std::strcmp(v + n - 5, ".json") != 0)
		return false;
	const char *slash = std::strrchr(v, '/');
	if (!slash)
		return true; /* in the working directory */
	const std::string dir(v, slash == v ? 1 : static_cast<std::size_t>(slash - v));
	return directory(dir.c_str());
}

inline bool boot(const char *v)
{
	return oneOf(v, { "rmarun", "pmix", "singleton" });
}

} /* namespace knobs */

inline constexpr Knob kKnobs[] = {
	{ "RMA_PROGRESS", "none, thread or agent", "thread",
	  "who drains the accumulate rings: waiting origins only, a thread in each rank, or one agent per NUMA node "
	  "(rmarun --progress)",
	  knobs::progress },
	{ "RMA_PROGRESS_CORE", "a CPU number or list", "the last CPU",
	  "the CPUs the agents are pinned to, one per NUMA node (rmarun --progress-core)", knobs::cpuList },
	{ "RMA_ACC_PATH", "auto, origin or ring", "auto",
	  "forces the accumulate path for the whole job (a test and benchmark knob)", knobs::accPath },
	{ "RMA_NO_MEMBARRIER", "0 or 1", "0",
	  "1 behaves as a kernel without membarrier(): no plain mode, origin atomics and the atomic ring only",
	  knobs::boolean },
	{ "RMA_SPIN", "auto, spin or yield", "auto",
	  "how waits poll: spin (a pause loop before yielding), yield (yield right after a few polls: for more "
	  "ranks than CPUs), auto (yield when the job has more ranks than the host has CPUs)",
	  knobs::spin },
	{ "RMA_NO_PIDFD", "0 or 1", "0",
	  "1 makes rmarun watch its ranks through SIGCHLD alone, as on a kernel without pidfd_open", knobs::boolean },
	{ "RMA_LAUNCHER_MAX_MIB", "a number of MiB", "1024",
	  "the most rmarun buffers for its ranks' bootstrap traffic; a rank that exceeds it fails the job",
	  knobs::number },
	{ "RMA_NET_URING", "auto, off or require", "auto",
	  "the inter-host engine's io_uring use: auto (io_uring with what the kernel has, else epoll), off (always "
	  "epoll and nonblocking sockets), require (io_uring with every feature the design uses, or an error)",
	  knobs::netUring },
	{ "RMA_NET_ZC", "auto, on or off", "auto",
	  "zero-copy sends (io_uring SEND_ZC) of a host's large replies: auto (on a connection until the kernel reports "
	  "it copied anyway, as on loopback and veth, then plain sends; plain sends on kernels before 6.2), on (always "
	  "where the kernel has SEND_ZC), off (plain sends)",
	  knobs::netZc },
	{ "RMA_NET_ZC_MIN", "a number of bytes", "65536",
	  "the smallest send that goes zero-copy under RMA_NET_ZC (smaller ones are cheaper to copy)", knobs::number },
	{ "RMA_NET_BULK", "a number of connections, 0 to 16", "2",
	  "bulk connections from each process to each other host's server it sends to: puts and gets of at least "
	  "RMA_NET_BULK_MIN bytes go there in 256 KiB chunks, round-robin, received whole where they are applied "
	  "from; 0 sends everything on the one ordered connection",
	  knobs::number },
	{ "RMA_NET_BULK_MIN", "a number of bytes", "262144",
	  "the smallest put or get that takes the bulk connections (RMA_NET_BULK)", knobs::number },
	{ "RMA_NET_FIXED_BUFFERS", "0 or 1", "1",
	  "1: a host server reads its bulk connections into buffers registered with io_uring (READ_FIXED; pages "
	  "pinned once); 0: plain receives into the same buffers",
	  knobs::boolean },
	{ "RMA_NET_SQPOLL", "a number of milliseconds, 0 to 10000", "0",
	  "N > 0: a host server's io_uring gets a kernel thread that polls its submission queue (IORING_SETUP_SQPOLL) "
	  "and sleeps after N ms without submissions, so the server submits without system calls while it is awake; "
	  "a third busy thread per host, for hosts with a core to spare; 0: no such thread",
	  knobs::sqpollIdle },
	{ "RMA_NET_SERVER_PRIORITY", "normal or fifo", "normal",
	  "fifo: a host server thread runs SCHED_FIFO, so another host's operation preempts the ranks computing on "
	  "its CPU (a passive target answers as fast as an active one), and spins 50 us after a frame unless "
	  "RMA_NET_SPIN_US says otherwise; needs CAP_SYS_NICE or RLIMIT_RTPRIO >= 1 (else normal, said on stderr)",
	  knobs::serverPriority },
	{ "RMA_NET_IF", "an interface name, an IPv4 address or a CIDR (10.0.0.0/24)", "the first non-loopback IPv4 address up",
	  "where a job that spans hosts listens for other hosts' operations (loopback only when named)", nullptr },
	{ "RMA_NET_TIMEOUT_MS", "a number of milliseconds, 100 to 600000", "3000",
	  "how long an origin waits for another host to answer a flush, get or unlock, and how long a connection "
	  "may stay silent (a dead host, a cut link), before the operations fail with RMA_ERR_PROC_FAILED",
	  knobs::netTimeout },
	{ "RMA_NET_SPIN_US", "a number of microseconds", "200",
	  "how long a host's server thread busy-polls after its last frame before it parks (0: park at once)",
	  knobs::number },
	{ "RMA_PLACEMENT", "local, interleave, node:N or none", "local",
	  "where window and rma_alloc_mem memory goes when the program's rma_placement info key does not say "
	  "(rmarun --placement sets it from the file's memory.default)",
	  knobs::placement },
	{ "RMA_HUGE_PAGES", "off, prefer or require", "prefer",
	  "whether window and rma_alloc_mem memory comes from the 2 MiB huge-page pool when the program's "
	  "rma_huge_pages info key does not say (rmarun --placement sets it from the file's huge_pages)",
	  knobs::hugePages },
	{ "RMA_PLACEMENT_WINDOWS", "NAME=POLICY items separated by ';' (POLICY: local, interleave, node:N or none)",
	  "none",
	  "where the memory of a window created with info key rma_win_name=NAME goes when its rma_placement info "
	  "key does not say (before RMA_PLACEMENT; rmarun --placement sets it from the file's memory.windows)",
	  nullptr, windowPlacementsProblem },
	{ "RMA_BOOT", "rmarun, pmix or singleton", "detected",
	  "forces how a rank joins its job; unset: rmarun's if RMA_BOOT_FD is set, else PMIx if PMIX_NAMESPACE and "
	  "PMIX_RANK are (mpirun, prterun, srun --mpi=pmix), else a job of one",
	  knobs::boot },
	{ "RMA_BOOT_BOARD", "0 or 1", "auto",
	  "the ranks of a host meet for collectives (window creation and free, communicator creation, barriers) on "
	  "a shared-memory board instead of through the launcher: 1 always, 0 never; unset: when they do not "
	  "outnumber the host's CPUs",
	  knobs::boolean },
	{ "RMA_VERBOSE", "0 or 1", "0",
	  "1 makes each rank print one line at init: its host, the bootstrap, and which ranks it reaches by shared "
	  "memory and which by TCP; and a host server one line when it stops: its io_uring features and how many "
	  "sends, zero-copy ones and bytes it made",
	  knobs::boolean },
	{ "RMA_STATS", "0, 1, a directory or a FILE.json in an existing directory", "0",
	  "traffic statistics: every window counts operations and bytes per origin->target pair and kind, and "
	  "writes them at rma_win_free (or rma_finalize) into one JSON file per job: 1 is ./rma-stats.json, a "
	  "directory DIR/rma-stats.json (rmatune recommend --traffic reads it)",
	  knobs::stats },
	{ "RMA_TOPOLOGY", "a directory laid out like /sys/devices/system", "/sys/devices/system",
	  "reads the NUMA topology from another tree (tests inject topologies with it)", knobs::directory },
};

/* The value of @name if set and non-empty, else nullptr. */
inline const char *knobValue(const char *name)
{
	const char *v = std::getenv(name);
	return v && *v ? v : nullptr;
}

/*
 * Check the knobs in @names (all when empty). Returns "" when each set one
 * is valid, else the first complaint: "RMA_ACC_PATH='banana': accepts
 * auto, origin or ring (default auto)".
 */
inline std::string checkKnobs(std::span<const char *const> names = {})
{
	for (const Knob &k : kKnobs) {
		if (!names.empty()) {
			bool wanted = false;
			for (const char *n : names)
				wanted |= !std::strcmp(n, k.name);
			if (!wanted)
				continue;
		}
		const char *v = knobValue(k.name);
		if (v && k.valid && !k.valid(v))
			return std::string(k.name) + "='" + v + "': accepts " + k.accepts + " (default " + k.byDefault +
			       ")";
		if (v && k.problem) {
			if (std::string why = k.problem(v); !why.empty())
				return std::string(k.name) + "='" + v + "': " + why + "; accepts " + k.accepts;
		}
	}
	return "";
}

} /* namespace librma */
