/* SPDX-License-Identifier: MIT */
/*
 * The inter-host engine of one process (docs/design/inter-host.md §2, §10 G):
 * where this process listens, the job's key, the authenticated connections
 * it serves and those it opened, and the windows that span hosts. It moves
 * frames, never windows: a window's frames go to its WindowService (lib/win),
 * which applies them to memory and answers.
 *
 * Roles. Every process of a job that spans hosts has an engine (made by
 * rma_init) with a listening TCP socket on the job's interface, published to
 * the job in the init allgather together with the job secret (rank 0's).
 *  - Server: an origin on another host connects to the process that serves
 *    a window's targets on this host (the window's lowest rank here, which
 *    maps every local member's memory). An acceptor thread authenticates
 *    each connection (auth.h, 1 s per step) and hands it to the server
 *    thread, which owns a NetLoop (io_uring, or epoll) and hands every
 *    validated request (frame::parse against the window's view) to the
 *    window's service. A request the service cannot apply yet (a lock that
 *    is held) is parked with everything behind it on that connection and
 *    retried on every pass: TCP order plus in-order application is the
 *    stream order the ops rely on. The server thread starts with the first
 *    window this process serves; it busy-polls while traffic flows
 *    (RMA_NET_SPIN_US after the last frame), then parks in the loop.
 *  - Origin: the process's own Link to each server it talks to, opened and
 *    authenticated on first use, written with plain send() and read by
 *    busy-polled recv(MSG_DONTWAIT) inside the calls that wait (flush,
 *    unlock, fence, get completion): the origin needs no thread.
 *
 * Thread safety: start()/stop() and registerWindow()/unregisterWindow() are
 * control path (serialized by the caller, RMA_THREAD_SERIALIZED). The
 * server thread applies frames under the registry lock, so a window is
 * never applied to after unregisterWindow() returns. Links belong to the
 * application thread (origin side).
 */
#pragma once

#include <atomic>
#include <cerrno>
#include <cstdint>
#include <deque>
#include <map>
#include <memory>
#include <mutex>
#include <span>
#include <string>
#include <thread>
#include <vector>

#include "common/result.h"
#include "common/unique_fd.h"
#include "net/auth.h"
#include "net/frame.h"
#include "net/uring_loop.h"

