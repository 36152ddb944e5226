/* SPDX-License-Identifier: MIT */
/*
 * libFuzzer target for net::parse (lib/net/frame.h), the entry point of
 * every byte a remote host sends.
 *
 * Input: one configuration byte, then a byte stream as it would arrive on
 * a connection:
 *   bits 0-2  the connection's phase (ConnPhase; 5..7 mean Open)
 *   bit 3     a bulk connection (maxBody = kMaxBulkBody)
 * Frames are parsed one after the other, as the agent does, until the
 * stream ends, is incomplete or is dropped. For every frame parse() accepts,
 * the body checks the promise the agent relies on: every block of every
 * count of the op's target type lies inside the footprint parse() reported
 * and inside the fake host's target memory (frame_fixture.h), which this
 * target then writes (put, accumulate) or reads (get) through heap
 * buffers of exactly the target's size, so AddressSanitizer sees any byte
 * outside. It also checks that checkDataReply() (what an origin trusts
 * before it has a reply's body) agrees with parse(). A broken promise aborts.
 *
 * Built with clang -fsanitize=fuzzer,address,undefined (tests/net/meson.build);
 * the GCC suite replays tests/fuzz/corpus/frame/ through the same function
 * (tests/net/frame_test.cpp, FrameFuzzCorpus).
 */
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>

#include "net/frame.h"
#include "net/frame_fixture.h"

namespace {

using namespace librma::net;

[[noreturn]] void broken(const char *what, const FrameHeader &h)
{
	std::fprintf(stderr, "frame fuzz: %s (kind %s, seq %llu)\n", what, frameKindName(h.kind),
		     static_cast<unsigned long long>(h.seq));
	std::abort();
}

/* The fake targets' memory, exactly as large as parse() was told. */
struct Memory {
	std::unique_ptr<uint8_t[]> target[2];
	std::unique_ptr<uint8_t[]> region[rmatest::kRegions.size()];
	Memory()
	{
		for (auto &t : target)
			t = std::make_unique<uint8_t[]>(rmatest::kTargetBytes);
		for (std::size_t i = 0; i < rmatest::kRegions.size(); ++i)
			region[i] = std::make_unique<uint8_t[]>(rmatest::kRegions[i].size);
	}

	/* The byte at @at of the target, or nullptr if none is there. */
	uint8_t *byte(const ParsedFrame &f, int64_t at)
	{
		if (!f.targetView->dynamic) {
			if (at < 0 || static_cast<uint64_t>(at) >= f.targetView->size || f.targetWindowRank > 1)
				return nullptr;
			return &target[f.targetWindowRank][at];
		}
		for (std::size_t i = 0; i < rmatest::kRegions.size(); ++i) {
			const MemRegion &r = rmatest::kRegions[i];
			if (at >= 0 && static_cast<uint64_t>(at) >= r.base && static_cast<uint64_t>(at) - r.base < r.size)
				return &region[i][static_cast<uint64_t>(at) - r.base];
		}
		return nullptr;
	}
};

/* Walk the blocks of an accepted op frame (at most @budget of them) and touch each byte's ends. */
void walk(const ParsedFrame &f, Memory &mem)
{
	const FrameHeader &h = f.header;
	const bool writes = h.kind != static_cast<uint16_t>(FrameKind::Get);
	const WireType &t = f.type;
	const uint32_t nruns = t.nruns == 0 ? 1 : t.nruns;
	long budget = 1 << 14;
	for (uint64_t k = 0; k < f.op.count && budget > 0; ++k) {
		for (uint32_t j = 0; j < nruns && budget > 0; ++j) {
			WireRun r = t.nruns == 0 ? WireRun{ 0, t.size, 1, 0 } : decodeWireRun(f.runs.data() + 32 * j);
			for (uint64_t i = 0; i < r.repeat && budget > 0; ++i, --budget) {
				/* Plain arithmetic is safe here: parse() proved the footprint fits in int64. */
				int64_t lo = static_cast<int64_t>(f.op.disp) + static_cast<int64_t>(k) * t.extent + r.offset +
					     static_cast<int64_t>(i) * (r.repeat > 1 ? r.stride : 0);
				int64_t hi = lo + static_cast<int64_t>(r.length);
				if (lo < f.footprint.lo || hi > f.footprint.hi)
					broken("a block lies outside the reported footprint", h);
				uint8_t *first = mem.byte(f, lo);
				uint8_t *last = mem.byte(f, hi - 1);
				if (!first || !last)
					broken("a block lies outside the target's memory", h);
				if (last - first != hi - 1 - lo)
					broken("a block straddles two regions", h);
				if (writes)
					std::memset(first, 0xa5, static_cast<std::size_t>(hi - lo));
				else
					(void)*static_cast<volatile uint8_t *>(last);
			}
		}
	}
}

} /* namespace */

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	if (size == 0)
		return 0;
	static rmatest::FakeHost host;
	static Memory mem;
	const uint8_t cfg = data[0];
	const uint8_t p = cfg & 7;
	const ConnPhase phase = p <= static_cast<uint8_t>(ConnPhase::Open) ? static_cast<ConnPhase>(p) : ConnPhase::Open;
	const ParseContext ctx = host.context(phase, (cfg & 8) ? kMaxBulkBody : kMaxBody);

	std::span<const uint8_t> stream(data + 1, size - 1);
	while (!stream.empty()) {
		ParsedFrame f;
		ParseResult r = parse(stream, ctx, f);
		/*
		 * An origin places a data reply's body on checkDataReply()'s word,
		 * before it has the body: that word must be parse()'s.
		 */
		if (stream.size() >= kHeaderBytes) {
			const FrameHeader h = decodeHeader(stream.data());
			const ParseResult head = checkDataReply(h, ctx);
			if (head.verdict != Verdict::Incomplete && r.verdict != Verdict::Incomplete &&
			    (head.verdict != r.verdict || head.reason != r.reason))
				broken("checkDataReply() and parse() disagree", h);
			if (head.verdict == Verdict::Ok && r.verdict == Verdict::Incomplete &&
			    r.frameBytes != head.frameBytes)
				broken("checkDataReply() and parse() need different lengths", h);
		}
		if (r.verdict == Verdict::Incomplete) {
			if (r.frameBytes <= stream.size())
				broken("Incomplete although the bytes are there", f.header);
			break;
		}
		if (r.verdict == Verdict::Drop) {
			if (describe(r, f.header).empty() || r.reason == Reason::None)
				broken("a drop without a reason", f.header);
			break;
		}
		if (r.frameBytes != kHeaderBytes + f.header.bodyLen || r.frameBytes > stream.size())
			broken("frameBytes does not cover the frame", f.header);
		if (r.verdict == Verdict::Nack && (r.reason == Reason::None || reasonClass(r.reason) == 0))
			broken("a NACK without a class", f.header);
		if (r.verdict == Verdict::Ok) {
			const auto k = static_cast<FrameKind>(f.header.kind);
			const bool op = k == FrameKind::Put || k == FrameKind::PutBulk || k == FrameKind::Get ||
					k == FrameKind::Acc || k == FrameKind::GetAcc || k == FrameKind::Fop ||
					k == FrameKind::Cas;
			if (op) {
				if (!f.targetView)
					broken("an accepted op without a target", f.header);
				walk(f, mem);
			}
			if (f.data.data() && (f.data.data() < stream.data() || f.data.data() + f.data.size() >
										 stream.data() + r.frameBytes))
				broken("the payload lies outside the frame", f.header);
		}
		stream = stream.subspan(r.frameBytes);
	}
	return 0;
}
