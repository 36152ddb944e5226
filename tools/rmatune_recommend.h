/* SPDX-License-Identifier: MIT */
/*
 * rmatune recommend: choose where each rank runs, from a machine profile
 * (what `rmatune probe` writes) and a traffic matrix, by minimising a
 * stated cost model; the result is a placement file with the evidence.
 *
 * The cost model. Ranks r, s; T(r, s) the bytes origin r moves to or from
 * target s's window (T(r, r) counts too); core(r) the physical core rank r
 * runs on; window memory on its owner's node (rma_placement local, the
 * default). Each 64-byte line moved costs half a measured cache-line round
 * trip between the two cores plus one measured memory latency from the
 * origin core's node to the target core's node:
 *
 *   D(a, b) = round_trip_ns(a, b) / 2 + memory_latency_ns(node(a), node(b))
 *   cost    = sum over r, s of T(r, s) / 64 x D(core(r), core(s))
 *
 * (D(a, a) has no core-to-core part.) The cost is a ranking of placements,
 * in "ns of line transfers"; it is not a prediction of the job's time.
 * Figures the profile lacks (pairs not sampled, nodes without an allowed
 * core) are estimated from measured cells of the same kind (same L3, same
 * NUMA node, same package, other package; local or remote memory), and
 * each estimate is listed in the evidence.
 *
 * The search. Up to kExhaustiveLimit candidate assignments: exhaustive
 * (depth-first, branch and bound: all costs are non-negative, so a partial
 * assignment already as costly as the best complete one is cut; of free
 * cores that are twins in the model, cores of one L3 domain say, only one
 * is tried for each rank). Beyond:
 * greedy construction (heaviest-talking rank next, onto the free core that
 * adds least) from several first cores, the compact placement and seeded
 * random starts, each improved by local search (swap two ranks, or move a
 * rank to a free core, while the cost falls); the best is kept.
 *
 * Memory policies, once the ranks are placed (chooseMemoryPolicy()). For a
 * window's traffic T and each candidate policy P (local; node:k for every
 * node k with memory; interleave when there are two or more):
 *
 *   latency(P)    = sum over r, s of T(r, s) / 64 x L_P(node(r), s), where
 *                   L_local = lat(node(r), node(s)), L_node:k = lat(node(r), k),
 *                   L_interleave = the mean of lat(node(r), k) over nodes k
 *   bottleneck(P) = max over nodes k of bytes(P, k) / bandwidth(k): the
 *                   time the busiest node's memory needs to serve its share
 *
 * The policy with the least latency wins, unless others come within
 * kLatencyTie of it: among those, the least bottleneck wins (a latency model
 * alone never prefers interleave: its mean is never below the best node),
 * ties going to local, then node:k, then interleave. So traffic from origins
 * on several nodes evenly interleaves, and one heavy origin on another node
 * moves the memory to its node. Bandwidth is the profile's best measured
 * streaming read of node k's memory; without it every node counts alike.
 *
 * Huge pages: "prefer" when the host's free 2 MiB pool holds every
 * allocate / allocate_shared window of a librma statistics file (each
 * member's memory rounded up to 2 MiB, all windows at once), "off" when it
 * does not; left unset without window sizes or a pool figure.
 */
#pragma once

#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "numa/topology.h"
#include "shm/segment.h"

namespace rmatune {

/* A physical core ranks may take: its CPUs and place. */
struct Slot {
	int core = -1;          /* index into the profile's topology.cores */
	std::vector<int> cpus;  /* its allowed hardware threads */
	int node = -1, l3 = -1, package = -1;
};

struct CostModel {
	std::vector<Slot> slots; /* in topology order: slot i is what rmarun --bind core gives rank i */
	/* slots.size()^2, row-major: D's two parts (see above). */
	std::vector<double> halfRoundTripNs;
	std::vector<double> memoryNs;
	/* Figures estimated rather than measured, in words. */
	std::vector<std::string> estimates;
	/* Memory by NUMA node, for the memory policy: the nodes with memory (sorted). */
	std::vector<int> memoryNodes;
	/* Latency (ns) from a node with cores to a node with memory; unmeasured pairs estimated as above. */
	std::map<std::pair<int, int>, double> nodeLatencyNs;
	/* Best measured streaming read (GB/s = bytes/ns) of each memory node; empty when not measured. */
	std::map<int, double> nodeBandwidthGBs;
	/* Free pages of the host's 2 MiB pool, -1 when the profile does not say. */
	long long hugePagesFree = -1;
	std::string topologyIdentity, topologySource, profileTimestamp;

