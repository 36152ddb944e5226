/* SPDX-License-Identifier: MIT */
/*
 * The inter-host engine of one process: see engine.h.
 */
#include "net/engine.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <ifaddrs.h>
#include <net/if.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <pthread.h>
#include <sched.h>
#include <sys/random.h>
#include <sys/socket.h>
#include <sys/uio.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstring>

#include "common/spin_wait.h"
#include "error/error.h"
#include "net/le.h"

namespace librma::net {

namespace {

int64_t nowNs()
{
	return std::chrono::duration_cast<std::chrono::nanoseconds>(
		       std::chrono::steady_clock::now().time_since_epoch())
		.count();
}

std::string ipText(uint32_t ipv4, uint16_t port)
{
	char buf[INET_ADDRSTRLEN] = "?";
	in_addr a{};
	a.s_addr = ipv4;
	inet_ntop(AF_INET, &a, buf, sizeof(buf));
	return std::string(buf) + ":" + std::to_string(ntohs(port));
}

/* Whether @addr (network order) matches RMA_NET_IF's @spec for interface @name. */
bool matches(const std::string &spec, const char *name, uint32_t addr)
{
	if (spec.empty())
		return true;
	if (auto slash = spec.find('/'); slash != std::string::npos) {
		in_addr net{};
		if (inet_pton(AF_INET, spec.substr(0, slash).c_str(), &net) != 1)
			return false;
		int bits = std::atoi(spec.c_str() + slash + 1);
		if (bits < 0 || bits > 32)
			return false;
		uint32_t mask = bits == 0 ? 0 : htonl(~uint32_t{ 0 } << (32 - bits));
		return (addr & mask) == (net.s_addr & mask);
	}
	in_addr one{};
	if (inet_pton(AF_INET, spec.c_str(), &one) == 1)
		return one.s_addr == addr;
	return spec == name;
}

/* The address to listen on: the first IPv4 address up that RMA_NET_IF admits (not loopback unless named). */
Result<uint32_t> chooseAddress(const std::string &spec)
{
	ifaddrs *list = nullptr;
	if (getifaddrs(&list) != 0)
		return makeErrnoError(RMA_ERR_INTERN, errno, "rma_init: cannot list the network interfaces");
	uint32_t found = 0;
	for (ifaddrs *i = list; i && !found; i = i->ifa_next) {
		if (!i->ifa_addr || i->ifa_addr->sa_family != AF_INET || !(i->ifa_flags & IFF_UP))
			continue;
		uint32_t a = reinterpret_cast<sockaddr_in *>(i->ifa_addr)->sin_addr.s_addr;
		if ((i->ifa_flags & IFF_LOOPBACK) && spec.empty())
			continue;
		if (matches(spec, i->ifa_name, a))
			found = a;
	}
	freeifaddrs(list);
	if (!found)
		return makeError(RMA_ERR_ARG,
				 "rma_init: the job spans hosts, but %s%s%s names no IPv4 address that is up on this host; "
				 "set RMA_NET_IF to an interface, an address or a CIDR such as 10.0.0.0/24",
				 spec.empty() ? "no non-loopback interface" : "RMA_NET_IF='", spec.c_str(),
				 spec.empty() ? "" : "'");
	return found;
}

void setNoDelay(int fd)
{
	int one = 1;
	setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
}

/*
 * Liveness (docs/design/inter-host.md §7): a peer whose host died or whose
 * link went down sends no RST, so the kernel probes an idle connection
 * every second and gives up on it, idle or not, once @timeoutMs pass
 * without an answer (TCP_USER_TIMEOUT also bounds the keepalive probes).
 * The next recv() or send() then fails with ETIMEDOUT: RMA_ERR_PROC_FAILED.
 */
void setLiveness(int fd, int timeoutMs)
{
	int one = 1, idle = 1, interval = 1, count = std::max(1, timeoutMs / 1000);
	unsigned int user = static_cast<unsigned int>(timeoutMs);
	setsockopt(fd, SOL_SOCKET, SO_KEEPALIVE, &one, sizeof(one));
	setsockopt(fd, IPPROTO_TCP, TCP_KEEPIDLE, &idle, sizeof(idle));
	setsockopt(fd, IPPROTO_TCP, TCP_KEEPINTVL, &interval, sizeof(interval));
	setsockopt(fd, IPPROTO_TCP, TCP_KEEPCNT, &count, sizeof(count));
	setsockopt(fd, IPPROTO_TCP, TCP_USER_TIMEOUT, &user, sizeof(user));
}

void setNonBlocking(int fd, bool on)
{
	int flags = fcntl(fd, F_GETFL);
	if (flags >= 0)
		fcntl(fd, F_SETFL, on ? flags | O_NONBLOCK : flags & ~O_NONBLOCK);
}

struct ServerAllow {
	const Engine *engine;
	uint32_t myHost;
};

bool allowLeader(const void *ctx, uint32_t leader) noexcept
{
	const auto *a = static_cast<const ServerAllow *>(ctx);
	const auto &hosts = a->engine->config().hostOf;
	return leader < hosts.size() && hosts[leader] != a->myHost && a->engine->leaderOf(hosts[leader]) == leader;
}

bool allowRank(const void *ctx, uint32_t leader, uint32_t rank) noexcept
{
	const auto *a = static_cast<const ServerAllow *>(ctx);
	const auto &hosts = a->engine->config().hostOf;
	return rank < hosts.size() && leader < hosts.size() && hosts[rank] == hosts[leader];
}

const std::array<uint8_t, kIdentityKeyBytes> *rankKey(const void *ctx, uint32_t rank) noexcept
{
	return static_cast<const ServerAllow *>(ctx)->engine->identityOf(rank);
}

std::unique_ptr<Engine> gEngine;

/* Reply bytes a connection may have waiting for its socket before its later requests wait. */
constexpr std::size_t kReplyBacklog = 4 << 20;

} /* namespace */

uint64_t machineHash()
{
	char id[64] = {};
	if (FILE *f = std::fopen("/proc/sys/kernel/random/boot_id", "r")) {
		if (!std::fgets(id, sizeof(id), f))
			id[0] = 0;
		std::fclose(f);
	}
	uint64_t h = 0xcbf29ce484222325ull;
	for (const char *p = id; *p; ++p)
		h = (h ^ static_cast<unsigned char>(*p)) * 0x100000001b3ull;
	return h;
}

namespace {

} /* namespace */

std::string &netStartError()
{
	static std::string why;
	return why;
}

Engine *engine()
{
	return gEngine.get();
}

void setEngine(std::unique_ptr<Engine> e)
{
	if (gEngine)
		gEngine->stop();
	gEngine = std::move(e);
}

/* ---- Replier ---------------------------------------------------------------- */

void Replier::send(FrameKind kind, uint16_t flags, std::span<const uint8_t> a, std::span<const uint8_t> b) noexcept
{
	FrameHeader h = request_;
	h.kind = static_cast<uint16_t>(kind);
	h.flags = flags;
	h.bodyLen = static_cast<uint32_t>(a.size() + b.size());
	uint8_t head[kHeaderBytes];
	encodeHeader(h, head);
	loop_.send(conn_, head);
	if (!a.empty())
		loop_.send(conn_, a);
	if (!b.empty())
		loop_.send(conn_, b);
}

uint8_t *Replier::dataInPlace(FrameKind kind, std::size_t n, bool last) noexcept
{
	/* parse() bounds every reply by the connection's largest frame (Reason::ReplyTooLong): never more here. */
	if (n > kMaxBulkBody)
		return nullptr;
	FrameHeader h = request_;
	h.kind = static_cast<uint16_t>(kind);
	h.flags = last ? kLastChunk : 0;
	h.bodyLen = static_cast<uint32_t>(n);
	uint8_t *at = loop_.append(conn_, kHeaderBytes + n);
	if (!at)
		return nullptr;
	encodeHeader(h, at);
	return at + kHeaderBytes;
}

void Replier::ack() noexcept
{
	send(FrameKind::Ack, 0, {}, {});
}

void Replier::nack(int errorClass, uint64_t detail) noexcept
{
	uint8_t body[16];
	le::store<uint32_t>(body, static_cast<uint32_t>(errorClass));
	le::store<uint32_t>(body + 4, 0);
	le::store<uint64_t>(body + 8, detail);
	send(FrameKind::Nack, 0, body, {});
}

void Replier::data(FrameKind kind, std::span<const uint8_t> bytes, bool last) noexcept
{
	send(kind, last ? kLastChunk : 0, bytes, {});
}

/* ---- Link (origin side) ------------------------------------------------------- */

Link::Link(Engine &engine, int server, UniqueFd fd, uint32_t peerHost, bool bulk, uint64_t seqBase)
	: engine_(engine), server_(server), fd_(std::move(fd)), peerHost_(peerHost), bulk_(bulk), seq_(seqBase),
	  assembler_(bulk ? kMaxBulkBody : kMaxBody), in_(256 << 10)
{
}

bool Link::onBulkReply(const ParsedFrame &f)
{
	/* A bulk connection's requests are PUTs, GETs and FLUSHes: its own answers are ACKs and NACKs, in order. */
	const auto kind = static_cast<FrameKind>(f.header.kind);
	if (kind != FrameKind::Ack && kind != FrameKind::Nack)
		return false;
	if (bulkOfSeq(f.header.seq) != bulkOfSeq(seq_))
		return false; /* not an answer to a request of ours */
	acked_ = std::max(acked_, f.header.seq);
	/* The refusal is its window's to report (its service, as on the stream). */
	if (kind == FrameKind::Nack)
		if (WindowService *s = engine_.findService(f.header.window))
			s->onReply(f);
	return true;
}

void Link::releaseBuffers()
{
	std::vector<uint8_t>().swap(in_);
	std::vector<uint8_t>().swap(out_);
	assembler_ = FrameAssembler(bulk_ ? kMaxBulkBody : kMaxBody);
}

int Link::fail(int err, const char *what)
{
	error_ = makeErrnoError(RMA_ERR_PROC_FAILED, err, "the connection to the process of rank %d (host %u) %s",
				server_, peerHost_, what);
	fd_.reset();
	return error_;
}

int Link::send(std::span<const uint8_t> bytes)
{
	const std::span<const uint8_t> one[] = { bytes };
	return sendParts(one);
}

int Link::sendParts(std::span<const std::span<const uint8_t>> parts)
{
	if (error_)
		return error_;
	constexpr std::size_t kMaxParts = 8;
	iovec iov[kMaxParts];
	std::size_t n = 0;
	for (std::span<const uint8_t> p : parts)
		if (!p.empty()) {
			if (n == kMaxParts)
				return makeError(RMA_ERR_INTERN, "Link::sendParts: more than %zu parts", kMaxParts);
			iov[n++] = iovec{ const_cast<uint8_t *>(p.data()), p.size() };
		}
	std::size_t first = 0;
	while (first < n) {
		msghdr m{};
		m.msg_iov = iov + first;
		m.msg_iovlen = n - first;
		ssize_t sent = ::sendmsg(fd_.get(), &m, MSG_NOSIGNAL | MSG_DONTWAIT);
		if (sent > 0) {
			/* Skip what left; resume inside the part it ended in. */
			auto left = static_cast<std::size_t>(sent);
			while (first < n && left >= iov[first].iov_len)
				left -= iov[first++].iov_len;
			if (first < n) {
				iov[first].iov_base = static_cast<uint8_t *>(iov[first].iov_base) + left;
				iov[first].iov_len -= left;
			}
			continue;
		}
		if (sent < 0 && errno == EINTR)
			continue;
		if (sent < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
			/* Full: take the replies that may be holding the server back, then wait for room. */
			RMA_TRY(pump());
			pollfd p{ fd_.get(), POLLOUT | POLLIN, 0 };
			::poll(&p, 1, 1);
			continue;
		}
		return fail(sent < 0 ? errno : EPIPE, "failed while sending");
	}
	return RMA_SUCCESS;
}

int Link::queue(std::span<const uint8_t> head, std::span<const uint8_t> body, std::span<const uint8_t> data)
{
	if (error_)
		return error_;
	/* A large frame goes straight out behind what is queued, in one sendmsg() (no copy into the batch). */
	if (head.size() + body.size() + data.size() >= kBatchBytes) {
		const std::span<const uint8_t> parts[] = { out_, head, body, data };
		int rc = sendParts(parts);
		out_.clear();
		return rc;
	}
	out_.insert(out_.end(), head.begin(), head.end());
	out_.insert(out_.end(), body.begin(), body.end());
	out_.insert(out_.end(), data.begin(), data.end());
	return out_.size() >= kBatchBytes ? push() : RMA_SUCCESS;
}

int Link::push()
{
	if (out_.empty())
		return error_;
	int rc = send(out_);
	out_.clear();
	return rc;
}

int Link::pump()
{
	if (error_)
		return error_;
	for (;;) {
		if (direct_.left) {
			if (!pumpDirect())
				return error_;
			continue;
		}
		const std::size_t want = nextRead();
		ssize_t n = ::recv(fd_.get(), in_.data(), want, MSG_DONTWAIT);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK))
			return RMA_SUCCESS;
		if (n <= 0)
			return fail(n == 0 ? ECONNRESET : errno, n == 0 ? "was closed by the peer" : "failed while receiving");
		received_ += static_cast<uint64_t>(n);
		int bad = 0;
		ParseContext ctx = engine_.parseContext(peerHost_);
		if (bulk_)
			ctx.maxBody = kMaxBulkBody;
		bool ok = assembler_.feed(std::span<const uint8_t>(in_.data(), static_cast<std::size_t>(n)),
					  [&](std::span<const uint8_t> frame) {
						  if (bad)
							  return;
						  ParsedFrame f;
						  ParseResult r = parse(frame, ctx, f);
						  /* A reply for a window freed since still answers its request. */
						  if (r.verdict == Verdict::Ok || r.reason == Reason::UnknownWindow)
							  answered(f.header.seq);
						  const bool data = f.header.kind == static_cast<uint16_t>(FrameKind::GetReply);
						  if (r.verdict == Verdict::Ok && bulk_ && !data) {
							  if (!onBulkReply(f))
								  r.reason = Reason::UnknownKind;
						  } else if (r.verdict == Verdict::Ok) {
							  if (WindowService *s = engine_.findService(f.header.window))
								  s->onReply(f);
						  }
						  if (r.reason == Reason::UnknownWindow) {
							  /* ACK or NACK of a bulk request whose window is gone here: it was answered. */
							  if (bulk_)
								  acked_ = std::max(acked_, f.header.seq);
						  } else if (r.verdict != Verdict::Ok || r.reason != Reason::None) {
							  /* A reply that does not parse: the stream cannot be trusted. */
							  std::fprintf(stderr, "librma: rank %d: dropping the connection to rank %d: %s\n",
								       engine_.config().rank, server_,
								       describe(r, f.header).c_str());
							  bad = EPROTO;
						  }
					  });
		if (!ok || bad)
			return fail(EPROTO, "sent a malformed reply");
		tryDirect(ctx);
		if (static_cast<std::size_t>(n) < want)
			return RMA_SUCCESS;
	}
}

