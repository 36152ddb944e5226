/* SPDX-License-Identifier: MIT */
#include "bootstrap/protocol.h"

#include <sys/socket.h>
#include <sys/uio.h>

#include <algorithm>
#include <cerrno>

namespace librma::boot {

namespace {

/* Control buffer for one packet's descriptors, aligned for cmsghdr. */
union FdControl {
	char buf[CMSG_SPACE(kPacketFds * sizeof(int))];
	cmsghdr align;
};

} /* namespace */

int sendPacket(int sock, OutMessage &m, int flags)
{
	std::size_t bytes = std::min(m.body.size() - m.bytesSent, kPacketBytes);
	std::size_t fds = std::min(m.fds.size() - m.fdsSent, kPacketFds);
	bool last = m.bytesSent + bytes == m.body.size() && m.fdsSent + fds == m.fds.size();
	PacketHeader header = { kPacketMagic, static_cast<uint32_t>(bytes), static_cast<uint32_t>(fds),
				last ? kLastPacket : 0 };

	iovec iov[2] = {
		{ &header, sizeof(header) },
		{ const_cast<std::byte *>(m.body.data() + m.bytesSent), bytes },
	};
	msghdr msg = {};
	msg.msg_iov = iov;
	msg.msg_iovlen = bytes ? 2 : 1;

	FdControl control;
	if (fds) {
		/* Zeroed: CMSG_SPACE pads past the fds, and the kernel copies the padding too. */
		std::memset(control.buf, 0, sizeof(control.buf));
		msg.msg_control = control.buf;
		msg.msg_controllen = CMSG_SPACE(fds * sizeof(int));
		cmsghdr *cmsg = CMSG_FIRSTHDR(&msg);
		cmsg->cmsg_level = SOL_SOCKET;
		cmsg->cmsg_type = SCM_RIGHTS;
		cmsg->cmsg_len = CMSG_LEN(fds * sizeof(int));
		std::memcpy(CMSG_DATA(cmsg), m.fds.data() + m.fdsSent, fds * sizeof(int));
	}

	ssize_t n;
	do {
		n = sendmsg(sock, &msg, flags | MSG_NOSIGNAL);
	} while (n < 0 && errno == EINTR);
	if (n < 0)
		return -errno;
	/* A SEQPACKET message goes out whole or not at all. */
	m.bytesSent += bytes;
	m.fdsSent += fds;
	return 0;
}

int recvPacket(int sock, InMessage &m, int flags)
{
	if (m.body.size() + kPacketBytes > kMaxMessageBytes)
		return -EMSGSIZE;

	/* Receive the payload straight into the body; shrink it afterwards. */
	std::size_t old = m.body.size();
	m.body.resize(old + kPacketBytes);
	PacketHeader header;
	iovec iov[2] = {
		{ &header, sizeof(header) },
		{ m.body.data() + old, kPacketBytes },
	};
	FdControl control;
	msghdr msg = {};
	msg.msg_iov = iov;
	msg.msg_iovlen = 2;
	msg.msg_control = control.buf;
	msg.msg_controllen = sizeof(control.buf);

	ssize_t n;
	do {
		n = recvmsg(sock, &msg, flags | MSG_CMSG_CLOEXEC);
	} while (n < 0 && errno == EINTR);
	int err = errno;
	if (n <= 0) {
		m.body.resize(old);
		/* Every packet has a header, so 0 bytes means the peer closed. */
		return n == 0 ? -ECONNRESET : -err;
	}

	/* Take ownership of the descriptors first, so that every exit closes them. */
	std::size_t received = 0;
	for (cmsghdr *cmsg = CMSG_FIRSTHDR(&msg); cmsg; cmsg = CMSG_NXTHDR(&msg, cmsg)) {
		if (cmsg->cmsg_level != SOL_SOCKET || cmsg->cmsg_type != SCM_RIGHTS)
			continue;
		std::size_t count = (cmsg->cmsg_len - CMSG_LEN(0)) / sizeof(int);
		for (std::size_t i = 0; i < count; ++i) {
			int fd;
			std::memcpy(&fd, CMSG_DATA(cmsg) + i * sizeof(int), sizeof(int));
			m.fds.emplace_back(fd);
		}
		received += count;
	}

	bool valid = !(msg.msg_flags & (MSG_TRUNC | MSG_CTRUNC)) && static_cast<std::size_t>(n) >= sizeof(header) &&
		     header.magic == kPacketMagic && static_cast<std::size_t>(n) == sizeof(header) + header.bytes &&
		     header.fds == received;
	/* Shrinking keeps the payload just received (growing would zero it). */
	m.body.resize(valid ? old + header.bytes : old);
	if (!valid)
		return -EPROTO;
	if (m.fds.size() > kMaxMessageFds)
		return -EMSGSIZE;
	return (header.flags & kLastPacket) ? 1 : 0;
}

uint32_t messageType(std::span<const std::byte> body)
{
	uint32_t type = 0;
	BodyReader(body).read(type);
	return type;
}

} /* namespace librma::boot */
