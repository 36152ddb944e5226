/* SPDX-License-Identifier: MIT */
/*
 * Little-endian loads and stores at any alignment: the wire is
 * little-endian whatever the host is. Header-only; noexcept, thread-safe.
 */
#pragma once

#include <bit>
#include <cstdint>
#include <cstring>

namespace librma::net::le {

template<typename T>
inline T load(const uint8_t *p) noexcept
{
	T v;
	std::memcpy(&v, p, sizeof(T));
	if constexpr (std::endian::native == std::endian::big && sizeof(T) > 1)
		v = static_cast<T>(__builtin_bswap64(static_cast<uint64_t>(v)) >> (64 - 8 * sizeof(T)));
	return v;
}

template<typename T>
inline void store(uint8_t *p, T v) noexcept
{
	if constexpr (std::endian::native == std::endian::big && sizeof(T) > 1)
		v = static_cast<T>(__builtin_bswap64(static_cast<uint64_t>(v)) >> (64 - 8 * sizeof(T)));
	std::memcpy(p, &v, sizeof(T));
}

} /* namespace librma::net::le */
