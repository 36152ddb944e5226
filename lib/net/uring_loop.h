/* SPDX-License-Identifier: MIT */
/*
 * NetLoop: the net agent's I/O engine (docs/design/inter-host.md §4). It
 * owns connected stream sockets, cuts what arrives into frames (the 32-byte
 * header's bodyLen says where each ends; lib/net/frame.h), hands each whole
 * frame to the caller, and sends what the caller queues. It moves frames,
 * never windows: validating and applying a frame is the caller's
 * (net::parse, then the ops).
 *
 * Two backends behind one interface, chosen once at creation:
 *   UringLoop  one io_uring (SINGLE_ISSUER | DEFER_TASKRUN when the kernel
 *              has them), a multishot recv per connection that picks
 *              buffers from a provided buffer ring; a recv that ends
 *              without IORING_CQE_F_MORE (-ENOBUFS when every buffer was
 *              in use) is re-armed on the next pass. One SEND per
 *              connection in flight, holding everything queued so far;
 *              one of at least zcMinBytes goes as IORING_OP_SEND_ZC when
 *              NetLoopConfig::zc says so (RMA_NET_ZC, lib/net/features.h).
 *              A zero-copy send's buffer stays untouched until the
 *              kernel's notification CQE (IORING_CQE_F_NOTIF), which
 *              comes after the send's own completion: a finished buffer
 *              with notifications due is set aside and the next send
 *              starts from another, and a closed connection keeps its
 *              socket and buffers until they are in (the destructor
 *              waits a bounded time, aborts the connection so the kernel
 *              drops what it holds, and never frees a buffer it may
 *              still read).
 *              Parks in io_uring_submit_and_wait_timeout with an
 *              IORING_OP_FUTEX_WAIT armed on the loop's doorbell, so
 *              Doorbell::ring() from any thread or process wakes it; on
 *              kernels without FUTEX_WAIT an eventfd read stands in.
 *   PollLoop   (poll_backend.cpp) epoll and nonblocking recv/send, an
 *              eventfd for the wake. Chosen by RMA_NET_URING=off or when
 *              io_uring is unavailable and the policy allows it.
 *
 * Frames: a frame that lies wholly inside one received buffer is handed
 * over in place; one split across buffers is copied into the connection's
 * reassembly buffer (32 + maxBody bytes) and handed over from there. A
 * header whose bodyLen exceeds maxBody poisons the stream: the connection
 * is closed and onClosed() reports RMA_ERR_PROC_FAILED-class EPROTO.
 *
 * Wake handshake (the doorbell's, progress/doorbell.h): wait() stores
 * Asleep, fences (seq_cst), re-checks for queued sends and ready
 * completions, then sleeps; wake() is Doorbell::ring() (fence, load, CAS +
 * FUTEX_WAKE), plus an eventfd write when the eventfd stands in.
 *
 * Creation: make the loop on the thread that will own it. An io_uring made
 * with SINGLE_ISSUER | DEFER_TASKRUN takes its creator as its only
 * submitter and waiter; another thread's poll() would fail with EEXIST.
 *
 * Thread safety: wake() and doorbell() are thread-safe (wake() from any
 * thread; the doorbell may be rung from any process that maps it). Every
 * other call belongs to the loop's single owner thread (the agent's:
 * progress-thread only), including the callbacks, which run inside poll().
 * Callbacks must not call close() or addConnection() of the loop (they may
 * call send()).
 */
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "common/result.h"
#include "common/unique_fd.h"
#include "net/features.h"
#include "progress/doorbell.h"

