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
 * polls we yield the core on every further poll.
 */
#pragma once

#include <sched.h>

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
		} else if (count_ < kSpins) {
			++count_;
			cpuRelax();
		} else {
			++count_;
			sched_yield();
		}
	}

	/* Number of polls so far (lets callers check for failures now and then). */
	unsigned count() const { return count_; }

private:
	unsigned count_ = 0;
};

} /* namespace librma */
