/* SPDX-License-Identifier: MIT */
/*
 * Huge-page segments. The pool is host-wide, so the tests that need pages
 * reserve a small one themselves (root only) and give it back afterwards.
 */
#include "shm/segment.h"

#include <fcntl.h>
#include <sys/file.h>
#include <linux/mempolicy.h>
#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>
#include <cstring>
#include <fstream>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "error/error.h"
#include "host_state.h"

namespace librma {
namespace {

using test::inChild;
using test::meminfo;

constexpr const char *kNrHugePages = "/proc/sys/vm/nr_hugepages";

long readCounter(const std::string &path)
{
	std::ifstream in(path);
	long value = -1;
	in >> value;
	return value;
}

bool writeCounter(const std::string &path, long value)
{
	std::ofstream out(path);
	out << value << std::endl;
	return static_cast<bool>(out);
}

SegmentOptions hugeOptions(std::size_t size, HugePages policy)
{
	SegmentOptions options;
	options.size = size;
	options.hugePages = policy;
	options.name = "rma-huge-test";
	return options;
}

TEST(FreeHugePagesTest, IsFreeMinusReserved)
{
	const std::string pool = "/sys/kernel/mm/hugepages/hugepages-2048kB/";
	long free = readCounter(pool + "free_hugepages");
	long reserved = readCounter(pool + "resv_hugepages");
	if (free < 0)
		GTEST_SKIP() << "this kernel has no 2 MiB huge-page pool";

	EXPECT_EQ(freeHugePages(), static_cast<std::size_t>(std::max(free - reserved, 0L)));
}

/*
 * Sets the host's 2 MiB pool to a size for one test and restores the old
 * size afterwards, whatever the test's outcome.
 */
class HugePoolTest : public ::testing::Test
{
protected:
	/*
	 * The pool is the host's: two test runs at once (two build trees, a
	 * CI run beside a developer's) would size it under each other. They
	 * take turns through an flock held for the whole test.
	 */
	void SetUp() override
	{
		lock_ = open("/dev/shm/librma-hugepool-test.lock", O_RDWR | O_CREAT | O_CLOEXEC, 0666);
		if (lock_ >= 0)
			while (flock(lock_, LOCK_EX) < 0 && errno == EINTR)
				;
	}
	void TearDown() override
	{
		if (saved_ >= 0)
			writeCounter(kNrHugePages, saved_);
		if (lock_ >= 0)
			close(lock_); /* drops the lock */
	}

	/* Size the pool to @pages (false with the reason in skip_ if we may not). */
	bool setPool(long pages)
	{
		if (geteuid() != 0) {
			skip_ = "sizing the huge-page pool needs root";
			return false;
		}
		long current = readCounter(kNrHugePages);
		if (current < 0) {
			skip_ = "no /proc/sys/vm/nr_hugepages";
			return false;
		}
		if (saved_ < 0)
			saved_ = current;
		if (!writeCounter(kNrHugePages, pages) || readCounter(kNrHugePages) != pages) {
			skip_ = "the kernel would not give " + std::to_string(pages) + " huge pages";
			return false;
		}
		if (static_cast<long>(freeHugePages()) != pages) {
			skip_ = "another process is using huge pages";
			return false;
		}
		return true;
	}

	/* An empty pool: this host's if it has none free, else one we empty. */
	bool emptyPool() { return freeHugePages() == 0 || setPool(0); }

