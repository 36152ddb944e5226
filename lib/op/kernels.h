/* SPDX-License-Identifier: MIT */
/*
 * The reduction kernels and their dispatch tables, as templates in an
 * anonymous namespace: op.cpp instantiates them for the baseline ISA, and
 * op_avx2.cpp includes this file again under an AVX2 target so the plain
 * (vectorized) kernels get 32-byte vectors; op.cpp picks that table at
 * load time where the CPU has AVX2 (applyOpPlain). Internal to lib/op.
 * Everything here has internal linkage, so the two copies never meet at
 * link time (an inline function with external linkage compiled for AVX2
 * could otherwise be chosen for the baseline callers too).
 */
#pragma once

#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <type_traits>
#include <utility>

#include "op/op.h"

namespace librma {

namespace {

/* ---- Element types ---------------------------------------------------------- */

template <typename F> struct Complex {
	F re, im;
};

template <typename V> struct PairOf {
	V v;
	int i;
};

/* The C type behind each element index (WCHAR, bool and packed as unsigned bytes of their size). */
template <uint32_t E> struct ElemType;

#define RMA_ELEM_(e, ...)                                                                                              \
	template <> struct ElemType<static_cast<uint32_t>(e)> {                                                        \
		using type = __VA_ARGS__;                                                                              \
	}

using B = BasicType;
RMA_ELEM_(B::Char, char);
RMA_ELEM_(B::SignedChar, signed char);
RMA_ELEM_(B::UnsignedChar, unsigned char);
RMA_ELEM_(B::Byte, uint8_t);
RMA_ELEM_(B::Short, short);
RMA_ELEM_(B::UnsignedShort, unsigned short);
RMA_ELEM_(B::Int, int);
RMA_ELEM_(B::Unsigned, unsigned);
RMA_ELEM_(B::Long, long);
RMA_ELEM_(B::UnsignedLong, unsigned long);
RMA_ELEM_(B::LongLong, long long);
RMA_ELEM_(B::UnsignedLongLong, unsigned long long);
RMA_ELEM_(B::Float, float);
RMA_ELEM_(B::Double, double);
RMA_ELEM_(B::LongDouble, long double);
RMA_ELEM_(B::Wchar, uint32_t);
RMA_ELEM_(B::Bool, uint8_t); /* any nonzero byte is true: never read as a C++ bool */
RMA_ELEM_(B::Int8, int8_t);
RMA_ELEM_(B::Int16, int16_t);
RMA_ELEM_(B::Int32, int32_t);
RMA_ELEM_(B::Int64, int64_t);
RMA_ELEM_(B::Uint8, uint8_t);
RMA_ELEM_(B::Uint16, uint16_t);
RMA_ELEM_(B::Uint32, uint32_t);
RMA_ELEM_(B::Uint64, uint64_t);
RMA_ELEM_(B::FloatComplex, Complex<float>);
RMA_ELEM_(B::DoubleComplex, Complex<double>);
RMA_ELEM_(B::LongDoubleComplex, Complex<long double>);
RMA_ELEM_(B::Aint, rma_aint);
RMA_ELEM_(B::Offset, rma_offset);
RMA_ELEM_(B::Count, rma_count);
RMA_ELEM_(B::Packed, uint8_t);
RMA_ELEM_(kFirstPairIndex + 0, PairOf<float>);
RMA_ELEM_(kFirstPairIndex + 1, PairOf<double>);
RMA_ELEM_(kFirstPairIndex + 2, PairOf<long>);
RMA_ELEM_(kFirstPairIndex + 3, PairOf<int>);
RMA_ELEM_(kFirstPairIndex + 4, PairOf<short>);
RMA_ELEM_(kFirstPairIndex + 5, PairOf<long double>);

#undef RMA_ELEM_

template <typename T> struct PairTraits : std::false_type {
};
template <typename V> struct PairTraits<PairOf<V>> : std::true_type {
	using Value = V;
};

/* Pin the header's table (sizes, extents) to the C types. */
template <size_t E> constexpr bool elemMatches()
{
	if constexpr (E == 0) {
		return true;
	} else {
		using T = typename ElemType<E>::type;
		constexpr detail::ElemInfo e = detail::kElemInfo[E];
		if constexpr (PairTraits<T>::value)
			return e.extent == sizeof(T) && e.valueBytes == sizeof(typename PairTraits<T>::Value) &&
			       e.bytes == e.valueBytes + sizeof(int) && offsetof(T, i) >= e.valueBytes;
		else
			return e.bytes == sizeof(T) && e.extent == sizeof(T) && e.valueBytes == sizeof(T);
	}
}

template <size_t... Es> constexpr bool elemTableMatches(std::index_sequence<Es...>)
{
	return (elemMatches<Es>() && ...);
}
static_assert(elemTableMatches(std::make_index_sequence<kElemLimit>{}), "kElemInfo disagrees with the C types");
static_assert(sizeof(Complex<float>) == sizeof(float _Complex) && sizeof(Complex<double>) == sizeof(double _Complex));

template <size_t N> struct UintOf;
template <> struct UintOf<1> {
	using type = uint8_t;
};
template <> struct UintOf<2> {
	using type = uint16_t;
};
template <> struct UintOf<4> {
	using type = uint32_t;
};
template <> struct UintOf<8> {
	using type = uint64_t;
};

template <typename T> struct IsComplex : std::false_type {
};
template <typename F> struct IsComplex<Complex<F>> : std::true_type {
};

/* Integer arithmetic that wraps: unsigned, and at least unsigned int (no promotion to signed int). */
template <typename T>
using Wide = std::conditional_t<(sizeof(T) < sizeof(unsigned)), unsigned, std::make_unsigned_t<T>>;

/* ---- One element ---------------------------------------------------------- */

/* op(t, o) for a target value @t and an origin value @o (the header's semantics). */
template <Op O, typename T> [[gnu::always_inline]] inline T combine(T t, T o) noexcept
{
	if constexpr (O == Op::Replace) {
		return o;
	} else if constexpr (O == Op::NoOp) {
		return t;
	} else if constexpr (IsComplex<T>::value) {
		static_assert(O == Op::Sum || O == Op::Prod);
		if constexpr (O == Op::Sum)
			return T{ t.re + o.re, t.im + o.im };
		else
			return T{ t.re * o.re - t.im * o.im, t.re * o.im + t.im * o.re };
	} else if constexpr (std::is_floating_point_v<T>) {
		static_assert(O == Op::Max || O == Op::Min || O == Op::Sum || O == Op::Prod);
		/* A NaN origin replaces a number; a NaN target stays; ties keep the target. */
		if constexpr (O == Op::Max)
			return (o > t || (std::isnan(o) && !std::isnan(t))) ? o : t;
		else if constexpr (O == Op::Min)
			return (o < t || (std::isnan(o) && !std::isnan(t))) ? o : t;
		else if constexpr (O == Op::Sum)
			return t + o;
		else
			return t * o;
	} else {
		static_assert(std::is_integral_v<T>);
		using W = Wide<T>;
		if constexpr (O == Op::Max)
			return o > t ? o : t;
		else if constexpr (O == Op::Min)
			return o < t ? o : t;
		else if constexpr (O == Op::Sum)
			return static_cast<T>(static_cast<W>(t) + static_cast<W>(o));
		else if constexpr (O == Op::Prod)
			return static_cast<T>(static_cast<W>(t) * static_cast<W>(o));
		else if constexpr (O == Op::Land)
			return static_cast<T>((t != 0) & (o != 0));
		else if constexpr (O == Op::Lor)
			return static_cast<T>((t != 0) | (o != 0));
		else if constexpr (O == Op::Lxor)
			return static_cast<T>((t != 0) ^ (o != 0));
		else if constexpr (O == Op::Band)
			return static_cast<T>(t & o);
		else if constexpr (O == Op::Bor)
			return static_cast<T>(t | o);
		else {
			static_assert(O == Op::Bxor);
			return static_cast<T>(t ^ o);
		}
	}
}

/* MAXLOC/MINLOC on one pair: (tv, ti) = op((tv, ti), (ov, oi)). */
template <Op O, typename V> [[gnu::always_inline]] inline void combineLoc(V &tv, int &ti, V ov, int oi) noexcept
{
	static_assert(O == Op::Maxloc || O == Op::Minloc);
	bool tNan = false, oNan = false;
	if constexpr (std::is_floating_point_v<V>) {
		tNan = std::isnan(tv);
		oNan = std::isnan(ov);
	}
	bool originWins, tie;
	if (tNan || oNan) {
		/* The MAX/MIN rule: a NaN target stays, a NaN origin replaces a number; two NaNs tie. */
		tie = tNan && oNan;
		originWins = oNan && !tNan;
	} else {
		tie = !(ov < tv) && !(tv < ov);
		originWins = O == Op::Maxloc ? ov > tv : ov < tv;
	}
	if (originWins) {
		tv = ov;
		ti = oi;
	} else if (tie && oi < ti) {
		ti = oi;
	}
}

/* ---- Kernels over n elements ----------------------------------------------- */

using Bytes = unsigned char;

template <typename T> [[gnu::always_inline]] inline T loadAt(const Bytes *p, size_t i) noexcept
{
	T v;
	std::memcpy(&v, p + i * sizeof(T), sizeof(T));
	return v;
}

template <typename T> [[gnu::always_inline]] inline void storeAt(Bytes *p, size_t i, const T &v) noexcept
{
	std::memcpy(p + i * sizeof(T), &v, sizeof(T));
}

/*
 * Plain: any alignment (memcpy), no atomics; vectorizes for the arithmetic
 * and bitwise ops. The three buffers do not overlap (the callers' contract),
 * and saying so (restrict) is what lets the compiler vectorize at -O2.
 */
template <Op O, typename T, bool WithOld>
void plainLoop(Bytes *__restrict target, const Bytes *__restrict origin, Bytes *__restrict old, size_t n) noexcept
{
	for (size_t i = 0; i < n; ++i) {
		T t = loadAt<T>(target, i);
		if constexpr (WithOld)
			storeAt(old, i, t);
		storeAt(target, i, combine<O>(t, loadAt<T>(origin, i)));
	}
}

template <Op O, typename T> void plainKernel(void *target, const void *origin, void *old, size_t n) noexcept
{
	Bytes *t = static_cast<Bytes *>(target);
	const Bytes *o = static_cast<const Bytes *>(origin);
	Bytes *r = static_cast<Bytes *>(old);
	if constexpr (O == Op::NoOp) {
		if (r)
			std::memmove(r, t, n * sizeof(T));
	} else if constexpr (O == Op::Replace) {
		if (r)
			std::memmove(r, t, n * sizeof(T));
		std::memmove(t, o, n * sizeof(T));
	} else if (r) {
		plainLoop<O, T, true>(t, o, r, n);
	} else {
		plainLoop<O, T, false>(t, o, r, n);
	}
}

/*
 * Atomic: every element with one relaxed atomic RMW on its bits.
 *
 * Why relaxed everywhere: MPI asks accumulates to be atomic per element and,
 * for one origin and one location, ordered; both follow from each RMW being
 * atomic and from the location's single modification (coherence) order. No
 * other data is published through these words; the completion of an
 * operation is published by the caller (flush, unlock) with its own
 * release/acquire. On x86 every locked RMW is a full barrier anyway, so
 * relaxed costs nothing and promises only what we rely on.
 */
template <Op O, typename T> void atomicKernel(void *target, const void *origin, void *old, size_t n) noexcept
{
	using U = typename UintOf<sizeof(T)>::type;
	static_assert(sizeof(U) == sizeof(T));
	static_assert(std::atomic_ref<U>::is_always_lock_free, "a lock would not be shared between processes");
	static_assert(std::atomic_ref<U>::required_alignment == sizeof(U));

	U *t = static_cast<U *>(target);
	const Bytes *o = static_cast<const Bytes *>(origin);
	Bytes *r = static_cast<Bytes *>(old);
	for (size_t i = 0; i < n; ++i) {
		std::atomic_ref<U> a(t[i]);
		U prev;
		if constexpr (O == Op::NoOp) {
			if (!r)
				return;
			prev = a.load(std::memory_order_relaxed); /* relaxed: see above */
		} else if constexpr (O == Op::Replace) {
			U v = loadAt<U>(o, i);
			if (!r) {
				a.store(v,
					std::memory_order_relaxed); /* relaxed: see above; a store is atomic to RMWs */
				continue;
			}
			prev = a.exchange(v, std::memory_order_relaxed); /* relaxed: see above */
		} else if constexpr (O == Op::Sum && std::is_integral_v<T>) {
			prev = a.fetch_add(loadAt<U>(o, i), std::memory_order_relaxed); /* relaxed: see above */
		} else if constexpr (O == Op::Band) {
			prev = a.fetch_and(loadAt<U>(o, i), std::memory_order_relaxed); /* relaxed: see above */
		} else if constexpr (O == Op::Bor) {
			prev = a.fetch_or(loadAt<U>(o, i), std::memory_order_relaxed); /* relaxed: see above */
		} else if constexpr (O == Op::Bxor) {
			prev = a.fetch_xor(loadAt<U>(o, i), std::memory_order_relaxed); /* relaxed: see above */
		} else {
			/*
			 * Compare-exchange loop (floating point, MIN/MAX, PROD, logical ops):
			 *  1. prev is a value the word held (the load, or the CAS's reload);
			 *     next = op(prev, origin).
			 *  2. next == prev: the op leaves the word as it is; the update takes
			 *     effect at the read of prev (nothing to store, no line in
			 *     exclusive state: MIN/MAX that do not win cost one load).
			 *  3. The CAS succeeds: no write came between the read of prev and
			 *     the CAS, so next = op(value, origin) replaced value atomically.
			 *  4. The CAS fails (another writer, or spuriously): prev is reloaded
			 *     with the current value; back to 1. Lock-free: a failure means
			 *     another update succeeded (or a spurious failure).
			 * Relaxed: see above.
			 */
			T v = loadAt<T>(o, i);
			prev = a.load(std::memory_order_relaxed);
			for (;;) {
				U next = std::bit_cast<U>(combine<O>(std::bit_cast<T>(prev), v));
				if (next == prev || a.compare_exchange_weak(prev, next, std::memory_order_relaxed,
									    std::memory_order_relaxed))
					break;
			}
		}
		if (r)
			storeAt(r, i, prev);
	}
}

/* applyOp(): atomic when the target is aligned (then every element is), plain otherwise. */
template <Op O, typename T> void alignedAtomicKernel(void *target, const void *origin, void *old, size_t n) noexcept
{
	if ((reinterpret_cast<uintptr_t>(target) & (sizeof(T) - 1)) == 0)
		atomicKernel<O, T>(target, origin, old, n);
	else
		plainKernel<O, T>(target, origin, old, n);
}

template <Op O, typename V>
inline void pairOne(void *targetValue, void *targetIndex, const Bytes *origin, Bytes *old) noexcept
{
	V tv;
	int ti;
	std::memcpy(&tv, targetValue, sizeof(V));
	std::memcpy(&ti, targetIndex, sizeof(int));
	if (old) {
		std::memcpy(old, &tv, sizeof(V));
		std::memcpy(old + sizeof(V), &ti, sizeof(int));
	}
	if constexpr (O == Op::NoOp) {
		return;
	} else if constexpr (O == Op::Replace) {
		std::memmove(targetValue, origin, sizeof(V));
		std::memmove(targetIndex, origin + sizeof(V), sizeof(int));
	} else {
		V ov;
		int oi;
		std::memcpy(&ov, origin, sizeof(V));
		std::memcpy(&oi, origin + sizeof(V), sizeof(int));
		combineLoc<O>(tv, ti, ov, oi);
		std::memcpy(targetValue, &tv, sizeof(V));
		std::memcpy(targetIndex, &ti, sizeof(int));
	}
}

/* Pairs: n C structs in the target, packed (value, int) in origin and old; plain. */
template <Op O, typename P> void pairKernel(void *target, const void *origin, void *old, size_t n) noexcept
{
	using V = typename PairTraits<P>::Value;
	constexpr size_t packed = sizeof(V) + sizeof(int);
	Bytes *t = static_cast<Bytes *>(target);
	const Bytes *o = static_cast<const Bytes *>(origin);
	Bytes *r = static_cast<Bytes *>(old);
	for (size_t i = 0; i < n; ++i)
		pairOne<O, V>(t + i * sizeof(P) + offsetof(P, v), t + i * sizeof(P) + offsetof(P, i),
			      o ? o + i * packed : nullptr, r ? r + i * packed : nullptr);
}

void noKernel(void *, const void *, void *, size_t) noexcept
{
}

/* ---- Dispatch tables, built at compile time ----------------------------------- */

template <Op O, uint32_t E, bool Atomic> constexpr detail::KernelFn pick()
{
	if constexpr (!opAllowed(O, E)) {
		return &noKernel;
	} else {
		using T = typename ElemType<E>::type;
		if constexpr (PairTraits<T>::value)
			return &pairKernel<O, T>;
		else if constexpr (Atomic && hardwareAtomic(O, E))
			return &alignedAtomicKernel<O, T>;
		else
			return &plainKernel<O, T>;
	}
}

template <bool Atomic, size_t OpIndex, size_t... Es>
constexpr std::array<detail::KernelFn, kElemLimit> tableRow(std::index_sequence<Es...>)
{
	return { pick<static_cast<Op>(OpIndex), Es, Atomic>()... };
}

template <bool Atomic, size_t... Os> constexpr detail::KernelTable table(std::index_sequence<Os...>)
{
	return { tableRow<Atomic, Os>(std::make_index_sequence<kElemLimit>{})... };
}

} /* namespace */

} /* namespace librma */
