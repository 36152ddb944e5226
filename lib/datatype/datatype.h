/* SPDX-License-Identifier: MIT */
/*
 * Datatypes: what one element of an RMA buffer is, and the engine that moves
 * data between two layouts. This header is the component's only door.
 *
 * A type's *type map* is MPI's: a sequence of (basic type, displacement)
 * entries, plus lb and extent (a count of a type is that many copies, each
 * shifted by the extent). Its *signature* is the sequence of basic types
 * alone. librma keeps, per type:
 *  - a summary (size, lb, extent, true bounds, signature), set at
 *    construction, so queries work before commit;
 *  - at commit, the flattened form: the type map's bytes as a loop tree of
 *    TypeNode in preorder (runs: blocks of one length at one stride; loops:
 *    their body repeated at a stride), in type-map order, adjacent blocks
 *    merged. Regular repetition (vector, subarray, nested strides) is never
 *    expanded, so its size is O(type description), however many elements
 *    it covers. A type that does not flatten within flattenNodeLimit()
 *    nodes (an irregular one: millions of distinct displacements) is *lazy*:
 *    no flattened form; the cursor walks its recipe (TypeDetail::items)
 *    instead, so no type is refused for its size. And overlapCount, the
 *    smallest count of the type whose entries overlap (a receive buffer may
 *    not have overlapping entries).
 *  - its signature likewise as a tree: runs of one basic type and repeats of
 *    a sub-sequence, never expanded (Signature). A signature of more than
 *    kMaxRuns nodes (millions of *distinct* runs: a struct of millions of
 *    alternating fields), or of a type made of one, is lazy: none is kept
 *    (TypeDetail::signature is null) and matching and element counting
 *    walk it from the recipe, a run at a time, in O(nesting depth) memory.
 *
 * The engine entry points for the data path (lib/win) are:
 *
 *  - matchSignatures(call, otype, ocount, ttype, tcount, originSends, bytes)
 *      Both types committed; the sender's signature (count x type) is a
 *      prefix of the receiver's (RMA_PACKED on either side matches any
 *      type by bytes; RMA_BYTE matches only RMA_BYTE); the receiving side
 *      has no overlapping entries when it is the origin (a get's buffer).
 *      RMA_ERR_TYPE / RMA_ERR_TRUNCATE with both types and counts in the
 *      message. @bytes = the bytes the sender sends.
 *  - checkTargetType(call, ttype, tcount)
 *      RMA_ERR_TYPE if ttype is not committed or tcount copies of it have
 *      overlapping entries. For operations that write the target (put,
 *      accumulate); a get only reads the target, where MPI allows overlap.
 *  - footprint(ttype, tcount) -> Footprint{low, high}
 *      The bytes [low, high) touched by tcount x ttype relative to the
 *      buffer start (true bounds, copies one extent apart, resized extents
 *      honoured). low may be negative; {0, 0} when nothing is touched. With
 *      target address = window base + disp * disp_unit the bounds check is
 *          offset + low >= 0 && offset + high <= window size.
 *  - copyTyped(dst, dstType, dstCount, src, srcType, srcCount, bytes)
 *      Copies @bytes bytes of data in type-map order, block to block, with
 *      no intermediate buffer; one memcpy when both sides are contiguous.
 *      Writes only the receiver's entries (padding is never written).
 *  - BlockCursor / BlockPairCursor, forEachBlock(), forEachBlockPair() and
 *    fillIovecs(): the same walk for the cross-memory-attach path.
 *    fillIovecs() fills up to IOV_MAX (local iovec, remote iovec) pairs per
 *    call, each pair the same length, from a BlockPairCursor that it
 *    advances; call it until it returns 0:
 *        BlockPairCursor c(otype, ocount, ttype, tcount, bytes);
 *        iovec l[IOV_MAX], r[IOV_MAX];
 *        size_t chunk;
 *        while (size_t n = fillIovecs(c, origin, remoteBase, l, r, IOV_MAX, chunk))
 *                process_vm_writev(pid, l, n, r, n, 0);  // moves chunk bytes
 *    (a short transfer stops at an iovec boundary: re-issue the rest).
 *  - Datatype::isContiguous(): a count of the type is one run of
 *    count * size bytes at offset 0 (then copyTyped is one memcpy).
 *  - toDatatype() (or its alias lookupDatatype()): the type behind any
 *    handle, predefined, pair or derived; predefinedDatatype() answers only
 *    for the predefined basic types, inline for the fast path.
 *
 * Ownership: types are shared (std::shared_ptr): a handle, each type built
 * from it and each pending operation (shareDatatype()) keep it alive, so
 * rma_type_free of a type in use is safe.
 *
 * Thread safety: constructors, commit and free are control-path calls; the
 * application serializes calls that use one type (RMA_THREAD_SERIALIZED).
 * The query and copy functions only read a committed type.
 */
