/* SPDX-License-Identifier: MIT */
/* Group comparison and range inclusion/exclusion through the C API. */
#include <gtest/gtest.h>

#include <array>
#include <climits>
#include <cstring>
#include <string>
#include <vector>

#include <rma/rma.h>

#include "support/multiproc.h"
#include "win/window_test_util.h"

using namespace rmatest;

namespace {

constexpr int kRanks = 5;

/* The world ranks of @g's members, in @g's order. */
std::vector<int> members(rma_group g)
{
	rma_group world;
	rma_comm_group(RMA_COMM_WORLD, &world);
	int n = -1;
	rma_group_size(g, &n);
	std::vector<int> in(n > 0 ? n : 0), out(in.size());
	for (int i = 0; i < n; ++i)
		in[i] = i;
	if (n > 0) {
		EXPECT_EQ(rma_group_translate_ranks(g, n, in.data(), world, out.data()), RMA_SUCCESS);
	}
	rma_group_free(&world);
	return out;
}

rma_group worldGroup()
{
	rma_group g;
	rma_comm_group(RMA_COMM_WORLD, &g);
	return g;
}

int compare(rma_group a, rma_group b)
{
	int result = -1;
	EXPECT_EQ(rma_group_compare(a, b, &result), RMA_SUCCESS);
	return result;
}

TEST(GroupCompareTest, IdentSimilarAndUnequal)
{
	EXPECT_RANKS_PASS(runRanks(kRanks, [](int) {
			  ASSERT_EQ(rma_init(nullptr, nullptr), RMA_SUCCESS);
			  rma_comm_set_errhandler(RMA_COMM_SELF, RMA_ERRORS_RETURN);
			  rma_group a = worldGroup(), b = worldGroup();
			  EXPECT_EQ(compare(a, b), RMA_IDENT); /* two handles, same members, same order */
			  EXPECT_EQ(compare(a, a), RMA_IDENT);

			  int reversed[kRanks] = { 4, 3, 2, 1, 0 };
			  rma_group r;
			  ASSERT_EQ(rma_group_incl(a, kRanks, reversed, &r), RMA_SUCCESS);
			  EXPECT_EQ(compare(a, r), RMA_SIMILAR);
			  EXPECT_EQ(compare(r, a), RMA_SIMILAR);

			  int p01[2] = { 0, 1 }, p02[2] = { 0, 2 }, p10[2] = { 1, 0 };
			  rma_group g01, g02, g10, g0;
			  rma_group_incl(a, 2, p01, &g01);
			  rma_group_incl(a, 2, p02, &g02);
			  rma_group_incl(a, 2, p10, &g10);
			  rma_group_incl(a, 1, p01, &g0);
			  EXPECT_EQ(compare(g01, g02), RMA_UNEQUAL); /* same size, other members */
			  EXPECT_EQ(compare(g01, g0), RMA_UNEQUAL);  /* a subset */
			  EXPECT_EQ(compare(g01, g10), RMA_SIMILAR);
			  EXPECT_EQ(compare(g01, a), RMA_UNEQUAL);

			  /* Every empty group is identical to RMA_GROUP_EMPTY. */
			  rma_group none;
			  ASSERT_EQ(rma_group_excl(a, kRanks, reversed, &none), RMA_SUCCESS);
			  EXPECT_EQ(compare(none, RMA_GROUP_EMPTY), RMA_IDENT);
			  EXPECT_EQ(compare(RMA_GROUP_EMPTY, RMA_GROUP_EMPTY), RMA_IDENT);
			  EXPECT_EQ(compare(RMA_GROUP_EMPTY, g0), RMA_UNEQUAL);

			  /* Errors: invalid or freed groups, NULL result; the result is untouched. */
			  int result = 77;
			  EXPECT_CLASS(rma_group_compare(RMA_GROUP_NULL, a, &result), RMA_ERR_GROUP);
			  EXPECT_CLASS(rma_group_compare(a, RMA_GROUP_NULL, &result), RMA_ERR_GROUP);
			  rma_group stale = g02;
			  rma_group_free(&g02);
			  EXPECT_CLASS(rma_group_compare(stale, a, &result), RMA_ERR_GROUP);
			  EXPECT_EQ(result, 77);
			  EXPECT_CLASS(rma_group_compare(a, b, nullptr), RMA_ERR_ARG);

			  for (rma_group *g : { &a, &b, &r, &g01, &g10, &g0 })
				  rma_group_free(g);
			  ASSERT_EQ(rma_finalize(), RMA_SUCCESS);
		  }));
}

TEST(GroupRangeTest, InclExpandsTripletsInOrder)
{
	EXPECT_RANKS_PASS(runRanks(kRanks, [](int) {
			  ASSERT_EQ(rma_init(nullptr, nullptr), RMA_SUCCESS);
			  rma_comm_set_errhandler(RMA_COMM_SELF, RMA_ERRORS_RETURN);
			  rma_group world = worldGroup();
			  struct Case {
				  std::vector<std::array<int, 3>> ranges;
				  std::vector<int> want;
			  };
			  const Case cases[] = {
				  { { { 0, 4, 1 } }, { 0, 1, 2, 3, 4 } },
				  { { { 0, 4, 2 } }, { 0, 2, 4 } },
				  { { { 4, 0, -2 } }, { 4, 2, 0 } },
				  { { { 3, 0, -1 } }, { 3, 2, 1, 0 } },
				  /* last need not be named: (0, 3, 2) names 0 and 2. */
				  { { { 0, 3, 2 }, { 1, 1, 1 } }, { 0, 2, 1 } },
				  { { { 1, 4, 3 }, { 0, 0, -5 }, { 3, 2, -1 } }, { 1, 4, 0, 3, 2 } },
				  /* A stride past the end names first only. */
				  { { { 2, 4, 100 } }, { 2 } },
				  { { { 4, 4, -1 } }, { 4 } },
			  };
			  for (const Case &c : cases) {
				  std::vector<int> flat;
				  for (const auto &t : c.ranges)
					  flat.insert(flat.end(), t.begin(), t.end());
				  rma_group g = RMA_GROUP_NULL;
				  ASSERT_EQ(rma_group_range_incl(world, static_cast<int>(c.ranges.size()),
								 reinterpret_cast<int(*)[3]>(flat.data()), &g),
					    RMA_SUCCESS);
				  EXPECT_EQ(members(g), c.want);
				  /* The same group as rma_group_incl of the expanded list. */
				  rma_group incl;
				  rma_group_incl(world, static_cast<int>(c.want.size()), c.want.data(), &incl);
				  EXPECT_EQ(compare(g, incl), RMA_IDENT);
				  rma_group_free(&incl);
				  rma_group_free(&g);
			  }
			  /* No triplet: the empty group. */
			  rma_group g;
			  ASSERT_EQ(rma_group_range_incl(world, 0, nullptr, &g), RMA_SUCCESS);
			  EXPECT_EQ(compare(g, RMA_GROUP_EMPTY), RMA_IDENT);
			  rma_group_free(&g);
			  rma_group_free(&world);
			  ASSERT_EQ(rma_finalize(), RMA_SUCCESS);
		  }));
}

TEST(GroupRangeTest, ExclKeepsTheRestInGroupOrder)
{
	EXPECT_RANKS_PASS(runRanks(kRanks, [](int) {
			  ASSERT_EQ(rma_init(nullptr, nullptr), RMA_SUCCESS);
			  rma_comm_set_errhandler(RMA_COMM_SELF, RMA_ERRORS_RETURN);
			  rma_group world = worldGroup();
			  /* Exclude from a reordered group: the rest stays in that group's order. */
			  int order[kRanks] = { 2, 4, 0, 3, 1 };
			  rma_group mixed;
			  rma_group_incl(world, kRanks, order, &mixed);
			  int r1[1][3] = { { 0, 4, 2 } }; /* positions 0, 2, 4: world 2, 0, 1 */
			  rma_group g;
			  ASSERT_EQ(rma_group_range_excl(mixed, 1, r1, &g), RMA_SUCCESS);
			  EXPECT_EQ(members(g), (std::vector<int>{ 4, 3 }));
			  rma_group_free(&g);
			  int r2[2][3] = { { 4, 3, -1 }, { 0, 0, 1 } };
			  ASSERT_EQ(rma_group_range_excl(mixed, 2, r2, &g), RMA_SUCCESS);
			  EXPECT_EQ(members(g), (std::vector<int>{ 4, 0 }));
			  rma_group_free(&g);
			  int all[1][3] = { { 4, 0, -1 } };
			  ASSERT_EQ(rma_group_range_excl(mixed, 1, all, &g), RMA_SUCCESS);
			  EXPECT_EQ(compare(g, RMA_GROUP_EMPTY), RMA_IDENT);
			  rma_group_free(&g);
			  ASSERT_EQ(rma_group_range_excl(mixed, 0, nullptr, &g), RMA_SUCCESS);
			  EXPECT_EQ(compare(g, mixed), RMA_IDENT);
			  rma_group_free(&g);
			  rma_group_free(&mixed);
			  rma_group_free(&world);
			  ASSERT_EQ(rma_finalize(), RMA_SUCCESS);
		  }));
}

TEST(GroupRangeTest, BadRangesAreErrorsAndChangeNothing)
{
	EXPECT_RANKS_PASS(runRanks(kRanks, [](int) {
			  ASSERT_EQ(rma_init(nullptr, nullptr), RMA_SUCCESS);
			  rma_comm_set_errhandler(RMA_COMM_SELF, RMA_ERRORS_RETURN);
			  rma_group world = worldGroup();
			  struct Bad {
				  int range[2][3];
				  int n;
				  int cls;
			  };
			  const Bad bad[] = {
				  { { { 0, 4, 0 } }, 1, RMA_ERR_ARG },	    /* stride 0 */
				  { { { 3, 1, 1 } }, 1, RMA_ERR_ARG },	    /* stride away from last */
				  { { { 1, 3, -1 } }, 1, RMA_ERR_ARG },	    /* the same, negative */
				  { { { 0, 5, 1 } }, 1, RMA_ERR_RANK },	    /* names rank 5 of 5 */
				  { { { -1, 2, 1 } }, 1, RMA_ERR_RANK },    /* names rank -1 */
				  { { { 5, 9, 2 } }, 1, RMA_ERR_RANK },	    /* starts outside */
				  { { { 0, 2, 1 }, { 2, 3, 1 } }, 2, RMA_ERR_RANK }, /* rank 2 twice */
				  { { { 4, 0, -4 }, { 0, 0, 1 } }, 2, RMA_ERR_RANK }, /* rank 0 twice */
				  { { { 0, INT_MAX, 1 } }, 1, RMA_ERR_RANK },   /* huge: stops at rank 5 */
				  { { { 0, INT_MAX, INT_MAX } }, 1, RMA_ERR_RANK }, /* no overflow */
				  { { { INT_MIN, INT_MAX, 1 } }, 1, RMA_ERR_RANK },
				  { { { INT_MAX, INT_MIN, INT_MIN } }, 1, RMA_ERR_RANK },
			  };
			  for (const Bad &b : bad) {
				  int ranges[2][3];
				  std::memcpy(ranges, b.range, sizeof(ranges));
				  rma_group g = RMA_GROUP_NULL;
				  int rc = rma_group_range_incl(world, b.n, ranges, &g);
				  EXPECT_EQ(errorClassOf(rc), b.cls)
					  << "(" << ranges[0][0] << "," << ranges[0][1] << "," << ranges[0][2]
					  << "): " << errorText(rc);
				  EXPECT_EQ(g, RMA_GROUP_NULL);
				  rc = rma_group_range_excl(world, b.n, ranges, &g);
				  EXPECT_EQ(errorClassOf(rc), b.cls) << errorText(rc);
				  EXPECT_EQ(g, RMA_GROUP_NULL);
			  }
			  /* The message names the triplet and the rank. */
			  int dup[2][3] = { { 0, 2, 1 }, { 2, 3, 1 } };
			  rma_group g = RMA_GROUP_NULL;
			  std::string text = errorText(rma_group_range_incl(world, 2, dup, &g));
			  EXPECT_NE(text.find("ranges[1] = (2, 3, 1)"), std::string::npos) << text;
			  EXPECT_NE(text.find("rank 2"), std::string::npos) << text;

			  int ok[1][3] = { { 0, 1, 1 } };
			  EXPECT_CLASS(rma_group_range_incl(world, -1, ok, &g), RMA_ERR_ARG);
			  EXPECT_CLASS(rma_group_range_incl(world, 1, nullptr, &g), RMA_ERR_ARG);
			  EXPECT_CLASS(rma_group_range_incl(world, 1, ok, nullptr), RMA_ERR_ARG);
			  EXPECT_CLASS(rma_group_range_incl(RMA_GROUP_NULL, 1, ok, &g), RMA_ERR_GROUP);
			  EXPECT_CLASS(rma_group_range_excl(world, -1, ok, &g), RMA_ERR_ARG);
			  EXPECT_CLASS(rma_group_range_excl(world, 1, nullptr, &g), RMA_ERR_ARG);
			  EXPECT_CLASS(rma_group_range_excl(world, 1, ok, nullptr), RMA_ERR_ARG);
			  EXPECT_CLASS(rma_group_range_excl(RMA_GROUP_NULL, 1, ok, &g), RMA_ERR_GROUP);
			  EXPECT_EQ(g, RMA_GROUP_NULL);
			  rma_group_free(&world);
			  ASSERT_EQ(rma_finalize(), RMA_SUCCESS);
		  }));
}

} /* namespace */
