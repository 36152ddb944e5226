/* SPDX-License-Identifier: MIT */
#include "bootstrap/protocol.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <string>
#include <thread>

#include <gtest/gtest.h>

namespace librma::boot {
namespace {

class ProtocolTest : public testing::Test
{
protected:
	void SetUp() override
	{
		int sv[2];
		ASSERT_EQ(socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sv), 0);
		a_.reset(sv[0]);
		b_.reset(sv[1]);
	}

	/* Receive one whole message from b_. */
	int receive(InMessage &m, int flags = 0)
	{
		int rc;
		while ((rc = recvPacket(b_.get(), m, flags)) == 0)
			;
		return rc;
	}

	UniqueFd a_, b_;
};

TEST_F(ProtocolTest, SmallMessageIsOnePacket)
{
	std::vector<std::byte> body(100, std::byte{ 0x5a });
	OutMessage out{ body, {}, nullptr };
	ASSERT_EQ(sendPacket(a_.get(), out, 0), 0);
	EXPECT_TRUE(out.done());

	InMessage in;
	ASSERT_EQ(recvPacket(b_.get(), in, 0), 1);
	EXPECT_EQ(in.body, body);
	EXPECT_TRUE(in.fds.empty());
}

TEST_F(ProtocolTest, LargeMessageWithManyDescriptorsArrivesWhole)
{
	/* Several packets of bytes and more descriptors than one packet holds. */
	constexpr int kFds = 600;
	std::vector<std::byte> body(3 * kPacketBytes + 123);
	for (std::size_t i = 0; i < body.size(); ++i)
		body[i] = std::byte(i * 7 + 3);
	std::vector<UniqueFd> files;
	std::vector<int> raw;
	for (int i = 0; i < kFds; ++i) {
		files.emplace_back(memfd_create("protocol-test", MFD_CLOEXEC));
		ASSERT_TRUE(files.back().isValid());
		std::string text = "file " + std::to_string(i);
		ASSERT_EQ(write(files.back().get(), text.data(), text.size()), ssize_t(text.size()));
		raw.push_back(files.back().get());
	}

	/* The socket buffer holds less than the message: send from another thread. */
	std::thread sender([&] {
		OutMessage out{ body, raw, nullptr };
		while (!out.done())
			ASSERT_EQ(sendPacket(a_.get(), out, 0), 0);
	});
	InMessage in;
	int rc = receive(in);
	sender.join();

	ASSERT_EQ(rc, 1);
	EXPECT_EQ(in.body, body);
	ASSERT_EQ(in.fds.size(), std::size_t(kFds));
	for (int i = 0; i < kFds; ++i) {
		char buf[32] = {};
		ASSERT_GT(pread(in.fds[i].get(), buf, sizeof(buf) - 1, 0), 0);
		EXPECT_EQ(std::string(buf), "file " + std::to_string(i));
		EXPECT_EQ(fcntl(in.fds[i].get(), F_GETFD) & FD_CLOEXEC, FD_CLOEXEC);
	}
}

TEST_F(ProtocolTest, FullSocketReportsAgainWithoutSending)
{
	std::vector<std::byte> body(64 * kPacketBytes);
	OutMessage out{ body, {}, nullptr };
	int rc;
	while ((rc = sendPacket(a_.get(), out, MSG_DONTWAIT)) == 0 && !out.done())
		;
	ASSERT_EQ(rc, -EAGAIN);
	std::size_t sent = out.bytesSent;
	EXPECT_EQ(sent % kPacketBytes, 0u);
	EXPECT_EQ(sendPacket(a_.get(), out, MSG_DONTWAIT), -EAGAIN);
	EXPECT_EQ(out.bytesSent, sent);
}

TEST_F(ProtocolTest, EmptySocketReportsAgain)
{
	InMessage in;
	EXPECT_EQ(recvPacket(b_.get(), in, MSG_DONTWAIT), -EAGAIN);
	EXPECT_TRUE(in.body.empty());
}

TEST_F(ProtocolTest, ClosedPeerReportsConnectionReset)
{
	a_.reset();
	InMessage in;
	EXPECT_EQ(recvPacket(b_.get(), in, 0), -ECONNRESET);
}

TEST_F(ProtocolTest, PacketWithoutHeaderIsRejected)
{
	ASSERT_EQ(send(a_.get(), "abc", 3, 0), 3);
	InMessage in;
	EXPECT_EQ(recvPacket(b_.get(), in, 0), -EPROTO);
	EXPECT_TRUE(in.body.empty());
}

TEST_F(ProtocolTest, PacketWithWrongLengthIsRejected)
{
	PacketHeader header = { kPacketMagic, 10, 0, kLastPacket };
	ASSERT_EQ(send(a_.get(), &header, sizeof(header), 0), ssize_t(sizeof(header)));
	InMessage in;
	EXPECT_EQ(recvPacket(b_.get(), in, 0), -EPROTO);
}

TEST(BodyReaderTest, ReadsInOrderAndChecksBounds)
{
	std::vector<std::byte> body;
	appendPod(body, uint32_t{ 7 });
	appendPod(body, uint64_t{ 9 });
	BodyReader reader(body);
	uint32_t a = 0;
	uint64_t b = 0;
	std::span<const std::byte> rest;
	EXPECT_TRUE(reader.read(a));
	EXPECT_EQ(a, 7u);
	EXPECT_FALSE(reader.take(9, rest));
	EXPECT_TRUE(reader.read(b));
	EXPECT_EQ(b, 9u);
	EXPECT_FALSE(reader.read(a));
	EXPECT_EQ(reader.remaining(), 0u);
	EXPECT_EQ(messageType(std::span<const std::byte>(body).first(2)), 0u);
}

} /* namespace */
} /* namespace librma::boot */
