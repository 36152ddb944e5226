/* SPDX-License-Identifier: MIT */
#include "datatype/type_fuzz.h"

#include <algorithm>
#include <cstring>
#include <memory>
#include <sstream>
#include <vector>

#include "datatype/datatype.h"
#include "datatype/type_map_reference.h"
#include "error/error.h"

namespace rmatest {

namespace {

using librma::Datatype;
using TypePtr = std::shared_ptr<Datatype>;

/* The input, read as small numbers; zeros once it runs out. */
class Input
{
public:
	Input(const uint8_t *data, size_t size) : p_(data), end_(data + size) {}

	uint8_t byte() { return p_ < end_ ? *p_++ : 0; }
	/* A number in [lo, hi]. */
	int64_t range(int64_t lo, int64_t hi) { return lo + static_cast<int64_t>(byte()) % (hi - lo + 1); }

private:
	const uint8_t *p_;
	const uint8_t *end_;
};

struct Built {
	TypePtr type;
	RefType ref;
};

/* Types the engine and the reference both know as predefined (handle indices). */
constexpr int kBasics[] = { 1, 4, 5, 7, 13, 14, 15, 27, 33, 34, 37 };
constexpr size_t kMaxEntries = 4096;

class Fuzzer
{
public:
	explicit Fuzzer(Input &in) : in_(in) {}

	/* A random type of at most @depth levels of constructors; false (with why_) on a failure. */
	bool build(int depth, Built &out)
	{
		int kind = depth == 0 ? 0 : static_cast<int>(in_.range(0, 11));
		if (kind == 0) {
			int index = kBasics[in_.range(0, std::size(kBasics) - 1)];
			out.type = librma::datatypeTable().share(
				librma::encodeHandle(librma::HandleKind::Datatype, 0, static_cast<uint32_t>(index)));
			out.ref = index > 32 ? refPair(index) : refNamed(index);
			return true;
		}
		Built old;
		if (!build(depth - 1, old))
			return false;
		librma::TypeArgs a;
		a.types = { old.type };
		const int64_t ext = old.ref.extent();
		switch (kind) {
		case 1:
			a.combiner = librma::Combiner::Contiguous;
			a.count = in_.range(0, 4);
			out.ref = refContiguous(a.count, old.ref);
			break;
		case 2:
		case 3: {
			bool bytes = kind == 3;
			a.combiner = bytes ? librma::Combiner::Hvector : librma::Combiner::Vector;
			a.count = in_.range(0, 4);
			a.blocklength = in_.range(0, 3);
			a.stride = bytes ? in_.range(-40, 40) : in_.range(-4, 4);
			out.ref = refVector(a.count, a.blocklength, bytes ? a.stride : a.stride * ext, old.ref);
			break;
		}
		case 4:
		case 5:
		case 6:
		case 7: {
			static const librma::Combiner kinds[] = { librma::Combiner::Indexed, librma::Combiner::Hindexed,
								  librma::Combiner::IndexedBlock,
								  librma::Combiner::HindexedBlock };
			a.combiner = kinds[kind - 4];
			bool bytes = kind == 5 || kind == 7;
			bool block = kind >= 6;
			a.count = in_.range(0, 4);
			a.blocklength = block ? in_.range(0, 3) : 0;
			std::vector<int64_t> lengths, disps;
			for (int64_t i = 0; i < a.count; ++i) {
				lengths.push_back(block ? a.blocklength : in_.range(0, 3));
				a.disps.push_back(bytes ? in_.range(-48, 48) : in_.range(-6, 6));
				disps.push_back(bytes ? a.disps.back() : a.disps.back() * ext);
			}
			if (!block)
				a.blocklengths.assign(lengths.begin(), lengths.end());
			out.ref = refBlocks(lengths, disps, { old.ref }, false);
			break;
		}
		case 8: {
			a.combiner = librma::Combiner::Struct;
			a.count = in_.range(0, 3);
			a.types.clear();
			std::vector<int64_t> lengths, disps;
			std::vector<RefType> refs;
			for (int64_t i = 0; i < a.count; ++i) {
				Built member = i == 0 ? old : Built{};
				if (i > 0 && !build(depth - 1, member))
					return false;
				a.types.push_back(member.type);
				refs.push_back(member.ref);
				lengths.push_back(in_.range(0, 2));
				disps.push_back(in_.range(-32, 64));
			}
			a.blocklengths.assign(lengths.begin(), lengths.end());
			a.disps.assign(disps.begin(), disps.end());
			out.ref = refBlocks(lengths, disps, refs, true);
			break;
		}
		case 9: {
			a.combiner = librma::Combiner::Subarray;
			a.count = in_.range(1, 3);
			a.order = in_.range(0, 1) ? RMA_ORDER_C : RMA_ORDER_FORTRAN;
			for (int64_t i = 0; i < a.count; ++i) {
				a.sizes.push_back(in_.range(1, 4));
				a.subsizes.push_back(in_.range(1, a.sizes.back()));
				a.starts.push_back(in_.range(0, a.sizes.back() - a.subsizes.back()));
			}
			std::vector<int64_t> sizes(a.sizes.begin(), a.sizes.end());
			std::vector<int64_t> subsizes(a.subsizes.begin(), a.subsizes.end());
			std::vector<int64_t> starts(a.starts.begin(), a.starts.end());
			out.ref = refSubarray(sizes, subsizes, starts, a.order == RMA_ORDER_C, old.ref);
			break;
		}
		case 10:
			a.combiner = librma::Combiner::Resized;
			a.newLb = in_.range(-16, 16);
			a.newExtent = in_.range(-8, 40);
			out.ref = refResized(old.ref, a.newLb, a.newExtent);
			break;
		default:
			out.ref = old.ref;
			if (librma::dupType("fuzz", old.type, out.type) != RMA_SUCCESS)
				return fail("dupType refused");
			return maybeCommit(out);
		}
		if (out.ref.entries.size() > kMaxEntries)
			return tooBig_ = true, false;
		if (librma::buildType("fuzz", a, out.type) != RMA_SUCCESS)
			return fail("buildType refused a valid type");
		return maybeCommit(out);
	}

