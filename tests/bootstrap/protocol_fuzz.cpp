/* SPDX-License-Identifier: MIT */
#include "bootstrap/protocol_fuzz.h"

#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <algorithm>
#include <cstring>
#include <utility>
#include <vector>

#include "bootstrap/gather_server.h"
#include "bootstrap/protocol.h"
#include "common/unique_fd.h"

namespace rmatest {

namespace {

using namespace librma;

/*
 * Input layout: byte 0 picks the job size (1..4); then records of
 *   [rank][kind][len lo][len hi][len bytes]
 * kind % 4 == 0: the bytes as one raw datagram (any header, any garbage);
 *           1: one well-formed packet carrying the bytes, last-packet flag set;
 *           2: the same without the flag (more packets must follow);
 *           3: the rank's connection ends.
 */
struct Reader {
	const uint8_t *p;
	std::size_t n;
	bool take(std::size_t k, const uint8_t *&out)
	{
		if (n < k)
			return false;
		out = p;
		p += k;
		n -= k;
		return true;
	}
};

} /* namespace */

std::string fuzzProtocol(const uint8_t *data, std::size_t size)
{
	if (size == 0)
		return "";
	Reader in{ data + 1, size - 1 };
	const int ranks = 1 + data[0] % 4;
	std::vector<UniqueFd> rankEnd(ranks), launcherEnd(ranks);
	for (int r = 0; r < ranks; ++r) {
		int sv[2];
		if (socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sv) != 0)
			return std::string("socketpair: ") + std::strerror(errno);
		rankEnd[r] = UniqueFd(sv[0]);
		launcherEnd[r] = UniqueFd(sv[1]);
	}
	boot::GatherServer server(ranks);
	std::vector<boot::InMessage> partial(ranks);
	std::vector<bool> gone(ranks, false);

	const uint8_t *rec;
	while (in.take(4, rec)) {
		const int rank = rec[0] % ranks;
		const int kind = rec[1] % 4;
		const std::size_t len = rec[2] | std::size_t(rec[3]) << 8;
		const std::size_t bytes = std::min(len, in.n);
		const uint8_t *payload = nullptr;
		in.take(bytes, payload);
		if (gone[rank])
			continue;
		if (kind == 3) {
			gone[rank] = true;
			server.rankGone(rank);
			server.outbox(rank).clear();
			continue;
		}
		std::vector<uint8_t> dgram;
		if (kind == 0) {
			dgram.assign(payload, payload + bytes);
		} else {
			boot::PacketHeader h{ boot::kPacketMagic, static_cast<uint32_t>(bytes), 0,
					      kind == 1 ? boot::kLastPacket : 0u };
			dgram.resize(sizeof(h) + bytes);
			std::memcpy(dgram.data(), &h, sizeof(h));
			if (bytes)
				std::memcpy(dgram.data() + sizeof(h), payload, bytes);
		}
		if (send(rankEnd[rank].get(), dgram.data(), dgram.size(), MSG_DONTWAIT | MSG_NOSIGNAL) < 0)
			continue;
		/* The launcher's readSocket(): a bad packet ends that rank's connection. */
		int rc = boot::recvPacket(launcherEnd[rank].get(), partial[rank], MSG_DONTWAIT);
		if (rc < 0 && rc != -EAGAIN) {
			gone[rank] = true;
			server.rankGone(rank);
			server.outbox(rank).clear();
			continue;
		}
		if (rc == 1) {
			boot::InMessage msg = std::exchange(partial[rank], {});
			if (boot::messageType(msg.body) == static_cast<uint32_t>(boot::MsgType::Gather))
				server.gather(rank, msg.body, std::move(msg.fds));
		}
		/* Replies are discarded; each must be a well-formed message. */
		for (int r = 0; r < ranks; ++r) {
			for (const boot::OutMessage &m : server.outbox(r))
				if (m.body.size() < sizeof(uint32_t))
					return "a reply shorter than its type word";
			server.outbox(r).clear();
		}
	}
	for (int r = 0; r < ranks; ++r)
		if (!gone[r])
			server.rankGone(r);
	if (server.pendingCount() != 0)
		return "collectives still pending after every rank is gone: " + std::to_string(server.pendingCount());
	return "";
}

} /* namespace rmatest */
