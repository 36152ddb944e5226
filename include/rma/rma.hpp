/* SPDX-License-Identifier: MIT */
/**
 * @file rma.hpp
 * @brief Idiomatic C++20 over librma's C API (rma.h): RAII objects, spans,
 *        typed put/get, errors as values. No second implementation: every
 *        member calls the C function of the same name.
 *
 * Errors: calls return rma::Status (or rma::Result<T>), never throw. Windows
 * made here use RMA_ERRORS_RETURN, so their errors come back as values; the
 * communicator's own handler is left as the application set it, except that
 * window creation reports its error as a value too.
 *
 * Thread safety: as the C API (RMA_THREAD_SERIALIZED).
 */
#ifndef RMA_RMA_HPP
#define RMA_RMA_HPP

#if !defined(__cplusplus) || __cplusplus < 202002L
#error "librma's C++ API (rma/rma.hpp) needs C++20 (-std=c++20 or later); C programs use rma/rma.h"
#endif

#include <complex>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <optional>
#include <ranges>
#include <span>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

#include <rma/rma.h>

namespace rma {

/** @brief The outcome of a call: RMA_SUCCESS or an error code with a message. */
class [[nodiscard]] Status
{
public:
	constexpr Status() = default;
	constexpr explicit Status(int code) : code_(code) {}

	/** True on success. */
	constexpr bool ok() const { return code_ == RMA_SUCCESS; }
	constexpr explicit operator bool() const { return ok(); }
	/** The raw code (as the C API returned it). */
	constexpr int code() const { return code_; }
	/** The error class (RMA_ERR_*), RMA_SUCCESS on success. */
	int errorClass() const
	{
		int cls = RMA_ERR_UNKNOWN;
		return rma_error_class(code_, &cls) == RMA_SUCCESS ? cls : RMA_ERR_UNKNOWN;
	}
	/** The message naming call, object and numbers. */
	std::string message() const
	{
		char buf[RMA_MAX_ERROR_STRING];
		int len = 0;
		if (rma_error_string(code_, buf, &len) != RMA_SUCCESS)
			return "unknown error code " + std::to_string(code_);
		return std::string(buf, static_cast<std::size_t>(len));
	}

private:
	int code_ = RMA_SUCCESS;
};

/** @brief A value or the Status that prevented it. */
template<typename T>
class [[nodiscard]] Result
{
public:
	Result(T value) : value_(std::move(value)) {}
	Result(Status status) : status_(status) {}

	bool ok() const { return status_.ok(); }
	explicit operator bool() const { return ok(); }
	const Status &status() const { return status_; }
	/**
	 * The value. On an error there is none: the call prints the status's
	 * message to stderr and aborts (the library throws no exceptions), so
	 * check ok() first where an error is possible.
	 */
	T &value() &
	{
		check();
		return *value_;
	}
	T &&value() &&
	{
		check();
		return std::move(*value_);
	}
	T *operator->() { return &value(); }
	T &operator*() { return value(); }

private:
	void check() const
	{
		if (!value_) [[unlikely]] {
			std::fprintf(stderr, "rma::Result::value() called on an error: %s\n", status_.message().c_str());
			std::abort();
		}
	}

