/* SPDX-License-Identifier: MIT */
/*
 * Type signatures: matching the two sides of a transfer, and counting
 * basic elements (rma_get_elements & co.).
 */
#include "datatype/datatype.h"

#include "error/error.h"

namespace librma {

namespace {

/* The basic elements in one pass over the signature nodes [@b, @e). */
rma_count elementsOf(const SignatureRun *sig, size_t b, size_t e)
{
	rma_count n = 0;
	for (size_t i = b; i < e; i += 1 + sig[i].body)
		n += sig[i].isRepeat() ? sig[i].count * elementsOf(sig, i + 1, i + 1 + sig[i].body) : sig[i].count;
	return n;
}

/*
 * The signature of a count of a type, one run at a time: a depth-first walk
 * of the signature tree, the count of copies being its outermost repeat. A
 * type whose signature is lazy (too many distinct runs to keep: its
 * detail's signature is null) is walked from its recipe instead, its
 * items' signatures one after the other, so memory stays O(depth) however
 * long the signature is.
 */
class SignatureStream
{
public:
	/*
	 * One level of the walk: signature nodes [start, end) of @sig, passes
	 * left after the current one in @repsLeft; or (sig == nullptr) the
	 * items of a recipe, @reps times, @copiesLeft more copies after this
	 * one. @i: the current entry.
	 */
	struct Frame {
		const SignatureRun *sig;
		size_t start;
		size_t end;
		size_t i;
		rma_count repsLeft;
		const TypeItem *items;
		rma_count rep;
		rma_count reps;
		rma_count copiesLeft;
	};

	SignatureStream(const Datatype &t, rma_count copies)
	{
		if (copies <= 0 || t.elements == 0)
			return;
		atStart_ = 0;
		if (!t.detail) {
			setRun(t.basic, copies);
			return;
		}
		const TypeDetail &d = *t.detail;
		if (!d.signature) {
			pushRecipe(d, copies);
			descend();
			return;
		}
		const Signature &sig = *d.signature;
		rma_count total;
		if (sig.size() == 1 && !__builtin_mul_overflow(sig.front().count, copies, &total)) {
			setRun(sig.front().type, total);
			return;
		}
		pushNodes(sig.data(), 0, sig.size(), copies - 1);
		descend();
	}
	SignatureStream(const SignatureStream &) = delete;
	SignatureStream &operator=(const SignatureStream &) = delete;

	bool done() const { return left_ == 0; }
	BasicType type() const { return type_; }
	rma_count left() const { return left_; }
	/* At the first element of a copy of the type (not at the first copy's: the caller knows). */
	bool atCopyStart() const { return atStart_ == 0 && left_ == runCount_; }

	void advance(rma_count n)
	{
		left_ -= n;
		if (left_ > 0) {
			atStart_ = depth_;
			return;
		}
		for (;;) {
			if (depth_ == 0)
				return; /* left_ stays 0: done */
			Frame &f = frame(depth_ - 1);
			f.i += f.sig ? 1 + f.sig[f.i].body : 1;
			if (valid(f)) {
				atStart_ = depth_; /* the frames entered below start their passes */
				break;
			}
			if (f.sig && f.repsLeft > 0) {
				--f.repsLeft;
				f.i = f.start;
				atStart_ = depth_ - 1;
				break;
			}
			if (!f.sig && ++f.rep < f.reps) {
				f.i = 0;
				valid(f);
				atStart_ = depth_; /* a repetition inside the type, not a copy of it */
				break;
			}
			if (!f.sig && f.copiesLeft > 0) {
				--f.copiesLeft;
				f.rep = 0;
				f.i = 0;
				valid(f);
				atStart_ = depth_ - 1;
				break;
			}
			--depth_;
		}
		descend();
	}

