/* SPDX-License-Identifier: MIT */
#include "op/op.h"

#include <cmath>
#include <cstdio>
#include <cstring>
#include <type_traits>
#include <utility>

#include "error/error.h"
#include "op/kernels.h"

namespace librma {

namespace {

/* ---- Names and messages ------------------------------------------------------- */

const char *const kOpNames[kOpLimit] = {
	"RMA_OP_NULL", "RMA_MAX",  "RMA_MIN",  "RMA_SUM",    "RMA_PROD",   "RMA_LAND",	  "RMA_BAND",  "RMA_LOR",
	"RMA_BOR",     "RMA_LXOR", "RMA_BXOR", "RMA_MAXLOC", "RMA_MINLOC", "RMA_REPLACE", "RMA_NO_OP",
};

const char *const kPairNames[kElemLimit - kFirstPairIndex] = {
	"RMA_FLOAT_INT", "RMA_DOUBLE_INT", "RMA_LONG_INT", "RMA_2INT", "RMA_SHORT_INT", "RMA_LONG_DOUBLE_INT",
};

const char *const kClassNames[] = {
	"no class", "C integer",      "floating point", "logical", "complex",
	"byte",	    "multi-language", "character",	"pair",	   "packed",
};
static_assert(std::size(kClassNames) == static_cast<size_t>(ElemClass::Packed) + 1);

/* "C integer, floating point and multi-language" for a mask of classes. */
void describeClasses(uint32_t mask, char *buf, size_t size)
{
	size_t used = 0;
	buf[0] = '\0';
	unsigned total = static_cast<unsigned>(__builtin_popcount(mask)), k = 0;
	for (uint32_t c = 1; c < std::size(kClassNames) && used < size; ++c) {
		if (!(mask & (1u << c)))
			continue;
		const char *sep = k == 0 ? "" : (k + 1 == total ? " and " : ", ");
		int w = std::snprintf(buf + used, size - used, "%s%s", sep, kClassNames[c]);
		if (w < 0)
			break;
		used += static_cast<size_t>(w);
		++k;
	}
}

} /* namespace */

namespace detail {

constinit const KernelTable kAtomicKernels = table<true>(std::make_index_sequence<kOpLimit>{});
constinit const KernelTable kPlainKernels = table<false>(std::make_index_sequence<kOpLimit>{});
constinit const KernelTable *plainKernels = &kPlainKernels;

namespace {

#if defined(__x86_64__)
/* At load, before anything can apply an op: the AVX2 plain kernels where the CPU has AVX2. */
[[gnu::constructor]] void pickPlainKernels()
{
	__builtin_cpu_init(); /* constructors may run before libgcc's own CPU probe */
	if (__builtin_cpu_supports("avx2"))
		plainKernels = &kPlainKernelsAvx2;
}
#endif

} /* namespace */

} /* namespace detail */

const char *opName(Op op)
{
	uint32_t i = static_cast<uint32_t>(op);
	return i < kOpLimit ? kOpNames[i] : "(invalid op)";
}

const char *elemName(uint8_t elem)
{
	if (elem == 0 || elem >= kElemLimit)
		return "(invalid datatype)";
	if (elem >= kFirstPairIndex)
		return kPairNames[elem - kFirstPairIndex];
	return kPredefinedTypes[elem].name;
}

const char *elemClassName(ElemClass cls)
{
	size_t i = static_cast<size_t>(cls);
	return i < std::size(kClassNames) ? kClassNames[i] : "no class";
}

int checkOp(const char *call, Op op, uint8_t elem, bool fetches)
{
	if (opAllowed(op, elem) && (fetches || op != Op::NoOp))
		return RMA_SUCCESS;
	if (op == Op::Null || static_cast<uint32_t>(op) >= kOpLimit)
		return makeError(RMA_ERR_OP, "%s: the op is RMA_OP_NULL or not a predefined op (datatype %s)", call,
				 elemName(elem));
	if (elemClass(elem) == ElemClass::None)
		return makeError(RMA_ERR_OP, "%s: %s on an invalid datatype (element index %u)", call, opName(op),
				 static_cast<unsigned>(elem));
	if (op == Op::NoOp && opAllowed(op, elem))
		return makeError(RMA_ERR_OP,
				 "%s: RMA_NO_OP is only for calls that fetch (get_accumulate, fetch_and_op); "
				 "datatype %s",
				 call, elemName(elem));
	char takes[160];
	describeClasses(detail::kOpClasses[static_cast<uint32_t>(op)], takes, sizeof(takes));
	return makeError(RMA_ERR_OP, "%s: %s is not defined on %s (a %s type); it takes %s types", call, opName(op),
			 elemName(elem), elemClassName(elemClass(elem)), takes);
}

int checkCompareAndSwapType(const char *call, uint8_t elem)
{
	if (compareAndSwapAllowed(elem))
		return RMA_SUCCESS;
	return makeError(RMA_ERR_TYPE,
			 "%s: compare-and-swap is not defined on %s (a %s type); it takes C integer, logical, "
			 "multi-language and byte types",
			 call, elemName(elem), elemClassName(elemClass(elem)));
}

namespace {

template <typename V> void pairDispatch(Op op, void *tv, void *ti, const Bytes *o, Bytes *r) noexcept
{
	switch (op) {
	case Op::Maxloc:
		pairOne<Op::Maxloc, V>(tv, ti, o, r);
		break;
	case Op::Minloc:
		pairOne<Op::Minloc, V>(tv, ti, o, r);
		break;
	case Op::Replace:
		pairOne<Op::Replace, V>(tv, ti, o, r);
		break;
	case Op::NoOp:
		pairOne<Op::NoOp, V>(tv, ti, o, r);
		break;
	default:
		break;
	}
}

template <typename U> void casOne(void *target, const void *compare, const void *origin, void *old) noexcept
{
	if ((reinterpret_cast<uintptr_t>(target) & (sizeof(U) - 1)) == 0)
		return compareAndSwapAligned<U>(target, compare, origin, old);
	U expected, desired;
	std::memcpy(&expected, compare, sizeof(U));
	std::memcpy(&desired, origin, sizeof(U));
	U cur;
	std::memcpy(&cur, target, sizeof(U));
	std::memcpy(old, &cur, sizeof(U));
	if (cur == expected)
		std::memcpy(target, &desired, sizeof(U));
}

} /* namespace */

void detail::applyOpWordKernel(Op op, uint8_t elem, uint64_t *word, size_t lane, const void *origin, void *old,
				size_t n) noexcept
{
	/* relaxed: applyOp()'s per-element RMWs are relaxed too; the epoch's completion orders them. */
	uint64_t expected = __atomic_load_n(word, __ATOMIC_RELAXED);
	if (op != Op::NoOp) {
		uint64_t desired;
		do {
			desired = expected;
			applyOpPlain(op, elem, reinterpret_cast<std::byte *>(&desired) + lane, origin, nullptr, n);
			/* relaxed on both outcomes: a failure reloads @expected and recomputes the lanes. */
		} while (!__atomic_compare_exchange_n(word, &expected, desired, false, __ATOMIC_RELAXED, __ATOMIC_RELAXED));
	}
	if (old)
		std::memcpy(old, reinterpret_cast<const std::byte *>(&expected) + lane, elemBytes(elem) * n);
}

void applyPairOp(Op op, uint8_t pairElem, void *targetValue, void *targetIndex, const void *origin, void *old) noexcept
{
	const Bytes *o = static_cast<const Bytes *>(origin);
	Bytes *r = static_cast<Bytes *>(old);
	switch (pairElem - kFirstPairIndex) {
	case 0:
		return pairDispatch<float>(op, targetValue, targetIndex, o, r);
	case 1:
		return pairDispatch<double>(op, targetValue, targetIndex, o, r);
	case 2:
		return pairDispatch<long>(op, targetValue, targetIndex, o, r);
	case 3:
		return pairDispatch<int>(op, targetValue, targetIndex, o, r);
	case 4:
		return pairDispatch<short>(op, targetValue, targetIndex, o, r);
	case 5:
		return pairDispatch<long double>(op, targetValue, targetIndex, o, r);
	default:
		return;
	}
}

void compareAndSwap(uint8_t elem, void *target, const void *compare, const void *origin, void *old) noexcept
{
	if (!compareAndSwapAllowed(elem))
		return;
	switch (elemBytes(elem)) {
	case 1:
		return casOne<uint8_t>(target, compare, origin, old);
	case 2:
		return casOne<uint16_t>(target, compare, origin, old);
	case 4:
		return casOne<uint32_t>(target, compare, origin, old);
	case 8:
		return casOne<uint64_t>(target, compare, origin, old);
	default:
		return;
	}
}

} /* namespace librma */
