/* SPDX-License-Identifier: MIT */
/*
 * Type maps: flattening at commit, overlap detection, footprints, and the
 * block walk that copies data between two layouts.
 *
 * A flattened type is a loop tree of TypeNode in preorder, in type-map
 * order. It is built from the recipe bottom up, merging as it goes:
 * adjacent blocks become one block, blocks of one length at a constant
 * stride become one run, a repetition of a single block becomes a run, a
 * repetition whose stride continues the inner one extends it, and two
 * loops with equal bodies that continue each other become one loop. Any
 * other repetition becomes a loop around its unit: it is never expanded,
 * so a vector of vectors (a subarray, nested strides) costs a few nodes
 * however many elements it covers. Only an irregular list (indexed with
 * distinct displacements) costs a node per block; beyond flattenNodeLimit()
 * nodes the type is committed lazy and walked from its recipe.
 */
#include "datatype/datatype.h"

#include <utility>

#include "common/copy.h"
#include "error/error.h"

namespace librma {

namespace {

/* Work limits of commit (beyond them a check is skipped). */
constexpr uint64_t kMaxExpand = uint64_t(1) << 20; /* blocks expanded for the overlap check */
constexpr uint64_t kMaxWork = uint64_t(1) << 26;   /* steps of the overlap check */
/* Blocks visited by the overlap check in pieces (beyond: the part checked decides). */
constexpr uint64_t kMaxPieceWork = uint64_t(1) << 30;
/* Nodes a commit may copy (children used more than once are flattened again each time). */
constexpr uint64_t kMaxFlattenWork = uint64_t(1) << 26;

TypeNode runNode(rma_aint offset, rma_aint stride, rma_count count, rma_count length)
{
	TypeNode r{ offset, stride, count, length, 0, 0 };
	rma_count whole;
	if (count == 1) {
		r.stride = 0;
	} else if (stride == length && !__builtin_mul_overflow(length, count, &whole)) {
		r = TypeNode{ offset, 0, 1, whole, 0, 0 }; /* the blocks touch: one block */
	}
	return r;
}

/* The nodes of a subtree: the node at @i and its body. */
size_t span(const TypeNode *nodes, size_t i)
{
	return 1 + nodes[i].body;
}

bool sameNodes(const TypeNode *a, const TypeNode *b, size_t n)
{
	for (size_t k = 0; k < n; ++k)
		if (a[k].offset != b[k].offset || a[k].stride != b[k].stride || a[k].count != b[k].count ||
		    a[k].length != b[k].length || a[k].body != b[k].body)
			return false;
	return true;
}

/* A flattened list being built: its nodes and where its last top-level node is. */
struct NodeList {
	std::vector<TypeNode> nodes;
	size_t last = SIZE_MAX;

	bool empty() const { return nodes.empty(); }
	/* The list holds exactly one top-level node (with its body). */
	bool single() const { return !nodes.empty() && span(nodes.data(), 0) == nodes.size(); }
};

class Flattener
{
public:
	explicit Flattener(size_t limit) : limit_(limit) {}

