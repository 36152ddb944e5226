/* SPDX-License-Identifier: MIT */
/*
 * Bulk copies for put/get and datatype transfers.
 *
 * glibc's memcpy switches to non-temporal stores past a threshold derived
 * from the cache sizes (several MiB on current x86 hosts). For RMA that is
 * the wrong choice twice over: the target usually reads what was put soon
 * (non-temporal stores push it out to memory), and on the virtualised hosts
 * we measure the non-temporal path is slower even when the data does not
 * fit in cache. Copies in 256 KiB pieces stay on the cached path. Measured
 * on this project's 2-core EPYC host (median of 31 runs, 1 MiB to 64 MiB):
 * 1 MiB 17.7 -> 15.2 us, 16 MiB 796 -> 455 us, 64 MiB 7.2 -> 3.0 ms; 256 KiB
 * and less unchanged (bench/put_get_bench.cpp: BM_PiecewiseMemcpy against BM_RawMemcpy).
 */
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstring>

namespace librma {

/* Copies at least this long go in pieces. */
inline constexpr std::size_t kPieceCopyMin = 512u << 10;
/* The piece: well under glibc's non-temporal threshold, and a quarter of a 1 MiB L2. */
inline constexpr std::size_t kCopyPiece = 256u << 10;

/* copyBytes()'s large case, out of line. */
[[gnu::noinline]] inline void copyPieces(void *dst, const void *src, std::size_t n)
{
	auto *d = static_cast<std::byte *>(dst);
	const auto *s = static_cast<const std::byte *>(src);
	for (std::size_t done = 0; done < n; done += kCopyPiece)
		std::memcpy(d + done, s + done, std::min(kCopyPiece, n - done));
}

/*
 * memcpy(@dst, @src, @n), in kCopyPiece pieces when @n >= kPieceCopyMin.
 * The ranges must not overlap. Always inline with the loop out of line:
 * left to GCC's size budget, the put/get fast paths (Window::accessFast)
 * lose the inlining, and a call frame, to the smallest change around them.
 */
[[gnu::always_inline]] inline void copyBytes(void *dst, const void *src, std::size_t n)
{
	/*
	 * Up to 16 bytes (the 8-byte put/get of the latency benchmarks, one
	 * element of any predefined type): two possibly overlapping loads and
	 * stores of the widest size that fits, instead of a call through the
	 * PLT into memcpy (about 15 instructions and a call frame saved).
	 */
	if (n <= 16) [[likely]] {
		auto *d = static_cast<std::byte *>(dst);
		const auto *s = static_cast<const std::byte *>(src);
		if (n >= 8) {
			uint64_t a, b;
			std::memcpy(&a, s, 8);
			std::memcpy(&b, s + n - 8, 8);
			std::memcpy(d, &a, 8);
			std::memcpy(d + n - 8, &b, 8);
		} else if (n >= 4) {
			uint32_t a, b;
			std::memcpy(&a, s, 4);
			std::memcpy(&b, s + n - 4, 4);
			std::memcpy(d, &a, 4);
			std::memcpy(d + n - 4, &b, 4);
		} else if (n > 0) {
			/* 1 to 3 bytes: first, middle and last cover them all. */
			const std::byte first = s[0], middle = s[n / 2], last = s[n - 1];
			d[0] = first;
			d[n / 2] = middle;
			d[n - 1] = last;
		}
		return;
	}
	if (n < kPieceCopyMin) [[likely]] {
		std::memcpy(dst, src, n);
		return;
	}
	copyPieces(dst, src, n);
}

} /* namespace librma */
