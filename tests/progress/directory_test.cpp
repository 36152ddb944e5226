/* SPDX-License-Identifier: MIT */
/*
 * ServedDirectory (progress/directory.h): publish, read, withdraw, reuse,
 * a full table; and the seqlock under concurrent owners and readers
 * ("Concurrent": threads, which ThreadSanitizer checks, and forked
 * processes over a MAP_SHARED mapping, as on a host). A reader must never
 * accept a copy mixing two publications: each payload here is derived from
 * one number, so a torn copy shows.
 */
#include <gtest/gtest.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstdint>
#include <cstring>
#include <thread>
#include <vector>

#include "progress/directory.h"

using namespace librma;

namespace {

/* Directory memory, zero-filled and shared with forked children. */
class DirectoryMemory
{
public:
	DirectoryMemory()
	{
		void *p = mmap(nullptr, ServedDirectory::bytes(), PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
		mem_ = p == MAP_FAILED ? nullptr : p;
	}
	~DirectoryMemory()
	{
		if (mem_)
			munmap(mem_, ServedDirectory::bytes());
	}
	void *get() const { return mem_; }

private:
	void *mem_;
};

/* A payload whose every field follows from @x (a torn copy breaks the relation). */
ServedTarget targetOf(uint64_t x)
{
	ServedTarget t;
	t.window = x;
	t.controlPid = static_cast<int32_t>(x & 0x7fffffff);
	t.controlFd = static_cast<int32_t>(x % 1000);
	t.controlDev = x * 3;
	t.controlIno = x * 5;
	t.controlBytes = x * 7;
	t.memoryPid = static_cast<int32_t>((x >> 3) & 0x7fffffff);
	t.memoryFd = static_cast<int32_t>(x % 999);
	t.memoryHuge = static_cast<uint32_t>(x & 1);
	t.memoryDev = x * 11;
	t.memoryIno = x * 13;
	t.memoryBytes = x * 17;
	t.memoryOffset = x * 19;
	t.memorySize = x * 23;
	t.target = static_cast<int32_t>(x % 77);
	t.nranks = static_cast<int32_t>(x % 78 + 1);
	t.node = static_cast<int32_t>(x % 4);
	t.flags = static_cast<uint32_t>(x % 3);
	return t;
}

bool consistent(const ServedTarget &t)
{
	const ServedTarget want = targetOf(t.window);
	return std::memcmp(&t, &want, sizeof(t)) == 0;
}

TEST(ServedDirectoryTest, PublishedEntriesReadBackAndWithdrawnOnesDoNot)
{
	DirectoryMemory mem;
	ASSERT_NE(mem.get(), nullptr);
	ServedDirectory dir(mem.get());
	ASSERT_TRUE(dir.valid());
	EXPECT_FALSE(ServedDirectory().valid());
	ServedTarget t;
	uint64_t state = 0;
	EXPECT_FALSE(dir.read(0, t, state)) << "a zero-filled directory is empty";
	const uint64_t before = dir.changes();

	int a = dir.publish(targetOf(42));
	int b = dir.publish(targetOf(43));
	ASSERT_GE(a, 0);
	ASSERT_GE(b, 0);
	EXPECT_NE(a, b);
	EXPECT_EQ(dir.changes(), before + 2);
	ASSERT_TRUE(dir.read(a, t, state));
	EXPECT_EQ(t.window, 42u);
	EXPECT_TRUE(consistent(t));
	EXPECT_EQ(dir.state(a), state);
	EXPECT_EQ(state % 2, 0u);

	dir.withdraw(a);
	EXPECT_EQ(dir.changes(), before + 3);
	EXPECT_FALSE(dir.read(a, t, state));
	EXPECT_EQ(dir.state(a), 0u);
	uint64_t stateB;
	ASSERT_TRUE(dir.read(b, t, stateB));
	EXPECT_EQ(t.window, 43u);

	/* Reuse: the same entry, a different publication. */
	int c = dir.publish(targetOf(44));
	EXPECT_EQ(c, a);
	uint64_t stateC;
	ASSERT_TRUE(dir.read(c, t, stateC));
	EXPECT_NE(stateC, state);
	EXPECT_EQ(t.window, 44u);

	EXPECT_FALSE(dir.read(-1, t, state));
	EXPECT_FALSE(dir.read(static_cast<int>(ServedDirectory::kEntries), t, state));
	dir.withdraw(-1); /* ignored */
	dir.withdraw(static_cast<int>(ServedDirectory::kEntries));
}

TEST(ServedDirectoryTest, AFullDirectoryRefusesAndRecovers)
{
	DirectoryMemory mem;
	ServedDirectory dir(mem.get());
	std::vector<int> taken;
	for (uint32_t i = 0; i < ServedDirectory::kEntries; ++i) {
		int at = dir.publish(targetOf(i + 1));
		ASSERT_GE(at, 0);
		taken.push_back(at);
	}
	EXPECT_EQ(dir.publish(targetOf(99999)), -1);
	dir.withdraw(taken[17]);
	EXPECT_EQ(dir.publish(targetOf(99999)), taken[17]);
}

/* Owners publish and withdraw in a loop while readers copy every entry: no torn copy may pass. */
void churn(ServedDirectory dir, uint64_t seed, std::chrono::milliseconds span)
{
	std::vector<int> mine;
	const auto end = std::chrono::steady_clock::now() + span;
	for (int i = 0; std::chrono::steady_clock::now() < end; ++i) {
		int at = dir.publish(targetOf(seed * 1000003 + static_cast<uint64_t>(i)));
		if (at >= 0)
			mine.push_back(at);
		if (mine.size() > 8 || (at < 0 && !mine.empty())) {
			dir.withdraw(mine.front());
			mine.erase(mine.begin());
		}
	}
	for (int at : mine)
		dir.withdraw(at);
}

/* Reads every entry until @stop; returns the number of torn copies accepted (must be 0). */
uint64_t readAll(ServedDirectory dir, const std::atomic<bool> &stop, uint64_t &accepted)
{
	uint64_t torn = 0;
	accepted = 0;
	while (!stop.load(std::memory_order_relaxed)) {
		for (uint32_t i = 0; i < 64; ++i) {
			ServedTarget t;
			uint64_t state;
			if (!dir.read(static_cast<int>(i), t, state))
				continue;
			++accepted;
			torn += !consistent(t);
		}
	}
	return torn;
}

TEST(ServedDirectoryConcurrentTest, ThreadsNeverAcceptATornEntry)
{
	DirectoryMemory mem;
	ServedDirectory dir(mem.get());
	std::atomic<bool> stop{ false };
	uint64_t torn = 0, accepted = 0;
	std::thread reader([&] { torn = readAll(dir, stop, accepted); });
	std::vector<std::thread> owners;
	for (uint64_t k = 1; k <= 3; ++k)
		owners.emplace_back([dir, k] { churn(dir, k, std::chrono::milliseconds(500)); });
	for (auto &t : owners)
		t.join();
	stop = true;
	reader.join();
	EXPECT_EQ(torn, 0u);
	EXPECT_GT(accepted, 0u) << "the reader never saw a published entry: the test proved nothing";
	ServedTarget t;
	uint64_t state;
	for (uint32_t i = 0; i < ServedDirectory::kEntries; ++i)
		EXPECT_FALSE(dir.read(static_cast<int>(i), t, state)) << "entry " << i << " was left published";
}

TEST(ServedDirectoryConcurrentTest, ProcessesNeverAcceptATornEntry)
{
	DirectoryMemory mem;
	ServedDirectory dir(mem.get());
	std::vector<pid_t> owners;
	for (uint64_t k = 1; k <= 2; ++k) {
		pid_t pid = fork();
		ASSERT_GE(pid, 0);
		if (pid == 0) {
			churn(dir, k, std::chrono::milliseconds(500));
			_exit(0);
		}
		owners.push_back(pid);
	}
	std::atomic<bool> stop{ false };
	uint64_t torn = 0, accepted = 0;
	std::thread reader([&] { torn = readAll(dir, stop, accepted); });
	for (pid_t pid : owners) {
		int status = 0;
		ASSERT_EQ(waitpid(pid, &status, 0), pid);
		EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0);
	}
	stop = true;
	reader.join();
	EXPECT_EQ(torn, 0u);
	EXPECT_GT(accepted, 0u);
}

} /* namespace */
