/* SPDX-License-Identifier: MIT */
/*
 * Type signatures: MPI's matching rules between the two sides of a
 * transfer, and element counting through rma_status (the worked examples
 * of spec/mpi-datatypes-in-communication.txt).
 */
#include <gtest/gtest.h>

#include <chrono>
#include <climits>
#include <cstring>
#include <vector>
#include <cstddef>
#include <string>

#include <rma/rma.h>

#include "datatype/datatype.h"
#include "datatype/type_test_util.h"

using namespace rmatest;
using librma::Datatype;

namespace {

/* matchSignatures for a put of (ocount x otype) into (tcount x ttype); bytes in @bytes. */
int put(rma_datatype otype, int ocount, rma_datatype ttype, int tcount, rma_count &bytes)
{
	return librma::matchSignatures("rma_put", engine(otype), ocount, engine(ttype), tcount, true, bytes);
}

int put(rma_datatype otype, int ocount, rma_datatype ttype, int tcount)
{
	rma_count bytes;
	return put(otype, ocount, ttype, tcount, bytes);
}

/* struct { int i; double d[@n]; }, committed. */
OwnedType intAndDoubles(int n)
{
	struct P {
		int i;
		double d;
	};
	int lengths[] = { 1, n };
	rma_aint disps[] = { offsetof(P, i), offsetof(P, d) };
	rma_datatype types[] = { RMA_INT, RMA_DOUBLE };
	rma_datatype t = RMA_DATATYPE_NULL;
	EXPECT_EQ(rma_type_create_struct(2, lengths, disps, types, &t), RMA_SUCCESS);
	return OwnedType(t);
}

/* The spec's example: type2 = 2 x REAL, type4 = 4 x REAL, type22 = 2 x type2. */
class RealTypes : public ::testing::Test
{
protected:
	void SetUp() override
	{
		rma_datatype t;
		ASSERT_EQ(rma_type_contiguous(2, RMA_FLOAT, &t), RMA_SUCCESS);
		type2_ = OwnedType(t);
		ASSERT_EQ(rma_type_contiguous(4, RMA_FLOAT, &t), RMA_SUCCESS);
		type4_ = OwnedType(t);
		ASSERT_EQ(rma_type_contiguous(2, type2_, &t), RMA_SUCCESS);
		type22_ = OwnedType(t);
	}