	Status status_;
	std::optional<T> value_;
};

/** @brief The C++ types with a predefined librma datatype (see datatypeOf()). */
template<typename T>
concept Element = std::is_arithmetic_v<std::remove_cv_t<T>> || std::is_same_v<std::remove_cv_t<T>, std::byte> ||
		  std::is_same_v<std::remove_cv_t<T>, std::complex<float>> ||
		  std::is_same_v<std::remove_cv_t<T>, std::complex<double>> ||
		  std::is_same_v<std::remove_cv_t<T>, std::complex<long double>>;

/** @brief Contiguous ranges of Elements (std::span, std::vector, std::array, C arrays). */
template<typename R>
concept ElementRange = std::ranges::contiguous_range<R> && std::ranges::sized_range<R> &&
		       Element<std::ranges::range_value_t<R>>;

/** @brief The predefined datatype of a C++ type (rma::datatypeOf<double>() == RMA_DOUBLE). */
template<typename T>
rma_datatype datatypeOf()
{
	using U = std::remove_cv_t<T>;
	if constexpr (std::is_same_v<U, char>) return RMA_CHAR;
	else if constexpr (std::is_same_v<U, signed char>) return RMA_SIGNED_CHAR;
	else if constexpr (std::is_same_v<U, unsigned char>) return RMA_UNSIGNED_CHAR;
	else if constexpr (std::is_same_v<U, std::byte>) return RMA_BYTE;
	else if constexpr (std::is_same_v<U, short>) return RMA_SHORT;
	else if constexpr (std::is_same_v<U, unsigned short>) return RMA_UNSIGNED_SHORT;
	else if constexpr (std::is_same_v<U, int>) return RMA_INT;
	else if constexpr (std::is_same_v<U, unsigned>) return RMA_UNSIGNED;
	else if constexpr (std::is_same_v<U, long>) return RMA_LONG;
	else if constexpr (std::is_same_v<U, unsigned long>) return RMA_UNSIGNED_LONG;
	else if constexpr (std::is_same_v<U, long long>) return RMA_LONG_LONG;
	else if constexpr (std::is_same_v<U, unsigned long long>) return RMA_UNSIGNED_LONG_LONG;
	else if constexpr (std::is_same_v<U, float>) return RMA_FLOAT;
	else if constexpr (std::is_same_v<U, double>) return RMA_DOUBLE;
	else if constexpr (std::is_same_v<U, long double>) return RMA_LONG_DOUBLE;
	else if constexpr (std::is_same_v<U, wchar_t>) return RMA_WCHAR;
	else if constexpr (std::is_same_v<U, bool>) return RMA_C_BOOL;
	else if constexpr (std::is_same_v<U, std::complex<float>>) return RMA_C_FLOAT_COMPLEX;
	else if constexpr (std::is_same_v<U, std::complex<double>>) return RMA_C_DOUBLE_COMPLEX;
	else if constexpr (std::is_same_v<U, std::complex<long double>>) return RMA_C_LONG_DOUBLE_COMPLEX;
	else static_assert(sizeof(T) == 0, "no predefined librma datatype for this type");
}

/** @brief Initializes librma on construction and finalizes it on destruction. */
class Environment
{
public:
	Environment(int *argc = nullptr, char ***argv = nullptr) : status_(rma_init(argc, argv)) {}
	~Environment()
	{
		if (status_.ok())
			(void)rma_finalize();
	}
	Environment(const Environment &) = delete;
	Environment &operator=(const Environment &) = delete;
	/** Whether rma_init() succeeded. */
	const Status &status() const { return status_; }

private:
	Status status_;
};

/** @brief A non-owning view of a communicator. */
class Comm
{
public:
	constexpr explicit Comm(rma_comm handle = RMA_COMM_WORLD) : handle_(handle) {}
	static Comm world() { return Comm(RMA_COMM_WORLD); }
	static Comm self() { return Comm(RMA_COMM_SELF); }

