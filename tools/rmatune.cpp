/* SPDX-License-Identifier: MIT */
/*
 * rmatune: measure a node and recommend a placement of ranks (and, in
 * later increments, of window memory and progress agents) that
 * `rmarun --placement` applies (issue 15).
 *
 *   rmatune probe [--effort quick|normal|thorough] [--format table|json]
 *                 [--output FILE] [--plot DIR] [--pairs all|sample:N]
 *   rmatune recommend --profile FILE --traffic FILE [--ranks N]
 *                 [--method auto|exhaustive|heuristic] [--output FILE]
 *                 [--format table|json]
 *   rmatune recommend --sweep FILE [--profile FILE --traffic FILE] ...
 *   rmatune sweep -n N [--repeat R] [--candidates LIST] [--timeout SECS]
 *                 [--keep DIR] [--metric time|rmabench] [--traffic FILE]
 *                 [--format table|csv|json] [--plot DIR] [--out FILE]
 *                 [--list] [--rmarun PATH] -- PROGRAM [ARGS...]
 *
 * The topology is hwloc's (HWLOC_SYNTHETIC and HWLOC_XMLFILE inject one;
 * RMA_TOPOLOGY a fake sysfs tree). Measurements run only on the CPUs this
 * process may use. Exit status: 0 done, 1 a measurement, an input file or
 * an output failed (sweep: a candidate failed to run, or none ran), 2 bad
 * usage (sweep: the program or rmarun not found).
 */
#include <fcntl.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <thread>
#include <sstream>
#include <string>
#include <vector>

#include <CLI/CLI.hpp>

#include "bootstrap/binding.h"
#include "numa/topology.h"
#include "rmatune_probe.h"
#include "rmatune_recommend.h"
#include "rmatune_report.h"
#include "rmatune_sweep.h"
#include "rmatune_text.h"
#include "shm/segment.h"

using namespace rmatune;

