/* SPDX-License-Identifier: MIT */
#include "support/multiproc.h"

#include <fcntl.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <thread>

#include <gtest/gtest.h>

namespace librma::test {

namespace {

/* Whether a GoogleTest assertion failed since the result had @since parts. */
bool failedSince(const testing::TestResult &result, int since)
{
	for (int i = since; i < result.total_part_count(); ++i) {
		if (result.GetTestPartResult(i).failed())
			return true;
	}
	return false;
}

} /* namespace */

int runRanks(int n, std::function<void(int rank)> body, RanksOptions opts)
{
	LaunchOptions options;
	options.nranks = n;
	options.bind = opts.bind;
	options.tagOutput = opts.tagOutput;
	options.killGraceSeconds = opts.killGraceSeconds;
	options.timeoutSeconds = opts.timeoutSeconds;
	options.topology = opts.topology;
	options.verbose = opts.verbose;
	options.keepGoing = opts.keepGoing;
	options.childMain = [&body](int rank) {
		/*
		 * The rank is a fork of the test: failures the test had before
		 * are in its result too, so only count the ones made by @body.
		 */
		const testing::TestInfo *info = testing::UnitTest::GetInstance()->current_test_info();
		if (!info) {
			body(rank);
			return testing::Test::HasFailure() ? 1 : 0;
		}
		int before = info->result()->total_part_count();
		body(rank);
		return failedSince(*info->result(), before) ? 1 : 0;
	};
	return launch(options);
}

ScratchDir::ScratchDir()
{
	const char *tmp = std::getenv("TMPDIR");
	std::string pattern = std::string(tmp && *tmp ? tmp : "/tmp") + "/librma-test-XXXXXX";
	if (mkdtemp(pattern.data()))
		path_ = pattern;
	else
		ADD_FAILURE() << "mkdtemp(" << pattern << ") failed";
}

ScratchDir::~ScratchDir()
{
	if (!path_.empty()) {
		std::error_code ec;
		std::filesystem::remove_all(path_, ec);
	}
}

std::string readFile(const std::string &path)
{
	std::ifstream in(path, std::ios::binary);
	std::ostringstream text;
	text << in.rdbuf();
	return text.str();
}

std::string inPath(const std::string &program)
{
	const char *path = std::getenv("PATH");
	std::string dirs = path ? path : "/usr/bin:/bin";
	std::size_t start = 0;
	while (start <= dirs.size()) {
		std::size_t end = dirs.find(':', start);
		std::string dir = dirs.substr(start, end == std::string::npos ? std::string::npos : end - start);
		std::string candidate = (dir.empty() ? "." : dir) + "/" + program;
		if (access(candidate.c_str(), X_OK) == 0)
			return candidate;
		if (end == std::string::npos)
			break;
		start = end + 1;
	}
	return "";
}

int exitStatus(int waitStatus)
{
	if (WIFEXITED(waitStatus))
		return WEXITSTATUS(waitStatus);
	if (WIFSIGNALED(waitStatus))
		return 128 + WTERMSIG(waitStatus);
	return -1;
}

CommandResult runCommand(const std::vector<std::string> &argv, double timeoutSeconds)
{
	CommandResult result;
	ScratchDir dir;
	std::string outPath = dir.file("stdout"), errPath = dir.file("stderr");

	std::vector<char *> args;
	for (const std::string &arg : argv)
		args.push_back(const_cast<char *>(arg.c_str()));
	args.push_back(nullptr);

	std::fflush(nullptr);
	pid_t pid = fork();
	if (pid < 0)
		return result;
	if (pid == 0) {
		int out = open(outPath.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0600);
		int err = open(errPath.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0600);
		if (out < 0 || err < 0 || dup2(out, STDOUT_FILENO) < 0 || dup2(err, STDERR_FILENO) < 0)
			_exit(126);
		execvp(args[0], args.data());
		_exit(127);
	}

	auto deadline = std::chrono::steady_clock::now() + std::chrono::duration<double>(timeoutSeconds);
	int status = 0;
	for (;;) {
		pid_t rc = waitpid(pid, &status, WNOHANG);
		if (rc == pid)
			break;
		if (rc < 0 && errno != EINTR)
			return result;
		if (std::chrono::steady_clock::now() > deadline) {
			ADD_FAILURE() << argv[0] << " ran for more than " << timeoutSeconds << " s; killed";
			kill(pid, SIGKILL);
			waitpid(pid, &status, 0);
			break;
		}
		std::this_thread::sleep_for(std::chrono::milliseconds(5));
	}
	result.status = exitStatus(status);
	result.out = readFile(outPath);
	result.err = readFile(errPath);
	return result;
}

CapturedStdio captureStdio(const std::function<void()> &fn)
{
	CapturedStdio captured;
	ScratchDir dir;
	std::string paths[2] = { dir.file("stdout"), dir.file("stderr") };
	int saved[2];

	std::fflush(nullptr);
	for (int stream = 0; stream < 2; ++stream) {
		saved[stream] = dup(STDOUT_FILENO + stream);
		int fd = open(paths[stream].c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0600);
		dup2(fd, STDOUT_FILENO + stream);
		close(fd);
	}
	fn();
	std::fflush(nullptr);
	for (int stream = 0; stream < 2; ++stream) {
		dup2(saved[stream], STDOUT_FILENO + stream);
		close(saved[stream]);
	}
	captured.out = readFile(paths[0]);
	captured.err = readFile(paths[1]);
	return captured;
}

int svgElements(const std::string &path, const char *tag, std::string &err)
{
	if (readFile(path).empty()) {
		err = path + " is missing or empty";
		return -1;
	}
	CommandResult r = runCommand({ "python3", "-c",
				       "import sys, xml.dom.minidom as m\n"
				       "d = m.parse(sys.argv[1])\n"
				       "assert d.documentElement.tagName == 'svg'\n"
				       "print(len(d.getElementsByTagName(sys.argv[2])))\n",
				       path, tag },
				     30);
	if (r.status != 0) {
		err = r.err;
		return -1;
	}
	return std::atoi(r.out.c_str());
}

} /* namespace librma::test */
