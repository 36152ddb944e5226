/* SPDX-License-Identifier: MIT */
/*
 * Reduction ops in one process: op handles, the op x type table as MPI-4.1
 * writes it, and every kernel (every op on every type it is defined on)
 * against a naive reference that computes on widened values (__int128,
 * long double) one element at a time. Each kernel runs on the atomic path
 * (aligned target), the plain fallback (misaligned target) and
 * applyOpPlain(), with and without the old values.
 */
#include <gtest/gtest.h>

#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <limits>
#include <random>
#include <string>
#include <vector>

#include <rma/rma.h>

#include "datatype/datatype.h"
#include "error/error.h"
#include "op/op.h"

using namespace librma;

namespace {

/* ---- The test's own view of the types (independent of lib/op's tables) -------- */

enum class Kind { SInt, UInt, Float, Complex, Logical, Char, Byte, Packed, Pair };

struct TypeRow {
	uint8_t elem;
	const char *name;
	Kind kind;
	uint32_t size;	      /* packed bytes of one element */
	const char *mpiClass; /* as MPI-4.1 section 6.9.2 names it */
	/* Pairs: the value's kind and size, and the C struct's layout. */
	Kind valueKind = Kind::SInt;
	uint32_t valueSize = 0;
	uint32_t extent = 0;
	uint32_t indexOffset = 0;
};

template <typename V> struct Pair {
	V v;
	int i;
};

template <typename V> constexpr TypeRow pairRow(uint8_t elem, const char *name, Kind vk)
{
	return { elem,
		 name,
		 Kind::Pair,
		 uint32_t(sizeof(V) + sizeof(int)),
		 "pair",
		 vk,
		 uint32_t(sizeof(V)),
		 uint32_t(sizeof(Pair<V>)),
		 uint32_t(offsetof(Pair<V>, i)) };
}

template <typename T> constexpr Kind intKind()
{
	return std::is_signed_v<T> ? Kind::SInt : Kind::UInt;
}

#define ROW_(e, name, kind, T, cls)                                                                                    \
	TypeRow                                                                                                        \
	{                                                                                                              \
		uint8_t(e), name, kind, uint32_t(sizeof(T)), cls                                                       \
	}

const TypeRow kRows[] = {
	/* MPI calls CHAR a character; librma takes it as a C integer, as MPICH and Open MPI do. */
	ROW_(1, "RMA_CHAR", intKind<char>(), char, "C integer"),
	ROW_(2, "RMA_SIGNED_CHAR", Kind::SInt, signed char, "C integer"),
	ROW_(3, "RMA_UNSIGNED_CHAR", Kind::UInt, unsigned char, "C integer"),
	ROW_(4, "RMA_BYTE", Kind::Byte, unsigned char, "byte"),
	ROW_(5, "RMA_SHORT", Kind::SInt, short, "C integer"),
	ROW_(6, "RMA_UNSIGNED_SHORT", Kind::UInt, unsigned short, "C integer"),
	ROW_(7, "RMA_INT", Kind::SInt, int, "C integer"),
	ROW_(8, "RMA_UNSIGNED", Kind::UInt, unsigned, "C integer"),
	ROW_(9, "RMA_LONG", Kind::SInt, long, "C integer"),
	ROW_(10, "RMA_UNSIGNED_LONG", Kind::UInt, unsigned long, "C integer"),
	ROW_(11, "RMA_LONG_LONG", Kind::SInt, long long, "C integer"),
	ROW_(12, "RMA_UNSIGNED_LONG_LONG", Kind::UInt, unsigned long long, "C integer"),
	ROW_(13, "RMA_FLOAT", Kind::Float, float, "floating point"),
	ROW_(14, "RMA_DOUBLE", Kind::Float, double, "floating point"),
	ROW_(15, "RMA_LONG_DOUBLE", Kind::Float, long double, "floating point"),
	ROW_(16, "RMA_WCHAR", Kind::Char, wchar_t, "character"),
	ROW_(17, "RMA_C_BOOL", Kind::Logical, bool, "logical"),
	ROW_(18, "RMA_INT8_T", Kind::SInt, int8_t, "C integer"),
	ROW_(19, "RMA_INT16_T", Kind::SInt, int16_t, "C integer"),
	ROW_(20, "RMA_INT32_T", Kind::SInt, int32_t, "C integer"),
	ROW_(21, "RMA_INT64_T", Kind::SInt, int64_t, "C integer"),
	ROW_(22, "RMA_UINT8_T", Kind::UInt, uint8_t, "C integer"),
	ROW_(23, "RMA_UINT16_T", Kind::UInt, uint16_t, "C integer"),
	ROW_(24, "RMA_UINT32_T", Kind::UInt, uint32_t, "C integer"),
	ROW_(25, "RMA_UINT64_T", Kind::UInt, uint64_t, "C integer"),
	ROW_(26, "RMA_C_FLOAT_COMPLEX", Kind::Complex, float _Complex, "complex"),
	ROW_(27, "RMA_C_DOUBLE_COMPLEX", Kind::Complex, double _Complex, "complex"),
	ROW_(28, "RMA_C_LONG_DOUBLE_COMPLEX", Kind::Complex, long double _Complex, "complex"),
	ROW_(29, "RMA_AINT", Kind::SInt, rma_aint, "multi-language"),
	ROW_(30, "RMA_OFFSET", Kind::SInt, rma_offset, "multi-language"),
	ROW_(31, "RMA_COUNT", Kind::SInt, rma_count, "multi-language"),
	ROW_(32, "RMA_PACKED", Kind::Packed, char, "packed"),
	pairRow<float>(33, "RMA_FLOAT_INT", Kind::Float),
	pairRow<double>(34, "RMA_DOUBLE_INT", Kind::Float),
	pairRow<long>(35, "RMA_LONG_INT", Kind::SInt),
	pairRow<int>(36, "RMA_2INT", Kind::SInt),
	pairRow<short>(37, "RMA_SHORT_INT", Kind::SInt),
	pairRow<long double>(38, "RMA_LONG_DOUBLE_INT", Kind::Float),
};

#undef ROW_

const Op kOps[] = { Op::Max, Op::Min,  Op::Sum,	 Op::Prod,   Op::Land,	 Op::Band,    Op::Lor,
		    Op::Bor, Op::Lxor, Op::Bxor, Op::Maxloc, Op::Minloc, Op::Replace, Op::NoOp };

/* MPI-4.1's table, written out by class name (Fortran classes left out). */
bool mpiAllows(Op op, const char *cls)
{
	auto is = [&](const char *c) { return std::strcmp(cls, c) == 0; };
	bool cint = is("C integer"), multi = is("multi-language");
	switch (op) {
	case Op::Max:
	case Op::Min:
		return cint || multi || is("floating point");
	case Op::Sum:
	case Op::Prod:
		return cint || multi || is("floating point") || is("complex");
	case Op::Land:
	case Op::Lor:
	case Op::Lxor:
		return cint || is("logical");
	case Op::Band:
	case Op::Bor:
	case Op::Bxor:
		return cint || multi || is("byte");
	case Op::Maxloc:
	case Op::Minloc:
		return is("pair");
	case Op::Replace:
	case Op::NoOp:
		return !is("packed");
	default:
		return false;
	}
}

/* ---- The naive reference, one element, on packed bytes ------------------------ */

using i128 = __int128;
using u128 = unsigned __int128;

u128 loadBits(const uint8_t *p, uint32_t size)
{
	u128 v = 0;
	for (uint32_t b = 0; b < size; ++b)
		v |= u128(p[b]) << (8 * b);
	return v;
}

void storeBits(uint8_t *p, uint32_t size, u128 v)
{
	for (uint32_t b = 0; b < size; ++b)
		p[b] = uint8_t(v >> (8 * b));
}

i128 loadInt(const uint8_t *p, uint32_t size, bool isSigned)
{
	u128 v = loadBits(p, size);
	u128 top = u128(1) << (8 * size - 1);
	if (isSigned && (v & top))
		return i128(v) - (i128(top) << 1);
	return i128(v);
}

long double loadFloat(const uint8_t *p, uint32_t size)
{
	if (size == 4) {
		float f;
		std::memcpy(&f, p, 4);
		return f;
	}
	if (size == 8) {
		double d;
		std::memcpy(&d, p, 8);
		return d;
	}
	long double l;
	std::memcpy(&l, p, sizeof(l));
	return l;
}

void storeFloat(uint8_t *p, uint32_t size, long double v)
{
	if (size == 4) {
		float f = float(v);
		std::memcpy(p, &f, 4);
	} else if (size == 8) {
		double d = double(v);
		std::memcpy(p, &d, 8);
	} else {
		std::memset(p, 0, size);
		std::memcpy(p, &v, 10); /* x87 extended: the rest is padding */
	}
}

/*
 * MAX/MIN as the header defines them: a NaN target stays, a NaN origin
 * replaces a number, otherwise the strictly greater (smaller) origin wins.
 */
bool originWinsFloat(Op op, long double t, long double o)
{
	if (std::isnan(t))
		return false;
	if (std::isnan(o))
		return true;
	return op == Op::Max ? o > t : o < t;
}

/* Arithmetic in the element's own precision (the kernel rounds there too). */
long double arith(Op op, uint32_t size, long double a, long double b)
{
	if (size == 4)
		return op == Op::Sum ? float(a) + float(b) : float(a) * float(b);
	if (size == 8)
		return op == Op::Sum ? double(a) + double(b) : double(a) * double(b);
	return op == Op::Sum ? a + b : a * b;
}

/* One element: @t (packed) becomes op(t, o); @old gets the previous t. */
void reference(Op op, const TypeRow &row, uint8_t *t, const uint8_t *o, uint8_t *old)
{
	uint32_t s = row.size;
	if (old)
		std::memcpy(old, t, s);
	if (op == Op::NoOp)
		return;
	if (op == Op::Replace) {
		std::memcpy(t, o, s);
		return;
	}
	switch (row.kind) {
	case Kind::SInt:
	case Kind::UInt:
	case Kind::Logical: {
		bool sgn = row.kind == Kind::SInt;
		i128 a = loadInt(t, s, sgn), b = loadInt(o, s, sgn);
		u128 r = 0;
		switch (op) {
		case Op::Max:
			r = u128(b > a ? b : a);
			break;
		case Op::Min:
			r = u128(b < a ? b : a);
			break;
		case Op::Sum:
			r = u128(a) + u128(b);
			break;
		case Op::Prod:
			r = u128(a) * u128(b);
			break;
		case Op::Land:
			r = (a != 0 && b != 0) ? 1 : 0;
			break;
		case Op::Lor:
			r = (a != 0 || b != 0) ? 1 : 0;
			break;
		case Op::Lxor:
			r = ((a != 0) != (b != 0)) ? 1 : 0;
			break;
		case Op::Band:
			r = u128(a) & u128(b);
			break;
		case Op::Bor:
			r = u128(a) | u128(b);
			break;
		case Op::Bxor:
			r = u128(a) ^ u128(b);
			break;
		default:
			ADD_FAILURE() << "no reference for " << opName(op);
			break;
		}
		storeBits(t, s, r);
		return;
	}
	case Kind::Byte: {
		uint8_t a = t[0], b = o[0];
		t[0] = op == Op::Band ? a & b : op == Op::Bor ? a | b : a ^ b;
		return;
	}
	case Kind::Float: {
		long double a = loadFloat(t, s), b = loadFloat(o, s);
		if (op == Op::Max || op == Op::Min) {
			if (originWinsFloat(op, a, b))
				std::memcpy(t, o, s);
			return;
		}
		storeFloat(t, s, arith(op, s, a, b));
		return;
	}
	case Kind::Complex: {
		uint32_t h = s / 2;
		long double ar = loadFloat(t, h), ai = loadFloat(t + h, h);
		long double br = loadFloat(o, h), bi = loadFloat(o + h, h);
		long double rr, ri;
		if (op == Op::Sum) {
			rr = arith(Op::Sum, h, ar, br);
			ri = arith(Op::Sum, h, ai, bi);
		} else {
			/* Rounded once per product and once per sum, in the component's precision. */
			rr = arith(Op::Sum, h, arith(Op::Prod, h, ar, br), -arith(Op::Prod, h, ai, bi));
			ri = arith(Op::Sum, h, arith(Op::Prod, h, ar, bi), arith(Op::Prod, h, ai, br));
		}
		storeFloat(t, h, rr);
		storeFloat(t + h, h, ri);
		return;
	}
	case Kind::Pair: {
		uint32_t vs = row.valueSize;
		bool isFloat = row.valueKind == Kind::Float;
		long double a = isFloat ? loadFloat(t, vs) : (long double)loadInt(t, vs, true);
		long double b = isFloat ? loadFloat(o, vs) : (long double)loadInt(o, vs, true);
		int ai, bi;
		std::memcpy(&ai, t + vs, 4);
		std::memcpy(&bi, o + vs, 4);
		bool tie = (std::isnan(a) && std::isnan(b)) || a == b;
		Op base = op == Op::Maxloc ? Op::Max : Op::Min;
		if (tie) {
			int k = ai < bi ? ai : bi;
			std::memcpy(t + vs, &k, 4);
		} else if (originWinsFloat(base, a, b)) {
			std::memcpy(t, o, s);
		}
		return;
	}
	default:
		ADD_FAILURE() << "no reference for " << row.name;
	}
}

/* Equal as values: floats by value, NaN equal to NaN, and the sign of zero kept. */
bool sameFloat(const uint8_t *a, const uint8_t *b, uint32_t size)
{
	long double x = loadFloat(a, size), y = loadFloat(b, size);
	if (std::isnan(x) || std::isnan(y))
		return std::isnan(x) && std::isnan(y);
	return x == y && std::signbit(x) == std::signbit(y);
}

bool sameElement(const TypeRow &row, const uint8_t *a, const uint8_t *b)
{
	switch (row.kind) {
	case Kind::Float:
		return sameFloat(a, b, row.size);
	case Kind::Complex:
		return sameFloat(a, b, row.size / 2) && sameFloat(a + row.size / 2, b + row.size / 2, row.size / 2);
	case Kind::Pair:
		if (row.valueKind == Kind::Float ? !sameFloat(a, b, row.valueSize)
						 : std::memcmp(a, b, row.valueSize) != 0)
			return false;
		return std::memcmp(a + row.valueSize, b + row.valueSize, 4) == 0;
	default:
		return std::memcmp(a, b, row.size) == 0;
	}
}

std::string hex(const uint8_t *p, uint32_t n)
{
	static const char digits[] = "0123456789abcdef";
	std::string s;
	for (uint32_t i = n; i-- > 0;) {
		s += digits[p[i] >> 4];
		s += digits[p[i] & 15];
	}
	return s;
}

/* ---- Inputs ------------------------------------------------------------------- */

class Inputs
{
public:
	explicit Inputs(uint32_t seed) : rng_(seed) {}

