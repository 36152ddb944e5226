/* SPDX-License-Identifier: MIT */
/*
 * Windows that span hosts (docs/design/inter-host.md §3; increments G, H, J
 * in part): what a Window keeps for its members on other hosts, and the
 * service that applies other hosts' requests to the members on this one.
 * Internal to lib/win (window.cpp, window_ops.cpp, sync.cpp use it).
 *
 * Layout: each host has its own control segment for the window (made by
 * the window's lowest rank there; memfds never cross hosts). A target on
 * another host has Reach::Remote. Its requests go to the process of the
 * lowest window rank on its host (the window's *server* there, which maps
 * every member of its host), in one ordered stream per (origin process,
 * server process): the engine's Link. The server applies them in order with
 * the same memory paths local origins use, so a target is truly passive.
 *
 * Origin side (application thread):
 *  - put: PUT frames of at most 64 KiB, each carrying a piece of the target
 *    type as runs; the data is the origin's, packed. Complete locally on
 *    return (the bytes are in the socket), remotely at the next flush.
 *    From RMA_NET_BULK_MIN bytes on, puts and gets go in 256 KiB frames
 *    over the bulk connections instead (Stream::bulk, drainBulk()).
 *  - get: GET frames of the same shape; each reply lands in the origin
 *    buffer (or in a staging buffer, unpacked by the last reply). Complete
 *    at the next flush (the replies come before the flush's ACK), or for
 *    rget once its replies are in (requestSeq()/repliesDone()).
 *  - flush(t) / flushAll: FLUSH on each stream with traffic since the last
 *    ACK, then wait for the ACKs (TCP order: everything before is applied).
 *  - lock(t) is lazy: LOCK is queued and the epoch's frames follow it;
 *    unlock: UNLOCK behind them, wait for its ACK (a refusal is reported).
 *    lock_all: every host's part (this host's global word as on one host,
 *    LOCK_ALL to each other host's server, which takes its host's word for
 *    us), never waiting for one part while holding another: it waits for
 *    one part holding nothing, then only tries the others (LOCK_ALL with
 *    kLockAllTry), and gives everything back to wait for a busy one.
 *  - fence and free: FENCE{epoch} behind the operations on each stream; the
 *    server mirrors the origin's barrier word on its host once everything
 *    before it is applied; every member waits for every word as on one host.
 * Server side (the engine's server thread): validated PUT, GET, FLUSH,
 * LOCK, UNLOCK, LOCK_ALL, UNLOCK_ALL. A LOCK that cannot be granted is
 * parked by the engine and retried. The server remembers the shared locks
 * and lock_all grants it handed to each origin (an exclusive holder is in
 * the lock word itself), so that when an origin's connection ends
 * (onOriginLost) it gives back exactly what that origin still held,
 * granted reply seen or not; its parked requests die with the connection.
 * Accumulates: ACC / GET_ACC (fetch_and_op too) / CAS frames, applied by the
 * server as the ring's consumer (Window::applyRemote); old values come back
 * as ACC_REPLY before the flush's ACK.
 * PSCW: POST and COMPLETE frames update the posted and completed rows of the
 * peer's host (post(), complete() below).
 * Dynamic windows: the disp is an address, checked by the target's server
 * against the owner's attach table when it applies the frame (no origin-side
 * copy of the table: ATTACH_QUERY is refused). allocate_shared cannot span
 * hosts (an error at creation).
 */
#pragma once

#include <cstdint>
#include <deque>
#include <memory>
#include <vector>

#include "common/result.h"
#include "datatype/datatype.h"
#include "op/op.h"
#include "win/control.h"

#include "config.h"

/* The transport needs libcrypto (authentication) and liburing's headers (the engine). */
#if defined(HAVE_LIBCRYPTO) && defined(HAVE_LIBURING)
#define RMA_HAVE_NET 1
#include "net/engine.h"
#endif

namespace librma {

struct RequestFailure; /* win/window.h */

class Window;

#ifdef RMA_HAVE_NET

class RemoteWindow final : public net::WindowService
{
public:
	/*
	 * @hostOf: window rank -> host index; @serverOf: window rank -> the
	 * world rank of its host's server. Registers with the engine.
	 */
	static Result<std::unique_ptr<RemoteWindow>> create(Window &win, uint64_t id, std::vector<uint32_t> hostOf,
							    std::vector<int> serverOf);
	~RemoteWindow() override;