	std::string skip_;

private:
	long saved_ = -1;
	int lock_ = -1;
};

/* The lowest NUMA node with memory on this host (-1 if none is listed). */
int firstMemoryNode()
{
	const Topology topology = Topology::fromSysfs();
	for (const NumaNode &n : topology.nodes()) {
		if (n.hasMemory)
			return n.id;
	}
	return -1;
}

TEST_F(HugePoolTest, HugeSegmentUsesTwoMiBPages)
{
	if (!setPool(8))
		GTEST_SKIP() << skip_;
	long freeBefore = meminfo("HugePages_Free");
	{
		Result<Segment> segment = Segment::create(hugeOptions(3 << 20, HugePages::Require));
		ASSERT_TRUE(segment.ok()) << errorMessage(segment.code());

		EXPECT_TRUE(segment->hugePages());
		EXPECT_EQ(segment->pageSize(), kHugePageSize);
		EXPECT_EQ(segment->size(), 3u << 20);
		EXPECT_EQ(segment->mappedSize(), 4u << 20);
		EXPECT_EQ(meminfo("HugePages_Free"), freeBefore - 2);
		EXPECT_TRUE(std::all_of(segment->data(), segment->data() + segment->mappedSize(),
					[](std::byte b) { return b == std::byte{ 0 }; }));
		EXPECT_EQ(fcntl(segment->fd(), F_GET_SEALS), F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_SEAL);
		EXPECT_NE(ftruncate(segment->fd(), 0), 0);
	}
	EXPECT_EQ(meminfo("HugePages_Free"), freeBefore);
}

/*
 * On a host where no fault can fail after the mmap() reservation and no
 * placement can be lost (one memory node, no limit charged at fault time),
 * a large huge-page segment is reserved at creation but its pages are taken
 * and zeroed at first touch, with or without a bind policy.
 */
TEST_F(HugePoolTest, ALargeSegmentTakesItsReservedPagesAtFirstTouch)
{
	if (memoryNodeCount() != 1 || hugeFaultsLimited())
		GTEST_SKIP() << "more than one memory node, or a hugetlb limit may apply: segments are populated at creation";
	if (!setPool(10))
		GTEST_SKIP() << skip_;
	const int node = firstMemoryNode();
	const std::vector<MemPolicy> policies{ MemPolicy{}, MemPolicy{ MPOL_BIND, { node } } };
	for (const MemPolicy &policy : policies) {
		const long freeBefore = meminfo("HugePages_Free"), reservedBefore = meminfo("HugePages_Rsvd");
		{
			SegmentOptions options = hugeOptions(8 << 20, HugePages::Require);
			options.policy = policy;
			Result<Segment> segment = Segment::create(options);
			ASSERT_TRUE(segment.ok()) << errorMessage(segment.code());
			ASSERT_TRUE(segment->hugePages());
			EXPECT_EQ(meminfo("HugePages_Free"), freeBefore) << "the pages were taken at creation";
			EXPECT_EQ(meminfo("HugePages_Rsvd"), reservedBefore + 4) << "the pages were not reserved";
			/* More than the pool has left is refused now, not at a later fault. */
			EXPECT_EQ(errorClass(Segment::create(hugeOptions(14 << 20, HugePages::Require)).code()),
				  RMA_ERR_NO_MEM);
			for (std::size_t off = 0; off < segment->mappedSize(); off += kHugePageSize) {
				EXPECT_EQ(segment->data()[off + 7], std::byte{ 0 });
				segment->data()[off] = std::byte{ 1 };
			}
			EXPECT_EQ(meminfo("HugePages_Free"), freeBefore - 4);
			EXPECT_EQ(meminfo("HugePages_Rsvd"), reservedBefore);
		}
		EXPECT_EQ(meminfo("HugePages_Free"), freeBefore);
	}
}

/* Limits charged at fault time: a hugetlb cgroup besides the root, or v2's hugetlb memory accounting. */
TEST(HugeFaultsLimitedTest, ReadsProcCgroupsAndTheCgroup2MountOptions)
{
	const std::string header = "#subsys_name\thierarchy\tnum_cgroups\tenabled\n";
	const std::string v1Mounts = "35 31 0:32 / /sys/fs/cgroup/memory rw,relatime - cgroup cgroup rw,memory\n"
				     "41 31 0:38 / /sys/fs/cgroup/unified rw,relatime - cgroup2 cgroup2 rw\n";
	const std::string v2Mounts = "30 23 0:26 / /sys/fs/cgroup rw,nosuid - cgroup2 cgroup2 rw,nsdelegate\n";
	const std::string accounting =
		"30 23 0:26 / /sys/fs/cgroup rw,nosuid - cgroup2 cgroup2 rw,nsdelegate,memory_hugetlb_accounting\n";
	/* This host's shape: the controller exists, only its root cgroup. */
	EXPECT_FALSE(hugeFaultLimitsPossible(header + "memory\t4\t56\t1\nhugetlb\t0\t1\t1\n", v1Mounts));
	EXPECT_FALSE(hugeFaultLimitsPossible(header + "memory\t0\t56\t1\n", v2Mounts)) << "no hugetlb controller";
	EXPECT_FALSE(hugeFaultLimitsPossible(header + "hugetlb\t0\t9\t0\n", v2Mounts)) << "disabled";
	EXPECT_TRUE(hugeFaultLimitsPossible(header + "hugetlb\t0\t9\t1\n", v2Mounts));
	EXPECT_TRUE(hugeFaultLimitsPossible(header + "hugetlb\t11\t2\t1\n", v1Mounts));
	EXPECT_TRUE(hugeFaultLimitsPossible(header + "hugetlb\t0\t1\t1\n", accounting));
}

TEST_F(HugePoolTest, PreferTakesHugePagesWhenThePoolHasRoom)
{
	if (!setPool(2))
		GTEST_SKIP() << skip_;

	Result<Segment> segment = Segment::create(hugeOptions(4 << 20, HugePages::Prefer));

	ASSERT_TRUE(segment.ok()) << errorMessage(segment.code());
	EXPECT_TRUE(segment->hugePages());
	EXPECT_EQ(freeHugePages(), 0u);
}

TEST_F(HugePoolTest, HugeSegmentHonoursABindPolicy)
{
	if (!setPool(2))
		GTEST_SKIP() << skip_;
	const int node = firstMemoryNode();
	SegmentOptions options = hugeOptions(2 << 20, HugePages::Require);
	options.policy = MemPolicy{ MPOL_BIND, { node } };

	Result<Segment> segment = Segment::create(options);

	ASSERT_TRUE(segment.ok()) << errorMessage(segment.code());
	EXPECT_EQ(segment->numaNode(), node);
}

TEST_F(HugePoolTest, AttachedHugeSegmentIsSharedWithAChild)
{
	if (!setPool(2))
		GTEST_SKIP() << skip_;
	Result<Segment> segment = Segment::create(hugeOptions(kHugePageSize + 10, HugePages::Require));
	ASSERT_TRUE(segment.ok()) << errorMessage(segment.code());
	segment->data()[kHugePageSize + 5] = std::byte{ 9 };

	int status = inChild([&] {
		Result<Segment> peer = Segment::attach(UniqueFd(dup(segment->fd())), kHugePageSize + 10, true);
		if (!peer.ok() || peer->pageSize() != kHugePageSize || peer->mappedSize() != 2 * kHugePageSize)
			return 2;
		if (peer->data()[kHugePageSize + 5] != std::byte{ 9 })
			return 3;
		peer->data()[0] = std::byte{ 11 };
		return 0;
	});

	ASSERT_EQ(status, 0);
	EXPECT_EQ(segment->data()[0], std::byte{ 11 });
}

TEST_F(HugePoolTest, RequireWithAnEmptyPoolIsNoMem)
{
	if (!emptyPool())
		GTEST_SKIP() << skip_;

	Result<Segment> segment = Segment::create(hugeOptions(1 << 20, HugePages::Require));

	ASSERT_FALSE(segment.ok());
	EXPECT_EQ(errorClass(segment.code()), RMA_ERR_NO_MEM);
	std::string message = errorMessage(segment.code());
	EXPECT_NE(message.find("1 needed, 0 free"), std::string::npos) << message;
}

TEST_F(HugePoolTest, PreferWithAnEmptyPoolFallsBackToPlainPages)
{
	if (!emptyPool())
		GTEST_SKIP() << skip_;

	Result<Segment> segment = Segment::create(hugeOptions(3 << 20, HugePages::Prefer));

	ASSERT_TRUE(segment.ok()) << errorMessage(segment.code());
	EXPECT_FALSE(segment->hugePages());
	EXPECT_EQ(segment->pageSize(), static_cast<std::size_t>(sysconf(_SC_PAGESIZE)));
	EXPECT_EQ(segment->mappedSize(), 3u << 20);
}

TEST_F(HugePoolTest, PreferBeyondThePoolFallsBackToPlainPages)
{
	if (!setPool(2))
		GTEST_SKIP() << skip_;

	Result<Segment> segment = Segment::create(hugeOptions(6 << 20, HugePages::Prefer));

	ASSERT_TRUE(segment.ok()) << errorMessage(segment.code());
	EXPECT_FALSE(segment->hugePages());
	EXPECT_EQ(freeHugePages(), 2u);
}

TEST_F(HugePoolTest, OffNeverTakesHugePages)
{
	if (!setPool(2))
		GTEST_SKIP() << skip_;

	Result<Segment> segment = Segment::create(hugeOptions(2 << 20, HugePages::Off));

	ASSERT_TRUE(segment.ok()) << errorMessage(segment.code());
	EXPECT_FALSE(segment->hugePages());
	EXPECT_EQ(freeHugePages(), 2u);
}

TEST_F(HugePoolTest, RequireBeyondThePoolIsAnErrorNeverSigbus)
{
	if (!setPool(8))
		GTEST_SKIP() << skip_;

	/*
	 * In a child, so that a SIGBUS would show as such rather than end
	 * the test run: a first segment takes most of the pool, the second
	 * asks for more than is left; every byte obtained is touched.
	 */
	int status = inChild([] {
		Result<Segment> first = Segment::create(hugeOptions(12 << 20, HugePages::Require));
		if (!first.ok())
			return 2;
		std::memset(first->data(), 1, first->mappedSize());
		Result<Segment> second = Segment::create(hugeOptions(8 << 20, HugePages::Require));
		if (second.ok()) {
			std::memset(second->data(), 1, second->mappedSize());
			return 3;
		}
		if (errorClass(second.code()) != RMA_ERR_NO_MEM)
			return 4;
		Result<Segment> whole = Segment::create(hugeOptions(32 << 20, HugePages::Require));
		return whole.ok() ? 5 : 0;
	});

	EXPECT_EQ(status, 0) << (status == 128 + SIGBUS ? "SIGBUS" : "");
	EXPECT_EQ(freeHugePages(), 8u);
}

TEST_F(HugePoolTest, KernelRefusesAnUnbackedHugetlbMapping)
{
	/*
	 * create() trusts that mmap() of a hugetlb memfd without MAP_NORESERVE
	 * reserves the pages or fails: checked here, past our own pool check.
	 */
	if (!setPool(2))
		GTEST_SKIP() << skip_;
	int fd = memfd_create("rma-huge-raw", MFD_CLOEXEC | MFD_HUGETLB);
	ASSERT_GE(fd, 0) << std::strerror(errno);
	UniqueFd owner(fd);
	ASSERT_EQ(ftruncate(fd, 8 << 20), 0) << std::strerror(errno);

	void *p = mmap(nullptr, 8 << 20, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	int err = errno;

	EXPECT_EQ(p, MAP_FAILED);
	EXPECT_EQ(err, ENOMEM);
	if (p != MAP_FAILED)
		munmap(p, 8 << 20);
}

} /* namespace */
} /* namespace librma */