	/*
	 * Skip whole passes that both streams would match trivially: when each
	 * stands at the start of a pass over equal node lists, the passes left
	 * of both can go together. @pos moves on by the elements skipped.
	 */
	static void skipEqualPasses(SignatureStream &a, SignatureStream &b, rma_count &pos)
	{
		if (a.done() || b.done() || a.atStart_ >= a.depth_ || b.atStart_ >= b.depth_)
			return;
		for (size_t x = a.atStart_; x < a.depth_; ++x) {
			Frame &fa = a.frame(x);
			if (!fa.sig || fa.repsLeft == 0)
				continue;
			for (size_t y = b.atStart_; y < b.depth_; ++y) {
				Frame &fb = b.frame(y);
				if (!fb.sig || fb.repsLeft == 0 || fa.end - fa.start != fb.end - fb.start)
					continue;
				const SignatureRun *na = fa.sig + fa.start, *nb = fb.sig + fb.start;
				if (na != nb &&
				    !std::equal(na, na + (fa.end - fa.start), nb, [](const SignatureRun &p, const SignatureRun &q) {
					    return p.type == q.type && p.body == q.body && p.count == q.count;
				    }))
					continue;
				rma_count k = std::min(fa.repsLeft, fb.repsLeft);
				fa.repsLeft -= k;
				fb.repsLeft -= k;
				pos += k * elementsOf(fa.sig, fa.start, fa.end);
				return;
			}
		}
	}

private:
	static constexpr size_t kInlineFrames = 8;

	Frame &frame(size_t k) { return k < kInlineFrames ? inline_[k] : more_[k - kInlineFrames]; }
	Frame &push()
	{
		if (depth_ >= kInlineFrames && depth_ - kInlineFrames == more_.size())
			more_.emplace_back();
		return frame(depth_++);
	}
	void pushNodes(const SignatureRun *sig, size_t start, size_t end, rma_count repsLeft)
	{
		Frame &f = push();
		f = Frame{ sig, start, end, start, repsLeft, nullptr, 0, 1, 0 };
	}
	void pushRecipe(const TypeDetail &d, rma_count copies)
	{
		Frame &f = push();
		f = Frame{ nullptr, 0, d.items.size(), 0, 0, d.items.data(), 0, d.repeat, copies - 1 };
		valid(f);
	}
	/* Whether @f has a current entry; a recipe's entries without elements are passed over. */
	static bool valid(Frame &f)
	{
		if (f.sig)
			return f.i < f.end;
		while (f.i < f.end && (f.items[f.i].copies == 0 || f.items[f.i].type->elements == 0))
			++f.i;
		return f.i < f.end;
	}
	void setRun(BasicType type, rma_count count)
	{
		type_ = type;
		left_ = count;
		runCount_ = count;
	}
	/* From the top frame's current entry down to the first run, entering repeats and items. */
	void descend()
	{
		for (;;) {
			Frame &f = frame(depth_ - 1);
			if (f.sig) {
				const SignatureRun &r = f.sig[f.i];
				if (!r.isRepeat())
					return setRun(r.type, r.count);
				pushNodes(f.sig, f.i + 1, f.i + 1 + r.body, r.count - 1); /* may move f */
				continue;
			}
			const TypeItem &it = f.items[f.i];
			const Datatype &child = *it.type;
			if (!child.detail)
				return setRun(child.basic, it.copies);
			const TypeDetail &d = *child.detail;
			if (!d.signature) {
				pushRecipe(d, it.copies);
				continue;
			}
			const Signature &sig = *d.signature;
			rma_count total;
			if (sig.size() == 1 && !__builtin_mul_overflow(sig.front().count, it.copies, &total))
				return setRun(sig.front().type, total);
			pushNodes(sig.data(), 0, sig.size(), it.copies - 1);
		}
	}