	/* Origin side. @offset: disp × disp_unit, checked against the target's size by the caller. */
	int put(const char *call, int target, rma_aint offset, const void *origin, const Datatype &otype, int ocount,
		const Datatype &ttype, int tcount, rma_count bytes);
	int get(const char *call, int target, rma_aint offset, void *origin, const Datatype &otype, int ocount,
		const Datatype &ttype, int tcount, rma_count bytes);
	/*
	 * The accumulate family (@fetch: get_accumulate and fetch_and_op,
	 * whose old values reach @result at the next flush), and
	 * compare_and_swap. Applied at the target host by its server as the
	 * ring's consumer would apply them (Window::applyRemote), so they are
	 * atomic with local origins' operations; ordered per origin and target
	 * by the stream.
	 */
	int accumulate(const char *call, int target, rma_aint offset, Op op, uint8_t elem, bool fetch, const void *origin,
		       const Datatype *otype, int ocount, void *result, const Datatype *rtype, int rcount,
		       const Datatype &ttype, int tcount, rma_count bytes);
	int compareAndSwap(const char *call, int target, rma_aint offset, uint8_t elem, const void *origin,
			   const void *compare, void *result);
	/* Remote completion of everything sent to @target's server (-1: every server). */
	int flush(const char *call, int target);
	int lock(const char *call, int target, bool exclusive);
	int unlock(const char *call, int target, bool exclusive);
	int lockAll(const char *call);
	int unlockAll(const char *call);
	/*
	 * Fence and free (Window::barrier(), barrier number @epoch): wait for
	 * the replies of our gets and fetches, then send FENCE{epoch} to each
	 * other host's server, which mirrors our barrier word into its host's
	 * control segment once it has applied everything we sent before it.
	 * The caller then waits on every member's word as on one host.
	 */
	int fence(const char *call, uint64_t epoch);
	/*
	 * PSCW: post() sends POST to each other host with origins in
	 * @origins (window ranks there), whose server counts the post in its
	 * host's posted row, where start() waits as on one host. complete()
	 * waits for @target's fetch replies, then sends COMPLETE{@count} (our
	 * completes to it so far) behind our operations; the server stores it
	 * in its host's completed row, where wait()/test() look.
	 */
	int post(const char *call, const std::vector<int> &origins);
	int complete(const char *call, int target, uint64_t count);
	/*
	 * Request forms (rget, rget_accumulate): requestSeq() is the stream
	 * sequence of the last request sent to @target (0: none); the request
	 * is complete once no reply up to it is missing (repliesDone() reads
	 * what arrived; waitReplies() waits). rput/raccumulate complete at
	 * once: the data was copied when queued.
	 */
	uint64_t requestSeq(int target);
	bool repliesDone(int target, uint64_t seq);
	int waitReplies(const char *call, int target, uint64_t seq);
	/*
	 * The request whose fetches are being sent (Window::remoteRequest()):
	 * each of its PendingGets carries it, and the reply that refuses one
	 * (or the loss of the bulk connection it went on) records the error
	 * there, not in the stream: the request's wait or test reports it
	 * (requestResult()), and no other call does. waitReplies() reports
	 * only what ends the stream (a lost link, a broken stream, silence),
	 * so one request's wait never reports another operation's refusal.
	 */
	std::shared_ptr<RequestFailure> request_;
	/*
	 * A complete request's (up to @seq) error: its own refusal (@f, may be
	 * nullptr), or the lost link or broken stream one of its replies needed.
	 */
	int requestResult(const char *call, int target, uint64_t seq, const RequestFailure *f);
	/* Request @f was freed before it completed: a refusal it recorded goes to the stream (reported once). */
	void requestAbandoned(int target, const RequestFailure &f);
	/*
	 * rma_test of request @seq to @target found it incomplete:
	 * RMA_ERR_PROC_FAILED once @target's host has sent nothing for
	 * RMA_NET_TIMEOUT_MS while this request waited (as waitReplies()).
	 */
	int silence(const char *call, int target, uint64_t seq);
	/*
	 * Whether the link to @target's host is lost (reads what arrived;
	 * connects if not yet connected). While the link lives, asks that
	 * host's server at most every kProbeMs whether @target itself lives (a
	 * FLUSH naming it): a refusal marks it dead in this host's job status,
	 * where peerDead() finds it.
	 */
	bool peerLost(int target);
	static constexpr int64_t kProbeMs = 50;
	/* Server side: how often an operation looks whether its (local) target lives; the next time it does. */
	static constexpr int64_t kServerCheckMs = 20;
	int64_t serverCheckDueMs_ = 0;

