/* SPDX-License-Identifier: MIT */
/* Environment, communicators, groups and info objects through the C API. */
#include <gtest/gtest.h>

#include <cstring>
#include <initializer_list>
#include <string>
#include <vector>

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

/* The size and rank of @comm, and that a barrier over it completes. */
void expectComm(rma_comm comm, int size, int rank)
{
	ASSERT_NE(comm, RMA_COMM_NULL);
	int s = -1, r = -1;
	rma_comm_size(comm, &s);
	rma_comm_rank(comm, &r);
	EXPECT_EQ(s, size);
	EXPECT_EQ(r, rank);
	EXPECT_EQ(rma_barrier(comm), RMA_SUCCESS);
}

TEST(CommSplitTypeTest, SharedGroupsTheHostsProcesses)
{
	EXPECT_RANKS_PASS(runRanks(4, [](int) {
			  ASSERT_EQ(rma_init(nullptr, nullptr), RMA_SUCCESS);
			  rma_comm_set_errhandler(RMA_COMM_WORLD, RMA_ERRORS_RETURN);
			  rma_comm_set_errhandler(RMA_COMM_SELF, RMA_ERRORS_RETURN);
			  int rank = worldRank();
			  /* One host: every rank, ordered by key (reversed here). */
			  rma_comm host;
			  ASSERT_EQ(rma_comm_split_type(RMA_COMM_WORLD, RMA_COMM_TYPE_SHARED, -rank, RMA_INFO_NULL, &host),
				    RMA_SUCCESS);
			  expectComm(host, 4, 3 - rank);
			  /* It inherits the error handler and carries windows whose memory every rank maps. */
			  rma_errhandler eh;
			  rma_comm_get_errhandler(host, &eh);
			  EXPECT_EQ(eh, RMA_ERRORS_RETURN);
			  rma_win win;
			  int *base;
			  ASSERT_EQ(rma_win_allocate_shared(sizeof(int), sizeof(int), RMA_INFO_NULL, host, &base, &win),
				    RMA_SUCCESS);
			  *base = rank;
			  rma_win_fence(0, win);
			  rma_aint size;
			  int unit;
			  int *peer;
			  ASSERT_EQ(rma_win_shared_query(win, 0, &size, &unit, &peer), RMA_SUCCESS);
			  EXPECT_EQ(*peer, 3); /* host rank 0 is world rank 3 */
			  rma_win_fence(0, win);
			  rma_win_free(&win);
			  rma_comm_free(&host);

			  /* RMA_UNDEFINED opts out; an info object is accepted. */
			  rma_info info;
			  rma_info_create(&info);
			  rma_info_set(info, "shmem_topo", "numa");
			  rma_comm part;
			  ASSERT_EQ(rma_comm_split_type(RMA_COMM_WORLD, rank == 1 ? RMA_UNDEFINED : RMA_COMM_TYPE_SHARED,
							0, info, &part),
				    RMA_SUCCESS);
			  if (rank == 1) {
				  EXPECT_EQ(part, RMA_COMM_NULL);
			  } else {
				  expectComm(part, 3, rank == 0 ? 0 : rank - 1);
				  rma_comm_free(&part);
			  }

			  /* Split a sub-communicator. */
			  rma_comm half;
			  rma_comm_split(RMA_COMM_WORLD, rank % 2, rank, &half);
			  ASSERT_EQ(rma_comm_split_type(half, RMA_COMM_TYPE_SHARED, 0, RMA_INFO_NULL, &part), RMA_SUCCESS);
			  expectComm(part, 2, rank / 2);
			  rma_comm_free(&part);
			  rma_comm_free(&half);

			  /* A bad split type or info on one rank: that rank gets the error, the others go on. */
			  part = RMA_COMM_NULL;
			  int rc = rma_comm_split_type(RMA_COMM_WORLD, rank == 2 ? 99 : RMA_COMM_TYPE_SHARED, 0,
						       RMA_INFO_NULL, &part);
			  if (rank == 2) {
				  EXPECT_EQ(errorClassOf(rc), RMA_ERR_ARG) << errorText(rc);
				  EXPECT_EQ(part, RMA_COMM_NULL);
			  } else {
				  ASSERT_EQ(rc, RMA_SUCCESS);
				  expectComm(part, 3, rank == 3 ? 2 : rank);
				  rma_comm_free(&part);
			  }
			  rma_info stale = info;
			  rma_info_free(&info);
			  rc = rma_comm_split_type(RMA_COMM_WORLD, RMA_COMM_TYPE_SHARED, 0, rank == 0 ? stale : RMA_INFO_NULL,
						   &part);
			  if (rank == 0) {
				  EXPECT_EQ(errorClassOf(rc), RMA_ERR_INFO) << errorText(rc);
				  EXPECT_EQ(part, RMA_COMM_NULL);
			  } else {
				  ASSERT_EQ(rc, RMA_SUCCESS);
				  expectComm(part, 3, rank - 1);
				  rma_comm_free(&part);
			  }
			  /* Local errors. */
			  EXPECT_CLASS(rma_comm_split_type(RMA_COMM_NULL, RMA_COMM_TYPE_SHARED, 0, RMA_INFO_NULL, &part),
				       RMA_ERR_COMM);
			  EXPECT_CLASS(rma_comm_split_type(RMA_COMM_WORLD, RMA_COMM_TYPE_SHARED, 0, RMA_INFO_NULL, nullptr),
				       RMA_ERR_ARG);
			  ASSERT_EQ(rma_finalize(), RMA_SUCCESS);
		  }));
}

