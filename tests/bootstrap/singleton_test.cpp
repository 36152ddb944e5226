/* SPDX-License-Identifier: MIT */
#include <fcntl.h>
#include <sys/mman.h>
#include <unistd.h>

#include <cstdlib>
#include <string>

#include <gtest/gtest.h>

#include "bootstrap/bootstrap.h"
#include "error/error.h"

namespace librma {
namespace {

/* These tests own the bootstrap variables of their process's environment. */
class SingletonBootstrapTest : public testing::Test
{
protected:
	void SetUp() override
	{
		for (const char *name : { "RMA_BOOT_FD", "RMA_RANK", "RMA_SIZE" })
			unsetenv(name);
	}
	void TearDown() override { SetUp(); }
};

TEST_F(SingletonBootstrapTest, WithoutLauncherIsRankZeroOfOne)
{
	auto boot = Bootstrap::fromEnvironment();
	ASSERT_TRUE(boot.ok()) << errorMessage(boot.code());
	Bootstrap &b = **boot;
	EXPECT_EQ(b.rank(), 0);
	EXPECT_EQ(b.size(), 1);
	EXPECT_EQ(b.pid(0), getpid());
	EXPECT_EQ(b.host(0), 0);
}

TEST_F(SingletonBootstrapTest, AllgatherReturnsOwnDataAndCopiesOfOwnDescriptors)
{
	auto boot = Bootstrap::fromEnvironment();
	ASSERT_TRUE(boot.ok()) << errorMessage(boot.code());
	UniqueFd file(memfd_create("singleton-test", MFD_CLOEXEC));
	ASSERT_TRUE(file.isValid());
	ASSERT_EQ(write(file.get(), "payload", 7), 7);

	const char text[] = "hello";
	int fds[] = { file.get() };
	int members[] = { 0 };
	GatherResult first, second;
	ASSERT_EQ((*boot)->allgather(1, 1, members, 0, std::as_bytes(std::span(text)), fds, first), RMA_SUCCESS);
	ASSERT_EQ((*boot)->allgather(1, 2, members, 0, {}, {}, second), RMA_SUCCESS);

	EXPECT_EQ(std::string(reinterpret_cast<const char *>(first.data.data()), first.data.size()),
		  std::string(text, sizeof(text)));
	EXPECT_EQ(first.fdCounts, std::vector<int>{ 1 });
	ASSERT_EQ(first.fds.size(), 1u);
	EXPECT_NE(first.fds[0].get(), file.get());
	char buf[8] = {};
	EXPECT_EQ(pread(first.fds[0].get(), buf, 7, 0), 7);
	EXPECT_STREQ(buf, "payload");
	EXPECT_TRUE(second.data.empty());
	EXPECT_EQ(second.fdCounts, std::vector<int>{ 0 });
	EXPECT_NE(first.instance, second.instance);
}

TEST_F(SingletonBootstrapTest, RejectsBadMembersAndTheReservedContext)
{
	auto boot = Bootstrap::fromEnvironment();
	ASSERT_TRUE(boot.ok()) << errorMessage(boot.code());
	GatherResult out;
	int notMe[] = { 1 };
	int me[] = { 0 };
	EXPECT_EQ(errorClass((*boot)->allgather(1, 1, notMe, 0, {}, {}, out)), RMA_ERR_ARG);
	EXPECT_EQ(errorClass((*boot)->allgather(1, 1, me, 1, {}, {}, out)), RMA_ERR_ARG);
	EXPECT_EQ(errorClass((*boot)->allgather(0, 1, me, 0, {}, {}, out)), RMA_ERR_ARG);
	EXPECT_TRUE(out.data.empty());
}

TEST_F(SingletonBootstrapTest, BadLauncherEnvironmentIsAnError)
{
	setenv("RMA_BOOT_FD", "abc", 1);
	setenv("RMA_RANK", "0", 1);
	setenv("RMA_SIZE", "2", 1);
	auto bad = Bootstrap::fromEnvironment();
	EXPECT_EQ(errorClass(bad.code()), RMA_ERR_INTERN);
	EXPECT_NE(errorMessage(bad.code()).find("RMA_BOOT_FD=abc"), std::string::npos);

	/* A descriptor that is open but no bootstrap socket. */
	int p[2];
	ASSERT_EQ(pipe(p), 0);
	UniqueFd r(p[0]), w(p[1]);
	setenv("RMA_BOOT_FD", std::to_string(r.get()).c_str(), 1);
	auto notSocket = Bootstrap::fromEnvironment();
	EXPECT_EQ(errorClass(notSocket.code()), RMA_ERR_INTERN);
	EXPECT_NE(errorMessage(notSocket.code()).find("SOCK_SEQPACKET"), std::string::npos);

	setenv("RMA_BOOT_FD", std::to_string(r.get()).c_str(), 1);
	setenv("RMA_RANK", "2", 1); /* out of range */
	EXPECT_EQ(errorClass(Bootstrap::fromEnvironment().code()), RMA_ERR_INTERN);
}

} /* namespace */
} /* namespace librma */
