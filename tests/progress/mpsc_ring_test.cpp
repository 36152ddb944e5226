/* SPDX-License-Identifier: MIT */
#include "progress/mpsc_ring.h"

#include <cstdlib>
#include <cstring>
#include <memory>
#include <vector>

#include <gtest/gtest.h>

#include "error/error.h"

namespace librma {
namespace {

struct FreeDeleter {
	void operator()(void *p) const { std::free(p); }
};

struct Received {
	uint32_t producer;
	uint32_t type;
	std::vector<std::byte> payload;
};

std::vector<std::byte> pattern(std::size_t n, uint32_t seed)
{
	std::vector<std::byte> bytes(n);
	uint32_t x = seed * 2654435761u + 1;
	for (std::size_t i = 0; i < n; i++) {
		x ^= x << 13;
		x ^= x >> 17;
		x ^= x << 5;
		bytes[i] = static_cast<std::byte>(x);
	}
	return bytes;
}

class MpscRingTest : public ::testing::Test
{
protected:
	MpscRing make(MpscRingConfig config)
	{
		bytes_ = MpscRing::bytesFor(config);
		EXPECT_GT(bytes_, 0u);
		mem_.reset(std::aligned_alloc(kFalseSharingPad, (bytes_ + 127) / 128 * 128));
		auto ring = MpscRing::init(mem_.get(), bytes_, config);
		EXPECT_TRUE(ring.ok());
		return *ring;
	}

	static MpscRingConfig small()
	{
		return { .slots = 4, .slotBytes = 64, .producers = 3, .stageBytes = 1024 };
	}

	int drain(MpscRing &ring, int max = 1 << 30)
	{
		return ring.read([this](const MpscRecord &r) {
			received_.push_back({ r.producer, r.type, { r.payload.begin(), r.payload.end() } });
		}, max);
	}

