/* SPDX-License-Identifier: MIT */
/*
 * Reduction ops: the predefined operations of the accumulate family (MPI's
 * RMA_MAX .. RMA_NO_OP), which op is defined on which element type, and the
 * kernels that apply an op to elements of window memory. This header is the
 * component's only door.
 *
 * An accumulate *element* is named by a uint8_t: the index of a predefined
 * datatype handle, a BasicType (1..32) or a pair type (kFirstPairIndex..
 * kLastPredefinedIndex: RMA_FLOAT_INT, RMA_DOUBLE_INT, RMA_LONG_INT,
 * RMA_2INT, RMA_SHORT_INT, RMA_LONG_DOUBLE_INT).
 *
 * Two memory layouts meet in every kernel:
 *  - the *target* is window memory: n consecutive elements of the C type,
 *    elemExtent() bytes apart (a pair is the C struct { V v; int i; } with
 *    its padding);
 *  - the *origin* and *old* (result) buffers are packed streams: elemBytes()
 *    bytes an element, pairs as value bytes then the int with no padding
 *    (MPI's pack order); any alignment.
 *
 * Classes of elements (MPI-4.1 section 6.9.2, "Predefined Reduction
 * Operations"), and the ops defined on them:
 *
 *   class          elements                           ops
 *   C integer      CHAR, SIGNED_CHAR, UNSIGNED_CHAR,   MAX MIN SUM PROD
 *                  SHORT,
 *                  UNSIGNED_SHORT, INT, UNSIGNED,      LAND LOR LXOR
 *                  LONG, UNSIGNED_LONG, LONG_LONG,     BAND BOR BXOR
 *                  UNSIGNED_LONG_LONG, INT8..UINT64_T
 *   floating pt.   FLOAT, DOUBLE, LONG_DOUBLE          MAX MIN SUM PROD
 *   logical        C_BOOL                              LAND LOR LXOR
 *   complex        C_FLOAT_COMPLEX, C_DOUBLE_COMPLEX,  SUM PROD
 *                  C_LONG_DOUBLE_COMPLEX
 *   byte           BYTE                                BAND BOR BXOR
 *   multi-language AINT, OFFSET, COUNT                 MAX MIN SUM PROD
 *                                                      BAND BOR BXOR
 *   character      WCHAR                               (none)
 *   pair           the six pair types                  MAXLOC MINLOC
 *   packed         PACKED                              (none, not even REPLACE)
 *
 * REPLACE and NO_OP are defined on every class but packed. MPI keeps CHAR
 * out of reductions (only SIGNED_CHAR and UNSIGNED_CHAR are small
 * integers), but MPICH, Open MPI and the common benchmark suites accept it,
 * so librma treats it as the platform's `char` (signed on x86-64), a C
 * integer. WCHAR stays a printable character: REPLACE and NO_OP alone. AINT, OFFSET and COUNT are MPI's "multi-language types":
 * integers for MAX/MIN, SUM/PROD and the bitwise ops, but not for the
 * logical ones. PACKED names no element type: an op "applies to elements of
 * that predefined type" (the accumulate text), and packed bytes have none,
 * so even REPLACE and NO_OP are refused on it (RMA_ERR_OP).
 * Compare-and-swap takes C integer, logical, multi-language and byte
 * elements (the compare-and-swap text), nothing else (RMA_ERR_TYPE).
 *
 * Semantics of the kernels (t: the target's value, o: the origin's):
 *  - SUM/PROD on integers wrap modulo 2^bits (two's complement).
 *  - LAND/LOR/LXOR: nonzero is true; the result is 0 or 1 of the element's
 *    type. BAND/BOR/BXOR act on the bits.
 *  - MAX/MIN on floating point: the origin's value is taken when it is
 *    strictly greater (MIN: smaller), or when it is a NaN and the target's
 *    is not; otherwise the target keeps its value (a NaN target stays, and
 *    of +0 and -0 the target's is kept). The atomic and plain paths give the
 *    same bits.
 *  - Complex PROD is the textbook (ac - bd) + (ad + bc)i, without C's
 *    Annex G recovery of infinities.
 *  - MAXLOC/MINLOC (MPI's definition): the greater (smaller) value with its
 *    index; on equal values the smaller index wins. NaN values follow the
 *    MAX/MIN rule above; two NaNs count as equal.
 *  - REPLACE: t = o. NO_OP: t is left alone (only fetched).
 *
 * Atomicity: applyOp() updates each element whose op has a hardware atomic
 * form (hardwareAtomic()) and whose target address is naturally aligned
 * (atomicAt()) with one atomic read-modify-write; such updates compose with
 * each other from any number of threads and processes. Every other element
 * (long double, double and long double complex, pairs, misaligned targets)
 * is updated with plain loads and stores: the caller serializes every
 * accumulate-family access to it (the progress agent does).
 *
 * Thread safety: every function is thread-safe and reentrant (no state but
 * constant tables); the kernels are noexcept, allocate nothing and make no
 * system call. checkOp() and checkCompareAndSwapType() allocate a message
 * only when they fail.
 */
