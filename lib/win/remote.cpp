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

} /* namespace */

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
	for (int i = 0; i < n; ++i)
		r->views_[static_cast<std::size_t>(i)].size = static_cast<uint64_t>(std::max<rma_aint>(win.targets_[i].size, 0));
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

Result<RemoteWindow::Stream *> RemoteWindow::stream(const char *call, int target)
{
	const uint32_t host = hostOf_[static_cast<std::size_t>(target)];
	std::unique_ptr<Stream> &s = streams_[host];
	if (!s) {
		s = std::make_unique<Stream>();
		s->server = serverOf_[static_cast<std::size_t>(target)];
	}
	if (s->error)
		return Result<Stream *>::failure(s->error);
	if (!s->link) {
		auto link = net::engine()->link(s->server);
		if (!link)
			return Result<Stream *>::failure(makeError(link.code(), "%s: target rank %d of window '%s': %s", call,
								   target, win_.name.c_str(), errorMessage(link.code()).c_str()));
		s->link = link.value();
	}
	return s.get();
}

int RemoteWindow::sendRequest(Stream &s, FrameKind kind, uint32_t targetWorld, std::span<const uint8_t> body,
			      uint64_t &seq)
{
	seq = s.link->nextSeq();
	net::FrameHeader h;
	h.kind = static_cast<uint16_t>(kind);
	h.bodyLen = static_cast<uint32_t>(body.size());
	h.window = id_;
	h.origin = static_cast<uint32_t>(worldOf_[static_cast<std::size_t>(win_.rank())]);
	h.target = targetWorld;
	h.seq = seq;
	uint8_t head[net::kHeaderBytes];
	net::encodeHeader(h, head);
	frame_.assign(head, head + sizeof(head));
	frame_.insert(frame_.end(), body.begin(), body.end());
	s.sent = seq;
	if (int rc = s.link->send(frame_); rc != RMA_SUCCESS) {
		s.error = rc;
		return rc;
	}
	return RMA_SUCCESS;
}

int RemoteWindow::waitAck(const char *call, Stream &s, uint64_t seq, bool noTimeout)
{
	const int timeoutMs = net::engine()->config().timeoutMs;
	int64_t start = 0;
	for (SpinWait wait; s.acked < seq && !s.error; wait.once()) {
		if (int rc = s.link->pump(); rc != RMA_SUCCESS && !s.error)
			s.error = rc;
		if (s.acked >= seq || s.error)
			break;
		if (wait.count() < SpinWait::kSpins || (wait.count() & 0xff) != 0)
			continue;
		const int64_t now = nowMs();
		if (!start)
			start = now;
		else if (!noTimeout && now - start > timeoutMs)
			s.error = makeError(RMA_ERR_PROC_FAILED,
					    "%s: window '%s': rank %d's host did not answer within %d ms (RMA_NET_TIMEOUT_MS)",
					    call, win_.name.c_str(), s.server, timeoutMs);
	}
	if (s.error) {
		int rc = s.error;
		/* A refusal is reported once; a lost link stays lost. */
		if (!s.link || !s.link->failed())
			s.error = 0;
		return makeError(rc, "%s: window '%s': %s", call, win_.name.c_str(), errorMessage(rc).c_str());
	}
	return RMA_SUCCESS;
}

int RemoteWindow::flushStream(const char *call, Stream &s)
{
	if (s.error) {
		int rc = s.error;
		if (!s.link || !s.link->failed())
			s.error = 0;
		return rc;
	}
	if (!s.link || s.acked >= s.sent)
		return RMA_SUCCESS;
	uint64_t seq = 0;
	RMA_TRY(sendRequest(s, FrameKind::Flush, static_cast<uint32_t>(s.server), {}, seq));
	return waitAck(call, s, seq);
}

