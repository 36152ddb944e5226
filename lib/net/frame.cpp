/* SPDX-License-Identifier: MIT */
#include "net/frame.h"

#include <cinttypes>
#include <cstdio>
#include <cstring>
#include <limits>

#include <rma/rma.h>

#include "net/le.h"
#include "op/op.h"

namespace librma::net {

namespace {

/* Who a kind's header names, checked in step 2. */
enum class Dir : uint8_t {
	Conn,	  /* connection level: origin = target = 0, window 0 */
	Request,  /* origin on the peer's host, target on this host */
	Reply,	  /* origin on this host, target on the peer's host */
	NoTarget, /* origin on the peer's host, target 0 */
	Post,	  /* origin 0, target on the peer's host; origins listed in the body */
};

struct KindInfo {
	bool known = false;
	Dir dir = Dir::Conn;
	uint16_t flags = 0; /* allowed */
};

constexpr KindInfo kindInfo(uint16_t kind) noexcept
{
	switch (static_cast<FrameKind>(kind)) {
	case FrameKind::Hello:
	case FrameKind::Challenge:
	case FrameKind::Proof:
	case FrameKind::Ready:
	case FrameKind::Ping:
	case FrameKind::Pong:
	case FrameKind::Bye:
	case FrameKind::RankDead:
		return { true, Dir::Conn, 0 };
	case FrameKind::Put:
	case FrameKind::Get:
	case FrameKind::Acc:
	case FrameKind::GetAcc:
	case FrameKind::Fop:
	case FrameKind::Cas:
	case FrameKind::Flush:
	case FrameKind::Lock:
	case FrameKind::Unlock:
	case FrameKind::Complete:
	case FrameKind::AttachQuery:
		return { true, Dir::Request, kAckWanted };
	case FrameKind::PutBulk:
		return { true, Dir::Request, kAckWanted | kLastChunk };
	case FrameKind::GetReply:
	case FrameKind::AccReply:
		return { true, Dir::Reply, kLastChunk };
	case FrameKind::Ack:
	case FrameKind::Nack:
	case FrameKind::AttachTable:
		return { true, Dir::Reply, 0 };
	case FrameKind::LockAll:
	case FrameKind::UnlockAll:
	case FrameKind::Fence:
		return { true, Dir::NoTarget, kAckWanted };
	case FrameKind::Post:
		return { true, Dir::Post, 0 };
	}
	return {};
}

bool isOpKind(FrameKind k) noexcept
{
	switch (k) {
	case FrameKind::Put:
	case FrameKind::PutBulk:
	case FrameKind::Get:
	case FrameKind::Acc:
	case FrameKind::GetAcc:
	case FrameKind::Fop:
	case FrameKind::Cas:
		return true;
	default:
		return false;
	}
}

/* Which handshake kind a phase accepts; 0 for Open. */
FrameKind phaseKind(ConnPhase p) noexcept
{
	switch (p) {
	case ConnPhase::AwaitHello:
		return FrameKind::Hello;
	case ConnPhase::AwaitChallenge:
		return FrameKind::Challenge;
	case ConnPhase::AwaitProof:
		return FrameKind::Proof;
	case ConnPhase::AwaitReady:
		return FrameKind::Ready;
	case ConnPhase::Open:
		break;
	}
	return FrameKind{};
}

bool isHandshakeKind(FrameKind k) noexcept
{
	return k == FrameKind::Hello || k == FrameKind::Challenge || k == FrameKind::Proof || k == FrameKind::Ready;
}

ParseResult fail(Reason r, int64_t a = 0, int64_t b = 0, int64_t c = 0) noexcept
{
	ParseResult res;
	res.verdict = reasonVerdict(r);
	res.reason = r;
	res.a = a;
	res.b = b;
	res.c = c;
	return res;
}

ParseResult failType(Reason r, WireTypeError e) noexcept
{
	ParseResult res = fail(r);
	res.wireError = e;
	return res;
}

/* Whether world rank @rank exists and lives on @host. */
bool onHost(const ParseContext &ctx, uint32_t rank, uint32_t host) noexcept
{
	return rank < ctx.hostOfRank.size() && ctx.hostOfRank[rank] == host;
}

int32_t windowRank(const WindowView &w, uint32_t world) noexcept
{
	return world < w.rankInWindow.size() ? w.rankInWindow[world] : -1;
}

/* Body length check of a fixed-size kind. */
bool fixedBody(const FrameHeader &h, uint32_t want, ParseResult &res) noexcept
{
	if (h.bodyLen == want)
		return true;
	res = fail(Reason::BadBodyLength, h.bodyLen, want);
	return false;
}

/* "n u32 | reserved u32 | ranks[n]": the list's n, or a failure. */
bool rankList(const FrameHeader &h, const uint8_t *body, ParsedFrame &out, ParseResult &res) noexcept
{
	if (h.bodyLen < 8) {
		res = fail(Reason::BadBodyLength, h.bodyLen, 8);
		return false;
	}
	uint32_t n = le::load<uint32_t>(body);
	if (le::load<uint32_t>(body + 4) != 0) {
		res = fail(Reason::ReservedNotZero);
		return false;
	}
	if (n == 0 || n > kMaxListed || h.bodyLen != 8 + uint64_t{ n } * 4) {
		res = fail(Reason::BadBodyLength, h.bodyLen, 8 + int64_t{ n } * 4);
		return false;
	}
	out.word0 = n;
	out.data = { body + 8, std::size_t{ n } * 4 };
	return true;
}

/* The op frames: structure (Drop), then window, type, op, bounds (Nack). */
ParseResult parseOp(const ParseContext &ctx, const uint8_t *body, ParsedFrame &out) noexcept
{
	const FrameHeader &h = out.header;
	const auto kind = static_cast<FrameKind>(h.kind);
	const std::size_t fixed = kOpBodyBytes + kWireTypeBytes;
	if (h.bodyLen < fixed)
		return fail(Reason::BadBodyLength, h.bodyLen, fixed);
	out.op = decodeOpBody(body);
	out.type = decodeWireType(body + kOpBodyBytes);
	if (out.op.reserved != 0)
		return fail(Reason::ReservedNotZero);
	const bool takesOp = kind == FrameKind::Acc || kind == FrameKind::GetAcc || kind == FrameKind::Fop;
	if (!takesOp && out.op.op != 0)
		return fail(Reason::ReservedNotZero);

	/* The runs must fit the body, or the data cannot be found: the stream is lost. */
	const uint64_t runBytes = uint64_t{ out.type.nruns } * kWireRunBytes;
	const uint64_t head = fixed + runBytes + (kind == FrameKind::PutBulk ? kBulkChunkBytes : 0);
	if (head > h.bodyLen)
		return failType(Reason::BadWireType, WireTypeError::Truncated);
	out.runs = { body + fixed, static_cast<std::size_t>(runBytes) };
	const std::size_t dataLen = h.bodyLen - head;
	out.data = { body + head, dataLen };

	/* Step 6 (a length, so a Drop when wrong): the data the kind carries. */
	const bool noOp = takesOp && out.op.op == static_cast<uint16_t>(Op::NoOp);
	uint64_t perCount = out.type.size;
	if (kind == FrameKind::Get || (noOp && kind != FrameKind::Acc))
		perCount = 0;
	else if (kind == FrameKind::Cas)
		perCount = 2 * out.type.size; /* origin value, then compare value */
	uint64_t want = 0;
	if (out.type.size > (uint64_t{ 1 } << 62) || __builtin_mul_overflow(perCount, uint64_t{ out.op.count }, &want))
		return fail(Reason::BadBodyLength, h.bodyLen, -1);
	/*
	 * What the reply carries (GET, GET_ACC: the target data, whatever the
	 * request's own data; FOP, CAS: one element): the server sizes its
	 * reply frame from it, so it must not wrap and must fit a frame the
	 * origin takes (an origin never asks for more).
	 */
	if (kind == FrameKind::Get || kind == FrameKind::GetAcc || kind == FrameKind::Fop || kind == FrameKind::Cas) {
		uint64_t reply = 0;
		if (__builtin_mul_overflow(out.type.size, uint64_t{ out.op.count }, &reply) || reply > ctx.maxBody)
			return fail(Reason::ReplyTooLong, out.op.count, static_cast<int64_t>(out.type.size), ctx.maxBody);
	}
	if (kind == FrameKind::PutBulk) {
		out.chunk = decodeBulkChunk(body + fixed + runBytes);
		if (dataLen == 0)
			return fail(Reason::BadBodyLength, h.bodyLen, static_cast<int64_t>(head) + 1);
	} else if (want != dataLen) {
		return fail(Reason::BadBodyLength, h.bodyLen, static_cast<int64_t>(head + want));
	}

	/* Step 3: the window and the ranks in it. */
	const WindowView *w = ctx.findWindow ? ctx.findWindow(ctx.windowCtx, h.window) : nullptr;
	if (!w)
		return fail(Reason::UnknownWindow, static_cast<int64_t>(h.window));
	if (windowRank(*w, h.origin) < 0)
		return fail(Reason::RankNotInWindow, h.origin);
	const int32_t t = windowRank(*w, h.target);
	if (t < 0 || static_cast<std::size_t>(t) >= w->targets.size())
		return fail(Reason::RankNotInWindow, h.target);
	out.targetWindowRank = t;
	out.targetView = &w->targets[static_cast<std::size_t>(t)];

	/* Step 4: the type, the element and the op. */
	TypeSpan one;
	if (WireTypeError e = checkWireType(out.type, out.runs, one); e != WireTypeError::None)
		return failType(Reason::InvalidType, e);
	const uint32_t basic = out.type.basic;
	if (basic == 0 || basic >= kElemLimit)
		return fail(Reason::InvalidElement, basic);
	const auto elem = static_cast<uint8_t>(basic);
	if (takesOp || kind == FrameKind::Cas) {
		if (out.type.size % elemBytes(elem) != 0)
			return fail(Reason::InvalidElement, basic, static_cast<int64_t>(out.type.size));
		if (kind == FrameKind::Cas) {
			if (!compareAndSwapAllowed(elem))
				return fail(Reason::InvalidElement, basic);
		} else {
			const uint16_t op = out.op.op;
			if (op == 0 || op > static_cast<uint16_t>(Op::Last) ||
			    (kind == FrameKind::Acc && op == static_cast<uint16_t>(Op::NoOp)) ||
			    !opAllowed(static_cast<Op>(op), elem))
				return fail(Reason::OpNotAllowed, op, basic);
		}
		if (kind == FrameKind::Fop || kind == FrameKind::Cas) {
			if (out.op.count != 1)
				return fail(Reason::BadCount, out.op.count);
			if (out.type.nruns != 0 || out.type.size != elemBytes(elem))
				return fail(Reason::InvalidElement, basic, static_cast<int64_t>(out.type.size));
		}
	}

	/* Step 5: the footprint lies inside the target. */
	if (out.op.disp > static_cast<uint64_t>(std::numeric_limits<int64_t>::max()))
		return fail(Reason::OutOfRange, -1, -1, static_cast<int64_t>(out.targetView->size));
	TypeSpan fp;
	if (!footprint(one, out.type.extent, static_cast<int64_t>(out.op.disp), out.op.count, fp))
		return fail(Reason::OutOfRange, -1, -1, static_cast<int64_t>(out.targetView->size));
	out.footprint = fp;
	if (fp.lo < fp.hi) {
		const TargetView &tv = *out.targetView;
		if (!tv.dynamic) {
			if (fp.lo < 0 || static_cast<uint64_t>(fp.hi) > tv.size)
				return fail(Reason::OutOfRange, fp.lo, fp.hi, static_cast<int64_t>(tv.size));
		} else {
			/* The last region whose base <= lo must hold [lo, hi). */
			std::size_t lo = 0, hi = tv.regions.size();
			while (lo < hi) {
				std::size_t mid = lo + (hi - lo) / 2;
				if (tv.regions[mid].base <= static_cast<uint64_t>(fp.lo))
					lo = mid + 1;
				else
					hi = mid;
			}
			bool inside = false;
			if (fp.lo >= 0 && lo > 0) {
				const MemRegion &r = tv.regions[lo - 1];
				uint64_t end;
				inside = !__builtin_add_overflow(r.base, r.size, &end) &&
					 static_cast<uint64_t>(fp.hi) <= end;
			}
			if (!inside)
				return fail(Reason::OutOfRange, fp.lo, fp.hi, -1);
		}
	}

	if (kind == FrameKind::PutBulk) {
		const BulkChunk &c = out.chunk;
		uint64_t end;
		if (c.total != want || __builtin_add_overflow(c.offset, uint64_t{ dataLen }, &end) || end > c.total ||
		    ((h.flags & kLastChunk) != 0) != (end == c.total))
			return fail(Reason::BadChunk, static_cast<int64_t>(c.offset), static_cast<int64_t>(dataLen),
				    static_cast<int64_t>(want));
	}
	return {};
}

ParseResult parseBody(const ParseContext &ctx, const uint8_t *body, ParsedFrame &out) noexcept
{
	const FrameHeader &h = out.header;
	const auto kind = static_cast<FrameKind>(h.kind);
	ParseResult res;
	if (isOpKind(kind))
		return parseOp(ctx, body, out);

	switch (kind) {
	case FrameKind::Hello:
		if (!fixedBody(h, 16 + kNonceBytes, res))
			return res;
		out.word0 = le::load<uint32_t>(body);
		out.word1 = le::load<uint32_t>(body + 4);
		out.value = le::load<uint64_t>(body + 8);
		out.data = { body + 16, kNonceBytes };
		return res;
	case FrameKind::Challenge:
		if (!fixedBody(h, kNonceBytes + kMacBytes, res))
			return res;
		out.data = { body, kNonceBytes + kMacBytes };
		return res;
	case FrameKind::Proof:
		if (!fixedBody(h, 8 + kMacBytes + kSignatureBytes, res))
			return res;
		if (le::load<uint32_t>(body + 4) > kPurposeBulk)
			return fail(Reason::ReservedNotZero);
		out.word0 = le::load<uint32_t>(body);
		out.word1 = le::load<uint32_t>(body + 4);
		out.data = { body + 8, kMacBytes + kSignatureBytes };
		return res;
	case FrameKind::Ready:
	case FrameKind::Bye:
	case FrameKind::Ack:
		fixedBody(h, 0, res);
		return res;
	case FrameKind::Ping:
	case FrameKind::Pong:
		if (fixedBody(h, 8, res))
			out.value = le::load<uint64_t>(body);
		return res;
	case FrameKind::RankDead:
		if (!rankList(h, body, out, res))
			return res;
		for (uint32_t i = 0; i < out.word0; ++i) {
			uint32_t r = le::load<uint32_t>(out.data.data() + 4 * i);
			if (r >= ctx.hostOfRank.size())
				return fail(Reason::BadListedRank, r);
		}
		return res;
	case FrameKind::GetReply:
	case FrameKind::AccReply:
		out.data = { body, h.bodyLen };
		return res;
	case FrameKind::Nack: {
		if (!fixedBody(h, 16, res))
			return res;
		if (le::load<uint32_t>(body + 4) != 0)
			return fail(Reason::ReservedNotZero);
		uint32_t cls = le::load<uint32_t>(body);
		if (cls == 0 || cls >= RMA_ERR_LASTCODE)
			return fail(Reason::BadErrorClass, cls);
		out.word0 = cls;
		out.value = le::load<uint64_t>(body + 8);
		return res;
	}
	case FrameKind::AttachTable: {
		if (h.bodyLen < 16)
			return fail(Reason::BadBodyLength, h.bodyLen, 16);
		uint32_t n = le::load<uint32_t>(body + 8);
		if (le::load<uint32_t>(body + 12) != 0)
			return fail(Reason::ReservedNotZero);
		if (n > kMaxAttachEntries || h.bodyLen != 16 + uint64_t{ n } * 16)
			return fail(Reason::BadBodyLength, h.bodyLen, 16 + int64_t{ n } * 16);
		out.value = le::load<uint64_t>(body);
		out.word0 = n;
		out.data = { body + 16, std::size_t{ n } * 16 };
		for (uint32_t i = 0; i < n; ++i) {
			uint64_t base = le::load<uint64_t>(out.data.data() + 16 * i);
			uint64_t size = le::load<uint64_t>(out.data.data() + 16 * i + 8);
			uint64_t end;
			if (size == 0 || __builtin_add_overflow(base, size, &end))
				return fail(Reason::BadRegion, i);
		}
		return res;
	}
	default:
		break;
	}

	/* The synchronization kinds and FLUSH/ATTACH_QUERY: structure first, then the window. */
	switch (kind) {
	case FrameKind::Flush:
	case FrameKind::Unlock:
	case FrameKind::UnlockAll:
	case FrameKind::AttachQuery:
		if (!fixedBody(h, 0, res))
			return res;
		break;
	case FrameKind::Complete:
	case FrameKind::Fence:
		if (!fixedBody(h, 8, res))
			return res;
		out.value = le::load<uint64_t>(body);
		break;
	case FrameKind::Lock:
		if (!fixedBody(h, 8, res))
			return res;
		out.word0 = le::load<uint32_t>(body);
		out.word1 = le::load<uint32_t>(body + 4);
		break;
	case FrameKind::LockAll:
		if (!fixedBody(h, 8, res))
			return res;
		if ((le::load<uint32_t>(body + 4) & ~kLockAllTry) != 0)
			return fail(Reason::ReservedNotZero);
		out.word0 = le::load<uint32_t>(body);
		out.word1 = le::load<uint32_t>(body + 4);
		break;
	case FrameKind::Post:
		if (!rankList(h, body, out, res))
			return res;
		for (uint32_t i = 0; i < out.word0; ++i) {
			uint32_t r = le::load<uint32_t>(out.data.data() + 4 * i);
			if (!onHost(ctx, r, ctx.localHost))
				return fail(Reason::BadListedRank, r);
		}
		break;
	default:
		return fail(Reason::UnknownKind, h.kind); /* unreachable: checkHeader knows every kind */
	}

	const WindowView *w = ctx.findWindow ? ctx.findWindow(ctx.windowCtx, h.window) : nullptr;
	if (!w)
		return fail(Reason::UnknownWindow, static_cast<int64_t>(h.window));
	const Dir dir = kindInfo(h.kind).dir;
	if (dir != Dir::Post && windowRank(*w, h.origin) < 0)
		return fail(Reason::RankNotInWindow, h.origin);
	if (dir != Dir::NoTarget) {
		const int32_t t = windowRank(*w, h.target);
		if (t < 0)
			return fail(Reason::RankNotInWindow, h.target);
		out.targetWindowRank = t;
		if (static_cast<std::size_t>(t) < w->targets.size())
			out.targetView = &w->targets[static_cast<std::size_t>(t)];
	}
	if (kind == FrameKind::Post) {
		for (uint32_t i = 0; i < out.word0; ++i) {
			uint32_t r = le::load<uint32_t>(out.data.data() + 4 * i);
			if (windowRank(*w, r) < 0)
				return fail(Reason::RankNotInWindow, r);
		}
	}
	if (kind == FrameKind::Lock && out.word0 != RMA_LOCK_SHARED && out.word0 != RMA_LOCK_EXCLUSIVE)
		return fail(Reason::BadLockType, out.word0);
	return res;
}

} /* namespace */

const char *frameKindName(uint16_t kind) noexcept
{
	switch (static_cast<FrameKind>(kind)) {
	case FrameKind::Hello: return "HELLO";
	case FrameKind::Challenge: return "CHALLENGE";
	case FrameKind::Proof: return "PROOF";
	case FrameKind::Ready: return "READY";
	case FrameKind::Ping: return "PING";
	case FrameKind::Pong: return "PONG";
	case FrameKind::Bye: return "BYE";
	case FrameKind::RankDead: return "RANK_DEAD";
	case FrameKind::Put: return "PUT";
	case FrameKind::PutBulk: return "PUT_BULK";
	case FrameKind::Get: return "GET";
	case FrameKind::GetReply: return "GET_REPLY";
	case FrameKind::Acc: return "ACC";
	case FrameKind::GetAcc: return "GET_ACC";
	case FrameKind::Fop: return "FOP";
	case FrameKind::Cas: return "CAS";
	case FrameKind::AccReply: return "ACC_REPLY";
	case FrameKind::Flush: return "FLUSH";
	case FrameKind::Ack: return "ACK";
	case FrameKind::Nack: return "NACK";
	case FrameKind::Lock: return "LOCK";
	case FrameKind::LockAll: return "LOCK_ALL";
	case FrameKind::Unlock: return "UNLOCK";
	case FrameKind::UnlockAll: return "UNLOCK_ALL";
	case FrameKind::Post: return "POST";
	case FrameKind::Complete: return "COMPLETE";
	case FrameKind::Fence: return "FENCE";
	case FrameKind::AttachQuery: return "ATTACH_QUERY";
	case FrameKind::AttachTable: return "ATTACH_TABLE";
	}
	return "(unknown)";
}

void encodeHeader(const FrameHeader &h, uint8_t *out) noexcept
{
	le::store<uint16_t>(out, h.kind);
	le::store<uint16_t>(out + 2, h.flags);
	le::store<uint32_t>(out + 4, h.bodyLen);
	le::store<uint64_t>(out + 8, h.window);
	le::store<uint32_t>(out + 16, h.origin);
	le::store<uint32_t>(out + 20, h.target);
	le::store<uint64_t>(out + 24, h.seq);
}

FrameHeader decodeHeader(const uint8_t *in) noexcept
{
	FrameHeader h;
	h.kind = le::load<uint16_t>(in);
	h.flags = le::load<uint16_t>(in + 2);
	h.bodyLen = le::load<uint32_t>(in + 4);
	h.window = le::load<uint64_t>(in + 8);
	h.origin = le::load<uint32_t>(in + 16);
	h.target = le::load<uint32_t>(in + 20);
	h.seq = le::load<uint64_t>(in + 24);
	return h;
}

void encodeOpBody(const OpBody &b, uint8_t *out) noexcept
{
	le::store<uint64_t>(out, b.disp);
	le::store<uint32_t>(out + 8, b.count);
	le::store<uint16_t>(out + 12, b.op);
	le::store<uint16_t>(out + 14, b.reserved);
}

OpBody decodeOpBody(const uint8_t *in) noexcept
{
	OpBody b;
	b.disp = le::load<uint64_t>(in);
	b.count = le::load<uint32_t>(in + 8);
	b.op = le::load<uint16_t>(in + 12);
	b.reserved = le::load<uint16_t>(in + 14);
	return b;
}

void encodeBulkChunk(const BulkChunk &c, uint8_t *out) noexcept
{
	le::store<uint64_t>(out, c.offset);
	le::store<uint64_t>(out + 8, c.total);
}

BulkChunk decodeBulkChunk(const uint8_t *in) noexcept
{
	return { le::load<uint64_t>(in), le::load<uint64_t>(in + 8) };
}

/* ---- FrameWriter ---- */

uint8_t *FrameWriter::reserve(std::size_t n) noexcept
{
	if (!ok_ || out_.size() - used_ < n) {
		ok_ = false;
		return nullptr;
	}
	uint8_t *p = out_.data() + used_;
	used_ += n;
	return p;
}

void FrameWriter::begin(const FrameHeader &h) noexcept
{
	start_ = used_;
	open_ = true;
	if (uint8_t *p = reserve(kHeaderBytes))
		encodeHeader(h, p);
}

void FrameWriter::put(const void *bytes, std::size_t n) noexcept
{
	if (n == 0)
		return;
	if (uint8_t *p = reserve(n))
		std::memcpy(p, bytes, n);
}

void FrameWriter::u32(uint32_t v) noexcept
{
	if (uint8_t *p = reserve(4))
		le::store<uint32_t>(p, v);
}

void FrameWriter::u64(uint64_t v) noexcept
{
	if (uint8_t *p = reserve(8))
		le::store<uint64_t>(p, v);
}

void FrameWriter::opBody(const OpBody &b) noexcept
{
	if (uint8_t *p = reserve(kOpBodyBytes))
		encodeOpBody(b, p);
}

void FrameWriter::wireType(const WireType &t, std::span<const WireRun> runs) noexcept
{
	if (uint8_t *p = reserve(kWireTypeBytes))
		encodeWireType(t, p);
	for (const WireRun &r : runs)
		if (uint8_t *p = reserve(kWireRunBytes))
			encodeWireRun(r, p);
}

void FrameWriter::bulkChunk(const BulkChunk &c) noexcept
{
	if (uint8_t *p = reserve(kBulkChunkBytes))
		encodeBulkChunk(c, p);
}

bool FrameWriter::end() noexcept
{
	if (!open_) {
		ok_ = false;
		return false;
	}
	open_ = false;
	const std::size_t body = used_ - start_ - kHeaderBytes;
	if (!ok_ || body > std::numeric_limits<uint32_t>::max()) {
		ok_ = false;
		used_ = start_; /* drop the partial frame */
		return false;
	}
	le::store<uint32_t>(out_.data() + start_ + 4, static_cast<uint32_t>(body));
	return true;
}

/* ---- Validation ---- */

Verdict reasonVerdict(Reason r) noexcept
{
	switch (r) {
	case Reason::None:
		return Verdict::Ok;
	case Reason::UnknownWindow:
	case Reason::RankNotInWindow:
	case Reason::InvalidType:
	case Reason::InvalidElement:
	case Reason::OpNotAllowed:
	case Reason::BadCount:
	case Reason::OutOfRange:
	case Reason::BadLockType:
	case Reason::BadChunk:
		return Verdict::Nack;
	default:
		return Verdict::Drop;
	}
}

int reasonClass(Reason r) noexcept
{
	switch (r) {
	case Reason::None:
		return RMA_SUCCESS;
	case Reason::UnknownWindow:
		return RMA_ERR_WIN;
	case Reason::RankNotInWindow:
		return RMA_ERR_RANK;
	case Reason::InvalidType:
	case Reason::InvalidElement:
		return RMA_ERR_TYPE;
	case Reason::OpNotAllowed:
		return RMA_ERR_OP;
	case Reason::BadCount:
	case Reason::BadChunk:
		return RMA_ERR_COUNT;
	case Reason::OutOfRange:
		return RMA_ERR_RMA_RANGE;
	case Reason::BadLockType:
		return RMA_ERR_LOCKTYPE;
	default:
		return RMA_ERR_PROC_FAILED;
	}
}

const char *reasonText(Reason r) noexcept
{
	switch (r) {
	case Reason::None: return "valid";
	case Reason::UnknownKind: return "unknown frame kind";
	case Reason::BadFlags: return "flags the kind does not allow";
	case Reason::BodyTooLong: return "body longer than the connection allows";
	case Reason::KindOutOfPhase: return "frame kind not allowed in the connection's handshake state";
	case Reason::WindowNotZero: return "connection-level frame carries a window id";
	case Reason::WindowZero: return "window frame without a window id";
	case Reason::OriginNotPeer: return "origin is not a rank of the peer's host";
	case Reason::TargetNotLocal: return "target is not a rank of this host";
	case Reason::OriginNotLocal: return "reply to an origin that is not on this host";
	case Reason::TargetNotPeer: return "reply from a target that is not on the peer's host";
	case Reason::RankNotZero: return "a rank field that must be 0 is not";
	case Reason::ReservedNotZero: return "a reserved field is not 0";
	case Reason::BadBodyLength: return "body length does not match the frame's contents";
	case Reason::OriginNotAuthenticated: return "the frame names a rank other than the connection's authenticated one";
	case Reason::ReplyTooLong: return "the reply it asks for would not fit a frame";
	case Reason::BadWireType: return "malformed datatype";
	case Reason::BadListedRank: return "listed rank outside the world or on the wrong host";
	case Reason::BadRegion: return "attach table entry empty or wrapping around";
	case Reason::UnknownWindow: return "no such window on this host";
	case Reason::RankNotInWindow: return "rank is not a member of the window";
	case Reason::InvalidType: return "invalid datatype";
	case Reason::InvalidElement: return "element type not valid for this operation";
	case Reason::OpNotAllowed: return "op not defined on the element type";
	case Reason::BadCount: return "count must be 1";
	case Reason::OutOfRange: return "target footprint outside the window";
	case Reason::BadLockType: return "lock type is neither shared nor exclusive";
	case Reason::BadChunk: return "bulk chunk outside the operation's data";
	case Reason::BadErrorClass: return "NACK without a valid error class";
	}
	return "unknown reason";
}

ParseResult checkHeader(const FrameHeader &h, const ParseContext &ctx) noexcept
{
	const KindInfo info = kindInfo(h.kind);
	if (!info.known)
		return fail(Reason::UnknownKind, h.kind);
	if ((h.flags & ~info.flags) != 0)
		return fail(Reason::BadFlags, h.flags, info.flags);
	if (h.bodyLen > ctx.maxBody)
		return fail(Reason::BodyTooLong, h.bodyLen, ctx.maxBody);
	const auto kind = static_cast<FrameKind>(h.kind);
	if (ctx.phase != ConnPhase::Open ? kind != phaseKind(ctx.phase) : isHandshakeKind(kind))
		return fail(Reason::KindOutOfPhase, h.kind, static_cast<int64_t>(ctx.phase));

	switch (info.dir) {
	case Dir::Conn:
		if (h.window != 0)
			return fail(Reason::WindowNotZero, static_cast<int64_t>(h.window));
		if (h.origin != 0 || h.target != 0)
			return fail(Reason::RankNotZero, h.origin, h.target);
		break;
	case Dir::Request:
		if (!onHost(ctx, h.origin, ctx.peerHost))
			return fail(Reason::OriginNotPeer, h.origin);
		if (ctx.peerRank >= 0 && h.origin != ctx.peerRank)
			return fail(Reason::OriginNotAuthenticated, h.origin, ctx.peerRank);
		if (!onHost(ctx, h.target, ctx.localHost))
			return fail(Reason::TargetNotLocal, h.target);
		break;
	case Dir::Reply:
		if (!onHost(ctx, h.origin, ctx.localHost))
			return fail(Reason::OriginNotLocal, h.origin);
		if (!onHost(ctx, h.target, ctx.peerHost))
			return fail(Reason::TargetNotPeer, h.target);
		break;
	case Dir::NoTarget:
		if (!onHost(ctx, h.origin, ctx.peerHost))
			return fail(Reason::OriginNotPeer, h.origin);
		if (ctx.peerRank >= 0 && h.origin != ctx.peerRank)
			return fail(Reason::OriginNotAuthenticated, h.origin, ctx.peerRank);
		if (h.target != 0)
			return fail(Reason::RankNotZero, h.origin, h.target);
		break;
	case Dir::Post:
		if (h.origin != 0)
			return fail(Reason::RankNotZero, h.origin, h.target);
		if (!onHost(ctx, h.target, ctx.peerHost))
			return fail(Reason::TargetNotPeer, h.target);
		if (ctx.peerRank >= 0 && h.target != ctx.peerRank)
			return fail(Reason::OriginNotAuthenticated, h.target, ctx.peerRank);
		break;
	}
	if (info.dir != Dir::Conn && h.window == 0)
		return fail(Reason::WindowZero);

	ParseResult ok;
	ok.frameBytes = kHeaderBytes + h.bodyLen;
	return ok;
}

ParseResult checkDataReply(const FrameHeader &h, const ParseContext &ctx) noexcept
{
	ParseResult res;
	if (h.kind != static_cast<uint16_t>(FrameKind::GetReply) && h.kind != static_cast<uint16_t>(FrameKind::AccReply)) {
		res.verdict = Verdict::Incomplete; /* any other kind's body has to be read and parsed */
		res.frameBytes = kHeaderBytes + std::size_t{ h.bodyLen };
		return res;
	}
	res = checkHeader(h, ctx);
	if (res.verdict != Verdict::Ok)
		return res;
	/* Every step of parse(): a data reply's body is not read by any of them. */
	static const uint8_t kNoBody = 0;
	ParsedFrame out;
	out.header = h;
	ParseResult body = parseBody(ctx, &kNoBody, out);
	body.frameBytes = body.verdict == Verdict::Drop ? 0 : res.frameBytes;
	return body;
}

ParseResult parse(std::span<const uint8_t> bytes, const ParseContext &ctx, ParsedFrame &out) noexcept
{
	ParseResult res;
	if (bytes.size() < kHeaderBytes) {
		res.verdict = Verdict::Incomplete;
		res.frameBytes = kHeaderBytes;
		return res;
	}
	const FrameHeader h = decodeHeader(bytes.data());
	res = checkHeader(h, ctx);
	if (res.verdict != Verdict::Ok) {
		out.header = h;
		return res;
	}
	const std::size_t need = res.frameBytes;
	if (bytes.size() < need) {
		res.verdict = Verdict::Incomplete;
		return res;
	}
	out = ParsedFrame{};
	out.header = h;
	out.body = bytes.subspan(kHeaderBytes, h.bodyLen);
	res = parseBody(ctx, out.body.data(), out);
	/* A Nack consumes the frame (the stream stays in step); a Drop ends the stream. */
	res.frameBytes = res.verdict == Verdict::Drop ? 0 : need;
	return res;
}

std::string describe(const ParseResult &r, const FrameHeader &h)
{
	char head[160];
	std::snprintf(head, sizeof(head), "%s seq %" PRIu64 " from rank %u to rank %u (window %" PRIu64 "): ",
		      frameKindName(h.kind), h.seq, h.origin, h.target, h.window);
	char detail[200] = "";
	switch (r.reason) {
	case Reason::UnknownKind:
		std::snprintf(detail, sizeof(detail), " (kind %" PRId64 ")", r.a);
		break;
	case Reason::BadFlags:
		std::snprintf(detail, sizeof(detail), " (flags 0x%" PRIx64 ", allowed 0x%" PRIx64 ")", r.a, r.b);
		break;
	case Reason::BodyTooLong:
		std::snprintf(detail, sizeof(detail), " (%" PRId64 " bytes, at most %" PRId64 ")", r.a, r.b);
		break;
	case Reason::BadBodyLength:
		if (r.b < 0)
			std::snprintf(detail, sizeof(detail), " (%" PRId64 " bytes; count x size overflows)", r.a);
		else
			std::snprintf(detail, sizeof(detail), " (%" PRId64 " bytes, expected %" PRId64 ")", r.a, r.b);
		break;
	case Reason::BadWireType:
	case Reason::InvalidType:
		std::snprintf(detail, sizeof(detail), ": %s", wireTypeErrorText(r.wireError));
		break;
	case Reason::OriginNotPeer:
	case Reason::OriginNotLocal:
	case Reason::TargetNotLocal:
	case Reason::TargetNotPeer:
	case Reason::BadListedRank:
	case Reason::RankNotInWindow:
		std::snprintf(detail, sizeof(detail), " (rank %" PRId64 ")", r.a);
		break;
	case Reason::OriginNotAuthenticated:
		std::snprintf(detail, sizeof(detail), " (rank %" PRId64 ", the connection is rank %" PRId64 "'s)", r.a, r.b);
		break;
	case Reason::ReplyTooLong:
		std::snprintf(detail, sizeof(detail), " (count %" PRId64 " x %" PRId64 " bytes, at most %" PRId64 ")", r.a,
			      r.b, r.c);
		break;
	case Reason::InvalidElement:
		std::snprintf(detail, sizeof(detail), " (element %" PRId64 ", %" PRId64 " bytes per count)", r.a, r.b);
		break;
	case Reason::OpNotAllowed:
		std::snprintf(detail, sizeof(detail), " (op %" PRId64 " on element %" PRId64 ")", r.a, r.b);
		break;
	case Reason::BadCount:
		std::snprintf(detail, sizeof(detail), " (count %" PRId64 ")", r.a);
		break;
	case Reason::OutOfRange:
		if (r.a < 0 && r.b < 0)
			std::snprintf(detail, sizeof(detail), " (the footprint overflows)");
		else if (r.c < 0)
			std::snprintf(detail, sizeof(detail), ": [0x%" PRIx64 ", 0x%" PRIx64 ") lies in no attached region",
				      r.a, r.b);
		else
			std::snprintf(detail, sizeof(detail), ": [%" PRId64 ", %" PRId64 ") exceeds the %" PRId64
				      "-byte window", r.a, r.b, r.c);
		break;
	case Reason::BadChunk:
		std::snprintf(detail, sizeof(detail), " (offset %" PRId64 ", %" PRId64 " bytes, of %" PRId64 ")", r.a,
			      r.b, r.c);
		break;
	case Reason::BadLockType:
	case Reason::BadErrorClass:
		std::snprintf(detail, sizeof(detail), " (%" PRId64 ")", r.a);
		break;
	default:
		break;
	}
	return std::string(head) + reasonText(r.reason) + detail;
}

} /* namespace librma::net */
