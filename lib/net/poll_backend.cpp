/* SPDX-License-Identifier: MIT */
/*
 * PollLoop: the NetLoop without io_uring (uring_loop.h): epoll over
 * nonblocking sockets, one recv buffer per connection, sends straight from
 * the queue with MSG_DONTWAIT (EPOLLOUT only while a send would block), an
 * eventfd for wake(). Correct everywhere, slower: a system call per recv
 * and per send instead of one enter per pass.
 */
#include <fcntl.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <chrono>

#include "error/error.h"
#include "net/uring_loop.h"

namespace librma::net {

namespace {

constexpr uint64_t kEventfdKey = ~uint64_t{ 0 };
/* recv calls per connection per pass: a busy peer cannot starve the others. */
constexpr int kRecvBurst = 16;

class PollLoop final : public NetLoop
{
public:
	PollLoop(const FrameHandler &handler, const NetLoopConfig &config) : NetLoop(handler, config) {}

	int init()
	{
		epoll_.reset(epoll_create1(EPOLL_CLOEXEC));
		if (!epoll_.isValid())
			return makeErrnoError(RMA_ERR_INTERN, errno, "net loop (poll): epoll_create1");
		eventfd_.reset(eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK));
		if (!eventfd_.isValid())
			return makeErrnoError(RMA_ERR_INTERN, errno, "net loop (poll): eventfd");
		epoll_event ev{};
		ev.events = EPOLLIN;
		ev.data.u64 = kEventfdKey;
		if (epoll_ctl(epoll_.get(), EPOLL_CTL_ADD, eventfd_.get(), &ev) < 0)
			return makeErrnoError(RMA_ERR_INTERN, errno, "net loop (poll): epoll_ctl(eventfd)");
		return RMA_SUCCESS;
	}

	Result<ConnId> addConnection(UniqueFd fd, const ConnOptions &options) override
	{
		if (!fd.isValid())
			return Result<ConnId>::failure(makeError(RMA_ERR_ARG, "net loop: invalid socket"));
		int fl = fcntl(fd.get(), F_GETFL);
		if (fl < 0 || fcntl(fd.get(), F_SETFL, fl | O_NONBLOCK) < 0)
			return Result<ConnId>::failure(makeErrnoError(RMA_ERR_ARG, errno, "net loop: fcntl(O_NONBLOCK)"));
		const auto id = static_cast<ConnId>(conns_.size());
		epoll_event ev{};
		ev.events = EPOLLIN | EPOLLRDHUP;
		ev.data.u64 = id;
		if (epoll_ctl(epoll_.get(), EPOLL_CTL_ADD, fd.get(), &ev) < 0)
			return Result<ConnId>::failure(makeErrnoError(RMA_ERR_INTERN, errno, "net loop (poll): epoll_ctl(add)"));
		auto c = std::make_unique<Conn>(options.maxBody ? options.maxBody : config_.maxBody, options.exact);
		c->fd = std::move(fd);
		if (!c->exact)
			c->buf.resize(std::max<std::size_t>(config_.bufSize, 65536));
		conns_.push_back(std::move(c));
		return id;
	}

	int send(ConnId id, std::span<const uint8_t> bytes) override
	{
		if (id >= conns_.size() || !conns_[id]->open)
			return makeError(RMA_ERR_ARG, "net loop: send on unknown or closed connection %u", id);
		Conn &c = *conns_[id];
		c.queued.insert(c.queued.end(), bytes.begin(), bytes.end());
		return RMA_SUCCESS;
	}

	std::size_t unsent(ConnId id) const override
	{
		if (id >= conns_.size() || !conns_[id]->open)
			return 0;
		return conns_[id]->queued.size() - conns_[id]->sent;
	}

	uint8_t *append(ConnId id, std::size_t n) override
	{
		if (id >= conns_.size() || !conns_[id]->open)
			return nullptr;
		return growQueue(conns_[id]->queued, n);
	}

	int close(ConnId id) override
	{
		if (id >= conns_.size() || !conns_[id]->open)
			return makeError(RMA_ERR_ARG, "net loop: close of unknown or closed connection %u", id);
		shut(*conns_[id]);
		return RMA_SUCCESS;
	}

	void pauseReceive(ConnId id, bool paused) noexcept override
	{
		if (id >= conns_.size() || !conns_[id]->open || conns_[id]->paused == paused)
			return;
		Conn &c = *conns_[id];
		c.paused = paused;
		stats_.pauses += paused;
		updateEvents(id, c);
	}

	int poll() noexcept override { return pass(0); }