	/* Server side. */
	bool onRequest(const net::ParsedFrame &frame, net::Replier &reply) noexcept override;
	/* Origin side: a reply on the link to world rank @server. */
	void onReply(const net::ParsedFrame &frame) noexcept override;
	uint8_t *replyDestination(const net::FrameHeader &h) noexcept override;
	void onReplyPlaced(const net::FrameHeader &h) noexcept override;
	/*
	 * Server side: origin world rank @rank is gone (its connection ended):
	 * release every lock it held on this host's targets, as its unlocks
	 * would have: its exclusive locks (the holder field names it), and the
	 * shared locks and lock_all grants this server handed it (held_).
	 */
	void onOriginLost(uint32_t rank) noexcept override;

private:
	RemoteWindow(Window &win, uint64_t id) : win_(win), id_(id) {}

	struct PendingGet {
		uint64_t seq;
		std::byte *dest;     /* where this piece's bytes go */
		std::size_t bytes;
		std::shared_ptr<struct GetStaging> staging; /* non-contiguous origin: unpack after the last piece */
		std::shared_ptr<RequestFailure> request;    /* the request it belongs to, if any (request_) */
	};
	/* A fetch to remember at @seq, for the request being sent if any. */
	PendingGet pendingGet(uint64_t seq, std::byte *dest, std::size_t bytes,
			      std::shared_ptr<struct GetStaging> staging) const
	{
		return PendingGet{ seq, dest, bytes, std::move(staging), request_ };
	}
	/* Record @error (the refusal of @g's frame, or the loss of its connection) in @g's request. */
	static void failRequest(const PendingGet &g, int error) noexcept;
	/* One ordered stream: this process to one server process. */
	struct Stream {
		int server = -1;       /* world rank */
		net::Link *link = nullptr;
		uint64_t sent = 0;     /* seq of the last request sent */
		uint64_t flushed = 0;  /* seq of the last FLUSH (or other acked request) sent */
		uint64_t acked = 0;    /* seq of the last ACK received */
		std::deque<PendingGet> gets;
		int error = 0;         /* a NACK or a lost link, reported at the next wait */
		uint64_t probe = 0;    /* seq of the last liveness probe (a FLUSH naming a target) */
		int64_t probedMs = 0;  /* when it was sent */
		uint64_t busy = 0;     /* seq of the last LOCK_ALL tried and not granted (NACK{RMA_ERR_PENDING}) */
		uint64_t nacked = 0;   /* seq of the last request refused (any other NACK) */
		bool broken = false;   /* a reply matched no request: error stays, as for a lost link */
		/* silence(): the request tested, when its host was last heard from, and how much it had sent then. */
		uint64_t silentSeq = 0;
		int64_t heardMs = 0;
		uint64_t heardBytes = 0;
		/*
		 * The last LOCK sent (lock() does not wait for its grant): until
		 * it is answered, waits on this stream do not time out (it may
		 * be parked behind another holder for any time; a dead host is
		 * the keepalive's), and at most kBehindLockBytes of frames queue
		 * behind it (its server keeps them, parked, until the grant).
		 */
		uint64_t lockSeq = 0;
		std::size_t behindLock = 0; /* bytes of frames sent after it */
		/*
		 * Bulk connections to the same server (RMA_NET_BULK of them,
		 * connected on first use, replaced once failed and drained: the
		 * engine keeps failed ones valid): large puts and gets go there in kBulkChunk
		 * pieces, round-robin. Nothing orders them with the stream, so
		 * every synchronization on the stream (flush, unlock, unlock_all,
		 * fence, complete) first waits until each has answered a FLUSH
		 * sent behind its puts (drainBulk()).
		 */
		std::vector<net::Link *> bulk;
		std::vector<uint64_t> bulkSent; /* seq of the last request on each, 0 once answered */
		std::vector<std::deque<PendingGet>> bulkGets; /* gets on each, oldest first (replies come in order there) */
		uint32_t nextBulk = 0;
	};
	/* A bulk put's frames: this much data each (round-robin over the bulk connections, design §4.4). */
	static constexpr std::size_t kBulkChunk = std::size_t{ 256 } << 10;
	/*
	 * One PUT or GET frame (@kind) with body @body then @data on the next
	 * bulk connection to @s's server: which one (@index) and its sequence
	 * number (@seq).
	 */
	int sendBulk(const char *call, Stream &s, int target, net::FrameKind kind, std::span<const uint8_t> body,
		     std::span<const uint8_t> data, uint32_t &index, uint64_t &seq);
	/*
	 * Whether @s's host is taken for gone after @silentMs without a byte
	 * from it: past RMA_NET_TIMEOUT_MS, with no LOCK on its link waiting
	 * for a grant (a lock may be parked behind another holder for any
	 * time; a dead host is then the keepalive's to tell). The silence,
	 * not the wait, counts: replies still streaming in restart it.
	 */
	static bool silentTooLong(const Stream &s, int64_t silentMs) noexcept;
	/* RMA_ERR_PROC_FAILED saying so. */
	static int silentError(const Stream &s);
	/* @rc as @call's error on this window. */
	int callError(const char *call, int rc) const;
	/* Whether a reply up to @seq is missing and can never come (the link failed, or the stream broke). */
	static bool repliesLost(const Stream &s, uint64_t seq) noexcept
	{
		return (s.link->failed() || s.broken) && !s.gets.empty() && s.gets.front().seq <= seq;
	}
	/* What ended @s (repliesLost()): the link's own error if it failed, else the broken stream's. */
	static int lostError(const Stream &s) noexcept { return s.link->failed() ? s.link->error() : s.error; }
	/* The gets a reply numbered @seq answers (the stream's or a bulk connection's; net::Link::bulkOfSeq()), or nullptr. */
	std::deque<PendingGet> *pendingGets(Stream &s, uint64_t seq) noexcept
	{
		const uint32_t b = net::Link::bulkOfSeq(seq);
		if (b == 0)
			return &s.gets;
		return b <= s.bulkGets.size() ? &s.bulkGets[b - 1] : nullptr;
	}
	/*
	 * Wait until every bulk connection to @s's server has applied what we
	 * put there (a FLUSH each, and its ACK). A failure or a refusal is
	 * recorded in s.error, which the caller's wait reports: the release
	 * (UNLOCK, FENCE) that follows must still leave.
	 */
	void drainBulk(Stream &s);
	static constexpr std::size_t kBehindLockBytes = std::size_t{ 1 } << 20;
	/*
	 * @target's host's stream, connecting on first use. A refusal recorded
	 * on it is returned (and forgotten: reported once) when @report; the
	 * liveness check passes false and leaves it for the caller's wait.
	 */
	Result<Stream *> stream(const char *call, int target, bool report = true);
	/* stream(), but a live link with a refusal pending is returned too: UNLOCK and UNLOCK_ALL must leave. */
	Result<Stream *> releaseStream(const char *call, int target);
	/* The stream a reply with header @h belongs to (nullptr: none). */
	Stream *replyStream(const net::FrameHeader &h) noexcept;
	/* The oldest get of @gets has its reply at its destination: retire it (unpack a staged origin after its last piece). */
	void finishGet(std::deque<PendingGet> &gets) noexcept;
	/*
	 * One request frame of @kind on @s: @targetWorld is the target's world
	 * rank (the server's for FLUSH; 0 for the kinds that name none); its
	 * body is @body then @data (the caller's bytes, sent from where they are).
	 */
	int sendRequest(Stream &s, net::FrameKind kind, uint32_t targetWorld, std::span<const uint8_t> body, uint64_t &seq,
			bool noOrigin = false, std::span<const uint8_t> data = {});
	/* Rank @t is another host's server: each other host once, through its server (a member of it). */
	bool servesOtherHost(int t) const
	{
		return hostOf_[static_cast<std::size_t>(t)] != myHost_ &&
		       serverOf_[static_cast<std::size_t>(t)] == worldOf_[static_cast<std::size_t>(t)];
	}
	/* @fn(Stream &) for the stream to each other host's server, in host order; stops at an error. */
	template<typename Fn>
	int forEachOtherHost(const char *call, Fn &&fn);
	/* Wait for the replies of the gets and fetches on @s. */
	int waitFetches(const char *call, Stream &s);
	uint64_t seqScratch_ = 0;
	uint32_t worldTarget(int target) const { return static_cast<uint32_t>(worldOf_[static_cast<std::size_t>(target)]); }
	int waitAck(const char *call, Stream &s, uint64_t seq, bool noTimeout = false);
	/* LOCK_ALL to @s's server: @wait until granted (parked there), else one try (@granted says). */
	int lockAllOn(const char *call, Stream &s, bool wait, bool &granted);
	int flushStream(const char *call, Stream &s);
	/* What kind of op frames transfer() makes. */
	struct OpShape {
		net::FrameKind kind;
		uint16_t op;        /* Op, for the accumulate family */
		uint32_t elem;      /* the element index (BYTE for put and get) */
		uint32_t elemBytes; /* frames carry whole elements */
		bool sendsData;     /* the origin's values travel */
		bool fetches;       /* replies carry data to @dest */
	};
	/* Op frames over the target type's blocks, each at most 64 KiB. */
	int transfer(const char *call, const OpShape &shape, int target, rma_aint offset, const std::byte *packed,
		     const Datatype &ttype, int tcount, rma_count bytes, std::byte *dest,
		     const std::shared_ptr<struct GetStaging> &staging);
	std::byte *fetchTarget(void *origin, const Datatype &type, int count, rma_count bytes,
			       std::shared_ptr<struct GetStaging> &staging);