#pragma once

#include <sys/uio.h>

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include <rma/rma.h>

#include "core/handle_table.h"

namespace librma {

/* Basic types: the elements of type signatures (index of the predefined handle). */
enum class BasicType : uint8_t {
	None = 0,
	Char = 1, SignedChar, UnsignedChar, Byte, Short, UnsignedShort, Int, Unsigned, Long,
	UnsignedLong, LongLong, UnsignedLongLong, Float, Double, LongDouble, Wchar, Bool,
	Int8, Int16, Int32, Int64, Uint8, Uint16, Uint32, Uint64, FloatComplex, DoubleComplex,
	LongDoubleComplex, Aint, Offset, Count, Packed,
	Last = Packed,
};

/* Index of the first pair type (RMA_FLOAT_INT) and of the last predefined type. */
inline constexpr uint32_t kFirstPairIndex = static_cast<uint32_t>(BasicType::Last) + 1;
inline constexpr uint32_t kLastPredefinedIndex = kFirstPairIndex + 5;

/* How a type was made (MPI's combiners; the values are RMA_COMBINER_*). */
enum class Combiner : int {
	Named = RMA_COMBINER_NAMED,
	Dup = RMA_COMBINER_DUP,
	Contiguous = RMA_COMBINER_CONTIGUOUS,
	Vector = RMA_COMBINER_VECTOR,
	Hvector = RMA_COMBINER_HVECTOR,
	Indexed = RMA_COMBINER_INDEXED,
	Hindexed = RMA_COMBINER_HINDEXED,
	IndexedBlock = RMA_COMBINER_INDEXED_BLOCK,
	HindexedBlock = RMA_COMBINER_HINDEXED_BLOCK,
	Struct = RMA_COMBINER_STRUCT,
	Subarray = RMA_COMBINER_SUBARRAY,
	Resized = RMA_COMBINER_RESIZED,
};

/*
 * One node of a flattened type, a loop tree stored in preorder:
 *  - a run (body == 0): @count blocks of @length bytes, block i at
 *    @offset + i * @stride;
 *  - a loop (body > 0): the @body nodes that follow it (its body, itself
 *    runs and loops), @count times, copy i shifted by @offset + i * @stride.
 * Trivially copyable: accumulate records carry a target type's nodes to the
 * target process.
 */
struct TypeNode {
	rma_aint offset;
	rma_aint stride;  /* any sign; 0 when count == 1 */
	rma_count count;  /* >= 1 */
	rma_count length; /* run: > 0; loop: 0 */
	uint32_t body;    /* loop: nodes in its body (> 0); run: 0 */
	uint32_t reserved;

	bool isLoop() const { return body != 0; }
};

/*
 * One node of a signature, a tree stored in preorder like TypeNode:
 *  - a run (body == 0): @count consecutive basic elements of one @type;
 *  - a repeat (body > 0, type None): the @body nodes that follow it,
 *    @count (>= 2) times.
 */
struct SignatureRun {
	BasicType type;
	uint32_t body;
	rma_count count;

