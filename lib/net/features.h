/* SPDX-License-Identifier: MIT */
/*
 * What the kernel's io_uring offers the net agent, probed once, and the
 * policy that decides what to do when a piece is missing
 * (docs/design/inter-host.md §4.6, STYLE.md habit 6).
 *
 * RMA_NET_URING (registered in lib/common/knobs.h):
 *   auto     (default) use io_uring with whatever the kernel has, falling
 *            back piece by piece; no io_uring at all -> the poll backend;
 *   off      never io_uring: the poll backend (epoll + nonblocking sockets);
 *   require  io_uring with every feature of §4.1 or an error naming the
 *            missing one.
 *
 * Thread safety: probeNetFeatures() is thread-safe (the first call probes,
 * later ones return the cached result); the rest are pure. Control path.
 */
#pragma once

#include <string>

#include "common/result.h"

namespace librma::net {

enum class UringPolicy { Off, Prefer, Require };

/* Parse an RMA_NET_URING value (nullptr or "": auto). RMA_ERR_ARG naming the variable when bad. */
Result<UringPolicy> parseUringPolicy(const char *value);

/* parseUringPolicy() of this process's environment. */
Result<UringPolicy> uringPolicyFromEnvironment();

/* What one probe found. Every field false when io_uring cannot be used at all. */
struct NetFeatures {
	bool uring = false;	    /* a ring can be created (not disabled, not filtered by seccomp) */
	int uringErrno = 0;	    /* why not, when !uring */
	bool deferTaskrun = false;  /* IORING_SETUP_SINGLE_ISSUER | DEFER_TASKRUN (6.1) */
	bool coopTaskrun = false;   /* IORING_SETUP_COOP_TASKRUN (5.19) */
	bool bufRing = false;	    /* provided buffer rings, io_uring_register_buf_ring (5.19) */
	bool recvMultishot = false; /* IORING_RECV_MULTISHOT (6.0; probed with the SEND_ZC opcode of the same release) */
	bool sendZc = false;	    /* IORING_OP_SEND_ZC (6.0) */
	bool futexWait = false;	    /* IORING_OP_FUTEX_WAIT (6.7) */
	bool getEvents = false;	    /* IORING_FEAT_EXT_ARG and friends: io_uring_get_events works */

	/* "io_uring: defer_taskrun buf_ring recv_multishot send_zc futex_wait" or "io_uring unavailable: ...". */
	std::string describe() const;
	/* The first feature of §4.1 that is missing ("" when all are there). */
	const char *firstMissing() const;
};

/* Probe once (creates and destroys a small ring); cached afterwards. */
const NetFeatures &probeNetFeatures();

/* Probe now, without the cache (tests). */
NetFeatures probeNetFeaturesUncached();

} /* namespace librma::net */
