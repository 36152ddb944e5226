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
	/* What RMA_BIND says: "core:<cpu>", "numa:<node id>" or "none". */
	std::string text = "none";
};

/*
 * The binding of @rank:
 *  - Bind::Core: the (rank mod n)-th of the @allowed CPUs (ranks wrap
 *    around when they outnumber the CPUs);
 *  - Bind::Numa: every allowed CPU of a node; ranks take the nodes that
 *    hold allowed CPUs in turn (rank mod their count), in nodes() order;
 *  - Bind::None, or nothing allowed (no CPU, no node with an allowed CPU):
 *    no binding.
 * @allowed: the launcher's allowed CPUs, ascending. @topology is used for
 * Bind::Numa only and may be null otherwise.
 */
Binding bindingFor(Bind bind, int rank, std::span<const int> allowed, const Topology *topology);

/* The CPUs this thread may run on (sched_getaffinity), ascending; empty on error. */
std::vector<int> affinityCpus();

/* Restrict this thread to @cpus. Returns 0 or -errno. */
int setAffinityCpus(std::span<const int> cpus);

} /* namespace librma */
