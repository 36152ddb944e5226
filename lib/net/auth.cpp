/* SPDX-License-Identifier: MIT */
#include "net/auth.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/random.h>
#include <sys/socket.h>

#include <cerrno>
#include <chrono>
#include <cstdarg>
#include <cstdio>
#include <cstring>
#include <utility>

#include <openssl/core_names.h>
#include <openssl/crypto.h>
#include <openssl/err.h>
#include <openssl/evp.h>
#include <openssl/kdf.h>
#include <openssl/params.h>

#include "error/error.h"
#include "net/le.h"

namespace librma::net {

namespace {

constexpr char kServerLabel[8] = { 'l', 'i', 'b', 'r', 'm', 'a', '-', 's' };
constexpr char kClientLabel[8] = { 'l', 'i', 'b', 'r', 'm', 'a', '-', 'c' };
constexpr char kRankLabel[8] = { 'l', 'i', 'b', 'r', 'm', 'a', '-', 'r' };
constexpr uint32_t kHelloBody = 16 + kNonceBytes;
constexpr uint32_t kChallengeBody = kNonceBytes + kMacBytes;
constexpr uint32_t kProofBody = 8 + kMacBytes + kSignatureBytes;

/* OpenSSL's last error as text, for messages (drains its queue). */
std::string sslError()
{
	unsigned long e = ERR_get_error();
	ERR_clear_error();
	if (e == 0)
		return "no OpenSSL reason";
	char buf[256];
	ERR_error_string_n(e, buf, sizeof(buf));
	return buf;
}

/* Fill @out from getrandom (blocking only until the pool is initialised, once after boot). */
int randomBytes(std::span<uint8_t> out)
{
	std::size_t got = 0;
	while (got < out.size()) {
		ssize_t n = getrandom(out.data() + got, out.size() - got, 0);
		if (n < 0) {
			const int err = errno;
			if (err == EINTR)
				continue;
			return makeErrnoError(RMA_ERR_INTERN, err, "auth: getrandom for a nonce");
		}
		got += static_cast<std::size_t>(n);
	}
	return RMA_SUCCESS;
}

/* The body length each handshake kind must have. */
uint32_t handshakeBody(uint16_t kind) noexcept
{
	switch (static_cast<FrameKind>(kind)) {
	case FrameKind::Hello:
		return kHelloBody;
	case FrameKind::Challenge:
		return kChallengeBody;
	case FrameKind::Proof:
		return kProofBody;
	default:
		return 0; /* READY */
	}
}

/* A parse context for the handshake: connection-level frames need no world or windows. */
ParseContext handshakeContext(ConnPhase phase) noexcept
{
	ParseContext c;
	c.phase = phase;
	c.maxBody = kMaxBody;
	return c;
}

std::span<const uint8_t> bytesOf(const char (&label)[8]) noexcept
{
	return { reinterpret_cast<const uint8_t *>(label), 8 };
}

} /* namespace */

int64_t authNowNs() noexcept
{
	return std::chrono::duration_cast<std::chrono::nanoseconds>(
		       std::chrono::steady_clock::now().time_since_epoch())
		.count();
}

/* ---- RankIdentity ---- */

Result<RankIdentity> RankIdentity::generate()
{
	RankIdentity id;
	id.key_ = EVP_PKEY_Q_keygen(nullptr, nullptr, "ED25519");
	if (!id.key_)
		return Result<RankIdentity>::failure(
			makeError(RMA_ERR_INTERN, "auth: cannot draw an Ed25519 identity (%s)", sslError().c_str()));
	std::size_t len = id.public_.size();
	if (EVP_PKEY_get_raw_public_key(id.key_, id.public_.data(), &len) != 1 || len != id.public_.size())
		return Result<RankIdentity>::failure(
			makeError(RMA_ERR_INTERN, "auth: Ed25519 public key (%s)", sslError().c_str()));
	return id;
}

RankIdentity::RankIdentity(RankIdentity &&other) noexcept
	: key_(std::exchange(other.key_, nullptr)), public_(other.public_)
{
}

RankIdentity &RankIdentity::operator=(RankIdentity &&other) noexcept
{
	if (this != &other) {
		EVP_PKEY_free(key_);
		key_ = std::exchange(other.key_, nullptr);
		public_ = other.public_;
	}
	return *this;
}

RankIdentity::~RankIdentity()
{
	EVP_PKEY_free(key_); /* libcrypto cleanses the private key */
}

namespace {

/* Ed25519 signs a whole message (no streaming): the parts, joined. */
std::vector<uint8_t> joined(std::span<const std::span<const uint8_t>> parts)
{
	std::vector<uint8_t> msg;
	for (std::span<const uint8_t> p : parts)
		msg.insert(msg.end(), p.begin(), p.end());
	return msg;
}

} /* namespace */

int RankIdentity::sign(std::span<const std::span<const uint8_t>> parts, std::array<uint8_t, kSignatureBytes> &out) const
{
	out.fill(0);
	if (!key_)
		return makeError(RMA_ERR_INTERN, "auth: signing with a moved-from identity");
	const std::vector<uint8_t> msg = joined(parts);
	EVP_MD_CTX *ctx = EVP_MD_CTX_new();
	std::size_t len = out.size();
	const bool ok = ctx && EVP_DigestSignInit(ctx, nullptr, nullptr, nullptr, key_) == 1 &&
			EVP_DigestSign(ctx, out.data(), &len, msg.data(), msg.size()) == 1 && len == out.size();
	EVP_MD_CTX_free(ctx);
	if (!ok) {
		out.fill(0);
		return makeError(RMA_ERR_INTERN, "auth: Ed25519 signature failed (%s)", sslError().c_str());
	}
	return RMA_SUCCESS;
}

bool verifySignature(std::span<const uint8_t, kIdentityKeyBytes> publicKey,
		     std::span<const std::span<const uint8_t>> parts, std::span<const uint8_t, kSignatureBytes> sig)
{
	EVP_PKEY *key = EVP_PKEY_new_raw_public_key(EVP_PKEY_ED25519, nullptr, publicKey.data(), publicKey.size());
	if (!key) {
		ERR_clear_error();
		return false;
	}
	const std::vector<uint8_t> msg = joined(parts);
	EVP_MD_CTX *ctx = EVP_MD_CTX_new();
	const bool ok = ctx && EVP_DigestVerifyInit(ctx, nullptr, nullptr, nullptr, key) == 1 &&
			EVP_DigestVerify(ctx, sig.data(), sig.size(), msg.data(), msg.size()) == 1;
	EVP_MD_CTX_free(ctx);
	EVP_PKEY_free(key);
	ERR_clear_error();
	return ok;
}

namespace {

/* "librma-r" | nonceS | nonceC | clientLeader | clientRank | purpose | serverRank: what sigC signs. */
struct RankTranscript {
	uint8_t who[16];
	std::span<const uint8_t> parts[4];
	RankTranscript(std::span<const uint8_t, kNonceBytes> nonceS, std::span<const uint8_t, kNonceBytes> nonceC,
		       uint32_t clientLeader, uint32_t clientRank, uint32_t purpose, uint32_t serverRank)
	{
		le::store<uint32_t>(who, clientLeader);
		le::store<uint32_t>(who + 4, clientRank);
		le::store<uint32_t>(who + 8, purpose);
		le::store<uint32_t>(who + 12, serverRank);
		parts[0] = bytesOf(kRankLabel);
		parts[1] = nonceS;
		parts[2] = nonceC;
		parts[3] = who;
	}
	RankTranscript(const RankTranscript &) = delete; /* parts point into who */
};

} /* namespace */

int clientSignature(const RankIdentity &identity, std::span<const uint8_t, kNonceBytes> nonceS,
		    std::span<const uint8_t, kNonceBytes> nonceC, uint32_t clientLeader, uint32_t clientRank,
		    uint32_t purpose, uint32_t serverRank, std::array<uint8_t, kSignatureBytes> &out)
{
	RankTranscript t(nonceS, nonceC, clientLeader, clientRank, purpose, serverRank);
	return identity.sign(t.parts, out);
}

bool clientSignatureValid(std::span<const uint8_t, kIdentityKeyBytes> publicKey,
			  std::span<const uint8_t, kNonceBytes> nonceS, std::span<const uint8_t, kNonceBytes> nonceC,
			  uint32_t clientLeader, uint32_t clientRank, uint32_t purpose, uint32_t serverRank,
			  std::span<const uint8_t, kSignatureBytes> sig)
{
	RankTranscript t(nonceS, nonceC, clientLeader, clientRank, purpose, serverRank);
	return verifySignature(publicKey, t.parts, sig);
}

/* ---- AuthKey ---- */

Result<AuthKey> AuthKey::derive(std::span<const uint8_t> secret)
{
	if (secret.size() < 16)
		return Result<AuthKey>::failure(
			makeError(RMA_ERR_ARG, "auth: job secret of %zu bytes (at least 16 needed)", secret.size()));
	AuthKey k;
	EVP_KDF *kdf = EVP_KDF_fetch(nullptr, "HKDF", nullptr);
	if (!kdf)
		return Result<AuthKey>::failure(
			makeError(RMA_ERR_INTERN, "auth: libcrypto has no HKDF (%s)", sslError().c_str()));
	EVP_KDF_CTX *kctx = EVP_KDF_CTX_new(kdf);
	EVP_KDF_free(kdf);
	if (!kctx)
		return Result<AuthKey>::failure(
			makeError(RMA_ERR_INTERN, "auth: HKDF context (%s)", sslError().c_str()));
	char digest[] = "SHA256";
	char info[] = "librma net v1";
	static_assert(sizeof(info) - 1 == std::char_traits<char>::length(kAuthKdfInfo));
	OSSL_PARAM params[] = {
		OSSL_PARAM_construct_utf8_string(OSSL_KDF_PARAM_DIGEST, digest, 0),
		OSSL_PARAM_construct_octet_string(OSSL_KDF_PARAM_KEY, const_cast<uint8_t *>(secret.data()),
						  secret.size()),
		OSSL_PARAM_construct_octet_string(OSSL_KDF_PARAM_INFO, info, sizeof(info) - 1),
		OSSL_PARAM_construct_end(),
	};
	const int ok = EVP_KDF_derive(kctx, k.key_.data(), k.key_.size(), params);
	EVP_KDF_CTX_free(kctx); /* cleanses its copy of the secret */
	if (ok != 1)
		return Result<AuthKey>::failure(
			makeError(RMA_ERR_INTERN, "auth: HKDF-SHA256 derivation failed (%s)", sslError().c_str()));
	k.mac_ = EVP_MAC_fetch(nullptr, "HMAC", nullptr);
	if (!k.mac_)
		return Result<AuthKey>::failure(
			makeError(RMA_ERR_INTERN, "auth: libcrypto has no HMAC (%s)", sslError().c_str()));
	return k;
}

AuthKey::AuthKey(AuthKey &&other) noexcept : key_(other.key_), mac_(std::exchange(other.mac_, nullptr))
{
	OPENSSL_cleanse(other.key_.data(), other.key_.size());
}

AuthKey &AuthKey::operator=(AuthKey &&other) noexcept
{
	if (this != &other) {
		wipe();
		key_ = other.key_;
		mac_ = std::exchange(other.mac_, nullptr);
		OPENSSL_cleanse(other.key_.data(), other.key_.size());
	}
	return *this;
}

AuthKey::~AuthKey()
{
	wipe();
}

void AuthKey::wipe() noexcept
{
	OPENSSL_cleanse(key_.data(), key_.size());
	EVP_MAC_free(mac_);
	mac_ = nullptr;
}

int AuthKey::mac(std::span<const std::span<const uint8_t>> parts, std::array<uint8_t, kMacBytes> &out) const
{
	out.fill(0);
	if (!mac_)
		return makeError(RMA_ERR_INTERN, "auth: MAC with a moved-from key");
	EVP_MAC_CTX *ctx = EVP_MAC_CTX_new(mac_);
	if (!ctx)
		return makeError(RMA_ERR_INTERN, "auth: HMAC context (%s)", sslError().c_str());
	char digest[] = "SHA256";
	OSSL_PARAM params[] = {
		OSSL_PARAM_construct_utf8_string(OSSL_MAC_PARAM_DIGEST, digest, 0),
		OSSL_PARAM_construct_end(),
	};
	bool ok = EVP_MAC_init(ctx, key_.data(), key_.size(), params) == 1;
	for (std::span<const uint8_t> p : parts)
		ok = ok && EVP_MAC_update(ctx, p.data(), p.size()) == 1;
	std::size_t len = 0;
	ok = ok && EVP_MAC_final(ctx, out.data(), &len, out.size()) == 1 && len == out.size();
	EVP_MAC_CTX_free(ctx); /* cleanses its key schedule */
	if (!ok) {
		OPENSSL_cleanse(out.data(), out.size());
		return makeError(RMA_ERR_INTERN, "auth: HMAC-SHA256 failed (%s)", sslError().c_str());
	}
	return RMA_SUCCESS;
}

int serverMac(const AuthKey &key, std::span<const uint8_t, kNonceBytes> nonceC,
	      std::span<const uint8_t, kNonceBytes> nonceS, uint32_t serverLeader, std::array<uint8_t, kMacBytes> &out)
{
	uint8_t leader[4];
	le::store<uint32_t>(leader, serverLeader);
	const std::span<const uint8_t> parts[] = { bytesOf(kServerLabel), nonceC, nonceS, leader };
	return key.mac(parts, out);
}

int clientMac(const AuthKey &key, std::span<const uint8_t, kNonceBytes> nonceS,
	      std::span<const uint8_t, kNonceBytes> nonceC, uint32_t clientLeader, uint32_t clientRank,
	      std::array<uint8_t, kMacBytes> &out, uint32_t purpose)
{
	uint8_t who[12];
	le::store<uint32_t>(who, clientLeader);
	le::store<uint32_t>(who + 4, clientRank);
	le::store<uint32_t>(who + 8, purpose);
	const std::span<const uint8_t> parts[] = { bytesOf(kClientLabel), nonceS, nonceC, who };
	return key.mac(parts, out);
}

/* ---- NonceCache ---- */

NonceCache::NonceCache(std::size_t capacity) : slots_(capacity == 0 ? 1 : capacity) {}

bool NonceCache::contains(std::span<const uint8_t, kNonceBytes> nonce) const noexcept
{
	for (std::size_t i = 0; i < count_; ++i)
		if (std::memcmp(slots_[i].data(), nonce.data(), kNonceBytes) == 0)
			return true;
	return false;
}

void NonceCache::insert(std::span<const uint8_t, kNonceBytes> nonce) noexcept
{
	std::memcpy(slots_[next_].data(), nonce.data(), kNonceBytes);
	next_ = (next_ + 1) % slots_.size();
	if (count_ < slots_.size())
		++count_;
}

/* ---- Handshake ---- */

const char *authErrorName(AuthError e) noexcept
{
	switch (e) {
	case AuthError::None: return "none";
	case AuthError::Local: return "local failure";
	case AuthError::Malformed: return "malformed frame";
	case AuthError::BadVersion: return "protocol version mismatch";
	case AuthError::WrongJob: return "wrong job";
	case AuthError::BadPeer: return "peer not allowed";
	case AuthError::Replay: return "replay";
	case AuthError::BadMac: return "bad MAC";
	case AuthError::BadSignature: return "bad signature";
	case AuthError::Timeout: return "timeout";
	case AuthError::PeerClosed: return "peer closed";
	}
	return "unknown";
}

Result<Handshake> Handshake::client(const AuthKey &key, ClientConfig config, int64_t nowNs)
{
	if (!key.isValid() || config.worldSize == 0 || config.leader >= config.worldSize ||
	    config.rank >= config.worldSize || config.serverLeader >= config.worldSize || config.stepTimeoutNs <= 0)
		return Result<Handshake>::failure(makeError(
			RMA_ERR_ARG,
			"auth client, peer %s: invalid configuration (key %s, world %u, leader %u, rank %u, server "
			"leader %u, step timeout %lld ns)",
			config.peer.c_str(), key.isValid() ? "valid" : "invalid", config.worldSize, config.leader,
			config.rank, config.serverLeader, static_cast<long long>(config.stepTimeoutNs)));
	Handshake h;
	h.key_ = &key;
	h.server_ = false;
	h.phase_ = ConnPhase::AwaitChallenge;
	h.stepTimeout_ = config.stepTimeoutNs;
	h.deadline_ = nowNs + config.stepTimeoutNs;
	h.jobHash_ = config.jobHash;
	h.worldSize_ = config.worldSize;
	h.leader_ = config.leader;
	h.rank_ = config.rank;
	h.serverLeader_ = config.serverLeader;
	h.purpose_ = config.purpose;
	h.identity_ = config.identity;
	h.serverRank_ = config.serverRank;
	h.peerName_ = std::move(config.peer);
	if (int rc = randomBytes(h.nonceMine_); rc != RMA_SUCCESS)
		return Result<Handshake>::failure(rc);
	uint8_t body[kHelloBody];
	le::store<uint32_t>(body, kProtocolVersion);
	le::store<uint32_t>(body + 4, h.leader_);
	le::store<uint64_t>(body + 8, h.jobHash_);
	std::memcpy(body + 16, h.nonceMine_.data(), kNonceBytes);
	h.queue(FrameKind::Hello, body);
	return h;
}

Result<Handshake> Handshake::server(const AuthKey &key, ServerConfig config, int64_t nowNs)
{
	if (!key.isValid() || config.worldSize == 0 || config.leader >= config.worldSize || config.stepTimeoutNs <= 0)
		return Result<Handshake>::failure(
			makeError(RMA_ERR_ARG,
				  "auth server, peer %s: invalid configuration (key %s, world %u, leader %u, step "
				  "timeout %lld ns)",
				  config.peer.c_str(), key.isValid() ? "valid" : "invalid", config.worldSize,
				  config.leader, static_cast<long long>(config.stepTimeoutNs)));
	Handshake h;
	h.key_ = &key;
	h.server_ = true;
	h.phase_ = ConnPhase::AwaitHello;
	h.stepTimeout_ = config.stepTimeoutNs;
	h.deadline_ = nowNs + config.stepTimeoutNs;
	h.jobHash_ = config.jobHash;
	h.worldSize_ = config.worldSize;
	h.leader_ = config.leader;
	h.peerName_ = std::move(config.peer);
	h.seen_ = config.seen;
	h.allowLeader_ = config.allowLeader;
	h.allowRank_ = config.allowRank;
	h.rankKey_ = config.rankKey;
	h.serverRank_ = config.rank;
	h.allowCtx_ = config.allowCtx;
	if (int rc = randomBytes(h.nonceMine_); rc != RMA_SUCCESS)
		return Result<Handshake>::failure(rc);
	return h;
}

Handshake::Handshake(Handshake &&other) noexcept
{
	*this = std::move(other);
}

Handshake &Handshake::operator=(Handshake &&other) noexcept
{
	if (this == &other)
		return *this;
	wipe();
	key_ = other.key_;
	server_ = other.server_;
	state_ = other.state_;
	failure_ = other.failure_;
	phase_ = other.phase_;
	error_ = other.error_;
	stepTimeout_ = other.stepTimeout_;
	deadline_ = other.deadline_;
	jobHash_ = other.jobHash_;
	worldSize_ = other.worldSize_;
	leader_ = other.leader_;
	rank_ = other.rank_;
	serverLeader_ = other.serverLeader_;
	purpose_ = other.purpose_;
	peerName_ = std::move(other.peerName_);
	seen_ = other.seen_;
	allowLeader_ = other.allowLeader_;
	allowRank_ = other.allowRank_;
	rankKey_ = other.rankKey_;
	identity_ = other.identity_;
	serverRank_ = other.serverRank_;
	allowCtx_ = other.allowCtx_;
	peer_ = other.peer_;
	nonceMine_ = other.nonceMine_;
	noncePeer_ = other.noncePeer_;
	in_ = other.in_;
	inHave_ = other.inHave_;
	out_ = other.out_;
	outHead_ = other.outHead_;
	outTail_ = other.outTail_;
	other.wipe();
	other.key_ = nullptr;
	other.state_ = AuthState::Failed;
	return *this;
}

Handshake::~Handshake()
{
	wipe();
}

void Handshake::wipe() noexcept
{
	OPENSSL_cleanse(nonceMine_.data(), nonceMine_.size());
	OPENSSL_cleanse(noncePeer_.data(), noncePeer_.size());
	OPENSSL_cleanse(in_.data(), in_.size());
	OPENSSL_cleanse(out_.data(), out_.size());
	inHave_ = 0;
	outHead_ = outTail_ = 0;
}

std::span<const uint8_t> Handshake::output() const noexcept
{
	return { out_.data() + outHead_, outTail_ - outHead_ };
}

void Handshake::consumeOutput(std::size_t n) noexcept
{
	outHead_ += n < outTail_ - outHead_ ? n : outTail_ - outHead_;
	if (outHead_ == outTail_)
		outHead_ = outTail_ = 0;
}

void Handshake::queue(FrameKind kind, std::span<const uint8_t> body) noexcept
{
	FrameHeader h;
	h.kind = static_cast<uint16_t>(kind);
	FrameWriter w(std::span<uint8_t>(out_).subspan(outTail_));
	w.begin(h);
	w.put(body.data(), body.size());
	if (!w.end()) {
		fail(AuthError::Local, "no room to queue %s", frameKindName(h.kind));
		return;
	}
	outTail_ += w.size();
}

const char *Handshake::waitingFor() const noexcept
{
	switch (phase_) {
	case ConnPhase::AwaitHello: return "HELLO";
	case ConnPhase::AwaitChallenge: return "CHALLENGE";
	case ConnPhase::AwaitProof: return "PROOF";
	case ConnPhase::AwaitReady: return "READY";
	case ConnPhase::Open: break;
	}
	return "nothing";
}

void Handshake::fail(AuthError why, const char *fmt, ...) noexcept
{
	if (state_ != AuthState::InProgress)
		return;
	char what[256];
	va_list ap;
	va_start(ap, fmt);
	std::vsnprintf(what, sizeof(what), fmt, ap);
	va_end(ap);
	error_ = makeError(RMA_ERR_INTERN, "auth %s, peer %s, awaiting %s: %s", server_ ? "server" : "client",
			   peerName_.empty() ? "(unnamed)" : peerName_.c_str(), waitingFor(), what);
	failure_ = why;
	state_ = AuthState::Failed;
	wipe();
}

void Handshake::finish() noexcept
{
	state_ = AuthState::Done;
	phase_ = ConnPhase::Open;
	/* Keep the queued output (READY), wipe the rest. */
	OPENSSL_cleanse(nonceMine_.data(), nonceMine_.size());
	OPENSSL_cleanse(noncePeer_.data(), noncePeer_.size());
	OPENSSL_cleanse(in_.data(), in_.size());
	inHave_ = 0;
}

bool Handshake::checkTimeout(int64_t nowNs) noexcept
{
	if (state_ == AuthState::InProgress && nowNs > deadline_)
		fail(AuthError::Timeout, "no frame within %lld ms", static_cast<long long>(stepTimeout_ / 1'000'000));
	return state_ == AuthState::Failed;
}

void Handshake::peerClosed(int error) noexcept
{
	if (error != 0)
		fail(AuthError::PeerClosed, "connection failed: %s", std::strerror(error));
	else if (inHave_ != 0)
		fail(AuthError::PeerClosed, "connection closed after %zu bytes of a frame (truncated)", inHave_);
	else
		fail(AuthError::PeerClosed, "connection closed by the peer%s",
		     server_ ? "" : " (it refused us: wrong secret or job?)");
}

std::size_t Handshake::wanted() const noexcept
{
	if (state_ != AuthState::InProgress)
		return 0;
	if (inHave_ < kHeaderBytes)
		return kHeaderBytes - inHave_;
	return kHeaderBytes + le::load<uint32_t>(in_.data() + 4) - inHave_;
}

std::size_t Handshake::feed(std::span<const uint8_t> bytes, int64_t nowNs) noexcept
{
	if (checkTimeout(nowNs) || state_ != AuthState::InProgress)
		return 0;
	std::size_t used = 0;
	while (used < bytes.size() && state_ == AuthState::InProgress) {
		const std::size_t take = std::min(wanted(), bytes.size() - used);
		std::memcpy(in_.data() + inHave_, bytes.data() + used, take);
		inHave_ += take;
		used += take;
		if (inHave_ == kHeaderBytes) {
			/* Decide on the header alone: never wait for a body a handshake frame cannot have. */
			const FrameHeader h = decodeHeader(in_.data());
			const ParseContext ctx = handshakeContext(phase_);
			const ParseResult r = checkHeader(h, ctx);
			if (r.verdict != Verdict::Ok) {
				fail(AuthError::Malformed, "%s", describe(r, h).c_str());
				break;
			}
			/* frame::parse leaves seq to the kind; a handshake frame has no stream yet, so every bit is fixed. */
			if (h.seq != 0) {
				fail(AuthError::Malformed, "%s with seq %llu (handshake frames carry 0)",
				     frameKindName(h.kind), static_cast<unsigned long long>(h.seq));
				break;
			}
			if (h.bodyLen != handshakeBody(h.kind)) {
				fail(AuthError::Malformed, "%s with a %u-byte body (expected %u)", frameKindName(h.kind),
				     h.bodyLen, handshakeBody(h.kind));
				break;
			}
		}
		if (inHave_ >= kHeaderBytes && wanted() == 0) {
			const ParseContext ctx = handshakeContext(phase_);
			ParsedFrame f;
			const ParseResult r = parse(std::span<const uint8_t>(in_.data(), inHave_), ctx, f);
			if (r.verdict != Verdict::Ok) {
				fail(AuthError::Malformed, "%s", describe(r, f.header).c_str());
				break;
			}
			const ConnPhase before = phase_;
			onFrame(f);
			inHave_ = 0;
			/* A new step has its own deadline (§6: each step is timed); after Done it bounds sending READY. */
			if (state_ != AuthState::Failed && phase_ != before)
				deadline_ = nowNs + stepTimeout_;
		}
	}
	return used;
}

void Handshake::onFrame(const ParsedFrame &f) noexcept
{
	switch (static_cast<FrameKind>(f.header.kind)) {
	case FrameKind::Hello:
		onHello(f);
		break;
	case FrameKind::Challenge:
		onChallenge(f);
		break;
	case FrameKind::Proof:
		onProof(f);
		break;
	case FrameKind::Ready:
		onReady();
		break;
	default: /* parse() admits only the phase's kind */
		fail(AuthError::Malformed, "unexpected %s", frameKindName(f.header.kind));
		break;
	}
}

void Handshake::onHello(const ParsedFrame &f) noexcept
{
	/* The HELLO's shape, all of it, before anything derived from K is computed or sent. */
	const uint32_t version = f.word0;
	const uint32_t leader = f.word1;
	if (version != kProtocolVersion)
		return fail(AuthError::BadVersion, "HELLO speaks protocol version %u, this side %u", version,
			    kProtocolVersion);
	if (f.value != jobHash_)
		return fail(AuthError::WrongJob, "HELLO for job hash %016llx, this job is %016llx",
			    static_cast<unsigned long long>(f.value), static_cast<unsigned long long>(jobHash_));
	if (leader >= worldSize_)
		return fail(AuthError::BadPeer, "HELLO from leader %u, outside the world of %u ranks", leader,
			    worldSize_);
	if (allowLeader_ && !allowLeader_(allowCtx_, leader))
		return fail(AuthError::BadPeer, "HELLO from leader %u, which may not connect here", leader);
	std::span<const uint8_t, kNonceBytes> nonceC(f.data.data(), kNonceBytes);
	if (CRYPTO_memcmp(nonceC.data(), nonceMine_.data(), kNonceBytes) == 0)
		return fail(AuthError::Replay, "HELLO carries this server's own nonce");
	if (seen_) {
		if (seen_->contains(nonceC))
			return fail(AuthError::Replay, "HELLO from leader %u repeats a nonce seen before (replay)",
				    leader);
		seen_->insert(nonceC);
	}
	std::memcpy(noncePeer_.data(), nonceC.data(), kNonceBytes);
	peer_.leader = leader;

	uint8_t body[kChallengeBody];
	std::memcpy(body, nonceMine_.data(), kNonceBytes);
	std::array<uint8_t, kMacBytes> macS;
	if (int rc = serverMac(*key_, noncePeer_, nonceMine_, leader_, macS); rc != RMA_SUCCESS)
		return fail(AuthError::Local, "computing macS: %s", errorMessage(rc).c_str());
	std::memcpy(body + kNonceBytes, macS.data(), kMacBytes);
	OPENSSL_cleanse(macS.data(), macS.size());
	queue(FrameKind::Challenge, body);
	OPENSSL_cleanse(body, sizeof(body));
	if (state_ != AuthState::InProgress)
		return;
	phase_ = ConnPhase::AwaitProof;
}

void Handshake::onChallenge(const ParsedFrame &f) noexcept
{
	std::span<const uint8_t, kNonceBytes> nonceS(f.data.data(), kNonceBytes);
	const uint8_t *macS = f.data.data() + kNonceBytes;
	if (CRYPTO_memcmp(nonceS.data(), nonceMine_.data(), kNonceBytes) == 0)
		return fail(AuthError::Replay, "CHALLENGE echoes this client's nonce (reflection)");
	std::array<uint8_t, kMacBytes> want;
	if (int rc = serverMac(*key_, nonceMine_, nonceS, serverLeader_, want); rc != RMA_SUCCESS)
		return fail(AuthError::Local, "computing macS: %s", errorMessage(rc).c_str());
	const bool good = CRYPTO_memcmp(want.data(), macS, kMacBytes) == 0;
	OPENSSL_cleanse(want.data(), want.size());
	if (!good)
		return fail(AuthError::BadMac,
			    "CHALLENGE MAC mismatch: the server is not leader %u of this job, or holds another "
			    "secret (or replays an old CHALLENGE)",
			    serverLeader_);
	std::memcpy(noncePeer_.data(), nonceS.data(), kNonceBytes);
	peer_.leader = serverLeader_;
	peer_.rank = serverLeader_;

	uint8_t body[kProofBody];
	le::store<uint32_t>(body, rank_);
	le::store<uint32_t>(body + 4, purpose_);
	std::array<uint8_t, kMacBytes> macC;
	if (int rc = clientMac(*key_, noncePeer_, nonceMine_, leader_, rank_, macC, purpose_); rc != RMA_SUCCESS)
		return fail(AuthError::Local, "computing macC: %s", errorMessage(rc).c_str());
	std::memcpy(body + 8, macC.data(), kMacBytes);
	OPENSSL_cleanse(macC.data(), macC.size());
	std::array<uint8_t, kSignatureBytes> sigC{};
	if (identity_)
		if (int rc = clientSignature(*identity_, noncePeer_, nonceMine_, leader_, rank_, purpose_, serverRank_, sigC);
		    rc != RMA_SUCCESS)
			return fail(AuthError::Local, "signing the PROOF: %s", errorMessage(rc).c_str());
	std::memcpy(body + 8 + kMacBytes, sigC.data(), kSignatureBytes);
	queue(FrameKind::Proof, body);
	OPENSSL_cleanse(body, sizeof(body));
	if (state_ != AuthState::InProgress)
		return;
	phase_ = ConnPhase::AwaitReady;
}

void Handshake::onProof(const ParsedFrame &f) noexcept
{
	const uint32_t rank = f.word0;
	const uint32_t purpose = f.word1; /* parse() let only the known purposes through */
	const uint8_t *macC = f.data.data();
	std::array<uint8_t, kMacBytes> want;
	if (int rc = clientMac(*key_, nonceMine_, noncePeer_, peer_.leader, rank, want, purpose); rc != RMA_SUCCESS)
		return fail(AuthError::Local, "computing macC: %s", errorMessage(rc).c_str());
	const bool good = CRYPTO_memcmp(want.data(), macC, kMacBytes) == 0;
	OPENSSL_cleanse(want.data(), want.size());
	if (!good)
		return fail(AuthError::BadMac,
			    "PROOF MAC mismatch from leader %u, rank %u: the client holds another secret (or "
			    "replays an old PROOF)",
			    peer_.leader, rank);
	/* The rank is vouched for by the MAC; whether it may speak for that host is policy. */
	if (rank >= worldSize_)
		return fail(AuthError::BadPeer, "PROOF for rank %u, outside the world of %u ranks", rank, worldSize_);
	if (allowRank_ && !allowRank_(allowCtx_, peer_.leader, rank))
		return fail(AuthError::BadPeer, "PROOF for rank %u, which may not speak for leader %u's host", rank,
			    peer_.leader);
	/* The MAC says a member sent it; the signature, that rank itself did. */
	if (rankKey_) {
		const std::array<uint8_t, kIdentityKeyBytes> *pub = rankKey_(allowCtx_, rank);
		if (!pub)
			return fail(AuthError::BadPeer, "PROOF for rank %u, which published no identity", rank);
		const std::span<const uint8_t, kSignatureBytes> sigC(f.data.data() + kMacBytes, kSignatureBytes);
		if (!clientSignatureValid(*pub, nonceMine_, noncePeer_, peer_.leader, rank, purpose, serverRank_, sigC))
			return fail(AuthError::BadSignature,
				    "PROOF signature mismatch for rank %u (leader %u): a member of this job posing as "
				    "another rank, or a process that lost its identity",
				    rank, peer_.leader);
	}
	peer_.rank = rank;
	peer_.purpose = purpose;
	queue(FrameKind::Ready, {});
	if (state_ != AuthState::InProgress)
		return;
	finish();
}

void Handshake::onReady() noexcept
{
	finish();
}

/* ---- Blocking helpers ---- */

namespace {

/* "10.77.0.2:4711", "[::1]:4711", or the fd for sockets without an IP peer (snprintf: GCC 12 at -O3 warns falsely, -Wrestrict, on "lit" + string). */
std::string peerAddress(int fd)
{
	sockaddr_storage ss{};
	socklen_t len = sizeof(ss);
	char text[INET6_ADDRSTRLEN + 16];
	char host[INET6_ADDRSTRLEN] = "";
	if (getpeername(fd, reinterpret_cast<sockaddr *>(&ss), &len) < 0) {
		std::snprintf(text, sizeof(text), "fd %d", fd);
	} else if (ss.ss_family == AF_INET) {
		auto *a = reinterpret_cast<sockaddr_in *>(&ss);
		inet_ntop(AF_INET, &a->sin_addr, host, sizeof(host));
		std::snprintf(text, sizeof(text), "%s:%u", host, static_cast<unsigned>(ntohs(a->sin_port)));
	} else if (ss.ss_family == AF_INET6) {
		auto *a = reinterpret_cast<sockaddr_in6 *>(&ss);
		inet_ntop(AF_INET6, &a->sin6_addr, host, sizeof(host));
		std::snprintf(text, sizeof(text), "[%s]:%u", host, static_cast<unsigned>(ntohs(a->sin6_port)));
	} else {
		std::snprintf(text, sizeof(text), "fd %d (local socket)", fd);
	}
	return text;
}

/* Drive @h over @fd until it ends and its last output (READY) has left. */
Result<AuthPeer> drive(int fd, Handshake &h, const std::string &peer)
{
	HandshakePump p = pumpHandshake(fd, h, 0, peer);
	while (p.outcome == HandshakePump::Outcome::Continue) {
		pollfd pf{ fd, p.events, 0 };
		const int64_t leftMs = (p.deadlineNs - authNowNs()) / 1'000'000 + 1;
		const int rc = ::poll(&pf, 1, static_cast<int>(leftMs < 0 ? 0 : leftMs > 60'000 ? 60'000 : leftMs));
		if (rc < 0 && errno == EINTR)
			continue;
		/* A failed poll is the socket's failure: as if it reported an error. */
		p = pumpHandshake(fd, h, rc < 0 ? POLLERR : rc == 0 ? 0 : pf.revents, peer);
	}
	if (p.outcome == HandshakePump::Outcome::Ready)
		return h.peer();
	return Result<AuthPeer>::failure(p.error);
}

} /* namespace */

HandshakePump pumpHandshake(int fd, Handshake &h, short revents, const std::string &peer) noexcept
{
	HandshakePump p;
	/* After Done the handshake cannot fail any more: a failure to send READY is reported here. */
	auto sendFailed = [&](int err) {
		p.outcome = HandshakePump::Outcome::Failed;
		p.error = err ? makeErrnoError(RMA_ERR_INTERN, err, "auth server, peer %s: sending READY", peer.c_str())
			      : makeError(RMA_ERR_INTERN, "auth server, peer %s: READY not sent within the step's time",
					  peer.c_str());
		return p;
	};
	auto failed = [&]() {
		p.outcome = HandshakePump::Outcome::Failed;
		p.error = h.error();
		return p;
	};
	if (h.state() == AuthState::Failed)
		return failed();
	if (revents & POLLNVAL) {
		if (h.state() == AuthState::Done)
			return sendFailed(EBADF);
		h.peerClosed(EBADF);
		return failed();
	}
	std::span<const uint8_t> out = h.output();
	if (revents & (POLLOUT | POLLERR | POLLHUP) && !out.empty()) {
		ssize_t n = ::send(fd, out.data(), out.size(), MSG_NOSIGNAL | MSG_DONTWAIT);
		if (n < 0) {
			const int err = errno;
			if (err != EAGAIN && err != EWOULDBLOCK && err != EINTR) {
				if (h.state() == AuthState::Done)
					return sendFailed(err);
				h.peerClosed(err);
				return failed();
			}
		} else {
			h.consumeOutput(static_cast<std::size_t>(n));
		}
	}
	if (revents & (POLLIN | POLLHUP | POLLERR) && h.wanted() > 0) {
		uint8_t buf[kHeaderBytes + kNonceBytes + kMacBytes];
		const std::size_t want = h.wanted();
		ssize_t n = ::recv(fd, buf, want < sizeof(buf) ? want : sizeof(buf), MSG_DONTWAIT);
		if (n < 0) {
			const int err = errno;
			if (err != EAGAIN && err != EWOULDBLOCK && err != EINTR) {
				h.peerClosed(err);
				return failed();
			}
		} else if (n == 0) {
			h.peerClosed(0);
			return failed();
		} else {
			h.feed(std::span<const uint8_t>(buf, static_cast<std::size_t>(n)), authNowNs());
		}
	}
	if (h.state() == AuthState::Failed)
		return failed();
	const int64_t now = authNowNs();
	const bool done = h.state() == AuthState::Done;
	out = h.output();
	if (done && out.empty()) {
		p.outcome = HandshakePump::Outcome::Ready;
		return p;
	}
	if (h.checkTimeout(now))
		return failed();
	if (done && now > h.deadlineNs())
		return sendFailed(0);
	p.events = static_cast<short>((out.empty() ? 0 : POLLOUT) | (h.wanted() ? POLLIN : 0));
	p.deadlineNs = h.deadlineNs();
	return p;
}

Result<AuthPeer> authenticateClient(int fd, const AuthKey &key, ClientConfig config)
{
	if (config.peer.empty())
		config.peer = peerAddress(fd);
	std::string peer = config.peer;
	auto h = Handshake::client(key, std::move(config), authNowNs());
	if (!h)
		return Result<AuthPeer>::failure(h.code());
	return drive(fd, *h, peer);
}

Result<AuthPeer> authenticateServer(int fd, const AuthKey &key, ServerConfig config)
{
	if (config.peer.empty())
		config.peer = peerAddress(fd);
	std::string peer = config.peer;
	auto h = Handshake::server(key, std::move(config), authNowNs());
	if (!h)
		return Result<AuthPeer>::failure(h.code());
	return drive(fd, *h, peer);
}

} /* namespace librma::net */
