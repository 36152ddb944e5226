/* SPDX-License-Identifier: MIT */
/*
 * Datatypes: the predefined types, the constructors and the summary of a
 * type (bounds, size, signature), computed at construction from the
 * children's summaries. Flattening is in type_map.cpp, signatures in
 * signature.cpp.
 */
#include "datatype/datatype.h"

#include <complex.h>
#include <stddef.h>
#include <wchar.h>

#include <cstdio>

#include "common/result.h"
#include "error/error.h"

namespace librma {

namespace {

constexpr Datatype basic(const char *name, rma_count size, size_t alignment, BasicType type)
{
	Datatype t;
	t.name = name;
	t.size = size;
	t.elements = 1;
	t.extent = size;
	t.trueExtent = size;
	t.alignment = static_cast<uint16_t>(alignment);
	t.basic = type;
	t.handleIndex = static_cast<uint8_t>(type);
	t.predefined = true;
	t.committed = true;
	t.contiguous = true;
	return t;
}

using B = BasicType;

#define RMA_BASIC_(name, ctype, type) basic(name, sizeof(ctype), alignof(ctype), type)

} /* namespace */

/* Indexed by BasicType (== the index in the predefined handle). */
const Datatype kPredefinedTypes[static_cast<int>(BasicType::Last) + 1] = {
	Datatype{},
	RMA_BASIC_("RMA_CHAR", char, B::Char),
	RMA_BASIC_("RMA_SIGNED_CHAR", signed char, B::SignedChar),
	RMA_BASIC_("RMA_UNSIGNED_CHAR", unsigned char, B::UnsignedChar),
	RMA_BASIC_("RMA_BYTE", unsigned char, B::Byte),
	RMA_BASIC_("RMA_SHORT", short, B::Short),
	RMA_BASIC_("RMA_UNSIGNED_SHORT", unsigned short, B::UnsignedShort),
	RMA_BASIC_("RMA_INT", int, B::Int),
	RMA_BASIC_("RMA_UNSIGNED", unsigned, B::Unsigned),
	RMA_BASIC_("RMA_LONG", long, B::Long),
	RMA_BASIC_("RMA_UNSIGNED_LONG", unsigned long, B::UnsignedLong),
	RMA_BASIC_("RMA_LONG_LONG", long long, B::LongLong),
	RMA_BASIC_("RMA_UNSIGNED_LONG_LONG", unsigned long long, B::UnsignedLongLong),
	RMA_BASIC_("RMA_FLOAT", float, B::Float),
	RMA_BASIC_("RMA_DOUBLE", double, B::Double),
	RMA_BASIC_("RMA_LONG_DOUBLE", long double, B::LongDouble),
	RMA_BASIC_("RMA_WCHAR", wchar_t, B::Wchar),
	RMA_BASIC_("RMA_C_BOOL", bool, B::Bool),
	RMA_BASIC_("RMA_INT8_T", int8_t, B::Int8),
	RMA_BASIC_("RMA_INT16_T", int16_t, B::Int16),
	RMA_BASIC_("RMA_INT32_T", int32_t, B::Int32),
	RMA_BASIC_("RMA_INT64_T", int64_t, B::Int64),
	RMA_BASIC_("RMA_UINT8_T", uint8_t, B::Uint8),
	RMA_BASIC_("RMA_UINT16_T", uint16_t, B::Uint16),
	RMA_BASIC_("RMA_UINT32_T", uint32_t, B::Uint32),
	RMA_BASIC_("RMA_UINT64_T", uint64_t, B::Uint64),
	RMA_BASIC_("RMA_C_FLOAT_COMPLEX", float _Complex, B::FloatComplex),
	RMA_BASIC_("RMA_C_DOUBLE_COMPLEX", double _Complex, B::DoubleComplex),
	RMA_BASIC_("RMA_C_LONG_DOUBLE_COMPLEX", long double _Complex, B::LongDoubleComplex),
	RMA_BASIC_("RMA_AINT", rma_aint, B::Aint),
	RMA_BASIC_("RMA_OFFSET", rma_offset, B::Offset),
	RMA_BASIC_("RMA_COUNT", rma_count, B::Count),
	RMA_BASIC_("RMA_PACKED", unsigned char, B::Packed),
};

#undef RMA_BASIC_

namespace {

/* ---- Summaries ------------------------------------------------------------ */

/* Overflow-checked arithmetic on displacements and counts: @bad sticks. */
struct Checked {
	bool bad = false;