namespace librma::net {

using ConnId = uint32_t;

/* Where frames and closures go. Called on the owner thread from inside poll()/wait(). */
struct FrameHandler {
	/* One whole frame (header + body), valid only during the call. */
	void (*onFrame)(void *ctx, ConnId conn, std::span<const uint8_t> frame) noexcept = nullptr;
	/* The connection is gone: @error 0 for an orderly EOF, else a positive errno (EPROTO: bad framing). */
	void (*onClosed)(void *ctx, ConnId conn, int error) noexcept = nullptr;
	/*
	 * Optional: whether there is work outside the loop (the agent's
	 * rings). wait() re-checks it after announcing sleep, so work
	 * published before a wake() is never slept through.
	 */
	bool (*pending)(void *ctx) noexcept = nullptr;
	void *ctx = nullptr;
};

/* How a connection's bytes are received (NetLoop::addConnection). */
struct ConnOptions {
	/* The largest body on it; 0: NetLoopConfig::maxBody. */
	uint32_t maxBody = 0;
	/*
	 * Receive each frame exactly, whole, into the connection's own buffer
	 * (32 + maxBody bytes): the header, then the rest of the frame, each
	 * one recv (io_uring: MSG_WAITALL) straight into place, so no frame is
	 * ever copied to be reassembled. For bulk connections, whose frames are
	 * large; a stream of small frames is better served by the shared
	 * buffers (one recv takes many frames).
	 */
	bool exact = false;
};

struct NetLoopConfig {
	UringPolicy policy = UringPolicy::Prefer;
	uint32_t maxBody = 65536;    /* kMaxBody */
	uint32_t ringEntries = 256;  /* SQ entries; the CQ gets 16× */
	uint32_t bufCount = 256;     /* provided buffers, a power of two <= 32768 */
	uint32_t bufSize = 16384;    /* bytes each */
	/* RMA_NET_ZC and RMA_NET_ZC_MIN: zero-copy sends (io_uring backend only; lib/net/features.h). */
	ZcPolicy zc = ZcPolicy::Auto;
	uint32_t zcMinBytes = 65536; /* smaller sends are plain: pinning and the notification cost more than a copy */
	/* Testing knobs: behave as a kernel without these pieces. */
	bool noFutexWait = false;    /* wake through the eventfd */
	bool noMultishot = false;    /* single-shot recv into each connection's own buffer */
	bool noDeferTaskrun = false; /* COOP_TASKRUN ring: completions posted on any kernel entry */
	bool noFixedBuffers = false; /* exact connections recv into unregistered memory */
	bool noTaskrunFlag = false;  /* no IORING_SETUP_TASKRUN_FLAG: every pass enters the kernel for completions */
	uint32_t armLimit = 0;       /* arm at most this many operations per pass (0: no limit), as a full SQ would */
	/*
	 * RMA_NET_SQPOLL: a kernel thread polls the submission queue
	 * (IORING_SETUP_SQPOLL) for this many ms after the last submission
	 * before it sleeps; 0: no SQ thread. With it, poll() submits and reaps
	 * without entering the kernel while the SQ thread is awake (its
	 * requests' completions are posted by that thread), at the price of a
	 * third busy thread per host beside the origin and the server; the ring
	 * then has neither DEFER_TASKRUN, COOP_TASKRUN nor TASKRUN_FLAG (the
	 * kernel refuses them with SQPOLL). A kernel that refuses SQPOLL itself
	 * (an LSM, RLIMIT_NPROC, before 5.11 without CAP_SYS_ADMIN) gets the
	 * ring without it, and describe() says why.
	 */
	uint32_t sqpollIdleMs = 0;
	/* Doorbell to park on; nullptr: the loop's own. Must outlive the loop. */
	Doorbell *doorbell = nullptr;
};

/* Counters (owner thread writes; read them from the owner thread or after it stopped). */
struct NetLoopStats {
	uint64_t passes = 0;
	uint64_t recvCompletions = 0; /* CQEs (uring) or recv calls with data (poll) */
	uint64_t bytesIn = 0;
	uint64_t bytesOut = 0;
	uint64_t frames = 0;	    /* handed to onFrame */
	uint64_t splitFrames = 0;   /* of which reassembled from more than one buffer */
	uint64_t recvRearms = 0;    /* multishot recvs re-armed (every arm after the first) */
	uint64_t enobufs = 0;	    /* of which because the buffer ring ran dry */
	uint64_t sends = 0;	    /* send submissions / calls */
	uint64_t shortSends = 0;    /* of which took fewer bytes than offered (the rest went in later sends) */
	uint64_t zcSends = 0;	    /* of which IORING_OP_SEND_ZC */
	uint64_t pauses = 0;	    /* pauseReceive(true) on a receiving connection */
	uint64_t sqFull = 0;	    /* io_uring: times the submission queue was full after a submit (arm() waited or stopped) */
	uint64_t zcHeld = 0;	    /* sent buffers set aside because a zero-copy notification was still due */
	uint64_t zcNotifs = 0;	    /* zero-copy notifications: the kernel let go of a buffer */
	uint64_t zcCopied = 0;	    /* of which reported that the kernel copied after all (loopback, veth) */
	uint64_t fixedReads = 0;    /* reads into a registered buffer (IORING_OP_READ_FIXED, exact connections) */
	uint64_t parks = 0;	    /* waits that slept */
	uint64_t futexWakes = 0;    /* parks ended by the FUTEX_WAIT completing */
	uint64_t eventfdWakes = 0;  /* parks ended by the eventfd */
};

/*
 * Cuts a byte stream into frames. feed() hands every whole frame to
 * @deliver: in place when it lies inside @bytes, else from the internal
 * reassembly buffer. Owner thread only; no allocation after construction.
 */
class FrameAssembler
{
public:
	explicit FrameAssembler(uint32_t maxBody);