namespace librma::net {

/* What each rank publishes at init (the allgather's record; rank 0's secret and hash are the job's). */
struct EndpointCard {
	uint32_t ipv4 = 0; /* network byte order; 0: this rank does not listen */
	uint16_t port = 0; /* network byte order */
	uint16_t reserved = 0;
	uint64_t jobHash = 0;
	uint64_t machine = 0; /* hash of the kernel's boot id: ranks of simulated hosts (namespaces) share CPUs */
	uint8_t secret[kSecretBytes] = {};
	/* This rank's public key (RankIdentity): its connections' PROOFs must be signed by the private half. */
	uint8_t identity[kIdentityKeyBytes] = {};
};

/* Sends the answers to one request (the server thread's, during onRequest()). */
class Replier
{
public:
	Replier(NetLoop &loop, ConnId conn, const FrameHeader &request) : loop_(loop), conn_(conn), request_(request) {}
	/* ACK of the request (its seq). */
	void ack() noexcept;
	/* NACK{errorClass, detail}. */
	void nack(int errorClass, uint64_t detail) noexcept;
	/* A reply of @kind (GET_REPLY, ACC_REPLY) with @data as its body; kLastChunk when @last. */
	void data(FrameKind kind, std::span<const uint8_t> data, bool last) noexcept;
	/*
	 * A reply of @kind whose @n body bytes the caller writes in place (no
	 * copy): returns where, or nullptr if the connection is gone.
	 */
	uint8_t *dataInPlace(FrameKind kind, std::size_t n, bool last) noexcept;

private:
	void send(FrameKind kind, uint16_t flags, std::span<const uint8_t> a, std::span<const uint8_t> b) noexcept;
	NetLoop &loop_;
	ConnId conn_;
	FrameHeader request_;
};

/*
 * A window that spans hosts, as the engine sees it: the view frame::parse
 * checks requests against, and the code that applies them (lib/win).
 */
class WindowService
{
public:
	virtual ~WindowService() = default;
	/*
	 * A validated request for a target on this host (server thread,
	 * registry lock held). Answer through @reply. Return false, having
	 * done nothing, to park it (retried in order on later passes).
	 */
	virtual bool onRequest(const ParsedFrame &frame, Replier &reply) noexcept = 0;
	/* A validated reply for an origin in this process (application thread, inside Link::pump()). */
	virtual void onReply(const ParsedFrame &frame) noexcept = 0;
	/*
	 * Receiving in place (Link::pump()): where the body of the GET_REPLY
	 * or ACC_REPLY whose validated header is @h goes, if this service expects exactly
	 * that reply next (its sequence number and length) and can take its
	 * bytes straight from the socket; nullptr otherwise (the frame then
	 * goes through onReply()). Asked again before every read into it, so
	 * a destination that stops being expected is never written after.
	 */
	virtual uint8_t *replyDestination(const FrameHeader &h) noexcept
	{
		(void)h;
		return nullptr;
	}
	/* The whole body of @h has been received at replyDestination(@h): as onReply() without the copy. */
	virtual void onReplyPlaced(const FrameHeader &h) noexcept { (void)h; }
	/*
	 * The connection of origin world rank @rank ended: it broke (that
	 * process or its host is gone), was dropped for a malformed frame, or
	 * closed (the process finished, or was killed: its kernel closes with a
	 * FIN too). Its requests still parked were dropped first and never
	 * reach onRequest(). Release what it still holds here (server thread,
	 * registry lock held).
	 */
	virtual void onOriginLost(uint32_t rank) noexcept { (void)rank; }
	/* Fill by the owner before registering; read by parse(). */
	WindowView view;
};

class Engine;

/*
 * This process's connection to one server process (origin side). Owned by
 * the engine; used by the application thread only.
 */
class Link
{
public:
	/*
	 * @bulk: one of this process's bulk connections to @server
	 * (kPurposeBulk): it carries PUT, GET and FLUSH, frames of up to
	 * kMaxBulkBody, and numbers its requests from @seqBase on (bulkSeqBase()).
	 */
	Link(Engine &engine, int server, UniqueFd fd, uint32_t peerHost, bool bulk = false, uint64_t seqBase = 0);
	/*
	 * Sequence numbers say which connection a reply came on: 0 .. 2^48 - 1
	 * on the stream, (i + 1) << 48 on from bulk connection i.
	 */
	static constexpr int kBulkSeqShift = 48;
	static constexpr uint64_t bulkSeqBase(uint32_t index) { return (uint64_t{ index } + 1) << kBulkSeqShift; }
	/* 0 for a stream's sequence number, i + 1 for bulk connection i's. */
	static constexpr uint32_t bulkOfSeq(uint64_t seq) { return static_cast<uint32_t>(seq >> kBulkSeqShift); }
	int server() const { return server_; }
	bool bulk() const { return bulk_; }
	/*
	 * Bulk connections: acked() is the highest sequence answered (an ACK
	 * or a NACK). ACKs are the link's alone; NACKs and GET_REPLYs also go
	 * to their window, as on the stream (each window reports its own
	 * refusals: the bulk connections serve every window).
	 */
	uint64_t acked() const { return acked_; }
	/* Give the connection up (closed; every later call fails with RMA_ERR_PROC_FAILED naming @why); returns that error. */
	int abort(const char *why)
	{
		abandoned_ = true;
		return fail(ETIMEDOUT, why);
	}
	/* Whether abort() gave it up (the server may still hold and apply what it sent): never replaced. */
	bool abandoned() const { return abandoned_; }
	/* A failed link kept only for those that still point to it (Engine::retired_): its buffers go. */
	void releaseBuffers();
	/* Next request sequence number on this link (replies echo it). */
	uint64_t nextSeq() { return ++seq_; }
	/*
	 * Request @seq is a LOCK whose answer may wait for a holder elsewhere
	 * (its server parks it, and every later frame of this connection, of
	 * any window, behind it). Until it is answered, silence on the link is
	 * no sign of a lost host: lockUnanswered() tells every window's waits.
	 */
	void noteLock(uint64_t seq) { lockSeq_ = std::max(lockSeq_, seq); }
	bool lockUnanswered() const { return lockSeq_ > answeredSeq_; }
	/*
	 * Write @bytes (whole frames) in full. Reads and dispatches replies
	 * while the socket is full. RMA_ERR_PROC_FAILED once the connection is
	 * lost (the message names the server and the error).
	 */
	int send(std::span<const uint8_t> bytes);
	/* Write the bytes of @parts, one after the other, in full, with as few system calls as the socket allows. As send(). */
	int sendParts(std::span<const std::span<const uint8_t>> parts);
	/*
	 * Batching (design §8: a put and its flush leave in one send()): queue
	 * one frame, @head then @body then @data, behind the frames queued
	 * before; they leave together once kBatchBytes are queued or at
	 * push(). A frame of kBatchBytes or more leaves at once, together
	 * with what is queued, in one sendmsg() read straight from @body and
	 * @data (no copy: the caller's buffers are free again on return).
	 * Callers push() before they wait for an answer. Errors as send().
	 */
	int queue(std::span<const uint8_t> head, std::span<const uint8_t> body, std::span<const uint8_t> data = {});
	int push();
	static constexpr std::size_t kBatchBytes = 16 << 10;
	/*
	 * Read what has arrived (never blocks) and hand each reply to its
	 * window's service. Returns RMA_SUCCESS, or the connection's error
	 * (it is then closed, and every later call returns it).
	 */
	int pump();
	/* Whether the connection failed (error() is its code). */
	bool failed() const { return error_ != 0; }
	int error() const { return error_; }
	/* Bytes received so far: a waiter that sees it grow knows the peer is alive and working. */
	uint64_t received() const { return received_; }
	/*
	 * The reply to request @seq (sent next) is a GET_REPLY or ACC_REPLY
	 * of at least kDirectBytes: pump() then reads frame by frame until it has come,
	 * so that its body goes straight to where replyDestination() says.
	 */
	void expectLargeReply(uint64_t seq)
	{
		if (largeReplies_.empty() || largeReplies_.back() < seq)
			largeReplies_.push_back(seq);
	}
	static constexpr uint32_t kDirectBytes = 16 << 10;
	/* Replies received in place so far (direct_). */
	uint64_t directFrames() const { return directFrames_; }

private:
	[[gnu::cold]] int fail(int err, const char *what);
	/* A bulk connection's ACK or NACK (acked_); false for any other kind or for an answer that is not ours. */
	bool onBulkReply(const ParsedFrame &f);
	/* After feed(): whether the incomplete frame is a large reply its window can take in place (then direct_). */
	void tryDirect(const ParseContext &ctx);
	/* Read into direct_'s destination; false once the socket has nothing more (or failed: error_). */
	bool pumpDirect();
	Engine &engine_;
	int server_;
	UniqueFd fd_;
	uint32_t peerHost_;
	bool bulk_ = false;
	bool abandoned_ = false;
	uint64_t seq_ = 0;
	uint64_t acked_ = 0;  /* bulk: the highest sequence answered */
	uint64_t received_ = 0;
	int error_ = 0;
	FrameAssembler assembler_;
	std::vector<uint8_t> in_;
	std::vector<uint8_t> out_; /* queued frames */
	/*
	 * A GET_REPLY or ACC_REPLY being received straight into its destination (the
	 * origin's buffer): its header, and the body bytes still to come.
	 * Replies of at least kDirectBytes go this way: one copy (the
	 * kernel's) instead of two.
	 */
	struct Direct {
		FrameHeader header{};
		uint64_t done = 0; /* body bytes received */
		uint64_t left = 0; /* body bytes still to come; 0: not receiving in place */
		uint8_t *dest = nullptr; /* where its body goes (replyDestination()) */
		bool dropping = false;   /* the destination went away: the rest is read and dropped */
	} direct_;
	/*
	 * Requests whose large replies are still to come (expectLargeReply()),
	 * oldest first. While there are any, pump() reads frame by frame (a
	 * header, then exactly the rest of its frame), so that each such
	 * reply's body is read in place whole. Replies come in request order
	 * on a link, so a frame answering request s also means every entry
	 * before s is answered (or was refused).
	 */
	std::deque<uint64_t> largeReplies_;
	/* How much pump() reads next: one frame at a time while a large reply is expected. */
	std::size_t nextRead() const;
	/* A frame answering request @seq was received: forget the expected replies up to it. */
	void answered(uint64_t seq)
	{
		answeredSeq_ = std::max(answeredSeq_, seq);
		while (!largeReplies_.empty() && largeReplies_.front() <= seq)
			largeReplies_.pop_front();
	}
	uint64_t lockSeq_ = 0;	   /* the last LOCK sent (noteLock()) */
	uint64_t answeredSeq_ = 0; /* the last request answered (replies come in request order) */
	uint64_t directFrames_ = 0;
};

struct EngineConfig {
	int rank = 0;
	std::vector<uint32_t> hostOf; /* world rank -> host index */
	/* RMA_NET_IF: an interface name, an IPv4 address or a CIDR; empty: the first non-loopback IPv4 address up. */
	std::string interface;
	/* RMA_NET_TIMEOUT_MS: a reply that does not come in time, or a peer silent that long, fails the operations. */
	int timeoutMs = 3000;
	int spinUs = 200;       /* RMA_NET_SPIN_US: the server polls this long after its last frame */
	UringPolicy policy = UringPolicy::Prefer;
	ZcPolicy zc = ZcPolicy::Auto; /* RMA_NET_ZC: zero-copy sends of the server's replies (lib/net/features.h) */
	uint32_t zcMinBytes = 65536;  /* RMA_NET_ZC_MIN: the smallest send that goes zero-copy */
	/*
	 * RMA_NET_BULK: bulk connections per (origin process, server process),
	 * 0 for none; RMA_NET_BULK_MIN: the smallest put or get that takes them. One
	 * of at least bulkMinBytes goes in 256 KiB chunks (RemoteWindow::kBulkChunk),
	 * round-robin over them (design §4.4).
	 */
	uint32_t bulkLinks = 2; /* K = 2 moved 1 MiB puts 8-15 % faster than K = 1 on the 2-CPU veth link; 4 no better */
	uint64_t bulkMinBytes = 256 << 10;
	/* RMA_NET_FIXED_BUFFERS: the server's bulk connections read into registered buffers (io_uring READ_FIXED). */
	bool fixedBuffers = true;
	/* RMA_NET_SQPOLL: the server's ring gets a kernel SQ polling thread that sleeps after this many idle ms; 0: none. */
	uint32_t sqpollIdleMs = 0;
	/*
	 * RMA_NET_SERVER_PRIORITY=fifo: the server thread runs SCHED_FIFO
	 * (priority 1), so a frame preempts the ranks computing on its CPU;
	 * where it would yield to them it parks instead (a FIFO thread's yield
	 * lets no normal thread run). Refused (no CAP_SYS_NICE, RLIMIT_RTPRIO
	 * 0): normal priority, said once on stderr.
	 */
	bool realtime = false;
	bool verbose = false;         /* RMA_VERBOSE=1: stop() prints what the server's loop used and sent */
	/*
	 * Called on the server thread when a connection from @host timed out
	 * (no RST: the host died or its link went down): the caller marks its
	 * ranks dead so that this host's waits end with RMA_ERR_PROC_FAILED.
	 */
	void (*hostLost)(uint32_t host) = nullptr;
};

class Engine
{
public:
	/*
	 * Listen on the configured interface (port chosen by the kernel) and
	 * fill @card (with a fresh secret and job hash: only rank 0's are
	 * used). RMA_ERR_ARG for an RMA_NET_IF that names nothing here;
	 * RMA_ERR_INTERN when no socket can be made.
	 */
	static Result<std::unique_ptr<Engine>> listen(EngineConfig config, EndpointCard &card);
	~Engine();

