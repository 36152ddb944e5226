/* SPDX-License-Identifier: MIT */
/*
 * A naive reference for type maps, written from MPI's definitions and
 * independent of the engine: every type is expanded into its full list of
 * (basic type, displacement) entries with its lb and ub. The tests and the
 * fuzz target compare the engine's summaries, flattened blocks, copies and
 * checks against it.
 *
 * Header-only and free of librma internals, so that the fuzz target can be
 * built with another compiler.
 */
#pragma once

#include <complex.h>
#include <stddef.h>
#include <wchar.h>

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <set>
#include <utility>
#include <vector>

namespace rmatest {

/* Size and alignment of the basic type behind predefined handle index @i (1..32). */
struct RefBasic {
	int64_t size;
	int64_t align;
};

inline RefBasic refBasic(int i)
{
	static const RefBasic kTable[] = {
		{ 0, 1 },
#define RMA_REF_(t) { sizeof(t), alignof(t) }
		RMA_REF_(char), RMA_REF_(signed char), RMA_REF_(unsigned char), RMA_REF_(unsigned char),
		RMA_REF_(short), RMA_REF_(unsigned short), RMA_REF_(int), RMA_REF_(unsigned), RMA_REF_(long),
		RMA_REF_(unsigned long), RMA_REF_(long long), RMA_REF_(unsigned long long), RMA_REF_(float),
		RMA_REF_(double), RMA_REF_(long double), RMA_REF_(wchar_t), RMA_REF_(bool), RMA_REF_(int8_t),
		RMA_REF_(int16_t), RMA_REF_(int32_t), RMA_REF_(int64_t), RMA_REF_(uint8_t), RMA_REF_(uint16_t),
		RMA_REF_(uint32_t), RMA_REF_(uint64_t), RMA_REF_(float _Complex), RMA_REF_(double _Complex),
		RMA_REF_(long double _Complex), RMA_REF_(intptr_t), RMA_REF_(int64_t), RMA_REF_(int64_t),
		RMA_REF_(unsigned char),
#undef RMA_REF_
	};
	return kTable[i];
}

/* Index of RMA_INT and of the pair types' value types, as in rma.h. */
inline constexpr int kRefInt = 7;

struct RefEntry {
	int basic; /* predefined handle index */
	int64_t disp;
};

struct RefType {
	std::vector<RefEntry> entries;
	bool bounded = false; /* has entries or explicit bounds */
	int64_t lb = 0, ub = 0;
	bool sticky = false;  /* explicit bounds (resized) inside */
	int64_t align = 1;

