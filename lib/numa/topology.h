/* SPDX-License-Identifier: MIT */
/*
 * NUMA topology and memory placement. This header is the component's only door.
 *
 * The topology is read from sysfs (/sys/devices/system/node); tests inject
 * other topologies, either synthetic or as a fake sysfs tree, so NUMA logic
 * is tested on a one-node machine. RMA_TOPOLOGY=<dir> in the environment
 * makes Topology::system() read <dir> instead of the real tree.
 */
#pragma once

#include <cstddef>
#include <string>
#include <string_view>
#include <vector>

#include "common/result.h"

namespace librma {

struct NumaNode {
	int id = 0;
	std::vector<int> cpus; /* sorted; empty for a CPU-less node */
	/* False for a memoryless node: no policy may name it. */
	bool hasMemory = true;
};

/*
 * Parse a sysfs CPU or node list ("0-3,8-11", "5", "" for none) into sorted,
 * unique ids. Malformed items are skipped.
 */
std::vector<int> parseCpuList(std::string_view text);

class Topology
{
public:
	/* Read a sysfs node tree; a missing tree gives one node holding every online CPU. */
	static Topology fromSysfs(const std::string &root = "/sys/devices/system/node");
	/* @nodes nodes of @cpusPerNode consecutive CPUs each (tests). */
	static Topology synthetic(int nodes, int cpusPerNode);
	/* This host's topology (read once; honours RMA_TOPOLOGY). Thread-safe. */
	static const Topology &system();
	/*
	 * Tests only: forget the cached system() topology so the next call
	 * reads RMA_TOPOLOGY again. References from earlier calls dangle.
	 * Not thread-safe against concurrent system() users.
	 */
	static void resetSystemForTesting();

	const std::vector<NumaNode> &nodes() const { return nodes_; }
	int nodeCount() const { return static_cast<int>(nodes_.size()); }
	/* Node of @cpu, or -1 if unknown. */
	int nodeOfCpu(int cpu) const;
	/* Index into nodes() of node @id, or -1. */
	int indexOfNode(int id) const;

private:
	std::vector<NumaNode> nodes_;
};

/*
 * The node this process's memory should live on: the node holding every CPU
 * the process may run on, else the node of the CPU it runs on now.
 */
int currentNode(const Topology &topology);

/* Where a window's memory goes (info key rma_placement). */
struct Placement {
	enum class Kind { Local, Interleave, Node, None };
	Kind kind = Kind::Local;
	int node = -1; /* for Kind::Node */

	/* "local" | "interleave" | "node:N" | "none"; RMA_ERR_INFO_VALUE otherwise. */
	static Result<Placement> parse(std::string_view text);
	std::string str() const;
};

/* A concrete memory policy: what mbind() is given. */
struct MemPolicy {
	int mode = 0;           /* MPOL_DEFAULT, MPOL_BIND or MPOL_INTERLEAVE */
	std::vector<int> nodes; /* node ids in the mask */
	/*
	 * The node reported for the memory: the mask's only node, -1 for
	 * MPOL_DEFAULT or a mask of several nodes (interleaved).
	 */
	int reportedNode() const;
};

/*
 * Resolve a placement for memory owned by a process on @ownerNode.
 *  - Local: MPOL_BIND to @ownerNode, also on a one-node topology (binding
 *    there costs nothing and the segment then reports its node). When
 *    @ownerNode is unknown (< 0, not in @topology) or has no memory,
 *    MPOL_DEFAULT: the creating process touches the memory first, so the
 *    kernel's local allocation (nearest node with memory) does the job.
 *  - Interleave: MPOL_INTERLEAVE over every node with memory
 *    (MPOL_DEFAULT if the topology knows of none).
 *  - Node: MPOL_BIND to that node.
 *  - None: MPOL_DEFAULT.
 * RMA_ERR_INFO_VALUE if Kind::Node names a node the topology lacks or a
 * node without memory. Pure: touches no kernel state.
 */
Result<MemPolicy> resolvePlacement(const Placement &placement, const Topology &topology, int ownerNode);

/*
 * Bind [addr, addr+len) (page aligned) to @policy before first touch.
 * MPOL_DEFAULT is a no-op. Nodes this process may not allocate on (absent
 * from the host, or outside its cpuset) are dropped from the mask, since an
 * injected topology may name nodes the machine lacks; if none remain, the
 * call is a no-op too. Returns RMA_SUCCESS, RMA_ERR_ARG for a malformed
 * policy, or an RMA_ERR_NO_MEM-class code naming the errno.
 */
int applyMemPolicy(void *addr, std::size_t len, const MemPolicy &policy);

} /* namespace librma */
