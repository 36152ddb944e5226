/* SPDX-License-Identifier: MIT */
#include "progress/directory.h"

#include <cstring>

namespace librma {

static_assert(sizeof(ServedTarget) <= sizeof(ServedEntry::words));
static_assert(std::is_trivially_copyable_v<ServedTarget>);

int ServedDirectory::publish(const ServedTarget &t) noexcept
{
	uint64_t words[ServedEntry::kWords] = {};
	std::memcpy(words, &t, sizeof(t));
	for (uint32_t i = 0; i < kEntries; ++i) {
		ServedEntry &e = entries_[i];
		uint64_t free = 0;
		/* Relaxed look first: most entries of a busy host are taken. */
		if (e.state.load(std::memory_order_relaxed) != 0)
			continue;
		/* Acquire: pairs with the release store of 0 in withdraw(); the previous owner is done with it. */
		if (!e.state.compare_exchange_strong(free, 1, std::memory_order_acquire, std::memory_order_relaxed))
			continue;
		/*
		 * The seqlock writer's fence: a reader whose relaxed payload load
		 * sees one of the stores below synchronizes (its acquire fence)
		 * with this one, so its S2 sees state 1 or later and drops the copy.
		 */
		std::atomic_thread_fence(std::memory_order_release);
		for (std::size_t w = 0; w < ServedEntry::kWords; ++w)
			e.words[w].store(words[w], std::memory_order_relaxed); /* ordered by the release below */
		/* Relaxed: a unique number, no data hangs on it. Even and non-zero. */
		const uint64_t gen = header_->generation.fetch_add(1, std::memory_order_relaxed) + 1;
		/* Release: pairs with the acquire load S1 in read(); publishes the payload. */
		e.state.store(2 * gen, std::memory_order_release);
		/* Release: pairs with the acquire in changes(); the entry's new state comes first. */
		header_->changes.fetch_add(1, std::memory_order_release);
		return static_cast<int>(i);
	}
	return -1;
}

void ServedDirectory::withdraw(int index) noexcept
{
	if (index < 0 || static_cast<uint32_t>(index) >= kEntries)
		return;
	ServedEntry &e = entries_[index];
	/* Odd: a reader whose copy overlaps sees its S2 differ from S1. Relaxed: no payload changes here. */
	e.state.store(1, std::memory_order_relaxed);
	/* Release: pairs with the acquire CAS of the next publish(); we are done with the entry. */
	e.state.store(0, std::memory_order_release);
	/* Release: pairs with the acquire in changes(). */
	header_->changes.fetch_add(1, std::memory_order_release);
}

bool ServedDirectory::read(int index, ServedTarget &out, uint64_t &state) const noexcept
{
	if (index < 0 || static_cast<uint32_t>(index) >= kEntries)
		return false;
	const ServedEntry &e = entries_[index];
	/* S1. Acquire: pairs with the release store of the even state in publish(). */
	const uint64_t s1 = e.state.load(std::memory_order_acquire);
	if (s1 == 0 || (s1 & 1))
		return false;
	uint64_t words[ServedEntry::kWords];
	for (std::size_t w = 0; w < ServedEntry::kWords; ++w)
		words[w] = e.words[w].load(std::memory_order_relaxed);
	/* The payload loads above come before S2 (the seqlock reader's fence). */
	std::atomic_thread_fence(std::memory_order_acquire);
	/* S2. Relaxed: ordered by the fence. */
	if (e.state.load(std::memory_order_relaxed) != s1)
		return false;
	std::memcpy(&out, words, sizeof(out));
	state = s1;
	return true;
}

} /* namespace librma */