int RemoteWindow::transfer(const char *call, bool put, int target, rma_aint offset, const std::byte *packed,
			   const Datatype &ttype, int tcount, rma_count bytes, std::byte *getDest,
			   const std::shared_ptr<GetStaging> &staging)
{
	auto s = stream(call, target);
	if (!s)
		return s.code();
	Stream &st = *s.value();
	BlockCursor cursor(ttype, tcount);
	std::vector<uint8_t> body;
	std::vector<net::WireRun> runs;
	rma_count done = 0;
	while (done < bytes && !cursor.done()) {
		runs.clear();
		std::size_t data = 0;
		int64_t hi = 0;
		int64_t lo = INT64_MAX;
		while (!cursor.done() && runs.size() < kRunsPerFrame && done + static_cast<rma_count>(data) < bytes) {
			const std::size_t budget = net::kMaxBody - kFixedOpBody - (runs.size() + 1) * net::kWireRunBytes;
			if (data >= budget)
				break;
			const std::size_t room = budget - data;
			const rma_count len = std::min<rma_count>(cursor.left(), bytes - done - static_cast<rma_count>(data));
			net::WireRun run;
			run.offset = cursor.offset();
			if (static_cast<std::size_t>(len) <= room && len == cursor.left()) {
				rma_aint stride = 0;
				rma_count pieces = cursor.piecesOf(len, stride);
				pieces = std::min<rma_count>(pieces, static_cast<rma_count>(room / static_cast<std::size_t>(len)));
				pieces = std::min<rma_count>(pieces, (bytes - done - static_cast<rma_count>(data)) / len);
				pieces = std::max<rma_count>(pieces, 1);
				run.length = static_cast<uint64_t>(len);
				run.repeat = static_cast<uint64_t>(pieces);
				run.stride = pieces > 1 ? stride : 0;
				cursor.skipPieces(pieces, len);
			} else {
				const rma_count take = std::min<rma_count>(len, static_cast<rma_count>(room));
				run.length = static_cast<uint64_t>(take);
				run.repeat = 1;
				cursor.advance(take);
			}
			const int64_t first = run.offset;
			const int64_t last = run.offset + static_cast<int64_t>(run.repeat - 1) * run.stride;
			lo = std::min({ lo, first, last });
			hi = std::max({ hi, first + static_cast<int64_t>(run.length), last + static_cast<int64_t>(run.length) });
			data += static_cast<std::size_t>(run.length * run.repeat);
			runs.push_back(run);
		}
		/* Offsets relative to the frame's displacement, which is the first byte it touches. */
		const int64_t base = offset + lo;
		net::WireType wt;
		wt.basic = kByteElement;
		wt.nruns = static_cast<uint32_t>(runs.size());
		wt.size = data;
		wt.extent = hi - lo;
		body.resize(kFixedOpBody + runs.size() * net::kWireRunBytes + (put ? data : 0));
		net::OpBody ob;
		ob.disp = static_cast<uint64_t>(base);
		ob.count = 1;
		net::encodeOpBody(ob, body.data());
		net::encodeWireType(wt, body.data() + net::kOpBodyBytes);
		for (std::size_t i = 0; i < runs.size(); ++i) {
			net::WireRun r = runs[i];
			r.offset -= lo;
			net::encodeWireRun(r, body.data() + kFixedOpBody + i * net::kWireRunBytes);
		}
		if (put)
			std::memcpy(body.data() + kFixedOpBody + runs.size() * net::kWireRunBytes, packed + done, data);
		uint64_t seq = 0;
		RMA_TRY(sendRequest(st, put ? FrameKind::Put : FrameKind::Get, worldTarget(target), body, seq));
		if (!put)
			st.gets.push_back(PendingGet{ seq, getDest + done, data, staging });
		done += static_cast<rma_count>(data);
	}
	return RMA_SUCCESS;
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
	return transfer(call, true, target, offset, src, ttype, tcount, bytes, nullptr, nullptr);
}

int RemoteWindow::get(const char *call, int target, rma_aint offset, void *origin, const Datatype &otype, int ocount,
		      const Datatype &ttype, int tcount, rma_count bytes)
{
	std::shared_ptr<GetStaging> staging;
	std::byte *dest = static_cast<std::byte *>(origin);
	if (!otype.isContiguous()) {
		staging = std::make_shared<GetStaging>();
		staging->packed.resize(static_cast<std::size_t>(bytes));
		staging->origin = origin;
		staging->type = &otype;
		staging->count = ocount;
		staging->left = static_cast<std::size_t>(bytes);
		dest = staging->packed.data();
	}
	return transfer(call, false, target, offset, nullptr, ttype, tcount, bytes, dest, staging);
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
	RMA_TRY(sendRequest(*s.value(), FrameKind::Lock, worldTarget(target), body, seq));
	/* A held lock may take any time to come: no timeout (a dead host is the fault detector's). */
	return waitAck(call, *s.value(), seq, true);
}

int RemoteWindow::unlock(const char *call, int target, bool)
{
	auto s = stream(call, target);
	if (!s)
		return s.code();
	uint64_t seq = 0;
	/* UNLOCK is applied after everything before it: its ACK is the flush too. */
	RMA_TRY(sendRequest(*s.value(), FrameKind::Unlock, worldTarget(target), {}, seq));
	return waitAck(call, *s.value(), seq);
}

