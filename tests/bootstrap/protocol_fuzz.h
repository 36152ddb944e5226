/* SPDX-License-Identifier: MIT */
/*
 * The fuzz body for the launcher's side of the bootstrap protocol: arbitrary
 * bytes become packets that ranks send to the launcher, which receives them
 * with recvPacket() and hands complete messages to the GatherServer exactly
 * as lib/bootstrap/launcher.cpp does. Shared by the libFuzzer target
 * (protocol_fuzz_main.cpp, built with clang) and a unit test over fixed inputs.
 */
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

namespace rmatest {

/* Run one input; returns "" or a description of a broken invariant. */
std::string fuzzProtocol(const uint8_t *data, std::size_t size);

} /* namespace rmatest */
