/* SPDX-License-Identifier: MIT */
/*
 * The datatype fuzz body (type_fuzz.h) over a fixed set of pseudo-random
 * inputs: a bounded, reproducible run in the unit suite. Longer runs use the
 * libFuzzer target (fuzz_main.cpp); see tests/datatype/meson.build.
 */
#include <gtest/gtest.h>

#include <random>
#include <vector>

#include "datatype/type_fuzz.h"

namespace {

constexpr int kInputs = 20000;

TEST(DatatypeFuzz, RandomNestedTypesAgreeWithTheReference)
{
	std::mt19937_64 rng(20240611);
	int failures = 0;
	for (int i = 0; i < kInputs && failures < 5; ++i) {
		std::vector<uint8_t> input(16 + rng() % 112);
		for (uint8_t &b : input)
			b = static_cast<uint8_t>(rng());
		std::string err = rmatest::fuzzTypes(input.data(), input.size());
		if (!err.empty()) {
			++failures;
			ADD_FAILURE() << "input " << i << ": " << err;
		}
	}
}

} /* namespace */
