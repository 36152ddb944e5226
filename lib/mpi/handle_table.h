/* SPDX-License-Identifier: MIT */
/*
 * HandleTable: MPI handle -> object pointer, for the shim's hot path
 * (docs/design/mpi-dropin.md §4.1). One design serves windows and datatypes.
 *
 * Protocol:
 *  - Open addressing, power-of-two capacity, Fibonacci hash, linear probing.
 *  - A slot is {key, value}. key 0 means empty (no MPI handle of either ABI
 *    is 0: MPICH's kind bits 00 are "invalid", Open MPI's are pointers).
 *    A key, once written into a slot, stays there until the array is
 *    replaced; deleting stores a null value (a tombstone), and re-inserting
 *    the same key reuses its slot.
 *  - Writers (insert, erase, grow) are serialized by the caller (the shim's
 *    control mutex). Readers take no lock.
 *  - Growth copies the live entries into a new array and publishes it; the
 *    old array is retired, never freed before ~HandleTable(), so a reader
 *    that loaded the old array pointer never touches freed memory.
 *
 * Thread safety: find() is thread-safe against every other call. insert()
 * and erase() must be serialized with each other by the caller.
 */
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <type_traits>
#include <vector>

namespace rmampi {

/* The hash key of an MPI handle: the pointer (Open MPI) or the int (MPICH). */
template <typename Handle> inline uintptr_t handleKey(Handle h)
{
	if constexpr (std::is_pointer_v<Handle>)
		return reinterpret_cast<uintptr_t>(h);
	else
		return static_cast<uint32_t>(h);
}

template <typename T> class HandleTable
{
public:
	HandleTable() { slots_.store(allocate(64), std::memory_order_relaxed); }
	~HandleTable()
	{
		delete slots_.load(std::memory_order_relaxed);
		for (Array *a : retired_)
			delete a;
	}
	HandleTable(const HandleTable &) = delete;
	HandleTable &operator=(const HandleTable &) = delete;

	/* The object for @key, or nullptr. Lock-free; thread-safe. */
	T *find(uintptr_t key) const noexcept
	{
		/* A1: pairs with R1 in grow(); publishes the filled array. */
		const Array *a = slots_.load(std::memory_order_acquire);
		size_t mask = a->capacity - 1;
		for (size_t i = hash(key) & mask;; i = (i + 1) & mask) {
			/* A2: pairs with R2 in insert(); the key's value was written first. */
			uintptr_t k = a->slots[i].key.load(std::memory_order_acquire);
			if (k == key)
				/* A3: pairs with R3 in insert() (tombstone reuse) and erase(). */
				return a->slots[i].value.load(std::memory_order_acquire);
			if (k == 0)
				return nullptr;
		}
	}

	/* Map @key to @value (replaces an existing mapping). Writers serialized by the caller. */
	void insert(uintptr_t key, T *value)
	{
		Array *a = slots_.load(std::memory_order_relaxed);
		if (2 * (a->used + 1) > a->capacity)
			a = grow(a);
		Slot &s = probe(*a, key);
		if (s.key.load(std::memory_order_relaxed) == key) {
			/* R3: pairs with A3; a tombstone of the same key comes back to life. */
			s.value.store(value, std::memory_order_release);
			return;
		}
		s.value.store(value, std::memory_order_relaxed);
		/* R2: pairs with A2; the value above is visible before the key. */
		s.key.store(key, std::memory_order_release);
		a->used++;
	}

	/* Forget @key (a tombstone stays). Writers serialized by the caller. */
	void erase(uintptr_t key)
	{
		Array *a = slots_.load(std::memory_order_relaxed);
		Slot &s = probe(*a, key);
		if (s.key.load(std::memory_order_relaxed) == key)
			/* R3: pairs with A3. */
			s.value.store(nullptr, std::memory_order_release);
	}

	/* Every live value (control path; writers serialized by the caller). */
	std::vector<T *> values() const
	{
		std::vector<T *> out;
		const Array *a = slots_.load(std::memory_order_relaxed);
		for (size_t i = 0; i < a->capacity; i++)
			if (T *v = a->slots[i].value.load(std::memory_order_relaxed))
				out.push_back(v);
		return out;
	}

private:
	struct Slot {
		std::atomic<uintptr_t> key{ 0 };
		std::atomic<T *> value{ nullptr };
	};
	struct Array {
		size_t capacity = 0;
		size_t used = 0; /* slots with a key, tombstones included */
		Slot *slots = nullptr;
		~Array() { delete[] slots; }
	};

	static Array *allocate(size_t capacity)
	{
		Array *a = new Array;
		a->capacity = capacity;
		a->slots = new Slot[capacity];
		return a;
	}

	static size_t hash(uintptr_t key) noexcept
	{
		/* Fibonacci hashing: the high bits of key * 2^64/phi, folded down. */
		uint64_t h = static_cast<uint64_t>(key) * 0x9e3779b97f4a7c15ull;
		return static_cast<size_t>(h ^ (h >> 32));
	}

	/* The slot holding @key, or the empty slot where it would go. */
	static Slot &probe(Array &a, uintptr_t key)
	{
		size_t mask = a.capacity - 1;
		for (size_t i = hash(key) & mask;; i = (i + 1) & mask) {
			uintptr_t k = a.slots[i].key.load(std::memory_order_relaxed);
			if (k == key || k == 0)
				return a.slots[i];
		}
	}

	Array *grow(Array *old)
	{
		size_t live = 0;
		for (size_t i = 0; i < old->capacity; i++)
			live += old->slots[i].value.load(std::memory_order_relaxed) != nullptr;
		size_t capacity = old->capacity;
		while (4 * (live + 1) > capacity)
			capacity *= 2;
		Array *a = allocate(capacity);
		for (size_t i = 0; i < old->capacity; i++) {
			T *v = old->slots[i].value.load(std::memory_order_relaxed);
			if (!v)
				continue; /* tombstones are dropped here */
			uintptr_t k = old->slots[i].key.load(std::memory_order_relaxed);
			Slot &s = probe(*a, k);
			s.value.store(v, std::memory_order_relaxed);
			s.key.store(k, std::memory_order_relaxed);
			a->used++;
		}
		/* R1: pairs with A1 in find(); publishes the filled array. */
		slots_.store(a, std::memory_order_release);
		retired_.push_back(old);
		return a;
	}

	std::atomic<Array *> slots_{ nullptr };
	std::vector<Array *> retired_;
};

/*
 * FastMap: a fixed set of MPI handles -> values, direct-mapped, one probe
 * per lookup: the shim's predefined datatypes and ops (shim.h). Filled once,
 * before any reader exists (the shim: at init, before the program can make
 * another MPI call), and read-only after.
 *
 * Thread safety: find() is thread-safe once fill() has returned and the
 * readers were started after it; fill() is not thread-safe.
 *
 * Slot = top bits of key * mult_. Handles are addresses (Open MPI, so they
 * move with ASLR) or MPICH's packed integers, so fill() picks at run time a
 * multiplier under which no two keys share a slot: every predefined handle
 * is then one probe away. Should none be found, the first key keeps a
 * contested slot and the other is left to the caller's general path
 * (the shim's typeTable, opTable). An empty slot has key 0 (MPICH) or
 * nullptr (Open MPI), which no MPI handle is, except slot 0 (guardZero()).
 */
template <typename Handle, typename Value, unsigned Bits> class FastMap
{
public:
	/* True with @out set if @h is in the map. */
	bool find(Handle h, Value &out) const noexcept
	{
		const Slot &s = slots_[slot(h, mult_)];
		out = s.value;
		return s.key == h;
	}

	FastMap() noexcept { guardZero(); }

	/* Map every pair, no two on one slot if a multiplier allows it. Not thread-safe (see above). */
	template <typename Pairs> void fill(const Pairs &pairs) noexcept
	{
		uint64_t mult = 0x9e3779b97f4a7c15ull;
		for (int attempt = 0; attempt < 4096; attempt++, mult += 0x5851f42d4c957f2dull * 2) {
			Handle seen[kSlots] = {};
			bool clash = false;
			for (const auto &[h, v] : pairs) {
				size_t i = slot(h, mult | 1);
				clash |= seen[i] != Handle{} && seen[i] != h; /* one handle may be listed twice */
				seen[i] = h;
			}
			if (!clash)
				break;
		}
		mult_ = mult | 1;
		for (Slot &s : slots_)
			s = Slot{};
		for (const auto &[h, v] : pairs) {
			Slot &s = slots_[slot(h, mult_)];
			if (s.key == Handle{})
				s = { h, v };
		}
		guardZero();
	}

private:
	static constexpr size_t kSlots = size_t{ 1 } << Bits;
	struct Slot {
		Handle key{};
		Value value{};
	};
	static size_t slot(Handle h, uint64_t mult) noexcept
	{
		return static_cast<size_t>((static_cast<uint64_t>(handleKey(h)) * mult) >> (64 - Bits));
	}
	static Handle fromKey(uintptr_t key) noexcept
	{
		if constexpr (std::is_pointer_v<Handle>)
			return reinterpret_cast<Handle>(key);
		else
			return static_cast<Handle>(key);
	}
	/*
	 * Handle 0 (or nullptr) always lands on slot 0, so an empty slot 0 must
	 * not hold the empty key: it gets a key that lives on another slot, which
	 * no lookup reaching slot 0 can equal.
	 */
	void guardZero() noexcept
	{
		if (slots_[0].key != Handle{})
			return;
		uintptr_t k = 1;
		while (slot(fromKey(k), mult_) == 0)
			k++;
		slots_[0].key = fromKey(k);
	}

	uint64_t mult_ = 0x9e3779b97f4a7c15ull;
	Slot slots_[kSlots];
};

} /* namespace rmampi */
