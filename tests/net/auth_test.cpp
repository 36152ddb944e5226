/* SPDX-License-Identifier: MIT */
/*
 * The connection handshake (lib/net/auth.h): the state machine fed by hand
 * (every refusal, byte by byte where it matters, replays of recorded
 * frames), then the blocking helpers over socketpairs and the loopback TCP
 * pair, with the server on a thread. Every wait is bounded by the
 * handshake's own step timeout.
 */
#include <gtest/gtest.h>

#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <array>
#include <cerrno>
#include <chrono>
#include <cstring>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include <rma/rma.h>

#include "config.h"
#include "error/error.h"
#include "net/auth.h"
#include "net/frame.h"
#include "net/le.h"
#include "net/tcp_pair.h"
#ifdef HAVE_LIBURING
#include "net/uring_loop.h"
#endif

namespace {

using namespace librma;
using namespace librma::net;
using Bytes = std::vector<uint8_t>;
using Clock = std::chrono::steady_clock;

constexpr uint64_t kJob = 0x5eed'1234'abcd'0001ull;
constexpr uint32_t kWorld = 4;
constexpr int64_t kMs = 1'000'000;
constexpr std::size_t kHelloNonceAt = kHeaderBytes + 16;

Bytes secretOf(uint8_t seed)
{
	Bytes s(kSecretBytes);
	for (std::size_t i = 0; i < s.size(); ++i)
		s[i] = static_cast<uint8_t>(seed * 37 + i);
	return s;
}

AuthKey keyOf(uint8_t seed)
{
	Bytes s = secretOf(seed);
	auto k = AuthKey::derive(s);
	EXPECT_TRUE(k.ok()) << errorMessage(k.code());
	return std::move(k).value();
}

/* Every rank's identity (Ed25519 key pairs drawn once per test program). */
const RankIdentity &identityOf(uint32_t rank)
{
	static std::vector<RankIdentity> ids = [] {
		std::vector<RankIdentity> v;
		for (uint32_t r = 0; r < kWorld; ++r) {
			auto id = RankIdentity::generate();
			EXPECT_TRUE(id.ok()) << errorMessage(id.code());
			v.push_back(std::move(id).value());
		}
		return v;
	}();
	return ids.at(rank);
}

/* ServerConfig::rankKey over identityOf(): every rank of the world published its key. */
const std::array<uint8_t, kIdentityKeyBytes> *publishedKey(const void *, uint32_t rank) noexcept
{
	return rank < kWorld ? &identityOf(rank).publicKey() : nullptr;
}

/* Rank 3 on the host led by rank 2 connects to the host led by rank 0. */
ClientConfig clientConfig(int64_t stepMs = 1000)
{
	ClientConfig c;
	c.identity = &identityOf(3);
	c.jobHash = kJob;
	c.worldSize = kWorld;
	c.leader = 2;
	c.rank = 3;
	c.serverLeader = 0;
	c.stepTimeoutNs = stepMs * kMs;
	c.peer = "test-server";
	return c;
}

ServerConfig serverConfig(int64_t stepMs = 1000)
{
	ServerConfig s;
	s.jobHash = kJob;
	s.worldSize = kWorld;
	s.leader = 0;
	s.stepTimeoutNs = stepMs * kMs;
	s.peer = "test-client";
	s.rankKey = publishedKey;
	return s;
}

Handshake makeClient(const AuthKey &k, ClientConfig c = clientConfig())
{
	auto h = Handshake::client(k, std::move(c), authNowNs());
	EXPECT_TRUE(h.ok()) << errorMessage(h.code());
	return std::move(h).value();
}

Handshake makeServer(const AuthKey &k, ServerConfig s = serverConfig())
{
	auto h = Handshake::server(k, std::move(s), authNowNs());
	EXPECT_TRUE(h.ok()) << errorMessage(h.code());
	return std::move(h).value();
}

/* Take everything @h has to send. */
Bytes drain(Handshake &h)
{
	Bytes b(h.output().begin(), h.output().end());
	h.consumeOutput(b.size());
	return b;
}

/* Feed all of @b; returns the bytes consumed. */
std::size_t give(Handshake &h, const Bytes &b)
{
	return h.feed(b, authNowNs());
}

uint16_t kindOf(const Bytes &frame)
{
	return frame.size() >= kHeaderBytes ? decodeHeader(frame.data()).kind : 0;
}

/* A handshake frame with a hand-made body. */
Bytes frame(FrameKind kind, const Bytes &body)
{
	Bytes f(kHeaderBytes + body.size());
	FrameHeader h;
	h.kind = static_cast<uint16_t>(kind);
	FrameWriter w(f);
	w.begin(h);
	w.put(body.data(), body.size());
	EXPECT_TRUE(w.end());
	return f;
}

Bytes helloBody(uint32_t version, uint32_t leader, uint64_t job, uint8_t nonceByte)
{
	Bytes b(16 + kNonceBytes, nonceByte);
	le::store<uint32_t>(b.data(), version);
	le::store<uint32_t>(b.data() + 4, leader);
	le::store<uint64_t>(b.data() + 8, job);
	return b;
}

/*
 * A PROOF for @rank answering @challenge to @hello, its MAC computed with
 * @key and signed by @signer (rank @rank's own identity by default; null:
 * a signature of zeros).
 */
Bytes forgeProof(const AuthKey &key, const Bytes &hello, const Bytes &challenge, uint32_t leader, uint32_t rank,
		 const RankIdentity *signer = nullptr, bool sign = true, uint32_t serverRank = 0)
{
	std::span<const uint8_t, kNonceBytes> nonceC(hello.data() + kHelloNonceAt, kNonceBytes);
	std::span<const uint8_t, kNonceBytes> nonceS(challenge.data() + kHeaderBytes, kNonceBytes);
	std::array<uint8_t, kMacBytes> mac;
	EXPECT_EQ(clientMac(key, nonceS, nonceC, leader, rank, mac), RMA_SUCCESS);
	std::array<uint8_t, kSignatureBytes> sig{};
	if (sign) {
		EXPECT_EQ(clientSignature(signer ? *signer : identityOf(rank), nonceS, nonceC, leader, rank,
					  kPurposeStream, serverRank, sig),
			  RMA_SUCCESS);
	}
	Bytes body(8 + kMacBytes + kSignatureBytes, 0);
	le::store<uint32_t>(body.data(), rank);
	std::memcpy(body.data() + 8, mac.data(), kMacBytes);
	std::memcpy(body.data() + 8 + kMacBytes, sig.data(), kSignatureBytes);
	return frame(FrameKind::Proof, body);
}

/* A server that has sent its CHALLENGE to @key's client, the bytes so far, for a test to answer with its own PROOF. */
struct AtProof {
	Handshake c, s;
	Bytes hello, challenge;
};
AtProof openToProof(const AuthKey &key)
{
	AtProof o{ makeClient(key), makeServer(key), {}, {} };
	o.hello = drain(o.c);
	give(o.s, o.hello);
	o.challenge = drain(o.s);
	return o;
}

/* A recorded good session: the four frames. */
struct Transcript {
	Bytes hello, challenge, proof, ready;
};

Transcript runSession(const AuthKey &k, NonceCache *cache = nullptr)
{
	Transcript t;
	Handshake c = makeClient(k);
	ServerConfig sc = serverConfig();
	sc.seen = cache;
	Handshake s = makeServer(k, sc);
	t.hello = drain(c);
	EXPECT_EQ(give(s, t.hello), t.hello.size());
	t.challenge = drain(s);
	EXPECT_EQ(give(c, t.challenge), t.challenge.size());
	t.proof = drain(c);
	EXPECT_EQ(give(s, t.proof), t.proof.size());
	t.ready = drain(s);
	EXPECT_EQ(give(c, t.ready), t.ready.size());
	EXPECT_EQ(c.state(), AuthState::Done);
	EXPECT_EQ(s.state(), AuthState::Done);
	return t;
}

std::string messageOf(int code)
{
	return errorMessage(code);
}

class AuthTest : public ::testing::Test
{
protected:
	AuthKey keyA = keyOf(1);
	AuthKey keyB = keyOf(2);
};

/* ---- The key ---- */

TEST_F(AuthTest, DerivedKeyIsDeterministicAndSecretDependent)
{
	AuthKey again = keyOf(1);
	std::array<uint8_t, kNonceBytes> n1{}, n2{};
	n2.fill(7);
	std::array<uint8_t, kMacBytes> a{}, b{}, c{};
	ASSERT_EQ(serverMac(keyA, n1, n2, 0, a), RMA_SUCCESS);
	ASSERT_EQ(serverMac(again, n1, n2, 0, b), RMA_SUCCESS);
	ASSERT_EQ(serverMac(keyB, n1, n2, 0, c), RMA_SUCCESS);
	EXPECT_EQ(a, b);
	EXPECT_NE(a, c);
	/* The labels separate the two MACs over the same nonces. */
	std::array<uint8_t, kMacBytes> d{};
	ASSERT_EQ(clientMac(keyA, n2, n1, 0, 0, d), RMA_SUCCESS);
	EXPECT_NE(a, d);
	/* The leader is bound in. */
	ASSERT_EQ(serverMac(keyA, n1, n2, 1, b), RMA_SUCCESS);
	EXPECT_NE(a, b);
}

TEST_F(AuthTest, RejectsShortSecretAndBadConfig)
{
	Bytes shortSecret(8, 1);
	auto k = AuthKey::derive(shortSecret);
	ASSERT_FALSE(k.ok());
	EXPECT_EQ(errorClass(k.code()), RMA_ERR_ARG);

	ClientConfig c = clientConfig();
	c.serverLeader = kWorld;
	auto h = Handshake::client(keyA, c, authNowNs());
	ASSERT_FALSE(h.ok());
	EXPECT_EQ(errorClass(h.code()), RMA_ERR_ARG);
	ServerConfig s = serverConfig();
	s.worldSize = 0;
	auto g = Handshake::server(keyA, s, authNowNs());
	ASSERT_FALSE(g.ok());
	EXPECT_EQ(errorClass(g.code()), RMA_ERR_ARG);
}

/* ---- The state machine by hand ---- */

TEST_F(AuthTest, GoodKeyAuthenticatesBothSides)
{
	Handshake c = makeClient(keyA);
	Handshake s = makeServer(keyA);
	EXPECT_TRUE(s.output().empty());
	Bytes hello = drain(c);
	ASSERT_EQ(kindOf(hello), static_cast<uint16_t>(FrameKind::Hello));
	ASSERT_EQ(give(s, hello), hello.size());
	Bytes challenge = drain(s);
	ASSERT_EQ(kindOf(challenge), static_cast<uint16_t>(FrameKind::Challenge));
	ASSERT_EQ(give(c, challenge), challenge.size());
	Bytes proof = drain(c);
	ASSERT_EQ(kindOf(proof), static_cast<uint16_t>(FrameKind::Proof));
	ASSERT_EQ(give(s, proof), proof.size());
	EXPECT_EQ(s.state(), AuthState::Done);
	Bytes ready = drain(s);
	ASSERT_EQ(kindOf(ready), static_cast<uint16_t>(FrameKind::Ready));
	EXPECT_EQ(c.state(), AuthState::InProgress);
	ASSERT_EQ(give(c, ready), ready.size());
	EXPECT_EQ(c.state(), AuthState::Done);

	EXPECT_EQ(s.peer().leader, 2u);
	EXPECT_EQ(s.peer().rank, 3u);
	EXPECT_EQ(c.peer().leader, 0u);
	EXPECT_EQ(c.phase(), ConnPhase::Open);
	EXPECT_EQ(s.phase(), ConnPhase::Open);
	EXPECT_EQ(c.error(), RMA_SUCCESS);
	EXPECT_EQ(s.error(), RMA_SUCCESS);
}

TEST_F(AuthTest, WrongKeyClientRefusesChallengeAndSendsNoProof)
{
	Handshake c = makeClient(keyB);
	Handshake s = makeServer(keyA);
	give(s, drain(c));
	give(c, drain(s));
	EXPECT_EQ(c.state(), AuthState::Failed);
	EXPECT_EQ(c.failure(), AuthError::BadMac);
	EXPECT_TRUE(c.output().empty());
	EXPECT_EQ(errorClass(c.error()), RMA_ERR_INTERN);
	const std::string m = messageOf(c.error());
	EXPECT_NE(m.find("auth client"), std::string::npos) << m;
	EXPECT_NE(m.find("test-server"), std::string::npos) << m;
	EXPECT_NE(m.find("awaiting CHALLENGE"), std::string::npos) << m;
	EXPECT_NE(m.find("MAC mismatch"), std::string::npos) << m;
	/* The server never got a PROOF: it is still waiting, and has sent no READY. */
	EXPECT_EQ(s.state(), AuthState::InProgress);
	EXPECT_TRUE(s.output().empty());
}

TEST_F(AuthTest, WrongKeyServerRefusesProofAndSendsNoReady)
{
	auto [c, s, hello, challenge] = openToProof(keyA);
	/* A client that holds another secret answers the (valid) CHALLENGE. */
	Bytes proof = forgeProof(keyB, hello, challenge, 2, 3);
	EXPECT_EQ(give(s, proof), proof.size());
	EXPECT_EQ(s.state(), AuthState::Failed);
	EXPECT_EQ(s.failure(), AuthError::BadMac);
	EXPECT_TRUE(s.output().empty());
	const std::string m = messageOf(s.error());
	EXPECT_NE(m.find("auth server"), std::string::npos) << m;
	EXPECT_NE(m.find("awaiting PROOF"), std::string::npos) << m;
	EXPECT_NE(m.find("test-client"), std::string::npos) << m;

	/* The same forgery with the right key passes: the refusal was the key's. */
	AtProof again = openToProof(keyA);
	give(again.s, forgeProof(keyA, again.hello, again.challenge, 2, 3));
	EXPECT_EQ(again.s.state(), AuthState::Done);
}

TEST_F(AuthTest, ProofBindsTheClaimedRankLeaderAndPurpose)
{
	/*
	 * macC computed for rank 3 of a stream connection; the frame claims
	 * rank 1, or a bulk connection (a stream's PROOF turned into a bulk
	 * one's in transit).
	 */
	const std::pair<std::size_t, uint32_t> tamper[] = { { 0, 1 }, { 4, kPurposeBulk } };
	for (auto [at, value] : tamper) {
		auto [c, s, hello, challenge] = openToProof(keyA);
		Bytes proof = forgeProof(keyA, hello, challenge, 2, 3);
		le::store<uint32_t>(proof.data() + kHeaderBytes + at, value);
		give(s, proof);
		EXPECT_EQ(s.failure(), AuthError::BadMac) << "word at " << at;
		EXPECT_TRUE(s.output().empty());
	}
}

TEST_F(AuthTest, MemberPosingAsAnotherRankIsRefusedBySignature)
{
	/*
	 * Rank 2 holds the job's key, so its MAC for "rank 3" verifies; only
	 * rank 3's private key can sign as rank 3.
	 */
	{
		auto [c, s, hello, challenge] = openToProof(keyA);
		give(s, forgeProof(keyA, hello, challenge, 2, 3, &identityOf(2)));
		EXPECT_EQ(s.state(), AuthState::Failed);
		EXPECT_EQ(s.failure(), AuthError::BadSignature) << authErrorName(s.failure());
		EXPECT_TRUE(s.output().empty()); /* no READY */
		const std::string m = messageOf(s.error());
		EXPECT_NE(m.find("posing as another rank"), std::string::npos) << m;
	}
	/* No signature at all (a client without an identity). */
	{
		auto [c, s, hello, challenge] = openToProof(keyA);
		give(s, forgeProof(keyA, hello, challenge, 2, 3, nullptr, false));
		EXPECT_EQ(s.failure(), AuthError::BadSignature) << authErrorName(s.failure());
	}
	/* A signature by rank 3 over another session's nonces. */
	{
		AtProof earlier = openToProof(keyA);
		Bytes old = forgeProof(keyA, earlier.hello, earlier.challenge, 2, 3);
		auto [c, s, hello, challenge] = openToProof(keyA);
		Bytes proof = forgeProof(keyA, hello, challenge, 2, 3);
		std::memcpy(proof.data() + kHeaderBytes + 8 + kMacBytes, old.data() + kHeaderBytes + 8 + kMacBytes,
			    kSignatureBytes);
		give(s, proof);
		EXPECT_EQ(s.failure(), AuthError::BadSignature) << authErrorName(s.failure());
	}
	/*
	 * Relayed: rank 3 meant to reach rank 1's process (which forwarded its
	 * HELLO here and this CHALLENGE back); its signature names rank 1, and
	 * this server is rank 0.
	 */
	{
		auto [c, s, hello, challenge] = openToProof(keyA);
		give(s, forgeProof(keyA, hello, challenge, 2, 3, nullptr, true, 1));
		EXPECT_EQ(s.failure(), AuthError::BadSignature) << authErrorName(s.failure());
		EXPECT_TRUE(s.output().empty());
	}
	/* A rank that published no identity cannot connect. */
	{
		ServerConfig sc = serverConfig();
		sc.rankKey = [](const void *, uint32_t rank) noexcept {
			return rank == 3 ? nullptr : &identityOf(rank).publicKey();
		};
		Handshake c = makeClient(keyA);
		Handshake s = makeServer(keyA, sc);
		give(s, drain(c));
		give(c, drain(s));
		give(s, drain(c));
		EXPECT_EQ(s.failure(), AuthError::BadPeer) << authErrorName(s.failure());
		EXPECT_NE(messageOf(s.error()).find("published no identity"), std::string::npos);
	}
	/* The genuine rank 3 passes; a server that checks no identities takes an unsigned PROOF (the MAC layer alone). */
	{
		auto [c, s, hello, challenge] = openToProof(keyA);
		give(s, forgeProof(keyA, hello, challenge, 2, 3));
		EXPECT_EQ(s.state(), AuthState::Done);
		ServerConfig sc = serverConfig();
		sc.rankKey = nullptr;
		Handshake c2 = makeClient(keyA);
		Handshake s2 = makeServer(keyA, sc);
		Bytes hello2 = drain(c2);
		give(s2, hello2);
		Bytes challenge2 = drain(s2);
		give(s2, forgeProof(keyA, hello2, challenge2, 2, 3, nullptr, false));
		EXPECT_EQ(s2.state(), AuthState::Done);
	}
}

TEST_F(AuthTest, ProofCarriesTheConnectionsPurpose)
{
	/* A bulk connection says so, and the server learns it. */
	ClientConfig cc = clientConfig();
	cc.purpose = kPurposeBulk;
	Handshake c = makeClient(keyA, cc);
	Handshake s = makeServer(keyA);
	give(s, drain(c));
	give(c, drain(s));
	Bytes proof = drain(c);
	ASSERT_EQ(kindOf(proof), static_cast<uint16_t>(FrameKind::Proof));
	EXPECT_EQ(le::load<uint32_t>(proof.data() + kHeaderBytes + 4), kPurposeBulk);
	give(s, proof);
	ASSERT_EQ(s.state(), AuthState::Done);
	EXPECT_EQ(s.peer().purpose, kPurposeBulk);
	EXPECT_EQ(s.peer().rank, 3u);
	/* That the MAC binds the purpose: ProofBindsTheClaimedRankLeaderAndPurpose. */
}

TEST_F(AuthTest, WrongJobHashRefusedBeforeAnyChallenge)
{
	ClientConfig cc = clientConfig();
	cc.jobHash = kJob + 1;
	Handshake c = makeClient(keyA, cc);
	Handshake s = makeServer(keyA);
	give(s, drain(c));
	EXPECT_EQ(s.state(), AuthState::Failed);
	EXPECT_EQ(s.failure(), AuthError::WrongJob);
	EXPECT_TRUE(s.output().empty());
	EXPECT_NE(messageOf(s.error()).find("job hash"), std::string::npos) << messageOf(s.error());
}

TEST_F(AuthTest, BadVersionAndForeignLeaderRefusedBeforeAnyChallenge)
{
	struct Case {
		Bytes body;
		AuthError want;
	};
	const Case cases[] = {
		{ helloBody(kProtocolVersion + 1, 2, kJob, 9), AuthError::BadVersion },
		{ helloBody(0, 2, kJob, 9), AuthError::BadVersion },
		{ helloBody(kProtocolVersion, kWorld, kJob, 9), AuthError::BadPeer },
		{ helloBody(kProtocolVersion, 0xffffffffu, kJob, 9), AuthError::BadPeer },
	};
	for (const Case &k : cases) {
		Handshake s = makeServer(keyA);
		give(s, frame(FrameKind::Hello, k.body));
		EXPECT_EQ(s.state(), AuthState::Failed);
		EXPECT_EQ(s.failure(), k.want) << authErrorName(s.failure());
		EXPECT_TRUE(s.output().empty());
	}
	/* And a well-formed one passes, so the cases above failed on their field. */
	Handshake s = makeServer(keyA);
	give(s, frame(FrameKind::Hello, helloBody(kProtocolVersion, 2, kJob, 9)));
	EXPECT_EQ(s.state(), AuthState::InProgress);
	EXPECT_EQ(kindOf(drain(s)), static_cast<uint16_t>(FrameKind::Challenge));
}

TEST_F(AuthTest, PolicyCallbacksRefuseLeaderAndRank)
{
	ServerConfig sc = serverConfig();
	sc.allowLeader = [](const void *, uint32_t leader) noexcept { return leader != 2; };
	Handshake c = makeClient(keyA);
	Handshake s = makeServer(keyA, sc);
	give(s, drain(c));
	EXPECT_EQ(s.failure(), AuthError::BadPeer);
	EXPECT_TRUE(s.output().empty());

	ServerConfig sr = serverConfig();
	sr.allowRank = [](const void *, uint32_t leader, uint32_t rank) noexcept { return leader == 2 && rank == 2; };
	Handshake c2 = makeClient(keyA);
	Handshake s2 = makeServer(keyA, sr);
	give(s2, drain(c2));
	give(c2, drain(s2));
	give(s2, drain(c2));
	EXPECT_EQ(s2.failure(), AuthError::BadPeer);
	EXPECT_TRUE(s2.output().empty()); /* no READY */
}

TEST_F(AuthTest, ServerSendsNothingUntilTheWholeHelloIsChecked)
{
	Handshake c = makeClient(keyA);
	Handshake s = makeServer(keyA);
	Bytes hello = drain(c);
	for (std::size_t i = 0; i + 1 < hello.size(); ++i) {
		ASSERT_EQ(s.feed(std::span<const uint8_t>(&hello[i], 1), authNowNs()), 1u);
		ASSERT_TRUE(s.output().empty()) << "after byte " << i;
		ASSERT_EQ(s.state(), AuthState::InProgress);
		/* The rest of the header, then the rest of the body the header announced. */
		ASSERT_EQ(s.wanted(), i + 1 < kHeaderBytes ? kHeaderBytes - i - 1 : hello.size() - i - 1);
	}
	s.feed(std::span<const uint8_t>(&hello.back(), 1), authNowNs());
	EXPECT_EQ(kindOf(drain(s)), static_cast<uint16_t>(FrameKind::Challenge));
}

TEST_F(AuthTest, ReplayedHelloRefusedByTheNonceCache)
{
	NonceCache seen(16);
	Transcript t = runSession(keyA, &seen);
	EXPECT_EQ(seen.size(), 1u);
	ServerConfig sc = serverConfig();
	sc.seen = &seen;
	Handshake s = makeServer(keyA, sc);
	give(s, t.hello);
	EXPECT_EQ(s.state(), AuthState::Failed);
	EXPECT_EQ(s.failure(), AuthError::Replay);
	EXPECT_TRUE(s.output().empty());
}

TEST_F(AuthTest, ReplayedProofFromAnEarlierSessionRefused)
{
	Transcript t = runSession(keyA);
	/* No nonce cache: the fresh nonceS alone must defeat the recorded PROOF. */
	Handshake s = makeServer(keyA);
	give(s, t.hello);
	Bytes challenge = drain(s);
	ASSERT_EQ(kindOf(challenge), static_cast<uint16_t>(FrameKind::Challenge));
	EXPECT_NE(Bytes(challenge.begin() + kHeaderBytes, challenge.begin() + kHeaderBytes + kNonceBytes),
		  Bytes(t.challenge.begin() + kHeaderBytes, t.challenge.begin() + kHeaderBytes + kNonceBytes));
	give(s, t.proof);
	EXPECT_EQ(s.state(), AuthState::Failed);
	EXPECT_EQ(s.failure(), AuthError::BadMac);
	EXPECT_TRUE(s.output().empty());
}

TEST_F(AuthTest, ReplayedChallengeFromAnEarlierSessionRefused)
{
	Transcript t = runSession(keyA);
	Handshake c = makeClient(keyA);
	drain(c);
	give(c, t.challenge);
	EXPECT_EQ(c.state(), AuthState::Failed);
	EXPECT_EQ(c.failure(), AuthError::BadMac);
	EXPECT_TRUE(c.output().empty()); /* no PROOF */
}

TEST_F(AuthTest, ReflectedNonceRefused)
{
	Handshake c = makeClient(keyA);
	Bytes hello = drain(c);
	/* A "server" that echoes the client's nonce as its own. */
	Bytes body(kNonceBytes + kMacBytes, 0);
	std::memcpy(body.data(), hello.data() + kHelloNonceAt, kNonceBytes);
	give(c, frame(FrameKind::Challenge, body));
	EXPECT_EQ(c.failure(), AuthError::Replay);
	EXPECT_TRUE(c.output().empty());
}

TEST_F(AuthTest, GarbageRefusedAtTheHeader)
{
	Bytes junk(256);
	for (std::size_t i = 0; i < junk.size(); ++i)
		junk[i] = static_cast<uint8_t>(0xa5 ^ (i * 13));
	Handshake s = makeServer(keyA);
	EXPECT_EQ(give(s, junk), kHeaderBytes); /* decided on the first header, nothing more read */
	EXPECT_EQ(s.failure(), AuthError::Malformed);
	EXPECT_TRUE(s.output().empty());
	EXPECT_EQ(give(s, junk), 0u); /* ended */

	Handshake c = makeClient(keyA);
	drain(c);
	EXPECT_EQ(give(c, junk), kHeaderBytes);
	EXPECT_EQ(c.failure(), AuthError::Malformed);
	EXPECT_TRUE(c.output().empty());
}

TEST_F(AuthTest, WrongKindOrLengthRefusedWithoutWaitingForTheBody)
{
	/* A PROOF first, a READY first, a HELLO claiming a 64 KiB body: refused at the header. */
	Bytes longHello = frame(FrameKind::Hello, Bytes(kMaxBody));
	longHello.resize(kHeaderBytes);
	const Bytes hdrs[] = {
		frame(FrameKind::Proof, Bytes(8 + kMacBytes)),
		frame(FrameKind::Ready, {}),
		longHello,
		frame(FrameKind::Hello, helloBody(kProtocolVersion, 2, kJob, 1)),
	};
	for (std::size_t i = 0; i < 3; ++i) {
		Handshake s = makeServer(keyA);
		EXPECT_EQ(give(s, hdrs[i]), kHeaderBytes) << i;
		EXPECT_EQ(s.failure(), AuthError::Malformed) << i;
		EXPECT_TRUE(s.output().empty()) << i;
	}
	/* A HELLO with a window id or a rank is not a connection-level frame. */
	Bytes h = hdrs[3];
	le::store<uint64_t>(h.data() + 8, 7);
	Handshake s = makeServer(keyA);
	give(s, h);
	EXPECT_EQ(s.failure(), AuthError::Malformed);
	EXPECT_NE(messageOf(s.error()).find("window"), std::string::npos) << messageOf(s.error());
}

TEST_F(AuthTest, TruncatedFrameThenCloseIsRefused)
{
	Handshake c = makeClient(keyA);
	Handshake s = makeServer(keyA);
	Bytes hello = drain(c);
	hello.resize(kHeaderBytes + 10);
	give(s, hello);
	EXPECT_EQ(s.state(), AuthState::InProgress);
	s.peerClosed();
	EXPECT_EQ(s.failure(), AuthError::PeerClosed);
	EXPECT_NE(messageOf(s.error()).find("truncated"), std::string::npos) << messageOf(s.error());
	EXPECT_TRUE(s.output().empty());
}

TEST_F(AuthTest, EachStepTimesOut)
{
	const int64_t t0 = authNowNs();
	auto sh = Handshake::server(keyA, serverConfig(100), t0);
	ASSERT_TRUE(sh.ok());
	Handshake &s = *sh;
	EXPECT_FALSE(s.checkTimeout(t0 + 100 * kMs));
	EXPECT_EQ(s.deadlineNs(), t0 + 100 * kMs);
	/* The HELLO arrives late in its step: the PROOF step gets a full step of its own. */
	auto ch = Handshake::client(keyA, clientConfig(100), t0);
	ASSERT_TRUE(ch.ok());
	Bytes hello = drain(*ch);
	s.feed(hello, t0 + 90 * kMs);
	EXPECT_EQ(s.state(), AuthState::InProgress);
	EXPECT_EQ(s.deadlineNs(), t0 + 190 * kMs);
	EXPECT_FALSE(s.checkTimeout(t0 + 150 * kMs));
	EXPECT_TRUE(s.checkTimeout(t0 + 191 * kMs));
	EXPECT_EQ(s.failure(), AuthError::Timeout);
	EXPECT_NE(messageOf(s.error()).find("awaiting PROOF"), std::string::npos) << messageOf(s.error());

	/* A frame fed after the deadline is not looked at. */
	EXPECT_TRUE(s.output().empty()); /* the failure dropped the queued CHALLENGE */
	EXPECT_EQ((*ch).feed(Bytes(kHeaderBytes), t0 + 101 * kMs), 0u);
	EXPECT_EQ((*ch).failure(), AuthError::Timeout);
}

TEST_F(AuthTest, EveryBitFlipInTransitIsRefusedByItsReceiver)
{
	/*
	 * A relay between a real client and a real server flips one bit of
	 * one frame. Every header bit is fixed and every body bit is bound
	 * by a MAC or checked against configuration, so the receiver of the
	 * damaged frame must never reach Done, and one side must refuse (the
	 * other may stay in progress: that is the timeout's job).
	 */
	int runs = 0;
	for (int frameNo = 0; frameNo < 4; ++frameNo) {
		const std::size_t len = frameNo == 0 ? kHeaderBytes + 48
					: frameNo == 1 ? kHeaderBytes + 64
					: frameNo == 2 ? kHeaderBytes + 104
						       : kHeaderBytes;
		for (std::size_t bit = 0; bit < len * 8; ++bit) {
			Handshake c = makeClient(keyA);
			Handshake s = makeServer(keyA);
			Handshake *to[4] = { &s, &c, &s, &c };
			Handshake *from[4] = { &c, &s, &c, &s };
			for (int k = 0; k < 4; ++k) {
				Bytes f = drain(*from[k]);
				if (f.empty())
					break;
				if (k == frameNo) {
					ASSERT_EQ(f.size(), len);
					f[bit / 8] ^= static_cast<uint8_t>(1u << (bit % 8));
				}
				give(*to[k], f);
			}
			ASSERT_NE(to[frameNo]->state(), AuthState::Done)
				<< "frame " << frameNo << " bit " << bit << " went unnoticed";
			/* Someone noticed: the receiver, or (a flipped HELLO nonce) the client when macS fails. */
			ASSERT_TRUE(c.state() == AuthState::Failed || s.state() == AuthState::Failed)
				<< "frame " << frameNo << " bit " << bit;
			ASSERT_NE(c.state(), AuthState::Done);
			/* Whoever failed sends nothing more. */
			for (Handshake *h : { &c, &s }) {
				if (h->state() == AuthState::Failed) {
					EXPECT_TRUE(h->output().empty());
				}
			}
			++runs;
		}
	}
	EXPECT_EQ(runs, 8 * (4 * static_cast<int>(kHeaderBytes) + 48 + 64 + 104));
}

TEST_F(AuthTest, RandomBytesInRandomPiecesNeverAuthenticate)
{
	uint64_t x = 0x9e3779b97f4a7c15ull;
	auto next = [&x] {
		x ^= x << 13;
		x ^= x >> 7;
		x ^= x << 17;
		return x;
	};
	for (int round = 0; round < 3000; ++round) {
		const bool server = round % 2 == 0;
		Handshake h = server ? makeServer(keyA) : makeClient(keyA);
		drain(h);
		Bytes junk(next() % 300);
		for (auto &b : junk)
			b = static_cast<uint8_t>(next());
		/* Half the rounds start with a plausible header for the step, so bodies get looked at too. */
		if (round % 4 < 2 && junk.size() >= kHeaderBytes) {
			FrameHeader hd;
			hd.kind = static_cast<uint16_t>(server ? FrameKind::Hello : FrameKind::Challenge);
			hd.bodyLen = server ? 48 : 64;
			encodeHeader(hd, junk.data());
		}
		std::size_t at = 0;
		while (at < junk.size() && h.state() == AuthState::InProgress) {
			const std::size_t piece = std::min<std::size_t>(1 + next() % 40, junk.size() - at);
			const std::size_t used = h.feed(std::span<const uint8_t>(junk.data() + at, piece), authNowNs());
			ASSERT_LE(used, piece);
			at += used;
			if (used < piece)
				break;
			if (server && h.state() == AuthState::InProgress && h.phase() == ConnPhase::AwaitHello) {
				ASSERT_TRUE(h.output().empty()) << "round " << round;
			}
		}
		ASSERT_NE(h.state(), AuthState::Done) << "round " << round;
		if (h.state() == AuthState::Failed) {
			ASSERT_TRUE(h.output().empty());
		}
	}
}

TEST_F(AuthTest, FeedStopsAtTheEndOfTheHandshake)
{
	Handshake c = makeClient(keyA);
	Handshake s = makeServer(keyA);
	give(s, drain(c));
	give(c, drain(s));
	give(s, drain(c));
	Bytes stream = drain(s); /* READY */
	Bytes ping = frame(FrameKind::Ping, Bytes(8, 0x42));
	stream.insert(stream.end(), ping.begin(), ping.end());
	EXPECT_EQ(give(c, stream), kHeaderBytes);
	EXPECT_EQ(c.state(), AuthState::Done);
	EXPECT_EQ(c.wanted(), 0u);
}

/* ---- Over sockets ---- */

struct Outcome {
	int code = -1;
	AuthPeer peer;
	Clock::duration took{};
};

Outcome runServer(int fd, const AuthKey &k, ServerConfig sc)
{
	const auto t0 = Clock::now();
	auto r = authenticateServer(fd, k, std::move(sc));
	Outcome o;
	o.took = Clock::now() - t0;
	o.code = r.code();
	if (r.ok())
		o.peer = *r;
	return o;
}

Outcome runClient(int fd, const AuthKey &k, ClientConfig cc)
{
	const auto t0 = Clock::now();
	auto r = authenticateClient(fd, k, std::move(cc));
	Outcome o;
	o.took = Clock::now() - t0;
	o.code = r.code();
	if (r.ok())
		o.peer = *r;
	return o;
}

/* The failure an error code stands for, read back from its message. */
bool says(int code, const char *text)
{
	return messageOf(code).find(text) != std::string::npos;
}

enum class Transport { SocketPair, LoopbackTcp };

class AuthSocketTest : public AuthTest, public ::testing::WithParamInterface<Transport>
{
protected:
	void SetUp() override
	{
		if (GetParam() == Transport::SocketPair) {
			int sv[2];
			ASSERT_EQ(socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv), 0);
			server_.reset(sv[0]);
			client_.reset(sv[1]);
		} else {
			auto [s, c] = loopbackTcpPair();
			if (!s.isValid() || !c.isValid())
				GTEST_SKIP() << "no loopback TCP";
			server_ = std::move(s);
			client_ = std::move(c);
		}
	}

