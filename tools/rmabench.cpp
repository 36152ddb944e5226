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

#include "rmabench_backend.h"
#include "rmabench_launch.h"
#include "rmabench_report.h"
#include "rmabench_tests.h"

using namespace rmabench;

namespace {

constexpr int kUsage = 2;

void usage(FILE *out)
{
	std::fprintf(out,
		     "usage: rmarun -n 2 rmabench TEST [options]\n"
		     "       rmabench [-n N] [--bind core|none] [--backend librma|mpi|mpich|openmpi] TEST [options]\n"
		     "       rmabench compare [--mpi mpich,openmpi] [-n N] [--bind core|none] TEST [options]\n"
		     "       rmabench plot OUT.svg RUN.json [RUN.json...]\n"
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
		     "options:\n"
		     "  --op put|get|acc|get_acc|fop|cas   operation of rate, contention, passive, latency, bandwidth\n"
		     "  --sync MODE          fence | pscw | lock (lock/op/unlock per iteration)\n"
		     "                       | lock_all (lock_all/op/unlock_all per iteration)\n"
		     "                       | flush (op + flush, one lock_all epoch; the default)\n"
		     "                       | flush_local (op + flush_local) (put_bibw: fence by default)\n"
		     "  --flavor F           allocate | allocate_shared | create | dynamic (default allocate)\n"
		     "  --datatype D         contiguous | vector | indexed (8-byte blocks with gaps)\n"
		     "  --type T             accumulate element: byte|int32|int64|uint64|float|double\n"
		     "                       (default int32 for acc/get_acc, int64 for fop/cas, as OSU)\n"
		     "  --acc-op OP          sum|prod|max|min|band|bor|bxor|replace|no_op (default sum)\n"
		     "  --min-size B --max-size B   power-of-two sweep (default 8 .. 1048576)\n"
		     "  --size B | --sizes B,B,...  one size, or a list\n"
		     "  --iterations N --skip N     timed and warm-up iterations (default: by size; skip N/10)\n"
		     "  --window W           operations per synchronization in bw/bibw/rate (default 64)\n"
		     "  --busy-target        passive modes: the target computes without calling the library\n"
		     "  --verify             check every result (timings then include the checks)\n"
		     "  --progress P         none | thread | agent (librma: RMA_PROGRESS; MPICH: async thread)\n"
		     "  --placement P        local | interleave | node:N | none (librma window info)\n"
		     "  --huge-pages P       prefer | require | off (librma window info)\n"
		     "  --format F           table | csv | json (default table)\n"
		     "  --plot FILE.svg      also draw the result against message size\n"
		     "  --timeout SECS       give up after SECS (default 600)\n"
		     "launching (when rmabench starts the job itself):\n"
		     "  -n N                 ranks (default 2)\n"
		     "  --bind core|none     pinning (default core)\n"
		     "  --backend B          librma (default) | mpi (first MPI built) | mpich | openmpi\n"
		     "  --stat S             compare: mean (default, as OSU) | median | min of each row\n"
		     "  --mpi LIST           compare: which MPIs (default every one built:");
	for (const auto &m : builtMpis())
		std::fprintf(out, " %s", m.c_str());
	std::fprintf(out, ")\n");
}

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

bool parseSizes(const std::string &v, std::vector<long> &out)
{
	size_t at = 0;
	while (at <= v.size()) {
		size_t comma = v.find(',', at);
		std::string one = v.substr(at, comma == std::string::npos ? std::string::npos : comma - at);
		char *end;
		long n = std::strtol(one.c_str(), &end, 10);
		if (one.empty() || *end || n < 1)
			return false;
		out.push_back(n);
		if (comma == std::string::npos)
			break;
		at = comma + 1;
	}
	return !out.empty();
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

bool setTest(const std::string &name, Options &o)
{
	static const struct {
		const char *name;
		Test test;
		Operation op;
	} tests[] = {
		{ "put_latency", Test::Latency, Operation::Put },
		{ "get_latency", Test::Latency, Operation::Get },
		{ "acc_latency", Test::Latency, Operation::Acc },
		{ "get_acc_latency", Test::Latency, Operation::GetAcc },
		{ "fop_latency", Test::Latency, Operation::Fop },
		{ "cas_latency", Test::Latency, Operation::Cas },
		{ "put_bw", Test::Bandwidth, Operation::Put },
		{ "get_bw", Test::Bandwidth, Operation::Get },
		{ "put_bibw", Test::Bibw, Operation::Put },
		{ "rate", Test::Rate, Operation::Put },
		{ "lock", Test::Lock, Operation::Put },
		{ "flush", Test::Flush, Operation::Put },
		{ "fence", Test::Fence, Operation::Put },
		{ "contention", Test::Contention, Operation::Put },
		{ "passive", Test::Latency, Operation::Put },
		{ "latency", Test::Latency, Operation::Put },
		{ "bandwidth", Test::Bandwidth, Operation::Put },
	};
	for (const auto &t : tests) {
		if (name != t.name)
			continue;
		o.testName = name;
		o.test = t.test;
		o.op = t.op;
		if (name == "passive")
			o.busyTarget = true;
		return true;
	}
	return bad("unknown test '%s' (rmabench --help lists them)", name.c_str());
}

/* Parse a test and its options (no launching options). */
bool parseTest(const std::vector<std::string> &args, Options &o)
{
	bool haveTest = false, opGiven = false;
	Operation op = Operation::Put;
	for (size_t i = 0; i < args.size(); ++i) {
		const std::string &a = args[i];
		auto value = [&](std::string &out) {
			if (i + 1 >= args.size())
				return bad("%s needs a value", a.c_str());
			out = args[++i];
			return true;
		};
		auto number = [&](long &out) {
			std::string v;
			if (!value(v))
				return false;
			char *end;
			out = std::strtol(v.c_str(), &end, 10);
			if (v.empty() || *end || out < 0)
				return bad("%s: '%s' is not a non-negative number", a.c_str(), v.c_str());
			return true;
		};
		std::string v;
		bool ok = true;
		if (a.empty() || a[0] != '-') {
			if (haveTest)
				return bad("unexpected argument '%s'", a.c_str());
			ok = setTest(a, o);
			haveTest = true;
		} else if (a == "--op") {
			static const char *const names[] = { "put", "get", "acc", "get_acc", "fop", "cas" };
			ok = value(v) && (lookup(names, v, op) || bad("unknown --op '%s'", v.c_str()));
			opGiven = true;
		} else if (a == "--sync") {
			static const char *const names[] = { "fence", "pscw", "lock", "lock_all", "flush", "flush_local" };
			ok = value(v) && (lookup(names, v, o.sync) || bad("unknown --sync '%s'", v.c_str()));
			o.syncGiven = true;
		} else if (a == "--flavor") {
			static const char *const names[] = { "allocate", "allocate_shared", "create", "dynamic" };
			ok = value(v) && (lookup(names, v, o.flavor) || bad("unknown --flavor '%s'", v.c_str()));
		} else if (a == "--datatype") {
			static const char *const names[] = { "contiguous", "vector", "indexed" };
			ok = value(v) && (lookup(names, v, o.shape) || bad("unknown --datatype '%s'", v.c_str()));
		} else if (a == "--type") {
			static const char *const names[] = { "byte", "int32", "int64", "uint64", "float", "double" };
			ok = value(v) && (lookup(names, v, o.elem) || bad("unknown --type '%s'", v.c_str()));
			o.elemGiven = true;
		} else if (a == "--acc-op") {
			static const char *const names[] = { "sum",  "prod", "max",	"min",	"band",
							     "bor", "bxor", "replace", "no_op" };
			ok = value(v) && (lookup(names, v, o.accOp) || bad("unknown --acc-op '%s'", v.c_str()));
		} else if (a == "--format") {
			ok = value(o.format);
		} else if (a == "--plot") {
			ok = value(o.plot);
		} else if (a == "--huge-pages") {
			ok = value(o.hugePages);
		} else if (a == "--placement") {
			ok = value(o.placement);
		} else if (a == "--progress") {
			ok = value(o.progress) && (o.progress == "none" || o.progress == "thread" || o.progress == "agent" ||
						   bad("--progress must be none, thread or agent"));
		} else if (a == "--min-size") {
			ok = number(o.minSize);
		} else if (a == "--max-size") {
			ok = number(o.maxSize);
		} else if (a == "--size") {
			ok = number(o.minSize);
			o.maxSize = o.minSize;
		} else if (a == "--sizes") {
			ok = value(v) && (parseSizes(v, o.sizes) || bad("--sizes wants sizes like 8,64,4096"));
			for (long s : o.sizes)
				o.maxSize = std::max(o.maxSize, s);
		} else if (a == "--iterations") {
			ok = number(o.iterations);
		} else if (a == "--skip") {
			ok = number(o.skip);
		} else if (a == "--window") {
			ok = number(o.window);
		} else if (a == "--timeout") {
			ok = number(o.timeout);
		} else if (a == "--busy-target") {
			o.busyTarget = true;
		} else if (a == "--verify") {
			o.verify = true;
		} else {
			ok = bad("unknown option '%s'", a.c_str());
		}
		if (!ok)
			return false;
	}
	if (!haveTest)
		return bad("which test? (rmabench --help lists them)");

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
	/* Split the launching options from the test and its options. */
	LaunchOptions lo;
	std::vector<std::string> args;
	bool isCompare = false;
	for (int i = 1; i < argc; ++i) {
		std::string a = argv[i];
		auto value = [&](std::string &out) {
			if (i + 1 >= argc) {
				std::fprintf(stderr, "rmabench: %s needs a value\n", a.c_str());
				std::exit(kUsage);
			}
			out = argv[++i];
		};
		std::string v;
		if (a == "-h" || a == "--help") {
			usage(stdout);
			return 0;
		} else if (a == "plot" && args.empty()) {
			return plot(std::vector<std::string>(argv + i + 1, argv + argc));
		} else if (a == "compare" && args.empty() && !isCompare) {
			isCompare = true;
		} else if (a == "-n" || a == "--ranks") {
			value(v);
			lo.ranks = std::atoi(v.c_str());
			if (lo.ranks < 1) {
				std::fprintf(stderr, "rmabench: -n needs a positive number\n");
				return kUsage;
			}
		} else if (a == "--bind") {
			value(lo.bind);
			if (lo.bind != "core" && lo.bind != "none") {
				std::fprintf(stderr, "rmabench: --bind must be core or none\n");
				return kUsage;
			}
		} else if (a == "--backend") {
			value(lo.backend);
			if (lo.backend == "librma")
				lo.backend.clear();
			if (!lo.backend.empty() && lo.backend != "mpi" && lo.backend != "mpich" && lo.backend != "openmpi") {
				std::fprintf(stderr, "rmabench: --backend must be librma, mpi, mpich or openmpi\n");
				return kUsage;
			}
		} else if (a == "--stat" && isCompare) {
			value(lo.stat);
			if (lo.stat != "mean" && lo.stat != "median" && lo.stat != "min") {
				std::fprintf(stderr, "rmabench: --stat must be mean, median or min\n");
				return kUsage;
			}
		} else if (a == "--mpi") {
			value(v);
			for (size_t at = 0; at <= v.size();) {
				size_t comma = v.find(',', at);
				lo.mpis.push_back(v.substr(at, comma == std::string::npos ? std::string::npos : comma - at));
				if (comma == std::string::npos)
					break;
				at = comma + 1;
			}
		} else {
			if ((a == "--format" || a == "--plot") && i + 1 < argc) {
				/* compare prints (and plots) the combined result; each job gets JSON. */
				if (isCompare) {
					(a == "--format" ? lo.format : lo.plot) = argv[++i];
					continue;
				}
			}
			args.push_back(a);
		}
	}
	if (argc < 2) {
		usage(stderr);
		return kUsage;
	}

#ifdef RMABENCH_MPI
	/* rmabench-<mpi>: the MPI launcher started this rank; run the test. */
	if (isCompare || !lo.backend.empty()) {
		std::fprintf(stderr, "rmabench: compare and --backend belong to rmabench, not rmabench-%s\n",
			     RMABENCH_MPI);
		return kUsage;
	}
	return runHere(argc, argv, args);
#else
	const bool underRmarun = std::getenv("RMA_BOOT_FD") != nullptr;
	if (isCompare || !lo.backend.empty()) {
		if (underRmarun) {
			std::fprintf(stderr, "rmabench: compare and --backend start their own jobs: run them without "
				     "rmarun, e.g. rmabench compare -n 2 put_latency\n");
			return kUsage;
		}
		/* Check the test's options before starting anything. */
		Options o;
		if (!parseTest(args, o))
			return kUsage;
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
		if (!parseTest(args, o))
			return kUsage;
		lo.args = args;
		return launchLibrma(lo);
	}
	return runHere(argc, argv, args);
#endif
}
