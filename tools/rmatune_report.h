/* SPDX-License-Identifier: MIT */
/*
 * rmatune probe's output: the machine profile (JSON), the same as
 * human-readable tables, and SVG heatmaps of its matrices.
 */
#pragma once

#include <cstdio>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "numa/topology.h"
#include "rmatune_probe.h"

namespace rmatune {

/* The profile's format; readers refuse a major version they do not know. */
inline constexpr int kProfileSchemaVersion = 1;

struct Probe {
	Effort effort = Effort::Normal;
	EffortParams params;
	std::vector<int> allowedCpus;
	CoreMatrix cores;
	MemoryMatrix memory;
	double seconds = 0; /* wall-clock time of the whole probe */
};

/* The profile of @probe on @topology: host, topology identity, matrices with spread, method. */
nlohmann::json profileJson(const librma::Topology &topology, const Probe &probe);

/* The profile as tables: topology, the core-to-core grid, the node-to-node matrices. */
void printTables(FILE *out, const nlohmann::json &profile);

/* A heatmap: @values row-major, nullopt cells drawn empty. */
struct Heatmap {
	std::string title;
	std::string subtitle;
	std::string unit;
	std::string rowAxis, colAxis;
	std::vector<std::string> rowLabels, colLabels;
	std::vector<std::optional<double>> values;
};

/* Write @map as an SVG file; false with @err if the file cannot be written. */
bool writeHeatmap(const std::string &path, const Heatmap &map, std::string &err);

/* Heatmaps of the profile's matrices into @dir (created if missing); the files written go to @written. */
bool writePlots(const std::string &dir, const nlohmann::json &profile, std::vector<std::string> &written,
		std::string &err);

/* The topology's identity ("fnv1a64:..."), as profiles and placement files carry it. */
std::string topologyIdentity(const librma::Topology &topology);

/* A bar chart: one bar per label (its median), a whisker from min to max; failed bars drawn empty. */
struct BarChart {
	std::string title;
	std::string subtitle;
	std::string unit;
	std::vector<std::string> labels;
	std::vector<double> median, min, max;
	std::vector<std::string> notes; /* per bar: "" or why it has no value ("failed", "refused") */
};

/* Write @chart as an SVG file; false with @err if the file cannot be written. */
bool writeBarChart(const std::string &path, const BarChart &chart, std::string &err);

} /* namespace rmatune */
