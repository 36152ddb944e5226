/* SPDX-License-Identifier: MIT */
/*
 * rmabench's front end for jobs it starts itself:
 *
 *   rmabench TEST [opts]                      (not under rmarun) runs
 *                                             rmarun -n N --bind B rmabench TEST ...
 *   rmabench --backend mpi|mpich|openmpi TEST runs rmabench-<mpi> under that
 *                                             MPI's own launcher
 *   rmabench compare [--mpi LIST] TEST ...    runs librma and each MPI, prints
 *                                             librma/MPI ratios
 *   rmabench plot OUT.svg RUN.json...         draws saved JSON runs
 *
 * The MPI executables are looked up next to this one (the build tree and
 * the install bindir both put them there).
 */
#pragma once

#include <string>
#include <vector>

namespace rmabench {

struct LaunchOptions {
	int ranks = 2;
	std::string bind = "core"; /* core | none */
	std::string backend;	   /* "" (librma) | mpi | mpich | openmpi */
	std::vector<std::string> mpis; /* compare: which MPIs ("" = every one built) */
	std::string format = "table";
	std::string plot;
	std::string stat = "mean"; /* compare: mean | median | min of each row */
	int alternate = 1;         /* compare: rounds of librma, MPI, MPI, ... runs, interleaved */
	std::string flavor = "allocate"; /* the test's window flavor (Open MPI's osc choice) */
	/* The test and its options, passed on to each job unchanged. */
	std::vector<std::string> args;
};

/* The MPIs whose rmabench-<mpi> executable sits next to this one. */
std::vector<std::string> builtMpis();

/* Run the test in @lo.args under rmarun; returns its exit status. */
int launchLibrma(const LaunchOptions &lo);
/* Run the test in @lo.args with the MPI named by @lo.backend; returns its exit status. */
int launchMpi(const LaunchOptions &lo);
/* rmabench compare; returns 0 when every job ran. */
int compare(const LaunchOptions &lo);
/* rmabench plot OUT.svg RUN.json... */
int plot(const std::vector<std::string> &args);

} /* namespace rmabench */
