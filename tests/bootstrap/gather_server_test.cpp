/* SPDX-License-Identifier: MIT */
#include "bootstrap/gather_server.h"

#include <fcntl.h>
#include <unistd.h>

#include <set>
#include <string>

#include <gtest/gtest.h>

#include "error/error.h"

namespace librma::boot {
namespace {

std::vector<std::byte> request(uint64_t ctx, uint64_t seq, std::vector<int> members, int myIndex,
			       const std::string &data)
{
	std::vector<std::byte> body;
	appendPod(body, GatherRequest{ MsgType::Gather, static_cast<uint32_t>(members.size()), ctx, seq, data.size(),
				       myIndex, 0 });
	for (int member : members)
		appendPod(body, static_cast<int32_t>(member));
	const auto *bytes = reinterpret_cast<const std::byte *>(data.data());
	body.insert(body.end(), bytes, bytes + data.size());
	return body;
}

/* A reply as the client sees it. */
struct Reply {
	bool error = false;
	int errorClass = 0;
	std::string text; /* error message, or the gathered data */
	std::vector<int> fdCounts;
	std::vector<int> fds;
	uint64_t instance = 0;
};

class GatherServerTest : public testing::Test
{
protected:
	void join(int rank, uint64_t ctx, uint64_t seq, std::vector<int> members, const std::string &data,
		  std::vector<UniqueFd> fds = {})
	{
		auto it = std::find(members.begin(), members.end(), rank);
		int myIndex = it == members.end() ? 0 : static_cast<int>(it - members.begin());
		server_.gather(rank, request(ctx, seq, members, myIndex, data), std::move(fds));
	}

	/* Take the one reply queued for @rank. */
	Reply reply(int rank)
	{
		Reply r;
		auto &box = server_.outbox(rank);
		EXPECT_EQ(box.size(), 1u) << "replies queued for rank " << rank;
		if (box.empty())
			return r;
		OutMessage m = std::move(box.front());
		box.pop_front();
		BodyReader reader(m.body);
		std::span<const std::byte> rest;
		if (messageType(m.body) == static_cast<uint32_t>(MsgType::Error)) {
			ErrorReply e;
			EXPECT_TRUE(reader.read(e));
			EXPECT_TRUE(reader.take(e.textLen, rest));
			r.error = true;
			r.errorClass = e.errorClass;
		} else {
			GatherReply g;
			EXPECT_TRUE(reader.read(g));
			EXPECT_EQ(g.type, MsgType::GatherReply);
			r.instance = g.instance;
			for (uint32_t i = 0; i < g.memberCount; ++i) {
				int32_t count = -1;
				EXPECT_TRUE(reader.read(count));
				r.fdCounts.push_back(count);
			}
			EXPECT_TRUE(reader.take(g.memberCount * g.dataLen, rest));
			r.fds.assign(m.fds.begin(), m.fds.end());
		}
		EXPECT_EQ(reader.remaining(), 0u);
		r.text.assign(reinterpret_cast<const char *>(rest.data()), rest.size());
		return r;
	}

	void expectNoReply(int rank) { EXPECT_TRUE(server_.outbox(rank).empty()) << "rank " << rank; }

