/* SPDX-License-Identifier: MIT */
/*
 * rmatune probe: the measurements. Core-to-core cache-line round trips
 * between physical cores, and memory latency (pointer chase) and read
 * bandwidth from each NUMA node's cores to each node's memory. Every figure
 * is a set of repeated samples summarized as a median with its spread.
 * Only the CPUs this process may run on are used.
 */
#pragma once

#include <cstddef>
#include <optional>
#include <string>
#include <vector>

#include "numa/topology.h"

namespace rmatune {

enum class Effort { Quick, Normal, Thorough };

const char *effortName(Effort effort);

/* How much each measurement does at an effort. */
struct EffortParams {
	/*
	 * Many short samples rather than a few long ones: on a shared host a
	 * preempted thread spoils the sample it falls in, and the median of
	 * many short ones stays with the undisturbed majority.
	 */
	int roundTrips = 0;      /* cache-line round trips per core-to-core sample */
	int pingSamples = 0;     /* core-to-core samples per pair (after kWarmupSamples) */
	std::size_t bufferBytes = 0; /* memory buffer, at least; 4 x the LLC if that is more (to kMaxBufferBytes) */
	std::size_t chaseLoads = 0;  /* dependent loads per latency sample */
	int latencySamples = 0;  /* latency samples per node pair */
	int bandwidthSamples = 0; /* bandwidth samples (one pass over the buffer each) per node pair */
};

EffortParams effortParams(Effort effort);

/* Samples run and discarded before a pair's core-to-core samples. */
inline constexpr int kWarmupSamples = 10;

inline constexpr std::size_t kMaxBufferBytes = std::size_t(1) << 30;

/* The last-level cache of @cpu in bytes (sysfs), 0 if unknown. */
std::size_t lastLevelCacheBytes(int cpu);

/*
 * The memory buffer: the effort's size, or 4 x the LLC if that is larger
 * (at most kMaxBufferBytes), at most a quarter of the memory available,
 * whole 2 MiB pages.
 */
std::size_t memoryBufferBytes(const EffortParams &params, std::size_t llcBytes);

/* A set of samples, summarized. */
struct Stats {
	double min = 0, p25 = 0, median = 0, p75 = 0, max = 0;
	int samples = 0;
};

Stats summarize(std::vector<double> samples);

/* Row-major cells; nullopt where nothing was measured (diagonal, unsampled pairs). */
struct Matrix {
	int rows = 0, cols = 0;
	std::vector<std::optional<Stats>> cells;

	Matrix() = default;
	Matrix(int r, int c) : rows(r), cols(c), cells(static_cast<std::size_t>(r) * static_cast<std::size_t>(c)) {}
	std::optional<Stats> &at(int r, int c) { return cells[static_cast<std::size_t>(r * cols + c)]; }
	const std::optional<Stats> &at(int r, int c) const { return cells[static_cast<std::size_t>(r * cols + c)]; }
};

/* --pairs: every pair, or a stated sample of N pairs (0: all unless the node is big). */
struct PairsChoice {
	bool explicitAll = false;
	int sample = 0;
};

struct CoreMatrix {
	std::vector<int> cores; /* indices into Topology::cores() of the cores measured */
	std::vector<int> cpus;  /* the CPU each core's thread was pinned to */
	Matrix roundTripNs;     /* symmetric; diagonal empty */
	bool sampled = false;
	std::string sampling;   /* how pairs were chosen, in words */
	std::size_t pairsMeasured = 0;
	std::size_t pairsTotal = 0;
	unsigned long long seed = 0;
};

/* Cores (indices into topology.cores()) holding a CPU in @allowed. */
std::vector<int> usableCores(const librma::Topology &topology, const std::vector<int> &allowed);

/* The CPU of core @core to pin a thread to: its first allowed hardware thread. */
int pinCpu(const librma::CpuCore &core, const std::vector<int> &allowed);

/* Nodes with more cores than this get a sample of pairs unless --pairs all. */
inline constexpr std::size_t kAllPairsCoreLimit = 32;
inline constexpr int kDefaultSamplePairs = 256;

/* False with @err if a thread could not be pinned. */
bool measureCoreToCore(const librma::Topology &topology, const std::vector<int> &allowed, const EffortParams &params,
		       const PairsChoice &pairs, CoreMatrix &out, std::string &err);

struct MemoryMatrix {
	std::vector<int> fromNodes; /* node ids whose cores ran the loads (rows) */
	std::vector<int> toNodes;   /* node ids whose memory was read (columns) */
	/* Node the buffer's first page actually sat on (move_pages), per column; -1 unknown. */
	std::vector<int> observedNodes;
	Matrix latencyNs;     /* ns per dependent load */
	Matrix bandwidthGBs;  /* GB/s (1e9 bytes), all allowed cores of the row node reading */
	std::vector<int> bandwidthThreads; /* per row: threads that read */
	std::vector<int> latencyCpu;       /* per row: the CPU the pointer chase ran on */
	bool hugePagesAdvised = false;     /* MADV_HUGEPAGE accepted */
	std::vector<double> hugePageShare; /* per column: share of the buffer in THP, -1 unknown */
	std::size_t llcBytes = 0;          /* last-level cache seen from the first core, 0 unknown */
	std::size_t bufferBytes = 0;       /* the buffer each column read */
};

/* False with @err if memory could not be had or bound, or a thread pinned. */
bool measureMemory(const librma::Topology &topology, const std::vector<int> &allowed, const EffortParams &params,
		   MemoryMatrix &out, std::string &err);

} /* namespace rmatune */
