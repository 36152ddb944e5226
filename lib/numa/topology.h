/* SPDX-License-Identifier: MIT */
/*
 * NUMA topology and memory placement. This header is the component's only door.
 *
 * The topology comes from hwloc (the field's standard; built with it when
 * libhwloc-dev is there): NUMA nodes, physical cores with their hardware
 * threads (SMT siblings), L3 domains and packages. hwloc honours
 * HWLOC_XMLFILE and HWLOC_SYNTHETIC, so any machine can be injected. Tests
 * also inject topologies directly (synthetic(), fromHwlocSynthetic(), a
 * fake sysfs tree). RMA_TOPOLOGY=<dir> in the environment makes
 * Topology::system() read a fake sysfs node tree <dir> instead (NUMA nodes
 * only: each CPU is then its own core, each node one L3 domain); without
 * hwloc the real sysfs node tree is read the same way.
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

/*
 * NUMA nodes with memory in a sysfs node tree, read as Topology::fromSysfs()
 * reads them (has_memory, else each node's meminfo), without the rest of
 * the topology: 1 for a missing tree (a kernel without NUMA).
 */
int memoryNodeCount(const std::string &root = "/sys/devices/system/node");

/* A physical core: its hardware threads (logical CPUs), and where it sits. */
struct CpuCore {
	std::vector<int> cpus; /* sorted OS CPU numbers; several with SMT */
	int node = -1;         /* NUMA node id, -1 unknown */
	int l3 = -1;           /* index of its L3 domain (0..l3Count()-1), -1 none */
	int package = -1;      /* index of its package, -1 unknown */
};

class Topology
{
public:
	/* This machine through hwloc (HWLOC_XMLFILE / HWLOC_SYNTHETIC apply); sysfs if hwloc is missing or fails. */
	static Topology fromHwloc();
	/*
	 * A topology described in hwloc's synthetic syntax, e.g.
	 * "package:2 numa:2 l3:1 core:4 pu:2" (tests and rmatune). Errors:
	 * RMA_ERR_ARG naming the description; RMA_ERR_NOT_SUPPORTED without hwloc.
	 */
	static Result<Topology> fromHwlocSynthetic(const std::string &description);
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
	/* Physical cores in hwloc's logical order (package, then node, L3, core). */
	const std::vector<CpuCore> &cores() const { return cores_; }
	int l3Count() const { return l3Count_; }
	int packageCount() const { return packageCount_; }
	/* Where the topology came from: "hwloc", "hwloc synthetic ...", "sysfs <dir>", "synthetic". */
	const std::string &source() const { return source_; }
	int nodeCount() const { return static_cast<int>(nodes_.size()); }
	/* Node of @cpu, or -1 if unknown. */
	int nodeOfCpu(int cpu) const;
	/* Index into nodes() of node @id, or -1. */
	int indexOfNode(int id) const;

private:
	/* Each CPU of each node its own core; each node one L3 domain and package. */
	void coresFromNodes();

	std::vector<NumaNode> nodes_;
	std::vector<CpuCore> cores_;
	int l3Count_ = 0;
	int packageCount_ = 0;
	std::string source_;
};

/* The node holding every CPU this process may run on, or -1 (several nodes, unknown). */
int boundNode(const Topology &topology);

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

/*
 * A window's own memory policy, chosen by the name it is created with (info
 * key rma_win_name): the job's RMA_PLACEMENT_WINDOWS, which rmarun sets from
 * a placement file's memory.windows.
 */
struct WindowPlacement {
	std::string name;
	Placement placement;
};

/*
 * Why @name cannot carry a per-window policy in RMA_PLACEMENT_WINDOWS, or
 * "" when it can: 1 to RMA_MAX_OBJECT_NAME-1 characters (what
 * rma_win_set_name takes), neither ';' nor '=' (the separators).
 */
std::string windowNameProblem(std::string_view name);

/*
 * Parse RMA_PLACEMENT_WINDOWS: "NAME=POLICY;NAME=POLICY...", POLICY one of
 * Placement::parse's words; "" gives an empty list. Strict: an empty item,
 * a bad name (windowNameProblem), a bad policy or a name given twice is
 * RMA_ERR_ARG, its message naming the variable, the item and the fault.
 * Thread-safe (pure).
 */
Result<std::vector<WindowPlacement>> parseWindowPlacements(std::string_view text);

/* What is wrong with @text as RMA_PLACEMENT_WINDOWS ("" if nothing): the knob table's check. */
std::string windowPlacementsProblem(const char *text);

/* @list as RMA_PLACEMENT_WINDOWS text; every name must pass windowNameProblem(). */
std::string windowPlacementsText(const std::vector<WindowPlacement> &list);

/* The policy @list gives the window named @name, or nullptr. */
const Placement *findWindowPlacement(const std::vector<WindowPlacement> &list, std::string_view name);

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
