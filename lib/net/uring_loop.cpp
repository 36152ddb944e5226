/* SPDX-License-Identifier: MIT */
#include "net/uring_loop.h"

#include <fcntl.h>
#include <poll.h>
#include <sys/eventfd.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <chrono>
#include <cstring>
#include <mutex>

#include <liburing.h>

#include "error/error.h"
#include "net/le.h"
#include "net/uring_compat.h"

namespace librma::net {

/* ---- Shared parts ---- */

FrameAssembler::FrameAssembler(uint32_t maxBody) : maxBody_(maxBody), partial_(32 + std::size_t{ maxBody }) {}

std::size_t FrameAssembler::frameLength(const uint8_t *h) const
{
	uint32_t body = le::load<uint32_t>(h + 4);
	return body > maxBody_ ? 0 : 32 + std::size_t{ body };
}

NetLoop::NetLoop(const FrameHandler &handler, const NetLoopConfig &config)
	: handler_(handler), config_(config), doorbell_(config.doorbell ? config.doorbell : &ownDoorbell_)
{
}

namespace {

int checkConfig(const FrameHandler &handler, const NetLoopConfig &c)
{
	if (!handler.onFrame || !handler.onClosed)
		return makeError(RMA_ERR_ARG, "net loop: onFrame and onClosed are required");
	if (c.maxBody == 0 || c.ringEntries == 0 || c.bufSize == 0 || c.bufCount == 0 || c.bufCount > 32768 ||
	    (c.bufCount & (c.bufCount - 1)) != 0)
		return makeError(RMA_ERR_ARG,
				 "net loop: bad configuration (maxBody %u, ringEntries %u, bufCount %u (a power of two "
				 "<= 32768), bufSize %u)",
				 c.maxBody, c.ringEntries, c.bufCount, c.bufSize);
	return RMA_SUCCESS;
}

/*
 * user_data: a zero-copy send's buffer generation << 40 | connection id
 * << 8 | what the operation was. The notification CQE carries its send's
 * user_data, so the generation names the buffer it releases.
 */
enum Tag : uint64_t { kRecv = 1, kSend = 2, kFutex = 3, kEventfd = 4, kSendZc = 5, kCancel = 6, kHangup = 7 };
constexpr uint32_t kGenMask = 0xffffff;
constexpr uint64_t userData(ConnId c, Tag t, uint32_t gen = 0)
{
	return (uint64_t{ gen & kGenMask } << 40) | (uint64_t{ c } << 8) | t;
}
constexpr uint16_t kBufGroup = 1;
/*
 * Released zero-copy buffers a connection keeps for its next sends (their
 * pages stay faulted in). Two cover a send in flight while the one before
 * waits for its notification; each may be as large as a reply backlog.
 */
constexpr std::size_t kSpareBuffers = 2;
/* Teardown: how long the destructor waits for zero-copy notifications, before and after aborting. */
constexpr int kSettleMs = 250;
constexpr int kAbortSettleMs = 1000;

class UringLoop final : public NetLoop
{
public:
	UringLoop(const FrameHandler &handler, const NetLoopConfig &config, const NetFeatures &features)
		: NetLoop(handler, config), features_(features)
	{
	}

	~UringLoop() override
	{
		if (ringReady_) {
			settleZeroCopy();
			io_uring_queue_exit(&ring_); /* cancels every operation in flight */
		}
		abandonHeldBuffers();
		if (bufRing_)
			munmap(bufRing_, bufRingBytes_);
		if (buffers_)
			munmap(buffers_, buffersBytes_);
	}

	int init();

	Result<ConnId> addConnection(UniqueFd fd, const ConnOptions &options) override;
	int send(ConnId conn, std::span<const uint8_t> bytes) override;
	uint8_t *append(ConnId conn, std::size_t n) override;
	std::size_t unsent(ConnId conn) const override
	{
		if (conn >= conns_.size() || !conns_[conn]->open)
			return 0;
		const Conn &c = *conns_[conn];
		return c.queued.size() + (c.inflight.size() - c.sent);
	}
	int close(ConnId conn) override;
	void pauseReceive(ConnId conn, bool paused) noexcept override;
	int poll() noexcept override;
	int wait(int64_t timeoutNs) noexcept override;
	void wake() noexcept override;
	const char *backend() const noexcept override { return "io_uring"; }
	std::string describe() const override;

private:
	struct Conn {
		Conn(uint32_t maxBody, bool exactReads) : exact(exactReads), assembler(maxBody) {}
		UniqueFd fd;
		bool exact; /* ConnOptions::exact: single-shot recvs into assembler.room() */
		int fixedSlot = -1; /* exact: the registered buffer slot of assembler.buffer(), or -1 */
		bool open = true;
		bool recvArmed = false;
		bool paused = false; /* pauseReceive(): no recv is armed until it resumes */
		bool recvCancelSent = false;   /* paused: the armed recv's cancellation is submitted */
		bool hangupArmed = false;      /* paused: a poll for the peer's close or an error is armed */
		bool hangupCancelSent = false; /* resumed: that poll's cancellation is submitted */
		bool sendArmed = false;
		bool zcArmed = false; /* the send in flight is a SEND_ZC */
		bool everArmed = false;
		FrameAssembler assembler;
		std::vector<uint8_t> queued;
		std::vector<uint8_t> inflight;
		std::size_t sent = 0;
		std::vector<uint8_t> own; /* single-shot recv buffer */
		/*
		 * Zero-copy sends. The kernel reads a SEND_ZC's bytes until its
		 * notification, which comes after the send's completion (with
		 * IORING_CQE_F_MORE). inflight's SEND_ZCs carry generation
		 * zcGen; inflightNotifs counts their notifications still due
		 * (signed: tolerates a notification seen before its send's
		 * completion). A finished inflight with some due moves to held
		 * and the next send starts from another buffer; held buffers go
		 * to spare (capacity kept) when their last notification is in.
		 */
		uint32_t zcGen = 0;
		int32_t inflightNotifs = 0;
		bool zcOff = false; /* the socket refused SEND_ZC, or auto and the kernel copied: plain sends */
		struct Held {
			std::vector<uint8_t> bytes;
			uint32_t gen;
			int32_t notifs;
		};
		std::vector<Held> held;
		std::vector<std::vector<uint8_t>> spare;
	};