	/* Server on a thread (closing its end when done, as the agent would), client here. */
	std::pair<Outcome, Outcome> both(const AuthKey &serverKey, ServerConfig sc, const AuthKey &clientKey,
					 ClientConfig cc)
	{
		Outcome so;
		std::thread t([&] {
			so = runServer(server_.get(), serverKey, std::move(sc));
			if (so.code != RMA_SUCCESS)
				server_.reset();
		});
		Outcome co = runClient(client_.get(), clientKey, std::move(cc));
		if (co.code != RMA_SUCCESS)
			client_.reset();
		t.join();
		return { so, co };
	}

	UniqueFd server_, client_;
};

TEST_P(AuthSocketTest, GoodKeyBothWaysAndTheStreamStaysInStep)
{
	auto [s, c] = both(keyA, serverConfig(), keyA, clientConfig());
	ASSERT_EQ(s.code, RMA_SUCCESS) << messageOf(s.code);
	ASSERT_EQ(c.code, RMA_SUCCESS) << messageOf(c.code);
	EXPECT_EQ(s.peer.leader, 2u);
	EXPECT_EQ(s.peer.rank, 3u);
	EXPECT_EQ(c.peer.leader, 0u);
	/* Nothing was read past READY: the next frame arrives whole, in both directions. */
	Bytes ping = frame(FrameKind::Ping, Bytes(8, 0x5a));
	ASSERT_EQ(send(server_.get(), ping.data(), ping.size(), MSG_NOSIGNAL), static_cast<ssize_t>(ping.size()));
	ASSERT_EQ(send(client_.get(), ping.data(), ping.size(), MSG_NOSIGNAL), static_cast<ssize_t>(ping.size()));
	for (int fd : { client_.get(), server_.get() }) {
		Bytes got(ping.size());
		ASSERT_EQ(recv(fd, got.data(), got.size(), MSG_WAITALL), static_cast<ssize_t>(got.size()));
		EXPECT_EQ(got, ping);
	}
}