void Link::tryDirect(const ParseContext &ctx)
{
	const std::span<const uint8_t> held = assembler_.held();
	if (held.size() < kHeaderBytes)
		return;
	const FrameHeader h = decodeHeader(held.data());
	if ((h.kind != static_cast<uint16_t>(FrameKind::GetReply) && h.kind != static_cast<uint16_t>(FrameKind::AccReply)) ||
	    h.bodyLen < kDirectBytes)
		return;
	/* Only an answer to a request of this link (a bulk connection's gets have their own numbers). */
	if (bulkOfSeq(h.seq) != bulkOfSeq(seq_))
		return;
	/* Everything parse() would check (a data reply's body is not read by any step); a bad one is left to parse(). */
	if (checkDataReply(h, ctx).verdict != Verdict::Ok)
		return;
	WindowService *s = engine_.findService(h.window);
	uint8_t *dst = s ? s->replyDestination(h) : nullptr;
	if (!dst)
		return;
	const std::size_t got = held.size() - kHeaderBytes; /* < bodyLen: feed() delivers whole frames */
	std::memcpy(dst, held.data() + kHeaderBytes, got);
	assembler_.discard();
	direct_ = Direct{ h, got, h.bodyLen - got, dst, false };
	answered(h.seq);
}

std::size_t Link::nextRead() const
{
	if (largeReplies_.empty())
		return in_.size();
	const std::span<const uint8_t> held = assembler_.held();
	if (held.size() < kHeaderBytes)
		return kHeaderBytes - held.size();
	/* The rest of this frame (the assembler refuses an over-long one when it has the header). */
	const std::size_t frame = kHeaderBytes + le::load<uint32_t>(held.data() + 4);
	return frame > held.size() ? std::min(frame - held.size(), in_.size()) : in_.size();
}

