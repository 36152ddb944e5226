/* SPDX-License-Identifier: MIT */
/*
 * The frame codec and net::parse (lib/net/frame.h): round trips of every
 * encoded structure, one valid frame of each kind, and every rejection
 * with its verdict and error class. The fake host is frame_fixture.h.
 */
#include <gtest/gtest.h>

#include <dirent.h>

#include <cstdlib>
#include <cstring>
#include <fstream>
#include <iterator>
#include <random>
#include <string>
#include <vector>

#include <rma/rma.h>

#include "net/frame.h"
#include "net/frame_fixture.h"
#include "op/op.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

namespace {

using namespace librma::net;
using rmatest::kDynamicWindow;
using rmatest::kStaticWindow;
using Bytes = std::vector<uint8_t>;

constexpr uint32_t kInt = 7;   /* RMA_INT's element index */
constexpr uint32_t kByte = 4;  /* RMA_BYTE */
constexpr uint32_t kDoubleInt = librma::kFirstPairIndex + 1;

FrameHeader req(FrameKind k, uint64_t window = kStaticWindow, uint32_t origin = 2, uint32_t target = 0)
{
	FrameHeader h;
	h.kind = static_cast<uint16_t>(k);
	h.window = window;
	h.origin = origin;
	h.target = target;
	h.seq = 42;
	return h;
}

struct OpSpec {
	explicit OpSpec(const FrameHeader &header) : h(header) {}
	FrameHeader h;
	OpBody b{ 0, 1, 0, 0 };
	WireType t{ kInt, 0, 4, 4 };
	std::vector<WireRun> runs;
	std::size_t data = 4;
	bool chunk = false;
	BulkChunk c{};
};

Bytes build(const OpSpec &s)
{
	Bytes out(kHeaderBytes + kOpBodyBytes + kWireTypeBytes + 32 * s.runs.size() + 16 + s.data);
	FrameWriter w(out);
	w.begin(s.h);
	w.opBody(s.b);
	w.wireType(s.t, s.runs);
	if (s.chunk)
		w.bulkChunk(s.c);
	Bytes data(s.data, 0x5a);
	w.put(data.data(), data.size());
	EXPECT_TRUE(w.end());
	out.resize(w.size());
	return out;
}

/* A frame with a raw body. */
Bytes raw(FrameHeader h, const Bytes &body)
{
	Bytes out(kHeaderBytes + body.size());
	FrameWriter w(out);
	w.begin(h);
	w.put(body.data(), body.size());
	EXPECT_TRUE(w.end());
	return out;
}

Bytes words32(std::initializer_list<uint32_t> v)
{
	Bytes b;
	for (uint32_t x : v)
		for (int i = 0; i < 4; ++i)
			b.push_back(static_cast<uint8_t>(x >> (8 * i)));
	return b;
}

Bytes word64(uint64_t x)
{
	Bytes b;
	for (int i = 0; i < 8; ++i)
		b.push_back(static_cast<uint8_t>(x >> (8 * i)));
	return b;
}

Bytes cat(Bytes a, const Bytes &b)
{
	a.insert(a.end(), b.begin(), b.end());
	return a;
}

class FrameParseTest : public ::testing::Test
{
protected:
	ParseResult run(const Bytes &bytes, ConnPhase phase = ConnPhase::Open, uint32_t maxBody = kMaxBody)
	{
		ctx_ = host_.context(phase, maxBody);
		return parse(bytes, ctx_, frame_);
	}
	void expectOk(const Bytes &bytes, ConnPhase phase = ConnPhase::Open, uint32_t maxBody = kMaxBody)
	{
		ParseResult r = run(bytes, phase, maxBody);
		EXPECT_EQ(r.verdict, Verdict::Ok) << describe(r, frame_.header);
		EXPECT_EQ(r.frameBytes, bytes.size());
	}
	void expectRefused(const Bytes &bytes, Reason reason, ConnPhase phase = ConnPhase::Open,
			   uint32_t maxBody = kMaxBody)
	{
		ParseResult r = run(bytes, phase, maxBody);
		EXPECT_EQ(r.reason, reason) << reasonText(r.reason) << ": " << describe(r, frame_.header);
		EXPECT_EQ(r.verdict, reasonVerdict(reason));
		EXPECT_NE(r.verdict, Verdict::Ok);
		if (r.verdict == Verdict::Nack)
			EXPECT_EQ(r.frameBytes, bytes.size()) << "a NACK consumes the frame";
		else
			EXPECT_EQ(r.frameBytes, 0u);
		std::string text = describe(r, frame_.header);
		EXPECT_NE(text.find(reasonText(reason)), std::string::npos) << text;
		EXPECT_NE(text.find(frameKindName(frame_.header.kind)), std::string::npos) << text;
	}