	int rank() const
	{
		int r = -1;
		(void)rma_comm_rank(handle_, &r);
		return r;
	}
	int size() const
	{
		int s = 0;
		(void)rma_comm_size(handle_, &s);
		return s;
	}
	Status barrier() const { return Status(rma_barrier(handle_)); }
	rma_comm handle() const { return handle_; }

private:
	rma_comm handle_;
};

/**
 * @brief An owned process group (rma_group): freed on destruction, move-only.
 * Groups name the targets of PSCW epochs (Window::post, Window::start).
 */
class Group
{
public:
	Group() = default;
	/** Take ownership of @p handle (freed by the destructor unless RMA_GROUP_NULL or RMA_GROUP_EMPTY). */
	static Group adopt(rma_group handle) { return Group(handle); }
	/** The group of a communicator's processes (rma_comm_group). */
	static Result<Group> of(Comm comm)
	{
		rma_group g = RMA_GROUP_NULL;
		int rc = rma_comm_group(comm.handle(), &g);
		if (rc != RMA_SUCCESS)
			return Status(rc);
		return Group(g);
	}
	Group(Group &&other) noexcept : handle_(std::exchange(other.handle_, RMA_GROUP_NULL)) {}
	Group &operator=(Group &&other) noexcept
	{
		if (this != &other) {
			reset();
			handle_ = std::exchange(other.handle_, RMA_GROUP_NULL);
		}
		return *this;
	}
	Group(const Group &) = delete;
	Group &operator=(const Group &) = delete;
	~Group() { reset(); }

	/** Number of processes (rma_group_size); 0 for an invalid group. */
	int size() const
	{
		int n = 0;
		(void)rma_group_size(handle_, &n);
		return n;
	}
	/** This process's rank in the group, RMA_UNDEFINED if it is not a member. */
	int rank() const
	{
		int r = RMA_UNDEFINED;
		(void)rma_group_rank(handle_, &r);
		return r;
	}
	/** The members at @p ranks of this group, in that order (rma_group_incl). */
	Result<Group> incl(std::span<const int> ranks) const { return derive(ranks, rma_group_incl); }
	/** This group without the members at @p ranks (rma_group_excl). */
	Result<Group> excl(std::span<const int> ranks) const { return derive(ranks, rma_group_excl); }
	/** The ranks in @p other of this group's @p ranks (RMA_UNDEFINED where absent). */
	Result<std::vector<int>> translate(std::span<const int> ranks, const Group &other) const
	{
		std::vector<int> out(ranks.size(), RMA_UNDEFINED);
		int rc = rma_group_translate_ranks(handle_, static_cast<int>(ranks.size()), ranks.data(), other.handle_,
						   out.data());
		if (rc != RMA_SUCCESS)
			return Status(rc);
		return out;
	}
	rma_group handle() const { return handle_; }

private:
	explicit Group(rma_group handle) : handle_(handle) {}
	void reset()
	{
		if (handle_ != RMA_GROUP_NULL && handle_ != RMA_GROUP_EMPTY)
			(void)rma_group_free(&handle_);
		handle_ = RMA_GROUP_NULL;
	}
	template<typename Fn>
	Result<Group> derive(std::span<const int> ranks, Fn fn) const
	{
		rma_group g = RMA_GROUP_NULL;
		int rc = fn(handle_, static_cast<int>(ranks.size()), ranks.data(), &g);
		if (rc != RMA_SUCCESS)
			return Status(rc);
		return Group(g);
	}

	rma_group handle_ = RMA_GROUP_NULL;
};

/**
 * @brief An owned request of a request-based operation (Window::rput, rget,
 *        raccumulate), move-only.
 *
 * wait() completes it (the origin buffer may be reused, and fetched data is
 * there); test() says whether it is complete. A Request destroyed before it
 * completed is freed with rma_request_free(): the operation itself still
 * completes at the window's next flush, unlock or unlock_all, as in MPI, so
 * dropping one never blocks (an error it meets, such as another host's
 * refusal, is then reported by that next call).
 */
class Request
{
public:
	Request() = default;
	static Request adopt(rma_request handle) { return Request(handle); }
	Request(Request &&other) noexcept : handle_(std::exchange(other.handle_, RMA_REQUEST_NULL)) {}
	Request &operator=(Request &&other) noexcept
	{
		if (this != &other) {
			reset();
			handle_ = std::exchange(other.handle_, RMA_REQUEST_NULL);
		}
		return *this;
	}
	Request(const Request &) = delete;
	Request &operator=(const Request &) = delete;
	~Request() { reset(); }

