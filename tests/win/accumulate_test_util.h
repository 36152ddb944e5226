/* SPDX-License-Identifier: MIT */
/*
 * Helpers shared by the accumulate suites: the engine's test knobs
 * (RMA_ACC_PATH, RMA_PROGRESS) set around a job, the synchronization modes
 * an epoch can be opened in, and shared flags ranks poll without librma.
 */
#pragma once

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <cstdint>
#include <cstdlib>
#include <optional>
#include <string>
#include <thread>

#include <rma/rma.h>

#include "win/window_test_util.h"

namespace rmatest {

/* Who applies an accumulate (RMA_ACC_PATH, read at rma_init). */
enum class AccPath { Auto, Origin, Ring };
/* Who drains the rings (RMA_PROGRESS, read at rma_init). */
enum class Progress { Default, None, Thread, Agent };

inline const char *accPathName(AccPath p)
{
	switch (p) {
	case AccPath::Auto: return "auto";
	case AccPath::Origin: return "origin";
	case AccPath::Ring: return "ring";
	}
	return "?";
}

inline const char *progressName(Progress p)
{
	switch (p) {
	case Progress::Default: return "default";
	case Progress::None: return "none";
	case Progress::Thread: return "thread";
	case Progress::Agent: return "agent";
	}
	return "?";
}

/*
 * Sets an environment variable for the life of the object (the forked
 * ranks of runRanks inherit it), then restores the previous value.
 * A null @value leaves the variable unset.
 */
class ScopedEnv
{
public:
	ScopedEnv(const char *name, const char *value) : name_(name)
	{
		if (const char *old = std::getenv(name))
			old_ = old;
		if (value)
			setenv(name, value, 1);
		else
			unsetenv(name);
	}
	~ScopedEnv()
	{
		if (old_)
			setenv(name_.c_str(), old_->c_str(), 1);
		else
			unsetenv(name_.c_str());
	}
	ScopedEnv(const ScopedEnv &) = delete;
	ScopedEnv &operator=(const ScopedEnv &) = delete;

private:
	std::string name_;
	std::optional<std::string> old_;
};

/* Both knobs for one job. */
struct AccKnobs {
	AccKnobs(AccPath path, Progress progress = Progress::Default)
		: path_("RMA_ACC_PATH", accPathName(path)),
		  progress_("RMA_PROGRESS", progress == Progress::Default ? nullptr : progressName(progress))
	{
	}
	ScopedEnv path_;
	ScopedEnv progress_;
};

/* A 64-bit mix of the arguments (splitmix64 finaliser over a running state). */
inline uint64_t mix(std::initializer_list<uint64_t> parts)
{
	uint64_t h = 0x9e3779b97f4a7c15ull;
	for (uint64_t p : parts) {
		h ^= p + 0x9e3779b97f4a7c15ull + (h << 6) + (h >> 2);
		uint64_t z = h;
		z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
		z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
		h = z ^ (z >> 31);
	}
	return h;
}

} /* namespace rmatest */
