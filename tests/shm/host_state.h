/* SPDX-License-Identifier: MIT */
/* Reading what the host's memory looks like, to check what segments do to it. */
#pragma once

#include <sys/wait.h>
#include <unistd.h>

#include <cstdint>
#include <filesystem>
#include <fstream>
#include <set>
#include <string>

namespace librma::test {

/* A /proc/meminfo field, in its own unit (kB, or pages for HugePages_*); -1 if absent. */
inline long long meminfo(const std::string &key)
{
	std::ifstream in("/proc/meminfo");
	std::string name;
	long long value;
	std::string rest;
	while (in >> name >> value) {
		std::getline(in, rest);
		if (name == key + ":")
			return value;
	}
	return -1;
}

inline std::set<std::string> devShmEntries()
{
	std::set<std::string> names;
	std::error_code ignored;
	for (const auto &entry : std::filesystem::directory_iterator("/dev/shm", ignored))
		names.insert(entry.path().filename().string());
	return names;
}

/*
 * Run @body in a forked child and return its exit status, or 128 + signal
 * if it died of one (a SIGBUS shows up as 128 + 7).
 */
template <typename Body> int inChild(Body body)
{
	pid_t pid = fork();
	if (pid == 0)
		_exit(body());
	if (pid < 0)
		return -1;
	int status = 0;
	if (waitpid(pid, &status, 0) != pid)
		return -1;
	if (WIFSIGNALED(status))
		return 128 + WTERMSIG(status);
	return WEXITSTATUS(status);
}

} /* namespace librma::test */
