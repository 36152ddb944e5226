/* SPDX-License-Identifier: MIT */
/*
 * The launcher-protocol fuzz body (protocol_fuzz.h) over fixed inputs: the
 * unit suite's bounded, reproducible run. Longer runs use the libFuzzer
 * target (protocol_fuzz_main.cpp; see tests/bootstrap/meson.build).
 */
#include <gtest/gtest.h>

#include <cstring>
#include <random>
#include <vector>

#include "bootstrap/protocol.h"
#include "bootstrap/protocol_fuzz.h"

namespace {

using namespace librma;

/* One record of the fuzz input: [rank][kind][len lo][len hi][bytes]. */
void record(std::vector<uint8_t> &in, int rank, int kind, const void *bytes, std::size_t n)
{
	in.push_back(static_cast<uint8_t>(rank));
	in.push_back(static_cast<uint8_t>(kind));
	in.push_back(static_cast<uint8_t>(n & 0xff));
	in.push_back(static_cast<uint8_t>(n >> 8));
	const auto *b = static_cast<const uint8_t *>(bytes);
	in.insert(in.end(), b, b + n);
}

/* A two-rank allgather, well formed, each member contributing @len bytes. */
std::vector<uint8_t> wellFormedGather(uint64_t len)
{
	std::vector<uint8_t> in{ 1 }; /* 2 ranks */
	for (int r = 0; r < 2; ++r) {
		std::vector<uint8_t> body(sizeof(boot::GatherRequest) + len, static_cast<uint8_t>(r));
		boot::GatherRequest g{ boot::MsgType::Gather, 2, 7, 1, len, r, 0 };
		std::memcpy(body.data(), &g, sizeof(g));
		record(in, r, 1, body.data(), body.size());
	}
	return in;
}

TEST(ProtocolFuzz, WellFormedAndTruncatedGathersKeepTheServerConsistent)
{
	for (uint64_t len : { 0, 1, 64, 4000 }) {
		std::vector<uint8_t> in = wellFormedGather(len);
		EXPECT_EQ(rmatest::fuzzProtocol(in.data(), in.size()), "") << "len " << len;
		/* Every prefix: messages cut anywhere, ranks that never arrive. */
		for (std::size_t cut = 0; cut < in.size(); cut += 1 + cut / 8)
			EXPECT_EQ(rmatest::fuzzProtocol(in.data(), cut), "") << "len " << len << " cut " << cut;
	}
}

TEST(ProtocolFuzz, RandomPacketsNeverBreakTheServer)
{
	std::mt19937_64 rng(20261124);
	int failures = 0;
	for (int i = 0; i < 3000 && failures < 5; ++i) {
		std::vector<uint8_t> input = (i % 3 == 0) ? wellFormedGather(rng() % 128) : std::vector<uint8_t>{};
		std::size_t extra = 8 + rng() % 200;
		for (std::size_t k = 0; k < extra; ++k)
			input.push_back(static_cast<uint8_t>(rng()));
		/* Flip a few bytes of the well-formed part too. */
		for (int f = 0; f < 3 && !input.empty(); ++f)
			input[rng() % input.size()] ^= static_cast<uint8_t>(1u << (rng() % 8));
		std::string err = rmatest::fuzzProtocol(input.data(), input.size());
		if (!err.empty()) {
			++failures;
			ADD_FAILURE() << "input " << i << ": " << err;
		}
	}
}

} /* namespace */