	/* The nodes of one element of @t into empty @out; false if it is lazy or beyond the limit. */
	bool flatten(const Datatype &t, NodeList &out)
	{
		if (!t.detail) {
			if (t.size > 0)
				append(out, runNode(0, 0, 1, t.size), nullptr);
			return true;
		}
		const TypeDetail &d = *t.detail;
		if (t.committed) {
			if (d.lazy)
				return false;
			out.nodes = d.nodes;
			out.last = SIZE_MAX;
			for (size_t i = 0; i < out.nodes.size(); i += span(out.nodes.data(), i))
				out.last = i;
			return true;
		}
		NodeList unit;
		NodeList scratch;
		for (const TypeItem &it : d.items) {
			const Datatype &child = *it.type;
			if (child.size == 0 || it.copies == 0)
				continue;
			const std::vector<TypeNode> *nodes;
			if (child.committed && child.detail && !child.detail->lazy) {
				nodes = &child.detail->nodes;
			} else {
				scratch.nodes.clear(); /* keeps its capacity */
				scratch.last = SIZE_MAX;
				if (!flatten(child, scratch))
					return false;
				nodes = &scratch.nodes;
			}
			if (!repeat(unit, *nodes, it.disp, child.extent, it.copies))
				return false;
		}
		return repeat(out, unit.nodes, 0, d.stride, d.repeat);
	}

private:
	/* Append @n copies of @unit (whole top-level nodes), @step bytes apart, from @base. */
	bool repeat(NodeList &out, const std::vector<TypeNode> &unit, rma_aint base, rma_aint step, rma_count n)
	{
		if (n == 0 || unit.empty())
			return true;
		const TypeNode *u = unit.data();
		const bool single = span(u, 0) == unit.size();
		rma_count total;
		rma_aint reach;
		work_ += unit.size();
		if (work_ > kMaxFlattenWork)
			return false;
		if (n == 1) {
			for (size_t i = 0; i < unit.size(); i += span(u, i)) {
				TypeNode top = u[i];
				top.offset += base;
				append(out, top, u + i + 1);
			}
		} else if (single && !u->isLoop() && u->count == 1) {
			append(out, runNode(base + u->offset, step, n, u->length), nullptr);
		} else if (single && !__builtin_mul_overflow(u->count, u->stride, &reach) && reach == step &&
			   !__builtin_mul_overflow(u->count, n, &total)) {
			/* The repetition continues the node's own stride. */
			TypeNode top = *u;
			top.offset += base;
			top.count = total;
			append(out, top, u + 1);
		} else {
			if (unit.size() >= UINT32_MAX)
				return false;
			TypeNode loop{ base, step, n, 0, static_cast<uint32_t>(unit.size()), 0 };
			if (!merge(out, loop, u)) {
				out.last = out.nodes.size();
				out.nodes.push_back(loop);
				out.nodes.insert(out.nodes.end(), unit.begin(), unit.end());
			}
		}
		return out.nodes.size() <= limit_;
	}

	/* Append top-level node @r (with its body at @body when it is a loop). */
	void append(NodeList &out, const TypeNode &r, const TypeNode *body)
	{
		if (merge(out, r, body) || mergeRepetition(out, r, body))
			return;
		out.last = out.nodes.size();
		out.nodes.push_back(r);
		if (r.isLoop())
			out.nodes.insert(out.nodes.end(), body, body + r.body);
	}

	/* Merge @r into the last top-level node of @out when the two continue each other. */
	static bool merge(NodeList &out, const TypeNode &r, const TypeNode *body)
	{
		if (out.last == SIZE_MAX)
			return false;
		TypeNode &last = out.nodes[out.last];
		if (last.isLoop() != r.isLoop())
			return false;
		if (!r.isLoop() && last.count == 1 && r.count == 1 && r.offset == last.offset + last.length) {
			last.length += r.length; /* adjacent blocks */
			return true;
		}
		if (last.length != r.length || last.body != r.body)
			return false;
		if (r.isLoop() && !sameNodes(&last + 1, body, r.body))
			return false;
		rma_aint stride = last.count > 1 ? last.stride : r.count > 1 ? r.stride : r.offset - last.offset;
		rma_count count;
		rma_aint reach;
		if ((last.count == 1 || last.stride == stride) && (r.count == 1 || r.stride == stride) &&
		    !__builtin_mul_overflow(last.count, stride, &reach) && r.offset - last.offset == reach &&
		    !__builtin_add_overflow(last.count, r.count, &count)) {
			last.stride = stride;
			last.count = count;
			if (!last.isLoop())
				last = runNode(last.offset, last.stride, last.count, last.length);
			return true;
		}
		return false;
	}