	BasicType type_ = BasicType::None;
	rma_count left_ = 0;
	rma_count runCount_ = 0;
	size_t depth_ = 0;
	size_t atStart_ = 0; /* the outermost frame at the start of whose pass the walk stands (depth_: none) */
	Frame inline_[kInlineFrames];
	std::vector<Frame> more_;
};

const char *basicName(BasicType b)
{
	return kPredefinedTypes[static_cast<int>(b)].name;
}

enum class Match { Ok, Mismatch, Truncated };

/*
 * Is the signature of @scount x @stype a prefix of that of @rcount x @rtype?
 * On a mismatch @at is the index of the first differing basic element.
 *
 * The walk stops early once both streams are at the start of a copy of
 * their type after the same matching prefix w: then w = a^p = b^q, so the
 * two infinite repetitions a^inf and b^inf are equal, and what is left of
 * the sender is a prefix of what is left of the receiver iff it is not
 * longer. So the work is bounded by the period, not by the counts.
 */
Match walk(const Datatype &stype, rma_count scount, const Datatype &rtype, rma_count rcount, rma_count &at,
	   BasicType &sentType, BasicType &roomType)
{
	SignatureStream s(stype, scount);
	SignatureStream r(rtype, rcount);
	rma_count pos = 0;
	SignatureStream::skipEqualPasses(s, r, pos);
	while (!s.done()) {
		if (r.done())
			return Match::Truncated;
		if (s.type() != r.type()) {
			at = pos;
			sentType = s.type();
			roomType = r.type();
			return Match::Mismatch;
		}
		rma_count n = std::min(s.left(), r.left());
		s.advance(n);
		r.advance(n);
		pos += n;
		if (!s.done() && !r.done() && s.atCopyStart() && r.atCopyStart()) {
			rma_count sent = stype.elements * scount;
			rma_count room = rtype.elements * rcount;
			return sent <= room ? Match::Ok : Match::Truncated;
		}
		SignatureStream::skipEqualPasses(s, r, pos);
	}
	return Match::Ok;
}

[[gnu::cold]] int notCommitted(const char *call, const char *side, const Datatype &t)
{
	return makeError(RMA_ERR_TYPE, "%s: the %s datatype %s is not committed (call rma_type_commit first)", call,
			 side, t.name);
}

[[gnu::cold]] int overlapping(const char *call, const char *side, const Datatype &t, int count)
{
	return makeError(RMA_ERR_TYPE,
			 "%s: the %s buffer (%d x %s) has overlapping entries (from %lld copies of the type on), "
			 "which a buffer that receives data may not have",
			 call, side, count, t.name, static_cast<long long>(t.overlapCount));
}

[[gnu::cold]] int truncated(const char *call, bool originSends, const Datatype &otype, int ocount,
			    const Datatype &ttype, int tcount)
{
	const Datatype &st = originSends ? otype : ttype;
	const Datatype &rt = originSends ? ttype : otype;
	int sc = originSends ? ocount : tcount;
	int rc = originSends ? tcount : ocount;
	return makeError(RMA_ERR_TRUNCATE,
			 "%s: %s data (%d x %s = %lld bytes) does not fit the %s buffer (%d x %s = %lld bytes)", call,
			 originSends ? "origin" : "target", sc, st.name, static_cast<long long>(st.size * sc),
			 originSends ? "target" : "origin", rc, rt.name, static_cast<long long>(rt.size * rc));
}

} /* namespace */

int matchSignatures(const char *call, const Datatype &otype, int ocount, const Datatype &ttype, int tcount,
		    bool originSends, rma_count &bytes)
{
	if (!otype.committed)
		return notCommitted(call, "origin", otype);
	if (!ttype.committed)
		return notCommitted(call, "target", ttype);
	const Datatype &stype = originSends ? otype : ttype;
	const Datatype &rtype = originSends ? ttype : otype;
	rma_count scount = originSends ? ocount : tcount;
	rma_count rcount = originSends ? tcount : ocount;
	/* A get's origin buffer receives; the target's is checked by checkTargetType() for writes. */
	if (!originSends && rcount > 0 && rtype.size > 0 && rcount >= rtype.overlapCount)
		return overlapping(call, "origin", rtype, ocount);
	rma_count sent, room;
	if (__builtin_mul_overflow(stype.size, scount, &sent) || __builtin_mul_overflow(rtype.size, rcount, &room))
		[[unlikely]]
		return makeError(RMA_ERR_COUNT, "%s: %d x %s or %d x %s is more than 2^63 bytes", call, ocount,
				 otype.name, tcount, ttype.name);
	if (sent == 0) {
		bytes = 0;
		return RMA_SUCCESS;
	}
	if (stype.basic == BasicType::Packed || rtype.basic == BasicType::Packed) {
		if (sent > room)
			return truncated(call, originSends, otype, ocount, ttype, tcount);
		bytes = sent;
		return RMA_SUCCESS;
	}
	rma_count at = 0;
	BasicType sentType = BasicType::None, roomType = BasicType::None;
	switch (walk(stype, scount, rtype, rcount, at, sentType, roomType)) {
	case Match::Ok:
		bytes = sent;
		return RMA_SUCCESS;
	case Match::Truncated:
		return truncated(call, originSends, otype, ocount, ttype, tcount);
	case Match::Mismatch:
		break;
	}
	return makeError(RMA_ERR_TYPE,
			 "%s: type signatures do not match: origin is %d x %s, target is %d x %s; basic element %lld "
			 "is %s at the %s and %s at the %s (types must match element by element; RMA_PACKED "
			 "matches any type)",
			 call, ocount, otype.name, tcount, ttype.name, static_cast<long long>(at), basicName(sentType),
			 originSends ? "origin" : "target", basicName(roomType), originSends ? "target" : "origin");
}

int checkTargetType(const char *call, const Datatype &ttype, int tcount)
{
	if (!ttype.committed) [[unlikely]]
		return notCommitted(call, "target", ttype);
	if (tcount > 0 && ttype.size > 0 && tcount >= ttype.overlapCount) [[unlikely]]
		return overlapping(call, "target", ttype, tcount);
	return RMA_SUCCESS;
}

namespace {

struct Prefix {
	rma_count elements;
	rma_count bytes;
};

/* The elements and bytes of one pass over the signature nodes [@b, @e). */
Prefix totalOf(const SignatureRun *sig, size_t b, size_t e)
{
	Prefix p{ 0, 0 };
	for (size_t i = b; i < e; i += 1 + sig[i].body) {
		if (sig[i].isRepeat()) {
			Prefix body = totalOf(sig, i + 1, i + 1 + sig[i].body);
			p.elements += sig[i].count * body.elements;
			p.bytes += sig[i].count * body.bytes;
		} else {
			p.elements += sig[i].count;
			p.bytes += sig[i].count * kPredefinedTypes[static_cast<int>(sig[i].type)].size;
		}
	}
	return p;
}

/*
 * Extend @p over the nodes [@b, @e) while it stays within @elements and
 * @bytes; true if the whole range fits. Repeats are taken a pass at a time
 * (whole passes at once), so the work is O(signature nodes x depth).
 */
bool prefixOf(const SignatureRun *sig, size_t b, size_t e, rma_count elements, rma_count bytes, Prefix &p)
{
	for (size_t i = b; i < e; i += 1 + sig[i].body) {
		const SignatureRun &r = sig[i];
		if (!r.isRepeat()) {
			rma_count size = kPredefinedTypes[static_cast<int>(r.type)].size;
			rma_count n = std::min({ r.count, elements - p.elements, (bytes - p.bytes) / size });
			p.elements += n;
			p.bytes += n * size;
			if (n < r.count)
				return false;
			continue;
		}
		Prefix pass = totalOf(sig, i + 1, i + 1 + r.body);
		rma_count n = std::min({ r.count, (elements - p.elements) / pass.elements,
					pass.bytes ? (bytes - p.bytes) / pass.bytes : r.count });
		p.elements += n * pass.elements;
		p.bytes += n * pass.bytes;
		if (n < r.count) {
			prefixOf(sig, i + 1, i + 1 + r.body, elements, bytes, p);
			return false;
		}
	}
	return true;
}

/* The longest prefix of one element of @t's signature within @elements basic elements and @bytes bytes. */
Prefix signaturePrefix(const Datatype &t, rma_count elements, rma_count bytes)
{
	Prefix p{ 0, 0 };
	if (t.detail && !t.detail->signature) {
		/* Lazy: walked from the recipe, a run at a time. */
		for (SignatureStream s(t, 1); !s.done();) {
			rma_count size = kPredefinedTypes[static_cast<int>(s.type())].size;
			rma_count n = std::min({ s.left(), elements - p.elements, (bytes - p.bytes) / size });
			p.elements += n;
			p.bytes += n * size;
			if (n < s.left())
				break;
			s.advance(n);
		}
		return p;
	}
	Signature scratch;
	const Signature &sig = signatureOf(t, scratch);
	prefixOf(sig.data(), 0, sig.size(), elements, bytes, p);
	return p;
}

} /* namespace */

rma_count bytesOfElements(const Datatype &t, rma_count elements)
{
	if (t.elements == 0)
		return 0;
	return elements / t.elements * t.size + signaturePrefix(t, elements % t.elements, INT64_MAX).bytes;
}

rma_count elementsInBytes(const Datatype &t, rma_count bytes)
{
	if (t.size == 0)
		return 0;
	rma_count rest = bytes % t.size;
	Prefix p = signaturePrefix(t, INT64_MAX, rest);
	if (p.bytes != rest)
		return -1; /* ends inside a basic element */
	return bytes / t.size * t.elements + p.elements;
}

} /* namespace librma */
