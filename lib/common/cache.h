/* SPDX-License-Identifier: MIT */
#pragma once

#include <cstddef>

namespace librma {

/* A cache line on the hosts we target. */
inline constexpr std::size_t kCacheLine = 64;
/*
 * Padding between words written by different processes: two lines, because
 * the adjacent-line prefetcher pulls lines in pairs.
 */
inline constexpr std::size_t kFalseSharingPad = 128;

/* Tell the CPU we are spinning (PAUSE on x86). */
inline void cpuRelax()
{
#if defined(__x86_64__) || defined(__i386__)
	__builtin_ia32_pause();
#elif defined(__aarch64__)
	asm volatile("yield" ::: "memory");
#endif
}

} /* namespace librma */