	/** rma_wait(): blocks until complete; the request is then done (active() is false). */
	Status wait() { return handle_ == RMA_REQUEST_NULL ? Status() : Status(rma_wait(&handle_, nullptr)); }
	/** rma_test(): true once complete (and then done); an error as the Status. */
	Result<bool> test()
	{
		if (handle_ == RMA_REQUEST_NULL)
			return true;
		int flag = 0;
		int rc = rma_test(&handle_, &flag, nullptr);
		if (rc != RMA_SUCCESS)
			return Status(rc);
		return flag != 0;
	}
	/** Whether an operation is still attached (not yet completed by wait() or test()). */
	bool active() const { return handle_ != RMA_REQUEST_NULL; }
	rma_request handle() const { return handle_; }

private:
	explicit Request(rma_request handle) : handle_(handle) {}
	void reset()
	{
		if (handle_ != RMA_REQUEST_NULL)
			(void)rma_request_free(&handle_);
		handle_ = RMA_REQUEST_NULL;
	}

	rma_request handle_ = RMA_REQUEST_NULL;
};

/** @brief An owned info object. */
class Info
{
public:
	Info() { (void)rma_info_create(&handle_); }
	~Info()
	{
		if (handle_ != RMA_INFO_NULL)
			(void)rma_info_free(&handle_);
	}
	Info(Info &&o) noexcept : handle_(std::exchange(o.handle_, RMA_INFO_NULL)) {}
	Info &operator=(Info &&o) noexcept
	{
		std::swap(handle_, o.handle_);
		return *this;
	}
	Info(const Info &) = delete;
	Info &operator=(const Info &) = delete;

	/** Adopt an info handle (e.g. from rma_win_get_info). */
	static Info adopt(rma_info handle)
	{
		Info i(handle);
		return i;
	}

	Status set(const std::string &key, const std::string &value)
	{
		return Status(rma_info_set(handle_, key.c_str(), value.c_str()));
	}
	/** The value of @p key, if set. */
	std::optional<std::string> get(const std::string &key) const
	{
		int len = 0, flag = 0;
		if (rma_info_get_valuelen(handle_, key.c_str(), &len, &flag) != RMA_SUCCESS || !flag)
			return std::nullopt;
		std::string v(static_cast<std::size_t>(len) + 1, '\0');
		(void)rma_info_get(handle_, key.c_str(), len, v.data(), &flag);
		v.resize(static_cast<std::size_t>(len));
		return v;
	}
	rma_info handle() const { return handle_; }

private:
	explicit Info(rma_info handle) : handle_(handle) {}
	rma_info handle_ = RMA_INFO_NULL;
};

/**
 * @brief An RMA window that frees itself (collectively) when destroyed.
 *
 * Because rma_win_free() is collective, every member must destroy (or
 * free()) its Window at the same point of the program.
 */
class Window
{
public:
	Window() = default;
	~Window() { (void)free(); }
	Window(Window &&o) noexcept : handle_(std::exchange(o.handle_, RMA_WIN_NULL)) {}
	Window &operator=(Window &&o) noexcept
	{
		std::swap(handle_, o.handle_);
		return *this;
	}
	Window(const Window &) = delete;
	Window &operator=(const Window &) = delete;

