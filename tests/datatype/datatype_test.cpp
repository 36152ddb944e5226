/* SPDX-License-Identifier: MIT */
/*
 * Type maps through the C API: size, bounds, true bounds, envelope and
 * contents of every constructor, checked against hand-computed values and
 * against the naive reference (type_map_reference.h); construction errors;
 * lifetimes of freed types.
 */
#include <gtest/gtest.h>

#include <cstddef>
#include <functional>
#include <string>

#include <rma/rma.h>

#include "datatype/datatype.h"
#include "datatype/type_test_util.h"

using namespace rmatest;

namespace {

struct Bounds {
	rma_count size;
	rma_aint lb, extent, trueLb, trueExtent;
};

Bounds boundsOf(rma_datatype t)
{
	Bounds b{};
	EXPECT_EQ(rma_type_size_x(t, &b.size), RMA_SUCCESS);
	EXPECT_EQ(rma_type_get_extent(t, &b.lb, &b.extent), RMA_SUCCESS);
	EXPECT_EQ(rma_type_get_true_extent(t, &b.trueLb, &b.trueExtent), RMA_SUCCESS);
	return b;
}

void expectBounds(rma_datatype t, Bounds want)
{
	Bounds b = boundsOf(t);
	EXPECT_EQ(b.size, want.size);
	EXPECT_EQ(b.lb, want.lb);
	EXPECT_EQ(b.extent, want.extent);
	EXPECT_EQ(b.trueLb, want.trueLb);
	EXPECT_EQ(b.trueExtent, want.trueExtent);
}

/* Everything the engine says about @t agrees with the reference rebuilt from its contents. */
void expectMatchesReference(rma_datatype t)
{
	RefType r = refOf(t);
	Bounds b = boundsOf(t);
	EXPECT_EQ(b.size, r.size());
	EXPECT_EQ(b.lb, r.lb);
	EXPECT_EQ(b.extent, r.extent());
	EXPECT_EQ(b.trueLb, r.trueBounds().first);
	EXPECT_EQ(b.trueExtent, r.trueBounds().second);
	const librma::Datatype *d = librma::lookupDatatype(t);
	ASSERT_NE(d, nullptr);
	EXPECT_EQ(d->elements, static_cast<rma_count>(r.entries.size()));
	/* The signature, run by run. */
	librma::Signature scratch;
	std::vector<int> sig = expandSignature(librma::signatureOf(*d, scratch));
	std::vector<int> want;
	for (const RefEntry &e : r.entries)
		want.push_back(e.basic);
	EXPECT_EQ(sig, want);
}

struct Envelope {
	int ni, na, nd, combiner;
};

Envelope envelopeOf(rma_datatype t)
{
	Envelope e{};
	EXPECT_EQ(rma_type_get_envelope(t, &e.ni, &e.na, &e.nd, &e.combiner), RMA_SUCCESS);
	return e;
}

struct Contents {
	std::vector<int> ints;
	std::vector<rma_aint> aints;
	std::vector<rma_datatype> types;
};

/* The contents of @t; derived types among them are freed (their handles kept only to compare). */
Contents contentsOf(rma_datatype t)
{
	Envelope e = envelopeOf(t);
	Contents c;
	c.ints.resize(e.ni);
	c.aints.resize(e.na);
	c.types.resize(e.nd);
	EXPECT_EQ(rma_type_get_contents(t, e.ni, e.na, e.nd, c.ints.data(), c.aints.data(), c.types.data()),
		  RMA_SUCCESS);
	return c;
}

TEST(PredefinedTypes, HaveTheSizesOfTheirCTypes)
{
	for (int i = 1; i <= 32; ++i) {
		rma_datatype t = reinterpret_cast<rma_datatype>((uintptr_t(RMA_HANDLE_KIND_DATATYPE_) << 56) | i);
		SCOPED_TRACE(i);
		expectBounds(t, { refBasic(i).size, 0, refBasic(i).size, 0, refBasic(i).size });
		EXPECT_EQ(envelopeOf(t).combiner, RMA_COMBINER_NAMED);
		EXPECT_TRUE(engine(t).isContiguous());
	}
	expectBounds(RMA_DOUBLE, { 8, 0, 8, 0, 8 });
	expectBounds(RMA_C_DOUBLE_COMPLEX, { 16, 0, 16, 0, 16 });
}

TEST(PredefinedTypes, PairTypesHaveTheLayoutOfTheirCStructs)
{
	struct DI {
		double v;
		int i;
	};
	struct SI {
		short v;
		int i;
	};
	struct LDI {
		long double v;
		int i;
	};
	expectBounds(RMA_DOUBLE_INT, { 12, 0, sizeof(DI), 0, offsetof(DI, i) + 4 });
	expectBounds(RMA_SHORT_INT, { 6, 0, sizeof(SI), 0, offsetof(SI, i) + 4 });
	expectBounds(RMA_LONG_DOUBLE_INT, { static_cast<rma_count>(sizeof(long double)) + 4, 0, sizeof(LDI), 0,
					    offsetof(LDI, i) + 4 });
	expectBounds(RMA_FLOAT_INT, { 8, 0, 8, 0, 8 });
	expectBounds(RMA_2INT, { 8, 0, 8, 0, 8 });
	expectBounds(RMA_LONG_INT, { static_cast<rma_count>(sizeof(long)) + 4, 0, 16, 0, 12 });
	for (rma_datatype t : { RMA_FLOAT_INT, RMA_DOUBLE_INT, RMA_LONG_INT, RMA_2INT, RMA_SHORT_INT,
				RMA_LONG_DOUBLE_INT }) {
		SCOPED_TRACE(handleIndex(t));
		expectMatchesReference(t);
		EXPECT_EQ(envelopeOf(t).combiner, RMA_COMBINER_NAMED);
		int i;
		EXPECT_EQ(errorClassOf(rma_type_get_contents(t, 0, 0, 0, &i, nullptr, nullptr)), RMA_ERR_ARG);
		rma_datatype copy = t;
		EXPECT_EQ(errorClassOf(rma_type_free(&copy)), RMA_ERR_TYPE);
	}
	/* Padding inside SHORT_INT: not contiguous; 2INT is. */
	EXPECT_FALSE(engine(RMA_SHORT_INT).isContiguous());
	EXPECT_TRUE(engine(RMA_2INT).isContiguous());
}

/* One constructor call and what it must give: bounds, combiner, contents. */
struct ConstructorCase {
	const char *name;
	std::function<int(rma_datatype *)> make;
	Bounds bounds;
	int combiner;
	std::vector<int> ints;
	std::vector<rma_aint> aints;
	bool contiguous;
};

const int kIdxLengths[] = { 1, 2, 0 };
const int kIdxDisps[] = { 4, 0, 9 };
const int kHidxLengths[] = { 2, 1 };
const rma_aint kHidxDisps[] = { 10, -6 };
const int kBlockDisps[] = { 3, 0, 7 };
const rma_aint kHblockDisps[] = { 40, 0 };

const ConstructorCase kConstructorCases[] = {
	{ "contiguous", [](rma_datatype *t) { return rma_type_contiguous(5, RMA_SHORT, t); },
	  { 10, 0, 10, 0, 10 }, RMA_COMBINER_CONTIGUOUS, { 5 }, {}, true },
	/* Blocks at 0, 16, 32 bytes, 8 bytes each. */
	{ "vector", [](rma_datatype *t) { return rma_type_vector(3, 2, 4, RMA_INT, t); },
	  { 24, 0, 40, 0, 40 }, RMA_COMBINER_VECTOR, { 3, 2, 4 }, {}, false },
	/* Entries at 0, -16, -32: the lower bound moves down. */
	{ "negative_stride", [](rma_datatype *t) { return rma_type_vector(3, 1, -2, RMA_DOUBLE, t); },
	  { 24, -32, 40, -32, 40 }, RMA_COMBINER_VECTOR, { 3, 1, -2 }, {}, false },
	{ "hvector", [](rma_datatype *t) { return rma_type_create_hvector(2, 3, 100, RMA_INT, t); },
	  { 24, 0, 112, 0, 112 }, RMA_COMBINER_HVECTOR, { 2, 3 }, { 100 }, false },
	/* A block of length 0 does not count in the bounds. */
	{ "indexed", [](rma_datatype *t) { return rma_type_indexed(3, kIdxLengths, kIdxDisps, RMA_INT, t); },
	  { 12, 0, 20, 0, 20 }, RMA_COMBINER_INDEXED, { 3, 1, 2, 0, 4, 0, 9 }, {}, false },
	{ "hindexed",
	  [](rma_datatype *t) { return rma_type_create_hindexed(2, kHidxLengths, kHidxDisps, RMA_SHORT, t); },
	  { 6, -6, 20, -6, 20 }, RMA_COMBINER_HINDEXED, { 2, 2, 1 }, { 10, -6 }, false },
	{ "indexed_block",
	  [](rma_datatype *t) { return rma_type_create_indexed_block(3, 2, kBlockDisps, RMA_FLOAT, t); },
	  { 24, 0, 36, 0, 36 }, RMA_COMBINER_INDEXED_BLOCK, { 3, 2, 3, 0, 7 }, {}, false },
	{ "hindexed_block",
	  [](rma_datatype *t) { return rma_type_create_hindexed_block(2, 3, kHblockDisps, RMA_CHAR, t); },
	  { 6, 0, 43, 0, 43 }, RMA_COMBINER_HINDEXED_BLOCK, { 2, 3 }, { 40, 0 }, false },
};

class Constructor : public ::testing::TestWithParam<ConstructorCase>
{
};

TEST_P(Constructor, GivesTheTypeMapAndReportsItsArguments)
{
	const ConstructorCase &c = GetParam();
	rma_datatype t;
	ASSERT_EQ(c.make(&t), RMA_SUCCESS);
	OwnedType owned(t);
	expectBounds(t, c.bounds);
	EXPECT_EQ(envelopeOf(t).combiner, c.combiner);
	Contents contents = contentsOf(t);
	EXPECT_EQ(contents.ints, c.ints);
	EXPECT_EQ(contents.aints, c.aints);
	ASSERT_EQ(contents.types.size(), 1u);
	EXPECT_EQ(engine(contents.types[0]).predefined, true);
	EXPECT_EQ(engine(t).isContiguous(), c.contiguous);
	expectMatchesReference(t);
}

INSTANTIATE_TEST_SUITE_P(Every, Constructor, ::testing::ValuesIn(kConstructorCases),
			 [](const ::testing::TestParamInfo<ConstructorCase> &info) { return info.param.name; });

TEST(Indexed, ReversedBlocksAreNotContiguous)
{
	int lengths[] = { 1, 1 };
	int disps[] = { 1, 0 };
	rma_datatype t;
	ASSERT_EQ(rma_type_indexed(2, lengths, disps, RMA_INT, &t), RMA_SUCCESS);
	OwnedType owned(t);
	expectBounds(t, { 8, 0, 8, 0, 8 });
	EXPECT_FALSE(engine(t).isContiguous());
}

struct Particle {
	char tag;
	double x[3];
	int id;
};

rma_datatype particleType()
{
	int lengths[] = { 1, 3, 1 };
	rma_aint disps[] = { offsetof(Particle, tag), offsetof(Particle, x), offsetof(Particle, id) };
	rma_datatype types[] = { RMA_CHAR, RMA_DOUBLE, RMA_INT };
	rma_datatype t;
	EXPECT_EQ(rma_type_create_struct(3, lengths, disps, types, &t), RMA_SUCCESS);
	return t;
}

TEST(Struct, ExtentIsPaddedToTheCStructSize)
{
	OwnedType t(particleType());
	expectBounds(t, { 1 + 24 + 4, 0, sizeof(Particle), 0, offsetof(Particle, id) + 4 });
	Contents c = contentsOf(t);
	EXPECT_EQ(envelopeOf(t).combiner, RMA_COMBINER_STRUCT);
	EXPECT_EQ(c.ints, std::vector<int>({ 3, 1, 3, 1 }));
	EXPECT_EQ(c.types, std::vector<rma_datatype>({ RMA_CHAR, RMA_DOUBLE, RMA_INT }));
	expectMatchesReference(t);
	EXPECT_FALSE(engine(t).isContiguous());
}

TEST(Struct, NestedStructsKeepTheirPaddingAndOrder)
{
	struct Outer {
		short s;
		Particle p[2];
		char c;
	};
	OwnedType inner(particleType());
	int lengths[] = { 1, 2, 1 };
	rma_aint disps[] = { offsetof(Outer, s), offsetof(Outer, p), offsetof(Outer, c) };
	rma_datatype types[] = { RMA_SHORT, inner, RMA_CHAR };
	rma_datatype t;
	ASSERT_EQ(rma_type_create_struct(3, lengths, disps, types, &t), RMA_SUCCESS);
	OwnedType owned(t);
	expectBounds(t, { 2 + 2 * 29 + 1, 0, sizeof(Outer), 0, offsetof(Outer, c) + 1 });
	expectMatchesReference(t);
	/* The derived child comes back as a new handle, freed by the caller. */
	Contents c = contentsOf(t);
	ASSERT_EQ(c.types.size(), 3u);
	EXPECT_NE(c.types[1], inner.get());
	expectBounds(c.types[1], boundsOf(inner));
	EXPECT_EQ(rma_type_free(&c.types[1]), RMA_SUCCESS);
}

TEST(Struct, ResizedMemberTurnsPaddingOff)
{
	rma_datatype r;
	ASSERT_EQ(rma_type_create_resized(RMA_INT, 0, 6, &r), RMA_SUCCESS);
	OwnedType resized(r);
	int lengths[] = { 1, 1 };
	rma_aint disps[] = { 0, 8 };
	rma_datatype types[] = { RMA_DOUBLE, resized };
	rma_datatype t;
	ASSERT_EQ(rma_type_create_struct(2, lengths, disps, types, &t), RMA_SUCCESS);
	OwnedType owned(t);
	/* ub is 8 + 6 = 14; with no explicit bounds it would be padded to 16. */
	expectBounds(t, { 12, 0, 14, 0, 12 });
	expectMatchesReference(t);
}

TEST(Resized, ChangesTheBoundsButNotTheData)
{
	rma_datatype t;
	ASSERT_EQ(rma_type_create_resized(RMA_INT, -4, 16, &t), RMA_SUCCESS);
	OwnedType owned(t);
	expectBounds(t, { 4, -4, 16, 0, 4 });
	Contents c = contentsOf(t);
	EXPECT_EQ(envelopeOf(t).combiner, RMA_COMBINER_RESIZED);
	EXPECT_EQ(c.aints, std::vector<rma_aint>({ -4, 16 }));
	EXPECT_TRUE(c.ints.empty());
	expectMatchesReference(t);

	/* A count of it: copies 16 bytes apart. */
	rma_datatype four;
	ASSERT_EQ(rma_type_contiguous(4, t, &four), RMA_SUCCESS);
	OwnedType ownedFour(four);
	expectBounds(four, { 16, -4, 64, 0, 52 });
	expectMatchesReference(four);
}

TEST(ZeroCount, TypesWithoutDataHaveNoBounds)
{
	rma_datatype c, v, s, i;
	ASSERT_EQ(rma_type_contiguous(0, RMA_INT, &c), RMA_SUCCESS);
	ASSERT_EQ(rma_type_vector(0, 3, 2, RMA_DOUBLE, &v), RMA_SUCCESS);
	ASSERT_EQ(rma_type_create_struct(0, nullptr, nullptr, nullptr, &s), RMA_SUCCESS);
	int zeros[] = { 0, 0 };
	int disps[] = { 5, 9 };
	ASSERT_EQ(rma_type_indexed(2, zeros, disps, RMA_INT, &i), RMA_SUCCESS);
	for (rma_datatype t : { c, v, s, i }) {
		OwnedType owned(t);
		expectBounds(t, { 0, 0, 0, 0, 0 });
		expectMatchesReference(t);
		EXPECT_TRUE(engine(t).isContiguous());
		EXPECT_EQ(librma::footprint(engine(t), 10).high, 0);
	}
}

TEST(Subarray, OrdersTakeTheLastOrTheFirstIndexFastest)
{
	/*
	 * Rows 1..2, columns 1..3 of a 4x5 array. C: (i, j) at 5i + j, so
	 * elements 6..8 and 11..13; Fortran: (i, j) at i + 4j, so 5, 6, 9, 10, 13, 14.
	 */
	struct Case {
		int order;
		Bounds bounds;
		std::vector<int64_t> elements;
	};
	const Case cases[] = {
		{ RMA_ORDER_C, { 24, 0, 80, 24, 32 }, { 6, 7, 8, 11, 12, 13 } },
		{ RMA_ORDER_FORTRAN, { 24, 0, 80, 20, 40 }, { 5, 6, 9, 10, 13, 14 } },
	};
	int sizes[] = { 4, 5 }, subsizes[] = { 2, 3 }, starts[] = { 1, 1 };
	for (const Case &c : cases) {
		SCOPED_TRACE(c.order);
		rma_datatype t;
		ASSERT_EQ(rma_type_create_subarray(2, sizes, subsizes, starts, c.order, RMA_INT, &t), RMA_SUCCESS);
		OwnedType owned(t);
		expectBounds(t, c.bounds);
		EXPECT_EQ(envelopeOf(t).combiner, RMA_COMBINER_SUBARRAY);
		EXPECT_EQ(contentsOf(t).ints, std::vector<int>({ 2, 4, 5, 2, 3, 1, 1, c.order }));
		expectMatchesReference(t);
		std::vector<int64_t> elements;
		for (const RefEntry &e : refOf(t).entries)
			elements.push_back(e.disp / 4);
		EXPECT_EQ(elements, c.elements);
	}
}

TEST(Subarray, ThreeDimensionsOfAStruct)
{
	OwnedType particle(particleType());
	int sizes[] = { 3, 4, 5 }, subsizes[] = { 2, 2, 3 }, starts[] = { 1, 2, 0 };
	for (int order : { RMA_ORDER_C, RMA_ORDER_FORTRAN }) {
		rma_datatype t;
		ASSERT_EQ(rma_type_create_subarray(3, sizes, subsizes, starts, order, particle, &t), RMA_SUCCESS);
		OwnedType owned(t);
		expectMatchesReference(t);
		rma_aint lb, extent;
		rma_type_get_extent(t, &lb, &extent);
		EXPECT_EQ(extent, static_cast<rma_aint>(60 * sizeof(Particle)));
	}
}

TEST(Dup, HasTheSameTypeMapAndKeepsTheCommit)
{
	OwnedType particle(particleType());
	rma_datatype t;
	ASSERT_EQ(rma_type_dup(particle, &t), RMA_SUCCESS);
	OwnedType owned(t, false);
	EXPECT_TRUE(engine(t).committed);
	expectBounds(t, boundsOf(particle));
	EXPECT_EQ(envelopeOf(t).combiner, RMA_COMBINER_DUP);
	Contents c = contentsOf(t);
	ASSERT_EQ(c.types.size(), 1u);
	EXPECT_EQ(rma_type_free(&c.types[0]), RMA_SUCCESS);
	expectMatchesReference(t);
	/* Dup of a predefined type. */
	rma_datatype d;
	ASSERT_EQ(rma_type_dup(RMA_DOUBLE_INT, &d), RMA_SUCCESS);
	OwnedType ownedD(d, false);
	expectBounds(d, boundsOf(RMA_DOUBLE_INT));
	EXPECT_EQ(contentsOf(d).types, std::vector<rma_datatype>({ RMA_DOUBLE_INT }));
}

TEST(LargeCounts, ArgumentsComeBackOnlyThroughTheCForms)
{
	rma_count lengths[] = { 2, 1 };
	rma_count disps[] = { 3, 0 };
	rma_datatype t;
	ASSERT_EQ(rma_type_indexed_c(2, lengths, disps, RMA_DOUBLE, &t), RMA_SUCCESS);
	OwnedType owned(t);
	int ni, na, nd, comb;
	EXPECT_EQ(errorClassOf(rma_type_get_envelope(t, &ni, &na, &nd, &comb)), RMA_ERR_TYPE);
	rma_count cni, cna, cnl, cnd;
	ASSERT_EQ(rma_type_get_envelope_c(t, &cni, &cna, &cnl, &cnd, &comb), RMA_SUCCESS);
	EXPECT_EQ(comb, RMA_COMBINER_INDEXED);
	EXPECT_EQ(cni, 0);
	EXPECT_EQ(cnl, 5);
	expectMatchesReference(t);

	int sizes[] = { 6 }, sub[] = { 2 }, starts[] = { 4 };
	rma_count csizes[] = { 6 }, csub[] = { 2 }, cstarts[] = { 4 };
	rma_datatype a, b;
	ASSERT_EQ(rma_type_create_subarray(1, sizes, sub, starts, RMA_ORDER_C, RMA_INT, &a), RMA_SUCCESS);
	ASSERT_EQ(rma_type_create_subarray_c(1, csizes, csub, cstarts, RMA_ORDER_C, RMA_INT, &b), RMA_SUCCESS);
	OwnedType oa(a), ob(b);
	expectBounds(b, boundsOf(a));
	expectMatchesReference(b);

	rma_datatype h, r, s, v, hb, ib, c;
	rma_count one[] = { 1 };
	rma_count at[] = { 8 };
	rma_datatype types[] = { RMA_INT };
	ASSERT_EQ(rma_type_create_hvector_c(2, 1, -12, RMA_INT, &h), RMA_SUCCESS);
	ASSERT_EQ(rma_type_create_resized_c(RMA_INT, -2, 9, &r), RMA_SUCCESS);
	ASSERT_EQ(rma_type_create_struct_c(1, one, at, types, &s), RMA_SUCCESS);
	ASSERT_EQ(rma_type_vector_c(2, 2, 3, RMA_SHORT, &v), RMA_SUCCESS);
	ASSERT_EQ(rma_type_create_hindexed_block_c(1, 2, at, RMA_INT, &hb), RMA_SUCCESS);
	ASSERT_EQ(rma_type_create_indexed_block_c(1, 2, at, RMA_INT, &ib), RMA_SUCCESS);
	ASSERT_EQ(rma_type_contiguous_c(3, RMA_INT, &c), RMA_SUCCESS);
	for (rma_datatype x : { h, r, s, v, hb, ib, c }) {
		OwnedType owned(x);
		expectMatchesReference(x);
	}
}

TEST(Constructors, RejectBadArgumentsWithTheirClass)
{
	rma_datatype t = RMA_DATATYPE_NULL;
	EXPECT_EQ(errorClassOf(rma_type_contiguous(-1, RMA_INT, &t)), RMA_ERR_COUNT);
	EXPECT_EQ(errorClassOf(rma_type_vector(2, -1, 1, RMA_INT, &t)), RMA_ERR_ARG);
	EXPECT_EQ(errorClassOf(rma_type_contiguous(2, RMA_DATATYPE_NULL, &t)), RMA_ERR_TYPE);
	EXPECT_EQ(errorClassOf(rma_type_contiguous(2, RMA_INT, nullptr)), RMA_ERR_ARG);
	EXPECT_EQ(errorClassOf(rma_type_indexed(2, nullptr, nullptr, RMA_INT, &t)), RMA_ERR_ARG);
	int sizes[] = { 4 }, sub[] = { 3 }, bad[] = { 2 };
	EXPECT_EQ(errorClassOf(rma_type_create_subarray(1, sizes, sub, bad, RMA_ORDER_C, RMA_INT, &t)), RMA_ERR_ARG);
	EXPECT_EQ(errorClassOf(rma_type_create_subarray(1, sizes, sub, sizes, 0, RMA_INT, &t)), RMA_ERR_ARG);
	EXPECT_EQ(errorClassOf(rma_type_create_subarray(0, sizes, sub, sizes, RMA_ORDER_C, RMA_INT, &t)),
		  RMA_ERR_ARG);
	int lengths[] = { 1 };
	rma_aint disps[] = { 0 };
	rma_datatype types[] = { RMA_DATATYPE_NULL };
	EXPECT_EQ(errorClassOf(rma_type_create_struct(1, lengths, disps, types, &t)), RMA_ERR_TYPE);
	EXPECT_EQ(errorClassOf(rma_type_vector(1 << 30, 1, 1 << 30, RMA_LONG_DOUBLE_INT, &t)), RMA_ERR_ARG);
	EXPECT_EQ(t, RMA_DATATYPE_NULL);
	EXPECT_EQ(errorClassOf(rma_type_commit(nullptr)), RMA_ERR_ARG);
	rma_datatype predefined = RMA_INT;
	EXPECT_EQ(errorClassOf(rma_type_free(&predefined)), RMA_ERR_TYPE);
	EXPECT_EQ(rma_type_commit(&predefined), RMA_SUCCESS);
}

TEST(Lifetime, AFreedTypeStaysAliveInsideTypesBuiltFromIt)
{
	rma_datatype inner, outer;
	ASSERT_EQ(rma_type_vector(2, 1, 3, RMA_DOUBLE, &inner), RMA_SUCCESS);
	ASSERT_EQ(rma_type_contiguous(3, inner, &outer), RMA_SUCCESS);
	rma_datatype stale = inner;
	ASSERT_EQ(rma_type_free(&inner), RMA_SUCCESS);
	EXPECT_EQ(inner, RMA_DATATYPE_NULL);
	int size;
	EXPECT_EQ(errorClassOf(rma_type_size(stale, &size)), RMA_ERR_TYPE);
	EXPECT_EQ(errorClassOf(rma_type_free(&stale)), RMA_ERR_TYPE);
	/* The outer type still flattens through the freed one. */
	OwnedType owned(outer);
	expectBounds(outer, { 48, 0, 96, 0, 96 });
}

TEST(Lifetime, ASharedReferenceOutlivesTheHandle)
{
	rma_datatype t;
	ASSERT_EQ(rma_type_vector(4, 2, 3, RMA_INT, &t), RMA_SUCCESS);
	ASSERT_EQ(rma_type_commit(&t), RMA_SUCCESS);
	std::shared_ptr<librma::Datatype> pending = librma::shareDatatype(t);
	ASSERT_TRUE(pending);
	ASSERT_EQ(rma_type_free(&t), RMA_SUCCESS);
	/* An operation that holds it can still walk it (ASan watches this). */
	rma_count seen = 0;
	librma::forEachBlock(*pending, 2, pending->size * 2, [&](rma_aint, rma_count n) {
		seen += n;
		return 0;
	});
	EXPECT_EQ(seen, 64);
}

TEST(Names, DerivedTypesDescribeThemselvesAndCanBeRenamed)
{
	rma_datatype t;
	ASSERT_EQ(rma_type_vector(4, 1, 2, RMA_DOUBLE, &t), RMA_SUCCESS);
	OwnedType owned(t);
	char name[RMA_MAX_OBJECT_NAME];
	int len;
	ASSERT_EQ(rma_type_get_name(t, name, &len), RMA_SUCCESS);
	EXPECT_STREQ(name, "vector(4, 1, 2, RMA_DOUBLE)");
	ASSERT_EQ(rma_type_set_name(t, "column"), RMA_SUCCESS);
	ASSERT_EQ(rma_type_get_name(t, name, &len), RMA_SUCCESS);
	EXPECT_STREQ(name, "column");
	EXPECT_EQ(len, 6);
	ASSERT_EQ(rma_type_get_name(RMA_SHORT_INT, name, &len), RMA_SUCCESS);
	EXPECT_STREQ(name, "RMA_SHORT_INT");
}

} /* namespace */