	/*
	 * Returns false (and delivers nothing more) once a header declares a
	 * body longer than maxBody: the stream cannot be cut any further.
	 */
	template<typename Deliver>
	bool feed(std::span<const uint8_t> bytes, Deliver &&deliver);

	/* Bytes held of an incomplete frame. */
	std::size_t pending() const { return have_; }
	/* Those bytes (the header first once 32 are held). */
	std::span<const uint8_t> held() const { return { partial_.data(), have_ }; }
	/* Forget the incomplete frame: its owner takes the rest of it from the stream itself. */
	void discard() { have_ = 0; }

	/*
	 * Exact reads (a bulk connection: frames received whole into this
	 * buffer, no copy). room() is where the stream's next bytes go and how
	 * many of them complete the header, then the frame, never more (empty
	 * once poisoned); received(@n) takes @n bytes read there and delivers
	 * the frame once it is whole, from this buffer. Returns false (and
	 * delivers nothing more) once a header declares a body longer than
	 * maxBody. Do not mix with feed() on one stream.
	 */
	std::span<uint8_t> room() noexcept
	{
		if (poisoned_)
			return {};
		const std::size_t need = have_ < 32 ? 32 : frameLength(partial_.data());
		return { partial_.data() + have_, need - have_ };
	}
	template<typename Deliver>
	bool received(std::size_t n, Deliver &&deliver);
	/* The whole reassembly buffer (32 + maxBody bytes; it never moves): to register it with the kernel. */
	std::span<uint8_t> buffer() noexcept { return partial_; }
	uint64_t splitFrames() const { return split_; }

private:
	/* The frame length the header at @h declares, or 0 if over the limit. */
	std::size_t frameLength(const uint8_t *h) const;

	uint32_t maxBody_;
	std::vector<uint8_t> partial_;
	std::size_t have_ = 0;
	uint64_t split_ = 0;
	bool poisoned_ = false;
};

class NetLoop
{
public:
	virtual ~NetLoop() = default;
	NetLoop(const NetLoop &) = delete;
	NetLoop &operator=(const NetLoop &) = delete;

	/*
	 * Serve connected stream socket @fd from the next pass (the loop
	 * owns it and makes it nonblocking), received as @options say.
	 * Returns its id; RMA_ERR_ARG for an invalid fd; RMA_ERR_INTERN if it
	 * cannot be armed.
	 */
	virtual Result<ConnId> addConnection(UniqueFd fd, const ConnOptions &options = {}) = 0;

	/*
	 * Queue @bytes (copied) for @conn; they leave on the next pass.
	 * RMA_SUCCESS; RMA_ERR_ARG for an unknown or closed connection.
	 */
	virtual int send(ConnId conn, std::span<const uint8_t> bytes) = 0;

	/*
	 * Queue @n bytes for @conn and return where to write them (valid
	 * until the next call on the loop), so a reply is built in place
	 * instead of copied in; nullptr for an unknown or closed connection.
	 */
	virtual uint8_t *append(ConnId conn, std::size_t n) = 0;
	/* Bytes queued for @conn that the kernel has not taken yet (0 for an unknown connection). */
	virtual std::size_t unsent(ConnId conn) const = 0;

	/* Close @conn now; no onClosed() for it. RMA_ERR_ARG if unknown or already closed. */
	virtual int close(ConnId conn) = 0;

	/*
	 * Stop (@paused true) or resume receiving on @conn: back-pressure for a
	 * caller that cannot take its frames yet. While paused nothing more is
	 * read from the socket, so the peer's sends block once the socket
	 * buffers fill; frames already received (what an armed receive takes
	 * before its cancellation lands) are still delivered. The peer's close
	 * or a socket error is still noticed while paused: onClosed() then
	 * comes at once, and what the peer sent that was not read yet is lost
	 * (a dead origin's requests are dropped anyway). Not from inside a
	 * callback. Unknown or closed: no-op.
	 */
	virtual void pauseReceive(ConnId conn, bool paused) noexcept = 0;

	/*
	 * One pass: submit queued sends, collect completions, deliver frames
	 * and closures, re-arm what ended. Never blocks. Returns the number
	 * of events handled (0: nothing happened).
	 */
	virtual int poll() noexcept = 0;

	/*
	 * Park until something arrives or wake() is called, for at most
	 * @timeoutNs (< 0: no limit), then run one pass. Returns that pass's
	 * count (0 after a wake or timeout with nothing else).
	 */
	virtual int wait(int64_t timeoutNs) noexcept = 0;