	/** rma_win_allocate(): @p bytes of new memory per rank. */
	static Result<Window> allocate(std::size_t bytes, int dispUnit = 1, Comm comm = Comm::world(),
				       const Info *info = nullptr)
	{
		return make(comm, [&](rma_win *w) {
			void *base = nullptr;
			return rma_win_allocate(static_cast<rma_aint>(bytes), dispUnit, infoOf(info), comm.handle(),
						&base, w);
		});
	}
	/** rma_win_allocate_shared(). */
	static Result<Window> allocateShared(std::size_t bytes, int dispUnit = 1, Comm comm = Comm::world(),
					     const Info *info = nullptr)
	{
		return make(comm, [&](rma_win *w) {
			void *base = nullptr;
			return rma_win_allocate_shared(static_cast<rma_aint>(bytes), dispUnit, infoOf(info),
						       comm.handle(), &base, w);
		});
	}
	/** rma_win_create() over existing memory. */
	template<typename T>
	static Result<Window> create(std::span<T> memory, Comm comm = Comm::world(), const Info *info = nullptr)
	{
		return make(comm, [&](rma_win *w) {
			return rma_win_create(memory.data(), static_cast<rma_aint>(memory.size_bytes()),
					      static_cast<int>(sizeof(T)), infoOf(info), comm.handle(), w);
		});
	}
	/** rma_win_create_dynamic(). */
	static Result<Window> createDynamic(Comm comm = Comm::world(), const Info *info = nullptr)
	{
		return make(comm, [&](rma_win *w) { return rma_win_create_dynamic(infoOf(info), comm.handle(), w); });
	}

	/** This rank's window memory, as elements of T. */
	template<typename T>
	std::span<T> local() const
	{
		void *base = nullptr;
		rma_aint *size = nullptr;
		int flag = 0;
		(void)rma_win_get_attr(handle_, RMA_WIN_BASE, &base, &flag);
		(void)rma_win_get_attr(handle_, RMA_WIN_SIZE, &size, &flag);
		if (!base || !size)
			return {};
		return { static_cast<T *>(base), static_cast<std::size_t>(*size) / sizeof(T) };
	}

	/**
	 * rma_put() of @p origin (any contiguous range of Elements: std::span,
	 * std::vector, std::array) to @p target at displacement @p disp (in the
	 * target's disp units).
	 */
	template<ElementRange R>
	Status put(const R &origin, int target, rma_aint disp)
	{
		using T = std::ranges::range_value_t<R>;
		const int n = static_cast<int>(std::ranges::size(origin));
		return Status(rma_put(std::ranges::data(origin), n, datatypeOf<T>(), target, disp, n, datatypeOf<T>(),
				      handle_));
	}
	/** rma_put() of one element. */
	template<Element T>
	Status put(const T &value, int target, rma_aint disp)
	{
		return put(std::span<const T>(&value, 1), target, disp);
	}
	/** rma_rput(): put() with a Request (passive-target epochs; RMA_PROC_NULL in any epoch). */
	template<ElementRange R>
	Result<Request> rput(const R &origin, int target, rma_aint disp)
	{
		using T = std::ranges::range_value_t<R>;
		const int n = static_cast<int>(std::ranges::size(origin));
		rma_request r = RMA_REQUEST_NULL;
		int rc = rma_rput(std::ranges::data(origin), n, datatypeOf<T>(), target, disp, n, datatypeOf<T>(), handle_,
				  &r);
		if (rc != RMA_SUCCESS)
			return Status(rc);
		return Request::adopt(r);
	}
	/** rma_rget(): get() with a Request; the data is in @p origin once it completes. */
	template<ElementRange R>
	Result<Request> rget(R &&origin, int target, rma_aint disp)
	{
		using T = std::ranges::range_value_t<R>;
		const int n = static_cast<int>(std::ranges::size(origin));
		rma_request r = RMA_REQUEST_NULL;
		int rc = rma_rget(std::ranges::data(origin), n, datatypeOf<T>(), target, disp, n, datatypeOf<T>(), handle_,
				  &r);
		if (rc != RMA_SUCCESS)
			return Status(rc);
		return Request::adopt(r);
	}
	/** rma_get() into @p origin (a contiguous range of Elements) from @p target at displacement @p disp. */
	template<ElementRange R>
	Status get(R &&origin, int target, rma_aint disp)
	{
		using T = std::ranges::range_value_t<R>;
		const int n = static_cast<int>(std::ranges::size(origin));
		return Status(rma_get(std::ranges::data(origin), n, datatypeOf<T>(), target, disp, n, datatypeOf<T>(),
				      handle_));
	}

