/* SPDX-License-Identifier: MIT */
/*
 * Frames: the unit of the inter-host wire protocol (docs/design/
 * inter-host.md §5). This header is the contract between the transport
 * (uring_loop, the engine) and the operations; changes to it go through a
 * note in the design page.
 *
 * A frame is a 32-byte header and bodyLen bytes of body, little-endian,
 * fields unaligned-safe (every access goes through net/le.h):
 *
 *   off  size  field
 *     0     2  kind     FrameKind
 *     2     2  flags    kAckWanted | kLastChunk, only where the kind allows
 *     4     4  bodyLen  bytes after the header
 *     8     8  window   window id; 0 for connection-level kinds
 *    16     4  origin   world rank of the origin
 *    20     4  target   world rank of the target
 *    24     8  seq      stream sequence; replies echo it
 *
 * Bodies (all little-endian, no padding; "ranks" are u32 world ranks):
 *
 *   HELLO      version u32 | leader u32 | jobHash u64 | nonce[32]       48
 *   CHALLENGE  nonce[32] | mac[32]                                      64
 *   PROOF      rank u32 | purpose u32 (kPurpose*) | mac[32] | sig[64]  104
 *   READY, BYE, FLUSH, ACK, UNLOCK, UNLOCK_ALL, ATTACH_QUERY            0
 *   PING, PONG value u64 (sender's clock)                               8
 *   RANK_DEAD  n u32 | reserved u32 (0) | ranks[n]            8 + 4n, n>=1
 *   PUT, GET, ACC, GET_ACC, FOP, CAS
 *              OpBody (16) | WireType (24) | runs (32·nruns) | data
 *   PUT_BULK   OpBody | WireType | runs | BulkChunk (16) | chunk data
 *   GET_REPLY, ACC_REPLY  data (any length, kLastChunk on the last piece)
 *   NACK       errorClass u32 | reserved u32 (0) | detail u64           16
 *   LOCK       lockType u32 (RMA_LOCK_SHARED|EXCLUSIVE) | assert u32    8
 *   LOCK_ALL   assert u32 | flags u32 (kLockAllTry or 0)                8
 *   POST       n u32 | reserved u32 (0) | origins[n]          8 + 4n, n>=1
 *   COMPLETE, FENCE  value u64 (ops completed / fence epoch)            8
 *   ATTACH_TABLE  sequence u64 | n u32 | reserved u32 (0) | n × {base u64, size u64}
 *
 *   OpBody     disp u64 | count u32 | op u16 | reserved u16 (0)
 *   BulkChunk  offset u64 (into the op's data) | total u64 (count × size)
 *
 * Direction: *requests* (ops, FLUSH, LOCK*, UNLOCK*, FENCE, COMPLETE,
 * ATTACH_QUERY) come from an origin on the peer's host to a target on this
 * host; *replies* (GET_REPLY, ACC_REPLY, ACK, NACK, ATTACH_TABLE) come
 * from a target on the peer's host to an origin on this host. POST comes
 * from a target on the peer's host (header.target) and lists origins on
 * this host; FENCE, LOCK_ALL and UNLOCK_ALL name no target (0).
 *
 * Validation (frame::parse, §5.2) is pure: no I/O, no allocation, no
 * state. Every input of any length gives one of Ok, Incomplete (need more
 * bytes), Nack (well formed but wrong: answer NACK with the class, write
 * nothing) or Drop (the stream cannot be trusted: close the connection),
 * with a Reason and the offending numbers for describe().
 *
 * Thread safety: every function is thread-safe and reentrant; noexcept
 * except describe() (which builds a string: control path only).
 */
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <string>

#include "net/wire_type.h"

