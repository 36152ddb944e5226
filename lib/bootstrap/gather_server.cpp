/* SPDX-License-Identifier: MIT */
#include "bootstrap/gather_server.h"

#include <algorithm>
#include <cstdarg>
#include <cstdio>

#include <rma/rma.h>

namespace librma::boot {

namespace {

[[gnu::format(printf, 1, 2)]] std::string format(const char *fmt, ...)
{
	char text[RMA_MAX_ERROR_STRING];
	va_list ap;
	va_start(ap, fmt);
	std::vsnprintf(text, sizeof(text), fmt, ap);
	va_end(ap);
	return text;
}

std::string memberList(const std::vector<int> &members)
{
	std::string text = "{";
	for (std::size_t i = 0; i < members.size(); ++i) {
		if (i)
			text += ',';
		text += std::to_string(members[i]);
	}
	return text + "}";
}

/* A reply's storage, shared by the outboxes of every member it goes to. */
struct ReplyStorage {
	std::vector<std::byte> body;
	std::vector<UniqueFd> fds;
	std::vector<int> rawFds; /* fds' numbers, as sendmsg wants them */
};

} /* namespace */

GatherServer::GatherServer(int size) : gone_(size, false), outboxes_(size)
{
}

void GatherServer::gather(int rank, std::span<const std::byte> body, std::vector<UniqueFd> fds)
{
	BodyReader reader(body);
	GatherRequest req;
	std::span<const std::byte> rawMembers, data;
	if (!reader.read(req) || req.type != MsgType::Gather || req.memberCount == 0 ||
	    req.memberCount > gone_.size() || !reader.take(req.memberCount * sizeof(int32_t), rawMembers) ||
	    !reader.take(req.dataLen, data) || reader.remaining() != 0) {
		sendError(rank, RMA_ERR_INTERN, format("malformed allgather request from rank %d", rank));
		return;
	}

	std::size_t n = req.memberCount;
	std::vector<int> members(n);
	std::memcpy(members.data(), rawMembers.data(), rawMembers.size());
	std::vector<bool> seen(gone_.size(), false);
	for (int member : members) {
		if (member < 0 || member >= static_cast<int>(gone_.size()) || seen[member]) {
			sendError(rank, RMA_ERR_INTERN,
				  format("allgather ctx=%llu seq=%llu: rank %d gave an invalid member list %s",
					 (unsigned long long)req.ctx, (unsigned long long)req.seq, rank,
					 memberList(members).c_str()));
			return;
		}
		seen[member] = true;
	}
	if (req.myIndex < 0 || req.myIndex >= static_cast<int>(n) || members[req.myIndex] != rank) {
		sendError(rank, RMA_ERR_INTERN,
			  format("allgather ctx=%llu seq=%llu: rank %d is not member %d of %s",
				 (unsigned long long)req.ctx, (unsigned long long)req.seq, rank, req.myIndex,
				 memberList(members).c_str()));
		return;
	}
	/* data.size() <= kMaxMessageBytes, so this cannot overflow. */
	if (n * data.size() > kMaxMessageBytes) {
		sendError(rank, RMA_ERR_INTERN,
			  format("allgather ctx=%llu seq=%llu: %zu members of %zu bytes exceed the %zu-byte limit",
				 (unsigned long long)req.ctx, (unsigned long long)req.seq, n, data.size(),
				 kMaxMessageBytes));
		return;
	}

	Key key{ req.ctx, req.seq };
	auto [it, created] = pending_.try_emplace(key);
	Collective &c = it->second;
	if (created) {
		c.members = members;
		c.dataLen = req.dataLen;
		c.arrived.assign(n, false);
		c.data.resize(n * req.dataLen);
		c.fds.resize(n);
		for (int member : members) {
			if (gone_[member]) {
				fail(c, RMA_ERR_PROC_FAILED,
				     format("allgather ctx=%llu seq=%llu: rank %d failed or exited",
					    (unsigned long long)req.ctx, (unsigned long long)req.seq, member));
				break;
			}
		}
	}

	auto pos = std::find(c.members.begin(), c.members.end(), rank);
	int index = pos == c.members.end() ? -1 : static_cast<int>(pos - c.members.begin());
	if (index >= 0 && c.arrived[index]) {
		/* The instance in progress is not this request's: leave it alone. */
		sendError(rank, RMA_ERR_INTERN,
			  format("allgather ctx=%llu seq=%llu: rank %d joined twice", (unsigned long long)req.ctx,
				 (unsigned long long)req.seq, rank));
		return;
	}

	if (c.errorClass == 0 && c.members != members)
		fail(c, RMA_ERR_INTERN,
		     format("allgather ctx=%llu seq=%llu: rank %d gave members %s, others %s",
			    (unsigned long long)req.ctx, (unsigned long long)req.seq, rank, memberList(members).c_str(),
			    memberList(c.members).c_str()));
	else if (c.errorClass == 0 && c.dataLen != req.dataLen)
		fail(c, RMA_ERR_INTERN,
		     format("allgather ctx=%llu seq=%llu: rank %d gave %llu bytes, others %llu (lengths must match)",
			    (unsigned long long)req.ctx, (unsigned long long)req.seq, rank,
			    (unsigned long long)req.dataLen, (unsigned long long)c.dataLen));

	if (index >= 0) {
		c.arrived[index] = true;
		++c.arrivedCount;
	}
	if (c.errorClass != 0) {
		sendError(rank, c.errorClass, c.error);
		forgetIfSettled(it);
		return;
	}

	if (!data.empty())
		std::memcpy(c.data.data() + index * c.dataLen, data.data(), data.size());
	c.fds[index] = std::move(fds);
	if (c.arrivedCount == static_cast<int>(n)) {
		complete(c);
		pending_.erase(it);
	}
}

void GatherServer::rankGone(int rank)
{
	if (gone_[rank])
		return;
	gone_[rank] = true;
	outboxes_[rank].clear();

	for (auto it = pending_.begin(); it != pending_.end();) {
		auto next = std::next(it);
		Collective &c = it->second;
		bool named = std::find(c.members.begin(), c.members.end(), rank) != c.members.end();
		if (named) {
			if (c.errorClass == 0)
				fail(c, RMA_ERR_PROC_FAILED,
				     format("allgather ctx=%llu seq=%llu: rank %d failed or exited",
					    (unsigned long long)it->first.first, (unsigned long long)it->first.second,
					    rank));
			forgetIfSettled(it);
		}
		it = next;
	}
}

void GatherServer::fail(Collective &c, int errorClass, std::string message)
{
	c.errorClass = errorClass;
	c.error = std::move(message);
	/* Nobody gets the contributions: free them now. */
	c.data = std::vector<std::byte>();
	c.fds.clear();
	for (std::size_t i = 0; i < c.members.size(); ++i) {
		if (c.arrived[i] && !gone_[c.members[i]])
			sendError(c.members[i], c.errorClass, c.error);
	}
}

void GatherServer::complete(Collective &c)
{
	auto reply = std::make_shared<ReplyStorage>();
	GatherReply header = { MsgType::GatherReply, static_cast<uint32_t>(c.members.size()), nextInstance_++,
			       c.dataLen };
	reply->body.reserve(sizeof(header) + c.members.size() * sizeof(int32_t) + c.data.size());
	appendPod(reply->body, header);
	for (const auto &memberFds : c.fds)
		appendPod(reply->body, static_cast<int32_t>(memberFds.size()));
	reply->body.insert(reply->body.end(), c.data.begin(), c.data.end());
	for (auto &memberFds : c.fds) {
		for (UniqueFd &fd : memberFds) {
			reply->rawFds.push_back(fd.get());
			reply->fds.push_back(std::move(fd));
		}
	}

	for (int member : c.members) {
		if (!gone_[member])
			outboxes_[member].push_back({ reply->body, reply->rawFds, reply });
	}
}

void GatherServer::forgetIfSettled(std::map<Key, Collective>::iterator it)
{
	const Collective &c = it->second;
	for (std::size_t i = 0; i < c.members.size(); ++i) {
		if (!c.arrived[i] && !gone_[c.members[i]])
			return;
	}
	pending_.erase(it);
}

void GatherServer::sendError(int rank, int errorClass, const std::string &message)
{
	auto body = std::make_shared<std::vector<std::byte>>();
	ErrorReply header = { MsgType::Error, errorClass, static_cast<uint32_t>(message.size()), 0 };
	appendPod(*body, header);
	appendBytes(*body, message.data(), message.size());
	outboxes_[rank].push_back({ *body, {}, body });
}

} /* namespace librma::boot */