	io_uring_sqe *sqe() noexcept
	{
		io_uring_sqe *s = io_uring_get_sqe(&ring_);
		if (!s) {
			/* SQ full: hand what is there to the kernel and take the next slot. */
			io_uring_submit(&ring_);
			s = io_uring_get_sqe(&ring_);
			/*
			 * With an SQ thread the submit only woke it, and it takes the
			 * entries on its own time: wait until it has freed one
			 * (IORING_ENTER_SQ_WAIT; the wait may also end early, hence
			 * a few tries).
			 */
			for (int i = 0; !s && sqpoll() && i < 64; ++i) {
				if (io_uring_sqring_wait(&ring_) < 0)
					io_uring_submit(&ring_); /* e.g. the thread went to sleep meanwhile: wake it */
				s = io_uring_get_sqe(&ring_);
			}
			if (!s)
				++stats_.sqFull;
		}
		return s;
	}
	bool sqpoll() const { return (setupFlags_ & IORING_SETUP_SQPOLL) != 0; }
	/* Submit the cancellation of @id's operation @what (its own CQE, kCancel, is ignored); false: no entry free. */
	bool cancelOp(ConnId id, Tag what) noexcept
	{
		io_uring_sqe *s = sqe();
		if (!s)
			return false;
		io_uring_prep_cancel64(s, userData(id, what), 0);
		io_uring_sqe_set_data64(s, userData(id, kCancel));
		return true;
	}
	/* Submit what arm() prepared; one kernel entry unless the SQ thread is awake and nothing needs flushing. */
	void submit() noexcept
	{
		if (sqpoll() || (setupFlags_ & IORING_SETUP_TASKRUN_FLAG))
			/*
			 * Enters only to submit, to wake the SQ thread, or when the
			 * kernel flags work for us (IORING_SQ_TASKRUN: completions to
			 * post; IORING_SQ_CQ_OVERFLOW), then with GETEVENTS: a
			 * spinning server makes no system call while nothing arrives,
			 * and sees an arrival at once rather than after its current one.
			 */
			io_uring_submit(&ring_);
		else if (features_.getEvents)
			io_uring_submit_and_get_events(&ring_); /* also runs the task work that posts completions (DEFER_TASKRUN) */
		else
			io_uring_submit(&ring_);
	}
	/*
	 * Arm every open connection's recv and pending send. Stops early only
	 * when no submission entry can be had; armShort_ then says so, and
	 * wait() does not park on a connection whose recv is not armed (no
	 * completion could ever come for it).
	 */
	void arm() noexcept;
	bool armShort_ = false;
	int sqpollRefused_ = 0; /* the errno of a refused SQPOLL ring (NetLoopConfig::sqpollIdleMs), or 0 */
	int reap() noexcept;
	void onRecv(ConnId id, Conn &c, const io_uring_cqe *cqe) noexcept;
	void onSend(Conn &c, const io_uring_cqe *cqe, ConnId id, bool zc) noexcept;
	void onNotif(Conn &c, const io_uring_cqe *cqe, uint32_t gen) noexcept;
	/* The poll a paused connection arms for its peer's close (kHangup) completed with @res. */
	void onHangup(ConnId id, Conn &c, int res) noexcept;
	/* inflight is wholly sent: reuse it, or hold it while the kernel may still read it. */
	void finishInflight(Conn &c) noexcept;
	/* Mark @c closed and shut its socket so its operations end (the caller tells the handler). */
	void shut(Conn &c) noexcept;
	static bool zcDue(const Conn &c) { return c.inflightNotifs > 0 || !c.held.empty(); }
	/*
	 * A closed connection's socket closes, and its buffers go, once no
	 * operation and no zero-copy notification is due: until then the
	 * kernel may still read them.
	 */
	void release(Conn &c) noexcept
	{
		if (c.open || c.recvArmed || c.sendArmed || c.hangupArmed || zcDue(c))
			return;
		if (c.fixedSlot >= 0) {
			/* No read into it is in flight: the slot can go (an empty iovec unregisters it). */
			iovec none{ nullptr, 0 };
			const __u64 tag = 0;
			(void)io_uring_register_buffers_update_tag(&ring_, static_cast<unsigned>(c.fixedSlot), &none, &tag, 1);
			freeSlots_.push_back(c.fixedSlot);
			c.fixedSlot = -1;
		}
		c.fd.reset();
		std::vector<uint8_t>().swap(c.inflight);
		c.sent = 0;
		c.spare.clear();
	}
	/* Teardown: wait (bounded) for the notifications still due, aborting connections that hold them. */
	void settleZeroCopy() noexcept;
	/* Teardown: CQEs for @ms at most or until @done(), bookkeeping only (no handler calls); done()'s last value. */
	template<typename Done>
	bool drainForTeardown(int ms, Done &&done) noexcept;
	/* Teardown: the kernel may still read some of @c's buffers. */
	static bool zcBusy(const Conn &c) { return zcDue(c) || c.zcArmed; }
	/* Teardown: buffers whose notification never came are leaked on purpose, never freed. */
	void abandonHeldBuffers() noexcept;
	bool useFutex() const { return features_.futexWait && !config_.noFutexWait; }
	bool useMultishot() const { return features_.bufRing && features_.recvMultishot && !config_.noMultishot; }
	/* Zero-copy for the loop: on, or auto where the kernel can say that it copied. */
	bool useZc() const
	{
		return features_.sendZc && (config_.zc == ZcPolicy::On ||
					    (config_.zc == ZcPolicy::Auto && features_.sendZcReportUsage));
	}
	bool zeroCopy(const Conn &c, std::size_t len) const { return useZc() && !c.zcOff && len >= config_.zcMinBytes; }

