/* SPDX-License-Identifier: MIT */
#include "net/features.h"

#include <sys/mman.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>

#include <liburing.h>

#include "common/knobs.h"
#include "error/error.h"
#include "net/uring_compat.h"

namespace librma::net {

Result<UringPolicy> parseUringPolicy(const char *value)
{
	if (!value || !*value || !std::strcmp(value, "auto"))
		return UringPolicy::Prefer;
	if (!std::strcmp(value, "off"))
		return UringPolicy::Off;
	if (!std::strcmp(value, "require"))
		return UringPolicy::Require;
	return Result<UringPolicy>::failure(
		makeError(RMA_ERR_ARG, "RMA_NET_URING='%s': accepts auto, off or require (default auto)", value));
}

Result<UringPolicy> uringPolicyFromEnvironment()
{
	return parseUringPolicy(knobValue("RMA_NET_URING"));
}

Result<ZcPolicy> parseZcPolicy(const char *value)
{
	if (!value || !*value || !std::strcmp(value, "auto"))
		return ZcPolicy::Auto;
	if (!std::strcmp(value, "on"))
		return ZcPolicy::On;
	if (!std::strcmp(value, "off"))
		return ZcPolicy::Off;
	return Result<ZcPolicy>::failure(
		makeError(RMA_ERR_ARG, "RMA_NET_ZC='%s': accepts auto, on or off (default auto)", value));
}

Result<ZcPolicy> zcPolicyFromEnvironment()
{
	return parseZcPolicy(knobValue("RMA_NET_ZC"));
}

const char *zcPolicyName(ZcPolicy p)
{
	return p == ZcPolicy::On ? "on" : p == ZcPolicy::Off ? "off" : "auto";
}

std::string NetFeatures::describe() const
{
	if (!uring)
		return std::string("io_uring unavailable: ") + std::strerror(uringErrno);
	std::string s = "io_uring:";
	s += deferTaskrun ? " defer_taskrun" : coopTaskrun ? " coop_taskrun" : " plain_taskrun";
	s += bufRing ? " buf_ring" : " no_buf_ring";
	s += recvMultishot ? " recv_multishot" : " single_shot_recv";
	s += sendZc ? " send_zc" : " no_send_zc";
	if (sendZcReportUsage)
		s += " zc_report_usage";
	s += futexWait ? " futex_wait" : " eventfd_wake";
	return s;
}

const char *NetFeatures::firstMissing() const
{
	if (!uring)
		return "io_uring";
	if (!deferTaskrun)
		return "IORING_SETUP_DEFER_TASKRUN";
	if (!getEvents)
		return "IORING_FEAT_EXT_ARG";
	if (!bufRing)
		return "provided buffer rings";
	if (!recvMultishot)
		return "multishot recv";
	if (!sendZc)
		return "IORING_OP_SEND_ZC";
	if (!futexWait)
		return "IORING_OP_FUTEX_WAIT";
	return "";
}

NetFeatures probeNetFeaturesUncached()
{
	NetFeatures f;
	io_uring ring;
	io_uring_params p{};
	p.flags = IORING_SETUP_SINGLE_ISSUER | IORING_SETUP_DEFER_TASKRUN;
	int rc = io_uring_queue_init_params(4, &ring, &p);
	if (rc == 0) {
		f.deferTaskrun = true;
	} else {
		p = {};
		p.flags = IORING_SETUP_COOP_TASKRUN;
		rc = io_uring_queue_init_params(4, &ring, &p);
		if (rc == 0) {
			f.coopTaskrun = true;
		} else {
			p = {};
			rc = io_uring_queue_init_params(4, &ring, &p);
		}
	}
	if (rc < 0) {
		f.uringErrno = -rc;
		return f;
	}
	f.uring = true;
	f.getEvents = (p.features & IORING_FEAT_EXT_ARG) != 0;

	if (io_uring_probe *probe = io_uring_get_probe_ring(&ring)) {
		f.sendZc = io_uring_opcode_supported(probe, IORING_OP_SEND_ZC);
		/* Multishot recv came with 6.0, as SEND_ZC did; the recv flag itself cannot be probed without a socket. */
		f.recvMultishot = f.sendZc;
		f.futexWait = io_uring_opcode_supported(probe, compat::kOpFutexWait);
		io_uring_free_probe(probe);
	}
	if (f.sendZc) {
		/*
		 * IORING_SEND_ZC_REPORT_USAGE: a kernel without it (6.0, 6.1)
		 * refuses the flag when it prepares the request (EINVAL), before
		 * it looks at the socket, which fd -1 fails (EBADF).
		 */
		if (io_uring_sqe *s = io_uring_get_sqe(&ring)) {
			io_uring_prep_send_zc(s, -1, nullptr, 0, 0, compat::kSendZcReportUsage);
			io_uring_cqe *cqe = nullptr;
			if (io_uring_submit_and_wait(&ring, 1) >= 0 && io_uring_peek_cqe(&ring, &cqe) == 0)
				f.sendZcReportUsage = cqe->res != -EINVAL;
		}
	}

	/* A provided buffer ring of one entry, registered and unregistered. */
	const std::size_t bytes = 4096;
	void *mem = mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (mem != MAP_FAILED) {
		io_uring_buf_reg reg{};
		reg.ring_addr = reinterpret_cast<uint64_t>(mem);
		reg.ring_entries = 1;
		reg.bgid = 0;
		if (io_uring_register_buf_ring(&ring, &reg, 0) == 0) {
			f.bufRing = true;
			io_uring_unregister_buf_ring(&ring, 0);
		}
		munmap(mem, bytes);
	}
	io_uring_queue_exit(&ring);
	return f;
}

const NetFeatures &probeNetFeatures()
{
	static const NetFeatures cached = probeNetFeaturesUncached();
	return cached;
}

} /* namespace librma::net */
