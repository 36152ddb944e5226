/* SPDX-License-Identifier: MIT */
#include "bootstrap/local_fd_channel.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/un.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <deque>
#include <map>
#include <mutex>
#include <optional>
#include <thread>
#include <utility>
#include <vector>

#include "bootstrap/pidfd.h"
#include "bootstrap/protocol.h"
#include "error/error.h"

#include "config.h"

namespace librma {

namespace {

using Clock = std::chrono::steady_clock;
using Key = std::pair<uint64_t, uint64_t>; /* (ctx, seq) */

using fdchan::Hello;
using fdchan::kHelloMagic;
using fdchan::kReplyMagic;
using fdchan::Reply;

/* Longest a hub waits for one connection's Hello once it has accepted it. */
constexpr auto kHelloWait = std::chrono::seconds(2);
/* Poll slice: how soon a thread sees a connection another thread parked for it. */
constexpr auto kSlice = std::chrono::milliseconds(10);
/* Connections parked for collectives no thread has started yet (a bound against strangers). */
constexpr std::size_t kMaxParked = 1024;
/* Failed collectives remembered, so that a member arriving late hears why. */
constexpr std::size_t kMaxFailed = 64;

/* The abstract address of a rank; returns the length to pass to bind/connect. */
socklen_t makeAddress(uint64_t jobId, int worldRank, sockaddr_un &addr)
{
	std::memset(&addr, 0, sizeof(addr));
	addr.sun_family = AF_UNIX;
	std::string name = LocalFdChannel::addressName(jobId, worldRank);
	/* sun_path[0] stays NUL: the abstract namespace. The name fits: it is at most ~40 bytes. */
	std::memcpy(addr.sun_path + 1, name.data(), name.size());
	return static_cast<socklen_t>(offsetof(sockaddr_un, sun_path) + 1 + name.size());
}

/* The peer's credentials, or nullopt (errno kept) if the kernel cannot say. */
std::optional<ucred> peerCred(int sock)
{
	ucred cred{};
	socklen_t len = sizeof(cred);
	if (getsockopt(sock, SOL_SOCKET, SO_PEERCRED, &cred, &len) < 0 || len != sizeof(cred))
		return std::nullopt;
	return cred;
}

int remainingMs(Clock::time_point deadline, Clock::duration cap)
{
	auto left = deadline - Clock::now();
	if (left <= Clock::duration::zero())
		return 0;
	left = std::min(left, cap);
	/* Round up: a 0 ms poll would spin until the deadline. */
	return static_cast<int>(std::chrono::ceil<std::chrono::milliseconds>(left).count());
}

/* A peer this wait depends on: its rank for messages and how to see it die. */
struct Watched {
	int rank;
	pid_t pid;
	int pidfd; /* -1: fall back to kill(pid, 0) */
};

enum class Wait { Ready, PeerDied, TimedOut, Failed };

/*
 * Wait until @fd has @events, a watched peer dies (@deadRank set), or the
 * deadline passes. Failed keeps errno.
 */
Wait waitFor(int fd, short events, std::span<const Watched> watch, Clock::time_point deadline, int &deadRank)
{
	std::vector<pollfd> fds;
	fds.reserve(1 + watch.size());
	for (;;) {
		fds.clear();
		fds.push_back({ fd, events, 0 });
		bool fallback = false;
		for (const Watched &w : watch) {
			fds.push_back({ w.pidfd, POLLIN, 0 });
			fallback |= w.pidfd < 0;
		}
		/* Without pidfds, liveness is sampled once per slice. */
		int ms = remainingMs(deadline, fallback ? Clock::duration(kSlice) : Clock::duration::max());
		int n = poll(fds.data(), fds.size(), ms);
		if (n < 0) {
			if (errno == EINTR)
				continue;
			return Wait::Failed;
		}
		/* The socket first: a peer that answered and then exited has still answered. */
		if (fds[0].revents)
			return Wait::Ready;
		for (std::size_t i = 0; i < watch.size(); ++i) {
			bool gone = watch[i].pidfd >= 0 ? fds[i + 1].revents != 0
							: kill(watch[i].pid, 0) < 0 && errno == ESRCH;
			if (gone) {
				deadRank = watch[i].rank;
				return Wait::PeerDied;
			}
		}
		if (n == 0 && Clock::now() >= deadline)
			return Wait::TimedOut;
	}
}

/* A wait's outcome as sendMessage()/recvMessage() report it: 0 (ready) or -errno. */
int waitErrno(Wait w)
{
	switch (w) {
	case Wait::Ready:
		return 0;
	case Wait::PeerDied:
		return -ESRCH;
	case Wait::TimedOut:
		return -ETIMEDOUT;
	case Wait::Failed:
		break;
	}
	return errno ? -errno : -EIO; /* never 0: a failed wait is not "ready" */
}

/*
 * Send all of @m on non-blocking @sock. Returns 0, or -errno
 * (-ETIMEDOUT at the deadline, -ESRCH when the watched peer died).
 */
int sendMessage(int sock, boot::OutMessage &m, std::span<const Watched> watch, Clock::time_point deadline)
{
	while (!m.done()) {
		int rc = boot::sendPacket(sock, m, MSG_DONTWAIT);
		if (rc == 0)
			continue;
		if (rc == -ETOOMANYREFS) {
			/* Too many descriptors in flight for this user: wait for the receivers to take some. */
			if (Clock::now() >= deadline)
				return -ETIMEDOUT;
			std::this_thread::sleep_for(std::chrono::milliseconds(1));
			continue;
		}
		if (rc != -EAGAIN)
			return rc;
		int dead = -1;
		if (int w = waitErrno(waitFor(sock, POLLOUT, watch, deadline, dead)); w != 0)
			return w;
	}
	return 0;
}

/* Receive one whole message on non-blocking @sock; 0 or -errno as sendMessage(), -ECONNRESET when closed. */
int recvMessage(int sock, boot::InMessage &m, std::span<const Watched> watch, Clock::time_point deadline, int &deadRank)
{
	for (;;) {
		int rc = boot::recvPacket(sock, m, MSG_DONTWAIT);
		if (rc == 1)
			return 0;
		if (rc == 0)
			continue;
		if (rc != -EAGAIN)
			return rc;
		if (int w = waitErrno(waitFor(sock, POLLIN, watch, deadline, deadRank)); w != 0)
			return w;
	}
}

/* A connection the hub accepted, checked for uid, with its Hello read. */
struct Arrival {
	UniqueFd sock;
	pid_t pid = 0;
	Hello hello{};
	std::vector<UniqueFd> fds;
};

std::string rankList(std::span<const int> ranks)
{
	std::string text;
	/* append, not "," + string: GCC 12 at -O3 warns falsely (-Wrestrict) on the latter. */
	for (int r : ranks) {
		if (!text.empty())
			text += ',';
		text += std::to_string(r);
	}
	return text;
}

} /* namespace */

struct LocalFdChannel::State {
	uint64_t jobId = 0;
	int rank = 0;
	Options options;
	UniqueFd listener;
	std::atomic<uint64_t> refused{ 0 };

