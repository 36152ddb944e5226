/* SPDX-License-Identifier: MIT */
/*
 * The connection handshake of the inter-host transport (docs/design/
 * inter-host.md §6): mutual HMAC-SHA256 challenge-response keyed by the
 * job secret, in 1.5 round trips, as four frames with window 0
 * (lib/net/frame.h) whose seq, origin and target are 0 as well (a
 * handshake frame with any other header bit set is refused):
 *
 *   client -> server  HELLO     {version, clientLeader, jobHash, nonceC[32]}
 *   server -> client  CHALLENGE {nonceS[32], macS}
 *   client -> server  PROOF     {clientRank, purpose, macC, sigC}
 *   server -> client  READY     {}
 *
 *   K    = HKDF-SHA256(ikm = secret, no salt, info = "librma net v1")
 *   macS = HMAC-SHA256(K, "librma-s" | nonceC | nonceS | serverLeader)
 *   macC = HMAC-SHA256(K, "librma-c" | nonceS | nonceC | clientLeader | clientRank | purpose)
 *   sigC = Ed25519(clientRank's private key,
 *                  "librma-r" | nonceS | nonceC | clientLeader | clientRank | purpose | serverRank)
 *
 * ("librma-s"/"librma-c"/"librma-r" are their 8 ASCII bytes; leaders and
 * ranks are u32 little-endian.) The labels keep one proof from serving as
 * another. Fresh nonces on both ends keep a recorded CHALLENGE or PROOF
 * from answering a later session; a server may also keep a NonceCache of
 * recent client nonces and refuse a HELLO that repeats one.
 *
 * K proves membership of the job; every member holds it. sigC proves the
 * rank: each process draws an Ed25519 key pair at init (RankIdentity) and
 * publishes the public key in its own PMIx record, which only it can
 * write, so a member cannot pose as another rank (to unlock its locks or
 * count in its fences) even though it knows K. serverRank (the world rank
 * of the process the client means to reach) keeps a member that a rank
 * connects to from relaying that rank's handshake to another server: the
 * other server refuses a signature that names someone else. A server with
 * ServerConfig::rankKey set requires sigC; one without ignores it (tests
 * of the MAC layer alone).
 *
 * The server computes nothing from K, and sends nothing, before the whole
 * HELLO has passed frame::parse (phase AwaitHello), its version and job
 * hash match, its leader is a rank of the world (and allowLeader agrees)
 * and its nonce is not a replay. Nothing is ever sent after a failure: the
 * caller closes the connection. MACs are compared with CRYPTO_memcmp.
 *
 * Handshake is a pure state machine: bytes in (feed), bytes out (output),
 * a verdict (state). It makes no system call but getrandom at creation,
 * never blocks, and takes the time from its caller, so the net agent's
 * loop drives it from onFrame() and its timer. authenticateClient() and
 * authenticateServer() drive one over a blocking socket (tests, simple
 * tools).
 *
 * Errors: every failure is an RMA_ERR_INTERN-class code (lib/error) whose
 * message names the role, the peer and the step ("auth server, peer
 * 10.77.0.2:41234, awaiting PROOF: PROOF MAC mismatch from leader 2, rank
 * 3: ..."), plus an AuthError that says what went wrong for callers that
 * branch on it.
 *
 * Key material (K, the MAC inputs and expected MACs) is wiped with
 * OPENSSL_cleanse when its owner is destroyed or the handshake ends.
 *
 * Thread safety: AuthKey is immutable after derive(): its const members are
 * thread-safe. A Handshake and a NonceCache belong to one thread at a time
 * (the agent's: progress-thread only); none of them is reentrant across
 * threads. Control path only: these allocate and may call into OpenSSL.
 */
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "common/result.h"
#include "net/frame.h"

typedef struct evp_mac_st EVP_MAC;
typedef struct evp_pkey_st EVP_PKEY;

namespace librma::net {

/* The job secret (PMIx "librma.key") and the derived key K. */
inline constexpr std::size_t kSecretBytes = 32;
inline constexpr std::size_t kAuthKeyBytes = 32;
/* HKDF info string for K. */
inline constexpr const char *kAuthKdfInfo = "librma net v1";
/* Default time allowed for each handshake step (§6: a linked timeout of 1 s). */
inline constexpr int64_t kAuthStepTimeoutNs = 1'000'000'000;

/* The monotonic clock the handshake's deadlines are in (steady_clock, ns). */
int64_t authNowNs() noexcept;

/*
 * K, derived once per job from the secret, with the HMAC implementation
 * fetched once. Move-only; the destructor wipes K and frees the MAC.
 */
class AuthKey
{
public:
	/*
	 * Derive K = HKDF-SHA256(@secret, "librma net v1").
	 * @secret: the job secret, at least 16 bytes (the job's is 32); the
	 *          caller keeps and wipes its own copy.
	 * Returns the key; RMA_ERR_ARG for a secret shorter than 16 bytes;
	 * RMA_ERR_INTERN when libcrypto cannot fetch HKDF or HMAC or the
	 * derivation fails (the message carries OpenSSL's reason).
	 */
	static Result<AuthKey> derive(std::span<const uint8_t> secret);