TEST_P(AuthSocketTest, WrongKeyEachSideFailsAndNoReady)
{
	auto [s, c] = both(keyA, serverConfig(), keyB, clientConfig());
	ASSERT_NE(c.code, RMA_SUCCESS);
	ASSERT_NE(s.code, RMA_SUCCESS);
	EXPECT_TRUE(says(c.code, "CHALLENGE MAC mismatch")) << messageOf(c.code);
	/* The client closed instead of proving: the server saw the close while awaiting PROOF. */
	EXPECT_TRUE(says(s.code, "awaiting PROOF")) << messageOf(s.code);
	EXPECT_TRUE(says(s.code, "closed")) << messageOf(s.code);
}

TEST_P(AuthSocketTest, WrongJobHashRefusedAndTheClientSeesOnlyTheClose)
{
	ServerConfig sc = serverConfig();
	sc.jobHash = kJob ^ 1;
	auto [s, c] = both(keyA, sc, keyA, clientConfig());
	EXPECT_TRUE(says(s.code, "job hash")) << messageOf(s.code);
	EXPECT_TRUE(says(c.code, "awaiting CHALLENGE")) << messageOf(c.code);
	EXPECT_TRUE(says(c.code, "closed by the peer")) << messageOf(c.code);
}

TEST_P(AuthSocketTest, ErrorsNameThePeerAddress)
{
	ClientConfig cc = clientConfig();
	cc.peer.clear();
	ServerConfig sc = serverConfig();
	sc.peer.clear();
	auto [s, c] = both(keyA, sc, keyB, cc);
	/* A TCP peer by its address and port; a Unix socket as what it is. */
	const char *want = GetParam() == Transport::LoopbackTcp ? "peer 127.0.0.1:" : "(local socket)";
	EXPECT_TRUE(says(c.code, want)) << messageOf(c.code);
	EXPECT_TRUE(says(s.code, want)) << messageOf(s.code);
}

