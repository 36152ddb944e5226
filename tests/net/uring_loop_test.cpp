/* SPDX-License-Identifier: MIT */
/*
 * The net agent's I/O engine (lib/net/uring_loop.h) over loopback TCP
 * (127.0.0.1 only) in one process, for each backend: io_uring as the
 * kernel offers it, io_uring with the FUTEX_WAIT and multishot pieces
 * forced off, and the poll backend. Every wait is bounded; every frame is
 * stamped and checked in order.
 */
#include <gtest/gtest.h>

#include <arpa/inet.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <fcntl.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <iterator>
#include <string>
#include <thread>
#include <vector>

#include <rma/rma.h>

#include "error/error.h"
#include "net/features.h"
#include "net/frame.h"
#include "net/tcp_pair.h"
#include "net/uring_loop.h"

namespace {

using namespace librma;
using namespace librma::net;
using Clock = std::chrono::steady_clock;
using Bytes = std::vector<uint8_t>;

/* Frame @seq: a GET_REPLY whose body is @len stamped bytes. */
Bytes stampedFrame(uint64_t seq, std::size_t len)
{
	Bytes f(kHeaderBytes + len);
	FrameHeader h;
	h.kind = static_cast<uint16_t>(FrameKind::GetReply);
	h.window = 1;
	h.seq = seq;
	FrameWriter w(f);
	w.begin(h);
	for (std::size_t i = 0; i < len; ++i) {
		uint8_t b = static_cast<uint8_t>(seq * 31 + i);
		w.put(&b, 1);
	}
	EXPECT_TRUE(w.end());
	return f;
}

/* Whether @f is stampedFrame(@seq, its length). */
bool checkStamp(std::span<const uint8_t> f, uint64_t seq)
{
	FrameHeader h = decodeHeader(f.data());
	if (h.seq != seq || f.size() != kHeaderBytes + h.bodyLen)
		return false;
	for (std::size_t i = 0; i < h.bodyLen; ++i)
		if (f[kHeaderBytes + i] != static_cast<uint8_t>(seq * 31 + i))
			return false;
	return true;
}

bool writeAll(int fd, const Bytes &b)
{
	std::size_t off = 0;
	while (off < b.size()) {
		ssize_t w = ::send(fd, b.data() + off, b.size() - off, MSG_NOSIGNAL);
		if (w <= 0)
			return false;
		off += static_cast<std::size_t>(w);
	}
	return true;
}

bool readAll(int fd, uint8_t *out, std::size_t n)
{
	std::size_t off = 0;
	while (off < n) {
		ssize_t r = ::recv(fd, out + off, n - off, 0);
		if (r <= 0)
			return false;
		off += static_cast<std::size_t>(r);
	}
	return true;
}

/* What the handler saw. */
struct Sink {
	std::vector<Bytes> frames;
	std::vector<std::pair<ConnId, int>> closed;
	bool echo = false;
	NetLoop *loop = nullptr;
	std::atomic<int> external{ 0 };

	FrameHandler handler()
	{
		FrameHandler h;
		h.onFrame = [](void *ctx, ConnId c, std::span<const uint8_t> f) noexcept {
			auto *s = static_cast<Sink *>(ctx);
			s->frames.emplace_back(f.begin(), f.end());
			if (s->echo)
				(void)s->loop->send(c, f);
		};
		h.onClosed = [](void *ctx, ConnId c, int err) noexcept {
			static_cast<Sink *>(ctx)->closed.emplace_back(c, err);
		};
		h.pending = [](void *ctx) noexcept {
			return static_cast<Sink *>(ctx)->external.load(std::memory_order_relaxed) > 0;
		};
		h.ctx = this;
		return h;
	}
};

struct Backend {
	const char *name;
	bool poll;
	bool noFutexWait;
	bool noMultishot;
	bool noDeferTaskrun = false;
	uint32_t sqpollIdleMs = 0;
	bool noTaskrunFlag = false;
};

class NetLoopTest : public ::testing::TestWithParam<Backend>
{
protected:
	void SetUp() override
	{
		if (!GetParam().poll && !probeNetFeatures().uring)
			GTEST_SKIP() << probeNetFeatures().describe();
		if (GetParam().poll == false && !GetParam().noMultishot &&
		    !(probeNetFeatures().bufRing && probeNetFeatures().recvMultishot))
			GTEST_SKIP() << "no multishot recv with provided buffers: " << probeNetFeatures().describe();
	}

	std::unique_ptr<NetLoop> make(Sink &sink, NetLoopConfig cfg = {})
	{
		cfg.noFutexWait = GetParam().noFutexWait;
		cfg.noMultishot = GetParam().noMultishot;
		cfg.noDeferTaskrun = GetParam().noDeferTaskrun;
		cfg.sqpollIdleMs = GetParam().sqpollIdleMs;
		cfg.noTaskrunFlag = GetParam().noTaskrunFlag;
		auto r = GetParam().poll ? makePollLoop(sink.handler(), cfg)
					 : makeUringLoop(sink.handler(), cfg, probeNetFeatures());
		EXPECT_TRUE(r.ok()) << errorMessage(r.code());
		if (!r.ok())
			return nullptr;
		sink.loop = r.value().get();
		return std::move(r.value());
	}

	/* One connection from a loopback pair: @loop's end added (its recv armed by a pass), the peer's in @peer. */
	ConnId addLoopbackPeer(NetLoop &loop, UniqueFd &peer)
	{
		auto [s, c] = net::loopbackTcpPair();
		EXPECT_TRUE(s.isValid() && c.isValid());
		auto id = loop.addConnection(std::move(s));
		EXPECT_TRUE(id.ok());
		peer = std::move(c);
		loop.poll();
		return id.ok() ? id.value() : 0;
	}

