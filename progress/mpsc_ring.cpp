/* SPDX-License-Identifier: MIT */
#include "mpsc_ring.h"

#include <time.h>

#include <bit>
#include <cstdint>
#include <cstring>

#include "error/error.h"

namespace librma {

using detail::ProducerLines;
using detail::RingHeader;
using detail::SlotHeader;

namespace {

/* Why @config cannot be used, or nullptr. */
const char *configProblem(const MpscRingConfig &config)
{
	if (config.slots < 2 || !std::has_single_bit(config.slots))
		return "the slot count must be a power of two, at least 2";
	if (config.slotBytes < 64 || config.slotBytes % 64 != 0)
		return "the slot size must be a multiple of 64, at least 64";
	if (config.producers < 1 || config.producers > 65536)
		return "the producer count must be 1 to 65536";
	if (config.stageBytes % detail::kStageAlign != 0)
		return "the staging size must be a multiple of 64";
	return nullptr;
}

uint64_t slotsOffset(const MpscRingConfig &config)
{
	return detail::kHeaderBytes + uint64_t(config.producers) * sizeof(ProducerLines);
}

uint64_t stagingOffset(const MpscRingConfig &config)
{
	uint64_t end = slotsOffset(config) + uint64_t(config.slots) * config.slotBytes;
	return (end + kFalseSharingPad - 1) / kFalseSharingPad * kFalseSharingPad;
}

uint64_t monotonicNs()
{
	timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return uint64_t(ts.tv_sec) * 1000000000u + uint64_t(ts.tv_nsec);
}

} /* namespace */

std::size_t MpscRing::bytesFor(const MpscRingConfig &config)
{
	if (configProblem(config))
		return 0;
	return stagingOffset(config) + uint64_t(config.producers) * config.stageBytes;
}

MpscRing::MpscRing(std::byte *base, const MpscRingConfig &config)
	: base_(base), slots_(base + slotsOffset(config)), staging_(base + stagingOffset(config)),
	  config_(config), mask_(config.slots - 1)
{
}

Result<MpscRing> MpscRing::init(void *mem, std::size_t bytes, const MpscRingConfig &config)
{
	if (const char *problem = configProblem(config))
		return Result<MpscRing>::failure(makeError(RMA_ERR_ARG, "MpscRing::init: %s", problem));
	if (reinterpret_cast<uintptr_t>(mem) % kCacheLine != 0)
		return Result<MpscRing>::failure(makeError(RMA_ERR_ARG, "MpscRing::init: memory not 64-byte aligned"));
	const std::size_t need = bytesFor(config);
	if (bytes < need)
		return Result<MpscRing>::failure(makeError(RMA_ERR_ARG, "MpscRing::init: %zu bytes given, %zu needed",
							   bytes, need));

	auto *base = static_cast<std::byte *>(mem);
	/* Everything but the staging rings starts at zero: tail, head, claims, counters. */
	std::memset(base, 0, slotsOffset(config) + std::size_t(config.slots) * config.slotBytes);
	auto *header = reinterpret_cast<RingHeader *>(base);
	header->version = kMpscRingVersion;
	header->slots = config.slots;
	header->slotBytes = config.slotBytes;
	header->producers = config.producers;
	header->stageBytes = config.stageBytes;
	header->slotsOffset = slotsOffset(config);
	header->stagingOffset = stagingOffset(config);
	header->totalBytes = need;

	MpscRing ring(base, config);
	for (uint64_t i = 0; i < config.slots; i++) {
		/* Relaxed: published with the header by R6. */
		ring.slot(i)->seq.store(i, std::memory_order_relaxed);
	}
	/* R6: pairs with A6 in attach(); publishes the geometry and every slot's seq. */
	std::atomic_ref<uint64_t>(header->magic).store(kMpscRingMagic, std::memory_order_release);
	return ring;
}

Result<MpscRing> MpscRing::attach(void *mem, std::size_t bytes)
{
	if (reinterpret_cast<uintptr_t>(mem) % kCacheLine != 0)
		return Result<MpscRing>::failure(makeError(RMA_ERR_ARG, "MpscRing::attach: memory not 64-byte aligned"));
	if (bytes < detail::kHeaderBytes)
		return Result<MpscRing>::failure(makeError(RMA_ERR_ARG, "MpscRing::attach: %zu bytes, too small", bytes));

	auto *base = static_cast<std::byte *>(mem);
	auto *header = reinterpret_cast<RingHeader *>(base);
	/* A6: pairs with R6 in init(); the geometry below is complete. */
	uint64_t magic = std::atomic_ref<uint64_t>(header->magic).load(std::memory_order_acquire);
	if (magic != kMpscRingMagic)
		return Result<MpscRing>::failure(makeError(RMA_ERR_ARG, "MpscRing::attach: bad magic %#llx",
							   static_cast<unsigned long long>(magic)));
	if (header->version != kMpscRingVersion)
		return Result<MpscRing>::failure(makeError(RMA_ERR_ARG, "MpscRing::attach: version %u, expected %u",
							   header->version, kMpscRingVersion));

	MpscRingConfig config;
	config.slots = header->slots;
	config.slotBytes = header->slotBytes;
	config.producers = header->producers;
	config.stageBytes = header->stageBytes;
	if (const char *problem = configProblem(config))
		return Result<MpscRing>::failure(makeError(RMA_ERR_ARG, "MpscRing::attach: %s", problem));
	const std::size_t need = bytesFor(config);
	if (header->totalBytes != need || header->slotsOffset != slotsOffset(config) ||
	    header->stagingOffset != stagingOffset(config) || bytes < need)
		return Result<MpscRing>::failure(makeError(RMA_ERR_ARG,
							   "MpscRing::attach: layout needs %zu bytes, %zu given", need, bytes));
	return MpscRing(base, config);
}

MpscStatus MpscRing::tryClaim(uint32_t producer, uint32_t type, uint32_t length, MpscClaim *claim) noexcept
{
	if (producer >= config_.producers) [[unlikely]]
		return MpscStatus::Invalid;
	ProducerLines *pl = producerLines(producer);

	/* 1. Staging: reserve bytes in this producer's own byte ring (committed after the claim). */
	const bool staged = length > inlineBytes();
	uint64_t stageTail = 0;
	uint32_t stagePad = 0;
	uint32_t stageNeed = 0;
	if (staged) {
		if (length > config_.stageBytes)
			return MpscStatus::TooBig;
		stageNeed = detail::stageRound(length);
		/* Relaxed: stageTail is written by this producer only. */
		stageTail = pl->stageTail.load(std::memory_order_relaxed);
		uint64_t offset = stageTail % config_.stageBytes;
		/* A record is contiguous: skip the end of the ring if it does not fit there. */
		if (offset + stageNeed > config_.stageBytes)
			stagePad = static_cast<uint32_t>(config_.stageBytes - offset);
		/* A4: pairs with R4 in read(); the consumer is done with the bytes before stageHead. */
		uint64_t stageHead = pl->stageHead.load(std::memory_order_acquire);
		/*
		 * The new bytes must not reach the oldest unread byte of the
		 * previous lap. One exception: when everything was read
		 * (stageHead == stageTail), a wrapping record may run into its
		 * own padding, which no one reads; stageTail - stageHead then
		 * exceeds stageBytes until the consumer frees this record, and
		 * this check refuses the next one until it has.
		 */
		if (stageTail + stagePad + stageNeed - stageHead > config_.stageBytes &&
		    !(stagePad != 0 && stageHead == stageTail))
			return MpscStatus::Again;
	}

	/*
	 * 2. Claim a position. Relaxed first load: the CAS validates it, and
	 * the slot's state comes from its seq (A3), not from tail.
	 */
	std::atomic<uint64_t> &tail = tailLine()->tail;
	uint64_t pos = tail.load(std::memory_order_relaxed);
	SlotHeader *s;
	for (;;) {
		s = slot(pos);
		/* A3: pairs with R3 in read()/stalled(); the consumer is done with the previous lap. */
		uint64_t seq = s->seq.load(std::memory_order_acquire);
		int64_t diff = static_cast<int64_t>(seq - pos);
		if (diff == 0) {
			/*
			 * The slot is free for position pos. Announce the claim
			 * before making it, so that a consumer who sees the claim
			 * finds its claimer.
			 * R5: pairs with A5 in stalled(); once this value moves past
			 * an earlier pos + 1, that position's R2 is visible.
			 */
			pl->claim.store(pos + 1, std::memory_order_release);
			/*
			 * Cases:
			 * (1) The CAS succeeds: position pos is ours.
			 * (2) It fails because another producer took pos (or
			 *     spuriously): pos is reloaded, retry. Our claim word
			 *     shows pos + 1 until the retry overwrites it; the
			 *     consumer then sees a live claimer and waits, which
			 *     is safe.
			 * R1: pairs with A1 in stalled(); publishes the claim word.
			 */
			if (tail.compare_exchange_weak(pos, pos + 1, std::memory_order_release,
						       std::memory_order_relaxed))
				break;
			continue;
		}
		if (diff < 0) {
			/*
			 * (3) seq < pos: the slot still holds position pos -
			 *     slots (claimed or unread), so the ring is full.
			 *     Clear the claim word, so that no consumer mistakes
			 *     this idle producer for the claimer of pos.
			 */
			pl->claim.store(0, std::memory_order_release);
			return MpscStatus::Again;
		}
		/*
		 * (4) seq > pos: another producer took pos since we read tail.
		 *     Relaxed: as in the first load.
		 */
		pos = tail.load(std::memory_order_relaxed);
	}

	/* 3. The slot is ours until commit(); R2 publishes these fields. */
	s->producer = producer;
	s->type = type;
	s->length = length;
	s->flags = staged ? detail::kStaged : 0;
	s->stagePad = stagePad;
	claim->position = pos;
	if (staged) {
		uint64_t offset = (stageTail + stagePad) % config_.stageBytes;
		claim->payload = { staging(producer) + offset, length };
		/* Relaxed: written by this producer only. */
		pl->stageTail.store(stageTail + stagePad + stageNeed, std::memory_order_relaxed);
	} else {
		claim->payload = { reinterpret_cast<std::byte *>(s + 1), length };
	}
	return MpscStatus::Ok;
}

MpscRing::Stall MpscRing::stalled(uint64_t head) noexcept
{
	/*
	 * An idle consumer comes here on every poll: it touches neither the
	 * tail line (the producers' CAS target) nor the clock until a liveness
	 * callback is set, and then reads the tail only once per stallNs.
	 */
	if (alive_ == nullptr)
		return Stall::Wait;
	const uint64_t now = monotonicNs();
	if (stallPosition_ != head) {
		stallPosition_ = head;
		stallSince_ = now;
		return Stall::Wait;
	}
	if (now - stallSince_ < stallNs_)
		return Stall::Wait;
	/* Whatever we find, look again only after another stallNs. */
	stallSince_ = now;

	/* A1: pairs with R1 in tryClaim(); if head is claimed, its claimer's claim word is visible. */
	uint64_t tail = tailLine()->tail.load(std::memory_order_acquire);
	if (static_cast<int64_t>(tail - head) <= 0)
		return Stall::Wait; /* empty */

	bool found = false;
	uint32_t claimer = 0;
	for (uint32_t p = 0; p < config_.producers; p++) {
		/* A5: pairs with R5 in tryClaim(). */
		uint64_t c = producerLines(p)->claim.load(std::memory_order_acquire);
		if (c != head + 1)
			continue;
		if (alive_(aliveContext_, p))
			return Stall::Wait;
		found = true;
		claimer = p;
	}

	SlotHeader *s = slot(head);
	/*
	 * A2': pairs with R2 in commit(). A claimer that moved its claim word
	 * on (seen by A5) had published head before: then seq says so here.
	 */
	if (s->seq.load(std::memory_order_acquire) != head)
		return Stall::Retry;
	if (!found)
		return Stall::Retry;

	/* Every claimer of head is dead: free the slot unread. */
	detail::HeadLine *hl = headLine();
	/* Relaxed: statistics, written by the consumer only. */
	hl->deadSlots.store(hl->deadSlots.load(std::memory_order_relaxed) + 1, std::memory_order_relaxed);
	hl->lastDeadProducer.store(claimer, std::memory_order_relaxed);
	/* R3: pairs with A3 in tryClaim(); the slot is free for the next lap. */
	s->seq.store(head + config_.slots, std::memory_order_release);
	stallPosition_ = UINT64_MAX;
	return Stall::Skipped;
}

} /* namespace librma */