TEST_P(AuthSocketTest, SilentClientTimesOutWithinTheBound)
{
	/* The client connects and never speaks. */
	Outcome s = runServer(server_.get(), keyA, serverConfig(200));
	ASSERT_NE(s.code, RMA_SUCCESS);
	EXPECT_TRUE(says(s.code, "awaiting HELLO")) << messageOf(s.code);
	EXPECT_TRUE(says(s.code, "no frame within 200 ms")) << messageOf(s.code);
	EXPECT_GE(s.took, std::chrono::milliseconds(200));
	EXPECT_LT(s.took, std::chrono::milliseconds(1200));
}

TEST_P(AuthSocketTest, ClientStoppingMidHandshakeTimesOut)
{
	/* A client that sends its HELLO, reads the CHALLENGE and goes quiet. */
	Handshake c = makeClient(keyA);
	Bytes hello = drain(c);
	ASSERT_EQ(send(client_.get(), hello.data(), hello.size(), MSG_NOSIGNAL), static_cast<ssize_t>(hello.size()));
	Outcome s = runServer(server_.get(), keyA, serverConfig(200));
	ASSERT_NE(s.code, RMA_SUCCESS);
	EXPECT_TRUE(says(s.code, "awaiting PROOF")) << messageOf(s.code);
	EXPECT_TRUE(says(s.code, "no frame within")) << messageOf(s.code);
	EXPECT_LT(s.took, std::chrono::milliseconds(1200));
	/* The server got as far as one CHALLENGE, and no READY. */
	Bytes got(256);
	ssize_t n = recv(client_.get(), got.data(), got.size(), MSG_DONTWAIT);
	ASSERT_EQ(n, static_cast<ssize_t>(kHeaderBytes + kNonceBytes + kMacBytes));
	got.resize(static_cast<std::size_t>(n));
	EXPECT_EQ(kindOf(got), static_cast<uint16_t>(FrameKind::Challenge));
}

