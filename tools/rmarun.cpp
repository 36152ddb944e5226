/* SPDX-License-Identifier: MIT */
/*
 * rmarun: start the ranks of a librma job on this host (a command line over
 * librma::launch()).
 */
#include <getopt.h>

#include <algorithm>
#include <cerrno>
#include <cstdint>
#include <cmath>
#include <cstdarg>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <optional>
#include <sstream>
#include <string>
#include <vector>

#include "config.h"

#include "bootstrap/binding.h"
#include "bootstrap/launcher.h"
#include "common/knobs.h"
#include "numa/topology.h"
#include "placement_file.h"
#include "progress/agent.h"

namespace {

constexpr int kUsageStatus = 2;
constexpr long kMaxRanks = 4096;

void printUsage(FILE *out)
{
	std::fprintf(out,
		     "Usage: rmarun -n N [options] [--] PROGRAM [ARGS...]\n"
		     "Start N ranks of PROGRAM on this host and serve their bootstrap.\n"
		     "\n"
		     "Options:\n"
		     "  -n, -np, --nranks N  number of ranks (required unless --placement, 1..%ld)\n"
		     "      --bind KIND      what each rank is bound to: core (default; one\n"
		     "                       physical core, all its SMT threads), numa (every\n"
		     "                       CPU of a NUMA node) or none\n"
		     "      --map-by ORDER   the order ranks take the physical cores in: core\n"
		     "                       (consecutive cores; default with --bind core),\n"
		     "                       numa (one core of each NUMA node in turn; default\n"
		     "                       with --bind numa) or l3 (one core of each L3 domain\n"
		     "                       in turn); ranks wrap around when they outnumber cores\n"
		     "      --tag-output     prefix each line a rank prints with \"[rank] \"\n"
		     "      --timeout SECS   stop the job after SECS seconds (status 124)\n"
		     "      --keep-going     when a rank fails, let the others run on (their RMA\n"
		     "                       calls involving it fail with RMA_ERR_PROC_FAILED)\n"
		     "      --progress MODE  who drains the accumulate rings: thread (default: a\n"
		     "                       progress thread in every rank, on the rank's CPUs),\n"
		     "                       agent (one agent per NUMA node, in the lowest rank\n"
		     "                       bound there, serving every window) or none\n"
		     "                       (origins drain them while they wait)\n"
		     "      --progress-core LIST  the agents' CPUs, one per NUMA node (\"7\" or\n"
		     "                       \"7,15\"; default: the last CPU no rank is bound to,\n"
		     "                       else the last CPU, shared)\n"
		     "      --placement FILE apply a placement file (rmatune recommend writes them):\n"
		     "                       each rank bound to exactly its CPUs, window memory\n"
		     "                       policy and huge pages (RMA_PLACEMENT, RMA_HUGE_PAGES;\n"
		     "                       per-window policies for windows created with info\n"
		     "                       key rma_win_name: RMA_PLACEMENT_WINDOWS), progress\n"
		     "                       mode and agent core; what librma cannot apply yet is\n"
		     "                       refused, never ignored. Excludes --bind, --map-by,\n"
		     "                       --progress and --progress-core\n"
		     "  -x VAR[=VALUE]       set VAR to VALUE in the ranks' environment (repeatable);\n"
		     "                       -x VAR passes rmarun's own VAR and fails if it is unset\n"
		     "      --report         print one line before starting: the topology, and\n"
		     "                       where each rank is bound (the placement used)\n"
		     "  -v, --verbose        report bindings, progress and exits on stderr\n"
		     "  -h, --help           show this help and exit\n"
		     "      --version        show the version and exit\n"
		     "\n"
		     "Each rank finds RMA_RANK, RMA_SIZE, RMA_BOOT_FD and RMA_BIND in its environment,\n"
		     "and RMA_PROGRESS and RMA_PROGRESS_CORE (from the options, else as rmarun found\n"
		     "them, else the default core).\n"
		     "\n"
		     "Exit status: 0 when every rank exits 0; otherwise the first failure's:\n"
		     "a rank's exit status (128+N for a rank killed by signal N), the code given\n"
		     "to rma_abort(), 128+N when rmarun gets signal N, 124 on timeout, 127 when\n"
		     "a rank cannot be started, 2 for bad usage.\n",
		     kMaxRanks);
}

[[gnu::format(printf, 1, 2)]] int usageError(const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	std::fputs("rmarun: ", stderr);
	std::vfprintf(stderr, fmt, ap);
	va_end(ap);
	std::fputs("\nTry 'rmarun --help' for more information.\n", stderr);
	return kUsageStatus;
}

/*
 * The CPU for the agent when none is given: the last allowed CPU that no
 * rank is bound to, else the last allowed CPU (*@shared: with a rank). -1
 * if no CPU is allowed at all.
 */
int defaultProgressCore(const librma::LaunchOptions &options, const std::vector<int> &allowed, bool *shared)
{
	*shared = true;
	if (allowed.empty())
		return -1;
	const librma::Topology *topology = options.bind != librma::Bind::None ? &librma::Topology::system() : nullptr;
	std::vector<bool> used(static_cast<std::size_t>(allowed.back()) + 1, false);
	for (int rank = 0; rank < options.nranks; ++rank) {
		librma::Binding binding =
			options.rankCpus.empty()
				? librma::bindingFor(options.bind, options.mapBy, rank, allowed, topology)
				: librma::bindingToCpus(options.rankCpus[static_cast<std::size_t>(rank)]);
		/* An unbound rank may run anywhere. */
		if (binding.cpus.empty())
			return allowed.back();
		for (int cpu : binding.cpus)
			if (cpu >= 0 && static_cast<std::size_t>(cpu) < used.size())
				used[cpu] = true;
	}
	for (auto it = allowed.rbegin(); it != allowed.rend(); ++it) {
		if (!used[*it]) {
			*shared = false;
			return *it;
		}
	}
	return allowed.back();
}

/*
 * Strings built by appending: GCC 12 at -O3 warns falsely (-Wrestrict) on
 * "literal" + std::string.
 */
template<typename... Parts>
std::string cat(const Parts &...parts)
{
	std::string s;
	(s.append(parts), ...);
	return s;
}

/* Read and parse a placement file; nullopt with @err ("FILE: what is wrong"). */
std::optional<librma::PlacementFile> loadPlacement(const char *path, std::string &err)
{
	std::ifstream in(path);
	if (!in) {
		err = cat(path, ": cannot read it: ", std::strerror(errno));
		return std::nullopt;
	}
	std::ostringstream text;
	text << in.rdbuf();
	return librma::parsePlacementFile(text.str(), path, err);
}

/* The file's memory.windows as RMA_PLACEMENT_WINDOWS text ("" for none); the parser has checked the names. */
std::string windowPoliciesText(const librma::PlacementFile &file)
{
	std::vector<librma::WindowPlacement> list;
	for (const auto &[name, policy] : file.windowPolicies)
		list.push_back({ name, policy });
	return librma::windowPlacementsText(list);
}

/*
 * Check @file against this host and put it into @options and the ranks'
 * environment. What librma cannot apply yet is refused here, with the
 * reason, rather than dropped: the job runs as the file says or not at all.
 */
bool applyPlacement(const librma::PlacementFile &file, const std::vector<int> &allowed,
		    librma::LaunchOptions &options, std::string &err)
{
	const librma::Topology &topology = librma::Topology::system();
	if (!librma::checkPlacementFile(file, topology, allowed, err))
		return false;
	if (!file.agentCpus.empty() && file.progressMode != "agent") {
		err = cat("progress.cores names agent cores, but progress.mode is ",
			  file.progressMode.empty() ? std::string("unset (thread)") : file.progressMode,
			  ": only mode agent runs on a chosen core");
		return false;
	}
	options.rankCpus = file.rankCpus;
	const std::string policy = file.memoryDefault.str();
	if (setenv("RMA_PLACEMENT", policy.c_str(), 1) != 0) {
		err = cat("cannot set RMA_PLACEMENT: ", std::strerror(errno));
		return false;
	}
	/*
	 * Per-window policies: a window created with info key rma_win_name=NAME
	 * takes NAME's. The file replaces any inherited value, as it does
	 * RMA_PLACEMENT: the memory goes where the file says.
	 */
	const std::string windows = windowPoliciesText(file);
	if ((windows.empty() ? unsetenv("RMA_PLACEMENT_WINDOWS")
			     : setenv("RMA_PLACEMENT_WINDOWS", windows.c_str(), 1)) != 0) {
		err = cat("cannot set RMA_PLACEMENT_WINDOWS: ", std::strerror(errno));
		return false;
	}
	static const char *const hugeWords[] = { "off", "prefer", "require" };
	if (file.hugePages && setenv("RMA_HUGE_PAGES", hugeWords[static_cast<int>(*file.hugePages)], 1) != 0) {
		err = cat("cannot set RMA_HUGE_PAGES: ", std::strerror(errno));
		return false;
	}
	return true;
}

/* --report's line under --placement: what was applied, from the file and the ranks' environment. */
std::string placementReport(const librma::PlacementFile &file, const char *path, const std::vector<int> &allowed)
{
	const librma::Topology &topology = librma::Topology::system();
	std::string line = cat("rmarun: placement: ", std::to_string(file.rankCpus.size()), " ranks from ", path,
			       "; topology ", topology.source());
	if (!file.topologySource.empty() && file.topologySource != topology.source())
		line.append(cat(" (the file was made for ", file.topologySource, ")"));
	const char *huge = std::getenv("RMA_HUGE_PAGES");
	const char *mode = std::getenv("RMA_PROGRESS");
	const char *core = std::getenv("RMA_PROGRESS_CORE");
	line.append(cat("; allowed CPUs ", librma::cpuListText(allowed), "; window memory ", file.memoryDefault.str()));
	if (const std::string windows = windowPoliciesText(file); !windows.empty())
		line.append(cat(", by window name ", windows, " (RMA_PLACEMENT_WINDOWS)"));
	line.append(cat(", huge pages ", huge && *huge ? huge : "prefer (default)", "; progress ",
			mode && *mode ? mode : librma::progressModeName(librma::kDefaultProgressMode)));
	if (mode && !std::strcmp(mode, "agent"))
		line.append(cat(" on CPUs ", core ? core : "unpinned"));
	line.append(":");
	for (std::size_t rank = 0; rank < file.rankCpus.size(); ++rank)
		line.append(cat(" ", std::to_string(rank), "=", librma::bindingToCpus(file.rankCpus[rank]).text));
	return line;
}

} /* namespace */

