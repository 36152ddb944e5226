/* SPDX-License-Identifier: MIT */
/*
 * Strict CPU lists ("0-3,8"): what RMA_PROGRESS_CORE and placement files
 * take. Unlike numa's lenient parseCpuList() (for sysfs text, which skips
 * what it cannot read), any malformed item makes the whole list invalid.
 */
#pragma once

#include <algorithm>
#include <charconv>
#include <optional>
#include <string_view>
#include <vector>

namespace librma {

/* The largest CPU number a strict list accepts. */
inline constexpr int kMaxListedCpu = 1 << 22;

/*
 * Sorted, unique CPUs of @text; std::nullopt on any malformed item, a
 * descending range, a number above kMaxListedCpu or an empty list.
 */
inline std::optional<std::vector<int>> parseCpuListStrict(std::string_view text)
{
	auto number = [](std::string_view s, int &value) {
		const char *end = s.data() + s.size();
		auto [ptr, ec] = std::from_chars(s.data(), end, value);
		return !s.empty() && ec == std::errc() && ptr == end && value >= 0 && value <= kMaxListedCpu;
	};
	std::vector<int> cpus;
	if (text.empty())
		return std::nullopt;
	while (true) {
		std::size_t comma = text.find(',');
		std::string_view item = text.substr(0, comma);
		std::size_t dash = item.find('-');
		int first, last;
		if (dash == std::string_view::npos) {
			if (!number(item, first))
				return std::nullopt;
			last = first;
		} else if (!number(item.substr(0, dash), first) || !number(item.substr(dash + 1), last) ||
			   last < first || last - first > (1 << 20)) {
			return std::nullopt;
		}
		for (int cpu = first; cpu <= last; ++cpu)
			cpus.push_back(cpu);
		if (comma == std::string_view::npos)
			break;
		text.remove_prefix(comma + 1);
	}
	std::sort(cpus.begin(), cpus.end());
	cpus.erase(std::unique(cpus.begin(), cpus.end()), cpus.end());
	return cpus;
}

} /* namespace librma */
