/* SPDX-License-Identifier: MIT */
/*
 * Waiting for another process to change a shared-memory word.
 *
 * A cache line moves between cores in tens of nanoseconds, a futex wake-up
 * costs tens of microseconds: so we spin first. The first kTightPolls polls
 * do not even pause: PAUSE costs ~140 cycles on recent Xeons, longer than
 * the cache-line transfer we are waiting for. When ranks outnumber cores
 * (tests oversubscribe, 2-core hosts share a core with the progress agent)
 * spinning would starve the very process we wait for, so after kSpins
 * polls we yield the core on every further poll; and once the runtime has
 * seen that this host's ranks outnumber its CPUs (setOversubscribed()),
 * right after the tight polls: a pause loop then only burns the time
 * slice the awaited process needs.
 */
#pragma once

#include <sched.h>

#include <atomic>

#include "common/cache.h"

namespace librma {

class SpinWait
{
public:
	static constexpr unsigned kTightPolls = 256;
	static constexpr unsigned kSpins = 4096;

	SpinWait() = default;
	SpinWait(const SpinWait &) = delete;
	SpinWait &operator=(const SpinWait &) = delete;
	~SpinWait()
	{
		if (yielding_)
			/* Relaxed: a hint (see yieldingHere()). */
			yieldingWaits().fetch_sub(1, std::memory_order_relaxed);
	}

	/* One unit of waiting: nothing at first, then a pause, then a yield. */
	void once()
	{
		if (count_ < kTightPolls) {
			++count_;
			asm volatile("" ::: "memory");
		} else if (count_ < spinLimit().load(std::memory_order_relaxed)) {
			++count_;
			cpuRelax();
		} else {
			++count_;
			if (!yielding_) {
				yielding_ = true;
				/* Relaxed: a hint (see yieldingHere()). */
				yieldingWaits().fetch_add(1, std::memory_order_relaxed);
			}
			sched_yield();
		}
	}

	/*
	 * Whether a thread of this process is in a wait that yields its CPU
	 * now. A helper thread that polls (the inter-host server) may yield to
	 * such a waiter, which gives the CPU back soon; yielding to a rank that
	 * computes instead would cost it a whole time slice. Relaxed: a hint.
	 */
	static bool yieldingHere() { return yieldingWaits().load(std::memory_order_relaxed) != 0; }

	/*
	 * More runnable ranks (and agents) than CPUs on this host: yield after
	 * the tight polls. Set once at initialization; relaxed (a hint, read
	 * by every waiter, never ordering anything).
	 */
	static void setOversubscribed(bool yes)
	{
		spinLimit().store(yes ? kTightPolls : kSpins, std::memory_order_relaxed);
	}
	static bool oversubscribed() { return spinLimit().load(std::memory_order_relaxed) == kTightPolls; }

	/* Number of polls so far (lets callers check for failures now and then). */
	unsigned count() const { return count_; }

private:
	static std::atomic<unsigned> &spinLimit()
	{
		static std::atomic<unsigned> limit{ kSpins };
		return limit;
	}
	static std::atomic<int> &yieldingWaits()
	{
		static std::atomic<int> waits{ 0 };
		return waits;
	}
	unsigned count_ = 0;
	bool yielding_ = false;
};

} /* namespace librma */