	/* Every rank's card, in world order (after the init allgather). Derives the key; keeps each rank's identity. */
	int setPeers(std::span<const EndpointCard> cards);
	/* World rank @rank's published public key, null if it published none (or is outside the world). */
	const std::array<uint8_t, kIdentityKeyBytes> *identityOf(uint32_t rank) const noexcept;
	/* This process's identity, which signs the connections it opens (its public half is in its card). */
	const RankIdentity *identity() const noexcept { return identity_.get(); }

	const EngineConfig &config() const { return config_; }
	uint32_t hostOf(int worldRank) const { return config_.hostOf[static_cast<std::size_t>(worldRank)]; }
	/* The smallest world rank on @host. */
	uint32_t leaderOf(uint32_t host) const { return leaders_[host]; }
	/* "10.77.0.1:41234": where this process listens. */
	std::string address() const;
	/* "io_uring: ..." or "poll: ..." once the server thread runs, else "". */
	std::string serverBackend() const;
	/*
	 * How many times the server thread has stopped polling to wait in its
	 * loop (RMA_NET_SPIN_US after its last frame). Any thread; relaxed.
	 */
	uint64_t serverWaits() const { return serverWaits_.load(std::memory_order_relaxed); }
	/*
	 * How many idle passes of the server thread gave up the CPU (only when
	 * the host is oversubscribed and a thread of this process waits in
	 * librma, yielding: SpinWait::yieldingHere()). Any thread; relaxed.
	 */
	uint64_t serverYields() const { return serverYields_.load(std::memory_order_relaxed); }