TEST(CommSplitTypeTest, SingletonGetsACommunicatorOfOne)
{
	EXPECT_RANKS_PASS(runRanks(1, [](int) {
			  ASSERT_EQ(rma_init(nullptr, nullptr), RMA_SUCCESS);
			  rma_comm host;
			  ASSERT_EQ(rma_comm_split_type(RMA_COMM_SELF, RMA_COMM_TYPE_SHARED, 0, RMA_INFO_NULL, &host),
				    RMA_SUCCESS);
			  expectComm(host, 1, 0);
			  rma_comm_free(&host);
			  ASSERT_EQ(rma_finalize(), RMA_SUCCESS);
		  }));
}

/* The world group's members @ranks, in that order. */
rma_group worldSubgroup(std::initializer_list<int> ranks)
{
	rma_group world, g;
	rma_comm_group(RMA_COMM_WORLD, &world);
	std::vector<int> r(ranks);
	EXPECT_EQ(rma_group_incl(world, static_cast<int>(r.size()), r.data(), &g), RMA_SUCCESS);
	rma_group_free(&world);
	return g;
}

TEST(CommCreateGroupTest, OnlyTheMembersCall)
{
	EXPECT_RANKS_PASS(runRanks(4, [](int) {
			  ASSERT_EQ(rma_init(nullptr, nullptr), RMA_SUCCESS);
			  rma_comm_set_errhandler(RMA_COMM_WORLD, RMA_ERRORS_RETURN);
			  int rank = worldRank();
			  /* Ranks 3 and 1, in that order; ranks 0 and 2 do not call at all. */
			  if (rank == 1 || rank == 3) {
				  rma_group g = worldSubgroup({ 3, 1 });
				  rma_comm pair;
				  ASSERT_EQ(rma_comm_create_group(RMA_COMM_WORLD, g, 7, &pair), RMA_SUCCESS);
				  expectComm(pair, 2, rank == 3 ? 0 : 1);
				  rma_errhandler eh;
				  rma_comm_get_errhandler(pair, &eh);
				  EXPECT_EQ(eh, RMA_ERRORS_RETURN); /* inherited */
				  /* A window over it: rank 0 of the pair (world 3) writes to rank 1 (world 1). */
				  rma_win win;
				  int *base;
				  ASSERT_EQ(rma_win_allocate(sizeof(int), sizeof(int), RMA_INFO_NULL, pair, &base, &win),
					    RMA_SUCCESS);
				  *base = -1;
				  rma_win_fence(0, win);
				  if (rank == 3) {
					  EXPECT_EQ(rma_put(&rank, 1, RMA_INT, 1, 0, 1, RMA_INT, win), RMA_SUCCESS);
				  }
				  rma_win_fence(0, win);
				  if (rank == 1) {
					  EXPECT_EQ(*base, 3);
				  }
				  rma_win_free(&win);
				  /* The same group again: a second, distinct communicator. */
				  rma_comm again;
				  ASSERT_EQ(rma_comm_create_group(RMA_COMM_WORLD, g, 7, &again), RMA_SUCCESS);
				  EXPECT_NE(again, pair);
				  expectComm(again, 2, rank == 3 ? 0 : 1);
				  rma_comm_free(&again);
				  rma_comm_free(&pair);
				  rma_group_free(&g);
			  }
			  /* Disjoint groups at the same time with the same tag. */
			  rma_group mine = rank % 2 == 0 ? worldSubgroup({ 0, 2 }) : worldSubgroup({ 1, 3 });
			  rma_comm half;
			  ASSERT_EQ(rma_comm_create_group(RMA_COMM_WORLD, mine, 0, &half), RMA_SUCCESS);
			  expectComm(half, 2, rank / 2);
			  /* A group of a sub-communicator, over that communicator; and one of one. */
			  rma_group self = worldSubgroup({ rank });
			  rma_comm one;
			  ASSERT_EQ(rma_comm_create_group(half, self, 3, &one), RMA_SUCCESS);
			  expectComm(one, 1, 0);
			  rma_comm_free(&one);
			  rma_comm_free(&half);
			  rma_group_free(&mine);
			  rma_group_free(&self);
			  /* A process outside the group gets RMA_COMM_NULL without meeting anyone. */
			  rma_comm none = RMA_COMM_WORLD;
			  ASSERT_EQ(rma_comm_create_group(RMA_COMM_WORLD, RMA_GROUP_EMPTY, 0, &none), RMA_SUCCESS);
			  EXPECT_EQ(none, RMA_COMM_NULL);
			  rma_group others = worldSubgroup({ (rank + 1) % 4 });
			  none = RMA_COMM_WORLD;
			  ASSERT_EQ(rma_comm_create_group(RMA_COMM_WORLD, others, 0, &none), RMA_SUCCESS);
			  EXPECT_EQ(none, RMA_COMM_NULL);
			  rma_group_free(&others);
			  ASSERT_EQ(rma_barrier(RMA_COMM_WORLD), RMA_SUCCESS);
			  ASSERT_EQ(rma_finalize(), RMA_SUCCESS);
		  }));
}

