/* SPDX-License-Identifier: MIT */
/*
 * The inter-host engine (lib/net/engine.h) in one process over loopback:
 * two engines play ranks 0 and 1 of a job on two "hosts". Checks that an
 * authenticated origin's requests reach the window's service in order and
 * its answers come back; that a connection without the job's key, or
 * speaking garbage, never reaches a window; and that a malformed frame on
 * an authenticated connection drops that connection only (the origin's
 * link fails with RMA_ERR_PROC_FAILED, another link keeps working); and
 * that an origin's connection that ends in any way (reset, orderly close,
 * dropped) releases what it held, its parked requests never applied.
 */
#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstring>
#include <deque>
#include <mutex>
#include <thread>
#include <vector>

#include <gtest/gtest.h>

#include "error/error.h"
#include "common/spin_wait.h"
#include "net/engine.h"
#include "net/le.h"

namespace librma::net {
namespace {

constexpr uint64_t kWindow = 77;
constexpr uint64_t kTargetBytes = 128 << 10;

/* A window of two ranks (one per host) whose rank 1 keeps its memory in a vector. */
class FakeWindow final : public WindowService
{
public:
	FakeWindow()
	{
		view.rankInWindow = ranks_;
		view.targets = targets_;
	}
	bool onRequest(const ParsedFrame &f, Replier &reply) noexcept override
	{
		std::lock_guard<std::mutex> g(lock_);
		switch (static_cast<FrameKind>(f.header.kind)) {
		case FrameKind::Put:
			std::memcpy(memory_.data() + f.op.disp, f.data.data(), f.data.size());
			++puts_;
			putsAfterLost_ += lost_.load() >= 0;
			break;
		case FrameKind::Flush:
			reply.ack();
			break;
		case FrameKind::Get:
			/* The reply's bytes tell which request they answer. */
			if (uint8_t *dst = reply.dataInPlace(FrameKind::GetReply, f.type.size * f.op.count, true))
				for (std::size_t i = 0; i < f.type.size * f.op.count; ++i)
					dst[i] = pattern(f.header.seq, i);
			break;
		case FrameKind::Lock:
			/* Held by someone until the origin is lost; granted if asked after that. */
			++lockTries_;
			if (lost_.load() < 0 && !grantLocks_.load())
				return false;
			++lockGrants_;
			reply.ack();
			break;
		default:
			reply.nack(RMA_ERR_NOT_SUPPORTED, 0);
			break;
		}
		return true;
	}
	void onOriginLost(uint32_t rank) noexcept override { lost_.store(static_cast<int>(rank)); }
	std::atomic<int> lost_{ -1 };
	std::atomic<int> lockTries_{ 0 };
	std::atomic<int> lockGrants_{ 0 };
	std::atomic<bool> grantLocks_{ false }; /* grant a LOCK while the origin lives */
	void onReply(const ParsedFrame &f) noexcept override
	{
		if (f.header.kind == static_cast<uint16_t>(FrameKind::Ack))
			acked_.store(f.header.seq);
		if (f.header.kind == static_cast<uint16_t>(FrameKind::Nack))
			lastNack_.store(static_cast<int>(f.word0));
		if (f.header.kind == static_cast<uint16_t>(FrameKind::GetReply)) {
			if (gets_.empty() || gets_.front().seq != f.header.seq || gets_.front().bytes != f.data.size()) {
				++strayReplies_;
				return;
			}
			std::memcpy(gets_.front().dest, f.data.data(), f.data.size());
			gets_.pop_front();
			++copied_;
		}
	}
	/* Gets the origin side expects, oldest first (what RemoteWindow keeps per stream). */
	struct ExpectedGet {
		uint64_t seq;
		uint8_t *dest;
		std::size_t bytes;
	};
	std::deque<ExpectedGet> gets_;
	int copied_ = 0, placed_ = 0, strayReplies_ = 0;
	/* After this many answers, replyDestination() says no more (a window freed mid-reply); < 0: never. */
	int destinationAnswers_ = -1;
	uint8_t *replyDestination(const FrameHeader &h) noexcept override
	{
		if (gets_.empty() || gets_.front().seq != h.seq || gets_.front().bytes != h.bodyLen)
			return nullptr;
		if (destinationAnswers_ == 0) {
			/* Withdrawn, as RemoteWindow's would be once its window is freed; later gets are answered again. */
			destinationAnswers_ = -1;
			gets_.pop_front();
			return nullptr;
		}
		if (destinationAnswers_ > 0)
			--destinationAnswers_;
		return gets_.front().dest;
	}
	void onReplyPlaced(const FrameHeader &h) noexcept override
	{
		ASSERT_FALSE(gets_.empty());
		ASSERT_EQ(gets_.front().seq, h.seq);
		gets_.pop_front();
		++placed_;
	}
	static uint8_t pattern(uint64_t seq, std::size_t i) { return static_cast<uint8_t>(seq * 131 + i * 7 + (i >> 9)); }
	int puts()
	{
		std::lock_guard<std::mutex> g(lock_);
		return puts_;
	}
	uint8_t at(std::size_t i)
	{
		std::lock_guard<std::mutex> g(lock_);
		return memory_[i];
	}
	std::atomic<uint64_t> acked_{ 0 };
	std::atomic<int> lastNack_{ 0 }; /* the error class of the last NACK (0: none) */
	std::atomic<int> putsAfterLost_{ 0 }; /* puts applied after onOriginLost() */

private:
	int32_t ranks_[2] = { 0, 1 };
	TargetView targets_[2] = { { kTargetBytes, false, {} }, { kTargetBytes, false, {} } };
	std::mutex lock_;
	std::vector<uint8_t> memory_ = std::vector<uint8_t>(kTargetBytes);
	int puts_ = 0;
};

std::vector<uint8_t> frame(FrameKind kind, uint64_t seq, std::span<const uint8_t> body, uint32_t origin = 0,
			   uint32_t target = 1)
{
	FrameHeader h;
	h.kind = static_cast<uint16_t>(kind);
	h.bodyLen = static_cast<uint32_t>(body.size());
	h.window = kWindow;
	h.origin = origin;
	h.target = target;
	h.seq = seq;
	std::vector<uint8_t> out(kHeaderBytes);
	encodeHeader(h, out.data());
	out.insert(out.end(), body.begin(), body.end());
	return out;
}

/* The op body and wire type of @bytes contiguous BYTEs at byte @disp. */
std::vector<uint8_t> opHead(uint64_t disp, std::size_t bytes)
{
	std::vector<uint8_t> body(kOpBodyBytes + kWireTypeBytes);
	OpBody ob;
	ob.disp = disp;
	ob.count = 1;
	encodeOpBody(ob, body.data());
	WireType wt;
	wt.basic = 4; /* BYTE */
	wt.size = bytes;
	wt.extent = static_cast<int64_t>(bytes);
	encodeWireType(wt, body.data() + kOpBodyBytes);
	return body;
}

/* A PUT of @bytes at byte @disp. */
std::vector<uint8_t> putFrame(uint64_t seq, uint64_t disp, std::span<const uint8_t> bytes)
{
	std::vector<uint8_t> body = opHead(disp, bytes.size());
	body.insert(body.end(), bytes.begin(), bytes.end());
	return frame(FrameKind::Put, seq, body);
}

/* A GET of @bytes at byte @disp. */
std::vector<uint8_t> getFrame(uint64_t seq, uint64_t disp, std::size_t bytes)
{
	return frame(FrameKind::Get, seq, opHead(disp, bytes));
}

/* Rank @rank of a job of two ranks on two "hosts", listening on loopback. */
EngineConfig loopbackConfig(int rank, int spinUs = 50)
{
	EngineConfig c;
	c.hostOf = { 0, 1 };
	c.interface = "127.0.0.1";
	c.timeoutMs = 2000;
	c.spinUs = spinUs;
	c.rank = rank;
	return c;
}

class EngineTest : public testing::Test
{
protected:
	void SetUp() override
	{
		EndpointCard cards[2];
		for (int r = 0; r < 2; ++r) {
			auto e = Engine::listen(loopbackConfig(r, spinUs_), cards[r]);
			ASSERT_TRUE(e) << errorMessage(e.code());
			engines_[r] = std::move(e.value());
		}
		for (auto &e : engines_)
			ASSERT_EQ(e->setPeers(cards), RMA_SUCCESS);
		ASSERT_EQ(engines_[1]->registerWindow(kWindow, &server_, true), RMA_SUCCESS);
		ASSERT_EQ(engines_[0]->registerWindow(kWindow, &origin_, false), RMA_SUCCESS);
		peer_ = cards[1];
		jobHash_ = cards[0].jobHash; /* rank 0's: the job's */
		std::memcpy(secret_, cards[0].secret, sizeof secret_);
	}
	void TearDown() override
	{
		for (auto &e : engines_)
			if (e)
				e->stop();
	}
	/* Pump @link until @done or 5 s pass. */
	template<typename Done>
	bool pumpUntil(Link &link, Done &&done)
	{
		auto end = std::chrono::steady_clock::now() + std::chrono::seconds(5);
		while (!done() && std::chrono::steady_clock::now() < end) {
			if (link.pump() != RMA_SUCCESS)
				return done();
			std::this_thread::yield();
		}
		return done();
	}
	/* A FLUSH behind everything sent on @l; true once its ACK came back. */
	bool flushed(Link &l)
	{
		const uint64_t flush = l.nextSeq();
		EXPECT_EQ(l.send(frame(FrameKind::Flush, flush, {})), RMA_SUCCESS);
		return pumpUntil(l, [&] { return origin_.acked_.load() == flush; });
	}
	/* Every get the origin expected was answered by its own reply, @n of them. */
	void expectEveryGetAnswered(std::size_t n)
	{
		EXPECT_TRUE(origin_.gets_.empty());
		EXPECT_EQ(origin_.strayReplies_, 0);
		EXPECT_EQ(origin_.placed_ + origin_.copied_, static_cast<int>(n));
	}
	/* A raw TCP connection to rank 1's listener. */
	int rawConnect()
	{
		int fd = socket(AF_INET, SOCK_STREAM, 0);
		sockaddr_in a{};
		a.sin_family = AF_INET;
		a.sin_addr.s_addr = peer_.ipv4;
		a.sin_port = peer_.port;
		EXPECT_EQ(connect(fd, reinterpret_cast<sockaddr *>(&a), sizeof(a)), 0);
		return fd;
	}