bool Link::pumpDirect()
{
	/*
	 * Still expected, at the same place? (A window freed after an error no
	 * longer is: the rest of its bytes are read and dropped, and the reply
	 * is never reported placed, even if asked again.)
	 */
	WindowService *s = engine_.findService(direct_.header.window);
	uint8_t *dst = nullptr;
	if (!direct_.dropping) {
		dst = s ? s->replyDestination(direct_.header) : nullptr;
		if (dst != direct_.dest) {
			direct_.dropping = true;
			dst = nullptr;
		}
	}
	const std::size_t want = dst ? direct_.left : std::min<std::size_t>(direct_.left, in_.size());
	ssize_t n = ::recv(fd_.get(), dst ? dst + direct_.done : in_.data(), want, MSG_DONTWAIT);
	if (n < 0 && errno == EINTR)
		return true;
	if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK))
		return false;
	if (n <= 0) {
		fail(n == 0 ? ECONNRESET : errno, n == 0 ? "was closed by the peer" : "failed while receiving");
		return false;
	}
	received_ += static_cast<uint64_t>(n);
	direct_.done += static_cast<uint64_t>(n);
	direct_.left -= static_cast<uint64_t>(n);
	if (direct_.left == 0) {
		++directFrames_;
		const FrameHeader h = direct_.header;
		direct_ = Direct{};
		if (dst) /* every byte went to dst (dropping would have stuck otherwise) */
			s->onReplyPlaced(h);
	}
	return static_cast<std::size_t>(n) == want;
}

