/* SPDX-License-Identifier: MIT */
/*
 * rmabench: one-sided microbenchmarks with the OSU suite's meaning, over
 * librma or, side by side, over the system MPI's own RMA.
 *
 *   rmarun -n 2 rmabench put_latency [options]     one test over librma
 *   rmabench put_latency [options]                 the same; rmabench starts rmarun
 *   rmabench --backend mpich put_latency [options] over MPICH, under mpiexec.mpich
 *   rmabench compare put_latency [options]         librma and every MPI built; ratios
 *   rmabench plot OUT.svg RUN.json...              draw saved runs
 *
 * This file is the command line: options, which job to start, and the
 * output of a run. The tests are in rmabench_tests.cpp, written once
 * against rmabench_backend.h; this same file is built into rmabench-mpich
 * and rmabench-openmpi, where RMABENCH_MPI is defined and only the test
 * itself runs (their launcher has started the job).
 */
#include <unistd.h>

#include <algorithm>
#include <csignal>
#include <cstdarg>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include <CLI/CLI.hpp>

#include "rmabench_backend.h"
#include "rmabench_launch.h"
#include "rmabench_report.h"
#include "rmabench_tests.h"

using namespace rmabench;

namespace {

constexpr int kUsage = 2;

const char kTests[] =
	"tests (OSU osu_<name> meaning where OSU has one):\n"
	"  put_latency get_latency       op + its synchronization, one at a time\n"
	"  acc_latency get_acc_latency   accumulate / get_accumulate (--acc-op, --type)\n"
	"  fop_latency cas_latency       fetch_and_op / compare_and_swap of one element\n"
	"  put_bw get_bw                 --window ops per synchronization, MB/s (next to a memcpy)\n"
	"  put_bibw                      both ranks put a window at each other, MB/s\n"
	"  rate                          message rate: --window outstanding --op ops, Mops/s\n"
	"  lock                          lock + unlock of the target, nothing in between\n"
	"  flush                         flush with nothing to complete (lock_all epoch)\n"
	"  fence                         an empty fence, next to a raw store/poll barrier\n"
	"  contention                    ranks 1..N-1 all --op at rank 0 (needs N >= 3 to contend)\n"
	"  passive                       --op latency while the target computes, never calling the library\n"
	"  latency bandwidth             as put_latency / put_bw with --op put|get\n"
	"  win_create                    allocate + free of a window (--flavor) of each size, collective;\n"
	"                                default sizes 1 MiB, 64 MiB, 1 GiB (extra: with every page touched)\n";


const char *const kTestNames[] = { "put_latency", "get_latency", "acc_latency", "get_acc_latency", "fop_latency",
				   "cas_latency", "put_bw",	 "get_bw",	"put_bibw",	   "rate",
				   "lock",	  "flush",	 "fence",	"contention",	   "passive",
				   "latency",	  "bandwidth",	 "win_create" };
const char *const kOpNames[] = { "put", "get", "acc", "get_acc", "fop", "cas" };
const char *const kSyncNames[] = { "fence", "pscw", "lock", "lock_all", "flush", "flush_local" };
const char *const kFlavorNames[] = { "allocate", "allocate_shared", "create", "dynamic" };
const char *const kShapeNames[] = { "contiguous", "vector", "indexed" };
const char *const kElemNames[] = { "byte", "int32", "int64", "uint64", "float", "double" };
const char *const kAccOpNames[] = { "sum", "prod", "max", "min", "band", "bor", "bxor", "replace", "no_op" };

template<typename E, size_t N>
bool lookup(const char *const (&names)[N], const std::string &v, E &out)
{
	for (size_t i = 0; i < N; ++i)
		if (v == names[i]) {
			out = static_cast<E>(i);
			return true;
		}
	return false;
}

/* A check that @what is one of @names, saying "unknown WHAT 'value' (one of: ...)". */
template<size_t N>
CLI::Validator oneOf(const char *const (&names)[N], const std::string &what)
{
	std::string all;
	for (const char *n : names) {
		if (!all.empty())
			all.push_back(' ');
		all.append(n);
	}
	return CLI::Validator(
		[&names, what, all](std::string &v) {
			for (const char *n : names)
				if (v == n)
					return std::string();
			std::string msg("unknown ");
			msg.append(what).append(" '").append(v).append("' (one of: ").append(all).append(")");
			return msg;
		},
		"", "");
}

[[gnu::format(printf, 1, 2)]] bool bad(const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	std::fputs("rmabench: ", stderr);
	std::vfprintf(stderr, fmt, ap);
	std::fputs("\n", stderr);
	va_end(ap);
	return false;
}

/* The test's options as given, before they are checked together. */
struct TestArgs {
	std::string test, op, sync, flavor, datatype, type, accOp;
	long size = -1;
};

/* The test and its options (CLI11): shared by the parser and by --help. */
void addTestOptions(CLI::App &app, Options &o, TestArgs &t)
{
	app.add_option("TEST", t.test, "the test (see the list below)")->check(oneOf(kTestNames, "test"));
	app.add_option("--op", t.op, "operation of rate, contention, passive, latency, bandwidth")
		->check(oneOf(kOpNames, "--op"));
	app.add_option("--sync", t.sync,
		       "fence | pscw | lock (lock/op/unlock per iteration) | lock_all | flush (op + flush in "
		       "one lock_all epoch; the default) | flush_local (put_bibw: fence by default)")
		->check(oneOf(kSyncNames, "--sync"));
	app.add_option("--flavor", t.flavor, "window flavor: allocate (default) | allocate_shared | create | dynamic")
		->check(oneOf(kFlavorNames, "--flavor"));
	app.add_option("--datatype", t.datatype, "contiguous | vector | indexed (8-byte blocks with gaps)")
		->check(oneOf(kShapeNames, "--datatype"));
	app.add_option("--type", t.type,
		       "accumulate element: byte|int32|int64|uint64|float|double (default int32 for acc/get_acc, "
		       "int64 for fop/cas, as OSU)")
		->check(oneOf(kElemNames, "--type"));
	app.add_option("--acc-op", t.accOp, "sum|prod|max|min|band|bor|bxor|replace|no_op (default sum)")
		->check(oneOf(kAccOpNames, "--acc-op"));
	app.add_option("--min-size", o.minSize, "power-of-two sweep from B bytes (default 8)")
		->check(CLI::PositiveNumber);
	app.add_option("--max-size", o.maxSize, "... to B bytes (default 1048576, at most 1 GiB)")
		->check(CLI::PositiveNumber);
	app.add_option("--size", t.size, "one size")->check(CLI::PositiveNumber);
	app.add_option("--sizes", o.sizes, "a list of sizes: B,B,...")->delimiter(',')->check(CLI::PositiveNumber);
	app.add_option("--iterations", o.iterations, "timed iterations (default: by size)")
		->check(CLI::NonNegativeNumber);
	app.add_option("--skip", o.skip, "warm-up iterations (default: iterations / 10)")
		->check(CLI::NonNegativeNumber);
	app.add_option("--window", o.window, "operations per synchronization in bw/bibw/rate (default 64)")
		->check(CLI::PositiveNumber);
	app.add_option("--timeout", o.timeout, "give up after SECS (default 600)")->check(CLI::PositiveNumber);
	app.add_flag("--busy-target", o.busyTarget, "passive modes: the target computes without calling the library");
	app.add_flag("--verify", o.verify, "check every result (timings then include the checks)");
	app.add_flag("--exclusive", o.exclusive, "--sync lock takes the exclusive lock (default shared)");
	app.add_option("--progress", o.progress, "none | thread | agent (librma: RMA_PROGRESS; MPICH: async thread)")
		->check(CLI::IsMember({ "none", "thread", "agent" }));
	app.add_option("--placement", o.placement, "local | interleave | node:N | none (librma window info)");
	app.add_option("--huge-pages", o.hugePages, "prefer | require | off (librma window info)")
		->check(CLI::IsMember({ "prefer", "require", "off" }));
	app.add_option("--format", o.format, "table | csv | json (default table)");
	app.add_option("--plot", o.plot, "also draw the result against message size (FILE.svg)");
}

/* Launching options (when rmabench starts the job itself). */
void addLaunchOptions(CLI::App &app, LaunchOptions &lo, bool compare)
{
	app.add_option("-n,--ranks", lo.ranks, "ranks (default 2)")->check(CLI::PositiveNumber);
	app.add_option("--bind", lo.bind, "pinning: core (default) | none")->check(CLI::IsMember({ "core", "none" }));
	app.add_option("--backend", lo.backend,
		       "librma (default) | mpi (first MPI built) | mpich | openmpi | rmampi-mpich | rmampi-openmpi "
		       "(that MPI's program through the librma drop-in)")
		->check(CLI::IsMember({ "librma", "mpi", "mpich", "openmpi", "rmampi-mpich", "rmampi-openmpi" }));
	if (!compare)
		return;
	std::string mpiHelp("compare: which MPIs (default every one built:");
	for (const auto &m : builtMpis())
		mpiHelp.append(" ").append(m);
	mpiHelp.append("; rmampi-mpich, rmampi-openmpi: that MPI's program through the librma drop-in)");
	app.add_option("--mpi", lo.mpis, mpiHelp)
		->delimiter(',');
	app.add_option("--stat", lo.stat, "compare: mean (default, as OSU) | median | min of each row")
		->check(CLI::IsMember({ "mean", "median", "min" }));
	app.add_option("--alternate", lo.alternate,
		       "compare: N rounds of librma and each MPI in turn; prints each one's median, min and max "
		       "over the rounds and the ratio of medians (default 1)")
		->check(CLI::Range(1, 1000));
	app.add_option("--format", lo.format, "compare: table | csv | json (default table)");
	app.add_option("--plot", lo.plot, "compare: draw every run against message size (FILE.svg)");
}

/* CLI11's help without its usage line (rmabench prints its own, for every form). */
class NoUsageFormatter : public CLI::Formatter
{
public:
	std::string make_usage(const CLI::App *, std::string) const override { return ""; }
};

void printHelp(FILE *out)
{
	std::fputs("usage: rmarun -n 2 rmabench TEST [options]\n"
		   "       rmabench [-n N] [--bind core|none] [--backend librma|mpi|mpich|openmpi] TEST [options]\n"
		   "       rmabench compare [--mpi mpich,openmpi] [--stat S] [-n N] TEST [options]\n"
		   "       rmabench plot OUT.svg RUN.json [RUN.json...]\n\n",
		   out);
	auto formatter = std::make_shared<NoUsageFormatter>();
	formatter->column_width(30);
	Options o;
	TestArgs t;
	CLI::App test("The test and its options (each rank parses them):");
	test.formatter(formatter);
	test.set_help_flag("-h,--help", "print this help and exit");
	addTestOptions(test, o, t);
	std::fputs(test.help().c_str(), out);
	LaunchOptions lo;
	CLI::App launch("Launching (when rmabench starts the job itself; --mpi, --stat, --format and --plot as "
			"options of compare apply to its combined result):");
	launch.formatter(formatter);
	launch.set_help_flag();
	addLaunchOptions(launch, lo, true);
	std::fputs(launch.help().c_str(), out);
	std::fputs(kTests, out);
}

/* Parse a test and its options (no launching options). */
bool parseTest(const std::vector<std::string> &args, Options &o)
{
	CLI::App app("rmabench");
	app.set_help_flag();
	TestArgs t;
	addTestOptions(app, o, t);
	std::vector<std::string> reversed(args.rbegin(), args.rend()); /* CLI11 takes them last first */
	try {
		app.parse(reversed);
	} catch (const CLI::ParseError &e) {
		return bad("%s", e.what());
	}
	if (t.test.empty())
		return bad("which test? (rmabench --help lists them)");
	static const struct {
		Test test;
		Operation op;
	} kinds[] = {
		{ Test::Latency, Operation::Put },   { Test::Latency, Operation::Get },	   { Test::Latency, Operation::Acc },
		{ Test::Latency, Operation::GetAcc }, { Test::Latency, Operation::Fop },   { Test::Latency, Operation::Cas },
		{ Test::Bandwidth, Operation::Put }, { Test::Bandwidth, Operation::Get },  { Test::Bibw, Operation::Put },
		{ Test::Rate, Operation::Put },	     { Test::Lock, Operation::Put },	   { Test::Flush, Operation::Put },
		{ Test::Fence, Operation::Put },     { Test::Contention, Operation::Put }, { Test::Latency, Operation::Put },
		{ Test::Latency, Operation::Put },   { Test::Bandwidth, Operation::Put }, { Test::WinCreate, Operation::Put },
	};
	static_assert(std::size(kinds) == std::size(kTestNames));
	size_t which = 0;
	lookup(kTestNames, t.test, which);
	o.testName = t.test;
	o.test = kinds[which].test;
	o.op = kinds[which].op;
	if (t.test == "passive")
		o.busyTarget = true;
	Operation op = Operation::Put;
	const bool opGiven = !t.op.empty() && lookup(kOpNames, t.op, op);
	if (!t.sync.empty())
		o.syncGiven = lookup(kSyncNames, t.sync, o.sync);
	if (!t.flavor.empty())
		lookup(kFlavorNames, t.flavor, o.flavor);
	if (!t.datatype.empty())
		lookup(kShapeNames, t.datatype, o.shape);
	if (!t.type.empty())
		o.elemGiven = lookup(kElemNames, t.type, o.elem);
	if (!t.accOp.empty())
		lookup(kAccOpNames, t.accOp, o.accOp);
	/* Window creation: 1 MiB, 64 MiB and 1 GiB unless sizes are given. */
	if (t.test == "win_create" && t.size <= 0 && o.sizes.empty() && o.minSize == Options{}.minSize &&
	    o.maxSize == Options{}.maxSize)
		o.sizes = { 1L << 20, 64L << 20, 1L << 30 };
	if (t.size > 0)
		o.minSize = o.maxSize = t.size;
	for (long size : o.sizes)
		o.maxSize = std::max(o.maxSize, size);

	/* Tests named after an op take it; the others take --op. */
	const bool generic = o.testName == "rate" || o.testName == "contention" || o.testName == "passive" ||
			     o.testName == "latency" || o.testName == "bandwidth";
	if (opGiven && !generic && op != o.op)
		return bad("%s is a %s test; --op applies to rate, contention, passive, latency and bandwidth",
			   o.testName.c_str(), opName(o.op));
	if (opGiven && generic)
		o.op = op;
	if (!o.elemGiven)
		o.elem = o.op == Operation::Fop || o.op == Operation::Cas ? Elem::Int64 : Elem::Int32;
	if (!o.syncGiven)
		o.sync = o.test == Test::Bibw ? Sync::Fence : Sync::Flush;
	if (o.test == Test::Lock)
		o.sync = Sync::Lock;
	if (o.test == Test::Flush)
		o.sync = Sync::Flush;
	if (o.test == Test::Fence)
		o.sync = Sync::Fence;

	const bool passive = o.sync == Sync::Lock || o.sync == Sync::LockAll || o.sync == Sync::Flush ||
			     o.sync == Sync::FlushLocal;
	const bool integer = o.elem != Elem::Float && o.elem != Elem::Double;
	const bool bitwise = o.accOp == AccOp::Band || o.accOp == AccOp::Bor || o.accOp == AccOp::Bxor;
	const bool atomic = o.op != Operation::Put && o.op != Operation::Get;
	if (o.exclusive && o.sync != Sync::Lock)
		return bad("--exclusive applies to --sync lock");
	if (o.busyTarget && !passive)
		return bad("--busy-target needs a passive mode (--sync lock|lock_all|flush|flush_local)");
	if (o.format != "table" && o.format != "csv" && o.format != "json")
		return bad("unknown --format '%s'", o.format.c_str());
	if (o.minSize < 1 || o.maxSize < o.minSize || o.window < 1)
		return bad("need 1 <= min-size <= max-size and window >= 1");
	if (o.maxSize > (1L << 30))
		return bad("--max-size is limited to 1 GiB");
	if (atomic && o.op == Operation::Cas && !integer)
		return bad("compare_and_swap takes integer types only (--type byte|int32|int64|uint64)");
	if (atomic && bitwise && !integer)
		return bad("--acc-op %s is not defined on %s", accOpName(o.accOp), elemName(o.elem));
	if (atomic && o.op != Operation::Cas && o.elem == Elem::Byte && !bitwise && o.accOp != AccOp::Replace &&
	    o.accOp != AccOp::NoOp)
		return bad("--acc-op %s is not defined on byte (MPI allows band, bor, bxor, replace, no_op)",
			   accOpName(o.accOp));
	if (o.verify && o.test == Test::Contention && atomic && o.op != Operation::Cas && o.accOp != AccOp::Sum)
		return bad("--verify under contention counts with --acc-op sum");
	if (o.test == Test::Bibw && (o.op == Operation::Fop || o.op == Operation::Cas || o.op == Operation::GetAcc))
		return bad("put_bibw moves data: --op put, get or acc");
	return true;
}

void onAlarm(int)
{
	static const char msg[] = "rmabench: timed out (--timeout); with --busy-target, the library may need the "
				  "target to call it to make progress\n";
	ssize_t n = write(2, msg, sizeof(msg) - 1);
	(void)n;
	_exit(124);
}

/* Run the test in this process (a rank of a job already started). */
int runHere(int argc, char **argv, const std::vector<std::string> &args)
{
	Options o;
	if (!parseTest(args, o)) {
		std::fprintf(stderr, "Try 'rmabench --help' for more information.\n");
		return kUsage;
	}
	std::signal(SIGALRM, onAlarm);
	alarm(static_cast<unsigned>(o.timeout));
	be::init(&argc, &argv, o.progress);
	Run run;
	int status = runTest(o, run);
	if (status == 0 && be::rank() == 0) {
		if (o.format == "table")
			printTable(stdout, run);
		else if (o.format == "csv")
			printCsv(stdout, run);
		else
			printJson(stdout, run);
		std::fflush(stdout);
		if (!o.plot.empty()) {
			std::string err;
			if (!writeSvg(o.plot, { run }, err)) {
				std::fprintf(stderr, "rmabench: --plot: %s\n", err.c_str());
				status = 1;
			}
		}
	}
	be::finalize();
	return status;
}

} /* namespace */

