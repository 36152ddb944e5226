/* SPDX-License-Identifier: MIT */
/*
 * The accumulate family's op x type matrix over real processes: every op on
 * every type class MPI allows it on (each integer width signed and unsigned,
 * the multi-language integers, float, double, long double, the complex
 * types, C_BOOL, BYTE, the pair types with ties), through rma_accumulate,
 * rma_get_accumulate and rma_fetch_and_op, with contiguous buffers and
 * derived datatypes on either side (NO_OP with the fetching calls only), checked element by element against a
 * reduction computed here, in every accumulate path (RMA_ACC_PATH) and
 * every synchronization mode. Bytes outside the target entries and outside
 * the result entries must not change.
 *
 * One job per (path, mode, ranks) issues every case of a round in one
 * epoch, each case on its own slot of the window, so the matrix stays fast.
 */
#include <gtest/gtest.h>

#include <algorithm>
#include <complex>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <set>
#include <sstream>
#include <string>
#include <tuple>
#include <type_traits>
#include <vector>

#include <rma/rma.h>

#include "support/multiproc.h"
#include "win/accumulate_test_util.h"
#include "win/window_test_util.h"

using namespace rmatest;

namespace {

/* ------------------------------------------------------------------------ */
/* The reference: values and reductions, written independently of lib/op   */
/* ------------------------------------------------------------------------ */

struct OpName {
	rma_op op;
	const char *name;
};

const OpName kOpNames[] = {
	{ RMA_MAX, "MAX" },       { RMA_MIN, "MIN" },       { RMA_SUM, "SUM" },         { RMA_PROD, "PROD" },
	{ RMA_LAND, "LAND" },     { RMA_BAND, "BAND" },     { RMA_LOR, "LOR" },         { RMA_BOR, "BOR" },
	{ RMA_LXOR, "LXOR" },     { RMA_BXOR, "BXOR" },     { RMA_MAXLOC, "MAXLOC" },   { RMA_MINLOC, "MINLOC" },
	{ RMA_REPLACE, "REPLACE" }, { RMA_NO_OP, "NO_OP" },
};

const char *opName(rma_op op)
{
	for (const OpName &o : kOpNames) {
		if (o.op == op)
			return o.name;
	}
	return "?";
}

bool isLogical(rma_op op) { return op == RMA_LAND || op == RMA_LOR || op == RMA_LXOR; }

/*
 * Integers of every width. Signed SUM/PROD use small values so the exact
 * result fits even int8_t (C leaves signed overflow undefined); unsigned
 * ones use every bit and wrap, as C defines. Logical ops see zeros often.
 */
template<typename T>
struct IntRef {
	using Type = T;
	static T gen(uint64_t h, rma_op op)
	{
		if (isLogical(op)) {
			static const int64_t pick[] = { 0, 0, 1, 5, -3 };
			return static_cast<T>(pick[h % 5]);
		}
		if (std::is_signed_v<T> && (op == RMA_SUM || op == RMA_PROD))
			return static_cast<T>(static_cast<int64_t>(h % 23) - 11);
		return static_cast<T>(h);
	}
	static T apply(T a, T b, rma_op op)
	{
		if (op == RMA_MAX)
			return a > b ? a : b;
		if (op == RMA_MIN)
			return a < b ? a : b;
		if (op == RMA_SUM) {
			if constexpr (std::is_signed_v<T>)
				return static_cast<T>(static_cast<int64_t>(a) + static_cast<int64_t>(b));
			else
				return static_cast<T>(static_cast<uint64_t>(a) + static_cast<uint64_t>(b));
		}
		if (op == RMA_PROD) {
			if constexpr (std::is_signed_v<T>)
				return static_cast<T>(static_cast<int64_t>(a) * static_cast<int64_t>(b));
			else
				return static_cast<T>(static_cast<uint64_t>(a) * static_cast<uint64_t>(b));
		}
		if (op == RMA_LAND)
			return static_cast<T>((a != 0 && b != 0) ? 1 : 0);
		if (op == RMA_LOR)
			return static_cast<T>((a != 0 || b != 0) ? 1 : 0);
		if (op == RMA_LXOR)
			return static_cast<T>(((a != 0) != (b != 0)) ? 1 : 0);
		if (op == RMA_BAND)
			return static_cast<T>(a & b);
		if (op == RMA_BOR)
			return static_cast<T>(a | b);
		if (op == RMA_BXOR)
			return static_cast<T>(a ^ b);
		if (op == RMA_REPLACE)
			return b;
		return a; /* NO_OP */
	}
	static bool equal(T a, T b) { return a == b; }
	static std::string show(T a)
	{
		if constexpr (std::is_signed_v<T>)
			return std::to_string(static_cast<long long>(a));
		else
			return std::to_string(static_cast<unsigned long long>(a));
	}
};

/* Floating point: halves in [-8, 8], so every sum and product is exact. */
template<typename T>
struct FloatRef {
	using Type = T;
	static T gen(uint64_t h, rma_op) { return static_cast<T>(static_cast<int64_t>(h % 33) - 16) / T(2); }
	static T apply(T a, T b, rma_op op)
	{
		if (op == RMA_MAX)
			return a > b ? a : b;
		if (op == RMA_MIN)
			return a < b ? a : b;
		if (op == RMA_SUM)
			return a + b;
		if (op == RMA_PROD)
			return a * b;
		if (op == RMA_REPLACE)
			return b;
		return a;
	}
	static bool equal(T a, T b) { return a == b; }
	static std::string show(T a)
	{
		std::ostringstream s;
		s << static_cast<long double>(a);
		return s.str();
	}
};

/* Complex (layout of C's _Complex): exact halves again; the product by hand. */
template<typename T>
struct ComplexRef {
	using Type = std::complex<T>;
	static Type gen(uint64_t h, rma_op op)
	{
		return Type(FloatRef<T>::gen(h, op), FloatRef<T>::gen(mix({ h, 7 }), op));
	}
	static Type apply(Type a, Type b, rma_op op)
	{
		if (op == RMA_SUM)
			return Type(a.real() + b.real(), a.imag() + b.imag());
		if (op == RMA_PROD)
			return Type(a.real() * b.real() - a.imag() * b.imag(), a.real() * b.imag() + a.imag() * b.real());
		if (op == RMA_REPLACE)
			return b;
		return a;
	}
	static bool equal(Type a, Type b) { return a.real() == b.real() && a.imag() == b.imag(); }
	static std::string show(Type a)
	{
		return "(" + FloatRef<T>::show(a.real()) + "," + FloatRef<T>::show(a.imag()) + ")";
	}
};

struct BoolRef {
	using Type = bool;
	static bool gen(uint64_t h, rma_op) { return (h & 1) != 0; }
	static bool apply(bool a, bool b, rma_op op)
	{
		if (op == RMA_LAND)
			return a && b;
		if (op == RMA_LOR)
			return a || b;
		if (op == RMA_LXOR)
			return a != b;
		if (op == RMA_REPLACE)
			return b;
		return a;
	}
	static bool equal(bool a, bool b) { return a == b; }
	static std::string show(bool a) { return a ? "true" : "false"; }
};

/* RMA_BYTE: an uninterpreted octet; bitwise ops only. */
struct ByteRef {
	using Type = uint8_t;
	static uint8_t gen(uint64_t h, rma_op) { return static_cast<uint8_t>(h); }
	static uint8_t apply(uint8_t a, uint8_t b, rma_op op)
	{
		if (op == RMA_BAND)
			return static_cast<uint8_t>(a & b);
		if (op == RMA_BOR)
			return static_cast<uint8_t>(a | b);
		if (op == RMA_BXOR)
			return static_cast<uint8_t>(a ^ b);
		if (op == RMA_REPLACE)
			return b;
		return a;
	}
	static bool equal(uint8_t a, uint8_t b) { return a == b; }
	static std::string show(uint8_t a) { return std::to_string(a); }
};

/* The pair types: C structs {value; int index}. Few values, so ties are common. */
template<typename V>
struct PairOf {
	V v;
	int i;
};

template<typename V>
struct PairRef {
	using Type = PairOf<V>;
	static Type gen(uint64_t h, rma_op)
	{
		Type p{};
		p.v = static_cast<V>(1 + h % 3);
		p.i = static_cast<int>((h >> 8) % 6);
		return p;
	}
	static Type apply(Type a, Type b, rma_op op)
	{
		if (op == RMA_MAXLOC || op == RMA_MINLOC) {
			bool aWins = op == RMA_MAXLOC ? a.v > b.v : a.v < b.v;
			bool bWins = op == RMA_MAXLOC ? b.v > a.v : b.v < a.v;
			if (aWins)
				return a;
			if (bWins)
				return b;
			Type r = a;
			r.i = std::min(a.i, b.i); /* a tie keeps the smaller index */
			return r;
		}
		if (op == RMA_REPLACE)
			return b;
		return a;
	}
	static bool equal(Type a, Type b) { return a.v == b.v && a.i == b.i; }
	static std::string show(Type a)
	{
		return "{" + FloatRef<long double>::show(static_cast<long double>(a.v)) + "," + std::to_string(a.i) + "}";
	}
};

/* One basic type, type-erased: how to make values, reduce and compare them. */
struct BasicType {
	std::string name;
	rma_datatype type;
	size_t size;
	std::vector<rma_op> ops;
	void (*gen)(void *out, uint64_t h, rma_op op);
	void (*apply)(void *target, const void *origin, rma_op op); /* target = op(target, origin) */
	bool (*equal)(const void *a, const void *b);
	std::string (*show)(const void *a);
};

template<typename Ref>
BasicType basic(const char *name, rma_datatype type, std::vector<rma_op> ops)
{
	using T = typename Ref::Type;
	BasicType b;
	b.name = name;
	b.type = type;
	b.size = sizeof(T);
	b.ops = std::move(ops);
	b.gen = [](void *out, uint64_t h, rma_op op) {
		T v = Ref::gen(h, op);
		std::memcpy(out, &v, sizeof(T));
	};
	b.apply = [](void *target, const void *origin, rma_op op) {
		T a, o;
		std::memcpy(&a, target, sizeof(T));
		std::memcpy(&o, origin, sizeof(T));
		T r = Ref::apply(a, o, op);
		std::memcpy(target, &r, sizeof(T));
	};
	b.equal = [](const void *x, const void *y) {
		T a, c;
		std::memcpy(&a, x, sizeof(T));
		std::memcpy(&c, y, sizeof(T));
		return Ref::equal(a, c);
	};
	b.show = [](const void *x) {
		T a;
		std::memcpy(&a, x, sizeof(T));
		return Ref::show(a);
	};
	return b;
}

/* Every type class MPI allows in the accumulate family, with the ops it allows on each. */
std::vector<BasicType> allBasicTypes()
{
	const std::vector<rma_op> intOps = { RMA_MAX,  RMA_MIN,  RMA_SUM,  RMA_PROD, RMA_LAND,    RMA_LOR,
					     RMA_LXOR, RMA_BAND, RMA_BOR,  RMA_BXOR, RMA_REPLACE, RMA_NO_OP };
	/* The multi-language integers (AINT, OFFSET, COUNT) take no logical ops. */
	const std::vector<rma_op> multiOps = { RMA_MAX, RMA_MIN,  RMA_SUM,     RMA_PROD, RMA_BAND,
					       RMA_BOR, RMA_BXOR, RMA_REPLACE, RMA_NO_OP };
	const std::vector<rma_op> floatOps = { RMA_MAX, RMA_MIN, RMA_SUM, RMA_PROD, RMA_REPLACE, RMA_NO_OP };
	const std::vector<rma_op> complexOps = { RMA_SUM, RMA_PROD, RMA_REPLACE, RMA_NO_OP };
	const std::vector<rma_op> boolOps = { RMA_LAND, RMA_LOR, RMA_LXOR, RMA_REPLACE, RMA_NO_OP };
	const std::vector<rma_op> byteOps = { RMA_BAND, RMA_BOR, RMA_BXOR, RMA_REPLACE, RMA_NO_OP };
	const std::vector<rma_op> pairOps = { RMA_MAXLOC, RMA_MINLOC, RMA_REPLACE, RMA_NO_OP };
	return {
		basic<IntRef<signed char>>("SIGNED_CHAR", RMA_SIGNED_CHAR, intOps),
		basic<IntRef<unsigned char>>("UNSIGNED_CHAR", RMA_UNSIGNED_CHAR, intOps),
		basic<IntRef<short>>("SHORT", RMA_SHORT, intOps),
		basic<IntRef<unsigned short>>("UNSIGNED_SHORT", RMA_UNSIGNED_SHORT, intOps),
		basic<IntRef<int>>("INT", RMA_INT, intOps),
		basic<IntRef<unsigned>>("UNSIGNED", RMA_UNSIGNED, intOps),
		basic<IntRef<long>>("LONG", RMA_LONG, intOps),
		basic<IntRef<unsigned long>>("UNSIGNED_LONG", RMA_UNSIGNED_LONG, intOps),
		basic<IntRef<long long>>("LONG_LONG", RMA_LONG_LONG, intOps),
		basic<IntRef<unsigned long long>>("UNSIGNED_LONG_LONG", RMA_UNSIGNED_LONG_LONG, intOps),
		basic<IntRef<int8_t>>("INT8_T", RMA_INT8_T, intOps),
		basic<IntRef<int16_t>>("INT16_T", RMA_INT16_T, intOps),
		basic<IntRef<int32_t>>("INT32_T", RMA_INT32_T, intOps),
		basic<IntRef<int64_t>>("INT64_T", RMA_INT64_T, intOps),
		basic<IntRef<uint8_t>>("UINT8_T", RMA_UINT8_T, intOps),
		basic<IntRef<uint16_t>>("UINT16_T", RMA_UINT16_T, intOps),
		basic<IntRef<uint32_t>>("UINT32_T", RMA_UINT32_T, intOps),
		basic<IntRef<uint64_t>>("UINT64_T", RMA_UINT64_T, intOps),
		basic<IntRef<rma_aint>>("AINT", RMA_AINT, multiOps),
		basic<IntRef<rma_offset>>("OFFSET", RMA_OFFSET, multiOps),
		basic<IntRef<rma_count>>("COUNT", RMA_COUNT, multiOps),
		basic<FloatRef<float>>("FLOAT", RMA_FLOAT, floatOps),
		basic<FloatRef<double>>("DOUBLE", RMA_DOUBLE, floatOps),
		basic<FloatRef<long double>>("LONG_DOUBLE", RMA_LONG_DOUBLE, floatOps),
		basic<ComplexRef<float>>("C_FLOAT_COMPLEX", RMA_C_FLOAT_COMPLEX, complexOps),
		basic<ComplexRef<double>>("C_DOUBLE_COMPLEX", RMA_C_DOUBLE_COMPLEX, complexOps),
		basic<ComplexRef<long double>>("C_LONG_DOUBLE_COMPLEX", RMA_C_LONG_DOUBLE_COMPLEX, complexOps),
		basic<BoolRef>("C_BOOL", RMA_C_BOOL, boolOps),
		basic<ByteRef>("BYTE", RMA_BYTE, byteOps),
		basic<PairRef<float>>("FLOAT_INT", RMA_FLOAT_INT, pairOps),
		basic<PairRef<double>>("DOUBLE_INT", RMA_DOUBLE_INT, pairOps),
		basic<PairRef<long>>("LONG_INT", RMA_LONG_INT, pairOps),
		basic<PairRef<int>>("2INT", RMA_2INT, pairOps),
		basic<PairRef<short>>("SHORT_INT", RMA_SHORT_INT, pairOps),
		basic<PairRef<long double>>("LONG_DOUBLE_INT", RMA_LONG_DOUBLE_INT, pairOps),
	};
}

/* ------------------------------------------------------------------------ */
/* Layouts: which elements of a slot each side touches                      */
/* ------------------------------------------------------------------------ */

constexpr int kSlotElements = 8;

enum class Shape {
	Basic,   /* the basic type itself */
	Contig4, /* contiguous(4) */
	Vec412,  /* vector(4, 1, 2): elements 0 2 4 6, extent 7 */
	Idx,     /* indexed({2,1,1}, {0,3,5}): elements 0 1 3 5, extent 6 */
	Vec213,  /* vector(2, 1, 3): elements 0 3, extent 4 */
};

struct Side {
	int count;
	Shape shape;
};

struct Layout {
	const char *name;
	Side origin, target, result;
};

/* Four basic elements per side; derived types on the origin, target and result sides. */
const Layout kLayouts[] = {
	{ "contiguous", { 4, Shape::Basic }, { 4, Shape::Basic }, { 4, Shape::Basic } },
	{ "vector_to_indexed", { 1, Shape::Vec412 }, { 1, Shape::Idx }, { 1, Shape::Vec412 } },
	{ "indexed_to_contiguous", { 1, Shape::Idx }, { 1, Shape::Contig4 }, { 1, Shape::Idx } },
	{ "basic_to_2_vectors", { 4, Shape::Basic }, { 2, Shape::Vec213 }, { 1, Shape::Contig4 } },
};

const Layout kSingle = { "single", { 1, Shape::Basic }, { 1, Shape::Basic }, { 1, Shape::Basic } };

/* Element indices (in basic elements from the buffer start) that @s covers, in type-map order. */
std::vector<int> positions(Side s)
{
	std::vector<int> one;
	int extent = 1;
	switch (s.shape) {
	case Shape::Basic: one = { 0 }; extent = 1; break;
	case Shape::Contig4: one = { 0, 1, 2, 3 }; extent = 4; break;
	case Shape::Vec412: one = { 0, 2, 4, 6 }; extent = 7; break;
	case Shape::Idx: one = { 0, 1, 3, 5 }; extent = 6; break;
	case Shape::Vec213: one = { 0, 3 }; extent = 4; break;
	}
	std::vector<int> out;
	for (int c = 0; c < s.count; ++c) {
		for (int p : one)
			out.push_back(c * extent + p);
	}
	return out;
}

/* The derived types of one basic type (committed; free with freeDerived). */
struct Derived {
	rma_datatype contig4 = RMA_DATATYPE_NULL, vec412 = RMA_DATATYPE_NULL, idx = RMA_DATATYPE_NULL,
		     vec213 = RMA_DATATYPE_NULL;
};

Derived makeDerived(rma_datatype basicType)
{
	Derived d;
	EXPECT_EQ(rma_type_contiguous(4, basicType, &d.contig4), RMA_SUCCESS);
	EXPECT_EQ(rma_type_vector(4, 1, 2, basicType, &d.vec412), RMA_SUCCESS);
	const int lengths[] = { 2, 1, 1 }, disps[] = { 0, 3, 5 };
	EXPECT_EQ(rma_type_indexed(3, lengths, disps, basicType, &d.idx), RMA_SUCCESS);
	EXPECT_EQ(rma_type_vector(2, 1, 3, basicType, &d.vec213), RMA_SUCCESS);
	for (rma_datatype *t : { &d.contig4, &d.vec412, &d.idx, &d.vec213 })
		EXPECT_EQ(rma_type_commit(t), RMA_SUCCESS);
	return d;
}

void freeDerived(Derived &d)
{
	for (rma_datatype *t : { &d.contig4, &d.vec412, &d.idx, &d.vec213 })
		EXPECT_EQ(rma_type_free(t), RMA_SUCCESS);
}

rma_datatype typeOf(Shape s, rma_datatype basicType, const Derived &d)
{
	switch (s) {
	case Shape::Basic: return basicType;
	case Shape::Contig4: return d.contig4;
	case Shape::Vec412: return d.vec412;
	case Shape::Idx: return d.idx;
	case Shape::Vec213: return d.vec213;
	}
	return RMA_DATATYPE_NULL;
}

/* ------------------------------------------------------------------------ */
/* Cases, rounds, modes                                                     */
/* ------------------------------------------------------------------------ */

enum class Fn { Accumulate, GetAccumulate, FetchAndOp };

const char *fnName(Fn f)
{
	switch (f) {
	case Fn::Accumulate: return "accumulate";
	case Fn::GetAccumulate: return "get_accumulate";
	case Fn::FetchAndOp: return "fetch_and_op";
	}
	return "?";
}

struct Case {
	size_t type;          /* index in the basic types */
	rma_op op;
	const Layout *layout;
	size_t offset;        /* of its slot, in bytes: in the window and in the origin and result buffers */
};

std::vector<Case> planRound(Fn fn, const std::vector<BasicType> &types, size_t &bytes)
{
	std::vector<Case> cases;
	size_t off = 0;
	for (size_t t = 0; t < types.size(); ++t) {
		for (rma_op op : types[t].ops) {
			if (fn == Fn::Accumulate && op == RMA_NO_OP)
				continue; /* only the fetching calls take NO_OP (an error case elsewhere) */
			auto add = [&](const Layout *l) {
				cases.push_back({ t, op, l, off });
				off += (kSlotElements * types[t].size + 63) / 64 * 64;
			};
			if (fn == Fn::FetchAndOp) {
				add(&kSingle);
			} else {
				for (const Layout &l : kLayouts)
					add(&l);
			}
		}
	}
	bytes = off;
	return cases;
}

enum class Mode { Fence, LockExclusive, LockAllFlush, Pscw };

const char *modeName(Mode m)
{
	switch (m) {
	case Mode::Fence: return "Fence";
	case Mode::LockExclusive: return "LockExclusive";
	case Mode::LockAllFlush: return "LockAllFlush";
	case Mode::Pscw: return "Pscw";
	}
	return "?";
}

/* Collects mismatches; prints the first few in full and a summary of which cases failed. */
class Mismatches
{
public:
	void add(const std::string &caseName, const std::string &detail)
	{
		if (count_++ < 25)
			ADD_FAILURE() << caseName << ": " << detail;
		failedCases_.insert(caseName);
	}
	~Mismatches()
	{
		if (count_ == 0)
			return;
		std::string list;
		int n = 0;
		for (const std::string &c : failedCases_) {
			if (n++ == 60) {
				list += " ...";
				break;
			}
			list += "\n  " + c;
		}
		ADD_FAILURE() << count_ << " mismatches in " << failedCases_.size() << " cases:" << list;
	}

private:
	long count_ = 0;
	std::set<std::string> failedCases_;
};

/* Seeds of the values: target's initial data, origin data, result sentinels. */
enum Role : uint64_t { TargetInit = 1, OriginData = 2, ResultFill = 3 };

uint64_t seed(int rank, Role role, Fn fn, size_t caseIndex, int element)
{
	return mix({ static_cast<uint64_t>(rank), role, static_cast<uint64_t>(fn), caseIndex,
		     static_cast<uint64_t>(element) });
}

/* Open / close an epoch on @win in @mode, the origin accessing @right, @left accessing us. */
struct Epoch {
	Mode mode;
	rma_win win;
	int rank, left, right;