TEST_P(AuthSocketTest, ServerStoppingMidHandshakeTimesOut)
{
	/* The server never answers the HELLO: the client gives up within the bound. */
	Outcome c = runClient(client_.get(), keyA, clientConfig(200));
	ASSERT_NE(c.code, RMA_SUCCESS);
	EXPECT_TRUE(says(c.code, "awaiting CHALLENGE")) << messageOf(c.code);
	EXPECT_GE(c.took, std::chrono::milliseconds(200));
	EXPECT_LT(c.took, std::chrono::milliseconds(1200));
}

TEST_P(AuthSocketTest, ClientGoneBeforeReadyEndsTheServerWithoutHanging)
{
	/* A client that proves itself, then closes before READY can reach it. */
	std::thread t([&] {
		Handshake c = makeClient(keyA);
		Bytes hello = drain(c);
		(void)send(client_.get(), hello.data(), hello.size(), MSG_NOSIGNAL);
		Bytes challenge(kHeaderBytes + kNonceBytes + kMacBytes);
		if (recv(client_.get(), challenge.data(), challenge.size(), MSG_WAITALL) ==
		    static_cast<ssize_t>(challenge.size())) {
			give(c, challenge);
			Bytes proof = drain(c);
			/* Stop reading before the PROOF leaves: READY has nowhere to go (Unix socket: EPIPE). */
			(void)shutdown(client_.get(), SHUT_RD);
			(void)send(client_.get(), proof.data(), proof.size(), MSG_NOSIGNAL);
		}
		client_.reset();
	});
	Outcome s = runServer(server_.get(), keyA, serverConfig(300));
	t.join();
	EXPECT_LT(s.took, std::chrono::milliseconds(1000));
	if (GetParam() == Transport::SocketPair) {
		/* A Unix socket refuses the write at once (EPIPE). TCP may accept it into the void. */
		ASSERT_NE(s.code, RMA_SUCCESS);
		EXPECT_TRUE(says(s.code, "sending READY")) << messageOf(s.code);
	}
}

