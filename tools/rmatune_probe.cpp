/* SPDX-License-Identifier: MIT */
#include "rmatune_probe.h"

#include <sys/mman.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <cstring>
#include <fstream>
#include <numeric>
#include <random>
#include <thread>
#include <utility>

#include "bootstrap/binding.h"
#include "common/cache.h"
#include "shm/segment.h"
#include "config.h"
#include "rma/rma.h"

#ifdef HAVE_LIBNUMA
#include <numaif.h>
#else
#include <linux/mempolicy.h>
#endif

using librma::CpuCore;
using librma::Topology;

namespace rmatune {

namespace {

using librma::cpuRelax;

using Clock = std::chrono::steady_clock;

/* Strings built by appending (GCC 12 warns falsely on "literal" + std::string at -O3). */
template<typename... Parts>
std::string cat(const Parts &...parts)
{
	std::string s;
	(s.append(parts), ...);
	return s;
}

double secondsSince(Clock::time_point t0, Clock::time_point t1)
{
	return std::chrono::duration<double>(t1 - t0).count();
}

/*
 * Spin until @line holds @value. A partner that has been descheduled (the
 * host is shared) would leave us spinning for its whole time slice: after a
 * long spin, yield so at least this CPU's other work gets on with it.
 */
inline void waitFor(const std::atomic<std::uint64_t> &line, std::uint64_t value)
{
	unsigned spins = 0;
	while (line.load(std::memory_order_acquire) != value) {
		if (++spins < (1u << 16))
			cpuRelax();
		else
			std::this_thread::yield();
	}
}

/* Pin the calling thread to @cpu; false on failure. */
bool pinTo(int cpu)
{
	int one[1] = { cpu };
	return librma::setAffinityCpus(one) == 0;
}

/* One 64-byte line, alone in 128 bytes so the adjacent-line prefetcher does not pair it. */
struct alignas(128) Line {
	std::atomic<std::uint64_t> value{ 0 };
};

/* @samples round-trip times (ns) between threads pinned to @cpuA and @cpuB. */
bool pingPong(int cpuA, int cpuB, const EffortParams &params, std::vector<double> &samples, std::string &err)
{
	auto line = std::make_unique<Line>();
	std::atomic<int> ready{ 0 };
	std::atomic<bool> failed{ false };
	const int rounds = params.roundTrips;
	const int total = params.pingSamples + kWarmupSamples;
	samples.clear();

	auto arrive = [&](int cpu) {
		if (!pinTo(cpu))
			failed.store(true);
		ready.fetch_add(1);
		while (ready.load() < 2)
			cpuRelax();
		return !failed.load();
	};
	std::thread responder([&] {
		if (!arrive(cpuB))
			return;
		std::uint64_t expect = 1;
		for (long i = 0; i < static_cast<long>(rounds) * total; ++i, expect += 2) {
			waitFor(line->value, expect);
			line->value.store(expect + 1, std::memory_order_release);
		}
	});
	std::vector<double> measured;
	if (arrive(cpuA)) {
		std::uint64_t next = 1;
		for (int s = 0; s < total; ++s) {
			Clock::time_point t0 = Clock::now();
			for (int i = 0; i < rounds; ++i, next += 2) {
				line->value.store(next, std::memory_order_release);
				waitFor(line->value, next + 1);
			}
			Clock::time_point t1 = Clock::now();
			if (s >= kWarmupSamples)
				measured.push_back(secondsSince(t0, t1) * 1e9 / rounds);
		}
	}
	responder.join();
	if (failed.load()) {
		err = cat("cannot pin a thread to CPU ", std::to_string(cpuA), " or ", std::to_string(cpuB));
		return false;
	}
	samples = std::move(measured);
	return true;
}

/* How two cores relate: 0 same L3, 1 same node, 2 same package, 3 apart. */
int relation(const CpuCore &a, const CpuCore &b)
{
	if (a.l3 >= 0 && a.l3 == b.l3)
		return 0;
	if (a.node >= 0 && a.node == b.node)
		return 1;
	if (a.package >= 0 && a.package == b.package)
		return 2;
	return 3;
}

/* ---- memory ------------------------------------------------------------------ */

constexpr std::size_t kLine = 64;

/* An anonymous mapping, unmapped on destruction. */
class Buffer
{
public:
	explicit Buffer(std::size_t bytes) : bytes_(bytes)
	{
		void *p = mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1,
			       0);
		data_ = p == MAP_FAILED ? nullptr : static_cast<unsigned char *>(p);
	}
	~Buffer()
	{
		if (data_)
			munmap(data_, bytes_);
	}
	Buffer(const Buffer &) = delete;
	Buffer &operator=(const Buffer &) = delete;
	unsigned char *data() const { return data_; }
	std::size_t size() const { return bytes_; }

private:
	unsigned char *data_ = nullptr;
	std::size_t bytes_;
};

/* The node the page at @addr sits on (move_pages query), -1 if unknown. */
int nodeOfPage(void *addr)
{
	void *pages[1] = { addr };
	int status[1] = { -1 };
	if (syscall(SYS_move_pages, 0, 1UL, pages, nullptr, status, 0) != 0)
		return -1;
	return status[0] >= 0 ? status[0] : -1;
}

/* The share of [addr, addr+bytes) backed by transparent huge pages (/proc/self/smaps), -1 unknown. */
double hugePageShare(const void *addr, std::size_t bytes)
{
	std::ifstream in("/proc/self/smaps");
	const auto start = reinterpret_cast<std::uintptr_t>(addr);
	bool inside = false;
	for (std::string line; std::getline(in, line);) {
		unsigned long lo = 0, hi = 0;
		char dash = 0;
		if (std::sscanf(line.c_str(), "%lx%c%lx", &lo, &dash, &hi) == 3 && dash == '-' &&
		    line.find(' ') != std::string::npos && line.find(':') > line.find(' ')) {
			inside = lo <= start && start < hi;
			continue;
		}
		unsigned long kb = 0;
		if (inside && std::sscanf(line.c_str(), "AnonHugePages: %lu kB", &kb) == 1)
			return std::min(1.0, static_cast<double>(kb) * 1024.0 / static_cast<double>(bytes));
	}
	return -1;
}

/*
 * Link every line of @buf into one cycle in random order (Sattolo's
 * algorithm gives a single cycle through all lines), so each load depends
 * on the previous one and no prefetcher can guess the next. Returns where
 * a chase should start.
 */
const void *linkRandomCycle(Buffer &buf)
{
	const std::size_t lines = buf.size() / kLine;
	std::vector<std::uint32_t> order(lines);
	std::iota(order.begin(), order.end(), 0u);
	std::mt19937_64 rng(0x5eed);
	for (std::size_t i = lines - 1; i > 0; --i) {
		std::uniform_int_distribution<std::size_t> pick(0, i - 1);
		std::swap(order[i], order[pick(rng)]);
	}
	unsigned char *base = buf.data();
	for (std::size_t i = 0; i < lines; ++i) {
		unsigned char *from = base + static_cast<std::size_t>(order[i]) * kLine;
		unsigned char *to = base + static_cast<std::size_t>(order[(i + 1) % lines]) * kLine;
		std::memcpy(from, &to, sizeof(to));
	}
	/* Start where the linking started: the lines written last, still cached, come last. */
	return base + static_cast<std::size_t>(order[0]) * kLine;
}

/*
 * ns per load of @loads dependent loads from @p, which is left where the
 * chain stopped: the next sample goes on from there, so samples walk new
 * lines rather than the few a short chain would keep in the caches.
 */
double chase(const void *&p, std::size_t loads)
{
	const void *q = p;
	Clock::time_point t0 = Clock::now();
	for (std::size_t i = 0; i < loads; ++i)
		q = *static_cast<const void *const *>(q);
	/* The chain's end is "used" before the clock is read: it can be neither dropped nor moved. */
	asm volatile("" : "+r"(q) : : "memory");
	Clock::time_point t1 = Clock::now();
	p = q;
	return secondsSince(t0, t1) * 1e9 / static_cast<double>(loads);
}

using Vec = std::uint64_t __attribute__((vector_size(16)));

/* Read [p, p+bytes) (a multiple of 64) with four independent 16-byte accumulators. */
std::uint64_t readAll(const unsigned char *p, std::size_t bytes)
{
	Vec a{}, b{}, c{}, d{};
	for (std::size_t off = 0; off + 64 <= bytes; off += 64) {
		Vec x, y, z, w;
		std::memcpy(&x, p + off, 16);
		std::memcpy(&y, p + off + 16, 16);
		std::memcpy(&z, p + off + 32, 16);
		std::memcpy(&w, p + off + 48, 16);
		a += x;
		b += y;
		c += z;
		d += w;
	}
	Vec s = a + b + c + d;
	return s[0] + s[1];
}

/* One bandwidth sample: @cpus.size() pinned threads each read their share @passes times. GB/s. */
bool readBandwidth(const Buffer &buf, const std::vector<int> &cpus, int passes, double &gbs, std::string &err)
{
	const std::size_t n = cpus.size();
	const std::size_t share = buf.size() / n / kLine * kLine;
	std::vector<Clock::time_point> starts(n), ends(n);
	std::atomic<std::size_t> ready{ 0 };
	std::atomic<bool> failed{ false };
	std::vector<std::thread> threads;
	for (std::size_t t = 0; t < n; ++t)
		threads.emplace_back([&, t] {
			if (!pinTo(cpus[t]))
				failed.store(true);
			ready.fetch_add(1);
			while (ready.load() < n)
				cpuRelax();
			if (failed.load())
				return;
			std::uint64_t sum = 0;
			starts[t] = Clock::now();
			for (int pass = 0; pass < passes; ++pass)
				sum += readAll(buf.data() + t * share, share);
			ends[t] = Clock::now();
			asm volatile("" : : "r"(sum) : "memory");
		});
	for (std::thread &t : threads)
		t.join();
	if (failed.load()) {
		err = "cannot pin a bandwidth thread to its CPU";
		return false;
	}
	Clock::time_point first = *std::min_element(starts.begin(), starts.end());
	Clock::time_point last = *std::max_element(ends.begin(), ends.end());
	double bytes = static_cast<double>(share) * static_cast<double>(n) * passes;
	gbs = bytes / secondsSince(first, last) / 1e9;
	return true;
}

} /* namespace */