	/*
	 * End a wait() in progress. A wake() while the loop is awake does
	 * nothing: publish the work first where handler.pending() sees it,
	 * then wake(), and the loop either sees the work or is woken.
	 * Thread-safe.
	 */
	virtual void wake() noexcept = 0;

	/* "io_uring" or "poll". */
	virtual const char *backend() const noexcept = 0;
	/*
	 * The features in use ("io_uring: defer_taskrun buf_ring ... send_zc>=65536"
	 * or "poll: epoll eventfd_wake"); send_zc only when zero-copy sends are on.
	 */
	virtual std::string describe() const = 0;

	const NetLoopStats &stats() const { return stats_; }
	Doorbell *doorbell() const { return doorbell_; }

protected:
	NetLoop(const FrameHandler &handler, const NetLoopConfig &config);

	FrameHandler handler_;
	NetLoopConfig config_;
	NetLoopStats stats_;
	Doorbell ownDoorbell_{};
	Doorbell *doorbell_;
};

/*
 * Make the loop @config.policy asks for: Off -> poll backend; Prefer ->
 * io_uring if a ring can be made (falling back piece by piece, and to the
 * poll backend when io_uring is unavailable); Require -> io_uring with
 * every feature of §4.1 or RMA_ERR_NOT_SUPPORTED naming the missing one.
 * RMA_ERR_ARG for a bad config (bufCount not a power of two, sizes 0);
 * RMA_ERR_INTERN (with errno) when resources cannot be had. Control path.
 */
Result<std::unique_ptr<NetLoop>> makeNetLoop(const FrameHandler &handler, const NetLoopConfig &config);

/* The backends, for tests that want one explicitly. */
Result<std::unique_ptr<NetLoop>> makeUringLoop(const FrameHandler &handler, const NetLoopConfig &config,
					       const NetFeatures &features);
Result<std::unique_ptr<NetLoop>> makePollLoop(const FrameHandler &handler, const NetLoopConfig &config);

/*
 * Zero-copy buffers that io_uring loops' destructors kept forever because
 * the kernel's notification did not come even after the connection was
 * aborted (0 unless something is badly wrong; tests). Thread-safe.
 */
uint64_t abandonedZeroCopyBuffers();

/* Both backends' append(): @n more bytes at the end of a connection's send queue, and where they are. */
inline uint8_t *growQueue(std::vector<uint8_t> &queue, std::size_t n)
{
	const std::size_t at = queue.size();
	queue.resize(at + n);
	return queue.data() + at;
}

/* ---- FrameAssembler::feed ---- */

template<typename Deliver>
bool FrameAssembler::feed(std::span<const uint8_t> bytes, Deliver &&deliver)
{
	constexpr std::size_t kHeader = 32;
	while (!bytes.empty() && !poisoned_) {
		if (have_ == 0) {
			/* Whole frames in place. */
			if (bytes.size() >= kHeader) {
				std::size_t len = frameLength(bytes.data());
				if (len == 0) {
					poisoned_ = true;
					break;
				}
				if (bytes.size() >= len) {
					deliver(bytes.first(len));
					bytes = bytes.subspan(len);
					continue;
				}
			}
		}
		/* A frame split across buffers: gather it. */
		std::size_t need = have_ < kHeader ? kHeader : frameLength(partial_.data());
		std::size_t take = need - have_ < bytes.size() ? need - have_ : bytes.size();
		std::copy(bytes.begin(), bytes.begin() + static_cast<std::ptrdiff_t>(take), partial_.begin() + static_cast<std::ptrdiff_t>(have_));
		have_ += take;
		bytes = bytes.subspan(take);
		if (have_ == kHeader && need == kHeader) {
			need = frameLength(partial_.data());
			if (need == 0) {
				poisoned_ = true;
				break;
			}
		}
		if (have_ == need && have_ >= kHeader) {
			++split_;
			have_ = 0;
			deliver(std::span<const uint8_t>(partial_.data(), need));
		}
	}
	return !poisoned_;
}

template<typename Deliver>
bool FrameAssembler::received(std::size_t n, Deliver &&deliver)
{
	constexpr std::size_t kHeader = 32;
	if (poisoned_)
		return false;
	have_ += n;
	if (have_ < kHeader)
		return true;
	const std::size_t len = frameLength(partial_.data());
	if (len == 0) {
		poisoned_ = true;
		return false;
	}
	if (have_ == len) {
		have_ = 0;
		deliver(std::span<const uint8_t>(partial_.data(), len));
	}
	return true;
}

} /* namespace librma::net */