	/**
	 * rma_accumulate() of @p origin into @p target at @p disp with @p op
	 * (RMA_SUM, RMA_REPLACE, ...): atomic per element; complete at the
	 * next flush, unlock, fence or complete.
	 */
	template<ElementRange R>
	Status accumulate(const R &origin, int target, rma_aint disp, rma_op op)
	{
		using T = std::ranges::range_value_t<R>;
		const int n = static_cast<int>(std::ranges::size(origin));
		return Status(rma_accumulate(std::ranges::data(origin), n, datatypeOf<T>(), target, disp, n,
					     datatypeOf<T>(), op, handle_));
	}
	/**
	 * rma_get_accumulate(): @p result receives the target's elements, which
	 * then become op(target, origin). @p origin and @p result have the same
	 * length (origin is ignored for RMA_NO_OP). @p result holds the values
	 * once the operation completes (flush, unlock, fence, complete).
	 */
	template<typename T>
	Status getAccumulate(std::span<const T> origin, std::span<T> result, int target, rma_aint disp, rma_op op)
	{
		if (origin.size() != result.size() && op != RMA_NO_OP)
			return Status(RMA_ERR_COUNT);
		const int n = static_cast<int>(result.size());
		return Status(rma_get_accumulate(origin.data(), n, datatypeOf<T>(), result.data(), n, datatypeOf<T>(),
						 target, disp, n, datatypeOf<T>(), op, handle_));
	}
	/** rma_fetch_and_op() of one element: *@p result = old value (at completion). */
	template<typename T>
	Status fetchAndOp(const T &origin, T *result, int target, rma_aint disp, rma_op op)
	{
		return Status(rma_fetch_and_op(&origin, result, datatypeOf<T>(), target, disp, op, handle_));
	}
	/** rma_compare_and_swap(): *@p result = old value; replaced by @p origin if it equalled @p compare. */
	template<typename T>
	Status compareAndSwap(const T &origin, const T &compare, T *result, int target, rma_aint disp)
	{
		return Status(rma_compare_and_swap(&origin, &compare, result, datatypeOf<T>(), target, disp, handle_));
	}

	/** rma_win_fence(). */
	Status fence(int assert = 0) { return Status(rma_win_fence(assert, handle_)); }
	/** rma_win_sync(). */
	Status sync() { return Status(rma_win_sync(handle_)); }

	/** rma_win_lock(): RMA_LOCK_SHARED or RMA_LOCK_EXCLUSIVE on @p target. Prefer lockGuard(). */
	Status lock(int target, int lockType = RMA_LOCK_SHARED, int assert = 0)
	{
		return Status(rma_win_lock(lockType, target, assert, handle_));
	}
	/** rma_win_unlock(). */
	Status unlock(int target) { return Status(rma_win_unlock(target, handle_)); }
	/** rma_win_lock_all(). */
	Status lockAll(int assert = 0) { return Status(rma_win_lock_all(assert, handle_)); }
	/** rma_win_unlock_all(). */
	Status unlockAll() { return Status(rma_win_unlock_all(handle_)); }
	/** rma_win_flush(), or rma_win_flush_all() without a target. */
	Status flush(std::optional<int> target = std::nullopt)
	{
		return Status(target ? rma_win_flush(*target, handle_) : rma_win_flush_all(handle_));
	}
	/** rma_win_flush_local(), or rma_win_flush_local_all() without a target. */
	Status flushLocal(std::optional<int> target = std::nullopt)
	{
		return Status(target ? rma_win_flush_local(*target, handle_) : rma_win_flush_local_all(handle_));
	}
	/** rma_win_post() / rma_win_start() over a group handle; rma_win_complete() / rma_win_wait(). */
	Status post(rma_group group, int assert = 0) { return Status(rma_win_post(group, assert, handle_)); }
	Status start(rma_group group, int assert = 0) { return Status(rma_win_start(group, assert, handle_)); }
	/** post() / start() over a Group. */
	Status post(const Group &group, int assert = 0) { return post(group.handle(), assert); }
	Status start(const Group &group, int assert = 0) { return start(group.handle(), assert); }
	/** The window's group (rma_win_get_group). */
	Result<Group> group() const
	{
		rma_group g = RMA_GROUP_NULL;
		int rc = rma_win_get_group(handle_, &g);
		if (rc != RMA_SUCCESS)
			return Status(rc);
		return Group::adopt(g);
	}
	Status complete() { return Status(rma_win_complete(handle_)); }
	Status wait() { return Status(rma_win_wait(handle_)); }