	/* Server side. */
	struct HeldLocks;
	bool tryLock(int target, int origin, bool exclusive);
	void releaseLock(int target, bool exclusive);
	bool tryLockAll(HeldLocks &held);
	/*
	 * A parked LOCK or LOCK_ALL waits no more when a dead process of this
	 * host may hold or wait for what blocks it (Window::deadLockHolder(),
	 * at most every kServerCheckMs): its window rank, else -1.
	 */
	int deadLocalBlocker(bool exclusive);
	int64_t parkedCheckDueMs_ = 0;
	/* NACK{RMA_ERR_PROC_FAILED} naming dead window rank @dead, marked dead here first. */
	void refuseDead(net::Replier &reply, int dead);
	/*
	 * What this server granted one origin and has not had back: shared
	 * locks (the kShared it added to a target's word) and lock_all grants
	 * (kLockAll in this host's global word). Exclusive locks need no entry:
	 * the word's holder field names the origin. Counts, not flags, so that
	 * every grant has its release. Touched by LOCK/UNLOCK/LOCK_ALL/
	 * UNLOCK_ALL and onOriginLost() only (server thread; never the data
	 * path). Bounded: one entry per target of this host at most.
	 */
	struct HeldLocks {
		struct Shared {
			int32_t target;
			uint32_t count;
		};
		std::vector<Shared> shared;
		uint32_t lockAll = 0;
		/*
		 * Targets whose exclusive lock the origin waits for here (its LOCK
		 * parked): counted in their waiters and in the global word's
		 * exclusive-waiting half, as a local waiter is, so that writer
		 * preference holds across hosts. At most one (an origin's stream
		 * is in order: nothing after a parked LOCK runs).
		 */
		std::vector<int32_t> waitingExclusive;
		/* Its parked shared LOCK or LOCK_ALL giving way to exclusive lockers (phase-fair); reset at each grant. */
		GrantWatch watch;
		/*
		 * Targets whose LOCK from this origin was refused (a dead process
		 * of this host held or waited for what blocked it), with that
		 * process's world rank: the origin sent its epoch's operations
		 * behind the LOCK without waiting for the grant, so they are
		 * refused too, until its UNLOCK. At most one entry per target.
		 */
		struct Refused {
			int32_t target;
			uint32_t dead;
		};
		std::vector<Refused> refused;
	};
	std::vector<HeldLocks> held_; /* by origin window rank */
	/* Count @origin as an exclusive locker waiting for @target (@waiting), or no longer; idempotent. */
	void noteExclusiveWait(int origin, int target, bool waiting);
	void noteShared(int origin, int target);
	/* Whether @origin held a shared lock of @target here (then forgotten: one fewer). */
	bool forgetShared(int origin, int target);

	Window &win_;
	uint64_t id_;
	std::vector<uint32_t> hostOf_;
	std::vector<int> serverOf_;
	std::vector<int> worldOf_;
	uint32_t myHost_ = 0;
	std::vector<int32_t> rankInWindow_;
	std::vector<net::TargetView> views_;
	std::vector<std::unique_ptr<Stream>> streams_; /* by host */
};

#else

/* Built without the inter-host transport: windows cannot span hosts. */
class RemoteWindow
{
};

#endif

} /* namespace librma */