const char *effortName(Effort effort)
{
	switch (effort) {
	case Effort::Quick:
		return "quick";
	case Effort::Normal:
		return "normal";
	case Effort::Thorough:
		return "thorough";
	}
	return "?";
}

EffortParams effortParams(Effort effort)
{
	constexpr std::size_t MiB = 1u << 20;
	switch (effort) {
	case Effort::Quick:
		return { 100, 50, 128 * MiB, 100000, 10, 5 };
	case Effort::Normal:
		return { 500, 400, 256 * MiB, 100000, 40, 20 };
	case Effort::Thorough:
		return { 1000, 2000, 512 * MiB, 100000, 100, 50 };
	}
	return {};
}

std::size_t lastLevelCacheBytes(int cpu)
{
	std::size_t best = 0;
	int bestLevel = 0;
	for (int index = 0; index < 16; ++index) {
		std::string dir = cat("/sys/devices/system/cpu/cpu", std::to_string(cpu), "/cache/index",
				      std::to_string(index), "/");
		std::ifstream levelIn(cat(dir, "level")), sizeIn(cat(dir, "size"));
		int level = 0;
		std::size_t size = 0;
		std::string unit;
		if (!(levelIn >> level) || !(sizeIn >> size))
			continue;
		sizeIn >> unit;
		if (unit == "K")
			size <<= 10;
		else if (unit == "M")
			size <<= 20;
		if (level > bestLevel || (level == bestLevel && size > best)) {
			bestLevel = level;
			best = size;
		}
	}
	return best;
}