	/* Compare everything about one type and a count of it. */
	bool checkType(const Built &b, int64_t count)
	{
		const Datatype &t = *b.type;
		const RefType &r = b.ref;
		auto [tlb, text] = r.trueBounds();
		if (t.size != r.size() || t.lb != r.lb || t.extent != r.extent() || t.trueLb != tlb ||
		    t.trueExtent != text || t.elements != static_cast<int64_t>(r.entries.size()))
			return fail("summary (size, bounds, true bounds, elements) differs");
		if (librma::commitType("fuzz", *b.type) != RMA_SUCCESS)
			return fail("commit refused");
		std::vector<int64_t> want = refBytes(r, count), got;
		librma::forEachBlock(t, count, t.size * count, [&](rma_aint off, rma_count n) {
			for (rma_count k = 0; k < n; ++k)
				got.push_back(off + k);
			return 0;
		});
		if (got != want)
			return fail("flattened blocks differ from the type map");
		librma::Footprint f = librma::footprint(t, count);
		auto [lo, hi] = refFootprint(r, count);
		if (f.low != lo || f.high != hi)
			return fail("footprint differs");
		bool overlaps = librma::checkTargetType("fuzz", t, static_cast<int>(count)) != RMA_SUCCESS;
		if (overlaps != refOverlaps(r, count))
			return fail("overlap check differs");
		/* Element counting, at a random cut. */
		std::vector<RefEntry> elements = refElements(r, count);
		size_t k = elements.empty() ? 0 : static_cast<size_t>(in_.byte()) % (elements.size() + 1);
		int64_t bytes = 0;
		for (size_t i = 0; i < k; ++i)
			bytes += refBasic(elements[i].basic).size;
		if (librma::bytesOfElements(t, static_cast<rma_count>(k)) != bytes ||
		    librma::elementsInBytes(t, bytes) != static_cast<rma_count>(k))
			return fail("element counting differs");
		if (k < elements.size() && refBasic(elements[k].basic).size > 1 &&
		    librma::elementsInBytes(t, bytes + 1) != -1)
			return fail("a cut inside a basic element is not reported");
		return true;
	}

