/* SPDX-License-Identifier: MIT */
/*
 * A connected TCP pair over 127.0.0.1, for tests and benchmarks of the
 * engine (never a transport endpoint: those come from lib/net's endpoints).
 */
#pragma once

#include <arpa/inet.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/socket.h>

#include <utility>

#include "common/unique_fd.h"

namespace librma::net {

/* {server side, client side}, TCP_NODELAY on both; two empty fds if loopback is unavailable. */
inline std::pair<UniqueFd, UniqueFd> loopbackTcpPair()
{
	UniqueFd l(socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0));
	sockaddr_in a{};
	a.sin_family = AF_INET;
	a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	socklen_t len = sizeof(a);
	if (!l.isValid() || bind(l.get(), reinterpret_cast<sockaddr *>(&a), sizeof(a)) < 0 || listen(l.get(), 1) < 0 ||
	    getsockname(l.get(), reinterpret_cast<sockaddr *>(&a), &len) < 0)
		return {};
	UniqueFd c(socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0));
	if (!c.isValid() || connect(c.get(), reinterpret_cast<sockaddr *>(&a), sizeof(a)) < 0)
		return {};
	UniqueFd s(accept4(l.get(), nullptr, nullptr, SOCK_CLOEXEC));
	int one = 1;
	setsockopt(c.get(), IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
	setsockopt(s.get(), IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
	return { std::move(s), std::move(c) };
}

} /* namespace librma::net */
