/* SPDX-License-Identifier: MIT */
/*
 * Instructions per operation on the hot paths, counted by callgrind (this
 * machine's perf has no hardware counters; callgrind counts the same for the
 * same binary and inputs whatever else the machine runs).
 *
 * Each case runs its operation kWarm times uncounted, then kIters times with
 * callgrind collecting, and dumps the stats under the case's name; outside
 * valgrind the client requests are no-ops and the program only checks that
 * every case runs. bench/insn_count.sh runs it under valgrind (1 rank, or 2
 * ranks through rmarun with the counts taken at rank 0) and prints a table of
 * instructions per operation.
 *
 *   bash bench/insn_count.sh build            # 2 ranks, rank 0 counted
 *   RANKS=1 bash bench/insn_count.sh build    # self target
 */
#include <valgrind/callgrind.h>

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>

#include <rma/rma.h>

namespace {

constexpr int kWarm = 200;
constexpr int kIters = 2000;

int check(int rc, const char *what)
{
	if (rc != RMA_SUCCESS) {
		char msg[RMA_MAX_ERROR_STRING];
		int len = 0;
		rma_error_string(rc, msg, &len);
		std::fprintf(stderr, "insn_count: %s: %s\n", what, msg);
		std::exit(1);
	}
	return rc;
}

struct Ctx {
	rma_win win = RMA_WIN_NULL;
	int64_t *base = nullptr;
	int rank = 0;
	int size = 1;
	int target = 0;
	int64_t one = 1;
	int64_t result = 0;
	int64_t compare = 0;
	int32_t ones[256];
};

/*
 * One counted case: the body runs kWarm + kIters times, and only the last
 * kIters are collected and dumped as NAME. The other ranks run the same
 * number of collective steps (fence cases) or wait in a barrier.
 */
template <typename Body>
void runCase(Ctx &c, const char *name, bool collective, Body body)
{
	check(rma_barrier(RMA_COMM_WORLD), "barrier");
	bool counted = c.rank == 0;
	if (counted || collective) {
		for (int i = 0; i < kWarm; ++i)
			body();
		if (counted) {
			CALLGRIND_ZERO_STATS;
			CALLGRIND_TOGGLE_COLLECT;
		}
		for (int i = 0; i < kIters; ++i)
			body();
		if (counted) {
			CALLGRIND_TOGGLE_COLLECT;
			CALLGRIND_DUMP_STATS_AT(name);
		}
	}
	check(rma_barrier(RMA_COMM_WORLD), "barrier");
}

/* A passive-target epoch to the target for the cases that flush. */
template <typename Body>
void passiveCase(Ctx &c, const char *name, Body body)
{
	if (c.rank == 0)
		check(rma_win_lock_all(0, c.win), "lock_all");
	runCase(c, name, false, body);
	if (c.rank == 0)
		check(rma_win_unlock_all(c.win), "unlock_all");
}

} /* namespace */