	GatherServer server_{ 4 };
};

TEST_F(GatherServerTest, AnswersEveryMemberWhenTheLastArrives)
{
	join(0, 1, 1, { 0, 1, 2 }, "aa");
	join(2, 1, 1, { 0, 1, 2 }, "cc");
	expectNoReply(0);
	expectNoReply(2);
	join(1, 1, 1, { 0, 1, 2 }, "bb");

	for (int rank : { 0, 1, 2 }) {
		Reply r = reply(rank);
		EXPECT_FALSE(r.error);
		EXPECT_EQ(r.text, "aabbcc");
		EXPECT_EQ(r.fdCounts, (std::vector<int>{ 0, 0, 0 }));
	}
	expectNoReply(3);
	EXPECT_EQ(server_.pendingCount(), 0u);
}

TEST_F(GatherServerTest, DataFollowsMemberOrderNotRankOrder)
{
	join(0, 1, 1, { 3, 0 }, "0");
	join(3, 1, 1, { 3, 0 }, "3");
	EXPECT_EQ(reply(0).text, "30");
	EXPECT_EQ(reply(3).text, "30");
}

TEST_F(GatherServerTest, DescriptorsFollowMemberOrder)
{
	int p[2];
	ASSERT_EQ(pipe(p), 0);
	int a = p[0], b = p[1], c = fcntl(a, F_DUPFD_CLOEXEC, 0);
	std::vector<UniqueFd> fromOne, fromZero;
	fromOne.emplace_back(a);
	fromOne.emplace_back(b);
	fromZero.emplace_back(c);
	join(1, 5, 1, { 1, 0 }, "", std::move(fromOne));
	join(0, 5, 1, { 1, 0 }, "", std::move(fromZero));

	for (int rank : { 0, 1 }) {
		Reply r = reply(rank);
		EXPECT_EQ(r.fdCounts, (std::vector<int>{ 2, 1 }));
		EXPECT_EQ(r.fds, (std::vector<int>{ a, b, c }));
	}
}

TEST_F(GatherServerTest, InstanceIdsAreSharedByMembersAndUniqueAcrossInstances)
{
	std::set<uint64_t> seen;
	for (uint64_t seq = 1; seq <= 3; ++seq) {
		join(0, 1, seq, { 0, 1 }, "x");
		join(1, 1, seq, { 0, 1 }, "y");
		uint64_t id = reply(0).instance;
		EXPECT_EQ(reply(1).instance, id);
		EXPECT_TRUE(seen.insert(id).second) << "instance " << id << " repeated";
	}
}

TEST_F(GatherServerTest, CollectivesOnDifferentKeysAreIndependent)
{
	join(1, 1, 1, { 0, 1 }, "a");
	join(1, 2, 1, { 1, 2 }, "b"); /* same seq, other ctx */
	join(2, 1, 2, { 2, 3 }, "c"); /* same ctx, other seq */
	join(2, 2, 1, { 1, 2 }, "B");
	EXPECT_EQ(reply(1).text, "bB");
	EXPECT_EQ(reply(2).text, "bB");
	join(0, 1, 1, { 0, 1 }, "A");
	EXPECT_EQ(reply(0).text, "Aa");
	EXPECT_EQ(reply(1).text, "Aa");
	expectNoReply(3);
	EXPECT_EQ(server_.pendingCount(), 1u);
}

TEST_F(GatherServerTest, LengthMismatchFailsEveryMember)
{
	join(0, 1, 1, { 0, 1, 2 }, "12345678");
	join(1, 1, 1, { 0, 1, 2 }, "1234");
	for (int rank : { 0, 1 }) {
		Reply r = reply(rank);
		EXPECT_TRUE(r.error);
		EXPECT_EQ(r.errorClass, RMA_ERR_INTERN);
		EXPECT_NE(r.text.find("4 bytes, others 8"), std::string::npos) << r.text;
	}
	/* The last member is told too, and then the collective is forgotten. */
	join(2, 1, 1, { 0, 1, 2 }, "12345678");
	EXPECT_EQ(reply(2).errorClass, RMA_ERR_INTERN);
	EXPECT_EQ(server_.pendingCount(), 0u);
}

TEST_F(GatherServerTest, MemberListMismatchFailsEveryMember)
{
	join(0, 1, 1, { 0, 1 }, "a");
	join(1, 1, 1, { 1, 0 }, "b");
	for (int rank : { 0, 1 }) {
		Reply r = reply(rank);
		EXPECT_EQ(r.errorClass, RMA_ERR_INTERN);
		EXPECT_NE(r.text.find("members {1,0}"), std::string::npos) << r.text;
	}
	EXPECT_EQ(server_.pendingCount(), 0u);
}

TEST_F(GatherServerTest, GoneMemberFailsPendingCollective)
{
	join(0, 1, 1, { 0, 1, 2 }, "a");
	join(1, 1, 1, { 0, 1, 2 }, "b");
	server_.rankGone(2);
	for (int rank : { 0, 1 }) {
		Reply r = reply(rank);
		EXPECT_EQ(r.errorClass, RMA_ERR_PROC_FAILED);
		EXPECT_NE(r.text.find("rank 2"), std::string::npos) << r.text;
	}
	EXPECT_EQ(server_.pendingCount(), 0u);
}

TEST_F(GatherServerTest, RequestNamingGoneRankFailsAtOnce)
{
	server_.rankGone(3);
	join(0, 1, 1, { 0, 3 }, "a");
	Reply r = reply(0);
	EXPECT_EQ(r.errorClass, RMA_ERR_PROC_FAILED);
	EXPECT_NE(r.text.find("rank 3"), std::string::npos) << r.text;
	EXPECT_EQ(server_.pendingCount(), 0u);
	/* Collectives without it still work. */
	join(0, 1, 2, { 0, 1 }, "a");
	join(1, 1, 2, { 0, 1 }, "b");
	EXPECT_EQ(reply(0).text, "ab");
}

TEST_F(GatherServerTest, FailedCollectiveAnswersLaterArrivalsThenIsForgotten)
{
	join(0, 1, 1, { 0, 1, 2 }, "a");
	server_.rankGone(1);
	EXPECT_EQ(reply(0).errorClass, RMA_ERR_PROC_FAILED);
	EXPECT_EQ(server_.pendingCount(), 1u); /* rank 2 may still come */
	join(2, 1, 1, { 0, 1, 2 }, "c");
	EXPECT_EQ(reply(2).errorClass, RMA_ERR_PROC_FAILED);
	EXPECT_EQ(server_.pendingCount(), 0u);
}

TEST_F(GatherServerTest, GoneRankGetsNothing)
{
	join(0, 1, 1, { 0, 1 }, "a");
	server_.rankGone(0);
	expectNoReply(0);
	join(1, 1, 1, { 0, 1 }, "b");
	EXPECT_EQ(reply(1).errorClass, RMA_ERR_PROC_FAILED);
}

TEST_F(GatherServerTest, MalformedRequestsGetAnErrorAndChangeNothing)
{
	std::vector<std::byte> truncated = request(1, 1, { 0, 1 }, 0, "abc");
	truncated.pop_back();
	server_.gather(0, truncated, {});
	EXPECT_EQ(reply(0).errorClass, RMA_ERR_INTERN);

	server_.gather(0, request(1, 1, { 1, 0 }, 0, "a"), {}); /* members[myIndex] is not rank 0 */
	EXPECT_EQ(reply(0).errorClass, RMA_ERR_INTERN);
	server_.gather(0, request(1, 1, { 0, 0 }, 0, "a"), {}); /* repeated member */
	EXPECT_EQ(reply(0).errorClass, RMA_ERR_INTERN);
	server_.gather(0, request(1, 1, { 0, 4 }, 0, "a"), {}); /* no such rank */
	EXPECT_EQ(reply(0).errorClass, RMA_ERR_INTERN);
	server_.gather(0, request(1, 1, {}, 0, ""), {});
	EXPECT_EQ(reply(0).errorClass, RMA_ERR_INTERN);
	EXPECT_EQ(server_.pendingCount(), 0u);
}

TEST_F(GatherServerTest, DuplicateArrivalIsRejectedWithoutDisturbingOthers)
{
	join(0, 1, 1, { 0, 1 }, "a");
	join(0, 1, 1, { 0, 1 }, "z");
	Reply r = reply(0);
	EXPECT_EQ(r.errorClass, RMA_ERR_INTERN);
	EXPECT_NE(r.text.find("twice"), std::string::npos) << r.text;
	join(1, 1, 1, { 0, 1 }, "b");
	EXPECT_EQ(reply(0).text, "ab");
	EXPECT_EQ(reply(1).text, "ab");
}

} /* namespace */
} /* namespace librma::boot */