TEST_P(AuthSocketTest, GarbageIsRefusedAndNothingIsSentBack)
{
	Bytes junk(200);
	for (std::size_t i = 0; i < junk.size(); ++i)
		junk[i] = static_cast<uint8_t>(i * 89 + 3);
	ASSERT_EQ(send(client_.get(), junk.data(), junk.size(), MSG_NOSIGNAL), static_cast<ssize_t>(junk.size()));
	Outcome s = runServer(server_.get(), keyA, serverConfig());
	ASSERT_NE(s.code, RMA_SUCCESS);
	EXPECT_TRUE(says(s.code, "awaiting HELLO")) << messageOf(s.code);
	EXPECT_TRUE(says(s.code, "unknown frame kind")) << messageOf(s.code);
	EXPECT_LT(s.took, std::chrono::milliseconds(500)); /* refused at once, not by the timeout */
	server_.reset();
	/* EOF, or a reset (the server closed with the rest of the junk unread): never a byte. */
	uint8_t b;
	const ssize_t n = recv(client_.get(), &b, 1, 0);
	const int err = errno;
	EXPECT_TRUE(n == 0 || (n < 0 && err == ECONNRESET)) << n << " " << err;
}

TEST_P(AuthSocketTest, TruncatedHelloIsRefusedAndNothingIsSentBack)
{
	Handshake c = makeClient(keyA);
	Bytes hello = drain(c);
	ASSERT_EQ(send(client_.get(), hello.data(), kHeaderBytes + 20, MSG_NOSIGNAL),
		  static_cast<ssize_t>(kHeaderBytes + 20));
	ASSERT_EQ(shutdown(client_.get(), SHUT_WR), 0);
	Outcome s = runServer(server_.get(), keyA, serverConfig());
	ASSERT_NE(s.code, RMA_SUCCESS);
	EXPECT_TRUE(says(s.code, "truncated")) << messageOf(s.code);
	server_.reset();
	uint8_t b;
	EXPECT_EQ(recv(client_.get(), &b, 1, 0), 0);
}