	OwnedType type2_, type4_, type22_;
};

TEST_F(RealTypes, EverySendOfTheSpecExampleMatchesEveryReceive)
{
	struct Side {
		rma_datatype type;
		int count;
	};
	const Side sides[] = { { RMA_FLOAT, 4 }, { type2_, 2 }, { type22_, 1 }, { type4_, 1 } };
	for (const Side &s : sides) {
		for (const Side &r : sides) {
			rma_count bytes = -1;
			EXPECT_EQ(put(s.type, s.count, r.type, r.count, bytes), RMA_SUCCESS);
			EXPECT_EQ(bytes, 16);
		}
	}
}

TEST_F(RealTypes, GetCountAndGetElementsFollowTheSpecExample)
{
	/* A message of 2 REALs received into Type2: count 1, elements 2. */
	rma_status st{};
	ASSERT_EQ(rma_status_set_elements(&st, RMA_FLOAT, 2), RMA_SUCCESS);
	int i = -1;
	ASSERT_EQ(rma_get_count(&st, type2_, &i), RMA_SUCCESS);
	EXPECT_EQ(i, 1);
	ASSERT_EQ(rma_get_elements(&st, type2_, &i), RMA_SUCCESS);
	EXPECT_EQ(i, 2);
	/* A message of 3 REALs: count undefined, elements 3. */
	ASSERT_EQ(rma_status_set_elements(&st, RMA_FLOAT, 3), RMA_SUCCESS);
	ASSERT_EQ(rma_get_count(&st, type2_, &i), RMA_SUCCESS);
	EXPECT_EQ(i, RMA_UNDEFINED);
	ASSERT_EQ(rma_get_elements(&st, type2_, &i), RMA_SUCCESS);
	EXPECT_EQ(i, 3);
}

TEST(Status, BasicTypesGiveTheSameCountAndElements)
{
	rma_status st{};
	ASSERT_EQ(rma_status_set_elements(&st, RMA_DOUBLE, 7), RMA_SUCCESS);
	int count, elements;
	rma_count big;
	ASSERT_EQ(rma_get_count(&st, RMA_DOUBLE, &count), RMA_SUCCESS);
	ASSERT_EQ(rma_get_elements(&st, RMA_DOUBLE, &elements), RMA_SUCCESS);
	EXPECT_EQ(count, 7);
	EXPECT_EQ(elements, 7);
	ASSERT_EQ(rma_get_elements_x(&st, RMA_DOUBLE, &big), RMA_SUCCESS);
	EXPECT_EQ(big, 7);
	ASSERT_EQ(rma_get_count_c(&st, RMA_DOUBLE, &big), RMA_SUCCESS);
	EXPECT_EQ(big, 7);
}

TEST(Status, ElementsOfAStructCountEachMember)
{
	OwnedType t = intAndDoubles(2);
	rma_status st{};
	/* Two whole records and one more int. */
	ASSERT_EQ(rma_status_set_elements(&st, t, 7), RMA_SUCCESS);
	EXPECT_EQ(st.bytes_, 2 * 20 + 4);
	int n;
	ASSERT_EQ(rma_get_elements(&st, t, &n), RMA_SUCCESS);
	EXPECT_EQ(n, 7);
	ASSERT_EQ(rma_get_count(&st, t, &n), RMA_SUCCESS);
	EXPECT_EQ(n, RMA_UNDEFINED);
	/* Data ending inside a double: no whole number of basic elements. */
	st.bytes_ = 2 * 20 + 4 + 3;
	ASSERT_EQ(rma_get_elements(&st, t, &n), RMA_SUCCESS);
	EXPECT_EQ(n, RMA_UNDEFINED);
	/* Three whole records. */
	ASSERT_EQ(rma_status_set_elements_x(&st, t, 9), RMA_SUCCESS);
	ASSERT_EQ(rma_get_count(&st, t, &n), RMA_SUCCESS);
	EXPECT_EQ(n, 3);
}

TEST(Status, CountsThatDoNotFitAnIntAreUndefined)
{
	rma_status st{};
	ASSERT_EQ(rma_status_set_elements_c(&st, RMA_BYTE, rma_count(1) << 40), RMA_SUCCESS);
	int n;
	rma_count big;
	ASSERT_EQ(rma_get_elements(&st, RMA_BYTE, &n), RMA_SUCCESS);
	EXPECT_EQ(n, RMA_UNDEFINED);
	ASSERT_EQ(rma_get_count(&st, RMA_BYTE, &n), RMA_SUCCESS);
	EXPECT_EQ(n, RMA_UNDEFINED);
	ASSERT_EQ(rma_get_elements_c(&st, RMA_BYTE, &big), RMA_SUCCESS);
	EXPECT_EQ(big, rma_count(1) << 40);
}

TEST(Status, ATypeOfSizeZeroCountsZero)
{
	rma_datatype t;
	ASSERT_EQ(rma_type_contiguous(0, RMA_INT, &t), RMA_SUCCESS);
	OwnedType owned(t);
	rma_status st{};
	ASSERT_EQ(rma_status_set_elements(&st, t, 0), RMA_SUCCESS);
	int n = -1;
	ASSERT_EQ(rma_get_count(&st, t, &n), RMA_SUCCESS);
	EXPECT_EQ(n, 0);
	ASSERT_EQ(rma_get_elements(&st, t, &n), RMA_SUCCESS);
	EXPECT_EQ(n, 0);
}

TEST(Status, RejectsBadArguments)
{
	rma_status st{};
	int n;
	EXPECT_EQ(errorClassOf(rma_status_set_elements(&st, RMA_INT, -1)), RMA_ERR_COUNT);
	EXPECT_EQ(errorClassOf(rma_status_set_elements(nullptr, RMA_INT, 1)), RMA_ERR_ARG);
	EXPECT_EQ(errorClassOf(rma_get_count(&st, RMA_DATATYPE_NULL, &n)), RMA_ERR_TYPE);
	EXPECT_EQ(errorClassOf(rma_get_elements(&st, RMA_INT, nullptr)), RMA_ERR_ARG);
}

TEST(Matching, SameSignatureWithDifferentLayoutsMatches)
{
	/* 6 ints as a vector, as an indexed type and as a struct of int[2] + int[4]. */
	int lengths[] = { 2, 4 };
	int disps[] = { 10, 0 };
	rma_aint bdisps[] = { 0, 100 };
	rma_datatype types[] = { RMA_INT, RMA_INT };
	rma_datatype v, x, s;
	ASSERT_EQ(rma_type_vector(3, 2, 5, RMA_INT, &v), RMA_SUCCESS);
	ASSERT_EQ(rma_type_indexed(2, lengths, disps, RMA_INT, &x), RMA_SUCCESS);
	ASSERT_EQ(rma_type_create_struct(2, lengths, bdisps, types, &s), RMA_SUCCESS);
	OwnedType ov(v), ox(x), os(s);
	for (rma_datatype a : { v, x, s, RMA_INT })
		for (rma_datatype b : { v, x, s }) {
			int acount = a == RMA_INT ? 12 : 2;
			EXPECT_EQ(put(a, acount, b, 2), RMA_SUCCESS);
		}
}

TEST(Matching, ASenderShorterThanTheReceiverIsAPrefix)
{
	OwnedType p = intAndDoubles(1);
	rma_count bytes;
	/* One int into records of (int, double): a prefix. */
	EXPECT_EQ(put(RMA_INT, 1, p, 3, bytes), RMA_SUCCESS);
	EXPECT_EQ(bytes, 4);
	/* Two records and an int into three records. */
	int l2[] = { 2, 1 };
	rma_aint d2[] = { 0, 2 * 16 };
	rma_datatype t2[] = { p, RMA_INT };
	rma_datatype q;
	ASSERT_EQ(rma_type_create_struct(2, l2, d2, t2, &q), RMA_SUCCESS);
	OwnedType oq(q);
	EXPECT_EQ(put(q, 1, p, 3, bytes), RMA_SUCCESS);
	EXPECT_EQ(bytes, 28);
	/* An int where the receiver has a double: mismatch at element 1. */
	int rc = put(RMA_INT, 2, p, 3);
	EXPECT_EQ(errorClassOf(rc), RMA_ERR_TYPE);
	EXPECT_NE(errorText(rc).find("basic element 1 is RMA_INT at the origin and RMA_DOUBLE at the target"),
		  std::string::npos)
		<< errorText(rc);
}

TEST(Matching, MismatchNamesBothTypesAndCounts)
{
	rma_datatype v;
	ASSERT_EQ(rma_type_vector(4, 1, 2, RMA_DOUBLE, &v), RMA_SUCCESS);
	OwnedType ov(v);
	int rc = put(v, 3, RMA_FLOAT, 100);
	EXPECT_EQ(errorClassOf(rc), RMA_ERR_TYPE);
	std::string msg = errorText(rc);
	EXPECT_NE(msg.find("rma_put"), std::string::npos) << msg;
	EXPECT_NE(msg.find("3 x vector(4, 1, 2, RMA_DOUBLE)"), std::string::npos) << msg;
	EXPECT_NE(msg.find("100 x RMA_FLOAT"), std::string::npos) << msg;
}

TEST(Matching, TooMuchDataIsTruncation)
{
	rma_datatype v;
	ASSERT_EQ(rma_type_vector(4, 1, 2, RMA_DOUBLE, &v), RMA_SUCCESS);
	OwnedType ov(v);
	int rc = put(v, 3, RMA_DOUBLE, 11);
	EXPECT_EQ(errorClassOf(rc), RMA_ERR_TRUNCATE);
	EXPECT_NE(errorText(rc).find("96 bytes"), std::string::npos) << errorText(rc);
	/* A get: the target sends. */
	rma_count bytes;
	EXPECT_EQ(errorClassOf(librma::matchSignatures("rma_get", engine(RMA_DOUBLE), 11, engine(v), 3, false, bytes)),
		  RMA_ERR_TRUNCATE);
	EXPECT_EQ(librma::matchSignatures("rma_get", engine(RMA_DOUBLE), 12, engine(v), 3, false, bytes),
		  RMA_SUCCESS);
	EXPECT_EQ(bytes, 96);
}

TEST(Matching, PackedMatchesAnyTypeByBytesAndByteOnlyByte)
{
	rma_datatype v;
	ASSERT_EQ(rma_type_vector(2, 1, 3, RMA_SHORT_INT, &v), RMA_SUCCESS);
	OwnedType ov(v);
	rma_count bytes;
	EXPECT_EQ(put(RMA_PACKED, 12, v, 1, bytes), RMA_SUCCESS);
	EXPECT_EQ(bytes, 12);
	EXPECT_EQ(put(v, 1, RMA_PACKED, 12), RMA_SUCCESS);
	EXPECT_EQ(errorClassOf(put(v, 1, RMA_PACKED, 11)), RMA_ERR_TRUNCATE);
	EXPECT_EQ(errorClassOf(put(RMA_BYTE, 4, RMA_CHAR, 4)), RMA_ERR_TYPE);
	EXPECT_EQ(errorClassOf(put(RMA_BYTE, 4, RMA_INT, 1)), RMA_ERR_TYPE);
	EXPECT_EQ(put(RMA_BYTE, 4, RMA_BYTE, 4), RMA_SUCCESS);
}

TEST(Matching, EmptyTransfersAlwaysMatch)
{
	rma_count bytes = -1;
	EXPECT_EQ(put(RMA_INT, 0, RMA_DOUBLE, 5, bytes), RMA_SUCCESS);
	EXPECT_EQ(bytes, 0);
}

TEST(Matching, DataBeyondTheAddressSpaceIsACountError)
{
	rma_datatype huge;
	ASSERT_EQ(rma_type_contiguous_c(rma_count(1) << 40, RMA_BYTE, &huge), RMA_SUCCESS);
	OwnedType owned(huge);
	EXPECT_EQ(errorClassOf(put(huge, INT_MAX, RMA_BYTE, 1)), RMA_ERR_COUNT);
	EXPECT_EQ(errorClassOf(put(RMA_BYTE, 1, huge, INT_MAX)), RMA_ERR_COUNT);
}

TEST(Matching, UncommittedTypesAreRejected)
{
	rma_datatype t;
	ASSERT_EQ(rma_type_contiguous(2, RMA_INT, &t), RMA_SUCCESS);
	OwnedType owned(t, false);
	EXPECT_EQ(errorClassOf(put(t, 1, RMA_INT, 2)), RMA_ERR_TYPE);
	EXPECT_EQ(errorClassOf(put(RMA_INT, 2, t, 1)), RMA_ERR_TYPE);
}

TEST(Matching, AGetIntoAnOverlappingOriginIsRejected)
{
	rma_datatype t;
	ASSERT_EQ(rma_type_create_resized(RMA_DOUBLE, 0, 4, &t), RMA_SUCCESS);
	OwnedType owned(t);
	rma_count bytes;
	EXPECT_EQ(errorClassOf(librma::matchSignatures("rma_get", engine(t), 2, engine(RMA_DOUBLE), 2, false, bytes)),
		  RMA_ERR_TYPE);
	/* As an origin that sends, overlapping entries are fine. */
	EXPECT_EQ(librma::matchSignatures("rma_put", engine(t), 2, engine(RMA_DOUBLE), 2, true, bytes), RMA_SUCCESS);
}

TEST(Matching, LongPeriodsAreWalkedOnlyOnce)
{
	/* 3 x (int, double) against 2 x (int, double, int, double, ...) with huge counts. */
	OwnedType p = intAndDoubles(1);
	rma_datatype p3;
	ASSERT_EQ(rma_type_contiguous(3, p, &p3), RMA_SUCCESS);
	OwnedType op3(p3);
	EXPECT_EQ(put(p3, INT_MAX / 3, p, INT_MAX), RMA_SUCCESS);
	EXPECT_EQ(errorClassOf(put(p, INT_MAX, p3, INT_MAX / 3)), RMA_ERR_TRUNCATE);
}

/*
 * Issue 11 §1: repeated signatures stay (sub-signature, repeat), and
 * matching them costs O(description), not O(elements).
 */
TEST(Matching, RepeatedStructSignaturesStayCompressedAndMatchAtOnce)
{
	/* 3 M copies of { int, double } in a vector: 6 M alternating elements, beyond kMaxRuns runs if expanded. */
	OwnedType p = intAndDoubles(1);
	constexpr int n = 3000000;
	rma_datatype v, c, f;
	ASSERT_EQ(rma_type_vector(n, 1, 2, p, &v), RMA_SUCCESS);
	ASSERT_EQ(rma_type_contiguous(n, p, &c), RMA_SUCCESS);
	OwnedType ov(v), oc(c);
	librma::Signature scratch;
	const librma::Signature &sig = librma::signatureOf(engine(v), scratch);
	ASSERT_EQ(sig.size(), 3u);
	EXPECT_TRUE(sig[0].isRepeat());
	EXPECT_EQ(sig[0].count, n);
	EXPECT_EQ(engine(v).elements, 2 * rma_count(n));
	/* { int, float }: the same shape, another signature. */
	struct Q {
		int i;
		float x;
	};
	int lengths[] = { 1, 1 };
	rma_aint disps[] = { offsetof(Q, i), offsetof(Q, x) };
	rma_datatype types[] = { RMA_INT, RMA_FLOAT };
	rma_datatype q, fv;
	ASSERT_EQ(rma_type_create_struct(2, lengths, disps, types, &q), RMA_SUCCESS);
	OwnedType oq(q);
	ASSERT_EQ(rma_type_vector(n, 1, 1, q, &fv), RMA_SUCCESS);
	OwnedType ofv(fv);
	/* The last element differs: a vector of n - 1 pairs, then an { int, float }. */
	rma_datatype head;
	ASSERT_EQ(rma_type_vector(n - 1, 1, 2, p, &head), RMA_SUCCESS);
	OwnedType ohead(head, false);
	int slen[] = { 1, 1 };
	rma_aint sdisp[] = { 0, 100 * rma_aint(n) };
	rma_datatype stypes[] = { head, q };
	ASSERT_EQ(rma_type_create_struct(2, slen, sdisp, stypes, &f), RMA_SUCCESS);
	OwnedType of(f);

	rma_count bytes = 0;
	EXPECT_EQ(put(v, 1, c, 1, bytes), RMA_SUCCESS);
	EXPECT_EQ(bytes, rma_count(n) * 12);
	EXPECT_EQ(put(c, 1, v, 1), RMA_SUCCESS);
	EXPECT_EQ(put(v, 1, p, n), RMA_SUCCESS);
	EXPECT_EQ(put(p, n, v, 1), RMA_SUCCESS);
	EXPECT_EQ(put(p, n - 5, v, 1), RMA_SUCCESS);
	EXPECT_EQ(errorClassOf(put(p, n + 1, v, 1)), RMA_ERR_TRUNCATE);
	EXPECT_EQ(errorClassOf(put(v, 1, fv, 1)), RMA_ERR_TYPE);
	/* The mismatch in the very last element is found, and named. */
	int rc = put(v, 1, f, 1);
	EXPECT_EQ(errorClassOf(rc), RMA_ERR_TYPE);
	char msg[RMA_MAX_ERROR_STRING];
	int len;
	rma_error_string(rc, msg, &len);
	EXPECT_NE(std::string(msg).find("basic element " + std::to_string(2 * rma_count(n) - 1)), std::string::npos)
		<< msg;
	EXPECT_EQ(put(f, 1, f, 1), RMA_SUCCESS);
	/* Element counting walks the repeat a pass at a time. */
	EXPECT_EQ(librma::bytesOfElements(engine(v), 2 * rma_count(n) - 1), rma_count(n) * 12 - 8);
	EXPECT_EQ(librma::elementsInBytes(engine(v), rma_count(n - 1) * 12 + 4), 2 * rma_count(n) - 1);
	EXPECT_EQ(librma::elementsInBytes(engine(v), rma_count(n - 1) * 12 + 5), -1);
}

} /* namespace */