	bool isRepeat() const { return body != 0; }
};

/*
 * A type signature: runs (adjacent runs at one level have different types)
 * and repeats, which are never expanded.
 */
using Signature = std::vector<SignatureRun>;

/* "Never": the overlapCount of a type whose copies never overlap. */
inline constexpr rma_count kNeverOverlaps = INT64_MAX;

struct TypeDetail;

struct Datatype {
	const char *name = "";
	rma_count size = 0;     /* bytes of data in one element */
	rma_count elements = 0; /* basic elements in one element */
	rma_aint lb = 0;        /* lower bound */
	rma_aint extent = 0;    /* span of one element in a count of them */
	rma_aint trueLb = 0;    /* lowest byte actually touched (0 if none) */
	rma_aint trueExtent = 0;
	/* Smallest count of this type with overlapping entries (set at commit). */
	rma_count overlapCount = kNeverOverlaps;
	uint16_t alignment = 1;             /* of the strictest basic type in it */
	BasicType basic = BasicType::None;  /* the one basic type it is made of, None if several or none */
	uint8_t handleIndex = 0;            /* predefined: index of its handle */
	bool predefined = false;
	bool committed = false;
	bool contiguous = false;            /* see isContiguous() (derived: set at commit) */
	bool explicitBounds = false;        /* resized somewhere inside: no struct padding */
	TypeDetail *detail = nullptr;       /* derived and pair types; nullptr: one basic element */

