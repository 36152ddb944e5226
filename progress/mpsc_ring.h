/* SPDX-License-Identifier: MIT */
/*
 * MpscRing: a lock-free multi-producer / single-consumer ring of records in
 * memory the caller provides (a memfd segment mapped by several processes).
 * It carries accumulate records from origins to a target's progress agent.
 *
 * Layout (offsets only, no pointers; pinned by static_asserts below):
 *   RingHeader                 128 B  magic, version, geometry (set once by init)
 *   TailLine                   128 B  tail: next position to claim (producers)
 *   HeadLine                   128 B  head, dead-slot count (consumer)
 *   ProducerLines[producers]   256 B each: line 0 written by that producer
 *                                      (claim, stageTail), line 1 by the
 *                                      consumer (stageHead)
 *   Slot[slots]                slotBytes each: 32 B SlotHeader + inline payload
 *   Staging[producers]         stageBytes each: one byte ring per producer
 *
 * Positions are 64-bit counters that never wrap in practice (2^64 records);
 * position p lives in slot p & (slots - 1), slots a power of two. Each slot
 * has a sequence word `seq` that says, for the lap of position p:
 *   seq == p        free: producers may claim position p
 *   seq == p + 1    published: the consumer may read position p
 *   seq == p+slots  freed by the consumer: free for the next lap
 * so wrap-around needs no flag: a slot is reused when the consumer moves its
 * seq one lap ahead. Comparisons use (int64_t)(a - b).
 *
 * Who owns what:
 *   tail       every producer, by CAS (the one atomic of a claim)
 *   head       the consumer only (a plain counter kept in shared memory so
 *              another consumer can take over)
 *   claim[i]   producer i only: the position it is claiming, plus one (0: none)
 *   stageTail  producer i only; stageHead[i]: the consumer only
 *   slot       the producer that won its position, from the claim to the
 *              publish; the consumer from the publish to the free
 *
 * Producer (tryClaim, commit):
 *   1. Staged payloads (longer than the slot's inline room) reserve bytes in
 *      the producer's own staging byte ring first: Again if it is full.
 *   2. pos = tail; look at slot pos: seq == pos (free) -> store claim[i] =
 *      pos + 1, then CAS tail pos -> pos + 1 (the numbered cases are in
 *      MpscRing::tryClaim). seq < pos: the slot still holds the record of the
 *      previous lap, the ring is full: clear claim[i], return Again (never
 *      drop, never block; write() is the blocking helper). A CAS, not a
 *      fetch_add: a position taken by fetch_add cannot be given back, so a
 *      non-blocking claim on a full ring would leave a hole.
 *   3. Write the slot header and the payload (inline or staged), then publish
 *      with seq = pos + 1. Producers may publish out of order.
 * Consumer (read): at head, wait for seq == head + 1, hand the record to the
 * handler, give the staged bytes back (stageHead += ...), free the slot (seq
 * = head + slots), head += 1. Records are delivered in position order, so
 * each producer's records arrive in the order it claimed them (per-producer
 * FIFO); an unpublished slot holds back everything behind it. A published
 * slot whose header points outside the ring (a broken producer) is dropped
 * and counted in corruptSlots(), never read out of bounds.
 *
 * A producer that dies between claim and publish: slot head stays at seq ==
 * head while tail > head. Once the consumer has found head unpublished for
 * stallNs (its clock starts at the first such poll, and is read only when a
 * liveness callback is set), it reads tail; if head is claimed, it looks
 * for the claimer: every producer whose claim == head + 1.
 * (The winner of the CAS stored that value before it and changes it only
 * after publishing; a loser of a CAS for the same position may still show it
 * for a moment, and an idle producer has cleared it.) If there is none, the
 * slot has been published since. If every candidate is dead by the liveness
 * callback, the slot is skipped: counted in deadProducerSlots(), freed for
 * the next lap, and never delivered. "Skipped" means the dead producer's
 * record is lost; every other record keeps its place and its producer's
 * FIFO order. If any candidate is alive, the consumer waits another stallNs.
 * Without a liveness callback the consumer waits forever. A producer id must
 * not be reused by a new process while the dead one's slot may be pending;
 * a dead producer's staged bytes are not given back, so its id stays
 * retired until the ring is initialised again.
 *
 * Staging (payloads longer than inlineBytes()): each producer owns a byte
 * ring of stageBytes; records take contiguous runs rounded to 64 B, skipping
 * the ring's tail end when a record does not fit before it (the skip is in
 * the slot header, stagePad). The consumer frees runs in order, which per
 * producer is claim order. Limits: one staged record is at most stageBytes
 * (else TooBig); a producer with more staged bytes outstanding than that
 * gets Again, even if the slots have room; staging costs producers *
 * stageBytes of shared memory, chosen at init.
 *
 * Memory orderings (each release with the acquire it pairs with):
 *   R1 tail CAS (release), tryClaim  -> A1 tail load (acquire), stall path:
 *      publishes claim[i] = pos + 1, so a consumer that sees the claim can find
 *      its claimer.
 *   R2 seq = pos + 1 (release), commit -> A2 seq load (acquire), read:
 *      publishes the slot header and the payload (inline or staged).
 *   R3 seq = pos + slots (release), read/skip -> A3 seq load (acquire),
 *      tryClaim: the consumer has finished reading the slot before the next
 *      lap's producer overwrites it.
 *   R4 stageHead store (release), read -> A4 stageHead load (acquire),
 *      tryClaim: the consumer has finished reading the staged bytes.
 *   R5 claim[i] store (release), tryClaim -> A5 claim[i] load (acquire), stall
 *      path: a claim value past pos + 1 was stored after that producer's R2 for
 *      pos, so the consumer's re-check of seq sees the publish.
 *   R6 magic store (release), init -> A6 magic load (acquire), attach:
 *      publishes the geometry and the initial seq of every slot.
 * Everything else is relaxed and says why where it happens.
 *
 * Thread safety: tryClaim/commit/tryWrite/write are thread-safe across
 * producer ids, but one producer id belongs to one thread at a time (it owns
 * claim[i] and a staging ring). read() and the consumer's counters are for
 * the single consumer only. Data path: noexcept, no allocation, no system
 * call (the stall path reads CLOCK_MONOTONIC through the vDSO and calls the
 * liveness callback).
 */
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <span>