	/* Poll @loop until @done() or 10 s. */
	template<typename Done>
	bool drive(NetLoop &loop, Done &&done)
	{
		auto end = Clock::now() + std::chrono::seconds(10);
		while (!done()) {
			if (Clock::now() > end)
				return false;
			if (loop.poll() == 0)
				std::this_thread::yield();
		}
		return true;
	}
};

TEST_P(NetLoopTest, DeliversFramesInOrderAndSendsReplies)
{
	Sink sink;
	auto loop = make(sink);
	ASSERT_TRUE(loop);
	auto [s, c] = net::loopbackTcpPair();
	ASSERT_TRUE(s.isValid() && c.isValid());
	auto id = loop->addConnection(std::move(s));
	ASSERT_TRUE(id.ok());
	sink.echo = true;

	Bytes all;
	for (uint64_t q = 0; q < 50; ++q) {
		Bytes f = stampedFrame(q, q * 7 % 200);
		all.insert(all.end(), f.begin(), f.end());
	}
	ASSERT_TRUE(writeAll(c.get(), all));
	if (GetParam().noDeferTaskrun) {
		EXPECT_NE(loop->describe().find("coop_taskrun"), std::string::npos) << loop->describe();
	}
	if (GetParam().sqpollIdleMs) {
		EXPECT_NE(loop->describe().find("sqpoll"), std::string::npos) << loop->describe();
	}
	if (!GetParam().poll && !GetParam().sqpollIdleMs &&
	    (probeNetFeatures().deferTaskrun || probeNetFeatures().coopTaskrun)) {
		EXPECT_EQ(loop->describe().find("taskrun_flag") != std::string::npos, !GetParam().noTaskrunFlag)
			<< loop->describe();
	}
	ASSERT_TRUE(drive(*loop, [&] { return sink.frames.size() == 50; }));
	for (uint64_t q = 0; q < 50; ++q)
		EXPECT_TRUE(checkStamp(sink.frames[q], q)) << q;
	/* The echoes leave on the passes that follow. */
	Bytes back(all.size());
	std::thread reader([&, fd = c.get()] { EXPECT_TRUE(readAll(fd, back.data(), back.size())); });
	auto end = Clock::now() + std::chrono::seconds(10);
	while (loop->stats().bytesOut < all.size() && Clock::now() < end)
		loop->poll();
	reader.join();
	EXPECT_EQ(back, all);
	EXPECT_EQ(loop->stats().frames, 50u);
	EXPECT_TRUE(sink.closed.empty());
}

TEST_P(NetLoopTest, ReassemblesFramesSplitAcrossBuffers)
{
	Sink sink;
	NetLoopConfig cfg;
	cfg.bufSize = 64; /* every frame longer than 64 bytes crosses buffers */
	cfg.bufCount = 64;
	auto loop = make(sink, cfg);
	ASSERT_TRUE(loop);
	auto [s, c] = net::loopbackTcpPair();
	ASSERT_TRUE(s.isValid());
	ASSERT_TRUE(loop->addConnection(std::move(s)).ok());
	/* Written a few bytes at a time so the poll backend's larger buffer sees splits too. */
	std::thread writer([fd = c.get()] {
		for (uint64_t q = 0; q < 40; ++q) {
			Bytes f = stampedFrame(q, 20 + q * 13);
			for (std::size_t off = 0; off < f.size(); off += 50) {
				Bytes piece(f.begin() + static_cast<long>(off),
					    f.begin() + static_cast<long>(std::min(off + 50, f.size())));
				EXPECT_TRUE(writeAll(fd, piece));
				std::this_thread::sleep_for(std::chrono::microseconds(200));
			}
		}
	});
	bool got = drive(*loop, [&] { return sink.frames.size() == 40; });
	writer.join();
	ASSERT_TRUE(got);
	for (uint64_t q = 0; q < 40; ++q)
		EXPECT_TRUE(checkStamp(sink.frames[q], q)) << q;
	EXPECT_GT(loop->stats().splitFrames, 0u);
}

TEST_P(NetLoopTest, ReArmsTheReceiveWhenTheBufferRingRunsDry)
{
	Sink sink;
	NetLoopConfig cfg;
	cfg.bufSize = 256;
	cfg.bufCount = 2; /* two buffers: 64 KiB in flight must exhaust them */
	auto loop = make(sink, cfg);
	ASSERT_TRUE(loop);
	auto [s, c] = net::loopbackTcpPair();
	ASSERT_TRUE(s.isValid());
	ASSERT_TRUE(loop->addConnection(std::move(s)).ok());
	loop->poll(); /* arm the receive */
	Bytes all;
	uint64_t n = 0;
	while (all.size() < 64 * 1024) {
		Bytes f = stampedFrame(n, 100 + n % 300);
		all.insert(all.end(), f.begin(), f.end());
		++n;
	}
	ASSERT_TRUE(writeAll(c.get(), all)); /* fits the socket buffers: lands before the next pass */
	ASSERT_TRUE(drive(*loop, [&] { return sink.frames.size() == n; }));
	for (uint64_t q = 0; q < n; ++q)
		ASSERT_TRUE(checkStamp(sink.frames[q], q)) << q;
	if (!GetParam().poll && !GetParam().noMultishot) {
		EXPECT_GT(loop->stats().enobufs, 0u) << "the buffer ring never ran dry";
		EXPECT_GE(loop->stats().recvRearms, loop->stats().enobufs);
	}
	EXPECT_TRUE(sink.closed.empty());
}

TEST_P(NetLoopTest, ClosesAStreamWhoseHeaderAnnouncesTooLongABody)
{
	Sink sink;
	NetLoopConfig cfg;
	cfg.maxBody = 1024;
	auto loop = make(sink, cfg);
	ASSERT_TRUE(loop);
	auto [s, c] = net::loopbackTcpPair();
	ASSERT_TRUE(s.isValid());
	ConnId id = loop->addConnection(std::move(s)).value();
	Bytes good = stampedFrame(1, 10);
	Bytes bad(kHeaderBytes);
	FrameHeader h;
	h.kind = static_cast<uint16_t>(FrameKind::GetReply);
	h.bodyLen = 1025;
	encodeHeader(h, bad.data());
	ASSERT_TRUE(writeAll(c.get(), good));
	ASSERT_TRUE(writeAll(c.get(), bad));
	ASSERT_TRUE(drive(*loop, [&] { return !sink.closed.empty(); }));
	ASSERT_EQ(sink.frames.size(), 1u);
	EXPECT_TRUE(checkStamp(sink.frames[0], 1));
	EXPECT_EQ(sink.closed[0], std::make_pair(id, EPROTO));
	EXPECT_NE(loop->send(id, good), RMA_SUCCESS) << "a closed connection takes no more sends";
}

TEST_P(NetLoopTest, AnExactConnectionReceivesLargeFramesWholeWithoutReassembly)
{
	/* io_uring reads into a registered buffer (READ_FIXED) unless told not to; the poll backend recvs. */
	for (bool fixed : { true, false }) {
		SCOPED_TRACE(fixed ? "registered buffer" : "plain recv");
		Sink sink;
		NetLoopConfig cfg;
		cfg.noFixedBuffers = !fixed;
		auto loop = make(sink, cfg);
		ASSERT_TRUE(loop);
		auto [s, c] = net::loopbackTcpPair();
		ASSERT_TRUE(s.isValid() && c.isValid());
		ConnOptions opt;
		opt.maxBody = kMaxBulkBody;
		opt.exact = true;
		ConnId id = loop->addConnection(std::move(s), opt).value();
		/* Empty, tiny and bulk-sized bodies (up to the limit), written in odd pieces with pauses. */
		const std::size_t sizes[] = { 0, 1, 31, 33, 4096, 65536, 100000, 262144 + 40, kMaxBulkBody, 7, kMaxBulkBody - 1 };
		const std::size_t n = std::size(sizes);
		std::thread writer([&, fd = c.get()] {
			for (std::size_t q = 0; q < n; ++q) {
				Bytes f = stampedFrame(q, sizes[q]);
				const std::size_t step = 5000 + q * 7919;
				for (std::size_t off = 0; off < f.size(); off += step) {
					Bytes piece(f.begin() + static_cast<long>(off),
						    f.begin() + static_cast<long>(std::min(off + step, f.size())));
					EXPECT_TRUE(writeAll(fd, piece));
					if (q % 3 == 0)
						std::this_thread::sleep_for(std::chrono::microseconds(100));
				}
			}
			/* Over the limit: the stream cannot be cut any further. */
			Bytes bad(kHeaderBytes);
			FrameHeader h;
			h.kind = static_cast<uint16_t>(FrameKind::GetReply);
			h.bodyLen = kMaxBulkBody + 1;
			encodeHeader(h, bad.data());
			EXPECT_TRUE(writeAll(fd, bad));
		});
		bool got = drive(*loop, [&] { return !sink.closed.empty(); });
		writer.join();
		ASSERT_TRUE(got);
		ASSERT_EQ(sink.frames.size(), n);
		for (std::size_t q = 0; q < n; ++q)
			EXPECT_TRUE(checkStamp(sink.frames[q], q)) << q << " (" << sizes[q] << " bytes)";
		EXPECT_EQ(loop->stats().splitFrames, 0u) << "a frame was copied to be reassembled";
		EXPECT_EQ(sink.closed[0], std::make_pair(id, EPROTO));
		if (GetParam().poll || !fixed)
			EXPECT_EQ(loop->stats().fixedReads, 0u);
		else
			EXPECT_GT(loop->stats().fixedReads, 0u) << loop->describe();
	}
}

TEST_P(NetLoopTest, ReportsThePeersCloseOnceAndForgetsClosedConnections)
{
	Sink sink;
	auto loop = make(sink);
	ASSERT_TRUE(loop);
	auto [s1, c1] = net::loopbackTcpPair();
	auto [s2, c2] = net::loopbackTcpPair();
	ASSERT_TRUE(s1.isValid() && s2.isValid());
	ConnId a = loop->addConnection(std::move(s1)).value();
	ConnId b = loop->addConnection(std::move(s2)).value();
	loop->poll();
	c1.reset(); /* orderly EOF */
	ASSERT_TRUE(drive(*loop, [&] { return !sink.closed.empty(); }));
	EXPECT_EQ(sink.closed[0], std::make_pair(a, 0));
	/* Our own close: no callback, and the peer sees EOF. */
	EXPECT_EQ(loop->close(b), RMA_SUCCESS);
	EXPECT_NE(loop->close(b), RMA_SUCCESS);
	for (int i = 0; i < 20; ++i)
		loop->poll();
	uint8_t x;
	EXPECT_EQ(::recv(c2.get(), &x, 1, 0), 0);
	EXPECT_EQ(sink.closed.size(), 1u);
	EXPECT_NE(loop->send(77, stampedFrame(0, 1)), RMA_SUCCESS);
	EXPECT_FALSE(loop->addConnection(UniqueFd()).ok());
}

TEST_P(NetLoopTest, WakeEndsAParkFromAnotherThread)
{
	Sink sink;
	auto loop = make(sink);
	ASSERT_TRUE(loop);
	auto [s, c] = net::loopbackTcpPair();
	ASSERT_TRUE(loop->addConnection(std::move(s)).ok());
	loop->poll();
	for (int round = 0; round < 3; ++round) {
		std::thread waker([&] {
			std::this_thread::sleep_for(std::chrono::milliseconds(30));
			sink.external.store(1, std::memory_order_relaxed);
			loop->wake();
		});
		auto t0 = Clock::now();
		while (sink.external.load(std::memory_order_relaxed) == 0 &&
		       Clock::now() - t0 < std::chrono::seconds(5))
			loop->wait(5'000'000'000);
		auto took = Clock::now() - t0;
		waker.join();
		EXPECT_LT(took, std::chrono::seconds(2)) << "round " << round;
		sink.external.store(0, std::memory_order_relaxed);
	}
	const NetLoopStats &st = loop->stats();
	EXPECT_GT(st.parks, 0u);
	if (GetParam().poll || GetParam().noFutexWait || !probeNetFeatures().futexWait) {
		EXPECT_GT(st.eventfdWakes, 0u);
	} else {
		EXPECT_GT(st.futexWakes, 0u);
	}
}

TEST_P(NetLoopTest, DataEndsAPark)
{
	Sink sink;
	auto loop = make(sink);
	ASSERT_TRUE(loop);
	auto [s, c] = net::loopbackTcpPair();
	ASSERT_TRUE(loop->addConnection(std::move(s)).ok());
	loop->poll();
	std::thread writer([fd = c.get()] {
		std::this_thread::sleep_for(std::chrono::milliseconds(30));
		EXPECT_TRUE(writeAll(fd, stampedFrame(9, 16)));
	});
	auto t0 = Clock::now();
	while (sink.frames.empty() && Clock::now() - t0 < std::chrono::seconds(5))
		loop->wait(5'000'000'000);
	writer.join();
	EXPECT_LT(Clock::now() - t0, std::chrono::seconds(2));
	ASSERT_EQ(sink.frames.size(), 1u);
	EXPECT_TRUE(checkStamp(sink.frames[0], 9));
}

/*
 * More connections than submission entries: arming them all takes several
 * submits (with an SQ thread, waits for it to take entries), and a park
 * must never leave one of them without its recv, or its data would never
 * end the park. Only the last connection gets a frame at first, after the
 * owner parked; then every other one does, and every frame must come back
 * echoed. Run once as is and once with arm() limited to one operation a
 * pass (NetLoopConfig::armLimit: what a full submission queue does), so
 * every park follows an arm() that stopped short.
 */
TEST_P(NetLoopTest, ManyConnectionsOnATinySubmissionQueueAllReceiveWhileParked)
{
	for (uint32_t limit : { 0u, 1u }) {
		SCOPED_TRACE(limit ? "one operation armed a pass" : "no limit");
		Sink sink;
		NetLoopConfig cfg;
		cfg.ringEntries = 2;
		cfg.armLimit = limit;
		auto loop = make(sink, cfg);
		ASSERT_TRUE(loop);
		sink.echo = true;
		constexpr int kConns = 24;
		std::vector<UniqueFd> clients;
		for (int i = 0; i < kConns; ++i) {
			auto [s, c] = net::loopbackTcpPair();
			ASSERT_TRUE(s.isValid() && c.isValid());
			ASSERT_TRUE(loop->addConnection(std::move(s)).ok());
			clients.push_back(std::move(c));
		}
		const std::size_t frameBytes = stampedFrame(0, 24).size();
		for (int phase = 0; phase < 2; ++phase) {
			const std::size_t want = phase == 0 ? 1 : kConns;
			std::thread writer([&] {
				std::this_thread::sleep_for(std::chrono::milliseconds(30));
				for (int i = 0; i < kConns; ++i) {
					if ((phase == 0) == (i == kConns - 1)) {
						EXPECT_TRUE(writeAll(clients[i].get(), stampedFrame(static_cast<uint64_t>(i), 24)));
					}
				}
			});
			const auto t0 = Clock::now();
			while (sink.frames.size() < want && Clock::now() - t0 < std::chrono::seconds(20))
				loop->wait(5'000'000'000);
			writer.join();
			ASSERT_EQ(sink.frames.size(), want) << "phase " << phase;
			/* A park that slept through a frame would have lasted its whole 5 s. */
			EXPECT_LT(Clock::now() - t0, std::chrono::seconds(4))
				<< "phase " << phase << ": submission queue full " << loop->stats().sqFull << " times";
		}
		EXPECT_TRUE(checkStamp(sink.frames[0], kConns - 1));
		/* The echoes: each client reads its own frame back. */
		const auto end = Clock::now() + std::chrono::seconds(10);
		while (loop->stats().bytesOut < std::size_t{ kConns } * frameBytes && Clock::now() < end)
			loop->poll();
		for (int i = 0; i < kConns; ++i) {
			Bytes back(frameBytes);
			ASSERT_TRUE(readAll(clients[i].get(), back.data(), back.size())) << i;
			EXPECT_TRUE(checkStamp(back, static_cast<uint64_t>(i))) << i;
		}
		EXPECT_TRUE(sink.closed.empty());
		/* A submit frees entries, or (SQ thread) waiting for it does: arm() never stops short for want of one. */
		EXPECT_EQ(loop->stats().sqFull, 0u);
	}
}

/*
 * Back-pressure: a paused connection is not read, so a peer that keeps
 * writing finds the socket buffers full (EAGAIN) after a bounded amount;
 * once resumed, every frame arrives, in order.
 */
TEST_P(NetLoopTest, APausedConnectionIsNotReadUntilItResumes)
{
	Sink sink;
	auto loop = make(sink);
	ASSERT_TRUE(loop);
	UniqueFd c;
	const ConnId id = addLoopbackPeer(*loop, c);
	ASSERT_FALSE(HasFailure());
	loop->pauseReceive(id, true);
	for (int i = 0; i < 20; ++i) { /* the cancellation of a multishot recv lands */
		loop->poll();
		std::this_thread::sleep_for(std::chrono::milliseconds(1));
	}
	EXPECT_EQ(loop->stats().pauses, 1u);

	/* Whole 1 KiB frames until the socket refuses more. */
	ASSERT_EQ(fcntl(c.get(), F_SETFL, fcntl(c.get(), F_GETFL) | O_NONBLOCK), 0);
	Bytes all;
	uint64_t n = 0;
	std::size_t written = 0;
	const auto end = Clock::now() + std::chrono::seconds(10);
	while (written <= (std::size_t{ 64 } << 20) && Clock::now() < end) {
		if (written == all.size()) {
			Bytes f = stampedFrame(n++, 1024);
			all.insert(all.end(), f.begin(), f.end());
		}
		ssize_t w = ::send(c.get(), all.data() + written, all.size() - written, MSG_NOSIGNAL);
		if (w > 0) {
			written += static_cast<std::size_t>(w);
			loop->poll(); /* nothing may be read meanwhile */
			continue;
		}
		ASSERT_TRUE(w < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) << std::strerror(errno);
		break;
	}
	EXPECT_LT(written, std::size_t{ 64 } << 20) << "the paused connection was read";
	EXPECT_TRUE(sink.frames.empty()) << sink.frames.size() << " frames delivered while paused";

	/* Resumed: the rest of the last frame goes out blocking, and everything arrives. */
	loop->pauseReceive(id, false);
	std::thread writer([&, fd = c.get()] {
		ASSERT_EQ(fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) & ~O_NONBLOCK), 0);
		EXPECT_TRUE(writeAll(fd, Bytes(all.begin() + static_cast<std::ptrdiff_t>(written), all.end())));
	});
	EXPECT_TRUE(drive(*loop, [&] { return sink.frames.size() == n; }));
	writer.join();
	ASSERT_EQ(sink.frames.size(), n);
	for (uint64_t q = 0; q < n; ++q)
		ASSERT_TRUE(checkStamp(sink.frames[q], q)) << q;
	EXPECT_TRUE(sink.closed.empty());
}

/* While paused nothing reads the socket, yet the peer's close (or reset) is reported at once. */
TEST_P(NetLoopTest, APausedConnectionStillReportsItsPeersClose)
{
	for (bool reset : { false, true }) {
		SCOPED_TRACE(reset ? "reset" : "orderly close");
		Sink sink;
		auto loop = make(sink);
		ASSERT_TRUE(loop);
		UniqueFd c;
		const ConnId id = addLoopbackPeer(*loop, c);
		ASSERT_FALSE(HasFailure());
		loop->pauseReceive(id, true);
		for (int i = 0; i < 5; ++i)
			loop->poll();
		ASSERT_TRUE(writeAll(c.get(), stampedFrame(1, 64))); /* unread: it goes with the connection */
		if (reset) {
			const linger hard{ 1, 0 };
			setsockopt(c.get(), SOL_SOCKET, SO_LINGER, &hard, sizeof hard);
		}
		c.reset();
		ASSERT_TRUE(drive(*loop, [&] { return !sink.closed.empty(); })) << "the close went unnoticed while paused";
		EXPECT_EQ(sink.closed[0].first, id);
		if (reset) {
			EXPECT_NE(sink.closed[0].second, 0);
		}
	}
}

/*
 * A resume that comes before the paused recv's cancellation has completed
 * (with an SQ thread, whenever it likes): the cancelled recv must not be
 * taken for a failed connection, and the next frame must arrive.
 */
TEST_P(NetLoopTest, AResumeBeforeThePauseTookEffectKeepsTheConnection)
{
	Sink sink;
	auto loop = make(sink);
	ASSERT_TRUE(loop);
	UniqueFd c;
	const ConnId id = addLoopbackPeer(*loop, c);
	ASSERT_FALSE(HasFailure());
	for (int round = 0; round < 20; ++round) {
		loop->pauseReceive(id, true);
		loop->poll(); /* the cancellation goes out */
		loop->pauseReceive(id, false);
		ASSERT_TRUE(writeAll(c.get(), stampedFrame(static_cast<uint64_t>(round), 32)));
		ASSERT_TRUE(drive(*loop, [&] { return sink.frames.size() == static_cast<std::size_t>(round) + 1 ||
						      !sink.closed.empty(); }));
		ASSERT_TRUE(sink.closed.empty()) << "round " << round << ": closed with error " << sink.closed[0].second;
		EXPECT_TRUE(checkStamp(sink.frames.back(), static_cast<uint64_t>(round)));
	}
}

TEST_P(NetLoopTest, ATimedOutParkReturns)
{
	Sink sink;
	auto loop = make(sink);
	ASSERT_TRUE(loop);
	auto t0 = Clock::now();
	EXPECT_EQ(loop->wait(20'000'000), 0);
	auto took = Clock::now() - t0;
	EXPECT_GE(took, std::chrono::milliseconds(15))
		<< "passes " << loop->stats().passes << " parks " << loop->stats().parks << " eventfd wakes "
		<< loop->stats().eventfdWakes << " futex wakes " << loop->stats().futexWakes;
	EXPECT_LT(took, std::chrono::seconds(2));
}

/*
 * The wake handshake under contention: a producer publishes work (a
 * counter the pending() hook reads) and calls wake(), 3000 times, while the
 * owner parks whenever it has consumed everything. A lost wake would leave
 * the owner asleep until its 2 s timeout; none may.
 */
TEST_P(NetLoopTest, NoWakeIsLostUnderContention)
{
	Sink sink;
	auto loop = make(sink);
	ASSERT_TRUE(loop);
	constexpr int kRounds = 3000;
	std::atomic<int> consumed{ 0 };
	std::thread producer([&] {
		for (int i = 0; i < kRounds; ++i) {
			/* Wait until the owner took the last one, so each wake meets a park or a park-to-be. */
			auto end = Clock::now() + std::chrono::seconds(10);
			while (consumed.load(std::memory_order_acquire) < i && Clock::now() < end)
				std::this_thread::yield();
			/* Relaxed: wake()'s seq_cst fence (F2) orders it before the load of the doorbell state. */
			sink.external.fetch_add(1, std::memory_order_relaxed);
			loop->wake();
		}
	});
	int slow = 0;
	auto deadline = Clock::now() + std::chrono::seconds(60);
	while (consumed.load(std::memory_order_relaxed) < kRounds && Clock::now() < deadline) {
		if (sink.external.load(std::memory_order_relaxed) == 0) {
			auto t0 = Clock::now();
			loop->wait(2'000'000'000);
			slow += Clock::now() - t0 > std::chrono::milliseconds(1500);
			continue;
		}
		sink.external.fetch_sub(1, std::memory_order_relaxed);
		/* Release: pairs with the producer's acquire load; nothing else is published. */
		consumed.fetch_add(1, std::memory_order_release);
	}
	producer.join();
	EXPECT_EQ(consumed.load(), kRounds);
	EXPECT_EQ(slow, 0) << "waits that slept through a wake";
	/* The race was run: some waits parked (a wake ended them), not every one found the work first. */
	EXPECT_GT(loop->stats().parks, 0u);
	std::printf("[ handshake ] %llu parks, %llu futex wakes, %llu eventfd wakes in %d rounds\n",
		    static_cast<unsigned long long>(loop->stats().parks),
		    static_cast<unsigned long long>(loop->stats().futexWakes),
		    static_cast<unsigned long long>(loop->stats().eventfdWakes), kRounds);
}

INSTANTIATE_TEST_SUITE_P(Backends, NetLoopTest,
			 ::testing::Values(Backend{ "uring", false, false, false },
					   Backend{ "uring_eventfd_wake", false, true, false },
					   Backend{ "uring_single_shot", false, false, true },
					   Backend{ "uring_coop_taskrun", false, false, false, true },
					   /* A 1 ms idle time: the SQ thread also sleeps and is woken again within a test. */
					   Backend{ "uring_sqpoll", false, false, false, false, 1 },
					   /* Every pass enters the kernel for completions (no IORING_SQ_TASKRUN to look at). */
					   Backend{ "uring_no_taskrun_flag", false, false, false, false, 0, true },
					   Backend{ "poll", true, false, false }),
			 [](const ::testing::TestParamInfo<Backend> &i) { return std::string(i.param.name); });

/* ---- Zero-copy sends (io_uring only) ---- */

/* Byte @i of big frame @seq's body: differs between frames and along each one. */
uint8_t bigByte(uint64_t seq, std::size_t i)
{
	return static_cast<uint8_t>(seq * 131 + i * 7 + (i >> 12));
}

/* Queue frame @seq with @len body bytes on @conn, built in place as the server builds a GET_REPLY (Replier::dataInPlace). */
bool appendBigFrame(NetLoop &loop, ConnId conn, uint64_t seq, std::size_t len)
{
	uint8_t *at = loop.append(conn, kHeaderBytes + len);
	if (!at)
		return false;
	FrameHeader h;
	h.kind = static_cast<uint16_t>(FrameKind::GetReply);
	h.window = 1;
	h.seq = seq;
	h.bodyLen = static_cast<uint32_t>(len);
	encodeHeader(h, at);
	for (std::size_t i = 0; i < len; ++i)
		at[kHeaderBytes + i] = bigByte(seq, i);
	return true;
}

/*
 * Reads frames from a socket on its own thread and checks that each is the
 * next one (seq 0, 1, ...) with the length @lenOf(seq) and the bytes
 * bigByte() says. @pause between reads of 64 KiB makes it a slow reader.
 */
class BigFrameReader
{
public:
	BigFrameReader(int fd, uint64_t frames, std::size_t (*lenOf)(uint64_t),
		       std::chrono::microseconds pause = std::chrono::microseconds(0))
		: thread_([=, this] { run(fd, frames, lenOf, pause); })
	{
	}
	~BigFrameReader()
	{
		if (thread_.joinable())
			thread_.join();
	}
	bool done() const { return done_.load(std::memory_order_acquire); }
	/* After done(): frames that were whole, in order and intact, and the first complaint. */
	uint64_t good() const { return good_; }
	const std::string &problem() const { return problem_; }
	void join() { thread_.join(); }

private:
	void run(int fd, uint64_t frames, std::size_t (*lenOf)(uint64_t), std::chrono::microseconds pause)
	{
		std::vector<uint8_t> chunk(64 << 10);
		for (uint64_t q = 0; q < frames && problem_.empty(); ++q) {
			uint8_t head[kHeaderBytes];
			if (!readAll(fd, head, sizeof(head))) {
				problem_ = "connection ended before frame " + std::to_string(q);
				break;
			}
			FrameHeader h = decodeHeader(head);
			if (h.seq != q || h.bodyLen != lenOf(q)) {
				problem_ = "frame " + std::to_string(q) + " came as seq " + std::to_string(h.seq) + " of " +
					   std::to_string(h.bodyLen) + " bytes";
				break;
			}
			for (std::size_t off = 0; off < h.bodyLen && problem_.empty();) {
				std::size_t n = std::min(chunk.size(), h.bodyLen - off);
				if (!readAll(fd, chunk.data(), n)) {
					problem_ = "connection ended inside frame " + std::to_string(q);
					break;
				}
				for (std::size_t i = 0; i < n; ++i)
					if (chunk[i] != bigByte(q, off + i)) {
						problem_ = "frame " + std::to_string(q) + " byte " + std::to_string(off + i) +
							   " is wrong";
						break;
					}
				off += n;
				if (pause.count())
					std::this_thread::sleep_for(pause);
			}
			if (problem_.empty())
				++good_;
		}
		/* Release: good_ and problem_ before done(). */
		done_.store(true, std::memory_order_release);
	}

	uint64_t good_ = 0;
	std::string problem_;
	std::atomic<bool> done_{ false };
	std::thread thread_;
};

class ZeroCopyTest : public ::testing::Test
{
protected:
	void SetUp() override
	{
		if (!probeNetFeatures().uring || !probeNetFeatures().sendZc)
			GTEST_SKIP() << "no IORING_OP_SEND_ZC: " << probeNetFeatures().describe();
	}

	std::unique_ptr<NetLoop> make(Sink &sink, ZcPolicy zc, NetFeatures f = probeNetFeatures())
	{
		NetLoopConfig cfg;
		cfg.zc = zc;
		auto r = makeUringLoop(sink.handler(), cfg, f);
		EXPECT_TRUE(r.ok()) << errorMessage(r.code());
		if (!r.ok())
			return nullptr;
		sink.loop = r.value().get();
		return std::move(r.value());
	}

	/* Poll @loop until @done() or 20 s. */
	template<typename Done>
	static bool drive(NetLoop &loop, Done &&done)
	{
		auto end = Clock::now() + std::chrono::seconds(20);
		while (!done()) {
			if (Clock::now() > end)
				return false;
			if (loop.poll() == 0)
				std::this_thread::yield();
		}
		return true;
	}

	/* Every zero-copy send's notification came: the kernel holds none of the loop's buffers. */
	static bool notified(const NetLoop &loop) { return loop.stats().zcNotifs == loop.stats().zcSends; }
};

/* Big frames of several sizes, small ones between them (below the zero-copy threshold). */
std::size_t mixedLength(uint64_t q)
{
	static const std::size_t kLens[] = { 4 << 20, 100, (1 << 20) + 13, 64 << 10, 3 << 20, 5000, 2 << 20 };
	return kLens[q % std::size(kLens)];
}

TEST_F(ZeroCopyTest, LargeFramesArriveIntactAndInOrder)
{
	Sink sink;
	auto loop = make(sink, ZcPolicy::On);
	ASSERT_TRUE(loop);
	EXPECT_NE(loop->describe().find("send_zc>=65536"), std::string::npos) << loop->describe();
	auto [s, c] = net::loopbackTcpPair();
	ASSERT_TRUE(s.isValid() && c.isValid());
	ConnId id = loop->addConnection(std::move(s)).value();
	constexpr uint64_t kFrames = 21; /* 37 MiB */
	BigFrameReader reader(c.get(), kFrames, mixedLength);
	/* Queued a few at a time while earlier ones are in flight: sends start from fresh and held buffers. */
	uint64_t next = 0;
	ASSERT_TRUE(drive(*loop, [&] {
		if (next < kFrames && loop->unsent(id) < (8 << 20)) {
			EXPECT_TRUE(appendBigFrame(*loop, id, next, mixedLength(next)));
			++next;
		}
		return reader.done();
	}));
	reader.join();
	EXPECT_EQ(reader.good(), kFrames) << reader.problem();
	EXPECT_TRUE(drive(*loop, [&] { return notified(*loop); }))
		<< loop->stats().zcNotifs << " notifications for " << loop->stats().zcSends << " zero-copy sends";
	const NetLoopStats &st = loop->stats();
	EXPECT_GT(st.zcSends, 0u);
	EXPECT_LE(st.zcSends, st.sends);
	/* A send's completion comes before its notification: the finished buffer waited, and the next send used another. */
	EXPECT_GT(st.zcHeld, 0u);
	EXPECT_TRUE(sink.closed.empty());
	std::printf("[ zc ] %llu sends, %llu zero-copy, %llu short, %llu buffers held, %llu notifications (%llu copied)\n",
		    static_cast<unsigned long long>(st.sends), static_cast<unsigned long long>(st.zcSends),
		    static_cast<unsigned long long>(st.shortSends), static_cast<unsigned long long>(st.zcHeld),
		    static_cast<unsigned long long>(st.zcNotifs), static_cast<unsigned long long>(st.zcCopied));
}

std::size_t twoMiB(uint64_t) { return 2 << 20; }

/* A small send buffer and a slow reader: sends take part of what they are offered and the rest follows. */
class ZeroCopyShortSendTest : public ZeroCopyTest, public ::testing::WithParamInterface<ZcPolicy>
{
};

TEST_P(ZeroCopyShortSendTest, ShortSendsResumeWhereTheyStopped)
{
	Sink sink;
	auto loop = make(sink, GetParam());
	ASSERT_TRUE(loop);
	auto [s, c] = net::loopbackTcpPair();
	ASSERT_TRUE(s.isValid() && c.isValid());
	int small = 32 << 10;
	ASSERT_EQ(setsockopt(s.get(), SOL_SOCKET, SO_SNDBUF, &small, sizeof(small)), 0);
	ASSERT_EQ(setsockopt(c.get(), SOL_SOCKET, SO_RCVBUF, &small, sizeof(small)), 0);
	ConnId id = loop->addConnection(std::move(s)).value();
	constexpr uint64_t kFrames = 6;
	for (uint64_t q = 0; q < kFrames; ++q)
		ASSERT_TRUE(appendBigFrame(*loop, id, q, twoMiB(q)));
	BigFrameReader reader(c.get(), kFrames, twoMiB, std::chrono::microseconds(100));
	ASSERT_TRUE(drive(*loop, [&] { return reader.done(); }));
	reader.join();
	EXPECT_EQ(reader.good(), kFrames) << reader.problem();
	const NetLoopStats &st = loop->stats();
	EXPECT_GT(st.shortSends, 0u) << "no send was short: the test did not test resumption";
	EXPECT_EQ(st.bytesOut, kFrames * (kHeaderBytes + twoMiB(0)));
	if (GetParam() == ZcPolicy::On) {
		/* The resumed sends are zero-copy too (each remainder is over the threshold until the last piece). */
		EXPECT_GT(st.zcSends, 1u);
		EXPECT_TRUE(drive(*loop, [&] { return notified(*loop); }));
	} else {
		EXPECT_EQ(st.zcSends, 0u);
	}
	EXPECT_TRUE(sink.closed.empty());
}

INSTANTIATE_TEST_SUITE_P(Zc, ZeroCopyShortSendTest, ::testing::Values(ZcPolicy::On, ZcPolicy::Off),
			 [](const ::testing::TestParamInfo<ZcPolicy> &i) { return std::string(zcPolicyName(i.param)); });

/* Queue @frames of 2 MiB to a peer that does not read, and poll until the socket is full with a zero-copy send in flight. */
void fillWithZeroCopySends(NetLoop &loop, ConnId id, uint64_t frames)
{
	for (uint64_t q = 0; q < frames; ++q)
		ASSERT_TRUE(appendBigFrame(loop, id, q, twoMiB(q)));
	auto end = Clock::now() + std::chrono::seconds(10);
	uint64_t out = ~uint64_t{ 0 };
	/* Until the bytes out stop growing for 50 ms. */
	while (Clock::now() < end) {
		for (int i = 0; i < 50; ++i) {
			loop.poll();
			std::this_thread::sleep_for(std::chrono::milliseconds(1));
		}
		if (loop.stats().bytesOut == out)
			break;
		out = loop.stats().bytesOut;
	}
	ASSERT_GT(loop.stats().zcSends, 0u);
	ASSERT_GT(loop.unsent(id), 0u) << "the peer took everything: nothing is in flight";
}

TEST_F(ZeroCopyTest, ClosingAConnectionWithAZeroCopySendInFlightWaitsForTheKernel)
{
	const uint64_t abandonedBefore = abandonedZeroCopyBuffers();
	Sink sink;
	auto loop = make(sink, ZcPolicy::On);
	ASSERT_TRUE(loop);
	auto [s, c] = net::loopbackTcpPair();
	ASSERT_TRUE(s.isValid() && c.isValid());
	int small = 64 << 10;
	ASSERT_EQ(setsockopt(s.get(), SOL_SOCKET, SO_SNDBUF, &small, sizeof(small)), 0);
	ConnId id = loop->addConnection(std::move(s)).value();
	fillWithZeroCopySends(*loop, id, 8);
	ASSERT_EQ(loop->close(id), RMA_SUCCESS);
	EXPECT_EQ(loop->unsent(id), 0u);
	for (int i = 0; i < 20; ++i)
		loop->poll();
	/* The peer goes without reading: its RST makes the kernel drop the skbs, and the notifications come. */
	c.reset();
	EXPECT_TRUE(drive(*loop, [&] { return notified(*loop); }))
		<< loop->stats().zcNotifs << " notifications for " << loop->stats().zcSends << " zero-copy sends";
	EXPECT_TRUE(sink.closed.empty()) << "our own close: no callback";
	loop.reset();
	EXPECT_EQ(abandonedZeroCopyBuffers(), abandonedBefore);
}

TEST_F(ZeroCopyTest, DestroyingTheLoopWithAZeroCopySendInFlightAbortsAndWaits)
{
	const uint64_t abandonedBefore = abandonedZeroCopyBuffers();
	Sink sink;
	auto loop = make(sink, ZcPolicy::On);
	ASSERT_TRUE(loop);
	auto [s, c] = net::loopbackTcpPair();
	ASSERT_TRUE(s.isValid() && c.isValid());
	int small = 64 << 10;
	ASSERT_EQ(setsockopt(s.get(), SOL_SOCKET, SO_SNDBUF, &small, sizeof(small)), 0);
	ConnId id = loop->addConnection(std::move(s)).value();
	fillWithZeroCopySends(*loop, id, 8);
	/* The peer is alive but reads nothing: the destructor must abort the connection to get its buffers back. */
	auto t0 = Clock::now();
	loop.reset();
	EXPECT_LT(Clock::now() - t0, std::chrono::seconds(3));
	EXPECT_EQ(abandonedZeroCopyBuffers(), abandonedBefore) << "a buffer the kernel might still read was kept";
	/* The peer sees the connection end (reset) after what had arrived. */
	int fl = fcntl(c.get(), F_GETFL);
	ASSERT_EQ(fcntl(c.get(), F_SETFL, fl | O_NONBLOCK), 0);
	std::vector<uint8_t> sinkBuf(1 << 20);
	bool ended = false;
	for (auto end = Clock::now() + std::chrono::seconds(5); !ended && Clock::now() < end;) {
		ssize_t r = ::recv(c.get(), sinkBuf.data(), sinkBuf.size(), 0);
		if (r == 0 || (r < 0 && errno != EAGAIN && errno != EWOULDBLOCK))
			ended = true;
		else if (r < 0)
			std::this_thread::sleep_for(std::chrono::milliseconds(1));
	}
	EXPECT_TRUE(ended);
}

TEST_F(ZeroCopyTest, OffAndAKernelWithoutTheOpGivePlainSends)
{
	NetFeatures without = probeNetFeatures();
	without.sendZc = false;
	without.sendZcReportUsage = false;
	struct Case {
		const char *name;
		ZcPolicy zc;
		NetFeatures features;
	};
	for (const Case &k : { Case{ "RMA_NET_ZC=off", ZcPolicy::Off, probeNetFeatures() },
			       Case{ "no SEND_ZC in the kernel", ZcPolicy::On, without } }) {
		SCOPED_TRACE(k.name);
		Sink sink;
		auto loop = make(sink, k.zc, k.features);
		ASSERT_TRUE(loop);
		EXPECT_EQ(loop->describe().find("send_zc"), std::string::npos) << loop->describe();
		auto [s, c] = net::loopbackTcpPair();
		ASSERT_TRUE(s.isValid() && c.isValid());
		ConnId id = loop->addConnection(std::move(s)).value();
		for (uint64_t q = 0; q < 4; ++q)
			ASSERT_TRUE(appendBigFrame(*loop, id, q, twoMiB(q)));
		BigFrameReader reader(c.get(), 4, twoMiB);
		ASSERT_TRUE(drive(*loop, [&] { return reader.done(); }));
		reader.join();
		EXPECT_EQ(reader.good(), 4u) << reader.problem();
		EXPECT_GT(loop->stats().sends, 0u);
		EXPECT_EQ(loop->stats().zcSends, 0u);
		EXPECT_EQ(loop->stats().zcNotifs, 0u);
	}
}

TEST_F(ZeroCopyTest, AutoGoesBackToPlainSendsWhereTheKernelCopies)
{
	if (!probeNetFeatures().sendZcReportUsage)
		GTEST_SKIP() << "the kernel cannot report copies (IORING_SEND_ZC_REPORT_USAGE, 6.2): auto sends plain";
	Sink sink;
	auto loop = make(sink, ZcPolicy::Auto);
	ASSERT_TRUE(loop);
	EXPECT_NE(loop->describe().find("send_zc>=65536 (auto"), std::string::npos) << loop->describe();
	auto [s, c] = net::loopbackTcpPair();
	ASSERT_TRUE(s.isValid() && c.isValid());
	ConnId id = loop->addConnection(std::move(s)).value();
	/* One frame at a time, each sent whole before the next is queued: loopback delivers locally, so copies. */
	constexpr uint64_t kFrames = 16;
	BigFrameReader reader(c.get(), kFrames, twoMiB);
	uint64_t next = 0;
	ASSERT_TRUE(drive(*loop, [&] {
		if (next < kFrames && loop->unsent(id) == 0) {
			EXPECT_TRUE(appendBigFrame(*loop, id, next, twoMiB(next)));
			++next;
		}
		return reader.done();
	}));
	reader.join();
	EXPECT_EQ(reader.good(), kFrames) << reader.problem();
	EXPECT_TRUE(drive(*loop, [&] { return notified(*loop); }));
	const NetLoopStats &st = loop->stats();
	EXPECT_GT(st.zcSends, 0u) << "auto never tried zero-copy";
	EXPECT_GT(st.zcCopied, 0u) << "loopback, yet the kernel reported no copy";
	EXPECT_GT(st.sends - st.zcSends, 0u) << "auto kept zero-copy after the kernel reported a copy";
	EXPECT_LT(st.zcSends, kFrames);
}

TEST_F(ZeroCopyTest, ASocketThatRefusesZeroCopyGetsPlainSends)
{
	Sink sink;
	auto loop = make(sink, ZcPolicy::On);
	ASSERT_TRUE(loop);
	int sv[2];
	ASSERT_EQ(socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv), 0);
	UniqueFd s(sv[0]), c(sv[1]);
	ConnId id = loop->addConnection(std::move(s)).value();
	for (uint64_t q = 0; q < 3; ++q)
		ASSERT_TRUE(appendBigFrame(*loop, id, q, twoMiB(q)));
	BigFrameReader reader(c.get(), 3, twoMiB);
	ASSERT_TRUE(drive(*loop, [&] { return reader.done(); }));
	reader.join();
	EXPECT_EQ(reader.good(), 3u) << reader.problem();
	EXPECT_TRUE(sink.closed.empty()) << "a refused SEND_ZC is no reason to close";
	EXPECT_LE(loop->stats().zcSends, 1u) << "tried again after the socket refused";
	EXPECT_TRUE(drive(*loop, [&] { return notified(*loop); }));
}

/* ---- Choosing a backend ---- */

TEST(NetLoopPolicyTest, ParsesTheKnob)
{
	EXPECT_EQ(parseUringPolicy(nullptr).value(), UringPolicy::Prefer);
	EXPECT_EQ(parseUringPolicy("").value(), UringPolicy::Prefer);
	EXPECT_EQ(parseUringPolicy("auto").value(), UringPolicy::Prefer);
	EXPECT_EQ(parseUringPolicy("off").value(), UringPolicy::Off);
	EXPECT_EQ(parseUringPolicy("require").value(), UringPolicy::Require);
	auto bad = parseUringPolicy("sometimes");
	ASSERT_FALSE(bad.ok());
	EXPECT_EQ(errorClass(bad.code()), RMA_ERR_ARG);
	EXPECT_NE(errorMessage(bad.code()).find("RMA_NET_URING='sometimes'"), std::string::npos);
}

TEST(NetLoopPolicyTest, ParsesTheZeroCopyKnob)
{
	EXPECT_EQ(parseZcPolicy(nullptr).value(), ZcPolicy::Auto);
	EXPECT_EQ(parseZcPolicy("auto").value(), ZcPolicy::Auto);
	EXPECT_EQ(parseZcPolicy("on").value(), ZcPolicy::On);
	EXPECT_EQ(parseZcPolicy("off").value(), ZcPolicy::Off);
	auto bad = parseZcPolicy("yes");
	ASSERT_FALSE(bad.ok());
	EXPECT_EQ(errorClass(bad.code()), RMA_ERR_ARG);
	EXPECT_NE(errorMessage(bad.code()).find("RMA_NET_ZC='yes'"), std::string::npos);
	setenv("RMA_NET_ZC", "off", 1);
	auto env = zcPolicyFromEnvironment();
	unsetenv("RMA_NET_ZC");
	ASSERT_TRUE(env.ok());
	EXPECT_EQ(env.value(), ZcPolicy::Off);
}

TEST(NetLoopPolicyTest, OffForcesThePollBackend)
{
	setenv("RMA_NET_URING", "off", 1);
	auto policy = uringPolicyFromEnvironment();
	unsetenv("RMA_NET_URING");
	ASSERT_TRUE(policy.ok());
	Sink sink;
	NetLoopConfig cfg;
	cfg.policy = policy.value();
	auto loop = makeNetLoop(sink.handler(), cfg);
	ASSERT_TRUE(loop.ok()) << errorMessage(loop.code());
	EXPECT_STREQ(loop.value()->backend(), "poll");
	EXPECT_EQ(loop.value()->describe(), "poll: epoll eventfd_wake");
}

TEST(NetLoopPolicyTest, PreferAndRequireTakeIoUringWhenTheKernelHasIt)
{
	const NetFeatures &f = probeNetFeatures();
	Sink sink;
	NetLoopConfig cfg;
	auto prefer = makeNetLoop(sink.handler(), cfg);
	ASSERT_TRUE(prefer.ok()) << errorMessage(prefer.code());
	EXPECT_STREQ(prefer.value()->backend(), f.uring ? "io_uring" : "poll");
	cfg.policy = UringPolicy::Require;
	auto require = makeNetLoop(sink.handler(), cfg);
	if (*f.firstMissing()) {
		ASSERT_FALSE(require.ok());
		EXPECT_EQ(errorClass(require.code()), RMA_ERR_NOT_SUPPORTED);
		EXPECT_NE(errorMessage(require.code()).find(f.firstMissing()), std::string::npos);
	} else {
		ASSERT_TRUE(require.ok()) << errorMessage(require.code());
		EXPECT_STREQ(require.value()->backend(), "io_uring");
		EXPECT_NE(require.value()->describe().find("defer_taskrun"), std::string::npos);
	}
}

TEST(NetLoopPolicyTest, RefusesBadConfigurations)
{
	Sink sink;
	NetLoopConfig cfg;
	cfg.bufCount = 3;
	auto r = makeNetLoop(sink.handler(), cfg);
	ASSERT_FALSE(r.ok());
	EXPECT_EQ(errorClass(r.code()), RMA_ERR_ARG);
	FrameHandler none;
	EXPECT_FALSE(makeNetLoop(none, NetLoopConfig{}).ok());
	EXPECT_FALSE(makePollLoop(none, NetLoopConfig{}).ok());
}

TEST(NetFeaturesTest, ProbeDescribesWhatItFound)
{
	NetFeatures f = probeNetFeaturesUncached();
	std::string d = f.describe();
	EXPECT_FALSE(d.empty());
	if (!f.uring) {
		EXPECT_NE(d.find("unavailable"), std::string::npos);
		EXPECT_STREQ(f.firstMissing(), "io_uring");
		return;
	}
	EXPECT_EQ(d.rfind("io_uring:", 0), 0u) << d;
	/* Facts the feature table implies: SEND_ZC and multishot came together; DEFER_TASKRUN needs 6.1. */
	EXPECT_EQ(f.recvMultishot, f.sendZc);
	if (f.futexWait) {
		EXPECT_TRUE(f.deferTaskrun) << "FUTEX_WAIT (6.7) without DEFER_TASKRUN (6.1)?";
	}
	std::printf("[ features ] %s\n", d.c_str());
}

/* ---- The assembler alone ---- */

TEST(FrameAssemblerTest, CutsAnyChunkingIntoTheSameFrames)
{
	Bytes all;
	for (uint64_t q = 0; q < 30; ++q) {
		Bytes f = stampedFrame(q, q * 11 % 97);
		all.insert(all.end(), f.begin(), f.end());
	}
	for (std::size_t chunk : { std::size_t{ 1 }, std::size_t{ 7 }, std::size_t{ 32 }, std::size_t{ 33 },
				   std::size_t{ 100 }, all.size() }) {
		FrameAssembler a(1024);
		uint64_t next = 0;
		for (std::size_t off = 0; off < all.size(); off += chunk) {
			std::span<const uint8_t> piece(all.data() + off, std::min(chunk, all.size() - off));
			ASSERT_TRUE(a.feed(piece, [&](std::span<const uint8_t> f) { EXPECT_TRUE(checkStamp(f, next++)); }));
		}
		EXPECT_EQ(next, 30u) << "chunk " << chunk;
		EXPECT_EQ(a.pending(), 0u);
		if (chunk == all.size()) {
			EXPECT_EQ(a.splitFrames(), 0u);
		} else {
			EXPECT_GT(a.splitFrames(), 0u);
		}
	}
}

TEST(FrameAssemblerTest, StopsAtAnOversizedHeaderEvenWhenItIsSplit)
{
	Bytes bad(kHeaderBytes);
	FrameHeader h;
	h.bodyLen = 2000;
	encodeHeader(h, bad.data());
	FrameAssembler a(1024);
	int delivered = 0;
	EXPECT_TRUE(a.feed(std::span<const uint8_t>(bad.data(), 10), [&](auto) { ++delivered; }));
	EXPECT_FALSE(a.feed(std::span<const uint8_t>(bad.data() + 10, 22), [&](auto) { ++delivered; }));
	EXPECT_FALSE(a.feed(stampedFrame(0, 1), [&](auto) { ++delivered; })) << "poisoned for good";
	EXPECT_EQ(delivered, 0);
	FrameAssembler b(1024);
	EXPECT_FALSE(b.feed(bad, [&](auto) { ++delivered; }));
	EXPECT_EQ(delivered, 0);
}

} /* namespace */
