/* SPDX-License-Identifier: MIT */
/*
 * The guard between another host's operation on a dynamic window's region
 * and the owner's rma_win_detach (win/control.h: beginRemoteAccess,
 * endRemoteAccess, finishRemoteAccesses). A "server" thread announces an
 * access, looks the region up in the attach table under its sequence lock
 * (as Window::resolveDynamic does) and, if it is there, checks that the
 * owner has not declared the memory freed; the owner attaches, detaches,
 * waits until the accesses are finished (as Window::detach does) and writes
 * the memory as its own again. A server write landing after that is exactly
 * the use-after-free the guard exists to prevent. Checked: without the
 * owner's seq_cst fence (its sequence store then passes its load of the
 * access count in the store buffer) every run fails here; so does an owner
 * that does not wait. (The server's fence follows a locked instruction,
 * already a full barrier on x86: dropping it is not visible here.)
 */
#include <gtest/gtest.h>

#include <atomic>
#include <cstdint>
#include <cstdio>
#include <memory>
#include <thread>

#include "common/spin_wait.h"
#include "win/control.h"

using namespace librma;

namespace {

constexpr uint64_t kRegion = 0x10000;

/* The owner's side of the sequence lock, as Window::publishAttachTable (one entry or none). */
void publish(AttachTable &table, bool attached)
{
	uint64_t seq = table.sequence.load(std::memory_order_relaxed);
	table.sequence.store(seq + 1, std::memory_order_relaxed);
	std::atomic_thread_fence(std::memory_order_release);
	std::atomic_ref<uint64_t>(table.entries[0].base).store(attached ? kRegion : 0, std::memory_order_relaxed);
	std::atomic_ref<uint32_t>(table.count).store(attached ? 1 : 0, std::memory_order_relaxed);
	table.sequence.store(seq + 2, std::memory_order_release);
}

/* The server's lookup, as Window::resolveDynamic: whether the region is attached, from a consistent snapshot. */
bool attached(AttachTable &table)
{
	for (;;) {
		uint64_t s1 = table.sequence.load(std::memory_order_acquire);
		if (s1 & 1)
			continue;
		bool there = std::atomic_ref<uint32_t>(table.count).load(std::memory_order_relaxed) == 1 &&
			     std::atomic_ref<uint64_t>(table.entries[0].base).load(std::memory_order_relaxed) == kRegion;
		std::atomic_thread_fence(std::memory_order_acquire);
		if (table.sequence.load(std::memory_order_relaxed) == s1)
			return there;
	}
}

TEST(RemoteAccess, NoAccessOutlivesDetach)
{
	auto table = std::make_unique<AttachTable>();
	std::atomic<bool> stop{ false };
	/* The region's memory: the server writes kServer into it, the owner kOwner once it has it back. */
	constexpr uint64_t kServer = 1, kOwner = 2;
	std::atomic<uint64_t> cell{ 0 };
	std::atomic<uint64_t> hits{ 0 };

	std::thread server([&] {
		uint64_t h = 0;
		for (unsigned i = 0; !stop.load(std::memory_order_relaxed); ++i) {
			RemoteAccess access(table.get());
			if (attached(*table)) {
				++h;
				/* A copy takes a while: the write lands well after the lookup. */
				for (unsigned spin = 0; spin < (i & 127); ++spin)
					cpuRelax();
				cell.store(kServer, std::memory_order_relaxed);
			}
		}
		hits.store(h);
	});

	const int rounds = 100000;
	uint64_t waited = 0, violations = 0;
	for (int r = 0; r < rounds; ++r) {
		publish(*table, true);
		for (int spin = 0; spin < (r & 63); ++spin)
			cpuRelax();
		publish(*table, false);
		SpinWait wait;
		while (!finishRemoteAccesses(*table)) {
			++waited;
			wait.once();
		}
		/* The memory is the owner's again: nothing may write it from now on. */
		cell.store(kOwner, std::memory_order_relaxed);
		for (int spin = 0; spin < 200; ++spin)
			cpuRelax();
		if (cell.load(std::memory_order_relaxed) != kOwner)
			++violations;
	}
	stop.store(true);
	server.join();
	EXPECT_EQ(violations, 0u) << "the server wrote the region after detach had finished waiting";
	/* The two threads met: the server found the region attached, and the owner had to wait at times. */
	EXPECT_GT(hits.load(), 0u);
	std::printf("server found the region %llu times; the owner waited %llu polls\n",
		    static_cast<unsigned long long>(hits.load()), static_cast<unsigned long long>(waited));
	EXPECT_EQ(std::atomic_ref<uint32_t>(table->remoteAccesses).load(), 0u);
}

TEST(RemoteAccess, NullTableAnnouncesNothing)
{
	RemoteAccess none(nullptr);
	auto table = std::make_unique<AttachTable>();
	{
		RemoteAccess one(table.get());
		RemoteAccess two(table.get());
		EXPECT_EQ(std::atomic_ref<uint32_t>(table->remoteAccesses).load(), 2u);
		EXPECT_FALSE(finishRemoteAccesses(*table));
	}
	EXPECT_TRUE(finishRemoteAccesses(*table));
}

} /* namespace */