#include "common/cache.h"
#include "common/result.h"
#include "common/spin_wait.h"

namespace librma {

inline constexpr uint64_t kMpscRingMagic = 0x474e495243534d50ull; /* "PMSCRING" */
inline constexpr uint32_t kMpscRingVersion = 1;

/* The outcome of a data-path call. */
enum class [[nodiscard]] MpscStatus {
	Ok,
	/* The ring, or this producer's staging ring, is full: retry after the consumer reads. */
	Again,
	/* The payload exceeds both the slot's inline room and the staging ring. */
	TooBig,
	/* The producer id is out of range. */
	Invalid,
};

struct MpscRingConfig {
	uint32_t slots = 0;      /* a power of two, >= 2 */
	uint32_t slotBytes = 0;  /* slot stride, a multiple of 64, >= 64 (32 B of header) */
	uint32_t producers = 0;  /* producer ids are 0 .. producers - 1; >= 1 */
	uint32_t stageBytes = 0; /* staging ring per producer, a multiple of 64 (0: none) */
};

namespace detail {

struct alignas(kFalseSharingPad) RingHeader {
	uint64_t magic; /* written last by init (R6) */
	uint32_t version;
	uint32_t slots;
	uint32_t slotBytes;
	uint32_t producers;
	uint32_t stageBytes;
	uint32_t reserved;
	uint64_t slotsOffset;
	uint64_t stagingOffset;
	uint64_t totalBytes;
};
static_assert(sizeof(RingHeader) == kFalseSharingPad);
static_assert(offsetof(RingHeader, magic) == 0);
static_assert(offsetof(RingHeader, version) == 8);
static_assert(offsetof(RingHeader, slotsOffset) == 32);
static_assert(offsetof(RingHeader, totalBytes) == 48);

struct alignas(kFalseSharingPad) TailLine {
	std::atomic<uint64_t> tail;
};
static_assert(sizeof(TailLine) == kFalseSharingPad);

struct alignas(kFalseSharingPad) HeadLine {
	std::atomic<uint64_t> head;
	std::atomic<uint64_t> deadSlots;
	std::atomic<uint32_t> lastDeadProducer;
	std::atomic<uint64_t> corruptSlots;
};
static_assert(sizeof(HeadLine) == kFalseSharingPad);
static_assert(offsetof(HeadLine, deadSlots) == 8);
static_assert(offsetof(HeadLine, corruptSlots) == 24);

struct alignas(kFalseSharingPad) ProducerLines {
	/* Written by the producer. */
	std::atomic<uint64_t> claim;
	std::atomic<uint64_t> stageTail;
	/* Written by the consumer, on its own line. */
	alignas(kFalseSharingPad) std::atomic<uint64_t> stageHead;
};
static_assert(sizeof(ProducerLines) == 2 * kFalseSharingPad);
static_assert(offsetof(ProducerLines, stageTail) == 8);
static_assert(offsetof(ProducerLines, stageHead) == kFalseSharingPad);

inline constexpr uint32_t kStaged = 1;

struct SlotHeader {
	std::atomic<uint64_t> seq;
	uint32_t producer;
	uint32_t type;
	uint32_t length;
	uint32_t flags;    /* kStaged: the payload is in the producer's staging ring */
	uint32_t stagePad; /* staged: bytes skipped at the end of the staging ring first */
	uint32_t reserved;
};
static_assert(sizeof(SlotHeader) == 32);
static_assert(offsetof(SlotHeader, producer) == 8);
static_assert(offsetof(SlotHeader, stagePad) == 24);

static_assert(std::atomic<uint64_t>::is_always_lock_free);
static_assert(std::atomic<uint32_t>::is_always_lock_free);
static_assert(sizeof(std::atomic<uint64_t>) == sizeof(uint64_t));

inline constexpr uint64_t kHeaderBytes = sizeof(RingHeader) + sizeof(TailLine) + sizeof(HeadLine);
static_assert(kHeaderBytes == 3 * kFalseSharingPad);

/* Staged allocations are rounded to this. */
inline constexpr uint32_t kStageAlign = 64;

inline uint32_t stageRound(uint32_t length)
{
	return (length + kStageAlign - 1) & ~(kStageAlign - 1);
}

} /* namespace detail */

/* One record as the consumer's handler sees it; @payload is valid during the call only. */
struct MpscRecord {
	uint32_t producer;
	uint32_t type;
	std::span<const std::byte> payload;
};

/* A claimed slot: write up to payload.size() bytes into @payload, then commit(). */
struct MpscClaim {
	uint64_t position = 0;
	std::span<std::byte> payload;
};

class MpscRing
{
public:
	/*
	 * Whether a producer is alive: called by the consumer, only on a slot
	 * stuck unpublished for stallNs. Must not call into the ring.
	 */
	using Liveness = bool (*)(void *context, uint32_t producer);