	/*
	 * The same subtree again at another offset (indexed blocks of a vector,
	 * say): the last top-level node becomes a loop around it, or, when it
	 * is already such a loop, its count grows.
	 */
	static bool mergeRepetition(NodeList &out, const TypeNode &r, const TypeNode *body)
	{
		if (out.last == SIZE_MAX || (!r.isLoop() && r.count == 1))
			return false; /* single blocks merge into runs */
		TypeNode shape = r;
		shape.offset = 0;
		TypeNode *last = &out.nodes[out.last];
		rma_aint reach;
		if (last->isLoop() && last->body == 1 + r.body && sameNodes(last + 1, &shape, 1) &&
		    sameNodes(last + 2, body, r.body) && !__builtin_mul_overflow(last->count, last->stride, &reach) &&
		    r.offset - last->offset == reach && last->count < INT64_MAX) {
			++last->count;
			return true;
		}
		TypeNode moved = *last;
		moved.offset = r.offset;
		if (!sameNodes(&moved, &r, 1) || !sameNodes(last + 1, body, r.body) || r.body + 1 >= UINT32_MAX)
			return false;
		TypeNode loop{ last->offset, r.offset - last->offset, 2, 0, r.body + 1, 0 };
		last->offset = 0;
		out.nodes.insert(out.nodes.begin() + static_cast<ptrdiff_t>(out.last), loop);
		return true;
	}

