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
 * RMA_NET_ZC (registered in lib/common/knobs.h): zero-copy sends
 * (IORING_OP_SEND_ZC, 6.0) for the io_uring loop's sends of at least
 * RMA_NET_ZC_MIN bytes (default 65536; in practice the server's GET_REPLY
 * data). The kernel reads such a send's bytes until a notification that
 * comes after the send's own completion, so the loop holds the buffer
 * until then (uring_loop.cpp).
 *   auto     (default) SEND_ZC on a connection until the kernel reports
 *            (IORING_SEND_ZC_REPORT_USAGE, 6.2) that it copied the data
 *            anyway, then plain sends on that connection: a zero-copy skb
 *            delivered locally (loopback, veth between namespaces) is
 *            copied on receive, where SEND_ZC only adds the page pinning
 *            and the notification (measured on veth: 0.79 x the plain
 *            sends' get bandwidth at 1 MiB; README, Performance, "Across
 *            hosts"). Without the report (6.0, 6.1): plain sends;
 *   on       SEND_ZC for every such send when the kernel has the opcode,
 *            copied or not (plain sends without it; a socket that refuses
 *            it, AF_UNIX, gets plain sends);
 *   off      plain sends.
 * RMA_NET_URING=require already fails on a kernel without SEND_ZC.
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

/* RMA_NET_ZC: see above. */
enum class ZcPolicy { Off, Auto, On };

/* Parse an RMA_NET_ZC value (nullptr or "": auto). RMA_ERR_ARG naming the variable when bad. */
Result<ZcPolicy> parseZcPolicy(const char *value);

/* parseZcPolicy() of this process's environment. */
Result<ZcPolicy> zcPolicyFromEnvironment();

/* "auto", "on" or "off". */
const char *zcPolicyName(ZcPolicy p);

/* What one probe found. Every field false when io_uring cannot be used at all. */
struct NetFeatures {
	bool uring = false;	    /* a ring can be created (not disabled, not filtered by seccomp) */
	int uringErrno = 0;	    /* why not, when !uring */
	bool deferTaskrun = false;  /* IORING_SETUP_SINGLE_ISSUER | DEFER_TASKRUN (6.1) */
	bool coopTaskrun = false;   /* IORING_SETUP_COOP_TASKRUN (5.19) */
	bool bufRing = false;	    /* provided buffer rings, io_uring_register_buf_ring (5.19) */
	bool recvMultishot = false; /* IORING_RECV_MULTISHOT (6.0; probed with the SEND_ZC opcode of the same release) */
	bool sendZc = false;	    /* IORING_OP_SEND_ZC (6.0) */
	bool sendZcReportUsage = false; /* IORING_SEND_ZC_REPORT_USAGE (6.2): the notification says if the kernel copied */
	bool futexWait = false;	    /* IORING_OP_FUTEX_WAIT (6.7) */
	bool getEvents = false;	    /* IORING_FEAT_EXT_ARG and friends: io_uring_get_events works */

	/*
	 * "io_uring: defer_taskrun buf_ring recv_multishot send_zc zc_report_usage futex_wait"
	 * or "io_uring unavailable: ...".
	 */
	std::string describe() const;
	/* The first feature of §4.1 that is missing ("" when all are there). */
	const char *firstMissing() const;
};

/* Probe once (creates and destroys a small ring); cached afterwards. */
const NetFeatures &probeNetFeatures();

/* Probe now, without the cache (tests). */
NetFeatures probeNetFeaturesUncached();

} /* namespace librma::net */
