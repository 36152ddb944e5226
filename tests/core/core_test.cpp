/* SPDX-License-Identifier: MIT */
/* Handles, error codes, groups and info objects: single-process units. */
#include <gtest/gtest.h>

#include <memory>
#include <string>
#include <vector>

#include "core/core.h"
#include "core/handle_table.h"
#include "error/error.h"

using namespace librma;

namespace {

struct Thing {
	int value;
};

/* Every behaviour below holds for both storages: chunks made on use, and one flat array (the window table's). */
template<typename Table>
class HandleTableTyped : public ::testing::Test
{
};
using Storages = ::testing::Types<HandleTable<Thing, HandleKind::Win>, HandleTable<Thing, HandleKind::Win, 4096>>;
TYPED_TEST_SUITE(HandleTableTyped, Storages);

TYPED_TEST(HandleTableTyped, LooksUpLiveHandlesAndRejectsStaleOnes)
{
	auto owner = std::make_unique<TypeParam>();
	TypeParam &table = *owner;
	uintptr_t a = table.insert(std::make_shared<Thing>(Thing{ 1 }));
	uintptr_t b = table.insert(std::make_shared<Thing>(Thing{ 2 }));
	ASSERT_NE(a, 0u);
	ASSERT_NE(a, b);
	EXPECT_EQ(table.lookup(a)->value, 1);
	EXPECT_EQ(table.lookup(b)->value, 2);
	ASSERT_TRUE(table.remove(a));
	EXPECT_EQ(table.lookup(a), nullptr) << "a freed handle must not resolve";
	EXPECT_FALSE(table.remove(a)) << "double free must be refused";
	/* The slot is reused with a new generation: the old handle stays dead. */
	uintptr_t c = table.insert(std::make_shared<Thing>(Thing{ 3 }));
	EXPECT_EQ(static_cast<uint32_t>(c), static_cast<uint32_t>(a));
	EXPECT_NE(c, a);
	EXPECT_EQ(table.lookup(a), nullptr);
	EXPECT_EQ(table.lookup(c)->value, 3);
	EXPECT_EQ(table.liveHandles().size(), 2u);
}

TYPED_TEST(HandleTableTyped, RejectsOtherKindsGarbageAndNull)
{
	auto owner = std::make_unique<TypeParam>();
	TypeParam &wins = *owner;
	HandleTable<Thing, HandleKind::Comm> comms;
	uintptr_t w = wins.insert(std::make_shared<Thing>(Thing{ 1 }));
	uintptr_t c = comms.insert(std::make_shared<Thing>(Thing{ 2 }));
	EXPECT_EQ(wins.lookup(c), nullptr);
	EXPECT_EQ(comms.lookup(w), nullptr);
	EXPECT_EQ(wins.lookup(0), nullptr);
	EXPECT_EQ(wins.lookup(w + (uintptr_t(1) << 20)), nullptr) << "index beyond any chunk";
	EXPECT_EQ(wins.lookup(~uintptr_t(0)), nullptr);
}

/*
 * lookup() finds a slot from the handle's low bits alone and then compares
 * the whole handle: every other bit pattern that lands on a live object's
 * slot must miss.
 */
TYPED_TEST(HandleTableTyped, OnlyTheExactHandleReachesItsSlot)
{
	auto owner = std::make_unique<TypeParam>();
	TypeParam &table = *owner;
	table.setPredefined(1, std::make_shared<Thing>(Thing{ 9 }));
	uintptr_t h = table.insert(std::make_shared<Thing>(Thing{ 1 }));
	ASSERT_NE(table.lookup(h), nullptr);
	for (int bit = 20; bit < 64; ++bit) {
		EXPECT_EQ(table.lookup(h ^ (uintptr_t(1) << bit)), nullptr) << "bit " << bit;
	}
	EXPECT_EQ(table.lookup(0), nullptr) << "the null handle, with chunk 0 in use";
	EXPECT_EQ(table.lookup(static_cast<uint32_t>(h)), nullptr) << "the index without kind and generation";
	const uintptr_t predefined = encodeHandle(HandleKind::Win, 0, 1);
	EXPECT_EQ(table.lookup(predefined)->value, 9);
	EXPECT_EQ(table.lookup(encodeHandle(HandleKind::Win, 1, 1)), nullptr) << "a predefined index, generation 1";
	/* Many objects across chunks, each found, each dead once removed. */
	std::vector<uintptr_t> many;
	for (int i = 0; i < 3000; ++i)
		many.push_back(table.insert(std::make_shared<Thing>(Thing{ 100 + i })));
	for (int i = 0; i < 3000; ++i) {
		ASSERT_NE(table.lookup(many[i]), nullptr);
		ASSERT_EQ(table.lookup(many[i])->value, 100 + i);
	}
	for (int i = 0; i < 3000; i += 2)
		ASSERT_TRUE(table.remove(many[i]));
	for (int i = 0; i < 3000; ++i) {
		ASSERT_EQ(table.lookup(many[i]) != nullptr, i % 2 == 1) << "object " << i;
	}
	EXPECT_EQ(table.liveHandles().size(), 1u + 1500u);
}

/* A flat table holds kCapacity - kFirstDynamic dynamic objects; the next insert says 0 (full), freeing makes room. */
TEST(HandleTableTest, AFlatTableIsFullAtItsCapacity)
{
	using Table = HandleTable<Thing, HandleKind::Win, 512>;
	auto table = std::make_unique<Table>();
	std::vector<uintptr_t> live;
	for (uint32_t i = 0; i < Table::kCapacity - kFirstDynamic; ++i) {
		live.push_back(table->insert(std::make_shared<Thing>(Thing{ static_cast<int>(i) })));
		ASSERT_NE(live.back(), 0u) << "object " << i;
	}
	EXPECT_EQ(table->insert(std::make_shared<Thing>(Thing{ -1 })), 0u);
	ASSERT_TRUE(table->remove(live[7]));
	const uintptr_t again = table->insert(std::make_shared<Thing>(Thing{ 77 }));
	ASSERT_NE(again, 0u);
	EXPECT_EQ(table->lookup(again)->value, 77);
	EXPECT_EQ(table->lookup(live[7]), nullptr);
	for (std::size_t i = 0; i < live.size(); ++i) {
		if (i != 7) {
			ASSERT_EQ(table->lookup(live[i])->value, static_cast<int>(i));
		}
	}
}

TEST(HandleTableDeathTest, APredefinedIndexOutsideChunkZeroIsABug)
{
	HandleTable<Thing, HandleKind::Win> table;
	/* Checked builds stop at the assertion; release builds leave the slot empty. */
	EXPECT_DEBUG_DEATH(table.setPredefined(0, std::make_shared<Thing>(Thing{ 1 })), "out of range");
	EXPECT_DEBUG_DEATH(table.setPredefined(kFirstDynamic, std::make_shared<Thing>(Thing{ 2 })), "out of range");
	EXPECT_EQ(table.lookup(encodeHandle(HandleKind::Win, 0, 0)), nullptr);
	EXPECT_TRUE(table.liveHandles().empty());
}

TEST(HandleTableTest, PredefinedHandlesAreFixedAndCannotBeRemoved)
{
	HandleTable<Thing, HandleKind::Comm> table;
	table.setPredefined(1, std::make_shared<Thing>(Thing{ 7 }));
	uintptr_t h = reinterpret_cast<uintptr_t>(RMA_COMM_WORLD);
	ASSERT_NE(table.lookup(h), nullptr);
	EXPECT_EQ(table.lookup(h)->value, 7);
	EXPECT_FALSE(table.remove(h));
	EXPECT_NE(table.lookup(h), nullptr);
}

TEST(ErrorTest, CodesCarryClassAndMessage)
{
	int code = makeError(RMA_ERR_RMA_RANGE, "rma_put: target %d at %lld", 3, 4096LL);
	EXPECT_EQ(errorClass(code), RMA_ERR_RMA_RANGE);
	std::string msg = errorMessage(code);
	EXPECT_NE(msg.find("RMA_ERR_RMA_RANGE"), std::string::npos) << msg;
	EXPECT_NE(msg.find("rma_put: target 3 at 4096"), std::string::npos) << msg;
	/* A bare class is its own code with the generic text. */
	EXPECT_EQ(errorClass(RMA_ERR_WIN), RMA_ERR_WIN);
	EXPECT_EQ(errorMessage(RMA_ERR_WIN), className(RMA_ERR_WIN));
	EXPECT_EQ(errorClass(-1), -1);
	EXPECT_EQ(errorClass(63), -1);
}

TEST(ErrorTest, ErrnoTextIsAppended)
{
	int code = makeErrnoError(RMA_ERR_NO_MEM, ENOMEM, "segment of %d bytes", 10);
	EXPECT_NE(errorMessage(code).find("Cannot allocate memory"), std::string::npos);
}

TEST(ErrorTest, OldMessagesAgeOutToTheGenericText)
{
	int first = makeError(RMA_ERR_DISP, "first");
	for (int i = 0; i < kMessages; ++i)
		(void)makeError(RMA_ERR_ARG, "filler %d", i);
	EXPECT_EQ(errorClass(first), RMA_ERR_DISP);
	EXPECT_EQ(errorMessage(first), className(RMA_ERR_DISP));
}

TEST(GroupTest, RankOfTranslatesWorldRanks)
{
	Group g({ 5, 2, 9 });
	EXPECT_EQ(g.size(), 3);
	EXPECT_EQ(g.rankOf(5), 0);
	EXPECT_EQ(g.rankOf(2), 1);
	EXPECT_EQ(g.rankOf(9), 2);
	EXPECT_EQ(g.rankOf(3), RMA_UNDEFINED);
	EXPECT_EQ(g.worldRank(2), 9);
}

TEST(InfoTest, KeepsInsertionOrderAndReplaces)
{
	Info info;
	info.set("b", "1");
	info.set("a", "2");
	info.set("b", "3");
	ASSERT_EQ(info.entries().size(), 2u);
	EXPECT_EQ(info.entries()[0].first, "b");
	EXPECT_EQ(*info.get("b"), "3");
	EXPECT_TRUE(info.erase("b"));
	EXPECT_FALSE(info.erase("b"));
	EXPECT_EQ(info.get("b"), nullptr);
}

/*
 * Contexts of new communicators: the instance ids of PMIx and the MPI
 * drop-in keep the hub's rank in bits 40 and up, which a shift by 24 lost
 * (two hubs with equal counters made one context).
 */
TEST(FreshContextTest, KeepsEveryBitOfTheInstanceAndAvoidsReservedContexts)
{
	const uint64_t hub0 = (uint64_t{ 0 } << 40) | 5, hub2 = (uint64_t{ 2 } << 40) | 5;
	EXPECT_NE(freshContext(hub0, 0), freshContext(hub2, 0));
	EXPECT_NE(freshContext(hub0, 0), freshContext(hub0, 1));
	EXPECT_EQ(freshContext(hub2, 3), freshContext(hub2, 3));
	for (uint64_t i = 0; i < 100000; ++i) {
		const uint64_t c = freshContext(i << 39, i & 7);
		ASSERT_GE(c, 16u);
		ASSERT_LT(c, uint64_t{ 1 } << 62);
	}
}

} /* namespace */