	int size() const { return static_cast<int>(slots.size()); }
	double d(int a, int b) const
	{
		const std::size_t i = static_cast<std::size_t>(a) * slots.size() + static_cast<std::size_t>(b);
		return halfRoundTripNs[i] + memoryNs[i];
	}
};

/* Build the model from a profile (rmatune probe's JSON); false with @err naming what is missing. */
bool costModelFromProfile(const nlohmann::json &profile, CostModel &model, std::string &err);

struct WindowTraffic;

/* Bytes by origin (row) and target (column), n x n. */
struct Traffic {
	int ranks = 0;
	std::vector<double> bytes;
	double at(int r, int s) const { return bytes[static_cast<std::size_t>(r) * static_cast<std::size_t>(ranks) + static_cast<std::size_t>(s)]; }
	/* From a librma statistics file only: each chosen window's own traffic, by world rank. */
	std::vector<WindowTraffic> windows;
	/*
	 * From a librma statistics file only: the bytes of every allocate and
	 * allocate_shared window of the job (all of them, chosen or not), each
	 * member's memory rounded up to 2 MiB; -1 when unknown.
	 */
	long long hugePageBytes = -1;
	int windowsInPool = 0; /* how many windows those bytes are */
};

struct WindowTraffic {
	std::string name;
	std::string id;
	Traffic traffic; /* world ranks; no windows of its own */
	/* The window's members as world ranks, and each one's bytes of memory. */
	std::vector<int> worldRanks;
	std::vector<double> sizes;
};

/*
 * Parse a traffic matrix: JSON { "bytes": [[...], ...] } (a square matrix,
 * origin rows) or { "ranks": N, "pairs": [ { "origin": r, "target": s,
 * "bytes": b }, ... ] }; or CSV lines "origin,target,bytes" (an optional
 * header line, '#' comments; pairs may repeat and add up). @ranks > 0
 * sets the number of ranks (else the matrix's size, or the largest rank
 * named + 1). False with @err naming the file and the line or place.
 *
 * Also librma's own statistics (RMA_STATS, format "librma-stats"): the
 * bytes of every kind of every window in @windows (names or ids; all when
 * empty) are summed by world rank; the job's world_size sets the size.
 */
bool parseTraffic(std::string_view text, const std::string &origin, int ranks, Traffic &traffic, std::string &err,
		  const std::vector<std::string> &windows = {});

/* The model's cost of placing rank r on slot slotOf[r] (distinct slots). */
double placementCost(const CostModel &model, const Traffic &traffic, const std::vector<int> &slotOf);

/* A candidate memory policy and what the model gives it. */
struct PolicyCost {
	librma::Placement placement;
	double latency = 0;	 /* ns of line transfers */
	double bottleneckNs = 0; /* the busiest memory node's serving time */
};

inline constexpr double kLatencyTie = 0.05;

/* The memory policy chosen for some traffic, with every candidate's figures (in the order ties go). */
struct MemoryChoice {
	librma::Placement placement;
	std::vector<PolicyCost> candidates;
	std::string why;
};

/* The policy for @traffic's windows with rank r on slot @slotOf[r] (see the top). */
MemoryChoice chooseMemoryPolicy(const CostModel &model, const Traffic &traffic, const std::vector<int> &slotOf);

/* Huge pages for @traffic's windows on @model's host (see the top); nullopt to leave them alone, @why says. */
std::optional<librma::HugePages> chooseHugePages(const CostModel &model, const Traffic &traffic, std::string &why);

/*
 * Who drains the accumulate rings, for ranks placed at @slotOf: agent mode
 * with one agent per NUMA node holding ranks, each on a core of that node
 * no rank takes (its last allowed CPU), when every such node has one; else
 * nothing (librma's default: each rank's own progress thread, which takes
 * no CPU from another rank). @why says which and why.
 */
struct ProgressChoice {
	std::string mode;         /* "agent", or "" to leave librma's default */
	std::vector<int> cpus;    /* the agents' CPUs, sorted */
	std::string why;
};
ProgressChoice chooseProgress(const CostModel &model, const std::vector<int> &slotOf);

enum class Method { Auto, Exhaustive, Heuristic };

inline constexpr double kExhaustiveLimit = 2e6;

struct Recommendation {
	std::vector<int> slotOf; /* rank -> slot */
	double cost = 0;
	std::vector<int> compactSlotOf;
	double compactCost = 0;
	/* rmarun's other placements for comparison: (name, modelled cost), compact first. */
	std::vector<std::pair<std::string, double>> alternatives;
	std::string method;      /* how slotOf was found, in words */
	bool exact = false;      /* slotOf is a proven optimum */
	long long evaluations = 0;
	double seconds = 0;      /* the search's time, measured */
	/* Memory, chosen for slotOf: the default from all the traffic, then each window's own. */
	MemoryChoice memoryDefault;
	std::vector<std::pair<std::string, MemoryChoice>> windowMemory; /* only windows whose choice differs */
	std::vector<std::string> windowNotes;				/* windows left to the default, and why */
	std::optional<librma::HugePages> hugePages;
	std::string hugePagesWhy;
	ProgressChoice progress;
};

/* Best placement of @traffic's ranks; false with @err if they outnumber the slots. */
bool recommend(const CostModel &model, const Traffic &traffic, Method method, Recommendation &out, std::string &err);

/* The placement file (JSON text) of @rec, with the evidence. */
std::string recommendationFile(const CostModel &model, const Traffic &traffic, const Recommendation &rec);

/* A human summary of @rec: gain, method, the heaviest pairs and where they went. */
std::string recommendationTable(const CostModel &model, const Traffic &traffic, const Recommendation &rec);

} /* namespace rmatune */
