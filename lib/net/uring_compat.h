/* SPDX-License-Identifier: MIT */
/*
 * What liburing 2.3's headers lack and the kernel has: the zero-copy send's
 * usage report (6.2: IORING_SEND_ZC_REPORT_USAGE) and the
 * IORING_OP_FUTEX_WAIT opcode (6.7) with its SQE layout (inter-host.md
 * §4.1). The build checks the header (config.h HAVE_IORING_OP_FUTEX_WAIT;
 * the report's flags are macros) and the local value is used only when the
 * symbol is missing. The kernel's ABI
 * for the op: addr = the futex word, addr2 = the expected value, addr3 =
 * the wake mask, fd = futex2 flags, everything else 0.
 */
#pragma once

#include <cstdint>
#include <cstring>

#include <liburing.h>

#include "config.h"

namespace librma::net::compat {

#if HAVE_IORING_OP_FUTEX_WAIT
inline constexpr int kOpFutexWait = IORING_OP_FUTEX_WAIT;
#else
inline constexpr int kOpFutexWait = 51;
#endif
#ifdef IORING_SEND_ZC_REPORT_USAGE
inline constexpr unsigned kSendZcReportUsage = IORING_SEND_ZC_REPORT_USAGE;
inline constexpr uint32_t kNotifUsageZcCopied = IORING_NOTIF_USAGE_ZC_COPIED;
#else
/* SEND_ZC's zc_flags (sqe->ioprio): make the notification report whether the data was copied. */
inline constexpr unsigned kSendZcReportUsage = 1u << 3;
/* In the notification's res: the kernel copied (some of) the data after all. */
inline constexpr uint32_t kNotifUsageZcCopied = 1u << 31;
#endif

/* futex2 flags: a 32-bit word, shared (no FUTEX2_PRIVATE: producers may be other processes). */
inline constexpr uint32_t kFutex2SizeU32 = 0x02;
inline constexpr uint64_t kFutexBitsetMatchAny = 0xffffffffu;

/* Fill @sqe as an IORING_OP_FUTEX_WAIT on @word while it holds @expected. */
inline void prepFutexWait(io_uring_sqe *sqe, const uint32_t *word, uint32_t expected)
{
	std::memset(sqe, 0, sizeof(*sqe));
	sqe->opcode = static_cast<uint8_t>(kOpFutexWait);
	sqe->fd = static_cast<int32_t>(kFutex2SizeU32);
	sqe->addr = reinterpret_cast<uint64_t>(word);
	sqe->off = expected; /* addr2 shares the union with off */
	sqe->addr3 = kFutexBitsetMatchAny;
}

} /* namespace librma::net::compat */
