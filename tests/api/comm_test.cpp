/* SPDX-License-Identifier: MIT */
/* Environment, communicators, groups and info objects through the C API. */
#include <gtest/gtest.h>

#include <cstring>
#include <string>

#include <rma/rma.h>

#include "support/multiproc.h"
#include "win/window_test_util.h"

using namespace rmatest;

namespace {

TEST(EnvironmentTest, SingletonWithoutLauncher)
{
	EXPECT_RANKS_PASS(runRanks(1, [](int) {
			  int flag = -1;
			  rma_initialized(&flag);
			  EXPECT_EQ(flag, 0);
			  /* Calls before init fail cleanly. */
			  int rank;
			  EXPECT_EQ(errorClassOf(rma_comm_rank(RMA_COMM_WORLD, &rank)), RMA_ERR_OTHER);
			  int provided = -1;
			  ASSERT_EQ(rma_init_thread(nullptr, nullptr, RMA_THREAD_MULTIPLE, &provided), RMA_SUCCESS);
			  EXPECT_EQ(provided, RMA_THREAD_SERIALIZED);
			  EXPECT_EQ(errorClassOf(rma_init(nullptr, nullptr)), RMA_ERR_OTHER);
			  rma_initialized(&flag);
			  EXPECT_EQ(flag, 1);
			  int size;
			  rma_comm_size(RMA_COMM_SELF, &size);
			  EXPECT_EQ(size, 1);
			  double t0 = rma_wtime();
			  EXPECT_GT(rma_wtime(), t0 - 1e-9);
			  EXPECT_GT(rma_wtick(), 0.0);
			  EXPECT_LT(rma_wtick(), 1e-3);
			  rma_aint a;
			  int x;
			  rma_get_address(&x, &a);
			  EXPECT_EQ(a, reinterpret_cast<rma_aint>(&x));
			  EXPECT_EQ(rma_aint_diff(rma_aint_add(a, 12), a), 12);
			  ASSERT_EQ(rma_finalize(), RMA_SUCCESS);
			  rma_finalized(&flag);
			  EXPECT_EQ(flag, 1);
		  }));
}

TEST(CommTest, SplitDupAndGroups)
{
	EXPECT_RANKS_PASS(runRanks(4, [](int) {
			  ASSERT_EQ(rma_init(nullptr, nullptr), RMA_SUCCESS);
			  int rank, size;
			  rma_comm_rank(RMA_COMM_WORLD, &rank);
			  rma_comm_size(RMA_COMM_WORLD, &size);
			  ASSERT_EQ(size, 4);
			  /* Odd and even ranks, reversed by key. */
			  rma_comm half;
			  ASSERT_EQ(rma_comm_split(RMA_COMM_WORLD, rank % 2, -rank, &half), RMA_SUCCESS);
			  int hr, hs;
			  rma_comm_rank(half, &hr);
			  rma_comm_size(half, &hs);
			  EXPECT_EQ(hs, 2);
			  EXPECT_EQ(hr, rank < 2 ? 1 : 0);
			  /* A window over the half: rank 0 of each half writes to rank 1 of it. */
			  rma_win win;
			  int *base;
			  ASSERT_EQ(rma_win_allocate(sizeof(int), sizeof(int), RMA_INFO_NULL, half, &base, &win), RMA_SUCCESS);
			  *base = -1;
			  rma_win_fence(0, win);
			  if (hr == 0) {
				  EXPECT_EQ(rma_put(&rank, 1, RMA_INT, 1, 0, 1, RMA_INT, win), RMA_SUCCESS);
			  }
			  rma_win_fence(0, win);
			  if (hr == 1) {
				  EXPECT_EQ(*base, rank + 2);
			  }
			  rma_group wg;
			  ASSERT_EQ(rma_win_get_group(win, &wg), RMA_SUCCESS);
			  rma_group worldGroup;
			  rma_comm_group(RMA_COMM_WORLD, &worldGroup);
			  int in[2] = { 0, 1 }, out[2];
			  ASSERT_EQ(rma_group_translate_ranks(wg, 2, in, worldGroup, out), RMA_SUCCESS);
			  EXPECT_EQ(out[0], rank % 2 + 2);
			  EXPECT_EQ(out[1], rank % 2);
			  rma_group_free(&wg);
			  ASSERT_EQ(rma_win_free(&win), RMA_SUCCESS);

			  /* A color of RMA_UNDEFINED gets no communicator. */
			  rma_comm none;
			  ASSERT_EQ(rma_comm_split(RMA_COMM_WORLD, rank == 3 ? RMA_UNDEFINED : 0, 0, &none), RMA_SUCCESS);
			  if (rank == 3) {
				  EXPECT_EQ(none, RMA_COMM_NULL);
			  } else {
				  int ns;
				  rma_comm_size(none, &ns);
				  EXPECT_EQ(ns, 3);
				  ASSERT_EQ(rma_barrier(none), RMA_SUCCESS);
				  rma_comm_free(&none);
			  }

			  rma_comm dup;
			  ASSERT_EQ(rma_comm_dup(half, &dup), RMA_SUCCESS);
			  int dr;
			  rma_comm_rank(dup, &dr);
			  EXPECT_EQ(dr, hr);
			  ASSERT_EQ(rma_barrier(dup), RMA_SUCCESS);
			  ASSERT_EQ(rma_comm_free(&dup), RMA_SUCCESS);
			  EXPECT_EQ(dup, RMA_COMM_NULL);
			  ASSERT_EQ(rma_comm_free(&half), RMA_SUCCESS);

			  /* Groups: incl, excl, rank, errors. */
			  rma_comm_set_errhandler(RMA_COMM_SELF, RMA_ERRORS_RETURN);
			  int pick[2] = { 3, 1 };
			  rma_group g;
			  ASSERT_EQ(rma_group_incl(worldGroup, 2, pick, &g), RMA_SUCCESS);
			  int gr;
			  rma_group_rank(g, &gr);
			  EXPECT_EQ(gr, rank == 3 ? 0 : rank == 1 ? 1 : RMA_UNDEFINED);
			  rma_group_free(&g);
			  ASSERT_EQ(rma_group_excl(worldGroup, 2, pick, &g), RMA_SUCCESS);
			  int gs;
			  rma_group_size(g, &gs);
			  EXPECT_EQ(gs, 2);
			  rma_group_free(&g);
			  int dupPick[2] = { 1, 1 };
			  EXPECT_EQ(errorClassOf(rma_group_incl(worldGroup, 2, dupPick, &g)), RMA_ERR_RANK);
			  int badPick[1] = { 4 };
			  EXPECT_EQ(errorClassOf(rma_group_incl(worldGroup, 1, badPick, &g)), RMA_ERR_RANK);
			  rma_group_free(&worldGroup);
			  EXPECT_EQ(errorClassOf(rma_group_size(worldGroup, &gs)), RMA_ERR_GROUP);
			  rma_comm world = RMA_COMM_WORLD;
			  EXPECT_EQ(errorClassOf(rma_comm_free(&world)), RMA_ERR_COMM);
			  ASSERT_EQ(rma_finalize(), RMA_SUCCESS);
		  }));
}

TEST(InfoApiTest, SetGetDeleteDupAndLimits)
{
	EXPECT_RANKS_PASS(runRanks(1, [](int) {
			  ASSERT_EQ(rma_init(nullptr, nullptr), RMA_SUCCESS);
			  rma_comm_set_errhandler(RMA_COMM_SELF, RMA_ERRORS_RETURN);
			  rma_info info;
			  ASSERT_EQ(rma_info_create(&info), RMA_SUCCESS);
			  ASSERT_EQ(rma_info_set(info, "alpha", "one"), RMA_SUCCESS);
			  ASSERT_EQ(rma_info_set(info, "beta", "two"), RMA_SUCCESS);
			  ASSERT_EQ(rma_info_set(info, "alpha", "uno"), RMA_SUCCESS);
			  int n;
			  rma_info_get_nkeys(info, &n);
			  EXPECT_EQ(n, 2);
			  char key[RMA_MAX_INFO_KEY + 1];
			  ASSERT_EQ(rma_info_get_nthkey(info, 1, key), RMA_SUCCESS);
			  EXPECT_STREQ(key, "beta");
			  char value[8];
			  int flag, len = 8;
			  ASSERT_EQ(rma_info_get_string(info, "alpha", &len, value, &flag), RMA_SUCCESS);
			  EXPECT_EQ(flag, 1);
			  EXPECT_STREQ(value, "uno");
			  EXPECT_EQ(len, 4);
			  len = 2; /* truncates, reports the full length */
			  ASSERT_EQ(rma_info_get_string(info, "alpha", &len, value, &flag), RMA_SUCCESS);
			  EXPECT_STREQ(value, "u");
			  EXPECT_EQ(len, 4);
			  ASSERT_EQ(rma_info_get(info, "alpha", 2, value, &flag), RMA_SUCCESS);
			  EXPECT_STREQ(value, "un");
			  ASSERT_EQ(rma_info_get_valuelen(info, "gamma", &len, &flag), RMA_SUCCESS);
			  EXPECT_EQ(flag, 0);
			  rma_info copy;
			  ASSERT_EQ(rma_info_dup(info, &copy), RMA_SUCCESS);
			  ASSERT_EQ(rma_info_delete(info, "alpha"), RMA_SUCCESS);
			  EXPECT_EQ(errorClassOf(rma_info_delete(info, "alpha")), RMA_ERR_INFO_NOKEY);
			  ASSERT_EQ(rma_info_get_valuelen(copy, "alpha", &len, &flag), RMA_SUCCESS);
			  EXPECT_EQ(flag, 1);
			  std::string longKey(RMA_MAX_INFO_KEY + 1, 'k');
			  EXPECT_EQ(errorClassOf(rma_info_set(info, longKey.c_str(), "v")), RMA_ERR_INFO_KEY);
			  EXPECT_EQ(errorClassOf(rma_info_set(info, "", "v")), RMA_ERR_INFO_KEY);
			  std::string longValue(RMA_MAX_INFO_VAL + 1, 'v');
			  EXPECT_EQ(errorClassOf(rma_info_set(info, "k", longValue.c_str())), RMA_ERR_INFO_VALUE);
			  EXPECT_EQ(errorClassOf(rma_info_get_nthkey(info, 5, key)), RMA_ERR_ARG);
			  ASSERT_EQ(rma_info_free(&info), RMA_SUCCESS);
			  EXPECT_EQ(info, RMA_INFO_NULL);
			  rma_info stale = copy;
			  ASSERT_EQ(rma_info_free(&copy), RMA_SUCCESS);
			  EXPECT_EQ(errorClassOf(rma_info_set(stale, "a", "b")), RMA_ERR_INFO);
			  int size;
			  EXPECT_EQ(rma_type_size(RMA_LONG_DOUBLE, &size), RMA_SUCCESS);
			  EXPECT_EQ(size, static_cast<int>(sizeof(long double)));
			  EXPECT_EQ(rma_type_size(RMA_C_DOUBLE_COMPLEX, &size), RMA_SUCCESS);
			  EXPECT_EQ(size, 16);
			  EXPECT_EQ(errorClassOf(rma_type_size(RMA_DATATYPE_NULL, &size)), RMA_ERR_TYPE);
			  char text[RMA_MAX_ERROR_STRING];
			  int tl;
			  EXPECT_EQ(rma_error_string(RMA_ERR_RMA_SYNC, text, &tl), RMA_SUCCESS);
			  EXPECT_NE(std::string(text).find("synchronization"), std::string::npos);
			  EXPECT_EQ(rma_error_string(-3, text, &tl), RMA_ERR_ARG);
			  ASSERT_EQ(rma_finalize(), RMA_SUCCESS);
		  }));
}

} /* namespace */
