/* SPDX-License-Identifier: MIT */
/*
 * Bad input gets a clear error, never a crash or a hang: every check of the
 * window slice, with its error class, its message, and the window still
 * usable afterwards.
 */
#include <gtest/gtest.h>

#include <sys/mman.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cstring>
#include <fstream>
#include <string>

#include <rma/rma.h>

#include "support/multiproc.h"
#include "win/window_test_util.h"

using namespace rmatest;

namespace {


TEST(WindowErrorsTest, BadArgumentsOfPutAndGet)
{
	EXPECT_RANKS_PASS(runRanks(2, [](int) {
			  ASSERT_EQ(rma_init(nullptr, nullptr), RMA_SUCCESS);
			  int rank;
			  rma_comm_rank(RMA_COMM_WORLD, &rank);
			  rma_comm_set_errhandler(RMA_COMM_SELF, RMA_ERRORS_RETURN);
			  rma_win win;
			  int *base;
			  ASSERT_EQ(rma_win_allocate(16 * sizeof(int), sizeof(int), RMA_INFO_NULL, RMA_COMM_WORLD, &base, &win),
				    RMA_SUCCESS);
			  ASSERT_EQ(rma_win_set_name(win, "errors-win"), RMA_SUCCESS);
			  ASSERT_EQ(rma_win_set_errhandler(win, RMA_ERRORS_RETURN), RMA_SUCCESS);
			  int v[4] = { 1, 2, 3, 4 };

			  /* Outside any epoch. */
			  EXPECT_CLASS(rma_put(v, 1, RMA_INT, 0, 0, 1, RMA_INT, win), RMA_ERR_RMA_SYNC);
			  EXPECT_CLASS(rma_get(v, 1, RMA_INT, 0, 0, 1, RMA_INT, win), RMA_ERR_RMA_SYNC);
			  ASSERT_EQ(rma_win_fence(0, win), RMA_SUCCESS);

			  EXPECT_CLASS(rma_put(v, 1, RMA_INT, 2, 0, 1, RMA_INT, win), RMA_ERR_RANK);
			  EXPECT_CLASS(rma_put(v, 1, RMA_INT, -5, 0, 1, RMA_INT, win), RMA_ERR_RANK);
			  EXPECT_CLASS(rma_put(v, -1, RMA_INT, 0, 0, 1, RMA_INT, win), RMA_ERR_COUNT);
			  EXPECT_CLASS(rma_get(v, 1, RMA_INT, 0, 0, -1, RMA_INT, win), RMA_ERR_COUNT);
			  EXPECT_CLASS(rma_put(v, 1, RMA_INT, 0, -1, 1, RMA_INT, win), RMA_ERR_DISP);
			  EXPECT_CLASS(rma_put(v, 1, RMA_INT, 0, 16, 1, RMA_INT, win), RMA_ERR_RMA_RANGE);
			  EXPECT_CLASS(rma_put(v, 1, RMA_INT, 0, INTPTR_MAX / 2, 1, RMA_INT, win), RMA_ERR_RMA_RANGE);
			  EXPECT_CLASS(rma_put(v, 1, RMA_INT, 0, 0, 1, RMA_DOUBLE, win), RMA_ERR_TYPE);
			  EXPECT_CLASS(rma_put(v, 4, RMA_INT, 0, 0, 2, RMA_INT, win), RMA_ERR_TRUNCATE);
			  EXPECT_CLASS(rma_get(v, 2, RMA_INT, 0, 0, 4, RMA_INT, win), RMA_ERR_TRUNCATE);
			  EXPECT_CLASS(rma_put(v, 1, RMA_DATATYPE_NULL, 0, 0, 1, RMA_INT, win), RMA_ERR_TYPE);
			  EXPECT_CLASS(rma_put(v, 1, reinterpret_cast<rma_datatype>(uintptr_t(0x0400000000000099ull)), 0, 0, 1,
					       RMA_INT, win),
				       RMA_ERR_TYPE);
			  EXPECT_CLASS(rma_put(v, 1, RMA_INT, 0, 0, 1, RMA_INT, RMA_WIN_NULL), RMA_ERR_WIN);
			  EXPECT_CLASS(rma_put(v, 1, RMA_INT, 0, 0, 1, RMA_INT, reinterpret_cast<rma_win>(RMA_COMM_WORLD)),
				       RMA_ERR_WIN);
			  /* A shorter origin than target buffer is a legal partial fill; RMA_PACKED matches any type. */
			  EXPECT_EQ(rma_put(v, 1, RMA_INT, 1, 8, 2, RMA_INT, win), RMA_SUCCESS);
			  EXPECT_EQ(rma_put(v, 8, RMA_PACKED, 1, 9, 2, RMA_INT, win), RMA_SUCCESS);
			  /* RMA_PROC_NULL is a no-op. */
			  EXPECT_EQ(rma_put(v, 1, RMA_INT, RMA_PROC_NULL, 99999, 1, RMA_INT, win), RMA_SUCCESS);

			  /* The message names the call, window, rank and numbers. */
			  int rc = rma_put(v, 4, RMA_INT, 1, 14, 4, RMA_INT, win);
			  std::string msg = errorText(rc);
			  EXPECT_NE(msg.find("rma_put"), std::string::npos) << msg;
			  EXPECT_NE(msg.find("errors-win"), std::string::npos) << msg;
			  EXPECT_NE(msg.find("rank 1"), std::string::npos) << msg;
			  EXPECT_NE(msg.find("14"), std::string::npos) << msg;
			  EXPECT_NE(msg.find("64 bytes"), std::string::npos) << msg;

			  /* NOPRECEDE after operations is a lie, and caught. */
			  EXPECT_CLASS(rma_win_fence(RMA_MODE_NOPRECEDE, win), RMA_ERR_RMA_SYNC);
			  EXPECT_CLASS(rma_win_fence(0x4000, win), RMA_ERR_ASSERT);
			  /* Freeing with unsynchronized operations is refused... */
			  EXPECT_CLASS(rma_win_free(&win), RMA_ERR_RMA_SYNC);
			  EXPECT_NE(win, RMA_WIN_NULL);
			  /* ...and the window stays usable. */
			  ASSERT_EQ(rma_win_fence(0, win), RMA_SUCCESS);
			  if (rank == 1) {
				  EXPECT_EQ(base[8], 1);
				  EXPECT_EQ(base[9], 1);
				  EXPECT_EQ(base[10], 2);
			  }
			  ASSERT_EQ(rma_win_fence(RMA_MODE_NOSUCCEED, win), RMA_SUCCESS);
			  EXPECT_CLASS(rma_put(v, 1, RMA_INT, 0, 0, 1, RMA_INT, win), RMA_ERR_RMA_SYNC);
			  rma_win stale = win;
			  ASSERT_EQ(rma_win_free(&win), RMA_SUCCESS);
			  /* Use after free: detected through a stale copy of the handle. */
			  EXPECT_CLASS(rma_win_fence(0, stale), RMA_ERR_WIN);
			  EXPECT_CLASS(rma_put(v, 1, RMA_INT, 0, 0, 1, RMA_INT, stale), RMA_ERR_WIN);
			  EXPECT_CLASS(rma_win_free(&stale), RMA_ERR_WIN);
			  ASSERT_EQ(rma_finalize(), RMA_SUCCESS);
		  }));
}

TEST(WindowErrorsTest, BadCreationArgumentsFailOnEveryRankWithoutHanging)
{
	EXPECT_RANKS_PASS(runRanks(2, [](int) {
			  ASSERT_EQ(rma_init(nullptr, nullptr), RMA_SUCCESS);
			  int rank;
			  rma_comm_rank(RMA_COMM_WORLD, &rank);
			  rma_comm_set_errhandler(RMA_COMM_WORLD, RMA_ERRORS_RETURN);
			  rma_comm_set_errhandler(RMA_COMM_SELF, RMA_ERRORS_RETURN);
			  rma_win win = RMA_WIN_NULL;
			  void *base;
			  /* Only rank 1 passes a bad size: both fail, nobody waits forever. */
			  int rc = rma_win_allocate(rank == 1 ? -8 : 8, 1, RMA_INFO_NULL, RMA_COMM_WORLD, &base, &win);
			  EXPECT_EQ(errorClassOf(rc), rank == 1 ? RMA_ERR_SIZE : RMA_ERR_SIZE) << errorText(rc);
			  EXPECT_EQ(win, RMA_WIN_NULL);
			  rc = rma_win_allocate(8, rank == 0 ? 0 : 1, RMA_INFO_NULL, RMA_COMM_WORLD, &base, &win);
			  EXPECT_EQ(errorClassOf(rc), RMA_ERR_DISP) << errorText(rc);
			  /* A window larger than the machine's memory: refused at creation, no SIGBUS later. */
			  rc = rma_win_allocate(rma_aint(1) << 46, 1, RMA_INFO_NULL, RMA_COMM_WORLD, &base, &win);
			  EXPECT_EQ(errorClassOf(rc), RMA_ERR_NO_MEM) << errorText(rc);
			  rc = rma_win_allocate_shared(rma_aint(1) << 45, 1, RMA_INFO_NULL, RMA_COMM_WORLD, &base, &win);
			  EXPECT_EQ(errorClassOf(rc), RMA_ERR_NO_MEM) << errorText(rc);
			  rma_info info;
			  rma_info_create(&info);
			  rma_info_set(info, "rma_placement", "node:4096");
			  EXPECT_CLASS(rma_win_allocate(8, 1, info, RMA_COMM_WORLD, &base, &win), RMA_ERR_INFO_VALUE);
			  rma_info_set(info, "rma_placement", "local");
			  rma_info_set(info, "no_locks", "maybe");
			  EXPECT_CLASS(rma_win_allocate(8, 1, info, RMA_COMM_WORLD, &base, &win), RMA_ERR_INFO_VALUE);
			  rma_info_set(info, "no_locks", "true");
			  rma_info_set(info, "accumulate_ordering", "rar,bogus");
			  EXPECT_CLASS(rma_win_allocate(8, 1, info, RMA_COMM_WORLD, &base, &win), RMA_ERR_INFO_VALUE);
			  rma_info_free(&info);
			  EXPECT_CLASS(rma_win_create(nullptr, 8, 1, RMA_INFO_NULL, RMA_COMM_WORLD, &win), RMA_ERR_ARG);
			  EXPECT_CLASS(rma_win_allocate(8, 1, RMA_INFO_NULL, RMA_COMM_NULL, &base, &win), RMA_ERR_COMM);
			  /* The flavor matters. */
			  ASSERT_EQ(rma_win_allocate(8, 1, RMA_INFO_NULL, RMA_COMM_WORLD, &base, &win), RMA_SUCCESS);
			  rma_win_set_errhandler(win, RMA_ERRORS_RETURN);
			  EXPECT_CLASS(rma_win_attach(win, base, 8), RMA_ERR_RMA_FLAVOR);
			  EXPECT_CLASS(rma_win_detach(win, base), RMA_ERR_RMA_FLAVOR);
			  EXPECT_CLASS(rma_win_shared_query(win, 5, nullptr, nullptr, nullptr), RMA_ERR_ARG);
			  rma_aint qs;
			  int qu;
			  void *qb;
			  EXPECT_CLASS(rma_win_shared_query(win, 5, &qs, &qu, &qb), RMA_ERR_RANK);
			  ASSERT_EQ(rma_win_free(&win), RMA_SUCCESS);
			  ASSERT_EQ(rma_win_create_dynamic(RMA_INFO_NULL, RMA_COMM_WORLD, &win), RMA_SUCCESS);
			  rma_win_set_errhandler(win, RMA_ERRORS_RETURN);
			  EXPECT_CLASS(rma_win_shared_query(win, 0, &qs, &qu, &qb), RMA_ERR_RMA_FLAVOR);
			  ASSERT_EQ(rma_win_free(&win), RMA_SUCCESS);
			  /* Memory that is not shared is size 0 and NULL (MPI-4.1), not an error. */
			  char plain[8];
			  ASSERT_EQ(rma_win_create(plain, 8, 1, RMA_INFO_NULL, RMA_COMM_WORLD, &win), RMA_SUCCESS);
			  rma_win_set_errhandler(win, RMA_ERRORS_RETURN);
			  EXPECT_EQ(rma_win_shared_query(win, 1 - rank, &qs, &qu, &qb), RMA_SUCCESS);
			  EXPECT_EQ(qs, 0);
			  EXPECT_EQ(qb, nullptr);
			  ASSERT_EQ(rma_win_free(&win), RMA_SUCCESS);
			  EXPECT_CLASS(rma_free_mem(plain), RMA_ERR_BASE);
			  ASSERT_EQ(rma_finalize(), RMA_SUCCESS);
		  }));
}

/* The default handler is fatal: the job stops with the error class as its status. */
TEST(WindowErrorsTest, DefaultHandlerIsFatal)
{
	int status = runRanks(2, [](int) {
		ASSERT_EQ(rma_init(nullptr, nullptr), RMA_SUCCESS);
		rma_win win;
		void *base;
		ASSERT_EQ(rma_win_allocate(8, 1, RMA_INFO_NULL, RMA_COMM_WORLD, &base, &win), RMA_SUCCESS);
		rma_win_fence(0, win);
		int v = 0;
		rma_put(&v, 1, RMA_INT, 7, 0, 1, RMA_INT, win); /* no such rank: never returns */
		ADD_FAILURE() << "rma_put returned under RMA_ERRORS_ARE_FATAL";
	});
	EXPECT_EQ(status, RMA_ERR_RANK);
}

int handlerCalls = 0;
int handlerClass = 0;

void countingHandler(rma_win *win, int *code, ...)
{
	++handlerCalls;
	handlerClass = errorClassOf(*code);
	EXPECT_NE(*win, RMA_WIN_NULL);
}

TEST(WindowErrorsTest, UserHandlerIsCalledWithTheCode)
{
	EXPECT_RANKS_PASS(runRanks(1, [](int) {
			  ASSERT_EQ(rma_init(nullptr, nullptr), RMA_SUCCESS);
			  rma_errhandler eh;
			  ASSERT_EQ(rma_win_create_errhandler(countingHandler, &eh), RMA_SUCCESS);
			  rma_win win;
			  void *base;
			  ASSERT_EQ(rma_win_allocate(8, 1, RMA_INFO_NULL, RMA_COMM_WORLD, &base, &win), RMA_SUCCESS);
			  ASSERT_EQ(rma_win_set_errhandler(win, eh), RMA_SUCCESS);
			  ASSERT_EQ(rma_errhandler_free(&eh), RMA_SUCCESS); /* the window keeps it */
			  int v = 0;
			  int rc = rma_put(&v, 1, RMA_INT, 0, 0, 1, RMA_INT, win);
			  EXPECT_EQ(errorClassOf(rc), RMA_ERR_RMA_SYNC);
			  EXPECT_EQ(handlerCalls, 1);
			  EXPECT_EQ(handlerClass, RMA_ERR_RMA_SYNC);
			  rma_errhandler got;
			  ASSERT_EQ(rma_win_get_errhandler(win, &got), RMA_SUCCESS);
			  EXPECT_NE(got, RMA_ERRORS_ARE_FATAL);
			  ASSERT_EQ(rma_errhandler_free(&got), RMA_SUCCESS);
			  ASSERT_EQ(rma_win_free(&win), RMA_SUCCESS);
			  ASSERT_EQ(rma_finalize(), RMA_SUCCESS);
		  }));
}

TEST(WindowErrorsTest, AttributesAndInfo)
{
	EXPECT_RANKS_PASS(runRanks(2, [](int) {
			  ASSERT_EQ(rma_init(nullptr, nullptr), RMA_SUCCESS);
			  rma_info info;
			  rma_info_create(&info);
			  rma_info_set(info, "no_locks", "true");
			  rma_info_set(info, "accumulate_ordering", "none");
			  rma_info_set(info, "rma_huge_pages", "off");
			  rma_info_set(info, "some_unknown_key", "ignored");
			  rma_win win;
			  void *base;
			  ASSERT_EQ(rma_win_allocate(4096, 4, info, RMA_COMM_WORLD, &base, &win), RMA_SUCCESS);
			  rma_info_free(&info);
			  void *attrBase;
			  int *flavor, *model, flag = 0;
			  ASSERT_EQ(rma_win_get_attr(win, RMA_WIN_BASE, &attrBase, &flag), RMA_SUCCESS);
			  EXPECT_EQ(flag, 1);
			  EXPECT_EQ(attrBase, base);
			  ASSERT_EQ(rma_win_get_attr(win, RMA_WIN_CREATE_FLAVOR, &flavor, &flag), RMA_SUCCESS);
			  EXPECT_EQ(*flavor, RMA_WIN_FLAVOR_ALLOCATE);
			  ASSERT_EQ(rma_win_get_attr(win, RMA_WIN_MODEL, &model, &flag), RMA_SUCCESS);
			  EXPECT_EQ(*model, RMA_WIN_UNIFIED);
			  /* No keyval 12345 was ever made: MPI's RMA_ERR_KEYVAL, not flag = 0. */
			  rma_win_set_errhandler(win, RMA_ERRORS_RETURN);
			  EXPECT_EQ(errorClassOf(rma_win_get_attr(win, 12345, &model, &flag)), RMA_ERR_KEYVAL);
			  EXPECT_EQ(flag, 0);

			  rma_info used;
			  ASSERT_EQ(rma_win_get_info(win, &used), RMA_SUCCESS);
			  auto get = [&](const char *key) {
				  char value[RMA_MAX_INFO_VAL + 1];
				  int f = 0;
				  EXPECT_EQ(rma_info_get(used, key, RMA_MAX_INFO_VAL, value, &f), RMA_SUCCESS);
				  EXPECT_EQ(f, 1) << key;
				  return std::string(f ? value : "");
			  };
			  EXPECT_EQ(get("no_locks"), "true");
			  EXPECT_EQ(get("accumulate_ordering"), "none");
			  EXPECT_EQ(get("accumulate_ops"), "same_op_no_op");
			  EXPECT_EQ(get("rma_huge_pages"), "off");
			  EXPECT_EQ(get("rma_page_size"), std::to_string(sysconf(_SC_PAGESIZE)));
			  EXPECT_EQ(get("rma_memory"), "segment");
			  EXPECT_EQ(get("rma_placement"), "local");
			  EXPECT_GE(std::stoi(get("rma_numa_node")), -1);
			  rma_info_free(&used);

			  rma_group g;
			  int gs;
			  ASSERT_EQ(rma_win_get_group(win, &g), RMA_SUCCESS);
			  rma_group_size(g, &gs);
			  EXPECT_EQ(gs, 2);
			  rma_group_free(&g);

			  char name[RMA_MAX_OBJECT_NAME];
			  int len;
			  ASSERT_EQ(rma_win_get_name(win, name, &len), RMA_SUCCESS);
			  EXPECT_EQ(std::string(name, len).rfind("win#", 0), 0u);
			  ASSERT_EQ(rma_win_free(&win), RMA_SUCCESS);
			  ASSERT_EQ(rma_finalize(), RMA_SUCCESS);
		  }));
}

/* The policy mode of the page at @addr (get_mempolicy MPOL_F_ADDR): 0 default, 2 bind, 3 interleave. */
int policyModeAt(void *addr)
{
	int mode = -1;
	unsigned long mask[4096 / (8 * sizeof(unsigned long))] = {};
	if (syscall(SYS_get_mempolicy, &mode, mask, 4096UL + 1, addr, 2UL /* MPOL_F_ADDR */) != 0)
		return -1;
	return mode;
}

/*
 * rma_win_name names a window at creation and picks the job's policy for
 * that name (RMA_PLACEMENT_WINDOWS); an explicit rma_placement wins;
 * rma_win_set_info cannot rename; rma_alloc_mem takes the key for its policy.
 */
TEST(WindowErrorsTest, WindowNameKeyNamesAtCreationAndPicksTheJobsPolicy)
{
	EXPECT_RANKS_PASS(runRanks(2, [](int) {
			  setenv("RMA_PLACEMENT", "local", 1);
			  setenv("RMA_PLACEMENT_WINDOWS", "halo=none;grid=interleave", 1);
			  ASSERT_EQ(rma_init(nullptr, nullptr), RMA_SUCCESS);
			  rma_comm_set_errhandler(RMA_COMM_WORLD, RMA_ERRORS_RETURN);
			  rma_comm_set_errhandler(RMA_COMM_SELF, RMA_ERRORS_RETURN);
			  auto placementOf = [](rma_win win) {
				  rma_info used;
				  char value[RMA_MAX_INFO_VAL + 1] = "";
				  int flag = 0;
				  EXPECT_EQ(rma_win_get_info(win, &used), RMA_SUCCESS);
				  rma_info_get(used, "rma_placement", RMA_MAX_INFO_VAL, value, &flag);
				  rma_info_free(&used);
				  return std::string(value);
			  };
			  auto nameOf = [](rma_win win) {
				  char name[RMA_MAX_OBJECT_NAME];
				  int len = 0;
				  EXPECT_EQ(rma_win_get_name(win, name, &len), RMA_SUCCESS);
				  return std::string(name, static_cast<std::size_t>(len));
			  };
			  const long page = sysconf(_SC_PAGESIZE);
			  rma_info info;
			  rma_info_create(&info);
			  rma_info_set(info, "rma_win_name", "halo");
			  rma_win win;
			  char *base;
			  ASSERT_EQ(rma_win_allocate(page, 1, info, RMA_COMM_WORLD, &base, &win), RMA_SUCCESS);
			  base[0] = 1;
			  EXPECT_EQ(nameOf(win), "halo");
			  EXPECT_EQ(placementOf(win), "none");
			  EXPECT_EQ(policyModeAt(base), 0 /* MPOL_DEFAULT */);
			  /* set_info ignores the key: rma_win_set_name renames. */
			  rma_info other;
			  rma_info_create(&other);
			  rma_info_set(other, "rma_win_name", "grid");
			  EXPECT_EQ(rma_win_set_info(win, other), RMA_SUCCESS);
			  EXPECT_EQ(nameOf(win), "halo");
			  EXPECT_EQ(placementOf(win), "none");
			  rma_info_free(&other);
			  ASSERT_EQ(rma_win_free(&win), RMA_SUCCESS);

			  /* An explicit rma_placement wins over the name's policy. */
			  rma_info_set(info, "rma_placement", "local");
			  ASSERT_EQ(rma_win_allocate(page, 1, info, RMA_COMM_WORLD, &base, &win), RMA_SUCCESS);
			  base[0] = 1;
			  EXPECT_EQ(nameOf(win), "halo");
			  EXPECT_EQ(placementOf(win), "local");
			  EXPECT_EQ(policyModeAt(base), 2 /* MPOL_BIND */);
			  ASSERT_EQ(rma_win_free(&win), RMA_SUCCESS);
			  rma_info_delete(info, "rma_placement");

			  /* Every flavor takes the name; a name the job does not list keeps the default. */
			  rma_info_set(info, "rma_win_name", "grid");
			  ASSERT_EQ(rma_win_create_dynamic(info, RMA_COMM_WORLD, &win), RMA_SUCCESS);
			  EXPECT_EQ(nameOf(win), "grid");
			  EXPECT_EQ(placementOf(win), "interleave");
			  ASSERT_EQ(rma_win_free(&win), RMA_SUCCESS);
			  rma_info_set(info, "rma_win_name", "unlisted");
			  ASSERT_EQ(rma_win_allocate_shared(page, 1, info, RMA_COMM_WORLD, &base, &win), RMA_SUCCESS);
			  EXPECT_EQ(nameOf(win), "unlisted");
			  EXPECT_EQ(placementOf(win), "local");
			  ASSERT_EQ(rma_win_free(&win), RMA_SUCCESS);

			  /* rma_alloc_mem: the key selects the policy of the memory. */
			  rma_info_set(info, "rma_win_name", "halo");
			  char *mem;
			  ASSERT_EQ(rma_alloc_mem(page, info, &mem), RMA_SUCCESS);
			  mem[0] = 1;
			  EXPECT_EQ(policyModeAt(mem), 0 /* MPOL_DEFAULT */);
			  ASSERT_EQ(rma_free_mem(mem), RMA_SUCCESS);

			  /* A name librma cannot take. */
			  rma_info_set(info, "rma_win_name", "");
			  EXPECT_CLASS(rma_win_allocate(page, 1, info, RMA_COMM_WORLD, &base, &win), RMA_ERR_INFO_VALUE);
			  rma_info_set(info, "rma_win_name", std::string(RMA_MAX_OBJECT_NAME, 'n').c_str());
			  EXPECT_CLASS(rma_win_allocate(page, 1, info, RMA_COMM_WORLD, &base, &win), RMA_ERR_INFO_VALUE);
			  rma_info_free(&info);
			  ASSERT_EQ(rma_finalize(), RMA_SUCCESS);
		  }));
}

/* Reads a /proc/meminfo field in kB. */
long meminfo(const char *field)
{
	std::ifstream in("/proc/meminfo");
	std::string key;
	long value;
	std::string unit;
	while (in >> key >> value) {
		std::getline(in, unit);
		if (key == std::string(field) + ":")
			return value;
	}
	return -1;
}

/* Sets the 2 MiB pool for the test's life (root only). */
class HugePool
{
public:
	explicit HugePool(long pages)
	{
		std::ifstream in("/proc/sys/vm/nr_hugepages");
		in >> old_;
		ok_ = write(pages);
	}
	~HugePool() { write(old_); }
	bool ok() const { return ok_; }

private:
	static bool write(long pages)
	{
		std::ofstream out("/proc/sys/vm/nr_hugepages");
		out << pages;
		out.close();
		return out.good() && meminfo("HugePages_Total") == pages;
	}
	long old_ = 0;
	bool ok_ = false;
};

TEST(WindowMemoryTest, HugeAndPlainPagesAreBothUsedAndReported)
{
	if (geteuid() != 0)
		GTEST_SKIP() << "reserving a huge-page pool needs root";
	HugePool pool(8);
	if (!pool.ok())
		GTEST_SKIP() << "the kernel would not reserve 8 huge pages";
	long freeBefore = meminfo("HugePages_Free");
	EXPECT_RANKS_PASS(runRanks(2, [](int) {
			  ASSERT_EQ(rma_init(nullptr, nullptr), RMA_SUCCESS);
			  rma_comm_set_errhandler(RMA_COMM_WORLD, RMA_ERRORS_RETURN);
			  rma_info info;
			  rma_info_create(&info);
			  rma_info_set(info, "rma_huge_pages", "require");
			  rma_win win;
			  double *base;
			  ASSERT_EQ(rma_win_allocate(3 << 20, 8, info, RMA_COMM_WORLD, &base, &win), RMA_SUCCESS);
			  rma_info used;
			  rma_win_get_info(win, &used);
			  char v[64];
			  int f;
			  rma_info_get(used, "rma_page_size", 63, v, &f);
			  EXPECT_STREQ(v, "2097152");
			  rma_info_free(&used);
			  /* Two ranks x 2 pages of 2 MiB are taken from the pool of 8. */
			  EXPECT_LE(meminfo("HugePages_Free"), 8 - 4);
			  int rank;
			  rma_comm_rank(RMA_COMM_WORLD, &rank);
			  rma_win_fence(0, win);
			  double x = 42.0 + rank;
			  EXPECT_EQ(rma_put(&x, 1, RMA_DOUBLE, 1 - rank, (3 << 20) / 8 - 1, 1, RMA_DOUBLE, win), RMA_SUCCESS);
			  rma_win_fence(0, win);
			  EXPECT_EQ(base[(3 << 20) / 8 - 1], 43.0 - rank);
			  ASSERT_EQ(rma_win_free(&win), RMA_SUCCESS);

			  /* More than the pool holds: an error at creation, never SIGBUS. */
			  void *b;
			  int rc = rma_win_allocate(64 << 20, 1, info, RMA_COMM_WORLD, &b, &win);
			  EXPECT_EQ(errorClassOf(rc), RMA_ERR_NO_MEM) << errorText(rc);
			  /* "prefer" falls back to plain pages instead. */
			  rma_info_set(info, "rma_huge_pages", "prefer");
			  ASSERT_EQ(rma_win_allocate(64 << 20, 1, info, RMA_COMM_WORLD, &b, &win), RMA_SUCCESS);
			  rma_win_get_info(win, &used);
			  rma_info_get(used, "rma_page_size", 63, v, &f);
			  EXPECT_STREQ(v, std::to_string(sysconf(_SC_PAGESIZE)).c_str());
			  rma_info_free(&used);
			  ASSERT_EQ(rma_win_free(&win), RMA_SUCCESS);
			  rma_info_free(&info);
			  ASSERT_EQ(rma_finalize(), RMA_SUCCESS);
		  }));
	/* Every huge page is back in the pool. */
	EXPECT_EQ(meminfo("HugePages_Free"), freeBefore);
}

TEST(WindowMemoryTest, PlainPagesWhenThePoolIsEmpty)
{
	if (meminfo("HugePages_Free") > 0)
		GTEST_SKIP() << "the host has free huge pages";
	EXPECT_RANKS_PASS(runRanks(1, [](int) {
			  ASSERT_EQ(rma_init(nullptr, nullptr), RMA_SUCCESS);
			  rma_comm_set_errhandler(RMA_COMM_WORLD, RMA_ERRORS_RETURN);
			  rma_info info;
			  rma_info_create(&info);
			  rma_info_set(info, "rma_huge_pages", "require");
			  rma_win win;
			  void *b;
			  int rc = rma_win_allocate(4 << 20, 1, info, RMA_COMM_WORLD, &b, &win);
			  EXPECT_EQ(errorClassOf(rc), RMA_ERR_NO_MEM) << errorText(rc);
			  rma_info_free(&info);
			  ASSERT_EQ(rma_win_allocate(4 << 20, 1, RMA_INFO_NULL, RMA_COMM_WORLD, &b, &win), RMA_SUCCESS);
			  rma_info used;
			  rma_win_get_info(win, &used);
			  char v[64];
			  int f;
			  rma_info_get(used, "rma_page_size", 63, v, &f);
			  EXPECT_STREQ(v, std::to_string(sysconf(_SC_PAGESIZE)).c_str());
			  rma_info_free(&used);
			  ASSERT_EQ(rma_win_free(&win), RMA_SUCCESS);
			  ASSERT_EQ(rma_finalize(), RMA_SUCCESS);
		  }));
}

} /* namespace */

