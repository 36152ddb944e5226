/* SPDX-License-Identifier: MIT */
/*
 * Where the launcher runs each rank. Internal to lib/bootstrap; the
 * computation is pure so that tests check it with synthetic inputs.
 */
#pragma once

#include <span>
#include <string>
#include <vector>

#include "bootstrap/launcher.h"

namespace librma {

class Topology;

struct Binding {
	/* CPUs the rank may run on; empty: leave its affinity alone. */
	std::vector<int> cpus;
	/*
	 * What RMA_BIND says: "core:<cpus of the core>" ("core:3", "core:0,4"
	 * with SMT), "numa:<node id>", "cpus:<list>" (a placement file) or "none".
	 */
	std::string text = "none";
	/* A placement file's binding: a rank that cannot get it must not start. */
	bool exact = false;
};

/*
 * The binding of @rank. Ranks take the physical cores of @topology that
 * hold allowed CPUs (each allowed CPU is a core of its own when @topology
 * is null), in the order @map gives (see MapBy), wrapping around when they
 * outnumber the cores; then
 *  - Bind::Core: the allowed hardware threads of that core (every SMT
 *    sibling: a rank owns a physical core, not a logical CPU);
 *  - Bind::Numa: every allowed CPU of that core's node; with MapBy::Default
 *    (or Numa) the nodes that hold allowed CPUs are taken in turn (rank mod
 *    their count), in nodes() order;
 *  - Bind::None, or nothing allowed: no binding.
 * @allowed: the launcher's allowed CPUs, ascending.
 */
Binding bindingFor(Bind bind, MapBy map, int rank, std::span<const int> allowed, const Topology *topology);
inline Binding bindingFor(Bind bind, int rank, std::span<const int> allowed, const Topology *topology)
{
	return bindingFor(bind, MapBy::Default, rank, allowed, topology);
}

/* The binding a placement file gives a rank: exactly @cpus (sorted), RMA_BIND "cpus:<list>". */
Binding bindingToCpus(std::span<const int> cpus);

/* "0-3,6" for a sorted CPU list. */
std::string cpuListText(std::span<const int> cpus);

/* The CPUs this thread may run on (sched_getaffinity), ascending; empty on error. */
std::vector<int> affinityCpus();

/* Restrict this thread to @cpus. Returns 0 or -errno. */
int setAffinityCpus(std::span<const int> cpus);

} /* namespace librma */