	int64_t add(int64_t a, int64_t b)
	{
		int64_t r;
		bad |= __builtin_add_overflow(a, b, &r);
		return r;
	}
	int64_t mul(int64_t a, int64_t b)
	{
		int64_t r;
		bad |= __builtin_mul_overflow(a, b, &r);
		return r;
	}
};

/* The bounds, size and alignment of (part of) a type map. */
struct Shape {
	bool bounded = false; /* it has entries or explicit bounds: lb/ub mean something */
	rma_aint lb = 0, ub = 0;
	bool data = false;    /* it has entries: trueLb/trueUb mean something */
	rma_aint trueLb = 0, trueUb = 0;
	rma_count size = 0, elements = 0;
	uint16_t alignment = 1;
	bool explicitBounds = false;
};

Shape shapeOf(const Datatype &t)
{
	Shape s;
	s.bounded = t.size > 0 || t.explicitBounds;
	s.lb = t.lb;
	s.ub = t.lb + t.extent;
	s.data = t.size > 0;
	s.trueLb = t.trueLb;
	s.trueUb = t.trueLb + t.trueExtent;
	s.size = t.size;
	s.elements = t.elements;
	s.alignment = t.alignment;
	s.explicitBounds = t.explicitBounds;
	return s;
}

/* @n copies of @u, @step bytes apart, shifted by @disp. */
Shape repeatShape(const Shape &u, rma_count n, rma_aint step, rma_aint disp, Checked &c)
{
	if (n == 0)
		return Shape{};
	Shape s = u;
	rma_aint span = c.mul(n - 1, step);
	rma_aint lo = std::min<rma_aint>(0, span) + disp;
	rma_aint hi = std::max<rma_aint>(0, span) + disp;
	s.lb = c.add(u.lb, lo);
	s.ub = c.add(u.ub, hi);
	if (u.data) {
		s.trueLb = c.add(u.trueLb, lo);
		s.trueUb = c.add(u.trueUb, hi);
	}
	s.size = c.mul(u.size, n);
	s.elements = c.mul(u.elements, n);
	return s;
}

void mergeShape(Shape &into, const Shape &s, Checked &c)
{
	if (s.bounded) {
		into.lb = into.bounded ? std::min(into.lb, s.lb) : s.lb;
		into.ub = into.bounded ? std::max(into.ub, s.ub) : s.ub;
		into.bounded = true;
	}
	if (s.data) {
		into.trueLb = into.data ? std::min(into.trueLb, s.trueLb) : s.trueLb;
		into.trueUb = into.data ? std::max(into.trueUb, s.trueUb) : s.trueUb;
		into.data = true;
	}
	into.size = c.add(into.size, s.size);
	into.elements = c.add(into.elements, s.elements);
	into.alignment = std::max(into.alignment, s.alignment);
	into.explicitBounds |= s.explicitBounds;
}

/* ---- Signatures ----------------------------------------------------------- */

/* The nodes of a signature subtree: the node at @i and its body. */
size_t sigSpan(const SignatureRun *sig, size_t i)
{
	return 1 + sig[i].body;
}

/* A signature being built: its nodes and where its last top-level node is. */
struct SignatureBuilder {
	Signature sig;
	size_t last = SIZE_MAX;
};

/* Append top-level node @r (with its body at @body when it is a repeat), merging it into the last one. */
void appendTop(SignatureBuilder &out, const SignatureRun &r, const SignatureRun *body, Checked &c)
{
	if (r.count == 0)
		return;
	if (out.last != SIZE_MAX) {
		SignatureRun &last = out.sig[out.last];
		if (!r.isRepeat() && !last.isRepeat() && last.type == r.type) {
			last.count = c.add(last.count, r.count);
			return;
		}
		if (r.isRepeat() && last.body == r.body &&
		    std::equal(body, body + r.body, &last + 1, [](const SignatureRun &a, const SignatureRun &b) {
			    return a.type == b.type && a.body == b.body && a.count == b.count;
		    })) {
			last.count = c.add(last.count, r.count);
			return;
		}
	}
	out.last = out.sig.size();
	out.sig.push_back(r);
	if (r.isRepeat())
		out.sig.insert(out.sig.end(), body, body + r.body);
}

/* Append @times copies of @in to @out, as a repeat (never expanded); false beyond kMaxRuns. */
bool appendSignature(SignatureBuilder &out, const Signature &in, rma_count times, Checked &c)
{
	if (times == 0 || in.empty())
		return true;
	const SignatureRun *u = in.data();
	if (times == 1) {
		for (size_t i = 0; i < in.size(); i += sigSpan(u, i))
			appendTop(out, u[i], u + i + 1, c);
	} else if (sigSpan(u, 0) == in.size()) {
		/* One run or one repeat: times as many of it. */
		SignatureRun top = u[0];
		top.count = c.mul(top.count, times);
		appendTop(out, top, u + 1, c);
	} else {
		if (in.size() >= UINT32_MAX)
			return false;
		appendTop(out, SignatureRun{ BasicType::None, static_cast<uint32_t>(in.size()), times }, u, c);
	}
	return out.sig.size() <= kMaxRuns;
}

/* ---- Construction --------------------------------------------------------- */

/* A derived type and its detail in one allocation; handles point at `type`. */
struct DerivedDatatype {
	Datatype type;
	TypeDetail detail;