/* ---- Engine ------------------------------------------------------------------- */

Result<std::unique_ptr<Engine>> Engine::listen(EngineConfig config, EndpointCard &card)
{
	std::unique_ptr<Engine> e(new Engine());
	e->config_ = std::move(config);
	auto addr = chooseAddress(e->config_.interface);
	if (!addr)
		return Result<std::unique_ptr<Engine>>::failure(addr.code());
	UniqueFd l(socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0));
	sockaddr_in a{};
	a.sin_family = AF_INET;
	a.sin_addr.s_addr = addr.value();
	socklen_t len = sizeof(a);
	if (!l.isValid() || bind(l.get(), reinterpret_cast<sockaddr *>(&a), sizeof(a)) < 0 ||
	    ::listen(l.get(), 256) < 0 || getsockname(l.get(), reinterpret_cast<sockaddr *>(&a), &len) < 0)
		return Result<std::unique_ptr<Engine>>::failure(makeErrnoError(RMA_ERR_INTERN, errno, "rma_init: cannot listen on %s",
				      ipText(addr.value(), 0).c_str()));
	e->listener_ = std::move(l);
	e->ipv4_ = a.sin_addr.s_addr;
	e->port_ = a.sin_port;
	card = EndpointCard{};
	card.ipv4 = e->ipv4_;
	card.port = e->port_;
	card.machine = machineHash();
	auto identity = RankIdentity::generate();
	if (!identity)
		return Result<std::unique_ptr<Engine>>::failure(identity.code());
	e->identity_ = std::make_unique<RankIdentity>(std::move(identity.value()));
	std::memcpy(card.identity, e->identity_->publicKey().data(), kIdentityKeyBytes);
	if (getrandom(card.secret, sizeof(card.secret), 0) != static_cast<ssize_t>(sizeof(card.secret)) ||
	    getrandom(&card.jobHash, sizeof(card.jobHash), 0) != static_cast<ssize_t>(sizeof(card.jobHash)))
		return Result<std::unique_ptr<Engine>>::failure(makeErrnoError(RMA_ERR_INTERN, errno, "rma_init: getrandom failed for the job secret"));
	/* Leaders: the smallest world rank of each host. */
	uint32_t hosts = 0;
	for (uint32_t h : e->config_.hostOf)
		hosts = std::max(hosts, h + 1);
	e->leaders_.assign(hosts, UINT32_MAX);
	for (std::size_t r = e->config_.hostOf.size(); r-- > 0;)
		e->leaders_[e->config_.hostOf[r]] = static_cast<uint32_t>(r);
	return e;
}

Engine::~Engine()
{
	stop();
}

int Engine::setPeers(std::span<const EndpointCard> cards)
{
	cards_.assign(cards.begin(), cards.end());
	auto key = AuthKey::derive(std::span<const uint8_t>(cards_[0].secret, kSecretBytes));
	/* Nobody needs the secret again: K is derived. */
	for (EndpointCard &c : cards_)
		std::memset(c.secret, 0, sizeof(c.secret));
	if (!key)
		return key.code();
	key_ = std::make_unique<AuthKey>(std::move(key.value()));
	jobHash_ = cards_[0].jobHash;
	identities_.resize(cards_.size());
	for (std::size_t r = 0; r < cards_.size(); ++r)
		std::memcpy(identities_[r].data(), cards_[r].identity, kIdentityKeyBytes);
	return RMA_SUCCESS;
}

const std::array<uint8_t, kIdentityKeyBytes> *Engine::identityOf(uint32_t rank) const noexcept
{
	if (rank >= identities_.size())
		return nullptr;
	const std::array<uint8_t, kIdentityKeyBytes> &k = identities_[rank];
	/* A rank without a listening engine (it never joined the transport) published zeros. */
	return std::any_of(k.begin(), k.end(), [](uint8_t b) { return b != 0; }) ? &k : nullptr;
}

std::string Engine::address() const
{
	return ipText(ipv4_, port_);
}

std::string Engine::serverBackend() const
{
	return backend_;
}

ParseContext Engine::parseContext(uint32_t peerHost) const
{
	ParseContext ctx;
	ctx.phase = ConnPhase::Open;
	ctx.maxBody = kMaxBody;
	ctx.hostOfRank = config_.hostOf;
	ctx.localHost = hostOf(config_.rank);
	ctx.peerHost = peerHost;
	ctx.findWindow = &Engine::findView;
	ctx.windowCtx = this;
	return ctx;
}

const WindowView *Engine::findView(const void *ctx, uint64_t id) noexcept
{
	/* The caller holds registry_. */
	const auto *e = static_cast<const Engine *>(ctx);
	auto it = e->windows_.find(id);
	return it == e->windows_.end() ? nullptr : &it->second.service->view;
}

/*
 * The server thread calls this holding registry_; Link::pump() on the
 * application thread calls it without: windows_ is written only by that
 * thread (register/unregister), so its own reads cannot race.
 */
WindowService *Engine::findService(uint64_t id)
{
	auto it = windows_.find(id);
	return it == windows_.end() ? nullptr : it->second.service;
}