	size_t limit_;
	uint64_t work_ = 0;
};

/* The bytes a subtree spans, and whether its blocks are free of overlap among themselves. */
struct Span {
	rma_aint low;
	rma_aint high;
	bool disjoint;
};

Span listSpan(const TypeNode *nodes, size_t n);

Span nodeSpan(const TypeNode *nodes, size_t i)
{
	const TypeNode &r = nodes[i];
	Span inner = r.isLoop() ? listSpan(nodes + i + 1, r.body) : Span{ 0, r.length, true };
	rma_aint reach = (r.count - 1) * r.stride;
	rma_aint step = r.stride < 0 ? -r.stride : r.stride;
	Span s{ r.offset + inner.low + std::min<rma_aint>(0, reach), r.offset + inner.high + std::max<rma_aint>(0, reach),
		inner.disjoint && (r.count == 1 || step >= inner.high - inner.low) };
	return s;
}

/* Sufficient, not necessary: the top-level subtrees are disjoint one by one and their spans do not meet. */
Span listSpan(const TypeNode *nodes, size_t n)
{
	std::vector<Span> spans;
	for (size_t i = 0; i < n; i += span(nodes, i))
		spans.push_back(nodeSpan(nodes, i));
	Span all{ INTPTR_MAX, INTPTR_MIN, true };
	for (const Span &s : spans) {
		all.low = std::min(all.low, s.low);
		all.high = std::max(all.high, s.high);
		all.disjoint &= s.disjoint;
	}
	if (!all.disjoint || spans.size() < 2)
		return all;
	std::sort(spans.begin(), spans.end(), [](const Span &a, const Span &b) { return a.low < b.low; });
	for (size_t i = 1; i < spans.size(); ++i)
		if (spans[i].low < spans[i - 1].high)
			all.disjoint = false;
	return all;
}

/* Whether some run of the tree overlaps itself (its blocks closer than their length). */
bool runOverlapsItself(const std::vector<TypeNode> &nodes)
{
	for (const TypeNode &r : nodes)
		if (!r.isLoop() && r.count > 1 && (r.stride < 0 ? -r.stride : r.stride) < r.length)
			return true;
	return false;
}

/* The direction the blocks of one element come in, block after block. */
struct WalkOrder {
	bool increasing; /* each block starts at or after the end of the one before */
	bool decreasing; /* each block ends at or before the start of the one before */
	uint64_t blocks;
};

/* One pass over the blocks of one element of @t: O(blocks) time, O(1) memory. */
WalkOrder walkOrder(const Datatype &t)
{
	WalkOrder w{ true, true, 0 };
	rma_aint prevLow = 0, prevHigh = 0;
	for (BlockCursor c(t, 1); !c.done(); c.advance(c.left())) {
		const rma_aint low = c.offset(), high = c.offset() + c.left();
		if (w.blocks++ > 0) {
			w.increasing &= low >= prevHigh;
			w.decreasing &= high <= prevLow;
		}
		prevLow = low;
		prevHigh = high;
	}
	return w;
}

/* The blocks [@from, @from + @n) of one element of @t (fewer at its end) as intervals. */
void collectBlocks(const Datatype &t, uint64_t from, uint64_t n, std::vector<std::pair<rma_aint, rma_aint>> &iv)
{
	iv.clear();
	uint64_t k = 0;
	for (BlockCursor c(t, 1); !c.done() && k < from + n; c.advance(c.left()), ++k)
		if (k >= from)
			iv.emplace_back(c.offset(), c.offset() + c.left());
}

/* Sort @iv and merge touching intervals; true if two of them overlap. */
bool sortAndMerge(std::vector<std::pair<rma_aint, rma_aint>> &iv)
{
	if (iv.empty())
		return false;
	std::sort(iv.begin(), iv.end());
	size_t m = 0;
	for (size_t i = 1; i < iv.size(); ++i) {
		if (iv[i].first < iv[m].second)
			return true;
		if (iv[i].first == iv[m].second)
			iv[m].second = iv[i].second;
		else
			iv[++m] = iv[i];
	}
	iv.resize(m + 1);
	return false;
}

/*
 * Whether two blocks of one element of @t overlap, for a type of more
 * blocks than fit in memory at once: in pieces of kMaxExpand blocks, each
 * sorted and checked, then every later block of the walk looked up in it.
 * O(blocks^2 / kMaxExpand) time, O(kMaxExpand) memory. Beyond kMaxPieceWork
 * blocks visited it stops: no overlap was found in the part checked.
 */
bool overlapsInPieces(const Datatype &t, uint64_t blocks)
{
	std::vector<std::pair<rma_aint, rma_aint>> iv;
	uint64_t work = 0;
	for (uint64_t from = 0; from < blocks; from += kMaxExpand) {
		collectBlocks(t, from, kMaxExpand, iv);
		if (sortAndMerge(iv))
			return true;
		uint64_t k = 0;
		const uint64_t after = std::min<uint64_t>(from + kMaxExpand, blocks);
		work += blocks;
		if (work > kMaxPieceWork)
			return false;
		for (BlockCursor c(t, 1); !c.done(); c.advance(c.left()), ++k) {
			if (k < after)
				continue;
			const rma_aint low = c.offset(), high = c.offset() + c.left();
			/* The first merged interval that ends after @low: the only one that can meet [low, high). */
			auto it = std::upper_bound(iv.begin(), iv.end(), low,
						   [](rma_aint v, const std::pair<rma_aint, rma_aint> &p) { return v < p.second; });
			if (it != iv.end() && it->first < high)
				return true;
		}
	}
	return false;
}

/*
 * The smallest count of @t whose entries overlap (1: one element overlaps
 * itself), or kNeverOverlaps. Exact whenever the blocks of one element come
 * in increasing (or decreasing) order, the common case, which takes one
 * pass and no memory whatever the type's size; otherwise exact for types
 * of up to kMaxExpand blocks. Beyond that, one element is checked in
 * pieces (overlapsInPieces, up to kMaxPieceWork blocks visited: 1 G, a type
 * of some 30 M out-of-order blocks) and the copies by their extent alone: a type
 * whose extent is smaller than its true extent (resized to interleave its
 * copies) and whose more than kMaxExpand blocks come out of order is taken
 * to overlap from 2 copies on only when its extent is 0.
 */
rma_count overlapCount(const Datatype &t)
{
	if (t.size == 0)
		return kNeverOverlaps;
	const rma_aint step = t.extent < 0 ? -t.extent : t.extent;
	const rma_aint span = t.trueExtent;
	const TypeDetail &d = *t.detail;
	if (!d.lazy) {
		if (runOverlapsItself(d.nodes))
			return 1;
		if (step >= span && listSpan(d.nodes.data(), d.nodes.size()).disjoint)
			return kNeverOverlaps; /* the common case, without expanding a block */
	}

	const WalkOrder order = walkOrder(t);
	const bool ordered = order.increasing || order.decreasing;
	if (ordered && (step == 0 || step >= span))
		return step == 0 ? 2 : kNeverOverlaps; /* one element is free of overlap, and so are its copies */
	if (order.blocks > kMaxExpand) {
		if (!ordered && overlapsInPieces(t, order.blocks))
			return 1;
		return step == 0 ? 2 : kNeverOverlaps;
	}

	std::vector<std::pair<rma_aint, rma_aint>> iv;
	collectBlocks(t, 0, order.blocks, iv);
	/* Merged, disjoint, sorted; any overlap on the way is one inside an element. */
	if (sortAndMerge(iv))
		return 1;

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
			rma_count dd = low < 0 ? 1 : low / step + 1;
			if (dd >= best)
				break;
			if (dd * step < iv[i].second - iv[j].first)
				best = dd;
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
			copyBytes(dst + k * dstride, src + k * sstride, static_cast<size_t>(length));
	}
}

} /* namespace */