int main(int argc, char **argv)
{
	if (argc < 2) {
		printHelp(stderr);
		return kUsage;
	}
	for (int i = 1; i < argc; ++i)
		if (!std::strcmp(argv[i], "-h") || !std::strcmp(argv[i], "--help")) {
			printHelp(stdout);
			return 0;
		}
	if (!std::strcmp(argv[1], "plot"))
		return plot(std::vector<std::string>(argv + 2, argv + argc));
	const bool isCompare = !std::strcmp(argv[1], "compare");

	/*
	 * The launching options are rmabench's; everything else, in order, is
	 * the test and its options, which each rank parses again.
	 */
	LaunchOptions lo;
	CLI::App launch("rmabench");
	launch.set_help_flag();
	launch.allow_extras();
	addLaunchOptions(launch, lo, isCompare);
	std::vector<std::string> reversed;
	for (int i = argc - 1; i >= 1 + (isCompare ? 1 : 0); --i)
		reversed.push_back(argv[i]);
	try {
		launch.parse(reversed);
	} catch (const CLI::ParseError &e) {
		bad("%s", e.what());
		std::fprintf(stderr, "Try 'rmabench --help' for more information.\n");
		return kUsage;
	}
	std::vector<std::string> args = launch.remaining();
	if (lo.backend == "librma")
		lo.backend.clear();

#ifdef RMABENCH_MPI
	/* rmabench-<mpi>: the MPI launcher started this rank; run the test. */
	if (isCompare || !lo.backend.empty()) {
		std::fprintf(stderr, "rmabench: compare and --backend belong to rmabench, not rmabench-%s\n",
			     RMABENCH_MPI);
		return kUsage;
	}
	return runHere(argc, argv, args);
#else
	/*
	 * Already a rank of a job: rmarun's, or a PMIx launcher's (mpirun, srun
	 * --mpi=pmix: how rmabench runs across hosts, issue #14).
	 */
	const bool underRmarun = std::getenv("RMA_BOOT_FD") != nullptr ||
				 (std::getenv("PMIX_NAMESPACE") && std::getenv("PMIX_RANK"));
	if (isCompare || !lo.backend.empty()) {
		if (underRmarun) {
			std::fprintf(stderr, "rmabench: compare and --backend start their own jobs: run them without "
				     "rmarun, e.g. rmabench compare -n 2 put_latency\n");
			return kUsage;
		}
		/* Check the test's options before starting anything. */
		Options o;
		if (!parseTest(args, o)) {
			std::fprintf(stderr, "Try 'rmabench --help' for more information.\n");
			return kUsage;
		}
		if (isCompare && lo.format != "table" && lo.format != "csv" && lo.format != "json") {
			std::fprintf(stderr, "rmabench: unknown --format '%s'\n", lo.format.c_str());
			return kUsage;
		}
		lo.args = args;
		lo.flavor = flavorName(o.flavor);
		return isCompare ? compare(lo) : launchMpi(lo);
	}
	if (!underRmarun) {
		Options o;
		if (!parseTest(args, o)) {
			std::fprintf(stderr, "Try 'rmabench --help' for more information.\n");
			return kUsage;
		}
		lo.args = args;
		return launchLibrma(lo);
	}
	return runHere(argc, argv, args);
#endif
}
