/* SPDX-License-Identifier: MIT */
/* libFuzzer entry point of the datatype fuzz body (type_fuzz.h); built with clang. */
#include <cstdio>
#include <cstdlib>

#include "datatype/type_fuzz.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	std::string err = rmatest::fuzzTypes(data, size);
	if (!err.empty()) {
		std::fprintf(stderr, "datatype fuzz: %s\n", err.c_str());
		std::abort();
	}
	return 0;
}
