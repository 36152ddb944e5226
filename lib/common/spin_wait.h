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
			sched_yield();
		}
	}

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
	unsigned count_ = 0;
};

} /* namespace librma */
