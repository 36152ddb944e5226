/* SPDX-License-Identifier: MIT */
/*
 * The engine's type maps: flattened forms, copies between layouts, the
 * block walks of the cross-memory path, footprints and overlap checks, each
 * against the naive reference expansion.
 */
#include <gtest/gtest.h>

#include <chrono>
#include <cstring>
#include <functional>
#include <numeric>
#include <string>

#include <rma/rma.h>

#include "common/copy.h"
#include "datatype/datatype.h"
#include "datatype/type_test_util.h"

using namespace rmatest;
using librma::TypeNode;
using librma::Datatype;

namespace {

/* A named zoo of types, every one committed; kept alive by the fixture. */
class TypeZoo : public ::testing::Test
{
protected:
	void SetUp() override
	{
		add("double", RMA_DOUBLE, false);
		add("short_int", RMA_SHORT_INT, false);
		rma_datatype t;
		ASSERT_EQ(rma_type_contiguous(6, RMA_INT, &t), RMA_SUCCESS);
		add("contiguous", t);
		ASSERT_EQ(rma_type_vector(3, 2, 5, RMA_INT, &t), RMA_SUCCESS);
		add("vector", t);
		ASSERT_EQ(rma_type_vector(4, 1, -3, RMA_SHORT, &t), RMA_SUCCESS);
		add("negative_vector", t);
		int lengths[] = { 2, 1, 3 };
		int disps[] = { 7, 0, 3 };
		ASSERT_EQ(rma_type_indexed(3, lengths, disps, RMA_INT, &t), RMA_SUCCESS);
		add("indexed", t);
		struct S {
			char c;
			double d;
			short s[3];
		};
		int slen[] = { 1, 1, 3 };
		rma_aint sdisp[] = { offsetof(S, c), offsetof(S, d), offsetof(S, s) };
		rma_datatype stypes[] = { RMA_CHAR, RMA_DOUBLE, RMA_SHORT };
		ASSERT_EQ(rma_type_create_struct(3, slen, sdisp, stypes, &t), RMA_SUCCESS);
		add("struct", t);
		int sizes[] = { 4, 3, 5 }, sub[] = { 2, 2, 3 }, starts[] = { 1, 0, 2 };
		ASSERT_EQ(rma_type_create_subarray(3, sizes, sub, starts, RMA_ORDER_C, RMA_INT, &t), RMA_SUCCESS);
		add("subarray_c", t);
		ASSERT_EQ(rma_type_create_subarray(3, sizes, sub, starts, RMA_ORDER_FORTRAN, RMA_INT, &t), RMA_SUCCESS);
		add("subarray_f", t);
		ASSERT_EQ(rma_type_create_resized(get("vector"), -8, 20, &t), RMA_SUCCESS);
		add("resized_vector", t);
		rma_datatype inner;
		ASSERT_EQ(rma_type_create_hvector(2, 1, 24, get("struct"), &inner), RMA_SUCCESS);
		OwnedType ownedInner(inner, false);
		int nlen[] = { 1, 2 };
		rma_aint ndisp[] = { 100, 0 };
		rma_datatype ntypes[] = { inner, get("negative_vector") };
		ASSERT_EQ(rma_type_create_struct(2, nlen, ndisp, ntypes, &t), RMA_SUCCESS);
		add("nested", t);
	}

	void add(const std::string &name, rma_datatype t, bool owned = true)
	{
		names_.push_back(name);
		if (owned)
			types_.emplace_back(t);
		else
			types_.emplace_back();
		handles_.push_back(t);
	}

	rma_datatype get(const std::string &name) const
	{
		for (size_t i = 0; i < names_.size(); ++i)
			if (names_[i] == name)
				return handles_[i];
		ADD_FAILURE() << "no type " << name;
		return RMA_DATATYPE_NULL;
	}

