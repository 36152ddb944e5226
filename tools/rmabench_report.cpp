/* SPDX-License-Identifier: MIT */
/*
 * rmabench's output formats: the table, CSV, JSON (nlohmann-json, read back
 * by compare and plot) and SVG.
 */
#include "rmabench_report.h"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstdlib>
#include <map>

#include <nlohmann/json.hpp>

namespace rmabench {

namespace {

std::string xmlEscape(const std::string &s)
{
	std::string out;
	for (char c : s) {
		switch (c) {
		case '<':
			out += "&lt;";
			break;
		case '>':
			out += "&gt;";
			break;
		case '&':
			out += "&amp;";
			break;
		case '"':
			out += "&quot;";
			break;
		default:
			out += c;
		}
	}
	return out;
}

std::string csvField(const std::string &s)
{
	if (s.find_first_of(",\"\n") == std::string::npos)
		return s;
	std::string out = "\"";
	for (char c : s) {
		if (c == '"')
			out += '"';
		out += c;
	}
	return out + "\"";
}

const char *valueName(const std::string &unit)
{
	return unit == "us" ? "Latency(us)" : unit == "MB/s" ? "MB/s" : "Mops/s";
}

/* ---- SVG --------------------------------------------------------------------- */

std::string fmtSize(double bytes)
{
	char b[32];
	if (bytes >= 1 << 20)
		std::snprintf(b, sizeof(b), "%gM", bytes / (1 << 20));
	else if (bytes >= 1024)
		std::snprintf(b, sizeof(b), "%gK", bytes / 1024);
	else
		std::snprintf(b, sizeof(b), "%g", bytes);
	return b;
}

const char *const kColors[] = { "#1f77b4", "#d62728", "#2ca02c", "#ff7f0e", "#9467bd", "#8c564b", "#e377c2", "#17becf" };

/* One chart of the runs in @idx, at (@x0, 0), @w x @h. */
void chart(std::string &svg, const std::vector<Run> &runs, const std::vector<size_t> &idx, double x0, double w,
	   double h)
{
	const double left = x0 + 70, right = x0 + w - 20, top = 40, bottom = h - 110;
	double xmin = 1e300, xmax = 0, ymin = 1e300, ymax = 0;
	for (size_t i : idx)
		for (const Row &r : runs[i].rows) {
			double x = std::max<double>(r.size, 1);
			if (r.mean <= 0)
				continue;
			xmin = std::min(xmin, x);
			xmax = std::max(xmax, x);
			ymin = std::min(ymin, r.mean);
			ymax = std::max(ymax, r.mean);
		}
	if (xmax <= 0 || ymax <= 0)
		return;
	double lx0 = std::floor(std::log2(xmin)), lx1 = std::ceil(std::log2(xmax));
	if (lx1 <= lx0)
		lx1 = lx0 + 1;
	double ly0 = std::floor(std::log10(ymin)), ly1 = std::ceil(std::log10(ymax));
	if (ly1 <= ly0)
		ly1 = ly0 + 1;
	auto X = [&](double x) { return left + (std::log2(std::max(x, 1.0)) - lx0) / (lx1 - lx0) * (right - left); };
	auto Y = [&](double y) { return bottom - (std::log10(y) - ly0) / (ly1 - ly0) * (bottom - top); };
	char b[512];
	const std::string &unit = runs[idx[0]].unit;
	std::snprintf(b, sizeof(b),
		      "<rect x=\"%.1f\" y=\"%.1f\" width=\"%.1f\" height=\"%.1f\" fill=\"none\" stroke=\"#444\"/>\n",
		      left, top, right - left, bottom - top);
	svg += b;
	/* Grid: every power of two on x (labelled every other when crowded), every decade on y. */
	int xstep = lx1 - lx0 > 12 ? 2 : 1;
	for (double e = lx0; e <= lx1; e += 1) {
		double x = X(std::exp2(e));
		std::snprintf(b, sizeof(b), "<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" stroke=\"#ddd\"/>\n", x,
			      top, x, bottom);
		svg += b;
		if (static_cast<long>(e - lx0) % xstep == 0) {
			std::snprintf(b, sizeof(b), "<text x=\"%.1f\" y=\"%.1f\" font-size=\"11\" text-anchor=\"middle\">%s</text>\n",
				      x, bottom + 15, fmtSize(std::exp2(e)).c_str());
			svg += b;
		}
	}
	for (double e = ly0; e <= ly1; e += 1) {
		double y = Y(std::pow(10, e));
		std::snprintf(b, sizeof(b), "<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" stroke=\"#ddd\"/>\n", left,
			      y, right, y);
		svg += b;
		std::snprintf(b, sizeof(b), "<text x=\"%.1f\" y=\"%.1f\" font-size=\"11\" text-anchor=\"end\">%g</text>\n",
			      left - 5, y + 4, std::pow(10, e));
		svg += b;
	}
	std::snprintf(b, sizeof(b), "<text x=\"%.1f\" y=\"%.1f\" font-size=\"12\" text-anchor=\"middle\">message size (bytes)</text>\n",
		      (left + right) / 2, bottom + 32);
	svg += b;
	std::snprintf(b, sizeof(b),
		      "<text x=\"%.1f\" y=\"%.1f\" font-size=\"12\" text-anchor=\"middle\" transform=\"rotate(-90 %.1f %.1f)\">%s</text>\n",
		      x0 + 18, (top + bottom) / 2, x0 + 18, (top + bottom) / 2,
		      xmlEscape(unit == "us" ? "latency (us, lower is better)" : unit + " (higher is better)").c_str());
	svg += b;
	/* One polyline with dots per run, and a legend under the chart. */
	for (size_t k = 0; k < idx.size(); ++k) {
		const Run &run = runs[idx[k]];
		const char *color = kColors[idx[k] % (sizeof(kColors) / sizeof(kColors[0]))];
		std::string pts;
		std::string dots;
		for (const Row &r : run.rows) {
			if (r.mean <= 0)
				continue;
			std::snprintf(b, sizeof(b), "%.1f,%.1f ", X(std::max<double>(r.size, 1)), Y(r.mean));
			pts += b;
			std::snprintf(b, sizeof(b), "<circle cx=\"%.1f\" cy=\"%.1f\" r=\"2.5\" fill=\"%s\"><title>%s: %ld B, %.3f %s</title></circle>\n",
				      X(std::max<double>(r.size, 1)), Y(r.mean), color, xmlEscape(runLabel(run)).c_str(), r.size,
				      r.mean, xmlEscape(unit).c_str());
			dots += b;
		}
		svg += "<polyline fill=\"none\" stroke-width=\"2\" stroke=\"" + std::string(color) + "\" points=\"" + pts +
		       "\"/>\n" + dots;
		double ly = bottom + 50 + 16 * static_cast<double>(k);
		std::snprintf(b, sizeof(b),
			      "<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" stroke=\"%s\" stroke-width=\"3\"/>"
			      "<text x=\"%.1f\" y=\"%.1f\" font-size=\"12\">%s</text>\n",
			      left, ly - 4, left + 24, ly - 4, color, left + 30, ly, xmlEscape(runLabel(run)).c_str());
		svg += b;
	}
}

} /* namespace */

std::string runLabel(const Run &run)
{
	std::string l = run.backend + ": " + run.test;
	std::string sync = run.get("sync");
	if (!sync.empty())
		l += " (" + sync + ", " + run.get("flavor") + ")";
	std::string lib = run.get("library");
	if (!lib.empty() && run.backend != "librma")
		l += " [" + lib.substr(0, 40) + "]";
	return l;
}

void printTable(FILE *out, const Run &run)
{
	std::fprintf(out, "# rmabench (%s): %s\n", run.backend.c_str(), run.what.c_str());
	std::fprintf(out, "# library: %s\n", run.get("library").c_str());
	std::fprintf(out, "# host %s, %s, %s cpus online, kernel %s\n", run.get("host").c_str(), run.get("cpu").c_str(),
		     run.get("cpus_online").c_str(), run.get("kernel").c_str());
	std::fprintf(out, "# binding: %s\n", run.get("binding").c_str());
	if (!run.get("transport").empty())
		std::fprintf(out, "# transport: %s\n", run.get("transport").c_str());
	std::fprintf(out, "# window: %s, datatype %s (%s), target memory: page size %s, NUMA node %s, placement %s, huge pages %s\n",
		     run.get("flavor").c_str(), run.get("datatype").c_str(), run.get("elem").c_str(),
		     run.get("page_size").c_str(), run.get("numa_node").c_str(), run.get("placement").c_str(),
		     run.get("huge_pages").c_str());
	if (!run.get("acc_op").empty())
		std::fprintf(out, "# op: %s\n", run.get("acc_op").c_str());
	std::fprintf(out, "# progress: %s; target %s; verify %s\n", run.get("progress").c_str(), run.get("target").c_str(),
		     run.get("verify").c_str());
	if (!run.get("target_compute").empty())
		std::fprintf(out, "# the target kept computing at %s\n", run.get("target_compute").c_str());
	std::fprintf(out, "# %s ranks; %s\n", run.get("ranks").c_str(), run.get("timing").c_str());
	const bool lat = run.unit == "us";
	/* Statistics of block times in the row's unit: for MB/s and Mops/s the fastest block comes first. */
	std::fprintf(out, "%-10s %14s %12s %12s %12s", "# Size", valueName(run.unit), lat ? "min" : "best", "median",
		     lat ? "p99" : "p99-slow");
	if (!run.extraName.empty())
		std::fprintf(out, " %16s", run.extraName.c_str());
	std::fprintf(out, "\n");
	for (const Row &r : run.rows) {
		const char *fmt = lat ? "%-10ld %14.3f %12.3f %12.3f %12.3f" : "%-10ld %14.2f %12.2f %12.2f %12.2f";
		std::fprintf(out, fmt, r.size, r.mean, r.min, r.median, r.p99);
		if (!run.extraName.empty())
			std::fprintf(out, " %16.3f", r.extra);
		std::fprintf(out, "\n");
	}
}

void printCsv(FILE *out, const Run &run)
{
	std::fprintf(out, "backend,test,op,sync,flavor,datatype,elem,ranks,size,iterations,unit,mean,min,median,p99%s%s\n",
		     run.extraName.empty() ? "" : ",", run.extraName.c_str());
	for (const Row &r : run.rows) {
		std::fprintf(out, "%s,%s,%s,%s,%s,%s,%s,%s,%ld,%ld,%s,%.4f,%.4f,%.4f,%.4f", csvField(run.backend).c_str(),
			     csvField(run.test).c_str(), run.get("op").c_str(), run.get("sync").c_str(),
			     run.get("flavor").c_str(), run.get("datatype").c_str(), run.get("elem").c_str(),
			     run.get("ranks").c_str(), r.size, r.iterations, run.unit.c_str(), r.mean, r.min, r.median,
			     r.p99);
		if (!run.extraName.empty())
			std::fprintf(out, ",%.4f", r.extra);
		std::fprintf(out, "\n");
	}
}

/* Four decimals are what the table shows; more would only be noise. */
static double round4(double x) { return std::round(x * 1e4) / 1e4; }

void printJson(FILE *out, const Run &run)
{
	nlohmann::ordered_json header = nlohmann::ordered_json::object();
	for (const auto &[key, value] : run.meta)
		header[key] = value;
	nlohmann::ordered_json results = nlohmann::ordered_json::array();
	for (const Row &r : run.rows) {
		nlohmann::ordered_json row = { { "size", r.size },
					       { "iterations", r.iterations },
					       { "mean", round4(r.mean) },
					       { "min", round4(r.min) },
					       { "median", round4(r.median) },
					       { "p99", round4(r.p99) } };
		if (!run.extraName.empty())
			row["extra"] = round4(r.extra);
		results.push_back(std::move(row));
	}
	nlohmann::ordered_json doc = { { "tool", "rmabench" }, { "backend", run.backend }, { "test", run.test },
				       { "what", run.what },	  { "unit", run.unit },	      { "extra", run.extraName },
				       { "header", std::move(header) }, { "results", std::move(results) } };
	/* Invalid UTF-8 in a header value (a CPU name, say) is replaced, never fatal. */
	std::string s = doc.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
	s += '\n';
	std::fputs(s.c_str(), out);
}

bool parseJson(const std::string &text, Run &run, std::string &err)
{
	const nlohmann::json root = nlohmann::json::parse(text, nullptr, false);
	if (root.is_discarded()) {
		err = "not JSON";
		return false;
	}
	auto str = [](const nlohmann::json &obj, const char *key, std::string &out) {
		auto it = obj.find(key);
		if (it == obj.end() || !it->is_string())
			return false;
		out = it->get<std::string>();
		return true;
	};
	std::string tool;
	if (!root.is_object() || !str(root, "tool", tool) || tool != "rmabench" || !str(root, "backend", run.backend) ||
	    !str(root, "test", run.test) || !str(root, "unit", run.unit)) {
		err = "not an rmabench result (tool, backend, test, unit)";
		return false;
	}
	str(root, "what", run.what);
	str(root, "extra", run.extraName);
	if (auto h = root.find("header"); h != root.end() && h->is_object())
		for (const auto &[key, value] : h->items())
			if (value.is_string())
				run.meta.push_back({ key, value.get<std::string>() });
	auto res = root.find("results");
	if (res == root.end() || !res->is_array()) {
		err = "no results array";
		return false;
	}
	for (const nlohmann::json &r : *res) {
		Row row;
		auto num = [&r](const char *key, double &out) {
			auto it = r.find(key);
			if (it == r.end() || !it->is_number())
				return false;
			out = it->get<double>();
			return true;
		};
		double size = 0, iters = 0;
		if (!r.is_object() || !num("size", size) || !num("iterations", iters) || !num("mean", row.mean) ||
		    !num("min", row.min) || !num("median", row.median) || !num("p99", row.p99)) {
			err = "a result lacks size, iterations, mean, min, median or p99";
			return false;
		}
		num("extra", row.extra);
		row.size = static_cast<long>(size);
		row.iterations = static_cast<long>(iters);
		run.rows.push_back(row);
	}
	return true;
}

bool writeSvg(const std::string &path, const std::vector<Run> &runs, std::string &err)
{
	/* One chart per unit, in first-seen order. */
	std::vector<std::string> units;
	std::map<std::string, std::vector<size_t>> byUnit;
	for (size_t i = 0; i < runs.size(); ++i) {
		if (runs[i].rows.empty())
			continue;
		if (!byUnit.count(runs[i].unit))
			units.push_back(runs[i].unit);
		byUnit[runs[i].unit].push_back(i);
	}
	if (units.empty()) {
		err = "nothing to plot";
		return false;
	}
	const double w = 640;
	size_t maxLegend = 0;
	for (const auto &u : units)
		maxLegend = std::max(maxLegend, byUnit[u].size());
	const double h = 420 + 16 * static_cast<double>(maxLegend);
	char b[256];
	std::string svg = "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n";
	std::snprintf(b, sizeof(b),
		      "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"%.0f\" height=\"%.0f\" viewBox=\"0 0 %.0f %.0f\" "
		      "font-family=\"sans-serif\">\n",
		      w * static_cast<double>(units.size()), h, w * static_cast<double>(units.size()), h);
	svg += b;
	svg += "<rect width=\"100%\" height=\"100%\" fill=\"white\"/>\n";
	const Run &first = runs[byUnit[units[0]][0]];
	std::string title = "rmabench " + first.test + " on " + first.get("host") + " (" + first.get("cpu") + ")";
	svg += "<text x=\"20\" y=\"22\" font-size=\"14\" font-weight=\"bold\">" + xmlEscape(title) + "</text>\n";
	for (size_t u = 0; u < units.size(); ++u)
		chart(svg, runs, byUnit[units[u]], w * static_cast<double>(u), w, h);
	svg += "</svg>\n";
	FILE *f = std::fopen(path.c_str(), "w");
	if (!f) {
		err = path + ": cannot write";
		return false;
	}
	bool ok = std::fputs(svg.c_str(), f) >= 0;
	ok = std::fclose(f) == 0 && ok;
	if (!ok)
		err = path + ": write failed";
	return ok;
}

} /* namespace rmabench */