	AuthKey(AuthKey &&other) noexcept;
	AuthKey &operator=(AuthKey &&other) noexcept;
	AuthKey(const AuthKey &) = delete;
	AuthKey &operator=(const AuthKey &) = delete;
	~AuthKey();

	/*
	 * HMAC-SHA256 under K of the concatenation of @parts into @out.
	 * Returns RMA_SUCCESS; RMA_ERR_INTERN if libcrypto fails (then @out
	 * is zeroed). Thread-safe (each call has its own MAC context).
	 */
	int mac(std::span<const std::span<const uint8_t>> parts, std::array<uint8_t, kMacBytes> &out) const;

	/* Whether this key holds a derived K (false after a move). */
	bool isValid() const noexcept { return mac_ != nullptr; }

private:
	AuthKey() = default;
	void wipe() noexcept;

	std::array<uint8_t, kAuthKeyBytes> key_{};
	EVP_MAC *mac_ = nullptr;
};

/*
 * A process's identity in the job: an Ed25519 key pair drawn at init
 * (getrandom through libcrypto), whose public half goes into its endpoint
 * card. Move-only; the destructor frees (and libcrypto wipes) the private
 * key. Thread safety: immutable after generate(); sign() may be called
 * from any thread.
 */
class RankIdentity
{
public:
	/* A fresh key pair; RMA_ERR_INTERN when libcrypto has no Ed25519 or cannot draw a key. */
	static Result<RankIdentity> generate();

	RankIdentity(RankIdentity &&other) noexcept;
	RankIdentity &operator=(RankIdentity &&other) noexcept;
	RankIdentity(const RankIdentity &) = delete;
	RankIdentity &operator=(const RankIdentity &) = delete;
	~RankIdentity();

	/* The public key, as published (raw Ed25519, 32 bytes). */
	const std::array<uint8_t, kIdentityKeyBytes> &publicKey() const noexcept { return public_; }
	/*
	 * Ed25519 signature of the concatenation of @parts into @out.
	 * RMA_SUCCESS; RMA_ERR_INTERN if libcrypto fails (@out zeroed).
	 */
	int sign(std::span<const std::span<const uint8_t>> parts, std::array<uint8_t, kSignatureBytes> &out) const;

private:
	RankIdentity() = default;
	EVP_PKEY *key_ = nullptr;
	std::array<uint8_t, kIdentityKeyBytes> public_{};
};

/*
 * Whether @sig is @publicKey's Ed25519 signature of the concatenation of
 * @parts. False for any malformed key or signature, or if libcrypto fails.
 */
bool verifySignature(std::span<const uint8_t, kIdentityKeyBytes> publicKey,
		     std::span<const std::span<const uint8_t>> parts, std::span<const uint8_t, kSignatureBytes> sig);

/*
 * The client's sigC (the formula above), for the state machine and for
 * tests that forge PROOFs; and whether a sigC verifies under @publicKey.
 */
int clientSignature(const RankIdentity &identity, std::span<const uint8_t, kNonceBytes> nonceS,
		    std::span<const uint8_t, kNonceBytes> nonceC, uint32_t clientLeader, uint32_t clientRank,
		    uint32_t purpose, uint32_t serverRank, std::array<uint8_t, kSignatureBytes> &out);
bool clientSignatureValid(std::span<const uint8_t, kIdentityKeyBytes> publicKey,
			  std::span<const uint8_t, kNonceBytes> nonceS, std::span<const uint8_t, kNonceBytes> nonceC,
			  uint32_t clientLeader, uint32_t clientRank, uint32_t purpose, uint32_t serverRank,
			  std::span<const uint8_t, kSignatureBytes> sig);

/*
 * The server's macS and the client's macC (the formulas above), for the
 * state machine and for tests that forge or replay frames. Return
 * RMA_SUCCESS or AuthKey::mac()'s error.
 */
int serverMac(const AuthKey &key, std::span<const uint8_t, kNonceBytes> nonceC,
	      std::span<const uint8_t, kNonceBytes> nonceS, uint32_t serverLeader, std::array<uint8_t, kMacBytes> &out);
int clientMac(const AuthKey &key, std::span<const uint8_t, kNonceBytes> nonceS,
	      std::span<const uint8_t, kNonceBytes> nonceC, uint32_t clientLeader, uint32_t clientRank,
	      std::array<uint8_t, kMacBytes> &out, uint32_t purpose = kPurposeStream);

/*
 * The client nonces a server saw last (a ring of @capacity; the oldest is
 * forgotten first). One per listener, shared by its handshakes. Nonces are
 * random, so an honest client never repeats one: a repeat is a replay.
 * Not thread-safe (the listener's owner thread).
 */
class NonceCache
{
public:
	/* @capacity >= 1 nonces (32 B each). */
	explicit NonceCache(std::size_t capacity = 4096);

