/* SPDX-License-Identifier: MIT */
/*
 * Type maps: flattening at commit, overlap detection, footprints, and the
 * block walk that copies data between two layouts.
 *
 * A flattened type is a list of BlockRun in type-map order. Runs are
 * merged as they are appended: adjacent blocks become one block, blocks of
 * one length at a constant stride become one run. Vectors of vectors thus
 * stay one run per outer block, never one entry per basic element.
 */
#include "datatype/datatype.h"

#include <utility>

#include "error/error.h"

namespace librma {

namespace {

/* Work limits of commit (beyond them a check is skipped or the type refused). */
constexpr uint64_t kMaxExpand = uint64_t(1) << 20; /* blocks expanded for the overlap check */
constexpr uint64_t kMaxWork = uint64_t(1) << 26;   /* steps of one commit's loops */

BlockRun normalized(BlockRun r)
{
	if (r.count == 1) {
		r.stride = 0;
	} else if (r.stride == r.length) {
		r.length *= r.count;
		r.count = 1;
		r.stride = 0;
	}
	return r;
}

/* Append @r to @out, merging it into the last run when the two continue each other. */
void appendRun(std::vector<BlockRun> &out, BlockRun r)
{
	r = normalized(r);
	if (!out.empty()) {
		BlockRun &last = out.back();
		if (last.count == 1 && r.count == 1 && r.offset == last.offset + last.length) {
			last.length += r.length;
			return;
		}
		if (last.length == r.length) {
			rma_aint stride = last.count > 1 ? last.stride : r.count > 1 ? r.stride : r.offset - last.offset;
			if ((last.count == 1 || last.stride == stride) && (r.count == 1 || r.stride == stride) &&
			    r.offset == last.offset + last.count * stride) {
				last.stride = stride;
				last.count += r.count;
				return;
			}
		}
	}
	out.push_back(r);
}

class Flattener
{
public:
	/* The runs of one element of @t, appended to empty @out; false if beyond the limits. */
	bool flatten(const Datatype &t, std::vector<BlockRun> &out)
	{
		if (!t.detail) {
			if (t.size > 0)
				out.push_back(BlockRun{ 0, 0, t.size, 1 });
			return true;
		}
		if (t.committed) {
			out.assign(t.detail->blocks.begin(), t.detail->blocks.end());
			return true;
		}
		const TypeDetail &d = *t.detail;
		std::vector<BlockRun> unit;
		std::vector<BlockRun> scratch;
		for (const TypeItem &it : d.items) {
			const Datatype &child = *it.type;
			const std::vector<BlockRun> *runs = &scratch;
			scratch.clear(); /* keeps its capacity: no allocation per item */
			if (child.committed && child.detail)
				runs = &child.detail->blocks;
			else if (!flatten(child, scratch))
				return false;
			if (!repeat(unit, *runs, it.disp, child.extent, it.copies))
				return false;
		}
		return repeat(out, unit, 0, d.stride, d.repeat);
	}

private:
	/* Append @n copies of @unit, @step bytes apart, from @base. */
	bool repeat(std::vector<BlockRun> &out, const std::vector<BlockRun> &unit, rma_aint base, rma_aint step,
		    rma_count n)
	{
		if (n == 0 || unit.empty())
			return true;
		if (unit.size() == 1) {
			const BlockRun &u = unit[0];
			rma_count total;
			if (u.count == 1) {
				appendRun(out, BlockRun{ base + u.offset, step, u.length, n });
				return true;
			}
			if (u.count * u.stride == step && !__builtin_mul_overflow(u.count, n, &total)) {
				appendRun(out, BlockRun{ base + u.offset, u.stride, u.length, total });
				return true;
			}
		}
		for (rma_count j = 0; j < n; ++j) {
			work_ += unit.size();
			if (out.size() > kMaxRuns || work_ > kMaxWork)
				return false;
			rma_aint shift = base + j * step;
			for (const BlockRun &r : unit)
				appendRun(out, BlockRun{ r.offset + shift, r.stride, r.length, r.count });
		}
		return true;
	}

