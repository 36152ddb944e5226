/* SPDX-License-Identifier: MIT */
/* Helpers shared by the window suites: windows of every flavor, made the same way. */
#pragma once

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <string>
#include <thread>
#include <vector>

#include <rma/rma.h>

#include "support/multiproc.h"

namespace rmatest {

using librma::test::runRanks;

enum class Kind {
	Allocate,
	Shared,
	SharedNoncontig,
	CreatePlain,    /* rma_win_create over malloc'ed memory: cross-memory attach */
	CreateAllocMem, /* rma_win_create over rma_alloc_mem memory: direct */
	Dynamic,        /* attach malloc'ed memory */
	DynamicAllocMem,
};

inline const char *kindName(Kind k)
{
	switch (k) {
	case Kind::Allocate: return "Allocate";
	case Kind::Shared: return "Shared";
	case Kind::SharedNoncontig: return "SharedNoncontig";
	case Kind::CreatePlain: return "CreatePlain";
	case Kind::CreateAllocMem: return "CreateAllocMem";
	case Kind::Dynamic: return "Dynamic";
	case Kind::DynamicAllocMem: return "DynamicAllocMem";
	}
	return "?";
}

/*
 * A window of @bytes per rank with @dispUnit. For dynamic windows, the
 * memory is attached and `disps[r]` is what target_disp 0 means at rank r
 * (its address); for the others disps[r] is 0.
 */
struct TestWindow {
	rma_win win = RMA_WIN_NULL;
	std::byte *local = nullptr;
	std::vector<rma_aint> disps;
	Kind kind = Kind::Allocate;
	void *owned = nullptr; /* memory to release after free */
	int dispUnit = 1;

