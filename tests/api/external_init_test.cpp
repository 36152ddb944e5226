/* SPDX-License-Identifier: MIT */
/*
 * rma_init_external: librma joining a job that another runtime started.
 * The "runtime" here is a directory of files: a member of an allgather
 * writes its item under a name made of the member list and its own call
 * count for that list, then reads every other member's. Ranks are forked by
 * runRanks (for process management only: rma_init_external never looks at
 * the launcher's environment).
 */
#include <gtest/gtest.h>

#include <fcntl.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstring>
#include <map>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include <rma/rma.h>

#include "support/multiproc.h"

namespace {

using librma::test::readFile;
using librma::test::runRanks;
using librma::test::ScratchDir;

int classOf(int code)
{
	int cls = -1;
	rma_error_class(code, &cls);
	return cls;
}

struct FileRuntime {
	FileRuntime(std::string d, int r) : dir(std::move(d)), rank(r) {}
	std::string dir;
	int rank = 0;
	/* Calls so far per member list: the collective's sequence number. */
	std::map<std::string, int> calls;
	int allgathers = 0;
	bool failNext = false;
};

std::string listKey(const int *members, int count)
{
	std::string key;
	for (int i = 0; i < count; ++i) {
		key += std::to_string(members[i]);
		key += '-';
	}
	return key;
}

int fileAllgather(void *arg, const int *members, int count, int myIndex, const void *send, size_t len, void *recv)
{
	auto &rt = *static_cast<FileRuntime *>(arg);
	if (rt.failNext)
		return 42;
	if (members[myIndex] != rt.rank)
		return 1;
	++rt.allgathers;
	std::string key = listKey(members, count);
	std::string stem = rt.dir + "/" + key + "." + std::to_string(rt.calls[key]++) + ".";
	{
		std::string tmp = stem + std::to_string(rt.rank) + ".tmp";
		FILE *f = std::fopen(tmp.c_str(), "wb");
		if (!f || std::fwrite(send, 1, len, f) != len || std::fclose(f) != 0)
			return 2;
		if (std::rename(tmp.c_str(), (stem + std::to_string(rt.rank)).c_str()) != 0)
			return 3;
	}
	auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(30);
	for (int i = 0; i < count; ++i) {
		std::string name = stem + std::to_string(members[i]);
		while (access(name.c_str(), F_OK) != 0) {
			if (std::chrono::steady_clock::now() > deadline)
				return 4;
			std::this_thread::sleep_for(std::chrono::microseconds(200));
		}
		std::string item = readFile(name);
		if (item.size() != len)
			return 5;
		if (len > 0)
			std::memcpy(static_cast<char *>(recv) + i * len, item.data(), len);
	}
	return 0;
}

[[noreturn]] void fileAbort(void *, int code)
{
	_exit(code);
}

rma_bootstrap_ops opsFor(FileRuntime &rt, int rank, int size, const int *hostOf)
{
	rma_bootstrap_ops ops{};
	ops.version = RMA_BOOTSTRAP_OPS_VERSION;
	ops.rank = rank;
	ops.size = size;
	ops.host_of = hostOf;
	ops.job_id = 0x5eed0000u + static_cast<uint64_t>(getppid());
	ops.arg = &rt;
	ops.allgather = fileAllgather;
	ops.abort = fileAbort;
	return ops;
}

/* Three ranks on one host: windows over the world and over a split, data checked, finalize. */
TEST(ExternalInit, WindowsOverTheExternalWorld)
{
	ScratchDir dir;
	const std::string path = dir.path();
	EXPECT_EQ(runRanks(3, [&](int rank) {
		FileRuntime rt(path, rank);
		const int hostOf[3] = { 7, 7, 7 };
		rma_bootstrap_ops ops = opsFor(rt, rank, 3, hostOf);
		int provided = -1;
		ASSERT_EQ(rma_init_external(&ops, RMA_THREAD_MULTIPLE, &provided), RMA_SUCCESS);
		EXPECT_EQ(provided, RMA_THREAD_SERIALIZED);
		EXPECT_GT(rt.allgathers, 0) << "the start-up exchange goes through the runtime";
		int size = 0, me = -1;
		ASSERT_EQ(rma_comm_size(RMA_COMM_WORLD, &size), RMA_SUCCESS);
		ASSERT_EQ(rma_comm_rank(RMA_COMM_WORLD, &me), RMA_SUCCESS);
		EXPECT_EQ(size, 3);
		EXPECT_EQ(me, rank);

		/* A window over the world: every rank puts its rank into slot `rank` of every other rank. */
		int64_t *base = nullptr;
		rma_win win;
		ASSERT_EQ(rma_win_allocate(3 * sizeof(int64_t), sizeof(int64_t), RMA_INFO_NULL, RMA_COMM_WORLD,
					   &base, &win),
			  RMA_SUCCESS);
		for (int i = 0; i < 3; ++i)
			base[i] = -1;
		ASSERT_EQ(rma_win_fence(0, win), RMA_SUCCESS);
		const int64_t value = 100 + rank;
		for (int t = 0; t < 3; ++t)
			ASSERT_EQ(rma_put(&value, 1, RMA_INT64_T, t, rank, 1, RMA_INT64_T, win), RMA_SUCCESS);
		ASSERT_EQ(rma_win_fence(0, win), RMA_SUCCESS);
		for (int i = 0; i < 3; ++i)
			EXPECT_EQ(base[i], 100 + i) << "slot " << i;
		ASSERT_EQ(rma_win_free(&win), RMA_SUCCESS);

		/* A split of ranks {0, 2} in reverse order: collectives over a subset of the world. */
		rma_comm sub = RMA_COMM_NULL;
		ASSERT_EQ(rma_comm_split(RMA_COMM_WORLD, rank == 1 ? RMA_UNDEFINED : 0, -rank, &sub), RMA_SUCCESS);
		if (rank != 1) {
			int subRank = -1;
			ASSERT_EQ(rma_comm_rank(sub, &subRank), RMA_SUCCESS);
			EXPECT_EQ(subRank, rank == 2 ? 0 : 1);
			int64_t *sbase = nullptr;
			rma_win swin;
			ASSERT_EQ(rma_win_allocate_shared(sizeof(int64_t), sizeof(int64_t), RMA_INFO_NULL, sub,
							  &sbase, &swin),
				  RMA_SUCCESS);
			*sbase = 0;
			ASSERT_EQ(rma_win_fence(0, swin), RMA_SUCCESS);
			int64_t one = 1, old = -1;
			ASSERT_EQ(rma_win_lock_all(0, swin), RMA_SUCCESS);
			ASSERT_EQ(rma_fetch_and_op(&one, &old, RMA_INT64_T, 0, 0, RMA_SUM, swin), RMA_SUCCESS);
			ASSERT_EQ(rma_win_unlock_all(swin), RMA_SUCCESS);
			ASSERT_EQ(rma_win_fence(0, swin), RMA_SUCCESS);
			/* Shared memory across the split: rank 0 of the split sees both increments directly. */
			if (subRank == 0) {
				EXPECT_EQ(*sbase, 2);
			}
			ASSERT_EQ(rma_win_free(&swin), RMA_SUCCESS);
			ASSERT_EQ(rma_comm_free(&sub), RMA_SUCCESS);
		}
		ASSERT_EQ(rma_finalize(), RMA_SUCCESS);
		int finalized = 0;
		rma_finalized(&finalized);
		EXPECT_EQ(finalized, 1);
	}),
		  0);
}

/* Bad arguments are RMA_ERR_ARG and leave librma uninitialized; a failing runtime is RMA_ERR_INTERN. */
TEST(ExternalInit, BadArgumentsAndFailingRuntime)
{
	ScratchDir dir;
	const std::string path = dir.path();
	EXPECT_EQ(runRanks(1, [&](int rank) {
		FileRuntime rt(path, rank);
		const int hostOf[1] = { 0 };
		int provided = -1;
		EXPECT_EQ(classOf(rma_init_external(nullptr, RMA_THREAD_SINGLE, &provided)), RMA_ERR_ARG);
		rma_bootstrap_ops ops = opsFor(rt, 0, 1, hostOf);
		ops.version = RMA_BOOTSTRAP_OPS_VERSION + 1;
		EXPECT_EQ(classOf(rma_init_external(&ops, RMA_THREAD_SINGLE, &provided)), RMA_ERR_ARG);
		ops = opsFor(rt, 0, 1, hostOf);
		ops.allgather = nullptr;
		EXPECT_EQ(classOf(rma_init_external(&ops, RMA_THREAD_SINGLE, &provided)), RMA_ERR_ARG);
		ops = opsFor(rt, 1, 1, hostOf);
		EXPECT_EQ(classOf(rma_init_external(&ops, RMA_THREAD_SINGLE, &provided)), RMA_ERR_ARG);
		ops = opsFor(rt, 0, 1, nullptr);
		EXPECT_EQ(classOf(rma_init_external(&ops, RMA_THREAD_SINGLE, &provided)), RMA_ERR_ARG);
		ops = opsFor(rt, 0, 1, hostOf);
		EXPECT_EQ(classOf(rma_init_external(&ops, 9, &provided)), RMA_ERR_ARG);
		int flag = 1;
		rma_initialized(&flag);
		EXPECT_EQ(flag, 0);
		/* Now a good one; a second call is refused. */
		ASSERT_EQ(rma_init_external(&ops, RMA_THREAD_SINGLE, &provided), RMA_SUCCESS);
		EXPECT_EQ(provided, RMA_THREAD_SINGLE);
		EXPECT_EQ(classOf(rma_init_external(&ops, RMA_THREAD_SINGLE, &provided)), RMA_ERR_OTHER);
		ASSERT_EQ(rma_finalize(), RMA_SUCCESS);
	}),
		  0);

	/* Two ranks whose runtime fails its collectives: the start-up exchange reports it. */
	EXPECT_EQ(runRanks(2, [&](int rank) {
		FileRuntime rt(path, rank);
		rt.failNext = true;
		const int hostOf[2] = { 0, 0 };
		rma_bootstrap_ops ops = opsFor(rt, rank, 2, hostOf);
		int provided = -1;
		int rc = rma_init_external(&ops, RMA_THREAD_SINGLE, &provided);
		EXPECT_EQ(classOf(rc), RMA_ERR_INTERN);
		char text[RMA_MAX_ERROR_STRING];
		int len = 0;
		rma_error_string(rc, text, &len);
		EXPECT_NE(std::strstr(text, "external runtime's allgather failed (it returned 42)"), nullptr) << text;
	}),
		  0);
}

} /* namespace */