	uint64_t work_ = 0;
};

/* Whether the spans of the runs (each free of overlap itself) are pairwise disjoint. */
bool runsAreDisjoint(const std::vector<BlockRun> &blocks)
{
	std::vector<std::pair<rma_aint, rma_aint>> spans;
	spans.reserve(blocks.size());
	for (const BlockRun &r : blocks) {
		rma_aint last = r.offset + (r.count - 1) * r.stride;
		spans.emplace_back(std::min(r.offset, last), std::max(r.offset, last) + r.length);
	}
	std::sort(spans.begin(), spans.end());
	for (size_t i = 1; i < spans.size(); ++i)
		if (spans[i].first < spans[i - 1].second)
			return false;
	return true;
}

/*
 * The smallest count of @t whose entries overlap (1: one element overlaps
 * itself), or kNeverOverlaps. Exact for types of up to kMaxExpand blocks;
 * beyond, only a run overlapping itself and a zero extent are caught.
 */
rma_count overlapCount(const Datatype &t)
{
	const std::vector<BlockRun> &blocks = t.detail->blocks;
	if (blocks.empty())
		return kNeverOverlaps;
	uint64_t total = 0;
	for (const BlockRun &r : blocks) {
		if (r.count > 1 && (r.stride < 0 ? -r.stride : r.stride) < r.length)
			return 1;
		total += static_cast<uint64_t>(r.count);
	}
	const rma_aint step = t.extent < 0 ? -t.extent : t.extent;
	const rma_aint span = t.trueExtent;
	if (step >= span && runsAreDisjoint(blocks))
		return kNeverOverlaps; /* the common case, without expanding a block */
	if (total > kMaxExpand)
		return step == 0 ? 2 : kNeverOverlaps;

	std::vector<std::pair<rma_aint, rma_aint>> iv;
	iv.reserve(total);
	for (const BlockRun &r : blocks)
		for (rma_count k = 0; k < r.count; ++k)
			iv.emplace_back(r.offset + k * r.stride, r.offset + k * r.stride + r.length);
	std::sort(iv.begin(), iv.end());
	/* Merged, disjoint, sorted; any overlap on the way is one inside an element. */
	size_t m = 0;
	for (size_t i = 1; i < iv.size(); ++i) {
		if (iv[i].first < iv[m].second)
			return 1;
		if (iv[i].first == iv[m].second)
			iv[m].second = iv[i].second;
		else
			iv[++m] = iv[i];
	}
	iv.resize(m + 1);

	if (step == 0)
		return 2;
	if (step >= span)
		return kNeverOverlaps;
	/*
	 * Copies 0 and d overlap iff some interval J shifted by d * step meets
	 * some interval I: d * step in (a_I - b_J, b_I - a_J). Only I at or
	 * after J can give a positive shift; along I the smallest such d only
	 * grows, so the scan of I stops at the best d found so far.
	 */
	rma_count best = kNeverOverlaps;
	uint64_t work = 0;
	for (size_t j = 0; j < iv.size(); ++j) {
		for (size_t i = j; i < iv.size(); ++i) {
			rma_aint low = iv[i].first - iv[j].second;
			if (low >= span)
				break;
			rma_count d = low < 0 ? 1 : low / step + 1;
			if (d >= best)
				break;
			if (d * step < iv[i].second - iv[j].first)
				best = d;
			if (++work > kMaxWork)
				return best == kNeverOverlaps ? best : best + 1;
		}
	}
	return best == kNeverOverlaps ? best : best + 1;
}

/* @n pieces of @length bytes, one stride apart on each side. */
template<size_t Length>
void copyFixed(std::byte *dst, rma_aint dstride, const std::byte *src, rma_aint sstride, rma_count n)
{
	for (rma_count k = 0; k < n; ++k)
		std::memcpy(dst + k * dstride, src + k * sstride, Length);
}

void copyPieces(std::byte *dst, rma_aint dstride, const std::byte *src, rma_aint sstride, rma_count n,
		rma_count length)
{
	/* Pieces of the sizes of basic types and small blocks of them: inline moves, no call a piece. */
	switch (length) {
	case 4: return copyFixed<4>(dst, dstride, src, sstride, n);
	case 8: return copyFixed<8>(dst, dstride, src, sstride, n);
	case 16: return copyFixed<16>(dst, dstride, src, sstride, n);
	case 32: return copyFixed<32>(dst, dstride, src, sstride, n);
	case 64: return copyFixed<64>(dst, dstride, src, sstride, n);
	default:
		for (rma_count k = 0; k < n; ++k)
			std::memcpy(dst + k * dstride, src + k * sstride, static_cast<size_t>(length));
	}
}

} /* namespace */

int commitType(const char *call, Datatype &t)
{
	if (t.committed)
		return RMA_SUCCESS;
	std::vector<BlockRun> blocks;
	if (!Flattener().flatten(t, blocks))
		return makeError(RMA_ERR_NO_MEM,
				 "%s: datatype %s flattens to more than %zu block runs (or %llu steps); not committed",
				 call, t.name, kMaxRuns, static_cast<unsigned long long>(kMaxWork));
	t.detail->blocks = std::move(blocks);
	const std::vector<BlockRun> &b = t.detail->blocks;
	t.contiguous = b.empty() ? t.extent == 0
				 : b.size() == 1 && b[0].count == 1 && b[0].offset == 0 && b[0].length == t.size &&
					   t.extent == t.size;
	t.overlapCount = overlapCount(t);
	t.committed = true;
	return RMA_SUCCESS;
}

const std::vector<BlockRun> &blocksOf(const Datatype &t, std::vector<BlockRun> &scratch)
{
	if (t.detail)
		return t.detail->blocks;
	scratch.assign(1, BlockRun{ 0, 0, t.size, 1 });
	return scratch;
}

Footprint footprint(const Datatype &t, rma_count count)
{
	if (count <= 0 || t.size == 0)
		return Footprint{ 0, 0 };
	rma_aint span;
	rma_aint low;
	rma_aint high;
	if (__builtin_mul_overflow(count - 1, t.extent, &span))
		span = t.extent < 0 ? INTPTR_MIN : INTPTR_MAX;
	if (__builtin_add_overflow(t.trueLb, std::min<rma_aint>(0, span), &low))
		low = INTPTR_MIN;
	if (__builtin_add_overflow(t.trueLb + t.trueExtent, std::max<rma_aint>(0, span), &high))
		high = INTPTR_MAX;
	return Footprint{ low, high };
}

BlockCursor::BlockCursor(const Datatype &t, rma_count count)
{
	if (count <= 0 || t.size == 0)
		return;
	if (!t.detail) {
		single_ = BlockRun{ 0, 0, t.size, 1 };
		init(&single_, 1, t.extent, count);
	} else if (!t.detail->blocks.empty()) { /* empty: not committed, nothing to walk */
		init(t.detail->blocks.data(), t.detail->blocks.size(), t.extent, count);
	}
}

BlockCursor::BlockCursor(const BlockRun *runs, size_t nruns, rma_aint extent, rma_count count)
{
	if (count > 0 && nruns > 0)
		init(runs, nruns, extent, count);
}

void BlockCursor::init(const BlockRun *runs, size_t nruns, rma_aint extent, rma_count count)
{
	runs_ = runs;
	nruns_ = nruns;
	/* Fold the count into the run when one run describes all copies. */
	const BlockRun r = runs_[0];
	rma_count total;
	if (nruns_ == 1 && r.count == 1 && extent == r.length && !__builtin_mul_overflow(r.length, count, &total)) {
		single_ = BlockRun{ r.offset, 0, total, 1 };
		runs_ = &single_;
	} else if (nruns_ == 1 && r.count == 1) {
		single_ = BlockRun{ r.offset, count > 1 ? extent : 0, r.length, count };
		runs_ = &single_;
	} else if (nruns_ == 1 && r.count * r.stride == extent && !__builtin_mul_overflow(r.count, count, &total)) {
		single_ = BlockRun{ r.offset, r.stride, r.length, total };
		runs_ = &single_;
	} else {
		copies_ = count - 1;
		extent_ = extent;
	}
	offset_ = runs_[0].offset;
	left_ = runs_[0].length;
}

void copyTyped(std::byte *dst, const Datatype &dstType, rma_count dstCount, const std::byte *src,
	       const Datatype &srcType, rma_count srcCount, rma_count bytes)
{
	if (bytes <= 0)
		return;
	if (dstType.contiguous && srcType.contiguous) {
		std::memcpy(dst, src, static_cast<size_t>(bytes));
		return;
	}
	BlockCursor d(dstType, dstCount);
	BlockCursor s(srcType, srcCount);
	while (bytes > 0 && !d.done() && !s.done()) {
		rma_count length = std::min(d.left(), s.left());
		/* A stretch of equal pieces at constant strides on both sides (runs of a vector): one tight loop. */
		rma_aint dstride, sstride;
		rma_count n = std::min({ d.piecesOf(length, dstride), s.piecesOf(length, sstride), bytes / length });
		if (n > 1) {
			copyPieces(dst + d.offset(), dstride, src + s.offset(), sstride, n, length);
			d.skipPieces(n, length);
			s.skipPieces(n, length);
			bytes -= n * length;
			continue;
		}
		length = std::min(length, bytes);
		std::memcpy(dst + d.offset(), src + s.offset(), static_cast<size_t>(length));
		d.advance(length);
		s.advance(length);
		bytes -= length;
	}
}

} /* namespace librma */