	/**
	 * @brief A passive-target epoch on one target that ends (unlock) when
	 *        the guard goes out of scope. status() says whether the lock
	 *        was taken; unlock() ends it early and reports the result.
	 */
	class [[nodiscard]] LockGuard
	{
	public:
		LockGuard(Window &win, int target, int lockType) : win_(&win), target_(target)
		{
			status_ = win.lock(target, lockType);
		}
		~LockGuard() { (void)unlock(); }
		LockGuard(const LockGuard &) = delete;
		LockGuard &operator=(const LockGuard &) = delete;
		const Status &status() const { return status_; }
		Status unlock()
		{
			if (!status_.ok() || !win_)
				return Status();
			Window *w = std::exchange(win_, nullptr);
			return w->unlock(target_);
		}

	private:
		Window *win_;
		int target_;
		Status status_;
	};
	/** A LockGuard on @p target. */
	LockGuard lockGuard(int target, int lockType = RMA_LOCK_SHARED) { return LockGuard(*this, target, lockType); }
	/** rma_win_attach() (dynamic windows). */
	template<typename T>
	Status attach(std::span<T> memory)
	{
		return Status(rma_win_attach(handle_, memory.data(), static_cast<rma_aint>(memory.size_bytes())));
	}
	/** rma_win_detach() (dynamic windows). */
	Status detach(const void *base) { return Status(rma_win_detach(handle_, base)); }
	/** Collective free; the destructor calls it if still needed. */
	Status free()
	{
		if (handle_ == RMA_WIN_NULL)
			return Status();
		return Status(rma_win_free(&handle_));
	}
	/** The hints in force (rma_win_get_info). */
	Info info() const
	{
		rma_info i = RMA_INFO_NULL;
		(void)rma_win_get_info(handle_, &i);
		return Info::adopt(i);
	}
	rma_win handle() const { return handle_; }

private:
	explicit Window(rma_win handle) : handle_(handle) {}
	static rma_info infoOf(const Info *info) { return info ? info->handle() : RMA_INFO_NULL; }

	template<typename Fn>
	static Result<Window> make(Comm comm, Fn &&fn)
	{
		/* Report creation errors as values: borrow RMA_ERRORS_RETURN on the communicator. */
		rma_errhandler previous = RMA_ERRHANDLER_NULL;
		(void)rma_comm_get_errhandler(comm.handle(), &previous);
		(void)rma_comm_set_errhandler(comm.handle(), RMA_ERRORS_RETURN);
		rma_win w = RMA_WIN_NULL;
		int rc = fn(&w);
		if (previous != RMA_ERRHANDLER_NULL) {
			(void)rma_comm_set_errhandler(comm.handle(), previous);
			if (previous != RMA_ERRORS_ARE_FATAL && previous != RMA_ERRORS_RETURN &&
			    previous != RMA_ERRORS_ABORT)
				(void)rma_errhandler_free(&previous);
		}
		if (rc != RMA_SUCCESS)
			return Status(rc);
		(void)rma_win_set_errhandler(w, RMA_ERRORS_RETURN);
		return Window(w);
	}

	rma_win handle_ = RMA_WIN_NULL;
};

} /* namespace rma */

#endif /* RMA_RMA_HPP */
