/* SPDX-License-Identifier: MIT */
/*
 * rmabench's front end: starting jobs under rmarun or an MPI launcher,
 * collecting their JSON, and printing librma/MPI ratios (see the header).
 */
#include "rmabench_launch.h"

#include <algorithm>
#include <fcntl.h>
#include <poll.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <climits>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <sstream>

#include "rmabench_report.h"

namespace rmabench {

namespace {

/* Backends "rmampi-mpich" and "rmampi-openmpi": rmabench-<mpi> run through the MPI drop-in. */
constexpr const char *kShimPrefix = "rmampi-";

std::string selfDir()
{
	char buf[PATH_MAX];
	ssize_t n = readlink("/proc/self/exe", buf, sizeof(buf) - 1);
	if (n <= 0)
		return ".";
	std::string p(buf, static_cast<size_t>(n));
	return p.substr(0, p.rfind('/'));
}

bool executable(const std::string &path)
{
	struct stat st;
	return stat(path.c_str(), &st) == 0 && S_ISREG(st.st_mode) && access(path.c_str(), X_OK) == 0;
}

/* @name next to this executable, else on PATH; "" if neither. */
std::string findTool(const std::string &name)
{
	std::string here = selfDir() + "/" + name;
	if (executable(here))
		return here;
	const char *path = std::getenv("PATH");
	std::stringstream dirs(path ? path : "/usr/bin:/bin");
	std::string d;
	while (std::getline(dirs, d, ':'))
		if (!d.empty() && executable(d + "/" + name))
			return d + "/" + name;
	return "";
}

std::string self()
{
	return selfDir() + "/rmabench";
}

/*
 * Run @argv; its stdout is captured into @out when @out is given (else
 * inherited); stderr is inherited. Returns the exit status (128 + signal).
 */
int run(const std::vector<std::string> &argv, std::string *out)
{
	int pipefd[2] = { -1, -1 };
	if (out && pipe2(pipefd, O_CLOEXEC) != 0) {
		std::perror("rmabench: pipe");
		return 127;
	}
	std::fflush(stdout);
	std::fflush(stderr);
	pid_t pid = fork();
	if (pid < 0) {
		std::perror("rmabench: fork");
		return 127;
	}
	if (pid == 0) {
		if (out)
			dup2(pipefd[1], 1);
		std::vector<char *> args;
		for (const auto &a : argv)
			args.push_back(const_cast<char *>(a.c_str()));
		args.push_back(nullptr);
		execvp(args[0], args.data());
		int err = errno;
		std::fprintf(stderr, "rmabench: cannot run %s: %s\n", args[0], std::strerror(err));
		_exit(127);
	}
	if (out) {
		close(pipefd[1]);
		char buf[4096];
		ssize_t n;
		while ((n = read(pipefd[0], buf, sizeof(buf))) != 0) {
			if (n < 0 && errno == EINTR)
				continue;
			if (n < 0)
				break;
			out->append(buf, static_cast<size_t>(n));
		}
		close(pipefd[0]);
	}
	int status = 0;
	while (waitpid(pid, &status, 0) < 0 && errno == EINTR)
		;
	if (WIFSIGNALED(status))
		return 128 + WTERMSIG(status);
	return WEXITSTATUS(status);
}

std::vector<std::string> rmarunCommand(const LaunchOptions &lo)
{
	std::string rmarun = findTool("rmarun");
	if (rmarun.empty())
		return {};
	std::vector<std::string> argv = { rmarun, "-n", std::to_string(lo.ranks), "--bind", lo.bind, self() };
	argv.insert(argv.end(), lo.args.begin(), lo.args.end());
	return argv;
}

/*
 * The launcher line for @mpi. Open MPI 4.1 would pick osc rdma (over the
 * vader BTL) for allocate windows too, where a 64-bit compare_and_swap
 * crashes the target inside vader; its shared-memory component, osc sm,
 * serves allocate and allocate_shared windows, so those runs ask for it.
 * create and dynamic windows are left to Open MPI's choice (osc rdma). It
 * refuses root without --allow-run-as-root and more ranks than cores
 * without --oversubscribe.
 */
std::vector<std::string> mpiCommand(const std::string &backend, const LaunchOptions &lo)
{
	/* "rmampi-<mpi>": the same MPI program, its RMA calls served by librma through the drop-in. */
	const bool shim = backend.rfind(kShimPrefix, 0) == 0;
	const std::string mpi = shim ? backend.substr(std::strlen(kShimPrefix)) : backend;
	std::string exe = selfDir() + "/rmabench-" + mpi;
	std::vector<std::string> argv;
	if (mpi == "mpich") {
		std::string launcher = findTool("mpiexec.mpich");
		if (launcher.empty())
			launcher = "mpiexec.hydra";
		argv = { launcher, "-n", std::to_string(lo.ranks), "-bind-to", lo.bind == "core" ? "core" : "none" };
	} else {
		std::string launcher = findTool("mpiexec.openmpi");
		if (launcher.empty())
			launcher = "mpiexec";
		argv = { launcher, "-n", std::to_string(lo.ranks), "--bind-to", lo.bind == "core" ? "core" : "none",
			 "--oversubscribe", "--mca", "btl", "self,vader", "--mca", "pml", "ob1" };
		if (lo.flavor == "allocate" || lo.flavor == "allocate_shared") {
			argv.push_back("--mca");
			argv.push_back("osc");
			argv.push_back("sm");
		}
		if (geteuid() == 0)
			argv.push_back("--allow-run-as-root");
	}
	if (shim)
		argv.push_back(selfDir() + "/rmampi");
	argv.push_back(exe);
	argv.insert(argv.end(), lo.args.begin(), lo.args.end());
	return argv;
}

std::string pickMpi(const std::string &backend)
{
	if (backend == "mpich" || backend == "openmpi" || backend.rfind(kShimPrefix, 0) == 0)
		return backend;
	auto built = builtMpis();
	return built.empty() ? "" : built[0];
}

std::string label(const std::string &backend)
{
	return backend == "mpich" ? "MPICH" : backend == "openmpi" ? "Open MPI" : backend;
}

/* The MPI program behind @backend: rmabench-mpich for "mpich" and "rmampi-mpich". */
std::string backendExe(const std::string &backend)
{
	const bool shim = backend.rfind(kShimPrefix, 0) == 0;
	return selfDir() + "/rmabench-" + (shim ? backend.substr(std::strlen(kShimPrefix)) : backend);
}

/* Whether @backend can run here: its rmabench-<mpi>, and for rmampi-<mpi> the helper and that drop-in. */
bool backendBuilt(const std::string &backend)
{
	if (!executable(backendExe(backend)))
		return false;
	if (backend.rfind(kShimPrefix, 0) != 0)
		return true;
	return executable(selfDir() + "/rmampi");
}

} /* namespace */

std::vector<std::string> builtMpis()
{
	std::vector<std::string> out;
	for (const char *m : { "mpich", "openmpi" })
		if (executable(selfDir() + "/rmabench-" + m))
			out.push_back(m);
	return out;
}

int launchLibrma(const LaunchOptions &lo)
{
	auto argv = rmarunCommand(lo);
	if (argv.empty()) {
		std::fprintf(stderr, "rmabench: rmarun is neither next to rmabench nor on PATH\n");
		return 127;
	}
	return run(argv, nullptr);
}

int launchMpi(const LaunchOptions &lo)
{
	std::string mpi = pickMpi(lo.backend);
	if (mpi.empty() || !backendBuilt(mpi)) {
		std::fprintf(stderr, "rmabench: no MPI backend%s%s was built (install libmpich-dev or libopenmpi-dev and "
			     "rebuild)\n", mpi.empty() ? "" : " for ", mpi.c_str());
		return 2;
	}
	return run(mpiCommand(mpi, lo), nullptr);
}

int compare(const LaunchOptions &lo)
{
	std::vector<std::string> mpis = lo.mpis.empty() ? builtMpis() : lo.mpis;
	for (const auto &m : mpis) {
		if (!backendBuilt(m)) {
			std::fprintf(stderr, "rmabench: compare: %s was not built (rmabench-<mpi>, and rmampi for "
				     "rmampi-<mpi>)\n", m.c_str());
			return 2;
		}
	}
	if (mpis.empty()) {
		std::fprintf(stderr, "rmabench: compare: no MPI backend was built (install libmpich-dev or "
			     "libopenmpi-dev and rebuild)\n");
		return 2;
	}
	LaunchOptions jl = lo;
	jl.args.push_back("--format");
	jl.args.push_back("json");
	std::vector<std::string> names = { "librma" };
	names.insert(names.end(), mpis.begin(), mpis.end());
	/*
	 * Rounds of one run per backend, in turn, so that a noisy stretch of
	 * a shared machine hits every backend alike; each backend's figure is
	 * then the median over the rounds.
	 */
	const int rounds = std::max(1, lo.alternate);
	std::vector<std::vector<Run>> byBackend(names.size());
	std::vector<std::string> failed;
	for (int round = 0; round < rounds; ++round) {
		for (size_t b = 0; b < names.size(); ++b) {
			const std::string &name = names[b];
			auto argv = name == "librma" ? rmarunCommand(jl) : mpiCommand(name, jl);
			if (argv.empty()) {
				std::fprintf(stderr, "rmabench: rmarun is neither next to rmabench nor on PATH\n");
				return 127;
			}
			std::string out;
			int status = run(argv, &out);
			Run r;
			std::string err;
			/* The JSON is the last line a job prints on stdout. */
			std::string last;
			std::stringstream lines(out);
			for (std::string line; std::getline(lines, line);)
				if (!line.empty() && line[0] == '{')
					last = line;
			if (status != 0 || !parseJson(last, r, err)) {
				std::fprintf(stderr, "rmabench: compare: the %s job failed (status %d)%s%s\n", name.c_str(),
					     status, err.empty() ? "" : ": ", err.c_str());
				failed.push_back(name);
				continue;
			}
			/* The program names its MPI; through the drop-in the column is the backend's own name. */
			if (name.rfind(kShimPrefix, 0) == 0)
				r.backend = name;
			byBackend[b].push_back(std::move(r));
		}
	}
	if (byBackend[0].empty())
		return 1;
	/* The first run of each backend that ran: headers, and the rows' sizes. */
	std::vector<Run> runs;
	std::vector<const std::vector<Run> *> series;
	for (const auto &v : byBackend)
		if (!v.empty()) {
			runs.push_back(v.front());
			series.push_back(&v);
		}

	const Run &base = runs[0];
	const bool higher = higherIsBetter(base.unit);
	auto value = [&](const Run &r, size_t k) {
		if (k >= r.rows.size())
			return 0.0;
		const Row &row = r.rows[k];
		return lo.stat == "median" ? row.median : lo.stat == "min" ? row.min : row.mean;
	};
	/* min, median, max over the rounds of backend @i, row @k. */
	struct Spread {
		double min = 0, median = 0, max = 0;
	};
	auto spread = [&](size_t i, size_t k) {
		std::vector<double> v;
		for (const Run &r : *series[i])
			if (double x = value(r, k); x > 0)
				v.push_back(x);
		Spread s;
		if (v.empty())
			return s;
		std::sort(v.begin(), v.end());
		s.min = v.front();
		s.max = v.back();
		s.median = v.size() % 2 ? v[v.size() / 2] : (v[v.size() / 2 - 1] + v[v.size() / 2]) / 2;
		return s;
	};
	if (lo.format == "json") {
		/* JSON lines: every run, librma's first (what rmabench plot reads). */
		for (const auto *v : series)
			for (const Run &r : *v)
				printJson(stdout, r);
	} else if (lo.format == "csv") {
		std::printf("size,librma");
		if (rounds > 1)
			std::printf(",librma_min,librma_max");
		for (size_t i = 1; i < runs.size(); ++i) {
			std::printf(",%s", runs[i].backend.c_str());
			if (rounds > 1)
				std::printf(",%s_min,%s_max", runs[i].backend.c_str(), runs[i].backend.c_str());
			std::printf(",librma_over_%s", runs[i].backend.c_str());
		}
		std::printf(",unit\n");
		for (size_t k = 0; k < base.rows.size(); ++k) {
			Spread own = spread(0, k);
			std::printf("%ld,%.4f", base.rows[k].size, own.median);
			if (rounds > 1)
				std::printf(",%.4f,%.4f", own.min, own.max);
			for (size_t i = 1; i < runs.size(); ++i) {
				Spread m = spread(i, k);
				std::printf(",%.4f", m.median);
				if (rounds > 1)
					std::printf(",%.4f,%.4f", m.min, m.max);
				std::printf(",%.6g", m.median > 0 ? own.median / m.median : 0.0);
			}
			std::printf(",%s\n", base.unit.c_str());
		}
	} else {
		std::printf("# rmabench compare: %s, %s ranks, bind %s\n", base.what.c_str(), base.get("ranks").c_str(),
			    lo.bind.c_str());
		std::printf("# host %s, %s; binding (librma): %s\n", base.get("host").c_str(), base.get("cpu").c_str(),
			    base.get("binding").c_str());
		std::printf("# window %s, target page size %s, NUMA node %s, librma progress: %s\n",
			    base.get("flavor").c_str(), base.get("page_size").c_str(), base.get("numa_node").c_str(),
			    base.get("progress").c_str());
		for (size_t i = 1; i < runs.size(); ++i)
			std::printf("# %s: %s; binding: %s\n", label(runs[i].backend).c_str(), runs[i].get("library").c_str(),
				    runs[i].get("binding").c_str());
		std::printf("# %s %s (%s); librma/MPI %s 1 means librma is faster\n", lo.stat.c_str(), base.unit.c_str(),
			    lo.stat == "mean" ? "as OSU" : "of the block times", higher ? ">" : "<");
		if (rounds > 1)
			std::printf("# %d alternating rounds: each figure is the median over the rounds [min-max], the "
				    "ratio is of the medians\n",
				    rounds);
		std::printf("%-10s %12s", "# Size", "librma");
		if (rounds > 1)
			std::printf(" %19s", "[min-max]");
		for (size_t i = 1; i < runs.size(); ++i) {
			std::printf(" %12s", label(runs[i].backend).c_str());
			if (rounds > 1)
				std::printf(" %19s", "[min-max]");
			std::printf(" %14s", ("librma/" + runs[i].backend).c_str());
		}
		std::printf("\n");
		for (size_t k = 0; k < base.rows.size(); ++k) {
			Spread own = spread(0, k);
			std::printf("%-10ld %12.3f", base.rows[k].size, own.median);
			if (rounds > 1)
				std::printf(" [%8.3f-%8.3f]", own.min, own.max);
			for (size_t i = 1; i < runs.size(); ++i) {
				Spread m = spread(i, k);
				std::printf(" %12.3f", m.median);
				if (rounds > 1)
					std::printf(" [%8.3f-%8.3f]", m.min, m.max);
				std::printf(" %14.4g", m.median > 0 ? own.median / m.median : 0.0);
			}
			std::printf("\n");
		}
	}
	std::fflush(stdout);
	if (!lo.plot.empty()) {
		std::string err;
		if (!writeSvg(lo.plot, runs, err)) {
			std::fprintf(stderr, "rmabench: --plot: %s\n", err.c_str());
			return 1;
		}
	}
	return failed.empty() ? 0 : 1;
}

int plot(const std::vector<std::string> &args)
{
	if (args.size() < 2) {
		std::fprintf(stderr, "usage: rmabench plot OUT.svg RUN.json [RUN.json...]\n");
		return 2;
	}
	std::vector<Run> runs;
	for (size_t i = 1; i < args.size(); ++i) {
		std::ifstream in(args[i]);
		if (!in) {
			std::fprintf(stderr, "rmabench: plot: cannot read %s\n", args[i].c_str());
			return 1;
		}
		/* A file may hold several runs, one JSON object per line (as compare --format json prints). */
		std::string line;
		bool any = false;
		while (std::getline(in, line)) {
			if (line.empty() || line[0] != '{')
				continue;
			Run r;
			std::string err;
			if (!parseJson(line, r, err)) {
				std::fprintf(stderr, "rmabench: plot: %s: %s\n", args[i].c_str(), err.c_str());
				return 1;
			}
			runs.push_back(std::move(r));
			any = true;
		}
		if (!any) {
			std::fprintf(stderr, "rmabench: plot: %s holds no rmabench JSON run\n", args[i].c_str());
			return 1;
		}
	}
	std::string err;
	if (!writeSvg(args[0], runs, err)) {
		std::fprintf(stderr, "rmabench: plot: %s\n", err.c_str());
		return 1;
	}
	return 0;
}

} /* namespace rmabench */