	/* Whether @nonce is held. */
	bool contains(std::span<const uint8_t, kNonceBytes> nonce) const noexcept;
	/* Remember @nonce (forgetting the oldest when full). */
	void insert(std::span<const uint8_t, kNonceBytes> nonce) noexcept;
	std::size_t size() const noexcept { return count_; }

private:
	std::vector<std::array<uint8_t, kNonceBytes>> slots_;
	std::size_t next_ = 0;
	std::size_t count_ = 0;
};

/* What went wrong, for callers that branch on it (the message says more). */
enum class AuthError : uint8_t {
	None = 0,
	Local,	    /* getrandom or libcrypto failed here */
	Malformed,  /* a frame failed frame::parse, or the wrong kind for the step */
	BadVersion, /* HELLO with another protocol version */
	WrongJob,   /* HELLO with another job hash */
	BadPeer,    /* a leader or rank outside the world, or refused by allowLeader/allowRank */
	Replay,	    /* a client nonce seen before, or a CHALLENGE echoing the client's nonce */
	BadMac,	    /* macS or macC does not verify: the peer does not hold K */
	BadSignature, /* sigC does not verify under the claimed rank's published key: a member posing as another rank */
	Timeout,    /* a step's deadline passed */
	PeerClosed, /* the peer closed the connection (or a read failed) mid-handshake */
};

/* "bad MAC", "timeout", ... */
const char *authErrorName(AuthError e) noexcept;

enum class AuthState : uint8_t {
	InProgress, /* send output(), feed what arrives, call checkTimeout() */
	Done,	    /* authenticated: send what output() still holds (the server's READY); then the connection is open */
	Failed,	    /* close the connection; error() says why; output() is empty */
};

/* The connecting side: the origin process or agent that opens the connection. */
struct ClientConfig {
	uint64_t jobHash = 0;	   /* FNV-1a64 of the job's namespace (§1.2) */
	uint32_t worldSize = 0;	   /* ranks in the job: leaders and ranks must be below it */
	uint32_t leader = 0;	   /* this host's leader (HELLO) */
	uint32_t rank = 0;	   /* this process's world rank (PROOF) */
	uint32_t serverLeader = 0; /* the leader of the host being connected to (bound into macS) */
	uint32_t serverRank = 0;   /* the world rank of the process being connected to (bound into sigC) */
	uint32_t purpose = kPurposeStream; /* what the connection carries (PROOF, bound into macC) */
	/* This process's identity, which signs the PROOF (sigC); null: the signature is zeros (refused by a server with rankKey). */
	const RankIdentity *identity = nullptr;
	int64_t stepTimeoutNs = kAuthStepTimeoutNs;
	std::string peer;	   /* for messages: "10.77.0.2:4100", "rank 2's agent" */
};

/* The accepting side: the net agent's listener. */
struct ServerConfig {
	uint64_t jobHash = 0;
	uint32_t worldSize = 0;
	uint32_t leader = 0; /* this host's leader (bound into macS) */
	uint32_t rank = 0;   /* this process's world rank: a client's sigC must name it */
	int64_t stepTimeoutNs = kAuthStepTimeoutNs;
	std::string peer;
	/* Optional: the listener's replay cache (must outlive the handshake). */
	NonceCache *seen = nullptr;
	/* Optional: whether a client claiming @leader may connect (e.g. it is a host leader other than ours). */
	bool (*allowLeader)(const void *ctx, uint32_t leader) noexcept = nullptr;
	/* Optional: whether @rank may speak for the host of @leader (e.g. it lives there). */
	bool (*allowRank)(const void *ctx, uint32_t leader, uint32_t rank) noexcept = nullptr;
	/*
	 * Optional: @rank's published public key, or null if it has none (then
	 * its PROOF is refused). Set: every PROOF must carry a valid sigC.
	 */
	const std::array<uint8_t, kIdentityKeyBytes> *(*rankKey)(const void *ctx, uint32_t rank) noexcept = nullptr;
	const void *allowCtx = nullptr; /* passed to allowLeader, allowRank and rankKey */
};

/* Who the peer proved to be. */
struct AuthPeer {
	uint32_t leader = 0; /* the peer host's leader */
	uint32_t rank = 0;   /* client: the connecting rank; for a client, the server's leader again */
	uint32_t purpose = kPurposeStream; /* what the client said the connection carries */
};

/*
 * One side of one connection's handshake. Move-only; it refers to its
 * AuthKey, which must outlive it and stay where it is (not be moved
 * from). Driving it:
 *
 *   loop: send output() and call consumeOutput(n) for what left;
 *         on bytes from the peer: n = feed(bytes, now) (consumes whole
 *           frames, and nothing past the handshake's last frame);
 *         on EOF or a read error: peerClosed();
 *         on the timer (deadlineNs()): checkTimeout(now);
 *   until state() != InProgress.
 *
 * wanted() tells a blocking reader how many bytes to read so that it never
 * reads past the handshake.
 */
class Handshake
{
public:
	/*
	 * A client handshake: draws nonceC, queues HELLO, starts the CHALLENGE
	 * step's deadline at @nowNs. Returns it; RMA_ERR_ARG for an invalid
	 * @key, a zero worldSize, leader/rank/serverLeader outside the world,
	 * or stepTimeoutNs <= 0; RMA_ERR_INTERN if getrandom fails.
	 */
	static Result<Handshake> client(const AuthKey &key, ClientConfig config, int64_t nowNs);

