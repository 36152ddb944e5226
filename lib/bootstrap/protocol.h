/* SPDX-License-Identifier: MIT */
/*
 * The wire protocol between a rank and the launcher, over one
 * SOCK_SEQPACKET socket per rank. Internal to lib/bootstrap.
 *
 * Two layers:
 *
 *  - Packets. A SEQPACKET message must fit the sender's SO_SNDBUF and may
 *    carry at most SCM_MAX_FD (253) descriptors, so a logical message is
 *    cut into packets of at most kPacketBytes payload bytes and kPacketFds
 *    descriptors (SCM_RIGHTS). Each packet starts with a PacketHeader; the
 *    last packet of a message has kLastPacket set. Each side sends one
 *    message at a time on a socket, so packets of two messages never
 *    interleave.
 *
 *  - Messages. A message body starts with a uint32_t MsgType:
 *      rank -> launcher  Gather: GatherRequest, int32_t members[memberCount],
 *                                then dataLen bytes; the descriptors ride
 *                                along in the packets.
 *                        Abort:  AbortRequest.
 *      launcher -> rank  GatherReply: GatherReply, int32_t fdCounts[memberCount],
 *                                then memberCount * dataLen bytes in member
 *                                order; all descriptors in member order.
 *                        Error:  ErrorReply, then textLen bytes of message.
 *    Every integer is in host byte order: both ends run on the same host.
 */
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <memory>
#include <span>
#include <vector>

#include "common/unique_fd.h"

namespace librma::boot {

/* Payload bytes per packet: well below the default SO_SNDBUF (~208 KiB). */
inline constexpr std::size_t kPacketBytes = 64 * 1024;
/* Descriptors per packet, below the kernel's SCM_MAX_FD (253). */
inline constexpr std::size_t kPacketFds = 250;
/* Largest message body and descriptor count either side accepts. */
inline constexpr std::size_t kMaxMessageBytes = std::size_t(1) << 30;
inline constexpr std::size_t kMaxMessageFds = 1u << 16;

inline constexpr uint32_t kPacketMagic = 0x524d4150; /* "RMAP" */
inline constexpr uint32_t kLastPacket = 1;

struct PacketHeader {
	uint32_t magic;
	uint32_t bytes; /* payload bytes that follow in this packet */
	uint32_t fds;	/* descriptors attached to this packet */
	uint32_t flags; /* kLastPacket */
};

enum class MsgType : uint32_t {
	Gather = 1,
	Abort = 2,
	GatherReply = 3,
	Error = 4,
};

struct GatherRequest {
	MsgType type;
	uint32_t memberCount;
	uint64_t ctx;
	uint64_t seq;
	uint64_t dataLen; /* this member's contribution */
	int32_t myIndex;
	uint32_t reserved;
};

struct AbortRequest {
	MsgType type;
	int32_t code;
};

struct GatherReply {
	MsgType type;
	uint32_t memberCount;
	uint64_t instance;
	uint64_t dataLen; /* per member */
};

struct ErrorReply {
	MsgType type;
	int32_t errorClass; /* RMA_ERR_* */
	uint32_t textLen;
	uint32_t reserved;
};

/*
 * A message being sent, packet by packet. It borrows @body and @fds; @owner,
 * if set, keeps their storage alive (the launcher sends one reply body and
 * one set of descriptors to every member without copying them).
 */
struct OutMessage {
	std::span<const std::byte> body;
	std::span<const int> fds;
	std::shared_ptr<const void> owner;
	std::size_t bytesSent = 0;
	std::size_t fdsSent = 0;

	bool done() const { return bytesSent == body.size() && fdsSent == fds.size(); }
};

/* A message being received: the packets' payloads and descriptors so far. */
struct InMessage {
	std::vector<std::byte> body;
	std::vector<UniqueFd> fds;
};

/*
 * Send the next packet of @m on @sock (sendmsg with @flags | MSG_NOSIGNAL).
 * Returns 0 when a packet went out (then check m.done()), or -errno:
 * -EAGAIN with MSG_DONTWAIT when the socket is full (nothing was sent).
 * Thread-compatible: one sender per socket at a time.
 */
int sendPacket(int sock, OutMessage &m, int flags);

/*
 * Receive one packet from @sock into @m (recvmsg with @flags |
 * MSG_CMSG_CLOEXEC). Returns 1 when it completed the message, 0 when more
 * packets must follow, or -errno: -EAGAIN with MSG_DONTWAIT when nothing is
 * queued, -ECONNRESET when the peer closed the socket, -EPROTO for a
 * malformed packet, -EMSGSIZE for a message over the limits.
 */
int recvPacket(int sock, InMessage &m, int flags);

/*
 * Append @n bytes to a message body. resize + memcpy rather than insert():
 * GCC 12 at -O3 misreads insert() of a byte range after a resize
 * (-Wstringop-overflow / -Warray-bounds false positives inside libstdc++).
 */
inline void appendBytes(std::vector<std::byte> &body, const void *data, std::size_t n)
{
	if (n == 0)
		return;
	std::size_t at = body.size();
	body.resize(at + n);
	std::memcpy(body.data() + at, data, n);
}

/* Append the bytes of a trivially copyable value to a message body. */
template <typename T> void appendPod(std::vector<std::byte> &body, const T &value)
{
	appendBytes(body, &value, sizeof(T));
}

/* Reads a received body front to back; every read checks the bounds. */
class BodyReader
{
public:
	explicit BodyReader(std::span<const std::byte> body) : rest_(body) {}

	template <typename T> bool read(T &value)
	{
		if (rest_.size() < sizeof(T))
			return false;
		std::memcpy(&value, rest_.data(), sizeof(T));
		rest_ = rest_.subspan(sizeof(T));
		return true;
	}

	/* The next @n bytes, or false if fewer remain. */
	bool take(std::size_t n, std::span<const std::byte> &out)
	{
		if (rest_.size() < n)
			return false;
		out = rest_.first(n);
		rest_ = rest_.subspan(n);
		return true;
	}

	std::size_t remaining() const { return rest_.size(); }

private:
	std::span<const std::byte> rest_;
};

/* The type of a received message, or 0 if it is too short to say. */
uint32_t messageType(std::span<const std::byte> body);

} /* namespace librma::boot */
