/* SPDX-License-Identifier: MIT */
#include "numa/topology.h"

#include <linux/mempolicy.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <array>
#include <climits>
#include <cstring>

#include <gtest/gtest.h>

#include "error/error.h"

namespace librma {
namespace {

constexpr int kMaskBits = 4096;
constexpr int kLongBits = sizeof(unsigned long) * CHAR_BIT;

struct AddressPolicy {
	int mode = -1;
	std::array<unsigned long, kMaskBits / kLongBits> mask{};

	bool has(int node) const { return (mask[node / kLongBits] >> (node % kLongBits)) & 1; }
};

/* The policy the kernel holds for the page at @addr. */
AddressPolicy policyAt(void *addr)
{
	AddressPolicy policy;
	long rc = syscall(SYS_get_mempolicy, &policy.mode, policy.mask.data(), kMaskBits + 1, addr, MPOL_F_ADDR);
	EXPECT_EQ(rc, 0) << std::strerror(errno);
	return policy;
}

/* The node holding the (present) page at @addr. */
int nodeOfPage(void *addr)
{
	int node = -1;
	long rc = syscall(SYS_get_mempolicy, &node, nullptr, 0, addr, MPOL_F_NODE | MPOL_F_ADDR);
	EXPECT_EQ(rc, 0) << std::strerror(errno);
	return node;
}

/* A shared memfd-like mapping, as segments use, unmapped at the end. */
class MemPolicyTest : public ::testing::Test
{
protected:
	void SetUp() override
	{
		page_ = static_cast<std::size_t>(sysconf(_SC_PAGESIZE));
		size_ = 4 * page_;
		void *p = mmap(nullptr, size_, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
		ASSERT_NE(p, MAP_FAILED);
		data_ = static_cast<char *>(p);
		const Topology topology = Topology::fromSysfs();
		for (const NumaNode &node : topology.nodes()) {
			if (node.hasMemory && memoryNode_ < 0)
				memoryNode_ = node.id;
		}
		ASSERT_GE(memoryNode_, 0) << "this host reports no node with memory";
	}
	void TearDown() override
	{
		if (data_)
			munmap(data_, size_);
	}

	std::size_t page_ = 0;
	std::size_t size_ = 0;
	char *data_ = nullptr;
	int memoryNode_ = -1;
};

TEST_F(MemPolicyTest, BindsTheRangeToARealNode)
{
	MemPolicy policy{ MPOL_BIND, { memoryNode_ } };

	ASSERT_EQ(applyMemPolicy(data_, size_, policy), RMA_SUCCESS);

	AddressPolicy held = policyAt(data_ + page_);
	EXPECT_EQ(held.mode, MPOL_BIND);
	EXPECT_TRUE(held.has(memoryNode_));
	data_[page_] = 1;
	EXPECT_EQ(nodeOfPage(data_ + page_), memoryNode_);
}

TEST_F(MemPolicyTest, BindsOnlyTheGivenRange)
{
	MemPolicy policy{ MPOL_BIND, { memoryNode_ } };

	ASSERT_EQ(applyMemPolicy(data_ + page_, page_, policy), RMA_SUCCESS);

	EXPECT_EQ(policyAt(data_).mode, MPOL_DEFAULT);
	EXPECT_EQ(policyAt(data_ + page_).mode, MPOL_BIND);
	EXPECT_EQ(policyAt(data_ + 2 * page_).mode, MPOL_DEFAULT);
}

TEST_F(MemPolicyTest, InterleavesOverTheRealMemoryNodes)
{
	Result<MemPolicy> policy =
		resolvePlacement(Placement{ Placement::Kind::Interleave }, Topology::fromSysfs(), -1);
	ASSERT_TRUE(policy.ok());

	ASSERT_EQ(applyMemPolicy(data_, size_, *policy), RMA_SUCCESS);

	AddressPolicy held = policyAt(data_);
	EXPECT_EQ(held.mode, MPOL_INTERLEAVE);
	for (int node : policy->nodes)
		EXPECT_TRUE(held.has(node)) << node;
}

TEST_F(MemPolicyTest, LocalPlacementOnTheCurrentNodeBinds)
{
	const Topology topology = Topology::fromSysfs();
	Result<MemPolicy> policy = resolvePlacement(Placement{}, topology, currentNode(topology));
	ASSERT_TRUE(policy.ok());
	if (policy->mode != MPOL_BIND)
		GTEST_SKIP() << "this CPU's node has no memory";

	ASSERT_EQ(applyMemPolicy(data_, size_, *policy), RMA_SUCCESS);

	EXPECT_EQ(policyAt(data_).mode, MPOL_BIND);
}

TEST_F(MemPolicyTest, DefaultLeavesTheRangeAlone)
{
	ASSERT_EQ(applyMemPolicy(data_, size_, MemPolicy{}), RMA_SUCCESS);

	EXPECT_EQ(policyAt(data_).mode, MPOL_DEFAULT);
}

TEST_F(MemPolicyTest, SkipsNodesTheHostLacks)
{
	/* What an injected topology of more nodes than the host has produces. */
	MemPolicy policy{ MPOL_BIND, { 4000 } };

	ASSERT_EQ(applyMemPolicy(data_, size_, policy), RMA_SUCCESS);

	EXPECT_EQ(policyAt(data_).mode, MPOL_DEFAULT);
}

TEST_F(MemPolicyTest, KeepsTheRealNodesOfAMixedMask)
{
	MemPolicy policy{ MPOL_INTERLEAVE, { memoryNode_, 4000 } };

	ASSERT_EQ(applyMemPolicy(data_, size_, policy), RMA_SUCCESS);

	AddressPolicy held = policyAt(data_);
	EXPECT_EQ(held.mode, MPOL_INTERLEAVE);
	EXPECT_TRUE(held.has(memoryNode_));
	EXPECT_FALSE(held.has(4000));
}

TEST_F(MemPolicyTest, RejectsMalformedPolicies)
{
	for (const MemPolicy &policy : { MemPolicy{ MPOL_BIND, {} }, MemPolicy{ MPOL_BIND, { -1 } },
					 MemPolicy{ MPOL_BIND, { kMaskBits } }, MemPolicy{ 99, { 0 } } }) {
		int code = applyMemPolicy(data_, size_, policy);
		EXPECT_EQ(errorClass(code), RMA_ERR_ARG) << errorMessage(code);
	}
}

TEST_F(MemPolicyTest, KernelRefusalIsANoMemErrorNamingErrno)
{
	MemPolicy policy{ MPOL_BIND, { memoryNode_ } };

	/* mbind() wants a page-aligned start. */
	int code = applyMemPolicy(data_ + 1, page_, policy);

	EXPECT_EQ(errorClass(code), RMA_ERR_NO_MEM);
	std::string message = errorMessage(code);
	EXPECT_NE(message.find("mbind"), std::string::npos) << message;
	EXPECT_NE(message.find(std::strerror(EINVAL)), std::string::npos) << message;
}

} /* namespace */
} /* namespace librma */
