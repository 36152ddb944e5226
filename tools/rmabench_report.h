/* SPDX-License-Identifier: MIT */
/*
 * rmabench's output: a Run printed as an OSU-like table, CSV or JSON, read
 * back from JSON (for compare and plot), and drawn as an SVG chart of
 * latency or bandwidth against message size for one or several runs.
 */
#pragma once

#include <cstdio>
#include <string>
#include <vector>

#include "rmabench_tests.h"

namespace rmabench {

void printTable(FILE *out, const Run &run);
void printCsv(FILE *out, const Run &run);
void printJson(FILE *out, const Run &run);

/* Parse one run printed by printJson(); false (and @err says why) if malformed. */
bool parseJson(const std::string &text, Run &run, std::string &err);

/* A label for a run in a legend: backend, op and sync. */
std::string runLabel(const Run &run);

/*
 * Draw @runs (their mean against size, log-log) into @path. Runs with
 * different units go to one chart each, side by side. False with @err when
 * the file cannot be written or there is nothing to draw.
 */
bool writeSvg(const std::string &path, const std::vector<Run> &runs, std::string &err);

} /* namespace rmabench */
