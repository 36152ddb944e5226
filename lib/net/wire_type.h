/* SPDX-License-Identifier: MIT */
/*
 * WireType: a flattened datatype as it crosses the wire (docs/design/
 * inter-host.md §5.1), and the checks a receiver makes before it lets one
 * near window memory (§5.2 step 4 and the footprint of step 5).
 *
 * Layout on the wire, little-endian, no padding:
 *
 *   WireType (24 B)  basic u32 | nruns u32 | size u64 | extent i64
 *   WireRun  (32 B)  offset i64 | length u64 | repeat u64 | stride i64
 *
 * One count of the type is the runs in order; run j is @repeat blocks of
 * @length bytes, block i at @offset + i * @stride from the start of the
 * count. Count k starts @extent * k bytes after count 0. @size is the data
 * bytes of one count: the sum of length * repeat over the runs. nruns = 0
 * means "contiguous": one implicit run {0, size, 1, 0}.
 *
 * Validation is pure arithmetic with every product and sum checked for
 * overflow: any 24 + 32·n input gives a clear WireTypeError, never UB.
 *
 * Thread safety: every function is thread-safe and reentrant (no state);
 * noexcept, no allocation, no system call.
 */
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>

namespace librma::net {

/* The most runs one WireType may carry (§5.2 step 4). */
inline constexpr uint32_t kMaxRuns = 4096;
inline constexpr std::size_t kWireTypeBytes = 24;
inline constexpr std::size_t kWireRunBytes = 32;

struct WireType {
	uint32_t basic = 0; /* element index (op.h) for the accumulate family; BYTE (4) or any element for put/get */
	uint32_t nruns = 0; /* <= kMaxRuns; 0: contiguous */
	uint64_t size = 0;  /* data bytes per count */
	int64_t extent = 0; /* bytes from one count to the next */
};

struct WireRun {
	int64_t offset = 0;
	uint64_t length = 0; /* bytes per block, >= 1 */
	uint64_t repeat = 0; /* blocks, >= 1 */
	int64_t stride = 0;  /* any sign; ignored when repeat == 1 */
};

/* Why a wire type was refused. */
enum class WireTypeError : uint8_t {
	None = 0,
	TooManyRuns,   /* nruns > kMaxRuns */
	Truncated,     /* fewer than 24 + 32·nruns bytes */
	EmptyRun,      /* a run with length 0 or repeat 0 */
	Overflow,      /* an offset, end or sum does not fit in 64 bits */
	SizeMismatch,  /* sum of length·repeat != size */
	ZeroSize,      /* size 0 (a type with no data cannot be counted) */
};

/* A short text for @e ("the runs' bytes do not add up to the type's size"). */
const char *wireTypeErrorText(WireTypeError e) noexcept;

/* The bytes one count of a type touches, relative to its start: [lo, hi). */
struct TypeSpan {
	int64_t lo = 0;
	int64_t hi = 0;
};

/* ---- Encoding (little-endian, unaligned) ---------------------------------- */

void encodeWireType(const WireType &t, uint8_t *out) noexcept;	  /* writes 24 bytes */
WireType decodeWireType(const uint8_t *in) noexcept;		  /* reads 24 bytes */
void encodeWireRun(const WireRun &r, uint8_t *out) noexcept;	  /* writes 32 bytes */
WireRun decodeWireRun(const uint8_t *in) noexcept;		  /* reads 32 bytes */

/*
 * Check a type and its encoded runs (@runs: exactly 32·t.nruns bytes, or
 * more: the rest is ignored) and compute the span one count touches.
 * Returns WireTypeError::None and sets @span, or the first error found
 * (@span untouched). Never reads past @runs.
 */
WireTypeError checkWireType(const WireType &t, std::span<const uint8_t> runs, TypeSpan &span) noexcept;

/*
 * The footprint of @count counts of a type whose one-count span is @one,
 * starting at @disp: [lo, hi), with lo <= hi. @count 0 gives the empty
 * footprint [disp, disp). Returns false (outputs untouched) if any bound
 * overflows int64.
 */
bool footprint(TypeSpan one, int64_t extent, int64_t disp, uint64_t count, TypeSpan &out) noexcept;

} /* namespace librma::net */
