/* SPDX-License-Identifier: MIT */
/*
 * HandleTable (lib/mpi/handle_table.h): the shim's lock-free handle -> object
 * hash. No MPI needed: keys are plain numbers, as MPICH's int handles are.
 */
#include "mpi/handle_table.h"

#include <gtest/gtest.h>

#include <atomic>
#include <thread>
#include <utility>
#include <vector>

using rmampi::FastMap;
using rmampi::handleKey;
using rmampi::HandleTable;

namespace {

TEST(HandleTableTest, FindsWhatWasInsertedAndMissesTheRest)
{
	HandleTable<int> t;
	int a = 1, b = 2;
	t.insert(0xa0000000u, &a);
	t.insert(0xe000005bu, &b);
	EXPECT_EQ(t.find(0xa0000000u), &a);
	EXPECT_EQ(t.find(0xe000005bu), &b);
	EXPECT_EQ(t.find(0x20000000u), nullptr);
}

TEST(HandleTableTest, EraseLeavesATombstoneThatReinsertReuses)
{
	HandleTable<int> t;
	int a = 1, b = 2;
	t.insert(42, &a);
	t.erase(42);
	EXPECT_EQ(t.find(42), nullptr);
	EXPECT_TRUE(t.values().empty());
	t.insert(42, &b); /* a freed handle handed out again */
	EXPECT_EQ(t.find(42), &b);
	EXPECT_EQ(t.values().size(), 1u);
}

TEST(HandleTableTest, GrowsAndKeepsEveryLiveEntry)
{
	HandleTable<int> t;
	std::vector<int> objs(5000);
	for (size_t i = 0; i < objs.size(); i++)
		t.insert(0x1000 + 8 * i, &objs[i]);
	for (size_t i = 0; i < objs.size(); i += 2)
		t.erase(0x1000 + 8 * i);
	for (size_t i = 0; i < objs.size(); i++)
		EXPECT_EQ(t.find(0x1000 + 8 * i), i % 2 ? &objs[i] : nullptr) << i;
	EXPECT_EQ(t.values().size(), objs.size() / 2);
}

TEST(HandleTableTest, KeysOfBothAbis)
{
	int x = 0;
	EXPECT_EQ(handleKey(static_cast<int>(0xa0000000u)), 0xa0000000u); /* MPICH: no sign extension */
	EXPECT_EQ(handleKey(&x), reinterpret_cast<uintptr_t>(&x));	  /* Open MPI: the pointer */
}

/* Readers never see a wrong value or freed memory while a writer inserts and grows. */
/* MPICH-like predefined datatype handles (kind, size, index packed), pair types among them. */
TEST(FastMapTest, FindsEveryIntHandleOfASetInOneProbe)
{
	std::vector<std::pair<int, int>> pairs;
	for (int i = 1; i <= 60; i++)
		pairs.emplace_back(0x4c000000 | ((i % 8 + 1) << 8) | i, i);
	for (int i = 0; i < 8; i++)
		pairs.emplace_back(static_cast<int>(0x8c000000u | i), 100 + i);
	pairs.push_back(pairs.front()); /* one handle under two names (MPI_LONG_LONG_INT, MPI_LONG_LONG) */
	FastMap<int, int, 10> m;
	m.fill(pairs);
	for (const auto &[h, v] : pairs) {
		int out = -1;
		EXPECT_TRUE(m.find(h, out)) << std::hex << h;
		EXPECT_EQ(out, v);
	}
	int out = 0;
	EXPECT_FALSE(m.find(0x4c000000 | (3 << 8) | 61, out));
	EXPECT_FALSE(m.find(static_cast<int>(0x8c000009u), out));
	EXPECT_FALSE(m.find(0, out)); /* an empty slot's key is no handle */
	EXPECT_FALSE((FastMap<int, int, 10>().find(0, out)));
}

/* Open MPI-like handles: addresses of objects a fixed stride apart. */
TEST(FastMapTest, FindsEveryPointerHandleOfASetInOneProbe)
{
	static char objects[60][512];
	std::vector<std::pair<char *, int>> pairs;
	for (int i = 0; i < 60; i++)
		pairs.emplace_back(objects[i], i + 1);
	FastMap<char *, int, 10> m;
	m.fill(pairs);
	for (const auto &[h, v] : pairs) {
		int out = -1;
		EXPECT_TRUE(m.find(h, out));
		EXPECT_EQ(out, v);
	}
	int out = 0;
	EXPECT_FALSE(m.find(objects[0] + 1, out));
	EXPECT_FALSE(m.find(nullptr, out)); /* an empty slot's key is no handle */
	EXPECT_FALSE((FastMap<char *, int, 10>().find(nullptr, out)));
}

TEST(HandleTableConcurrentTest, ReadersRunWhileTheWriterGrows)
{
	HandleTable<int> t;
	std::vector<int> objs(20000);
	t.insert(1, &objs[0]);
	std::atomic<bool> stop{ false };
	std::atomic<long> wrong{ 0 };
	std::vector<std::thread> readers;
	for (int r = 0; r < 2; r++)
		readers.emplace_back([&] {
			while (!stop.load(std::memory_order_relaxed)) {
				if (t.find(1) != &objs[0])
					wrong++;
				for (size_t i = 1; i < objs.size(); i += 997) {
					int *p = t.find(1 + i);
					if (p && p != &objs[i])
						wrong++;
				}
			}
		});
	for (size_t i = 1; i < objs.size(); i++)
		t.insert(1 + i, &objs[i]);
	stop = true;
	for (auto &th : readers)
		th.join();
	EXPECT_EQ(wrong.load(), 0);
}

} /* namespace */