	/* A count of this type is one run of count * size bytes at offset 0, in order. */
	bool isContiguous() const { return contiguous; }
	rma_aint ub() const { return lb + extent; }
};

/* One part of a derived type: @copies copies of @type, one extent apart, from @disp. */
struct TypeItem {
	std::shared_ptr<Datatype> type;
	rma_aint disp;
	rma_count copies;
};

/* What a derived (or pair) type is beyond its summary. */
struct TypeDetail {
	Combiner combiner = Combiner::Named;
	bool largeCounts = false; /* made by an _c constructor */
	/* Arguments of the constructor, as rma_type_get_contents returns them. */
	std::vector<int> ints;
	std::vector<rma_aint> aints;
	std::vector<rma_count> counts;
	std::vector<std::shared_ptr<Datatype>> types;
	/* The recipe: the items, the whole list repeated @repeat times @stride bytes apart. */
	std::vector<TypeItem> items;
	rma_count repeat = 1;
	rma_aint stride = 0;
	/* Shared with dups (equal pointers: equal signatures); null when lazy (walked from the recipe). */
	std::shared_ptr<const Signature> signature;
	std::vector<TypeNode> nodes; /* flattened at commit (empty if lazy) */
	bool lazy = false;           /* committed without a flattened form: walked from the recipe */
	std::string name;
};

/* The arguments of a constructor, in one shape for all of them. */
struct TypeArgs {
	Combiner combiner = Combiner::Contiguous;
	bool largeCounts = false;
	rma_count count = 0;       /* blocks (contiguous: copies; subarray: ndims) */
	rma_count blocklength = 0; /* vector, hvector, *_block */
	rma_aint stride = 0;       /* vector: in extents of old; hvector: in bytes */
	std::vector<rma_count> blocklengths; /* indexed, hindexed, struct */
	std::vector<rma_aint> disps;         /* indexed*: in extents of old; h* and struct: bytes */
	std::vector<std::shared_ptr<Datatype>> types; /* struct: one a block; others: the old type */
	std::vector<rma_count> sizes, subsizes, starts; /* subarray */
	int order = RMA_ORDER_C;
	rma_aint newLb = 0, newExtent = 0; /* resized */
};

using DatatypeTable = HandleTable<Datatype, HandleKind::Datatype>;

/* The predefined basic types, indexed by BasicType (entry 0 is unused). */
extern const Datatype kPredefinedTypes[static_cast<int>(BasicType::Last) + 1];

/* Every type's handle: predefined ones (basic and pairs) and derived ones. */
DatatypeTable &datatypeTable();

/*
 * The predefined *basic* datatype behind a handle, or nullptr (for every
 * other handle, pair types included). Such a type is contiguous: one basic
 * element of `size` bytes. Inline: the put/get fast path asks.
 */
inline const Datatype *predefinedDatatype(rma_datatype handle)
{
	uintptr_t h = reinterpret_cast<uintptr_t>(handle);
	uintptr_t index = h - (uintptr_t(RMA_HANDLE_KIND_DATATYPE_) << 56);
	if (index - 1 >= static_cast<uintptr_t>(BasicType::Last))
		return nullptr;
	return &kPredefinedTypes[index];
}

/* Any datatype behind a handle (predefined, pair or derived), or nullptr if the handle is not valid. */
inline Datatype *toDatatype(rma_datatype handle)
{
	if (const Datatype *t = predefinedDatatype(handle)) [[likely]]
		return const_cast<Datatype *>(t); /* never written: predefined types are committed */
	return datatypeTable().lookup(reinterpret_cast<uintptr_t>(handle));
}

/* The same as toDatatype(). */
inline Datatype *lookupDatatype(rma_datatype handle)
{
	return toDatatype(handle);
}

/* The datatype behind a handle, sharing ownership (for operations that complete later). */
inline std::shared_ptr<Datatype> shareDatatype(rma_datatype handle)
{
	return datatypeTable().share(reinterpret_cast<uintptr_t>(handle));
}

/* The handle of a predefined type (basic or pair). */
inline rma_datatype predefinedHandle(const Datatype &t)
{
	return reinterpret_cast<rma_datatype>(encodeHandle(HandleKind::Datatype, 0, t.handleIndex));
}

/* ---- Construction, commit, queries ------------------------------------------ */

/*
 * Build a new, uncommitted type from @args (see TypeArgs; every constructor
 * of MPI). Errors, with @call in the message: RMA_ERR_COUNT (negative count),
 * RMA_ERR_ARG (negative block length, bad subarray or order, sizes that
 * overflow), RMA_ERR_TYPE (a null type). Never refused for its size: a
 * signature beyond kMaxRuns nodes is lazy (see the top of this file).
 */
int buildType(const char *call, const TypeArgs &args, std::shared_ptr<Datatype> &out);

/* A copy of @old made by rma_type_dup: same type map, committed if @old is. */
int dupType(const char *call, const std::shared_ptr<Datatype> &old, std::shared_ptr<Datatype> &out);

/*
 * Flatten @t (once; a committed type is left alone). Never refused for its
 * size: a type beyond flattenNodeLimit() nodes is committed lazy.
 */
int commitType(const char *call, Datatype &t);

/*
 * Limit on the nodes of a kept signature (beyond it the signature is lazy;
 * repeats are never expanded, so only one with that many distinct runs is).
 */
inline constexpr size_t kMaxRuns = size_t(1) << 22;

/*
 * Limit on the nodes of a flattened type (beyond it the type is lazy).
 * A reference to the process-wide value, so tests can lower it.
 */
size_t &flattenNodeLimit();
inline constexpr size_t kDefaultFlattenNodeLimit = size_t(1) << 18;

/*
 * The signature of one element of @t (@scratch holds it for predefined basic
 * types); empty when it is lazy (t.detail->signature null: not kept).
 */
const Signature &signatureOf(const Datatype &t, Signature &scratch);

/*
 * The flattened nodes of one element of committed @t (@scratch: as
 * signatureOf), or nullptr when @t is lazy (walked from its recipe).
 */
const std::vector<TypeNode> *nodesOf(const Datatype &t, std::vector<TypeNode> &scratch);

/*
 * Element counting (rma_get_elements & co.): bytes of the first @elements
 * basic elements of a count of @t; the basic elements in the first @bytes
 * bytes, or -1 if @bytes does not end on an element boundary.
 */
rma_count bytesOfElements(const Datatype &t, rma_count elements);
rma_count elementsInBytes(const Datatype &t, rma_count bytes);

/* ---- The data path ------------------------------------------------------------ */

/*
 * Check that the data of one side can be delivered into the buffer of the
 * other, as MPI's type-matching rules require (see the top of this file).
 * @originSends: true for put (origin sends), false for get.
 */
int matchSignatures(const char *call, const Datatype &otype, int ocount, const Datatype &ttype, int tcount,
		    bool originSends, rma_count &bytes);

/* RMA_ERR_TYPE if @ttype is uncommitted or @tcount of it has overlapping entries. */
int checkTargetType(const char *call, const Datatype &ttype, int tcount);

struct Footprint {
	rma_aint low;
	rma_aint high;
};

/* The bytes [low, high) that @count x @t touches; saturates at the rma_aint range. */
Footprint footprint(const Datatype &t, rma_count count);

/*
 * Walks the blocks of count x type in type-map order, cutting none: a
 * depth-first walk of the flattened loop tree (or, for a lazy type, of its
 * recipe) with a small stack, O(1) a block. The current run (blocks of one
 * length at one stride: the innermost level) is exposed to piecesOf() and
 * skipPieces(), so copy loops take a run at a time.
 */
class BlockCursor
{
public:
	/* @t must stay alive and committed while the cursor is used. */
	BlockCursor(const Datatype &t, rma_count count);
	/*
	 * The same walk over a flattened type given directly (one element's
	 * @nnodes @nodes, copies @extent apart): how a type arrives from another
	 * process. @nodes must stay alive while the cursor is used.
	 */
	BlockCursor(const TypeNode *nodes, size_t nnodes, rma_aint extent, rma_count count);
	BlockCursor(const BlockCursor &) = delete;
	BlockCursor &operator=(const BlockCursor &) = delete;