namespace {

long long memAvailableBytes()
{
	FILE *f = std::fopen("/proc/meminfo", "r");
	if (!f)
		return -1;
	char key[64];
	long long kb = -1, value;
	while (std::fscanf(f, "%63s %lld kB", key, &value) == 2)
		if (std::strcmp(key, "MemAvailable:") == 0)
			kb = value;
	std::fclose(f);
	return kb < 0 ? -1 : kb * 1024;
}

/*
 * Two ranks each asking for 60 % of the host's free memory: each alone
 * fits, together they do not. Every rank fails with RMA_ERR_NO_MEM and the
 * sizes before any memory is touched (each checking alone, both passed and
 * the OOM killer ended one of them), and the job goes on.
 */
TEST(WindowErrorsTest, WindowLargerThanTheHostFailsOnEveryRankBeforeTouchingMemory)
{
	const long long avail = memAvailableBytes();
	if (avail <= 0)
		GTEST_SKIP() << "no MemAvailable in /proc/meminfo";
	const rma_aint each = static_cast<rma_aint>(avail / 10 * 6);
	for (bool shared : { false, true }) {
		SCOPED_TRACE(shared ? "allocate_shared" : "allocate");
		EXPECT_RANKS_PASS(runRanks(2, [each, shared](int) {
			ASSERT_EQ(rma_init(nullptr, nullptr), RMA_SUCCESS);
			rma_comm_set_errhandler(RMA_COMM_WORLD, RMA_ERRORS_RETURN);
			rma_info info;
			rma_info_create(&info);
			rma_info_set(info, "alloc_shared_noncontig", "true");
			void *base = nullptr;
			rma_win win = RMA_WIN_NULL;
			int rc = shared ? rma_win_allocate_shared(each, 1, info, RMA_COMM_WORLD, &base, &win)
					: rma_win_allocate(each, 1, info, RMA_COMM_WORLD, &base, &win);
			EXPECT_EQ(errorClassOf(rc), RMA_ERR_NO_MEM) << errorText(rc);
			EXPECT_NE(errorText(rc).find("on this host in all"), std::string::npos) << errorText(rc);
			EXPECT_EQ(win, RMA_WIN_NULL);
			rma_info_free(&info);
			/* The job goes on: a small window works. */
			ASSERT_EQ(rma_win_allocate(64, 1, RMA_INFO_NULL, RMA_COMM_WORLD, &base, &win), RMA_SUCCESS);
			ASSERT_EQ(rma_win_free(&win), RMA_SUCCESS);
			ASSERT_EQ(rma_finalize(), RMA_SUCCESS);
		}));
	}
}

} /* namespace */