	int open() const
	{
		switch (mode) {
		case Mode::Fence: return rma_win_fence(0, win);
		case Mode::LockExclusive: return rma_win_lock(RMA_LOCK_EXCLUSIVE, right, 0, win);
		case Mode::LockAllFlush: return rma_win_lock_all(0, win);
		case Mode::Pscw: {
			rma_group origins = pairGroup(left, left), targets = pairGroup(right, right);
			int rc = rma_win_post(origins, 0, win);
			if (rc == RMA_SUCCESS)
				rc = rma_win_start(targets, 0, win);
			rma_group_free(&origins);
			rma_group_free(&targets);
			return rc;
		}
		}
		return -1;
	}
	/* After it, the origin's operations are complete (fetched data in place). */
	int completeOrigin() const
	{
		switch (mode) {
		case Mode::Fence: return rma_win_fence(0, win);
		case Mode::LockExclusive: return rma_win_unlock(right, win);
		case Mode::LockAllFlush: return rma_win_flush(right, win);
		case Mode::Pscw: return rma_win_complete(win);
		}
		return -1;
	}
	/* After it, every operation on this rank's memory is visible here. */
	int completeTarget() const
	{
		int rc = RMA_SUCCESS;
		switch (mode) {
		case Mode::Fence: break;
		case Mode::LockExclusive: rc = rma_barrier(RMA_COMM_WORLD); break;
		case Mode::LockAllFlush:
			rc = rma_win_unlock_all(win);
			if (rc == RMA_SUCCESS)
				rc = rma_barrier(RMA_COMM_WORLD);
			break;
		case Mode::Pscw: rc = rma_win_wait(win); break;
		}
		rma_win_sync(win);
		return rc;
	}
};

struct Matrix {
	std::vector<BasicType> types;
	std::vector<Derived> derived;