	/* Compare a transfer from (@s x @scount) into (@d x @dcount). */
	bool checkTransfer(const Built &d, int64_t dcount, const Built &s, int64_t scount)
	{
		const Datatype &dt = *d.type, &st = *s.type;
		rma_count moved = -1;
		int rc = librma::matchSignatures("fuzz", st, static_cast<int>(scount), dt, static_cast<int>(dcount), true,
						 moved);
		int want = refMatch(s.ref, scount, d.ref, dcount);
		int cls = librma::errorClass(rc);
		if ((want == 0) != (rc == RMA_SUCCESS) || (want == 1 && cls != RMA_ERR_TYPE) ||
		    (want == 2 && cls != RMA_ERR_TRUNCATE))
			return fail("signature match differs (put)");
		if (rc == RMA_SUCCESS && moved != st.size * scount)
			return fail("signature match reports the wrong byte count");
		/* The same as a get: the target (s) sends into the origin (d), which must not overlap. */
		rc = librma::matchSignatures("fuzz", dt, static_cast<int>(dcount), st, static_cast<int>(scount), false,
					     moved);
		bool dOverlaps = dcount > 0 && dt.size > 0 && refOverlaps(d.ref, dcount);
		if ((rc == RMA_SUCCESS) != (!dOverlaps && want == 0))
			return fail("signature match differs (get)");

		rma_count bytes = std::min(dt.size * dcount, st.size * scount);
		auto [dlo, dhi] = refFootprint(d.ref, dcount);
		auto [slo, shi] = refFootprint(s.ref, scount);
		std::vector<std::byte> src(static_cast<size_t>(shi - slo) + 1), dst(static_cast<size_t>(dhi - dlo) + 1);
		for (size_t i = 0; i < src.size(); ++i)
			src[i] = std::byte(i * 13 + 5);
		std::memset(dst.data(), 0xa5, dst.size());
		std::vector<std::byte> want1 = dst, got2 = dst;
		librma::copyTyped(dst.data() - dlo, dt, dcount, src.data() - slo, st, scount, bytes);
		refCopy(want1.data() - dlo, d.ref, dcount, src.data() - slo, s.ref, scount, bytes);
		if (dst != want1)
			return fail("copyTyped differs from the reference copy");
		/* The iovec walk of the cross-memory path, in chunks. */
		librma::BlockPairCursor c(dt, dcount, st, scount, bytes);
		size_t max = static_cast<size_t>(in_.range(1, 5)), chunk;
		iovec a[5], b[5];
		uintptr_t srcBase = reinterpret_cast<uintptr_t>(src.data() - slo);
		while (size_t n = librma::fillIovecs(c, got2.data() - dlo, srcBase, a, b, max, chunk))
			for (size_t i = 0; i < n; ++i)
				std::memcpy(a[i].iov_base, b[i].iov_base, a[i].iov_len);
		if (got2 != want1)
			return fail("fillIovecs walk differs from the reference copy");
		return true;
	}

	bool tooBig() const { return tooBig_; }
	const std::string &why() const { return why_; }

private:
	bool fail(const char *what)
	{
		why_ = what;
		return false;
	}

	/* Commit some children before their parents are built, to flatten through both paths. */
	bool maybeCommit(Built &b)
	{
		if (in_.range(0, 3) == 0 && librma::commitType("fuzz", *b.type) != RMA_SUCCESS)
			return fail("commit of a child refused");
		return true;
	}

	Input &in_;
	bool tooBig_ = false;
	std::string why_;
};

std::string describe(const RefType &r)
{
	std::ostringstream s;
	s << "lb " << r.lb << " extent " << r.extent() << " entries";
	for (const RefEntry &e : r.entries)
		s << " (" << e.basic << "@" << e.disp << ")";
	return s.str();
}

} /* namespace */

std::string fuzzTypes(const uint8_t *data, size_t size)
{
	Input in(data, size);
	Fuzzer f(in);
	Built a, b;
	int depthA = static_cast<int>(in.range(0, 3));
	int depthB = static_cast<int>(in.range(0, 3));
	if (!f.build(depthA, a) || !f.build(depthB, b))
		return f.tooBig() ? "" : "build: " + f.why();
	int64_t ca = in.range(0, 3), cb = in.range(0, 3);
	if (static_cast<size_t>(std::max(ca, cb)) * std::max(a.ref.entries.size(), b.ref.entries.size()) > kMaxEntries)
		return "";
	if (!f.checkType(a, ca))
		return f.why() + " for type A: " + describe(a.ref) + " x " + std::to_string(ca);
	if (!f.checkType(b, cb))
		return f.why() + " for type B: " + describe(b.ref) + " x " + std::to_string(cb);
	if (!f.checkTransfer(a, ca, b, cb))
		return f.why() + ": A " + describe(a.ref) + " x " + std::to_string(ca) + " <- B " + describe(b.ref) +
		       " x " + std::to_string(cb);
	return "";
}

} /* namespace rmatest */