TEST(CommCreateGroupTest, BadArgumentsAreLocalErrors)
{
	EXPECT_RANKS_PASS(runRanks(4, [](int) {
			  ASSERT_EQ(rma_init(nullptr, nullptr), RMA_SUCCESS);
			  rma_comm_set_errhandler(RMA_COMM_WORLD, RMA_ERRORS_RETURN);
			  rma_comm_set_errhandler(RMA_COMM_SELF, RMA_ERRORS_RETURN);
			  int rank = worldRank();
			  rma_comm half;
			  rma_comm_split(RMA_COMM_WORLD, rank % 2, rank, &half);
			  rma_group all = worldSubgroup({ 0, 1, 2, 3 });
			  rma_comm out = RMA_COMM_NULL;
			  /* Members outside the communicator. */
			  int rc = rma_comm_create_group(half, all, 0, &out);
			  EXPECT_EQ(errorClassOf(rc), RMA_ERR_GROUP) << errorText(rc);
			  EXPECT_NE(errorText(rc).find("not in the communicator"), std::string::npos) << errorText(rc);
			  EXPECT_CLASS(rma_comm_create_group(RMA_COMM_WORLD, all, -1, &out), RMA_ERR_TAG);
			  EXPECT_CLASS(rma_comm_create_group(RMA_COMM_WORLD, RMA_GROUP_NULL, 0, &out), RMA_ERR_GROUP);
			  rma_group stale = worldSubgroup({ rank });
			  rma_group copy = stale;
			  rma_group_free(&copy);
			  EXPECT_CLASS(rma_comm_create_group(RMA_COMM_WORLD, stale, 0, &out), RMA_ERR_GROUP);
			  EXPECT_CLASS(rma_comm_create_group(RMA_COMM_WORLD, all, 0, nullptr), RMA_ERR_ARG);
			  EXPECT_CLASS(rma_comm_create_group(RMA_COMM_NULL, all, 0, &out), RMA_ERR_COMM);
			  EXPECT_EQ(out, RMA_COMM_NULL);
			  /* After the errors, a good call over everyone still meets. */
			  ASSERT_EQ(rma_comm_create_group(RMA_COMM_WORLD, all, 0, &out), RMA_SUCCESS);
			  expectComm(out, 4, rank);
			  rma_comm_free(&out);
			  rma_group_free(&all);
			  rma_comm_free(&half);
			  ASSERT_EQ(rma_finalize(), RMA_SUCCESS);
		  }));
}

} /* namespace */