int RemoteWindow::lockAll(const char *call)
{
	/* Every other host's server, one after the other (a lock_all epoch is shared: no order to keep). */
	for (int t = 0; t < win_.size(); ++t) {
		const uint32_t h = hostOf_[static_cast<std::size_t>(t)];
		if (h == myHost_ || serverOf_[static_cast<std::size_t>(t)] != worldOf_[static_cast<std::size_t>(t)])
			continue;
		auto s = stream(call, t);
		if (!s)
			return s.code();
		uint8_t body[8] = {};
		uint64_t seq = 0;
		RMA_TRY(sendRequest(*s.value(), FrameKind::LockAll, 0, body, seq));
		RMA_TRY(waitAck(call, *s.value(), seq, true));
	}
	return RMA_SUCCESS;
}

int RemoteWindow::unlockAll(const char *call)
{
	int first = RMA_SUCCESS;
	for (int t = 0; t < win_.size(); ++t) {
		const uint32_t h = hostOf_[static_cast<std::size_t>(t)];
		if (h == myHost_ || serverOf_[static_cast<std::size_t>(t)] != worldOf_[static_cast<std::size_t>(t)])
			continue;
		auto s = stream(call, t);
		if (!s)
			return s.code();
		uint64_t seq = 0;
		int rc = sendRequest(*s.value(), FrameKind::UnlockAll, 0, {}, seq);
		if (rc == RMA_SUCCESS)
			rc = waitAck(call, *s.value(), seq);
		if (rc != RMA_SUCCESS && first == RMA_SUCCESS)
			first = rc;
	}
	return first;
}

