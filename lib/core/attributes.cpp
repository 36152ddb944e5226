/* SPDX-License-Identifier: MIT */
/* Keyvals and the attributes cached on objects (MPI's caching). */
#include "core/core.h"

#include <algorithm>

namespace librma {

int KeyvalRegistry::create(std::shared_ptr<Keyval> keyval)
{
	std::lock_guard<std::mutex> guard(lock_);
	if (nextSerial_ > kMaxSerial)
		return 0;
	int id = static_cast<int>((1u << 30) | (static_cast<uint32_t>(keyval->kind) << 24) | nextSerial_++);
	keyvals_.emplace(id, std::move(keyval));
	return id;
}

std::shared_ptr<Keyval> KeyvalRegistry::find(Keyval::Kind kind, int id)
{
	std::lock_guard<std::mutex> guard(lock_);
	auto it = keyvals_.find(id);
	if (it == keyvals_.end() || it->second->kind != kind)
		return nullptr;
	if (it->second->freed && it->second.use_count() == 1) {
		/* Freed, and the last attribute that held it is gone. */
		keyvals_.erase(it);
		return nullptr;
	}
	return it->second;
}

bool KeyvalRegistry::free(Keyval::Kind kind, int id)
{
	std::lock_guard<std::mutex> guard(lock_);
	auto it = keyvals_.find(id);
	if (it == keyvals_.end() || it->second->kind != kind || it->second->freed)
		return false;
	it->second->freed = true;
	if (it->second.use_count() == 1)
		keyvals_.erase(it);
	return true;
}

const AttributeSet::Entry *AttributeSet::find(int keyval) const
{
	auto it = std::find_if(entries_.begin(), entries_.end(), [&](const Entry &e) { return e.keyval == keyval; });
	return it == entries_.end() ? nullptr : &*it;
}

void AttributeSet::set(int keyval, std::shared_ptr<Keyval> key, void *value)
{
	erase(keyval);
	entries_.push_back(Entry{ keyval, std::move(key), value });
}

bool AttributeSet::erase(int keyval)
{
	auto it = std::find_if(entries_.begin(), entries_.end(), [&](const Entry &e) { return e.keyval == keyval; });
	if (it == entries_.end())
		return false;
	entries_.erase(it);
	return true;
}

} /* namespace librma */