	DerivedDatatype() { type.detail = &detail; }
	DerivedDatatype(const DerivedDatatype &) = delete;
	DerivedDatatype &operator=(const DerivedDatatype &) = delete;
};

std::shared_ptr<Datatype> newDerived()
{
	auto d = std::make_shared<DerivedDatatype>();
	return std::shared_ptr<Datatype>(d, &d->type);
}

void setName(Datatype &t, std::string name)
{
	if (name.size() >= RMA_MAX_OBJECT_NAME)
		name.resize(RMA_MAX_OBJECT_NAME - 4), name += "...";
	t.detail->name = std::move(name);
	t.name = t.detail->name.c_str();
}

[[gnu::cold]] int tooLarge(const char *call)
{
	return makeError(RMA_ERR_ARG, "%s: the new type's size or bounds overflow rma_aint", call);
}

/* Resized bounds of a recipe, when it has them. */
struct Bounds {
	rma_aint lb;
	rma_aint extent;
};

/*
 * A new type: @items repeated @repeat times @stride bytes apart, its
 * summary computed (struct padding when @combiner is Struct; @bounds
 * replaces lb and extent when given).
 */
int makeType(const char *call, Combiner combiner, std::vector<TypeItem> items, rma_count repeat, rma_aint stride,
	     const Bounds *bounds, std::shared_ptr<Datatype> &out)
{
	Checked c;
	Shape unit;
	for (const TypeItem &it : items)
		mergeShape(unit, repeatShape(shapeOf(*it.type), it.copies, it.type->extent, it.disp, c), c);
	Shape s = repeatShape(unit, repeat, stride, 0, c);
	if (combiner == Combiner::Struct && s.bounded && !s.explicitBounds) {
		/* MPI's epsilon: round the extent up to the strictest alignment inside. */
		rma_aint extent = c.add(s.ub, -s.lb);
		rma_aint pad = (s.alignment - extent % s.alignment) % s.alignment;
		s.ub = c.add(s.ub, pad);
	}
	if (bounds) {
		s.lb = bounds->lb;
		s.ub = c.add(bounds->lb, bounds->extent);
		s.bounded = true;
		s.explicitBounds = true;
	}
	c.add(s.ub, -s.lb);
	c.add(s.trueUb, -s.trueLb);
	if (c.bad)
		return tooLarge(call);
	/*
	 * The signature after the bounds: a type too large to exist is not
	 * expanded first. Beyond kMaxRuns nodes (millions of distinct runs), or
	 * made of a type whose signature is lazy, it is lazy too: none is kept,
	 * and the signature is walked from the recipe (signature.cpp).
	 */
	SignatureBuilder unitSig, whole;
	Signature scratch;
	bool lazy = false;
	for (const TypeItem &it : items) {
		if (it.type->detail && !it.type->detail->signature) {
			lazy = it.copies > 0 && it.type->elements > 0;
			if (lazy)
				break;
			continue;
		}
		if (!appendSignature(unitSig, signatureOf(*it.type, scratch), it.copies, c)) {
			lazy = true;
			break;
		}
	}
	if (!lazy && !appendSignature(whole, unitSig.sig, repeat, c))
		lazy = true;
	std::shared_ptr<Signature> sig;
	if (!lazy) {
		whole.sig.shrink_to_fit();
		sig = std::make_shared<Signature>(std::move(whole.sig));
	}

	std::shared_ptr<Datatype> t = newDerived();
	t->size = s.size;
	t->elements = s.elements;
	t->lb = s.bounded ? s.lb : 0;
	t->extent = s.bounded ? s.ub - s.lb : 0;
	t->trueLb = s.data ? s.trueLb : 0;
	t->trueExtent = s.data ? s.trueUb - s.trueLb : 0;
	t->alignment = s.alignment;
	t->explicitBounds = s.explicitBounds;
	t->basic = sig && sig->size() == 1 ? sig->front().type : BasicType::None;
	TypeDetail &d = *t->detail;
	d.combiner = combiner;
	d.items = std::move(items);
	d.repeat = repeat;
	d.stride = stride;
	d.signature = std::move(sig);
	out = std::move(t);
	return RMA_SUCCESS;
}

const char *combinerName(Combiner c)
{
	switch (c) {
	case Combiner::Named: return "named";
	case Combiner::Dup: return "dup";
	case Combiner::Contiguous: return "contiguous";
	case Combiner::Vector: return "vector";
	case Combiner::Hvector: return "hvector";
	case Combiner::Indexed: return "indexed";
	case Combiner::Hindexed: return "hindexed";
	case Combiner::IndexedBlock: return "indexed_block";
	case Combiner::HindexedBlock: return "hindexed_block";
	case Combiner::Struct: return "struct";
	case Combiner::Subarray: return "subarray";
	case Combiner::Resized: return "resized";
	}
	return "?";
}

/* A name for error messages: "vector(4, 1, 2, RMA_DOUBLE)", "struct(3: RMA_INT, ...)". */
std::string describe(const TypeArgs &a)
{
	char buf[RMA_MAX_OBJECT_NAME];
	const char *old = a.types.empty() ? "" : a.types[0]->name;
	const char *what = combinerName(a.combiner);
	auto ll = [](int64_t v) { return static_cast<long long>(v); };
	switch (a.combiner) {
	case Combiner::Contiguous:
		std::snprintf(buf, sizeof(buf), "%s(%lld, %s)", what, ll(a.count), old);
		break;
	case Combiner::Vector:
	case Combiner::Hvector:
		std::snprintf(buf, sizeof(buf), "%s(%lld, %lld, %lld, %s)", what, ll(a.count), ll(a.blocklength),
			      ll(a.stride), old);
		break;
	case Combiner::IndexedBlock:
	case Combiner::HindexedBlock:
		std::snprintf(buf, sizeof(buf), "%s(%lld x %lld, %s)", what, ll(a.count), ll(a.blocklength), old);
		break;
	case Combiner::Struct: {
		std::string s = std::string(what) + "(" + std::to_string(a.count) + ":";
		for (const auto &t : a.types)
			s += std::string(" ") + t->name + ",";
		s.back() = ')';
		return s;
	}
	case Combiner::Subarray: {
		std::string s = std::string(what) + "(";
		for (size_t i = 0; i < a.sizes.size(); ++i) {
			if (i)
				s += 'x';
			s += std::to_string(a.subsizes[i]);
			s += '/';
			s += std::to_string(a.sizes[i]);
		}
		return s + (a.order == RMA_ORDER_C ? " C, " : " Fortran, ") + old + ")";
	}
	case Combiner::Resized:
		std::snprintf(buf, sizeof(buf), "%s(%s, lb %lld, extent %lld)", what, old, ll(a.newLb),
			      ll(a.newExtent));
		break;
	default:
		std::snprintf(buf, sizeof(buf), "%s(%lld blocks, %s)", what, ll(a.count), old);
		break;
	}
	return buf;
}

/* The arguments as rma_type_get_contents returns them (MPI's layout per combiner). */
void recordContents(const TypeArgs &a, TypeDetail &d)
{
	d.largeCounts = a.largeCounts;
	d.types = a.types;
	/* Counts go to ints (array_of_large_counts for an _c constructor), displacements to aints. */
	std::vector<rma_count> counts;
	std::vector<rma_aint> aints;
	switch (a.combiner) {
	case Combiner::Contiguous:
		counts = { a.count };
		break;
	case Combiner::Vector:
		counts = { a.count, a.blocklength, a.stride };
		break;
	case Combiner::Hvector:
		counts = { a.count, a.blocklength };
		aints = { a.stride };
		break;
	case Combiner::Indexed:
		counts.push_back(a.count);
		counts.insert(counts.end(), a.blocklengths.begin(), a.blocklengths.end());
		counts.insert(counts.end(), a.disps.begin(), a.disps.end());
		break;
	case Combiner::Hindexed:
	case Combiner::Struct:
		counts.push_back(a.count);
		counts.insert(counts.end(), a.blocklengths.begin(), a.blocklengths.end());
		aints = a.disps;
		break;
	case Combiner::IndexedBlock:
		counts = { a.count, a.blocklength };
		counts.insert(counts.end(), a.disps.begin(), a.disps.end());
		break;
	case Combiner::HindexedBlock:
		counts = { a.count, a.blocklength };
		aints = a.disps;
		break;
	case Combiner::Subarray:
		/* ints {ndims, sizes, subsizes, starts, order}; _c: ints {ndims, order}, counts the rest. */
		counts.insert(counts.end(), a.sizes.begin(), a.sizes.end());
		counts.insert(counts.end(), a.subsizes.begin(), a.subsizes.end());
		counts.insert(counts.end(), a.starts.begin(), a.starts.end());
		if (a.largeCounts) {
			d.ints = { static_cast<int>(a.count), a.order };
			d.counts = std::move(counts);
		} else {
			d.ints.push_back(static_cast<int>(a.count));
			for (rma_count v : counts)
				d.ints.push_back(static_cast<int>(v));
			d.ints.push_back(a.order);
		}
		return;
	case Combiner::Resized:
		aints = { a.newLb, a.newExtent };
		break;
	default:
		break;
	}
	if (!a.largeCounts) {
		for (rma_count v : counts)
			d.ints.push_back(static_cast<int>(v));
		d.aints = std::move(aints);
		return;
	}
	/* MPI-4: a large-count constructor returns every count and displacement as a large count. */
	d.counts = std::move(counts);
	d.counts.insert(d.counts.end(), aints.begin(), aints.end());
}

[[gnu::cold]] int badArg(const char *call, const char *what, long long value)
{
	return makeError(RMA_ERR_ARG, "%s: %s is %lld", call, what, value);
}

/* Validate @a; RMA_SUCCESS or the error. */
int validate(const char *call, const TypeArgs &a)
{
	if (a.count < 0)
		return makeError(RMA_ERR_COUNT, "%s: count is %lld (must not be negative)", call,
				 static_cast<long long>(a.count));
	for (const auto &t : a.types)
		if (!t)
			return makeError(RMA_ERR_TYPE, "%s: a datatype argument is not a valid datatype", call);
	bool isStruct = a.combiner == Combiner::Struct;
	bool hasLengths = isStruct || a.combiner == Combiner::Indexed || a.combiner == Combiner::Hindexed;
	bool hasDisps = hasLengths || a.combiner == Combiner::IndexedBlock || a.combiner == Combiner::HindexedBlock;
	bool isSubarray = a.combiner == Combiner::Subarray;
	auto expect = [&](size_t n, bool used) { return n == (used ? static_cast<size_t>(a.count) : 0); };
	if (a.types.size() != (isStruct ? static_cast<size_t>(a.count) : 1) || !expect(a.blocklengths.size(), hasLengths) ||
	    !expect(a.disps.size(), hasDisps) || !expect(a.sizes.size(), isSubarray) ||
	    !expect(a.subsizes.size(), isSubarray) || !expect(a.starts.size(), isSubarray))
		return makeError(RMA_ERR_INTERN, "%s: the argument arrays do not have count elements", call);
	if (a.blocklength < 0)
		return badArg(call, "blocklength (must not be negative)", a.blocklength);
	for (size_t i = 0; i < a.blocklengths.size(); ++i)
		if (a.blocklengths[i] < 0)
			return makeError(RMA_ERR_ARG, "%s: array_of_blocklengths[%zu] is %lld (must not be negative)",
					 call, i, static_cast<long long>(a.blocklengths[i]));
	if (a.combiner != Combiner::Subarray)
		return RMA_SUCCESS;
	if (a.count < 1)
		return badArg(call, "ndims (must be at least 1)", a.count);
	if (a.order != RMA_ORDER_C && a.order != RMA_ORDER_FORTRAN)
		return badArg(call, "order (must be RMA_ORDER_C or RMA_ORDER_FORTRAN)", a.order);
	for (size_t i = 0; i < a.sizes.size(); ++i) {
		if (a.sizes[i] < 1 || a.subsizes[i] < 1 || a.subsizes[i] > a.sizes[i] || a.starts[i] < 0 ||
		    a.starts[i] > a.sizes[i] - a.subsizes[i])
			return makeError(RMA_ERR_ARG,
					 "%s: dimension %zu: size %lld, subsize %lld, start %lld (need size >= 1, "
					 "1 <= subsize <= size, 0 <= start <= size - subsize)",
					 call, i, static_cast<long long>(a.sizes[i]),
					 static_cast<long long>(a.subsizes[i]), static_cast<long long>(a.starts[i]));
	}
	return RMA_SUCCESS;
}

/* Subarray, as MPI defines it: nested hvectors from the fastest dimension out, then resized. */
int makeSubarray(const char *call, const TypeArgs &a, std::shared_ptr<Datatype> &out)
{
	const std::shared_ptr<Datatype> &old = a.types[0];
	const size_t n = a.sizes.size();
	Checked c;
	std::shared_ptr<Datatype> cur = old;
	rma_aint step = old->extent; /* bytes between neighbours along the current dimension */
	rma_aint offset = 0;
	for (size_t k = 0; k < n; ++k) {
		size_t dim = a.order == RMA_ORDER_C ? n - 1 - k : k;
		offset = c.add(offset, c.mul(a.starts[dim], step));
		std::shared_ptr<Datatype> next;
		RMA_TRY(makeType(call, Combiner::Hvector, { TypeItem{ cur, 0, 1 } }, a.subsizes[dim], step, nullptr,
				 next));
		cur = std::move(next);
		step = c.mul(step, a.sizes[dim]);
	}
	if (c.bad)
		return tooLarge(call);
	Bounds whole{ 0, step };
	return makeType(call, Combiner::Subarray, { TypeItem{ cur, offset, 1 } }, 1, 0, &whole, out);
}

} /* namespace */

int buildType(const char *call, const TypeArgs &a, std::shared_ptr<Datatype> &out)
{
	RMA_TRY(validate(call, a));
	/* Struct: one type a block (maybe none); the others: the one old type. */
	static const std::shared_ptr<Datatype> kNone;
	const std::shared_ptr<Datatype> &old = a.types.empty() ? kNone : a.types[0];
	Checked c;
	std::vector<TypeItem> items;
	std::shared_ptr<Datatype> t;
	rma_count blocks = a.count;
	switch (a.combiner) {
	case Combiner::Contiguous:
		RMA_TRY(makeType(call, a.combiner, { TypeItem{ old, 0, a.count } }, 1, 0, nullptr, t));
		break;
	case Combiner::Vector:
	case Combiner::Hvector: {
		rma_aint stride = a.combiner == Combiner::Vector ? c.mul(a.stride, old->extent) : a.stride;
		if (c.bad)
			return tooLarge(call);
		RMA_TRY(makeType(call, a.combiner, { TypeItem{ old, 0, a.blocklength } }, a.count, stride, nullptr, t));
		break;
	}
	case Combiner::Indexed:
	case Combiner::Hindexed:
	case Combiner::IndexedBlock:
	case Combiner::HindexedBlock:
	case Combiner::Struct: {
		bool inExtents = a.combiner == Combiner::Indexed || a.combiner == Combiner::IndexedBlock;
		items.reserve(static_cast<size_t>(blocks));
		for (rma_count i = 0; i < blocks; ++i) {
			const auto &type = a.combiner == Combiner::Struct ? a.types[i] : old;
			rma_count length = a.blocklengths.empty() ? a.blocklength : a.blocklengths[i];
			rma_aint disp = inExtents ? c.mul(a.disps[i], old->extent) : a.disps[i];
			if (length > 0)
				items.push_back(TypeItem{ type, disp, length });
		}
		if (c.bad)
			return tooLarge(call);
		RMA_TRY(makeType(call, a.combiner, std::move(items), 1, 0, nullptr, t));
		break;
	}
	case Combiner::Subarray:
		RMA_TRY(makeSubarray(call, a, t));
		break;
	case Combiner::Resized: {
		Bounds b{ a.newLb, a.newExtent };
		RMA_TRY(makeType(call, a.combiner, { TypeItem{ old, 0, 1 } }, 1, 0, &b, t));
		break;
	}
	case Combiner::Named:
	case Combiner::Dup:
		return makeError(RMA_ERR_INTERN, "%s: buildType cannot make a %s type", call,
				 combinerName(a.combiner));
	}
	recordContents(a, *t->detail);
	setName(*t, describe(a));
	out = std::move(t);
	return RMA_SUCCESS;
}

int dupType(const char *call, const std::shared_ptr<Datatype> &old, std::shared_ptr<Datatype> &out)
{
	std::shared_ptr<Datatype> t;
	RMA_TRY(makeType(call, Combiner::Dup, { TypeItem{ old, 0, 1 } }, 1, 0, nullptr, t));
	/* Same type map: the bounds (struct padding, resized) and the signature carry over as they are. */
	t->lb = old->lb;
	t->extent = old->extent;
	t->explicitBounds = old->explicitBounds;
	if (old->detail)
		t->detail->signature = old->detail->signature;
	t->detail->types = { old };
	setName(*t, std::string("dup(") + old->name + ")");
	if (old->committed)
		RMA_TRY(commitType(call, *t));
	out = std::move(t);
	return RMA_SUCCESS;
}

const Signature &signatureOf(const Datatype &t, Signature &scratch)
{
	if (t.detail) {
		if (t.detail->signature)
			return *t.detail->signature;
		scratch.clear(); /* lazy: none kept */
		return scratch;
	}
	scratch.assign(1, SignatureRun{ t.basic, 0, 1 });
	return scratch;
}

/* ---- The handle table, with the predefined types ------------------------- */

namespace {

/* A pair type: the C struct { V v; int i; } as a named, committed struct type. */
template<typename V>
std::shared_ptr<Datatype> pairType(DatatypeTable &t, const char *name, uint32_t index, BasicType value)
{
	struct Pair {
		V v;
		int i;
	};
	TypeArgs a;
	a.combiner = Combiner::Struct;
	a.count = 2;
	a.blocklengths = { 1, 1 };
	a.disps = { offsetof(Pair, v), offsetof(Pair, i) };
	a.types = { t.share(encodeHandle(HandleKind::Datatype, 0, static_cast<uint32_t>(value))),
		    t.share(encodeHandle(HandleKind::Datatype, 0, static_cast<uint32_t>(BasicType::Int))) };
	std::shared_ptr<Datatype> p;
	if (buildType(name, a, p) != RMA_SUCCESS || commitType(name, *p) != RMA_SUCCESS ||
	    p->extent != static_cast<rma_aint>(sizeof(Pair)))
		return nullptr;
	p->detail->combiner = Combiner::Named;
	p->detail->ints.clear();
	p->detail->aints.clear();
	p->detail->types.clear();
	setName(*p, name);
	p->predefined = true;
	p->handleIndex = static_cast<uint8_t>(index);
	return p;
}

void registerPredefined(DatatypeTable &t)
{
	for (uint32_t i = 1; i < kFirstPairIndex; ++i)
		/* Not owned: the table of basic types is static. */
		t.setPredefined(i, std::shared_ptr<Datatype>(std::shared_ptr<Datatype>(),
							     const_cast<Datatype *>(&kPredefinedTypes[i])));
	uint32_t i = kFirstPairIndex;
	t.setPredefined(i, pairType<float>(t, "RMA_FLOAT_INT", i, B::Float)), ++i;
	t.setPredefined(i, pairType<double>(t, "RMA_DOUBLE_INT", i, B::Double)), ++i;
	t.setPredefined(i, pairType<long>(t, "RMA_LONG_INT", i, B::Long)), ++i;
	t.setPredefined(i, pairType<int>(t, "RMA_2INT", i, B::Int)), ++i;
	t.setPredefined(i, pairType<short>(t, "RMA_SHORT_INT", i, B::Short)), ++i;
	t.setPredefined(i, pairType<long double>(t, "RMA_LONG_DOUBLE_INT", i, B::LongDouble));
}

} /* namespace */

DatatypeTable &datatypeTable()
{
	static DatatypeTable table;
	static bool ready = (registerPredefined(table), true);
	(void)ready;
	return table;
}

} /* namespace librma */