	std::vector<std::string> names_;
	std::vector<OwnedType> types_;
	std::vector<rma_datatype> handles_;
};

/* The byte offsets the engine's flattened form of @count x @t walks, in order. */
std::vector<int64_t> engineBytes(const Datatype &t, rma_count count, rma_count bytes)
{
	std::vector<int64_t> out;
	librma::forEachBlock(t, count, bytes, [&](rma_aint off, rma_count n) {
		for (rma_count b = 0; b < n; ++b)
			out.push_back(off + b);
		return 0;
	});
	return out;
}

TEST_F(TypeZoo, FlattenedBlocksWalkTheTypeMapInOrder)
{
	for (size_t i = 0; i < names_.size(); ++i) {
		SCOPED_TRACE(names_[i]);
		RefType r = refOf(handles_[i]);
		const Datatype &t = engine(handles_[i]);
		for (rma_count count : { 1, 3 }) {
			std::vector<int64_t> want = refBytes(r, count);
			EXPECT_EQ(engineBytes(t, count, t.size * count), want) << count;
			/* Cut short inside a block. */
			want.resize(want.size() / 2 + 1);
			EXPECT_EQ(engineBytes(t, count, static_cast<rma_count>(want.size())), want) << count;
		}
	}
}

TEST_F(TypeZoo, CopiesBetweenEveryPairOfLayoutsAsTheReference)
{
	for (size_t a = 0; a < names_.size(); ++a) {
		for (size_t b = 0; b < names_.size(); ++b) {
			SCOPED_TRACE(names_[a] + " <- " + names_[b]);
			RefType ra = refOf(handles_[a]), rb = refOf(handles_[b]);
			const Datatype &ta = engine(handles_[a]), &tb = engine(handles_[b]);
			const rma_count ca = 3, cb = 2;
			rma_count bytes = std::min(ta.size * ca, tb.size * cb);
			auto [alo, ahi] = refFootprint(ra, ca);
			auto [blo, bhi] = refFootprint(rb, cb);
			std::vector<std::byte> src(bhi - blo), dst(ahi - alo + 1), want;
			for (size_t k = 0; k < src.size(); ++k)
				src[k] = std::byte(k * 7 + 1);
			std::memset(dst.data(), 0xee, dst.size());
			want = dst;
			librma::copyTyped(dst.data() - alo, ta, ca, src.data() - blo, tb, cb, bytes);
			refCopy(want.data() - alo, ra, ca, src.data() - blo, rb, cb, bytes);
			/* Bytes outside the receiver's entries (padding) keep 0xee. */
			ASSERT_EQ(dst, want);
		}
	}
}

TEST(Flatten, VectorStaysOneStridedRun)
{
	rma_datatype t;
	ASSERT_EQ(rma_type_vector(1024, 8, 16, RMA_DOUBLE, &t), RMA_SUCCESS);
	OwnedType owned(t);
	const auto &blocks = engine(t).detail->nodes;
	ASSERT_EQ(blocks.size(), 1u);
	EXPECT_FALSE(blocks[0].isLoop());
	EXPECT_EQ(blocks[0].offset, 0);
	EXPECT_EQ(blocks[0].stride, 128);
	EXPECT_EQ(blocks[0].length, 64);
	EXPECT_EQ(blocks[0].count, 1024);
	EXPECT_FALSE(engine(t).isContiguous());
}

TEST(Flatten, SubarrayIsARunInALoop)
{
	int sizes[] = { 10, 20, 30 }, sub[] = { 4, 5, 6 }, starts[] = { 1, 2, 3 };
	rma_datatype t;
	ASSERT_EQ(rma_type_create_subarray(3, sizes, sub, starts, RMA_ORDER_C, RMA_DOUBLE, &t), RMA_SUCCESS);
	OwnedType owned(t);
	/* Rows of a plane: one run; the planes: a loop around it. */
	const auto &nodes = engine(t).detail->nodes;
	ASSERT_EQ(nodes.size(), 2u);
	EXPECT_TRUE(nodes[0].isLoop());
	EXPECT_EQ(nodes[0].body, 1u);
	EXPECT_EQ(nodes[0].count, 4);
	EXPECT_EQ(nodes[0].stride, 20 * 30 * 8);
	const TypeNode &r = nodes[1];
	EXPECT_FALSE(r.isLoop());
	EXPECT_EQ(r.count, 5);
	EXPECT_EQ(r.length, 6 * 8);
	EXPECT_EQ(r.stride, 30 * 8);
}

TEST(Flatten, ContiguousLayoutsCollapseToOneBlock)
{
	/* Two halves given separately, a contiguous of a contiguous, a vector with stride = blocklength. */
	int lengths[] = { 2, 3 };
	int disps[] = { 0, 2 };
	rma_datatype a, b, inner, c;
	ASSERT_EQ(rma_type_indexed(2, lengths, disps, RMA_INT, &a), RMA_SUCCESS);
	ASSERT_EQ(rma_type_contiguous(3, RMA_DOUBLE, &inner), RMA_SUCCESS);
	ASSERT_EQ(rma_type_contiguous(4, inner, &b), RMA_SUCCESS);
	ASSERT_EQ(rma_type_vector(5, 2, 2, RMA_SHORT, &c), RMA_SUCCESS);
	OwnedType oa(a), ob(b), oi(inner, false), oc(c);
	for (rma_datatype t : { a, b, c }) {
		EXPECT_TRUE(engine(t).isContiguous());
		EXPECT_EQ(engine(t).detail->nodes.size(), 1u);
	}
	/* lb does not move the data: a resized contiguous type with extent == size stays contiguous. */
	rma_datatype r;
	ASSERT_EQ(rma_type_create_resized(b, -16, 96, &r), RMA_SUCCESS);
	OwnedType orr(r);
	EXPECT_TRUE(engine(r).isContiguous());
	/* A gap at the end (extent > size) is not. */
	ASSERT_EQ(rma_type_create_resized(b, 0, 100, &r), RMA_SUCCESS);
	OwnedType orr2(r);
	EXPECT_FALSE(engine(r).isContiguous());
}

TEST(Flatten, HugeContiguousCountsStayOneBlock)
{
	rma_datatype t;
	ASSERT_EQ(rma_type_contiguous_c(rma_count(1) << 40, RMA_BYTE, &t), RMA_SUCCESS);
	OwnedType owned(t);
	EXPECT_TRUE(engine(t).isContiguous());
	EXPECT_EQ(engine(t).size, rma_count(1) << 40);
}

TEST(CopyTyped, ContiguousOnBothSidesIsOneMemcpy)
{
	std::vector<double> src(100), dst(100, -1);
	std::iota(src.begin(), src.end(), 0.0);
	rma_datatype t;
	ASSERT_EQ(rma_type_contiguous(10, RMA_DOUBLE, &t), RMA_SUCCESS);
	OwnedType owned(t);
	int pieces = 0;
	librma::forEachBlockPair(engine(t), 10, engine(RMA_DOUBLE), 100, 800, [&](rma_aint, rma_aint, rma_count n) {
		++pieces;
		EXPECT_EQ(n, 800);
		return 0;
	});
	EXPECT_EQ(pieces, 1);
	librma::copyTyped(reinterpret_cast<std::byte *>(dst.data()), engine(t), 10,
			  reinterpret_cast<const std::byte *>(src.data()), engine(RMA_DOUBLE), 100, 800);
	EXPECT_EQ(dst, src);
}

TEST(CopyTyped, NeverWritesTheReceiversPadding)
{
	struct S {
		char c;
		double d;
	};
	int lengths[] = { 1, 1 };
	rma_aint disps[] = { offsetof(S, c), offsetof(S, d) };
	rma_datatype types[] = { RMA_CHAR, RMA_DOUBLE };
	rma_datatype t;
	ASSERT_EQ(rma_type_create_struct(2, lengths, disps, types, &t), RMA_SUCCESS);
	OwnedType owned(t);
	S in[4] = { { 'a', 1.0 }, { 'b', 2.0 }, { 'c', 3.0 }, { 'd', 4.0 } };
	std::vector<std::byte> packed(4 * 9), out(sizeof(in));
	std::memset(out.data(), 0x5a, out.size());
	librma::copyTyped(packed.data(), engine(RMA_BYTE), 36, reinterpret_cast<std::byte *>(in), engine(t), 4, 36);
	librma::copyTyped(out.data(), engine(t), 4, packed.data(), engine(RMA_BYTE), 36, 36);
	for (int i = 0; i < 4; ++i) {
		S s;
		std::memcpy(&s, out.data() + i * sizeof(S), sizeof(S));
		EXPECT_EQ(s.c, in[i].c);
		EXPECT_EQ(s.d, in[i].d);
		for (size_t b = 1; b < offsetof(S, d); ++b)
			EXPECT_EQ(out[i * sizeof(S) + b], std::byte(0x5a)) << "padding byte " << b << " of " << i;
	}
}

TEST(FillIovecs, PairsHaveEqualLengthsAndRespectTheLimit)
{
	rma_datatype v;
	int lengths[] = { 3, 1, 2 };
	int disps[] = { 0, 5, 9 };
	ASSERT_EQ(rma_type_vector(50, 3, 7, RMA_INT, &v), RMA_SUCCESS);
	rma_datatype x;
	ASSERT_EQ(rma_type_indexed(3, lengths, disps, RMA_INT, &x), RMA_SUCCESS);
	OwnedType ov(v), ox(x);
	const rma_count bytes = 50 * 12;
	librma::BlockPairCursor c(engine(v), 1, engine(x), 25, bytes);
	std::vector<std::byte> a(50 * 7 * 4), b(25 * 44);
	for (size_t k = 0; k < b.size(); ++k)
		b[k] = std::byte(k);
	iovec aIov[7], bIov[7];
	size_t chunk = 0, total = 0, calls = 0;
	const uintptr_t bBase = reinterpret_cast<uintptr_t>(b.data());
	while (size_t n = librma::fillIovecs(c, a.data(), bBase, aIov, bIov, 7, chunk)) {
		ASSERT_LE(n, 7u);
		size_t sum = 0;
		for (size_t i = 0; i < n; ++i) {
			ASSERT_EQ(aIov[i].iov_len, bIov[i].iov_len);
			std::memcpy(aIov[i].iov_base, bIov[i].iov_base, aIov[i].iov_len);
			sum += aIov[i].iov_len;
		}
		EXPECT_EQ(sum, chunk);
		total += chunk;
		++calls;
	}
	EXPECT_EQ(total, static_cast<size_t>(bytes));
	EXPECT_GT(calls, 1u);
	std::vector<std::byte> want(a.size());
	refCopy(want.data(), refOf(v), 1, b.data(), refOf(x), 25, bytes);
	EXPECT_EQ(a, want);
}

TEST_F(TypeZoo, FootprintIsTheReferencesTouchedRange)
{
	for (size_t i = 0; i < names_.size(); ++i) {
		SCOPED_TRACE(names_[i]);
		RefType r = refOf(handles_[i]);
		for (rma_count count : { 0, 1, 2, 5 }) {
			librma::Footprint f = librma::footprint(engine(handles_[i]), count);
			auto [lo, hi] = refFootprint(r, count);
			EXPECT_EQ(f.low, lo) << count;
			EXPECT_EQ(f.high, hi) << count;
		}
	}
}

TEST(Footprint, SaturatesInsteadOfOverflowing)
{
	rma_datatype t;
	ASSERT_EQ(rma_type_create_resized(RMA_INT, 0, INTPTR_MAX / 2, &t), RMA_SUCCESS);
	OwnedType owned(t);
	librma::Footprint f = librma::footprint(engine(t), 1000);
	EXPECT_EQ(f.low, 0);
	EXPECT_EQ(f.high, INTPTR_MAX);
}

TEST_F(TypeZoo, OverlapChecksAgreeWithTheReference)
{
	for (size_t i = 0; i < names_.size(); ++i) {
		SCOPED_TRACE(names_[i]);
		RefType r = refOf(handles_[i]);
		for (int count : { 1, 2, 4 })
			EXPECT_EQ(librma::checkTargetType("test", engine(handles_[i]), count) != RMA_SUCCESS,
				  refOverlaps(r, count))
				<< count;
	}
}

TEST(Overlap, DetectsEntriesThatWriteTheSameBytes)
{
	rma_datatype self, shifted, column, colType;
	/* Blocks of 2 ints every 1 int: overlap inside one element. */
	ASSERT_EQ(rma_type_vector(2, 2, 1, RMA_INT, &self), RMA_SUCCESS);
	/* 8-byte data every 4 bytes: copies overlap from 2 on. */
	ASSERT_EQ(rma_type_create_resized(RMA_DOUBLE, 0, 4, &shifted), RMA_SUCCESS);
	/* A column of a 5x5 matrix resized to one element: 5 copies tile it, a 6th overlaps. */
	ASSERT_EQ(rma_type_vector(5, 1, 5, RMA_DOUBLE, &colType), RMA_SUCCESS);
	ASSERT_EQ(rma_type_create_resized(colType, 0, 8, &column), RMA_SUCCESS);
	OwnedType a(self), b(shifted), c(colType), d(column);
	EXPECT_EQ(engine(self).overlapCount, 1);
	EXPECT_EQ(engine(shifted).overlapCount, 2);
	EXPECT_EQ(engine(column).overlapCount, 6);
	EXPECT_EQ(errorClassOf(librma::checkTargetType("rma_put", engine(self), 1)), RMA_ERR_TYPE);
	EXPECT_EQ(librma::checkTargetType("rma_put", engine(shifted), 1), RMA_SUCCESS);
	EXPECT_EQ(errorClassOf(librma::checkTargetType("rma_put", engine(shifted), 2)), RMA_ERR_TYPE);
	EXPECT_EQ(librma::checkTargetType("rma_put", engine(column), 5), RMA_SUCCESS);
	EXPECT_EQ(errorClassOf(librma::checkTargetType("rma_put", engine(column), 6)), RMA_ERR_TYPE);
	EXPECT_EQ(librma::checkTargetType("rma_put", engine(self), 0), RMA_SUCCESS);
}

TEST(Overlap, UncommittedTargetIsRejected)
{
	rma_datatype t;
	ASSERT_EQ(rma_type_contiguous(2, RMA_INT, &t), RMA_SUCCESS);
	OwnedType owned(t, false);
	int rc = librma::checkTargetType("rma_put", engine(t), 1);
	EXPECT_EQ(errorClassOf(rc), RMA_ERR_TYPE);
	char msg[RMA_MAX_ERROR_STRING];
	int len;
	rma_error_string(rc, msg, &len);
	EXPECT_NE(std::string(msg).find("not committed"), std::string::npos) << msg;
}

/* ---- Issue 11 §1: large regular types stay compressed, irregular ones go lazy ---- */

TEST(LargeTypes, NestedStrideSubarrayCommitsAsTwoNodes)
{
	/* The type: 16 M single ints on two nested strides (16 and 48 bytes). */
	int sizes[] = { 8000001, 3, 2, 2 }, sub[] = { 8000000, 2, 1, 1 }, starts[] = { 0, 0, 0, 0 };
	rma_datatype t;
	ASSERT_EQ(rma_type_create_subarray(4, sizes, sub, starts, RMA_ORDER_C, RMA_INT, &t), RMA_SUCCESS);
	ASSERT_EQ(rma_type_commit(&t), RMA_SUCCESS);
	OwnedType owned(t, false);
	const Datatype &d = engine(t);
	EXPECT_EQ(d.size, rma_count(16000000) * 4);
	/* O(description): a loop of 8 M around a run of 2 ints 16 bytes apart. */
	ASSERT_FALSE(d.detail->lazy);
	std::vector<TypeNode> scratch;
	const std::vector<TypeNode> *nodes = librma::nodesOf(d, scratch);
	ASSERT_NE(nodes, nullptr);
	ASSERT_EQ(nodes->size(), 2u);
	EXPECT_TRUE((*nodes)[0].isLoop());
	EXPECT_EQ((*nodes)[0].count, 8000000);
	EXPECT_EQ((*nodes)[0].stride, 48);
	EXPECT_EQ((*nodes)[1].count, 2);
	EXPECT_EQ((*nodes)[1].stride, 16);
	EXPECT_EQ((*nodes)[1].length, 4);
	EXPECT_EQ(d.overlapCount, librma::kNeverOverlaps);
	/* The signature: one run of 16 M ints. */
	librma::Signature ss;
	const librma::Signature &sig = librma::signatureOf(d, ss);
	ASSERT_EQ(sig.size(), 1u);
	EXPECT_EQ(sig[0].type, librma::BasicType::Int);
	EXPECT_EQ(sig[0].count, 16000000);
	rma_count bytes = 0;
	EXPECT_EQ(librma::matchSignatures("rma_put", engine(RMA_INT), 16000000, d, 1, true, bytes), RMA_SUCCESS);
	EXPECT_EQ(bytes, rma_count(64000000));
	EXPECT_EQ(errorClassOf(librma::matchSignatures("rma_put", engine(RMA_INT), 16000001, d, 1, true, bytes)),
		  RMA_ERR_TRUNCATE);
	/* The walk starts and goes on where it should. */
	std::vector<int64_t> first;
	librma::forEachBlock(d, 1, 5 * 4, [&](rma_aint off, rma_count n) {
		EXPECT_EQ(n, 4);
		first.push_back(off);
		return 0;
	});
	EXPECT_EQ(first, std::vector<int64_t>({ 0, 16, 48, 64, 96 }));
	EXPECT_EQ(librma::footprint(d, 1).high, rma_aint(7999999) * 48 + 16 + 4);
}

TEST(LargeTypes, NestedStrideSubarrayCopiesAsTheReference)
{
	/* The same shape, small enough for the reference, with starts everywhere, and a Fortran one. */
	int sizes[] = { 41, 3, 2, 2 }, sub[] = { 40, 2, 1, 1 }, starts[] = { 1, 1, 1, 0 };
	for (int order : { RMA_ORDER_C, RMA_ORDER_FORTRAN }) {
		int fsizes[] = { 2, 2, 3, 41 }, fsub[] = { 1, 1, 2, 40 }, fstarts[] = { 0, 1, 1, 1 };
		bool c = order == RMA_ORDER_C;
		rma_datatype t;
		ASSERT_EQ(rma_type_create_subarray(4, c ? sizes : fsizes, c ? sub : fsub, c ? starts : fstarts, order,
						   RMA_INT, &t),
			  RMA_SUCCESS);
		OwnedType owned(t);
		const Datatype &d = engine(t);
		EXPECT_LE(d.detail->nodes.size(), 2u);
		RefType r = refOf(t);
		for (rma_count count : { 1, 2 }) {
			EXPECT_EQ(engineBytes(d, count, d.size * count), refBytes(r, count));
			auto [lo, hi] = refFootprint(r, count);
			std::vector<std::byte> src(d.size * count), dst(hi - lo), want(hi - lo, std::byte(0xee));
			for (size_t k = 0; k < src.size(); ++k)
				src[k] = std::byte(k * 7 + 1);
			std::memset(dst.data(), 0xee, dst.size());
			librma::copyTyped(dst.data() - lo, d, count, src.data(), engine(RMA_BYTE), d.size * count,
					  d.size * count);
			refCopy(want.data() - lo, r, count, src.data(), refOf(RMA_BYTE), d.size * count, d.size * count);
			EXPECT_EQ(dst, want);
		}
	}
}

TEST(LargeTypes, RepeatedLayoutsBecomeOneLoop)
{
	/* 1000 copies of a 2-block vector at a regular displacement: one loop, not 1000 runs. */
	rma_datatype v, x;
	ASSERT_EQ(rma_type_vector(2, 1, 3, RMA_INT, &v), RMA_SUCCESS);
	std::vector<int> disps(1000);
	for (int i = 0; i < 1000; ++i)
		disps[i] = 10 * i;
	ASSERT_EQ(rma_type_create_indexed_block(1000, 1, disps.data(), v, &x), RMA_SUCCESS);
	OwnedType ov(v), ox(x);
	const auto &nodes = engine(x).detail->nodes;
	ASSERT_EQ(nodes.size(), 2u);
	EXPECT_EQ(nodes[0].count, 1000);
	EXPECT_EQ(nodes[0].stride, 10 * 16); /* 10 extents of the vector */
	/* Vectors of a struct with a gap: the struct's runs inside one loop, however many copies. */
	rma_datatype s, vs;
	int lengths[] = { 1, 1 };
	rma_aint sdisps[] = { 0, 8 };
	rma_datatype types[] = { RMA_INT, RMA_DOUBLE };
	ASSERT_EQ(rma_type_create_struct(2, lengths, sdisps, types, &s), RMA_SUCCESS);
	ASSERT_EQ(rma_type_vector(3000000, 1, 2, s, &vs), RMA_SUCCESS);
	OwnedType os(s), ovs(vs);
	EXPECT_EQ(engine(vs).detail->nodes.size(), 3u);
	EXPECT_FALSE(engine(vs).detail->lazy);
}

/* An irregular indexed type: block i of 1 + i % 2 ints at 3 * i ints, @n blocks. */
OwnedType irregularIndexed(int n, std::vector<int> &lengths, std::vector<int> &disps)
{
	lengths.resize(n);
	disps.resize(n);
	for (int i = 0; i < n; ++i) {
		lengths[i] = 1 + i % 2;
		disps[i] = 3 * i;
	}
	rma_datatype t;
	EXPECT_EQ(rma_type_indexed(n, lengths.data(), disps.data(), RMA_INT, &t), RMA_SUCCESS);
	return OwnedType(t);
}

TEST(LargeTypes, IrregularTypeBeyondTheLimitIsWalkedFromItsRecipe)
{
	constexpr int n = 5000000; /* 5 M distinct blocks: no two merge */
	std::vector<int> lengths, disps;
	OwnedType t = irregularIndexed(n, lengths, disps);
	const Datatype &d = engine(t);
	ASSERT_TRUE(d.committed);
	EXPECT_TRUE(d.detail->lazy);
	EXPECT_TRUE(d.detail->nodes.empty());
	std::vector<TypeNode> scratch;
	EXPECT_EQ(librma::nodesOf(d, scratch), nullptr);
	/* Packed and unpacked through the recipe walk. */
	std::vector<int> in(size_t(3) * n), out(size_t(3) * n, -1);
	for (size_t k = 0; k < in.size(); ++k)
		in[k] = static_cast<int>(k);
	const rma_count bytes = d.size;
	ASSERT_EQ(bytes, rma_count(n / 2) * 3 * 4);
	std::vector<int> packed(static_cast<size_t>(bytes / 4));
	auto *p = reinterpret_cast<std::byte *>(packed.data());
	librma::copyTyped(p, engine(RMA_BYTE), bytes, reinterpret_cast<const std::byte *>(in.data()), d, 1, bytes);
	size_t k = 0;
	bool ok = true;
	for (int i = 0; i < n && ok; ++i)
		for (int j = 0; j < lengths[i]; ++j)
			ok &= packed[k++] == 3 * i + j;
	EXPECT_TRUE(ok) << "packed data differ at " << k - 1;
	librma::copyTyped(reinterpret_cast<std::byte *>(out.data()), d, 1, p, engine(RMA_BYTE), bytes, bytes);
	ok = true;
	for (size_t m = 0; m < out.size() && ok; ++m)
		ok &= out[m] == (m % 3 < static_cast<size_t>(lengths[m / 3]) ? static_cast<int>(m) : -1);
	EXPECT_TRUE(ok) << "unpacked data differ";
	/* Its signature is one run of ints; in a vector it stays O(1) nodes, and flattens around it. */
	librma::Signature ss;
	EXPECT_EQ(librma::signatureOf(d, ss).size(), 1u);
	rma_datatype v;
	ASSERT_EQ(rma_type_vector(2, 1, 1, t, &v), RMA_SUCCESS);
	OwnedType ov(v);
	EXPECT_TRUE(engine(v).detail->lazy);
	EXPECT_EQ(engine(v).size, 2 * d.size);
	int blocks = 0;
	rma_aint last = -1;
	librma::forEachBlock(engine(v), 1, engine(v).size, [&](rma_aint off, rma_count) {
		EXPECT_GT(off, last);
		last = off;
		++blocks;
		return 0;
	});
	/* Block by block, in order (the recipe walk joins no blocks, not even the two that touch across copies). */
	EXPECT_EQ(blocks, 2 * n);
}

TEST(LargeTypes, LazyTypesAgreeWithTheReference)
{
	/* The zoo's shapes with the limit at 0: every derived type is walked from its recipe. */
	size_t &limit = librma::flattenNodeLimit();
	const size_t saved = limit;
	limit = 0;
	rma_datatype v, s;
	ASSERT_EQ(rma_type_vector(3, 2, -5, RMA_INT, &v), RMA_SUCCESS);
	int sizes[] = { 4, 3, 5 }, sub[] = { 2, 2, 3 }, starts[] = { 1, 0, 2 };
	ASSERT_EQ(rma_type_create_subarray(3, sizes, sub, starts, RMA_ORDER_C, v, &s), RMA_SUCCESS);
	OwnedType ov(v), os(s);
	limit = saved;
	for (rma_datatype t : { v, s }) {
		ASSERT_TRUE(engine(t).detail->lazy);
		RefType r = refOf(t);
		for (rma_count count : { 1, 3 })
			EXPECT_EQ(engineBytes(engine(t), count, engine(t).size * count), refBytes(r, count));
	}
}

TEST(LargeTypes, DeepNestingWalksBeyondTheInlineStack)
{
	/* 12 levels of vectors whose strides never merge: 12 nested loops, or 12 recipe levels when lazy. */
	size_t &limit = librma::flattenNodeLimit();
	const size_t saved = limit;
	for (size_t lowered : { saved, size_t(0) }) {
		limit = lowered;
		std::vector<OwnedType> levels;
		rma_datatype cur = RMA_SHORT;
		for (int k = 0; k < 12; ++k) {
			rma_datatype next;
			ASSERT_EQ(rma_type_vector(2, 1, 3, cur, &next), RMA_SUCCESS);
			levels.emplace_back(next, false);
			cur = next;
		}
		ASSERT_EQ(rma_type_commit(&cur), RMA_SUCCESS);
		limit = saved;
		const Datatype &d = engine(cur);
		EXPECT_EQ(d.detail->lazy, lowered == 0);
		if (lowered != 0) {
			EXPECT_EQ(d.detail->nodes.size(), 12u);
		}
		RefType r = refOf(cur);
		for (rma_count count : { 1, 2 })
			EXPECT_EQ(engineBytes(d, count, d.size * count), refBytes(r, count)) << lowered;
	}
}

} /* namespace */

