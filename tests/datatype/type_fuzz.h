/* SPDX-License-Identifier: MIT */
/*
 * The datatype fuzz body, shared by the libFuzzer target (fuzz_main.cpp,
 * built with clang) and a bounded deterministic run in the unit suite
 * (fuzz_test.cpp): random nested types are built from the input bytes and
 * the engine's summaries, flattening, copies, iovec walks, signature
 * matching, overlap checks, footprints and element counts are compared with
 * the naive reference expansion (type_map_reference.h).
 *
 * Uses only the engine (lib/datatype and lib/error), never the runtime.
 */
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

namespace rmatest {

/* Run one input; returns "" when the engine agrees with the reference, else what differs. */
std::string fuzzTypes(const uint8_t *data, size_t size);

} /* namespace rmatest */