namespace librma::net {

inline constexpr std::size_t kHeaderBytes = 32;
inline constexpr std::size_t kOpBodyBytes = 16;
inline constexpr std::size_t kBulkChunkBytes = 16;
/* The largest body on a latency connection, and on a bulk connection. */
inline constexpr uint32_t kMaxBody = 65536;
inline constexpr uint32_t kMaxBulkBody = (1u << 20) + 64;
/* Wire protocol version (HELLO). 3: PROOF carries the connection's purpose; 4: and its rank's signature. */
inline constexpr uint32_t kProtocolVersion = 4;
/*
 * What a connection carries (PROOF's second word, bound into its MAC):
 * kPurposeStream, an origin's ordered stream of requests (every kind, frames
 * of at most kMaxBody); kPurposeBulk, one of an origin's bulk connections to
 * that server (PUT frames of up to kMaxBulkBody and FLUSH only, received
 * whole into one buffer: docs/design/inter-host.md §4.4).
 */
inline constexpr uint32_t kPurposeStream = 0;
inline constexpr uint32_t kPurposeBulk = 1;

/*
 * LOCK_ALL flags. kLockAllTry: answer at once, ACK if granted, else
 * NACK{RMA_ERR_PENDING} (nothing held), instead of parking the request
 * until it can be granted. An origin that already holds part of a
 * lock_all epoch asks the other hosts this way: it never waits while
 * holding (no hold-and-wait, so no deadlock with exclusive lockers).
 */
inline constexpr uint32_t kLockAllTry = 1;
inline constexpr std::size_t kNonceBytes = 32;
inline constexpr std::size_t kMacBytes = 32;
/* A rank's identity (net/auth.h): an Ed25519 public key, and a signature by its private key. */
inline constexpr std::size_t kIdentityKeyBytes = 32;
inline constexpr std::size_t kSignatureBytes = 64;
/* The most ranks one POST or RANK_DEAD lists, entries one ATTACH_TABLE holds (bounded by kMaxBody anyway). */
inline constexpr uint32_t kMaxListed = (kMaxBody - 8) / 4;
inline constexpr uint32_t kMaxAttachEntries = (kMaxBody - 16) / 16;

enum class FrameKind : uint16_t {
	/* connection level (window 0) */
	Hello = 1,
	Challenge = 2,
	Proof = 3,
	Ready = 4,
	Ping = 5,
	Pong = 6,
	Bye = 7,
	RankDead = 8,
	/* operations */
	Put = 16,
	PutBulk = 17,
	Get = 18,
	GetReply = 19,
	Acc = 20,
	GetAcc = 21,
	Fop = 22,
	Cas = 23,
	AccReply = 24,
	/* completion */
	Flush = 32,
	Ack = 33,
	Nack = 34,
	/* synchronization */
	Lock = 48,
	LockAll = 49,
	Unlock = 50,
	UnlockAll = 51,
	Post = 52,
	Complete = 53,
	Fence = 54,
	/* dynamic windows */
	AttachQuery = 64,
	AttachTable = 65,
};

/* "PUT", "HELLO", ...; "(unknown)" for anything else. */
const char *frameKindName(uint16_t kind) noexcept;

/* Header flags. */
inline constexpr uint16_t kAckWanted = 1;
inline constexpr uint16_t kLastChunk = 2;

struct FrameHeader {
	uint16_t kind = 0;
	uint16_t flags = 0;
	uint32_t bodyLen = 0;
	uint64_t window = 0;
	uint32_t origin = 0;
	uint32_t target = 0;
	uint64_t seq = 0;
};

struct OpBody {
	uint64_t disp = 0;  /* bytes; disp × disp_unit applied at the origin; an address for dynamic windows */
	uint32_t count = 0; /* target count */
	uint16_t op = 0;    /* Op (op.h) for ACC, GET_ACC, FOP; 0 otherwise */
	uint16_t reserved = 0;
};

struct BulkChunk {
	uint64_t offset = 0; /* of this chunk's bytes within the op's data */
	uint64_t total = 0;  /* the op's data bytes: count × size */
};

/* ---- Encoding ----------------------------------------------------------------- */

void encodeHeader(const FrameHeader &h, uint8_t *out) noexcept; /* 32 bytes */
FrameHeader decodeHeader(const uint8_t *in) noexcept;		/* 32 bytes */
void encodeOpBody(const OpBody &b, uint8_t *out) noexcept;	/* 16 bytes */
OpBody decodeOpBody(const uint8_t *in) noexcept;
void encodeBulkChunk(const BulkChunk &c, uint8_t *out) noexcept; /* 16 bytes */
BulkChunk decodeBulkChunk(const uint8_t *in) noexcept;

/*
 * Append-only writer of frames into caller memory (the origin's batch
 * buffer, a test's array). No allocation. Each begin() .. end() writes one
 * frame; end() fills in bodyLen. When the memory runs out every later call
 * does nothing and ok() turns false (the caller flushes and retries).
 * Not thread-safe (one writer per buffer).
 */
class FrameWriter
{
public:
	explicit FrameWriter(std::span<uint8_t> out) noexcept : out_(out) {}

	/* Start a frame with @h (its bodyLen is ignored). */
	void begin(const FrameHeader &h) noexcept;
	void put(const void *bytes, std::size_t n) noexcept;
	void u32(uint32_t v) noexcept;
	void u64(uint64_t v) noexcept;
	void opBody(const OpBody &b) noexcept;
	/* The type and its runs (@runs.size() must equal t.nruns). */
	void wireType(const WireType &t, std::span<const WireRun> runs) noexcept;
	void bulkChunk(const BulkChunk &c) noexcept;
	/* Finish the frame: patch bodyLen. False if anything failed since begin(). */
	bool end() noexcept;

