/* SPDX-License-Identifier: MIT */
/*
 * rma_pack, rma_unpack and rma_pack_size (they take a communicator, so this
 * suite runs inside rma_init as a job of one rank).
 */
#include <gtest/gtest.h>

#include <cstring>
#include <numeric>
#include <vector>

#include <rma/rma.h>

#include "datatype/type_test_util.h"

using namespace rmatest;

namespace {

class RmaEnvironment : public ::testing::Environment
{
public:
	void SetUp() override
	{
		ASSERT_EQ(rma_init(nullptr, nullptr), RMA_SUCCESS);
		ASSERT_EQ(rma_comm_set_errhandler(RMA_COMM_SELF, RMA_ERRORS_RETURN), RMA_SUCCESS);
	}
	void TearDown() override { EXPECT_EQ(rma_finalize(), RMA_SUCCESS); }
};

[[maybe_unused]] const auto *kEnvironment = ::testing::AddGlobalTestEnvironment(new RmaEnvironment);

TEST(Pack, VectorRoundTripsThroughThePackedForm)
{
	rma_datatype v;
	ASSERT_EQ(rma_type_vector(4, 2, 3, RMA_DOUBLE, &v), RMA_SUCCESS);
	OwnedType owned(v);
	std::vector<double> in(12);
	std::iota(in.begin(), in.end(), 1.0);
	int size = 0;
	ASSERT_EQ(rma_pack_size(1, v, RMA_COMM_WORLD, &size), RMA_SUCCESS);
	EXPECT_EQ(size, 64);
	std::vector<char> packed(size);
	int position = 0;
	ASSERT_EQ(rma_pack(in.data(), 1, v, packed.data(), size, &position, RMA_COMM_WORLD), RMA_SUCCESS);
	EXPECT_EQ(position, 64);
	/* Packed: the blocks back to back. */
	std::vector<double> flat(8);
	std::memcpy(flat.data(), packed.data(), 64);
	EXPECT_EQ(flat, std::vector<double>({ 1, 2, 4, 5, 7, 8, 10, 11 }));
	/* Unpacked into the same layout: the gaps are not written. */
	std::vector<double> out(12, -1.0);
	position = 0;
	ASSERT_EQ(rma_unpack(packed.data(), size, &position, out.data(), 1, v, RMA_COMM_WORLD), RMA_SUCCESS);
	EXPECT_EQ(position, 64);
	EXPECT_EQ(out, std::vector<double>({ 1, 2, -1, 4, 5, -1, 7, 8, -1, 10, 11, -1 }));
}

TEST(Pack, PositionsAdvanceAcrossCalls)
{
	struct P {
		char c;
		int i;
	};
	int lengths[] = { 1, 1 };
	rma_aint disps[] = { offsetof(P, c), offsetof(P, i) };
	rma_datatype types[] = { RMA_CHAR, RMA_INT };
	rma_datatype p;
	ASSERT_EQ(rma_type_create_struct(2, lengths, disps, types, &p), RMA_SUCCESS);
	OwnedType owned(p);
	int header = 42;
	P records[3] = { { 'x', 1 }, { 'y', 2 }, { 'z', 3 } };
	char buf[64];
	int position = 0;
	ASSERT_EQ(rma_pack(&header, 1, RMA_INT, buf, sizeof(buf), &position, RMA_COMM_SELF), RMA_SUCCESS);
	ASSERT_EQ(rma_pack(records, 3, p, buf, sizeof(buf), &position, RMA_COMM_SELF), RMA_SUCCESS);
	EXPECT_EQ(position, 4 + 3 * 5);
	int header2 = 0;
	P back[3] = {};
	int in = 0;
	ASSERT_EQ(rma_unpack(buf, position, &in, &header2, 1, RMA_INT, RMA_COMM_SELF), RMA_SUCCESS);
	ASSERT_EQ(rma_unpack(buf, position, &in, back, 3, p, RMA_COMM_SELF), RMA_SUCCESS);
	EXPECT_EQ(in, position);
	EXPECT_EQ(header2, 42);
	for (int k = 0; k < 3; ++k) {
		EXPECT_EQ(back[k].c, records[k].c);
		EXPECT_EQ(back[k].i, records[k].i);
	}
}

TEST(Pack, LargeCountFormsAgree)
{
	rma_datatype v;
	ASSERT_EQ(rma_type_vector(3, 1, 2, RMA_INT, &v), RMA_SUCCESS);
	OwnedType owned(v);
	int in[6] = { 1, 2, 3, 4, 5, 6 }, out[6] = {};
	char buf[12];
	rma_count size = 0, position = 0;
	ASSERT_EQ(rma_pack_size_c(1, v, RMA_COMM_SELF, &size), RMA_SUCCESS);
	EXPECT_EQ(size, 12);
	ASSERT_EQ(rma_pack_c(in, 1, v, buf, sizeof(buf), &position, RMA_COMM_SELF), RMA_SUCCESS);
	position = 0;
	ASSERT_EQ(rma_unpack_c(buf, sizeof(buf), &position, out, 1, v, RMA_COMM_SELF), RMA_SUCCESS);
	EXPECT_EQ(position, 12);
	EXPECT_EQ(out[0], 1);
	EXPECT_EQ(out[2], 3);
	EXPECT_EQ(out[4], 5);
	EXPECT_EQ(out[1], 0);

	rma_datatype huge;
	ASSERT_EQ(rma_type_contiguous_c(rma_count(1) << 40, RMA_BYTE, &huge), RMA_SUCCESS);
	OwnedType ownedHuge(huge);
	int small;
	ASSERT_EQ(rma_pack_size(1, huge, RMA_COMM_SELF, &small), RMA_SUCCESS);
	EXPECT_EQ(small, RMA_UNDEFINED);
}

TEST(Pack, FailuresWriteNothing)
{
	rma_datatype v, overlapping, uncommitted;
	ASSERT_EQ(rma_type_vector(2, 2, 3, RMA_INT, &v), RMA_SUCCESS);
	ASSERT_EQ(rma_type_vector(2, 2, 1, RMA_INT, &overlapping), RMA_SUCCESS);
	ASSERT_EQ(rma_type_contiguous(2, RMA_INT, &uncommitted), RMA_SUCCESS);
	OwnedType ov(v), oo(overlapping), ou(uncommitted, false);
	int data[8] = { 1, 2, 3, 4, 5, 6, 7, 8 };
	char buf[16];
	std::memset(buf, 0x33, sizeof(buf));
	int position = 4;
	EXPECT_EQ(errorClassOf(rma_pack(data, 1, v, buf, 16, &position, RMA_COMM_SELF)), RMA_ERR_TRUNCATE);
	EXPECT_EQ(position, 4);
	for (char c : buf)
		EXPECT_EQ(c, 0x33);
	position = 17;
	EXPECT_EQ(errorClassOf(rma_pack(data, 1, v, buf, 16, &position, RMA_COMM_SELF)), RMA_ERR_ARG);
	position = 0;
	EXPECT_EQ(errorClassOf(rma_pack(data, -1, v, buf, 16, &position, RMA_COMM_SELF)), RMA_ERR_COUNT);
	EXPECT_EQ(errorClassOf(rma_pack(data, 1, uncommitted, buf, 16, &position, RMA_COMM_SELF)), RMA_ERR_TYPE);
	EXPECT_EQ(errorClassOf(rma_pack(data, 1, v, buf, 16, &position, RMA_COMM_NULL)), RMA_ERR_COMM);
	EXPECT_EQ(errorClassOf(rma_pack(data, 1, v, buf, 16, nullptr, RMA_COMM_SELF)), RMA_ERR_ARG);
	/* Packing from an overlapping type is fine; unpacking into it is not. */
	EXPECT_EQ(rma_pack(data, 1, overlapping, buf, 16, &position, RMA_COMM_SELF), RMA_SUCCESS);
	position = 0;
	EXPECT_EQ(errorClassOf(rma_unpack(buf, 16, &position, data, 1, overlapping, RMA_COMM_SELF)), RMA_ERR_TYPE);
	position = 8;
	EXPECT_EQ(errorClassOf(rma_unpack(buf, 16, &position, data, 1, v, RMA_COMM_SELF)), RMA_ERR_TRUNCATE);
	EXPECT_EQ(data[0], 1);
}

} /* namespace */
