/* SPDX-License-Identifier: MIT */
/* Window keyvals, cached attributes and rma_win_call_errhandler through the C API. */
#include <gtest/gtest.h>

#include <string>
#include <utility>
#include <vector>

#include <rma/rma.h>

#include "support/multiproc.h"
#include "win/window_test_util.h"

using namespace rmatest;

namespace {

/* What the delete callbacks saw, in call order (per rank: each rank is its own process). */
struct Deletion {
	int keyval;
	void *value;
	void *extra;
	int sizeSeen; /* RMA_WIN_SIZE read from inside the callback, -1 if that failed */
};
std::vector<Deletion> deletions;
int deleteResult = RMA_SUCCESS;

int recordDeletion(rma_win win, int keyval, void *value, void *extra)
{
	rma_aint *size = nullptr;
	int flag = 0;
	int sizeSeen = -1;
	if (rma_win_get_attr(win, RMA_WIN_SIZE, &size, &flag) == RMA_SUCCESS && flag)
		sizeSeen = static_cast<int>(*size);
	deletions.push_back({ keyval, value, extra, sizeSeen });
	return deleteResult;
}

rma_win makeWin(size_t bytes)
{
	rma_win win = RMA_WIN_NULL;
	void *base;
	EXPECT_EQ(rma_win_allocate(static_cast<rma_aint>(bytes), 1, RMA_INFO_NULL, RMA_COMM_WORLD, &base, &win),
		  RMA_SUCCESS);
	rma_win_set_errhandler(win, RMA_ERRORS_RETURN);
	return win;
}

TEST(WinAttrTest, SetGetReplaceDeleteAndFreeNewestFirst)
{
	EXPECT_RANKS_PASS(runRanks(2, [](int) {
			  ASSERT_EQ(rma_init(nullptr, nullptr), RMA_SUCCESS);
			  rma_comm_set_errhandler(RMA_COMM_SELF, RMA_ERRORS_RETURN);
			  int extraA = 0, extraB = 0, extraC = 0;
			  int a, b, c, unused;
			  ASSERT_EQ(rma_win_create_keyval(RMA_WIN_DUP_FN, recordDeletion, &a, &extraA), RMA_SUCCESS);
			  ASSERT_EQ(rma_win_create_keyval(RMA_WIN_NULL_COPY_FN, recordDeletion, &b, &extraB), RMA_SUCCESS);
			  ASSERT_EQ(rma_win_create_keyval(nullptr, recordDeletion, &c, &extraC), RMA_SUCCESS);
			  ASSERT_EQ(rma_win_create_keyval(nullptr, nullptr, &unused, nullptr), RMA_SUCCESS);
			  /* Distinct, positive, none a predefined key. */
			  for (int k : { a, b, c, unused }) {
				  EXPECT_GT(k, RMA_WIN_MODEL);
				  EXPECT_NE(k, RMA_KEYVAL_INVALID);
			  }
			  EXPECT_NE(a, b);
			  EXPECT_NE(b, c);

			  rma_win win = makeWin(64);
			  int va = 1, va2 = 2, vb = 3, vc = 4;
			  ASSERT_EQ(rma_win_set_attr(win, a, &va), RMA_SUCCESS);
			  ASSERT_EQ(rma_win_set_attr(win, b, &vb), RMA_SUCCESS);
			  ASSERT_EQ(rma_win_set_attr(win, c, &vc), RMA_SUCCESS);
			  EXPECT_TRUE(deletions.empty());

			  void *got = nullptr;
			  int flag = -1;
			  ASSERT_EQ(rma_win_get_attr(win, b, &got, &flag), RMA_SUCCESS);
			  EXPECT_EQ(flag, 1);
			  EXPECT_EQ(got, &vb);
			  /* A keyval with no value here: flag 0, success, output untouched. */
			  got = &flag;
			  ASSERT_EQ(rma_win_get_attr(win, unused, &got, &flag), RMA_SUCCESS);
			  EXPECT_EQ(flag, 0);
			  EXPECT_EQ(got, &flag);

			  /* Replacing a value deletes the old one first. */
			  ASSERT_EQ(rma_win_set_attr(win, a, &va2), RMA_SUCCESS);
			  ASSERT_EQ(deletions.size(), 1u);
			  EXPECT_EQ(deletions[0].keyval, a);
			  EXPECT_EQ(deletions[0].value, &va);
			  EXPECT_EQ(deletions[0].extra, &extraA);
			  rma_win_get_attr(win, a, &got, &flag);
			  EXPECT_EQ(got, &va2);

			  /* Delete b explicitly. */
			  ASSERT_EQ(rma_win_delete_attr(win, b), RMA_SUCCESS);
			  ASSERT_EQ(deletions.size(), 2u);
			  EXPECT_EQ(deletions[1].keyval, b);
			  EXPECT_EQ(deletions[1].extra, &extraB);
			  rma_win_get_attr(win, b, &got, &flag);
			  EXPECT_EQ(flag, 0);
			  EXPECT_CLASS(rma_win_delete_attr(win, b), RMA_ERR_KEYVAL); /* nothing to delete */

			  /* The predefined attributes still answer. */
			  rma_aint *size = nullptr;
			  ASSERT_EQ(rma_win_get_attr(win, RMA_WIN_SIZE, &size, &flag), RMA_SUCCESS);
			  EXPECT_EQ(flag, 1);
			  EXPECT_EQ(*size, 64);
			  int *flavor = nullptr;
			  ASSERT_EQ(rma_win_get_attr(win, RMA_WIN_CREATE_FLAVOR, &flavor, &flag), RMA_SUCCESS);
			  EXPECT_EQ(*flavor, RMA_WIN_FLAVOR_ALLOCATE);

			  /* Free: newest first (a was set again after c), the window still whole in the callbacks. */
			  deletions.clear();
			  ASSERT_EQ(rma_win_free(&win), RMA_SUCCESS);
			  ASSERT_EQ(deletions.size(), 2u);
			  EXPECT_EQ(deletions[0].keyval, a);
			  EXPECT_EQ(deletions[0].value, &va2);
			  EXPECT_EQ(deletions[1].keyval, c);
			  EXPECT_EQ(deletions[1].value, &vc);
			  EXPECT_EQ(deletions[0].sizeSeen, 64);
			  EXPECT_EQ(deletions[1].sizeSeen, 64);

			  for (int *k : { &a, &b, &c, &unused }) {
				  ASSERT_EQ(rma_win_free_keyval(k), RMA_SUCCESS);
				  EXPECT_EQ(*k, RMA_KEYVAL_INVALID);
			  }
			  ASSERT_EQ(rma_finalize(), RMA_SUCCESS);
		  }));
}

TEST(WinAttrTest, OneKeyvalOnTwoWindowsKeepsSeparateValues)
{
	EXPECT_RANKS_PASS(runRanks(1, [](int) {
			  ASSERT_EQ(rma_init(nullptr, nullptr), RMA_SUCCESS);
			  int k;
			  ASSERT_EQ(rma_win_create_keyval(nullptr, recordDeletion, &k, nullptr), RMA_SUCCESS);
			  rma_win w1 = makeWin(8), w2 = makeWin(16);
			  int v1 = 1, v2 = 2;
			  rma_win_set_attr(w1, k, &v1);
			  rma_win_set_attr(w2, k, &v2);
			  void *got;
			  int flag;
			  rma_win_get_attr(w1, k, &got, &flag);
			  EXPECT_EQ(got, &v1);
			  rma_win_get_attr(w2, k, &got, &flag);
			  EXPECT_EQ(got, &v2);
			  ASSERT_EQ(rma_win_free(&w2), RMA_SUCCESS);
			  ASSERT_EQ(deletions.size(), 1u);
			  EXPECT_EQ(deletions[0].value, &v2);
			  EXPECT_EQ(deletions[0].sizeSeen, 16);
			  rma_win_get_attr(w1, k, &got, &flag);
			  EXPECT_EQ(got, &v1);
			  ASSERT_EQ(rma_win_free(&w1), RMA_SUCCESS);
			  EXPECT_EQ(deletions.size(), 2u);
			  ASSERT_EQ(rma_finalize(), RMA_SUCCESS);
		  }));
}

TEST(WinAttrTest, FreedKeyvalServesItsAttributesUntilTheyAreGone)
{
	EXPECT_RANKS_PASS(runRanks(1, [](int) {
			  ASSERT_EQ(rma_init(nullptr, nullptr), RMA_SUCCESS);
			  rma_comm_set_errhandler(RMA_COMM_SELF, RMA_ERRORS_RETURN);
			  int k;
			  ASSERT_EQ(rma_win_create_keyval(nullptr, recordDeletion, &k, nullptr), RMA_SUCCESS);
			  rma_win w1 = makeWin(8), w2 = makeWin(8);
			  int v = 5;
			  rma_win_set_attr(w1, k, &v);
			  rma_win_set_attr(w2, k, &v);
			  int stale = k;
			  ASSERT_EQ(rma_win_free_keyval(&k), RMA_SUCCESS);
			  EXPECT_EQ(k, RMA_KEYVAL_INVALID);
			  EXPECT_CLASS(rma_win_free_keyval(&stale), RMA_ERR_KEYVAL); /* freed twice */
			  EXPECT_TRUE(deletions.empty());
			  /* No new value with it ... */
			  EXPECT_CLASS(rma_win_set_attr(w1, stale, &v), RMA_ERR_KEYVAL);
			  /* ... but the values it holds can be read and deleted. */
			  void *got = nullptr;
			  int flag = 0;
			  ASSERT_EQ(rma_win_get_attr(w1, stale, &got, &flag), RMA_SUCCESS);
			  EXPECT_EQ(flag, 1);
			  EXPECT_EQ(got, &v);
			  ASSERT_EQ(rma_win_delete_attr(w1, stale), RMA_SUCCESS);
			  EXPECT_EQ(deletions.size(), 1u);
			  /* The last one goes with its window; its delete callback still runs. */
			  ASSERT_EQ(rma_win_free(&w2), RMA_SUCCESS);
			  EXPECT_EQ(deletions.size(), 2u);
			  /* Now nothing holds it: the keyval is unknown everywhere. */
			  EXPECT_CLASS(rma_win_get_attr(w1, stale, &got, &flag), RMA_ERR_KEYVAL);
			  EXPECT_CLASS(rma_win_delete_attr(w1, stale), RMA_ERR_KEYVAL);
			  ASSERT_EQ(rma_win_free(&w1), RMA_SUCCESS);
			  EXPECT_EQ(deletions.size(), 2u);
			  ASSERT_EQ(rma_finalize(), RMA_SUCCESS);
		  }));
}

TEST(WinAttrTest, BadKeyvalsAndHandlesAreErrors)
{
	EXPECT_RANKS_PASS(runRanks(1, [](int) {
			  ASSERT_EQ(rma_init(nullptr, nullptr), RMA_SUCCESS);
			  rma_comm_set_errhandler(RMA_COMM_SELF, RMA_ERRORS_RETURN);
			  rma_win win = makeWin(8);
			  int v = 0;
			  void *got = nullptr;
			  int flag = 0;
			  /* Predefined keys are read-only and cannot be freed. */
			  for (int key : { RMA_WIN_BASE, RMA_WIN_SIZE, RMA_WIN_DISP_UNIT, RMA_WIN_CREATE_FLAVOR,
					   RMA_WIN_MODEL }) {
				  EXPECT_CLASS(rma_win_set_attr(win, key, &v), RMA_ERR_KEYVAL);
				  EXPECT_CLASS(rma_win_delete_attr(win, key), RMA_ERR_KEYVAL);
				  int copy = key;
				  EXPECT_CLASS(rma_win_free_keyval(&copy), RMA_ERR_KEYVAL);
				  EXPECT_EQ(copy, key);
			  }
			  /* Numbers that were never keyvals. */
			  for (int key : { 0, -7, 12345, RMA_KEYVAL_INVALID, (1 << 30) | (1 << 24) | 99999 }) {
				  EXPECT_CLASS(rma_win_set_attr(win, key, &v), RMA_ERR_KEYVAL);
				  flag = 5;
				  EXPECT_CLASS(rma_win_get_attr(win, key, &got, &flag), RMA_ERR_KEYVAL);
				  EXPECT_EQ(flag, 0);
				  EXPECT_CLASS(rma_win_delete_attr(win, key), RMA_ERR_KEYVAL);
				  int copy = key;
				  EXPECT_CLASS(rma_win_free_keyval(&copy), RMA_ERR_KEYVAL);
			  }
			  EXPECT_CLASS(rma_win_create_keyval(nullptr, nullptr, nullptr, nullptr), RMA_ERR_ARG);
			  EXPECT_CLASS(rma_win_free_keyval(nullptr), RMA_ERR_ARG);
			  int k;
			  ASSERT_EQ(rma_win_create_keyval(nullptr, nullptr, &k, nullptr), RMA_SUCCESS);
			  EXPECT_CLASS(rma_win_get_attr(win, k, nullptr, &flag), RMA_ERR_ARG);
			  EXPECT_CLASS(rma_win_get_attr(win, k, &got, nullptr), RMA_ERR_ARG);
			  /* Invalid windows. */
			  EXPECT_CLASS(rma_win_set_attr(RMA_WIN_NULL, k, &v), RMA_ERR_WIN);
			  EXPECT_CLASS(rma_win_get_attr(RMA_WIN_NULL, k, &got, &flag), RMA_ERR_WIN);
			  EXPECT_CLASS(rma_win_delete_attr(RMA_WIN_NULL, k), RMA_ERR_WIN);
			  rma_win stale = win;
			  ASSERT_EQ(rma_win_free(&win), RMA_SUCCESS);
			  EXPECT_CLASS(rma_win_set_attr(stale, k, &v), RMA_ERR_WIN);
			  EXPECT_CLASS(rma_win_get_attr(stale, k, &got, &flag), RMA_ERR_WIN);

			  /* The predefined null and dup callbacks do what MPI's do. */
			  void *out = nullptr;
			  flag = -1;
			  EXPECT_EQ(RMA_WIN_DUP_FN(RMA_WIN_NULL, k, nullptr, &v, &out, &flag), RMA_SUCCESS);
			  EXPECT_EQ(out, &v);
			  EXPECT_EQ(flag, 1);
			  EXPECT_EQ(RMA_WIN_NULL_COPY_FN(RMA_WIN_NULL, k, nullptr, &v, &out, &flag), RMA_SUCCESS);
			  EXPECT_EQ(flag, 0);
			  EXPECT_EQ(RMA_WIN_NULL_DELETE_FN(RMA_WIN_NULL, k, &v, nullptr), RMA_SUCCESS);
			  rma_win_free_keyval(&k);
			  ASSERT_EQ(rma_finalize(), RMA_SUCCESS);
		  }));
}

TEST(WinAttrTest, FailingDeleteCallbackFailsTheCallAndKeepsTheValue)
{
	EXPECT_RANKS_PASS(runRanks(2, [](int) {
			  ASSERT_EQ(rma_init(nullptr, nullptr), RMA_SUCCESS);
			  int older, newer;
			  ASSERT_EQ(rma_win_create_keyval(nullptr, recordDeletion, &older, nullptr), RMA_SUCCESS);
			  ASSERT_EQ(rma_win_create_keyval(nullptr, recordDeletion, &newer, nullptr), RMA_SUCCESS);
			  rma_win win = makeWin(8);
			  int v1 = 1, v2 = 2, v3 = 3;
			  rma_win_set_attr(win, older, &v1);
			  rma_win_set_attr(win, newer, &v2);
			  deleteResult = RMA_ERR_OTHER;
			  /* Replace: fails, old value stays. */
			  int rc = rma_win_set_attr(win, newer, &v3);
			  EXPECT_EQ(errorClassOf(rc), RMA_ERR_OTHER);
			  EXPECT_NE(errorText(rc).find("delete callback"), std::string::npos) << errorText(rc);
			  void *got;
			  int flag;
			  rma_win_get_attr(win, newer, &got, &flag);
			  EXPECT_EQ(got, &v2);
			  /* Delete: fails, the value stays. */
			  EXPECT_CLASS(rma_win_delete_attr(win, newer), RMA_ERR_OTHER);
			  rma_win_get_attr(win, newer, &got, &flag);
			  EXPECT_EQ(flag, 1);
			  /* Free: fails on the newest, the window stays usable. */
			  rma_win copy = win;
			  deletions.clear();
			  EXPECT_CLASS(rma_win_free(&win), RMA_ERR_OTHER);
			  EXPECT_EQ(win, copy);
			  ASSERT_EQ(deletions.size(), 1u);
			  EXPECT_EQ(deletions[0].keyval, newer);
			  ASSERT_EQ(rma_win_fence(0, win), RMA_SUCCESS);
			  /* Once the callbacks succeed, every rank frees it (newest first again). */
			  deleteResult = RMA_SUCCESS;
			  deletions.clear();
			  ASSERT_EQ(rma_win_free(&win), RMA_SUCCESS);
			  ASSERT_EQ(deletions.size(), 2u);
			  EXPECT_EQ(deletions[0].keyval, newer);
			  EXPECT_EQ(deletions[1].keyval, older);
			  ASSERT_EQ(rma_finalize(), RMA_SUCCESS);
		  }));
}

/* ---- rma_win_call_errhandler --------------------------------------------- */

rma_win handlerWin = RMA_WIN_NULL;
int handlerCode = 0;
int handlerCalls = 0;

void recordingHandler(rma_win *win, int *code, ...)
{
	handlerWin = *win;
	handlerCode = *code;
	++handlerCalls;
}

TEST(WinCallErrhandlerTest, CallsTheWindowsHandlerWithTheCode)
{
	EXPECT_RANKS_PASS(runRanks(1, [](int) {
			  ASSERT_EQ(rma_init(nullptr, nullptr), RMA_SUCCESS);
			  rma_comm_set_errhandler(RMA_COMM_SELF, RMA_ERRORS_RETURN);
			  rma_win win = makeWin(8);
			  rma_errhandler eh;
			  ASSERT_EQ(rma_win_create_errhandler(recordingHandler, &eh), RMA_SUCCESS);
			  ASSERT_EQ(rma_win_set_errhandler(win, eh), RMA_SUCCESS);
			  /* Any number reaches the handler unchanged: an application code ... */
			  ASSERT_EQ(rma_win_call_errhandler(win, 12345), RMA_SUCCESS);
			  EXPECT_EQ(handlerCalls, 1);
			  EXPECT_EQ(handlerWin, win);
			  EXPECT_EQ(handlerCode, 12345);
			  /* ... or a class. */
			  ASSERT_EQ(rma_win_call_errhandler(win, RMA_ERR_RMA_SYNC), RMA_SUCCESS);
			  EXPECT_EQ(handlerCode, RMA_ERR_RMA_SYNC);
			  EXPECT_EQ(handlerCalls, 2);
			  /* RMA_ERRORS_RETURN: nothing happens, and the call succeeds. */
			  rma_win_set_errhandler(win, RMA_ERRORS_RETURN);
			  EXPECT_EQ(rma_win_call_errhandler(win, RMA_ERR_OTHER), RMA_SUCCESS);
			  EXPECT_EQ(handlerCalls, 2);
			  /* Invalid windows are errors, on RMA_COMM_SELF. */
			  EXPECT_CLASS(rma_win_call_errhandler(RMA_WIN_NULL, RMA_ERR_OTHER), RMA_ERR_WIN);
			  rma_win stale = win;
			  ASSERT_EQ(rma_win_free(&win), RMA_SUCCESS);
			  EXPECT_CLASS(rma_win_call_errhandler(stale, RMA_ERR_OTHER), RMA_ERR_WIN);
			  EXPECT_EQ(handlerCalls, 2);
			  rma_errhandler_free(&eh);
			  ASSERT_EQ(rma_finalize(), RMA_SUCCESS);
		  }));
}

/* The default handler is fatal: the job ends with the code's class as its status. */
TEST(WinCallErrhandlerTest, DefaultHandlerEndsTheJob)
{
	int status = runRanks(2, [](int rank) {
		ASSERT_EQ(rma_init(nullptr, nullptr), RMA_SUCCESS);
		rma_win win;
		void *base;
		ASSERT_EQ(rma_win_allocate(8, 1, RMA_INFO_NULL, RMA_COMM_WORLD, &base, &win), RMA_SUCCESS);
		if (rank == 1) {
			rma_win_call_errhandler(win, RMA_ERR_RMA_CONFLICT);
			ADD_FAILURE() << "rma_win_call_errhandler returned under RMA_ERRORS_ARE_FATAL";
		}
		rma_barrier(RMA_COMM_WORLD); /* rank 0 waits here until the job is stopped */
	});
	EXPECT_EQ(status, RMA_ERR_RMA_CONFLICT);
}

} /* namespace */