	/* Target displacement of element @index (in bytes / dispUnit units) at @rank. */
	rma_aint disp(int rank, rma_aint unitIndex) const
	{
		if (kind == Kind::Dynamic || kind == Kind::DynamicAllocMem)
			return disps[rank] + unitIndex * dispUnit;
		return unitIndex;
	}
};

/* Collective; returns false (with a gtest failure) when creation fails. */
inline bool makeWindow(Kind kind, size_t bytes, int dispUnit, TestWindow &w, rma_info info = RMA_INFO_NULL)
{
	int rank = 0, size = 1;
	rma_comm_rank(RMA_COMM_WORLD, &rank);
	rma_comm_size(RMA_COMM_WORLD, &size);
	w = TestWindow{};
	w.kind = kind;
	w.dispUnit = dispUnit;
	w.disps.assign(size, 0);
	int rc = RMA_SUCCESS;
	void *base = nullptr;
	switch (kind) {
	case Kind::Allocate:
		rc = rma_win_allocate(bytes, dispUnit, info, RMA_COMM_WORLD, &base, &w.win);
		break;
	case Kind::Shared:
		rc = rma_win_allocate_shared(bytes, dispUnit, info, RMA_COMM_WORLD, &base, &w.win);
		break;
	case Kind::SharedNoncontig: {
		rma_info i;
		rma_info_create(&i);
		rma_info_set(i, "alloc_shared_noncontig", "true");
		rc = rma_win_allocate_shared(bytes, dispUnit, i, RMA_COMM_WORLD, &base, &w.win);
		rma_info_free(&i);
		break;
	}
	case Kind::CreatePlain:
		base = std::calloc(1, bytes ? bytes : 1);
		w.owned = base;
		rc = rma_win_create(base, bytes, dispUnit, info, RMA_COMM_WORLD, &w.win);
		break;
	case Kind::CreateAllocMem:
		EXPECT_EQ(rma_alloc_mem(bytes, RMA_INFO_NULL, &base), RMA_SUCCESS);
		std::memset(base, 0, bytes);
		rc = rma_win_create(base, bytes, dispUnit, info, RMA_COMM_WORLD, &w.win);
		break;
	case Kind::Dynamic:
	case Kind::DynamicAllocMem: {
		if (kind == Kind::Dynamic) {
			base = std::calloc(1, bytes ? bytes : 1);
			w.owned = base;
		} else {
			EXPECT_EQ(rma_alloc_mem(bytes, RMA_INFO_NULL, &base), RMA_SUCCESS);
			std::memset(base, 0, bytes);
		}
		rc = rma_win_create_dynamic(info, RMA_COMM_WORLD, &w.win);
		if (rc == RMA_SUCCESS)
			rc = rma_win_attach(w.win, base, bytes);
		/* Everyone learns everyone's address through an allocate window. */
		rma_win ex;
		rma_aint *slots = nullptr;
		EXPECT_EQ(rma_win_allocate(size * sizeof(rma_aint), sizeof(rma_aint), RMA_INFO_NULL, RMA_COMM_WORLD,
					   &slots, &ex),
			  RMA_SUCCESS);
		rma_aint mine;
		rma_get_address(base, &mine);
		EXPECT_EQ(rma_win_fence(0, ex), RMA_SUCCESS);
		for (int r = 0; r < size; ++r) {
			EXPECT_EQ(rma_put(&mine, 1, RMA_AINT, r, rank, 1, RMA_AINT, ex), RMA_SUCCESS);
		}
		EXPECT_EQ(rma_win_fence(0, ex), RMA_SUCCESS);
		for (int r = 0; r < size; ++r)
			w.disps[r] = slots[r];
		EXPECT_EQ(rma_win_free(&ex), RMA_SUCCESS);
		break;
	}
	}
	EXPECT_EQ(rc, RMA_SUCCESS) << kindName(kind);
	if (rc != RMA_SUCCESS)
		return false;
	w.local = static_cast<std::byte *>(base);
	rma_win_set_errhandler(w.win, RMA_ERRORS_RETURN);
	return true;
}

inline void freeWindow(TestWindow &w)
{
	EXPECT_EQ(rma_win_free(&w.win), RMA_SUCCESS);
	EXPECT_EQ(w.win, RMA_WIN_NULL);
	if (w.kind == Kind::CreateAllocMem || w.kind == Kind::DynamicAllocMem) {
		EXPECT_EQ(rma_free_mem(w.local), RMA_SUCCESS);
	}
	std::free(w.owned);
}

inline int errorClassOf(int code)
{
	int cls = -1;
	rma_error_class(code, &cls);
	return cls;
}

inline std::string errorText(int code)
{
	char buf[RMA_MAX_ERROR_STRING];
	int len = 0;
	rma_error_string(code, buf, &len);
	return std::string(buf, len);
}

/* EXPECT that @call returns an error of class @cls, showing the call and its message. */
#define EXPECT_CLASS(call, cls)                                                                  \
	do {                                                                                     \
		int rc_ = (call);                                                                \
		EXPECT_EQ(errorClassOf(rc_), (cls)) << #call << ": " << errorText(rc_);          \
	} while (0)

/* ---- Helpers for multi-rank bodies (call inside a rank, after rma_init) ---- */

inline int worldRank()
{
	int r = -1;
	rma_comm_rank(RMA_COMM_WORLD, &r);
	return r;
}

inline int worldSize()
{
	int s = 0;
	rma_comm_size(RMA_COMM_WORLD, &s);
	return s;
}

/* The group of world ranks @a and @b (the same rank once if equal). */
inline rma_group pairGroup(int a, int b)
{
	rma_group world, g;
	rma_comm_group(RMA_COMM_WORLD, &world);
	int ranks[2] = { a, b };
	rma_group_incl(world, a == b ? 1 : 2, ranks, &g);
	rma_group_free(&world);
	return g;
}

/* Words every rank loads and stores directly (allocate_shared memory of rank 0); collective. */
class SharedWords
{
public:
	explicit SharedWords(int words = 64)
	{
		int64_t *mine = nullptr;
		EXPECT_EQ(rma_win_allocate_shared(worldRank() == 0 ? words * sizeof(int64_t) : 0, 1, RMA_INFO_NULL,
						  RMA_COMM_WORLD, &mine, &win_),
			  RMA_SUCCESS);
		rma_aint size;
		int unit;
		EXPECT_EQ(rma_win_shared_query(win_, 0, &size, &unit, &base_), RMA_SUCCESS);
		rma_barrier(RMA_COMM_WORLD);
	}
	/* Collective, like any window free: every rank destroys its words at the same point. */
	~SharedWords()
	{
		int finalized = 0;
		rma_finalized(&finalized);
		if (!finalized)
			rma_win_free(&win_);
	}
	SharedWords(const SharedWords &) = delete;
	SharedWords &operator=(const SharedWords &) = delete;

	std::atomic_ref<int64_t> at(int i) { return std::atomic_ref<int64_t>(base_[i]); }

private:
	rma_win win_ = RMA_WIN_NULL;
	int64_t *base_ = nullptr;
};

/* Spin until @pred or @seconds pass; false on timeout. */
template<typename Pred>
bool eventually(Pred pred, double seconds = 10)
{
	auto end = std::chrono::steady_clock::now() + std::chrono::duration<double>(seconds);
	while (!pred()) {
		if (std::chrono::steady_clock::now() > end)
			return false;
		std::this_thread::yield();
	}
	return true;
}

/*
 * A truly passive target: pure computation, no librma call, until
 * @words.at(@index) reaches @value (bounded by 20 s). False if it never did.
 */
inline bool computeUntil(SharedWords &words, int index, int64_t value)
{
	volatile double x = 1.0;
	auto end = std::chrono::steady_clock::now() + std::chrono::seconds(20);
	while (words.at(index).load(std::memory_order_relaxed) < value && std::chrono::steady_clock::now() < end)
		for (int i = 0; i < 1000; ++i)
			x = x * 1.0000001 + 1e-9;
	return words.at(index).load() >= value;
}

} /* namespace rmatest */
