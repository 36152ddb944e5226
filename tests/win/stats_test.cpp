/* SPDX-License-Identifier: MIT */
/*
 * Traffic statistics (RMA_STATS): a job of known operations writes exactly
 * their counts, by kind, origin and target (world ranks), into the job's
 * file; off by default nothing is written; bad values fail rma_init.
 */
#include <gtest/gtest.h>

#include <dirent.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>
#include <rma/rma.h>

#include "support/multiproc.h"

using namespace librma::test;
using json = nlohmann::json;

namespace {

constexpr int kRanks = 3;
constexpr int kInts = 64;

/* RMA_STATS set to @value for the life of the object (the ranks inherit it). */
class StatsEnv
{
public:
	explicit StatsEnv(const char *value)
	{
		if (value)
			setenv("RMA_STATS", value, 1);
		else
			unsetenv("RMA_STATS");
	}
	~StatsEnv() { unsetenv("RMA_STATS"); }
};

/* The files in @dir (names). */
std::vector<std::string> filesIn(const std::string &dir)
{
	std::vector<std::string> names;
	if (DIR *d = opendir(dir.c_str())) {
		while (dirent *e = readdir(d))
			if (std::string(e->d_name) != "." && std::string(e->d_name) != "..")
				names.push_back(e->d_name);
		closedir(d);
	}
	return names;
}

/* Every operation kind, blocking and request forms, with known sizes (see the expectations below). */
void knownTraffic(int rank)
{
	ASSERT_EQ(rma_init(nullptr, nullptr), RMA_SUCCESS);
	int size;
	rma_comm_size(RMA_COMM_WORLD, &size);
	ASSERT_EQ(size, kRanks);
	int *base = nullptr;
	rma_win win;
	ASSERT_EQ(rma_win_allocate(kInts * sizeof(int), sizeof(int), RMA_INFO_NULL, RMA_COMM_WORLD, &base, &win),
		  RMA_SUCCESS);
	ASSERT_EQ(rma_win_set_name(win, "traffic"), RMA_SUCCESS);
	ASSERT_EQ(rma_win_set_errhandler(win, RMA_ERRORS_RETURN), RMA_SUCCESS);
	const int right = (rank + 1) % size, left = (rank + 2) % size;
	int src[kInts] = {}, dst[kInts] = {}, one = 1, cmp = 0, res = 0;
	rma_request req;

	ASSERT_EQ(rma_win_lock_all(0, win), RMA_SUCCESS);
	/* put -> right: 3 ops, 40 bytes. */
	ASSERT_EQ(rma_put(src, 4, RMA_INT, right, 0, 4, RMA_INT, win), RMA_SUCCESS);
	ASSERT_EQ(rma_put(src, 4, RMA_INT, right, 4, 4, RMA_INT, win), RMA_SUCCESS);
	ASSERT_EQ(rma_rput(src, 2, RMA_INT, right, 8, 2, RMA_INT, win, &req), RMA_SUCCESS);
	ASSERT_EQ(rma_wait(&req, RMA_STATUS_IGNORE), RMA_SUCCESS);
	/* Not counted: PROC_NULL, and a put that fails (out of the window). */
	ASSERT_EQ(rma_put(src, 4, RMA_INT, RMA_PROC_NULL, 0, 4, RMA_INT, win), RMA_SUCCESS);
	ASSERT_NE(rma_put(src, 4, RMA_INT, right, kInts, 4, RMA_INT, win), RMA_SUCCESS);
	/* get <- left: 2 ops, 36 bytes. */
	ASSERT_EQ(rma_get(dst, 8, RMA_INT, left, 0, 8, RMA_INT, win), RMA_SUCCESS);
	ASSERT_EQ(rma_rget(dst, 1, RMA_INT, left, 0, 1, RMA_INT, win, &req), RMA_SUCCESS);
	ASSERT_EQ(rma_wait(&req, RMA_STATUS_IGNORE), RMA_SUCCESS);
	/* accumulate -> right: 3 ops, 4 + 64 + 8 = 76 bytes (origin atomics, in place, a request). */
	ASSERT_EQ(rma_accumulate(&one, 1, RMA_INT, right, 16, 1, RMA_INT, RMA_SUM, win), RMA_SUCCESS);
	ASSERT_EQ(rma_accumulate(src, 16, RMA_INT, right, 16, 16, RMA_INT, RMA_SUM, win), RMA_SUCCESS);
	ASSERT_EQ(rma_raccumulate(src, 2, RMA_INT, right, 32, 2, RMA_INT, RMA_SUM, win, &req), RMA_SUCCESS);
	ASSERT_EQ(rma_wait(&req, RMA_STATUS_IGNORE), RMA_SUCCESS);
	/* get_accumulate -> self: 2 ops, 12 bytes. */
	ASSERT_EQ(rma_get_accumulate(&one, 1, RMA_INT, dst, 1, RMA_INT, rank, 40, 1, RMA_INT, RMA_SUM, win),
		  RMA_SUCCESS);
	ASSERT_EQ(rma_rget_accumulate(src, 2, RMA_INT, dst, 2, RMA_INT, rank, 40, 2, RMA_INT, RMA_SUM, win, &req),
		  RMA_SUCCESS);
	ASSERT_EQ(rma_wait(&req, RMA_STATUS_IGNORE), RMA_SUCCESS);
	/* fetch_and_op -> left: 2 ops, 8 bytes. */
	ASSERT_EQ(rma_fetch_and_op(&one, &res, RMA_INT, left, 48, RMA_SUM, win), RMA_SUCCESS);
	ASSERT_EQ(rma_fetch_and_op(nullptr, &res, RMA_INT, left, 48, RMA_NO_OP, win), RMA_SUCCESS);
	/* compare_and_swap -> right: 1 op, 4 bytes. */
	ASSERT_EQ(rma_compare_and_swap(&one, &cmp, &res, RMA_INT, right, 56, win), RMA_SUCCESS);
	ASSERT_EQ(rma_win_unlock_all(win), RMA_SUCCESS);
	ASSERT_EQ(rma_win_free(&win), RMA_SUCCESS);

	/* A window over world ranks 0 and 2, left open at rma_finalize: each puts one int to the other. */
	rma_comm even;
	ASSERT_EQ(rma_comm_split(RMA_COMM_WORLD, rank % 2, rank, &even), RMA_SUCCESS);
	if (rank % 2 == 0) {
		rma_win open;
		ASSERT_EQ(rma_win_allocate(kInts * sizeof(int), sizeof(int), RMA_INFO_NULL, even, &base, &open),
			  RMA_SUCCESS);
		ASSERT_EQ(rma_win_set_name(open, "open"), RMA_SUCCESS);
		ASSERT_EQ(rma_win_fence(0, open), RMA_SUCCESS);
		ASSERT_EQ(rma_put(&one, 1, RMA_INT, rank == 0 ? 1 : 0, 0, 1, RMA_INT, open), RMA_SUCCESS);
		ASSERT_EQ(rma_win_fence(0, open), RMA_SUCCESS);
	}
	ASSERT_EQ(rma_finalize(), RMA_SUCCESS);
}

const json *windowNamed(const json &file, const std::string &name)
{
	for (const json &w : file["windows"])
		if (w["name"] == name)
			return &w;
	return nullptr;
}

TEST(StatsTest, KnownOperationsGiveExactCountsByKindAndPair)
{
	ScratchDir dir;
	const std::string path = dir.file("job.json");
	StatsEnv env(path.c_str());
	ASSERT_EQ(runRanks(kRanks, knownTraffic), 0);

	json f = json::parse(readFile(path), nullptr, false);
	ASSERT_FALSE(f.is_discarded()) << readFile(path);
	EXPECT_EQ(f["format"], "librma-stats");
	EXPECT_EQ(f["version"], 1);
	EXPECT_EQ(f["world_size"], kRanks);
	ASSERT_EQ(f["windows"].size(), 2u) << f.dump(1);

	const json *w = windowNamed(f, "traffic");
	ASSERT_NE(w, nullptr) << f.dump(1);
	EXPECT_EQ((*w)["flavor"], "allocate");
	EXPECT_EQ((*w)["ranks"], json({ 0, 1, 2 }));
	EXPECT_EQ((*w)["sizes"], json({ kInts * 4, kInts * 4, kInts * 4 }));
	EXPECT_EQ((*w)["size"], kRanks * kInts * 4);
	std::vector<int> reported = (*w)["reported"].get<std::vector<int>>();
	std::sort(reported.begin(), reported.end());
	EXPECT_EQ(reported, std::vector<int>({ 0, 1, 2 }));
	struct Expect {
		const char *kind;
		int shift; /* target = (origin + shift) % kRanks */
		uint64_t ops, bytes;
	};
	const Expect expects[] = { { "put", 1, 3, 40 },	       { "get", 2, 2, 36 },	       { "accumulate", 1, 3, 76 },
				   { "get_accumulate", 0, 2, 12 }, { "fetch_and_op", 2, 2, 8 }, { "compare_and_swap", 1, 1, 4 } };
	for (const Expect &e : expects)
		for (int o = 0; o < kRanks; ++o)
			for (int t = 0; t < kRanks; ++t) {
				const bool hit = t == (o + e.shift) % kRanks;
				EXPECT_EQ((*w)["ops"][e.kind][o][t].get<uint64_t>(), hit ? e.ops : 0)
					<< e.kind << " " << o << "->" << t;
				EXPECT_EQ((*w)["bytes"][e.kind][o][t].get<uint64_t>(), hit ? e.bytes : 0)
					<< e.kind << " " << o << "->" << t;
			}

	/* Left open at rma_finalize, over world ranks 0 and 2: window rank 1 is world rank 2. */
	const json *open = windowNamed(f, "open");
	ASSERT_NE(open, nullptr) << f.dump(1);
	EXPECT_EQ((*open)["ranks"], json({ 0, 2 }));
	EXPECT_EQ((*open)["ops"]["put"], json({ { 0, 1 }, { 1, 0 } }));
	EXPECT_EQ((*open)["bytes"]["put"], json({ { 0, 4 }, { 4, 0 } }));
}

/*
 * A window freed collectively is written whole by its rank 0: here each
 * rank's RMA_STATS names its own directory, as on hosts without a shared
 * file system, and rank 0's file holds both rows while rank 1's stays empty.
 */
TEST(StatsTest, AFreedWindowIsWrittenWholeByItsRankZero)
{
	ScratchDir a, b;
	StatsEnv env(a.path().c_str());
	const std::string other = b.path();
	ASSERT_EQ(runRanks(2, [&other](int rank) {
			  if (rank == 1)
				  setenv("RMA_STATS", other.c_str(), 1);
			  ASSERT_EQ(rma_init(nullptr, nullptr), RMA_SUCCESS);
			  int *base;
			  rma_win win;
			  ASSERT_EQ(rma_win_allocate(64, 1, RMA_INFO_NULL, RMA_COMM_WORLD, &base, &win), RMA_SUCCESS);
			  ASSERT_EQ(rma_win_fence(0, win), RMA_SUCCESS);
			  char c[5] = {};
			  ASSERT_EQ(rma_put(c, rank + 2, RMA_CHAR, 1 - rank, 0, rank + 2, RMA_CHAR, win), RMA_SUCCESS);
			  ASSERT_EQ(rma_win_fence(0, win), RMA_SUCCESS);
			  ASSERT_EQ(rma_win_free(&win), RMA_SUCCESS);
			  ASSERT_EQ(rma_finalize(), RMA_SUCCESS);
		  }),
		  0);
	EXPECT_TRUE(filesIn(b.path()).empty()) << "rank 1 wrote its own row";
	json f = json::parse(readFile(a.file("rma-stats.json")), nullptr, false);
	ASSERT_FALSE(f.is_discarded());
	ASSERT_EQ(f["windows"].size(), 1u);
	EXPECT_EQ(f["windows"][0]["bytes"]["put"], json({ { 0, 2 }, { 3, 0 } }));
	EXPECT_EQ(f["windows"][0]["sizes"], json({ 64, 64 }));
	std::vector<int> reported = f["windows"][0]["reported"].get<std::vector<int>>();
	EXPECT_EQ(reported, std::vector<int>({ 0, 1 }));
}

TEST(StatsTest, DirectoryValueWritesTheDefaultNameInIt)
{
	ScratchDir dir;
	StatsEnv env(dir.path().c_str());
	ASSERT_EQ(runRanks(2, [](int rank) {
			  ASSERT_EQ(rma_init(nullptr, nullptr), RMA_SUCCESS);
			  int *base;
			  rma_win win;
			  ASSERT_EQ(rma_win_allocate(64, 1, RMA_INFO_NULL, RMA_COMM_WORLD, &base, &win), RMA_SUCCESS);
			  ASSERT_EQ(rma_win_fence(0, win), RMA_SUCCESS);
			  char c[3] = {};
			  ASSERT_EQ(rma_put(c, 3, RMA_CHAR, 1 - rank, 0, 3, RMA_CHAR, win), RMA_SUCCESS);
			  ASSERT_EQ(rma_win_fence(0, win), RMA_SUCCESS);
			  ASSERT_EQ(rma_win_free(&win), RMA_SUCCESS);
			  ASSERT_EQ(rma_finalize(), RMA_SUCCESS);
		  }),
		  0);
	EXPECT_EQ(filesIn(dir.path()), std::vector<std::string>({ "rma-stats.json" }));
	json f = json::parse(readFile(dir.file("rma-stats.json")), nullptr, false);
	ASSERT_FALSE(f.is_discarded());
	ASSERT_EQ(f["windows"].size(), 1u);
	EXPECT_EQ(f["windows"][0]["bytes"]["put"], json({ { 0, 3 }, { 3, 0 } }));
}

TEST(StatsTest, OffByDefaultAndAtZeroWritesNothing)
{
	for (const char *value : { static_cast<const char *>(nullptr), "0" }) {
		ScratchDir dir;
		StatsEnv env(value);
		const std::string where = dir.path();
		ASSERT_EQ(runRanks(2, [&](int rank) {
				  ASSERT_EQ(chdir(where.c_str()), 0);
				  ASSERT_EQ(rma_init(nullptr, nullptr), RMA_SUCCESS);
				  int *base;
				  rma_win win;
				  ASSERT_EQ(rma_win_allocate(64, 1, RMA_INFO_NULL, RMA_COMM_WORLD, &base, &win), RMA_SUCCESS);
				  ASSERT_EQ(rma_win_fence(0, win), RMA_SUCCESS);
				  char c = 1;
				  ASSERT_EQ(rma_put(&c, 1, RMA_CHAR, 1 - rank, 0, 1, RMA_CHAR, win), RMA_SUCCESS);
				  ASSERT_EQ(rma_win_fence(0, win), RMA_SUCCESS);
				  ASSERT_EQ(rma_win_free(&win), RMA_SUCCESS);
				  ASSERT_EQ(rma_finalize(), RMA_SUCCESS);
			  }),
			  0);
		EXPECT_TRUE(filesIn(where).empty()) << (value ? value : "unset");
	}
}

TEST(StatsTest, BadValuesAreRefusedAtInit)
{
	ScratchDir dir;
	const std::string notJson = dir.file("stats.txt");
	for (const std::string &value : { std::string("yes"), std::string("2"), std::string("/nonexistent-dir/s.json"),
					 notJson }) {
		StatsEnv env(value.c_str());
		int status = -1;
		CapturedStdio out = captureStdio([&] {
			status = runRanks(1, [](int) {
				int rc = rma_init(nullptr, nullptr);
				std::fflush(stderr);
				_exit(rc == RMA_SUCCESS ? 0 : 3);
			});
		});
		EXPECT_EQ(status, 3) << value;
		EXPECT_NE(out.err.find("RMA_STATS='" + value + "': accepts"), std::string::npos) << out.err;
	}
	EXPECT_TRUE(filesIn(dir.path()).empty());
}

} /* namespace */