/* ---- Signatures of millions of distinct runs: lazy, never refused ---- */

namespace {

/* A struct of @pairs (int at 16 i, @last or double at 16 i + 8) pairs: 2 x @pairs distinct runs. */
OwnedType alternatingStruct(int pairs, rma_datatype last)
{
	const int n = 2 * pairs;
	std::vector<int> lengths(n, 1);
	std::vector<rma_aint> disps(n);
	std::vector<rma_datatype> types(n);
	for (int i = 0; i < n; ++i) {
		disps[i] = rma_aint(8) * i;
		types[i] = i % 2 ? RMA_DOUBLE : RMA_INT;
	}
	types[n - 1] = last;
	rma_datatype t;
	EXPECT_EQ(rma_type_create_struct(n, lengths.data(), disps.data(), types.data(), &t), RMA_SUCCESS);
	return OwnedType(t);
}

} /* namespace */

TEST(LazySignatures, AStructOfMillionsOfAlternatingFieldsCommitsMatchesAndPacks)
{
	constexpr int kPairs = 2500000; /* 5 M blocks, 5 M distinct runs: beyond kMaxRuns */
	static_assert(2 * size_t(kPairs) > librma::kMaxRuns);
	OwnedType big = alternatingStruct(kPairs, RMA_DOUBLE);
	const Datatype &d = engine(big);
	ASSERT_TRUE(d.committed);
	EXPECT_EQ(d.detail->signature, nullptr); /* lazy: not kept */
	EXPECT_EQ(d.size, rma_count(kPairs) * 12);
	EXPECT_EQ(d.elements, rma_count(2) * kPairs);
	EXPECT_EQ(d.extent, rma_aint(16) * kPairs);

	/* The same layout as a contiguous count of one {int, double} struct: a compressed repeat. */
	int plen[] = { 1, 1 };
	rma_aint pdisp[] = { 0, 8 };
	rma_datatype ptypes[] = { RMA_INT, RMA_DOUBLE };
	rma_datatype pair, same;
	ASSERT_EQ(rma_type_create_struct(2, plen, pdisp, ptypes, &pair), RMA_SUCCESS);
	OwnedType ownedPair(pair);
	ASSERT_EQ(rma_type_contiguous(kPairs, pair, &same), RMA_SUCCESS);
	OwnedType ownedSame(same);
	ASSERT_NE(engine(same).detail->signature, nullptr);
	rma_count bytes = 0;
	EXPECT_EQ(librma::matchSignatures("rma_put", d, 1, engine(same), 1, true, bytes), RMA_SUCCESS);
	EXPECT_EQ(bytes, d.size);
	EXPECT_EQ(librma::matchSignatures("rma_get", d, 2, engine(pair), 2 * kPairs, false, bytes), RMA_SUCCESS);
	EXPECT_EQ(librma::matchSignatures("rma_put", engine(pair), kPairs, d, 1, true, bytes), RMA_SUCCESS);
	EXPECT_EQ(librma::matchSignatures("rma_put", d, 1, d, 1, true, bytes), RMA_SUCCESS);
	/* A prefix matches; one more pair does not fit. */
	EXPECT_EQ(librma::matchSignatures("rma_put", engine(pair), kPairs - 1, d, 1, true, bytes), RMA_SUCCESS);
	EXPECT_EQ(errorClassOf(librma::matchSignatures("rma_put", engine(pair), kPairs + 1, d, 1, true, bytes)),
		  RMA_ERR_TRUNCATE);

	/* The last field a float: the mismatch is found at the last element and named. */
	OwnedType odd = alternatingStruct(kPairs, RMA_FLOAT);
	ASSERT_EQ(engine(odd).detail->signature, nullptr);
	for (bool originSends : { true, false }) {
		int rc = librma::matchSignatures("rma_put", engine(odd), 1, engine(same), 1, originSends, bytes);
		ASSERT_EQ(errorClassOf(rc), RMA_ERR_TYPE);
		std::string msg = errorText(rc);
		EXPECT_NE(msg.find("basic element " + std::to_string(2 * kPairs - 1) + " is"), std::string::npos) << msg;
		EXPECT_NE(msg.find("RMA_FLOAT"), std::string::npos) << msg;
		EXPECT_NE(msg.find("RMA_DOUBLE"), std::string::npos) << msg;
	}
	/* In a bigger type too (lazy because its part is), and in a second copy. */
	rma_datatype two;
	ASSERT_EQ(rma_type_contiguous(2, odd, &two), RMA_SUCCESS);
	OwnedType ownedTwo(two);
	EXPECT_EQ(engine(two).detail->signature, nullptr);
	int rc = librma::matchSignatures("rma_put", engine(pair), 2 * kPairs, engine(two), 1, true, bytes);
	ASSERT_EQ(errorClassOf(rc), RMA_ERR_TYPE);
	EXPECT_NE(errorText(rc).find("basic element " + std::to_string(2 * kPairs - 1) + " is"), std::string::npos)
		<< errorText(rc);

	/* Element counting walks it too. */
	EXPECT_EQ(librma::elementsInBytes(d, 12 * 3 + 4), 7);
	EXPECT_EQ(librma::elementsInBytes(d, 12 * 3 + 2), -1);
	EXPECT_EQ(librma::bytesOfElements(d, 7), 12 * 3 + 4);
	EXPECT_EQ(librma::elementsInBytes(d, d.size), d.elements);

	/* Pack and unpack: every field, in order, and the gaps untouched. */
	std::vector<std::byte> buf(static_cast<size_t>(d.extent));
	for (int i = 0; i < kPairs; ++i) {
		int v = i;
		double x = i + 0.5;
		std::memcpy(buf.data() + 16 * size_t(i), &v, 4);
		std::memset(buf.data() + 16 * size_t(i) + 4, 0x5a, 4);
		std::memcpy(buf.data() + 16 * size_t(i) + 8, &x, 8);
	}
	/* (rma_pack is copyTyped to bytes; it needs rma_init, which this suite does not run.) */
	const rma_count packSize = d.size;
	ASSERT_EQ(packSize, rma_count(kPairs) * 12);
	std::vector<std::byte> packed(static_cast<size_t>(packSize));
	librma::copyTyped(packed.data(), engine(RMA_BYTE), packSize, buf.data(), d, 1, packSize);
	bool ok = true;
	for (int i = 0; i < kPairs && ok; ++i) {
		int v;
		double x;
		std::memcpy(&v, packed.data() + 12 * size_t(i), 4);
		std::memcpy(&x, packed.data() + 12 * size_t(i) + 4, 8);
		ok = v == i && x == i + 0.5;
		EXPECT_TRUE(ok) << "packed pair " << i;
	}
	std::vector<std::byte> out(buf.size(), std::byte(0x5a));
	librma::copyTyped(out.data(), d, 1, packed.data(), engine(RMA_BYTE), packSize, packSize);
	EXPECT_TRUE(out == buf) << "unpacked data differ";
}