/* ---- Overlap checks of large lazy types: exact, in bounded memory ---- */

namespace {

/* An hindexed type of @n single ints, block i at byte @disp(i); committed. */
template<typename Disp>
OwnedType hindexedInts(int n, Disp disp)
{
	std::vector<int> lengths(n, 1);
	std::vector<rma_aint> disps(n);
	for (int i = 0; i < n; ++i)
		disps[i] = disp(i);
	rma_datatype t;
	EXPECT_EQ(rma_type_create_hindexed(n, lengths.data(), disps.data(), RMA_INT, &t), RMA_SUCCESS);
	return OwnedType(t);
}

/* 0, 1 or 2, pseudo-randomly: gaps that never repeat in a pattern the flattener could fold. */
rma_aint jitter(int i)
{
	return static_cast<rma_aint>((static_cast<uint32_t>(i) * 2654435761u >> 13) % 3);
}

/* Both checks that require a buffer free of overlap reject (or accept) @count x @t. */
void expectOverlapChecks(rma_datatype t, int count, bool overlaps)
{
	const Datatype &d = engine(t);
	int rc = librma::checkTargetType("rma_put", d, count);
	EXPECT_EQ(rc != RMA_SUCCESS, overlaps);
	if (overlaps) {
		EXPECT_EQ(errorClassOf(rc), RMA_ERR_TYPE);
		EXPECT_NE(errorText(rc).find("overlapping entries"), std::string::npos) << errorText(rc);
	}
	rma_count bytes = 0;
	rc = librma::matchSignatures("rma_get", d, count, engine(RMA_INT), static_cast<int>(d.elements) * count, false,
				     bytes);
	EXPECT_EQ(rc != RMA_SUCCESS, overlaps);
	if (overlaps) {
		EXPECT_EQ(errorClassOf(rc), RMA_ERR_TYPE);
	}
}

} /* namespace */