	std::size_t bytes_ = 0;
	std::unique_ptr<void, FreeDeleter> mem_;
	std::vector<Received> received_;
};

std::span<const std::byte> asBytes(const std::vector<std::byte> &v) { return { v.data(), v.size() }; }

TEST_F(MpscRingTest, BytesForRejectsBadConfigs)
{
	EXPECT_EQ(MpscRing::bytesFor({ .slots = 3, .slotBytes = 64, .producers = 1, .stageBytes = 0 }), 0u);
	EXPECT_EQ(MpscRing::bytesFor({ .slots = 1, .slotBytes = 64, .producers = 1, .stageBytes = 0 }), 0u);
	EXPECT_EQ(MpscRing::bytesFor({ .slots = 4, .slotBytes = 96, .producers = 1, .stageBytes = 0 }), 0u);
	EXPECT_EQ(MpscRing::bytesFor({ .slots = 4, .slotBytes = 64, .producers = 0, .stageBytes = 0 }), 0u);
	EXPECT_EQ(MpscRing::bytesFor({ .slots = 4, .slotBytes = 64, .producers = 1, .stageBytes = 100 }), 0u);
	EXPECT_GT(MpscRing::bytesFor(small()), 0u);
}

TEST_F(MpscRingTest, InitRejectsNonPowerOfTwoSlots)
{
	alignas(128) static std::byte mem[65536];
	auto ring = MpscRing::init(mem, sizeof(mem), { .slots = 6, .slotBytes = 64, .producers = 1, .stageBytes = 0 });
	EXPECT_FALSE(ring.ok());
	EXPECT_EQ(errorClass(ring.code()), RMA_ERR_ARG);
}

TEST_F(MpscRingTest, InitRejectsTooSmallMemory)
{
	const std::size_t need = MpscRing::bytesFor(small());
	std::unique_ptr<void, FreeDeleter> mem(std::aligned_alloc(128, need + 128));
	EXPECT_FALSE(MpscRing::init(mem.get(), need - 1, small()).ok());
	EXPECT_FALSE(MpscRing::init(static_cast<std::byte *>(mem.get()) + 8, need, small()).ok());
	EXPECT_TRUE(MpscRing::init(mem.get(), need, small()).ok());
}

TEST_F(MpscRingTest, AttachRejectsBadMagicVersionAndSize)
{
	make(small());
	auto *header = static_cast<detail::RingHeader *>(mem_.get());

	EXPECT_FALSE(MpscRing::attach(mem_.get(), bytes_ - 64).ok());
	EXPECT_FALSE(MpscRing::attach(mem_.get(), 64).ok());

	header->version = kMpscRingVersion + 1;
	EXPECT_FALSE(MpscRing::attach(mem_.get(), bytes_).ok());
	header->version = kMpscRingVersion;

	header->magic ^= 1;
	auto bad = MpscRing::attach(mem_.get(), bytes_);
	EXPECT_FALSE(bad.ok());
	EXPECT_EQ(errorClass(bad.code()), RMA_ERR_ARG);
	header->magic ^= 1;

	auto ok = MpscRing::attach(mem_.get(), bytes_);
	ASSERT_TRUE(ok.ok());
	EXPECT_EQ(ok->config().slots, 4u);
	EXPECT_EQ(ok->config().producers, 3u);
	EXPECT_EQ(ok->config().stageBytes, 1024u);
}

TEST_F(MpscRingTest, ReadsNothingWhenEmpty)
{
	MpscRing ring = make(small());
	EXPECT_EQ(drain(ring), 0);
	EXPECT_TRUE(received_.empty());
}

TEST_F(MpscRingTest, WritesAndReadsOneRecord)
{
	MpscRing ring = make(small());
	auto data = pattern(20, 1);
	ASSERT_EQ(ring.tryWrite(2, 77, asBytes(data)), MpscStatus::Ok);
	EXPECT_EQ(drain(ring), 1);
	ASSERT_EQ(received_.size(), 1u);
	EXPECT_EQ(received_[0].producer, 2u);
	EXPECT_EQ(received_[0].type, 77u);
	EXPECT_EQ(received_[0].payload, data);
	EXPECT_EQ(drain(ring), 0);
}

TEST_F(MpscRingTest, PreservesTypesAndLengths)
{
	MpscRing ring = make({ .slots = 64, .slotBytes = 128, .producers = 1, .stageBytes = 8192 });
	const uint32_t lengths[] = { 0, 1, 7, 8, 63, 95, 96, 97, 200, 1000, 4096 };
	for (uint32_t i = 0; i < std::size(lengths); i++)
		ASSERT_EQ(ring.write(0, 1000 + i, asBytes(pattern(lengths[i], i))), MpscStatus::Ok)
			<< lengths[i];
	EXPECT_EQ(drain(ring), static_cast<int>(std::size(lengths)));
	ASSERT_EQ(received_.size(), std::size(lengths));
	for (uint32_t i = 0; i < std::size(lengths); i++) {
		EXPECT_EQ(received_[i].type, 1000 + i);
		EXPECT_EQ(received_[i].payload, pattern(lengths[i], i)) << lengths[i];
	}
}

TEST_F(MpscRingTest, CarriesZeroLengthPayload)
{
	MpscRing ring = make(small());
	ASSERT_EQ(ring.tryWrite(0, 5, {}), MpscStatus::Ok);
	EXPECT_EQ(drain(ring), 1);
	ASSERT_EQ(received_.size(), 1u);
	EXPECT_EQ(received_[0].type, 5u);
	EXPECT_TRUE(received_[0].payload.empty());
}

TEST_F(MpscRingTest, WrapsAroundManyTimes)
{
	MpscRing ring = make(small());
	uint32_t next = 0;
	for (int round = 0; round < 1000; round++) {
		for (int i = 0; i < 3; i++, next++) {
			uint32_t v = next;
			ASSERT_EQ(ring.tryWrite(next % 3, v, { reinterpret_cast<std::byte *>(&v), 4 }),
				  MpscStatus::Ok);
		}
		ASSERT_EQ(drain(ring), 3);
	}
	ASSERT_EQ(received_.size(), 3000u);
	for (uint32_t i = 0; i < 3000; i++) {
		uint32_t v;
		std::memcpy(&v, received_[i].payload.data(), 4);
		ASSERT_EQ(v, i);
		ASSERT_EQ(received_[i].type, i);
		ASSERT_EQ(received_[i].producer, i % 3);
	}
}

TEST_F(MpscRingTest, RejectsWriteWhenFullAndRecovers)
{
	MpscRing ring = make(small());
	for (uint32_t i = 0; i < 4; i++)
		ASSERT_EQ(ring.tryWrite(0, i, {}), MpscStatus::Ok);
	EXPECT_EQ(ring.tryWrite(1, 9, {}), MpscStatus::Again);
	EXPECT_EQ(ring.tryWrite(0, 9, {}), MpscStatus::Again);

	EXPECT_EQ(drain(ring, 1), 1);
	EXPECT_EQ(ring.tryWrite(1, 4, {}), MpscStatus::Ok);
	EXPECT_EQ(ring.tryWrite(1, 9, {}), MpscStatus::Again);
	EXPECT_EQ(drain(ring), 4);
	ASSERT_EQ(received_.size(), 5u);
	for (uint32_t i = 0; i < 5; i++)
		EXPECT_EQ(received_[i].type, i);
}

TEST_F(MpscRingTest, ReadStopsAtMax)
{
	MpscRing ring = make(small());
	for (uint32_t i = 0; i < 3; i++)
		ASSERT_EQ(ring.tryWrite(0, i, {}), MpscStatus::Ok);
	EXPECT_EQ(drain(ring, 2), 2);
	EXPECT_EQ(drain(ring, 2), 1);
}

TEST_F(MpscRingTest, RejectsBadProducerAndOversizedPayload)
{
	MpscRing ring = make(small());
	EXPECT_EQ(ring.tryWrite(3, 0, {}), MpscStatus::Invalid);
	EXPECT_EQ(ring.tryWrite(0, 0, asBytes(pattern(1025, 0))), MpscStatus::TooBig);
	MpscRing noStaging = make({ .slots = 4, .slotBytes = 64, .producers = 1, .stageBytes = 0 });
	EXPECT_EQ(noStaging.inlineBytes(), 32u);
	EXPECT_EQ(noStaging.tryWrite(0, 0, asBytes(pattern(32, 0))), MpscStatus::Ok);
	EXPECT_EQ(noStaging.tryWrite(0, 0, asBytes(pattern(33, 0))), MpscStatus::TooBig);
}

TEST_F(MpscRingTest, StagesLargePayloadsIntact)
{
	constexpr uint32_t kMiB = 1u << 20;
	/* 1.5 MiB of staging: the second 1 MiB record must skip the ring's end. */
	MpscRing ring = make({ .slots = 4, .slotBytes = 128, .producers = 2, .stageBytes = kMiB + kMiB / 2 });
	for (uint32_t i = 0; i < 4; i++) {
		auto data = pattern(kMiB, 100 + i);
		ASSERT_EQ(ring.tryWrite(i % 2, i, asBytes(data)), MpscStatus::Ok);
		/* Each producer's staging ring now holds one record: a second does not fit. */
		EXPECT_EQ(ring.tryWrite(i % 2, i, asBytes(data)), MpscStatus::Again);
		EXPECT_EQ(drain(ring), 1);
		ASSERT_EQ(received_.size(), i + 1);
		EXPECT_EQ(received_[i].producer, i % 2);
		EXPECT_TRUE(received_[i].payload == data) << "record " << i;
	}
}

TEST_F(MpscRingTest, StagingFullReturnsAgainAndRecovers)
{
	MpscRing ring = make({ .slots = 16, .slotBytes = 64, .producers = 1, .stageBytes = 256 });
	ASSERT_EQ(ring.tryWrite(0, 0, asBytes(pattern(100, 0))), MpscStatus::Ok); /* 128 staged */
	ASSERT_EQ(ring.tryWrite(0, 1, asBytes(pattern(100, 1))), MpscStatus::Ok); /* 256 staged */
	EXPECT_EQ(ring.tryWrite(0, 2, asBytes(pattern(40, 2))), MpscStatus::Again);
	EXPECT_EQ(ring.tryWrite(0, 3, asBytes(pattern(8, 3))), MpscStatus::Ok); /* inline still fits */
	EXPECT_EQ(drain(ring), 3);
	for (uint32_t i = 0; i < 50; i++) {
		auto data = pattern(33 + i * 3, i);
		MpscStatus status;
		while ((status = ring.tryWrite(0, 10 + i, asBytes(data))) == MpscStatus::Again)
			ASSERT_GT(drain(ring), 0);
		ASSERT_EQ(status, MpscStatus::Ok);
	}
	drain(ring);
	ASSERT_EQ(received_.size(), 53u);
	for (uint32_t i = 0; i < 50; i++)
		ASSERT_EQ(received_[3 + i].payload, pattern(33 + i * 3, i)) << i;
	ASSERT_GE(received_.size(), 3u);
	EXPECT_EQ(received_[0].payload, pattern(100, 0));
	EXPECT_EQ(received_[1].payload, pattern(100, 1));
	EXPECT_EQ(received_[2].payload, pattern(8, 3));
}

TEST_F(MpscRingTest, DeliversInPositionOrderWhenPublishedOutOfOrder)
{
	MpscRing ring = make(small());
	MpscClaim first, second;
	ASSERT_EQ(ring.tryClaim(0, 1, 4, &first), MpscStatus::Ok);
	ASSERT_EQ(ring.tryClaim(1, 2, 4, &second), MpscStatus::Ok);
	std::memset(second.payload.data(), 2, 4);
	ring.commit(second);
	EXPECT_EQ(drain(ring), 0);
	std::memset(first.payload.data(), 1, 4);
	ring.commit(first);
	EXPECT_EQ(drain(ring), 2);
	ASSERT_EQ(received_.size(), 2u);
	EXPECT_EQ(received_[0].type, 1u);
	EXPECT_EQ(received_[1].type, 2u);
}

struct Liveness {
	bool alive[3] = { true, true, true };
	int calls = 0;
	static bool check(void *self, uint32_t producer)
	{
		auto *l = static_cast<Liveness *>(self);
		l->calls++;
		return l->alive[producer];
	}
};

/* Producer 1 claims position 0 and does not publish it; producer 2 writes behind it. */
MpscClaim stallBehindClaim(MpscRing &ring, Liveness &liveness)
{
	ring.setLiveness(&Liveness::check, &liveness, 0);
	MpscClaim claim;
	EXPECT_EQ(ring.tryClaim(1, 1, 4, &claim), MpscStatus::Ok);
	EXPECT_EQ(ring.tryWrite(2, 2, {}), MpscStatus::Ok);
	return claim;
}

TEST_F(MpscRingTest, WaitsForLiveClaimer)
{
	MpscRing ring = make(small());
	Liveness liveness;
	MpscClaim claim = stallBehindClaim(ring, liveness);
	for (int i = 0; i < 5; i++)
		EXPECT_EQ(drain(ring), 0);
	EXPECT_GT(liveness.calls, 0);
	EXPECT_EQ(ring.deadProducerSlots(), 0u);
	ring.commit(claim);
	EXPECT_EQ(drain(ring), 2);
}

TEST_F(MpscRingTest, SkipsSlotOfDeadClaimer)
{
	MpscRing ring = make(small());
	Liveness liveness;
	(void)stallBehindClaim(ring, liveness);
	ASSERT_EQ(ring.tryWrite(0, 3, {}), MpscStatus::Ok);
	liveness.alive[1] = false;

	/* The first look only starts the stall clock. */
	EXPECT_EQ(drain(ring), 0);
	EXPECT_EQ(drain(ring), 2);
	EXPECT_EQ(ring.deadProducerSlots(), 1u);
	EXPECT_EQ(ring.lastDeadProducer(), 1u);
	ASSERT_EQ(received_.size(), 2u);
	EXPECT_EQ(received_[0].type, 2u);
	EXPECT_EQ(received_[1].type, 3u);

	/* The skipped slot is reused on the next lap. */
	for (uint32_t i = 0; i < 8; i++) {
		ASSERT_EQ(ring.tryWrite(0, 10 + i, {}), MpscStatus::Ok);
		ASSERT_EQ(drain(ring), 1);
	}
	EXPECT_EQ(ring.deadProducerSlots(), 1u);
}

TEST_F(MpscRingTest, DropsSlotWithOutOfRangeHeader)
{
	MpscRing ring = make(small());
	MpscClaim claim;
	ASSERT_EQ(ring.tryClaim(0, 1, 4, &claim), MpscStatus::Ok);
	/* A broken producer writes a length past the slot. */
	auto *header = reinterpret_cast<detail::SlotHeader *>(claim.payload.data()) - 1;
	header->length = 1u << 20;
	ring.commit(claim);
	ASSERT_EQ(ring.tryWrite(1, 2, {}), MpscStatus::Ok);
	EXPECT_EQ(drain(ring), 1);
	EXPECT_EQ(ring.corruptSlots(), 1u);
	ASSERT_EQ(received_.size(), 1u);
	EXPECT_EQ(received_[0].type, 2u);
}

TEST_F(MpscRingTest, NeverSkipsWithoutLiveness)
{
	MpscRing ring = make(small());
	MpscClaim claim;
	ASSERT_EQ(ring.tryClaim(1, 1, 0, &claim), MpscStatus::Ok);
	ASSERT_EQ(ring.tryWrite(2, 2, {}), MpscStatus::Ok);
	for (int i = 0; i < 3; i++)
		EXPECT_EQ(drain(ring), 0);
	EXPECT_EQ(ring.deadProducerSlots(), 0u);
}

} /* namespace */
} /* namespace librma */