	int64_t extent() const { return ub - lb; }
	int64_t size() const
	{
		int64_t s = 0;
		for (const RefEntry &e : entries)
			s += refBasic(e.basic).size;
		return s;
	}
	/* True lb and true extent: the bytes the entries span ({0, 0} without entries). */
	std::pair<int64_t, int64_t> trueBounds() const
	{
		if (entries.empty())
			return { 0, 0 };
		int64_t lo = INT64_MAX, hi = INT64_MIN;
		for (const RefEntry &e : entries) {
			lo = std::min(lo, e.disp);
			hi = std::max(hi, e.disp + refBasic(e.basic).size);
		}
		return { lo, hi - lo };
	}
};

inline RefType refNamed(int index)
{
	RefType t;
	t.entries = { { index, 0 } };
	t.bounded = true;
	t.ub = refBasic(index).size;
	t.align = refBasic(index).align;
	return t;
}

/* Accumulates copies of children placed at displacements. */
class RefBuilder
{
public:
	void place(const RefType &child, int64_t disp)
	{
		for (const RefEntry &e : child.entries)
			t_.entries.push_back({ e.basic, e.disp + disp });
		if (child.bounded) {
			t_.lb = t_.bounded ? std::min(t_.lb, child.lb + disp) : child.lb + disp;
			t_.ub = t_.bounded ? std::max(t_.ub, child.ub + disp) : child.ub + disp;
			t_.bounded = true;
		}
		t_.sticky |= child.sticky;
		for (const RefEntry &e : child.entries)
			t_.align = std::max(t_.align, refBasic(e.basic).align);
	}
	/* @n copies of @child, one extent apart, from @disp. */
	void copies(const RefType &child, int64_t n, int64_t disp)
	{
		for (int64_t i = 0; i < n; ++i)
			place(child, disp + i * child.extent());
	}
	RefType done(bool isStruct = false)
	{
		if (isStruct && t_.bounded && !t_.sticky) {
			int64_t ext = t_.ub - t_.lb;
			t_.ub += (t_.align - ext % t_.align) % t_.align;
		}
		if (!t_.bounded)
			t_.lb = t_.ub = 0;
		return t_;
	}

private:
	RefType t_;
};

/* The pair type at handle index @index (33..38), from the C struct. */
inline RefType refPair(int index)
{
	RefType t;
	auto make = [&](int value, int64_t iOffset) {
		RefBuilder b;
		b.place(refNamed(value), 0);
		b.place(refNamed(kRefInt), iOffset);
		t = b.done(true);
	};
#define RMA_REF_PAIR_(V, value)                  \
	{                                        \
		struct P {                       \
			V v;                     \
			int i;                   \
		};                               \
		make(value, offsetof(P, i));     \
	}
	switch (index) {
	case 33: RMA_REF_PAIR_(float, 13) break;
	case 34: RMA_REF_PAIR_(double, 14) break;
	case 35: RMA_REF_PAIR_(long, 9) break;
	case 36: RMA_REF_PAIR_(int, 7) break;
	case 37: RMA_REF_PAIR_(short, 5) break;
	case 38: RMA_REF_PAIR_(long double, 15) break;
	default: break;
	}
#undef RMA_REF_PAIR_
	return t;
}

inline RefType refContiguous(int64_t count, const RefType &old)
{
	RefBuilder b;
	b.copies(old, count, 0);
	return b.done();
}

/* vector (@strideBytes = stride * extent) and hvector. */
inline RefType refVector(int64_t count, int64_t blocklength, int64_t strideBytes, const RefType &old)
{
	RefBuilder b;
	for (int64_t i = 0; i < count; ++i)
		b.copies(old, blocklength, i * strideBytes);
	return b.done();
}

/* indexed family and struct: block i is lengths[i] copies of types[i] at dispBytes[i]. */
inline RefType refBlocks(const std::vector<int64_t> &lengths, const std::vector<int64_t> &dispBytes,
			 const std::vector<RefType> &types, bool isStruct)
{
	RefBuilder b;
	for (size_t i = 0; i < lengths.size(); ++i)
		b.copies(types[isStruct ? i : 0], lengths[i], dispBytes[i]);
	return b.done(isStruct);
}

/* subarray: each element of the block, in C (last index fastest) or Fortran order. */
inline RefType refSubarray(const std::vector<int64_t> &sizes, const std::vector<int64_t> &subsizes,
			   const std::vector<int64_t> &starts, bool cOrder, const RefType &old)
{
	const size_t n = sizes.size();
	std::vector<int64_t> idx(n, 0);
	RefBuilder b;
	int64_t total = 1;
	for (int64_t s : subsizes)
		total *= s;
	for (int64_t k = 0; k < total; ++k) {
		/* Linear index of (starts + idx) in the full array, in the array's order. */
		int64_t linear = 0;
		for (size_t d = 0; d < n; ++d) {
			size_t dim = cOrder ? d : n - 1 - d; /* slowest first */
			linear = linear * sizes[dim] + starts[dim] + idx[dim];
		}
		b.place(old, linear * old.extent());
		/* Next index: the fastest dimension first. */
		for (size_t d = 0; d < n; ++d) {
			size_t dim = cOrder ? n - 1 - d : d;
			if (++idx[dim] < subsizes[dim])
				break;
			idx[dim] = 0;
		}
	}
	RefType t = b.done();
	int64_t full = old.extent();
	for (int64_t s : sizes)
		full *= s;
	t.bounded = true;
	t.lb = 0;
	t.ub = full;
	t.sticky = true;
	return t;
}

inline RefType refResized(const RefType &old, int64_t lb, int64_t extent)
{
	RefType t = old;
	t.bounded = true;
	t.lb = lb;
	t.ub = lb + extent;
	t.sticky = true;
	return t;
}

/* ---- Expansions of a count of a type ------------------------------------ */

/* The entries of @count x @t: (basic, byte displacement), in type-map order. */
inline std::vector<RefEntry> refElements(const RefType &t, int64_t count)
{
	std::vector<RefEntry> out;
	for (int64_t i = 0; i < count; ++i)
		for (const RefEntry &e : t.entries)
			out.push_back({ e.basic, e.disp + i * t.extent() });
	return out;
}

/* The byte offsets of the data of @count x @t, in type-map order. */
inline std::vector<int64_t> refBytes(const RefType &t, int64_t count)
{
	std::vector<int64_t> out;
	for (const RefEntry &e : refElements(t, count))
		for (int64_t b = 0; b < refBasic(e.basic).size; ++b)
			out.push_back(e.disp + b);
	return out;
}

/* Whether @count x @t has two entries touching the same byte. */
inline bool refOverlaps(const RefType &t, int64_t count)
{
	std::set<int64_t> seen;
	for (int64_t b : refBytes(t, count))
		if (!seen.insert(b).second)
			return true;
	return false;
}

/* The bytes [low, high) that @count x @t touches ({0, 0} for none). */
inline std::pair<int64_t, int64_t> refFootprint(const RefType &t, int64_t count)
{
	std::vector<int64_t> bytes = refBytes(t, count);
	if (bytes.empty())
		return { 0, 0 };
	auto [lo, hi] = std::minmax_element(bytes.begin(), bytes.end());
	return { *lo, *hi + 1 };
}

/*
 * Does the signature of (@scount x @s) form a prefix of (@rcount x @r)?
 * 0: yes; 1: a basic type differs; 2: the receiver is too short.
 */
inline int refMatch(const RefType &s, int64_t scount, const RefType &r, int64_t rcount)
{
	std::vector<RefEntry> a = refElements(s, scount), b = refElements(r, rcount);
	for (size_t i = 0; i < a.size(); ++i) {
		if (i >= b.size())
			return 2;
		if (a[i].basic != b[i].basic)
			return 1;
	}
	return 0;
}

/* Copy @bytes bytes of data from (@scount x @s at @src) to (@rcount x @r at @dst), byte by byte. */
inline void refCopy(std::byte *dst, const RefType &r, int64_t rcount, const std::byte *src, const RefType &s,
		    int64_t scount, int64_t bytes)
{
	std::vector<int64_t> from = refBytes(s, scount), to = refBytes(r, rcount);
	for (int64_t k = 0; k < bytes; ++k)
		dst[to[k]] = src[from[k]];
}

} /* namespace rmatest */