#pragma once

#include <array>
#include <atomic>
#include <cstddef>
#include <cstdint>
#include <cstring>

#include <rma/rma.h>

#include "datatype/datatype.h"

namespace librma {

/* The predefined ops; the value is the index of the op's handle. */
enum class Op : uint8_t {
	Null = 0,
	Max = 1,
	Min,
	Sum,
	Prod,
	Land,
	Band,
	Lor,
	Bor,
	Lxor,
	Bxor,
	Maxloc,
	Minloc,
	Replace,
	NoOp,
	Last = NoOp,
};

/* MPI's classes of predefined types, for the op table (see above). */
enum class ElemClass : uint8_t {
	None = 0,
	CInteger,
	FloatingPoint,
	Logical,
	Complex,
	Byte,
	MultiLanguage,
	Character,
	Pair,
	Packed,
};

/* Bound of every elem argument: valid elements are 1..kLastPredefinedIndex. */
inline constexpr uint32_t kElemLimit = kLastPredefinedIndex + 1;
inline constexpr uint32_t kOpLimit = static_cast<uint32_t>(Op::Last) + 1;

namespace detail {

struct ElemInfo {
	uint8_t bytes;	    /* data bytes in a packed stream */
	uint8_t extent;	    /* bytes from one target element to the next */
	uint8_t valueBytes; /* pairs: of the value; others: == bytes */
	ElemClass cls;
};

/* Indexed by element (BasicType, then the pair types); pinned to the C types in op.cpp. */
inline constexpr ElemInfo kElemInfo[kElemLimit] = {
	{ 0, 0, 0, ElemClass::None },
	{ 1, 1, 1, ElemClass::CInteger },	  /* CHAR: the platform's char, as MPICH and Open MPI */
	{ 1, 1, 1, ElemClass::CInteger },	  /* SIGNED_CHAR */
	{ 1, 1, 1, ElemClass::CInteger },	  /* UNSIGNED_CHAR */
	{ 1, 1, 1, ElemClass::Byte },		  /* BYTE */
	{ 2, 2, 2, ElemClass::CInteger },	  /* SHORT */
	{ 2, 2, 2, ElemClass::CInteger },	  /* UNSIGNED_SHORT */
	{ 4, 4, 4, ElemClass::CInteger },	  /* INT */
	{ 4, 4, 4, ElemClass::CInteger },	  /* UNSIGNED */
	{ 8, 8, 8, ElemClass::CInteger },	  /* LONG */
	{ 8, 8, 8, ElemClass::CInteger },	  /* UNSIGNED_LONG */
	{ 8, 8, 8, ElemClass::CInteger },	  /* LONG_LONG */
	{ 8, 8, 8, ElemClass::CInteger },	  /* UNSIGNED_LONG_LONG */
	{ 4, 4, 4, ElemClass::FloatingPoint },	  /* FLOAT */
	{ 8, 8, 8, ElemClass::FloatingPoint },	  /* DOUBLE */
	{ 16, 16, 16, ElemClass::FloatingPoint }, /* LONG_DOUBLE */
	{ 4, 4, 4, ElemClass::Character },	  /* WCHAR */
	{ 1, 1, 1, ElemClass::Logical },	  /* C_BOOL */
	{ 1, 1, 1, ElemClass::CInteger },	  /* INT8_T */
	{ 2, 2, 2, ElemClass::CInteger },	  /* INT16_T */
	{ 4, 4, 4, ElemClass::CInteger },	  /* INT32_T */
	{ 8, 8, 8, ElemClass::CInteger },	  /* INT64_T */
	{ 1, 1, 1, ElemClass::CInteger },	  /* UINT8_T */
	{ 2, 2, 2, ElemClass::CInteger },	  /* UINT16_T */
	{ 4, 4, 4, ElemClass::CInteger },	  /* UINT32_T */
	{ 8, 8, 8, ElemClass::CInteger },	  /* UINT64_T */
	{ 8, 8, 8, ElemClass::Complex },	  /* C_FLOAT_COMPLEX */
	{ 16, 16, 16, ElemClass::Complex },	  /* C_DOUBLE_COMPLEX */
	{ 32, 32, 32, ElemClass::Complex },	  /* C_LONG_DOUBLE_COMPLEX */
	{ 8, 8, 8, ElemClass::MultiLanguage },	  /* AINT */
	{ 8, 8, 8, ElemClass::MultiLanguage },	  /* OFFSET */
	{ 8, 8, 8, ElemClass::MultiLanguage },	  /* COUNT */
	{ 1, 1, 1, ElemClass::Packed },		  /* PACKED */
	{ 8, 8, 4, ElemClass::Pair },		  /* FLOAT_INT */
	{ 12, 16, 8, ElemClass::Pair },		  /* DOUBLE_INT */
	{ 12, 16, 8, ElemClass::Pair },		  /* LONG_INT */
	{ 8, 8, 4, ElemClass::Pair },		  /* 2INT */
	{ 6, 8, 2, ElemClass::Pair },		  /* SHORT_INT */
	{ 20, 32, 16, ElemClass::Pair },	  /* LONG_DOUBLE_INT */
};

constexpr uint32_t classBit(ElemClass c)
{
	return 1u << static_cast<unsigned>(c);
}

inline constexpr uint32_t kIntegers = classBit(ElemClass::CInteger) | classBit(ElemClass::MultiLanguage);
inline constexpr uint32_t kEveryClass = (classBit(ElemClass::Packed) - 1) & ~classBit(ElemClass::None);

/* Per op (indexed by Op), the classes it is defined on. */
inline constexpr uint32_t kOpClasses[kOpLimit] = {
	0,									       /* NULL */
	kIntegers | classBit(ElemClass::FloatingPoint),				       /* MAX */
	kIntegers | classBit(ElemClass::FloatingPoint),				       /* MIN */
	kIntegers | classBit(ElemClass::FloatingPoint) | classBit(ElemClass::Complex), /* SUM */
	kIntegers | classBit(ElemClass::FloatingPoint) | classBit(ElemClass::Complex), /* PROD */
	classBit(ElemClass::CInteger) | classBit(ElemClass::Logical),		       /* LAND */
	kIntegers | classBit(ElemClass::Byte),					       /* BAND */
	classBit(ElemClass::CInteger) | classBit(ElemClass::Logical),		       /* LOR */
	kIntegers | classBit(ElemClass::Byte),					       /* BOR */
	classBit(ElemClass::CInteger) | classBit(ElemClass::Logical),		       /* LXOR */
	kIntegers | classBit(ElemClass::Byte),					       /* BXOR */
	classBit(ElemClass::Pair),						       /* MAXLOC */
	classBit(ElemClass::Pair),						       /* MINLOC */
	kEveryClass,								       /* REPLACE */
	kEveryClass,								       /* NO_OP */
};

inline constexpr uint32_t kCompareAndSwapClasses = kIntegers | classBit(ElemClass::Logical) | classBit(ElemClass::Byte);

using KernelFn = void (*)(void *target, const void *origin, void *old, size_t n) noexcept;

/* [op][elem]: the kernels behind applyOp() and applyOpPlain(); a no-op where opAllowed() is false. */
using KernelTable = std::array<std::array<KernelFn, kElemLimit>, kOpLimit>;
extern const KernelTable kAtomicKernels;
/* The plain kernels for the baseline ISA, and (x86-64) compiled for AVX2 (op_avx2.cpp). */
extern const KernelTable kPlainKernels;
#if defined(__x86_64__)
extern const KernelTable kPlainKernelsAvx2;
#endif
/* The plain table applyOpPlain() uses: the AVX2 one where the CPU has AVX2 (set once, at load). */
extern const KernelTable *plainKernels;

} /* namespace detail */

/**
 * @brief The op behind a handle.
 * @return The op, or Op::Null for RMA_OP_NULL and for anything that is not
 *         a predefined op handle (another kind's handle, an index out of
 *         range, a nonzero generation). The caller reports Op::Null through
 *         checkOp(). Inline, no side effect.
 */
inline Op toOp(rma_op handle)
{
	uintptr_t index = reinterpret_cast<uintptr_t>(handle) - (uintptr_t(RMA_HANDLE_KIND_OP_) << 56);
	if (index - 1 >= static_cast<uintptr_t>(Op::Last))
		return Op::Null;
	return static_cast<Op>(index);
}

/** @brief The handle of a predefined op (RMA_OP_NULL for Op::Null). */
inline rma_op opHandle(Op op)
{
	if (op == Op::Null)
		return RMA_OP_NULL;
	return RMA_PREDEFINED_(rma_op, RMA_HANDLE_KIND_OP_, static_cast<uint64_t>(op));
}

/** @brief The op's C name ("RMA_SUM", "RMA_OP_NULL" for Op::Null, "(invalid op)" past Op::Last). */
const char *opName(Op op);

/** @brief The element's datatype name ("RMA_DOUBLE", "RMA_2INT"; "(invalid datatype)" outside 1..38). */
const char *elemName(uint8_t elem);

/** @brief The MPI class of an element (ElemClass::None outside 1..38). */
constexpr ElemClass elemClass(uint8_t elem)
{
	return elem < kElemLimit ? detail::kElemInfo[elem].cls : ElemClass::None;
}

/** @brief The class's name as the MPI standard spells it ("C integer", "floating point", ...). */
const char *elemClassName(ElemClass cls);

/**
 * @brief Bytes of data of one element in a packed (origin/result) stream:
 *        a basic type's size; a pair's value size + sizeof(int). 0 outside 1..38.
 */
constexpr uint32_t elemBytes(uint8_t elem)
{
	return elem < kElemLimit ? detail::kElemInfo[elem].bytes : 0;
}

/**
 * @brief Bytes from one element to the next in target (window) memory:
 *        a basic type's size; a pair's sizeof(struct { V v; int i; }).
 */
constexpr uint32_t elemExtent(uint8_t elem)
{
	return elem < kElemLimit ? detail::kElemInfo[elem].extent : 0;
}

/** @brief True for the pair types (MAXLOC/MINLOC elements). */
constexpr bool isPairElem(uint8_t elem)
{
	return elemClass(elem) == ElemClass::Pair;
}

/**
 * @brief Whether MPI defines @p op on @p elem (the table at the top).
 * @return false for Op::Null, ops past Op::Last and elements outside 1..38.
 */
constexpr bool opAllowed(Op op, uint8_t elem)
{
	if (static_cast<uint32_t>(op) >= kOpLimit)
		return false;
	return (detail::kOpClasses[static_cast<uint32_t>(op)] & detail::classBit(elemClass(elem))) != 0;
}

/**
 * @brief Check an op for a call of the accumulate family.
 * @param[in] call    the public call's name, for the message ("rma_accumulate")
 * @param[in] op      toOp() of the handle the application passed
 * @param[in] elem    the element type the op applies to
 * @param[in] fetches true for get_accumulate, fetch_and_op and their request
 *                    forms; false for accumulate and raccumulate, which MPI
 *                    forbids RMA_NO_OP (REPLACE is fine in both)
 * @return RMA_SUCCESS; or an RMA_ERR_OP code whose message names the call,
 *         the op and the datatype (and what the op is defined on) when
 *         @p op is Op::Null, NO_OP in a call that does not fetch, or not
 *         defined on @p elem. The caller returns it (through the error
 *         handler). Cold on failure; thread-safe.
 */
int checkOp(const char *call, Op op, uint8_t elem, bool fetches = true);

/** @brief Whether compare-and-swap is defined on @p elem: C integer, logical, multi-language, byte. */
constexpr bool compareAndSwapAllowed(uint8_t elem)
{
	return (detail::kCompareAndSwapClasses & detail::classBit(elemClass(elem))) != 0;
}

/**
 * @brief Check the datatype of rma_compare_and_swap().
 * @return RMA_SUCCESS, or an RMA_ERR_TYPE code whose message names @p call
 *         and the datatype when compareAndSwapAllowed(@p elem) is false.
 */
int checkCompareAndSwapType(const char *call, uint8_t elem);

/**
 * @brief Whether one element of @p elem can be updated by @p op with one
 *        atomic instruction or a compare-exchange loop: the op is allowed,
 *        the element is not a pair and its size is 1, 2, 4 or 8 bytes
 *        (false for long double, double and long double complex). An
 *        8-byte float complex counts (a 64-bit compare-exchange loop).
 */
constexpr bool hardwareAtomic(Op op, uint8_t elem)
{
	if (!opAllowed(op, elem) || isPairElem(elem))
		return false;
	uint32_t b = elemBytes(elem);
	return b == 1 || b == 2 || b == 4 || b == 8;
}

/**
 * @brief Whether applyOp() updates the elements at @p target atomically:
 *        hardwareAtomic(@p op, @p elem) and @p target aligned to the
 *        element's size (then every one of n consecutive elements is).
 *        When false, the caller must serialize the update (queue it to the
 *        progress agent).
 */
[[gnu::always_inline]] inline bool atomicAt(Op op, uint8_t elem, const void *target)
{
	return hardwareAtomic(op, elem) && (reinterpret_cast<uintptr_t>(target) & (elemBytes(elem) - 1)) == 0;
}

/**
 * @brief Apply @p op to @p n consecutive elements of @p elem:
 *        target[i] = op(target[i], origin[i]); when @p old is not nullptr,
 *        each element's previous value is written to old[i] first
 *        (get_accumulate, fetch_and_op).
 * @param[in,out] target window memory, n elements elemExtent() apart
 * @param[in]     origin packed stream of n elements (ignored for NO_OP)
 * @param[out]    old    nullptr, or a packed stream of n elements
 *
 * Per element atomic when atomicAt(@p op, @p elem, @p target): one relaxed
 * atomic RMW (fetch_add/and/or/xor for integer SUM and bitwise ops,
 * exchange for REPLACE (a store when @p old is nullptr), a load for NO_OP,
 * a compare-exchange loop for everything else). Otherwise plain: the caller
 * serializes. Precondition: opAllowed(@p op, @p elem) (checkOp() passed);
 * any other pairing does nothing. @p origin and @p old must not overlap
 * @p target except element for element. noexcept, no allocation, no system
 * call; thread-safe in the sense above. n == 1 costs one table load and one
 * indirect call before the RMW.
 */
inline void applyOp(Op op, uint8_t elem, void *target, const void *origin, void *old, size_t n) noexcept
{
	if (static_cast<uint32_t>(op) >= kOpLimit || elem >= kElemLimit)
		return;
	detail::kAtomicKernels[static_cast<uint32_t>(op)][elem](target, origin, old, n);
}

/**
 * @brief applyOp() with plain loads and stores only, for callers that own
 *        the target exclusively (the progress agent under a window's
 *        accumulate lock, local scratch): no locked instruction, and
 *        vectorized for the arithmetic and bitwise ops. Same arguments,
 *        semantics and precondition as applyOp().
 */
inline void applyOpPlain(Op op, uint8_t elem, void *target, const void *origin, void *old, size_t n) noexcept
{
	if (static_cast<uint32_t>(op) >= kOpLimit || elem >= kElemLimit)
		return;
	(*detail::plainKernels)[static_cast<uint32_t>(op)][elem](target, origin, old, n);
}

/**
 * @brief Whether applyOpWord() can update @p n elements of @p elem at
 *        @p target: atomicAt(), more than one element, and all of them
 *        inside one naturally aligned 8-byte word.
 */
[[gnu::always_inline]] inline bool wordAt(Op op, uint8_t elem, const void *target, size_t n)
{
	const uintptr_t a = reinterpret_cast<uintptr_t>(target);
	return n > 1 && atomicAt(op, elem, target) && (a & 7) + elemBytes(elem) * n <= 8;
}

namespace detail {
/* applyOpWord() for every op but integer SUM: the lanes through the plain kernel (op.cpp; out of line). */
void applyOpWordKernel(Op op, uint8_t elem, uint64_t *word, size_t lane, const void *origin, void *old,
		       size_t n) noexcept;
} /* namespace detail */

/**
 * @brief applyOpWord() of integer SUM (C integer or multi-language
 *        elements of @p eb = 1, 2 or 4 bytes), inline: the origin's lanes in
 *        place in a word (0 elsewhere), added lane by lane in one 64-bit add
 *        with the lanes' top bits kept out of it (so no carry crosses a lane)
 *        and put back by XOR: wrapping per lane, as the per-element RMWs do.
 *        Same preconditions and atomicity as applyOpWord().
 */
[[gnu::always_inline]] inline void applyLaneSum(uint32_t eb, void *target, const void *origin, void *old,
						size_t n) noexcept
{
	const uintptr_t a = reinterpret_cast<uintptr_t>(target);
	auto *word = reinterpret_cast<uint64_t *>(a & ~uintptr_t(7));
	const size_t lane = a & 7;
	const size_t bytes = eb * n;
	uint64_t add = 0;
	if (bytes == 8) {
		__builtin_memcpy(&add, origin, 8);
	} else {
		for (size_t i = 0; i < bytes; ++i)
			add |= uint64_t(static_cast<const uint8_t *>(origin)[i]) << (8 * (lane + i));
	}
	const uint64_t top = eb == 1 ? 0x8080808080808080ull : eb == 2 ? 0x8000800080008000ull : 0x8000000080000000ull;
	/* relaxed: applyOp()'s per-element RMWs are relaxed too; the epoch's completion orders them. */
	uint64_t expected = __atomic_load_n(word, __ATOMIC_RELAXED);
	uint64_t desired;
	do {
		desired = ((expected & ~top) + (add & ~top)) ^ ((expected ^ add) & top);
		/* relaxed on both outcomes: a failure reloads @expected and recomputes. */
	} while (!__atomic_compare_exchange_n(word, &expected, desired, false, __ATOMIC_RELAXED, __ATOMIC_RELAXED));
	if (old) {
		if (bytes == 8) {
			__builtin_memcpy(old, &expected, 8);
		} else {
			for (size_t i = 0; i < bytes; ++i)
				static_cast<uint8_t *>(old)[i] = static_cast<uint8_t>(expected >> (8 * (lane + i)));
		}
	}
}

/**
 * @brief applyOp() of @p n elements that share one aligned 8-byte word
 *        (wordAt() holds): one compare-exchange loop on the word instead
 *        of one locked RMW per element, e.g. 8 chars summed in one
 *        instruction instead of eight. The lanes are computed by the plain
 *        kernel on a copy of the word. The update is atomic as a whole,
 *        which is more than MPI asks (per element), and composes with
 *        applyOp()'s per-element RMWs on the same elements: both are locked
 *        instructions on one naturally aligned word, which x86 keeps atomic
 *        with respect to each other. Relaxed, like applyOp(). @p old gets
 *        the lanes' previous values.
 */
inline void applyOpWord(Op op, uint8_t elem, void *target, const void *origin, void *old, size_t n) noexcept
{
	const ElemClass cls = elemClass(elem);
	if (op == Op::Sum && (cls == ElemClass::CInteger || cls == ElemClass::MultiLanguage)) {
		applyLaneSum(elemBytes(elem), target, origin, old, n);
		return;
	}
	const uintptr_t a = reinterpret_cast<uintptr_t>(target);
	detail::applyOpWordKernel(op, elem, reinterpret_cast<uint64_t *>(a & ~uintptr_t(7)), a & 7, origin, old, n);
}

/**
 * @brief Apply MAXLOC, MINLOC, REPLACE or NO_OP to one pair whose value and
 *        index live at separate target addresses (a derived type may split
 *        them); any alignment.
 * @param[in]     op          Maxloc, Minloc, Replace or NoOp (others: nothing)
 * @param[in]     pairElem    a pair element (kFirstPairIndex..38; others: nothing)
 * @param[in,out] targetValue the target's value (V)
 * @param[in,out] targetIndex the target's int index
 * @param[in]     origin      packed: value bytes, then the int
 * @param[out]    old         nullptr, or packed: the previous value and index
 * Plain loads and stores: the caller serializes. noexcept.
 */
void applyPairOp(Op op, uint8_t pairElem, void *targetValue, void *targetIndex, const void *origin, void *old) noexcept;

/**
 * @brief Compare-and-swap of one element: *old = *target; if the target's
 *        bytes equal *compare's, *target = *origin. One relaxed atomic
 *        compare-exchange when @p target is aligned to the element's size,
 *        plain (caller serializes) otherwise.
 * @param[in] elem a type with compareAndSwapAllowed() (others: nothing is
 *                 done, *old untouched); 1, 2, 4 or 8 bytes
 * @param[in] compare, origin  any alignment
 * @param[out] old  any alignment; must not be nullptr
 * noexcept; thread-safe for aligned targets.
 */
void compareAndSwap(uint8_t elem, void *target, const void *compare, const void *origin, void *old) noexcept;

/* Every type compare-and-swap takes has 1, 2, 4 or 8 bytes: compareAndSwapAligned() covers them all. */
static_assert([] {
	for (uint32_t e = 0; e < kElemLimit; ++e) {
		const uint32_t b = elemBytes(static_cast<uint8_t>(e));
		if (compareAndSwapAllowed(static_cast<uint8_t>(e)) && b != 1 && b != 2 && b != 4 && b != 8)
			return false;
	}
	return true;
}());

/**
 * @brief compareAndSwap() of one @p U (a 1, 2, 4 or 8-byte unsigned type)
 *        at a @p target aligned to sizeof(U): the inline path of
 *        rma_compare_and_swap (Window::casFast) and compareAndSwap()'s
 *        atomic case. @p compare, @p origin and @p old have any alignment.
 */
template<typename U>
inline void compareAndSwapAligned(void *target, const void *compare, const void *origin, void *old) noexcept
{
	U expected, desired;
	std::memcpy(&expected, compare, sizeof(U));
	std::memcpy(&desired, origin, sizeof(U));
	/*
	 * Strong: a spurious failure would report a miss that did not happen.
	 * Relaxed: atomic per element is all MPI asks, as for fetchAdd64() (on
	 * x86 a locked cmpxchg is a full barrier regardless). On failure
	 * @expected holds the current value; on success it already equals the
	 * old one.
	 */
	std::atomic_ref<U>(*static_cast<U *>(target))
		.compare_exchange_strong(expected, desired, std::memory_order_relaxed, std::memory_order_relaxed);
	std::memcpy(old, &expected, sizeof(U));
}

/** @brief True when fetchAdd64() may stand for applyOp(@p op, @p elem, ...) with n == 1. */
[[gnu::always_inline]] constexpr bool isFetchAdd64(Op op, uint8_t elem)
{
	ElemClass c = elemClass(elem);
	return op == Op::Sum && elemBytes(elem) == 8 && (c == ElemClass::CInteger || c == ElemClass::MultiLanguage);
}

/*
 * What the accumulate fast path may do for an (op, element) pair, from one
 * table load instead of the class and size tests (FastAcc bits).
 */
namespace fastacc {
inline constexpr uint8_t kAtomic = 1;  /* hardwareAtomic(op, elem) */
inline constexpr uint8_t kAdd64 = 2;   /* isFetchAdd64(op, elem): fetchAdd64() */
inline constexpr uint8_t kLaneSum = 4; /* integer SUM of 1/2/4-byte lanes: applyLaneSum() */
} /* namespace fastacc */

namespace detail {
inline constexpr auto kFastAcc = [] {
	std::array<std::array<uint8_t, kElemLimit>, kOpLimit> t{};
	for (uint32_t o = 0; o < kOpLimit; ++o) {
		for (uint32_t e = 0; e < kElemLimit; ++e) {
			const Op op = static_cast<Op>(o);
			const auto elem = static_cast<uint8_t>(e);
			if (!hardwareAtomic(op, elem))
				continue;
			const ElemClass c = elemClass(elem);
			const bool integer = c == ElemClass::CInteger || c == ElemClass::MultiLanguage;
			t[o][e] = fastacc::kAtomic | (isFetchAdd64(op, elem) ? fastacc::kAdd64 : 0) |
				  (op == Op::Sum && integer && elemBytes(elem) < 8 ? fastacc::kLaneSum : 0);
		}
	}
	return t;
}();
} /* namespace detail */

/** @brief FastAcc bits of @p op on @p elem (precondition: op <= Op::Last, elem < kElemLimit, as toOp() and predefined types give). */
[[gnu::always_inline]] inline uint8_t fastAccKind(Op op, uint8_t elem)
{
	return detail::kFastAcc[static_cast<uint32_t>(op)][elem];
}

/**
 * @brief Inline fast path of fetch_and_op / accumulate: SUM of one 8-byte
 *        integer (signed or unsigned, wrapping) at a target aligned to 8
 *        bytes (precondition: atomicAt() true, isFetchAdd64() true).
 *        @p origin and @p old (nullptr: not wanted) have any alignment.
 */
[[gnu::always_inline]] inline void fetchAdd64(void *target, const void *origin, void *old) noexcept
{
	uint64_t o;
	std::memcpy(&o, origin, sizeof(o));
	/*
	 * Relaxed: the op is atomic per element and nothing else is published
	 * through it; MPI's ordering of accumulates to one location comes from
	 * the location's coherence order. (On x86 a locked add is a full
	 * barrier regardless.)
	 */
	uint64_t prev =
		std::atomic_ref<uint64_t>(*static_cast<uint64_t *>(target)).fetch_add(o, std::memory_order_relaxed);
	if (old)
		std::memcpy(old, &prev, sizeof(prev));
}

} /* namespace librma */
