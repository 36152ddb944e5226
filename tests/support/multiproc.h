/* SPDX-License-Identifier: MIT */
/*
 * Helpers for tests that run real processes: ranks of a job forked by the
 * launcher (runRanks), commands run to completion (runCommand), captured
 * stdio, and a scratch directory.
 *
 * None of these is thread-safe: call them from the test's main thread.
 */
#pragma once

#include <sys/mman.h>

#include <chrono>
#include <cstddef>
#include <functional>
#include <string>
#include <thread>
#include <vector>

#include "bootstrap/launcher.h"

namespace librma::test {

struct RanksOptions {
	/* Whole-job time limit: a hung rank fails the job (status 124). */
	double timeoutSeconds = 60;
	/* Tests oversubscribe the host, so ranks are not pinned by default. */
	Bind bind = Bind::None;
	bool tagOutput = false;
	double killGraceSeconds = 2.0;
	/* Topology for Bind::Numa (nullptr: the host's). */
	const Topology *topology = nullptr;
	bool verbose = false;
	/* A failed rank does not stop the others (LaunchOptions::keepGoing). */
	bool keepGoing = false;
};

/*
 * Run @body(rank) in each of @n forked ranks of a job (launch() with a
 * childMain: each rank has the bootstrap environment, so
 * Bootstrap::fromEnvironment() joins the job). A rank exits 1 if a
 * GoogleTest assertion failed in it during @body (the failure is printed
 * in the rank's output), else 0.
 *
 * Returns the job's status (see launch()): 0 when every rank passed.
 * Typical use:  EXPECT_EQ(runRanks(4, [](int rank) { ... }), 0);
 */
int runRanks(int n, std::function<void(int rank)> body, RanksOptions opts = {});

/* A fresh directory under $TMPDIR (or /tmp), removed with its contents. */
class ScratchDir
{
public:
	ScratchDir();
	~ScratchDir();
	ScratchDir(const ScratchDir &) = delete;
	ScratchDir &operator=(const ScratchDir &) = delete;

	const std::string &path() const { return path_; }
	/* path()/@name */
	std::string file(const std::string &name) const { return path_ + "/" + name; }

private:
	std::string path_;
};

/* A file's whole content ("" if it cannot be read). */
std::string readFile(const std::string &path);

/* The full path of @program found in PATH (as execvp would), or "" when it is not there. */
std::string inPath(const std::string &program);

struct CommandResult {
	/* Exit status; 128 + signal if killed; -1 if it could not be run. */
	int status = -1;
	std::string out;
	std::string err;
};

/*
 * Run @argv (PATH is searched) to completion with stdout and stderr
 * captured; the command is killed with SIGKILL after @timeoutSeconds.
 */
CommandResult runCommand(const std::vector<std::string> &argv, double timeoutSeconds = 30);

/*
 * How many <@tag> elements the SVG file @path holds, parsed as XML (by
 * python3's minidom); -1 if it is missing, does not parse or is not an
 * <svg> (then @err says why).
 */
int svgElements(const std::string &path, const char *tag, std::string &err);

struct CapturedStdio {
	std::string out;
	std::string err;
};

/* Run @fn with this process's stdout and stderr (fds 1 and 2) captured. */
CapturedStdio captureStdio(const std::function<void()> &fn);

/* Status as the launcher reports it: exit code, or 128 + signal. */
int exitStatus(int waitStatus);

/* A MAP_SHARED | MAP_ANONYMOUS mapping (zero-filled): forked children share it. */
class SharedMemory
{
public:
	explicit SharedMemory(std::size_t bytes) : bytes_(bytes)
	{
		void *p = mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
		data_ = p == MAP_FAILED ? nullptr : p;
	}
	~SharedMemory()
	{
		if (data_)
			munmap(data_, bytes_);
	}
	SharedMemory(const SharedMemory &) = delete;
	SharedMemory &operator=(const SharedMemory &) = delete;
	/* nullptr if the mapping failed. */
	void *data() const { return data_; }

private:
	void *data_ = nullptr;
	std::size_t bytes_;
};

/* Poll @pred every 100 us until it holds or @timeout passes; false on timeout. */
template<typename Pred>
bool waitFor(Pred &&pred, std::chrono::steady_clock::duration timeout)
{
	auto deadline = std::chrono::steady_clock::now() + timeout;
	while (!pred()) {
		if (std::chrono::steady_clock::now() > deadline)
			return false;
		std::this_thread::sleep_for(std::chrono::microseconds(100));
	}
	return true;
}

} /* namespace librma::test */

/*
 * EXPECT_RANKS_PASS(runRanks(...)): the job passed. (EXPECT_EQ on the call
 * itself would print the whole lambda when it fails.)
 */
#define EXPECT_RANKS_PASS(job)                                                            \
	do {                                                                              \
		int rma_ranks_status_ = (job);                                            \
		EXPECT_EQ(rma_ranks_status_, 0) << "a rank failed: its output is above";  \
	} while (0)