int Engine::registerWindow(uint64_t id, WindowService *service, bool serves)
{
	{
		std::lock_guard<std::mutex> g(registry_);
		windows_[id] = Entry{ service, serves };
	}
	if (serves && !serverUp_.load(std::memory_order_acquire))
		return startServer();
	return RMA_SUCCESS;
}

void Engine::unregisterWindow(uint64_t id)
{
	std::lock_guard<std::mutex> g(registry_);
	windows_.erase(id);
}

Result<std::unique_ptr<Link>> Engine::connectTo(int server, uint32_t index)
{
	const uint32_t purpose = index == kStreamIndex ? kPurposeStream : kPurposeBulk;
	using Out = Result<std::unique_ptr<Link>>;
	const EndpointCard &c = cards_[static_cast<std::size_t>(server)];
	const std::string where = ipText(c.ipv4, c.port);
	if (c.ipv4 == 0)
		return Out::failure(makeError(RMA_ERR_PROC_FAILED,
					      "rank %d cannot be reached: it could not listen at rma_init (RMA_NET_IF)", server));
	UniqueFd fd(socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0));
	if (!fd.isValid())
		return Out::failure(makeErrnoError(RMA_ERR_INTERN, errno, "cannot make a socket to reach rank %d", server));
	setNoDelay(fd.get());
	setLiveness(fd.get(), config_.timeoutMs);
	sockaddr_in a{};
	a.sin_family = AF_INET;
	a.sin_addr.s_addr = c.ipv4;
	a.sin_port = c.port;
	if (connect(fd.get(), reinterpret_cast<sockaddr *>(&a), sizeof(a)) < 0 && errno != EINPROGRESS)
		return Out::failure(makeErrnoError(RMA_ERR_PROC_FAILED, errno, "cannot connect to rank %d at %s", server,
						   where.c_str()));
	pollfd p{ fd.get(), POLLOUT, 0 };
	int ready = ::poll(&p, 1, config_.timeoutMs);
	int soError = 0;
	socklen_t len = sizeof(soError);
	if (ready <= 0 || getsockopt(fd.get(), SOL_SOCKET, SO_ERROR, &soError, &len) < 0 || soError != 0)
		return Out::failure(makeErrnoError(RMA_ERR_PROC_FAILED, ready == 0 ? ETIMEDOUT : soError ? soError : errno,
						   "cannot connect to rank %d at %s", server, where.c_str()));
	const uint32_t myHost = hostOf(config_.rank);
	ClientConfig cc;
	cc.jobHash = jobHash_;
	cc.worldSize = static_cast<uint32_t>(config_.hostOf.size());
	cc.leader = leaderOf(myHost);
	cc.rank = static_cast<uint32_t>(config_.rank);
	cc.serverLeader = leaderOf(hostOf(server));
	cc.purpose = purpose;
	cc.identity = identity_.get();
	cc.serverRank = static_cast<uint32_t>(server);
	cc.peer = "rank " + std::to_string(server) + " at " + where;
	auto peer = authenticateClient(fd.get(), *key_, cc);
	if (!peer)
		return Out::failure(peer.code());
	setNonBlocking(fd.get(), true);
	if (purpose == kPurposeBulk) {
		/* Room for a few chunks in flight: the sender is not held up by every window update. */
		int bytes = 4 << 20;
		(void)setsockopt(fd.get(), SOL_SOCKET, SO_SNDBUF, &bytes, sizeof(bytes));
	}
	if (purpose == kPurposeStream)
		return std::make_unique<Link>(*this, server, std::move(fd), hostOf(server));
	return std::make_unique<Link>(*this, server, std::move(fd), hostOf(server), true, Link::bulkSeqBase(index));
}

Result<Link *> Engine::link(int server)
{
	return cachedLink(server, kStreamIndex);
}

Result<Link *> Engine::bulkLink(int server, uint32_t index)
{
	return cachedLink(server, index);
}

Result<Link *> Engine::cachedLink(int server, uint32_t index)
{
	const auto key = std::make_pair(server, index);
	if (auto it = links_.find(key); it != links_.end()) {
		if (!it->second->failed())
			return it->second.get();
		/* A lost stream took its origin's locks with it: never replaced behind the application's back. */
		if (index == kStreamIndex)
			return Result<Link *>::failure(it->second->error());
		/*
		 * A bulk connection is replaced while the stream lives (bulkLink()),
		 * unless we gave it up ourselves (a flush it never answered): the
		 * server may still apply what it holds of it, and puts on a new
		 * connection could overtake those.
		 */
		if (it->second->abandoned())
			return Result<Link *>::failure(it->second->error());
		if (auto st = links_.find(std::make_pair(server, kStreamIndex)); st != links_.end() && st->second->failed())
			return Result<Link *>::failure(st->second->error());
		it->second->releaseBuffers();
		retired_.push_back(std::move(it->second));
		links_.erase(it);
	}
	auto l = connectTo(server, index);
	if (!l)
		return Result<Link *>::failure(l.code());
	Link *out = l.value().get();
	links_[key] = std::move(l.value());
	return out;
}