int main(int argc, char **argv)
{
	check(rma_init(&argc, &argv), "init");
	Ctx c;
	check(rma_comm_rank(RMA_COMM_WORLD, &c.rank), "rank");
	check(rma_comm_size(RMA_COMM_WORLD, &c.size), "size");
	c.target = c.size > 1 ? 1 : 0;
	check(rma_win_allocate(4096, sizeof(int64_t), RMA_INFO_NULL, RMA_COMM_WORLD, &c.base, &c.win), "allocate");
	std::memset(c.base, 0, 4096);
	const int t = c.target;

	passiveCase(c, "put_flush", [&] {
		rma_put(&c.one, 1, RMA_INT64_T, t, 0, 1, RMA_INT64_T, c.win);
		rma_win_flush(t, c.win);
	});
	passiveCase(c, "get_flush", [&] {
		rma_get(&c.result, 1, RMA_INT64_T, t, 0, 1, RMA_INT64_T, c.win);
		rma_win_flush(t, c.win);
	});
	passiveCase(c, "acc_sum_flush", [&] {
		rma_accumulate(&c.one, 1, RMA_INT64_T, t, 1, 1, RMA_INT64_T, RMA_SUM, c.win);
		rma_win_flush(t, c.win);
	});
	/* Mid-size: 16 and 256 int32 (64 B, 1 KiB) at byte 1024, past the words the checks below read. */
	std::fill(c.ones, c.ones + 256, 1);
	/* Two int32 in one word (OSU's 8-byte accumulate), at byte 64: one lane-wise compare-exchange. */
	passiveCase(c, "acc_sum_2x32_flush", [&] {
		rma_accumulate(c.ones, 2, RMA_INT32_T, t, 8, 2, RMA_INT32_T, RMA_SUM, c.win);
		rma_win_flush(t, c.win);
	});
	passiveCase(c, "acc_sum_64B_flush", [&] {
		rma_accumulate(c.ones, 16, RMA_INT32_T, t, 128, 16, RMA_INT32_T, RMA_SUM, c.win);
		rma_win_flush(t, c.win);
	});
	passiveCase(c, "acc_sum_1KiB_flush", [&] {
		rma_accumulate(c.ones, 256, RMA_INT32_T, t, 128, 256, RMA_INT32_T, RMA_SUM, c.win);
		rma_win_flush(t, c.win);
	});
	passiveCase(c, "get_acc_sum_flush", [&] {
		rma_get_accumulate(&c.one, 1, RMA_INT64_T, &c.result, 1, RMA_INT64_T, t, 1, 1, RMA_INT64_T, RMA_SUM,
				   c.win);
		rma_win_flush(t, c.win);
	});
	/* OSU's 8-byte get_accumulate: two int32 in one word. */
	passiveCase(c, "get_acc_2x32_flush", [&] {
		rma_get_accumulate(c.ones, 2, RMA_INT32_T, &c.result, 2, RMA_INT32_T, t, 9, 2, RMA_INT32_T, RMA_SUM,
				   c.win);
		rma_win_flush(t, c.win);
	});
	passiveCase(c, "fop_sum_flush", [&] {
		rma_fetch_and_op(&c.one, &c.result, RMA_INT64_T, t, 2, RMA_SUM, c.win);
		rma_win_flush(t, c.win);
	});
	passiveCase(c, "cas_flush", [&] {
		rma_compare_and_swap(&c.one, &c.compare, &c.result, RMA_INT64_T, t, 3, c.win);
		rma_win_flush(t, c.win);
	});
	runCase(c, "lock_excl_put_unlock", false, [&] {
		rma_win_lock(RMA_LOCK_EXCLUSIVE, t, 0, c.win);
		rma_put(&c.one, 1, RMA_INT64_T, t, 4, 1, RMA_INT64_T, c.win);
		rma_win_unlock(t, c.win);
	});
	runCase(c, "lock_shared_unlock", false, [&] {
		rma_win_lock(RMA_LOCK_SHARED, t, 0, c.win);
		rma_win_unlock(t, c.win);
	});
	check(rma_win_fence(0, c.win), "fence");
	runCase(c, "fence_empty", true, [&] { rma_win_fence(0, c.win); });
	runCase(c, "put_fence", true, [&] {
		if (c.rank == 0)
			rma_put(&c.one, 1, RMA_INT64_T, t, 5, 1, RMA_INT64_T, c.win);
		rma_win_fence(0, c.win);
	});
	check(rma_win_fence(RMA_MODE_NOSUCCEED, c.win), "fence");

	/* The operations must have done what they say, or the counts mean nothing. */
	check(rma_barrier(RMA_COMM_WORLD), "barrier");
	if (c.rank == t) {
		int64_t expect_acc = (kWarm + kIters) * 2; /* acc and get_acc both add 1 to [1] */
		int32_t lanes[2]; /* get_acc_2x32_flush adds 1 to each int32 of [9] */
		std::memcpy(lanes, &c.base[9], sizeof lanes);
		if (lanes[0] != kWarm + kIters || lanes[1] != kWarm + kIters) {
			std::fprintf(stderr, "insn_count: wrong results: [9] lanes %d %d (want %d)\n", lanes[0], lanes[1],
				     kWarm + kIters);
			return 1;
		}
		if (c.base[1] != expect_acc || c.base[2] != kWarm + kIters || c.base[3] != 1) {
			std::fprintf(stderr, "insn_count: wrong results: [1]=%lld (want %lld) [2]=%lld [3]=%lld\n",
				     static_cast<long long>(c.base[1]), static_cast<long long>(expect_acc),
				     static_cast<long long>(c.base[2]), static_cast<long long>(c.base[3]));
			return 1;
		}
	}
	check(rma_win_free(&c.win), "free");
	if (c.rank == 0)
		std::printf("insn_count: %d cases x %d iterations ran\n", 14, kIters);
	return rma_finalize();
}