std::size_t memoryBufferBytes(const EffortParams &params, std::size_t llcBytes)
{
	std::size_t bytes = std::max(params.bufferBytes, std::min(4 * llcBytes, kMaxBufferBytes));
	std::size_t available = librma::availableMemory();
	if (available != SIZE_MAX)
		bytes = std::min(bytes, available / 4);
	return bytes / (2u << 20) * (2u << 20);
}

Stats summarize(std::vector<double> samples)
{
	Stats s;
	if (samples.empty())
		return s;
	std::sort(samples.begin(), samples.end());
	/* Linear interpolation between closest ranks. */
	auto quantile = [&](double q) {
		double pos = q * static_cast<double>(samples.size() - 1);
		std::size_t lo = static_cast<std::size_t>(pos);
		std::size_t hi = std::min(lo + 1, samples.size() - 1);
		double frac = pos - static_cast<double>(lo);
		return samples[lo] + (samples[hi] - samples[lo]) * frac;
	};
	s.min = samples.front();
	s.max = samples.back();
	s.p25 = quantile(0.25);
	s.median = quantile(0.5);
	s.p75 = quantile(0.75);
	s.samples = static_cast<int>(samples.size());
	return s;
}

std::vector<int> usableCores(const Topology &topology, const std::vector<int> &allowed)
{
	std::vector<int> out;
	const std::vector<CpuCore> &cores = topology.cores();
	for (std::size_t i = 0; i < cores.size(); ++i)
		if (pinCpu(cores[i], allowed) >= 0)
			out.push_back(static_cast<int>(i));
	return out;
}

