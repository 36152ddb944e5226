/* SPDX-License-Identifier: MIT */
#include "error/error.h"

#include <cerrno>
#include <cstdarg>
#include <cstdio>
#include <cstring>
#include <mutex>

namespace librma {

namespace {

struct Entry {
	int code = 0;
	char text[RMA_MAX_ERROR_STRING] = {};
};

struct MessageTable {
	std::mutex lock;
	unsigned next = 1; /* serial 0 means "bare class" */
	bool wrapped = false; /* every serial has been handed out once */
	Entry entries[kMessages];
};

MessageTable &table()
{
	static MessageTable t;
	return t;
}

int record(int cls, const char *fmt, va_list ap, int err)
{
	MessageTable &t = table();
	std::lock_guard<std::mutex> guard(t.lock);
	unsigned serial = t.next;
	/* Serials stay positive in an int after the shift; skip 0 on wrap. */
	t.next = (t.next + 1) & ((1u << (31 - kClassBits)) - 1);
	if (t.next == 0) {
		t.next = 1;
		t.wrapped = true;
	}
	int code = static_cast<int>((serial << kClassBits) | static_cast<unsigned>(cls));
	Entry &e = t.entries[serial % kMessages];
	e.code = code;
	int n = std::vsnprintf(e.text, sizeof(e.text), fmt, ap);
	if (err != 0 && n >= 0 && static_cast<size_t>(n) < sizeof(e.text))
		std::snprintf(e.text + n, sizeof(e.text) - n, ": %s", std::strerror(err));
	return code;
}

} /* namespace */

int makeError(int cls, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	int code = record(cls, fmt, ap, 0);
	va_end(ap);
	return code;
}

int makeErrnoError(int cls, int err, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	int code = record(cls, fmt, ap, err);
	va_end(ap);
	return code;
}

int errorClass(int code)
{
	if (code < 0)
		return -1;
	int cls = code & ((1 << kClassBits) - 1);
	if (cls >= RMA_ERR_LASTCODE)
		return -1;
	/* A code with a serial is one this process made: a serial never handed out is not a librma code. */
	unsigned serial = static_cast<unsigned>(code) >> kClassBits;
	if (serial != 0) {
		MessageTable &t = table();
		std::lock_guard<std::mutex> guard(t.lock);
		if (!t.wrapped && serial >= t.next)
			return -1;
	}
	return cls;
}

const char *className(int cls)
{
	switch (cls) {
	case RMA_SUCCESS: return "RMA_SUCCESS: no error";
	case RMA_ERR_BUFFER: return "RMA_ERR_BUFFER: invalid buffer pointer";
	case RMA_ERR_COUNT: return "RMA_ERR_COUNT: invalid count argument";
	case RMA_ERR_TYPE: return "RMA_ERR_TYPE: invalid datatype";
	case RMA_ERR_TAG: return "RMA_ERR_TAG: invalid tag";
	case RMA_ERR_COMM: return "RMA_ERR_COMM: invalid communicator";
	case RMA_ERR_RANK: return "RMA_ERR_RANK: invalid rank";
	case RMA_ERR_REQUEST: return "RMA_ERR_REQUEST: invalid request";
	case RMA_ERR_GROUP: return "RMA_ERR_GROUP: invalid group";
	case RMA_ERR_OP: return "RMA_ERR_OP: invalid reduction operation";
	case RMA_ERR_ARG: return "RMA_ERR_ARG: invalid argument";
	case RMA_ERR_UNKNOWN: return "RMA_ERR_UNKNOWN: unknown error";
	case RMA_ERR_TRUNCATE: return "RMA_ERR_TRUNCATE: message truncated";
	case RMA_ERR_OTHER: return "RMA_ERR_OTHER: other error";
	case RMA_ERR_INTERN: return "RMA_ERR_INTERN: internal error";
	case RMA_ERR_PENDING: return "RMA_ERR_PENDING: pending request";
	case RMA_ERR_BASE: return "RMA_ERR_BASE: invalid base address";
	case RMA_ERR_INFO: return "RMA_ERR_INFO: invalid info object";
	case RMA_ERR_INFO_KEY: return "RMA_ERR_INFO_KEY: invalid info key";
	case RMA_ERR_INFO_NOKEY: return "RMA_ERR_INFO_NOKEY: info key not set";
	case RMA_ERR_INFO_VALUE: return "RMA_ERR_INFO_VALUE: invalid info value";
	case RMA_ERR_KEYVAL: return "RMA_ERR_KEYVAL: invalid attribute key";
	case RMA_ERR_NO_MEM: return "RMA_ERR_NO_MEM: out of memory";
	case RMA_ERR_WIN: return "RMA_ERR_WIN: invalid window";
	case RMA_ERR_SIZE: return "RMA_ERR_SIZE: invalid size";
	case RMA_ERR_DISP: return "RMA_ERR_DISP: invalid displacement";
	case RMA_ERR_LOCKTYPE: return "RMA_ERR_LOCKTYPE: invalid lock type";
	case RMA_ERR_ASSERT: return "RMA_ERR_ASSERT: invalid assertion";
	case RMA_ERR_RMA_CONFLICT: return "RMA_ERR_RMA_CONFLICT: conflicting accesses to a window";
	case RMA_ERR_RMA_SYNC: return "RMA_ERR_RMA_SYNC: wrong synchronization of RMA calls";
	case RMA_ERR_RMA_RANGE: return "RMA_ERR_RMA_RANGE: target memory outside the window";
	case RMA_ERR_RMA_ATTACH: return "RMA_ERR_RMA_ATTACH: memory cannot be attached";
	case RMA_ERR_RMA_SHARED: return "RMA_ERR_RMA_SHARED: memory cannot be shared";
	case RMA_ERR_RMA_FLAVOR: return "RMA_ERR_RMA_FLAVOR: wrong window flavor";
	case RMA_ERR_PROC_FAILED: return "RMA_ERR_PROC_FAILED: a process failed";
	case RMA_ERR_NOT_SUPPORTED: return "RMA_ERR_NOT_SUPPORTED: not supported";
	default: return "unknown error class";
	}
}

std::string errorMessage(int code)
{
	int cls = errorClass(code);
	if (cls < 0)
		return "not a librma error code";
	unsigned serial = static_cast<unsigned>(code) >> kClassBits;
	if (serial != 0) {
		MessageTable &t = table();
		std::lock_guard<std::mutex> guard(t.lock);
		const Entry &e = t.entries[serial % kMessages];
		if (e.code == code)
			return std::string(className(cls)) + ": " + e.text;
	}
	return className(cls);
}

} /* namespace librma */
