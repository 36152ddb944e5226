/* SPDX-License-Identifier: MIT */
#include "rmatune_report.h"

#include <sys/utsname.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <ctime>
#include <filesystem>
#include <fstream>

#include "bootstrap/binding.h"
#include "config.h"
#include "shm/segment.h"
#include "rmatune_text.h"

using nlohmann::json;

namespace rmatune {

namespace {

/* @text into the file @path, whole; false with @err naming the file if it cannot be written. */
bool writeText(const std::string &path, const std::string &text, std::string &err)
{
	FILE *f = std::fopen(path.c_str(), "w");
	if (!f) {
		err = cat("cannot write ", path);
		return false;
	}
	bool ok = std::fputs(text.c_str(), f) >= 0;
	ok = std::fclose(f) == 0 && ok;
	if (!ok)
		err = cat("cannot write ", path);
	return ok;
}

/* A counter of the 2 MiB huge-page pool under @dir; -1 if absent. */
long poolCounter(const std::string &dir, const char *name)
{
	std::ifstream in(cat(dir, "/hugepages/hugepages-2048kB/", name));
	long v = -1;
	if (!(in >> v))
		return -1;
	return v;
}

std::string timestampUtc()
{
	std::time_t now = std::time(nullptr);
	std::tm tm{};
	gmtime_r(&now, &tm);
	char b[32];
	std::strftime(b, sizeof(b), "%Y-%m-%dT%H:%M:%SZ", &tm);
	return b;
}

/* FNV-1a, 64 bits: a stable name for a topology's canonical description. */
std::string fnv1a64(const std::string &text)
{
	std::uint64_t h = 0xcbf29ce484222325ULL;
	for (unsigned char c : text) {
		h ^= c;
		h *= 0x100000001b3ULL;
	}
	char b[24];
	std::snprintf(b, sizeof(b), "%016llx", static_cast<unsigned long long>(h));
	return b;
}

/*
 * What identifies a topology: nodes with their CPUs and memory, cores with
 * their threads and places. Not the source, so the same machine read from
 * hwloc or from its exported XML has the same identity.
 */
std::string canonicalTopology(const librma::Topology &t)
{
	std::string s = cat("packages ", std::to_string(t.packageCount()), "; l3 ", std::to_string(t.l3Count()), ";");
	for (const librma::NumaNode &n : t.nodes())
		s.append(cat(" node ", std::to_string(n.id), " cpus ", librma::cpuListText(n.cpus),
			     n.hasMemory ? " mem;" : " nomem;"));
	for (const librma::CpuCore &c : t.cores())
		s.append(cat(" core ", librma::cpuListText(c.cpus), " n", std::to_string(c.node), " l",
			     std::to_string(c.l3), " p", std::to_string(c.package), ";"));
	return s;
}

std::string plural(std::size_t n, const char *one, const char *many)
{
	return cat(std::to_string(n), " ", n == 1 ? one : many);
}

json statsMatrix(const Matrix &m, double Stats::*field)
{
	json rows = json::array();
	for (int r = 0; r < m.rows; ++r) {
		json row = json::array();
		for (int c = 0; c < m.cols; ++c) {
			const std::optional<Stats> &s = m.at(r, c);
			if (s)
				row.push_back((*s).*field);
			else
				row.push_back(nullptr);
		}
		rows.push_back(std::move(row));
	}
	return rows;
}

/* median, spread (min/p25/p75/max) and sample counts of @m. */
void putMatrix(json &j, const Matrix &m)
{
	j["median"] = statsMatrix(m, &Stats::median);
	j["min"] = statsMatrix(m, &Stats::min);
	j["p25"] = statsMatrix(m, &Stats::p25);
	j["p75"] = statsMatrix(m, &Stats::p75);
	j["max"] = statsMatrix(m, &Stats::max);
}

/* ---- tables ------------------------------------------------------------------ */

std::string number(double v)
{
	if (v >= 100)
		return fmt("%.0f", v);
	if (v >= 10)
		return fmt("%.1f", v);
	return fmt("%.2f", v);
}

std::string cell(const json &v)
{
	return v.is_number() ? number(v.get<double>()) : std::string("-");
}

void printGrid(FILE *out, const std::vector<std::string> &rowLabels, const std::vector<std::string> &colLabels,
	       const json &values, const std::string &corner)
{
	std::size_t lw = corner.size();
	for (const std::string &l : rowLabels)
		lw = std::max(lw, l.size());
	std::size_t cw = 7;
	for (const std::string &l : colLabels)
		cw = std::max(cw, l.size() + 1);
	std::fprintf(out, "  %-*s", static_cast<int>(lw), corner.c_str());
	for (const std::string &l : colLabels)
		std::fprintf(out, "%*s", static_cast<int>(cw), l.c_str());
	std::fputc('\n', out);
	for (std::size_t r = 0; r < rowLabels.size(); ++r) {
		std::fprintf(out, "  %-*s", static_cast<int>(lw), rowLabels[r].c_str());
		for (std::size_t c = 0; c < colLabels.size(); ++c)
			std::fprintf(out, "%*s", static_cast<int>(cw), cell(values[r][c]).c_str());
		std::fputc('\n', out);
	}
}

/* "a-b" (the spread between two matrices' cells), "-" where either is empty. */
json spreadCells(const json &lo, const json &hi)
{
	json rows = json::array();
	for (std::size_t r = 0; r < lo.size(); ++r) {
		json row = json::array();
		for (std::size_t c = 0; c < lo[r].size(); ++c)
			row.push_back(lo[r][c].is_number() && hi[r][c].is_number()
					      ? json(hi[r][c].get<double>() - lo[r][c].get<double>())
					      : json(nullptr));
		rows.push_back(std::move(row));
	}
	return rows;
}

void printNodeMatrix(FILE *out, const json &memory, const char *what)
{
	const json &m = memory[what];
	std::fprintf(out, "\nmemory %s, %s (%s): median [min .. max]\n", what, m["unit"].get<std::string>().c_str(),
		     m["metric"].get<std::string>().c_str());
	std::vector<std::string> rows, cols;
	for (const json &n : memory["from_nodes"])
		rows.push_back(cat("cores of node ", std::to_string(n.get<int>())));
	for (const json &n : memory["to_nodes"])
		cols.push_back(cat("memory of node ", std::to_string(n.get<int>())));
	std::size_t lw = 0;
	for (const std::string &l : rows)
		lw = std::max(lw, l.size());
	std::fprintf(out, "  %-*s", static_cast<int>(lw), "");
	for (const std::string &c : cols)
		std::fprintf(out, "  %24s", c.c_str());
	std::fputc('\n', out);
	for (std::size_t r = 0; r < rows.size(); ++r) {
		std::fprintf(out, "  %-*s", static_cast<int>(lw), rows[r].c_str());
		for (std::size_t c = 0; c < cols.size(); ++c) {
			std::string text = m["median"][r][c].is_number()
						   ? cat(cell(m["median"][r][c]), " [", cell(m["min"][r][c]), " .. ",
							 cell(m["max"][r][c]), "]")
						   : std::string("-");
			std::fprintf(out, "  %24s", text.c_str());
		}
		std::fputc('\n', out);
	}
}

/* ---- SVG --------------------------------------------------------------------- */

std::string xmlEscape(const std::string &s)
{
	std::string out;
	for (char c : s) {
		switch (c) {
		case '&':
			out.append("&amp;");
			break;
		case '<':
			out.append("&lt;");
			break;
		case '>':
			out.append("&gt;");
			break;
		case '"':
			out.append("&quot;");
			break;
		default:
			out.push_back(c);
		}
	}
	return out;
}

/* A viridis-like scale, @t in [0, 1]. */
struct Rgb {
	double r, g, b;
};
constexpr Rgb kScale[] = { { 68, 1, 84 }, { 59, 82, 139 }, { 33, 145, 140 }, { 94, 201, 98 }, { 253, 231, 37 } };
constexpr int kStops = sizeof(kScale) / sizeof(kScale[0]);

Rgb colorAt(double t)
{
	t = std::clamp(t, 0.0, 1.0) * (kStops - 1);
	int i = std::min(static_cast<int>(t), kStops - 2);
	double f = t - i;
	const Rgb &a = kScale[i], &b = kScale[i + 1];
	return { a.r + (b.r - a.r) * f, a.g + (b.g - a.g) * f, a.b + (b.b - a.b) * f };
}

std::string hex(const Rgb &c)
{
	char b[8];
	std::snprintf(b, sizeof(b), "#%02x%02x%02x", static_cast<int>(std::lround(c.r)),
		      static_cast<int>(std::lround(c.g)), static_cast<int>(std::lround(c.b)));
	return b;
}

std::string num(double v)
{
	return fmt("%.1f", v);
}

/* A heatmap of one matrix of the profile (@part["median"]), labelled. */
Heatmap heatmapOf(const json &median, const std::string &title, const std::string &subtitle, const std::string &unit,
		  const std::string &rowAxis, const std::string &colAxis, std::vector<std::string> rowLabels,
		  std::vector<std::string> colLabels)
{
	Heatmap h;
	h.title = title;
	h.subtitle = subtitle;
	h.unit = unit;
	h.rowAxis = rowAxis;
	h.colAxis = colAxis;
	h.rowLabels = std::move(rowLabels);
	h.colLabels = std::move(colLabels);
	for (const json &row : median)
		for (const json &v : row)
			h.values.push_back(v.is_number() ? std::optional<double>(v.get<double>()) : std::nullopt);
	return h;
}

} /* namespace */

std::string topologyIdentity(const librma::Topology &topology)
{
	return cat("fnv1a64:", fnv1a64(canonicalTopology(topology)));
}

json profileJson(const librma::Topology &topology, const Probe &probe)
{
	json p;
	p["schema"] = "rmatune-profile";
	p["schema_version"] = kProfileSchemaVersion;
	p["tool"] = { { "name", "rmatune" }, { "version", RMA_VERSION_STRING } };
	p["timestamp"] = timestampUtc();

	char host[256] = "";
	if (gethostname(host, sizeof(host) - 1) != 0)
		host[0] = '\0';
	struct utsname u{};
	uname(&u);
	p["host"] = { { "hostname", std::string(host) },
		      { "kernel", cat(u.sysname, " ", u.release, " ", u.version) },
		      { "machine", std::string(u.machine) } };

	/* Topology. */
	json t;
	t["source"] = topology.source();
	std::size_t threads = 0;
	for (const librma::CpuCore &c : topology.cores())
		threads += c.cpus.size();
	t["description"] = cat(plural(static_cast<std::size_t>(topology.packageCount()), "package", "packages"), ", ",
			       plural(static_cast<std::size_t>(topology.nodeCount()), "NUMA node", "NUMA nodes"), ", ",
			       plural(static_cast<std::size_t>(topology.l3Count()), "L3 domain", "L3 domains"), ", ",
			       plural(topology.cores().size(), "core", "cores"), ", ",
			       plural(threads, "hardware thread", "hardware threads"));
	t["identity"] = topologyIdentity(topology);
	t["packages"] = topology.packageCount();
	t["l3_domains"] = topology.l3Count();
	json nodes = json::array();
	for (const librma::NumaNode &n : topology.nodes()) {
		json node = { { "id", n.id },
			      { "cpus", n.cpus },
			      { "cpu_list", librma::cpuListText(n.cpus) },
			      { "has_memory", n.hasMemory } };
		std::string dir = cat("/sys/devices/system/node/node", std::to_string(n.id));
		long total = poolCounter(dir, "nr_hugepages"), free = poolCounter(dir, "free_hugepages");
		if (total >= 0 && free >= 0)
			node["huge_pages_2m"] = { { "total", total }, { "free", free } };
		nodes.push_back(std::move(node));
	}
	t["numa_nodes"] = std::move(nodes);
	json cores = json::array();
	for (std::size_t i = 0; i < topology.cores().size(); ++i) {
		const librma::CpuCore &c = topology.cores()[i];
		cores.push_back({ { "index", i },
				  { "cpus", c.cpus },
				  { "node", c.node },
				  { "l3", c.l3 },
				  { "package", c.package } });
	}
	t["cores"] = std::move(cores);
	t["allowed_cpus"] = probe.allowedCpus;
	t["allowed_cpu_list"] = librma::cpuListText(probe.allowedCpus);
	long total = poolCounter("/sys/kernel/mm", "nr_hugepages");
	t["huge_pages"] = { { "page_size_bytes", librma::kHugePageSize },
			    { "total", std::max(total, 0L) },
			    { "free", librma::freeHugePages() },
			    { "free_means", "free minus reserved pages of the host's 2 MiB pool" } };
	p["topology"] = std::move(t);

	p["measurement"] = { { "effort", effortName(probe.effort) },
			     { "duration_seconds", probe.seconds },
			     { "clock", "steady_clock" },
			     { "cpus_used", "only the CPUs this process may run on (sched_getaffinity)" } };

	/* Core to core. */
	const CoreMatrix &cm = probe.cores;
	json cc;
	cc["metric"] = "cache-line round trip between two physical cores";
	cc["unit"] = "ns";
	cc["cores"] = cm.cores;
	cc["cpus"] = cm.cpus;
	json pairs = { { "mode", cm.sampled ? "sample" : "all" },
		       { "measured", cm.pairsMeasured },
		       { "total", cm.pairsTotal },
		       { "description", cm.sampling } };
	if (cm.sampled)
		pairs["seed"] = cm.seed;
	cc["pairs"] = std::move(pairs);
	putMatrix(cc, cm.roundTripNs);
	cc["method"] = {
		{ "round_trips_per_sample", probe.params.roundTrips },
		{ "samples_per_pair", probe.params.pingSamples },
		{ "warmup_samples", kWarmupSamples },
		{ "line_bytes", 64 },
		{ "line_alignment_bytes", 128 },
		{ "description",
		  "one thread per physical core, pinned to the core's first allowed hardware thread; they pass "
		  "a counter back and forth through one std::atomic<uint64_t> cache line (release store, acquire "
		  "spin); a sample is the time of round_trips_per_sample round trips divided by their number; the "
		  "matrix is symmetric and its diagonal empty" }
	};
	p["core_to_core"] = std::move(cc);

	/* Node to node. */
	const MemoryMatrix &mm = probe.memory;
	json mem;
	mem["from_nodes"] = mm.fromNodes;
	mem["to_nodes"] = mm.toNodes;
	mem["observed_nodes"] = mm.observedNodes;
	mem["huge_page_share"] = mm.hugePageShare;
	json lat = { { "metric", "dependent load latency (pointer chase)" }, { "unit", "ns" } };
	putMatrix(lat, mm.latencyNs);
	mem["latency"] = std::move(lat);
	json bw = { { "metric", "streaming read bandwidth, one thread per allowed core of the row's node" },
		    { "unit", "GB/s" } };
	putMatrix(bw, mm.bandwidthGBs);
	mem["bandwidth"] = std::move(bw);
	mem["method"] = {
		{ "buffer_bytes", mm.bufferBytes },
		{ "last_level_cache_bytes", mm.llcBytes },
		{ "loads_per_sample", probe.params.chaseLoads },
		{ "latency_samples", probe.params.latencySamples },
		{ "latency_warmup_loads", probe.params.chaseLoads },
		{ "bandwidth_samples", probe.params.bandwidthSamples },
		{ "read_passes_per_sample", 1 },
		{ "bandwidth_threads", mm.bandwidthThreads },
		{ "latency_cpus", mm.latencyCpu },
		{ "pages", mm.hugePagesAdvised ? "transparent huge pages advised (MADV_HUGEPAGE)" : "base pages" },
		{ "binding", "mbind MPOL_BIND to the column's node before first touch; observed_nodes is where the "
			     "first page landed (move_pages), -1 unknown" },
		{ "latency_pattern", "one 64-byte line per load, all lines of the buffer in one random cycle "
				     "(Sattolo), one sample's loads of warm-up" },
		{ "bandwidth_unit", "1e9 bytes per second, bytes read by all threads over the span from the first "
				    "start to the last end" }
	};
	p["memory"] = std::move(mem);
	return p;
}

void printTables(FILE *out, const json &p)
{
	const json &t = p["topology"];
	std::fprintf(out, "rmatune probe on %s (%s), effort %s, %.1f s\n",
		     p["host"]["hostname"].get<std::string>().c_str(), p["host"]["machine"].get<std::string>().c_str(),
		     p["measurement"]["effort"].get<std::string>().c_str(),
		     p["measurement"]["duration_seconds"].get<double>());
	std::fprintf(out, "\ntopology: %s\n  source: %s\n  identity: %s\n", t["description"].get<std::string>().c_str(),
		     t["source"].get<std::string>().c_str(), t["identity"].get<std::string>().c_str());
	for (const json &n : t["numa_nodes"])
		std::fprintf(out, "  NUMA node %d: CPUs %s, memory %s\n", n["id"].get<int>(),
			     n["cpu_list"].get<std::string>().c_str(), n["has_memory"].get<bool>() ? "yes" : "no");
	std::fprintf(out, "  cores (core: hardware threads, node, L3, package):\n");
	for (const json &c : t["cores"]) {
		std::vector<int> cpus = c["cpus"].get<std::vector<int>>();
		std::fprintf(out, "    %3d: CPUs %-8s node %d  L3 %d  package %d\n", c["index"].get<int>(),
			     librma::cpuListText(cpus).c_str(), c["node"].get<int>(), c["l3"].get<int>(),
			     c["package"].get<int>());
	}
	std::fprintf(out, "  allowed CPUs: %s\n", t["allowed_cpu_list"].get<std::string>().c_str());
	std::fprintf(out, "  huge pages (2 MiB): %lld free of %lld\n", t["huge_pages"]["free"].get<long long>(),
		     t["huge_pages"]["total"].get<long long>());

	const json &cc = p["core_to_core"];
	std::fprintf(out, "\ncore-to-core cache-line round trip, ns (median of %d samples of %d round trips; %s)\n",
		     cc["method"]["samples_per_pair"].get<int>(), cc["method"]["round_trips_per_sample"].get<int>(),
		     cc["pairs"]["description"].get<std::string>().c_str());
	std::vector<std::string> labels;
	const json &cores = cc["cores"];
	for (std::size_t i = 0; i < cores.size(); ++i)
		labels.push_back(cat("c", std::to_string(cores[i].get<int>()), "/", std::to_string(cc["cpus"][i].get<int>())));
	if (labels.size() < 2) {
		std::fprintf(out, "  (fewer than two cores allowed: nothing to measure)\n");
	} else {
		printGrid(out, labels, labels, cc["median"], "core/cpu");
		std::fprintf(out, "  spread, interquartile range p75 - p25 (min, p25, p75, max in the JSON):\n");
		printGrid(out, labels, labels, spreadCells(cc["p25"], cc["p75"]), "core/cpu");
	}

	const json &m = p["memory"];
	printNodeMatrix(out, m, "latency");
	printNodeMatrix(out, m, "bandwidth");
	std::fprintf(out, "  (buffer %zu MiB, %s", m["method"]["buffer_bytes"].get<std::size_t>() >> 20,
		     m["method"]["pages"].get<std::string>().c_str());
	for (std::size_t c = 0; c < m["huge_page_share"].size(); ++c)
		if (m["huge_page_share"][c].get<double>() >= 0)
			std::fprintf(out, "; node %d: %.0f %% in huge pages", m["to_nodes"][c].get<int>(),
				     100 * m["huge_page_share"][c].get<double>());
	std::fputs(")\n", out);
	for (std::size_t c = 0; c < m["observed_nodes"].size(); ++c) {
		int want = m["to_nodes"][c].get<int>(), got = m["observed_nodes"][c].get<int>();
		if (got >= 0 && got != want)
			std::fprintf(out,
				     "  note: memory bound to node %d landed on node %d (an injected topology, or a node "
				     "outside this process's cpuset)\n",
				     want, got);
	}
}

bool writeHeatmap(const std::string &path, const Heatmap &h, std::string &err)
{
	const int rows = static_cast<int>(h.rowLabels.size());
	const int cols = static_cast<int>(h.colLabels.size());
	const int cs = std::clamp(640 / std::max({ rows, cols, 1 }), 12, 96);
	const int left = 150, top = 90, legendW = 110;
	const int width = left + cols * cs + legendW + 20;
	const int height = top + rows * cs + 40;

	double lo = 0, hi = 0;
	bool any = false;
	for (const std::optional<double> &v : h.values)
		if (v) {
			lo = any ? std::min(lo, *v) : *v;
			hi = any ? std::max(hi, *v) : *v;
			any = true;
		}
	auto scale = [&](double v) { return hi > lo ? (v - lo) / (hi - lo) : 0.5; };
	/* Labels thinned out so that they do not overlap. */
	const int every = std::max(1, 14 / cs + (14 % cs ? 1 : 0));

	std::string s = "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n";
	s.append(cat("<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"", std::to_string(width), "\" height=\"",
		     std::to_string(height), "\" viewBox=\"0 0 ", std::to_string(width), " ", std::to_string(height),
		     "\" font-family=\"sans-serif\">\n"));
	s.append("<rect width=\"100%\" height=\"100%\" fill=\"white\"/>\n");
	s.append(cat("<text x=\"20\" y=\"24\" font-size=\"15\" font-weight=\"bold\">", xmlEscape(h.title), " (",
		     xmlEscape(h.unit), ")</text>\n"));
	s.append(cat("<text x=\"20\" y=\"42\" font-size=\"11\" fill=\"#555555\">", xmlEscape(h.subtitle),
		     "</text>\n"));
	s.append(cat("<text x=\"", std::to_string(left), "\" y=\"", std::to_string(top - 26),
		     "\" font-size=\"12\">", xmlEscape(h.colAxis), " &#8594;</text>\n"));
	s.append(cat("<text x=\"20\" y=\"", std::to_string(top - 10), "\" font-size=\"12\">", xmlEscape(h.rowAxis),
		     " &#8595;</text>\n"));
	for (int c = 0; c < cols; c += every)
		s.append(cat("<text x=\"", num(left + c * cs + cs / 2.0), "\" y=\"", std::to_string(top - 6),
			     "\" font-size=\"11\" text-anchor=\"middle\">", xmlEscape(h.colLabels[static_cast<std::size_t>(c)]),
			     "</text>\n"));
	for (int r = 0; r < rows; r += every)
		s.append(cat("<text x=\"", std::to_string(left - 6), "\" y=\"", num(top + r * cs + cs / 2.0 + 4),
			     "\" font-size=\"11\" text-anchor=\"end\">", xmlEscape(h.rowLabels[static_cast<std::size_t>(r)]),
			     "</text>\n"));
	for (int r = 0; r < rows; ++r)
		for (int c = 0; c < cols; ++c) {
			const std::optional<double> &v = h.values[static_cast<std::size_t>(r * cols + c)];
			std::string x = std::to_string(left + c * cs), y = std::to_string(top + r * cs);
			if (!v) {
				s.append(cat("<rect x=\"", x, "\" y=\"", y, "\" width=\"", std::to_string(cs),
					     "\" height=\"", std::to_string(cs),
					     "\" fill=\"#eeeeee\" stroke=\"white\"><title>not measured</title></rect>\n"));
				continue;
			}
			Rgb color = colorAt(scale(*v));
			s.append(cat("<rect x=\"", x, "\" y=\"", y, "\" width=\"", std::to_string(cs), "\" height=\"",
				     std::to_string(cs), "\" fill=\"", hex(color), "\" stroke=\"white\"><title>",
				     xmlEscape(h.rowLabels[static_cast<std::size_t>(r)]), " / ",
				     xmlEscape(h.colLabels[static_cast<std::size_t>(c)]), ": ", number(*v), " ",
				     xmlEscape(h.unit), "</title></rect>\n"));
			if (cs >= 36) {
				double luminance = 0.299 * color.r + 0.587 * color.g + 0.114 * color.b;
				s.append(cat("<text x=\"", num(left + c * cs + cs / 2.0), "\" y=\"",
					     num(top + r * cs + cs / 2.0 + 4), "\" font-size=\"11\" text-anchor=\"middle\" fill=\"",
					     luminance > 140 ? "black" : "white", "\">", number(*v), "</text>\n"));
			}
		}
	/* Legend: the colour scale from the smallest to the largest value. */
	const int lx = left + cols * cs + 30, ly = top, lh = std::max(rows * cs, 120);
	s.append("<defs><linearGradient id=\"scale\" x1=\"0\" y1=\"1\" x2=\"0\" y2=\"0\">");
	for (int i = 0; i < kStops; ++i)
		s.append(cat("<stop offset=\"", num(100.0 * i / (kStops - 1)), "%\" stop-color=\"", hex(kScale[i]),
			     "\"/>"));
	s.append("</linearGradient></defs>\n");
	s.append(cat("<rect x=\"", std::to_string(lx), "\" y=\"", std::to_string(ly), "\" width=\"16\" height=\"",
		     std::to_string(lh), "\" fill=\"url(#scale)\"/>\n"));
	if (any) {
		s.append(cat("<text x=\"", std::to_string(lx + 22), "\" y=\"", std::to_string(ly + 10),
			     "\" font-size=\"11\">", number(hi), "</text>\n"));
		s.append(cat("<text x=\"", std::to_string(lx + 22), "\" y=\"", std::to_string(ly + lh),
			     "\" font-size=\"11\">", number(lo), "</text>\n"));
	} else {
		s.append(cat("<text x=\"", std::to_string(lx + 22), "\" y=\"", std::to_string(ly + 10),
			     "\" font-size=\"11\">no data</text>\n"));
	}
	s.append("</svg>\n");

	return writeText(path, s, err);
}

bool writePlots(const std::string &dir, const json &p, std::vector<std::string> &written, std::string &err)
{
	std::error_code ec;
	std::filesystem::create_directories(dir, ec);
	if (ec) {
		err = cat("cannot create ", dir, ": ", ec.message());
		return false;
	}
	const json &cc = p["core_to_core"];
	/* Rows say core and CPU; columns, narrower, the core only. */
	std::vector<std::string> rowLabels, colLabels;
	for (std::size_t i = 0; i < cc["cores"].size(); ++i) {
		std::string core = std::to_string(cc["cores"][i].get<int>());
		rowLabels.push_back(cat("core ", core, " (cpu ", std::to_string(cc["cpus"][i].get<int>()), ")"));
		colLabels.push_back(cat("c", core));
	}
	const json &m = p["memory"];
	std::vector<std::string> from, to;
	for (const json &n : m["from_nodes"])
		from.push_back(cat("cores of node ", std::to_string(n.get<int>())));
	for (const json &n : m["to_nodes"])
		to.push_back(cat("node ", std::to_string(n.get<int>())));

	struct Plot {
		std::string file;
		Heatmap map;
	};
	const std::string sub = cat(p["host"]["hostname"].get<std::string>(), ", ",
				    p["topology"]["description"].get<std::string>(), ", effort ",
				    p["measurement"]["effort"].get<std::string>(), ", ", p["timestamp"].get<std::string>(),
				    "; ", cc["pairs"]["description"].get<std::string>());
	const std::string memSub = cat(p["host"]["hostname"].get<std::string>(), ", buffer ",
				       std::to_string(m["method"]["buffer_bytes"].get<std::size_t>() >> 20), " MiB, ",
				       p["timestamp"].get<std::string>());
	std::vector<Plot> plots = {
		{ "core_to_core.svg",
		  heatmapOf(cc["median"], "core-to-core cache-line round trip, median", sub, "ns", "from core", "to core",
			    rowLabels, colLabels) },
		{ "memory_latency.svg",
		  heatmapOf(m["latency"]["median"], "memory latency (pointer chase), median", memSub, "ns", "loads from",
			    "memory of", from, to) },
		{ "memory_bandwidth.svg",
		  heatmapOf(m["bandwidth"]["median"], "memory read bandwidth, median", memSub, "GB/s", "reads from",
			    "memory of", from, to) },
	};
	for (const Plot &plot : plots) {
		std::string path = cat(dir, "/", plot.file);
		if (!writeHeatmap(path, plot.map, err))
			return false;
		written.push_back(path);
	}
	return true;
}

bool writeBarChart(const std::string &path, const BarChart &c, std::string &err)
{
	const int bars = static_cast<int>(c.labels.size());
	const int left = 230, top = 70, barH = 26, gap = 10, plotW = 520;
	const int width = left + plotW + 150;
	const int height = top + bars * (barH + gap) + 50;
	double hi = 0;
	for (int i = 0; i < bars; ++i)
		if (c.notes[static_cast<std::size_t>(i)].empty())
			hi = std::max(hi, c.max[static_cast<std::size_t>(i)]);
	auto x = [&](double v) { return left + (hi > 0 ? v / hi : 0) * plotW; };

	std::string s = "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n";
	s.append(cat("<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"", std::to_string(width), "\" height=\"",
		     std::to_string(height), "\" viewBox=\"0 0 ", std::to_string(width), " ", std::to_string(height),
		     "\" font-family=\"sans-serif\">\n"));
	s.append("<rect width=\"100%\" height=\"100%\" fill=\"white\"/>\n");
	s.append(cat("<text x=\"20\" y=\"24\" font-size=\"15\" font-weight=\"bold\">", xmlEscape(c.title), " (",
		     xmlEscape(c.unit), ")</text>\n"));
	s.append(cat("<text x=\"20\" y=\"42\" font-size=\"11\" fill=\"#555555\">", xmlEscape(c.subtitle),
		     "</text>\n"));
	s.append(cat("<line x1=\"", std::to_string(left), "\" y1=\"", std::to_string(top - 6), "\" x2=\"",
		     std::to_string(left), "\" y2=\"", std::to_string(top + bars * (barH + gap)),
		     "\" stroke=\"#333333\"/>\n"));
	for (int i = 0; i < bars; ++i) {
		const std::size_t k = static_cast<std::size_t>(i);
		const double y = top + i * (barH + gap);
		s.append(cat("<text x=\"", std::to_string(left - 8), "\" y=\"", num(y + barH / 2.0 + 4),
			     "\" font-size=\"12\" text-anchor=\"end\">", xmlEscape(c.labels[k]), "</text>\n"));
		if (!c.notes[k].empty()) {
			s.append(cat("<rect x=\"", std::to_string(left), "\" y=\"", num(y), "\" width=\"", std::to_string(plotW),
				     "\" height=\"", std::to_string(barH),
				     "\" fill=\"none\" stroke=\"#cc3333\" stroke-dasharray=\"4 3\"/>\n"));
			s.append(cat("<text x=\"", std::to_string(left + 8), "\" y=\"", num(y + barH / 2.0 + 4),
				     "\" font-size=\"11\" fill=\"#cc3333\">", xmlEscape(c.notes[k]), "</text>\n"));
			continue;
		}
		Rgb color = colorAt(bars > 1 ? static_cast<double>(i) / (bars - 1) * 0.75 : 0.0);
		s.append(cat("<rect x=\"", std::to_string(left), "\" y=\"", num(y), "\" width=\"",
			     num(x(c.median[k]) - left), "\" height=\"", std::to_string(barH), "\" fill=\"", hex(color),
			     "\"><title>", xmlEscape(c.labels[k]), ": median ", number(c.median[k]), " ", xmlEscape(c.unit),
			     ", min ", number(c.min[k]), ", max ", number(c.max[k]), "</title></rect>\n"));
		const std::string mid = num(y + barH / 2.0);
		s.append(cat("<line x1=\"", num(x(c.min[k])), "\" y1=\"", mid, "\" x2=\"", num(x(c.max[k])), "\" y2=\"",
			     mid, "\" stroke=\"black\" stroke-width=\"1.5\"/>\n"));
		for (double v : { c.min[k], c.max[k] })
			s.append(cat("<line x1=\"", num(x(v)), "\" y1=\"", num(y + 6), "\" x2=\"", num(x(v)), "\" y2=\"",
				     num(y + barH - 6), "\" stroke=\"black\" stroke-width=\"1.5\"/>\n"));
		s.append(cat("<text x=\"", num(x(c.max[k]) + 6), "\" y=\"", num(y + barH / 2.0 + 4),
			     "\" font-size=\"11\">", number(c.median[k]), " [", number(c.min[k]), " .. ", number(c.max[k]),
			     "]</text>\n"));
	}
	s.append(cat("<text x=\"", std::to_string(left), "\" y=\"", std::to_string(height - 16),
		     "\" font-size=\"11\" fill=\"#555555\">bars: median; whiskers: min to max</text>\n"));
	s.append("</svg>\n");
	return writeText(path, s, err);
}

} /* namespace rmatune */