	MpscRing() = default;

	/* Bytes of memory init() needs for @config; 0 if the config is invalid. */
	static std::size_t bytesFor(const MpscRingConfig &config);

	/*
	 * Lay out a new ring in @mem (@bytes long, 64-byte aligned, shared with
	 * the other processes before or after). No producer or consumer may
	 * use the memory until init() returns. RMA_ERR_ARG (with a message) on
	 * a bad config, misaligned or too small memory. Not thread-safe.
	 */
	static Result<MpscRing> init(void *mem, std::size_t bytes, const MpscRingConfig &config);

	/*
	 * Use a ring that init() laid out (in this process or another).
	 * RMA_ERR_ARG on bad magic or version, a geometry that does not fit
	 * @bytes, or misaligned memory. Thread-safe.
	 */
	static Result<MpscRing> attach(void *mem, std::size_t bytes);

	const MpscRingConfig &config() const { return config_; }
	/* Largest payload carried inline in a slot. */
	uint32_t inlineBytes() const { return config_.slotBytes - sizeof(detail::SlotHeader); }
	/* Largest payload at all. */
	uint32_t maxPayload() const
	{
		return config_.stageBytes > inlineBytes() ? config_.stageBytes : inlineBytes();
	}

	/*
	 * Producer: claim room for a @length-byte record of @type.
	 * Ok: *@claim's payload has @length bytes to fill, then commit(). Again: the
	 * ring or this producer's staging ring is full (nothing was claimed;
	 * retry once the consumer has read). TooBig: @length > maxPayload().
	 * Invalid: @producer >= config().producers. Thread-safe for distinct
	 * @producer ids; one id belongs to one thread at a time, which must
	 * commit a claim before its next tryClaim.
	 */
	MpscStatus tryClaim(uint32_t producer, uint32_t type, uint32_t length, MpscClaim *claim) noexcept;

