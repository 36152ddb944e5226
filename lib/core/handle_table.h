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
 * Thread safety: insert() and remove() lock; lookup() does not (it reads
 * chunks that are never freed), so using a handle while another thread frees
 * it is the application's race, as in MPI.
 */
#pragma once

#include <array>
#include <atomic>
#include <cstdint>
#include <memory>
#include <mutex>
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

template<typename T, HandleKind Kind>
class HandleTable
{
public:
	static constexpr uint32_t kChunk = 256;
	static constexpr uint32_t kMaxChunks = 4096; /* a million live objects */

	/* Register a predefined object at @index (< kFirstDynamic). */
	void setPredefined(uint32_t index, std::shared_ptr<T> obj) { predefined_[index] = std::move(obj); }

	/* Store @obj; returns its handle, or 0 when the table is full. */
	uintptr_t insert(std::shared_ptr<T> obj)
	{
		std::lock_guard<std::mutex> guard(lock_);
		uint32_t index;
		if (!free_.empty()) {
			index = free_.back();
			free_.pop_back();
		} else {
			index = kFirstDynamic + next_;
			uint32_t chunk = next_ / kChunk;
			if (chunk >= kMaxChunks)
				return 0;
			if (!chunks_[chunk].load(std::memory_order_relaxed))
				/* Release: pairs with the acquire in slot(); publishes the chunk. */
				chunks_[chunk].store(new Chunk(), std::memory_order_release);
			++next_;
		}
		Slot &s = *slot(index);
		s.obj = std::move(obj);
		return (static_cast<uintptr_t>(s.tag) << 32) | index;
	}

	/*
	 * The object behind @h, or nullptr if @h is not a live handle of this
	 * kind. One compare checks kind and generation together: a slot keeps
	 * the upper half its live handle must have (tagOf).
	 */
	T *lookup(uintptr_t h) const
	{
		uint32_t index = static_cast<uint32_t>(h);
		uint32_t tag = static_cast<uint32_t>(h >> 32);
		if (index < kFirstDynamic) [[unlikely]]
			return tag == tagOf(0) ? predefined_[index].get() : nullptr;
		const Slot *s = slot(index);
		if (!s || s->tag != tag)
			return nullptr;
		return s->obj.get();
	}

	/* Like lookup(), sharing ownership. */
	std::shared_ptr<T> share(uintptr_t h) const
	{
		if (!lookup(h))
			return nullptr;
		uint32_t index = static_cast<uint32_t>(h);
		return index < kFirstDynamic ? predefined_[index] : slot(index)->obj;
	}

	static bool isPredefined(uintptr_t h) { return h != 0 && static_cast<uint32_t>(h) < kFirstDynamic; }

	/* Free a dynamic handle; returns the object (nullptr if @h is not live). */
	std::shared_ptr<T> remove(uintptr_t h)
	{
		std::lock_guard<std::mutex> guard(lock_);
		if (!lookup(h) || isPredefined(h))
			return nullptr;
		uint32_t index = static_cast<uint32_t>(h);
		Slot &s = *slot(index);
		std::shared_ptr<T> obj = std::move(s.obj);
		uint32_t generation = (s.tag + 1) & 0xffffff;
		s.tag = tagOf(generation == 0 ? 1 : generation);
		free_.push_back(index);
		return obj;
	}

	/* Every live dynamic object (for rma_finalize's clean-up). */
	std::vector<uintptr_t> liveHandles() const
	{
		std::lock_guard<std::mutex> guard(lock_);
		std::vector<uintptr_t> out;
		for (uint32_t i = 0; i < next_; ++i) {
			const Slot &s = *slot(kFirstDynamic + i);
			if (s.obj)
				out.push_back((static_cast<uintptr_t>(s.tag) << 32) | (kFirstDynamic + i));
		}
		return out;
	}

	constexpr HandleTable() = default;
	~HandleTable()
	{
		for (auto &c : chunks_)
			delete c.load(std::memory_order_relaxed);
	}

private:
	/* The upper 32 bits of a handle: kind, then generation (encodeHandle). */
	static constexpr uint32_t tagOf(uint32_t generation)
	{
		return static_cast<uint32_t>(encodeHandle(Kind, generation, 0) >> 32);
	}

	struct Slot {
		uint32_t tag = tagOf(1);
		std::shared_ptr<T> obj;
	};
	struct Chunk {
		std::array<Slot, kChunk> slots;
	};

	Slot *slot(uint32_t index) const
	{
		uint32_t i = index - kFirstDynamic;
		if (i / kChunk >= kMaxChunks)
			return nullptr;
		/* Acquire: pairs with the release in insert(). */
		Chunk *c = chunks_[i / kChunk].load(std::memory_order_acquire);
		return c ? &c->slots[i % kChunk] : nullptr;
	}

	mutable std::mutex lock_;
	uint32_t next_ = 0;
	std::vector<uint32_t> free_;
	std::array<std::shared_ptr<T>, kFirstDynamic> predefined_{};
	std::array<std::atomic<Chunk *>, kMaxChunks> chunks_{};
};

} /* namespace librma */