	std::mutex lock;
	/* Guarded by lock: connections for collectives of other threads, or not started yet. */
	std::map<Key, std::vector<Arrival>> parked;
	std::size_t parkedCount = 0;
	/* Guarded by lock: why recent collectives failed at this hub. */
	std::deque<std::pair<Key, Reply>> failed;
	/* Guarded by lock: pidfds of peers, opened once (a pidfd stays bound to its process). */
	std::map<pid_t, UniqueFd> pidfds;

	int pidfdOf(pid_t pid)
	{
		std::lock_guard<std::mutex> guard(lock);
		auto it = pidfds.find(pid);
		if (it == pidfds.end())
			it = pidfds.emplace(pid, UniqueFd(pidfdOpen(pid))).first;
		return it->second.get();
	}

	void refuse() { refused.fetch_add(1, std::memory_order_relaxed); }

	void reportDeath(int worldRank) const
	{
		if (options.peerDied && worldRank >= 0)
			options.peerDied(worldRank);
	}

	/* Accept one connection if one is queued; it comes back only if it belongs to @mine. */
	std::optional<Arrival> acceptOne(const Key &mine, Clock::time_point deadline);
	/* Answer @a with the failure recorded for its collective, if there is one; true if it was. */
	bool answerIfFailed(Arrival &a);
	void recordFailure(const Key &key, const Reply &reply);
	std::vector<Arrival> takeParked(const Key &key);
};

std::optional<Arrival> LocalFdChannel::State::acceptOne(const Key &mine, Clock::time_point deadline)
{
	UniqueFd sock(accept4(listener.get(), nullptr, nullptr, SOCK_NONBLOCK | SOCK_CLOEXEC));
	if (!sock.isValid())
		return std::nullopt; /* EAGAIN: another thread took it; anything else: the peer gave up */
	std::optional<ucred> cred = peerCred(sock.get());
	if (!cred || cred->uid != geteuid()) {
		refuse();
		return std::nullopt;
	}
	Arrival a;
	a.sock = std::move(sock);
	a.pid = cred->pid;
	boot::InMessage m;
	int dead = -1;
	int rc = recvMessage(a.sock.get(), m, {}, std::min(deadline, Clock::now() + kHelloWait), dead);
	boot::BodyReader reader(m.body);
	if (rc != 0 || !reader.read(a.hello) || reader.remaining() != 0 || a.hello.magic != kHelloMagic ||
	    a.hello.fdCount != m.fds.size()) {
		refuse();
		return std::nullopt;
	}
	a.fds = std::move(m.fds);
	Key key{ a.hello.ctx, a.hello.seq };
	if (key == mine)
		return a;
	if (answerIfFailed(a))
		return std::nullopt;
	std::lock_guard<std::mutex> guard(lock);
	if (parkedCount >= kMaxParked) {
		refuse();
		return std::nullopt;
	}
	parked[key].push_back(std::move(a));
	++parkedCount;
	return std::nullopt;
}

bool LocalFdChannel::State::answerIfFailed(Arrival &a)
{
	Reply reply{};
	{
		std::lock_guard<std::mutex> guard(lock);
		auto it = std::find_if(failed.begin(), failed.end(), [&](const auto &f) {
			return f.first == Key{ a.hello.ctx, a.hello.seq };
		});
		if (it == failed.end())
			return false;
		reply = it->second;
	}
	std::vector<std::byte> body;
	boot::appendPod(body, reply);
	boot::OutMessage out{ body, {}, nullptr };
	/* Best effort: the member fails anyway, by its own timeout, if this does not reach it. */
	(void)sendMessage(a.sock.get(), out, {}, Clock::now() + std::chrono::milliseconds(100));
	return true;
}

void LocalFdChannel::State::recordFailure(const Key &key, const Reply &reply)
{
	std::lock_guard<std::mutex> guard(lock);
	failed.emplace_back(key, reply);
	if (failed.size() > kMaxFailed)
		failed.pop_front();
}

std::vector<Arrival> LocalFdChannel::State::takeParked(const Key &key)
{
	std::lock_guard<std::mutex> guard(lock);
	auto it = parked.find(key);
	if (it == parked.end())
		return {};
	std::vector<Arrival> taken = std::move(it->second);
	parked.erase(it);
	parkedCount -= taken.size();
	return taken;
}

std::string LocalFdChannel::addressName(uint64_t jobId, int worldRank)
{
	char name[64];
	std::snprintf(name, sizeof(name), "librma.%016llx.%d", static_cast<unsigned long long>(jobId), worldRank);
	return name;
}

LocalFdChannel::LocalFdChannel(std::unique_ptr<State> state) : state_(std::move(state))
{
}
LocalFdChannel::LocalFdChannel(LocalFdChannel &&) noexcept = default;
LocalFdChannel &LocalFdChannel::operator=(LocalFdChannel &&) noexcept = default;
LocalFdChannel::~LocalFdChannel() = default;

Result<LocalFdChannel> LocalFdChannel::listen(uint64_t jobId, int worldRank, Options options)
{
	std::string name = addressName(jobId, worldRank);
	if (worldRank < 0 || options.timeout.count() <= 0)
		return Result<LocalFdChannel>::failure(
			makeError(RMA_ERR_ARG, "fd channel @%s: bad rank %d or timeout %lld ms", name.c_str(),
				  worldRank, static_cast<long long>(options.timeout.count())));
	UniqueFd sock(socket(AF_UNIX, SOCK_SEQPACKET | SOCK_NONBLOCK | SOCK_CLOEXEC, 0));
	if (!sock.isValid())
		return Result<LocalFdChannel>::failure(
			makeErrnoError(RMA_ERR_INTERN, errno, "fd channel @%s: socket", name.c_str()));
	sockaddr_un addr;
	socklen_t len = makeAddress(jobId, worldRank, addr);
	if (bind(sock.get(), reinterpret_cast<sockaddr *>(&addr), len) < 0 || ::listen(sock.get(), 128) < 0)
		return Result<LocalFdChannel>::failure(makeErrnoError(
			RMA_ERR_INTERN, errno, "fd channel: cannot listen on abstract address @%s", name.c_str()));
	auto state = std::make_unique<State>();
	state->jobId = jobId;
	state->rank = worldRank;
	state->options = options;
	state->listener = std::move(sock);
	return LocalFdChannel(std::move(state));
}

uint64_t LocalFdChannel::refusedCount() const
{
	return state_->refused.load(std::memory_order_relaxed);
}

namespace {

/* What both roles need to know about one exchange. */
struct Exchange {
	uint64_t ctx;
	uint64_t seq;
	std::span<const int> members;
	int myIndex;
	std::span<const pid_t> pids;
	std::span<const int> fds;
	std::span<const int> fdCounts;
	Clock::time_point deadline;