	/*
	 * A window that spans hosts: its frames go to @service from now on,
	 * both requests (when @serves: start the server thread if needed) and
	 * replies. @id is the same at every member and unique in the job.
	 * RMA_ERR_INTERN if the server thread cannot start.
	 */
	int registerWindow(uint64_t id, WindowService *service, bool serves);
	/* No frame reaches @id's service once this returns. */
	void unregisterWindow(uint64_t id);

	/*
	 * The authenticated link to world rank @server's process, connecting
	 * on first use (RMA_NET_TIMEOUT_MS for the connect). Errors:
	 * RMA_ERR_PROC_FAILED (cannot connect, or the link is lost),
	 * RMA_ERR_INTERN (authentication failed).
	 */
	Result<Link *> link(int server);
	/*
	 * Bulk connection @index (0 .. RMA_NET_BULK - 1) to world rank
	 * @server's process, connecting on first use: large puts and gets go there in
	 * chunks, beside the ordered stream of link(@server) (design §4.4).
	 * A bulk connection that failed is replaced by a new one here while
	 * the stream lives (it holds no locks; the transfers it lost were
	 * reported by their drain), unless this side gave it up (abort()):
	 * the failed Link stays valid (failed) for whoever still holds it.
	 * The server takes a bulk connection only beside the origin's live
	 * stream. Errors as link(); the stream's own error once the stream is
	 * lost.
	 */
	Result<Link *> bulkLink(int server, uint32_t index);