int Engine::startServer()
{
	std::atomic<int> status{ 1 };
	server_ = std::thread([this, &status] {
		FrameHandler handler;
		handler.ctx = this;
		handler.onFrame = [](void *ctx, ConnId conn, std::span<const uint8_t> frame) noexcept {
			auto *e = static_cast<Engine *>(ctx);
			auto it = e->conns_.find(conn);
			if (it == e->conns_.end() || !it->second.open)
				return;
			/*
			 * Back-pressure: while a reply backlog waits for the socket
			 * (a window of large gets), later requests wait too, so the
			 * queue stays small instead of growing to the whole window.
			 */
			if (!it->second.parked.empty() || e->loopOwner_->unsent(conn) > kReplyBacklog ||
			    !e->handleRequest(conn, frame)) {
				it->second.parked.emplace_back(frame.begin(), frame.end());
				it->second.parkedBytes += frame.size();
			}
		};
		handler.onClosed = [](void *ctx, ConnId conn, int error) noexcept {
			auto *e = static_cast<Engine *>(ctx);
			auto it = e->conns_.find(conn);
			if (it == e->conns_.end())
				return;
			const ServerConn c = std::move(it->second);
			/* Its parked frames go here, before what it held is released: none is granted later. */
			e->conns_.erase(it);
			/*
			 * Even an orderly EOF: the kernel of a killed process sends
			 * FIN too, and an origin that finished holds nothing here.
			 * Locks are the stream's: a bulk connection holds none.
			 */
			if (!c.bulk) {
				e->dropBulkOf(c.peerRank);
				e->originGone(c.peerRank);
			}
			if ((error == ETIMEDOUT || error == EHOSTUNREACH) && e->config_.hostLost)
				e->config_.hostLost(c.peerHost);
		};
		handler.pending = [](void *ctx) noexcept {
			return static_cast<Engine *>(ctx)->incomingCount_.load(std::memory_order_acquire) != 0;
		};
		NetLoopConfig lc;
		lc.policy = config_.policy;
		lc.zc = config_.zc;
		lc.zcMinBytes = config_.zcMinBytes;
		lc.noFixedBuffers = !config_.fixedBuffers;
		lc.sqpollIdleMs = config_.sqpollIdleMs;
		auto loop = makeNetLoop(handler, lc);
		if (!loop) {
			status.store(loop.code());
			status.notify_one();
			return;
		}
		loopOwner_ = std::move(loop.value());
		backend_ = loopOwner_->describe();
		loop_.store(loopOwner_.get(), std::memory_order_release);
		status.store(RMA_SUCCESS);
		status.notify_one();
		serveLoop();
		/* Destroyed here, on its ring's thread, once the acceptor (which wakes it) is gone. */
		acceptorGone_.wait(false); /* seq_cst: pairs with stop()'s release store after the acceptor's join */
		loop_.store(nullptr, std::memory_order_release);
		stopStats_ = loopOwner_->stats();
		served_ = true;
		loopOwner_.reset();
	});
	status.wait(1);
	if (int rc = status.load(); rc != RMA_SUCCESS) {
		server_.join();
		return rc;
	}
	serverUp_.store(true, std::memory_order_release);
	acceptor_ = std::thread([this] { acceptLoop(); });
	return RMA_SUCCESS;
}

/*
 * Accept connections and authenticate them, many at once: each accepted
 * socket gets a server Handshake that pumpHandshake() advances whenever
 * poll() says its socket is ready, so a peer that connects and says
 * nothing (or trickles bytes) holds up no other until its step's deadline.
 * At most kMaxPendingHandshakes are in progress; beyond that a new
 * connection is closed at once (a flood cannot grow this thread's memory).
 */
void Engine::acceptLoop()
{
	constexpr std::size_t kMaxPendingHandshakes = 256;
	struct Pending {
		UniqueFd fd;
		Handshake h;
		std::string peer;
		HandshakePump pump;
	};
	NonceCache seen;
	const uint32_t myHost = hostOf(config_.rank);
	ServerAllow allow{ this, myHost };
	std::vector<Pending> pending;
	std::vector<pollfd> fds;
	/* Only this thread accepts: a connection gone between poll and accept must not block it. */
	fcntl(listener_.get(), F_SETFL, fcntl(listener_.get(), F_GETFL) | O_NONBLOCK);
	while (!stopping_.load(std::memory_order_acquire)) {
		fds.assign(1, pollfd{ listener_.get(), POLLIN, 0 });
		int64_t next = authNowNs() + 1'000'000'000;
		for (const Pending &p : pending) {
			fds.push_back(pollfd{ p.fd.get(), p.pump.events, 0 });
			next = std::min(next, p.pump.deadlineNs);
		}
		const int64_t leftMs = (next - authNowNs()) / 1'000'000 + 1;
		const int rc = ::poll(fds.data(), fds.size(), static_cast<int>(std::clamp<int64_t>(leftMs, 0, 1000)));
		if (rc < 0 && errno != EINTR)
			return;
		/* Handshakes first (fds[1 + i] is pending[i]), then new connections. */
		std::size_t keep = 0;
		for (std::size_t i = 0; i < pending.size(); ++i) {
			Pending &p = pending[i];
			p.pump = pumpHandshake(p.fd.get(), p.h, rc > 0 ? fds[1 + i].revents : 0, p.peer);
			if (p.pump.outcome == HandshakePump::Outcome::Continue) {
				if (keep != i)
					pending[keep] = std::move(p);
				++keep;
				continue;
			}
			if (p.pump.outcome == HandshakePump::Outcome::Failed) {
				/* Refused: an outsider, or a peer that lost its way. Say so; never let it near a window. */
				std::fprintf(stderr, "librma: rank %d refused a connection: %s\n", config_.rank,
					     errorMessage(p.pump.error).c_str());
				continue;
			}
			const AuthPeer &peer = p.h.peer();
			{
				std::lock_guard<std::mutex> g(incomingLock_);
				incoming_.push_back(Incoming{ std::move(p.fd), hostOf(static_cast<int>(peer.leader)), peer.rank,
							      peer.purpose == kPurposeBulk });
			}
			incomingCount_.fetch_add(1, std::memory_order_release);
			if (NetLoop *l = loop_.load(std::memory_order_acquire))
				l->wake();
		}
		pending.erase(pending.begin() + static_cast<std::ptrdiff_t>(keep), pending.end());
		if (rc <= 0 || !(fds[0].revents & (POLLIN | POLLERR | POLLHUP | POLLNVAL)))
			continue;
		for (;;) {
			sockaddr_in from{};
			socklen_t len = sizeof(from);
			UniqueFd fd(accept4(listener_.get(), reinterpret_cast<sockaddr *>(&from), &len, SOCK_CLOEXEC));
			if (!fd.isValid()) {
				if (errno == EINTR || errno == ECONNABORTED)
					continue;
				if (errno == EAGAIN || errno == EWOULDBLOCK)
					break;
				return; /* the listener was shut down (stop) */
			}
			if (pending.size() >= kMaxPendingHandshakes) {
				std::fprintf(stderr, "librma: rank %d refused a connection from %s: %zu handshakes in progress\n",
					     config_.rank, ipText(from.sin_addr.s_addr, from.sin_port).c_str(), pending.size());
				continue;
			}
			setNoDelay(fd.get());
			setLiveness(fd.get(), config_.timeoutMs);
			ServerConfig sc;
			sc.jobHash = jobHash_;
			sc.worldSize = static_cast<uint32_t>(config_.hostOf.size());
			sc.leader = leaderOf(myHost);
			sc.rank = static_cast<uint32_t>(config_.rank);
			sc.peer = ipText(from.sin_addr.s_addr, from.sin_port);
			sc.seen = &seen;
			sc.allowLeader = allowLeader;
			sc.allowRank = allowRank;
			sc.rankKey = rankKey;
			sc.allowCtx = &allow;
			std::string peer = sc.peer;
			auto h = Handshake::server(*key_, std::move(sc), authNowNs());
			if (!h) {
				std::fprintf(stderr, "librma: rank %d refused a connection: %s\n", config_.rank,
					     errorMessage(h.code()).c_str());
				continue;
			}
			Pending p{ std::move(fd), std::move(h.value()), std::move(peer), {} };
			p.pump = pumpHandshake(p.fd.get(), p.h, 0, p.peer);
			pending.push_back(std::move(p));
		}
	}
}

