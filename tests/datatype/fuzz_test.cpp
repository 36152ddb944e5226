/* SPDX-License-Identifier: MIT */
/*
 * The datatype fuzz body (type_fuzz.h) over a fixed set of pseudo-random
 * inputs: a bounded, reproducible run in the unit suite. Longer runs use the
 * libFuzzer target (fuzz_main.cpp); see tests/datatype/meson.build.
 */
#include <gtest/gtest.h>

#include <random>
#include <string>
#include <vector>

#include "datatype/datatype.h"
#include "datatype/type_fuzz.h"

namespace {

constexpr int kInputs = 20000;

/* Run the fuzz body over @n pseudo-random inputs from @seed; stop after 5 failures. */
void fuzzInputs(uint64_t seed, int n, const std::string &label)
{
	std::mt19937_64 rng(seed);
	int failures = 0;
	for (int i = 0; i < n && failures < 5; ++i) {
		std::vector<uint8_t> input(16 + rng() % 112);
		for (uint8_t &b : input)
			b = static_cast<uint8_t>(rng());
		std::string err = rmatest::fuzzTypes(input.data(), input.size());
		if (!err.empty()) {
			++failures;
			ADD_FAILURE() << label << "input " << i << ": " << err;
		}
	}
}

TEST(DatatypeFuzz, RandomNestedTypesAgreeWithTheReference)
{
	fuzzInputs(20240611, kInputs, "");
}

/*
 * The same with the flattening limit lowered, so that types (all of them at
 * 0, the larger ones at 1 and 3) are committed lazy and walked from their
 * recipes, alone and inside flattened parents.
 */
TEST(DatatypeFuzz, LazyTypesWalkedFromTheirRecipesAgreeWithTheReference)
{
	size_t &limit = librma::flattenNodeLimit();
	const size_t saved = limit;
	for (size_t lowered : { size_t(0), size_t(1), size_t(3) }) {
		limit = lowered;
		fuzzInputs(20240611 + lowered, kInputs / 4, "limit " + std::to_string(lowered) + ", ");
	}
	limit = saved;
}

} /* namespace */
