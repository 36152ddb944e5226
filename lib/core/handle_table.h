/* SPDX-License-Identifier: MIT */
/*
 * Handles: the values behind rma_win, rma_comm, ... in the C API.
 *
 * A handle is (kind << 56) | (generation << 32) | index. Index 1..255 with
 * generation 0 are predefined objects (RMA_COMM_WORLD, RMA_INT, ...);
 * dynamic objects live at index >= kFirstDynamic with a generation that is
 * bumped when the object is freed, so a stale copy of a freed handle is
 * recognised instead of reaching reused memory.
 *
 * Slots live in chunks of 256 made on first use (a million objects at
 * most), or, for a table given FlatSlots, in one array inside the table:
 * a lookup then has no chunk to load and test (the window table, looked up
 * by every put, get and flush; FlatSlots objects at most).
 *
 * Thread safety: insert(), remove() and setPredefined() lock; lookup() does
 * not (it reads chunks that are never freed), so using a handle while
 * another thread frees it is the application's race, as in MPI.
 */
#pragma once

#include <array>
#include <atomic>
#include <cassert>
#include <cstdint>
#include <memory>
#include <mutex>
#include <type_traits>
#include <vector>

namespace librma {

enum class HandleKind : uint8_t {
	Comm = 1,
	Group = 2,
	Win = 3,
	Datatype = 4,
	Info = 5,
	Errhandler = 6,
	Request = 7,
};

inline constexpr uint32_t kFirstDynamic = 256;

constexpr uintptr_t encodeHandle(HandleKind kind, uint32_t generation, uint32_t index)
{
	return (static_cast<uintptr_t>(kind) << 56) | (static_cast<uintptr_t>(generation & 0xffffff) << 32) |
	       index;
}

template<typename T, HandleKind Kind, uint32_t FlatSlots = 0>
class HandleTable
{
public:
	/* Slots per chunk; chunk 0 holds the predefined objects (index < kFirstDynamic). */
	static constexpr uint32_t kChunk = 256;
	static constexpr uint32_t kMaxChunks = 4096; /* a million live objects */
	static_assert(kFirstDynamic == kChunk, "predefined objects fill chunk 0 exactly");
	static constexpr bool kFlat = FlatSlots != 0;
	static_assert(!kFlat || (FlatSlots > kFirstDynamic && (FlatSlots & (FlatSlots - 1)) == 0),
		      "a flat table holds the predefined slots and a power of two in all");
	/* Slots in all (predefined ones included). */
	static constexpr uint32_t kCapacity = kFlat ? FlatSlots : kMaxChunks * kChunk;

	/*
	 * Register a predefined object at @index (1 .. kFirstDynamic - 1; 0 is
	 * the null handle's). Callers pass librma's own constants: an index
	 * outside that range is a librma bug, caught by the assertion in
	 * checked builds and ignored (the object stays unreachable) otherwise.
	 */
	void setPredefined(uint32_t index, std::shared_ptr<T> obj)
	{
		assert(index != 0 && index < kFirstDynamic && "predefined handle index out of range");
		if (index == 0 || index >= kFirstDynamic)
			return;
		std::lock_guard<std::mutex> guard(lock_);
		Slot &s = makeSlot(index);
		s.obj = std::move(obj);
		/* Relaxed: as in insert(). */
		s.handle.store(encodeHandle(Kind, 0, index), std::memory_order_relaxed);
	}

	/* Store @obj; returns its handle, or 0 when the table is full. */
	uintptr_t insert(std::shared_ptr<T> obj)
	{
		std::lock_guard<std::mutex> guard(lock_);
		uint32_t index;
		if (!free_.empty()) {
			index = free_.back();
			free_.pop_back();
		} else {
			if (kFirstDynamic + next_ >= kCapacity)
				return 0;
			index = kFirstDynamic + next_++;
		}
		Slot &s = makeSlot(index);
		s.obj = std::move(obj);
		const uintptr_t h = encodeHandle(Kind, s.bumps + 1, index);
		/*
		 * Relaxed: the handle reaches other threads through the program,
		 * whose hand-over orders it (a lookup racing its own insert or
		 * remove is the application's race, as in MPI).
		 */
		s.handle.store(h, std::memory_order_relaxed);
		return h;
	}