int RemoteWindow::barrier(const char *call)
{
	RMA_TRY(flush(call, -1));
	int rc = win_.comm_->barrier();
	if (rc != RMA_SUCCESS)
		return makeError(rc, "%s: window '%s': the barrier across hosts failed: %s", call, win_.name.c_str(),
				 errorMessage(rc).c_str());
	return RMA_SUCCESS;
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
	switch (static_cast<FrameKind>(f.header.kind)) {
	case FrameKind::Ack:
		s.acked = std::max(s.acked, f.header.seq);
		break;
	case FrameKind::Nack:
		s.acked = std::max(s.acked, f.header.seq);
		if (!s.error)
			s.error = makeError(static_cast<int>(f.word0),
					    "target rank %d's host refused request %llu (error class %s, detail %llu)", t,
					    static_cast<unsigned long long>(f.header.seq), className(static_cast<int>(f.word0)),
					    static_cast<unsigned long long>(f.value));
		/* A refused GET sends no data: forget it. */
		while (!s.gets.empty() && s.gets.front().seq <= f.header.seq)
			s.gets.pop_front();
		break;
	case FrameKind::GetReply: {
		if (s.gets.empty() || s.gets.front().seq != f.header.seq || s.gets.front().bytes != f.data.size()) {
			if (!s.error)
				s.error = makeError(RMA_ERR_INTERN, "a GET_REPLY (seq %llu, %zu bytes) matches no pending get",
						    static_cast<unsigned long long>(f.header.seq), f.data.size());
			break;
		}
		PendingGet g = std::move(s.gets.front());
		s.gets.pop_front();
		std::memcpy(g.dest, f.data.data(), g.bytes);
		if (g.staging) {
			g.staging->left -= g.bytes;
			if (g.staging->left == 0)
				copyTyped(static_cast<std::byte *>(g.staging->origin), *g.staging->type, g.staging->count,
					  g.staging->packed.data(), *predefinedDatatype(RMA_BYTE),
					  static_cast<rma_count>(g.staging->packed.size()),
					  static_cast<rma_count>(g.staging->packed.size()));
		}
		break;
	}
	default:
		break;
	}
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
	if (!exclusive) {
		uint64_t v = word.load(std::memory_order_relaxed);
		/* As Window::acquireLock(): no new shared holder while an exclusive locker waits. Acquire on success. */
		return (v & lockword::kHolderMask) == 0 && win_.slots_[target].waiters.load(std::memory_order_relaxed) == 0 &&
		       word.compare_exchange_strong(v, v + lockword::kShared, std::memory_order_acquire,
						    std::memory_order_relaxed);
	}
	/* The remote origin is the holder: its window rank + 1 (no process of this host has it). */
	const uint64_t holder = static_cast<uint64_t>(origin + 1) << lockword::kHolderShift;
	uint64_t v = 0;
	/* seq_cst: the Dekker pair with lock_all, as in Window::acquireLock(). */
	if (!word.compare_exchange_strong(v, holder, std::memory_order_seq_cst, std::memory_order_relaxed))
		return false;
	if ((win_.globalLocks_->word.load(std::memory_order_seq_cst) & lockword::kLockAllMask) == 0)
		return true;
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

bool RemoteWindow::tryLockAll()
{
	std::atomic<uint64_t> &global = win_.globalLocks_->word;
	uint64_t v = global.load(std::memory_order_relaxed);
	/* As Window::lockAll(): exclusive lockers waiting have preference; seq_cst for the Dekker pair. */
	if ((v & ~lockword::kLockAllMask) != 0 ||
	    !global.compare_exchange_strong(v, v + lockword::kLockAll, std::memory_order_seq_cst, std::memory_order_relaxed))
		return false;
	for (int t = 0; t < win_.size(); ++t) {
		if (hostOf_[static_cast<std::size_t>(t)] != myHost_)
			continue;
		if (win_.slots_[t].lock.load(std::memory_order_seq_cst) & lockword::kHolderMask) {
			global.fetch_sub(lockword::kLockAll, std::memory_order_relaxed);
			return false;
		}
	}
	return true;
}

bool RemoteWindow::onRequest(const net::ParsedFrame &f, net::Replier &reply) noexcept
{
	const int t = f.targetWindowRank;
	const int origin = rankInWindow_[f.header.origin];
	switch (static_cast<FrameKind>(f.header.kind)) {
	case FrameKind::Put:
	case FrameKind::Get: {
		const bool put = f.header.kind == static_cast<uint16_t>(FrameKind::Put);
		const TargetView &tv = win_.targets_[t];
		if (tv.reach == Reach::Direct) {
			if (put) {
				const uint8_t *src = f.data.data();
				forEachRun(f, [&](int64_t at, uint64_t len) {
					std::memcpy(tv.base + at, src, len);
					src += len;
				});
				/* Release: the data before whatever this thread publishes next (an unlock, an ACK). */
				std::atomic_thread_fence(std::memory_order_release);
			} else {
				std::vector<uint8_t> out(f.type.size * f.op.count);
				uint8_t *dst = out.data();
				forEachRun(f, [&](int64_t at, uint64_t len) {
					std::memcpy(dst, tv.base + at, len);
					dst += len;
				});
				reply.data(FrameKind::GetReply, out, true);
			}
		} else if (tv.reach == Reach::Process) {
			/* Plain memory of a member process (rma_win_create): cross-memory attach, a block at a time. */
			std::vector<uint8_t> out(put ? 0 : f.type.size * f.op.count);
			const uint8_t *src = f.data.data();
			uint8_t *dst = out.data();
			int err = 0;
			forEachRun(f, [&](int64_t at, uint64_t len) {
				iovec local{ put ? const_cast<uint8_t *>(src) : dst, len };
				iovec far{ reinterpret_cast<void *>(tv.remoteBase + static_cast<uint64_t>(at)), len };
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
				reply.nack(err == ESRCH ? RMA_ERR_PROC_FAILED : RMA_ERR_INTERN, static_cast<uint64_t>(err));
				return true;
			}
			if (!put)
				reply.data(FrameKind::GetReply, out, true);
		} else {
			reply.nack(RMA_ERR_NOT_SUPPORTED, 0);
		}
		return true;
	}
	case FrameKind::Flush:
		reply.ack();
		return true;
	case FrameKind::Lock:
		if (!tryLock(t, origin, f.word0 == RMA_LOCK_EXCLUSIVE))
			return false;
		reply.ack();
		return true;
	case FrameKind::Unlock: {
		const uint64_t v = win_.slots_[t].lock.load(std::memory_order_relaxed);
		const uint64_t holder = static_cast<uint64_t>(origin + 1) << lockword::kHolderShift;
		releaseLock(t, (v & lockword::kHolderMask) == holder);
		reply.ack();
		return true;
	}
	case FrameKind::LockAll:
		if (!tryLockAll())
			return false;
		reply.ack();
		return true;
	case FrameKind::UnlockAll:
		win_.globalLocks_->word.fetch_sub(lockword::kLockAll, std::memory_order_release);
		reply.ack();
		return true;
	default:
		/* The accumulate family, PSCW and fence frames are not served across hosts yet. */
		reply.nack(RMA_ERR_NOT_SUPPORTED, f.header.kind);
		return true;
	}
}

} /* namespace librma */

#endif /* RMA_HAVE_NET */