namespace {

constexpr int kUsage = 2;

struct ProbeArgs {
	std::string effort = "normal";
	std::string format = "table";
	std::string output;
	std::string plot;
	std::string pairs;
};

/* "all" or "sample:N" with N >= 1. */
bool parsePairs(const std::string &text, PairsChoice &out)
{
	out = PairsChoice();
	if (text.empty())
		return true;
	if (text == "all") {
		out.explicitAll = true;
		return true;
	}
	const std::string prefix = "sample:";
	if (text.compare(0, prefix.size(), prefix) != 0 || text.size() == prefix.size())
		return false;
	char *end = nullptr;
	long n = std::strtol(text.c_str() + prefix.size(), &end, 10);
	if (*end != '\0' || n < 1 || n > 1000000)
		return false;
	out.sample = static_cast<int>(n);
	return true;
}

CLI::Validator pairsValidator()
{
	return CLI::Validator(
		[](std::string &v) {
			PairsChoice p;
			if (parsePairs(v, p))
				return std::string();
			return cat("--pairs '", v, "': expected all or sample:N (N >= 1)");
		},
		"all|sample:N", "pairs");
}

int probe(const ProbeArgs &args)
{
	Effort effort = args.effort == "quick" ? Effort::Quick
			: args.effort == "thorough" ? Effort::Thorough
						    : Effort::Normal;
	PairsChoice pairs;
	parsePairs(args.pairs, pairs);

	auto t0 = std::chrono::steady_clock::now();
	const librma::Topology &topology = librma::Topology::system();
	Probe result;
	result.effort = effort;
	result.params = effortParams(effort);
	result.allowedCpus = librma::affinityCpus();
	if (result.allowedCpus.empty()) {
		std::fprintf(stderr, "rmatune: cannot read this process's CPU affinity\n");
		return 1;
	}
	if (usableCores(topology, result.allowedCpus).empty()) {
		std::fprintf(stderr,
			     "rmatune: none of the topology's cores holds an allowed CPU (%s; topology from %s)\n",
			     librma::cpuListText(result.allowedCpus).c_str(), topology.source().c_str());
		return 1;
	}
	std::string err;
	if (!measureCoreToCore(topology, result.allowedCpus, result.params, pairs, result.cores, err) ||
	    !measureMemory(topology, result.allowedCpus, result.params, result.memory, err)) {
		std::fprintf(stderr, "rmatune: probe: %s\n", err.c_str());
		return 1;
	}
	result.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();

	nlohmann::json profile = profileJson(topology, result);
	if (args.format == "json")
		std::printf("%s\n", profile.dump(2).c_str());
	else
		printTables(stdout, profile);
	std::fflush(stdout);

	int status = 0;
	if (!args.output.empty()) {
		FILE *f = std::fopen(args.output.c_str(), "w");
		bool ok = f && std::fprintf(f, "%s\n", profile.dump(2).c_str()) >= 0;
		ok = f && std::fclose(f) == 0 && ok;
		if (!ok) {
			std::fprintf(stderr, "rmatune: --output: cannot write %s\n", args.output.c_str());
			status = 1;
		}
	}
	if (!args.plot.empty()) {
		std::vector<std::string> written;
		if (!writePlots(args.plot, profile, written, err)) {
			std::fprintf(stderr, "rmatune: --plot: %s\n", err.c_str());
			status = 1;
		}
	}
	return status;
}

struct RecommendArgs {
	std::string profile;
	std::string traffic;
	std::vector<std::string> windows;
	int ranks = 0;
	std::string method = "auto";
	std::string output;
	std::string format = "table";
	std::string sweep;
};

bool readText(const std::string &path, std::string &text)
{
	std::ifstream in(path);
	if (!in)
		return false;
	std::ostringstream s;
	s << in.rdbuf();
	text = s.str();
	return !in.bad();
}

int recommendFromSweep(const RecommendArgs &args);

int recommendCmd(const RecommendArgs &args)
{
	if (!args.sweep.empty())
		return recommendFromSweep(args);
	if (args.profile.empty() || args.traffic.empty()) {
		std::fprintf(stderr, "rmatune recommend: give --profile FILE and --traffic FILE, or --sweep FILE\n");
		return kUsage;
	}
	std::string profileText, trafficText, err;
	if (!readText(args.profile, profileText)) {
		std::fprintf(stderr, "rmatune recommend: --profile %s: cannot read it\n", args.profile.c_str());
		return 1;
	}
	if (!readText(args.traffic, trafficText)) {
		std::fprintf(stderr, "rmatune recommend: --traffic %s: cannot read it\n", args.traffic.c_str());
		return 1;
	}
	nlohmann::json profile = nlohmann::json::parse(profileText, nullptr, false);
	if (profile.is_discarded()) {
		std::fprintf(stderr, "rmatune recommend: --profile %s: malformed JSON\n", args.profile.c_str());
		return 1;
	}
	CostModel model;
	if (!costModelFromProfile(profile, model, err)) {
		std::fprintf(stderr, "rmatune recommend: --profile %s: %s\n", args.profile.c_str(), err.c_str());
		return 1;
	}
	Traffic traffic;
	if (!parseTraffic(trafficText, args.traffic, args.ranks, traffic, err, args.windows)) {
		std::fprintf(stderr, "rmatune recommend: --traffic %s\n", err.c_str());
		return 1;
	}
	const Method method = args.method == "exhaustive"  ? Method::Exhaustive
			      : args.method == "heuristic" ? Method::Heuristic
							   : Method::Auto;
	Recommendation rec;
	if (!recommend(model, traffic, method, rec, err)) {
		std::fprintf(stderr, "rmatune recommend: %s\n", err.c_str());
		return 1;
	}
	const std::string file = recommendationFile(model, traffic, rec);
	if (args.format == "json")
		std::fputs(file.c_str(), stdout);
	else
		std::fputs(recommendationTable(model, traffic, rec).c_str(), stdout);
	std::fflush(stdout);
	if (!args.output.empty()) {
		FILE *f = std::fopen(args.output.c_str(), "w");
		bool ok = f && std::fputs(file.c_str(), f) >= 0;
		ok = f && std::fclose(f) == 0 && ok;
		if (!ok) {
			std::fprintf(stderr, "rmatune recommend: --output: cannot write %s\n", args.output.c_str());
			return 1;
		}
	}
	return 0;
}

/* ---- sweep ---------------------------------------------------------------------- */

struct SweepArgs {
	int ranks = 0;
	int repeat = 3;
	std::vector<std::string> candidates;
	double timeout = 0;
	std::string keep;
	std::string metric = "time";
	std::string traffic;
	std::string format = "table";
	std::string plot;
	std::string out;
	std::string rmarun;
	bool list = false;
	std::vector<std::string> command;
};

bool executable(const std::string &path)
{
	struct stat st{};
	return stat(path.c_str(), &st) == 0 && S_ISREG(st.st_mode) && access(path.c_str(), X_OK) == 0;
}

/* @name as execvp would find it: a path as is, else the first match on PATH; "" if none. */
std::string findProgram(const std::string &name)
{
	if (name.find('/') != std::string::npos)
		return executable(name) ? name : std::string();
	const char *path = std::getenv("PATH");
	std::string dirs = path ? path : "/usr/bin:/bin";
	std::size_t pos = 0;
	while (pos <= dirs.size()) {
		std::size_t end = dirs.find(':', pos);
		if (end == std::string::npos)
			end = dirs.size();
		std::string dir = dirs.substr(pos, end - pos);
		std::string candidate = cat(dir.empty() ? "." : dir, "/", name);
		if (executable(candidate))
			return candidate;
		pos = end + 1;
	}
	return {};
}

/* rmarun: --rmarun, else beside this rmatune (a build tree or an install), else on PATH. */
std::string findRmarun(const std::string &given, std::string &err)
{
	if (!given.empty()) {
		if (executable(given))
			return given;
		err = cat("--rmarun ", given, ": not an executable file");
		return {};
	}
	std::error_code ec;
	auto self = std::filesystem::read_symlink("/proc/self/exe", ec);
	if (!ec) {
		std::string beside = (self.parent_path() / "rmarun").string();
		if (executable(beside))
			return beside;
	}
	std::string onPath = findProgram("rmarun");
	if (onPath.empty())
		err = "rmarun is missing: not beside rmatune and not on PATH (give --rmarun PATH)";
	return onPath;
}

std::string readAll(const std::string &path)
{
	std::string text;
	readText(path, text);
	return text;
}

/*
 * Why a run failed, from its stderr: the program's own last line, rather
 * than rmarun's closing word about it, when there is one.
 */
std::string lastLine(const std::string &text)
{
	std::vector<std::string> lines;
	std::istringstream in(text);
	for (std::string line; std::getline(in, line);)
		if (!line.empty())
			lines.push_back(line);
	for (auto it = lines.rbegin(); it != lines.rend(); ++it)
		if (it->rfind("launcher:", 0) != 0 && it->rfind("rmarun:", 0) != 0)
			return *it;
	return lines.empty() ? std::string() : lines.back();
}

/* One run of rmarun; its stdout and stderr go to files under @dir. */
struct Outcome {
	int status = -1;
	double seconds = 0;
	std::string out, err;
};

Outcome runOnce(const std::vector<std::string> &argv, const std::string &dir, double timeout)
{
	Outcome o;
	const std::string outPath = cat(dir, "/run.out"), errPath = cat(dir, "/run.err");
	auto t0 = std::chrono::steady_clock::now();
	pid_t pid = fork();
	if (pid < 0) {
		o.err = cat("fork: ", std::strerror(errno));
		return o;
	}
	if (pid == 0) {
		setpgid(0, 0);
		int fo = open(outPath.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
		int fe = open(errPath.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
		if (fo < 0 || fe < 0 || dup2(fo, 1) < 0 || dup2(fe, 2) < 0)
			_exit(126);
		std::vector<char *> args;
		for (const std::string &a : argv)
			args.push_back(const_cast<char *>(a.c_str()));
		args.push_back(nullptr);
		execv(args[0], args.data());
		_exit(127);
	}
	/* rmarun stops the job at --timeout itself (status 124); this is the backstop if it does not. */
	const double limit = timeout > 0 ? timeout + 10 : 0;
	int status = 0;
	while (true) {
		pid_t r = waitpid(pid, &status, WNOHANG);
		if (r == pid)
			break;
		if (r < 0 && errno != EINTR) {
			o.err = cat("waitpid: ", std::strerror(errno));
			return o;
		}
		double elapsed = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
		if (limit > 0 && elapsed > limit) {
			kill(-pid, SIGKILL);
			kill(pid, SIGKILL);
		}
		std::this_thread::sleep_for(std::chrono::milliseconds(elapsed < 1 ? 2 : 10));
	}
	o.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
	o.status = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
	o.out = readAll(outPath);
	o.err = readAll(errPath);
	return o;
}

bool writeText(const std::string &path, const std::string &text)
{
	FILE *f = std::fopen(path.c_str(), "w");
	bool ok = f && std::fputs(text.c_str(), f) >= 0;
	ok = f && std::fclose(f) == 0 && ok;
	return ok;
}

int sweepCmd(const SweepArgs &args)
{
	const librma::Topology &topology = librma::Topology::system();
	const std::vector<int> allowed = librma::affinityCpus();
	std::string err;

	SweepPlan plan;
	plan.ranks = args.ranks;
	plan.allowed = allowed;
	plan.freeHugePages = librma::freeHugePages();
	plan.topologyIdentity = topologyIdentity(topology);
	plan.topologySource = topology.source();
	if (!args.traffic.empty()) {
		std::string text;
		Traffic traffic;
		if (!readText(args.traffic, text)) {
			std::fprintf(stderr, "rmatune sweep: --traffic %s: cannot read it\n", args.traffic.c_str());
			return 1;
		}
		if (!parseTraffic(text, args.traffic, args.ranks, traffic, err)) {
			std::fprintf(stderr, "rmatune sweep: --traffic %s\n", err.c_str());
			return 1;
		}
		plan.originBytes.assign(static_cast<std::size_t>(traffic.ranks), 0);
		for (int r = 0; r < traffic.ranks; ++r)
			for (int t = 0; t < traffic.ranks; ++t)
				plan.originBytes[static_cast<std::size_t>(r)] += traffic.at(r, t);
	}
	std::vector<SweepCandidate> candidates;
	std::vector<SweepSkip> skipped;
	if (!sweepCandidates(topology, plan, candidates, skipped, err) ||
	    !restrictCandidates(candidates, skipped, args.candidates, err)) {
		std::fprintf(stderr, "rmatune sweep: %s\n", err.c_str());
		return kUsage;
	}

	SweepReport report;
	report.command = args.command;
	report.ranks = args.ranks;
	report.repeat = args.repeat;
	report.timeoutSeconds = args.timeout;
	report.topologyIdentity = plan.topologyIdentity;
	report.topologySource = plan.topologySource;
	report.skipped = skipped;
	if (args.metric == "rmabench") {
		report.metric.name = "rmabench";
		report.metric.unit = "";
		report.metric.description = "rmabench's figure (from its --format json)";
	}
	for (const SweepCandidate &c : candidates) {
		CandidateResult r;
		r.candidate = c;
		if (!librma::checkPlacementFile(c.placement, topology, allowed, err))
			r.refused = cat("librma cannot apply it here: ", err);
		report.results.push_back(std::move(r));
	}

	if (args.list) {
		if (args.format == "json") {
			nlohmann::json j = { { "ranks", args.ranks }, { "topology", { { "identity", plan.topologyIdentity }, { "source", plan.topologySource } } } };
			nlohmann::json list = nlohmann::json::array();
			for (const CandidateResult &r : report.results) {
				nlohmann::json c = { { "name", r.candidate.name },
						     { "description", r.candidate.description },
						     { "aliases", r.candidate.aliases },
						     { "placement", nlohmann::json::parse(librma::writePlacementFile(r.candidate.placement)) } };
				if (!r.refused.empty())
					c["refused"] = r.refused;
				list.push_back(std::move(c));
			}
			j["candidates"] = std::move(list);
			nlohmann::json sk = nlohmann::json::array();
			for (const SweepSkip &k : skipped)
				sk.push_back({ { "name", k.name }, { "reason", k.reason } });
			j["skipped"] = std::move(sk);
			std::printf("%s\n", j.dump(2).c_str());
		} else {
			std::printf("rmatune sweep: %zu candidates for %d ranks on %s\n", candidates.size(), args.ranks,
				    topology.source().c_str());
			for (const CandidateResult &r : report.results) {
				std::string cpus;
				for (const auto &rc : r.candidate.placement.rankCpus)
					cpus.append(cat(cpus.empty() ? "" : " ", librma::cpuListText(rc)));
				std::printf("  %-26s ranks %s; %s%s%s\n", r.candidate.name.c_str(), cpus.c_str(),
					    r.candidate.description.c_str(), r.refused.empty() ? "" : "; REFUSED: ",
					    r.refused.c_str());
			}
			for (const SweepSkip &k : skipped)
				std::printf("  not tried: %s: %s\n", k.name.c_str(), k.reason.c_str());
		}
		return 0;
	}

	if (args.command.empty()) {
		std::fprintf(stderr, "rmatune sweep: no program to run (rmatune sweep -n N [options] -- PROGRAM [ARGS...])\n");
		return kUsage;
	}
	const std::string program = findProgram(args.command.front());
	if (program.empty()) {
		std::fprintf(stderr, "rmatune sweep: %s: program not found (not an executable file%s)\n",
			     args.command.front().c_str(),
			     args.command.front().find('/') == std::string::npos ? ", nor on PATH" : "");
		return kUsage;
	}
	const std::string rmarun = findRmarun(args.rmarun, err);
	if (rmarun.empty()) {
		std::fprintf(stderr, "rmatune sweep: %s\n", err.c_str());
		return kUsage;
	}

	/* Placement files: in --keep DIR, else a scratch directory removed at the end. */
	std::string dir = args.keep;
	std::error_code ec;
	if (!dir.empty()) {
		std::filesystem::create_directories(dir, ec);
		if (ec) {
			std::fprintf(stderr, "rmatune sweep: --keep %s: %s\n", dir.c_str(), ec.message().c_str());
			return 1;
		}
	} else {
		char tmpl[] = "/tmp/rmatune-sweep.XXXXXX";
		if (!mkdtemp(tmpl)) {
			std::fprintf(stderr, "rmatune sweep: cannot make a scratch directory: %s\n", std::strerror(errno));
			return 1;
		}
		dir = tmpl;
	}
	std::vector<std::string> files;
	for (const CandidateResult &r : report.results) {
		std::string path = cat(dir, "/", r.candidate.name, ".placement.json");
		std::replace(path.begin() + static_cast<long>(dir.size()) + 1, path.end(), '+', '_');
		if (!writeText(path, librma::writePlacementFile(r.candidate.placement))) {
			std::fprintf(stderr, "rmatune sweep: cannot write %s\n", path.c_str());
			return 1;
		}
		files.push_back(path);
	}

	std::vector<int> runnable;
	for (std::size_t i = 0; i < report.results.size(); ++i)
		if (report.results[i].refused.empty())
			runnable.push_back(static_cast<int>(i));
		else
			std::fprintf(stderr, "rmatune sweep: %s refused: %s\n", report.results[i].candidate.name.c_str(),
				     report.results[i].refused.c_str());
	const auto order = runOrder(static_cast<int>(runnable.size()), args.repeat);
	std::size_t done = 0;
	for (const auto &[round, k] : order) {
		const int index = runnable[static_cast<std::size_t>(k)];
		CandidateResult &r = report.results[static_cast<std::size_t>(index)];
		std::vector<std::string> argv = { rmarun, "--placement", files[static_cast<std::size_t>(index)], "-n",
						  std::to_string(args.ranks) };
		if (args.timeout > 0) {
			argv.push_back("--timeout");
			argv.push_back(fmt("%g", args.timeout));
		}
		argv.push_back("--");
		argv.push_back(program);
		argv.insert(argv.end(), args.command.begin() + 1, args.command.end());
		Outcome o = runOnce(argv, dir, args.timeout);
		SweepRun run;
		run.round = round;
		run.status = o.status;
		if (o.status != 0) {
			std::string why = lastLine(o.err);
			run.error = o.status == 124 ? cat("timed out after ", fmt("%g", args.timeout), " s")
				    : why.empty()   ? cat("exit status ", std::to_string(o.status))
						    : why;
		} else if (args.metric == "rmabench") {
			Metric m;
			run.ok = rmabenchFigure(o.out, run.value, m, run.error);
			if (run.ok)
				report.metric = m;
		} else {
			run.ok = true;
			run.value = o.seconds;
		}
		report.order.emplace_back(round, index);
		r.runs.push_back(run);
		++done;
		std::fprintf(stderr, "rmatune sweep: [%zu/%zu] round %d %s: %s\n", done, order.size(), round + 1,
			     r.candidate.name.c_str(),
			     run.ok ? cat(fmt("%.4g", run.value), " ", report.metric.unit).c_str()
				    : cat("failed, exit status ", std::to_string(run.status), ": ", run.error).c_str());
	}
	std::error_code rmEc;
	std::filesystem::remove(cat(dir, "/run.out"), rmEc);
	std::filesystem::remove(cat(dir, "/run.err"), rmEc);
	if (args.keep.empty())
		std::filesystem::remove_all(dir, rmEc);

	rankResults(report.results, report.metric);
	const nlohmann::json j = sweepJson(report);
	if (args.format == "json")
		std::printf("%s\n", j.dump(2).c_str());
	else if (args.format == "csv")
		std::fputs(sweepCsv(report).c_str(), stdout);
	else
		std::fputs(sweepTable(report).c_str(), stdout);
	std::fflush(stdout);

	int status = 0;
	bool anyRanked = false, anyFailed = false;
	for (const CandidateResult &r : report.results) {
		anyRanked = anyRanked || r.rank > 0;
		anyFailed = anyFailed || r.failed;
	}
	if (!anyRanked) {
		std::fprintf(stderr, "rmatune sweep: no candidate ran successfully\n");
		status = 1;
	} else if (anyFailed) {
		status = 1;
	}
	if (!args.out.empty() && !writeText(args.out, j.dump(2) + "\n")) {
		std::fprintf(stderr, "rmatune sweep: --out: cannot write %s\n", args.out.c_str());
		status = 1;
	}
	if (!args.plot.empty()) {
		std::filesystem::create_directories(args.plot, ec);
		BarChart chart;
		chart.title = cat("rmatune sweep, ", std::to_string(args.ranks), " ranks: ", report.metric.name);
		std::string cmd;
		for (const std::string &a : args.command)
			cmd.append(cat(cmd.empty() ? "" : " ", a));
		chart.subtitle = cat(cmd, "; ", std::to_string(args.repeat), " runs each, round-robin; ",
				     report.metric.higherIsBetter ? "higher" : "lower", " is better; ", topology.source());
		chart.unit = report.metric.unit;
		for (const nlohmann::json &c : j["candidates"]) {
			chart.labels.push_back(c["name"].get<std::string>());
			const std::string st = c["status"].get<std::string>();
			chart.notes.push_back(st == "ok" ? "" : st);
			chart.median.push_back(c.value("median", 0.0));
			chart.min.push_back(c.value("min", 0.0));
			chart.max.push_back(c.value("max", 0.0));
		}
		if (ec || !writeBarChart(cat(args.plot, "/sweep.svg"), chart, err)) {
			std::fprintf(stderr, "rmatune sweep: --plot: %s\n", ec ? ec.message().c_str() : err.c_str());
			status = 1;
		}
	}
	return status;
}

/*
 * recommend --sweep: the measured best candidate of a sweep, with the gain
 * against compact as the evidence; with --profile and --traffic too, the
 * modelled choice is added to the evidence for comparison.
 */
int recommendFromSweep(const RecommendArgs &args)
{
	std::string text, err;
	if (!readText(args.sweep, text)) {
		std::fprintf(stderr, "rmatune recommend: --sweep %s: cannot read it\n", args.sweep.c_str());
		return 1;
	}
	nlohmann::json sweep = nlohmann::json::parse(text, nullptr, false);
	if (sweep.is_discarded()) {
		std::fprintf(stderr, "rmatune recommend: --sweep %s: malformed JSON\n", args.sweep.c_str());
		return 1;
	}
	SweepBest best;
	if (!bestOfSweep(sweep, args.sweep, best, err)) {
		std::fprintf(stderr, "rmatune recommend: --sweep %s\n", err.c_str());
		return 1;
	}
	if (!args.profile.empty() && !args.traffic.empty()) {
		std::string profileText, trafficText;
		CostModel model;
		Traffic traffic;
		Recommendation rec;
		nlohmann::json profile;
		if (readText(args.profile, profileText) && readText(args.traffic, trafficText))
			profile = nlohmann::json::parse(profileText, nullptr, false);
		if (!profile.is_discarded() && profile.is_object() && costModelFromProfile(profile, model, err) &&
		    parseTraffic(trafficText, args.traffic, args.ranks, traffic, err, args.windows) &&
		    recommend(model, traffic, Method::Auto, rec, err)) {
			nlohmann::json modelled = nlohmann::json::parse(recommendationFile(model, traffic, rec), nullptr, false);
			nlohmann::json evidence = nlohmann::json::parse(best.placement.evidenceJson);
			evidence["model"] = { { "note", "the cost model's choice, not measured; the measured best is recommended" },
					      { "ranks", modelled.value("ranks", nlohmann::json()) },
					      { "evidence", modelled.value("evidence", nlohmann::json()) } };
			best.placement.evidenceJson = evidence.dump();
		} else {
			std::fprintf(stderr, "rmatune recommend: the model's choice is left out of the evidence: %s\n",
				     err.empty() ? "cannot read --profile or --traffic" : err.c_str());
		}
	}
	const std::string file = librma::writePlacementFile(best.placement);
	if (args.format == "json") {
		std::fputs(file.c_str(), stdout);
	} else {
		std::printf("rmatune recommend: %s, the measured best of the sweep in %s\n", best.name.c_str(),
			    args.sweep.c_str());
		if (best.haveCompact)
			std::printf("  measured: median %.4g %s against compact's %.4g %s: %+.1f %% (%s)\n", best.median,
				    best.unit.c_str(), best.compactMedian, best.unit.c_str(), best.gainPercent,
				    best.gainPercent > 0 ? "gain" : best.name == "compact" ? "compact is the best" : "no gain");
		else
			std::printf("  measured: median %.4g %s (compact was not run: no gain against it)\n", best.median,
				    best.unit.c_str());
		for (std::size_t r = 0; r < best.placement.rankCpus.size(); ++r)
			std::printf("  rank %zu: CPUs %s\n", r, librma::cpuListText(best.placement.rankCpus[r]).c_str());
		std::printf("  window memory %s; progress %s%s\n", best.placement.memoryDefault.str().c_str(),
			    best.placement.progressMode.empty() ? "default" : best.placement.progressMode.c_str(),
			    best.placement.agentCpus.empty()
				    ? ""
				    : cat(" on CPU ", librma::cpuListText(best.placement.agentCpus)).c_str());
	}
	std::fflush(stdout);
	if (!args.output.empty() && !writeText(args.output, file)) {
		std::fprintf(stderr, "rmatune recommend: --output: cannot write %s\n", args.output.c_str());
		return 1;
	}
	return 0;
}

} /* namespace */

int main(int argc, char **argv)
{
	CLI::App app("rmatune: measure this node and recommend a placement (issue 15: probe, sweep, recommend)",
		     "rmatune");
	app.require_subcommand(1, 1);

	ProbeArgs pa;
	CLI::App *probeCmd = app.add_subcommand(
		"probe", "the node's topology (hwloc) and measured core-to-core and node-to-node matrices");
	probeCmd->add_option("--effort", pa.effort, "quick | normal (default; under 30 s on a small node) | thorough")
		->check(CLI::IsMember({ "quick", "normal", "thorough" }));
	probeCmd->add_option("--format", pa.format, "table (default) | json, on standard output")
		->check(CLI::IsMember({ "table", "json" }));
	probeCmd->add_option("--output", pa.output, "also write the profile (JSON) to FILE");
	probeCmd->add_option("--plot", pa.plot, "write SVG heatmaps of the matrices into DIR (created if missing)");
	probeCmd->add_option("--pairs", pa.pairs,
			     "core pairs measured: all (the default up to 32 cores), or sample:N (a stated, "
			     "stratified sample; the default is sample:256 above 32 cores)")
		->check(pairsValidator());

	SweepArgs sa;
	CLI::App *sweepApp = app.add_subcommand(
		"sweep", "run a program under candidate placements (rank maps, window memory, progress, huge pages) "
			 "with rmarun --placement, and rank them by measured time");
	sweepApp->add_option("-n,--ranks", sa.ranks, "the number of ranks")->required()->check(CLI::Range(1, 4096));
	sweepApp->add_option("--repeat", sa.repeat, "runs of each candidate (default 3), taken round-robin")
		->check(CLI::Range(1, 1000));
	sweepApp->add_option("--candidates", sa.candidates, "only these candidates (names as --list shows them)")
		->delimiter(',');
	sweepApp->add_option("--timeout", sa.timeout, "stop a run after SECS seconds (it counts as failed)")
		->check(CLI::PositiveNumber);
	sweepApp->add_option("--keep", sa.keep, "write the placement files into DIR and keep them");
	sweepApp->add_option("--metric", sa.metric,
			     "time (default: wall-clock time of each run) | rmabench (the program is rmabench "
			     "--format json: the median at its largest size)")
		->check(CLI::IsMember({ "time", "rmabench" }));
	sweepApp->add_option("--traffic", sa.traffic,
			     "a traffic matrix (as recommend reads): adds window memory on the heaviest origin's node");
	sweepApp->add_option("--format", sa.format, "table (default) | csv | json, on standard output")
		->check(CLI::IsMember({ "table", "csv", "json" }));
	sweepApp->add_option("--plot", sa.plot, "write an SVG bar chart (sweep.svg) into DIR");
	sweepApp->add_option("--out", sa.out, "write the sweep result (JSON) to FILE, for recommend --sweep");
	sweepApp->add_option("--rmarun", sa.rmarun, "the rmarun to use (default: beside rmatune, else on PATH)");
	sweepApp->add_flag("--list", sa.list, "print the candidates and what was not tried, run nothing");
	sweepApp->add_option("command", sa.command, "-- PROGRAM [ARGS...]");
	sweepApp->positionals_at_end();
	RecommendArgs ra;
	CLI::App *recommendApp = app.add_subcommand(
		"recommend", "the rank-to-core placement that minimises the modelled cost of a traffic matrix on a "
			     "profiled node, as a placement file for rmarun --placement");
	recommendApp->add_option("--profile", ra.profile,
				 "the machine profile (rmatune probe --output FILE); required without --sweep");
	recommendApp->add_option("--traffic", ra.traffic,
				 "bytes by origin and target: JSON {\"bytes\": [[...]]} or {\"pairs\": [...]}, CSV "
				 "lines origin,target,bytes, or the file a job run with RMA_STATS writes; required "
				 "without --sweep");
	recommendApp->add_option("--sweep", ra.sweep,
				 "a sweep result (rmatune sweep --out FILE): recommend its measured best candidate, "
				 "with the measured gain against compact as the evidence");
	recommendApp->add_option("--windows", ra.windows,
				 "with an RMA_STATS file: the windows (names or ids) whose traffic is summed "
				 "(default: all)")
		->delimiter(',');
	recommendApp->add_option("--ranks", ra.ranks, "the number of ranks (default: the matrix's size)")
		->check(CLI::Range(1, 1 << 20));
	recommendApp->add_option("--method", ra.method,
				 "auto (default: exhaustive when there are at most 2e6 assignments, else heuristic) | "
				 "exhaustive | heuristic")
		->check(CLI::IsMember({ "auto", "exhaustive", "heuristic" }));
	recommendApp->add_option("--output", ra.output, "write the placement file to FILE");
	recommendApp->add_option("--format", ra.format,
				 "table (default: the choice, gain and evidence) | json (the placement file), on "
				 "standard output")
		->check(CLI::IsMember({ "table", "json" }));

	try {
		app.parse(argc, argv);
	} catch (const CLI::CallForHelp &e) {
		return app.exit(e);
	} catch (const CLI::CallForAllHelp &e) {
		return app.exit(e);
	} catch (const CLI::ParseError &e) {
		std::fprintf(stderr, "rmatune: %s\nTry 'rmatune --help' for more information.\n", e.what());
		return kUsage;
	}
	if (sweepApp->parsed())
		return sweepCmd(sa);
	if (recommendApp->parsed())
		return recommendCmd(ra);
	return probe(pa);
}
