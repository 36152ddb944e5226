/* SPDX-License-Identifier: MIT */
#include "bootstrap/binding.h"

#include <sched.h>

#include <algorithm>
#include <cerrno>
#include <iterator>
#include <memory>

#include "numa/topology.h"

namespace librma {

namespace {

struct CpuSetDeleter {
	void operator()(cpu_set_t *set) const { CPU_FREE(set); }
};
using CpuSetPtr = std::unique_ptr<cpu_set_t, CpuSetDeleter>;

} /* namespace */

std::string cpuListText(std::span<const int> cpus)
{
	std::string text;
	for (std::size_t i = 0; i < cpus.size();) {
		std::size_t j = i;
		while (j + 1 < cpus.size() && cpus[j + 1] == cpus[j] + 1)
			++j;
		if (!text.empty())
			text += ',';
		text += std::to_string(cpus[i]);
		if (j > i)
			text += '-' + std::to_string(cpus[j]);
		i = j + 1;
	}
	return text;
}

namespace {

bool isAllowed(std::span<const int> allowed, int cpu)
{
	return std::binary_search(allowed.begin(), allowed.end(), cpu);
}

/* The cores ranks may take (allowed threads only), in the order of @map. */
std::vector<CpuCore> slots(MapBy map, std::span<const int> allowed, const Topology *topology)
{
	std::vector<CpuCore> cores;
	if (!topology) {
		for (int cpu : allowed)
			cores.push_back(CpuCore{ { cpu }, -1, -1, -1 });
		return cores;
	}
	for (const CpuCore &core : topology->cores()) {
		CpuCore c = core;
		std::erase_if(c.cpus, [&](int cpu) { return !isAllowed(allowed, cpu); });
		if (!c.cpus.empty())
			cores.push_back(std::move(c));
	}
	if (map != MapBy::Numa && map != MapBy::L3)
		return cores;
	/* Round robin over the domains, in the order they first appear. */
	std::vector<int> keys;
	std::vector<std::vector<CpuCore>> groups;
	for (CpuCore &c : cores) {
		int key = map == MapBy::Numa ? c.node : c.l3;
		auto it = std::find(keys.begin(), keys.end(), key);
		if (it == keys.end()) {
			keys.push_back(key);
			groups.emplace_back();
			it = keys.end() - 1;
		}
		groups[static_cast<size_t>(it - keys.begin())].push_back(std::move(c));
	}
	std::vector<CpuCore> ordered;
	for (size_t round = 0; ordered.size() < cores.size(); ++round)
		for (auto &g : groups)
			if (round < g.size())
				ordered.push_back(std::move(g[round]));
	return ordered;
}

} /* namespace */

Binding bindingFor(Bind bind, MapBy map, int rank, std::span<const int> allowed, const Topology *topology)
{
	Binding binding;
	if (bind == Bind::Numa && topology && (map == MapBy::Default || map == MapBy::Numa)) {
		/* (node id, its allowed CPUs) of each node that has some. */
		std::vector<std::pair<int, std::vector<int>>> eligible;
		for (const NumaNode &node : topology->nodes()) {
			std::vector<int> cpus;
			std::copy_if(node.cpus.begin(), node.cpus.end(), std::back_inserter(cpus),
				     [&](int cpu) { return isAllowed(allowed, cpu); });
			if (!cpus.empty())
				eligible.emplace_back(node.id, std::move(cpus));
		}
		if (!eligible.empty()) {
			auto &[id, cpus] = eligible[static_cast<size_t>(rank) % eligible.size()];
			binding.cpus = std::move(cpus);
			binding.text = "numa:" + std::to_string(id);
		}
		return binding;
	}
	if (bind == Bind::None)
		return binding;
	std::vector<CpuCore> cores = slots(map, allowed, topology);
	if (cores.empty())
		return binding;
	CpuCore &core = cores[static_cast<size_t>(rank) % cores.size()];
	if (bind == Bind::Core) {
		binding.text = "core:" + cpuListText(core.cpus);
		binding.cpus = std::move(core.cpus);
	} else if (topology && core.node >= 0) {
		const int index = topology->indexOfNode(core.node);
		for (int cpu : topology->nodes()[static_cast<size_t>(index)].cpus)
			if (isAllowed(allowed, cpu))
				binding.cpus.push_back(cpu);
		binding.text = "numa:" + std::to_string(core.node);
	}
	return binding;
}

Binding bindingToCpus(std::span<const int> cpus)
{
	Binding binding;
	binding.cpus.assign(cpus.begin(), cpus.end());
	binding.text = "cpus:" + cpuListText(cpus);
	binding.exact = true;
	return binding;
}

std::vector<int> affinityCpus()
{
	/* Grow the set until the kernel's mask fits (hosts beyond CPU_SETSIZE). */
	for (int count = CPU_SETSIZE; count <= (1 << 20); count *= 2) {
		CpuSetPtr set(CPU_ALLOC(count));
		if (!set)
			return {};
		std::size_t bytes = CPU_ALLOC_SIZE(count);
		if (sched_getaffinity(0, bytes, set.get()) < 0) {
			if (errno == EINVAL)
				continue;
			return {};
		}
		std::vector<int> cpus;
		for (int cpu = 0; cpu < count; ++cpu) {
			if (CPU_ISSET_S(cpu, bytes, set.get()))
				cpus.push_back(cpu);
		}
		return cpus;
	}
	return {};
}

int setAffinityCpus(std::span<const int> cpus)
{
	int count = cpus.empty() ? 1 : *std::max_element(cpus.begin(), cpus.end()) + 1;
	CpuSetPtr set(CPU_ALLOC(count));
	if (!set)
		return -ENOMEM;
	std::size_t bytes = CPU_ALLOC_SIZE(count);
	CPU_ZERO_S(bytes, set.get());
	for (int cpu : cpus)
		CPU_SET_S(cpu, bytes, set.get());
	return sched_setaffinity(0, bytes, set.get()) < 0 ? -errno : 0;
}

} /* namespace librma */