INSTANTIATE_TEST_SUITE_P(Transports, AuthSocketTest,
			 ::testing::Values(Transport::SocketPair, Transport::LoopbackTcp),
			 [](const ::testing::TestParamInfo<Transport> &i) {
				 return i.param == Transport::SocketPair ? "SocketPair" : "LoopbackTcp";
			 });

/* ---- Driven by the agent's loop (no blocking on the server side) ---- */

#ifdef HAVE_LIBURING

/* The server side of one connection as the agent would run it: the handshake fed from onFrame(). */
struct LoopServer {
	std::optional<Handshake> hs;
	NetLoop *loop = nullptr;
	ConnId conn = 0;
	std::vector<Bytes> opened; /* frames after the handshake */
	bool closed = false;

	void flush()
	{
		std::span<const uint8_t> out = hs->output();
		if (!out.empty() && loop->send(conn, out) == RMA_SUCCESS)
			hs->consumeOutput(out.size());
	}

	static void onFrame(void *ctx, ConnId, std::span<const uint8_t> f) noexcept
	{
		auto *self = static_cast<LoopServer *>(ctx);
		if (self->hs->state() == AuthState::Done) {
			self->opened.emplace_back(f.begin(), f.end());
			return;
		}
		/* The loop hands over whole frames; a frame never straddles the end of the handshake. */
		const std::size_t used = self->hs->feed(f, authNowNs());
		self->flush();
		if (self->hs->state() == AuthState::Done && used < f.size())
			self->opened.emplace_back(f.begin() + static_cast<std::ptrdiff_t>(used), f.end());
	}

