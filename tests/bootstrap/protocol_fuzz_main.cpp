/* SPDX-License-Identifier: MIT */
/* libFuzzer entry point of the launcher-protocol fuzz body (protocol_fuzz.h); built with clang. */
#include <cstdio>
#include <cstdlib>

#include "bootstrap/protocol_fuzz.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	std::string err = rmatest::fuzzProtocol(data, size);
	if (!err.empty()) {
		std::fprintf(stderr, "protocol fuzz: %s\n", err.c_str());
		std::abort();
	}
	return 0;
}