	/*
	 * authenticatedConnect(), then a LOCK the window cannot grant yet:
	 * parked, and retried on every pass. @fd: the connection (-1 on failure).
	 */
	void connectWithAParkedLock(int &fd)
	{
		fd = authenticatedConnect();
		ASSERT_GE(fd, 0);
		uint8_t body[8] = {};
		le::store<uint32_t>(body, RMA_LOCK_EXCLUSIVE);
		auto lock = frame(FrameKind::Lock, 1, body);
		ASSERT_EQ(write(fd, lock.data(), lock.size()), static_cast<ssize_t>(lock.size()));
		auto end = std::chrono::steady_clock::now() + std::chrono::seconds(10);
		while (server_.lockTries_.load() == 0 && std::chrono::steady_clock::now() < end)
			std::this_thread::sleep_for(std::chrono::milliseconds(1));
		ASSERT_GT(server_.lockTries_.load(), 0);
	}

	/*
	 * A connection to rank 1 that authenticated as rank 0 (a raw fd, so
	 * the test decides how it ends), its PROOF signed by @signer (rank 0's
	 * own identity by default).
	 */
	int authenticatedConnect(const RankIdentity *signer = nullptr)
	{
		auto key = AuthKey::derive(secret_);
		EXPECT_TRUE(key) << errorMessage(key.code());
		if (!key)
			return -1;
		int fd = rawConnect();
		ClientConfig cc;
		cc.jobHash = jobHash_;
		cc.worldSize = 2;
		cc.leader = 0;
		cc.rank = 0;
		cc.serverLeader = 1;
		cc.serverRank = 1;
		cc.identity = signer ? signer : engines_[0]->identity(); /* rank 0's own key: the connection is rank 0's */
		auto peer = authenticateClient(fd, key.value(), cc);
		if (signer) {
			close(fd);
			return peer ? 0 : -1;
		}
		EXPECT_TRUE(peer) << errorMessage(peer.code());
		return fd;
	}
	/* Wait up to 5 s for rank 1's window to hear that origin rank 0 is gone. */
	bool waitLost()
	{
		auto end = std::chrono::steady_clock::now() + std::chrono::seconds(5);
		while (server_.lost_.load() < 0 && std::chrono::steady_clock::now() < end)
			std::this_thread::sleep_for(std::chrono::milliseconds(5));
		return server_.lost_.load() == 0;
	}

