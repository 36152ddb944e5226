/* SPDX-License-Identifier: MIT */
#include "numa/topology.h"

#include <sys/syscall.h>
#include <unistd.h>

#include <array>
#include <cerrno>
#include <climits>

#include "config.h"
#include "error/error.h"

#ifdef HAVE_LIBNUMA
#include <numaif.h>
#else
#include <linux/mempolicy.h>
#endif

namespace librma {

namespace {

/*
 * Node masks as the kernel reads them. 4096 bits cover any MAX_NUMNODES a
 * distribution kernel is built with; get_mempolicy() fails if the mask is
 * shorter than the kernel's node count.
 */
constexpr int kMaskBits = 4096;
constexpr int kLongBits = sizeof(unsigned long) * CHAR_BIT;
using NodeMask = std::array<unsigned long, kMaskBits / kLongBits>;

bool testNode(const NodeMask &mask, int node)
{
	return (mask[node / kLongBits] >> (node % kLongBits)) & 1;
}

void setNode(NodeMask &mask, int node)
{
	mask[node / kLongBits] |= 1UL << (node % kLongBits);
}

/*
 * The kernel drops the last bit of maxnode (a historical off-by-one that
 * libnuma also works around), hence the + 1.
 */
constexpr unsigned long kMaxNode = kMaskBits + 1;

long sysMbind(void *addr, unsigned long len, int mode, const unsigned long *mask)
{
#ifdef HAVE_LIBNUMA
	return mbind(addr, len, mode, mask, kMaxNode, 0);
#else
	return syscall(SYS_mbind, addr, len, mode, mask, kMaxNode, 0);
#endif
}

long sysMemsAllowed(unsigned long *mask)
{
#ifdef HAVE_LIBNUMA
	return get_mempolicy(nullptr, mask, kMaxNode, nullptr, MPOL_F_MEMS_ALLOWED);
#else
	return syscall(SYS_get_mempolicy, nullptr, mask, kMaxNode, nullptr, MPOL_F_MEMS_ALLOWED);
#endif
}

} /* namespace */

int applyMemPolicy(void *addr, std::size_t len, const MemPolicy &policy)
{
	if (policy.mode == MPOL_DEFAULT || len == 0)
		return RMA_SUCCESS;
	if ((policy.mode != MPOL_BIND && policy.mode != MPOL_INTERLEAVE && policy.mode != MPOL_PREFERRED) ||
	    policy.nodes.empty())
		return makeError(RMA_ERR_ARG, "memory policy mode %d with %zu nodes cannot be applied", policy.mode,
				 policy.nodes.size());

	NodeMask allowed{};
	bool filter = sysMemsAllowed(allowed.data()) == 0;

	NodeMask mask{};
	bool any = false;
	for (int node : policy.nodes) {
		if (node < 0 || node >= kMaskBits)
			return makeError(RMA_ERR_ARG, "NUMA node %d is out of range", node);
		/* An injected topology may name nodes the host lacks: skip those. */
		if (filter && !testNode(allowed, node))
			continue;
		setNode(mask, node);
		any = true;
	}
	if (!any)
		return RMA_SUCCESS;

	if (sysMbind(addr, len, policy.mode, mask.data()) != 0) {
		int err = errno;
		return makeErrnoError(RMA_ERR_NO_MEM, err, "mbind(%p, %zu bytes, mode %d, %zu nodes from %d)", addr,
				      len, policy.mode, policy.nodes.size(), policy.nodes.front());
	}
	return RMA_SUCCESS;
}

} /* namespace librma */
