/* SPDX-License-Identifier: MIT */
/*
 * Traffic statistics (RMA_STATS): where the job's file is, and starting it.
 * The counting itself lives in Window (window.h, stats.cpp).
 *
 * The file is one JSON object per job:
 *   { "format": "librma-stats", "version": 1, "world_size": N,
 *     "kinds": ["put", "get", ...],
 *     "windows": [ { "id", "name", "flavor", "ranks": [world ranks, in window
 *                    rank order], "sizes": [bytes per member], "size",
 *                    "reported": [world ranks whose rows are in],
 *                    "ops":   { "put": [[...]], ... },   origin rows, target
 *                    "bytes": { "put": [[...]], ... } }   columns, window ranks
 *                  ... ] }
 * Each rank merges its own row of a window into the file when it frees the
 * window (or at rma_finalize for windows left open), under flock(): no
 * collective is added to rma_win_free, and windows of a job that loses a
 * rank still report the survivors' rows.
 *
 * Not thread-safe: called from rma_init and from a window's owner thread.
 */
#pragma once

#include <string>

namespace librma {

/* The statistics file's absolute path, or "" when RMA_STATS is unset or 0 (valid after rma_init). */
const std::string &trafficStatsPath();

/*
 * At rma_init, after the bootstrap and before the first collective: resolve
 * RMA_STATS (checked already), and at world rank 0 start the job's file
 * afresh, so windows of an earlier job never mix in. Returns RMA_SUCCESS or
 * an error naming the file.
 */
int initTrafficStats(int worldRank, int worldSize);

} /* namespace librma */