	/* Control: stop the threads, close everything (rma_finalize). */
	void stop();

	/* For Link: the service of window @id, nullptr if none. */
	WindowService *findService(uint64_t id);
	/* For parse(): the view of window @id. */
	static const WindowView *findView(const void *ctx, uint64_t id) noexcept;
	ParseContext parseContext(uint32_t peerHost) const;

private:
	Engine() = default;
	/* Connect to @server's process and authenticate as its stream (kStreamIndex) or bulk connection @index. */
	Result<std::unique_ptr<Link>> connectTo(int server, uint32_t index);
	int startServer();
	void acceptLoop();
	void serveLoop();
	/* Server thread: one request from @conn; false when it was parked. */
	bool handleRequest(ConnId conn, std::span<const uint8_t> frame);
	/* Server thread: origin @rank's connection is gone, its parked requests with it: tell every window. */
	void originGone(uint32_t rank);
	/* Server thread: before originGone(@rank): its bulk connections deliver nothing more. */
	void dropBulkOf(uint32_t rank);

	struct ServerConn {
		uint32_t peerHost = 0;
		uint32_t peerRank = 0; /* the origin process at the other end */
		bool bulk = false;     /* one of its bulk connections (kPurposeBulk): puts and flushes only */
		bool open = true;
		/* Parked frames of this connection (copies), applied in order. */
		std::vector<std::vector<uint8_t>> parked;
		std::size_t parkedBytes = 0; /* their sum */
		bool paused = false;	      /* receiving paused while too much is parked (kParkedPauseBytes) */
	};
	/*
	 * Back-pressure: a connection whose parked frames exceed this stops
	 * being read (NetLoop::pauseReceive), so its origin's sends block
	 * instead of this process's memory growing; it resumes below half.
	 */
	static constexpr std::size_t kParkedPauseBytes = std::size_t{ 8 } << 20;