	NetFeatures features_;
	io_uring ring_{};
	bool ringReady_ = false;
	unsigned setupFlags_ = 0;
	io_uring_buf_ring *bufRing_ = nullptr;
	std::size_t bufRingBytes_ = 0;
	uint8_t *buffers_ = nullptr;
	std::size_t buffersBytes_ = 0;
	UniqueFd eventfd_;
	uint64_t eventfdValue_ = 0;
	bool futexArmed_ = false;
	bool eventfdArmed_ = false;
	std::vector<std::unique_ptr<Conn>> conns_;
	/*
	 * Registered buffer slots for exact connections' receive buffers
	 * (io_uring_register_buffers_sparse at init; empty when the kernel or
	 * RLIMIT_MEMLOCK refuses, or NetLoopConfig::noFixedBuffers).
	 */
	std::vector<int> freeSlots_;
	static constexpr unsigned kFixedSlots = 64;
};

int UringLoop::init()
{
	io_uring_params p{};
	p.cq_entries = config_.ringEntries * 16;
	unsigned base = IORING_SETUP_CQSIZE;
	/* IORING_SETUP_TASKRUN_FLAG (5.19, with COOP_TASKRUN): the kernel says in the SQ flags when completions wait for us. */
	const unsigned taskrunFlag = config_.noTaskrunFlag ? 0 : IORING_SETUP_TASKRUN_FLAG;
	if (features_.deferTaskrun && !config_.noDeferTaskrun)
		p.flags = base | IORING_SETUP_SINGLE_ISSUER | IORING_SETUP_DEFER_TASKRUN | IORING_SETUP_SUBMIT_ALL |
			  taskrunFlag;
	else if (features_.coopTaskrun || features_.deferTaskrun) /* a kernel with DEFER_TASKRUN has COOP_TASKRUN */
		p.flags = base | IORING_SETUP_COOP_TASKRUN | taskrunFlag;
	else
		p.flags = base;
	int rc = -EINVAL;
	if (config_.sqpollIdleMs) {
		/*
		 * The kernel refuses DEFER_TASKRUN, COOP_TASKRUN and TASKRUN_FLAG
		 * with SQPOLL: the SQ thread issues the requests and runs their
		 * task work.
		 */
		io_uring_params sq{};
		sq.cq_entries = p.cq_entries;
		sq.flags = base | IORING_SETUP_SQPOLL | IORING_SETUP_SUBMIT_ALL;
		sq.sq_thread_idle = config_.sqpollIdleMs;
		rc = io_uring_queue_init_params(config_.ringEntries, &ring_, &sq);
		if (rc == 0)
			p = sq;
		else
			sqpollRefused_ = -rc; /* an LSM, RLIMIT_NPROC for the thread, an old kernel: the ring goes without */
	}
	if (rc < 0)
		rc = io_uring_queue_init_params(config_.ringEntries, &ring_, &p);
	if (rc < 0)
		return makeErrnoError(RMA_ERR_INTERN, -rc, "net loop: io_uring_queue_init_params(%u entries, flags 0x%x)",
				      config_.ringEntries, p.flags);
	ringReady_ = true;
	setupFlags_ = p.flags;
	/* The ring's own fd need not be looked up on every enter; failure only costs that lookup. */
	(void)io_uring_register_ring_fd(&ring_);

	if (useMultishot()) {
		/* The provided buffer ring, registered by hand: liburing 2.3 has no io_uring_setup_buf_ring. */
		bufRingBytes_ = (config_.bufCount * sizeof(io_uring_buf) + 4095) & ~std::size_t{ 4095 };
		void *r = mmap(nullptr, bufRingBytes_, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
		if (r == MAP_FAILED)
			return makeErrnoError(RMA_ERR_INTERN, errno, "net loop: mmap of the buffer ring");
		bufRing_ = static_cast<io_uring_buf_ring *>(r);
		buffersBytes_ = std::size_t{ config_.bufCount } * config_.bufSize;
		void *b = mmap(nullptr, buffersBytes_, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
		if (b == MAP_FAILED)
			return makeErrnoError(RMA_ERR_INTERN, errno, "net loop: mmap of %zu bytes of receive buffers",
					      buffersBytes_);
		buffers_ = static_cast<uint8_t *>(b);
		madvise(buffers_, buffersBytes_, MADV_HUGEPAGE);
		io_uring_buf_ring_init(bufRing_);
		io_uring_buf_reg reg{};
		reg.ring_addr = reinterpret_cast<uint64_t>(bufRing_);
		reg.ring_entries = config_.bufCount;
		reg.bgid = kBufGroup;
		rc = io_uring_register_buf_ring(&ring_, &reg, 0);
		if (rc < 0)
			return makeErrnoError(RMA_ERR_INTERN, -rc, "net loop: io_uring_register_buf_ring(%u buffers)",
					      config_.bufCount);
		const int mask = io_uring_buf_ring_mask(config_.bufCount);
		for (uint32_t i = 0; i < config_.bufCount; ++i)
			io_uring_buf_ring_add(bufRing_, buffers_ + std::size_t{ i } * config_.bufSize, config_.bufSize,
					      static_cast<unsigned short>(i), mask, static_cast<int>(i));
		/* Publishes the buffers to the kernel (a release store of the tail inside liburing). */
		io_uring_buf_ring_advance(bufRing_, static_cast<int>(config_.bufCount));
	}
	if (!useFutex()) {
		eventfd_.reset(eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK));
		if (!eventfd_.isValid())
			return makeErrnoError(RMA_ERR_INTERN, errno, "net loop: eventfd");
	}
	/* Slots for exact connections' buffers; without them those recv into unregistered memory. */
	if (!config_.noFixedBuffers && io_uring_register_buffers_sparse(&ring_, kFixedSlots) == 0)
		for (int i = static_cast<int>(kFixedSlots) - 1; i >= 0; --i)
			freeSlots_.push_back(i);
	return RMA_SUCCESS;
}

std::string UringLoop::describe() const
{
	std::string s = "io_uring:";
	s += (setupFlags_ & IORING_SETUP_DEFER_TASKRUN) ? " defer_taskrun"
	     : (setupFlags_ & IORING_SETUP_COOP_TASKRUN) ? " coop_taskrun"
	     : (setupFlags_ & IORING_SETUP_SQPOLL)	  ? ""
							  : " plain_taskrun";
	s += useMultishot() ? " buf_ring recv_multishot" : " single_shot_recv";
	s += useFutex() ? " futex_wait" : " eventfd_wake";
	if (setupFlags_ & IORING_SETUP_TASKRUN_FLAG)
		s += " taskrun_flag";
	if (sqpoll())
		s += " sqpoll(idle " + std::to_string(config_.sqpollIdleMs) + " ms)";
	else if (sqpollRefused_)
		s += std::string(" (sqpoll refused: ") + std::strerror(sqpollRefused_) + ")";
	if (!freeSlots_.empty() || std::any_of(conns_.begin(), conns_.end(), [](const auto &c) { return c->fixedSlot >= 0; }))
		s += " fixed_buffers";
	if (useZc()) {
		s += " send_zc>=" + std::to_string(config_.zcMinBytes);
		if (config_.zc == ZcPolicy::Auto)
			s += " (auto: until the kernel copies)";
	}
	return s;
}

Result<ConnId> UringLoop::addConnection(UniqueFd fd, const ConnOptions &options)
{
	if (!fd.isValid())
		return Result<ConnId>::failure(makeError(RMA_ERR_ARG, "net loop: invalid socket"));
	int fl = fcntl(fd.get(), F_GETFL);
	if (fl < 0 || fcntl(fd.get(), F_SETFL, fl | O_NONBLOCK) < 0)
		return Result<ConnId>::failure(makeErrnoError(RMA_ERR_ARG, errno, "net loop: fcntl(O_NONBLOCK)"));
	auto c = std::make_unique<Conn>(options.maxBody ? options.maxBody : config_.maxBody, options.exact);
	c->fd = std::move(fd);
	if (!useMultishot() && !options.exact)
		c->own.resize(std::max<std::size_t>(config_.bufSize, 65536));
	if (options.exact && !freeSlots_.empty()) {
		/* Registered: the kernel copies into pages it pinned once, not ones it looks up on every read. */
		const std::span<uint8_t> b = c->assembler.buffer();
		iovec iov{ b.data(), b.size() };
		__u64 tag = 0;
		if (io_uring_register_buffers_update_tag(&ring_, static_cast<unsigned>(freeSlots_.back()), &iov, &tag, 1) == 1) {
			c->fixedSlot = freeSlots_.back();
			freeSlots_.pop_back();
		}
	}
	conns_.push_back(std::move(c));
	return static_cast<ConnId>(conns_.size() - 1);
}

int UringLoop::send(ConnId id, std::span<const uint8_t> bytes)
{
	if (id >= conns_.size() || !conns_[id]->open)
		return makeError(RMA_ERR_ARG, "net loop: send on unknown or closed connection %u", id);
	Conn &c = *conns_[id];
	c.queued.insert(c.queued.end(), bytes.begin(), bytes.end());
	return RMA_SUCCESS;
}

uint8_t *UringLoop::append(ConnId id, std::size_t n)
{
	if (id >= conns_.size() || !conns_[id]->open)
		return nullptr;
	return growQueue(conns_[id]->queued, n);
}

int UringLoop::close(ConnId id)
{
	if (id >= conns_.size() || !conns_[id]->open)
		return makeError(RMA_ERR_ARG, "net loop: close of unknown or closed connection %u", id);
	shut(*conns_[id]);
	return RMA_SUCCESS;
}

void UringLoop::pauseReceive(ConnId id, bool paused) noexcept
{
	if (id >= conns_.size() || !conns_[id]->open || conns_[id]->paused == paused)
		return;
	Conn &c = *conns_[id];
	c.paused = paused;
	stats_.pauses += paused;
	/* arm() does the rest: cancel the armed recv and watch for the peer's close, or undo that on resume. */
}

void UringLoop::onHangup(ConnId id, Conn &c, int res) noexcept
{
	c.hangupArmed = false;
	c.hangupCancelSent = false;
	/* Fired while still paused: the peer is gone (its unread data goes with it, as its parked requests will). */
	if (res > 0 && c.open && c.paused) {
		int err = 0;
		if (res & (POLLERR | POLLHUP)) {
			socklen_t len = sizeof(err);
			if (getsockopt(c.fd.get(), SOL_SOCKET, SO_ERROR, &err, &len) != 0 || err == 0)
				err = ECONNRESET;
		}
		shut(c);
		handler_.onClosed(handler_.ctx, id, err);
	}
	/* Else cancelled by a resume, or fired after one: the recv sees the close. */
	release(c);
}

void UringLoop::shut(Conn &c) noexcept
{
	c.open = false;
	c.queued.clear();
	/* Ends the multishot recv (res 0) and any send (EPIPE); the fd closes once both have completed. */
	::shutdown(c.fd.get(), SHUT_RDWR);
	release(c);
}

void UringLoop::arm() noexcept
{
	armShort_ = true; /* until every connection is armed */
	uint32_t armed = 0;
	for (ConnId id = 0; id < conns_.size(); ++id) {
		Conn &c = *conns_[id];
		if (!c.open)
			continue;
		if (c.paused) {
			/*
			 * Paused: the armed recv would go on taking data, so cancel it
			 * (-ECANCELED, or data it had already taken); and since nothing
			 * reads the socket, a poll watches for the peer's close or an
			 * error, so a dead origin is noticed (and its parked requests
			 * dropped) without resuming.
			 */
			if (c.recvArmed && !c.recvCancelSent) {
				if (!cancelOp(id, kRecv))
					return;
				c.recvCancelSent = true;
			}
			if (!c.hangupArmed) {
				io_uring_sqe *s = sqe();
				if (!s)
					return;
				io_uring_prep_poll_add(s, c.fd.get(), POLLRDHUP | POLLERR | POLLHUP);
				io_uring_sqe_set_data64(s, userData(id, kHangup));
				c.hangupArmed = true;
				c.hangupCancelSent = false;
			}
		} else if (c.hangupArmed && !c.hangupCancelSent) {
			if (!cancelOp(id, kHangup))
				return;
			c.hangupCancelSent = true;
		}
		if (!c.recvArmed && !c.paused) {
			io_uring_sqe *s = config_.armLimit && armed == config_.armLimit ? nullptr : sqe();
			if (!s)
				return; /* the SQ is still full after a submit: the next pass arms the rest */
			++armed;
			if (c.exact) {
				/* Exactly the rest of the header or of the frame, straight into place; whole unless the stream ends. */
				const std::span<uint8_t> room = c.assembler.room();
				if (c.fixedSlot >= 0) {
					/* A read may end short (what the socket had): received() takes it, the next arm asks for the rest. */
					io_uring_prep_read_fixed(s, c.fd.get(), room.data(), static_cast<unsigned>(room.size()), 0,
								 c.fixedSlot);
					++stats_.fixedReads;
				} else {
					io_uring_prep_recv(s, c.fd.get(), room.data(), room.size(), MSG_WAITALL);
				}
			} else if (useMultishot()) {
				io_uring_prep_recv_multishot(s, c.fd.get(), nullptr, 0, 0);
				s->flags |= IOSQE_BUFFER_SELECT;
				s->buf_group = kBufGroup;
			} else {
				io_uring_prep_recv(s, c.fd.get(), c.own.data(), c.own.size(), 0);
			}
			io_uring_sqe_set_data64(s, userData(id, kRecv));
			c.recvArmed = true;
			c.recvCancelSent = false;
			if (c.everArmed)
				++stats_.recvRearms;
			c.everArmed = true;
		}
		if (!c.sendArmed && (c.sent < c.inflight.size() || !c.queued.empty())) {
			if (c.sent == c.inflight.size()) {
				/* finishInflight() left it empty, and free to reuse: no notification is due for it. */
				c.inflight.swap(c.queued);
				c.queued.clear();
				c.sent = 0;
			}
			io_uring_sqe *s = config_.armLimit && armed == config_.armLimit ? nullptr : sqe();
			if (!s)
				return;
			++armed;
			const std::size_t left = c.inflight.size() - c.sent;
			if (zeroCopy(c, left)) {
				io_uring_prep_send_zc(s, c.fd.get(), c.inflight.data() + c.sent, left, MSG_NOSIGNAL,
						      features_.sendZcReportUsage ? compat::kSendZcReportUsage : 0);
				io_uring_sqe_set_data64(s, userData(id, kSendZc, c.zcGen));
				c.zcArmed = true;
				++stats_.zcSends;
			} else {
				io_uring_prep_send(s, c.fd.get(), c.inflight.data() + c.sent, left, MSG_NOSIGNAL);
				io_uring_sqe_set_data64(s, userData(id, kSend));
			}
			c.sendArmed = true;
			++stats_.sends;
		}
	}
	armShort_ = false;
}

void UringLoop::onRecv(ConnId id, Conn &c, const io_uring_cqe *cqe) noexcept
{
	const int res = cqe->res;
	const bool more = (cqe->flags & IORING_CQE_F_MORE) != 0;
	if (!more)
		c.recvArmed = false;
	if (res > 0) {
		++stats_.recvCompletions;
		stats_.bytesIn += static_cast<uint64_t>(res);
		const uint8_t *data = c.own.data();
		int bid = -1;
		if (cqe->flags & IORING_CQE_F_BUFFER) {
			bid = static_cast<int>(cqe->flags >> IORING_CQE_BUFFER_SHIFT);
			data = buffers_ + std::size_t(bid) * config_.bufSize;
		}
		bool good = true;
		if (c.open && c.exact) {
			good = c.assembler.received(static_cast<std::size_t>(res), [&](std::span<const uint8_t> f) {
				++stats_.frames;
				handler_.onFrame(handler_.ctx, id, f);
			});
		} else if (c.open) {
			const uint64_t before = c.assembler.splitFrames();
			good = c.assembler.feed({ data, static_cast<std::size_t>(res) }, [&](std::span<const uint8_t> f) {
				++stats_.frames;
				handler_.onFrame(handler_.ctx, id, f);
			});
			stats_.splitFrames += c.assembler.splitFrames() - before;
		}
		if (bid >= 0) {
			/* The buffer's bytes are consumed (or copied): give it back at once. */
			io_uring_buf_ring_add(bufRing_, buffers_ + std::size_t(bid) * config_.bufSize, config_.bufSize,
					      static_cast<unsigned short>(bid), io_uring_buf_ring_mask(config_.bufCount), 0);
			io_uring_buf_ring_advance(bufRing_, 1);
		}
		if (!good && c.open) {
			shut(c);
			handler_.onClosed(handler_.ctx, id, EPROTO);
		}
	} else if (res == -ENOBUFS) {
		/* Every buffer was in use: the multishot ended; arm() re-arms it on this pass. */
		++stats_.enobufs;
	} else if (res == -EAGAIN && c.exact) {
		/* A READ_FIXED on a nonblocking socket with nothing there (kernels before ~6.3 say so): ask again. */
	} else if (res == -ECANCELED) {
		/* Only a pause cancels a recv (shut() ends one by shutdown()): arm() re-arms it once resumed, maybe already. */
	} else if (c.open) {
		const int err = res == 0 ? 0 : -res;
		shut(c);
		handler_.onClosed(handler_.ctx, id, err);
	}
	release(c);
}

void UringLoop::onSend(Conn &c, const io_uring_cqe *cqe, ConnId id, bool zc) noexcept
{
	const int res = cqe->res;
	c.sendArmed = false;
	c.zcArmed = false;
	/* F_MORE: a notification follows, and until it does the kernel may read inflight. */
	if (zc && (cqe->flags & IORING_CQE_F_MORE))
		++c.inflightNotifs;
	if (zc && (res == -EOPNOTSUPP || res == -EINVAL) && c.open) {
		/* A socket without zero-copy support (AF_UNIX): the same bytes go again as a plain send. */
		c.zcOff = true;
		release(c);
		return;
	}
	if (res < 0) {
		if (c.open) {
			shut(c);
			handler_.onClosed(handler_.ctx, id, -res);
		}
		release(c);
		return;
	}
	stats_.bytesOut += static_cast<uint64_t>(res);
	if (static_cast<std::size_t>(res) < c.inflight.size() - c.sent)
		++stats_.shortSends; /* the socket was full: arm() sends the rest from c.sent */
	c.sent += static_cast<std::size_t>(res);
	if (c.sent == c.inflight.size())
		finishInflight(c);
	release(c);
}

void UringLoop::finishInflight(Conn &c) noexcept
{
	c.sent = 0;
	if (c.inflightNotifs <= 0) {
		c.inflight.clear();
		c.inflightNotifs = 0;
		return;
	}
	/* The kernel may still read it (a retransmission, a clone in a queue): set it aside. */
	c.held.push_back(Conn::Held{ std::move(c.inflight), c.zcGen & kGenMask, c.inflightNotifs });
	++stats_.zcHeld;
	c.inflight = std::vector<uint8_t>();
	if (!c.spare.empty()) {
		c.inflight.swap(c.spare.back());
		c.spare.pop_back();
	}
	c.inflightNotifs = 0;
	++c.zcGen;
}

void UringLoop::onNotif(Conn &c, const io_uring_cqe *cqe, uint32_t gen) noexcept
{
	++stats_.zcNotifs;
	if (static_cast<uint32_t>(cqe->res) & compat::kNotifUsageZcCopied) {
		++stats_.zcCopied;
		/* Auto: the copy happened anyway (a local delivery); plain sends cost less from now on. */
		if (config_.zc == ZcPolicy::Auto)
			c.zcOff = true;
	}
	if (gen == (c.zcGen & kGenMask)) {
		--c.inflightNotifs;
	} else {
		for (std::size_t i = 0; i < c.held.size(); ++i) {
			Conn::Held &h = c.held[i];
			if (h.gen != gen)
				continue;
			if (--h.notifs == 0) {
				/* The kernel is done with it: keep its capacity for a later send, or free it. */
				if (c.open && c.spare.size() < kSpareBuffers) {
					h.bytes.clear();
					c.spare.push_back(std::move(h.bytes));
				}
				c.held.erase(c.held.begin() + static_cast<std::ptrdiff_t>(i));
			}
			break;
		}
	}
	release(c);
}

template<typename Done>
bool UringLoop::drainForTeardown(int ms, Done &&done) noexcept
{
	const auto end = std::chrono::steady_clock::now() + std::chrono::milliseconds(ms);
	while (!done()) {
		const auto left = end - std::chrono::steady_clock::now();
		if (left <= std::chrono::nanoseconds(0))
			return false;
		__kernel_timespec ts{ 0, std::min<long long>(
						 std::chrono::duration_cast<std::chrono::nanoseconds>(left).count(), 10'000'000) };
		io_uring_cqe *cqe = nullptr;
		/* Also runs the task work that posts completions (DEFER_TASKRUN). */
		io_uring_submit_and_wait_timeout(&ring_, &cqe, 1, &ts, nullptr);
		unsigned head, seen = 0;
		io_uring_for_each_cqe(&ring_, head, cqe)
		{
			++seen;
			const uint64_t ud = io_uring_cqe_get_data64(cqe);
			const auto tag = static_cast<Tag>(ud & 0xff);
			const auto id = static_cast<ConnId>(ud >> 8);
			switch (tag) {
			case kRecv:
				/* The data goes nowhere, and the buffer stays out of the ring: the loop is going. */
				if (!(cqe->flags & IORING_CQE_F_MORE))
					conns_[id]->recvArmed = false;
				break;
			case kSend:
				conns_[id]->sendArmed = false;
				break;
			case kSendZc:
				if (cqe->flags & IORING_CQE_F_NOTIF) {
					onNotif(*conns_[id], cqe, static_cast<uint32_t>(ud >> 40));
				} else {
					Conn &c = *conns_[id];
					c.sendArmed = false;
					c.zcArmed = false;
					if (cqe->flags & IORING_CQE_F_MORE)
						++c.inflightNotifs;
				}
				break;
			case kFutex:
				futexArmed_ = false;
				break;
			case kEventfd:
				eventfdArmed_ = false;
				break;
			case kHangup:
				conns_[id]->hangupArmed = false;
				break;
			default:
				break;
			}
		}
		io_uring_cq_advance(&ring_, seen);
	}
	return true;
}

void UringLoop::settleZeroCopy() noexcept
{
	const auto settled = [this] {
		for (const auto &c : conns_)
			if (zcBusy(*c))
				return false;
		return true;
	};
	if (settled())
		return;
	/* A peer that is alive acknowledges the data, and the kernel lets go of it, within a round trip or so. */
	if (drainForTeardown(kSettleMs, settled))
		return;
	/*
	 * The rest (a peer that stopped reading): abort those connections. An
	 * abortive close (SO_LINGER 0) purges the socket's write queue, which
	 * frees the skbs that hold the buffers, and the notifications come.
	 * First shutdown() ends their recv and send, whose requests hold the
	 * file: the close must be the last reference to reach the protocol.
	 */
	for (auto &c : conns_) {
		if (!zcBusy(*c) || !c->fd.isValid())
			continue;
		const linger abort{ 1, 0 };
		setsockopt(c->fd.get(), SOL_SOCKET, SO_LINGER, &abort, sizeof(abort));
		c->open = false;
		::shutdown(c->fd.get(), SHUT_RDWR);
	}
	drainForTeardown(kAbortSettleMs, [this] {
		for (const auto &c : conns_)
			if (zcBusy(*c) && (c->recvArmed || c->sendArmed))
				return false;
		return true;
	});
	for (auto &c : conns_)
		if (zcBusy(*c) && !c->recvArmed && !c->sendArmed)
			c->fd.reset();
	drainForTeardown(kAbortSettleMs, settled);
}

std::mutex abandonedLock;
/* Reachable from here, so that LeakSanitizer does not report what is kept on purpose. */
std::vector<std::vector<uint8_t>> *abandoned = nullptr;

void UringLoop::abandonHeldBuffers() noexcept
{
	for (auto &c : conns_) {
		if (!zcBusy(*c))
			continue;
		std::lock_guard<std::mutex> g(abandonedLock);
		if (!abandoned)
			abandoned = new std::vector<std::vector<uint8_t>>();
		for (Conn::Held &h : c->held)
			abandoned->push_back(std::move(h.bytes));
		c->held.clear();
		abandoned->push_back(std::move(c->inflight));
	}
}

int UringLoop::reap() noexcept
{
	int n = 0;
	io_uring_cqe *cqe;
	unsigned head, seen = 0;
	io_uring_for_each_cqe(&ring_, head, cqe)
	{
		++seen;
		const uint64_t ud = io_uring_cqe_get_data64(cqe);
		const auto tag = static_cast<Tag>(ud & 0xff);
		const auto id = static_cast<ConnId>(ud >> 8);
		switch (tag) {
		case kRecv:
			onRecv(id, *conns_[id], cqe);
			++n;
			break;
		case kSend:
			onSend(*conns_[id], cqe, id, false);
			++n;
			break;
		case kSendZc:
			/* Not counted: a notification is bookkeeping, no work for the caller. */
			if (cqe->flags & IORING_CQE_F_NOTIF) {
				onNotif(*conns_[id], cqe, static_cast<uint32_t>(ud >> 40));
			} else {
				onSend(*conns_[id], cqe, id, true);
				++n;
			}
			break;
		case kFutex:
			futexArmed_ = false;
			++stats_.futexWakes;
			break;
		case kCancel:
			break; /* the cancelled operation reports itself */
		case kHangup:
			onHangup(id, *conns_[id], cqe->res);
			break;
		case kEventfd:
			eventfdArmed_ = false;
			++stats_.eventfdWakes;
			break;
		default:
			break;
		}
	}
	io_uring_cq_advance(&ring_, seen);
	return n;
}

int UringLoop::poll() noexcept
{
	++stats_.passes;
	arm();
	/* One enter per pass (none with an awake SQ thread): submits and, under DEFER_TASKRUN, runs the task work that posts completions. */
	submit();
	int n = 0;
	/* Completions may arm more work (a send queued by onFrame, a re-arm): a few rounds at most. */
	for (int round = 0; round < 4; ++round) {
		int k = reap();
		n += k;
		if (k == 0)
			break;
		arm();
		if (io_uring_sq_ready(&ring_) == 0)
			break;
		submit();
	}
	return n;
}

int UringLoop::wait(int64_t timeoutNs) noexcept
{
	arm();
	Doorbell &d = *doorbell_;
	/* C1, relaxed: F1 orders it before the re-check. */
	d.state.store(Doorbell::kAsleep, std::memory_order_relaxed);
	/* F1: pairs with F2 in Doorbell::ring() (and in wake()'s eventfd path); orders C1 before the re-check. */
	std::atomic_thread_fence(std::memory_order_seq_cst);
	bool work = io_uring_cq_ready(&ring_) > 0;
	work |= handler_.pending && handler_.pending(handler_.ctx);
	work |= armShort_; /* a recv left unarmed: nothing would wake us for its data */
	for (const auto &c : conns_)
		work |= c->open && !c->sendArmed && (!c->queued.empty() || c->sent < c->inflight.size());
	if (!work) {
		io_uring_sqe *s = (useFutex() ? !futexArmed_ : !eventfdArmed_) ? sqe() : nullptr;
		if (s && useFutex()) {
			compat::prepFutexWait(s, reinterpret_cast<const uint32_t *>(&d.state), Doorbell::kAsleep);
			io_uring_sqe_set_data64(s, userData(0, kFutex));
			futexArmed_ = true;
		} else if (s) {
			io_uring_prep_read(s, eventfd_.get(), &eventfdValue_, sizeof(eventfdValue_), 0);
			io_uring_sqe_set_data64(s, userData(0, kEventfd));
			eventfdArmed_ = true;
		}
		if (useFutex() ? !futexArmed_ : !eventfdArmed_) {
			/* No entry for the doorbell's request: a wake() would go unheard until the timeout. Pass again. */
			d.state.store(Doorbell::kAwake, std::memory_order_relaxed);
			return poll();
		}
		++stats_.parks;
		io_uring_cqe *cqe = nullptr;
		__kernel_timespec ts;
		__kernel_timespec *tp = nullptr;
		if (timeoutNs >= 0) {
			ts.tv_sec = timeoutNs / 1000000000;
			ts.tv_nsec = timeoutNs % 1000000000;
			tp = &ts;
		}
		io_uring_submit_and_wait_timeout(&ring_, &cqe, 1, tp, nullptr);
	}
	/* C4, relaxed: a producer that still reads Asleep makes one wake too many. */
	d.state.store(Doorbell::kAwake, std::memory_order_relaxed);
	return poll();
}

void UringLoop::wake() noexcept
{
	if (useFutex()) {
		doorbell_->ring();
		return;
	}
	/* F2 of the eventfd path: pairs with F1 in wait(). */
	std::atomic_thread_fence(std::memory_order_seq_cst);
	uint32_t expected = Doorbell::kAsleep;
	/* Relaxed: elects one waker; the eventfd write and read order the rest through the kernel. */
	if (doorbell_->state.load(std::memory_order_relaxed) == Doorbell::kAsleep &&
	    doorbell_->state.compare_exchange_strong(expected, Doorbell::kAwake, std::memory_order_relaxed)) {
		uint64_t one = 1;
		ssize_t w = ::write(eventfd_.get(), &one, sizeof(one));
		(void)w; /* EAGAIN: the counter is already nonzero, a wake is pending anyway */
	}
}

} /* namespace */

uint64_t abandonedZeroCopyBuffers()
{
	std::lock_guard<std::mutex> g(abandonedLock);
	return abandoned ? abandoned->size() : 0;
}

Result<std::unique_ptr<NetLoop>> makeUringLoop(const FrameHandler &handler, const NetLoopConfig &config,
					       const NetFeatures &features)
{
	if (int rc = checkConfig(handler, config); rc != RMA_SUCCESS)
		return Result<std::unique_ptr<NetLoop>>::failure(rc);
	if (!features.uring)
		return Result<std::unique_ptr<NetLoop>>::failure(
			makeError(RMA_ERR_NOT_SUPPORTED, "net loop: %s", features.describe().c_str()));
	auto loop = std::make_unique<UringLoop>(handler, config, features);
	if (int rc = loop->init(); rc != RMA_SUCCESS)
		return Result<std::unique_ptr<NetLoop>>::failure(rc);
	return std::unique_ptr<NetLoop>(std::move(loop));
}

Result<std::unique_ptr<NetLoop>> makeNetLoop(const FrameHandler &handler, const NetLoopConfig &config)
{
	if (int rc = checkConfig(handler, config); rc != RMA_SUCCESS)
		return Result<std::unique_ptr<NetLoop>>::failure(rc);
	if (config.policy == UringPolicy::Off)
		return makePollLoop(handler, config);
	const NetFeatures &f = probeNetFeatures();
	if (config.policy == UringPolicy::Require) {
		if (const char *missing = f.firstMissing(); *missing)
			return Result<std::unique_ptr<NetLoop>>::failure(makeError(
				RMA_ERR_NOT_SUPPORTED, "RMA_NET_URING=require: the kernel lacks %s (%s)", missing,
				f.describe().c_str()));
		return makeUringLoop(handler, config, f);
	}
	if (!f.uring)
		return makePollLoop(handler, config);
	/* Prefer: a ring that cannot be set up (memlock, a filtered register call) falls back too. */
	auto loop = makeUringLoop(handler, config, f);
	if (!loop.ok())
		return makePollLoop(handler, config);
	return loop;
}

} /* namespace librma::net */