	int spinUs_ = 50; /* RMA_NET_SPIN_US of both engines */
	std::unique_ptr<Engine> engines_[2];
	FakeWindow server_, origin_;
	EndpointCard peer_;
	uint64_t jobHash_ = 0;
	uint8_t secret_[kSecretBytes] = {};
};

TEST_F(EngineTest, AuthenticatedRequestsAreAppliedInOrderAndAnswered)
{
	auto link = engines_[0]->link(1);
	ASSERT_TRUE(link) << errorMessage(link.code());
	Link &l = *link.value();
	for (int i = 0; i < 100; ++i) {
		uint8_t v = static_cast<uint8_t>(i);
		ASSERT_EQ(l.send(putFrame(l.nextSeq(), 8, std::span(&v, 1))), RMA_SUCCESS);
	}
	const uint64_t flush = l.nextSeq();
	ASSERT_EQ(l.send(frame(FrameKind::Flush, flush, {})), RMA_SUCCESS);
	ASSERT_TRUE(pumpUntil(l, [&] { return origin_.acked_.load() == flush; }));
	/* The ACK came after all 100 puts, applied in order: the last one wins. */
	EXPECT_EQ(server_.puts(), 100);
	EXPECT_EQ(server_.at(8), 99);
	EXPECT_FALSE(engines_[1]->serverBackend().empty());
}

/*
 * Requests go to a window's server on the target's host only: a process
 * that knows the window but does not serve it refuses them (RMA_ERR_WIN),
 * or it would keep a second set of lock books beside the server's.
 */
TEST_F(EngineTest, AProcessThatDoesNotServeAWindowRefusesItsRequests)
{
	FakeWindow notServed, originSide;
	ASSERT_EQ(engines_[1]->registerWindow(kWindow + 1, &notServed, false), RMA_SUCCESS);
	ASSERT_EQ(engines_[0]->registerWindow(kWindow + 1, &originSide, false), RMA_SUCCESS);
	auto link = engines_[0]->link(1);
	ASSERT_TRUE(link) << errorMessage(link.code());
	Link &l = *link.value();
	uint8_t v = 7;
	auto put = putFrame(l.nextSeq(), 8, std::span(&v, 1));
	FrameHeader h = decodeHeader(put.data());
	h.window = kWindow + 1;
	encodeHeader(h, put.data());
	ASSERT_EQ(l.send(put), RMA_SUCCESS);
	EXPECT_TRUE(pumpUntil(l, [&] { return originSide.lastNack_.load() != 0; }));
	EXPECT_EQ(originSide.lastNack_.load(), RMA_ERR_WIN);
	EXPECT_EQ(notServed.puts(), 0);
	engines_[1]->unregisterWindow(kWindow + 1);
	engines_[0]->unregisterWindow(kWindow + 1);
}

/* Engines whose server polls for half a second after its last frame. */
class EngineSpinTest : public EngineTest
{
protected:
	void SetUp() override
	{
		spinUs_ = 500'000;
		EngineTest::SetUp();
	}
};

/*
 * A server that parked and was woken by a frame polls again for
 * RMA_NET_SPIN_US: the round trips that follow find it awake. (It used to
 * park again after every frame once it had parked the first time, so every
 * later request paid a wake-up.)
 */
TEST_F(EngineSpinTest, AServerWokenByAFrameSpinsAgain)
{
	auto link = engines_[0]->link(1);
	ASSERT_TRUE(link) << errorMessage(link.code());
	Link &l = *link.value();
	ASSERT_TRUE(flushed(l));
	/* Idle for longer than the spin: it parks. */
	auto end = std::chrono::steady_clock::now() + std::chrono::seconds(10);
	while (engines_[1]->serverWaits() == 0 && std::chrono::steady_clock::now() < end)
		std::this_thread::sleep_for(std::chrono::milliseconds(10));
	const uint64_t parked = engines_[1]->serverWaits();
	ASSERT_GE(parked, 1u);
	/* Ten round trips, each well within the spin of the one before. */
	for (int i = 0; i < 10; ++i)
		ASSERT_TRUE(flushed(l));
	/* The first woke it; the others found it polling (one more wait: slack for a stalled machine). */
	EXPECT_LE(engines_[1]->serverWaits() - parked, 1u);
}

/*
 * On an oversubscribed host the server's idle passes yield the CPU only
 * while a thread of its process waits in librma and yields too (it gives
 * the CPU back soon); never to a rank that computes, which would keep it
 * for a whole time slice.
 */
TEST_F(EngineTest, AnOversubscribedServerYieldsOnlyToAWaitThatYields)
{
	auto link = engines_[0]->link(1);
	ASSERT_TRUE(link) << errorMessage(link.code());
	Link &l = *link.value();
	/* Restored however the test ends, and the waiter below joined: a failed ASSERT returns early. */
	struct Restore {
		bool was = SpinWait::oversubscribed();
		std::atomic<bool> stop{ false };
		std::thread waiter;
		~Restore()
		{
			stop = true;
			if (waiter.joinable())
				waiter.join();
			SpinWait::setOversubscribed(was);
		}
	} restore;
	SpinWait::setOversubscribed(true);
	ASSERT_FALSE(SpinWait::yieldingHere());
	const uint64_t before = engines_[1]->serverYields();
	for (int i = 0; i < 20; ++i)
		ASSERT_TRUE(flushed(l));
	/* Nothing of this process waits in librma: the server never yielded. */
	EXPECT_EQ(engines_[1]->serverYields(), before);

	std::atomic<bool> &stop = restore.stop;
	restore.waiter = std::thread([&stop] {
		for (SpinWait wait; !stop.load(std::memory_order_relaxed); wait.once()) {
		}
	});
	auto end = std::chrono::steady_clock::now() + std::chrono::seconds(10);
	while (!SpinWait::yieldingHere() && std::chrono::steady_clock::now() < end)
		std::this_thread::sleep_for(std::chrono::milliseconds(1));
	EXPECT_TRUE(SpinWait::yieldingHere());
	/* Traffic, with idle passes between: now they yield. */
	while (engines_[1]->serverYields() == before && std::chrono::steady_clock::now() < end)
		ASSERT_TRUE(flushed(l));
	EXPECT_GT(engines_[1]->serverYields(), before);
	stop = true;
	restore.waiter.join();
	/* The wait is over: the hint is gone with it. */
	EXPECT_FALSE(SpinWait::yieldingHere());
}

TEST_F(EngineTest, ConnectionsWithoutTheKeyNeverReachAWindow)
{
	/* Garbage instead of a HELLO. */
	int fd = rawConnect();
	const char junk[] = "GET / HTTP/1.0\r\n\r\n0123456789abcdef0123456789abcdef";
	(void)!write(fd, junk, sizeof junk);
	/* A well-formed PUT without any handshake. */
	int fd2 = rawConnect();
	uint8_t v = 9;
	auto put = putFrame(1, 0, std::span(&v, 1));
	(void)!write(fd2, put.data(), put.size());
	/* The server closes both: read() returns 0 (or an error), never an answer. */
	for (int s : { fd, fd2 }) {
		char buf[64];
		timeval tv{ 5, 0 };
		setsockopt(s, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
		EXPECT_LE(read(s, buf, sizeof buf), 0);
		close(s);
	}
	EXPECT_EQ(server_.puts(), 0);
	/* The listener still serves the job. */
	auto link = engines_[0]->link(1);
	ASSERT_TRUE(link) << errorMessage(link.code());
}

TEST_F(EngineTest, SilentConnectionsHoldUpNoOtherHandshake)
{
	/*
	 * Two connections that never say a word. An acceptor that
	 * authenticated one connection at a time would wait out each one's
	 * step (kAuthStepTimeoutNs, 1 s) before reading our HELLO, and our
	 * own handshake, bounded by the same step, would time out first.
	 */
	int silent[2] = { rawConnect(), rawConnect() };
	auto link = engines_[0]->link(1);
	ASSERT_TRUE(link) << errorMessage(link.code());
	uint8_t v = 5;
	Link &l = *link.value();
	ASSERT_EQ(l.send(putFrame(l.nextSeq(), 3, std::span(&v, 1))), RMA_SUCCESS);
	const uint64_t flush = l.nextSeq();
	ASSERT_EQ(l.send(frame(FrameKind::Flush, flush, {})), RMA_SUCCESS);
	ASSERT_TRUE(pumpUntil(l, [&] { return origin_.acked_.load() == flush; }));
	EXPECT_EQ(server_.at(3), 5);
	/* The silent ones are closed when their step runs out, never answered. */
	for (int s : silent) {
		char buf[64];
		timeval tv{ 5, 0 };
		setsockopt(s, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
		EXPECT_LE(read(s, buf, sizeof buf), 0);
		close(s);
	}
}

TEST_F(EngineTest, AnotherJobsKeyIsRefused)
{
	/* An engine of "another job": its own secret, the same addresses. */
	EndpointCard cards[2];
	auto stranger = Engine::listen(loopbackConfig(0), cards[0]);
	ASSERT_TRUE(stranger) << errorMessage(stranger.code());
	cards[1] = peer_;
	cards[1].jobHash = 0;
	std::memset(cards[1].secret, 0, sizeof cards[1].secret);
	/* Our job hash (so the HELLO passes that check), but not our key. */
	cards[0].jobHash = jobHash_;
	ASSERT_EQ(stranger.value()->setPeers(cards), RMA_SUCCESS);
	auto link = stranger.value()->link(1);
	ASSERT_FALSE(link);
	EXPECT_EQ(errorClass(link.code()), RMA_ERR_INTERN) << errorMessage(link.code());
	EXPECT_EQ(server_.puts(), 0);
	stranger.value()->stop();
}

TEST_F(EngineTest, AMemberPosingAsAnotherRankIsRefused)
{
	/*
	 * A process that holds the job's key (so its MAC verifies) claims to
	 * be rank 0 but signs with a key of its own: the server refuses it,
	 * and rank 0 itself still connects.
	 */
	auto other = RankIdentity::generate();
	ASSERT_TRUE(other) << errorMessage(other.code());
	EXPECT_EQ(authenticatedConnect(&other.value()), -1) << "a PROOF signed by another key was taken";
	EXPECT_EQ(server_.puts(), 0);
	int fd = authenticatedConnect();
	ASSERT_GE(fd, 0);
	close(fd);
}

TEST_F(EngineTest, ABrokenConnectionReleasesWhatItsOriginHeld)
{
	/* An authenticated origin (rank 0) whose connection then breaks (RST: its process died). */
	int fd = authenticatedConnect();
	ASSERT_GE(fd, 0);
	linger hard{ 1, 0 };
	setsockopt(fd, SOL_SOCKET, SO_LINGER, &hard, sizeof hard);
	close(fd);
	EXPECT_TRUE(waitLost());
}

TEST_F(EngineTest, AnOrderlyCloseReleasesWhatItsOriginHeldToo)
{
	/* A killed process's kernel closes its sockets with a FIN, as a finished one does: both release. */
	int fd = authenticatedConnect();
	ASSERT_GE(fd, 0);
	close(fd);
	EXPECT_TRUE(waitLost());
}

TEST_F(EngineTest, AParkedRequestOfALostOriginIsNeverApplied)
{
	int fd = -1;
	connectWithAParkedLock(fd);
	if (HasFatalFailure())
		return;
	/* Its origin dies: the parked LOCK goes with its connection, before the window releases what it held. */
	linger hard{ 1, 0 };
	setsockopt(fd, SOL_SOCKET, SO_LINGER, &hard, sizeof hard);
	close(fd);
	ASSERT_TRUE(waitLost());
	/* FakeWindow would grant it now: it must never be asked again. */
	std::this_thread::sleep_for(std::chrono::milliseconds(100));
	EXPECT_EQ(server_.lockGrants_.load(), 0);
}

/*
 * Back-pressure: requests parked behind a LOCK that cannot be granted yet
 * are kept up to Engine::kParkedPauseBytes; then the server stops reading
 * the connection, and the origin's sends block instead of the server's
 * memory growing. Once the lock is granted every put is applied, in order.
 */
TEST_F(EngineTest, AConnectionWhoseParkedRequestsPileUpIsNoLongerRead)
{
	int fd = -1;
	connectWithAParkedLock(fd);
	if (HasFatalFailure())
		return;
	auto end = std::chrono::steady_clock::now() + std::chrono::seconds(10);

	/* Puts of 60 000 bytes until the socket stays full for 200 ms (or 48 MiB went: no back-pressure). */
	ASSERT_EQ(fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK), 0);
	const std::vector<uint8_t> data(60000, 0x5a);
	std::vector<uint8_t> all;
	std::size_t written = 0;
	uint64_t seq = 2;
	auto stuckSince = std::chrono::steady_clock::time_point{};
	while (written < (std::size_t{ 48 } << 20) && std::chrono::steady_clock::now() < end) {
		if (written == all.size()) {
			auto f = putFrame(seq++, 0, data);
			all.insert(all.end(), f.begin(), f.end());
		}
		ssize_t w = ::send(fd, all.data() + written, all.size() - written, MSG_NOSIGNAL);
		if (w > 0) {
			written += static_cast<std::size_t>(w);
			stuckSince = {};
			continue;
		}
		ASSERT_TRUE(w < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) << std::strerror(errno);
		const auto now = std::chrono::steady_clock::now();
		if (stuckSince == std::chrono::steady_clock::time_point{})
			stuckSince = now;
		else if (now - stuckSince > std::chrono::milliseconds(200))
			break;
		std::this_thread::sleep_for(std::chrono::milliseconds(1));
	}
	EXPECT_LT(written, std::size_t{ 32 } << 20) << "the server kept reading what it could only park";
	EXPECT_EQ(server_.puts(), 0);

	/* Granted: the rest goes out, and every put is applied. */
	server_.grantLocks_.store(true);
	ASSERT_EQ(fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) & ~O_NONBLOCK), 0);
	while (written < all.size()) {
		ssize_t w = ::send(fd, all.data() + written, all.size() - written, MSG_NOSIGNAL);
		ASSERT_GT(w, 0) << std::strerror(errno);
		written += static_cast<std::size_t>(w);
	}
	const int want = static_cast<int>(seq - 2);
	end = std::chrono::steady_clock::now() + std::chrono::seconds(20);
	while (server_.puts() < want && std::chrono::steady_clock::now() < end)
		std::this_thread::sleep_for(std::chrono::milliseconds(1));
	EXPECT_EQ(server_.puts(), want);
	EXPECT_EQ(server_.lockGrants_.load(), 1);
	close(fd);
}

TEST_F(EngineTest, AMalformedFrameDropsOnlyItsConnection)
{
	auto link = engines_[0]->link(1);
	ASSERT_TRUE(link) << errorMessage(link.code());
	Link &l = *link.value();
	/* A PUT whose footprint leaves the target: a NACK, not a write. */
	uint8_t v = 1;
	ASSERT_EQ(l.send(putFrame(l.nextSeq(), kTargetBytes, std::span(&v, 1))), RMA_SUCCESS);
	/* A PUT claiming to come from a rank of the server's own host: the stream cannot be trusted. */
	auto bad = putFrame(l.nextSeq(), 0, std::span(&v, 1));
	le::store<uint32_t>(bad.data() + 16, 1); /* origin = rank 1 (the server's host) */
	ASSERT_EQ(l.send(bad), RMA_SUCCESS);
	ASSERT_TRUE(pumpUntil(l, [&] { return l.failed(); }));
	int cls = errorClass(l.error());
	EXPECT_EQ(cls, RMA_ERR_PROC_FAILED) << errorMessage(l.error());
	EXPECT_EQ(server_.puts(), 0);
	/* Dropped, it can never unlock: what it held is released. */
	EXPECT_TRUE(waitLost());
}

/*
 * A bulk connection (kPurposeBulk) takes PUT frames larger than the stream's
 * 64 KiB, received whole; its ACKs are the link's own (the window's stream
 * sequence is not touched), its NACKs reach their window too (the window
 * reports its own refusals).
 */
TEST_F(EngineTest, ABulkLinkCarriesLargePutsAndAnswersItsFlush)
{
	auto stream = engines_[0]->link(1); /* the server takes bulk connections only beside the origin's stream */
	ASSERT_TRUE(stream);
	auto link = engines_[0]->bulkLink(1, 0);
	ASSERT_TRUE(link) << errorMessage(link.code());
	Link &b = *link.value();
	EXPECT_TRUE(b.bulk());
	std::vector<uint8_t> data(100 << 10);
	for (std::size_t i = 0; i < data.size(); ++i)
		data[i] = static_cast<uint8_t>(i * 7 + (i >> 11));
	ASSERT_EQ(b.send(putFrame(b.nextSeq(), 1000, data)), RMA_SUCCESS);
	/* Past the target's end: refused, nothing written. */
	ASSERT_EQ(b.send(putFrame(b.nextSeq(), kTargetBytes - 10, std::span(data).first(20))), RMA_SUCCESS);
	const uint64_t flush = b.nextSeq();
	ASSERT_EQ(b.send(frame(FrameKind::Flush, flush, {})), RMA_SUCCESS);
	ASSERT_TRUE(pumpUntil(b, [&] { return b.acked() >= flush; })) << errorMessage(b.error());
	EXPECT_EQ(server_.puts(), 1);
	std::size_t wrong = 0;
	for (std::size_t i = 0; i < data.size(); ++i)
		wrong += server_.at(1000 + i) != data[i];
	EXPECT_EQ(wrong, 0u);
	EXPECT_EQ(origin_.acked_.load(), 0u) << "a bulk link's ACK reached the window's stream";
	EXPECT_EQ(origin_.lastNack_.load(), RMA_ERR_RMA_RANGE) << "the refusal did not reach its window";
	EXPECT_GE(Link::bulkOfSeq(flush), 1u) << "bulk sequence numbers are apart from the stream's";
	/* The same frame on the ordered stream is too long for it: that connection is dropped. */
	ASSERT_EQ(stream.value()->send(putFrame(stream.value()->nextSeq(), 1000, data)), RMA_SUCCESS);
	EXPECT_TRUE(pumpUntil(*stream.value(), [&] { return stream.value()->failed(); }));
	EXPECT_EQ(server_.puts(), 1);
}

/*
 * A bulk connection carries puts and flushes only: anything else (here a
 * LOCK) drops it, and, holding no locks, its end releases nothing of its
 * origin's (whose ordered stream lives on). The next bulkLink() replaces
 * it while the stream lives, never after.
 */
TEST_F(EngineTest, ABulkConnectionThatSendsAnythingButPutsIsDroppedAlone)
{
	auto stream = engines_[0]->link(1);
	ASSERT_TRUE(stream);
	auto link = engines_[0]->bulkLink(1, 1);
	ASSERT_TRUE(link) << errorMessage(link.code());
	Link &b = *link.value();
	uint8_t body[8] = {};
	le::store<uint32_t>(body, RMA_LOCK_EXCLUSIVE);
	ASSERT_EQ(b.send(frame(FrameKind::Lock, b.nextSeq(), body)), RMA_SUCCESS);
	ASSERT_TRUE(pumpUntil(b, [&] { return b.failed(); }));
	EXPECT_EQ(server_.lockTries_.load(), 0);
	std::this_thread::sleep_for(std::chrono::milliseconds(50));
	EXPECT_EQ(server_.lost_.load(), -1) << "a bulk connection's end released its origin's locks";
	EXPECT_TRUE(flushed(*stream.value()));
	/* The stream lives: the failed bulk link is replaced by a working one, the old one stays failed. */
	auto again = engines_[0]->bulkLink(1, 1);
	ASSERT_TRUE(again) << errorMessage(again.code());
	Link &n = *again.value();
	EXPECT_NE(&n, &b);
	EXPECT_TRUE(b.failed());
	const uint8_t v[4] = { 1, 2, 3, 4 };
	ASSERT_EQ(n.send(putFrame(n.nextSeq(), 64, v)), RMA_SUCCESS);
	const uint64_t flush = n.nextSeq();
	ASSERT_EQ(n.send(frame(FrameKind::Flush, flush, {})), RMA_SUCCESS);
	ASSERT_TRUE(pumpUntil(n, [&] { return n.acked() >= flush; })) << errorMessage(n.error());
	EXPECT_EQ(server_.at(66), 3);
	EXPECT_EQ(engines_[0]->bulkLink(1, 1).value(), &n) << "a working bulk link was replaced";
	/* One this side gave up (a flush it never answered) is not replaced: the server may still apply its puts. */
	n.abort("test");
	auto abandoned = engines_[0]->bulkLink(1, 1);
	ASSERT_FALSE(abandoned);
	EXPECT_EQ(abandoned.code(), n.error());
	/* Once the stream is lost, a failed bulk link is not replaced either: the stream's error. */
	auto other = engines_[0]->bulkLink(1, 0);
	ASSERT_TRUE(other) << errorMessage(other.code());
	ASSERT_EQ(other.value()->send(frame(FrameKind::Lock, other.value()->nextSeq(), body)), RMA_SUCCESS);
	ASSERT_TRUE(pumpUntil(*other.value(), [&] { return other.value()->failed(); }));
	stream.value()->abort("test");
	auto lost = engines_[0]->bulkLink(1, 0);
	ASSERT_FALSE(lost);
	EXPECT_EQ(lost.code(), stream.value()->error());
}

/*
 * A bulk connection from an origin whose stream is not open at the server
 * (it ended there, and with it the origin's locks) is closed unread: its
 * puts would land in another holder's epoch.
 */
TEST_F(EngineTest, ABulkConnectionWithoutItsOriginsStreamIsRefused)
{
	auto link = engines_[0]->bulkLink(1, 0);
	ASSERT_TRUE(link) << errorMessage(link.code());
	Link &b = *link.value();
	const uint8_t v[4] = { 9, 9, 9, 9 };
	ASSERT_EQ(b.send(putFrame(b.nextSeq(), 64, v)), RMA_SUCCESS);
	const uint64_t flush = b.nextSeq();
	(void)b.send(frame(FrameKind::Flush, flush, {}));
	EXPECT_TRUE(pumpUntil(b, [&] { return b.failed(); })) << "the server kept a bulk connection without a stream";
	EXPECT_LT(b.acked(), flush);
	EXPECT_EQ(server_.puts(), 0);
	EXPECT_NE(server_.at(64), 9);
}

/*
 * An origin whose stream ends (its process died) has its locks released
 * there; its puts still in flight on its bulk connections belong to the
 * epoch it held and must not land after that (in the next holder's): the
 * server stops applying them first.
 */
TEST_F(EngineTest, ABulkPutInFlightIsNeverAppliedAfterItsOriginsRelease)
{
	int fd = authenticatedConnect(); /* rank 0's stream */
	ASSERT_GE(fd, 0);
	auto link = engines_[0]->bulkLink(1, 0); /* rank 0's bulk connection */
	ASSERT_TRUE(link) << errorMessage(link.code());
	Link &b = *link.value();
	std::vector<uint8_t> data(100 << 10, 0x5a);
	std::atomic<bool> stop{ false };
	std::thread sender([&] {
		/* Puts until the link fails (the server dropped it) or 10 s pass. */
		auto end = std::chrono::steady_clock::now() + std::chrono::seconds(10);
		while (!stop.load() && std::chrono::steady_clock::now() < end)
			if (b.send(putFrame(b.nextSeq(), 0, data)) != RMA_SUCCESS)
				break;
	});
	auto end = std::chrono::steady_clock::now() + std::chrono::seconds(5);
	while (server_.puts() < 3 && std::chrono::steady_clock::now() < end)
		std::this_thread::sleep_for(std::chrono::microseconds(100));
	EXPECT_GE(server_.puts(), 3);
	/* The stream breaks (RST) while puts stream in on the bulk connection. */
	linger hard{ 1, 0 };
	setsockopt(fd, SOL_SOCKET, SO_LINGER, &hard, sizeof hard);
	close(fd);
	EXPECT_TRUE(waitLost());
	std::this_thread::sleep_for(std::chrono::milliseconds(100));
	stop.store(true);
	sender.join();
	EXPECT_EQ(server_.putsAfterLost_.load(), 0) << "a put arrived on the bulk connection after its origin's release";
	EXPECT_TRUE(pumpUntil(b, [&] { return b.failed(); })) << "the server kept the lost origin's bulk connection";
}

/*
 * Destination k (reply size + 64 guard bytes of 0xEE) holds exactly the
 * reply to request seqs[k], and nothing past its end was written.
 */
void expectEachReplyInItsPlace(const std::vector<std::vector<uint8_t>> &dest, const std::vector<uint64_t> &seqs)
{
	for (std::size_t k = 0; k < dest.size(); ++k) {
		const std::size_t n = dest[k].size() - 64;
		std::size_t wrong = 0;
		for (std::size_t i = 0; i < n; ++i)
			wrong += dest[k][i] != FakeWindow::pattern(seqs[k], i);
		for (std::size_t i = n; i < n + 64; ++i)
			wrong += dest[k][i] != 0xEE;
		EXPECT_EQ(wrong, 0u) << "reply " << k << " (" << n << " bytes)";
	}
}

TEST_F(EngineTest, LargeGetRepliesAreReceivedInPlaceAndSmallOnesCopied)
{
	auto link = engines_[0]->link(1);
	ASSERT_TRUE(link) << errorMessage(link.code());
	Link &l = *link.value();
	/* Sizes around the in-place threshold (16 KiB), the largest reply (64 KiB), some twice in a row. */
	const std::size_t sizes[] = { 65536, 65536, 8, 16384, 16383, 40000, 1, 65536, 20000, 16385 };
	std::vector<std::vector<uint8_t>> dest;
	std::vector<uint64_t> seqs;
	int large = 0;
	for (int round = 0; round < 3; ++round) {
		for (std::size_t n : sizes) {
			dest.emplace_back(n + 64, 0xEE);
			const uint64_t seq = l.nextSeq();
			seqs.push_back(seq);
			origin_.gets_.push_back({ seq, dest.back().data(), n });
			if (n >= 16384) {
				++large;
				l.expectLargeReply(seq);
			}
			ASSERT_EQ(l.send(getFrame(seq, 0, n)), RMA_SUCCESS);
		}
		/* A flush in between: an ACK after the replies, on the same stream. */
		ASSERT_TRUE(flushed(l));
	}
	expectEveryGetAnswered(seqs.size());
	/* Every reply of 16 KiB or more went in place; none smaller did. */
	EXPECT_EQ(origin_.placed_, large);
	EXPECT_EQ(l.directFrames(), static_cast<uint64_t>(large));
	expectEachReplyInItsPlace(dest, seqs);
}

TEST_F(EngineTest, AReplyWhoseDestinationIsWithdrawnIsReadAndDropped)
{
	auto link = engines_[0]->link(1);
	ASSERT_TRUE(link) << errorMessage(link.code());
	Link &l = *link.value();
	/* Its window is freed after the first read into it: the rest of its bytes must go nowhere. */
	std::vector<uint8_t> first(65536 + 64, 0xEE), second(65536, 0);
	const uint64_t a = l.nextSeq(), b = l.nextSeq();
	origin_.gets_.push_back({ a, first.data(), 65536 });
	origin_.gets_.push_back({ b, second.data(), 65536 });
	origin_.destinationAnswers_ = 1;
	l.expectLargeReply(a);
	l.expectLargeReply(b);
	ASSERT_EQ(l.send(getFrame(a, 0, 65536)), RMA_SUCCESS);
	ASSERT_EQ(l.send(getFrame(b, 0, 65536)), RMA_SUCCESS);
	/* The stream stays in step: the next reply and the ACK still arrive whole. */
	ASSERT_TRUE(flushed(l));
	EXPECT_FALSE(l.failed()) << errorMessage(l.error());
	expectEveryGetAnswered(1); /* the withdrawn one is neither placed nor copied */
	std::size_t wrong = 0;
	for (std::size_t i = 0; i < second.size(); ++i)
		wrong += second[i] != FakeWindow::pattern(b, i);
	EXPECT_EQ(wrong, 0u);
	/* What went into the withdrawn destination is a prefix of its reply; nothing went past its end. */
	std::size_t written = 0;
	while (written < 65536 && first[written] == FakeWindow::pattern(a, written))
		++written;
	for (std::size_t i = written; i < first.size(); ++i)
		wrong += first[i] != 0xEE;
	EXPECT_EQ(wrong, 0u);
	EXPECT_LT(written, 65536u);
}

TEST_F(EngineTest, AnUnannouncedLargeReplyIsStillPlacedWhole)
{
	/*
	 * Without expectLargeReply() the link reads in big pieces: a large
	 * reply whose start arrived with earlier frames is finished in place
	 * (its first bytes copied from the receive buffer), or copied whole.
	 */
	auto link = engines_[0]->link(1);
	ASSERT_TRUE(link) << errorMessage(link.code());
	Link &l = *link.value();
	std::vector<std::vector<uint8_t>> dest;
	std::vector<uint64_t> seqs;
	for (int round = 0; round < 20; ++round) {
		for (std::size_t n : { std::size_t{ 100 }, std::size_t{ 65536 }, std::size_t{ 30000 } }) {
			dest.emplace_back(n + 64, 0xEE);
			const uint64_t seq = l.nextSeq();
			seqs.push_back(seq);
			origin_.gets_.push_back({ seq, dest.back().data(), n });
			ASSERT_EQ(l.send(getFrame(seq, 0, n)), RMA_SUCCESS);
		}
	}
	ASSERT_TRUE(flushed(l));
	expectEveryGetAnswered(seqs.size());
	/* 1.9 MB of replies read 256 KiB at a time: some large one is cut by a read's end. */
	EXPECT_GT(origin_.placed_, 0);
	expectEachReplyInItsPlace(dest, seqs);
}

TEST_F(EngineTest, LargeFramesLeaveWholeFromTheirPartsWhenTheSocketFills)
{
	/*
	 * queue() with header, op body and data in three buffers: frames of
	 * 16 KiB+ go out in one sendmsg() each, resumed inside whichever part a
	 * full socket cut (4 MiB of puts before anyone reads them), and small
	 * ones through the batch in between.
	 */
	auto link = engines_[0]->link(1);
	ASSERT_TRUE(link) << errorMessage(link.code());
	Link &l = *link.value();
	constexpr std::size_t kBig = 60000;
	std::vector<uint8_t> data(kBig), mirror(2 * 65536);
	int sent = 0;
	for (int i = 0; i < 70; ++i) {
		const std::size_t n = i % 5 == 4 ? 1000 : kBig; /* some small ones go through the batch */
		const uint64_t disp = (i % 2) * 65536;
		for (std::size_t j = 0; j < n; ++j)
			data[j] = static_cast<uint8_t>(i * 7 + j * 13 + (j >> 8));
		std::memcpy(mirror.data() + disp, data.data(), n);
		auto whole = putFrame(l.nextSeq(), disp, std::span(data.data(), n));
		/* The same frame in three pieces: header, op body + type, data. */
		const std::span<const uint8_t> all(whole);
		ASSERT_EQ(l.queue(all.first(kHeaderBytes), all.subspan(kHeaderBytes, kOpBodyBytes + kWireTypeBytes),
				  all.subspan(kHeaderBytes + kOpBodyBytes + kWireTypeBytes)),
			  RMA_SUCCESS);
		++sent;
	}
	const uint64_t flush = l.nextSeq();
	ASSERT_EQ(l.queue(std::span<const uint8_t>(frame(FrameKind::Flush, flush, {})), {}), RMA_SUCCESS);
	ASSERT_EQ(l.push(), RMA_SUCCESS);
	ASSERT_TRUE(pumpUntil(l, [&] { return origin_.acked_.load() == flush; }));
	EXPECT_EQ(server_.puts(), sent);
	/* Applied in order, every byte of every frame: the target holds what the puts left, in order. */
	std::size_t wrong = 0;
	for (std::size_t j = 0; j < mirror.size(); ++j)
		wrong += server_.at(j) != mirror[j];
	EXPECT_EQ(wrong, 0u);
}

} /* namespace */
} /* namespace librma::net */