	rmatest::FakeHost host_;
	ParseContext ctx_;
	ParsedFrame frame_;
};

/* ---- Codec ---- */

TEST(FrameCodecTest, HeaderIsLittleEndianAtTheDesignOffsets)
{
	FrameHeader h{ 0x1122, 0x0003, 0x44332211, 0x0102030405060708, 0xa1a2a3a4, 0xb1b2b3b4, 0xc1c2c3c4c5c6c7c8 };
	uint8_t b[kHeaderBytes];
	encodeHeader(h, b);
	const uint8_t want[kHeaderBytes] = { 0x22, 0x11, 0x03, 0x00, 0x11, 0x22, 0x33, 0x44, 0x08, 0x07, 0x06,
					     0x05, 0x04, 0x03, 0x02, 0x01, 0xa4, 0xa3, 0xa2, 0xa1, 0xb4, 0xb3,
					     0xb2, 0xb1, 0xc8, 0xc7, 0xc6, 0xc5, 0xc4, 0xc3, 0xc2, 0xc1 };
	EXPECT_EQ(0, std::memcmp(b, want, kHeaderBytes));
	FrameHeader d = decodeHeader(b);
	EXPECT_EQ(d.kind, h.kind);
	EXPECT_EQ(d.flags, h.flags);
	EXPECT_EQ(d.bodyLen, h.bodyLen);
	EXPECT_EQ(d.window, h.window);
	EXPECT_EQ(d.origin, h.origin);
	EXPECT_EQ(d.target, h.target);
	EXPECT_EQ(d.seq, h.seq);
}

TEST(FrameCodecTest, BodiesRoundTrip)
{
	uint8_t b[32];
	OpBody o{ 0xfedcba9876543210, 0x80000001, 14, 0 };
	encodeOpBody(o, b);
	OpBody od = decodeOpBody(b);
	EXPECT_EQ(od.disp, o.disp);
	EXPECT_EQ(od.count, o.count);
	EXPECT_EQ(od.op, o.op);

	WireType t{ 38, 4096, 1ull << 40, -24 };
	encodeWireType(t, b);
	WireType td = decodeWireType(b);
	EXPECT_EQ(td.basic, t.basic);
	EXPECT_EQ(td.nruns, t.nruns);
	EXPECT_EQ(td.size, t.size);
	EXPECT_EQ(td.extent, t.extent);

	WireRun r{ -8, 3, 1ull << 33, -(1ll << 40) };
	encodeWireRun(r, b);
	WireRun rd = decodeWireRun(b);
	EXPECT_EQ(rd.offset, r.offset);
	EXPECT_EQ(rd.length, r.length);
	EXPECT_EQ(rd.repeat, r.repeat);
	EXPECT_EQ(rd.stride, r.stride);

	BulkChunk c{ 1 << 20, 3 << 20 };
	encodeBulkChunk(c, b);
	BulkChunk cd = decodeBulkChunk(b);
	EXPECT_EQ(cd.offset, c.offset);
	EXPECT_EQ(cd.total, c.total);
}

TEST(FrameCodecTest, WriterPatchesBodyLenAndStopsWhenFull)
{
	uint8_t buf[kHeaderBytes + 8 + kHeaderBytes + 4];
	FrameWriter w(buf);
	w.begin(req(FrameKind::Fence));
	w.u64(5);
	ASSERT_TRUE(w.end());
	EXPECT_EQ(decodeHeader(buf).bodyLen, 8u);
	EXPECT_EQ(w.size(), kHeaderBytes + 8);
	/* The second frame does not fit: it is dropped whole. */
	w.begin(req(FrameKind::Fence));
	w.u64(6);
	EXPECT_FALSE(w.end());
	EXPECT_FALSE(w.ok());
	EXPECT_EQ(w.size(), kHeaderBytes + 8);
	/* end() without begin() fails too. */
	FrameWriter v(buf);
	EXPECT_FALSE(v.end());
}

/* ---- Wire types ---- */

TEST(WireTypeTest, SpanOfNegativeStridesAndOffsets)
{
	Bytes runs(64);
	encodeWireRun({ 16, 4, 3, -8 }, runs.data());	/* blocks at 16, 8, 0 */
	encodeWireRun({ -4, 2, 1, 0 }, runs.data() + 32); /* [-4, -2) */
	TypeSpan s;
	ASSERT_EQ(checkWireType({ kByte, 2, 14, 24 }, runs, s), WireTypeError::None);
	EXPECT_EQ(s.lo, -4);
	EXPECT_EQ(s.hi, 20);
	TypeSpan fp;
	ASSERT_TRUE(footprint(s, 24, 100, 3, fp));
	EXPECT_EQ(fp.lo, 96);
	EXPECT_EQ(fp.hi, 100 + 48 + 20);
	ASSERT_TRUE(footprint(s, -24, 100, 3, fp)); /* negative extent grows downwards */
	EXPECT_EQ(fp.lo, 100 - 48 - 4);
	EXPECT_EQ(fp.hi, 120);
	ASSERT_TRUE(footprint(s, 24, 100, 0, fp));
	EXPECT_EQ(fp.lo, fp.hi);
}

TEST(WireTypeTest, RefusesEveryMalformedType)
{
	TypeSpan s{ 1, 2 };
	Bytes runs(64);
	EXPECT_EQ(checkWireType({ kByte, kMaxRuns + 1, 1, 1 }, Bytes((kMaxRuns + 1) * 32), s),
		  WireTypeError::TooManyRuns);
	EXPECT_EQ(checkWireType({ kByte, 3, 1, 1 }, runs, s), WireTypeError::Truncated);
	EXPECT_EQ(checkWireType({ kByte, 0, 0, 0 }, runs, s), WireTypeError::ZeroSize);
	EXPECT_EQ(checkWireType({ kByte, 0, 1ull << 63, 0 }, runs, s), WireTypeError::Overflow);
	encodeWireRun({ 0, 0, 1, 0 }, runs.data());
	EXPECT_EQ(checkWireType({ kByte, 1, 1, 1 }, runs, s), WireTypeError::EmptyRun);
	encodeWireRun({ 0, 1, 0, 0 }, runs.data());
	EXPECT_EQ(checkWireType({ kByte, 1, 1, 1 }, runs, s), WireTypeError::EmptyRun);
	encodeWireRun({ 0, 4, 2, 8 }, runs.data());
	EXPECT_EQ(checkWireType({ kByte, 1, 9, 16 }, runs, s), WireTypeError::SizeMismatch);
	encodeWireRun({ INT64_MAX - 2, 4, 1, 0 }, runs.data());
	EXPECT_EQ(checkWireType({ kByte, 1, 4, 4 }, runs, s), WireTypeError::Overflow);
	encodeWireRun({ 0, 1, 1ull << 40, 1ll << 40 }, runs.data());
	EXPECT_EQ(checkWireType({ kByte, 1, 1ull << 40, 1 }, runs, s), WireTypeError::Overflow);
	encodeWireRun({ 0, 1ull << 62, 8, 0 }, runs.data()); /* length × repeat overflows */
	EXPECT_EQ(checkWireType({ kByte, 1, 0, 1 }, runs, s), WireTypeError::ZeroSize);
	EXPECT_EQ(checkWireType({ kByte, 1, 1, 1 }, runs, s), WireTypeError::Overflow);
	EXPECT_EQ(s.lo, 1) << "the span is left alone on failure";
	TypeSpan fp{ 5, 6 };
	EXPECT_FALSE(footprint({ 0, 8 }, INT64_MAX / 2, 0, 4, fp));
	EXPECT_FALSE(footprint({ 0, 8 }, 1, INT64_MAX - 4, 1, fp));
	EXPECT_FALSE(footprint({ 0, 8 }, 8, 0, uint64_t{ 1 } << 63 | 2, fp));
	EXPECT_EQ(fp.lo, 5);
	for (auto e : { WireTypeError::None, WireTypeError::TooManyRuns, WireTypeError::Truncated,
			WireTypeError::EmptyRun, WireTypeError::Overflow, WireTypeError::SizeMismatch,
			WireTypeError::ZeroSize })
		EXPECT_STRNE(wireTypeErrorText(e), "unknown wire type error");
}

/* ---- One valid frame of each kind ---- */

TEST_F(FrameParseTest, AcceptsAContiguousPutAndReportsItsFootprint)
{
	OpSpec s{ req(FrameKind::Put) };
	s.h.flags = kAckWanted;
	s.b = { 100, 2, 0, 0 };
	s.t = { kInt, 0, 4, 4 };
	s.data = 8;
	Bytes f = build(s);
	expectOk(f);
	EXPECT_EQ(frame_.header.seq, 42u);
	EXPECT_EQ(frame_.footprint.lo, 100);
	EXPECT_EQ(frame_.footprint.hi, 108);
	EXPECT_EQ(frame_.data.size(), 8u);
	EXPECT_EQ(frame_.data[0], 0x5a);
	EXPECT_EQ(frame_.targetWindowRank, 0);
	ASSERT_NE(frame_.targetView, nullptr);
	EXPECT_EQ(frame_.targetView->size, rmatest::kTargetBytes);
	EXPECT_EQ(f.size(), 32u + 16 + 24 + 8) << "80 bytes for an 8-byte put, as §5.1 counts";
}

TEST_F(FrameParseTest, AcceptsAFootprintEndingExactlyAtTheWindowEnd)
{
	OpSpec s{ req(FrameKind::Put, kStaticWindow, 3, 1) };
	s.b = { rmatest::kTargetBytes - 8, 1, 0, 0 };
	s.t = { kByte, 0, 8, 8 };
	s.data = 8;
	expectOk(build(s));
	EXPECT_EQ(frame_.targetWindowRank, 1);
}

TEST_F(FrameParseTest, AcceptsStridedTypesWithTheirRuns)
{
	OpSpec s{ req(FrameKind::Get) };
	s.b = { 0, 3, 0, 0 };
	s.runs = { { 0, 8, 4, 16 }, { 100, 2, 1, 0 } }; /* 34 bytes per count over [0, 102) */
	s.t = { kByte, 2, 34, 128 };
	s.data = 0;
	expectOk(build(s));
	EXPECT_EQ(frame_.footprint.lo, 0);
	EXPECT_EQ(frame_.footprint.hi, 256 + 102);
	EXPECT_EQ(frame_.runs.size(), 64u);
}

TEST_F(FrameParseTest, AcceptsTheAccumulateFamily)
{
	OpSpec acc{ req(FrameKind::Acc) };
	acc.b = { 0, 4, static_cast<uint16_t>(librma::Op::Sum), 0 };
	acc.data = 16;
	expectOk(build(acc));

	OpSpec gacc{ req(FrameKind::GetAcc) };
	gacc.b = { 8, 2, static_cast<uint16_t>(librma::Op::NoOp), 0 };
	gacc.data = 0; /* NO_OP carries no origin data */
	expectOk(build(gacc));

	OpSpec pair{ req(FrameKind::Acc) };
	pair.b = { 0, 2, static_cast<uint16_t>(librma::Op::Maxloc), 0 };
	pair.t = { kDoubleInt, 1, 12, 16 };
	pair.runs = { { 0, 12, 1, 0 } };
	pair.data = 24;
	expectOk(build(pair));

	OpSpec fop{ req(FrameKind::Fop) };
	fop.b = { 4, 1, static_cast<uint16_t>(librma::Op::Sum), 0 };
	expectOk(build(fop));

	OpSpec cas{ req(FrameKind::Cas) };
	cas.b = { 4, 1, 0, 0 };
	cas.data = 8;
	expectOk(build(cas));
}

TEST_F(FrameParseTest, AcceptsBulkChunksOnBulkConnections)
{
	OpSpec s{ req(FrameKind::PutBulk) };
	s.b = { 0, 4096, 0, 0 };
	s.t = { kByte, 0, 1, 1 };
	s.chunk = true;
	s.c = { 0, 4096 };
	s.data = 1024;
	expectOk(build(s), ConnPhase::Open, kMaxBulkBody);
	EXPECT_EQ(frame_.chunk.total, 4096u);
	EXPECT_EQ(frame_.data.size(), 1024u);
	s.h.flags = kLastChunk;
	s.c = { 3072, 4096 };
	expectOk(build(s), ConnPhase::Open, kMaxBulkBody);
}

TEST_F(FrameParseTest, AcceptsDynamicTargetsInsideOneRegion)
{
	OpSpec s{ req(FrameKind::Put, kDynamicWindow, 2, 0) };
	s.b = { 0x10000 + 4096 - 4, 1, 0, 0 };
	expectOk(build(s));
	EXPECT_EQ(frame_.footprint.lo, 0x10000 + 4092);
	s.b.disp = 0x20000;
	expectOk(build(s));
}

TEST_F(FrameParseTest, AcceptsEveryControlKind)
{
	expectOk(raw({ 1, 0, 0, 0, 0, 0, 1 }, cat(words32({ kProtocolVersion, 2 }), cat(word64(99), Bytes(32, 1)))),
		 ConnPhase::AwaitHello);
	EXPECT_EQ(frame_.word0, kProtocolVersion);
	EXPECT_EQ(frame_.word1, 2u);
	EXPECT_EQ(frame_.value, 99u);
	EXPECT_EQ(frame_.data.size(), 32u);
	expectOk(raw({ 2, 0, 0, 0, 0, 0, 1 }, Bytes(64, 2)), ConnPhase::AwaitChallenge);
	expectOk(raw({ 3, 0, 0, 0, 0, 0, 1 }, cat(words32({ 3, 0 }), Bytes(32 + 64, 3))), ConnPhase::AwaitProof);
	EXPECT_EQ(frame_.word0, 3u);
	EXPECT_EQ(frame_.word1, kPurposeStream);
	expectOk(raw({ 3, 0, 0, 0, 0, 0, 1 }, cat(words32({ 3, kPurposeBulk }), Bytes(32 + 64, 3))),
		 ConnPhase::AwaitProof);
	EXPECT_EQ(frame_.word1, kPurposeBulk);
	expectOk(raw({ 4, 0, 0, 0, 0, 0, 1 }, {}), ConnPhase::AwaitReady);
	expectOk(raw({ 5, 0, 0, 0, 0, 0, 1 }, word64(12345)));
	EXPECT_EQ(frame_.value, 12345u);
	expectOk(raw({ 6, 0, 0, 0, 0, 0, 1 }, word64(1)));
	expectOk(raw({ 7, 0, 0, 0, 0, 0, 1 }, {}));
	expectOk(raw({ 8, 0, 0, 0, 0, 0, 1 }, words32({ 2, 0, 2, 3 })));
	EXPECT_EQ(frame_.word0, 2u);

	expectOk(raw(req(FrameKind::Flush), {}));
	expectOk(raw(req(FrameKind::Unlock), {}));
	expectOk(raw(req(FrameKind::AttachQuery, kDynamicWindow), {}));
	expectOk(raw(req(FrameKind::Complete), word64(17)));
	EXPECT_EQ(frame_.value, 17u);
	expectOk(raw(req(FrameKind::Lock), words32({ RMA_LOCK_EXCLUSIVE, 0 })));
	EXPECT_EQ(frame_.word0, uint32_t{ RMA_LOCK_EXCLUSIVE });
	expectOk(raw(req(FrameKind::Lock), words32({ RMA_LOCK_SHARED, 8192 })));
	expectOk(raw(req(FrameKind::LockAll, kStaticWindow, 3, 0), words32({ 0, 0 })));
	expectOk(raw(req(FrameKind::LockAll, kStaticWindow, 3, 0), words32({ 0, kLockAllTry })));
	EXPECT_EQ(frame_.word1, kLockAllTry);
	expectOk(raw(req(FrameKind::UnlockAll, kStaticWindow, 3, 0), {}));
	expectOk(raw(req(FrameKind::Fence, kStaticWindow, 2, 0), word64(3)));
	expectOk(raw(req(FrameKind::Post, kStaticWindow, 0, 2), words32({ 2, 0, 0, 1 })));

	/* Replies: from a target on the peer's host to an origin here. */
	expectOk(raw(req(FrameKind::GetReply, kStaticWindow, 0, 2), Bytes(100, 7)));
	EXPECT_EQ(frame_.data.size(), 100u);
	expectOk(raw(req(FrameKind::AccReply, kStaticWindow, 1, 3), Bytes(8, 7)));
	expectOk(raw(req(FrameKind::Ack, kStaticWindow, 1, 3), {}));
	expectOk(raw(req(FrameKind::Nack, kStaticWindow, 1, 3), cat(words32({ RMA_ERR_RMA_RANGE, 0 }), word64(5))));
	EXPECT_EQ(frame_.word0, uint32_t{ RMA_ERR_RMA_RANGE });
	EXPECT_EQ(frame_.value, 5u);
	expectOk(raw(req(FrameKind::AttachTable, kDynamicWindow, 0, 2),
		     cat(word64(4), cat(words32({ 1, 0 }), cat(word64(0x1000), word64(64))))));
	EXPECT_EQ(frame_.value, 4u);
	EXPECT_EQ(frame_.word0, 1u);
}

TEST_F(FrameParseTest, ParsesBackToBackFramesOneAtATime)
{
	Bytes two = cat(raw(req(FrameKind::Flush), {}), raw(req(FrameKind::Fence, kStaticWindow, 2, 0), word64(1)));
	ParseResult r = run(two);
	ASSERT_EQ(r.verdict, Verdict::Ok);
	EXPECT_EQ(frame_.header.kind, static_cast<uint16_t>(FrameKind::Flush));
	r = run(Bytes(two.begin() + static_cast<long>(r.frameBytes), two.end()));
	ASSERT_EQ(r.verdict, Verdict::Ok);
	EXPECT_EQ(frame_.header.kind, static_cast<uint16_t>(FrameKind::Fence));
}

TEST_F(FrameParseTest, EveryPrefixIsIncompleteWithTheBytesItNeeds)
{
	OpSpec s{ req(FrameKind::Put) };
	s.data = 4;
	Bytes f = build(s);
	for (std::size_t n = 0; n < f.size(); ++n) {
		ParseResult r = run(Bytes(f.begin(), f.begin() + static_cast<long>(n)));
		EXPECT_EQ(r.verdict, Verdict::Incomplete) << n;
		EXPECT_EQ(r.frameBytes, n < kHeaderBytes ? kHeaderBytes : f.size()) << n;
	}
}

/* ---- Every rejection ---- */

TEST_F(FrameParseTest, DropsBadHeaders)
{
	expectRefused(raw({ 9, 0, 0, 0, 0, 0, 1 }, {}), Reason::UnknownKind);
	expectRefused(raw({ 0, 0, 0, 0, 0, 0, 1 }, {}), Reason::UnknownKind);
	FrameHeader h = req(FrameKind::Flush);
	h.flags = kLastChunk;
	expectRefused(raw(h, {}), Reason::BadFlags);
	h.flags = 0x8000;
	expectRefused(raw(h, {}), Reason::BadFlags);
	expectRefused(raw({ 5, 1, 0, 0, 0, 0, 1 }, word64(0)), Reason::BadFlags);
	/* bodyLen past the connection's maximum: decided from the header alone. */
	Bytes big(kHeaderBytes);
	FrameHeader bh = req(FrameKind::GetReply, kStaticWindow, 0, 2);
	bh.bodyLen = kMaxBody + 1;
	encodeHeader(bh, big.data());
	expectRefused(big, Reason::BodyTooLong);
	bh.bodyLen = kMaxBulkBody + 1;
	encodeHeader(bh, big.data());
	expectRefused(big, Reason::BodyTooLong, ConnPhase::Open, kMaxBulkBody);
	bh.bodyLen = 0xffffffff;
	encodeHeader(bh, big.data());
	expectRefused(big, Reason::BodyTooLong);
}

TEST_F(FrameParseTest, DropsKindsOutsideTheirHandshakeState)
{
	Bytes hello = raw({ 1, 0, 0, 0, 0, 0, 1 }, Bytes(48));
	expectRefused(hello, Reason::KindOutOfPhase);			     /* after the handshake */
	expectRefused(hello, Reason::KindOutOfPhase, ConnPhase::AwaitProof); /* a replayed HELLO */
	expectRefused(raw({ 4, 0, 0, 0, 0, 0, 1 }, {}), Reason::KindOutOfPhase, ConnPhase::AwaitChallenge);
	/* No op, ping or anything else before the handshake ends. */
	OpSpec s{ req(FrameKind::Put) };
	for (ConnPhase p : { ConnPhase::AwaitHello, ConnPhase::AwaitChallenge, ConnPhase::AwaitProof,
			     ConnPhase::AwaitReady }) {
		expectRefused(build(s), Reason::KindOutOfPhase, p);
		expectRefused(raw({ 5, 0, 0, 0, 0, 0, 1 }, word64(0)), Reason::KindOutOfPhase, p);
	}
}

TEST_F(FrameParseTest, DropsFramesWithTheWrongRanksOrWindow)
{
	expectRefused(raw({ 5, 0, 0, 3, 0, 0, 1 }, word64(0)), Reason::WindowNotZero);
	expectRefused(raw({ 5, 0, 0, 0, 2, 0, 1 }, word64(0)), Reason::RankNotZero);
	expectRefused(raw(req(FrameKind::Flush, 0), {}), Reason::WindowZero);

	OpSpec s{ req(FrameKind::Put, kStaticWindow, 0, 1) }; /* origin on this host */
	expectRefused(build(s), Reason::OriginNotPeer);
	s.h.origin = 4; /* outside the world */
	expectRefused(build(s), Reason::OriginNotPeer);
	s.h = req(FrameKind::Put, kStaticWindow, 2, 3); /* target on the peer's host */
	expectRefused(build(s), Reason::TargetNotLocal);
	s.h.target = 77;
	expectRefused(build(s), Reason::TargetNotLocal);

	expectRefused(raw(req(FrameKind::Ack, kStaticWindow, 2, 3), {}), Reason::OriginNotLocal);
	expectRefused(raw(req(FrameKind::Ack, kStaticWindow, 0, 1), {}), Reason::TargetNotPeer);
	expectRefused(raw(req(FrameKind::Fence, kStaticWindow, 2, 1), word64(1)), Reason::RankNotZero);
	expectRefused(raw(req(FrameKind::Fence, kStaticWindow, 1, 0), word64(1)), Reason::OriginNotPeer);
	expectRefused(raw(req(FrameKind::Post, kStaticWindow, 2, 2), words32({ 1, 0, 0 })), Reason::RankNotZero);
	expectRefused(raw(req(FrameKind::Post, kStaticWindow, 0, 1), words32({ 1, 0, 0 })), Reason::TargetNotPeer);
}

TEST_F(FrameParseTest, ADataReplysHeaderAloneGetsTheVerdictOfParse)
{
	/* checkDataReply() decides from 32 bytes what parse() decides from the whole frame. */
	const ParseContext ctx = host_.context();
	const FrameHeader cases[] = {
		req(FrameKind::GetReply, kStaticWindow, 0, 2),	 /* fine */
		req(FrameKind::AccReply, kStaticWindow, 1, 3),	 /* fine */
		req(FrameKind::GetReply, 12345, 0, 2),		 /* no such window */
		req(FrameKind::GetReply, kDynamicWindow, 1, 2), /* origin not a member */
		req(FrameKind::GetReply, kDynamicWindow, 0, 3), /* target not a member */
		req(FrameKind::GetReply, kStaticWindow, 2, 3),	 /* origin not on this host */
		req(FrameKind::GetReply, kStaticWindow, 0, 1),	 /* target not on the peer's host */
		req(FrameKind::GetReply, 0, 0, 2),		 /* window 0 */
	};
	for (const FrameHeader &h0 : cases) {
		FrameHeader h = h0;
		h.bodyLen = 100;
		const ParseResult head = checkDataReply(h, ctx);
		ParsedFrame f;
		const ParseResult whole = parse(raw(h, Bytes(100, 7)), ctx, f);
		EXPECT_EQ(head.verdict, whole.verdict) << "window " << h.window << " origin " << h.origin;
		EXPECT_EQ(head.reason, whole.reason) << "window " << h.window << " origin " << h.origin;
	}
	EXPECT_EQ(checkDataReply(req(FrameKind::GetReply, kStaticWindow, 0, 2), ctx).verdict, Verdict::Ok);
	/* Any other kind needs its body. */
	EXPECT_EQ(checkDataReply(req(FrameKind::Ack, kStaticWindow, 0, 2), ctx).verdict, Verdict::Incomplete);
	EXPECT_EQ(checkDataReply(req(FrameKind::Put, kStaticWindow, 2, 0), ctx).verdict, Verdict::Incomplete);
}

TEST_F(FrameParseTest, DropsBodiesOfTheWrongShape)
{
	expectRefused(raw({ 1, 0, 0, 0, 0, 0, 1 }, Bytes(47)), Reason::BadBodyLength, ConnPhase::AwaitHello);
	expectRefused(raw({ 2, 0, 0, 0, 0, 0, 1 }, Bytes(65)), Reason::BadBodyLength, ConnPhase::AwaitChallenge);
	expectRefused(raw({ 3, 0, 0, 0, 0, 0, 1 }, Bytes(103)), Reason::BadBodyLength, ConnPhase::AwaitProof);
	/* Version 3's PROOF, without the signature. */
	expectRefused(raw({ 3, 0, 0, 0, 0, 0, 1 }, Bytes(40)), Reason::BadBodyLength, ConnPhase::AwaitProof);
	/* A purpose no version knows. */
	expectRefused(raw({ 3, 0, 0, 0, 0, 0, 1 }, cat(words32({ 1, kPurposeBulk + 1 }), Bytes(32 + 64))),
		      Reason::ReservedNotZero, ConnPhase::AwaitProof);
	expectRefused(raw({ 4, 0, 0, 0, 0, 0, 1 }, Bytes(1)), Reason::BadBodyLength, ConnPhase::AwaitReady);
	expectRefused(raw({ 5, 0, 0, 0, 0, 0, 1 }, Bytes(7)), Reason::BadBodyLength);
	expectRefused(raw({ 8, 0, 0, 0, 0, 0, 1 }, words32({ 0, 0 })), Reason::BadBodyLength);
	expectRefused(raw({ 8, 0, 0, 0, 0, 0, 1 }, words32({ 2, 0, 1 })), Reason::BadBodyLength);
	expectRefused(raw({ 8, 0, 0, 0, 0, 0, 1 }, words32({ 1, 1, 1 })), Reason::ReservedNotZero);
	expectRefused(raw({ 8, 0, 0, 0, 0, 0, 1 }, words32({ 1 })), Reason::BadBodyLength);
	expectRefused(raw({ 8, 0, 0, 0, 0, 0, 1 }, words32({ 1, 0, 4 })), Reason::BadListedRank);
	expectRefused(raw(req(FrameKind::Post, kStaticWindow, 0, 2), words32({ 1, 0, 3 })), Reason::BadListedRank);

	expectRefused(raw(req(FrameKind::Flush), Bytes(8)), Reason::BadBodyLength);
	expectRefused(raw(req(FrameKind::Fence, kStaticWindow, 2, 0), Bytes(4)), Reason::BadBodyLength);
	expectRefused(raw(req(FrameKind::LockAll, kStaticWindow, 2, 0), words32({ 0, 2 })), Reason::ReservedNotZero);
	expectRefused(raw(req(FrameKind::Nack, kStaticWindow, 1, 3), Bytes(15)), Reason::BadBodyLength);
	expectRefused(raw(req(FrameKind::Nack, kStaticWindow, 1, 3), cat(words32({ 34, 9 }), word64(0))),
		      Reason::ReservedNotZero);
	expectRefused(raw(req(FrameKind::Nack, kStaticWindow, 1, 3), cat(words32({ 0, 0 }), word64(0))),
		      Reason::BadErrorClass);
	expectRefused(raw(req(FrameKind::Nack, kStaticWindow, 1, 3), cat(words32({ RMA_ERR_LASTCODE, 0 }), word64(0))),
		      Reason::BadErrorClass);
	expectRefused(raw(req(FrameKind::AttachTable, kDynamicWindow, 0, 2), Bytes(15)), Reason::BadBodyLength);
	expectRefused(raw(req(FrameKind::AttachTable, kDynamicWindow, 0, 2), cat(word64(1), words32({ 2, 0 }))),
		      Reason::BadBodyLength);
	expectRefused(raw(req(FrameKind::AttachTable, kDynamicWindow, 0, 2), cat(word64(1), words32({ 0, 1 }))),
		      Reason::ReservedNotZero);
	expectRefused(raw(req(FrameKind::AttachTable, kDynamicWindow, 0, 2),
			  cat(word64(1), cat(words32({ 1, 0 }), cat(word64(~0ull - 4), word64(8))))),
		      Reason::BadRegion);
	expectRefused(raw(req(FrameKind::AttachTable, kDynamicWindow, 0, 2),
			  cat(word64(1), cat(words32({ 1, 0 }), cat(word64(64), word64(0))))),
		      Reason::BadRegion);
}

TEST_F(FrameParseTest, DropsOpFramesWhoseLengthsDisagree)
{
	OpSpec s{ req(FrameKind::Put) };
	s.data = 5; /* count 1 × 4 bytes */
	expectRefused(build(s), Reason::BadBodyLength);
	s.data = 3;
	expectRefused(build(s), Reason::BadBodyLength);
	expectRefused(raw(req(FrameKind::Put), Bytes(39)), Reason::BadBodyLength);

	OpSpec g{ req(FrameKind::Get) };
	g.data = 4; /* a get carries no data */
	expectRefused(build(g), Reason::BadBodyLength);

	OpSpec c{ req(FrameKind::Cas) };
	c.data = 4; /* needs origin + compare */
	expectRefused(build(c), Reason::BadBodyLength);

	OpSpec r{ req(FrameKind::Put) };
	r.t = { kByte, 3, 4, 4 }; /* three runs announced, none sent */
	r.data = 4;
	Bytes f = build(r);
	expectRefused(f, Reason::BadWireType);
	EXPECT_EQ(run(f).wireError, WireTypeError::Truncated);

	OpSpec huge{ req(FrameKind::Put) };
	huge.t = { kByte, 0, 1ull << 62, 1 };
	huge.b.count = 4;
	huge.data = 0;
	expectRefused(build(huge), Reason::BadBodyLength);

	OpSpec res{ req(FrameKind::Put) };
	res.b.reserved = 1;
	expectRefused(build(res), Reason::ReservedNotZero);
	res.b = { 0, 1, 3, 0 }; /* an op on a put */
	expectRefused(build(res), Reason::ReservedNotZero);

	OpSpec bulk{ req(FrameKind::PutBulk) };
	bulk.chunk = true;
	bulk.c = { 0, 4 };
	bulk.data = 0; /* an empty chunk */
	expectRefused(build(bulk), Reason::BadBodyLength, ConnPhase::Open, kMaxBulkBody);
}

/*
 * A reply is sized from the request's type size x count, whatever data the
 * request itself carries: that product must neither wrap nor exceed a frame
 * the origin takes. The first frame is a review's: its footprint is one
 * byte inside the window, its size x count wraps to 0, and the server once
 * sized a 0-byte reply and copied 4 x 2^62 blocks into it.
 */
TEST_F(FrameParseTest, DropsRequestsWhoseReplyWouldNotFitAFrame)
{
	OpSpec wrap{ req(FrameKind::Get) };
	wrap.t = { kByte, 1, 1ull << 62, 0 };
	wrap.runs = { WireRun{ 0, 1, 1ull << 62, 0 } };
	wrap.b.count = 4;
	wrap.data = 0;
	expectRefused(build(wrap), Reason::ReplyTooLong);

	/* Without wrapping: 4 GiB of reply. */
	OpSpec big{ req(FrameKind::Get) };
	big.t = { kByte, 0, 1, 1 };
	big.b.count = 0xffffffffu;
	big.data = 0;
	expectRefused(build(big), Reason::ReplyTooLong);

	/* A reply of a whole frame is fine, one byte more is not; bulk connections take larger ones. */
	OpSpec edge{ req(FrameKind::Get) };
	edge.t = { kByte, 0, 1, 1 };
	edge.b.count = kMaxBody;
	edge.data = 0;
	Bytes f = build(edge);
	EXPECT_NE(run(f).reason, Reason::ReplyTooLong) << describe(run(f), frame_.header);
	edge.b.count = kMaxBody + 1;
	expectRefused(build(edge), Reason::ReplyTooLong);
	EXPECT_NE(run(build(edge), ConnPhase::Open, kMaxBulkBody).reason, Reason::ReplyTooLong);

	/* get_accumulate with NO_OP carries no data but asks for count x size back. */
	OpSpec ga{ req(FrameKind::GetAcc) };
	ga.t = { kInt, 0, 4, 4 };
	ga.b = { 0, (kMaxBody / 4) + 1, static_cast<uint16_t>(librma::Op::NoOp), 0 };
	ga.data = 0;
	expectRefused(build(ga), Reason::ReplyTooLong);
}

/*
 * On a server's connection every request must name the authenticated peer
 * as its origin (a POST: as its poster): one process of the peer's host
 * cannot unlock another's lock or count in its fence.
 */
TEST_F(FrameParseTest, DropsRequestsThatSpeakForAnotherRankOfThePeersHost)
{
	auto as = [&](const Bytes &bytes, int64_t peerRank) {
		ctx_ = host_.context();
		ctx_.peerRank = peerRank;
		return parse(bytes, ctx_, frame_);
	};
	Bytes put = build(OpSpec{ req(FrameKind::Put, kStaticWindow, 2, 0) });
	EXPECT_EQ(as(put, 2).verdict, Verdict::Ok);
	EXPECT_EQ(as(put, -1).verdict, Verdict::Ok);
	ParseResult r = as(put, 3);
	EXPECT_EQ(r.reason, Reason::OriginNotAuthenticated);
	EXPECT_EQ(r.verdict, Verdict::Drop);
	EXPECT_NE(describe(r, frame_.header).find("rank 3's"), std::string::npos) << describe(r, frame_.header);

	Bytes unlock = raw(req(FrameKind::Unlock, kStaticWindow, 3, 0), {});
	EXPECT_EQ(as(unlock, 3).verdict, Verdict::Ok) << describe(as(unlock, 3), frame_.header);
	EXPECT_EQ(as(unlock, 2).reason, Reason::OriginNotAuthenticated);

	Bytes fence = raw(req(FrameKind::Fence, kStaticWindow, 3, 0), word64(1));
	EXPECT_EQ(as(fence, 3).verdict, Verdict::Ok) << describe(as(fence, 3), frame_.header);
	EXPECT_EQ(as(fence, 2).reason, Reason::OriginNotAuthenticated);

	Bytes post = raw(req(FrameKind::Post, kStaticWindow, 0, 2), words32({ 2, 0, 0, 1 }));
	EXPECT_EQ(as(post, 2).verdict, Verdict::Ok) << describe(as(post, 2), frame_.header);
	EXPECT_EQ(as(post, 3).reason, Reason::OriginNotAuthenticated);
}

TEST_F(FrameParseTest, NacksWellFormedRequestsItCannotApply)
{
	OpSpec s{ req(FrameKind::Put, 1234) };
	expectRefused(build(s), Reason::UnknownWindow);
	EXPECT_EQ(reasonClass(Reason::UnknownWindow), RMA_ERR_WIN);
	expectRefused(raw(req(FrameKind::Flush, 1234), {}), Reason::UnknownWindow);

	OpSpec d{ req(FrameKind::Put, kDynamicWindow, 3, 0) }; /* rank 3 is not in the dynamic window */
	expectRefused(build(d), Reason::RankNotInWindow);
	d.h = req(FrameKind::Put, kDynamicWindow, 2, 1);
	expectRefused(build(d), Reason::RankNotInWindow);
	expectRefused(raw(req(FrameKind::Post, kDynamicWindow, 0, 2), words32({ 1, 0, 1 })), Reason::RankNotInWindow);
	expectRefused(raw(req(FrameKind::Fence, kDynamicWindow, 3, 0), word64(1)), Reason::RankNotInWindow);
	EXPECT_EQ(reasonClass(Reason::RankNotInWindow), RMA_ERR_RANK);

	expectRefused(raw(req(FrameKind::Lock), words32({ 7, 0 })), Reason::BadLockType);
	EXPECT_EQ(reasonClass(Reason::BadLockType), RMA_ERR_LOCKTYPE);
}

TEST_F(FrameParseTest, NacksBadTypesElementsOpsAndCounts)
{
	OpSpec s{ req(FrameKind::Put) };
	s.runs = { { 0, 2, 1, 0 } };
	s.t = { kByte, 1, 4, 4 }; /* runs hold 2 bytes, size says 4 */
	expectRefused(build(s), Reason::InvalidType);
	EXPECT_EQ(run(build(s)).wireError, WireTypeError::SizeMismatch);
	EXPECT_EQ(reasonClass(Reason::InvalidType), RMA_ERR_TYPE);

	OpSpec e{ req(FrameKind::Put) };
	e.t = { 0, 0, 4, 4 };
	expectRefused(build(e), Reason::InvalidElement);
	e.t.basic = librma::kElemLimit;
	expectRefused(build(e), Reason::InvalidElement);

	OpSpec acc{ req(FrameKind::Acc) };
	acc.b.op = static_cast<uint16_t>(librma::Op::Maxloc); /* MAXLOC on int */
	expectRefused(build(acc), Reason::OpNotAllowed);
	acc.b.op = static_cast<uint16_t>(librma::Op::NoOp); /* NO_OP does not accumulate */
	expectRefused(build(acc), Reason::OpNotAllowed);
	acc.b.op = 0;
	expectRefused(build(acc), Reason::OpNotAllowed);
	acc.b.op = 15;
	expectRefused(build(acc), Reason::OpNotAllowed);
	EXPECT_EQ(reasonClass(Reason::OpNotAllowed), RMA_ERR_OP);
	acc.b.op = static_cast<uint16_t>(librma::Op::Sum);
	acc.t = { kInt, 0, 6, 6 }; /* not a whole number of ints */
	acc.data = 6;
	expectRefused(build(acc), Reason::InvalidElement);

	OpSpec fop{ req(FrameKind::Fop) };
	fop.b = { 0, 2, static_cast<uint16_t>(librma::Op::Sum), 0 };
	fop.data = 8;
	expectRefused(build(fop), Reason::BadCount);
	EXPECT_EQ(reasonClass(Reason::BadCount), RMA_ERR_COUNT);
	fop.b.count = 1;
	fop.t = { kInt, 0, 8, 8 }; /* two ints: FOP takes one element */
	expectRefused(build(fop), Reason::InvalidElement);

	OpSpec cas{ req(FrameKind::Cas) };
	cas.t = { 14, 0, 8, 8 }; /* DOUBLE: no compare-and-swap */
	cas.data = 16;
	expectRefused(build(cas), Reason::InvalidElement);
}

TEST_F(FrameParseTest, NacksFootprintsOutsideTheTarget)
{
	OpSpec s{ req(FrameKind::Put) };
	s.b = { rmatest::kTargetBytes - 3, 1, 0, 0 }; /* one byte past the end */
	expectRefused(build(s), Reason::OutOfRange);
	EXPECT_EQ(reasonClass(Reason::OutOfRange), RMA_ERR_RMA_RANGE);
	EXPECT_NE(describe(run(build(s)), frame_.header).find("[4093, 4097) exceeds the 4096-byte window"),
		  std::string::npos);
	s.b.disp = 1ull << 63;
	expectRefused(build(s), Reason::OutOfRange);
	s.b.disp = INT64_MAX - 1;
	expectRefused(build(s), Reason::OutOfRange);

	OpSpec neg{ req(FrameKind::Get) }; /* a run before the start */
	neg.runs = { { -8, 4, 1, 0 } };
	neg.t = { kByte, 1, 4, 4 };
	neg.data = 0;
	neg.b = { 4, 1, 0, 0 };
	expectRefused(build(neg), Reason::OutOfRange);

	OpSpec many{ req(FrameKind::Get) }; /* counts walk past the end */
	many.b = { 0, 1025, 0, 0 };
	many.data = 0;
	expectRefused(build(many), Reason::OutOfRange);

	OpSpec dyn{ req(FrameKind::Put, kDynamicWindow, 2, 0) };
	dyn.b.disp = 0x10000 + 4094; /* straddles the region's end */
	expectRefused(build(dyn), Reason::OutOfRange);
	dyn.b.disp = 0x18000; /* in the gap */
	expectRefused(build(dyn), Reason::OutOfRange);
	dyn.b.disp = 0x100; /* below every region */
	expectRefused(build(dyn), Reason::OutOfRange);
	EXPECT_NE(describe(run(build(dyn)), frame_.header).find("no attached region"), std::string::npos);
}

TEST_F(FrameParseTest, NacksBulkChunksOutsideTheOperation)
{
	OpSpec s{ req(FrameKind::PutBulk) };
	s.b = { 0, 4096, 0, 0 };
	s.t = { kByte, 0, 1, 1 };
	s.chunk = true;
	s.data = 1024;
	s.c = { 3500, 4096 }; /* runs past the total */
	expectRefused(build(s), Reason::BadChunk, ConnPhase::Open, kMaxBulkBody);
	s.c = { 0, 4000 }; /* total is not count × size */
	expectRefused(build(s), Reason::BadChunk, ConnPhase::Open, kMaxBulkBody);
	s.c = { 3072, 4096 }; /* the last chunk without kLastChunk */
	expectRefused(build(s), Reason::BadChunk, ConnPhase::Open, kMaxBulkBody);
	s.h.flags = kLastChunk;
	s.c = { 0, 4096 }; /* kLastChunk on a chunk that is not last */
	expectRefused(build(s), Reason::BadChunk, ConnPhase::Open, kMaxBulkBody);
	s.c = { ~0ull - 100, 4096 };
	expectRefused(build(s), Reason::BadChunk, ConnPhase::Open, kMaxBulkBody);
}

TEST(FrameReasonTest, EveryReasonHasAVerdictAClassAndAText)
{
	for (int i = 1; i <= static_cast<int>(Reason::BadErrorClass); ++i) {
		auto r = static_cast<Reason>(i);
		EXPECT_NE(reasonVerdict(r), Verdict::Ok) << i;
		EXPECT_NE(reasonVerdict(r), Verdict::Incomplete) << i;
		EXPECT_GT(reasonClass(r), 0) << i;
		EXPECT_STRNE(reasonText(r), "unknown reason") << i;
		if (reasonVerdict(r) == Verdict::Drop) {
			EXPECT_EQ(reasonClass(r), RMA_ERR_PROC_FAILED) << i;
		}
	}
	for (uint16_t k = 0; k < 70; ++k) {
		bool named = std::strcmp(frameKindName(k), "(unknown)") != 0;
		rmatest::FakeHost host;
		ParseContext ctx = host.context();
		FrameHeader h;
		h.kind = k;
		EXPECT_EQ(named, checkHeader(h, ctx).reason != Reason::UnknownKind) << k;
	}
}

/* ---- The fuzz body over fixed inputs (the libFuzzer target is tests/fuzz/frame_fuzz.cpp) ---- */

TEST(FrameFuzzCorpus, ReplaysEverySeed)
{
	const char *src = std::getenv("RMA_SOURCE_ROOT");
	ASSERT_NE(src, nullptr) << "run through meson test";
	std::string dir = std::string(src) + "/tests/fuzz/corpus/frame";
	DIR *d = opendir(dir.c_str());
	ASSERT_NE(d, nullptr) << dir;
	int seeds = 0;
	while (dirent *e = readdir(d)) {
		if (e->d_name[0] == '.')
			continue;
		std::ifstream in(dir + "/" + e->d_name, std::ios::binary);
		Bytes bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
		EXPECT_EQ(LLVMFuzzerTestOneInput(bytes.data(), bytes.size()), 0) << e->d_name;
		++seeds;
		/* Each seed is a valid stream (but the one named for its refusal), parsed to its end. */
		ASSERT_FALSE(bytes.empty()) << e->d_name;
		rmatest::FakeHost host;
		const uint8_t p = bytes[0] & 7;
		ParseContext ctx = host.context(static_cast<ConnPhase>(p), (bytes[0] & 8) ? kMaxBulkBody : kMaxBody);
		const bool refused = std::strcmp(e->d_name, "out-of-range") == 0;
		std::span<const uint8_t> rest(bytes.data() + 1, bytes.size() - 1);
		while (!rest.empty()) {
			ParsedFrame f;
			ParseResult r = parse(rest, ctx, f);
			EXPECT_EQ(r.verdict, refused ? Verdict::Nack : Verdict::Ok) << e->d_name << ": " << describe(r, f.header);
			if (r.frameBytes == 0 || r.verdict == Verdict::Incomplete)
				break;
			rest = rest.subspan(r.frameBytes);
		}
		EXPECT_TRUE(rest.empty()) << e->d_name;
	}
	closedir(d);
	EXPECT_GE(seeds, 20);
}

TEST(FrameFuzzCorpus, MutatedSeedsNeverBreakTheParser)
{
	const char *src = std::getenv("RMA_SOURCE_ROOT");
	ASSERT_NE(src, nullptr);
	std::string dir = std::string(src) + "/tests/fuzz/corpus/frame";
	std::vector<Bytes> seeds;
	DIR *d = opendir(dir.c_str());
	ASSERT_NE(d, nullptr);
	while (dirent *e = readdir(d)) {
		if (e->d_name[0] == '.')
			continue;
		std::ifstream in(dir + "/" + e->d_name, std::ios::binary);
		seeds.emplace_back((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
	}
	closedir(d);
	ASSERT_FALSE(seeds.empty());
	std::mt19937_64 rng(20261125);
	for (int i = 0; i < 20000; ++i) {
		Bytes in = seeds[rng() % seeds.size()];
		for (int f = 0, n = 1 + static_cast<int>(rng() % 4); f < n && !in.empty(); ++f)
			in[rng() % in.size()] ^= static_cast<uint8_t>(1u << (rng() % 8));
		if (rng() % 4 == 0)
			in.resize(rng() % (in.size() + 1));
		LLVMFuzzerTestOneInput(in.data(), in.size()); /* aborts on a broken invariant */
	}
}

} /* namespace */
