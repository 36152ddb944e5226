/* SPDX-License-Identifier: MIT */
/*
 * rmarun: start the ranks of a librma job on this host (a command line over
 * librma::launch()).
 */
#include <getopt.h>

#include <cerrno>
#include <cmath>
#include <cstdarg>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>

#include "config.h"

#include "bootstrap/launcher.h"

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
		     "  -n, --nranks N       number of ranks (required, 1..%ld)\n"
		     "      --bind KIND      where ranks run: core (default; rank i on the i-th\n"
		     "                       allowed CPU, wrapping around), numa (all CPUs of a\n"
		     "                       NUMA node, nodes taken in turn) or none\n"
		     "      --tag-output     prefix each line a rank prints with \"[rank] \"\n"
		     "      --timeout SECS   stop the job after SECS seconds (status 124)\n"
		     "      --keep-going     when a rank fails, let the others run on (their RMA\n"
		     "                       calls involving it fail with RMA_ERR_PROC_FAILED)\n"
		     "  -v, --verbose        report bindings and exits on stderr\n"
		     "  -h, --help           show this help and exit\n"
		     "      --version        show the version and exit\n"
		     "\n"
		     "Each rank finds RMA_RANK, RMA_SIZE, RMA_BOOT_FD and RMA_BIND in its environment.\n"
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

} /* namespace */

int main(int argc, char **argv)
{
	enum { OptBind = 256, OptTagOutput, OptTimeout, OptVersion, OptKeepGoing };
	static const option longOptions[] = {
		{ "nranks", required_argument, nullptr, 'n' },
		{ "bind", required_argument, nullptr, OptBind },
		{ "tag-output", no_argument, nullptr, OptTagOutput },
		{ "timeout", required_argument, nullptr, OptTimeout },
		{ "keep-going", no_argument, nullptr, OptKeepGoing },
		{ "verbose", no_argument, nullptr, 'v' },
		{ "help", no_argument, nullptr, 'h' },
		{ "version", no_argument, nullptr, OptVersion },
		{ nullptr, 0, nullptr, 0 },
	};

	librma::LaunchOptions options;
	bool haveRanks = false;
	int opt;
	/* '+': stop at the program's name, so its own options stay its own. */
	while ((opt = getopt_long(argc, argv, "+n:vh", longOptions, nullptr)) != -1) {
		switch (opt) {
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
			if (!std::strcmp(optarg, "core"))
				options.bind = librma::Bind::Core;
			else if (!std::strcmp(optarg, "numa"))
				options.bind = librma::Bind::Numa;
			else if (!std::strcmp(optarg, "none"))
				options.bind = librma::Bind::None;
			else
				return usageError("--bind wants core, numa or none, not '%s'", optarg);
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
	if (!haveRanks)
		return usageError("the number of ranks (-n N) is required");
	if (optind >= argc)
		return usageError("no program to run");
	options.argv.assign(argv + optind, argv + argc);

	return librma::launch(options);
}