	EngineConfig config_;
	std::vector<uint32_t> leaders_;
	std::vector<EndpointCard> cards_;
	std::unique_ptr<AuthKey> key_;
	std::unique_ptr<RankIdentity> identity_; /* this process's; its public key is in our card */
	std::vector<std::array<uint8_t, kIdentityKeyBytes>> identities_; /* every rank's, in world order */
	uint64_t jobHash_ = 0;
	UniqueFd listener_;
	uint32_t ipv4_ = 0;
	uint16_t port_ = 0;

	/* Windows (both roles). */
	std::mutex registry_;
	struct Entry {
		WindowService *service;
		bool serves = false; /* this process is its host's server for the window: requests are for it */
	};
	std::map<uint64_t, Entry> windows_;

	/* Server side. */
	std::thread acceptor_;
	std::thread server_;
	std::atomic<bool> stopping_{ false };
	std::atomic<uint64_t> serverWaits_{ 0 };  /* written by the server thread only */
	std::atomic<uint64_t> serverYields_{ 0 }; /* written by the server thread only */
	std::atomic<bool> serverUp_{ false };
	std::mutex incomingLock_;
	struct Incoming {
		UniqueFd fd;
		uint32_t host; /* the peer's host */
		uint32_t rank; /* the world rank it proved to be */
		bool bulk;     /* it said kPurposeBulk */
	};
	std::vector<Incoming> incoming_; /* authenticated, not yet in the loop */
	std::atomic<uint32_t> incomingCount_{ 0 };
	/*
	 * The server thread's loop: made and destroyed on that thread (its only
	 * submitter; its ring fd is registered for that thread alone, so another
	 * thread's teardown enters would fail), the destruction once stop() has
	 * joined the acceptor (acceptorGone_), which wakes it.
	 */
	std::unique_ptr<NetLoop> loopOwner_;
	std::atomic<NetLoop *> loop_{ nullptr }; /* for wake() from the acceptor and stop() */
	std::atomic<bool> acceptorGone_{ false };
	std::atomic<bool> realtime_{ false }; /* the server thread got SCHED_FIFO (EngineConfig::realtime) */
	/* A FIFO server's pause where a normal one yields: long enough for a normal thread to be scheduled. */
	static constexpr int64_t kRealtimeBackoffNs = 20'000;
	bool served_ = false;	  /* the loop ran: stopStats_ holds its counters */
	NetLoopStats stopStats_{}; /* the loop's counters, taken before it was destroyed (RMA_VERBOSE) */
	std::string backend_;
	std::map<ConnId, ServerConn> conns_;

	/* Origin side: by (server, bulk index or kStreamIndex). */
	static constexpr uint32_t kStreamIndex = UINT32_MAX;
	std::map<std::pair<int, uint32_t>, std::unique_ptr<Link>> links_;
	/* Failed bulk links replaced by new ones: windows may still hold them (RemoteWindow::Stream::bulk). Until stop(). */
	std::vector<std::unique_ptr<Link>> retired_;
	/* Server thread: whether origin @rank's stream is open here (its bulk connections are taken only beside it). */
	bool hasStream(uint32_t rank) const;
	/* The link to @server's process: its ordered stream (kStreamIndex) or bulk connection @index; connects on first use. */
	Result<Link *> cachedLink(int server, uint32_t index);
};

/* FNV-1a of this kernel's boot id: equal for processes that share the machine's CPUs. */
uint64_t machineHash();
/* Why this process has no engine in a job that spans hosts ("" if it has one or needs none). */
std::string &netStartError();
/* This process's engine, or nullptr (a job on one host, or not initialized). */
Engine *engine();
/* Install (init) or drop (finalize) it. */
void setEngine(std::unique_ptr<Engine> e);

} /* namespace librma::net */
