/* SPDX-License-Identifier: MIT */
/*
 * Placement files: where a job's ranks, window memory and progress agent
 * go, as `rmatune recommend` writes them and `rmarun --placement` applies
 * them (issue 15). The format is JSON, documented in the README's rmatune
 * section:
 *
 *   {
 *     "schema": "rmatune-placement", "schema_version": 1,
 *     "topology": { "identity": "fnv1a64:...", "source": "hwloc" },   optional
 *     "ranks": [ { "rank": 0, "cpus": "0-1" }, { "rank": 1, "cpus": "2,3" } ],
 *     "memory": { "default": "local", "windows": { "halo": "interleave" } },
 *     "huge_pages": "off",                                             optional
 *     "progress": { "mode": "agent", "cores": "7" },                   optional
 *     "evidence": { ... }                                              optional, kept as is
 *   }
 *
 * Memory policies use librma's rma_placement words: local (the window
 * owner's node; "owner" is taken as a synonym), interleave, node:N, none.
 * memory.windows names windows as their rma_win_name info key does (1 to
 * RMA_MAX_OBJECT_NAME-1 characters, neither ';' nor '=': windowNameProblem()).
 * Huge pages: off, prefer, require ("on" is taken as require).
 *
 * The parser and writer are pure; checkAgainst() holds a file against a
 * topology. Built with exceptions (nlohmann-json), but none leaves these
 * functions: errors come back as text naming what is wrong and where.
 */
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "common/cpu_list.h" /* parseCpuListStrict */
#include "numa/topology.h"
#include "shm/segment.h"

namespace librma {

inline constexpr int kPlacementSchemaVersion = 1;

struct PlacementFile {
	/* CPUs of rank r at [r]: sorted, unique, never empty. */
	std::vector<std::vector<int>> rankCpus;
	/* Window memory: the default policy, and per-window ones by window name (in any order). */
	Placement memoryDefault;
	std::vector<std::pair<std::string, Placement>> windowPolicies;
	std::optional<HugePages> hugePages;
	/* Progress: "" (leave rmarun's default), "none", "thread" or "agent"; the agents' CPUs. */
	std::string progressMode;
	std::vector<int> agentCpus;
	/* Optional: the topology the file was made for. */
	std::string topologyIdentity;
	std::string topologySource;
	/* The "evidence" object as JSON text ("" for none), written back unchanged. */
	std::string evidenceJson;
};

/*
 * Parse @text (@origin names it in messages: a path). On failure returns
 * std::nullopt and sets @err to a message naming the file, the JSON place
 * ("ranks[2].cpus") and what was expected; malformed JSON gives the byte
 * offset of the syntax error.
 */
std::optional<PlacementFile> parsePlacementFile(std::string_view text, const std::string &origin, std::string &err);

/* The file as JSON text (two-space indent, trailing newline); parse(write(f)) == f. */
std::string writePlacementFile(const PlacementFile &file);

/*
 * Whether @file can be applied on @topology: every rank and agent CPU is a
 * CPU of the topology (and of @allowed, when not empty), every node:N names
 * a node that exists and has memory. False with @err naming the first
 * problem ("ranks[3]: CPU 40 is not a CPU of this topology (0-31)").
 */
bool checkPlacementFile(const PlacementFile &file, const Topology &topology, const std::vector<int> &allowed,
			std::string &err);

bool operator==(const PlacementFile &a, const PlacementFile &b);


} /* namespace librma */
