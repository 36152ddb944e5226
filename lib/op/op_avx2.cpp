/* SPDX-License-Identifier: MIT */
/*
 * The plain reduction kernels again, compiled for AVX2 (32-byte vectors):
 * op.cpp switches applyOpPlain() to this table at load time on CPUs that
 * have AVX2. kernels.h is included under the target pragma, so only its
 * internal-linkage templates are AVX2 code; the standard headers it uses
 * are included first, for the baseline ISA.
 *
 * int32 SUM, CPU time per call (build/bench/op_bench --benchmark_filter=
 * Int32SumPlainIsa, medians of 5): 256 elements 17.6 -> 10.2 ns, 4 Ki
 * 280 -> 165 ns, 16 Ki 1156 -> 817 ns; past the caches memory decides.
 */
#include <array>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <type_traits>
#include <utility>

#include "op/op.h"

#if defined(__clang__)
#pragma clang attribute push(__attribute__((target("avx2"))), apply_to = function)
#else
#pragma GCC push_options
#pragma GCC target("avx2")
#endif

#include "op/kernels.h"

namespace librma::detail {

constinit const KernelTable kPlainKernelsAvx2 = table<false>(std::make_index_sequence<kOpLimit>{});

} /* namespace librma::detail */

#if defined(__clang__)
#pragma clang attribute pop
#else
#pragma GCC pop_options
#endif