	int wait(int64_t timeoutNs) noexcept override
	{
		Doorbell &d = *doorbell_;
		/* C1, relaxed: F1 orders it before the re-check. */
		d.state.store(Doorbell::kAsleep, std::memory_order_relaxed);
		/* F1: pairs with F2 in wake(); orders C1 before the re-check. */
		std::atomic_thread_fence(std::memory_order_seq_cst);
		bool work = handler_.pending && handler_.pending(handler_.ctx);
		for (const auto &c : conns_)
			work |= c->open && c->sent < c->queued.size() && !c->wantOut;
		int timeoutMs = 0;
		if (!work) {
			++stats_.parks;
			timeoutMs = timeoutNs < 0 ? -1 : static_cast<int>((timeoutNs + 999999) / 1000000);
		}
		int n = pass(timeoutMs);
		/* C4, relaxed: a producer that still reads Asleep makes one wake too many. */
		d.state.store(Doorbell::kAwake, std::memory_order_relaxed);
		return n;
	}

	void wake() noexcept override
	{
		/* F2: pairs with F1 in wait(); orders the caller's publish before the load of state. */
		std::atomic_thread_fence(std::memory_order_seq_cst);
		uint32_t expected = Doorbell::kAsleep;
		/* Relaxed: elects one waker; the eventfd orders the rest through the kernel. */
		if (doorbell_->state.load(std::memory_order_relaxed) == Doorbell::kAsleep &&
		    doorbell_->state.compare_exchange_strong(expected, Doorbell::kAwake, std::memory_order_relaxed)) {
			uint64_t one = 1;
			ssize_t w = ::write(eventfd_.get(), &one, sizeof(one));
			(void)w; /* EAGAIN: a wake is pending anyway */
		}
	}

	const char *backend() const noexcept override { return "poll"; }
	std::string describe() const override { return "poll: epoll eventfd_wake"; }

private:
	struct Conn {
		Conn(uint32_t maxBody, bool exactReads) : exact(exactReads), assembler(maxBody) {}
		UniqueFd fd;
		bool exact; /* ConnOptions::exact: each recv goes to assembler.room() */
		bool open = true;
		bool wantOut = false; /* EPOLLOUT armed: the socket buffer was full */
		bool paused = false;  /* pauseReceive(): EPOLLIN off, nothing read */
		FrameAssembler assembler;
		std::vector<uint8_t> queued;
		std::size_t sent = 0;
		std::vector<uint8_t> buf;
	};

	void shut(Conn &c) noexcept
	{
		c.open = false;
		c.queued.clear();
		c.sent = 0;
		epoll_ctl(epoll_.get(), EPOLL_CTL_DEL, c.fd.get(), nullptr);
		c.fd.reset();
	}

	void closed(ConnId id, Conn &c, int err) noexcept
	{
		shut(c);
		handler_.onClosed(handler_.ctx, id, err);
	}

	/* Read what is there; returns the number of recv calls that gave data. */
	int readable(ConnId id, Conn &c) noexcept
	{
		int n = 0;
		for (int i = 0; i < kRecvBurst && c.open && !c.paused; ++i) {
			const std::span<uint8_t> room = c.exact ? c.assembler.room() : std::span<uint8_t>(c.buf);
			ssize_t r = ::recv(c.fd.get(), room.data(), room.size(), MSG_DONTWAIT);
			if (r < 0) {
				if (errno == EAGAIN || errno == EWOULDBLOCK)
					break;
				if (errno == EINTR)
					continue;
				closed(id, c, errno);
				break;
			}
			if (r == 0) {
				closed(id, c, 0);
				break;
			}
			++n;
			++stats_.recvCompletions;
			stats_.bytesIn += static_cast<uint64_t>(r);
			const uint64_t before = c.assembler.splitFrames();
			auto deliver = [&](std::span<const uint8_t> f) {
				++stats_.frames;
				handler_.onFrame(handler_.ctx, id, f);
			};
			bool good = c.exact ? c.assembler.received(static_cast<std::size_t>(r), deliver)
					    : c.assembler.feed({ c.buf.data(), static_cast<std::size_t>(r) }, deliver);
			stats_.splitFrames += c.assembler.splitFrames() - before;
			if (!good && c.open)
				closed(id, c, EPROTO);
		}
		return n;
	}

