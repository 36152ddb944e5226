/* SPDX-License-Identifier: MIT */
/*
 * Type signatures: matching the two sides of a transfer, and counting
 * basic elements (rma_get_elements & co.).
 */
#include "datatype/datatype.h"

#include "error/error.h"

namespace librma {

namespace {

/* The signature of a count of a type, one run at a time. */
class SignatureStream
{
public:
	SignatureStream(const Datatype &t, rma_count copies)
	{
		sig_ = &signatureOf(t, scratch_);
		if (copies <= 0 || sig_->empty())
			return;
		rma_count total;
		if (sig_->size() == 1 && !__builtin_mul_overflow(sig_->front().count, copies, &total)) {
			folded_.assign(1, SignatureRun{ sig_->front().type, total });
			sig_ = &folded_;
			copies = 1;
		}
		copiesLeft_ = copies - 1;
		left_ = sig_->front().count;
	}
	SignatureStream(const SignatureStream &) = delete;
	SignatureStream &operator=(const SignatureStream &) = delete;

	bool done() const { return left_ == 0; }
	BasicType type() const { return (*sig_)[run_].type; }
	rma_count left() const { return left_; }
	/* At the first element of a copy of the type (not at the first copy's: the caller knows). */
	bool atCopyStart() const { return run_ == 0 && left_ == sig_->front().count; }

	void advance(rma_count n)
	{
		left_ -= n;
		if (left_ > 0)
			return;
		if (++run_ == sig_->size()) {
			if (copiesLeft_ == 0)
				return;
			--copiesLeft_;
			run_ = 0;
		}
		left_ = (*sig_)[run_].count;
	}

private:
	Signature scratch_;
	Signature folded_;
	const Signature *sig_ = nullptr;
	size_t run_ = 0;
	rma_count left_ = 0;
	rma_count copiesLeft_ = 0;
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

/* The longest prefix of one element of @t's signature within @elements basic elements and @bytes bytes. */
Prefix signaturePrefix(const Datatype &t, rma_count elements, rma_count bytes)
{
	Prefix p{ 0, 0 };
	Signature scratch;
	for (const SignatureRun &r : signatureOf(t, scratch)) {
		rma_count size = kPredefinedTypes[static_cast<int>(r.type)].size;
		rma_count n = std::min({ r.count, elements - p.elements, (bytes - p.bytes) / size });
		p.elements += n;
		p.bytes += n * size;
		if (n < r.count)
			break;
	}
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