	bool done() const { return left_ == 0; }
	/* The current position: offset from the buffer start, bytes left in its block. */
	rma_aint offset() const { return offset_; }
	rma_count left() const { return left_; }

	/* Move @n bytes on (n <= left()). */
	void advance(rma_count n)
	{
		offset_ += n;
		left_ -= n;
		if (left_ == 0)
			nextBlock();
	}

	/*
	 * How many pieces of @length bytes follow from here one @stride apart
	 * (set on return): the rest of the current run when at the start of one
	 * of its blocks and they are @length long, else the current block cut
	 * into @length-byte pieces (@length <= left()).
	 */
	rma_count piecesOf(rma_count length, rma_aint &stride) const
	{
		if (left_ == runLength_ && runLength_ == length) {
			stride = runStride_;
			return runCount_ - block_;
		}
		stride = length;
		return left_ / length;
	}

	/* Move @n pieces of piecesOf(@length) on. */
	void skipPieces(rma_count n, rma_count length)
	{
		if (left_ == runLength_ && runLength_ == length) {
			block_ += n - 1;
			offset_ = runBase_ + block_ * runStride_;
		} else {
			offset_ += (n - 1) * length;
			left_ -= (n - 1) * length;
		}
		advance(length);
	}

private:
	/*
	 * One level of the walk: the entries of a list (flattened nodes, or the
	 * items of a recipe), @reps times @repStride apart (a recipe's repeat),
	 * all of it @copies times @copyStride apart.
	 */
	struct Frame {
		const TypeNode *nodes; /* a list of nodes, or nullptr: */
		const TypeItem *items; /* a recipe's items */
		size_t n;              /* entries in the list */
		size_t i;              /* the next entry */
		rma_count reps;
		rma_count rep;
		rma_aint repStride;
		rma_count copies;
		rma_count copy;
		rma_aint copyStride;
		rma_aint copyBase; /* of the current copy */
		rma_aint base;     /* of the current repetition of the current copy */
	};
	static constexpr size_t kInlineFrames = 8;

	void startNodes(const TypeNode *nodes, size_t nnodes, rma_aint extent, rma_count count);
	void startRecipe(const Datatype &t, rma_count count);
	Frame &push();
	void pushNodes(const TypeNode *nodes, size_t n, rma_count copies, rma_aint stride, rma_aint base);
	void pushRecipe(const Datatype &t, rma_count copies, rma_aint base);
	void setRun(rma_aint base, rma_aint stride, rma_count count, rma_count length);
	void nextRun(); /* the next run of the walk; done() at the end */
	void nextBlock()
	{
		if (++block_ < runCount_) {
			offset_ = runBase_ + block_ * runStride_;
			left_ = runLength_;
			return;
		}
		if (runsLeft_ > 0) { /* the next pass of a loop around this one run: no frame to visit */
			--runsLeft_;
			runBase_ += runsStride_;
			block_ = 0;
			offset_ = runBase_;
			left_ = runLength_;
			return;
		}
		nextRun();
	}