size_t &flattenNodeLimit()
{
	static size_t limit = kDefaultFlattenNodeLimit;
	return limit;
}

int commitType(const char *, Datatype &t)
{
	if (t.committed)
		return RMA_SUCCESS;
	TypeDetail &d = *t.detail;
	NodeList list;
	if (Flattener(flattenNodeLimit()).flatten(t, list)) {
		list.nodes.shrink_to_fit();
		d.nodes = std::move(list.nodes);
		d.lazy = false;
	} else {
		d.nodes = {};
		d.lazy = true;
	}
	const std::vector<TypeNode> &b = d.nodes;
	t.contiguous = d.lazy	 ? false
		       : b.empty() ? t.extent == 0
				   : b.size() == 1 && b[0].count == 1 && b[0].offset == 0 && b[0].length == t.size &&
					     t.extent == t.size;
	t.overlapCount = overlapCount(t);
	t.committed = true;
	return RMA_SUCCESS;
}

const std::vector<TypeNode> *nodesOf(const Datatype &t, std::vector<TypeNode> &scratch)
{
	if (t.detail)
		return t.detail->lazy ? nullptr : &t.detail->nodes;
	scratch.assign(1, runNode(0, 0, 1, t.size));
	return &scratch;
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
		TypeNode one{ 0, 0, 1, t.size, 0, 0 };
		startNodes(&one, 1, t.extent, count); /* becomes the current run: @one is not kept */
	} else if (t.detail->lazy) {
		startRecipe(t, count);
	} else if (!t.detail->nodes.empty()) { /* empty: not committed, nothing to walk */
		startNodes(t.detail->nodes.data(), t.detail->nodes.size(), t.extent, count);
	}
}

BlockCursor::BlockCursor(const TypeNode *nodes, size_t nnodes, rma_aint extent, rma_count count)
{
	if (count > 0 && nnodes > 0)
		startNodes(nodes, nnodes, extent, count);
}

void BlockCursor::startNodes(const TypeNode *nodes, size_t nnodes, rma_aint extent, rma_count count)
{
	const TypeNode &r = nodes[0];
	rma_count total;
	rma_aint reach;
	if (nnodes == 1) {
		/* Fold the count into the run when one run describes all copies. */
		if (r.count == 1 && extent == r.length && !__builtin_mul_overflow(r.length, count, &total))
			return setRun(r.offset, 0, 1, total);
		if (r.count == 1)
			return setRun(r.offset, count > 1 ? extent : 0, count, r.length);
		if (!__builtin_mul_overflow(r.count, r.stride, &reach) && reach == extent &&
		    !__builtin_mul_overflow(r.count, count, &total))
			return setRun(r.offset, r.stride, total, r.length);
	} else if (r.isLoop() && span(nodes, 0) == nnodes && !__builtin_mul_overflow(r.count, r.stride, &reach) &&
		   reach == extent && !__builtin_mul_overflow(r.count, count, &total)) {
		/* One loop whose copies continue each other: its body, total times. */
		if (r.body == 1) {
			setRun(r.offset + nodes[1].offset, nodes[1].stride, nodes[1].count, nodes[1].length);
			runsLeft_ = total - 1;
			runsStride_ = r.stride;
			return;
		}
		pushNodes(nodes + 1, r.body, total, r.stride, r.offset);
		return nextRun();
	}
	pushNodes(nodes, nnodes, count, extent, 0);
	nextRun();
}

void BlockCursor::startRecipe(const Datatype &t, rma_count count)
{
	pushRecipe(t, count, 0);
	nextRun();
}

BlockCursor::Frame &BlockCursor::push()
{
	if (depth_ == capacity_) {
		std::unique_ptr<Frame[]> bigger(new Frame[capacity_ * 2]);
		std::copy(frames_, frames_ + depth_, bigger.get());
		heap_ = std::move(bigger);
		frames_ = heap_.get();
		capacity_ *= 2;
	}
	return frames_[depth_++];
}

