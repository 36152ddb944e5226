/* SPDX-License-Identifier: MIT */
/*
 * rmabench as its users run it: every test in every synchronization mode
 * and output format (the CSV columns and the JSON structure checked),
 * flavors and datatype shapes, --verify passing on good results and failing
 * on a result corrupted through the test-only hook, --plot's SVG, and the
 * MPI backends when they were built (skipped otherwise). Iteration counts
 * are tiny: this checks behaviour, not speed.
 */
#include <gtest/gtest.h>

#include <unistd.h>

#include <cstdlib>
#include <fstream>
#include <sstream>
#include <string>
#include <tuple>
#include <vector>

#include <nlohmann/json.hpp>

#include "support/multiproc.h"

using librma::test::CommandResult;
using librma::test::readFile;
using librma::test::runCommand;
using librma::test::ScratchDir;

namespace {

std::string buildRoot()
{
	const char *v = std::getenv("RMA_BUILD_ROOT");
	return v ? v : "";
}

std::string tool(const std::string &name)
{
	return buildRoot() + "/tools/" + name;
}

bool exists(const std::string &path)
{
	return access(path.c_str(), X_OK) == 0;
}

/* Short runs: two sizes, few iterations, a small window. */
const std::vector<std::string> kShort = { "--sizes", "8,4096", "--iterations", "20", "--window", "4" };

/* rmarun -n @ranks --bind none rmabench @args */
CommandResult rmabench(const std::vector<std::string> &args, int ranks = 2, double timeout = 60)
{
	std::vector<std::string> argv = { tool("rmarun"), "-n", std::to_string(ranks), "--bind", "none",
					  tool("rmabench") };
	argv.insert(argv.end(), args.begin(), args.end());
	return runCommand(argv, timeout);
}

std::vector<std::string> with(std::vector<std::string> a, const std::vector<std::string> &b)
{
	a.insert(a.end(), b.begin(), b.end());
	return a;
}

std::vector<std::string> lines(const std::string &text)
{
	std::vector<std::string> out;
	std::stringstream in(text);
	for (std::string l; std::getline(in, l);)
		out.push_back(l);
	return out;
}

std::vector<std::string> split(const std::string &line, char sep)
{
	std::vector<std::string> out;
	std::stringstream in(line);
	for (std::string f; std::getline(in, f, sep);)
		out.push_back(f);
	if (!line.empty() && line.back() == sep)
		out.push_back("");
	return out;
}

bool isNumber(const std::string &s)
{
	if (s.empty())
		return false;
	char *end;
	std::strtod(s.c_str(), &end);
	return *end == '\0';
}

/* Checks a CSV result: the header's columns, then @rows rows of as many fields, numbers where numbers go. */
void expectCsv(const std::string &out, const std::string &backend, const std::string &test, size_t rows)
{
	auto ls = lines(out);
	ASSERT_EQ(ls.size(), rows + 1) << out;
	auto head = split(ls[0], ',');
	const std::vector<std::string> fixed = { "backend", "test",	  "op",	  "sync", "flavor", "datatype",
						 "elem",    "ranks",	  "size", "iterations", "unit",	"mean",
						 "min",	    "median",	  "p99" };
	ASSERT_GE(head.size(), fixed.size()) << ls[0];
	for (size_t i = 0; i < fixed.size(); ++i)
		EXPECT_EQ(head[i], fixed[i]);
	for (size_t r = 1; r < ls.size(); ++r) {
		auto f = split(ls[r], ',');
		ASSERT_EQ(f.size(), head.size()) << ls[r];
		EXPECT_EQ(f[0], backend);
		EXPECT_EQ(f[1], test);
		for (size_t i = 7; i < f.size(); ++i) {
			if (i == 10)
				continue; /* unit */
			EXPECT_TRUE(isNumber(f[i])) << head[i] << " = '" << f[i] << "' in " << ls[r];
		}
		EXPECT_GT(std::strtod(f[11].c_str(), nullptr), 0.0) << ls[r];
	}
}

/*
 * Checks JSON results (one run per line) with Python's parser (Meson runs
 * on Python, so it is here): the keys, the header facts, and @rows results
 * with numeric fields in each run.
 */
void expectJson(const std::string &out, const std::string &backend, const std::string &test, size_t rows,
		size_t runs = 1)
{
	ScratchDir dir;
	std::string file = dir.file("run.json");
	std::ofstream(file) << out;
	std::string script =
		"import json, sys\n"
		"runs = [json.loads(l) for l in open(sys.argv[1]) if l.strip()]\n"
		"assert len(runs) == int(sys.argv[5]), 'runs: %d' % len(runs)\n"
		"for d in runs:\n"
		"    assert d['tool'] == 'rmabench' and d['backend'] == sys.argv[2] and d['test'] == sys.argv[3], d\n"
		"    assert d['unit'] in ('us', 'MB/s', 'Mops/s'), d['unit']\n"
		"    h = d['header']\n"
		"    for k in ('library', 'host', 'cpu', 'binding', 'page_size', 'numa_node', 'placement', 'progress',\n"
		"              'sync', 'flavor', 'datatype', 'ranks'):\n"
		"        assert isinstance(h[k], str) and h[k], k\n"
		"    assert len(d['results']) == int(sys.argv[4]), d['results']\n"
		"    for r in d['results']:\n"
		"        for k in ('size', 'iterations', 'mean', 'min', 'median', 'p99'):\n"
		"            assert isinstance(r[k], (int, float)), (k, r)\n"
		"        assert r['mean'] > 0, r\n"
		"        if d['extra']:\n"
		"            assert isinstance(r['extra'], (int, float)), r\n"
		"print('ok')\n";
	CommandResult r = runCommand(
		{ "python3", "-c", script, file, backend, test, std::to_string(rows), std::to_string(runs) }, 30);
	EXPECT_EQ(r.status, 0) << r.err << "\n" << out;
	EXPECT_EQ(r.out, "ok\n");
}

/* Checks a table: '#' header lines naming the machine facts, then @rows rows of numbers. */
void expectTable(const std::string &out, const std::string &backend, size_t rows)
{
	auto ls = lines(out);
	size_t data = 0, columns = 0;
	bool sawHeader = false;
	for (const auto &l : ls) {
		if (l.rfind("#", 0) == 0) {
			if (l.find("# Size") == 0)
				sawHeader = true;
			continue;
		}
		std::stringstream in(l);
		std::vector<std::string> f;
		for (std::string w; in >> w;)
			f.push_back(w);
		if (columns == 0)
			columns = f.size();
		EXPECT_EQ(f.size(), columns) << l;
		EXPECT_GE(f.size(), 5u) << l;
		for (const auto &w : f)
			EXPECT_TRUE(isNumber(w)) << "'" << w << "' in " << l;
		++data;
	}
	EXPECT_TRUE(sawHeader) << out;
	EXPECT_EQ(data, rows) << out;
	EXPECT_NE(out.find("# rmabench (" + backend + ")"), std::string::npos) << out;
	for (const char *fact : { "# binding: rank 0 on cpu", "page size", "NUMA node", "placement", "# progress: " })
		EXPECT_NE(out.find(fact), std::string::npos) << fact << " missing in\n" << out;
}

struct TestCase {
	const char *name;
	size_t rows; /* with kShort */
	int ranks;
};

const TestCase kTests[] = {
	{ "put_latency", 2, 2 },     { "get_latency", 2, 2 }, { "acc_latency", 2, 2 }, { "get_acc_latency", 2, 2 },
	{ "fop_latency", 1, 2 },     { "cas_latency", 1, 2 }, { "put_bw", 2, 2 },	 { "get_bw", 2, 2 },
	{ "put_bibw", 2, 2 },	     { "rate", 2, 2 },	      { "lock", 1, 2 },		 { "flush", 1, 2 },
	{ "fence", 1, 2 },	     { "contention", 2, 3 },  { "passive", 2, 2 },
};

const char *const kSyncs[] = { "fence", "pscw", "lock", "lock_all", "flush", "flush_local" };

class RmabenchMatrixTest : public testing::TestWithParam<TestCase>
{
};

/* Each test in each sync mode (lock, flush and fence choose their own), in each format. */
TEST_P(RmabenchMatrixTest, GivesWellFormedTableCsvAndJsonInEverySyncMode)
{
	const TestCase tc = GetParam();
	const std::string test = tc.name;
	const bool ownSync = test == "lock" || test == "flush" || test == "fence";
	std::string json;
	size_t runs = 0;
	for (const char *sync : kSyncs) {
		const bool active = std::string(sync) == "fence" || std::string(sync) == "pscw";
		if (ownSync && std::string(sync) != "fence")
			continue;
		SCOPED_TRACE(std::string("--sync ") + sync);
		auto args = with({ test, "--sync", sync }, kShort);
		if (test == "passive" && active) {
			/* A truly passive target cannot take part in an active mode: a usage error, said so. */
			CommandResult r = rmabench(args, tc.ranks);
			EXPECT_EQ(r.status, 2) << r.out << r.err;
			EXPECT_NE(r.err.find("--busy-target needs a passive mode"), std::string::npos) << r.err;
			continue;
		}
		CommandResult r = rmabench(args, tc.ranks);
		ASSERT_EQ(r.status, 0) << r.out << r.err;
		expectTable(r.out, "librma", tc.rows);
		r = rmabench(with(args, { "--format", "csv" }), tc.ranks);
		ASSERT_EQ(r.status, 0) << r.out << r.err;
		expectCsv(r.out, "librma", test, tc.rows);
		r = rmabench(with(args, { "--format", "json" }), tc.ranks);
		ASSERT_EQ(r.status, 0) << r.out << r.err;
		json += r.out;
		++runs;
	}
	expectJson(json, "librma", test, tc.rows, runs);
}

std::string matrixName(const testing::TestParamInfo<TestCase> &info)
{
	return info.param.name;
}

INSTANTIATE_TEST_SUITE_P(EveryTest, RmabenchMatrixTest, testing::ValuesIn(kTests), matrixName);

TEST(RmabenchTest, EveryFlavorAndDatatypeMovesVerifiedData)
{
	for (const char *flavor : { "allocate", "allocate_shared", "create", "dynamic" }) {
		for (const char *shape : { "contiguous", "vector", "indexed" }) {
			for (const char *test : { "put_latency", "get_latency", "acc_latency", "get_acc_latency" }) {
				CommandResult r = rmabench(with({ test, "--flavor", flavor, "--datatype", shape, "--verify",
								  "--format", "csv" },
								kShort));
				EXPECT_EQ(r.status, 0) << test << " " << flavor << " " << shape << "\n" << r.out << r.err;
				if (r.status == 0) {
					expectCsv(r.out, "librma", test, 2);
				}
			}
		}
	}
}

TEST(RmabenchTest, VerifyPassesForEveryOpTypeAndAccumulateOp)
{
	struct {
		std::vector<std::string> args;
		int ranks;
	} cases[] = {
		{ { "fop_latency", "--type", "double", "--acc-op", "max" }, 2 },
		{ { "fop_latency", "--type", "uint64", "--acc-op", "bxor" }, 2 },
		{ { "acc_latency", "--type", "float", "--acc-op", "replace", "--sync", "pscw" }, 2 },
		{ { "get_acc_latency", "--type", "int64", "--acc-op", "no_op", "--sync", "lock" }, 2 },
		{ { "acc_latency", "--type", "byte", "--acc-op", "bor", "--datatype", "indexed" }, 2 },
		{ { "cas_latency", "--type", "int32", "--sync", "fence" }, 2 },
		{ { "rate", "--op", "get_acc", "--acc-op", "min" }, 2 },
		{ { "put_bibw", "--sync", "pscw" }, 2 },
		{ { "contention", "--op", "fop" }, 3 },
		{ { "contention", "--op", "cas", "--sync", "lock" }, 3 },
		{ { "contention", "--op", "acc", "--datatype", "vector" }, 3 },
		{ { "contention", "--op", "put", "--sync", "fence" }, 3 },
		{ { "passive", "--op", "acc" }, 2 },
	};
	for (const auto &c : cases) {
		CommandResult r = rmabench(with(with(c.args, { "--verify", "--format", "csv" }), kShort), c.ranks);
		EXPECT_EQ(r.status, 0) << c.args[0] << " " << (c.args.size() > 2 ? c.args[2] : "") << "\n" << r.out << r.err;
	}
}

TEST(RmabenchTest, VerifyFailsOnACorruptedResult)
{
	setenv("RMA_BENCH_CORRUPT", "1", 1);
	struct {
		std::vector<std::string> args;
		int ranks;
	} cases[] = {
		{ { "put_latency" }, 2 },
		{ { "get_latency", "--sync", "fence" }, 2 },
		{ { "acc_latency", "--datatype", "vector" }, 2 },
		{ { "get_acc_latency" }, 2 },
		{ { "fop_latency" }, 2 },
		{ { "cas_latency", "--sync", "pscw" }, 2 },
		{ { "contention", "--op", "fop" }, 3 },
		{ { "contention", "--op", "acc" }, 3 },
	};
	for (const auto &c : cases) {
		CommandResult r = rmabench(with(with(c.args, { "--verify" }), kShort), c.ranks);
		EXPECT_EQ(r.status, 3) << c.args[0] << "\n" << r.out << r.err;
		EXPECT_NE(r.err.find("rmabench: --verify: rank"), std::string::npos) << r.err;
		EXPECT_NE(r.err.find("corrupted a result on purpose"), std::string::npos) << r.err;
	}
	/* Without --verify nothing is checked, so nothing fails. */
	CommandResult r = rmabench(with({ "put_latency" }, kShort));
	EXPECT_EQ(r.status, 0) << r.err;
	unsetenv("RMA_BENCH_CORRUPT");
}

/*
 * The latency tests time OSU's loop (tools/rmabench_tight.h: the library's
 * calls back to back, no per-step code of rmabench's) unless --verify asks
 * for the checked steps. librma's traffic statistics (RMA_STATS) count what
 * that loop issued: every warm-up and timed operation, of the test's kind,
 * from rank 0 to rank 1, and nothing of any other kind.
 */
TEST(RmabenchTest, TheTimedLoopIssuesEachOperationOnce)
{
	const char *tmp = std::getenv("TMPDIR");
	const std::string dir = std::string(tmp && *tmp ? tmp : "/tmp");
	const std::vector<std::pair<std::string, std::string>> cases = {
		{ "put_latency", "put" },	   { "get_latency", "get" },	       { "acc_latency", "accumulate" },
		{ "get_acc_latency", "get_accumulate" }, { "fop_latency", "fetch_and_op" }, { "cas_latency", "compare_and_swap" },
	};
	for (const char *sync : { "flush", "lock", "fence" }) {
		for (const auto &[test, kind] : cases) {
			const std::string file = dir + "/rmabench-stats-" + std::to_string(getpid()) + ".json";
			std::vector<std::string> argv = { "/usr/bin/env", "RMA_STATS=" + file, tool("rmarun"), "-n", "2",
							  "--bind", "none", tool("rmabench"), test, "--sync", sync,
							  "--sizes", "8", "--iterations", "200", "--skip", "7" };
			CommandResult r = runCommand(argv, 60);
			ASSERT_EQ(r.status, 0) << test << " --sync " << sync << ": " << r.err;
			std::ifstream in(file);
			ASSERT_TRUE(in) << "no statistics file " << file;
			const nlohmann::json stats = nlohmann::json::parse(in);
			std::remove(file.c_str());
			/*
			 * The measured window is the one with more than a few operations
			 * of the test's kind (rmabench's own exchanges put one each).
			 */
			int found = 0;
			for (const auto &w : stats.at("windows")) {
				const auto &ops = w.at("ops");
				if (ops.at(kind).at(0).at(1).get<uint64_t>() < 100)
					continue;
				++found;
				EXPECT_EQ(ops.at(kind).at(0).at(1).get<uint64_t>(), 207u)
					<< test << " --sync " << sync << ": rank 0's operations on rank 1";
				for (const auto &[other, row] : ops.items()) {
					if (other != kind) {
						EXPECT_EQ(row.at(0).at(1).get<uint64_t>(), 0u) << test << " issued " << other;
					}
				}
			}
			EXPECT_EQ(found, 1) << test << " --sync " << sync;
		}
	}
}

TEST(RmabenchTest, HeaderReportsWhatWasUsed)
{
	CommandResult r = rmabench(with({ "put_latency", "--progress", "none", "--huge-pages", "off", "--placement",
					  "local", "--format", "json" },
					kShort));
	ASSERT_EQ(r.status, 0) << r.err;
	EXPECT_NE(r.out.find("\"progress\":\"none"), std::string::npos) << r.out;
	EXPECT_NE(r.out.find("\"huge_pages\":\"off\""), std::string::npos) << r.out;
	EXPECT_NE(r.out.find("\"placement\":\"local\""), std::string::npos) << r.out;
	EXPECT_NE(r.out.find("\"page_size\":\"4096\""), std::string::npos) << r.out;
	EXPECT_NE(r.out.find("\"binding\":\"rank 0 on cpu "), std::string::npos) << r.out;
}

TEST(RmabenchTest, RejectsBadUsageClearly)
{
	struct {
		std::vector<std::string> args;
		const char *says;
	} cases[] = {
		{ { "no_such_test" }, "unknown test 'no_such_test'" },
		{ { "put_latency", "--sync", "sometimes" }, "unknown --sync 'sometimes'" },
		{ { "cas_latency", "--type", "double" }, "integer types only" },
		{ { "acc_latency", "--type", "float", "--acc-op", "band" }, "not defined on float" },
		{ { "put_latency", "--op", "get" }, "--op applies to" },
		{ { "put_latency", "--format", "xml" }, "unknown --format" },
		{ { "put_latency", "--exclusive" }, "--exclusive applies to --sync lock" },
	};
	for (const auto &c : cases) {
		CommandResult r = rmabench(c.args);
		EXPECT_EQ(r.status, 2) << c.args[0];
		EXPECT_NE(r.err.find(c.says), std::string::npos) << r.err;
	}
}

TEST(RmabenchTest, HelpListsEveryOptionAndTest)
{
	CommandResult r = runCommand({ tool("rmabench"), "--help" });
	EXPECT_EQ(r.status, 0) << r.err;
	for (const char *option :
	     { "--op", "--sync", "--exclusive", "--flavor", "--datatype", "--type", "--acc-op", "--min-size", "--max-size", "--size",
	       "--sizes", "--iterations", "--skip", "--window", "--timeout", "--busy-target", "--verify", "--progress",
	       "--placement", "--huge-pages", "--format", "--plot", "-n,--ranks", "--bind", "--backend", "--mpi",
	       "--stat", "put_latency", "get_acc_latency", "contention", "rmabench plot" })
		EXPECT_NE(r.out.find(option), std::string::npos) << option;
	/* Options given as --name=value and lists with commas parse as well. */
	r = rmabench({ "--bind=none", "put_latency", "--sizes=8,64", "--iterations=20", "--format", "csv" });
	EXPECT_EQ(r.status, 0) << r.err;
	expectCsv(r.out, "librma", "put_latency", 2);
	/* --sync lock --exclusive: the exclusive lock, named in the run. */
	r = rmabench({ "put_latency", "--sync", "lock", "--exclusive", "--verify", "--sizes", "8", "--iterations", "50",
		       "--format", "csv" });
	EXPECT_EQ(r.status, 0) << r.err;
	EXPECT_NE(r.out.find(",lock_exclusive,"), std::string::npos) << r.out;
	r = rmabench({ "put_latency", "--size", "-5" });
	EXPECT_EQ(r.status, 2);
	r = rmabench({ "put_latency", "--size" });
	EXPECT_EQ(r.status, 2);
	EXPECT_NE(r.err.find("--size"), std::string::npos) << r.err;
}

TEST(RmabenchTest, StartsItsOwnJobWithoutRmarun)
{
	CommandResult r = runCommand(with({ tool("rmabench"), "--bind", "none", "put_latency", "--format", "csv" }, kShort),
				     60);
	ASSERT_EQ(r.status, 0) << r.err;
	expectCsv(r.out, "librma", "put_latency", 2);
}

/* An SVG file parses as XML, is an <svg>, and draws @lines polylines. */
void expectSvg(const std::string &path, int polylines)
{
	std::string err;
	EXPECT_EQ(librma::test::svgElements(path, "polyline", err), polylines) << path << ": " << err;
}

TEST(RmabenchTest, PlotDrawsOneOrSeveralRuns)
{
	ScratchDir dir;
	std::string svg = dir.file("one.svg");
	CommandResult r = rmabench(with({ "put_latency", "--plot", svg }, kShort));
	ASSERT_EQ(r.status, 0) << r.err;
	expectSvg(svg, 1);

	/* Saved JSON runs of two units: one chart each. */
	std::string a = dir.file("a.json"), b = dir.file("b.json"), c = dir.file("c.json");
	r = rmabench(with({ "put_latency", "--format", "json" }, kShort));
	ASSERT_EQ(r.status, 0) << r.err;
	std::ofstream(a) << r.out;
	r = rmabench(with({ "get_latency", "--format", "json" }, kShort));
	ASSERT_EQ(r.status, 0) << r.err;
	std::ofstream(b) << r.out;
	r = rmabench(with({ "put_bw", "--format", "json" }, kShort));
	ASSERT_EQ(r.status, 0) << r.err;
	std::ofstream(c) << r.out;
	std::string many = dir.file("many.svg");
	r = runCommand({ tool("rmabench"), "plot", many, a, b, c });
	ASSERT_EQ(r.status, 0) << r.err;
	expectSvg(many, 3);

	r = runCommand({ tool("rmabench"), "plot", dir.file("bad.svg"), dir.file("missing.json") });
	EXPECT_EQ(r.status, 1);
	EXPECT_NE(r.err.find("cannot read"), std::string::npos) << r.err;
}

TEST(RmabenchTest, MpiBackendIsCleanlyAbsentWhenNotBuilt)
{
	/* rmabench finds its MPI executables next to itself: alone in a directory, it has none. */
	ScratchDir dir;
	std::string lone = dir.file("rmabench");
	ASSERT_EQ(runCommand({ "cp", tool("rmabench"), lone }).status, 0);
	for (const char *b : { "mpi", "mpich", "openmpi" }) {
		CommandResult r = runCommand(with({ lone, "--backend", b, "put_latency" }, kShort));
		EXPECT_EQ(r.status, 2) << b;
		EXPECT_NE(r.err.find("no MPI backend"), std::string::npos) << r.err;
	}
	CommandResult r = runCommand(with({ lone, "compare", "put_latency" }, kShort));
	EXPECT_EQ(r.status, 2);
	EXPECT_NE(r.err.find("no MPI backend was built"), std::string::npos) << r.err;
}

class RmabenchMpiTest : public testing::TestWithParam<const char *>
{
protected:
	void SetUp() override
	{
		mpi_ = GetParam();
		if (!exists(tool("rmabench-" + mpi_)))
			GTEST_SKIP() << "rmabench-" << mpi_ << " was not built (install its -dev package and reconfigure)";
	}
	std::string mpi_;
};

TEST_P(RmabenchMpiTest, RunsTheSameTestsOverTheMpisOwnRma)
{
	for (const char *test : { "put_latency", "get_bw", "acc_latency", "fop_latency", "cas_latency" }) {
		CommandResult r = runCommand(with({ tool("rmabench"), "--backend", mpi_, "--bind", "none", test,
						    "--verify", "--format", "json" },
						  kShort),
					     60);
		ASSERT_EQ(r.status, 0) << test << r.out << r.err;
		/* The launcher may add lines of its own; the run is the line that starts with '{'. */
		std::string json;
		for (const auto &l : lines(r.out))
			if (l.rfind("{", 0) == 0)
				json = l;
		expectJson(json + "\n", mpi_, test, std::string(test) == "fop_latency" || std::string(test) == "cas_latency" ? 1 : 2);
	}
	/* Its --verify catches the corrupted result too. */
	setenv("RMA_BENCH_CORRUPT", "1", 1);
	CommandResult r = runCommand(with({ tool("rmabench"), "--backend", mpi_, "--bind", "none", "put_latency",
					    "--verify" },
					  kShort),
				     60);
	unsetenv("RMA_BENCH_CORRUPT");
	EXPECT_NE(r.status, 0);
	EXPECT_NE(r.err.find("corrupted a result on purpose"), std::string::npos) << r.err;
}

TEST_P(RmabenchMpiTest, CompareRunsBothAndPrintsRatios)
{
	ScratchDir dir;
	std::string svg = dir.file("cmp.svg");
	CommandResult r = runCommand(with({ tool("rmabench"), "compare", "--mpi", mpi_, "--bind", "none", "put_latency",
					    "--plot", svg },
					  kShort),
				     90);
	ASSERT_EQ(r.status, 0) << r.out << r.err;
	EXPECT_NE(r.out.find("librma/" + mpi_), std::string::npos) << r.out;
	size_t rows = 0;
	for (const auto &l : lines(r.out)) {
		if (l.empty() || l[0] == '#')
			continue;
		std::stringstream in(l);
		std::vector<std::string> f;
		for (std::string w; in >> w;)
			f.push_back(w);
		ASSERT_EQ(f.size(), 4u) << l;
		for (const auto &w : f)
			EXPECT_TRUE(isNumber(w)) << l;
		EXPECT_GT(std::strtod(f[3].c_str(), nullptr), 0.0) << "ratio in " << l;
		++rows;
	}
	EXPECT_EQ(rows, 2u) << r.out;
	expectSvg(svg, 2);

	r = runCommand(with({ tool("rmabench"), "compare", "--mpi", mpi_, "--bind", "none", "get_latency", "--format",
			      "csv" },
			    kShort),
		       90);
	ASSERT_EQ(r.status, 0) << r.err;
	auto ls = lines(r.out);
	ASSERT_EQ(ls.size(), 3u) << r.out;
	EXPECT_EQ(ls[0], "size,librma," + mpi_ + ",librma_over_" + mpi_ + ",unit");

	/* --alternate: rounds in turn; each figure is a median over them, with its spread. */
	r = runCommand(with({ tool("rmabench"), "compare", "--alternate", "3", "--mpi", mpi_, "--bind", "none",
			      "--stat", "median", "put_latency", "--format", "csv" },
			    kShort),
		       180);
	ASSERT_EQ(r.status, 0) << r.err;
	ls = lines(r.out);
	ASSERT_EQ(ls.size(), 3u) << r.out;
	EXPECT_EQ(ls[0], "size,librma,librma_min,librma_max," + mpi_ + "," + mpi_ + "_min," + mpi_ + "_max,librma_over_" +
				 mpi_ + ",unit");
	for (size_t row = 1; row < 3; ++row) {
		std::vector<double> v;
		std::stringstream in(ls[row]);
		for (std::string f; std::getline(in, f, ',');)
			v.push_back(std::strtod(f.c_str(), nullptr));
		ASSERT_EQ(v.size(), 9u) << ls[row];
		EXPECT_LE(v[2], v[1]) << "min <= median: " << ls[row];
		EXPECT_LE(v[1], v[3]) << "median <= max: " << ls[row];
		EXPECT_LE(v[5], v[4]) << ls[row];
		EXPECT_LE(v[4], v[6]) << ls[row];
		EXPECT_NEAR(v[7], v[1] / v[4], 0.05 * v[7] + 1e-3) /* the columns are rounded */ << "the ratio is of the medians: " << ls[row];
	}
	r = runCommand(with({ tool("rmabench"), "compare", "--alternate", "0", "put_latency" }, kShort), 30);
	EXPECT_EQ(r.status, 2);

	/* --format json: one run per line, librma first, which rmabench plot reads back. */
	r = runCommand(with({ tool("rmabench"), "compare", "--mpi", mpi_, "--bind", "none", "get_latency", "--format",
			      "json" },
			    kShort),
		       90);
	ASSERT_EQ(r.status, 0) << r.err;
	ls = lines(r.out);
	ASSERT_EQ(ls.size(), 2u) << r.out;
	expectJson(ls[0] + "\n", "librma", "get_latency", 2);
	expectJson(ls[1] + "\n", mpi_, "get_latency", 2);
	std::string runs = dir.file("runs.json"), drawn = dir.file("runs.svg");
	std::ofstream(runs) << r.out;
	ASSERT_EQ(runCommand({ tool("rmabench"), "plot", drawn, runs }).status, 0);
	expectSvg(drawn, 2);
}

INSTANTIATE_TEST_SUITE_P(Mpi, RmabenchMpiTest, testing::Values("mpich", "openmpi"));

} /* namespace */
