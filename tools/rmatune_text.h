/* SPDX-License-Identifier: MIT */
/* Small text helpers rmatune's report and recommend share. */
#pragma once

#include <cstdio>
#include <string>

namespace rmatune {

/* The parts appended in order (appending: GCC 12 -O3 warns falsely on literal + string). */
template<typename... Parts>
std::string cat(const Parts &...parts)
{
	std::string s;
	(s.append(parts), ...);
	return s;
}

/* @v printed with one printf conversion, e.g. fmt("%.1f", x). */
inline std::string fmt(const char *format, double v)
{
	char b[64];
	std::snprintf(b, sizeof(b), format, v);
	return b;
}

} /* namespace rmatune */