void BlockCursor::pushNodes(const TypeNode *nodes, size_t n, rma_count copies, rma_aint stride, rma_aint base)
{
	Frame &f = push();
	f.nodes = nodes;
	f.items = nullptr;
	f.n = n;
	f.i = 0;
	f.reps = 1;
	f.rep = 0;
	f.repStride = 0;
	f.copies = copies;
	f.copy = 0;
	f.copyStride = stride;
	f.copyBase = base;
	f.base = base;
}

void BlockCursor::pushRecipe(const Datatype &t, rma_count copies, rma_aint base)
{
	const TypeDetail &d = *t.detail;
	Frame &f = push();
	f.nodes = nullptr;
	f.items = d.items.data();
	f.n = d.items.size();
	f.i = 0;
	f.reps = d.repeat;
	f.rep = 0;
	f.repStride = d.stride;
	f.copies = copies;
	f.copy = 0;
	f.copyStride = t.extent;
	f.copyBase = base;
	f.base = base;
}

void BlockCursor::setRun(rma_aint base, rma_aint stride, rma_count count, rma_count length)
{
	runBase_ = base;
	runStride_ = stride;
	runCount_ = count;
	runLength_ = length;
	block_ = 0;
	runsLeft_ = 0;
	offset_ = base;
	left_ = length;
}

void BlockCursor::nextRun()
{
	while (depth_ > 0) {
		Frame &f = frames_[depth_ - 1];
		if (f.i == f.n) {
			/* The end of the list: the next repetition, the next copy, or back up a level. */
			f.i = 0;
			if (++f.rep < f.reps) {
				f.base += f.repStride;
				continue;
			}
			f.rep = 0;
			if (++f.copy < f.copies) {
				f.copyBase += f.copyStride;
				f.base = f.copyBase;
				continue;
			}
			--depth_;
			continue;
		}
		if (f.nodes) {
			const TypeNode &r = f.nodes[f.i];
			if (!r.isLoop()) {
				++f.i;
				return setRun(f.base + r.offset, r.stride, r.count, r.length);
			}
			f.i += span(f.nodes, f.i);
			if (r.body == 1) {
				/* A loop around one run (nested strides): walked without a frame. */
				const TypeNode &in = (&r)[1];
				setRun(f.base + r.offset + in.offset, in.stride, in.count, in.length);
				runsLeft_ = r.count - 1;
				runsStride_ = r.stride;
				return;
			}
			pushNodes(&r + 1, r.body, r.count, r.stride, f.base + r.offset); /* may move f */
			continue;
		}
		const TypeItem &it = f.items[f.i++];
		const Datatype &child = *it.type;
		if (child.size == 0 || it.copies == 0)
			continue;
		const rma_aint base = f.base + it.disp;
		if (!child.detail) {
			TypeNode r = runNode(base, child.extent, it.copies, child.size);
			return setRun(r.offset, r.stride, r.count, r.length);
		}
		const TypeDetail &d = *child.detail;
		if (child.committed && !d.lazy) {
			if (d.nodes.size() == 1 && d.nodes[0].count == 1) {
				TypeNode r = runNode(base + d.nodes[0].offset, child.extent, it.copies, d.nodes[0].length);
				return setRun(r.offset, r.stride, r.count, r.length);
			}
			pushNodes(d.nodes.data(), d.nodes.size(), it.copies, child.extent, base);
		} else {
			pushRecipe(child, it.copies, base); /* lazy, or not committed itself */
		}
	}
	left_ = 0;
}

void copyTyped(std::byte *dst, const Datatype &dstType, rma_count dstCount, const std::byte *src,
	       const Datatype &srcType, rma_count srcCount, rma_count bytes)
{
	if (bytes <= 0)
		return;
	if (dstType.contiguous && srcType.contiguous) {
		copyBytes(dst, src, static_cast<size_t>(bytes));
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
		copyBytes(dst + d.offset(), src + s.offset(), static_cast<size_t>(length));
		d.advance(length);
		s.advance(length);
		bytes -= length;
	}
}

} /* namespace librma */