	Key key() const { return { ctx, seq }; }
};

/* Duplicates of this member's own descriptors, for its place in the result. */
int dupOwn(const Exchange &x, std::vector<UniqueFd> &into)
{
	for (int fd : x.fds) {
		int copy = fcntl(fd, F_DUPFD_CLOEXEC, 0);
		if (copy < 0)
			return makeErrnoError(RMA_ERR_INTERN, errno,
					      "fd exchange ctx=%llu seq=%llu: cannot duplicate own fd %d",
					      (unsigned long long)x.ctx, (unsigned long long)x.seq, fd);
		into.emplace_back(copy);
	}
	return RMA_SUCCESS;
}

/* Tell the members that already arrived why the exchange failed; remember it for later ones. */
void failArrived(LocalFdChannel::State &st, const Exchange &x, std::vector<std::optional<Arrival>> &arrived,
		 int errorClass, int failedRank)
{
	Reply reply{ kReplyMagic, errorClass, x.ctx, x.seq, failedRank, 0 };
	st.recordFailure(x.key(), reply);
	std::vector<std::byte> body;
	boot::appendPod(body, reply);
	for (auto &a : arrived) {
		if (!a)
			continue;
		boot::OutMessage out{ body, {}, nullptr };
		/* Best effort: a member that does not hear it fails by its own timeout. */
		(void)sendMessage(a->sock.get(), out, {}, Clock::now() + std::chrono::milliseconds(100));
	}
	/*
	 * Members already queued in the backlog hear it too: acceptOne()
	 * answers connections of a failed collective (a few, bounded; the
	 * rest time out on their own).
	 */
	const Key none{ ~uint64_t(0), ~uint64_t(0) };
	for (int i = 0; i < 64; ++i) {
		pollfd p{ st.listener.get(), POLLIN, 0 };
		if (poll(&p, 1, 0) != 1)
			break;
		(void)st.acceptOne(none, Clock::now() + std::chrono::milliseconds(100));
	}
}

/* Whether @a is the member it claims to be in @x; its pid and counts must match. */
bool admissible(const Exchange &x, const std::vector<std::optional<Arrival>> &arrived, const Arrival &a)
{
	const Hello &h = a.hello;
	return h.memberCount == x.members.size() && h.index > 0 && h.index < x.members.size() && !arrived[h.index] &&
	       a.pid == x.pids[h.index] && h.fdCount == static_cast<uint32_t>(x.fdCounts[h.index]);
}

int serveAsHub(LocalFdChannel::State &st, const Exchange &x, std::vector<UniqueFd> &result)
{
	const std::size_t n = x.members.size();
	std::vector<std::optional<Arrival>> arrived(n);
	std::size_t missing = n - 1;

	auto admit = [&](Arrival a) {
		if (!admissible(x, arrived, a)) {
			st.refuse();
			return;
		}
		std::size_t index = a.hello.index;
		arrived[index] = std::move(a);
		--missing;
	};

	std::vector<Watched> watch;
	while (missing > 0) {
		for (Arrival &a : st.takeParked(x.key()))
			admit(std::move(a));
		if (missing == 0)
			break;

		watch.clear();
		for (std::size_t i = 1; i < n; ++i) {
			if (!arrived[i])
				watch.push_back({ x.members[i], x.pids[i], st.pidfdOf(x.pids[i]) });
		}
		int dead = -1;
		/* One slice at a time: another thread may park a connection for this exchange. */
		Wait w = waitFor(st.listener.get(), POLLIN, watch, std::min(x.deadline, Clock::now() + kSlice), dead);
		if (w == Wait::PeerDied) {
			failArrived(st, x, arrived, RMA_ERR_PROC_FAILED, dead);
			st.reportDeath(dead);
			return makeError(RMA_ERR_PROC_FAILED,
					 "fd exchange ctx=%llu seq=%llu: rank %d died before it sent its descriptors",
					 (unsigned long long)x.ctx, (unsigned long long)x.seq, dead);
		}
		if (w == Wait::Failed)
			return makeErrnoError(RMA_ERR_INTERN, errno, "fd exchange ctx=%llu seq=%llu: poll",
					      (unsigned long long)x.ctx, (unsigned long long)x.seq);
		if (w == Wait::Ready) {
			if (std::optional<Arrival> a = st.acceptOne(x.key(), x.deadline))
				admit(std::move(*a));
			continue;
		}
		if (Clock::now() >= x.deadline) {
			std::vector<int> late;
			for (std::size_t i = 1; i < n; ++i) {
				if (!arrived[i])
					late.push_back(x.members[i]);
			}
			failArrived(st, x, arrived, RMA_ERR_INTERN, -1);
			return makeError(
				RMA_ERR_INTERN,
				"fd exchange ctx=%llu seq=%llu: timed out after %lld ms waiting for rank(s) %s",
				(unsigned long long)x.ctx, (unsigned long long)x.seq,
				static_cast<long long>(
					std::chrono::duration_cast<std::chrono::milliseconds>(st.options.timeout)
						.count()),
				rankList(late).c_str());
		}
	}

	/* Every member's descriptors, in member order, as raw numbers to send. */
	std::vector<int> all;
	for (std::size_t i = 0; i < n; ++i) {
		if (i == 0)
			all.insert(all.end(), x.fds.begin(), x.fds.end());
		else
			for (const UniqueFd &fd : arrived[i]->fds)
				all.push_back(fd.get());
	}
	/* Each member gets everyone's but its own, which it still holds. */
	std::size_t offset = x.fds.size();
	for (std::size_t i = 1; i < n; ++i) {
		std::size_t own = arrived[i]->fds.size();
		std::vector<int> others(all.begin(), all.begin() + offset);
		others.insert(others.end(), all.begin() + offset + own, all.end());
		offset += own;
		std::vector<std::byte> body;
		boot::appendPod(body, Reply{ kReplyMagic, 0, x.ctx, x.seq, -1, static_cast<uint32_t>(others.size()) });
		boot::OutMessage out{ body, others, nullptr };
		Watched peer{ x.members[i], x.pids[i], st.pidfdOf(x.pids[i]) };
		int rc = sendMessage(arrived[i]->sock.get(), out, { &peer, 1 }, x.deadline);
		/*
		 * Every member arrived, so the collective is complete: a member
		 * that died since is not this hub's failure; later collectives
		 * see the death.
		 */
		if (rc != 0 && rc != -ESRCH && !(kill(x.pids[i], 0) < 0 && errno == ESRCH))
			return makeErrnoError(RMA_ERR_INTERN, -rc,
					      "fd exchange ctx=%llu seq=%llu: cannot answer rank %d",
					      (unsigned long long)x.ctx, (unsigned long long)x.seq, x.members[i]);
	}

	RMA_TRY(dupOwn(x, result));
	for (std::size_t i = 1; i < n; ++i)
		std::move(arrived[i]->fds.begin(), arrived[i]->fds.end(), std::back_inserter(result));
	return RMA_SUCCESS;
}

int joinAsMember(LocalFdChannel::State &st, const Exchange &x, std::vector<UniqueFd> &result)
{
	const int hubRank = x.members[0];
	const pid_t hubPid = x.pids[0];
	Watched hub{ hubRank, hubPid, st.pidfdOf(hubPid) };
	/*
	 * Whether the hub is gone, waiting up to @graceMs: a dying process
	 * closes its sockets before its pidfd reports the exit, so a reset
	 * connection may come first.
	 */
	auto hubDead = [&](int graceMs) {
		if (hub.pidfd >= 0) {
			pollfd p{ hub.pidfd, POLLIN, 0 };
			int n;
			while ((n = poll(&p, 1, graceMs)) < 0 && errno == EINTR)
				;
			return n == 1;
		}
		return kill(hubPid, 0) < 0 && errno == ESRCH;
	};
	auto died = [&] {
		st.reportDeath(hubRank);
		return makeError(RMA_ERR_PROC_FAILED, "fd exchange ctx=%llu seq=%llu: the hub, rank %d (pid %d), died",
				 (unsigned long long)x.ctx, (unsigned long long)x.seq, hubRank, hubPid);
	};
	std::string name = LocalFdChannel::addressName(st.jobId, hubRank);

	/* Connect: the hub listens from its start, so refusal means it is gone or not up yet. */
	UniqueFd sock;
	for (;;) {
		sock.reset(socket(AF_UNIX, SOCK_SEQPACKET | SOCK_NONBLOCK | SOCK_CLOEXEC, 0));
		if (!sock.isValid())
			return makeErrnoError(RMA_ERR_INTERN, errno, "fd exchange: socket");
		sockaddr_un addr;
		socklen_t len = makeAddress(st.jobId, hubRank, addr);
		if (connect(sock.get(), reinterpret_cast<sockaddr *>(&addr), len) == 0)
			break;
		int err = errno;
		if (err != ECONNREFUSED && err != EAGAIN && err != EINTR)
			return makeErrnoError(RMA_ERR_INTERN, err, "fd exchange ctx=%llu seq=%llu: connect to @%s",
					      (unsigned long long)x.ctx, (unsigned long long)x.seq, name.c_str());
		if (hubDead(0))
			return died();
		if (Clock::now() >= x.deadline)
			return makeErrnoError(RMA_ERR_INTERN, err,
					      "fd exchange ctx=%llu seq=%llu: timed out connecting to rank %d at @%s",
					      (unsigned long long)x.ctx, (unsigned long long)x.seq, hubRank,
					      name.c_str());
		std::this_thread::sleep_for(std::chrono::milliseconds(1));
	}

	/* Nothing goes to a process that is not the hub (a squatter on its name). */
	std::optional<ucred> cred = peerCred(sock.get());
	if (!cred || cred->pid != hubPid || cred->uid != geteuid())
		return makeError(RMA_ERR_INTERN,
				 "fd exchange ctx=%llu seq=%llu: @%s is served by pid %d uid %d, not by rank %d "
				 "(pid %d uid %d); refused",
				 (unsigned long long)x.ctx, (unsigned long long)x.seq, name.c_str(),
				 cred ? cred->pid : -1, cred ? static_cast<int>(cred->uid) : -1, hubRank, hubPid,
				 static_cast<int>(geteuid()));

	std::vector<std::byte> body;
	boot::appendPod(body, Hello{ kHelloMagic, static_cast<uint32_t>(x.myIndex), x.ctx, x.seq,
				     static_cast<uint32_t>(x.fds.size()), static_cast<uint32_t>(x.members.size()) });
	boot::OutMessage hello{ body, x.fds, nullptr };
	int rc = sendMessage(sock.get(), hello, { &hub, 1 }, x.deadline);
	boot::InMessage reply;
	int dead = -1;
	if (rc == 0)
		rc = recvMessage(sock.get(), reply, { &hub, 1 }, x.deadline, dead);
	if (rc == -ESRCH || ((rc == -ECONNRESET || rc == -EPIPE) && hubDead(1000)))
		return died();
	if (rc == -ETIMEDOUT)
		return makeError(RMA_ERR_INTERN,
				 "fd exchange ctx=%llu seq=%llu: timed out after %lld ms waiting for rank %d",
				 (unsigned long long)x.ctx, (unsigned long long)x.seq,
				 static_cast<long long>(st.options.timeout.count()), hubRank);
	if (rc != 0)
		return makeErrnoError(RMA_ERR_INTERN, -rc, "fd exchange ctx=%llu seq=%llu: with rank %d",
				      (unsigned long long)x.ctx, (unsigned long long)x.seq, hubRank);

	Reply header;
	boot::BodyReader reader(reply.body);
	std::size_t expected = 0;
	for (std::size_t i = 0; i < x.members.size(); ++i)
		expected += i == static_cast<std::size_t>(x.myIndex) ? 0 : static_cast<std::size_t>(x.fdCounts[i]);
	if (!reader.read(header) || reader.remaining() != 0 || header.magic != kReplyMagic || header.ctx != x.ctx ||
	    header.seq != x.seq || header.fdCount != reply.fds.size() ||
	    (header.errorClass == 0 && reply.fds.size() != expected))
		return makeError(RMA_ERR_INTERN, "fd exchange ctx=%llu seq=%llu: malformed reply from rank %d",
				 (unsigned long long)x.ctx, (unsigned long long)x.seq, hubRank);
	if (header.errorClass == RMA_ERR_PROC_FAILED) {
		/* Only a rank of this collective: the hub's word is not taken for anyone else. */
		if (std::find(x.members.begin(), x.members.end(), header.failedRank) != x.members.end())
			st.reportDeath(header.failedRank);
		return makeError(RMA_ERR_PROC_FAILED,
				 "fd exchange ctx=%llu seq=%llu: rank %d died (reported by rank %d)",
				 (unsigned long long)x.ctx, (unsigned long long)x.seq, header.failedRank, hubRank);
	}
	if (header.errorClass != 0)
		return makeError(RMA_ERR_INTERN, "fd exchange ctx=%llu seq=%llu: rank %d failed the exchange (%s)",
				 (unsigned long long)x.ctx, (unsigned long long)x.seq, hubRank,
				 className(header.errorClass));

	/* Member order, with this member's own descriptors duplicated into its place. */
	std::size_t next = 0;
	for (std::size_t i = 0; i < x.members.size(); ++i) {
		if (i == static_cast<std::size_t>(x.myIndex)) {
			RMA_TRY(dupOwn(x, result));
			continue;
		}
		for (int k = 0; k < x.fdCounts[i]; ++k)
			result.push_back(std::move(reply.fds[next++]));
	}
	return RMA_SUCCESS;
}

} /* namespace */

int LocalFdChannel::exchange(uint64_t ctx, uint64_t seq, std::span<const int> members, int myIndex,
			     std::span<const pid_t> memberPids, std::span<const int> fds, std::span<const int> fdCounts,
			     GatherResult &out)
{
	const std::size_t n = members.size();
	std::size_t total = 0;
	bool countsValid = true;
	for (int c : fdCounts) {
		countsValid &= c >= 0;
		total += static_cast<std::size_t>(std::max(c, 0));
	}
	if (n == 0 || memberPids.size() != n || fdCounts.size() != n || myIndex < 0 ||
	    static_cast<std::size_t>(myIndex) >= n || members[myIndex] != state_->rank || !countsValid ||
	    fds.size() != static_cast<std::size_t>(fdCounts[myIndex]) || total > boot::kMaxMessageFds)
		return makeError(RMA_ERR_ARG,
				 "fd exchange ctx=%llu seq=%llu: rank %d as member %d of %zu with %zu of %zu "
				 "descriptors: inconsistent arguments",
				 (unsigned long long)ctx, (unsigned long long)seq, state_->rank, myIndex, n, fds.size(),
				 total);

	Exchange x{ ctx, seq, members, myIndex, memberPids, fds, fdCounts, Clock::now() + state_->options.timeout };
	std::vector<UniqueFd> result;
	if (total > 0) {
		int rc = n == 1		? dupOwn(x, result)
			 : myIndex == 0 ? serveAsHub(*state_, x, result)
					: joinAsMember(*state_, x, result);
		if (rc != RMA_SUCCESS)
			return rc;
	}
	out.fds = std::move(result);
	out.fdCounts.assign(fdCounts.begin(), fdCounts.end());
	return RMA_SUCCESS;
}

} /* namespace librma */