int main(int argc, char **argv)
{
	/* A garbage knob fails the job here, before any rank starts (common/knobs.h lists them). */
	if (std::string bad = librma::checkKnobs(); !bad.empty()) {
		std::fprintf(stderr, "rmarun: environment variable %s\n", bad.c_str());
		return 2;
	}
	enum {
		OptBind = 256,
		OptMapBy,
		OptTagOutput,
		OptTimeout,
		OptVersion,
		OptKeepGoing,
		OptProgress,
		OptProgressCore,
		OptReport,
		OptPlacement
	};
	static const option longOptions[] = {
		{ "nranks", required_argument, nullptr, 'n' },
		{ "bind", required_argument, nullptr, OptBind },
		{ "map-by", required_argument, nullptr, OptMapBy },
		{ "tag-output", no_argument, nullptr, OptTagOutput },
		{ "timeout", required_argument, nullptr, OptTimeout },
		{ "keep-going", no_argument, nullptr, OptKeepGoing },
		{ "progress", required_argument, nullptr, OptProgress },
		{ "progress-core", required_argument, nullptr, OptProgressCore },
		{ "verbose", no_argument, nullptr, 'v' },
		{ "help", no_argument, nullptr, 'h' },
		{ "version", no_argument, nullptr, OptVersion },
		{ "report", no_argument, nullptr, OptReport },
		{ "placement", required_argument, nullptr, OptPlacement },
		{ nullptr, 0, nullptr, 0 },
	};

	/* mpiexec's spelling: -np N is -n N (up to the program's name, which getopt stops at). */
	for (int i = 1; i < argc && argv[i][0] == '-'; ++i) {
		if (!std::strcmp(argv[i], "-np"))
			argv[i] = const_cast<char *>("-n");
		if (!std::strcmp(argv[i], "--"))
			break;
	}

	librma::LaunchOptions options;
	bool haveRanks = false;
	const char *progress = nullptr;
	std::vector<int> progressCores; /* empty: rmarun's default */
	bool report = false;
	const char *placementPath = nullptr;
	/* Options a placement file replaces, for the conflict message. */
	const char *placementConflict = nullptr;
	int opt;
	/* '+': stop at the program's name, so its own options stay its own. */
	while ((opt = getopt_long(argc, argv, "+n:x:vh", longOptions, nullptr)) != -1) {
		switch (opt) {
		case 'x': {
			/* The ranks inherit rmarun's environment, so setting it here exports it. */
			const char *eq = std::strchr(optarg, '=');
			std::string name = eq ? std::string(optarg, static_cast<std::size_t>(eq - optarg)) : std::string(optarg);
			if (name.empty())
				return usageError("-x wants VAR or VAR=VALUE, not '%s'", optarg);
			if (!eq && !std::getenv(name.c_str()))
				return usageError("-x %s: %s is not set in rmarun's environment (give -x %s=VALUE)",
						  name.c_str(), name.c_str(), name.c_str());
			if (eq && setenv(name.c_str(), eq + 1, 1) != 0)
				return usageError("-x %s: cannot set it: %s", optarg, std::strerror(errno));
			break;
		}
		case 'n': {
			char *end;
			errno = 0;
			long n = std::strtol(optarg, &end, 10);
			if (errno || end == optarg || *end || n < 1 || n > kMaxRanks)
				return usageError("-n wants a number of ranks from 1 to %ld, not '%s'", kMaxRanks,
						  optarg);
			options.nranks = static_cast<int>(n);
			haveRanks = true;
			break;
		}
		case OptBind:
			placementConflict = "--bind";
			if (!std::strcmp(optarg, "core"))
				options.bind = librma::Bind::Core;
			else if (!std::strcmp(optarg, "numa"))
				options.bind = librma::Bind::Numa;
			else if (!std::strcmp(optarg, "none"))
				options.bind = librma::Bind::None;
			else
				return usageError("--bind wants core, numa or none, not '%s'", optarg);
			break;
		case OptMapBy:
			placementConflict = "--map-by";
			if (!std::strcmp(optarg, "core"))
				options.mapBy = librma::MapBy::Core;
			else if (!std::strcmp(optarg, "numa"))
				options.mapBy = librma::MapBy::Numa;
			else if (!std::strcmp(optarg, "l3"))
				options.mapBy = librma::MapBy::L3;
			else
				return usageError("--map-by wants core, numa or l3, not '%s'", optarg);
			break;
		case OptTagOutput:
			options.tagOutput = true;
			break;
		case OptTimeout: {
			char *end;
			double seconds = std::strtod(optarg, &end);
			if (end == optarg || *end || !std::isfinite(seconds) || seconds <= 0)
				return usageError("--timeout wants a positive number of seconds, not '%s'", optarg);
			options.timeoutSeconds = seconds;
			break;
		}
		case OptKeepGoing:
			options.keepGoing = true;
			break;
		case OptProgress:
			placementConflict = "--progress";
			if (std::strcmp(optarg, "none") && std::strcmp(optarg, "thread") && std::strcmp(optarg, "agent"))
				return usageError("--progress wants none, thread or agent, not '%s'", optarg);
			progress = optarg;
			break;
		case OptProgressCore: {
			placementConflict = "--progress-core";
			auto cpus = librma::parseCpuListStrict(optarg);
			if (!cpus)
				return usageError("--progress-core wants a CPU number or list (7, 7,15), not '%s'", optarg);
			progressCores = std::move(*cpus);
			break;
		}
		case OptReport:
			report = true;
			break;
		case OptPlacement:
			placementPath = optarg;
			break;
		case 'v':
			options.verbose = true;
			break;
		case 'h':
			printUsage(stdout);
			return 0;
		case OptVersion:
			std::printf("rmarun (librma) %s\n", RMA_VERSION_STRING);
			return 0;
		default:
			/* getopt_long() has said what is wrong. */
			std::fputs("Try 'rmarun --help' for more information.\n", stderr);
			return kUsageStatus;
		}
	}
	std::optional<librma::PlacementFile> placement;
	if (placementPath) {
		if (placementConflict)
			return usageError("--placement %s: the file says where ranks and agents go; %s cannot be given "
					  "with it",
					  placementPath, placementConflict);
		std::string err;
		placement = loadPlacement(placementPath, err);
		if (!placement)
			return usageError("--placement %s", err.c_str());
		const int fileRanks = static_cast<int>(placement->rankCpus.size());
		if (haveRanks && options.nranks != fileRanks)
			return usageError("--placement %s places %d ranks, but -n asks for %d", placementPath, fileRanks,
					  options.nranks);
		options.nranks = fileRanks;
		haveRanks = true;
	}
	if (!haveRanks)
		return usageError("the number of ranks (-n N) is required");
	if (optind >= argc)
		return usageError("no program to run");
	options.argv.assign(argv + optind, argv + argc);

	/* The ranks inherit our environment: the progress variables go there. */
	std::vector<int> allowed = librma::affinityCpus();
	const char *coreSource = "--progress-core";
	if (placement) {
		std::string err;
		if (!applyPlacement(*placement, allowed, options, err))
			return usageError("--placement %s: %s", placementPath, err.c_str());
		progress = placement->progressMode.empty() ? nullptr : placement->progressMode.c_str();
		progressCores = placement->agentCpus;
		coreSource = "the placement file";
	}
	if (placement && progressCores.empty()) {
		/* The file leaves the agent's core to rmarun: the usual default below. */
		bool shared;
		progressCores = { defaultProgressCore(options, allowed, &shared) };
		coreSource = shared ? "default, shared with a rank" : "default, no rank bound there";
	} else if (placement) {
		/* Checked against the allowed CPUs by applyPlacement(). */
	} else if (!progressCores.empty()) {
		for (int cpu : progressCores)
			if (!allowed.empty() && !std::binary_search(allowed.begin(), allowed.end(), cpu))
				return usageError("--progress-core %s: CPU %d is not one rmarun may use (%s)",
						  librma::cpuListText(progressCores).c_str(), cpu,
						  librma::cpuListText(allowed).c_str());
	} else if (const char *env = std::getenv("RMA_PROGRESS_CORE"); env && *env) {
		coreSource = "RMA_PROGRESS_CORE";
	} else {
		bool shared;
		progressCores = { defaultProgressCore(options, allowed, &shared) };
		coreSource = shared ? "default, shared with a rank" : "default, no rank bound there";
	}
	if (progress && setenv("RMA_PROGRESS", progress, 1) != 0)
		return usageError("cannot set RMA_PROGRESS: %s", std::strerror(errno));
	if (!progressCores.empty() && progressCores.front() >= 0 &&
	    setenv("RMA_PROGRESS_CORE", librma::cpuListText(progressCores).c_str(), 1) != 0)
		return usageError("cannot set RMA_PROGRESS_CORE: %s", std::strerror(errno));

	if (options.verbose) {
		const char *mode = std::getenv("RMA_PROGRESS");
		const char *modeSource = progress ? "--progress" : "RMA_PROGRESS";
		if (!mode || !*mode) {
			mode = librma::progressModeName(librma::kDefaultProgressMode);
			modeSource = "default";
		}
		const char *core = std::getenv("RMA_PROGRESS_CORE");
		std::fprintf(stderr, "rmarun: progress %s (%s); agent cores %s (%s)%s\n", mode, modeSource,
			     core ? core : "unpinned", coreSource,
			     std::strcmp(mode, "agent") ? ", used in agent mode only"
							: ", one agent per NUMA node, in the lowest rank bound there");
	}

	if (report && placement) {
		std::fprintf(stderr, "%s\n", placementReport(*placement, placementPath, allowed).c_str());
	} else if (report) {
		/* One line: what the machine looks like and where each rank goes. */
		const librma::Topology &topology = librma::Topology::system();
		static const char *const bindNames[] = { "none", "core", "numa" };
		static const char *const mapNames[] = { "default", "core", "numa", "l3" };
		std::string line = "rmarun: placement: " + std::to_string(options.nranks) + " ranks; topology ";
		line.append(topology.source())
			.append(" (")
			.append(std::to_string(topology.packageCount()))
			.append(" packages, ")
			.append(std::to_string(topology.nodeCount()))
			.append(" NUMA nodes, ")
			.append(std::to_string(topology.l3Count()))
			.append(" L3, ")
			.append(std::to_string(topology.cores().size()))
			.append(" cores); allowed CPUs ")
			.append(librma::cpuListText(allowed))
			.append("; bind ")
			.append(bindNames[static_cast<int>(options.bind)])
			.append(", map-by ")
			.append(mapNames[static_cast<int>(options.mapBy)])
			.append(":");
		for (int rank = 0; rank < options.nranks; ++rank) {
			librma::Binding b = librma::bindingFor(options.bind, options.mapBy, rank, allowed, &topology);
			line.append(" ").append(std::to_string(rank)).append("=").append(b.text);
		}
		std::fprintf(stderr, "%s\n", line.c_str());
	}

	/* Once, so that a slow job on a small host is not a mystery. */
	if (options.nranks > static_cast<int>(allowed.size()) && !allowed.empty())
		std::fprintf(stderr,
			     "rmarun: warning: %d ranks on %zu CPUs: the job oversubscribes them; it stays correct, "
			     "and ranks that wait yield their CPU early, but every wait may cost a context switch\n",
			     options.nranks, allowed.size());
	return librma::launch(options);
}