bool Engine::handleRequest(ConnId conn, std::span<const uint8_t> frame)
{
	ServerConn &c = conns_[conn];
	std::lock_guard<std::mutex> g(registry_);
	ParsedFrame f;
	ParseContext ctx = parseContext(c.peerHost);
	ctx.peerRank = c.peerRank; /* what the handshake proved: no frame may speak for another rank */
	if (c.bulk)
		ctx.maxBody = kMaxBulkBody;
	ParseResult r = parse(frame, ctx, f);
	if (c.bulk && r.verdict != Verdict::Drop && f.header.kind != static_cast<uint16_t>(FrameKind::Put) &&
	    f.header.kind != static_cast<uint16_t>(FrameKind::Get) && f.header.kind != static_cast<uint16_t>(FrameKind::Flush)) {
		/* A bulk connection carries puts, gets and their flushes, nothing that orders against the stream. */
		std::fprintf(stderr, "librma: rank %d: dropping a bulk connection from host %u: it sent a %s frame\n",
			     config_.rank, c.peerHost, frameKindName(f.header.kind));
		c.open = false;
		return true;
	}
	/* Replies come from a rank of this host: the kinds that name no target are answered by this process. */
	FrameHeader answer = f.header;
	const auto kind = static_cast<FrameKind>(f.header.kind);
	if (kind == FrameKind::LockAll || kind == FrameKind::UnlockAll || kind == FrameKind::Fence)
		answer.target = static_cast<uint32_t>(config_.rank);
	Replier reply(*loopOwner_, conn, answer);
	switch (r.verdict) {
	case Verdict::Ok:
		/* Only the window's server on this host takes requests: a second set of lock books would break exclusion. */
		if (auto it = windows_.find(f.header.window); it != windows_.end() && it->second.serves)
			return it->second.service->onRequest(f, reply);
		reply.nack(RMA_ERR_WIN, f.header.window);
		return true;
	case Verdict::Nack:
		reply.nack(reasonClass(r.reason), static_cast<uint64_t>(r.a));
		return true;
	default:
		std::fprintf(stderr, "librma: rank %d: dropping a connection from host %u: %s\n", config_.rank,
			     c.peerHost, describe(r, f.header).c_str());
		c.open = false;
		return true;
	}
}

void Engine::dropBulkOf(uint32_t rank)
{
	/*
	 * Its puts still in flight there belong to the epoch being released:
	 * none may land after the release (in the next holder's epoch). Marked
	 * closed, a connection delivers nothing more; the sweep of the next
	 * pass closes it (no loop call from inside a callback).
	 */
	for (auto &[id, c] : conns_)
		if (c.bulk && c.peerRank == rank) {
			c.open = false;
			c.parked.clear();
			c.parkedBytes = 0;
		}
}

bool Engine::hasStream(uint32_t rank) const
{
	for (const auto &[id, c] : conns_)
		if (!c.bulk && c.open && c.peerRank == rank)
			return true;
	return false;
}

void Engine::originGone(uint32_t rank)
{
	std::lock_guard<std::mutex> g(registry_);
	/*
	 * Only the windows this process serves: their locks and grants are the
	 * ones this connection took. Another process of this host serves the
	 * rest, over its own connection from that origin, which may live on.
	 */
	for (auto &[id, entry] : windows_)
		if (entry.serves)
			entry.service->onOriginLost(rank);
}