	/*
	 * A server handshake for an accepted connection: nothing to send
	 * until the HELLO; starts the HELLO step's deadline at @nowNs (nonceS
	 * is drawn here, used only once the HELLO is accepted). Errors as
	 * client().
	 */
	static Result<Handshake> server(const AuthKey &key, ServerConfig config, int64_t nowNs);

	/* Moves take the state (and the reference to the key); a moved-from handshake is Failed with no error code. */
	Handshake(Handshake &&other) noexcept;
	Handshake &operator=(Handshake &&other) noexcept;
	Handshake(const Handshake &) = delete;
	Handshake &operator=(const Handshake &) = delete;
	~Handshake();

	/* Bytes to send now (empty when none are queued, always after a failure). */
	std::span<const uint8_t> output() const noexcept;
	/* @n bytes of output() have been sent (n <= output().size()). */
	void consumeOutput(std::size_t n) noexcept;

	/*
	 * Bytes from the peer, in stream order, arriving at @nowNs. Consumes
	 * them (holding a partial frame internally) until the handshake ends,
	 * and returns how many it took: after Done, the rest of @bytes
	 * belongs to the open connection; after a failure it is to be
	 * discarded. A frame is refused as soon as its header shows it is the
	 * wrong kind or length. A call past the step's deadline fails the
	 * handshake with Timeout before it looks at the bytes. Returns 0 once
	 * the handshake has ended.
	 */
	std::size_t feed(std::span<const uint8_t> bytes, int64_t nowNs) noexcept;

	/*
	 * The peer closed the connection (@error 0), or reading or writing it
	 * failed (@error, a positive errno): fails the handshake if it is in
	 * progress ("truncated" if a frame was partly received); no effect
	 * once it has ended.
	 */
	void peerClosed(int error = 0) noexcept;

	/*
	 * Fail the handshake with Timeout if it is in progress and @nowNs is
	 * past the step's deadline. Returns whether it has failed (now or
	 * before).
	 */
	bool checkTimeout(int64_t nowNs) noexcept;

	/*
	 * The bytes that complete the frame being received (the rest of the
	 * header, or of the body once the header is in); 0 when the
	 * handshake has ended or expects nothing from the peer (never while
	 * in progress).
	 */
	std::size_t wanted() const noexcept;