	/* The current run and block; runsLeft_ more copies of the run follow, runsStride_ apart. */
	rma_aint runBase_ = 0;
	rma_aint runStride_ = 0;
	rma_count runCount_ = 0;
	rma_count runLength_ = 0;
	rma_count block_ = 0;
	rma_count runsLeft_ = 0;
	rma_aint runsStride_ = 0;
	rma_aint offset_ = 0;
	rma_count left_ = 0;
	/* The stack: frames_[0, depth_), inline up to kInlineFrames. */
	Frame *frames_ = inline_;
	size_t depth_ = 0;
	size_t capacity_ = kInlineFrames;
	std::unique_ptr<Frame[]> heap_;
	Frame inline_[kInlineFrames];
};

/* Walks two layouts side by side: pieces contiguous on both sides. */
class BlockPairCursor
{
public:
	/* @bytes: how much data to walk (at most what both layouts hold). */
	BlockPairCursor(const Datatype &a, rma_count acount, const Datatype &b, rma_count bcount, rma_count bytes)
		: a_(a, acount), b_(b, bcount), left_(bytes)
	{
	}

	/* The next piece (offsets from each buffer's start, its length); false at the end. */
	bool next(rma_aint &aOffset, rma_aint &bOffset, rma_count &length)
	{
		if (left_ == 0 || a_.done() || b_.done())
			return false;
		length = std::min({ a_.left(), b_.left(), left_ });
		aOffset = a_.offset();
		bOffset = b_.offset();
		a_.advance(length);
		b_.advance(length);
		left_ -= length;
		return true;
	}

private:
	BlockCursor a_;
	BlockCursor b_;
	rma_count left_;
};

/*
 * Call fn(offset, length) for each block of @count x @t, in type-map order,
 * covering the first @bytes bytes of data (the last block cut short). Stops
 * at and returns the first non-zero value fn returns; 0 otherwise.
 */
template<typename Fn>
int forEachBlock(const Datatype &t, rma_count count, rma_count bytes, Fn &&fn)
{
	for (BlockCursor c(t, count); bytes > 0 && !c.done();) {
		rma_count n = std::min(c.left(), bytes);
		if (int rc = fn(c.offset(), n))
			return rc;
		c.advance(n);
		bytes -= n;
	}
	return 0;
}

/*
 * Call fn(aOffset, bOffset, length) for each piece of a transfer of @bytes
 * between the layouts (@a x @acount) and (@b x @bcount). Stops as forEachBlock.
 */
template<typename Fn>
int forEachBlockPair(const Datatype &a, rma_count acount, const Datatype &b, rma_count bcount, rma_count bytes,
		     Fn &&fn)
{
	BlockPairCursor c(a, acount, b, bcount, bytes);
	rma_aint ao, bo;
	rma_count n;
	while (c.next(ao, bo, n))
		if (int rc = fn(ao, bo, n))
			return rc;
	return 0;
}

/*
 * The next at most @max pieces of @c as iovec pairs: aIov[i] in the buffer
 * at @aBase, bIov[i] in the buffer at @bBase (any address space; only
 * arithmetic is done on it). Returns how many pairs it filled (0 at the
 * end); @chunk receives their total length.
 */
inline size_t fillIovecs(BlockPairCursor &c, void *aBase, uintptr_t bBase, iovec *aIov, iovec *bIov, size_t max,
			 size_t &chunk)
{
	size_t n = 0;
	chunk = 0;
	rma_aint ao, bo;
	rma_count len;
	while (n < max && c.next(ao, bo, len)) {
		aIov[n].iov_base = static_cast<std::byte *>(aBase) + ao;
		aIov[n].iov_len = static_cast<size_t>(len);
		bIov[n].iov_base = reinterpret_cast<void *>(bBase + static_cast<uintptr_t>(bo));
		bIov[n].iov_len = static_cast<size_t>(len);
		chunk += static_cast<size_t>(len);
		++n;
	}
	return n;
}

/*
 * Copy @bytes bytes of data from count @srcCount of @srcType at @src into
 * count @dstCount of @dstType at @dst, in type-map order, block to block.
 * Both types committed; @bytes no more than either side holds.
 */
void copyTyped(std::byte *dst, const Datatype &dstType, rma_count dstCount, const std::byte *src,
	       const Datatype &srcType, rma_count srcCount, rma_count bytes);

} /* namespace librma */
