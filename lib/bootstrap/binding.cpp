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

Binding bindingFor(Bind bind, int rank, std::span<const int> allowed, const Topology *topology)
{
	Binding binding;
	if (bind == Bind::Core && !allowed.empty()) {
		int cpu = allowed[rank % allowed.size()];
		binding.cpus = { cpu };
		binding.text = "core:" + std::to_string(cpu);
	} else if (bind == Bind::Numa && topology) {
		/* (node id, its allowed CPUs) of each node that has some. */
		std::vector<std::pair<int, std::vector<int>>> eligible;
		for (const NumaNode &node : topology->nodes()) {
			std::vector<int> cpus;
			std::copy_if(node.cpus.begin(), node.cpus.end(), std::back_inserter(cpus),
				     [&](int cpu) { return std::binary_search(allowed.begin(), allowed.end(), cpu); });
			if (!cpus.empty())
				eligible.emplace_back(node.id, std::move(cpus));
		}
		if (!eligible.empty()) {
			auto &[id, cpus] = eligible[rank % eligible.size()];
			binding.cpus = std::move(cpus);
			binding.text = "numa:" + std::to_string(id);
		}
	}
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
