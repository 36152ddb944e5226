/* SPDX-License-Identifier: MIT */
/*
 * rmabench's tests, written once against the backend interface
 * (rmabench_backend.h), and the results they hand to the report
 * (rmabench_report.h): a Run is one test at a sweep of sizes, with the
 * header facts (machine, binding, page size, placement, progress) that
 * say what the numbers were measured on.
 */
#pragma once

#include <string>
#include <utility>
#include <vector>

#include "rmabench_backend.h"

namespace rmabench {

enum class Test {
	Latency,    /* op + its synchronization, one at a time (osu_*_latency) */
	Bandwidth,  /* window of ops per synchronization (osu_put_bw, osu_get_bw) */
	Bibw,	    /* both ranks put a window at each other (osu_put_bibw) */
	Rate,	    /* ops/s with a window of outstanding ops */
	Lock,	    /* lock + unlock of the target, nothing in between */
	Flush,	    /* flush with nothing to complete, in a lock_all epoch */
	Fence,	    /* an empty fence, next to a raw store/poll barrier */
	Contention, /* ranks 1..N-1 all at rank 0 */
	WinCreate,  /* allocate + free of a window of each size (collective) */
};

enum class Operation { Put, Get, Acc, GetAcc, Fop, Cas };
enum class Sync { Fence, Pscw, Lock, LockAll, Flush, FlushLocal };
enum class Shape { Contiguous, Vector, Indexed };

struct Options {
	std::string testName = "put_latency";
	Test test = Test::Latency;
	Operation op = Operation::Put;
	Sync sync = Sync::Flush;
	bool syncGiven = false;
	Flavor flavor = Flavor::Allocate;
	Shape shape = Shape::Contiguous;
	Elem elem = Elem::Int64;
	bool elemGiven = false;
	AccOp accOp = AccOp::Sum;
	std::string format = "table";
	std::string plot;	/* --plot FILE.svg */
	std::string hugePages;	/* prefer | require | off ("" = library default) */
	std::string placement;	/* local | interleave | node:N | none */
	std::string progress;	/* none | thread | agent */
	bool busyTarget = false;
	bool verify = false;
	bool exclusive = false; /* --sync lock takes the exclusive lock */
	std::vector<long> sizes; /* explicit list (--sizes); else the sweep below */
	long minSize = 8;
	long maxSize = 1 << 20;
	long iterations = 0; /* 0: chosen per size */
	long skip = -1;	     /* -1: iterations / 10 */
	long window = 64;
	long timeout = 600;
};

const char *testName(Test t);
const char *opName(Operation o);
const char *syncName(Sync s);
const char *flavorName(Flavor f);
const char *shapeName(Shape s);
const char *elemName(Elem e);
const char *accOpName(AccOp o);

struct Row {
	long size = 0; /* bytes moved per operation (0: sizeless) */
	long iterations = 0;
	double mean = 0; /* us per op, MB/s or Mops/s: see Run::unit */
	double min = 0, median = 0, p99 = 0;
	double extra = 0; /* see Run::extraName ("" = none) */
};

struct Run {
	/* Header facts, in print order: key and value. */
	std::vector<std::pair<std::string, std::string>> meta;
	std::string backend; /* librma | mpich | openmpi */
	std::string test;
	std::string what; /* one line saying what is timed */
	std::string unit; /* us | MB/s | Mops/s */
	std::string extraName;
	std::vector<Row> rows;

	std::string get(const std::string &key) const;
};

/* Higher is better for this unit (bandwidth, rate), lower for latency. */
bool higherIsBetter(const std::string &unit);

/*
 * Run the test @o asks for in this job (every rank calls it, after
 * be::init()). Rank 0 fills @run. Returns 0, or an exit status: 3 when
 * --verify found a wrong result (the message is printed), 2 for a test
 * that cannot run as asked.
 */
int runTest(const Options &o, Run &run);

} /* namespace rmabench */
