/* SPDX-License-Identifier: MIT */
/*
 * Doorbell: how producers wake a parked progress consumer, across processes.
 *
 * One Doorbell belongs to one consumer (a progress thread or the host's
 * agent) and lives in shared memory that every producer maps (the runtime
 * keeps one per world rank in a host-wide memfd segment; tests use a
 * MAP_SHARED mapping). Its 32-bit `state` word is a futex: the consumer
 * sleeps on it with FUTEX_WAIT and producers wake it with FUTEX_WAKE, both
 * without FUTEX_PRIVATE_FLAG, so the kernel keys the wait on the shared
 * page rather than on one process's address space.
 *
 * The handshake (the one store->load ordering in the design):
 *
 *   consumer, park()                    producer, after publishing work
 *   C1 state = Asleep                   P1 publish (e.g. the ring's seq store)
 *   F1 fence(seq_cst)                   F2 fence(seq_cst)     [ring()]
 *   C2 re-check: hasWork()?             P2 load state         [ring()]
 *   C3 FUTEX_WAIT(state, Asleep)        P3 if Asleep: state = Awake by CAS,
 *   C4 state = Awake                       and the CAS's winner FUTEX_WAKEs
 *
 * Without the fences both sides could read before their own store is
 * visible (a store buffer lets C2 pass C1 and P2 pass P1): the consumer
 * misses the work, the producer misses the sleeper, and the work waits for
 * the next producer or the safety timeout. With F1 and F2 one of them comes
 * first in the single order of seq_cst fences: if F1 does, P2 sees Asleep
 * (or a later Awake, stored after the consumer was already up again) and
 * the producer wakes it; if F2 does, C2 sees the work and the consumer does
 * not sleep. FUTEX_WAIT compares state with Asleep inside the kernel, so a
 * wake that lands between C2 and C3 (state already flipped to Awake) makes
 * C3 return at once instead of sleeping.
 *
 * Costs: a producer that finds the consumer awake pays one fence and one
 * load of a line the consumer writes only when it parks and unparks: no
 * system call and no store. Only the producer whose CAS flips Asleep to
 * Awake makes the FUTEX_WAKE call, so a burst of producers wakes a sleeper
 * once. wakes counts those calls (a statistic in shared memory).
 *
 * The memory is zero-initialised (a fresh segment): all zero is Awake with
 * no wakes counted, so no init call is needed.
 *
 * Thread safety: ring() is thread-safe and may be called from any process
 * that maps the doorbell. park() belongs to the doorbell's single consumer
 * (progress-thread only). Data path: ring() is noexcept and inline; its
 * slow path (the wake) is out of line and cold.
 */
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <type_traits>

#include "common/cache.h"

namespace librma {

/* Why park() returned. */
enum class ParkResult {
	/* The re-check found work: the consumer never slept. */
	Work,
	/* The futex wait ended: a wake, a wake that came first, or a signal. */
	Woken,
	/* The timeout passed without a wake. */
	TimedOut,
};

struct alignas(kFalseSharingPad) Doorbell {
	static constexpr uint32_t kAwake = 0;
	static constexpr uint32_t kAsleep = 1;

	/* The futex word: kAwake or kAsleep. Written by the consumer (C1, C4) and by a waking producer (P3). */
	std::atomic<uint32_t> state;
	uint32_t reserved;
	/* FUTEX_WAKE calls issued by ring() (a statistic; written by producers on the slow path only). */
	std::atomic<uint64_t> wakes;

	/*
	 * Producer: call after publishing work the consumer's hasWork() can
	 * see. Wakes the consumer if it is parked; otherwise costs one fence
	 * and one load (no system call). Thread-safe, any process.
	 */
	void ring() noexcept
	{
		/* F2: pairs with F1 in park(); orders our publish (P1) before the load of state (P2). */
		std::atomic_thread_fence(std::memory_order_seq_cst);
		/* Relaxed: F2 orders it; the wake itself goes through the kernel's futex lock. */
		if (state.load(std::memory_order_relaxed) == kAsleep) [[unlikely]]
			wake();
	}

	/*
	 * Consumer: sleep until a producer rings, unless @hasWork() finds work
	 * after the consumer has announced it sleeps. @timeoutNs < 0: no
	 * timeout. @hasWork must not call into this doorbell. Returns Work
	 * (found work, did not sleep), Woken or TimedOut; on every return the
	 * consumer is marked awake again. Progress-thread only.
	 */
	template<typename HasWork>
	ParkResult park(HasWork &&hasWork, int64_t timeoutNs) noexcept
	{
		/* C1, relaxed: F1 orders it before the re-check. */
		state.store(kAsleep, std::memory_order_relaxed);
		/* F1: pairs with F2 in ring(); orders C1 before the re-check C2. */
		std::atomic_thread_fence(std::memory_order_seq_cst);
		if (hasWork()) {
			/* C4 (early), relaxed: producers only compare it with kAsleep. */
			state.store(kAwake, std::memory_order_relaxed);
			return ParkResult::Work;
		}
		ParkResult result = sleep(timeoutNs);
		/*
		 * C4, relaxed: a producer that still reads kAsleep just makes one
		 * wake call too many; the next park() stores kAsleep afresh.
		 */
		state.store(kAwake, std::memory_order_relaxed);
		return result;
	}

	/* Whether the consumer has announced it sleeps (tests and statistics). */
	bool asleep() const noexcept { return state.load(std::memory_order_relaxed) == kAsleep; }
	/* FUTEX_WAKE calls issued so far by every producer. */
	uint64_t wakesIssued() const noexcept { return wakes.load(std::memory_order_relaxed); }

	/* ring()'s slow path: flip Asleep to Awake, and the winner wakes the consumer. */
	[[gnu::cold, gnu::noinline]] void wake() noexcept;

private:
	/* C3: FUTEX_WAIT on state while it is kAsleep, for at most @timeoutNs (< 0: forever). */
	ParkResult sleep(int64_t timeoutNs) noexcept;
};

/* The segment ABI: one doorbell per 128-byte pad, state at offset 0. */
static_assert(sizeof(Doorbell) == kFalseSharingPad);
static_assert(alignof(Doorbell) == kFalseSharingPad);
static_assert(offsetof(Doorbell, state) == 0);
static_assert(offsetof(Doorbell, wakes) == 8);
static_assert(std::is_standard_layout_v<Doorbell>);
static_assert(std::atomic<uint32_t>::is_always_lock_free);
static_assert(std::atomic<uint64_t>::is_always_lock_free);
/* The futex syscall reads state as a plain aligned 32-bit word. */
static_assert(sizeof(std::atomic<uint32_t>) == sizeof(uint32_t));
static_assert(alignof(std::atomic<uint32_t>) == alignof(uint32_t));

} /* namespace librma */
