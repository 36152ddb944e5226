/* SPDX-License-Identifier: MIT */
#include "shm/segment.h"

#include <algorithm>
#include <fstream>
#include <string>

#include "error/error.h"

namespace librma {

namespace {

constexpr const char *kPool = "/sys/kernel/mm/hugepages/hugepages-2048kB/";

/* A counter of the 2 MiB pool; 0 when the kernel has no such pool. */
std::size_t readPoolCounter(const char *name)
{
	std::ifstream in(std::string(kPool) + name);
	std::size_t value = 0;
	if (!(in >> value))
		return 0;
	return value;
}

} /* namespace */

std::size_t freeHugePages()
{
	/* Reserved pages are free but promised to mappings that exist already. */
	std::size_t free = readPoolCounter("free_hugepages");
	if (free == 0)
		return 0; /* an empty pool (the usual case) costs one read, not two */
	std::size_t reserved = readPoolCounter("resv_hugepages");
	return free > reserved ? free - reserved : 0;
}

Result<HugePages> parseHugePages(std::string_view text)
{
	if (text == "prefer")
		return HugePages::Prefer;
	if (text == "require")
		return HugePages::Require;
	if (text == "off")
		return HugePages::Off;
	constexpr size_t kQuoteMax = 64;
	return Result<HugePages>::failure(makeError(
		RMA_ERR_INFO_VALUE, "huge pages \"%.*s\"%s: expected prefer, require or off",
		static_cast<int>(std::min(text.size(), kQuoteMax)), text.data(), text.size() > kQuoteMax ? "..." : ""));
}

} /* namespace librma */
