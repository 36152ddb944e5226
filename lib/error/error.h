/* SPDX-License-Identifier: MIT */
/*
 * Error codes with messages.
 *
 * A code is (serial << 6) | class: the class is MPI's (RMA_ERR_*), the serial
 * names a message kept in a process-wide table of the last kMessages errors.
 * makeError() is cold and may allocate: it runs only when a call fails.
 */
#pragma once

#include <string>

#include <rma/rma.h>

namespace librma {

inline constexpr int kClassBits = 6;
inline constexpr int kMessages = 256;
static_assert(RMA_ERR_LASTCODE < (1 << kClassBits));

/* Record a message for class @cls and return a code that carries it. */
[[gnu::cold, gnu::format(printf, 2, 3)]] int makeError(int cls, const char *fmt, ...);

/* Like makeError(), appending ": strerror(@err)" to the message. */
[[gnu::cold, gnu::format(printf, 3, 4)]] int makeErrnoError(int cls, int err, const char *fmt, ...);

/* The class of a code; -1 if @code is not a valid code. */
int errorClass(int code);

/* The message of a code: its own if still kept, else its class's generic one. */
std::string errorMessage(int code);

/* The generic text of a class. */
const char *className(int cls);

} /* namespace librma */