	static void onClosed(void *ctx, ConnId, int error) noexcept
	{
		auto *self = static_cast<LoopServer *>(ctx);
		self->closed = true;
		self->hs->peerClosed(error);
	}
};

class AuthLoopTest : public AuthTest, public ::testing::WithParamInterface<UringPolicy>
{
protected:
	/*
	 * Serve one loopback connection with @sc through a NetLoop of the
	 * parameter's backend while @client runs on a thread against the
	 * other end. Runs until the handshake fails, or has succeeded and
	 * @wantOpen frames followed it, or 3 s pass.
	 */
	template<typename Client>
	void serve(LoopServer &srv, ServerConfig sc, std::size_t wantOpen, Client &&client)
	{
		auto [s, c] = loopbackTcpPair();
		if (!s.isValid() || !c.isValid())
			GTEST_SKIP() << "no loopback TCP";
		FrameHandler handler;
		handler.onFrame = &LoopServer::onFrame;
		handler.onClosed = &LoopServer::onClosed;
		handler.ctx = &srv;
		NetLoopConfig cfg;
		cfg.policy = GetParam();
		auto loop = makeNetLoop(handler, cfg);
		if (!loop.ok())
			GTEST_SKIP() << "no loop for this policy: " << errorMessage(loop.code());
		auto hs = Handshake::server(keyA, std::move(sc), authNowNs());
		ASSERT_TRUE(hs.ok()) << errorMessage(hs.code());
		srv.hs.emplace(std::move(hs).value());
		srv.loop = loop->get();
		auto id = (*loop)->addConnection(std::move(s));
		ASSERT_TRUE(id.ok()) << errorMessage(id.code());
		srv.conn = *id;

		UniqueFd clientFd = std::move(c);
		std::thread t([&] { client(clientFd); });
		const auto end = Clock::now() + std::chrono::seconds(3);
		while (Clock::now() < end) {
			const int64_t now = authNowNs();
			if (srv.hs->checkTimeout(now))
				break;
			if (srv.hs->state() == AuthState::Done && srv.hs->output().empty() && srv.opened.size() >= wantOpen)
				break;
			/* Park until a frame arrives or the step's deadline. */
			const int64_t left = srv.hs->state() == AuthState::InProgress ? srv.hs->deadlineNs() - now
										    : 10 * kMs;
			(*loop)->wait(left > 0 ? left : 0);
			srv.flush();
		}
		if (srv.hs->state() == AuthState::Failed)
			(void)(*loop)->close(srv.conn); /* as the agent would: the client sees the close */
		t.join();
	}
};

TEST_P(AuthLoopTest, LoopDrivesTheServerToOpen)
{
	LoopServer srv;
	Outcome co;
	Bytes ping = frame(FrameKind::Ping, Bytes(8, 0x77));
	serve(srv, serverConfig(), 1, [&](UniqueFd &fd) {
		co = runClient(fd.get(), keyA, clientConfig());
		if (co.code == RMA_SUCCESS)
			(void)send(fd.get(), ping.data(), ping.size(), MSG_NOSIGNAL);
	});
	if (IsSkipped() || HasFatalFailure())
		return;
	ASSERT_EQ(co.code, RMA_SUCCESS) << errorMessage(co.code);
	ASSERT_EQ(srv.hs->state(), AuthState::Done) << errorMessage(srv.hs->error());
	EXPECT_EQ(srv.hs->peer().leader, 2u);
	EXPECT_EQ(srv.hs->peer().rank, 3u);
	ASSERT_EQ(srv.opened.size(), 1u);
	EXPECT_EQ(srv.opened[0], ping);
}

TEST_P(AuthLoopTest, LoopRefusesAWrongKeyAndSendsNoReady)
{
	LoopServer srv;
	Bytes received;
	serve(srv, serverConfig(), 0, [&](UniqueFd &fd) {
		/* A client with another secret that answers anyway (it cannot check macS). */
		Handshake c = makeClient(keyB);
		Bytes hello = drain(c);
		(void)send(fd.get(), hello.data(), hello.size(), MSG_NOSIGNAL);
		Bytes challenge(kHeaderBytes + kNonceBytes + kMacBytes);
		if (recv(fd.get(), challenge.data(), challenge.size(), MSG_WAITALL) != static_cast<ssize_t>(challenge.size()))
			return;
		Bytes proof = forgeProof(keyB, hello, challenge, 2, 3);
		(void)send(fd.get(), proof.data(), proof.size(), MSG_NOSIGNAL);
		uint8_t b[64];
		pollfd p{ fd.get(), POLLIN, 0 };
		while (::poll(&p, 1, 2000) > 0) {
			ssize_t n = recv(fd.get(), b, sizeof(b), 0);
			if (n <= 0)
				break;
			received.insert(received.end(), b, b + n);
		}
	});
	if (IsSkipped() || HasFatalFailure())
		return;
	EXPECT_EQ(srv.hs->state(), AuthState::Failed);
	EXPECT_EQ(srv.hs->failure(), AuthError::BadMac) << errorMessage(srv.hs->error());
	EXPECT_TRUE(received.empty()) << received.size() << " bytes after the CHALLENGE (a READY?)";
}

TEST_P(AuthLoopTest, LoopTimesOutASilentClient)
{
	LoopServer srv;
	const auto t0 = Clock::now();
	serve(srv, serverConfig(150), 0, [&](UniqueFd &fd) {
		pollfd p{ fd.get(), POLLIN, 0 };
		(void)::poll(&p, 1, 2000); /* until the server closes */
	});
	if (IsSkipped() || HasFatalFailure())
		return;
	const auto took = Clock::now() - t0;
	EXPECT_EQ(srv.hs->failure(), AuthError::Timeout) << errorMessage(srv.hs->error());
	EXPECT_GE(took, std::chrono::milliseconds(150));
	EXPECT_LT(took, std::chrono::milliseconds(1500));
}

INSTANTIATE_TEST_SUITE_P(Backends, AuthLoopTest, ::testing::Values(UringPolicy::Off, UringPolicy::Require),
			 [](const ::testing::TestParamInfo<UringPolicy> &i) {
				 return i.param == UringPolicy::Off ? "Poll" : "IoUring";
			 });

#endif /* HAVE_LIBURING */

} /* namespace */
