/* SPDX-License-Identifier: MIT */
#include "net/wire_type.h"

#include <limits>

#include "net/le.h"

namespace librma::net {

namespace {

/* a * b as int64, false on overflow. */
bool mul(int64_t a, int64_t b, int64_t &out) noexcept { return !__builtin_mul_overflow(a, b, &out); }
bool add(int64_t a, int64_t b, int64_t &out) noexcept { return !__builtin_add_overflow(a, b, &out); }

constexpr uint64_t kInt64Max = static_cast<uint64_t>(std::numeric_limits<int64_t>::max());

/* The span of @repeat blocks of @length at @offset + i * @stride. */
bool runSpan(const WireRun &r, TypeSpan &out) noexcept
{
	if (r.length > kInt64Max || r.repeat > kInt64Max)
		return false;
	int64_t last = 0; /* (repeat - 1) * stride */
	if (!mul(static_cast<int64_t>(r.repeat - 1), r.repeat > 1 ? r.stride : 0, last))
		return false;
	int64_t lo, hi;
	if (!add(r.offset, last < 0 ? last : 0, lo))
		return false;
	if (!add(r.offset, last > 0 ? last : 0, hi) || !add(hi, static_cast<int64_t>(r.length), hi))
		return false;
	out = { lo, hi };
	return true;
}

} /* namespace */

const char *wireTypeErrorText(WireTypeError e) noexcept
{
	switch (e) {
	case WireTypeError::None:
		return "no error";
	case WireTypeError::TooManyRuns:
		return "the type has more runs than a frame may carry";
	case WireTypeError::Truncated:
		return "the frame ends inside the type's runs";
	case WireTypeError::EmptyRun:
		return "a run has no bytes (length or repeat 0)";
	case WireTypeError::Overflow:
		return "an offset, end or size of the type overflows 64 bits";
	case WireTypeError::SizeMismatch:
		return "the runs' bytes do not add up to the type's size";
	case WireTypeError::ZeroSize:
		return "the type has no data (size 0)";
	}
	return "unknown wire type error";
}

void encodeWireType(const WireType &t, uint8_t *out) noexcept
{
	le::store<uint32_t>(out, t.basic);
	le::store<uint32_t>(out + 4, t.nruns);
	le::store<uint64_t>(out + 8, t.size);
	le::store<int64_t>(out + 16, t.extent);
}

WireType decodeWireType(const uint8_t *in) noexcept
{
	WireType t;
	t.basic = le::load<uint32_t>(in);
	t.nruns = le::load<uint32_t>(in + 4);
	t.size = le::load<uint64_t>(in + 8);
	t.extent = le::load<int64_t>(in + 16);
	return t;
}

void encodeWireRun(const WireRun &r, uint8_t *out) noexcept
{
	le::store<int64_t>(out, r.offset);
	le::store<uint64_t>(out + 8, r.length);
	le::store<uint64_t>(out + 16, r.repeat);
	le::store<int64_t>(out + 24, r.stride);
}

WireRun decodeWireRun(const uint8_t *in) noexcept
{
	WireRun r;
	r.offset = le::load<int64_t>(in);
	r.length = le::load<uint64_t>(in + 8);
	r.repeat = le::load<uint64_t>(in + 16);
	r.stride = le::load<int64_t>(in + 24);
	return r;
}

WireTypeError checkWireType(const WireType &t, std::span<const uint8_t> runs, TypeSpan &span) noexcept
{
	if (t.nruns > kMaxRuns)
		return WireTypeError::TooManyRuns;
	if (runs.size() / kWireRunBytes < t.nruns)
		return WireTypeError::Truncated;
	if (t.size == 0)
		return WireTypeError::ZeroSize;
	if (t.size > kInt64Max)
		return WireTypeError::Overflow;
	if (t.nruns == 0) {
		span = { 0, static_cast<int64_t>(t.size) };
		return WireTypeError::None;
	}
	TypeSpan all{ std::numeric_limits<int64_t>::max(), std::numeric_limits<int64_t>::min() };
	uint64_t total = 0;
	for (uint32_t j = 0; j < t.nruns; ++j) {
		WireRun r = decodeWireRun(runs.data() + std::size_t{ j } * kWireRunBytes);
		if (r.length == 0 || r.repeat == 0)
			return WireTypeError::EmptyRun;
		TypeSpan s;
		uint64_t bytes;
		if (!runSpan(r, s) || __builtin_mul_overflow(r.length, r.repeat, &bytes) ||
		    __builtin_add_overflow(total, bytes, &total))
			return WireTypeError::Overflow;
		all.lo = s.lo < all.lo ? s.lo : all.lo;
		all.hi = s.hi > all.hi ? s.hi : all.hi;
	}
	if (total != t.size)
		return WireTypeError::SizeMismatch;
	span = all;
	return WireTypeError::None;
}

bool footprint(TypeSpan one, int64_t extent, int64_t disp, uint64_t count, TypeSpan &out) noexcept
{
	if (count == 0) {
		out = { disp, disp };
		return true;
	}
	if (count - 1 > kInt64Max)
		return false;
	int64_t last; /* (count - 1) * extent */
	if (!mul(static_cast<int64_t>(count - 1), extent, last))
		return false;
	int64_t lo, hi;
	if (!add(disp, one.lo, lo) || !add(lo, last < 0 ? last : 0, lo))
		return false;
	if (!add(disp, one.hi, hi) || !add(hi, last > 0 ? last : 0, hi))
		return false;
	out = { lo, hi };
	return true;
}

} /* namespace librma::net */