	std::string caseName(Fn fn, const Case &c) const
	{
		return std::string(fnName(fn)) + " " + types[c.type].name + " " + opName(c.op) + " " + c.layout->name;
	}

	/* One round: every case of @fn issued to the right neighbour in one epoch, then checked on both sides. */
	void round(Fn fn, TestWindow &w, Mode mode)
	{
		const int rank = worldRank(), size = worldSize();
		const int right = (rank + 1) % size, left = (rank + size - 1) % size;
		size_t bytes = 0;
		std::vector<Case> cases = planRound(fn, types, bytes);
		std::vector<std::byte> origin(bytes), result(bytes);
		for (size_t ci = 0; ci < cases.size(); ++ci) {
			const Case &c = cases[ci];
			const BasicType &t = types[c.type];
			for (int j = 0; j < kSlotElements; ++j) {
				t.gen(w.local + c.offset + j * t.size, seed(rank, TargetInit, fn, ci, j), c.op);
				t.gen(origin.data() + c.offset + j * t.size, seed(rank, OriginData, fn, ci, j), c.op);
				t.gen(result.data() + c.offset + j * t.size, seed(rank, ResultFill, fn, ci, j), RMA_REPLACE);
			}
		}
		ASSERT_EQ(rma_barrier(RMA_COMM_WORLD), RMA_SUCCESS); /* every window holds its initial data */

		Mismatches bad;
		Epoch e{ mode, w.win, rank, left, right };
		ASSERT_EQ(e.open(), RMA_SUCCESS) << modeName(mode);
		for (size_t ci = 0; ci < cases.size(); ++ci) {
			const Case &c = cases[ci];
			const BasicType &t = types[c.type];
			const Derived &d = derived[c.type];
			const Layout &l = *c.layout;
			const std::byte *o = origin.data() + c.offset;
			std::byte *r = result.data() + c.offset;
			const rma_aint disp = w.disp(right, static_cast<rma_aint>(c.offset));
			int rc = RMA_ERR_OTHER;
			switch (fn) {
			case Fn::Accumulate:
				rc = rma_accumulate(o, l.origin.count, typeOf(l.origin.shape, t.type, d), right, disp,
						    l.target.count, typeOf(l.target.shape, t.type, d), c.op, w.win);
				break;
			case Fn::GetAccumulate:
				/* NO_OP ignores the origin buffer: give none. */
				rc = rma_get_accumulate(c.op == RMA_NO_OP ? nullptr : o, l.origin.count,
							typeOf(l.origin.shape, t.type, d), r, l.result.count,
							typeOf(l.result.shape, t.type, d), right, disp, l.target.count,
							typeOf(l.target.shape, t.type, d), c.op, w.win);
				break;
			case Fn::FetchAndOp:
				rc = rma_fetch_and_op(c.op == RMA_NO_OP ? nullptr : o, r, t.type, right, disp, c.op, w.win);
				break;
			}
			if (rc != RMA_SUCCESS)
				bad.add(caseName(fn, c), "the call failed: " + errorText(rc));
		}
		ASSERT_EQ(e.completeOrigin(), RMA_SUCCESS) << modeName(mode);

		/* Fetched data: the right neighbour's initial values at the target entries; sentinels elsewhere. */
		if (fn != Fn::Accumulate) {
			for (size_t ci = 0; ci < cases.size(); ++ci) {
				const Case &c = cases[ci];
				const BasicType &t = types[c.type];
				std::vector<int> tp = positions(c.layout->target), rp = positions(c.layout->result);
				std::vector<std::byte> want(kSlotElements * t.size);
				for (int j = 0; j < kSlotElements; ++j)
					t.gen(want.data() + j * t.size, seed(rank, ResultFill, fn, ci, j), RMA_REPLACE);
				for (size_t k = 0; k < tp.size(); ++k)
					t.gen(want.data() + rp[k] * t.size, seed(right, TargetInit, fn, ci, tp[k]), c.op);
				for (int j = 0; j < kSlotElements; ++j) {
					const std::byte *got = result.data() + c.offset + j * t.size;
					if (!t.equal(got, want.data() + j * t.size))
						bad.add(caseName(fn, c), "result element " + std::to_string(j) + " is " +
										 t.show(got) + ", want " +
										 t.show(want.data() + j * t.size));
				}
			}
		}
		ASSERT_EQ(e.completeTarget(), RMA_SUCCESS) << modeName(mode);

		/* My window: op(initial, left's origin data) at the target entries, initial data elsewhere. */
		for (size_t ci = 0; ci < cases.size(); ++ci) {
			const Case &c = cases[ci];
			const BasicType &t = types[c.type];
			std::vector<int> opos = positions(c.layout->origin), tp = positions(c.layout->target);
			std::vector<std::byte> want(kSlotElements * t.size), in(t.size);
			for (int j = 0; j < kSlotElements; ++j)
				t.gen(want.data() + j * t.size, seed(rank, TargetInit, fn, ci, j), c.op);
			for (size_t k = 0; k < tp.size(); ++k) {
				t.gen(in.data(), seed(left, OriginData, fn, ci, opos[k]), c.op);
				t.apply(want.data() + tp[k] * t.size, in.data(), c.op);
			}
			for (int j = 0; j < kSlotElements; ++j) {
				const std::byte *got = w.local + c.offset + j * t.size;
				if (!t.equal(got, want.data() + j * t.size))
					bad.add(caseName(fn, c), "target element " + std::to_string(j) + " is " + t.show(got) +
									 ", want " + t.show(want.data() + j * t.size));
			}
		}
		/* Nobody refills the window before everyone has checked it. */
		ASSERT_EQ(rma_barrier(RMA_COMM_WORLD), RMA_SUCCESS);
	}
};

class AccumulateMatrixTest : public ::testing::TestWithParam<std::tuple<AccPath, Mode, int>>
{
};

TEST_P(AccumulateMatrixTest, EveryOpOnEveryTypeMatchesTheReference)
{
	auto [path, mode, ranks] = GetParam();
	AccKnobs knobs(path);
	EXPECT_RANKS_PASS(runRanks(ranks, [mode = mode](int) {
		ASSERT_EQ(rma_init(nullptr, nullptr), RMA_SUCCESS);
		Matrix m;
		m.types = allBasicTypes();
		for (const BasicType &t : m.types)
			m.derived.push_back(makeDerived(t.type));
		size_t bytes = 0, most = 0;
		for (Fn fn : { Fn::Accumulate, Fn::GetAccumulate, Fn::FetchAndOp }) {
			planRound(fn, m.types, bytes);
			most = std::max(most, bytes);
		}
		TestWindow w;
		ASSERT_TRUE(makeWindow(Kind::Allocate, most, 1, w));
		for (Fn fn : { Fn::Accumulate, Fn::GetAccumulate, Fn::FetchAndOp }) {
			SCOPED_TRACE(fnName(fn));
			m.round(fn, w, mode);
		}
		if (mode == Mode::Fence) {
			ASSERT_EQ(rma_win_fence(RMA_MODE_NOSUCCEED, w.win), RMA_SUCCESS);
		}
		for (Derived &d : m.derived)
			freeDerived(d);
		freeWindow(w);
		ASSERT_EQ(rma_finalize(), RMA_SUCCESS);
	}));
}

std::string matrixName(const ::testing::TestParamInfo<std::tuple<AccPath, Mode, int>> &info)
{
	return std::string(accPathName(std::get<0>(info.param))) + "_" + modeName(std::get<1>(info.param)) + "_" +
	       std::to_string(std::get<2>(info.param)) + "ranks";
}

INSTANTIATE_TEST_SUITE_P(AllPathsAndModes, AccumulateMatrixTest,
			 ::testing::Combine(::testing::Values(AccPath::Auto, AccPath::Origin, AccPath::Ring),
					    ::testing::Values(Mode::Fence, Mode::LockExclusive, Mode::LockAllFlush,
							      Mode::Pscw),
					    ::testing::Values(2, 4)),
			 matrixName);

} /* namespace */