	/* Producer: publish a claim filled after tryClaim() returned Ok. */
	void commit(const MpscClaim &claim) noexcept
	{
		detail::SlotHeader *s = slot(claim.position);
		/* R2: pairs with A2 in read(); publishes the slot header and the payload. */
		s->seq.store(claim.position + 1, std::memory_order_release);
	}

	/* Producer: tryClaim(), copy @payload, commit(). Same results and thread safety. */
	MpscStatus tryWrite(uint32_t producer, uint32_t type, std::span<const std::byte> payload) noexcept
	{
		if (payload.size() > UINT32_MAX) [[unlikely]]
			return MpscStatus::TooBig;
		MpscClaim claim;
		MpscStatus status = tryClaim(producer, type, static_cast<uint32_t>(payload.size()), &claim);
		if (status != MpscStatus::Ok)
			return status;
		if (!payload.empty())
			std::memcpy(claim.payload.data(), payload.data(), payload.size());
		commit(claim);
		return MpscStatus::Ok;
	}

	/*
	 * Producer: tryWrite() until it is not Again, spinning then yielding
	 * (SpinWait). Blocks for as long as the consumer does not read.
	 */
	MpscStatus write(uint32_t producer, uint32_t type, std::span<const std::byte> payload) noexcept
	{
		SpinWait wait;
		for (;;) {
			MpscStatus status = tryWrite(producer, type, payload);
			if (status != MpscStatus::Again)
				return status;
			wait.once();
		}
	}

	/*
	 * Consumer: how dead claimers are found. @alive(@context, id) is asked
	 * once the consumer has found its next slot unpublished for @stallNs
	 * and that slot is claimed, then again every @stallNs; without
	 * it (the default) a stuck slot is waited for forever. Consumer only.
	 */
	void setLiveness(Liveness alive, void *context, uint64_t stallNs)
	{
		alive_ = alive;
		aliveContext_ = context;
		stallNs_ = stallNs;
	}

	/*
	 * Consumer: hand up to @max published records, in position order, to
	 * @handler(const MpscRecord &), and free their slots. Never waits:
	 * returns at the first slot not published yet. Returns the number of
	 * records handled (0: nothing to do now). Consumer only.
	 */
	template<typename Handler>
	int read(Handler &&handler, int max) noexcept;

	/*
	 * Anyone: whether a position has been claimed past the consumer's head
	 * (records published or on their way). A hint that may be stale, for a
	 * consumer deciding whether to park: pair it with a seq_cst fence after
	 * announcing sleep (progress/doorbell.h) to see every claim made before
	 * the producer's own fence.
	 */
	bool pending() const noexcept
	{
		/* Relaxed: a hint; the doorbell handshake's fences order it where it matters. */
		return tailLine()->tail.load(std::memory_order_relaxed) !=
		       headLine()->head.load(std::memory_order_relaxed);
	}

	/* Consumer: slots skipped because their claimer died (see the protocol). */
	uint64_t deadProducerSlots() const
	{
		/* Relaxed: a statistic; written only by the consumer. */
		return headLine()->deadSlots.load(std::memory_order_relaxed);
	}
	/*
	 * Consumer: published slots dropped because their header was out of
	 * range (a producer that broke the protocol); never read out of bounds.
	 */
	uint64_t corruptSlots() const
	{
		/* Relaxed: a statistic; written only by the consumer. */
		return headLine()->corruptSlots.load(std::memory_order_relaxed);
	}
	/* Consumer: the producer id of the last skipped slot's claimer. */
	uint32_t lastDeadProducer() const
	{
		return headLine()->lastDeadProducer.load(std::memory_order_relaxed);
	}

private:
	MpscRing(std::byte *base, const MpscRingConfig &config);