	bool ok() const noexcept { return ok_; }
	/* Bytes written so far (whole frames only once end() returned true). */
	std::size_t size() const noexcept { return used_; }

private:
	uint8_t *reserve(std::size_t n) noexcept;

	std::span<uint8_t> out_;
	std::size_t used_ = 0;
	std::size_t start_ = 0;
	bool ok_ = true;
	bool open_ = false;
};

/* ---- Validation ---------------------------------------------------------------- */

/* Where the connection stands in the handshake (§6); connection-level kinds are accepted only in their state. */
enum class ConnPhase : uint8_t {
	AwaitHello,	/* server: only HELLO */
	AwaitChallenge, /* client: only CHALLENGE */
	AwaitProof,	/* server: only PROOF */
	AwaitReady,	/* client: only READY */
	Open,		/* authenticated: everything but the four above */
};

/* An attached region of a dynamic window's target: [base, base + size). */
struct MemRegion {
	uint64_t base = 0;
	uint64_t size = 0;
};

/* What the receiver knows of one target of a window. */
struct TargetView {
	uint64_t size = 0;		    /* window bytes (Direct/Process) */
	bool dynamic = false;		    /* disp is an address inside one of regions */
	std::span<const MemRegion> regions; /* dynamic: sorted by base, not overlapping */
};

/* What the receiver knows of a window. */
struct WindowView {
	/* Indexed by world rank: that rank's rank in the window, or -1. Shorter than the world: the rest are -1. */
	std::span<const int32_t> rankInWindow;
	/* Indexed by window rank; only targets on this host need a real entry. */
	std::span<const TargetView> targets;
};

/* The receiver's side of one connection: the inputs parse() checks a frame against. */
struct ParseContext {
	ConnPhase phase = ConnPhase::Open;
	uint32_t maxBody = kMaxBody; /* kMaxBody, or kMaxBulkBody on a bulk connection */
	/* Host index of each world rank (its size is the world size). */
	std::span<const uint32_t> hostOfRank;
	uint32_t localHost = 0; /* this host */
	uint32_t peerHost = 0;	/* the authenticated peer's host */
	/*
	 * A server's connection: the authenticated peer's world rank, which
	 * every request must name as its origin (a POST: as its poster), so one
	 * process cannot act as another (unlock its lock, count in its fence).
	 * -1: any rank of the peer's host (an origin reading replies).
	 */
	int64_t peerRank = -1;
	/* The window with id @id, or nullptr if the agent has none. Required for window kinds. */
	const WindowView *(*findWindow)(const void *ctx, uint64_t id) noexcept = nullptr;
	const void *windowCtx = nullptr;
};

enum class Verdict : uint8_t {
	Ok,	    /* apply it */
	Incomplete, /* fewer bytes than the frame needs: wait for neededBytes */
	Nack,	    /* well formed but refused: answer NACK{errorClass}, write nothing */
	Drop,	    /* the stream cannot be trusted: close the connection */
};

/* Why a frame was refused; each maps to a verdict and an error class (reasonVerdict, reasonClass). */
enum class Reason : uint8_t {
	None = 0,
	/* Drop: the header or the stream */
	UnknownKind,
	BadFlags,
	BodyTooLong,
	KindOutOfPhase,	 /* a handshake kind after the handshake, or anything else during it */
	WindowNotZero,	 /* connection-level kind with a window id */
	WindowZero,	 /* a window kind without one */
	OriginNotPeer,	 /* origin is not a rank of the peer's host */
	TargetNotLocal,	 /* target is not a rank of this host */
	OriginNotLocal,	 /* reply to an origin that is not on this host */
	TargetNotPeer,	 /* reply from a target that is not on the peer's host */
	RankNotZero,	 /* a kind that names no rank carries one */
	ReservedNotZero, /* a reserved body field is not 0 */
	BadBodyLength,	 /* the body is not what its kind and fields say */
	BadWireType,	 /* runs truncated by the body (see wireError) */
	BadListedRank,	 /* POST or RANK_DEAD lists a rank outside the world or on the wrong host */
	BadRegion,	 /* an ATTACH_TABLE entry is empty or wraps around */
	OriginNotAuthenticated, /* a request's origin (POST: its poster) is not the connection's authenticated rank */
	ReplyTooLong,	 /* a GET, GET_ACC, FOP or CAS whose reply would not fit a frame the origin takes */
	/* Nack: a well-formed request that cannot be applied */
	UnknownWindow,	  /* RMA_ERR_WIN */
	RankNotInWindow,  /* RMA_ERR_RANK */
	InvalidType,	  /* RMA_ERR_TYPE (see wireError) */
	InvalidElement,	  /* RMA_ERR_TYPE: basic is no element the op family takes */
	OpNotAllowed,	  /* RMA_ERR_OP */
	BadCount,	  /* RMA_ERR_COUNT: FOP/CAS count != 1 */
	OutOfRange,	  /* RMA_ERR_RMA_RANGE: footprint outside the target */
	BadLockType,	  /* RMA_ERR_LOCKTYPE */
	BadChunk,	  /* RMA_ERR_COUNT: a bulk chunk outside the op's data */
	/* Drop again */
	BadErrorClass,	  /* a NACK carrying no valid error class */
};

Verdict reasonVerdict(Reason r) noexcept;
/* The RMA_ERR_* class a NACK for @r carries (RMA_ERR_PROC_FAILED for Drop reasons: the origin sees a dropped connection). */
int reasonClass(Reason r) noexcept;
const char *reasonText(Reason r) noexcept;

/* What parse() decided, with the numbers that explain it. */
struct ParseResult {
	Verdict verdict = Verdict::Ok;
	Reason reason = Reason::None;
	WireTypeError wireError = WireTypeError::None;
	/* Ok, Nack: the frame's length (32 + bodyLen), to consume. Incomplete: the bytes needed. Drop: 0. */
	std::size_t frameBytes = 0;
	/* Numbers for describe(), per reason (e.g. footprint lo, hi and the window size). */
	int64_t a = 0, b = 0, c = 0;
};

/* A validated frame; spans point into the parsed bytes. */
struct ParsedFrame {
	FrameHeader header;
	std::span<const uint8_t> body;
	/* Op kinds */
	OpBody op;
	WireType type;
	std::span<const uint8_t> runs; /* 32·nruns encoded WireRuns (decodeWireRun) */
	BulkChunk chunk;	       /* PUT_BULK */
	TypeSpan footprint;	       /* the bytes the op touches at the target: offsets, or addresses (dynamic) */
	int32_t targetWindowRank = -1;
	const TargetView *targetView = nullptr;
	/* Payload: op data, reply data, HELLO/CHALLENGE/PROOF bytes, POST/RANK_DEAD ranks, ATTACH_TABLE entries */
	std::span<const uint8_t> data;
	/* The fixed words of small bodies: PING/PONG/COMPLETE/FENCE value, NACK detail, ATTACH_TABLE sequence */
	uint64_t value = 0;
	/* NACK class, LOCK type, LOCK_ALL assert, POST/RANK_DEAD/ATTACH_TABLE n, HELLO version, PROOF rank */
	uint32_t word0 = 0;
	/* LOCK assert, LOCK_ALL flags, HELLO leader, PROOF purpose */
	uint32_t word1 = 0;
};

/*
 * Check the header alone (steps 1–2 of §5.2): what a receiver can decide
 * from the first 32 bytes, before it buffers the body. Returns Ok with
 * frameBytes = 32 + bodyLen, or Drop with the reason.
 */
ParseResult checkHeader(const FrameHeader &h, const ParseContext &ctx) noexcept;

/*
 * Every check parse() makes of a GET_REPLY or ACC_REPLY, from its header
 * alone: their bodies are plain data that no step reads, so a receiver may
 * place the body where it belongs (an origin's buffer) before it has it.
 * The same verdicts as parse(); Incomplete for any other kind (its body
 * must be read and parsed).
 */
ParseResult checkDataReply(const FrameHeader &h, const ParseContext &ctx) noexcept;

/*
 * Validate the frame at the start of @bytes (§5.2, all steps) and fill
 * @out. @bytes may hold more than one frame: only the first is parsed
 * (frameBytes says where the next begins). Returns:
 *   Ok          the frame may be applied; @out is filled;
 *   Incomplete  @bytes is shorter than the frame (frameBytes = the length
 *               needed: 32 until the header is there); @out untouched;
 *   Nack        answer NACK{reasonClass(reason), seq}; @out holds the header;
 *   Drop        close the connection; @out holds the header if it was read.
 */
ParseResult parse(std::span<const uint8_t> bytes, const ParseContext &ctx, ParsedFrame &out) noexcept;

/* One line for the log: "PUT seq 9 from rank 2 to rank 1: footprint [4090, 4098) exceeds ... (4096 bytes)". */
std::string describe(const ParseResult &r, const FrameHeader &h);

} /* namespace librma::net */