	/*
	 * The object behind @h, or nullptr if @h is not a live handle of this
	 * kind: one chunk load and one compare of the whole handle (kind,
	 * generation and index together; index bits past the table, and
	 * garbage, match no slot's handle). Lock-free; no branch for
	 * predefined objects, which live in chunk 0.
	 */
	T *lookup(uintptr_t h) const
	{
		const Slot *s;
		if constexpr (kFlat) {
			s = &store_[h % FlatSlots];
		} else {
			/* Acquire: pairs with the release in makeSlot(); the chunk's slots are initialized. */
			const Chunk *c = store_[(h / kChunk) % kMaxChunks].load(std::memory_order_acquire);
			if (!c) [[unlikely]]
				return nullptr;
			s = &c->slots[h % kChunk];
		}
		/* Relaxed: see insert(). A free slot holds 0 and no object (so does slot 0: h == 0 finds nullptr). */
		return s->handle.load(std::memory_order_relaxed) == h ? s->obj.get() : nullptr;
	}

	/* Like lookup(), sharing ownership. */
	std::shared_ptr<T> share(uintptr_t h) const
	{
		if (!lookup(h))
			return nullptr;
		return slotOf(static_cast<uint32_t>(h)).obj;
	}

	static bool isPredefined(uintptr_t h) { return h != 0 && static_cast<uint32_t>(h) < kFirstDynamic; }

	/* Free a dynamic handle; returns the object (nullptr if @h is not live). */
	std::shared_ptr<T> remove(uintptr_t h)
	{
		std::lock_guard<std::mutex> guard(lock_);
		if (!lookup(h) || isPredefined(h))
			return nullptr;
		uint32_t index = static_cast<uint32_t>(h);
		Slot &s = slotOf(index);
		std::shared_ptr<T> obj = std::move(s.obj);
		/* Relaxed: see insert(). */
		s.handle.store(0, std::memory_order_relaxed);
		/* Generations 1 .. 2^24 - 1 (0 is the predefined objects'), then 1 again. */
		s.bumps = (s.bumps + 1) % 0xffffff;
		free_.push_back(index);
		return obj;
	}

	/* Every live dynamic object (for rma_finalize's clean-up). */
	std::vector<uintptr_t> liveHandles() const
	{
		std::lock_guard<std::mutex> guard(lock_);
		std::vector<uintptr_t> out;
		for (uint32_t i = 0; i < next_; ++i) {
			const Slot &s = slotOf(kFirstDynamic + i);
			if (s.obj)
				out.push_back(s.handle.load(std::memory_order_relaxed));
		}
		return out;
	}

	constexpr HandleTable() = default;
	~HandleTable()
	{
		if constexpr (!kFlat)
			for (auto &c : store_)
				delete c.load(std::memory_order_relaxed);
	}

private:
	/*
	 * All zero when free, so that a flat table (constant-initialized in
	 * .bss) takes no memory until its pages are used.
	 */
	struct Slot {
		std::atomic<uintptr_t> handle{ 0 }; /* the live handle; 0 while free */
		uint32_t bumps = 0;                 /* times freed: the next handle's generation is bumps + 1 */
		std::shared_ptr<T> obj;
	};
	struct Chunk {
		std::array<Slot, kChunk> slots;
	};

	/* The slot at @index, its chunk made on first use (lock_ held). */
	Slot &makeSlot(uint32_t index)
	{
		if constexpr (kFlat) {
			return store_[index];
		} else {
			std::atomic<Chunk *> &cp = store_[index / kChunk];
			Chunk *c = cp.load(std::memory_order_relaxed);
			if (!c) {
				c = new Chunk();
				/* Release: pairs with the acquire in lookup(); publishes the chunk's initialized slots. */
				cp.store(c, std::memory_order_release);
			}
			return c->slots[index % kChunk];
		}
	}

	/* The slot of a live @index (its chunk exists). */
	Slot &slotOf(uint32_t index) const
	{
		if constexpr (kFlat)
			return const_cast<Slot &>(store_[index]);
		else
			return store_[index / kChunk].load(std::memory_order_acquire)->slots[index % kChunk];
	}

	mutable std::mutex lock_;
	uint32_t next_ = 0;
	std::vector<uint32_t> free_;
	/* The slots themselves (flat), or the chunks' addresses. */
	std::conditional_t<kFlat, std::array<Slot, FlatSlots>, std::array<std::atomic<Chunk *>, kMaxChunks>> store_{};
};

} /* namespace librma */