TEST(LargeTypes, LazyTypeInIncreasingOrderNeverOverlaps)
{
	/* 3 M distinct gaps: lazy; in order, so one pass proves it free of overlap, copies included. */
	constexpr int n = 3000000;
	OwnedType up = hindexedInts(n, [](int i) { return rma_aint(8) * i + jitter(i); });
	ASSERT_TRUE(engine(up).detail->lazy);
	EXPECT_EQ(engine(up).overlapCount, librma::kNeverOverlaps);
	expectOverlapChecks(up, 2, false);
	OwnedType down = hindexedInts(n, [](int i) { return -rma_aint(8) * i - jitter(i); });
	ASSERT_TRUE(engine(down).detail->lazy);
	EXPECT_EQ(engine(down).overlapCount, librma::kNeverOverlaps);
	expectOverlapChecks(down, 2, false);
}

TEST(LargeTypes, LazyTypeOverlappingAtItsLastBlockIsCaught)
{
	/* Beyond the blocks one sort holds (1 M): in order but for the last block, which lands on an earlier one. */
	constexpr int n = 3000000;
	auto disp = [](int i) { return rma_aint(8) * i + jitter(i); };
	for (int target : { 0, n / 2, n - 2 }) {
		OwnedType t = hindexedInts(n, [&](int i) { return i == n - 1 ? disp(target) + 2 : disp(i); });
		ASSERT_TRUE(engine(t).detail->lazy);
		EXPECT_EQ(engine(t).overlapCount, 1) << target;
		expectOverlapChecks(t, 1, true);
	}
	/* Out of order (blocks swapped in pairs) with the overlap at the last block, from the first piece. */
	auto swapped = [&](int i) { return disp(i ^ 1); };
	OwnedType fine = hindexedInts(n, swapped);
	ASSERT_TRUE(engine(fine).detail->lazy);
	EXPECT_EQ(engine(fine).overlapCount, librma::kNeverOverlaps);
	expectOverlapChecks(fine, 1, false);
	OwnedType bad = hindexedInts(n, [&](int i) { return i == n - 1 ? swapped(5) + 1 : swapped(i); });
	EXPECT_EQ(engine(bad).overlapCount, 1);
	expectOverlapChecks(bad, 1, true);
	/* A small lazy one (the limit lowered): the exact check of copies still applies. */
	size_t &limit = librma::flattenNodeLimit();
	const size_t saved = limit;
	limit = 0;
	OwnedType small = hindexedInts(100, [](int i) { return i == 99 ? rma_aint(4 * 98 + 2) : rma_aint(4 * i); });
	limit = saved;
	ASSERT_TRUE(engine(small).detail->lazy);
	EXPECT_EQ(engine(small).overlapCount, 1);
	expectOverlapChecks(small, 1, true);
}

/* copyBytes (lib/common/copy.h): every length around its inline small-copy cases, no byte outside. */
TEST(CopyBytes, EveryShortLengthCopiesExactlyItsBytes)
{
	for (size_t n = 0; n <= 40; ++n) {
		for (size_t shift = 0; shift < 8; ++shift) {
			std::vector<unsigned char> src(64), dst(64, 0xee);
			std::iota(src.begin(), src.end(), static_cast<unsigned char>(1));
			librma::copyBytes(dst.data() + 8 + shift, src.data() + shift, n);
			for (size_t i = 0; i < dst.size(); ++i) {
				bool inside = i >= 8 + shift && i < 8 + shift + n;
				ASSERT_EQ(dst[i], inside ? src[i - 8] : 0xee) << "n " << n << " shift " << shift << " byte " << i;
			}
		}
	}
}
