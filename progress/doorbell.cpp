/* SPDX-License-Identifier: MIT */
#include "progress/doorbell.h"

#include <linux/futex.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include <cerrno>

namespace librma {

namespace {

/* Shared futexes (no FUTEX_PRIVATE_FLAG): the waiter and the waker may be different processes. */
long futex(std::atomic<uint32_t> *word, int op, uint32_t value, const timespec *timeout) noexcept
{
	return syscall(SYS_futex, reinterpret_cast<uint32_t *>(word), op, value, timeout, nullptr, 0);
}

} /* namespace */

void Doorbell::wake() noexcept
{
	uint32_t expected = kAsleep;
	/*
	 * P3, relaxed: the CAS only elects one waker among the producers that
	 * saw kAsleep; what the consumer must see (the work) was ordered by
	 * F2, and FUTEX_WAKE pairs with FUTEX_WAIT under the kernel's futex
	 * bucket lock, which orders our store before the waiter's re-read.
	 */
	if (!state.compare_exchange_strong(expected, kAwake, std::memory_order_relaxed))
		return;
	/* Relaxed: a statistic. */
	wakes.fetch_add(1, std::memory_order_relaxed);
	futex(&state, FUTEX_WAKE, 1, nullptr);
}

ParkResult Doorbell::sleep(int64_t timeoutNs) noexcept
{
	timespec ts;
	const timespec *timeout = nullptr;
	if (timeoutNs >= 0) {
		ts.tv_sec = static_cast<time_t>(timeoutNs / 1000000000);
		ts.tv_nsec = static_cast<long>(timeoutNs % 1000000000);
		timeout = &ts;
	}
	/* FUTEX_WAIT's timeout is relative (CLOCK_MONOTONIC). */
	if (futex(&state, FUTEX_WAIT, kAsleep, timeout) == 0)
		return ParkResult::Woken;
	/* EAGAIN: a producer flipped state before we slept; EINTR: a signal. */
	return errno == ETIMEDOUT ? ParkResult::TimedOut : ParkResult::Woken;
}

} /* namespace librma */
