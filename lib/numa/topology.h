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
	std::vector<int> cpus;
};

class Topology
{
public:
	/* Read a sysfs node tree; a missing tree gives one node holding every online CPU. */
	static Topology fromSysfs(const std::string &root = "/sys/devices/system/node");
	/* @nodes nodes of @cpusPerNode consecutive CPUs each (tests). */
	static Topology synthetic(int nodes, int cpusPerNode);
	/* This host's topology (read once; honours RMA_TOPOLOGY). */
	static const Topology &system();

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
	/* The node reported for the memory, -1 for none or interleaved. */
	int reportedNode() const;
};

/*
 * Resolve a placement for memory owned by a process on @ownerNode.
 * RMA_ERR_INFO_VALUE if Kind::Node names a node the topology lacks.
 */
Result<MemPolicy> resolvePlacement(const Placement &placement, const Topology &topology, int ownerNode);

/*
 * Bind [addr, addr+len) (page aligned) to @policy before first touch.
 * MPOL_DEFAULT is a no-op. Returns RMA_SUCCESS or an RMA_ERR_NO_MEM-class
 * code naming the errno.
 */
int applyMemPolicy(void *addr, std::size_t len, const MemPolicy &policy);

} /* namespace librma */