	detail::RingHeader *header() const { return reinterpret_cast<detail::RingHeader *>(base_); }
	detail::TailLine *tailLine() const
	{
		return reinterpret_cast<detail::TailLine *>(base_ + sizeof(detail::RingHeader));
	}
	detail::HeadLine *headLine() const
	{
		return reinterpret_cast<detail::HeadLine *>(base_ + sizeof(detail::RingHeader) +
							    sizeof(detail::TailLine));
	}
	detail::ProducerLines *producerLines(uint32_t producer) const
	{
		return reinterpret_cast<detail::ProducerLines *>(base_ + detail::kHeaderBytes) + producer;
	}
	detail::SlotHeader *slot(uint64_t position) const
	{
		return reinterpret_cast<detail::SlotHeader *>(slots_ + (position & mask_) * config_.slotBytes);
	}
	std::byte *staging(uint32_t producer) const
	{
		return staging_ + static_cast<std::size_t>(producer) * config_.stageBytes;
	}

	/* Whether a published slot's header stays inside the ring (read() trusts nothing else). */
	bool headerInRange(const detail::SlotHeader *s) const
	{
		if (!(s->flags & detail::kStaged))
			return s->length <= inlineBytes();
		return s->producer < config_.producers && s->length <= config_.stageBytes &&
		       s->stagePad < config_.stageBytes;
	}

	enum class Stall {
		Wait,    /* come back later: empty, or a live claimer */
		Retry,   /* the slot was published meanwhile */
		Skipped, /* its claimer is dead: the slot was freed unread */
	};
	/* The slot at @head is not published: what to do about it. */
	[[gnu::cold]] Stall stalled(uint64_t head) noexcept;

	std::byte *base_ = nullptr;
	std::byte *slots_ = nullptr;
	std::byte *staging_ = nullptr;
	MpscRingConfig config_;
	uint64_t mask_ = 0;

	/* Consumer-local: the stuck position and when it was first seen stuck. */
	Liveness alive_ = nullptr;
	void *aliveContext_ = nullptr;
	uint64_t stallNs_ = 0;
	uint64_t stallPosition_ = UINT64_MAX;
	uint64_t stallSince_ = 0;
};

template<typename Handler>
int MpscRing::read(Handler &&handler, int max) noexcept
{
	detail::HeadLine *hl = headLine();
	/* Relaxed: head is written by the consumer only (the one thread running read()). */
	uint64_t head = hl->head.load(std::memory_order_relaxed);
	int handled = 0;
	while (handled < max) {
		detail::SlotHeader *s = slot(head);
		/* A2: pairs with R2 in commit(); the slot header and payload are visible. */
		uint64_t seq = s->seq.load(std::memory_order_acquire);
		if (seq != head + 1) {
			Stall stall = stalled(head);
			if (stall == Stall::Wait)
				break;
			/* Skipped: stalled() freed the slot. */
			if (stall == Stall::Skipped)
				++head;
			continue;
		}

		const bool staged = s->flags & detail::kStaged;
		const uint32_t producer = s->producer;
		if (!headerInRange(s)) [[unlikely]] {
			/* Relaxed: a statistic, written by the consumer only. */
			hl->corruptSlots.store(hl->corruptSlots.load(std::memory_order_relaxed) + 1,
					       std::memory_order_relaxed);
			/* R3: as below; the slot is dropped unread. */
			s->seq.store(head + config_.slots, std::memory_order_release);
			++head;
			continue;
		}
		std::span<const std::byte> payload;
		detail::ProducerLines *pl = nullptr;
		uint64_t stageHead = 0;
		uint64_t stageUsed = 0;
		if (!staged) {
			payload = { reinterpret_cast<const std::byte *>(s + 1), s->length };
		} else {
			pl = producerLines(producer);
			/* Relaxed: stageHead is written by the consumer only. */
			stageHead = pl->stageHead.load(std::memory_order_relaxed);
			uint64_t offset = (stageHead + s->stagePad) % config_.stageBytes;
			payload = { staging(producer) + offset, s->length };
			stageUsed = s->stagePad + detail::stageRound(s->length);
		}

		handler(MpscRecord{ producer, s->type, payload });

		if (staged) {
			/* R4: pairs with A4 in tryClaim(); we are done with the staged bytes. */
			pl->stageHead.store(stageHead + stageUsed, std::memory_order_release);
		}
		/* R3: pairs with A3 in tryClaim(); we are done with the slot. */
		s->seq.store(head + config_.slots, std::memory_order_release);
		++head;
		++handled;
	}
	/* Relaxed: only a consumer that takes over later reads it, ordered by the hand-over. */
	hl->head.store(head, std::memory_order_relaxed);
	return handled;
}

} /* namespace librma */
