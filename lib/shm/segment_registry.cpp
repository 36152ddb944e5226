/* SPDX-License-Identifier: MIT */
#include "shm/segment.h"

namespace librma {

SegmentRegistry &SegmentRegistry::instance()
{
	static SegmentRegistry registry;
	return registry;
}

void *SegmentRegistry::add(Segment segment)
{
	std::byte *base = segment.data();
	if (!base)
		return nullptr;
	std::lock_guard<std::mutex> guard(lock_);
	segments_.emplace(reinterpret_cast<std::uintptr_t>(base), std::move(segment));
	return base;
}

bool SegmentRegistry::remove(void *base)
{
	/* Unmap outside the lock: munmap of a large segment takes a while. */
	Segment dropped;
	{
		std::lock_guard<std::mutex> guard(lock_);
		auto it = segments_.find(reinterpret_cast<std::uintptr_t>(base));
		if (it == segments_.end())
			return false;
		dropped = std::move(it->second);
		segments_.erase(it);
	}
	return true;
}

std::optional<SegmentRegistry::Hit> SegmentRegistry::find(const void *p, std::size_t len) const
{
	std::uintptr_t address = reinterpret_cast<std::uintptr_t>(p);
	std::lock_guard<std::mutex> guard(lock_);
	/* The last segment based at or below @p is the only candidate. */
	auto it = segments_.upper_bound(address);
	if (it == segments_.begin())
		return std::nullopt;
	--it;
	std::size_t offset = address - it->first;
	std::size_t size = it->second.size();
	/* Written to avoid overflow of p + len. */
	if (offset >= size || len > size - offset)
		return std::nullopt;
	return Hit{ &it->second, offset };
}

} /* namespace librma */
