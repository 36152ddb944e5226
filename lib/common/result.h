/* SPDX-License-Identifier: MIT */
/*
 * Result<T>: a value or an librma error code (see lib/error/error.h).
 * C++20 has no std::expected; this is the one small stand-in.
 */
#pragma once

#include <optional>
#include <utility>

#include <rma/rma.h>

namespace librma {

template<typename T>
class [[nodiscard]] Result
{
public:
	Result(T value) : code_(RMA_SUCCESS), value_(std::move(value)) {}
	/* An error: @code is a code from makeError(), never RMA_SUCCESS. */
	static Result failure(int code) { return Result(code, Tag{}); }

	bool ok() const { return code_ == RMA_SUCCESS; }
	explicit operator bool() const { return ok(); }
	int code() const { return code_; }

	T &value() & { return *value_; }
	T &&value() && { return std::move(*value_); }
	T *operator->() { return &*value_; }
	T &operator*() { return *value_; }

private:
	struct Tag {};
	Result(int code, Tag) : code_(code) {}

	int code_;
	std::optional<T> value_;
};

} /* namespace librma */

/* Propagate an error code (int) from a call returning int. */
#define RMA_TRY(expr)                                   \
	do {                                            \
		int rma_try_rc_ = (expr);               \
		if (rma_try_rc_ != RMA_SUCCESS) [[unlikely]] \
			return rma_try_rc_;             \
	} while (0)