	/* Send what is queued until done or the socket is full. */
	int flush(ConnId id, Conn &c) noexcept
	{
		int n = 0;
		while (c.open && c.sent < c.queued.size()) {
			ssize_t w = ::send(c.fd.get(), c.queued.data() + c.sent, c.queued.size() - c.sent,
					   MSG_DONTWAIT | MSG_NOSIGNAL);
			if (w < 0) {
				if (errno == EINTR)
					continue;
				if (errno == EAGAIN || errno == EWOULDBLOCK) {
					setWantOut(id, c, true);
					return n;
				}
				closed(id, c, errno);
				return n;
			}
			++n;
			++stats_.sends;
			if (static_cast<std::size_t>(w) < c.queued.size() - c.sent)
				++stats_.shortSends;
			stats_.bytesOut += static_cast<uint64_t>(w);
			c.sent += static_cast<std::size_t>(w);
		}
		if (c.open) {
			c.queued.clear();
			c.sent = 0;
			setWantOut(id, c, false);
		}
		return n;
	}

	void setWantOut(ConnId id, Conn &c, bool want) noexcept
	{
		if (c.wantOut == want)
			return;
		c.wantOut = want;
		updateEvents(id, c);
	}
	void updateEvents(ConnId id, Conn &c) noexcept
	{
		epoll_event ev{};
		/* Paused: not read, but the peer's close or an error is still seen (pass()). */
		ev.events = (c.paused ? EPOLLRDHUP : EPOLLIN | EPOLLRDHUP) | (c.wantOut ? EPOLLOUT : 0u);
		ev.data.u64 = id;
		epoll_ctl(epoll_.get(), EPOLL_CTL_MOD, c.fd.get(), &ev);
	}

	int pass(int timeoutMs) noexcept
	{
		++stats_.passes;
		int n = 0;
		for (ConnId id = 0; id < conns_.size(); ++id)
			if (conns_[id]->open && !conns_[id]->wantOut && conns_[id]->sent < conns_[id]->queued.size())
				n += flush(id, *conns_[id]);
		epoll_event evs[64];
		const int ms = n > 0 ? 0 : timeoutMs;
		const auto deadline = std::chrono::steady_clock::now() + std::chrono::milliseconds(ms);
		int k = epoll_wait(epoll_.get(), evs, 64, ms);
		/*
		 * EINTR without a signal of ours happens (task work of an io_uring
		 * being torn down in this thread interrupts the wait): sleep out
		 * the rest of the timeout rather than return early.
		 */
		while (k < 0 && errno == EINTR && ms > 0) {
			auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline -
											std::chrono::steady_clock::now());
			if (left.count() <= 0)
				break;
			k = epoll_wait(epoll_.get(), evs, 64, static_cast<int>(left.count()));
		}
		for (int i = 0; i < k; ++i) {
			if (evs[i].data.u64 == kEventfdKey) {
				uint64_t v;
				ssize_t r = ::read(eventfd_.get(), &v, sizeof(v));
				(void)r;
				++stats_.eventfdWakes;
				continue;
			}
			const auto id = static_cast<ConnId>(evs[i].data.u64);
			Conn &c = *conns_[id];
			if (!c.open)
				continue;
			if (c.paused && (evs[i].events & (EPOLLRDHUP | EPOLLHUP | EPOLLERR))) {
				/* Paused and the peer is gone: closed now (its unread data goes with it, as its parked requests will). */
				int err = 0;
				if (evs[i].events & (EPOLLHUP | EPOLLERR)) {
					socklen_t len = sizeof(err);
					if (getsockopt(c.fd.get(), SOL_SOCKET, SO_ERROR, &err, &len) != 0 || err == 0)
						err = ECONNRESET;
				}
				closed(id, c, err);
				++n;
				continue;
			}
			if (!c.paused && (evs[i].events & (EPOLLIN | EPOLLRDHUP | EPOLLHUP | EPOLLERR)))
				n += readable(id, c);
			if (c.open && (evs[i].events & EPOLLOUT))
				n += flush(id, c);
		}
		/* Replies queued by onFrame leave in this pass. */
		for (ConnId id = 0; id < conns_.size(); ++id)
			if (conns_[id]->open && !conns_[id]->wantOut && conns_[id]->sent < conns_[id]->queued.size())
				n += flush(id, *conns_[id]);
		return n;
	}

	UniqueFd epoll_;
	UniqueFd eventfd_;
	std::vector<std::unique_ptr<Conn>> conns_;
};

} /* namespace */

Result<std::unique_ptr<NetLoop>> makePollLoop(const FrameHandler &handler, const NetLoopConfig &config)
{
	if (!handler.onFrame || !handler.onClosed)
		return Result<std::unique_ptr<NetLoop>>::failure(
			makeError(RMA_ERR_ARG, "net loop: onFrame and onClosed are required"));
	auto loop = std::make_unique<PollLoop>(handler, config);
	if (int rc = loop->init(); rc != RMA_SUCCESS)
		return Result<std::unique_ptr<NetLoop>>::failure(rc);
	return std::unique_ptr<NetLoop>(std::move(loop));
}

} /* namespace librma::net */
