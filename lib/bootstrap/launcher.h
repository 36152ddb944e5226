/* SPDX-License-Identifier: MIT */
/*
 * The launcher: starts the ranks of a job on this host and serves their
 * bootstrap. rmarun is a thin command line over launch(); the multi-process
 * tests call launch() with a childMain to fork ranks without exec.
 */
#pragma once

#include <functional>
#include <string>
#include <vector>

namespace librma {

class Topology;

enum class Bind { None, Core, Numa };
/*
 * The order in which ranks take the physical cores (mpiexec's --map-by):
 * Core: consecutive cores; Numa / L3: one core of each NUMA node / L3
 * domain in turn (spreading ranks over memory controllers or caches);
 * Default: Core, or Numa when binding to NUMA nodes.
 */
enum class MapBy { Default, Core, Numa, L3 };

struct LaunchOptions {
	int nranks = 1;
	Bind bind = Bind::Core;
	MapBy mapBy = MapBy::Default;
	/* Prefix each line of a rank's stdout/stderr with "[rank] ". */
	bool tagOutput = false;
	/* Program and arguments to exec in each rank (unless childMain is set). */
	std::vector<std::string> argv;
	/*
	 * If set, each rank runs childMain(rank) after fork instead of exec,
	 * with the bootstrap environment set, and exits with its return value.
	 */
	std::function<int(int rank)> childMain;
	/* Seconds between SIGTERM and SIGKILL when the job is being stopped. */
	double killGraceSeconds = 2.0;
	/* Whole-job time limit in seconds (0: none); exceeding it fails the job. */
	double timeoutSeconds = 0;
	/*
	 * A placement file's binding: rank r runs on exactly rankCpus[r]
	 * (bind and mapBy are then unused). A rank that cannot be bound so
	 * fails to start (status 127) instead of running elsewhere.
	 */
	std::vector<std::vector<int>> rankCpus;
	/* Topology used for binding (nullptr: Topology::system()). */
	const Topology *topology = nullptr;
	/* Print what happens (binding, exits) to stderr. */
	bool verbose = false;
	/*
	 * When a rank fails, keep the others running (its status still becomes
	 * the job's): lets the survivors see RMA_ERR_PROC_FAILED instead of
	 * being stopped. Abort, a signal to the launcher and the time limit
	 * still stop the job.
	 */
	bool keepGoing = false;
};

/*
 * Run a job to its end. Returns the job's exit status: 0 when every rank
 * exited 0; otherwise the first failing rank's exit code (128 + signal for
 * a rank killed by a signal), after every other rank was stopped. The
 * code given to rma_abort() is returned as is. Returns 127 if a rank could
 * not be started.
 */
int launch(const LaunchOptions &options);

} /* namespace librma */