int pinCpu(const CpuCore &core, const std::vector<int> &allowed)
{
	for (int cpu : core.cpus)
		if (std::binary_search(allowed.begin(), allowed.end(), cpu))
			return cpu;
	return -1;
}

bool measureCoreToCore(const Topology &topology, const std::vector<int> &allowed, const EffortParams &params,
		       const PairsChoice &pairs, CoreMatrix &out, std::string &err)
{
	out = CoreMatrix();
	out.cores = usableCores(topology, allowed);
	const int n = static_cast<int>(out.cores.size());
	for (int c : out.cores)
		out.cpus.push_back(pinCpu(topology.cores()[static_cast<std::size_t>(c)], allowed));
	out.roundTripNs = Matrix(n, n);

	std::vector<std::pair<int, int>> all;
	for (int i = 0; i < n; ++i)
		for (int j = i + 1; j < n; ++j)
			all.emplace_back(i, j);
	out.pairsTotal = all.size();

	std::size_t want = all.size();
	if (pairs.sample > 0)
		want = static_cast<std::size_t>(pairs.sample);
	else if (!pairs.explicitAll && out.cores.size() > kAllPairsCoreLimit)
		want = kDefaultSamplePairs;
	std::vector<std::pair<int, int>> chosen = all;
	if (want < all.size()) {
		/*
		 * A stratified sample: pairs grouped by how the cores relate
		 * (same L3, same node, same package, apart), each group
		 * shuffled with a fixed seed, then taken from the groups in
		 * turn, so every kind of distance is represented.
		 */
		out.sampled = true;
		out.seed = 0x7a11ULL;
		std::mt19937_64 rng(out.seed);
		std::vector<std::vector<std::pair<int, int>>> groups(4);
		for (auto [i, j] : all)
			groups[static_cast<std::size_t>(
				       relation(topology.cores()[static_cast<std::size_t>(out.cores[static_cast<std::size_t>(i)])],
						topology.cores()[static_cast<std::size_t>(out.cores[static_cast<std::size_t>(j)])]))]
				.emplace_back(i, j);
		for (auto &g : groups)
			std::shuffle(g.begin(), g.end(), rng);
		chosen.clear();
		std::vector<std::size_t> next(groups.size(), 0);
		while (chosen.size() < want) {
			for (std::size_t g = 0; g < groups.size() && chosen.size() < want; ++g)
				if (next[g] < groups[g].size())
					chosen.push_back(groups[g][next[g]++]);
		}
		std::sort(chosen.begin(), chosen.end());
		out.sampling = cat("stratified sample of ", std::to_string(want), " of ", std::to_string(all.size()),
				   " pairs: grouped by same L3 / same NUMA node / same package / other package, taken "
				   "from each group in turn, fixed seed");
	} else {
		out.sampling = cat("all ", std::to_string(all.size()), " pairs");
	}

	for (auto [i, j] : chosen) {
		std::vector<double> samples;
		if (!pingPong(out.cpus[static_cast<std::size_t>(i)], out.cpus[static_cast<std::size_t>(j)], params,
			      samples, err))
			return false;
		Stats s = summarize(samples);
		out.roundTripNs.at(i, j) = s;
		out.roundTripNs.at(j, i) = s;
	}
	out.pairsMeasured = chosen.size();
	return true;
}

