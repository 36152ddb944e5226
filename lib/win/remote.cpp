/* SPDX-License-Identifier: MIT */
/*
 * Windows that span hosts: the origin's streams and the server's apply
 * paths. See remote.h.
 */
#include "win/remote.h"

#ifdef RMA_HAVE_NET

#include <sys/uio.h>

#include <algorithm>
#include <chrono>
#include <cstring>

#include "common/spin_wait.h"
#include "error/error.h"
#include "net/le.h"
#include "win/window.h"

namespace librma {

using net::FrameKind;

namespace {

/* Runs one PUT/GET frame carries at most, and the data bytes it carries (or asks for) at most. */
constexpr uint32_t kRunsPerFrame = 256;
constexpr std::size_t kFixedOpBody = net::kOpBodyBytes + net::kWireTypeBytes;
constexpr uint32_t kByteElement = static_cast<uint32_t>(BasicType::Byte);

int64_t nowMs()
{
	return std::chrono::duration_cast<std::chrono::milliseconds>(
		       std::chrono::steady_clock::now().time_since_epoch())
		.count();
}

/* How long a link has been silent: restarted whenever bytes arrive (a wait's timeout counts silence, not work). */
class Silence
{
public:
	explicit Silence(const net::Link &link) : link_(link), seen_(link.received()) {}
	/* Milliseconds without a byte as of @now (0 on the first look and whenever something arrived since the last). */
	int64_t ms(int64_t now)
	{
		if (!start_ || link_.received() != seen_) {
			start_ = now;
			seen_ = link_.received();
		}
		return now - start_;
	}

private:
	const net::Link &link_;
	uint64_t seen_;
	int64_t start_ = 0;
};

} /* namespace */

/* The address space, as one region: what a dynamic target's view admits before its regions are checked. */
constexpr net::MemRegion kAnyAddress{ 0, UINT64_MAX };

/* A get into a non-contiguous origin buffer: its pieces land here, the last one unpacks. */
struct GetStaging {
	std::vector<std::byte> packed;
	void *origin = nullptr;
	std::shared_ptr<Datatype> keep; /* holds a derived type alive until the unpack */
	const Datatype *type = nullptr;
	int count = 0;
	std::size_t left = 0; /* bytes still to arrive */
};

Result<std::unique_ptr<RemoteWindow>> RemoteWindow::create(Window &win, uint64_t id, std::vector<uint32_t> hostOf,
							    std::vector<int> serverOf)
{
	net::Engine *e = net::engine();
	if (!e)
		return Result<std::unique_ptr<RemoteWindow>>::failure(
			makeError(RMA_ERR_INTERN, "window spans hosts but the inter-host engine is not running"));
	std::unique_ptr<RemoteWindow> r(new RemoteWindow(win, id));
	const int n = win.size();
	r->hostOf_ = std::move(hostOf);
	r->serverOf_ = std::move(serverOf);
	r->myHost_ = r->hostOf_[static_cast<std::size_t>(win.rank())];
	r->worldOf_.resize(static_cast<std::size_t>(n));
	const std::size_t world = e->config().hostOf.size();
	r->rankInWindow_.assign(world, -1);
	for (int i = 0; i < n; ++i) {
		int w = win.group()->worldRank(i);
		r->worldOf_[static_cast<std::size_t>(i)] = w;
		r->rankInWindow_[static_cast<std::size_t>(w)] = i;
	}
	r->views_.resize(static_cast<std::size_t>(n));
	for (int i = 0; i < n; ++i) {
		net::TargetView &v = r->views_[static_cast<std::size_t>(i)];
		v.size = static_cast<uint64_t>(std::max<rma_aint>(win.targets_[i].size, 0));
		/* Dynamic: the frame's footprint must be an address range; the attached regions are checked at apply. */
		if (win.flavor() == Flavor::Dynamic) {
			v.dynamic = true;
			v.regions = std::span<const net::MemRegion>(&kAnyAddress, 1);
		}
	}
	/* Before registering: the server thread may apply a LOCK as soon as it can find us. */
	r->held_.resize(static_cast<std::size_t>(n));
	r->view.rankInWindow = r->rankInWindow_;
	r->view.targets = r->views_;
	uint32_t hosts = 0;
	for (uint32_t h : r->hostOf_)
		hosts = std::max(hosts, h + 1);
	r->streams_.resize(e->config().hostOf.empty() ? hosts : std::max<uint32_t>(hosts, 1));
	/* This process serves its host's members when it is the window's lowest rank here. */
	const bool serves = r->serverOf_[static_cast<std::size_t>(win.rank())] == r->worldOf_[static_cast<std::size_t>(win.rank())];
	if (int rc = e->registerWindow(id, r.get(), serves); rc != RMA_SUCCESS)
		return Result<std::unique_ptr<RemoteWindow>>::failure(rc);
	return r;
}

RemoteWindow::~RemoteWindow()
{
	if (net::Engine *e = net::engine())
		e->unregisterWindow(id_);
}

/* ---- Origin side ---------------------------------------------------------------- */

Result<RemoteWindow::Stream *> RemoteWindow::stream(const char *call, int target, bool report)
{
	const uint32_t host = hostOf_[static_cast<std::size_t>(target)];
	std::unique_ptr<Stream> &s = streams_[host];
	if (!s) {
		s = std::make_unique<Stream>();
		s->server = serverOf_[static_cast<std::size_t>(target)];
	}
	/*
	 * A refusal recorded (an earlier operation's NACK) is reported once, as
	 * waitAck() does: kept, it would fail every later lock, lock_all and
	 * post to that host until a wait in an epoch reported it. (So a
	 * refused rget whose refusal another call reported completes without
	 * it: README, what does not work yet.) A lost link stays lost.
	 */
	if (s->error && report) {
		const int rc = s->error;
		if (s->link && !s->link->failed() && !s->broken)
			s->error = 0;
		return Result<Stream *>::failure(rc);
	}
	if (!s->link) {
		auto link = net::engine()->link(s->server);
		if (!link)
			return Result<Stream *>::failure(makeError(errorClass(link.code()), "%s: target rank %d of window '%s': %s", call,
								   target, win_.name.c_str(), errorMessage(link.code()).c_str()));
		s->link = link.value();
	}
	return s.get();
}

int RemoteWindow::sendRequest(Stream &s, FrameKind kind, uint32_t targetWorld, std::span<const uint8_t> body,
			      uint64_t &seq, bool noOrigin, std::span<const uint8_t> data)
{
	if (s.lockSeq > s.acked) {
		/* Behind a LOCK not granted yet: its server holds these frames in memory until the grant. */
		s.behindLock += net::kHeaderBytes + body.size() + data.size();
		if (s.behindLock > kBehindLockBytes) {
			RMA_TRY(waitAck("rma_win_lock (its grant, before more operations)", s, s.lockSeq, true));
			s.behindLock = 0;
		}
	}
	seq = s.link->nextSeq();
	net::FrameHeader h;
	h.kind = static_cast<uint16_t>(kind);
	h.bodyLen = static_cast<uint32_t>(body.size() + data.size());
	h.window = id_;
	h.origin = noOrigin ? 0 : static_cast<uint32_t>(worldOf_[static_cast<std::size_t>(win_.rank())]);
	h.target = targetWorld;
	h.seq = seq;
	uint8_t head[net::kHeaderBytes];
	net::encodeHeader(h, head);
	s.sent = seq;
	/* Queued: it leaves with the next frames, at the latest when this process waits for an answer. */
	if (int rc = s.link->queue(head, body, data); rc != RMA_SUCCESS) {
		s.error = rc;
		return rc;
	}
	return RMA_SUCCESS;
}

bool RemoteWindow::silentTooLong(const Stream &s, int64_t silentMs) noexcept
{
	return silentMs > net::engine()->config().timeoutMs && s.acked >= s.lockSeq && !s.link->lockUnanswered();
}

int RemoteWindow::silentError(const Stream &s)
{
	return makeError(RMA_ERR_PROC_FAILED, "rank %d's host did not answer within %d ms (RMA_NET_TIMEOUT_MS)",
			 s.server, net::engine()->config().timeoutMs);
}

int RemoteWindow::callError(const char *call, int rc) const
{
	return makeError(errorClass(rc), "%s: window '%s': %s", call, win_.name.c_str(), errorMessage(rc).c_str());
}

int RemoteWindow::waitAck(const char *call, Stream &s, uint64_t seq, bool noTimeout)
{
	Silence silence(*s.link);
	/*
	 * Until @seq is answered, or the link is lost or silent too long. A
	 * refusal (NACK) of an earlier request does not end the wait: the
	 * answers between it and @seq are read here too, so none of them is
	 * left to be taken for a new error at the next wait.
	 */
	bool lost = false;
	if (int rc = s.link->push(); rc != RMA_SUCCESS) {
		if (!s.error)
			s.error = rc;
		lost = true;
	}
	for (SpinWait wait; s.acked < seq && !lost; wait.once()) {
		if (int rc = s.link->pump(); rc != RMA_SUCCESS) {
			if (!s.error)
				s.error = rc;
			break;
		}
		if (s.acked >= seq)
			break;
		if (wait.count() < SpinWait::kSpins || (wait.count() & 0xff) != 0)
			continue;
		if (!noTimeout && silentTooLong(s, silence.ms(nowMs()))) {
			if (!s.error)
				s.error = silentError(s);
			lost = true;
		}
	}
	if (s.error) {
		int rc = s.error;
		/* A refusal is reported once; a lost link stays lost. */
		if ((!s.link || !s.link->failed()) && !s.broken)
			s.error = 0;
		return callError(call, rc);
	}
	return RMA_SUCCESS;
}

int RemoteWindow::sendBulk(const char *call, Stream &s, int target, FrameKind kind, std::span<const uint8_t> body,
			   std::span<const uint8_t> data, uint32_t &index, uint64_t &seq)
{
	net::Engine &e = *net::engine();
	const uint32_t k = e.config().bulkLinks;
	if (s.bulk.size() != k) {
		s.bulk.assign(k, nullptr);
		s.bulkSent.assign(k, 0);
		s.bulkGets.assign(k, {});
	}
	const uint32_t i = s.nextBulk++ % k;
	for (bool retried = false;; retried = true) {
		/*
		 * A failed connection with nothing of ours pending is replaced
		 * (the engine reconnects while the stream lives); with transfers
		 * pending it stays until drainBulk() has reported them.
		 */
		if (!s.bulk[i] || (s.bulk[i]->failed() && s.bulkSent[i] == 0)) {
			auto l = e.bulkLink(s.server, i);
			if (!l)
				return makeError(errorClass(l.code()),
						 "%s: target rank %d of window '%s': bulk connection %u: %s", call, target,
						 win_.name.c_str(), i, errorMessage(l.code()).c_str());
			s.bulk[i] = l.value();
		}
		net::Link &link = *s.bulk[i];
		net::FrameHeader h;
		h.kind = static_cast<uint16_t>(kind);
		h.bodyLen = static_cast<uint32_t>(body.size() + data.size());
		h.window = id_;
		h.origin = static_cast<uint32_t>(worldOf_[static_cast<std::size_t>(win_.rank())]);
		h.target = worldTarget(target);
		h.seq = link.nextSeq();
		uint8_t head[net::kHeaderBytes];
		net::encodeHeader(h, head);
		/*
		 * A chunk is far over the batch size: it leaves now, read from the
		 * caller's buffer. A small frame (a get's request, or a put as
		 * RMA_NET_BULK_MIN allows) leaves now too if it is our first on
		 * this connection since the last drain, so that a connection that
		 * failed unnoticed (reset while idle by the network or this side)
		 * shows it here, where it can be sent again; later ones batch
		 * until the wait (pushing each of a window of 64 gets' requests
		 * cost a quarter of get_bw at 1 MiB).
		 */
		int rc = link.queue(head, body, data);
		if (rc == RMA_SUCCESS && s.bulkSent[i] == 0)
			rc = link.push();
		if (rc == RMA_SUCCESS) {
			s.bulkSent[i] = h.seq;
			index = i;
			seq = h.seq;
			return RMA_SUCCESS;
		}
		/*
		 * Refused by the socket, so not whole at the server, which applies
		 * whole frames only and drops a part with the connection. With
		 * nothing else of ours pending there (bulkSent: all answered),
		 * nothing of ours is lost: once more on a new connection.
		 */
		if (retried || s.bulkSent[i] != 0 || !link.failed())
			return makeError(errorClass(rc), "%s: target rank %d of window '%s': %s", call, target,
					 win_.name.c_str(), errorMessage(rc).c_str());
	}
}

void RemoteWindow::drainBulk(Stream &s)
{
	const int timeoutMs = net::engine()->config().timeoutMs;
	for (std::size_t i = 0; i < s.bulk.size(); ++i) {
		net::Link *l = s.bulk[i];
		if (!l || s.bulkSent[i] == 0)
			continue;
		int rc = l->error();
		uint64_t seq = 0;
		if (rc == RMA_SUCCESS) {
			/* FLUSH behind the puts: its ACK says the server applied every one of them. */
			net::FrameHeader h;
			h.kind = static_cast<uint16_t>(FrameKind::Flush);
			h.window = id_;
			h.origin = static_cast<uint32_t>(worldOf_[static_cast<std::size_t>(win_.rank())]);
			h.target = static_cast<uint32_t>(s.server);
			h.seq = seq = l->nextSeq();
			uint8_t head[net::kHeaderBytes];
			net::encodeHeader(h, head);
			rc = l->queue(head, {});
			if (rc == RMA_SUCCESS)
				rc = l->push();
		}
		/* As waitAck(): no timeout while bytes keep arriving; silence for RMA_NET_TIMEOUT_MS fails it. */
		Silence silence(*l);
		for (SpinWait wait; rc == RMA_SUCCESS && l->acked() < seq; wait.once()) {
			rc = l->pump();
			if (rc != RMA_SUCCESS || l->acked() >= seq || wait.count() < SpinWait::kSpins || (wait.count() & 0xff))
				continue;
			const int64_t now = nowMs();
			if (silence.ms(now) > timeoutMs) {
				/*
				 * Nothing says what it applied: the connection is given up
				 * (later bulk transfers to that host fail), never taken
				 * for drained.
				 */
				rc = l->abort("did not answer a bulk flush within RMA_NET_TIMEOUT_MS");
			}
		}
		/*
		 * Every reply came before the ACK, and a refused get is forgotten
		 * at its NACK: gets still listed lost their connection (or it
		 * answered out of order). Their requests fail with it.
		 */
		if (!s.bulkGets[i].empty() && rc == RMA_SUCCESS)
			rc = makeError(RMA_ERR_INTERN, "bulk connection %zu to rank %d answered a flush before %zu gets", i,
				       s.server, s.bulkGets[i].size());
		for (const PendingGet &g : s.bulkGets[i])
			failRequest(g, rc);
		s.bulkGets[i].clear();
		s.bulkSent[i] = 0;
		/* A lost connection is also the next call's to report: puts that went on it are lost too. */
		if (rc != RMA_SUCCESS && !s.error)
			s.error = rc;
	}
}

int RemoteWindow::flushStream(const char *call, Stream &s)
{
	drainBulk(s);
	if (s.error) {
		int rc = s.error;
		if ((!s.link || !s.link->failed()) && !s.broken)
			s.error = 0;
		return rc;
	}
	if (!s.link || s.acked >= s.sent)
		return RMA_SUCCESS;
	uint64_t seq = 0;
	RMA_TRY(sendRequest(s, FrameKind::Flush, static_cast<uint32_t>(s.server), {}, seq));
	return waitAck(call, s, seq);
}

int RemoteWindow::transfer(const char *call, const OpShape &shape, int target, rma_aint offset, const std::byte *packed,
			   const Datatype &ttype, int tcount, rma_count bytes, std::byte *dest,
			   const std::shared_ptr<GetStaging> &staging)
{
	auto s = stream(call, target);
	if (!s)
		return s.code();
	Stream &st = *s.value();
	/*
	 * A large put or get goes over the bulk connections (a put's chunks
	 * received there whole where they are applied from, no reassembly
	 * copy; a get's replies come back on the chunk's connection). They are
	 * not ordered with the stream: a lazy LOCK must be granted before (its
	 * server would not park them behind it), and the synchronizations wait
	 * for them (drainBulk()).
	 */
	const net::EngineConfig &nc = net::engine()->config();
	const bool bulk = (shape.kind == FrameKind::Put || shape.kind == FrameKind::Get) && nc.bulkLinks > 0 &&
			  static_cast<uint64_t>(bytes) >= nc.bulkMinBytes;
	if (bulk && st.lockSeq > st.acked)
		RMA_TRY(waitAck(call, st, st.lockSeq, true));
	/* Data per frame: what fits beside the most runs a frame takes, in whole elements. */
	const std::size_t cap =
		bulk ? kBulkChunk
		     : (net::kMaxBody - kFixedOpBody - kRunsPerFrame * net::kWireRunBytes) / shape.elemBytes * shape.elemBytes;
	BlockCursor cursor(ttype, tcount);
	std::vector<uint8_t> body;
	std::vector<net::WireRun> runs;
	rma_count done = 0;
	while (done < bytes && !cursor.done()) {
		runs.clear();
		std::size_t data = 0;
		int64_t hi = INT64_MIN;
		int64_t lo = INT64_MAX;
		while (!cursor.done() && runs.size() < kRunsPerFrame && data < cap &&
		       done + static_cast<rma_count>(data) < bytes) {
			const rma_count room = std::min<rma_count>(static_cast<rma_count>(cap - data),
								   bytes - done - static_cast<rma_count>(data));
			const rma_count len = cursor.left();
			net::WireRun run;
			run.offset = cursor.offset();
			if (len <= room) {
				/* Whole blocks, as many of the current run as fit. */
				rma_aint stride = 0;
				rma_count pieces = std::min<rma_count>(cursor.piecesOf(len, stride), room / len);
				pieces = std::max<rma_count>(pieces, 1);
				run.length = static_cast<uint64_t>(len);
				run.repeat = static_cast<uint64_t>(pieces);
				run.stride = pieces > 1 ? stride : 0;
				cursor.skipPieces(pieces, len);
			} else {
				run.length = static_cast<uint64_t>(room);
				run.repeat = 1;
				cursor.advance(room);
			}
			const int64_t first = run.offset;
			const int64_t last = run.offset + static_cast<int64_t>(run.repeat - 1) * run.stride;
			lo = std::min({ lo, first, last });
			hi = std::max({ hi, first + static_cast<int64_t>(run.length), last + static_cast<int64_t>(run.length) });
			data += static_cast<std::size_t>(run.length * run.repeat);
			runs.push_back(run);
		}
		if (data % shape.elemBytes != 0)
			return makeError(RMA_ERR_NOT_SUPPORTED,
					 "%s: target rank %d of window '%s' is on another host, and the target type splits its "
					 "pair elements into more pieces than a frame carries",
					 call, target, win_.name.c_str());
		/* Offsets relative to the frame's displacement, which is the first byte it touches. */
		const int64_t base = offset + lo;
		net::WireType wt;
		wt.basic = shape.elem;
		wt.nruns = static_cast<uint32_t>(runs.size());
		wt.size = data;
		wt.extent = hi - lo;
		const std::size_t head = kFixedOpBody + runs.size() * net::kWireRunBytes;
		body.resize(head);
		net::OpBody ob;
		ob.disp = static_cast<uint64_t>(base);
		ob.count = 1;
		ob.op = shape.op;
		net::encodeOpBody(ob, body.data());
		net::encodeWireType(wt, body.data() + net::kOpBodyBytes);
		for (std::size_t i = 0; i < runs.size(); ++i) {
			net::WireRun r = runs[i];
			r.offset -= lo;
			net::encodeWireRun(r, body.data() + kFixedOpBody + i * net::kWireRunBytes);
		}
		/* The origin's bytes leave from where they are (queue() copies small frames into its batch). */
		std::span<const uint8_t> payload;
		if (shape.sendsData)
			payload = std::span(reinterpret_cast<const uint8_t *>(packed + done), data);
		uint64_t seq = 0;
		if (bulk) {
			uint32_t i = 0;
			RMA_TRY(sendBulk(call, st, target, shape.kind, body, payload, i, seq));
			if (shape.fetches) {
				st.bulkGets[i].push_back(pendingGet(seq, dest + done, data, staging));
				if (data >= net::Link::kDirectBytes)
					st.bulk[i]->expectLargeReply(seq);
			}
			done += static_cast<rma_count>(data);
			continue;
		}
		RMA_TRY(sendRequest(st, shape.kind, worldTarget(target), body, seq, false, payload));
		if (shape.fetches)
			st.gets.push_back(pendingGet(seq, dest + done, data, staging));
		/* Its reply goes straight into dest (replyDestination()) if the link reads it frame by frame. */
		if (shape.fetches && data >= net::Link::kDirectBytes)
			st.link->expectLargeReply(seq);
		done += static_cast<rma_count>(data);
	}
	return RMA_SUCCESS;
}

/* Where fetched bytes land: the origin's buffer if contiguous, else a staging area unpacked at the end. */
std::byte *RemoteWindow::fetchTarget(void *origin, const Datatype &type, int count, rma_count bytes,
				     std::shared_ptr<GetStaging> &staging)
{
	if (type.isContiguous())
		return static_cast<std::byte *>(origin);
	staging = std::make_shared<GetStaging>();
	staging->packed.resize(static_cast<std::size_t>(bytes));
	staging->origin = origin;
	staging->type = &type;
	staging->keep = nullptr;
	staging->count = count;
	staging->left = static_cast<std::size_t>(bytes);
	return staging->packed.data();
}

int RemoteWindow::put(const char *call, int target, rma_aint offset, const void *origin, const Datatype &otype,
		      int ocount, const Datatype &ttype, int tcount, rma_count bytes)
{
	const auto *src = static_cast<const std::byte *>(origin);
	std::vector<std::byte> packed;
	if (!otype.isContiguous()) {
		packed.resize(static_cast<std::size_t>(bytes));
		copyTyped(packed.data(), *predefinedDatatype(RMA_BYTE), bytes, src, otype, ocount, bytes);
		src = packed.data();
	}
	return transfer(call, OpShape{ FrameKind::Put, 0, kByteElement, 1, true, false }, target, offset, src, ttype, tcount,
			bytes, nullptr, nullptr);
}

int RemoteWindow::get(const char *call, int target, rma_aint offset, void *origin, const Datatype &otype, int ocount,
		      const Datatype &ttype, int tcount, rma_count bytes)
{
	std::shared_ptr<GetStaging> staging;
	std::byte *dest = fetchTarget(origin, otype, ocount, bytes, staging);
	return transfer(call, OpShape{ FrameKind::Get, 0, kByteElement, 1, false, true }, target, offset, nullptr, ttype,
			tcount, bytes, dest, staging);
}

int RemoteWindow::accumulate(const char *call, int target, rma_aint offset, Op op, uint8_t elem, bool fetch,
			     const void *origin, const Datatype *otype, int ocount, void *result, const Datatype *rtype,
			     int rcount, const Datatype &ttype, int tcount, rma_count bytes)
{
	const bool sends = op != Op::NoOp;
	const auto *src = static_cast<const std::byte *>(origin);
	std::vector<std::byte> packed;
	if (sends && !otype->isContiguous()) {
		packed.resize(static_cast<std::size_t>(bytes));
		copyTyped(packed.data(), *predefinedDatatype(RMA_BYTE), bytes, src, *otype, ocount, bytes);
		src = packed.data();
	}
	std::shared_ptr<GetStaging> staging;
	std::byte *dest = fetch ? fetchTarget(result, *rtype, rcount, bytes, staging) : nullptr;
	/* One predefined element to fetch: FETCH_AND_OP's frame (no runs). */
	const FrameKind kind = !fetch ? FrameKind::Acc : FrameKind::GetAcc;
	return transfer(call, OpShape{ kind, static_cast<uint16_t>(op), elem, elemBytes(elem), sends, fetch }, target,
			offset, src, ttype, tcount, bytes, dest, staging);
}

int RemoteWindow::compareAndSwap(const char *call, int target, rma_aint offset, uint8_t elem, const void *origin,
				 const void *compare, void *result)
{
	auto s = stream(call, target);
	if (!s)
		return s.code();
	const uint32_t eb = elemBytes(elem);
	uint8_t body[kFixedOpBody + 16];
	net::OpBody ob;
	ob.disp = static_cast<uint64_t>(offset);
	ob.count = 1;
	net::WireType wt;
	wt.basic = elem;
	wt.size = eb;
	wt.extent = eb;
	net::encodeOpBody(ob, body);
	net::encodeWireType(wt, body + net::kOpBodyBytes);
	std::memcpy(body + kFixedOpBody, origin, eb);
	std::memcpy(body + kFixedOpBody + eb, compare, eb);
	uint64_t seq = 0;
	RMA_TRY(sendRequest(*s.value(), FrameKind::Cas, worldTarget(target),
			    std::span<const uint8_t>(body, kFixedOpBody + 2 * eb), seq));
	s.value()->gets.push_back(pendingGet(seq, static_cast<std::byte *>(result), eb, nullptr));
	return RMA_SUCCESS;
}

int RemoteWindow::flush(const char *call, int target)
{
	int first = RMA_SUCCESS;
	for (auto &s : streams_) {
		if (!s || (target >= 0 && s->server != serverOf_[static_cast<std::size_t>(target)]))
			continue;
		int rc = flushStream(call, *s);
		if (rc != RMA_SUCCESS && first == RMA_SUCCESS)
			first = rc;
	}
	return first;
}

int RemoteWindow::lock(const char *call, int target, bool exclusive)
{
	auto s = stream(call, target);
	if (!s)
		return s.code();
	uint8_t body[8];
	net::le::store<uint32_t>(body, exclusive ? RMA_LOCK_EXCLUSIVE : RMA_LOCK_SHARED);
	net::le::store<uint32_t>(body + 4, 0);
	uint64_t seq = 0;
	Stream &st = *s.value();
	RMA_TRY(sendRequest(st, FrameKind::Lock, worldTarget(target), body, seq));
	/*
	 * Not waited for (MPI allows lock to return before the lock is held):
	 * the epoch's operations follow the LOCK on the stream, and its server
	 * applies nothing behind it before the grant. Lock, operations and
	 * unlock then cost one round trip, not three; a refusal is reported at
	 * the next wait (flush, unlock, a get's completion).
	 */
	st.lockSeq = seq;
	st.link->noteLock(seq); /* other windows' waits on this connection: no timeout while it may be parked */
	st.behindLock = 0;
	return RMA_SUCCESS;
}

Result<RemoteWindow::Stream *> RemoteWindow::releaseStream(const char *call, int target)
{
	/*
	 * A refusal not reported yet (an operation of the epoch, a lazy LOCK)
	 * must not keep a release from leaving: the server would hold the lock
	 * for ever. The release's wait reports it.
	 */
	Stream *st = streams_[hostOf_[static_cast<std::size_t>(target)]].get();
	if (st && st->link && !st->link->failed())
		return st;
	return stream(call, target);
}

int RemoteWindow::unlock(const char *call, int target, bool)
{
	auto s = releaseStream(call, target);
	if (!s)
		return s.code();
	uint64_t seq = 0;
	drainBulk(*s.value());
	/* UNLOCK is applied after everything before it: its ACK is the flush too. */
	RMA_TRY(sendRequest(*s.value(), FrameKind::Unlock, worldTarget(target), {}, seq));
	return waitAck(call, *s.value(), seq);
}

template<typename Fn>
int RemoteWindow::forEachOtherHost(const char *call, Fn &&fn)
{
	for (int t = 0; t < win_.size(); ++t) {
		if (!servesOtherHost(t))
			continue;
		auto s = stream(call, t);
		if (!s)
			return s.code();
		RMA_TRY(fn(*s.value()));
	}
	return RMA_SUCCESS;
}

int RemoteWindow::lockAllOn(const char *call, Stream &s, bool wait, bool &granted)
{
	uint8_t body[8];
	net::le::store<uint32_t>(body, 0);
	net::le::store<uint32_t>(body + 4, wait ? 0 : net::kLockAllTry);
	uint64_t seq = 0;
	granted = false;
	RMA_TRY(sendRequest(s, FrameKind::LockAll, 0, body, seq));
	/* A held lock may take any time to come: no timeout while waiting (a dead host is the fault detector's). */
	const int rc = waitAck(call, s, seq, wait);
	/*
	 * Granted: answered, neither busy nor refused. Even when the wait
	 * reports an earlier request's refusal (a put of a past epoch): the
	 * caller gives a granted part back (lockAll()), never leaks it. Not
	 * answered on a live link (a try that timed out): it may still be
	 * granted, so it counts as held; the UNLOCK_ALL that gives it back
	 * follows it on the stream (refused harmlessly if it was not granted).
	 */
	granted = s.acked >= seq ? s.busy != seq && s.nacked != seq : rc != RMA_SUCCESS && !s.link->failed();
	return rc;
}

int RemoteWindow::lockAll(const char *call)
{
	/*
	 * Every host's part, with no hold-and-wait: wait for one part while
	 * holding nothing (this host's first), then only try the others. A
	 * busy one (an exclusive holder or waiter there) makes us give back
	 * what we hold and wait for that one. Waiting while holding a part
	 * would deadlock with an origin that holds an exclusive lock on one
	 * host and waits for one on a host whose part we hold.
	 */
	std::vector<Stream *> others;
	RMA_TRY(forEachOtherHost(call, [&](Stream &s) {
		others.push_back(&s);
		return RMA_SUCCESS;
	}));
	GrantWatch localWatch;
	std::vector<Stream *> held;
	bool localHeld = false;
	Stream *waitFor = nullptr; /* nullptr: this host */
	auto giveBack = [&] {
		if (localHeld)
			/* Relaxed: nothing was published under the count. */
			win_.globalLocks_->word.fetch_sub(lockword::kLockAll, std::memory_order_relaxed);
		localHeld = false;
		int first = RMA_SUCCESS;
		for (Stream *s : held) {
			uint64_t seq = 0;
			int rc = sendRequest(*s, FrameKind::UnlockAll, 0, {}, seq);
			if (rc == RMA_SUCCESS)
				rc = waitAck(call, *s, seq);
			if (rc != RMA_SUCCESS && first == RMA_SUCCESS)
				first = rc;
		}
		held.clear();
		return first;
	};
	for (;;) {
		bool granted = false;
		int rc = RMA_SUCCESS;
		if (!waitFor) {
			rc = win_.takeLocalLockAll(call, localWatch, true, granted);
			localHeld = rc == RMA_SUCCESS;
		} else {
			rc = lockAllOn(call, *waitFor, true, granted);
			if (granted)
				held.push_back(waitFor);
		}
		if (rc != RMA_SUCCESS) {
			giveBack();
			return rc;
		}
		Stream *busy = nullptr;
		bool localBusy = false;
		if (!localHeld) {
			if (rc = win_.takeLocalLockAll(call, localWatch, false, granted); rc != RMA_SUCCESS) {
				giveBack();
				return rc;
			}
			localHeld = granted;
			localBusy = !granted;
		}
		for (std::size_t i = 0; i < others.size() && !localBusy && !busy; ++i) {
			if (others[i] == waitFor)
				continue;
			if (rc = lockAllOn(call, *others[i], false, granted); rc != RMA_SUCCESS) {
				if (granted)
					held.push_back(others[i]);
				giveBack();
				return rc;
			}
			if (granted)
				held.push_back(others[i]);
			else
				busy = others[i];
		}
		if (!localBusy && !busy)
			return RMA_SUCCESS;
		if (rc = giveBack(); rc != RMA_SUCCESS)
			return rc;
		waitFor = busy;
	}
}

int RemoteWindow::unlockAll(const char *call)
{
	/* Every other host is released even if one fails (forEachOtherHost() would stop at the first). */
	int first = RMA_SUCCESS;
	for (int t = 0; t < win_.size(); ++t) {
		if (!servesOtherHost(t))
			continue;
		auto s = releaseStream(call, t);
		int one = s ? RMA_SUCCESS : s.code();
		uint64_t seq = 0;
		if (one == RMA_SUCCESS)
			drainBulk(*s.value());
		if (one == RMA_SUCCESS)
			one = sendRequest(*s.value(), FrameKind::UnlockAll, 0, {}, seq);
		if (one == RMA_SUCCESS)
			one = waitAck(call, *s.value(), seq);
		if (one != RMA_SUCCESS && first == RMA_SUCCESS)
			first = one;
	}
	return first;
}

int RemoteWindow::fence(const char *call, uint64_t epoch)
{
	/*
	 * Our gets and fetches complete here: their replies first. Puts and
	 * accumulates need no round trip: FENCE travels behind them on each
	 * stream, and the server writes our barrier mirror only once it has
	 * applied everything before it.
	 */
	int first = RMA_SUCCESS;
	for (auto &sp : streams_) {
		if (!sp || !sp->link)
			continue;
		drainBulk(*sp);
		/* A refusal is reported after the FENCEs: the other members wait for ours whatever happened. */
		if (int rc = waitFetches(call, *sp); rc != RMA_SUCCESS && first == RMA_SUCCESS)
			first = rc;
	}
	uint8_t body[8];
	net::le::store<uint64_t>(body, epoch);
	for (int t = 0; t < win_.size(); ++t) {
		if (!servesOtherHost(t))
			continue;
		auto s = releaseStream(call, t);
		int rc = s ? RMA_SUCCESS : s.code();
		uint64_t seq = 0;
		if (rc == RMA_SUCCESS)
			rc = sendRequest(*s.value(), FrameKind::Fence, 0, body, seq);
		if (rc == RMA_SUCCESS) {
			/* Everything sent so far is complete once the others have seen this FENCE. */
			s.value()->acked = std::max(s.value()->acked, seq);
			/* The others wait for it: out now. */
			rc = s.value()->link->push();
		}
		if (rc != RMA_SUCCESS && first == RMA_SUCCESS)
			first = rc;
	}
	for (int t = 0; t < win_.size(); ++t)
		if (hostOf_[static_cast<std::size_t>(t)] != myHost_)
			win_.accApplied_[t] = win_.accIssued_[t];
	return first;
}

int RemoteWindow::waitFetches(const char *call, Stream &s)
{
	if (int rc = s.link->push(); rc != RMA_SUCCESS && !s.error)
		s.error = rc;
	/*
	 * Every get's reply, even past a refusal already recorded (an earlier
	 * operation's): the caller's buffers are free once this returns. A
	 * lost link (pump() fails) or a reply that matched no get (the stream
	 * is broken: its error stays) ends the wait early.
	 */
	for (SpinWait wait; !s.gets.empty() && !s.broken; wait.once()) {
		if (int rc = s.link->pump(); rc != RMA_SUCCESS) {
			if (!s.error)
				s.error = rc;
			break;
		}
	}
	if (s.error) {
		int rc = s.error;
		if (!s.link->failed() && !s.broken)
			s.error = 0;
		return callError(call, rc);
	}
	return RMA_SUCCESS;
}

int RemoteWindow::post(const char *call, const std::vector<int> &origins)
{
	/* One POST per other host, listing its origins (world ranks); its server counts the post for each. */
	std::vector<std::vector<uint32_t>> byHost(streams_.size());
	for (int o : origins)
		byHost[hostOf_[static_cast<std::size_t>(o)]].push_back(worldTarget(o));
	/*
	 * Every host's stream first: a post that reached some hosts and not
	 * others would count there again when the caller retries (their
	 * origins' next start() would pass before this exposure).
	 */
	std::vector<Stream *> to(byHost.size(), nullptr);
	for (std::size_t h = 0; h < byHost.size(); ++h) {
		if (byHost[h].empty())
			continue;
		auto s = stream(call, rankInWindow_[byHost[h][0]]);
		if (!s)
			return s.code();
		to[h] = s.value();
	}
	for (std::size_t h = 0; h < byHost.size(); ++h) {
		if (!to[h])
			continue;
		Stream *s = to[h];
		std::vector<uint8_t> body(8 + 4 * byHost[h].size());
		net::le::store<uint32_t>(body.data(), static_cast<uint32_t>(byHost[h].size()));
		net::le::store<uint32_t>(body.data() + 4, 0);
		for (std::size_t i = 0; i < byHost[h].size(); ++i)
			net::le::store<uint32_t>(body.data() + 8 + 4 * i, byHost[h][i]);
		/* POST names the poster as its target and no origin (frame.h). */
		seqScratch_ = 0;
		RMA_TRY(sendRequest(*s, FrameKind::Post, worldTarget(win_.rank()), body, seqScratch_, true));
		/* The origins wait for it in start(): out now. */
		RMA_TRY(s->link->push());
	}
	return RMA_SUCCESS;
}

int RemoteWindow::complete(const char *call, int target, uint64_t count)
{
	auto s = releaseStream(call, target);
	if (!s)
		return s.code();
	/*
	 * Our gets and fetches from it complete here; puts and accumulates are
	 * applied before COMPLETE. A refusal is reported after COMPLETE has
	 * left: the target's wait needs it whatever happened.
	 */
	drainBulk(*s.value());
	const int refused = waitFetches(call, *s.value());
	uint8_t body[8];
	net::le::store<uint64_t>(body, count);
	uint64_t seq = 0;
	RMA_TRY(sendRequest(*s.value(), FrameKind::Complete, worldTarget(target), body, seq));
	s.value()->acked = std::max(s.value()->acked, seq);
	/* The target waits for it in wait(): out now. */
	RMA_TRY(s.value()->link->push());
	win_.accApplied_[target] = win_.accIssued_[target];
	return refused;
}

uint64_t RemoteWindow::requestSeq(int target)
{
	const std::unique_ptr<Stream> &s = streams_[hostOf_[static_cast<std::size_t>(target)]];
	if (!s)
		return 0;
	/*
	 * A request's completion follows the stream's replies; a large rget
	 * went over the bulk connections instead: it completes here (their
	 * FLUSH comes back after its replies), and a refusal is reported by
	 * the request's wait.
	 */
	if (std::any_of(s->bulkGets.begin(), s->bulkGets.end(), [](const auto &g) { return !g.empty(); }))
		drainBulk(*s);
	return s->sent;
}

bool RemoteWindow::repliesDone(int target, uint64_t seq)
{
	std::unique_ptr<Stream> &s = streams_[hostOf_[static_cast<std::size_t>(target)]];
	if (!s || !s->link)
		return true;
	/* The request must be on its way before anyone waits for its answer. */
	if (int rc = s->link->push(); rc != RMA_SUCCESS && !s->error)
		s->error = rc;
	if (!s->gets.empty() && s->gets.front().seq <= seq && !s->link->failed())
		if (int rc = s->link->pump(); rc != RMA_SUCCESS && !s->error)
			s->error = rc;
	/*
	 * Replies come in order (a refused get is forgotten at its NACK): done
	 * when the oldest one missing is past @seq, or when none can come (the
	 * link failed, or the stream broke). Another operation's refusal does
	 * not end it: that is not this request's.
	 */
	return s->link->failed() || s->broken || s->gets.empty() || s->gets.front().seq > seq;
}

int RemoteWindow::waitReplies(const char *call, int target, uint64_t seq)
{
	std::unique_ptr<Stream> &s = streams_[hostOf_[static_cast<std::size_t>(target)]];
	if (!s || !s->link)
		return RMA_SUCCESS;
	Silence silence(*s->link);
	for (SpinWait wait; !repliesDone(target, seq); wait.once()) {
		if (wait.count() < SpinWait::kSpins || (wait.count() & 0xff) != 0)
			continue;
		if (silentTooLong(*s, silence.ms(nowMs())))
			return callError(call, silentError(*s));
	}
	/*
	 * Complete: a refusal, or the loss of a reply it needed, is the
	 * request's result (requestResult()), which frees it like a success.
	 */
	return RMA_SUCCESS;
}

int RemoteWindow::requestResult(const char *call, int target, uint64_t seq, const RequestFailure *f)
{
	int rc = f ? f->error : 0;
	if (!rc) {
		/* Done because a reply it needs can never come (repliesDone() said so)? */
		const std::unique_ptr<Stream> &s = streams_[hostOf_[static_cast<std::size_t>(target)]];
		if (!s || !s->link || !repliesLost(*s, seq))
			return RMA_SUCCESS;
		rc = lostError(*s);
	}
	return callError(call, rc);
}

void RemoteWindow::requestAbandoned(int target, const RequestFailure &f)
{
	const std::unique_ptr<Stream> &s = streams_[hostOf_[static_cast<std::size_t>(target)]];
	if (f.error && s && !s->error)
		s->error = f.error;
}

int RemoteWindow::silence(const char *call, int target, uint64_t seq)
{
	const std::unique_ptr<Stream> &s = streams_[hostOf_[static_cast<std::size_t>(target)]];
	if (!s || !s->link)
		return RMA_SUCCESS;
	/* Counted from this request's first incomplete test, restarted by every byte that arrives (as Silence). */
	const int64_t now = nowMs();
	if (s->silentSeq != seq || s->link->received() != s->heardBytes) {
		s->silentSeq = seq;
		s->heardMs = now;
		s->heardBytes = s->link->received();
		return RMA_SUCCESS;
	}
	return silentTooLong(*s, now - s->heardMs) ? callError(call, silentError(*s)) : RMA_SUCCESS;
}

bool RemoteWindow::peerLost(int target)
{
	/* Called from the waits' liveness checks: look at the link (reaching it first if need be). */
	/* Not a report: a refusal recorded on the stream stays for the caller's next wait. */
	auto s = stream("liveness check", target, false);
	if (!s)
		return errorClass(s.code()) == RMA_ERR_PROC_FAILED;
	Stream &st = *s.value();
	if (int rc = st.link->pump(); rc != RMA_SUCCESS && !st.error)
		st.error = rc;
	if (st.link->failed())
		return true;
	/* The host answers; is the target itself alive? Its server says (a NACK marks it dead here: onReply). */
	const int64_t now = nowMs();
	if (now - st.probedMs >= kProbeMs && st.acked >= st.probe) {
		uint64_t seq = 0;
		if (sendRequest(st, FrameKind::Flush, worldTarget(target), {}, seq) == RMA_SUCCESS) {
			st.probe = seq;
			st.probedMs = now;
			if (int rc = st.link->push(); rc != RMA_SUCCESS && !st.error)
				st.error = rc;
		}
	}
	return false;
}

void RemoteWindow::onReply(const net::ParsedFrame &f) noexcept
{
	const int t = rankInWindow_[f.header.target];
	if (t < 0)
		return;
	/* Replies to LOCK_ALL/UNLOCK_ALL name the server itself: any rank of its host finds the stream. */
	std::unique_ptr<Stream> &sp = streams_[hostOf_[static_cast<std::size_t>(t)]];
	if (!sp)
		return;
	Stream &s = *sp;
	/* A bulk connection's ACKs are its link's; its NACKs come here (numbered apart: net::Link::bulkOfSeq()). */
	const bool bulk = net::Link::bulkOfSeq(f.header.seq) != 0;
	switch (static_cast<FrameKind>(f.header.kind)) {
	case FrameKind::Ack:
		if (!bulk)
			s.acked = std::max(s.acked, f.header.seq);
		break;
	case FrameKind::Nack: {
		if (!bulk)
			s.acked = std::max(s.acked, f.header.seq);
		/* A LOCK_ALL tried (kLockAllTry) and not granted: an answer, not an error. */
		if (f.word0 == RMA_ERR_PENDING) {
			s.busy = f.header.seq;
			break;
		}
		if (!bulk)
			s.nacked = std::max(s.nacked, f.header.seq);
		/*
		 * The server found a process of its host dead (the target, which
		 * it does not serve, or one blocking a lock): the detail names it.
		 * Record it in this host's job status, so every wait and operation
		 * involving it fails with RMA_ERR_PROC_FAILED from now on.
		 */
		int refusal = 0;
		if (f.word0 == RMA_ERR_PROC_FAILED) {
			const int dead = f.value < rankInWindow_.size() ? static_cast<int>(f.value)
									: static_cast<int>(f.header.target);
			runtime().bootstrap->markDead(dead);
			if (f.header.seq != s.probe) {
				const int inWindow = rankInWindow_[static_cast<std::size_t>(dead)];
				refusal = makeError(RMA_ERR_PROC_FAILED,
						    "target rank %d's host refused request %llu: rank %d of the window "
						    "(world rank %d) has died%s",
						    t, static_cast<unsigned long long>(f.header.seq), inWindow, dead,
						    inWindow != t ? " holding or waiting for a lock that blocks it" : "");
			}
		} else if (f.header.seq != s.probe) {
			refusal = makeError(static_cast<int>(f.word0),
					    "target rank %d's host refused request %llu (error class %s, detail %llu)", t,
					    static_cast<unsigned long long>(f.header.seq), className(static_cast<int>(f.word0)),
					    static_cast<unsigned long long>(f.value));
		}
		/*
		 * A refused GET sends no data: forget it. A request's fetch
		 * (rget, rget_accumulate) is reported by that request's wait or
		 * test, and by nothing else (requestResult()).
		 */
		bool requested = false;
		if (std::deque<PendingGet> *gets = pendingGets(s, f.header.seq))
			while (!gets->empty() && gets->front().seq <= f.header.seq) {
				if (refusal && gets->front().seq == f.header.seq && gets->front().request &&
				    !gets->front().request->abandoned) {
					failRequest(gets->front(), refusal);
					requested = true;
				}
				gets->pop_front();
			}
		/* A refused liveness probe says only that (above); any other refusal is reported at the next call. */
		if (refusal && !requested && !s.error)
			s.error = refusal;
		break;
	}
	case FrameKind::GetReply:
	case FrameKind::AccReply: {
		std::deque<PendingGet> *gets = pendingGets(s, f.header.seq);
		if (!gets || gets->empty() || gets->front().seq != f.header.seq || gets->front().bytes != f.data.size()) {
			/*
			 * Nothing on this stream can be trusted any more: its error is
			 * reported by every later call (replacing a refusal not yet
			 * reported: that is no longer what matters).
			 */
			s.broken = true;
			s.error = makeError(RMA_ERR_INTERN, "a GET_REPLY (seq %llu, %zu bytes) matches no pending get",
						    static_cast<unsigned long long>(f.header.seq), f.data.size());
			break;
		}
		std::memcpy(gets->front().dest, f.data.data(), f.data.size());
		finishGet(*gets);
		break;
	}
	default:
		break;
	}
}

RemoteWindow::Stream *RemoteWindow::replyStream(const net::FrameHeader &h) noexcept
{
	const int t = rankInWindow_[h.target];
	if (t < 0)
		return nullptr;
	return streams_[hostOf_[static_cast<std::size_t>(t)]].get();
}

void RemoteWindow::failRequest(const PendingGet &g, int error) noexcept
{
	if (g.request && !g.request->error)
		g.request->error = error;
}

void RemoteWindow::finishGet(std::deque<PendingGet> &gets) noexcept
{
	PendingGet g = std::move(gets.front());
	gets.pop_front();
	if (g.staging) {
		g.staging->left -= g.bytes;
		if (g.staging->left == 0)
			copyTyped(static_cast<std::byte *>(g.staging->origin), *g.staging->type, g.staging->count,
				  g.staging->packed.data(), *predefinedDatatype(RMA_BYTE),
				  static_cast<rma_count>(g.staging->packed.size()),
				  static_cast<rma_count>(g.staging->packed.size()));
	}
}

uint8_t *RemoteWindow::replyDestination(const net::FrameHeader &h) noexcept
{
	/* Exactly the reply onReply() would take next: the oldest get's sequence number and length. */
	Stream *s = replyStream(h);
	std::deque<PendingGet> *gets = s ? pendingGets(*s, h.seq) : nullptr;
	if (!gets || gets->empty() || gets->front().seq != h.seq || gets->front().bytes != h.bodyLen)
		return nullptr;
	return reinterpret_cast<uint8_t *>(gets->front().dest);
}

void RemoteWindow::onReplyPlaced(const net::FrameHeader &h) noexcept
{
	/* The link asked replyDestination() right before the last read, and nothing else ran since. */
	Stream *s = replyStream(h);
	if (std::deque<PendingGet> *gets = s ? pendingGets(*s, h.seq) : nullptr;
	    gets && !gets->empty() && gets->front().seq == h.seq)
		finishGet(*gets);
}

/* ---- Server side ---------------------------------------------------------------- */

namespace {

/* Each block [offset, offset + length) of a validated frame's runs, relative to its displacement. */
template<typename Fn>
void forEachRun(const net::ParsedFrame &f, Fn &&fn)
{
	const int64_t disp = static_cast<int64_t>(f.op.disp);
	if (f.type.nruns == 0) {
		for (uint64_t c = 0; c < f.op.count; ++c)
			fn(disp + static_cast<int64_t>(c) * f.type.extent, f.type.size);
		return;
	}
	for (uint64_t c = 0; c < f.op.count; ++c) {
		const int64_t start = disp + static_cast<int64_t>(c) * f.type.extent;
		for (uint32_t j = 0; j < f.type.nruns; ++j) {
			net::WireRun r = net::decodeWireRun(f.runs.data() + std::size_t{ j } * net::kWireRunBytes);
			for (uint64_t i = 0; i < r.repeat; ++i)
				fn(start + r.offset + static_cast<int64_t>(i) * r.stride, r.length);
		}
	}
}

} /* namespace */

bool RemoteWindow::tryLock(int target, int origin, bool exclusive)
{
	std::atomic<uint64_t> &word = win_.slots_[target].lock;
	std::atomic<uint32_t> &grants = win_.slots_[target].grants;
	if (!exclusive) {
		GrantWatch &watch = held_[static_cast<std::size_t>(origin)].watch;
		uint64_t v = word.load(std::memory_order_relaxed);
		/*
		 * As Window::acquireLock(): no new shared holder while an
		 * exclusive locker waits, until one has been granted (one try
		 * per pass). Acquire on success.
		 */
		while ((v & lockword::kHolderMask) == 0) {
			if (win_.slots_[target].waiters.load(std::memory_order_relaxed) != 0 &&
			    watch.yieldTo(grants.load(std::memory_order_relaxed)))
				return false;
			if (word.compare_exchange_weak(v, v + lockword::kShared, std::memory_order_acquire,
						       std::memory_order_relaxed)) {
				watch = GrantWatch();
				return true;
			}
		}
		return false;
	}
	/* The remote origin is the holder: its window rank + 1 (no process of this host has it). */
	const uint64_t holder = static_cast<uint64_t>(origin + 1) << lockword::kHolderShift;
	uint64_t v = 0;
	/* seq_cst: the Dekker pair with lock_all, as in Window::acquireLock(). */
	if (!word.compare_exchange_strong(v, holder, std::memory_order_seq_cst, std::memory_order_relaxed))
		return false;
	if ((win_.globalLocks_->word.load(std::memory_order_seq_cst) & lockword::kLockAllMask) == 0) {
		noteExclusiveGrant(grants);
		return true;
	}
	word.store(0, std::memory_order_release);
	return false;
}

void RemoteWindow::releaseLock(int target, bool exclusive)
{
	std::atomic<uint64_t> &word = win_.slots_[target].lock;
	/* Release: the remote holder's puts (applied by this thread) before the next holder's acquire. */
	if (exclusive)
		word.store(0, std::memory_order_release);
	else
		word.fetch_sub(lockword::kShared, std::memory_order_release);
}

void RemoteWindow::noteShared(int origin, int target)
{
	std::vector<HeldLocks::Shared> &shared = held_[static_cast<std::size_t>(origin)].shared;
	for (HeldLocks::Shared &s : shared) {
		if (s.target == target) {
			++s.count;
			return;
		}
	}
	shared.push_back(HeldLocks::Shared{ target, 1 });
}

bool RemoteWindow::forgetShared(int origin, int target)
{
	std::vector<HeldLocks::Shared> &shared = held_[static_cast<std::size_t>(origin)].shared;
	for (auto it = shared.begin(); it != shared.end(); ++it) {
		if (it->target != target)
			continue;
		if (--it->count == 0)
			shared.erase(it);
		return true;
	}
	return false;
}

void RemoteWindow::onOriginLost(uint32_t rank) noexcept
{
	const int o = rank < rankInWindow_.size() ? rankInWindow_[rank] : -1;
	if (o < 0)
		return;
	/*
	 * Its requests still parked died with its connection (the engine drops
	 * them before calling us), so nothing below is granted to it again.
	 * What it was granted is released whether or not the grant's ACK ever
	 * reached it: the bookkeeping is made when the grant is.
	 */
	const uint64_t holder = static_cast<uint64_t>(o + 1) << lockword::kHolderShift;
	for (int t = 0; t < win_.size(); ++t) {
		if (hostOf_[static_cast<std::size_t>(t)] != myHost_)
			continue;
		std::atomic<uint64_t> &word = win_.slots_[t].lock;
		uint64_t v = holder;
		/* Release: as an unlock would (the dead holder's applied puts come before the next holder). */
		word.compare_exchange_strong(v, 0, std::memory_order_release, std::memory_order_relaxed);
	}
	HeldLocks &held = held_[static_cast<std::size_t>(o)];
	while (!held.waitingExclusive.empty())
		noteExclusiveWait(o, held.waitingExclusive.back(), false);
	for (const HeldLocks::Shared &s : held.shared)
		/*
		 * Release, as s.count unlocks would (releaseLock()): pairs with the
		 * acquiring CAS of the next exclusive holder; publishes the lost
		 * origin's puts that this thread applied under the lock.
		 */
		win_.slots_[s.target].lock.fetch_sub(s.count * lockword::kShared, std::memory_order_release);
	held.shared.clear();
	if (held.lockAll != 0)
		/*
		 * Release, as its UNLOCK_ALLs would: pairs with the seq_cst load
		 * of the global word in tryLock() and Window::acquireLock() of the
		 * next exclusive locker; publishes the puts applied under it.
		 */
		win_.globalLocks_->word.fetch_sub(held.lockAll * lockword::kLockAll, std::memory_order_release);
	held.lockAll = 0;
	held.watch = GrantWatch();
	held.refused.clear();
}

void RemoteWindow::noteExclusiveWait(int origin, int target, bool waiting)
{
	std::vector<int32_t> &list = held_[static_cast<std::size_t>(origin)].waitingExclusive;
	auto it = std::find(list.begin(), list.end(), target);
	if ((it != list.end()) == waiting)
		return;
	if (waiting)
		list.push_back(target);
	else
		list.erase(it);
	/*
	 * Relaxed, as Window::acquireLock() counts its local waiters: hints
	 * that hold shared lockers and lock_all callers back (for their
	 * patience); exclusion itself is the lock word's CAS.
	 */
	const uint64_t n = waiting ? 1 : uint64_t(-1);
	win_.slots_[target].waiters.fetch_add(n, std::memory_order_relaxed);
	win_.globalLocks_->word.fetch_add(n * lockword::kExclusive, std::memory_order_relaxed);
}

bool RemoteWindow::tryLockAll(HeldLocks &held)
{
	std::atomic<uint64_t> &global = win_.globalLocks_->word;
	uint64_t v = global.load(std::memory_order_relaxed);
	/*
	 * As Window::takeLockAll(): exclusive lockers waiting have preference,
	 * phase-fair; seq_cst for the Dekker pair.
	 */
	if ((v & ~lockword::kLockAllMask) != 0 && held.watch.yieldTo(win_.grantsOnThisHost()))
		return false;
	if (!global.compare_exchange_strong(v, v + lockword::kLockAll, std::memory_order_seq_cst, std::memory_order_relaxed))
		return false;
	for (int t = 0; t < win_.size(); ++t) {
		if (hostOf_[static_cast<std::size_t>(t)] != myHost_)
			continue;
		if (win_.slots_[t].lock.load(std::memory_order_seq_cst) & lockword::kHolderMask) {
			/* Step back, as Window::takeLockAll() does. */
			global.fetch_sub(lockword::kLockAll, std::memory_order_relaxed);
			return false;
		}
	}
	held.watch = GrantWatch();
	return true;
}

int RemoteWindow::deadLocalBlocker(bool exclusive)
{
	/* Every kServerCheckMs while a request is parked: peerDead() costs a kill(2) per rank. */
	const int64_t now = nowMs();
	if (now < parkedCheckDueMs_)
		return -1;
	parkedCheckDueMs_ = now + kServerCheckMs;
	return win_.deadLockHolder(exclusive ? Window::kBlockedByAny : Window::kBlockedByExclusive, true);
}

void RemoteWindow::refuseDead(net::Replier &reply, int dead)
{
	const int world = worldOf_[static_cast<std::size_t>(dead)];
	runtime().bootstrap->markDead(world);
	/* The detail names the dead process (onReply() marks it dead at the origin too). */
	reply.nack(RMA_ERR_PROC_FAILED, static_cast<uint64_t>(world));
}

bool RemoteWindow::onRequest(const net::ParsedFrame &f, net::Replier &reply) noexcept
{
	const int t = f.targetWindowRank;
	const int origin = rankInWindow_[f.header.origin];
	const auto kind = static_cast<FrameKind>(f.header.kind);
	/*
	 * A member of this host that died is not served: its memory may live
	 * on (mapped here), but MPI's answer is RMA_ERR_PROC_FAILED, and the
	 * origin learns of the death from it. Nothing watches the host's
	 * ranks between collectives, so this server looks: an operation checks
	 * its target when the job status counts a death (one load) and at most
	 * every kServerCheckMs otherwise (a clock read per frame, a kill(2)
	 * per period); a FLUSH naming another rank than this server is a
	 * liveness probe (peerLost()), rare enough to look every time. A death
	 * found is recorded in the host's job status, for its ranks' waits.
	 */
	const bool touches = kind == FrameKind::Put || kind == FrameKind::Get || kind == FrameKind::Acc ||
			     kind == FrameKind::GetAcc || kind == FrameKind::Fop || kind == FrameKind::Cas ||
			     kind == FrameKind::Lock;
	if (t >= 0 && t != win_.rank() && (touches || kind == FrameKind::Flush)) {
		bool look = kind == FrameKind::Flush || win_.anyDead();
		if (!look) {
			const int64_t now = nowMs();
			look = now >= serverCheckDueMs_;
			if (look)
				serverCheckDueMs_ = now + kServerCheckMs;
		}
		if (look && win_.peerDead(t)) [[unlikely]] {
			runtime().bootstrap->markDead(static_cast<int>(f.header.target));
			if (kind == FrameKind::Lock && origin >= 0) {
				/* A parked LOCK refused: it waits no more. */
				noteExclusiveWait(origin, t, false);
				held_[static_cast<std::size_t>(origin)].watch = GrantWatch();
			}
			reply.nack(RMA_ERR_PROC_FAILED, static_cast<uint64_t>(f.header.target));
			return true;
		}
	}
	if (origin >= 0 && (touches || kind == FrameKind::Unlock)) [[likely]] {
		std::vector<HeldLocks::Refused> &refused = held_[static_cast<std::size_t>(origin)].refused;
		if (!refused.empty()) [[unlikely]] {
			/* The origin's lock on t was refused: its epoch's operations are too, and UNLOCK ends that. */
			auto it = std::find_if(refused.begin(), refused.end(),
					       [t](const HeldLocks::Refused &r) { return r.target == t; });
			if (it != refused.end()) {
				const uint32_t dead = it->dead;
				if (kind == FrameKind::Unlock || kind == FrameKind::Lock)
					refused.erase(it);
				if (kind != FrameKind::Lock) {
					reply.nack(RMA_ERR_PROC_FAILED, dead);
					return true;
				}
			}
		}
	}
	switch (kind) {
	case FrameKind::Put:
	case FrameKind::Get: {
		const bool put = f.header.kind == static_cast<uint16_t>(FrameKind::Put);
		/*
		 * Where [disp + run offsets] is: Direct memory mapped here (base),
		 * or another process's (remoteBase, by cross-memory attach). A
		 * dynamic window's disp is an address: check it against the
		 * attached regions first (the view only bounded it by the address
		 * space), never mapping anything from this thread.
		 */
		TargetView tv = win_.targets_[t];
		uintptr_t bias = tv.reach == Reach::Direct ? reinterpret_cast<uintptr_t>(tv.base) : tv.remoteBase;
		/* Announced before the lookup, withdrawn after the copy: the owner's detach waits for it (control.h). */
		RemoteAccess access(tv.reach == Reach::Dynamic ? &win_.attach_[t] : nullptr);
		if (tv.reach == Reach::Dynamic) {
			TargetView v;
			const Footprint fp{ 0, f.footprint.hi - f.footprint.lo };
			if (int rc = win_.resolveDynamic(put ? "another host's put" : "another host's get", t, f.footprint.lo,
							 fp, v, false);
			    rc != RMA_SUCCESS) {
				reply.nack(errorClass(rc), errorClass(rc) == RMA_ERR_PROC_FAILED
								   ? f.header.target
								   : static_cast<uint64_t>(f.footprint.lo));
				return true;
			}
			tv.reach = v.reach;
			bias = 0; /* addresses: our own (Direct) or the target process's */
		}
		if (tv.reach == Reach::Direct) {
			if (put) {
				const uint8_t *src = f.data.data();
				forEachRun(f, [&](int64_t at, uint64_t len) {
					std::memcpy(reinterpret_cast<void *>(bias + static_cast<uintptr_t>(at)), src, len);
					src += len;
				});
				/* Release: the data before whatever this thread publishes next (an unlock, an ACK). */
				std::atomic_thread_fence(std::memory_order_release);
			} else if (uint8_t *dst = reply.dataInPlace(FrameKind::GetReply, f.type.size * f.op.count, true)) {
				/* Straight from the window into the send queue. */
				forEachRun(f, [&](int64_t at, uint64_t len) {
					std::memcpy(dst, reinterpret_cast<const void *>(bias + static_cast<uintptr_t>(at)), len);
					dst += len;
				});
			}
		} else if (tv.reach == Reach::Process) {
			/* Plain memory of a member process (rma_win_create, dynamic regions): cross-memory attach. */
			std::vector<uint8_t> out(put ? 0 : f.type.size * f.op.count);
			const uint8_t *src = f.data.data();
			uint8_t *dst = out.data();
			int err = 0;
			forEachRun(f, [&](int64_t at, uint64_t len) {
				iovec local{ put ? const_cast<uint8_t *>(src) : dst, len };
				iovec far{ reinterpret_cast<void *>(bias + static_cast<uint64_t>(at)), len };
				ssize_t n = put ? process_vm_writev(tv.pid, &local, 1, &far, 1, 0)
						: process_vm_readv(tv.pid, &local, 1, &far, 1, 0);
				if (n != static_cast<ssize_t>(len) && !err)
					err = n < 0 ? errno : EIO;
				if (put)
					src += len;
				else
					dst += len;
			});
			if (err) {
				/* A PROC_FAILED NACK's detail names the dead process (onReply()). */
				reply.nack(err == ESRCH ? RMA_ERR_PROC_FAILED : RMA_ERR_INTERN,
					   err == ESRCH ? f.header.target : static_cast<uint64_t>(err));
				return true;
			}
			if (!put)
				reply.data(FrameKind::GetReply, out, true);
		} else {
			reply.nack(RMA_ERR_RMA_RANGE, 0);
		}
		return true;
	}
	case FrameKind::Acc:
	case FrameKind::GetAcc:
	case FrameKind::Fop:
	case FrameKind::Cas: {
		const bool fetch = kind != FrameKind::Acc;
		const bool cas = kind == FrameKind::Cas;
		const auto elem = static_cast<uint8_t>(f.type.basic);
		const Op op = cas ? Op::Replace : static_cast<Op>(f.op.op);
		/* The type as flat runs, the shape the consumer's cursor walks. */
		std::vector<TypeNode> nodes;
		if (f.type.nruns == 0) {
			nodes.push_back(TypeNode{ 0, 0, 1, static_cast<rma_count>(f.type.size), 0, 0 });
		} else {
			for (uint32_t j = 0; j < f.type.nruns; ++j) {
				net::WireRun r = net::decodeWireRun(f.runs.data() + std::size_t{ j } * net::kWireRunBytes);
				nodes.push_back(TypeNode{ r.offset, r.repeat > 1 ? r.stride : 0, static_cast<rma_count>(r.repeat),
							  static_cast<rma_count>(r.length), 0, 0 });
			}
		}
		const uint64_t bytes = f.type.size * f.op.count;
		std::vector<uint8_t> old(fetch ? bytes : 0);
		bool busy = false;
		int rc = win_.applyRemote(t, origin, cas, op, elem, nodes.data(), nodes.size(), f.type.extent,
					  static_cast<rma_count>(f.op.count), static_cast<rma_aint>(f.op.disp),
					  reinterpret_cast<const std::byte *>(f.data.data()),
					  fetch ? reinterpret_cast<std::byte *>(old.data()) : nullptr, bytes, busy);
		if (busy)
			return false; /* the target's consumer role or apply lock is taken: parked, retried */
		if (rc != RMA_SUCCESS)
			reply.nack(errorClass(rc), errorClass(rc) == RMA_ERR_PROC_FAILED ? f.header.target : 0);
		else if (fetch)
			reply.data(FrameKind::AccReply, old, true);
		return true;
	}
	case FrameKind::Flush:
		reply.ack();
		return true;
	case FrameKind::Post: {
		/* Poster t (another host) exposes to the listed origins here: count a post for each, as t's post() would. */
		const int poster = rankInWindow_[f.header.target];
		for (uint32_t i = 0; i < f.word0; ++i) {
			const int o = rankInWindow_[net::le::load<uint32_t>(f.data.data() + 4 * i)];
			/* Release: pairs with the acquire in origin o's start(). */
			std::atomic_ref<uint32_t>(win_.postedRow(o)[poster]).fetch_add(1, std::memory_order_release);
		}
		return true;
	}
	case FrameKind::Complete: {
		/* Origin o's completes to target t so far (applied after everything o sent before). */
		std::atomic_ref<uint32_t> counter(win_.completedRow(t)[origin]);
		if (static_cast<int32_t>(static_cast<uint32_t>(f.value) - counter.load(std::memory_order_relaxed)) > 0)
			/* Release: pairs with the acquire in target t's wait()/test(). */
			counter.store(static_cast<uint32_t>(f.value), std::memory_order_release);
		return true;
	}
	case FrameKind::Fence: {
		/* The origin's barrier word, mirrored on this host: everything it sent before is applied. */
		std::atomic<uint64_t> &mirror = win_.slots_[origin].barrier;
		if (mirror.load(std::memory_order_relaxed) < f.value)
			/* Release: pairs with the acquire in Window::barrier() of this host's members. */
			mirror.store(f.value, std::memory_order_release);
		return true;
	}
	case FrameKind::Lock: {
		const bool exclusive = f.word0 == RMA_LOCK_EXCLUSIVE;
		HeldLocks &held = held_[static_cast<std::size_t>(origin)];
		/*
		 * An exclusive LOCK's first try does not barge past exclusive
		 * lockers already waiting (relaxed: a hint), as the local fast
		 * path defers to them: it waits among them.
		 */
		const bool barging = exclusive &&
				     std::find(held.waitingExclusive.begin(), held.waitingExclusive.end(), t) ==
					     held.waitingExclusive.end() &&
				     win_.slots_[t].waiters.load(std::memory_order_relaxed) != 0;
		if (barging || !tryLock(t, origin, exclusive)) {
			if (int dead = deadLocalBlocker(exclusive); dead >= 0) [[unlikely]] {
				noteExclusiveWait(origin, t, false);
				held.watch = GrantWatch();
				/* Its operations behind the LOCK are refused too, until its UNLOCK. */
				held.refused.push_back({ t, static_cast<uint32_t>(worldOf_[static_cast<std::size_t>(dead)]) });
				refuseDead(reply, dead);
				return true;
			}
			if (exclusive)
				noteExclusiveWait(origin, t, true);
			return false;
		}
		if (exclusive)
			noteExclusiveWait(origin, t, false);
		/* Noted at the grant, before the ACK leaves: a lost origin gives it back, ACK seen or not. */
		if (!exclusive)
			noteShared(origin, t);
		reply.ack();
		return true;
	}
	case FrameKind::Unlock: {
		/* Relaxed: only this thread writes a remote origin's holder id into the word. */
		const uint64_t v = win_.slots_[t].lock.load(std::memory_order_relaxed);
		const uint64_t holder = static_cast<uint64_t>(origin + 1) << lockword::kHolderShift;
		if ((v & lockword::kHolderMask) == holder) {
			releaseLock(t, true);
		} else if (forgetShared(origin, t)) {
			releaseLock(t, false);
		} else {
			/* Nothing granted here: leave the word alone (it would free another's lock). */
			reply.nack(RMA_ERR_RMA_SYNC, static_cast<uint64_t>(t));
			return true;
		}
		reply.ack();
		return true;
	}
	case FrameKind::LockAll: {
		HeldLocks &held = held_[static_cast<std::size_t>(origin)];
		if (!tryLockAll(held)) {
			/* Tried: the origin holds another host's part and must not wait here (lockAll()). */
			if (f.word1 & net::kLockAllTry) {
				reply.nack(RMA_ERR_PENDING, 0);
				return true;
			}
			if (int dead = deadLocalBlocker(false); dead >= 0) [[unlikely]] {
				held.watch = GrantWatch();
				refuseDead(reply, dead);
				return true;
			}
			return false;
		}
		++held.lockAll;
		reply.ack();
		return true;
	}
	case FrameKind::UnlockAll: {
		uint32_t &lockAll = held_[static_cast<std::size_t>(origin)].lockAll;
		if (lockAll == 0) {
			/* Not granted here (a lock_all that failed on another host unlocks every host). */
			reply.nack(RMA_ERR_RMA_SYNC, 0);
			return true;
		}
		--lockAll;
		/* Release: pairs with the seq_cst load of the global word by the next exclusive locker of this host. */
		win_.globalLocks_->word.fetch_sub(lockword::kLockAll, std::memory_order_release);
		reply.ack();
		return true;
	}
	default:
		/* ATTACH_QUERY: unused (the server checks a dynamic target's addresses itself, remote.h). */
		reply.nack(RMA_ERR_NOT_SUPPORTED, f.header.kind);
		return true;
	}
}

} /* namespace librma */

#endif /* RMA_HAVE_NET */