void Engine::serveLoop()
{
	NetLoop &loop = *loopOwner_;
	int64_t lastActive = nowNs();
	const int64_t spinNs = int64_t{ config_.spinUs } * 1000;
	bool realtime = false;
	if (config_.realtime) {
		sched_param sp{};
		sp.sched_priority = 1;
		if (int rc = pthread_setschedparam(pthread_self(), SCHED_FIFO, &sp); rc == 0)
			realtime = true;
		else
			std::fprintf(stderr,
				     "librma: rank %d: RMA_NET_SERVER_PRIORITY=fifo refused (%s): the server runs at normal "
				     "priority (it needs CAP_SYS_NICE or RLIMIT_RTPRIO >= 1)\n",
				     config_.rank, std::strerror(rc));
	}
	/* Relaxed: read by stop() after the join. */
	realtime_.store(realtime, std::memory_order_relaxed);
	while (!stopping_.load(std::memory_order_acquire)) {
		if (incomingCount_.load(std::memory_order_acquire)) {
			std::vector<Incoming> adopt;
			{
				std::lock_guard<std::mutex> g(incomingLock_);
				adopt.swap(incoming_);
				incomingCount_.store(0, std::memory_order_relaxed);
			}
			for (Incoming &in : adopt) {
				/* A bulk connection's frames (up to 1 MiB of put data) are received whole, where they are applied from. */
				ConnOptions opt;
				if (in.bulk) {
					/*
					 * Only beside its origin's live stream (adopted before
					 * it: the origin connects its stream first and waits
					 * for READY). Once the stream has ended here, the
					 * origin's locks are released: puts on a new bulk
					 * connection would land in another holder's epoch.
					 * Closed: the origin's transfer fails.
					 */
					if (!hasStream(in.rank))
						continue;
					opt.maxBody = kMaxBulkBody;
					opt.exact = true;
				}
				auto id = loop.addConnection(std::move(in.fd), opt);
				if (id)
					conns_[id.value()] = ServerConn{ in.host, in.rank, in.bulk, true, {} };
			}
		}
		int events = loop.poll();
		bool parked = false;
		for (auto it = conns_.begin(); it != conns_.end();) {
			ServerConn &c = it->second;
			/* Parked requests, in order, until one still cannot be applied. */
			std::size_t done = 0;
			while (c.open && done < c.parked.size() && loop.unsent(it->first) <= kReplyBacklog &&
			       handleRequest(it->first, c.parked[done]))
				++done;
			if (done) {
				for (std::size_t i = 0; i < done; ++i)
					c.parkedBytes -= c.parked[i].size();
				c.parked.erase(c.parked.begin(), c.parked.begin() + static_cast<std::ptrdiff_t>(done));
			}
			parked |= !c.parked.empty();
			/* Back-pressure (kParkedPauseBytes): stop reading it while too much waits, resume below half. */
			if (c.open && !c.paused && c.parkedBytes > kParkedPauseBytes) {
				loop.pauseReceive(it->first, true);
				c.paused = true;
			} else if (c.paused && c.parkedBytes <= kParkedPauseBytes / 2) {
				loop.pauseReceive(it->first, false);
				c.paused = false;
			}
			if (!c.open) {
				/* Dropped for a malformed frame: it can never unlock what it holds here. */
				const uint32_t rank = c.peerRank;
				const bool bulk = c.bulk;
				loop.close(it->first);
				it = conns_.erase(it);
				if (!bulk) {
					dropBulkOf(rank);
					originGone(rank);
				}
				continue;
			}
			++it;
		}
		const int64_t now = nowNs();
		if (events > 0)
			lastActive = now;
		if (parked) {
			/*
			 * A lock is held here: let its holder run, then look again. A
			 * FIFO thread's yield would let no normal thread run: it waits
			 * a little instead (a frame ends the wait).
			 */
			if (realtime)
				loop.wait(kRealtimeBackoffNs);
			else
				sched_yield();
			continue;
		}
		if (now - lastActive > spinNs) {
			/* Relaxed: a statistic. */
			serverWaits_.fetch_add(1, std::memory_order_relaxed);
			/* What woke it is traffic too: spin again after it, or every later frame pays a wake-up. */
			if (loop.wait(100'000'000) > 0)
				lastActive = nowNs();
		} else if (events == 0 && SpinWait::oversubscribed() && SpinWait::yieldingHere()) {
			/*
			 * More threads than CPUs on this host, and this process's rank
			 * waits in librma, yielding: it may need this CPU to take what
			 * we applied, or to send what the other hosts wait for. Not
			 * when it computes: a yield would cost us its whole time slice
			 * (a computing passive target answered in 960 us instead of 24).
			 */
			serverYields_.fetch_add(1, std::memory_order_relaxed);
			if (realtime)
				loop.wait(kRealtimeBackoffNs); /* as above: a FIFO yield would not give the rank the CPU */
			else
				sched_yield();
		}
	}
}

void Engine::stop()
{
	if (stopping_.exchange(true))
		return;
	if (listener_.isValid())
		shutdown(listener_.get(), SHUT_RDWR);
	if (NetLoop *l = loop_.load(std::memory_order_acquire))
		l->wake();
	if (acceptor_.joinable())
		acceptor_.join();
	/* Release: the server thread may destroy its loop now (nobody else wakes it). */
	acceptorGone_.store(true, std::memory_order_release);
	acceptorGone_.notify_all();
	if (server_.joinable())
		server_.join();
	loop_.store(nullptr, std::memory_order_relaxed);
	conns_.clear();
	if (served_ && config_.verbose) {
		/* The server thread has been joined: the counters it left are ours to read. */
		const NetLoopStats &st = stopStats_;
		std::fprintf(stderr,
			     "librma: rank %d's server (%s%s): %llu sends, %llu zero-copy (%llu notifications, %llu "
			     "reported copied), %llu short, %llu bytes out, %llu passes, %llu parks\n",
			     config_.rank, backend_.c_str(),
			     realtime_.load(std::memory_order_relaxed) ? "; SCHED_FIFO" : "",
			     static_cast<unsigned long long>(st.sends),
			     static_cast<unsigned long long>(st.zcSends), static_cast<unsigned long long>(st.zcNotifs),
			     static_cast<unsigned long long>(st.zcCopied), static_cast<unsigned long long>(st.shortSends),
			     static_cast<unsigned long long>(st.bytesOut), static_cast<unsigned long long>(st.passes),
			     static_cast<unsigned long long>(st.parks));
	}
	if (config_.verbose && !links_.empty()) {
		uint64_t direct = 0;
		std::size_t bulk = 0;
		for (const auto &[key, link] : links_) {
			direct += link->directFrames();
			bulk += link->bulk();
		}
		std::fprintf(stderr, "librma: rank %d's links: %llu large replies received in place, %zu bulk connections\n",
			     config_.rank, static_cast<unsigned long long>(direct), bulk);
	}
	loopOwner_.reset();
	links_.clear();
	retired_.clear();
	listener_.reset();
}

} /* namespace librma::net */
