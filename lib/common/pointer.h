/* SPDX-License-Identifier: MIT */
#pragma once

#include <cstdint>

namespace librma {

/*
 * A buffer address no valid call passes: NULL, or NULL plus a small offset
 * (a pointer into the first page, which Linux never maps). Costs what a NULL
 * test costs. Other wild pointers cannot all be caught (rma.h says so).
 */
inline bool badPointer(const void *p)
{
	return reinterpret_cast<uintptr_t>(p) < 4096;
}

} /* namespace librma */
