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
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstdlib>
#include <cstring>
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
		auto r = GetParam().poll ? makePollLoop(sink.handler(), cfg)
					 : makeUringLoop(sink.handler(), cfg, probeNetFeatures());
		EXPECT_TRUE(r.ok()) << errorMessage(r.code());
		if (!r.ok())
			return nullptr;
		sink.loop = r.value().get();
		return std::move(r.value());
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
					   Backend{ "poll", true, false, false }),
			 [](const ::testing::TestParamInfo<Backend> &i) { return std::string(i.param.name); });

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
