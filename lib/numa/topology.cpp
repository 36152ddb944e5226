/* SPDX-License-Identifier: MIT */
#include "numa/topology.h"

#include <dirent.h>
#include <sched.h>
#include <unistd.h>

#include <algorithm>
#include <charconv>
#include <cstdlib>
#include <fstream>
#include <memory>
#include <mutex>
#include <optional>
#include <sstream>

#include "common/knobs.h"
#include "config.h"
#include "error/error.h"

#ifdef HAVE_HWLOC
#include <hwloc.h>
#endif

namespace librma {

namespace {

std::optional<std::string> readFile(const std::string &path)
{
	std::ifstream in(path);
	if (!in)
		return std::nullopt;
	std::ostringstream text;
	text << in.rdbuf();
	if (in.bad())
		return std::nullopt;
	return text.str();
}

bool parseInt(std::string_view text, int &value)
{
	const char *end = text.data() + text.size();
	auto [ptr, ec] = std::from_chars(text.data(), end, value);
	return ec == std::errc() && ptr == end && value >= 0;
}

std::string_view trim(std::string_view text)
{
	const char *space = " \t\n\r";
	size_t first = text.find_first_not_of(space);
	if (first == std::string_view::npos)
		return {};
	size_t last = text.find_last_not_of(space);
	return text.substr(first, last - first + 1);
}

/* Every online CPU: the tree of a host without NUMA support. */
std::vector<int> onlineCpus()
{
	if (auto text = readFile("/sys/devices/system/cpu/online")) {
		std::vector<int> cpus = parseCpuList(*text);
		if (!cpus.empty())
			return cpus;
	}
	long count = sysconf(_SC_NPROCESSORS_ONLN);
	std::vector<int> cpus;
	for (long cpu = 0; cpu < std::max(count, 1L); ++cpu)
		cpus.push_back(static_cast<int>(cpu));
	return cpus;
}

/* Ids of the node<N> entries of @root, sorted; empty if unreadable. */
std::vector<int> nodeIds(const std::string &root)
{
	std::vector<int> ids;
	std::unique_ptr<DIR, int (*)(DIR *)> dir(opendir(root.c_str()), closedir);
	if (!dir)
		return ids;
	while (const dirent *entry = readdir(dir.get())) {
		std::string_view name = entry->d_name;
		int id;
		if (name.starts_with("node") && parseInt(name.substr(4), id))
			ids.push_back(id);
	}
	std::sort(ids.begin(), ids.end());
	return ids;
}

/*
 * Whether node @id has memory: the root's has_memory list when there is one
 * (the kernel's N_MEMORY state), else the node's own meminfo, else yes.
 */
bool nodeHasMemory(const std::string &root, int id, const std::optional<std::vector<int>> &withMemory)
{
	if (withMemory)
		return std::binary_search(withMemory->begin(), withMemory->end(), id);
	auto meminfo = readFile(root + "/node" + std::to_string(id) + "/meminfo");
	if (!meminfo)
		return true;
	/* "Node 0 MemTotal:       24684092 kB" */
	size_t pos = meminfo->find("MemTotal:");
	if (pos == std::string::npos)
		return true;
	std::string_view rest = std::string_view(*meminfo).substr(pos + 9);
	rest = trim(rest.substr(0, rest.find('\n')));
	rest = rest.substr(0, rest.find(' '));
	long long kb = 0;
	std::from_chars(rest.data(), rest.data() + rest.size(), kb);
	return kb > 0;
}

} /* namespace */

std::vector<int> parseCpuList(std::string_view text)
{
	std::vector<int> ids;
	text = trim(text);
	while (!text.empty()) {
		size_t comma = text.find(',');
		std::string_view item = trim(text.substr(0, comma));
		text = comma == std::string_view::npos ? std::string_view() : text.substr(comma + 1);

		size_t dash = item.find('-');
		int first, last;
		if (dash == std::string_view::npos) {
			if (!parseInt(item, first))
				continue;
			last = first;
		} else if (!parseInt(item.substr(0, dash), first) || !parseInt(item.substr(dash + 1), last) ||
			   last < first) {
			continue;
		}
		for (int id = first; id <= last; ++id)
			ids.push_back(id);
	}
	std::sort(ids.begin(), ids.end());
	ids.erase(std::unique(ids.begin(), ids.end()), ids.end());
	return ids;
}

namespace {

/* The root's has_memory list, if it has one (nodeHasMemory()). */
std::optional<std::vector<int>> memoryNodeList(const std::string &root)
{
	if (auto text = readFile(root + "/has_memory"))
		return parseCpuList(*text);
	return std::nullopt;
}

} /* namespace */

int memoryNodeCount(const std::string &root)
{
	const std::vector<int> ids = nodeIds(root);
	if (ids.empty())
		return 1;
	const std::optional<std::vector<int>> withMemory = memoryNodeList(root);
	int count = 0;
	for (int id : ids)
		count += nodeHasMemory(root, id, withMemory);
	return count;
}

Topology Topology::fromSysfs(const std::string &root)
{
	Topology topology;
	const std::optional<std::vector<int>> withMemory = memoryNodeList(root);

	for (int id : nodeIds(root)) {
		NumaNode node;
		node.id = id;
		/* An unreadable cpulist leaves the node CPU-less, not the tree unusable. */
		if (auto text = readFile(root + "/node" + std::to_string(id) + "/cpulist"))
			node.cpus = parseCpuList(*text);
		node.hasMemory = nodeHasMemory(root, id, withMemory);
		topology.nodes_.push_back(std::move(node));
	}

	if (topology.nodes_.empty()) {
		NumaNode node;
		node.cpus = onlineCpus();
		topology.nodes_.push_back(std::move(node));
	}
	topology.coresFromNodes();
	topology.source_ = "sysfs " + root;
	return topology;
}

void Topology::coresFromNodes()
{
	cores_.clear();
	int l3 = 0;
	for (const NumaNode &node : nodes_) {
		if (node.cpus.empty())
			continue;
		for (int cpu : node.cpus)
			cores_.push_back(CpuCore{ { cpu }, node.id, l3, l3 });
		++l3;
	}
	l3Count_ = l3;
	packageCount_ = l3;
}

#ifdef HAVE_HWLOC
namespace {

std::vector<int> cpusOf(hwloc_const_cpuset_t set)
{
	std::vector<int> cpus;
	if (!set)
		return cpus;
	for (int id = hwloc_bitmap_first(set); id >= 0; id = hwloc_bitmap_next(set, id))
		cpus.push_back(id);
	return cpus;
}

struct HwlocTopology {
	hwloc_topology_t t = nullptr;
	~HwlocTopology()
	{
		if (t)
			hwloc_topology_destroy(t);
	}
};

/* Fill @out from a loaded hwloc topology; false if it holds no CPU. */
bool fromLoaded(hwloc_topology_t t, std::vector<NumaNode> &nodes, std::vector<CpuCore> &cores, int &l3Count,
		int &packageCount)
{
	const int nnodes = hwloc_get_nbobjs_by_type(t, HWLOC_OBJ_NUMANODE);
	for (int i = 0; i < nnodes; ++i) {
		hwloc_obj_t obj = hwloc_get_obj_by_type(t, HWLOC_OBJ_NUMANODE, static_cast<unsigned>(i));
		NumaNode node;
		node.id = static_cast<int>(obj->os_index);
		node.cpus = cpusOf(obj->cpuset);
		/* An injected topology (synthetic, XML) may not say: then it has memory. */
		node.hasMemory = !hwloc_topology_is_thissystem(t) || obj->attr->numanode.local_memory > 0;
		nodes.push_back(std::move(node));
	}
	std::sort(nodes.begin(), nodes.end(), [](const NumaNode &a, const NumaNode &b) { return a.id < b.id; });

	/* Cores; a topology without core objects (pu only) makes each PU a core. */
	const hwloc_obj_type_t coreType =
		hwloc_get_nbobjs_by_type(t, HWLOC_OBJ_CORE) > 0 ? HWLOC_OBJ_CORE : HWLOC_OBJ_PU;
	const int ncores = hwloc_get_nbobjs_by_type(t, coreType);
	const bool haveL3 = hwloc_get_nbobjs_by_type(t, HWLOC_OBJ_L3CACHE) > 0;
	l3Count = haveL3 ? hwloc_get_nbobjs_by_type(t, HWLOC_OBJ_L3CACHE) : 0;
	packageCount = hwloc_get_nbobjs_by_type(t, HWLOC_OBJ_PACKAGE);
	for (int i = 0; i < ncores; ++i) {
		hwloc_obj_t obj = hwloc_get_obj_by_type(t, coreType, static_cast<unsigned>(i));
		CpuCore core;
		core.cpus = cpusOf(obj->cpuset);
		if (core.cpus.empty())
			continue;
		if (hwloc_obj_t l3 = haveL3 ? hwloc_get_ancestor_obj_by_type(t, HWLOC_OBJ_L3CACHE, obj) : nullptr)
			core.l3 = static_cast<int>(l3->logical_index);
		if (hwloc_obj_t pkg = hwloc_get_ancestor_obj_by_type(t, HWLOC_OBJ_PACKAGE, obj))
			core.package = static_cast<int>(pkg->logical_index);
		for (const NumaNode &node : nodes)
			if (std::binary_search(node.cpus.begin(), node.cpus.end(), core.cpus.front()))
				core.node = node.id;
		cores.push_back(std::move(core));
	}
	return !cores.empty();
}

} /* namespace */

Topology Topology::fromHwloc()
{
	HwlocTopology h;
	Topology topology;
	if (hwloc_topology_init(&h.t) == 0 && hwloc_topology_load(h.t) == 0 &&
	    fromLoaded(h.t, topology.nodes_, topology.cores_, topology.l3Count_, topology.packageCount_) &&
	    !topology.nodes_.empty()) {
		topology.source_ = "hwloc";
		if (const char *xml = std::getenv("HWLOC_XMLFILE"))
			topology.source_ += std::string(" (HWLOC_XMLFILE=") + xml + ")";
		else if (const char *syn = std::getenv("HWLOC_SYNTHETIC"))
			topology.source_ += std::string(" (HWLOC_SYNTHETIC=") + syn + ")";
		return topology;
	}
	return fromSysfs();
}

Result<Topology> Topology::fromHwlocSynthetic(const std::string &description)
{
	HwlocTopology h;
	Topology topology;
	if (hwloc_topology_init(&h.t) != 0 || hwloc_topology_set_synthetic(h.t, description.c_str()) != 0 ||
	    hwloc_topology_load(h.t) != 0)
		return Result<Topology>::failure(
			makeError(RMA_ERR_ARG, "'%s' is not a topology in hwloc's synthetic syntax", description.c_str()));
	if (!fromLoaded(h.t, topology.nodes_, topology.cores_, topology.l3Count_, topology.packageCount_) ||
	    topology.nodes_.empty())
		return Result<Topology>::failure(
			makeError(RMA_ERR_ARG, "hwloc topology '%s' has no CPU or no NUMA node", description.c_str()));
	topology.source_ = "hwloc synthetic " + description;
	return topology;
}
#else
Topology Topology::fromHwloc()
{
	return fromSysfs();
}

Result<Topology> Topology::fromHwlocSynthetic(const std::string &description)
{
	return Result<Topology>::failure(makeError(RMA_ERR_NOT_SUPPORTED,
						   "topology '%s': this librma was built without hwloc",
						   description.c_str()));
}
#endif

Topology Topology::synthetic(int nodes, int cpusPerNode)
{
	Topology topology;
	for (int id = 0; id < nodes; ++id) {
		NumaNode node;
		node.id = id;
		for (int cpu = 0; cpu < cpusPerNode; ++cpu)
			node.cpus.push_back(id * cpusPerNode + cpu);
		topology.nodes_.push_back(std::move(node));
	}
	topology.coresFromNodes();
	topology.source_ = "synthetic";
	return topology;
}

namespace {

struct SystemTopology {
	std::mutex lock;
	std::unique_ptr<Topology> topology;
};

SystemTopology &systemTopology()
{
	static SystemTopology system;
	return system;
}

} /* namespace */

const Topology &Topology::system()
{
	SystemTopology &system = systemTopology();
	std::lock_guard<std::mutex> guard(system.lock);
	if (!system.topology) {
		const char *root = knobValue("RMA_TOPOLOGY");
		system.topology = std::make_unique<Topology>(root ? fromSysfs(root) : fromHwloc());
	}
	return *system.topology;
}

void Topology::resetSystemForTesting()
{
	SystemTopology &system = systemTopology();
	std::lock_guard<std::mutex> guard(system.lock);
	system.topology.reset();
}

int Topology::nodeOfCpu(int cpu) const
{
	for (const NumaNode &node : nodes_) {
		if (std::binary_search(node.cpus.begin(), node.cpus.end(), cpu))
			return node.id;
	}
	return -1;
}

int Topology::indexOfNode(int id) const
{
	for (size_t i = 0; i < nodes_.size(); ++i) {
		if (nodes_[i].id == id)
			return static_cast<int>(i);
	}
	return -1;
}

int boundNode(const Topology &topology)
{
	cpu_set_t allowed;
	CPU_ZERO(&allowed);
	if (sched_getaffinity(0, sizeof(allowed), &allowed) != 0)
		return -1;
	int only = -1;
	for (int cpu = 0; cpu < CPU_SETSIZE; ++cpu) {
		if (!CPU_ISSET(cpu, &allowed))
			continue;
		int node = topology.nodeOfCpu(cpu);
		if (node < 0 || (only >= 0 && node != only))
			return -1;
		only = node;
	}
	return only;
}

int currentNode(const Topology &topology)
{
	if (int node = boundNode(topology); node >= 0)
		return node;
	/* Free to roam over several nodes: the one we run on now is the best guess. */
	int cpu = sched_getcpu();
	return cpu < 0 ? -1 : topology.nodeOfCpu(cpu);
}

} /* namespace librma */