bool measureMemory(const Topology &topology, const std::vector<int> &allowed, const EffortParams &params,
		   MemoryMatrix &out, std::string &err)
{
	out = MemoryMatrix();
	const std::vector<int> usable = usableCores(topology, allowed);
	out.llcBytes = usable.empty() ? 0
				      : lastLevelCacheBytes(pinCpu(topology.cores()[static_cast<std::size_t>(usable.front())],
								   allowed));
	out.bufferBytes = memoryBufferBytes(params, out.llcBytes);
	/* Rows: nodes whose cores we may run on; their cpus to pin to, one per core. */
	std::vector<std::vector<int>> rowCpus;
	for (const librma::NumaNode &node : topology.nodes()) {
		std::vector<int> cpus;
		for (int c : usable) {
			const CpuCore &core = topology.cores()[static_cast<std::size_t>(c)];
			if (core.node == node.id)
				cpus.push_back(pinCpu(core, allowed));
		}
		if (!cpus.empty()) {
			out.fromNodes.push_back(node.id);
			rowCpus.push_back(std::move(cpus));
		}
		if (node.hasMemory)
			out.toNodes.push_back(node.id);
	}
	/* Cores the topology could not place on a node: measure from them as node -1. */
	if (out.fromNodes.empty() && !usable.empty()) {
		std::vector<int> cpus;
		for (int c : usable)
			cpus.push_back(pinCpu(topology.cores()[static_cast<std::size_t>(c)], allowed));
		out.fromNodes.push_back(-1);
		rowCpus.push_back(std::move(cpus));
	}
	const int rows = static_cast<int>(out.fromNodes.size());
	const int cols = static_cast<int>(out.toNodes.size());
	out.latencyNs = Matrix(rows, cols);
	out.bandwidthGBs = Matrix(rows, cols);
	out.observedNodes.assign(static_cast<std::size_t>(cols), -1);
	for (int r = 0; r < rows; ++r) {
		out.bandwidthThreads.push_back(static_cast<int>(rowCpus[static_cast<std::size_t>(r)].size()));
		out.latencyCpu.push_back(rowCpus[static_cast<std::size_t>(r)].front());
	}

	for (int c = 0; c < cols; ++c) {
		Buffer buf(out.bufferBytes);
		if (!buf.data() || out.bufferBytes < (2u << 20)) {
			err = cat("cannot map a ", std::to_string(out.bufferBytes >> 20), " MiB buffer");
			return false;
		}
		out.hugePagesAdvised = madvise(buf.data(), buf.size(), MADV_HUGEPAGE) == 0;
		librma::MemPolicy policy;
		policy.mode = MPOL_BIND;
		policy.nodes = { out.toNodes[static_cast<std::size_t>(c)] };
		if (librma::applyMemPolicy(buf.data(), buf.size(), policy) != RMA_SUCCESS) {
			err = cat("cannot bind the buffer to node ", std::to_string(out.toNodes[static_cast<std::size_t>(c)]));
			return false;
		}
		/* First touch (and the cycle) from the buffer's node is not needed: MPOL_BIND places it. */
		const void *start = linkRandomCycle(buf);
		out.observedNodes[static_cast<std::size_t>(c)] = nodeOfPage(buf.data());
		out.hugePageShare.push_back(hugePageShare(buf.data(), buf.size()));

		for (int r = 0; r < rows; ++r) {
			const std::vector<int> &cpus = rowCpus[static_cast<std::size_t>(r)];
			std::vector<double> lat;
			bool pinned = true;
			std::thread chaser([&] {
				if (!pinTo(cpus.front())) {
					pinned = false;
					return;
				}
				const void *p = start;
				chase(p, params.chaseLoads); /* warm-up */
				for (int s = 0; s < params.latencySamples; ++s)
					lat.push_back(chase(p, params.chaseLoads));
			});
			chaser.join();
			if (!pinned) {
				err = cat("cannot pin the pointer chase to CPU ", std::to_string(cpus.front()));
				return false;
			}
			out.latencyNs.at(r, c) = summarize(lat);

			std::vector<double> bw;
			for (int s = 0; s < params.bandwidthSamples; ++s) {
				double gbs = 0;
				if (!readBandwidth(buf, cpus, 1, gbs, err))
					return false;
				bw.push_back(gbs);
			}
			out.bandwidthGBs.at(r, c) = summarize(bw);
		}
	}
	return true;
}

} /* namespace rmatune */
