/* SPDX-License-Identifier: MIT */
/*
 * Happens-before edges ThreadSanitizer cannot see.
 *
 * librma's ranks are processes that synchronize through atomics in shared
 * memory. ThreadSanitizer sees one process: when the chain from a write to
 * a read passes through another process, it sees neither end's partner.
 * The case that matters: this process's progress agent thread applies rank
 * 2's accumulate to rank 0's memory and publishes it with a release store
 * that rank 2 acquires; rank 2 then releases a barrier that rank 0's main
 * thread acquires, and rank 0 reads its memory. The C++ memory model orders
 * that read after the agent's write (the chain is real), but ThreadSanitizer
 * only sees an agent thread's write and a main thread's read in one process,
 * unordered, and reports a race.
 *
 * crossProcessEdge() states the hidden edges: every synchronization point
 * of a process (a collective, an epoch boundary, rma_win_sync) and every
 * record its progress agent applies (before and after) acquires and
 * releases one process-wide address, so ThreadSanitizer orders them as the
 * real chain does. That edge also orders the agent against the main thread
 * where nothing else does, which could hide a real race between the two
 * at those points only; everything else is still checked. Outside
 * ThreadSanitizer builds it compiles to nothing.
 *
 * Plain mode (win/accumulate.cpp) has its own hidden edges: an origin
 * atomic and a plain apply are ordered by a handshake that may pass through
 * another process (membarrier, a lease another rank ends). Each side names
 * the target's plainMode word with crossProcessAcquire/Release instead.
 */
#pragma once

#if defined(__SANITIZE_THREAD__)
#define RMA_TSAN 1
#elif defined(__has_feature)
#if __has_feature(thread_sanitizer)
#define RMA_TSAN 1
#endif
#endif

#ifdef RMA_TSAN
extern "C" void __tsan_acquire(void *addr);
extern "C" void __tsan_release(void *addr);
#endif

namespace librma {

/* ThreadSanitizer builds: everything this thread did so far happens before a later acquire of @addr here. */
inline void crossProcessRelease([[maybe_unused]] const void *addr)
{
#ifdef RMA_TSAN
	__tsan_release(const_cast<void *>(addr));
#endif
}

/* ThreadSanitizer builds: everything before earlier releases of @addr in this process happens before what follows. */
inline void crossProcessAcquire([[maybe_unused]] const void *addr)
{
#ifdef RMA_TSAN
	__tsan_acquire(const_cast<void *>(addr));
#endif
}

#ifdef RMA_TSAN
inline char tsanEdgeAddress;
#endif

/* Both, on the process-wide address every synchronization point uses. */
inline void crossProcessEdge()
{
#ifdef RMA_TSAN
	__tsan_acquire(&tsanEdgeAddress);
	__tsan_release(&tsanEdgeAddress);
#endif
}

} /* namespace librma */