	/* One packed element of @row: limits, zeros, NaN, infinities, small and random values. */
	void fill(const TypeRow &row, uint8_t *p)
	{
		switch (row.kind) {
		case Kind::Float:
			floatValue(p, row.size);
			return;
		case Kind::Complex:
			floatValue(p, row.size / 2);
			floatValue(p + row.size / 2, row.size / 2);
			return;
		case Kind::Logical:
			p[0] = kBools[pick(4)];
			return;
		case Kind::Pair: {
			if (row.valueKind == Kind::Float)
				floatValue(p, row.valueSize, true);
			else
				intValue(p, row.valueSize, true);
			int idx = int(pick(5)) - 1; /* few indices: ties in both value and index */
			std::memcpy(p + row.valueSize, &idx, 4);
			return;
		}
		default:
			intValue(p, row.size, false);
			return;
		}
	}

	uint32_t pick(uint32_t n) { return std::uniform_int_distribution<uint32_t>(0, n - 1)(rng_); }

private:
	static constexpr uint8_t kBools[4] = { 0, 1, 2, 255 };

	void intValue(uint8_t *p, uint32_t size, bool few)
	{
		u128 top = u128(1) << (8 * size - 1), all = (top << 1) - 1;
		u128 v;
		switch (pick(few ? 2 : 9)) {
		case 0:
			v = pick(3);
			break; /* 0, 1, 2 */
		case 1:
			v = (all - pick(3)) & all;
			break; /* -1, -2, -3 */
		case 2:
			v = top;
			break; /* signed min */
		case 3:
			v = top - 1;
			break; /* signed max */
		case 4:
			v = all;
			break; /* unsigned max */
		case 5:
			v = pick(16);
			break;
		default:
			v = (u128(rng_()) << 64 | rng_()) & all;
			break;
		}
		storeBits(p, size, v);
	}