	AuthState state() const noexcept { return state_; }
	/* The error code (with its message) of a failed handshake; RMA_SUCCESS otherwise. */
	int error() const noexcept { return error_; }
	AuthError failure() const noexcept { return failure_; }
	/*
	 * When the current step times out (steady clock ns). Once Done, a
	 * fresh step's worth from then: the caller's bound for sending what
	 * output() still holds.
	 */
	int64_t deadlineNs() const noexcept { return deadline_; }
	/* The authenticated peer; valid once state() is Done. */
	const AuthPeer &peer() const noexcept { return peer_; }
	bool isServer() const noexcept { return server_; }
	/* The frame phase this side is in (ConnPhase::Open once Done). */
	ConnPhase phase() const noexcept { return phase_; }

private:
	Handshake() = default;
	void onFrame(const ParsedFrame &f) noexcept;
	void onHello(const ParsedFrame &f) noexcept;
	void onChallenge(const ParsedFrame &f) noexcept;
	void onProof(const ParsedFrame &f) noexcept;
	void onReady() noexcept;
	void queue(FrameKind kind, std::span<const uint8_t> body) noexcept;
	[[gnu::cold]] void fail(AuthError why, const char *fmt, ...) noexcept __attribute__((format(printf, 3, 4)));
	void finish() noexcept;
	void wipe() noexcept;
	const char *waitingFor() const noexcept;

	const AuthKey *key_ = nullptr;
	bool server_ = false;
	AuthState state_ = AuthState::InProgress;
	AuthError failure_ = AuthError::None;
	ConnPhase phase_ = ConnPhase::AwaitHello;
	int error_ = 0;
	int64_t stepTimeout_ = kAuthStepTimeoutNs;
	int64_t deadline_ = 0;
	uint64_t jobHash_ = 0;
	uint32_t worldSize_ = 0;
	uint32_t leader_ = 0;
	uint32_t rank_ = 0;
	uint32_t serverLeader_ = 0;
	uint32_t purpose_ = kPurposeStream;
	std::string peerName_;
	NonceCache *seen_ = nullptr;
	bool (*allowLeader_)(const void *, uint32_t) noexcept = nullptr;
	bool (*allowRank_)(const void *, uint32_t, uint32_t) noexcept = nullptr;
	const std::array<uint8_t, kIdentityKeyBytes> *(*rankKey_)(const void *, uint32_t) noexcept = nullptr;
	const RankIdentity *identity_ = nullptr;
	uint32_t serverRank_ = 0; /* client: the server it means to reach; server: its own rank */
	const void *allowCtx_ = nullptr;
	AuthPeer peer_;
	std::array<uint8_t, kNonceBytes> nonceMine_{};
	std::array<uint8_t, kNonceBytes> noncePeer_{};
	/* The largest handshake body: PROOF's 8 + 32 + 64 (CHALLENGE's is 64). */
	static constexpr std::size_t kLargestBody = 8 + kMacBytes + kSignatureBytes;
	/* Receive: one handshake frame. */
	std::array<uint8_t, kHeaderBytes + kLargestBody> in_{};
	std::size_t inHave_ = 0;
	/* Send: at most two frames queued. */
	std::array<uint8_t, 2 * (kHeaderBytes + kLargestBody)> out_{};
	std::size_t outHead_ = 0;
	std::size_t outTail_ = 0;
};

/*
 * Run a client handshake over the connected blocking or nonblocking stream
 * socket @fd (poll() for readiness; reads never go past the handshake).
 * @config.peer defaults to the socket's peer address. Returns the peer once
 * the handshake is Done (the server: and READY has been sent); the
 * Handshake's error otherwise (RMA_ERR_INTERN class; also for a server
 * whose READY cannot be sent), or an argument error from
 * Handshake::client()/server(). The socket is left open either way; on an
 * error the caller closes it.
 */
Result<AuthPeer> authenticateClient(int fd, const AuthKey &key, ClientConfig config);

/* The server side of authenticateClient(), for an accepted socket @fd. */
Result<AuthPeer> authenticateServer(int fd, const AuthKey &key, ServerConfig config);

/* Where pumpHandshake() leaves a handshake. */
struct HandshakePump {
	/* Continue: poll @fd for @events, and call again by @deadlineNs at the latest. Ready: authenticated,
	 * READY sent (Handshake::peer()). Failed: @error says why (the caller closes the socket). */
	enum class Outcome { Continue, Ready, Failed } outcome = Outcome::Continue;
	short events = 0;
	int64_t deadlineNs = 0;
	int error = 0;
};

/*
 * One round of @h over the socket @fd after poll() reported @revents for
 * it (0: none, e.g. a timeout, or the first call): send what output()
 * holds, receive what wanted() asks (never a byte more: what follows the
 * handshake stays in the socket for the connection), check the step's
 * deadline. Never blocks (MSG_DONTWAIT), so one thread can drive many
 * handshakes over poll() (the engine's acceptor does) and a silent peer
 * holds up no other. @peer names the peer in errors.
 */
HandshakePump pumpHandshake(int fd, Handshake &h, short revents, const std::string &peer) noexcept;

} /* namespace librma::net */
