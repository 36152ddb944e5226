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

inline int worldRank()
{
	int r = -1;
	rma_comm_rank(RMA_COMM_WORLD, &r);
	return r;
}

inline int worldSize()
{
	int s = 0;
	rma_comm_size(RMA_COMM_WORLD, &s);
	return s;
}

/* The group of world ranks @a and @b (once if equal). */
inline rma_group pairGroup(int a, int b)
{
	rma_group world, g;
	rma_comm_group(RMA_COMM_WORLD, &world);
	int ranks[2] = { a, b };
	rma_group_incl(world, a == b ? 1 : 2, ranks, &g);
	rma_group_free(&world);
	return g;
}

/* Words every rank loads and stores directly (allocate_shared memory of rank 0); collective. */
class SharedWords
{
public:
	explicit SharedWords(int words = 64)
	{
		int64_t *mine = nullptr;
		EXPECT_EQ(rma_win_allocate_shared(worldRank() == 0 ? words * sizeof(int64_t) : 0, 1, RMA_INFO_NULL,
						  RMA_COMM_WORLD, &mine, &win_),
			  RMA_SUCCESS);
		rma_aint size;
		int unit;
		EXPECT_EQ(rma_win_shared_query(win_, 0, &size, &unit, &base_), RMA_SUCCESS);
		rma_barrier(RMA_COMM_WORLD);
	}
	/* Collective, like any window free. */
	~SharedWords()
	{
		int finalized = 0;
		rma_finalized(&finalized);
		if (!finalized)
			rma_win_free(&win_);
	}
	SharedWords(const SharedWords &) = delete;
	SharedWords &operator=(const SharedWords &) = delete;

	std::atomic_ref<int64_t> at(int i) { return std::atomic_ref<int64_t>(base_[i]); }

private:
	rma_win win_ = RMA_WIN_NULL;
	int64_t *base_ = nullptr;
};

/* Spin until @pred or @seconds pass; false on timeout. */
template<typename Pred>
bool eventually(Pred pred, double seconds = 10)
{
	auto end = std::chrono::steady_clock::now() + std::chrono::duration<double>(seconds);
	while (!pred()) {
		if (std::chrono::steady_clock::now() > end)
			return false;
		std::this_thread::yield();
	}
	return true;
}

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