	void floatValue(uint8_t *p, uint32_t size, bool few = false)
	{
		long double v;
		switch (pick(few ? 3 : 14)) {
		case 0:
			v = 0.0L;
			break;
		case 1:
			v = std::numeric_limits<long double>::quiet_NaN();
			break;
		case 2:
			v = 1.5L;
			break;
		case 3:
			v = -0.0L;
			break;
		case 4:
			v = -1.0L;
			break;
		case 5:
			v = std::numeric_limits<long double>::infinity();
			break;
		case 6:
			v = -std::numeric_limits<long double>::infinity();
			break;
		case 7:
			v = size == 4 ? std::numeric_limits<float>::max() : std::numeric_limits<double>::max();
			break;
		case 8:
			v = size == 4 ? std::numeric_limits<float>::denorm_min()
				      : std::numeric_limits<double>::denorm_min();
			break;
		default:
			v = std::uniform_real_distribution<double>(-1e3, 1e3)(rng_);
			break;
		}
		storeFloat(p, size, v);
	}

	std::mt19937_64 rng_;
};

/* ---- Running a kernel on the three paths -------------------------------------- */

enum class Path { Atomic, Misaligned, Plain };

const char *pathName(Path p)
{
	return p == Path::Atomic ? "aligned applyOp" : p == Path::Misaligned ? "misaligned applyOp" : "applyOpPlain";
}

/* Packed element @i of @row to/from the target's layout (pairs: the C struct). */
void toTarget(const TypeRow &row, uint8_t *target, const uint8_t *packed, size_t i)
{
	if (row.kind != Kind::Pair) {
		std::memcpy(target + i * row.size, packed + i * row.size, row.size);
		return;
	}
	uint8_t *e = target + i * row.extent;
	std::memcpy(e, packed + i * row.size, row.valueSize);
	std::memcpy(e + row.indexOffset, packed + i * row.size + row.valueSize, 4);
}

void fromTarget(const TypeRow &row, const uint8_t *target, uint8_t *packed, size_t i)
{
	if (row.kind != Kind::Pair) {
		std::memcpy(packed + i * row.size, target + i * row.size, row.size);
		return;
	}
	const uint8_t *e = target + i * row.extent;
	std::memcpy(packed + i * row.size, e, row.valueSize);
	std::memcpy(packed + i * row.size + row.valueSize, e + row.indexOffset, 4);
}

uint32_t targetExtent(const TypeRow &row)
{
	return row.kind == Kind::Pair ? row.extent : row.size;
}

/* One op on one type through one path: n elements checked against the reference. */
void checkKernel(Op op, const TypeRow &row, Path path, bool withOld, uint32_t seed)
{
	constexpr size_t n = 67; /* odd: the vector loops' epilogues run too */
	Inputs in(seed);
	std::vector<uint8_t> tgt0(n * row.size), org(n * row.size);
	for (size_t i = 0; i < n; ++i) {
		in.fill(row, &tgt0[i * row.size]);
		in.fill(row, &org[i * row.size]);
		if (in.pick(6) == 0)
			std::memcpy(&org[i * row.size], &tgt0[i * row.size], row.size); /* equal values */
	}

	std::vector<uint8_t> want = tgt0, wantOld(n * row.size);
	for (size_t i = 0; i < n; ++i)
		reference(op, row, &want[i * row.size], &org[i * row.size], &wantOld[i * row.size]);

	/* Window memory: 64-aligned, plus 1 byte for the misaligned path. */
	uint32_t ext = targetExtent(row);
	alignas(64) static uint8_t window[67 * 32 + 64];
	uint8_t *target = window + (path == Path::Misaligned ? 1 : 0);
	std::memset(window, 0, sizeof(window));
	for (size_t i = 0; i < n; ++i)
		toTarget(row, target, tgt0.data(), i);

	/* Origin and old at odd offsets: the kernels must not assume alignment. */
	std::vector<uint8_t> orgBuf(org.size() + 3), oldBuf(n * row.size + 3, 0xa5);
	std::memcpy(orgBuf.data() + 3, org.data(), org.size());
	uint8_t *old = withOld ? oldBuf.data() + 3 : nullptr;

	if (path == Path::Plain)
		applyOpPlain(op, row.elem, target, orgBuf.data() + 3, old, n);
	else
		applyOp(op, row.elem, target, orgBuf.data() + 3, old, n);

	std::vector<uint8_t> got(n * row.size);
	for (size_t i = 0; i < n; ++i)
		fromTarget(row, target, got.data(), i);
	for (size_t i = 0; i < n; ++i) {
		const uint8_t *g = &got[i * row.size], *w = &want[i * row.size];
		EXPECT_TRUE(sameElement(row, g, w))
			<< opName(op) << " on " << row.name << " via " << pathName(path) << ", element " << i
			<< ": target " << hex(&tgt0[i * row.size], row.size) << " origin "
			<< hex(&org[i * row.size], row.size) << " -> got " << hex(g, row.size) << " want "
			<< hex(w, row.size);
		if (withOld) {
			EXPECT_TRUE(sameElement(row, old + i * row.size, &wantOld[i * row.size]))
				<< opName(op) << " on " << row.name << " via " << pathName(path) << ": old of element "
				<< i;
		}
	}
	/* Nothing past the last element was touched. */
	for (size_t b = n * ext; b < n * ext + 32; ++b) {
		ASSERT_EQ(target[b], 0) << opName(op) << " on " << row.name << " wrote past the end";
	}
}

/* ---- Tests ---------------------------------------------------------------------- */

TEST(OpHandleTest, ResolvesEveryPredefinedOp)
{
	const rma_op handles[] = { RMA_MAX, RMA_MIN,  RMA_SUM,	RMA_PROD,   RMA_LAND,	RMA_BAND,    RMA_LOR,
				   RMA_BOR, RMA_LXOR, RMA_BXOR, RMA_MAXLOC, RMA_MINLOC, RMA_REPLACE, RMA_NO_OP };
	const char *names[] = { "RMA_MAX",    "RMA_MIN",    "RMA_SUM",	   "RMA_PROD", "RMA_LAND",
				"RMA_BAND",   "RMA_LOR",    "RMA_BOR",	   "RMA_LXOR", "RMA_BXOR",
				"RMA_MAXLOC", "RMA_MINLOC", "RMA_REPLACE", "RMA_NO_OP" };
	for (size_t i = 0; i < std::size(handles); ++i) {
		EXPECT_EQ(toOp(handles[i]), kOps[i]);
		EXPECT_STREQ(opName(toOp(handles[i])), names[i]);
		EXPECT_EQ(opHandle(kOps[i]), handles[i]);
	}
}

TEST(OpHandleTest, RejectsNullOtherKindsAndOutOfRange)
{
	EXPECT_EQ(toOp(RMA_OP_NULL), Op::Null);
	EXPECT_EQ(toOp(RMA_PREDEFINED_(rma_op, RMA_HANDLE_KIND_OP_, 0)), Op::Null);
	EXPECT_EQ(toOp(RMA_PREDEFINED_(rma_op, RMA_HANDLE_KIND_OP_, 15)), Op::Null);
	EXPECT_EQ(toOp(RMA_PREDEFINED_(rma_op, RMA_HANDLE_KIND_OP_, 255)), Op::Null);
	/* Index 3 (SUM) with a generation, as a dynamic handle would carry. */
	EXPECT_EQ(toOp(reinterpret_cast<rma_op>((uintptr_t(RMA_HANDLE_KIND_OP_) << 56) | (uintptr_t(1) << 32) | 3)),
		  Op::Null);
	/* Other kinds with an index an op would have. */
	for (uint64_t kind = 1; kind < 16; ++kind) {
		if (kind == RMA_HANDLE_KIND_OP_)
			continue;
		for (uint64_t index : { 1, 3, 14 }) {
			EXPECT_EQ(toOp(RMA_PREDEFINED_(rma_op, kind, index)), Op::Null) << kind << " " << index;
		}
	}
	EXPECT_EQ(toOp(reinterpret_cast<rma_op>(RMA_INT)), Op::Null);
	EXPECT_EQ(toOp(reinterpret_cast<rma_op>(RMA_COMM_WORLD)), Op::Null);
	EXPECT_EQ(toOp(reinterpret_cast<rma_op>(uintptr_t(3))), Op::Null);
	EXPECT_STREQ(opName(Op::Null), "RMA_OP_NULL");
	EXPECT_EQ(opHandle(Op::Null), RMA_OP_NULL);
}

TEST(OpTypeTest, ElementsAgreeWithTheDatatypeLibrary)
{
	for (const TypeRow &row : kRows) {
		EXPECT_STREQ(elemName(row.elem), row.name);
		EXPECT_EQ(elemBytes(row.elem), row.size) << row.name;
		EXPECT_EQ(elemExtent(row.elem), targetExtent(row)) << row.name;
		EXPECT_STREQ(elemClassName(elemClass(row.elem)), row.mpiClass) << row.name;
		rma_datatype h = reinterpret_cast<rma_datatype>(encodeHandle(HandleKind::Datatype, 0, row.elem));
		const Datatype *d = toDatatype(h);
		ASSERT_NE(d, nullptr) << row.name;
		EXPECT_STREQ(d->name, row.name);
		EXPECT_EQ(uint32_t(d->size), row.size) << row.name;
		EXPECT_EQ(uint32_t(d->extent), targetExtent(row)) << row.name;
	}
	EXPECT_EQ(elemBytes(0), 0u);
	EXPECT_EQ(elemBytes(kElemLimit), 0u);
	EXPECT_STREQ(elemName(0), "(invalid datatype)");
	EXPECT_STREQ(elemName(kElemLimit), "(invalid datatype)");
}

TEST(OpTypeTest, AllowedPairingsAreMpisTable)
{
	for (Op op : kOps) {
		for (const TypeRow &row : kRows) {
			EXPECT_EQ(opAllowed(op, row.elem), mpiAllows(op, row.mpiClass))
				<< opName(op) << " on " << row.name;
		}
		EXPECT_FALSE(opAllowed(op, 0));
		EXPECT_FALSE(opAllowed(op, kElemLimit));
	}
	for (const TypeRow &row : kRows) {
		EXPECT_FALSE(opAllowed(Op::Null, row.elem));
	}
}

TEST(OpTypeTest, HardwareAtomicOnlyForSmallNonPairElements)
{
	for (Op op : kOps) {
		for (const TypeRow &row : kRows) {
			bool want = mpiAllows(op, row.mpiClass) && row.kind != Kind::Pair &&
				    (row.size == 1 || row.size == 2 || row.size == 4 || row.size == 8);
			EXPECT_EQ(hardwareAtomic(op, row.elem), want) << opName(op) << " on " << row.name;
		}
	}
	EXPECT_TRUE(hardwareAtomic(Op::Sum, uint8_t(BasicType::FloatComplex)));
	EXPECT_FALSE(hardwareAtomic(Op::Sum, uint8_t(BasicType::DoubleComplex)));
	EXPECT_FALSE(hardwareAtomic(Op::Max, uint8_t(BasicType::LongDouble)));
	alignas(8) uint64_t word = 0;
	EXPECT_TRUE(atomicAt(Op::Sum, uint8_t(BasicType::Int64), &word));
	EXPECT_FALSE(atomicAt(Op::Sum, uint8_t(BasicType::Int32), reinterpret_cast<char *>(&word) + 2));
	EXPECT_TRUE(atomicAt(Op::Sum, uint8_t(BasicType::Int16), reinterpret_cast<char *>(&word) + 2));
}

TEST(OpCheckTest, DisallowedPairingsAreOpErrorsNamingOpAndType)
{
	int checked = 0;
	for (Op op : kOps) {
		for (const TypeRow &row : kRows) {
			int rc = checkOp("rma_get_accumulate", op, row.elem);
			if (mpiAllows(op, row.mpiClass)) {
				EXPECT_EQ(rc, RMA_SUCCESS) << opName(op) << " on " << row.name;
				continue;
			}
			++checked;
			EXPECT_EQ(errorClass(rc), RMA_ERR_OP) << opName(op) << " on " << row.name;
			std::string msg = errorMessage(rc);
			EXPECT_NE(msg.find("rma_get_accumulate"), std::string::npos) << msg;
			EXPECT_NE(msg.find(opName(op)), std::string::npos) << msg;
			EXPECT_NE(msg.find(row.name), std::string::npos) << msg;
		}
	}
	/* 14 ops x 38 types, less the 311 pairings MPI defines and the 10 CHAR takes as a C integer */
	EXPECT_EQ(checked, 211);
	int rc = checkOp("rma_fetch_and_op", Op::Null, uint8_t(BasicType::Int));
	EXPECT_EQ(errorClass(rc), RMA_ERR_OP);
	EXPECT_NE(errorMessage(rc).find("RMA_OP_NULL"), std::string::npos) << errorMessage(rc);
	EXPECT_NE(errorMessage(rc).find("RMA_INT"), std::string::npos) << errorMessage(rc);
	rc = checkOp("rma_accumulate", Op::Sum, 0);
	EXPECT_EQ(errorClass(rc), RMA_ERR_OP);
}

TEST(OpCheckTest, NoOpOnlyInCallsThatFetch)
{
	int rc = checkOp("rma_accumulate", Op::NoOp, uint8_t(BasicType::Double), false);
	EXPECT_EQ(errorClass(rc), RMA_ERR_OP);
	EXPECT_NE(errorMessage(rc).find("RMA_NO_OP"), std::string::npos) << errorMessage(rc);
	EXPECT_NE(errorMessage(rc).find("rma_accumulate"), std::string::npos) << errorMessage(rc);
	EXPECT_EQ(checkOp("rma_accumulate", Op::Replace, uint8_t(BasicType::Double), false), RMA_SUCCESS);
	EXPECT_EQ(checkOp("rma_accumulate", Op::Sum, uint8_t(BasicType::Double), false), RMA_SUCCESS);
	EXPECT_EQ(checkOp("rma_get_accumulate", Op::NoOp, uint8_t(BasicType::Double), true), RMA_SUCCESS);
}

TEST(OpCheckTest, CompareAndSwapTypes)
{
	for (const TypeRow &row : kRows) {
		std::string cls = row.mpiClass;
		bool want = cls == "C integer" || cls == "logical" || cls == "multi-language" || cls == "byte";
		EXPECT_EQ(compareAndSwapAllowed(row.elem), want) << row.name;
		int rc = checkCompareAndSwapType("rma_compare_and_swap", row.elem);
		if (want) {
			EXPECT_EQ(rc, RMA_SUCCESS) << row.name;
		} else {
			EXPECT_EQ(errorClass(rc), RMA_ERR_TYPE) << row.name;
			EXPECT_NE(errorMessage(rc).find(row.name), std::string::npos) << errorMessage(rc);
			EXPECT_NE(errorMessage(rc).find("rma_compare_and_swap"), std::string::npos);
		}
	}
}

TEST(OpKernelTest, EveryAllowedPairingMatchesTheReference)
{
	int kernels = 0;
	for (Op op : kOps) {
		for (const TypeRow &row : kRows) {
			if (!mpiAllows(op, row.mpiClass))
				continue;
			++kernels;
			for (Path path : { Path::Atomic, Path::Misaligned, Path::Plain }) {
				for (bool withOld : { false, true }) {
					uint32_t seed =
						uint32_t(op) * 1000 + row.elem * 10 + uint32_t(path) * 2 + withOld;
					checkKernel(op, row, path, withOld, seed);
					if (HasFatalFailure())
						return;
				}
			}
		}
	}
	EXPECT_GT(kernels, 200);
}

#if defined(__x86_64__)
/* The AVX2 plain table (picked at load where the CPU has it) gives the baseline's bytes, every kernel. */
TEST(OpKernelTest, Avx2PlainKernelsMatchTheBaselineByteForByte)
{
	if (!__builtin_cpu_supports("avx2"))
		GTEST_SKIP() << "this CPU has no AVX2";
	EXPECT_EQ(detail::plainKernels, &detail::kPlainKernelsAvx2) << "an AVX2 CPU should get the AVX2 table";
	constexpr auto kSum = static_cast<uint32_t>(Op::Sum);
	constexpr auto kInt32 = static_cast<uint8_t>(BasicType::Int32);
	ASSERT_NE(detail::kPlainKernels[kSum][kInt32], detail::kPlainKernelsAvx2[kSum][kInt32])
		<< "the two tables hold the same code: op_avx2.cpp was not compiled separately";
	std::mt19937 rng(7);
	constexpr size_t kElems = 67; /* odd: vector body and scalar tail */
	constexpr size_t kBytes = kElems * 32 + 1;
	std::vector<uint8_t> origin(kBytes), start(kBytes), base(kBytes), avx(kBytes), oldBase(kBytes), oldAvx(kBytes);
	int compared = 0;
	for (Op op : kOps) {
		for (const TypeRow &row : kRows) {
			if (!mpiAllows(op, row.mpiClass))
				continue;
			for (size_t misalign : { size_t(0), size_t(1) }) {
				for (auto &b : origin)
					b = static_cast<uint8_t>(rng());
				for (auto &b : start)
					b = static_cast<uint8_t>(rng());
				base = start;
				avx = start;
				const auto o = static_cast<uint32_t>(op);
				detail::kPlainKernels[o][row.elem](base.data() + misalign, origin.data(), oldBase.data(), kElems);
				detail::kPlainKernelsAvx2[o][row.elem](avx.data() + misalign, origin.data(), oldAvx.data(), kElems);
				ASSERT_EQ(base, avx) << opName(op) << " on " << row.name << ", misaligned by " << misalign;
				ASSERT_EQ(std::memcmp(oldBase.data(), oldAvx.data(), kElems * elemBytes(row.elem)), 0)
					<< opName(op) << " on " << row.name;
				++compared;
			}
		}
	}
	EXPECT_GT(compared, 400);
}
#endif

TEST(OpKernelTest, DisallowedPairingsLeaveTargetAlone)
{
	alignas(64) uint8_t target[64], origin[64], old[64];
	for (Op op : kOps) {
		for (const TypeRow &row : kRows) {
			if (mpiAllows(op, row.mpiClass))
				continue;
			std::memset(target, 0x5a, sizeof(target));
			std::memset(origin, 0x33, sizeof(origin));
			std::memset(old, 0x77, sizeof(old));
			applyOp(op, row.elem, target, origin, old, 1);
			applyOpPlain(op, row.elem, target, origin, old, 1);
			for (uint8_t b : target) {
				ASSERT_EQ(b, 0x5a) << opName(op) << " on " << row.name;
			}
		}
	}
}

TEST(OpKernelTest, ZeroElementsTouchNothing)
{
	alignas(64) uint8_t target[64], origin[64], old[64];
	for (Op op : kOps) {
		for (const TypeRow &row : kRows) {
			std::memset(target, 0x5a, sizeof(target));
			std::memset(origin, 0x33, sizeof(origin));
			std::memset(old, 0x77, sizeof(old));
			applyOp(op, row.elem, target, origin, old, 0);
			applyOpPlain(op, row.elem, target + 1, origin, old, 0);
			for (size_t b = 0; b < sizeof(target); ++b) {
				ASSERT_EQ(target[b], 0x5a) << opName(op) << " on " << row.name;
				ASSERT_EQ(old[b], 0x77) << opName(op) << " on " << row.name;
			}
		}
	}
}

TEST(OpKernelTest, IntegerSumAndProdWrap)
{
	alignas(8) int64_t t = INT64_MAX;
	int64_t one = 1, old = 0;
	applyOp(Op::Sum, uint8_t(BasicType::Int64), &t, &one, &old, 1);
	EXPECT_EQ(t, INT64_MIN);
	EXPECT_EQ(old, INT64_MAX);
	alignas(2) uint16_t u = 65535, v = 65535;
	applyOp(Op::Prod, uint8_t(BasicType::Uint16), &u, &v, nullptr, 1);
	EXPECT_EQ(u, 1); /* 65535^2 mod 2^16; no int overflow on the way */
	int8_t s = -128, m = -1;
	applyOpPlain(Op::Prod, uint8_t(BasicType::Int8), &s, &m, nullptr, 1);
	EXPECT_EQ(s, -128);
}

TEST(OpKernelTest, FloatMaxMinNanAndSignedZero)
{
	const double nan = std::numeric_limits<double>::quiet_NaN();
	struct Case {
		Op op;
		double t, o;
		double want;
	} cases[] = {
		{ Op::Max, 1.0, nan, nan }, { Op::Max, nan, 1.0, nan },	  { Op::Min, 1.0, nan, nan },
		{ Op::Min, nan, 1.0, nan }, { Op::Max, -0.0, 0.0, -0.0 }, { Op::Min, 0.0, -0.0, 0.0 },
		{ Op::Max, 1.0, 2.0, 2.0 }, { Op::Min, 1.0, 2.0, 1.0 },
	};
	for (const Case &c : cases) {
		for (int plain = 0; plain < 2; ++plain) {
			alignas(8) double t = c.t;
			double old = 0;
			if (plain)
				applyOpPlain(c.op, uint8_t(BasicType::Double), &t, &c.o, &old, 1);
			else
				applyOp(c.op, uint8_t(BasicType::Double), &t, &c.o, &old, 1);
			EXPECT_TRUE(std::isnan(c.want) ? std::isnan(t)
						       : (t == c.want && std::signbit(t) == std::signbit(c.want)))
				<< opName(c.op) << "(" << c.t << ", " << c.o << ") = " << t
				<< (plain ? " plain" : " atomic");
			EXPECT_TRUE(std::memcmp(&old, &c.t, 8) == 0);
		}
	}
}

TEST(OpKernelTest, LogicalOpsYieldZeroOrOne)
{
	alignas(4) int32_t t[4] = { 0, 7, -5, 0 };
	const int32_t o[4] = { 9, 3, 0, 0 };
	applyOp(Op::Lor, uint8_t(BasicType::Int32), t, o, nullptr, 4);
	EXPECT_EQ(t[0], 1);
	EXPECT_EQ(t[1], 1);
	EXPECT_EQ(t[2], 1);
	EXPECT_EQ(t[3], 0);
	uint8_t b[3] = { 2, 0, 255 };
	const uint8_t c[3] = { 4, 0, 0 };
	applyOp(Op::Lxor, uint8_t(BasicType::Bool), b, c, nullptr, 3);
	EXPECT_EQ(b[0], 0);
	EXPECT_EQ(b[1], 0);
	EXPECT_EQ(b[2], 1);
}

/* MAXLOC/MINLOC through applyPairOp with the value and index apart, as a derived type may place them. */
TEST(OpPairTest, SplitValueAndIndexWithTies)
{
	struct Case {
		Op op;
		double tv;
		int ti;
		double ov;
		int oi;
		double wv;
		int wi;
	} cases[] = {
		{ Op::Maxloc, 1.0, 5, 2.0, 9, 2.0, 9 },	  { Op::Maxloc, 2.0, 5, 1.0, 1, 2.0, 5 },
		{ Op::Maxloc, 3.0, 5, 3.0, 2, 3.0, 2 },	  { Op::Maxloc, 3.0, 2, 3.0, 5, 3.0, 2 },
		{ Op::Minloc, 1.0, 5, 2.0, 9, 1.0, 5 },	  { Op::Minloc, 2.0, 5, 1.0, 9, 1.0, 9 },
		{ Op::Minloc, 3.0, 5, 3.0, -2, 3.0, -2 }, { Op::Minloc, -0.0, 4, 0.0, 3, -0.0, 3 },
	};
	for (const Case &c : cases) {
		double value = c.tv;
		char pad[7];
		int index = c.ti;
		(void)pad;
		uint8_t origin[12], old[12];
		std::memcpy(origin, &c.ov, 8);
		std::memcpy(origin + 8, &c.oi, 4);
		applyPairOp(c.op, uint8_t(kFirstPairIndex + 1), &value, &index, origin, old);
		EXPECT_EQ(value, c.wv) << opName(c.op);
		EXPECT_EQ(index, c.wi) << opName(c.op) << " (" << c.tv << "," << c.ti << ") (" << c.ov << "," << c.oi
				       << ")";
		double oldV;
		int oldI;
		std::memcpy(&oldV, old, 8);
		std::memcpy(&oldI, old + 8, 4);
		EXPECT_EQ(oldV, c.tv);
		EXPECT_EQ(oldI, c.ti);
	}
}

TEST(OpPairTest, EveryPairTypeSplitMatchesTheReference)
{
	for (const TypeRow &row : kRows) {
		if (row.kind != Kind::Pair)
			continue;
		Inputs in(row.elem);
		for (Op op : { Op::Maxloc, Op::Minloc, Op::Replace, Op::NoOp }) {
			for (int k = 0; k < 200; ++k) {
				uint8_t t[32], o[32], want[32], wantOld[32], old[32];
				in.fill(row, t);
				in.fill(row, o);
				std::memcpy(want, t, row.size);
				reference(op, row, want, o, wantOld);
				/* Value and index far apart and misaligned. */
				uint8_t split[64] = {};
				uint8_t *v = split + 1, *i = split + 37;
				std::memcpy(v, t, row.valueSize);
				std::memcpy(i, t + row.valueSize, 4);
				applyPairOp(op, row.elem, v, i, o, old);
				uint8_t got[32];
				std::memcpy(got, v, row.valueSize);
				std::memcpy(got + row.valueSize, i, 4);
				EXPECT_TRUE(sameElement(row, got, want)) << opName(op) << " on " << row.name;
				EXPECT_TRUE(sameElement(row, old, wantOld)) << opName(op) << " on " << row.name;
			}
		}
	}
}

TEST(OpCasTest, HitAndMissForEveryAllowedSize)
{
	Inputs in(77);
	for (const TypeRow &row : kRows) {
		if (!compareAndSwapAllowed(row.elem))
			continue;
		for (int misaligned = 0; misaligned < 2; ++misaligned) {
			for (int hit = 0; hit < 2; ++hit) {
				alignas(16) uint8_t window[32] = {};
				uint8_t *target = window + 8 + misaligned;
				uint8_t before[32], compare[32], origin[32], old[32];
				in.fill(row, before);
				in.fill(row, origin);
				std::memcpy(compare, before, row.size);
				if (!hit)
					compare[0] ^= 1; /* differs in one bit */
				std::memcpy(target, before, row.size);
				compareAndSwap(row.elem, target, compare, origin, old);
				EXPECT_EQ(std::memcmp(old, before, row.size), 0) << row.name;
				EXPECT_EQ(std::memcmp(target, hit ? origin : before, row.size), 0)
					<< row.name << (hit ? " hit" : " miss") << (misaligned ? " misaligned" : "");
				EXPECT_EQ(window[7 + misaligned], 0);
				EXPECT_EQ(target[row.size], 0);
			}
		}
	}
}

TEST(OpFastPathTest, FetchAdd64MatchesApplyOp)
{
	for (const TypeRow &row : kRows) {
		EXPECT_EQ(isFetchAdd64(Op::Sum, row.elem),
			  row.size == 8 && (row.kind == Kind::SInt || row.kind == Kind::UInt))
			<< row.name;
	}
	EXPECT_FALSE(isFetchAdd64(Op::Prod, uint8_t(BasicType::Int64)));
	alignas(8) uint64_t a = 40, b = 40;
	uint64_t o = uint64_t(-2), oldA = 0, oldB = 0;
	fetchAdd64(&a, &o, &oldA);
	applyOp(Op::Sum, uint8_t(BasicType::Uint64), &b, &o, &oldB, 1);
	EXPECT_EQ(a, 38u);
	EXPECT_EQ(a, b);
	EXPECT_EQ(oldA, 40u);
	EXPECT_EQ(oldA, oldB);
	fetchAdd64(&a, &o, nullptr);
	EXPECT_EQ(a, 36u);
}

/*
 * applyOpWord() against the plain kernel, for every op allowed on every
 * element of 1, 2 or 4 bytes, every lane position and count that fit one
 * word, and random values (integer SUM takes its own lane-wise add, whose
 * carries must stop at each lane's edge): the same new word, the same old
 * values, the bytes outside the lanes untouched.
 */
TEST(OpFastPathTest, WordUpdatesMatchThePlainKernel)
{
	std::mt19937_64 rng(12345);
	int checked = 0;
	for (Op op : kOps) {
		for (const TypeRow &row : kRows) {
			const uint32_t eb = elemBytes(row.elem);
			if (!mpiAllows(op, row.mpiClass) || (eb != 1 && eb != 2 && eb != 4) || !hardwareAtomic(op, row.elem))
				continue;
			for (uint32_t lane = 0; lane < 8; lane += eb) {
				for (size_t n = 2; lane + n * eb <= 8; ++n) {
					for (int trial = 0; trial < 20; ++trial) {
						alignas(8) uint64_t word = rng(), want = word;
						uint8_t origin[8], oldWord[8], oldPlain[8];
						const uint64_t o = trial % 4 == 0 ? ~uint64_t(0) : rng();
						std::memcpy(origin, &o, 8);
						auto *w = reinterpret_cast<std::byte *>(&word) + lane;
						auto *p = reinterpret_cast<std::byte *>(&want) + lane;
						ASSERT_TRUE(wordAt(op, row.elem, w, n)) << row.name;
						applyOpWord(op, row.elem, w, origin, oldWord, n);
						applyOpPlain(op, row.elem, p, origin, oldPlain, n);
						ASSERT_EQ(word, want) << opName(op) << " " << row.name << " lane " << lane
								      << " n " << n << " trial " << trial;
						ASSERT_EQ(std::memcmp(oldWord, oldPlain, eb * n), 0)
							<< opName(op) << " " << row.name << " lane " << lane << " n " << n;
						++checked;
					}
				}
			}
		}
	}
	EXPECT_GT(checked, 1000);
}

/* The fast path's table says what the class and size tests say, for every pair. */
TEST(OpFastPathTest, FastAccTableAgreesWithTheTests)
{
	int atomic = 0, lanes = 0;
	for (uint32_t o = 0; o < kOpLimit; ++o) {
		for (uint32_t e = 0; e < kElemLimit; ++e) {
			const Op op = static_cast<Op>(o);
			const auto elem = static_cast<uint8_t>(e);
			const uint8_t k = fastAccKind(op, elem);
			const ElemClass c = elemClass(elem);
			const bool integer = c == ElemClass::CInteger || c == ElemClass::MultiLanguage;
			EXPECT_EQ((k & fastacc::kAtomic) != 0, hardwareAtomic(op, elem)) << o << "/" << e;
			EXPECT_EQ((k & fastacc::kAdd64) != 0, hardwareAtomic(op, elem) && isFetchAdd64(op, elem))
				<< o << "/" << e;
			EXPECT_EQ((k & fastacc::kLaneSum) != 0,
				  hardwareAtomic(op, elem) && op == Op::Sum && integer && elemBytes(elem) < 8)
				<< o << "/" << e;
			atomic += (k & fastacc::kAtomic) != 0;
			lanes += (k & fastacc::kLaneSum) != 0;
		}
	}
	EXPECT_GT(atomic, 50);
	EXPECT_GE(lanes, 6) << "at least int8/16/32 and uint8/16/32";
}

} /* namespace */
