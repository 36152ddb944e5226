/* SPDX-License-Identifier: MIT */
/*
 * The accumulate family on windows: accumulate, get_accumulate,
 * fetch_and_op, compare_and_swap (and their request forms through the API).
 *
 * Atomicity per element among all accumulate-family calls holds because
 * every target element is only ever updated in one of three ways, chosen
 * per target at window creation and never mixed for one element type:
 *
 *  1. Origin atomics (the fast path): a target whose memory this process
 *     maps (Direct) and an op/element with a hardware atomic form, small
 *     (kFastBytes) or forced by RMA_ACC_PATH=origin, contiguous, aligned:
 *     the origin applies it with one atomic RMW per element (lib/op).
 *     Windows created with rma_accumulate_path=ring (or RMA_ACC_PATH=ring)
 *     never take this path, so there the ring applies every element with
 *     plain, vectorized stores: the choice for array-heavy windows.
 *  2. The ring: everything else to a Direct target is queued as a record on
 *     the target's MpscRing (control.h, progress/mpsc_ring.h) and applied by
 *     whoever holds the ring's consumer role: the progress agent, or an
 *     origin waiting for completion. Elements with a hardware atomic form
 *     are applied with the same atomics as path 1, so both compose; the
 *     others (pairs, long double, complex of 16+ bytes, misaligned) are
 *     applied plainly, serialized because one process at a time consumes,
 *     and because no origin ever takes path 1 for them.
 *     A target type no record can carry (lazy: walked from its recipe, or
 *     flattened to more nodes than a record holds) is applied by the origin
 *     itself while it holds the ring's consumer role, exactly as the
 *     consumer would apply the record (applyByOrigin): it is the one applier
 *     meanwhile, so the same rules hold.
 *  3. The apply lock: targets no process can reach with atomics (memory of
 *     rma_win_create that is not from rma_alloc_mem, reached by cross-memory
 *     attach) and every target of a dynamic window: the origin takes the
 *     target's applyLock, reads the elements, applies, writes them back.
 *     Every origin (the target itself included) takes it for that target.
 *
 * Ordering (accumulate_ordering, default rar,raw,war,waw): records of one
 * origin to one target are applied in the order they were queued (the ring
 * is FIFO per producer); before a path-1 operation, an origin with records
 * still queued to that target waits for them, unless the window's ordering
 * is "none". Path 3 completes at the call.
 *
 * Completion: each record carries a per-(origin, target) sequence number;
 * the consumer stores it in done[target][origin] after applying the record
 * (and writing fetched values to the origin's reply area). flush, unlock,
 * fence and complete wait for done >= the last number this origin issued
 * to that target, draining the ring themselves when the consumer role is
 * free, so nothing waits for the target process or for an agent that may
 * not exist (RMA_PROGRESS=none). Fetched values are copied from the reply
 * area to the result buffer at that completion.
 *
 * Plain mode: elements with a hardware atomic are applied atomically by
 * the ring's consumer only because origin atomics (path 1) may hit them at
 * the same time, and an atomic costs ~9 ns an element where a plain,
 * vectorized loop costs well under 1. So a large contiguous accumulate is
 * applied in place by its origin, with plain stores, while it holds the
 * target's consumer role and the target is in *plain mode*: no origin
 * atomic can run on it then. The handshake is an asymmetric Dekker:
 *   origin (enterFastOp):  fastOp[me] = 1; compiler fence; load plainMode[t]:
 *                          0 -> RMW, then fastOp[me] = 0 (release);
 *                          1 -> back off, take the ring instead.
 *   applier (enterPlain):  plainMode[t] = 1; membarrier(GLOBAL_EXPEDITED);
 *                          wait until every fastOp[r] == 0 (acquire);
 *                          apply plainly; plainMode[t] = 0 (release).
 * membarrier() makes every CPU running one of our processes execute a full
 * barrier, which stands in for the fence the origin does not pay: either
 * the origin's fastOp store is visible to the applier's loads, or the
 * origin's plainMode load sees 1. Ranks that cannot register for
 * membarrier (an old kernel) make the window keep atomics throughout.
 * The consumer role makes the in-place applier the only applier, and it
 * drains the ring first (plainly) so that earlier records keep their order.
 * Plain mode outlives the apply for a short lease (kPlainLeaseNs): a run of
 * array accumulates pays the membarrier() once. While it lasts, origin
 * atomics take the ring; any later holder of the consumer role ends an
 * expired lease (a release store: the plain stores come before the next
 * origin atomic), so a queued single-element op is what ends it at worst.
 *
 * Faults: every wait here (room in a ring, a record applied, the apply
 * lock) checks every member's liveness once past its spinning phase, so a
 * process that dies holding the consumer role or the apply lock, or before
 * publishing a claimed slot, turns into RMA_ERR_PROC_FAILED for the waiters
 * instead of a hang (the ring itself also skips a dead producer's slot).
 * The waits on a ring also look at who holds its consumer role: a host
 * agent (agent mode) serves windows its process may be no member of, so
 * when the role's word names an agent (agentHolder(pid)) whose process has
 * died (hostAgentDead()), the waiter fails with RMA_ERR_PROC_FAILED too
 * (checkRingHolder()), and so does every later wait on that ring: the word
 * is never given back. An agent that dies without the role leaves its
 * rings to the origins, which drain them while they wait.
 */
#include <linux/membarrier.h>
#include <signal.h>
#include <sys/syscall.h>
#include <sys/uio.h>
#include <unistd.h>

#include <climits>
#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cstdlib>
#include <cstring>

#include "common/knobs.h"
#include "common/spin_wait.h"
#include "common/tsan.h"
#include "datatype/datatype.h"
#include "error/error.h"
#include "op/op.h"
#include "core/core.h"
#include "progress/agent.h"
#include "progress/doorbell.h"
#include "win/remote.h"
#include "win/window.h"

namespace librma {

/*
 * A record: this header, then nruns TypeNodes (the target type's flattened
 * form, loops and runs in preorder; none when the target is contiguous),
 * then the data: the origin's elements packed (compare-and-swap: the
 * compare value, then the origin's).
 */
struct AccRecord {
	uint64_t seq;
	int64_t targetOffset; /* of the target buffer from the target's window base */
	uint64_t dataBytes;   /* of data in this record */
	uint64_t skip;        /* data bytes of the target layout before this record's (a chunk) */
	uint64_t replyOffset; /* fetch: where the old values go in the origin's reply area */
	int64_t extent;       /* of the target type (its nodes repeat every extent) */
	int64_t copies;       /* the target count */
	uint32_t nruns;       /* TypeNodes after the header */
	uint8_t op;
	uint8_t elem;
	uint8_t fetch;
	uint8_t reserved;
};
static_assert(sizeof(AccRecord) == 64);

namespace {

/* The record kinds (MpscRecord::type). */
enum : uint32_t { kRecordAccumulate = 1, kRecordCompareAndSwap = 2 };


/* RMA_ACC_PATH: which path accumulates take (a test and benchmark knob). */
enum class AccPath { Auto, Origin, Ring };

AccPath accPath()
{
	static const AccPath path = [] {
		/* Validated at rma_init (common/knobs.h). */
		const char *v = knobValue("RMA_ACC_PATH");
		if (!v || !strcmp(v, "auto"))
			return AccPath::Auto;
		if (!strcmp(v, "origin"))
			return AccPath::Origin;
		if (!strcmp(v, "ring"))
			return AccPath::Ring;
		return AccPath::Auto;
	}();
	return path;
}

/* Operations up to this many bytes of data take the origin path when they can. */
constexpr rma_count kFastBytes = Window::kFastBytes;
/* Contiguous operations from this many bytes are applied in place, in plain mode, when the role is free. */
constexpr rma_count kInPlaceBytes = kFastBytes + 1;
/* How long plain mode outlives the last in-place apply. */
constexpr uint64_t kPlainLeaseNs = 20'000;

uint64_t monotonicNs()
{
	timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return static_cast<uint64_t>(ts.tv_sec) * 1'000'000'000u + static_cast<uint64_t>(ts.tv_nsec);
}

const Datatype &byteType()
{
	return kPredefinedTypes[static_cast<int>(BasicType::Byte)];
}

/*
 * The one element type a datatype is made of: a basic type or a pair
 * type (the handle index), 0 if it mixes types or has none.
 */
uint8_t elementOf(const Datatype &t)
{
	if (t.predefined)
		return t.handleIndex;
	/* The parts first: a type of RMA_2INT pairs has basic == RMA_INT, but its element is the pair. */
	if (t.detail && !t.detail->items.empty()) {
		uint8_t found = 0;
		for (const auto &item : t.detail->items) {
			uint8_t e = item.type ? elementOf(*item.type) : 0;
			if (e == 0 || (found && e != found))
				return 0;
			found = e;
		}
		return found;
	}
	return static_cast<uint8_t>(t.basic);
}

[[gnu::cold]] int mixedType(const char *call, const char *side, const Datatype &t)
{
	return makeError(RMA_ERR_TYPE,
			 "%s: the %s datatype %s is not built from one predefined type (accumulate-family calls "
			 "need every basic element of one type)",
			 call, side, t.name);
}

[[gnu::cold]] int typeMismatch(const char *call, const char *side, uint8_t got, uint8_t want)
{
	return makeError(RMA_ERR_TYPE, "%s: the %s datatype is made of %s but the target datatype of %s", call, side,
			 elemName(got), elemName(want));
}

[[gnu::cold]] int badType(const char *call, const char *side)
{
	return makeError(RMA_ERR_TYPE, "%s: the %s datatype is not a valid datatype", call, side);
}

/* The origin's data as a packed stream: in place when it already is one, else packed into @storage. */
const std::byte *packOrigin(const Datatype *od, const AccArgs &a, rma_count bytes, std::vector<std::byte> &storage)
{
	if (!od)
		return nullptr;
	if (od->isContiguous())
		return static_cast<const std::byte *>(a.origin);
	storage.resize(static_cast<size_t>(bytes));
	copyTyped(storage.data(), byteType(), bytes, static_cast<const std::byte *>(a.origin), *od, a.ocount, bytes);
	return storage.data();
}

bool aliveProducer(void *context, uint32_t producer)
{
	return static_cast<Window *>(context)->peerAlive(static_cast<int>(producer));
}

/*
 * Apply @op to the @left bytes of target elements that @cursor walks from
 * where it stands (in the memory at @base), with operands from @data
 * (packed; nullptr for NO_OP) and the old values to @old (packed; nullptr:
 * not fetched). @plain: no origin atomic can race (see "Plain mode").
 */
void applyAlong(BlockCursor &cursor, std::byte *base, Op op, uint8_t elem, const std::byte *data, std::byte *old,
		uint64_t left, bool plain)
{
	if (!isPairElem(elem)) {
		while (left > 0 && !cursor.done()) {
			rma_count step = std::min<rma_count>(cursor.left(), static_cast<rma_count>(left));
			size_t count = static_cast<size_t>(step) / elemBytes(elem);
			if (plain)
				applyOpPlain(op, elem, base + cursor.offset(), data, old, count);
			else
				applyOp(op, elem, base + cursor.offset(), data, old, count);
			if (data)
				data += step;
			if (old)
				old += step;
			left -= static_cast<uint64_t>(step);
			cursor.advance(step);
		}
		return;
	}
	const uint32_t eb = elemBytes(elem);
	const uint32_t vb = detail::kElemInfo[elem].valueBytes;
	while (left >= eb && !cursor.done()) {
		std::byte *value = base + cursor.offset();
		cursor.advance(vb);
		std::byte *index = base + cursor.offset();
		cursor.advance(eb - vb);
		applyPairOp(op, elem, value, index, data, old);
		if (data)
			data += eb;
		if (old)
			old += eb;
		left -= eb;
	}
}

} /* namespace */

bool accumulateRingByDefault()
{
	return accPath() == AccPath::Ring;
}

bool membarrierReady()
{
	static const bool ready = [] {
		/* A test knob standing in for a kernel without membarrier(). */
		if (const char *v = knobValue("RMA_NO_MEMBARRIER"); v && !strcmp(v, "1"))
			return false;
		long q = syscall(__NR_membarrier, MEMBARRIER_CMD_QUERY, 0, 0);
		if (q < 0 || !(q & MEMBARRIER_CMD_GLOBAL_EXPEDITED))
			return false;
		return syscall(__NR_membarrier, MEMBARRIER_CMD_REGISTER_GLOBAL_EXPEDITED, 0, 0) == 0;
	}();
	return ready;
}

/* ---- Setup ------------------------------------------------------------------ */

int Window::setUpAccumulates(const char *call, std::byte *control, const std::vector<uint8_t> &locked, bool plainCapable)
{
	const uint32_t n = static_cast<uint32_t>(size());
	const ControlLayout layout(n, flavor_ == Flavor::Dynamic);
	accLines_ = reinterpret_cast<AccTargetLine *>(control + layout.accLines);
	accDone_ = control + layout.accDone;
	accDoneRow_ = layout.accDoneRow;
	accReplies_ = control + layout.accReplies;
	accLocked_ = locked;
	plainApply_ = hints_.accumulateRing;
	/* Ring-only windows have no origin atomics to hold off: no handshake needed there. */
	plainCapable_ = plainCapable && !plainApply_;
	myFastOp_ = &accLines_[rank()].fastOp;
	pathAuto_ = accPath() == AccPath::Auto;
	accFast_.assign(n, 0);
	accInPlace_.assign(n, 0);
	for (uint32_t t = 0; t < n; ++t) {
		const bool direct = !locked[t] && targets_[t].reach == Reach::Direct;
		accFast_[t] = direct && !hints_.accumulateRing;
		accInPlace_[t] = direct && pathAuto_ && (plainCapable_ || plainApply_);
	}
	accIssued_.assign(n, 0);
	accApplied_.assign(n, 0);
	orderingNone_ = hints_.accumulateOrdering == "none";
	rings_.resize(n);
	for (uint32_t t = 0; t < n; ++t) {
		std::byte *mem = control + layout.accRings + t * layout.accRingBytes;
		auto ring = MpscRing::attach(mem, layout.accRingBytes);
		if (!ring)
			return makeError(RMA_ERR_INTERN, "%s: the accumulate ring of rank %u is not usable", call, t);
		rings_[t] = ring.value();
		rings_[t].setLiveness(aliveProducer, this, 100'000'000);
	}
	acc_.attach(control, n, flavor_ == Flavor::Dynamic);
	acc_.rings = rings_.data();
	acc_.plainApply = plainApply_;
	return RMA_SUCCESS;
}

/*
 * Who drains which ring (RMA_PROGRESS): none: only waiting origins; thread:
 * each rank's own thread drains its own ring; agent: the agent of the NUMA
 * node its memory is on, in whatever process that is, finds the ring in the
 * host's served directory (win/agent_service.h) where each target publishes
 * it. Producers ring the server's doorbell after queueing; origins always
 * drain too while waiting.
 */
int Window::startServing()
{
	const int n = size();
	const ProgressConfig &config = progressConfig();
	servers_.assign(n, nullptr);
	served_.clear();
	for (int r = 0; r < n; ++r)
		if (targets_[r].reach != Reach::Remote)
			servers_[r] = progressDoorbell(group()->worldRank(r), targets_[r].node);
	if (config.mode == ProgressConfig::Mode::Agent)
		return publishRing();
	if (config.mode != ProgressConfig::Mode::Thread)
		return RMA_SUCCESS;
	served_.push_back(rank());
	ProgressSource source;
	source.poll = [](void *self) noexcept { return static_cast<Window *>(self)->progressPoll(); };
	source.pending = [](void *self) noexcept { return static_cast<Window *>(self)->progressPending(); };
	source.ctx = this;
	RMA_TRY(localAgent().addSource(source));
	serving_ = true;
	return ensureAgentThread();
}

void Window::stopServing()
{
	if (serving_)
		(void)localAgent().removeSource(this);
	serving_ = false;
	withdrawRing();
}

int Window::publishRing()
{
	ServedDirectory dir = servedDirectory();
	const int me = rank();
	/* Only rings of memory this host maps: apply-lock targets (dynamic, process memory) have none in use. */
	if (!dir.valid() || ringHome_.memoryFd < 0 || ringHome_.controlFd < 0 || accLocked_[me])
		return RMA_SUCCESS;
	ServedTarget t = ringHome_;
	t.window = ringHome_.controlIno;
	t.controlBytes = ControlLayout(static_cast<uint32_t>(size()), flavor_ == Flavor::Dynamic).size;
	t.memorySize = static_cast<uint64_t>(targets_[me].size);
	t.target = me;
	t.nranks = size();
	t.node = targets_[me].node;
	t.flags = (flavor_ == Flavor::Dynamic ? kServedDynamicLayout : 0) | (plainApply_ ? kServedPlainApply : 0);
	servedEntry_ = dir.publish(t);
	/* The agent maps the window now rather than at its next safety timeout. */
	if (servedEntry_ >= 0 && servers_[me])
		servers_[me]->ring();
	return RMA_SUCCESS;
}

void Window::withdrawRing()
{
	if (servedEntry_ < 0)
		return;
	servedDirectory().withdraw(servedEntry_);
	servedEntry_ = -1;
	/* The agent unmaps the window's memory at its next pass. */
	if (servers_[rank()])
		servers_[rank()]->ring();
}

int Window::checkRingHolder(const char *call, const char *what, int t)
{
	std::atomic<uint64_t> &consumer = accLines_[t].consumer;
	/*
	 * Relaxed: a look; only an agent's id is acted on, and only after its
	 * death has been seen through a system call (hostAgentDead()), after
	 * which the word is read again: an agent that gave the role back and
	 * then died is never blamed for it. (Acquire would add nothing: no
	 * data of the holder's is read here.)
	 */
	const uint64_t holder = consumer.load(std::memory_order_relaxed);
	if (!isAgentHolder(holder))
		return RMA_SUCCESS;
	const int32_t pid = agentHolderPid(holder);
	int agentRank = -1;
	if (!hostAgentDead(pid, agentRank))
		return RMA_SUCCESS;
	/* Relaxed: as above; a dead process stores nothing more, so this value is final. */
	if (consumer.load(std::memory_order_relaxed) != holder)
		return RMA_SUCCESS;
	return makeError(RMA_ERR_PROC_FAILED,
			 "%s: the progress agent (world rank %d, pid %d) died while it applied the accumulates queued "
			 "for rank %d of window '%s', holding that rank's accumulate ring (this process waited for %s); "
			 "the ring cannot be trusted any more and the target's memory may be partly updated",
			 call, agentRank, static_cast<int>(pid), t, name.c_str(), what);
}

bool Window::peerAlive(int rank) const
{
	if (static_cast<unsigned>(rank) >= targets_.size())
		return false;
	return kill(targets_[rank].pid, 0) == 0 || errno != ESRCH;
}

/* ---- The consumer ----------------------------------------------------------- */

void AccArea::applyRecord(int t, const MpscRecord &record, std::byte *target) noexcept
{
	const std::byte *p = record.payload.data();
	AccRecord h;
	if (record.payload.size() < sizeof(h)) [[unlikely]]
		return;
	crossProcessEdge();
	std::memcpy(&h, p, sizeof(h));
	const auto *runs = reinterpret_cast<const TypeNode *>(p + sizeof(h));
	const std::byte *data = p + sizeof(h) + h.nruns * sizeof(TypeNode);
	const uint32_t producer = record.producer;
	std::byte *old = h.fetch ? replies + producer * kAccReplyBytes + h.replyOffset : nullptr;
	std::byte *base = target + h.targetOffset;
	const Op op = static_cast<Op>(h.op);
	/*
	 * Ring-only windows, or plain mode entered by us (we hold the role, and
	 * only the holder sets it): no origin atomic can race with us.
	 */
	const bool plain = plainApply || lines[t].plainMode.load(std::memory_order_relaxed) != 0;
	if (plain)
		crossProcessAcquire(&lines[t].plainMode); /* ThreadSanitizer: common/tsan.h */

	if (record.type == kRecordCompareAndSwap) {
		const uint32_t eb = elemBytes(h.elem);
		librma::compareAndSwap(h.elem, base, data, data + eb, old);
	} else {
		TypeNode whole{ 0, 0, 1, static_cast<rma_count>(h.skip + h.dataBytes), 0, 0 };
		BlockCursor cursor = h.nruns ? BlockCursor(runs, h.nruns, h.extent, h.copies) : BlockCursor(&whole, 1, 0, 1);
		for (uint64_t skip = h.skip; skip > 0 && !cursor.done();) {
			rma_count step = std::min<rma_count>(cursor.left(), static_cast<rma_count>(skip));
			cursor.advance(step);
			skip -= static_cast<uint64_t>(step);
		}
		applyAlong(cursor, base, op, h.elem, data, old, h.dataBytes, plain);
	}
	/*
	 * R-done: pairs with the acquire in accDoneOf() at the origin; publishes
	 * the elements applied and the fetched values written above.
	 */
	if (plain)
		crossProcessRelease(&lines[t].plainMode);
	crossProcessEdge();
	doneWord(t, static_cast<int>(producer)).store(h.seq, std::memory_order_release);
}

int AccArea::drain(int t, uint64_t me, std::byte *base) noexcept
{
	/* Relaxed (pending()): a cheap look before the role (nothing claimed); the role decides. */
	if (!rings[t].pending() || !tryTakeRole(t, me))
		return 0;
	endExpiredLease(t);
	int n = rings[t].read([this, t, base](const MpscRecord &r) { applyRecord(t, r, base); }, 64);
	giveBackRole(t);
	return n;
}

int Window::drainRing(int t)
{
	return acc_.drain(t, static_cast<uint64_t>(rank()) + 1, targets_[t].base);
}

void Window::applyRecord(int t, const MpscRecord &record)
{
	acc_.applyRecord(t, record, targets_[t].base);
}

bool Window::ringPending(int t) const
{
	return rings_[t].pending();
}

int Window::progressPoll()
{
	int work = 0;
	for (int t : served_)
		work += drainRing(t);
	return work;
}

bool Window::progressPending() const
{
	for (int t : served_)
		if (ringPending(t))
			return true;
	return false;
}

/* ---- Completion ------------------------------------------------------------- */

uint64_t Window::accDoneOf(int t)
{
	/* Acquire: pairs with R-done in applyRecord(). */
	return doneWord(t, rank()).load(std::memory_order_acquire);
}

/* Copy out the fetched values of records to @t applied up to @done; free reply space when none is left. */
void Window::collectFetches(int t, uint64_t done)
{
	for (size_t i = 0; i < fetches_.size();) {
		PendingFetch &f = fetches_[i];
		if (f.target != t || f.seq > done) {
			++i;
			continue;
		}
		const std::byte *reply = accReplies_ + static_cast<size_t>(rank()) * kAccReplyBytes + f.replyOffset;
		if (!f.dest) {
			std::memcpy(f.direct + f.streamOffset, reply, f.bytes);
		} else {
			FetchDest &d = *f.dest;
			std::memcpy(d.packed.data() + f.streamOffset, reply, f.bytes);
			if (--d.chunksLeft == 0)
				copyTyped(static_cast<std::byte *>(d.result), *d.type, d.count, d.packed.data(), byteType(),
					  static_cast<rma_count>(d.packed.size()), static_cast<rma_count>(d.packed.size()));
		}
		fetches_[i] = std::move(fetches_.back());
		fetches_.pop_back();
	}
	if (fetches_.empty())
		replyUsed_ = 0;
}

/* Every target's; a failed target (RMA_ERR_PROC_FAILED) does not keep the others from completing. */
int Window::completeAllAccumulates(const char *call, bool remote)
{
	int failed = RMA_SUCCESS;
	const int n = size();
	for (int r = 0; r < n; ++r) {
		/* completeAccumulates()'s own first test, here: a fence over idle targets makes no call. */
		if (accApplied_[r] == accIssued_[r])
			continue;
		if (!remote && targets_[r].reach == Reach::Remote)
			continue;
		if (int rc = completeAccumulates(call, r); rc != RMA_SUCCESS) {
			if (errorClass(rc) != RMA_ERR_PROC_FAILED)
				return rc;
			if (failed == RMA_SUCCESS)
				failed = rc;
		}
	}
	return failed;
}

int Window::completeAccumulates(const char *call, int t, bool remote)
{
	if (t < 0)
		return completeAllAccumulates(call, remote);
	const uint64_t want = accIssued_[t];
	if (accApplied_[t] == want)
		return RMA_SUCCESS;
#ifdef RMA_HAVE_NET
	if (targets_[t].reach == Reach::Remote) {
		/* Puts and gets to another host (the accumulate family does not go there yet). */
		RMA_TRY(remote_->flush(call, t));
		accApplied_[t] = want;
		return RMA_SUCCESS;
	}
#endif
	uint64_t done = accDoneOf(t);
	if (done != want) {
		int rc = waitUntil(
			call, "accumulates to be applied", -1,
			[&, t, want] {
				drainRing(t);
				done = accDoneOf(t);
				return done == want;
			},
			[&, t] { return checkRingHolder(call, "accumulates to be applied", t); });
		if (rc != RMA_SUCCESS)
			return rc;
	}
	accApplied_[t] = want;
	collectFetches(t, want);
	return RMA_SUCCESS;
}

bool Window::testAccumulate(int t, uint64_t seq)
{
#ifdef RMA_HAVE_NET
	/* Another host: @seq is the stream's; done once every reply up to it is in (remote.h). */
	if (isRemote(t))
		return remote_->repliesDone(t, seq);
#endif
	if (static_cast<unsigned>(t) >= accApplied_.size() || accApplied_[t] >= seq)
		return true;
	drainRing(t);
	uint64_t done = accDoneOf(t);
	if (done < seq)
		return false;
	collectFetches(t, done);
	if (done == accIssued_[t])
		accApplied_[t] = done;
	return true;
}

int Window::testFailure(const char *call, int t, uint64_t seq)
{
#ifdef RMA_HAVE_NET
	if (isRemote(t))
		return remote_->silence(call, t, seq);
#endif
	(void)seq;
	if (static_cast<unsigned>(t) >= targets_.size() || isRemote(t))
		return RMA_SUCCESS;
	return checkRingHolder(call, "an accumulate to be applied", t);
}

int Window::waitAccumulate(const char *call, int t, uint64_t seq)
{
#ifdef RMA_HAVE_NET
	if (isRemote(t))
		return remote_->waitReplies(call, t, seq);
#endif
	if (static_cast<unsigned>(t) >= accApplied_.size() || accApplied_[t] >= seq)
		return RMA_SUCCESS;
	RMA_TRY(waitUntil(
		call, "an accumulate to be applied", -1,
		[&] {
			drainRing(t);
			return accDoneOf(t) >= seq;
		},
		[&] { return checkRingHolder(call, "an accumulate to be applied", t); }));
	testAccumulate(t, seq);
	return RMA_SUCCESS;
}

/* ---- Origin side -------------------------------------------------------------- */

/* Wake whoever serves @t's ring, if it sleeps. */
void Window::ringDoorbell(int t)
{
	if (Doorbell *bell = servers_.empty() ? nullptr : servers_[t]) [[likely]]
		bell->ring();
}

/* Reply space for @bytes of fetched values (completing earlier fetches if it is full). */
int Window::reserveReply(const char *call, size_t bytes, size_t &offset)
{
	if (replyUsed_ + bytes > kAccReplyBytes) {
		for (int t = 0; t < size() && !fetches_.empty(); ++t)
			RMA_TRY(completeAccumulates(call, t));
	}
	offset = replyUsed_;
	replyUsed_ += (bytes + 15) & ~size_t(15);
	return RMA_SUCCESS;
}

/* Queue one record for @t; spins (draining the ring itself) while the ring is full. */
int Window::queueRecord(const char *call, int t, uint32_t kind, const AccRecord &h, const TypeNode *runs,
			const std::byte *data, size_t dataBytes)
{
	const size_t runBytes = h.nruns * sizeof(TypeNode);
	const size_t length = sizeof(AccRecord) + runBytes + dataBytes;
	MpscClaim claim;
	MpscStatus status = rings_[t].tryClaim(static_cast<uint32_t>(rank()), kind, static_cast<uint32_t>(length), &claim);
	if (status == MpscStatus::Again) {
		ringDoorbell(t);
		RMA_TRY(waitUntil(
			call, "room in the accumulate ring", -1,
			[&] {
				drainRing(t);
				status = rings_[t].tryClaim(static_cast<uint32_t>(rank()), kind,
							    static_cast<uint32_t>(length), &claim);
				return status != MpscStatus::Again;
			},
			[&] { return checkRingHolder(call, "room in the accumulate ring", t); }));
	}
	if (status != MpscStatus::Ok) [[unlikely]]
		return makeError(RMA_ERR_INTERN, "%s: a %zu-byte accumulate record does not fit the ring of rank %d", call,
				 length, t);
	AccRecord stamped = h;
	stamped.seq = ++accIssued_[t];
	std::byte *out = claim.payload.data();
	std::memcpy(out, &stamped, sizeof(stamped));
	if (runBytes)
		std::memcpy(out + sizeof(stamped), runs, runBytes);
	if (dataBytes)
		std::memcpy(out + sizeof(stamped) + runBytes, data, dataBytes);
	rings_[t].commit(claim);
	return RMA_SUCCESS;
}

int Window::accumulate(const char *call, const AccArgs &a)
{
	/*
	 * The common mid-size and large case first, as the C entry points take
	 * it (inPlaceFast()): here for the request forms and for everything
	 * that reaches this with the target in plain mode already. Counted
	 * operations (RMA_STATS) take the general path, which also applies in
	 * place where it can.
	 */
	if (stats_) [[unlikely]]
		return accumulateCounted(call, a);
	if (a.otype == a.ttype && a.ocount == a.tcount && !a.fetchAndOp &&
	    (!a.fetch || (a.rtype == a.ttype && a.rcount == a.tcount)) &&
	    inPlaceFast(a.origin, a.result, a.ttype, a.tcount, a.target, a.disp, a.op, a.fetch)) {
		if (a.queuedSeq)
			*a.queuedSeq = 0;
		return RMA_SUCCESS;
	}
	return accumulateChecked(call, a);
}

int Window::accumulateChecked(const char *call, const AccArgs &a)
{
	RMA_TRY(checkAccess(call, a.target));
	if (a.target == RMA_PROC_NULL)
		return RMA_SUCCESS;
	const Op op = toOp(a.op);
	const bool fetch = a.fetch || a.fetchAndOp;
	const bool usesOrigin = !(fetch && op == Op::NoOp);
	const Datatype *td = lookupDatatype(a.ttype);
	if (!td) [[unlikely]]
		return badType(call, "target");
	const Datatype *od = usesOrigin ? lookupDatatype(a.otype) : nullptr;
	if (usesOrigin && !od) [[unlikely]]
		return badType(call, "origin");
	const Datatype *rd = fetch ? lookupDatatype(a.rtype) : nullptr;
	if (fetch && !rd) [[unlikely]]
		return badType(call, "result");
	if (a.tcount < 0 || (usesOrigin && a.ocount < 0) || (fetch && a.rcount < 0)) [[unlikely]]
		return makeError(RMA_ERR_COUNT, "%s: counts must not be negative (origin %d, result %d, target %d)", call,
				 a.ocount, a.rcount, a.tcount);
	/*
	 * An operation that moves no data on any side succeeds whatever its
	 * types and op (MPI: zero-count operations are no-ops), once the
	 * rank, the epoch and the handles have been checked.
	 */
	if ((a.tcount == 0 || td->size == 0) && (!usesOrigin || a.ocount == 0 || od->size == 0) &&
	    (!fetch || a.rcount == 0 || rd->size == 0))
		return RMA_SUCCESS;
	const uint8_t elem = elementOf(*td);
	if (!elem)
		return mixedType(call, "target", *td);
	if (usesOrigin) {
		uint8_t oe = elementOf(*od);
		if (!oe)
			return mixedType(call, "origin", *od);
		if (oe != elem)
			return typeMismatch(call, "origin", oe, elem);
	}
	if (fetch) {
		uint8_t re = elementOf(*rd);
		if (!re)
			return mixedType(call, "result", *rd);
		if (re != elem)
			return typeMismatch(call, "result", re, elem);
	}
	RMA_TRY(checkOp(call, op, elem, fetch));
	if (a.fetchAndOp && !td->predefined)
		return makeError(RMA_ERR_TYPE, "%s: the datatype must be a predefined type (got %s)", call, td->name);

	/* Signatures: one predefined type on every side needs no walk (counts decide). */
	rma_count bytes = td->size * a.tcount;
	if (usesOrigin) {
		if (od == td && td->predefined && a.ocount <= a.tcount)
			bytes = td->size * a.ocount;
		else
			RMA_TRY(matchSignatures(call, *od, a.ocount, *td, a.tcount, true, bytes));
	}
	if (fetch && !(rd == td && td->predefined && a.tcount <= a.rcount)) {
		rma_count rbytes;
		RMA_TRY(matchSignatures(call, *td, a.tcount, *rd, a.rcount, true, rbytes));
	}
	if (op != Op::NoOp)
		RMA_TRY(checkTargetType(call, *td, a.tcount));
	TargetView view;
	RMA_TRY(checkTarget(call, a.target, a.disp, footprint(*td, a.tcount), view));
	if (bytes == 0)
		return RMA_SUCCESS;
	if (usesOrigin && badPointer(static_cast<const std::byte *>(a.origin) + od->trueLb)) [[unlikely]]
		return badBuffer(call, "origin", a.origin);
	if (fetch && badPointer(static_cast<const std::byte *>(a.result) + rd->trueLb)) [[unlikely]]
		return badBuffer(call, "result", a.result);
	pendingOps_ = true;
	if (a.queuedSeq)
		*a.queuedSeq = 0;
#ifdef RMA_HAVE_NET
	if (view.reach == Reach::Remote) [[unlikely]] {
		/* Unequal counts send flush() and unlock() to the slow path, which completes it remotely. */
		accIssued_[a.target] = accApplied_[a.target] + 1;
		return remote_->accumulate(call, a.target, a.disp * static_cast<rma_aint>(targets_[a.target].dispUnit), op,
					   elem, fetch, a.origin, od, a.ocount, a.result, rd, a.rcount, *td, a.tcount, bytes);
	}
#endif

	if (accLocked_[a.target])
		return lockedApply(call, a, view, op, elem, *td, od, rd, bytes);

	const size_t n = static_cast<size_t>(bytes) / elemBytes(elem);
	const AccPath path = accPath();
	const bool contiguous = td->isContiguous() && (!od || od->isContiguous()) && (!rd || rd->isContiguous());
	if (accFast_[a.target] && contiguous && atomicAt(op, elem, view.base) &&
	    (path == AccPath::Origin || bytes <= kFastBytes)) {
		if (accIssued_[a.target] != accApplied_[a.target] && !orderingNone_)
			RMA_TRY(completeAccumulates(call, a.target));
		if (enterFastOp(a.target)) {
			applyOp(op, elem, view.base, a.origin, a.result, n);
			leaveFastOp(a.target);
			return RMA_SUCCESS;
		}
	}
	/* Large, or small while the target is in plain mode (origin atomics must stay away then). */
	/* Relaxed: a hint for the choice; applyInPlace() reads it again under the role. */
	const bool plainNow = accLines_[a.target].plainMode.load(std::memory_order_relaxed) != 0;
	if (accInPlace_[a.target] && contiguous && !isPairElem(elem) && (bytes >= kInPlaceBytes || plainNow) &&
	    !noPlainMode_) {
		InPlace outcome;
		RMA_TRY(applyInPlace(call, a, view, op, elem, n, outcome));
		if (outcome == InPlace::Done)
			return RMA_SUCCESS;
	}
	return queueAccumulate(call, a, view, op, elem, *td, od, rd, bytes);
}

int Window::queueAccumulate(const char *call, const AccArgs &a, const TargetView &view, Op op, uint8_t elem,
			    const Datatype &td, const Datatype *od, const Datatype *rd, rma_count bytes)
{
	const int t = a.target;
	std::vector<TypeNode> scratch;
	const TypeNode *runs = nullptr;
	size_t nodes = 0;
	const uint32_t eb = elemBytes(elem);
	const size_t room = rings_[t].maxPayload();
	if (!td.isContiguous()) {
		const std::vector<TypeNode> *b = nodesOf(td, scratch);
		/* No flattened form, or one too large for a record: applied by the origin itself, as records are. */
		if ((!b || sizeof(AccRecord) + b->size() * sizeof(TypeNode) + eb > room) &&
		    targets_[t].reach == Reach::Direct)
			return applyByOrigin(call, a, view, op, elem, td, od, rd, bytes);
		if (!b)
			return makeError(RMA_ERR_NOT_SUPPORTED,
					 "%s: the target datatype %s is too irregular to flatten (more than %zu nodes of "
					 "%zu bytes) and the target is not mapped here; an accumulate record carries at "
					 "most %zu bytes of type description",
					 call, td.name, flattenNodeLimit(), sizeof(TypeNode), room - sizeof(AccRecord));
		runs = b->data();
		nodes = b->size();
	}
	const uint32_t nruns = static_cast<uint32_t>(std::min<size_t>(nodes, UINT32_MAX));
	const size_t header = sizeof(AccRecord) + nodes * sizeof(TypeNode);
	if (header + eb > room)
		return makeError(RMA_ERR_NOT_SUPPORTED,
				 "%s: the target datatype %s flattens to %zu nodes (%zu bytes), more than one accumulate "
				 "record carries (%zu bytes of type description), and the target is not mapped here",
				 call, td.name, nodes, nodes * sizeof(TypeNode), room - sizeof(AccRecord) - eb);
	size_t chunk = (room - header) / eb * eb;
	const bool fetch = rd != nullptr;
	if (fetch)
		chunk = std::min(chunk, kAccReplyBytes / eb * eb);

	std::vector<std::byte> packed;
	const std::byte *data = packOrigin(od, a, bytes, packed);
	/* Contiguous results are written in place; others are unpacked once every chunk is in. */
	std::shared_ptr<FetchDest> dest;
	if (fetch && !rd->isContiguous()) {
		dest = std::make_shared<FetchDest>();
		dest->result = a.result;
		dest->count = a.rcount;
		dest->type = shareDatatype(a.rtype);
		if (!dest->type) /* predefined: lives for ever */
			dest->type = std::shared_ptr<Datatype>(std::shared_ptr<Datatype>(), const_cast<Datatype *>(rd));
		dest->packed.resize(static_cast<size_t>(bytes));
	}

	AccRecord h{};
	h.targetOffset = view.base - targets_[t].base;
	h.extent = td.extent;
	h.copies = a.tcount;
	h.nruns = nruns;
	h.op = static_cast<uint8_t>(op);
	h.elem = elem;
	h.fetch = fetch;
	for (size_t off = 0; off < static_cast<size_t>(bytes); off += chunk) {
		const size_t len = std::min(chunk, static_cast<size_t>(bytes) - off);
		h.skip = off;
		h.dataBytes = len;
		if (fetch) {
			size_t replyOffset;
			RMA_TRY(reserveReply(call, len, replyOffset));
			h.replyOffset = replyOffset;
		}
		RMA_TRY(queueRecord(call, t, kRecordAccumulate, h, runs, data ? data + off : nullptr, data ? len : 0));
		if (fetch) {
			if (dest)
				++dest->chunksLeft;
			fetches_.push_back(PendingFetch{ t, accIssued_[t], static_cast<size_t>(h.replyOffset), len, off,
							 static_cast<std::byte *>(a.result), dest });
		}
	}
	if (a.queuedSeq)
		*a.queuedSeq = accIssued_[t];
	ringDoorbell(t);
	return RMA_SUCCESS;
}

/*
 * A target type that no record can carry (lazy: no flattened form, or one
 * larger than a record), to a Direct target: the origin applies the
 * operation itself, walking the type with the cursor, as the ring's
 * consumer would apply its record. It holds the target's consumer role
 * meanwhile (waiting for it, as a record waits to be applied), so it is the
 * one applier of records to that target: its own earlier records are
 * completed first and others' queued ones applied first (ordering), and
 * elements with a hardware atomic are updated with atomics unless the
 * target is in plain mode, exactly as in applyRecord(), so it composes with
 * origin atomics (path 1) and with the ring. Completes at the call.
 */
int Window::applyByOrigin(const char *call, const AccArgs &a, const TargetView &view, Op op, uint8_t elem,
			  const Datatype &td, const Datatype *od, const Datatype *rd, rma_count bytes)
{
	const int t = a.target;
	std::vector<std::byte> packed;
	const std::byte *data = packOrigin(od, a, bytes, packed);
	/* Fetched values: straight into a contiguous result, else packed and unpacked at the end. */
	std::vector<std::byte> fetched;
	std::byte *old = nullptr;
	if (rd) {
		if (rd->isContiguous()) {
			old = static_cast<std::byte *>(a.result);
		} else {
			fetched.resize(static_cast<size_t>(bytes));
			old = fetched.data();
		}
	}
	/* Our own queued records come first (ordering). */
	if (accIssued_[t] != accApplied_[t])
		RMA_TRY(completeAccumulates(call, t));
	AccTargetLine &line = accLines_[t];
	const uint64_t me = static_cast<uint64_t>(rank()) + 1;
	RMA_TRY(waitUntil(
		call, "the accumulate ring of the target", -1, [&] { return acc_.tryTakeRole(t, me); },
		[&] { return checkRingHolder(call, "the accumulate ring of the target", t); }));
	endExpiredLease(t);
	/* Others' records queued before this operation: applied first. */
	while (rings_[t].pending() && rings_[t].read([this, t](const MpscRecord &r) { applyRecord(t, r); }, 64) > 0) {
	}
	/* Relaxed: only holders of the role (us) write plainMode; as in applyRecord(). */
	const bool plain = plainApply_ || line.plainMode.load(std::memory_order_relaxed) != 0;
	BlockCursor cursor(td, a.tcount);
	applyAlong(cursor, view.base, op, elem, data, old, static_cast<uint64_t>(bytes), plain);
	acc_.giveBackRole(t);
	if (rd && !rd->isContiguous())
		copyTyped(static_cast<std::byte *>(a.result), *rd, a.rcount, fetched.data(), byteType(), bytes, bytes);
	return RMA_SUCCESS;
}

/*
 * applyRemote() found @t's consumer role (@applyLock false) or apply lock
 * (true) taken: retry later (@busy), unless its holder died (it never
 * gives it back): a host agent (checkRingHolder()) or a member of this
 * host. Then the operation fails, as a local origin's wait would
 * (waitUntil()'s liveness checks). Looked at once a millisecond at most:
 * the server thread retries parked frames often.
 */
int Window::remoteRingBusy(int t, bool &busy, bool applyLock)
{
	busy = true;
	const uint64_t now = monotonicNs();
	if (now - ringCheckNs_ < 1'000'000)
		return RMA_SUCCESS;
	ringCheckNs_ = now;
	const char *what = applyLock ? "the apply lock of the target" : "the accumulate ring of the target";
	int rc = applyLock ? RMA_SUCCESS : checkRingHolder("another host's accumulate", what, t);
	if (rc == RMA_SUCCESS) {
		std::atomic<uint64_t> &word = applyLock ? accLines_[t].applyLock : accLines_[t].consumer;
		/* Relaxed: a look, as in checkRingHolder(); a dead process stores nothing more, so a value seen twice around its death is final. */
		const uint64_t holder = word.load(std::memory_order_relaxed);
		const uint64_t r = holder - 1;
		/* A member of this host other than ours (the server gives its own holds back before it returns). */
		if (holder != 0 && !isAgentHolder(holder) && r < targets_.size() && static_cast<int>(r) != rank() &&
		    targets_[r].reach != Reach::Remote && !peerAlive(static_cast<int>(r)) &&
		    word.load(std::memory_order_relaxed) == holder)
			rc = makeError(RMA_ERR_PROC_FAILED,
				       "another host's accumulate: rank %d of window '%s' died holding %s (rank %d); the "
				       "target's memory may be partly updated",
				       static_cast<int>(r), name.c_str(), what, t);
	}
	if (rc != RMA_SUCCESS)
		busy = false;
	return rc;
}

/* Path 3: the origin applies the operation under the target's apply lock. */
int Window::lockedApply(const char *call, const AccArgs &a, const TargetView &view, Op op, uint8_t elem,
			const Datatype &td, const Datatype *od, const Datatype *rd, rma_count bytes)
{
	const size_t len = static_cast<size_t>(bytes);
	std::vector<std::byte> cur(len);
	std::vector<std::byte> packedOrigin;
	const std::byte *origin = packOrigin(od, a, bytes, packedOrigin);
	if (bytes > INT_MAX)
		return makeError(RMA_ERR_NOT_SUPPORTED, "%s: %lld bytes to a target without shared memory (at most %d)",
				 call, static_cast<long long>(bytes), INT_MAX);
	const int nbytes = static_cast<int>(bytes);
	RMA_TRY(lockApply(call, a.target));
	int rc = transfer(call, view, cur.data(), byteType(), nbytes, td, a.tcount, bytes, false);
	if (rc == RMA_SUCCESS && rd)
		copyTyped(static_cast<std::byte *>(a.result), *rd, a.rcount, cur.data(), byteType(), bytes, bytes);
	if (rc == RMA_SUCCESS && op != Op::NoOp) {
		const uint32_t eb = elemBytes(elem);
		if (isPairElem(elem)) {
			const uint32_t vb = detail::kElemInfo[elem].valueBytes;
			for (size_t off = 0; off + eb <= len; off += eb)
				applyPairOp(op, elem, cur.data() + off, cur.data() + off + vb, origin + off, nullptr);
		} else {
			applyOpPlain(op, elem, cur.data(), origin, nullptr, len / eb);
		}
		rc = transfer(call, view, cur.data(), byteType(), nbytes, td, a.tcount, bytes, true);
	}
	unlockApply(a.target);
	return rc;
}

/* Plain mode on @t (the consumer role is held): see "Plain mode" at the top. */
int Window::enterPlain(const char *call, int t)
{
	AccTargetLine &line = accLines_[t];
	/* Relaxed + seq_cst fence: the store is ordered before the barrier membarrier() spreads. */
	line.plainMode.store(1, std::memory_order_relaxed);
	std::atomic_thread_fence(std::memory_order_seq_cst);
	if (syscall(__NR_membarrier, MEMBARRIER_CMD_GLOBAL_EXPEDITED, 0, 0) != 0) [[unlikely]] {
		/*
		 * Refused after registration (a seccomp filter, say): no plain mode
		 * from this process any more; its operations take the ring, which
		 * is always correct. Nobody can have seen plainMode = 1 as a reason
		 * to apply plainly: only the role's holder (us) applies.
		 */
		/* Relaxed: no plain store was made; only the role's holder (us) reads it as a license. */
		line.plainMode.store(0, std::memory_order_relaxed);
		noPlainMode_ = true;
		return RMA_SUCCESS;
	}
	for (int r = 0; r < size(); ++r) {
		std::atomic<uint32_t> &busy = accLines_[r].fastOp;
		/* Acquire: pairs with the release in leaveFastOp(); that origin's RMW is complete. */
		int rc = waitUntil(call, "an origin's atomic operation", r,
				   [&busy] { return busy.load(std::memory_order_acquire) == 0; });
		if (rc != RMA_SUCCESS) {
			/* Relaxed: as above, nothing was applied plainly. */
			line.plainMode.store(0, std::memory_order_relaxed);
			return rc;
		}
	}
	return RMA_SUCCESS;
}

/*
 * The consumer role is held: end plain mode on @t if its lease ran out.
 * In-place applies renew the lease by storing 0 in plainSince (no clock
 * read on their path); the first check after that stamps the time. So the
 * lease ends between kPlainLeaseNs and twice that after the last renewal.
 */
void AccArea::endExpiredLease(int t) noexcept
{
	AccTargetLine &line = lines[t];
	/* Relaxed: only consumer-role holders write these, and we hold it (ordered by its acquire). */
	if (line.plainMode.load(std::memory_order_relaxed) == 0)
		return;
	const uint64_t since = line.plainSince.load(std::memory_order_relaxed);
	const uint64_t now = monotonicNs();
	if (since == 0)
		line.plainSince.store(now, std::memory_order_relaxed); /* renewed since the last check */
	else if (now - since > kPlainLeaseNs)
		leavePlain(t);
}

void AccArea::leavePlain(int t) noexcept
{
	/* Release: pairs with the acquire in enterFastOp(); our plain stores come before any later RMW. */
	lines[t].plainMode.store(0, std::memory_order_release);
}

void Window::endExpiredLease(int t)
{
	acc_.endExpiredLease(t);
}

void Window::leavePlain(int t)
{
	acc_.leavePlain(t);
}

/*
 * The apply of an in-place operation: @n elements at @addr, @t's consumer
 * role held and @t in plain mode (or a ring-only window, plain throughout);
 * @renew: renew plain mode's lease (endExpiredLease()).
 */
inline void Window::applyHoldingRole(int t, Op op, uint8_t elem, std::byte *addr, const void *origin, void *result,
			      size_t n, bool renew)
{
	AccTargetLine &line = accLines_[t];
	crossProcessAcquire(&line.plainMode); /* ThreadSanitizer: common/tsan.h */
	if (op == Op::NoOp)
		std::memcpy(result, addr, n * elemBytes(elem));
	else
		applyOpPlain(op, elem, addr, origin, result, n);
	crossProcessRelease(&line.plainMode);
	if (renew)
		/* Relaxed: later holders read it under the role, after our giveBackRole()'s release. */
		line.plainSince.store(0, std::memory_order_relaxed);
}

/*
 * applyInPlace()'s steady state, for inPlaceFast(): @n contiguous elements
 * (more than kFastBytes) at @addr, nothing of ours queued to @t, @t already
 * in plain mode (a lease an earlier in-place apply took, which this one
 * renews) or a ring-only window, its consumer role free and its ring empty.
 * False, having done nothing, for everything else (then applyInPlace(),
 * which enters plain mode, drains or queues).
 */
bool Window::applyLeased(int t, Op op, uint8_t elem, std::byte *addr, const void *origin, void *result, size_t n)
{
	if (accIssued_[t] != accApplied_[t] || !acc_.tryTakeRole(t, static_cast<uint64_t>(rank()) + 1)) [[unlikely]]
		return false;
	/*
	 * Relaxed: only holders of the role (us now) write plainMode; pending()
	 * is a hint: a record committed after this read was queued after our
	 * operation began, which MPI does not order against it (another origin's).
	 */
	if ((!plainApply_ && accLines_[t].plainMode.load(std::memory_order_relaxed) == 0) || rings_[t].pending())
		[[unlikely]] {
		acc_.giveBackRole(t);
		return false;
	}
	applyHoldingRole(t, op, elem, addr, origin, result, n, !plainApply_);
	acc_.giveBackRole(t);
	return true;
}

/*
 * A large contiguous operation applied by the origin itself, in plain mode,
 * while it holds @t's consumer role (Busy: the role is taken; queue it).
 */
int Window::applyInPlace(const char *call, const AccArgs &a, const TargetView &view, Op op, uint8_t elem, size_t n,
			 InPlace &outcome)
{
	const int t = a.target;
	outcome = InPlace::Busy;
	/* Our own queued records come first (ordering); they are not behind us after this. */
	if (accIssued_[t] != accApplied_[t])
		RMA_TRY(completeAccumulates(call, t));
	if (!acc_.tryTakeRole(t, static_cast<uint64_t>(rank()) + 1))
		return RMA_SUCCESS;
	AccTargetLine &line = accLines_[t];
	const bool large = static_cast<rma_count>(n * elemBytes(elem)) >= kInPlaceBytes;
	/* A small operation here only because plain mode was on: end the lease if it ran out. */
	if (!large && !plainApply_)
		endExpiredLease(t);
	/* Relaxed: only holders of the role (us now) write plainMode. */
	const bool leased = line.plainMode.load(std::memory_order_relaxed) != 0;
	if (!large && !leased && !plainApply_) {
		/* Not worth a membarrier(): queue it (atomics apply it, plain mode is off). */
		acc_.giveBackRole(t);
		return RMA_SUCCESS;
	}
	int rc = plainApply_ || leased ? RMA_SUCCESS : enterPlain(call, t);
	/*
	 * enterPlain() may give up (noPlainMode_): then leave the role and queue.
	 * Our origin atomics keep announcing themselves (enterFastOp) all the
	 * same, for the other processes' plain modes.
	 */
	if (rc == RMA_SUCCESS && (plainApply_ || leased || !noPlainMode_)) {
		/* Others' records queued before ours: applied first, plainly (applyRecord sees plain mode). */
		while (rings_[t].pending() &&
		       rings_[t].read([this, t](const MpscRecord &r) { applyRecord(t, r); }, 64) > 0) {
		}
		/*
		 * Stay plain for the lease; a later holder ends it (endExpiredLease).
		 * Only operations that need plain mode renew it: small ones come here
		 * only because it is on, and renewing for them would keep a stream
		 * of fetch_and_ops off their one-instruction atomic path for good.
		 */
		applyHoldingRole(t, op, elem, view.base, a.origin, a.result, n, !plainApply_ && large);
		outcome = InPlace::Done;
	}
	acc_.giveBackRole(t);
	return rc;
}

int Window::lockApply(const char *call, int t)
{
	std::atomic<uint64_t> &word = accLines_[t].applyLock;
	const uint64_t me = static_cast<uint64_t>(rank()) + 1;
	return waitUntil(call, "the accumulate lock of the target", -1, [&] {
		uint64_t v = 0;
		/* Acquire: pairs with the release in unlockApply(); the previous holder's writes are visible. */
		return word.load(std::memory_order_relaxed) == 0 &&
		       word.compare_exchange_weak(v, me, std::memory_order_acquire, std::memory_order_relaxed);
	});
}

void Window::unlockApply(int t)
{
	/* Release: pairs with the acquire in lockApply(). */
	accLines_[t].applyLock.store(0, std::memory_order_release);
}

int Window::compareAndSwap(const char *call, const void *origin, const void *compare, void *result,
			   rma_datatype type, int target, rma_aint disp, uint64_t *queuedSeq)
{
	if (stats_) [[unlikely]]
		return compareAndSwapCounted(call, origin, compare, result, type, target, disp, queuedSeq);
	return compareAndSwapBody(call, origin, compare, result, type, target, disp, queuedSeq);
}

int Window::compareAndSwapBody(const char *call, const void *origin, const void *compare, void *result,
			       rma_datatype type, int target, rma_aint disp, uint64_t *queuedSeq)
{
	RMA_TRY(checkAccess(call, target));
	if (queuedSeq)
		*queuedSeq = 0;
	if (target == RMA_PROC_NULL)
		return RMA_SUCCESS;
	const Datatype *d = lookupDatatype(type);
	if (!d || !d->predefined)
		return makeError(RMA_ERR_TYPE, "%s: the datatype must be a predefined type", call);
	const uint8_t elem = d->handleIndex;
	RMA_TRY(checkCompareAndSwapType(call, elem));
	TargetView view;
	RMA_TRY(checkTarget(call, target, disp, footprint(*d, 1), view));
	pendingOps_ = true;
#ifdef RMA_HAVE_NET
	if (view.reach == Reach::Remote) [[unlikely]] {
		accIssued_[target] = accApplied_[target] + 1;
		return remote_->compareAndSwap(call, target, disp * static_cast<rma_aint>(targets_[target].dispUnit), elem,
					       origin, compare, result);
	}
#endif
	const uint32_t eb = elemBytes(elem);

	if (accLocked_[target]) {
		std::byte cur[8];
		RMA_TRY(lockApply(call, target));
		int rc = transfer(call, view, cur, *d, 1, *d, 1, eb, false);
		if (rc == RMA_SUCCESS) {
			std::memcpy(result, cur, eb);
			if (std::memcmp(cur, compare, eb) == 0)
				rc = transfer(call, view, const_cast<void *>(origin), *d, 1, *d, 1, eb, true);
		}
		unlockApply(target);
		return rc;
	}
	if (accFast_[target] && (reinterpret_cast<uintptr_t>(view.base) & (eb - 1)) == 0) {
		if (accIssued_[target] != accApplied_[target] && !orderingNone_)
			RMA_TRY(completeAccumulates(call, target));
		if (enterFastOp(target)) {
			librma::compareAndSwap(elem, view.base, compare, origin, result);
			leaveFastOp(target);
			return RMA_SUCCESS;
		}
	}
	std::byte data[16];
	std::memcpy(data, compare, eb);
	std::memcpy(data + eb, origin, eb);
	size_t replyOffset;
	RMA_TRY(reserveReply(call, eb, replyOffset));
	AccRecord h{};
	h.targetOffset = view.base - targets_[target].base;
	h.dataBytes = 2 * eb;
	h.replyOffset = replyOffset;
	h.elem = elem;
	h.fetch = 1;
	RMA_TRY(queueRecord(call, target, kRecordCompareAndSwap, h, nullptr, data, 2 * eb));
	fetches_.push_back(PendingFetch{ target, accIssued_[target], replyOffset, eb, 0, static_cast<std::byte *>(result),
					 nullptr });
	if (queuedSeq)
		*queuedSeq = accIssued_[target];
	ringDoorbell(target);
	return RMA_SUCCESS;
}

} /* namespace librma */

namespace librma {

/*
 * The accumulate family for an origin on another host (win/remote.h), run
 * by this host's server thread. It applies the operation as the ring's
 * consumer would apply a record of it (applyByOrigin's rule): it takes
 * target @t's consumer role, with @origin's identity (a rank of another
 * host: no process here holds the role under it), applies the records
 * queued before it, then the operation, with atomics unless the target is
 * in plain mode; so it composes with local origin atomics and the ring.
 * Targets without shared memory take the apply lock (path 3) instead.
 * Never waits: @busy says the role or the lock is taken (retry later).
 * @nodes: the target type as flat runs, @count copies @extent apart from
 * byte @offset; @data the origin's values (CAS: origin then compare);
 * @old receives the previous values (nullptr: no fetch).
 */
int Window::applyRemote(int t, int origin, bool cas, Op op, uint8_t elem, const TypeNode *nodes, size_t nnodes,
			rma_aint extent, rma_count count, rma_aint offset, const std::byte *data, std::byte *old,
			uint64_t bytes, bool &busy)
{
	busy = false;
	const uint64_t me = static_cast<uint64_t>(origin) + 1;
	const TargetView &tv = targets_[t];
	const uint32_t eb = elemBytes(elem);
	if (tv.reach == Reach::Direct && !accLocked_[t]) {
		AccTargetLine &line = accLines_[t];
		if (!acc_.tryTakeRole(t, me))
			return remoteRingBusy(t, busy);
		endExpiredLease(t);
		/*
		 * Local origins' records: a few batches while we hold the role,
		 * never "until empty". Producers refilling the ring as fast as we
		 * drain it would keep this thread, which serves every window and
		 * connection of the host, here for as long as they run (and other
		 * hosts would take this host for dead). None of them orders this
		 * operation: a remote origin never queues in the ring.
		 */
		for (int batch = 0; batch < 4 && rings_[t].pending(); ++batch)
			if (rings_[t].read([this, t](const MpscRecord &r) { applyRecord(t, r); }, 64) == 0)
				break;
		/* Relaxed: only holders of the role (us) write plainMode. */
		const bool plain = plainApply_ || line.plainMode.load(std::memory_order_relaxed) != 0;
		if (plain)
			crossProcessAcquire(&line.plainMode); /* ThreadSanitizer: common/tsan.h */
		if (cas) {
			/* As applyRecord(): librma::compareAndSwap(elem, target, compare, origin, old). */
			librma::compareAndSwap(elem, tv.base + offset, data + eb, data, old);
		} else {
			BlockCursor cursor(nodes, nnodes, extent, count);
			applyAlong(cursor, tv.base + offset, op, elem, op == Op::NoOp ? nullptr : data, old, bytes, plain);
		}
		if (plain)
			crossProcessRelease(&line.plainMode);
		acc_.giveBackRole(t);
		return RMA_SUCCESS;
	}
	/* Where the elements are: mapped here (Direct), or in the target process (cross-memory attach). */
	Reach reach = tv.reach;
	std::byte *direct = tv.base;
	uint64_t remote = tv.remoteBase;
	/* Announced before the lookup, withdrawn after the write-back: the owner's detach waits for it (control.h). */
	RemoteAccess access(reach == Reach::Dynamic ? &attach_[t] : nullptr);
	if (reach == Reach::Dynamic) {
		/* @offset is an address: it must lie in the target's attached regions (never mapped from this thread). */
		BlockCursor span(nodes, nnodes, extent, count);
		rma_aint lo = INT64_MAX, hi = INT64_MIN;
		for (uint64_t left = bytes; left > 0 && !span.done();) {
			rma_count step = std::min<rma_count>(span.left(), static_cast<rma_count>(left));
			lo = std::min(lo, span.offset());
			hi = std::max(hi, span.offset() + step);
			left -= static_cast<uint64_t>(step);
			span.advance(step);
		}
		TargetView v;
		if (lo < hi)
			RMA_TRY(resolveDynamic("another host's accumulate", t, offset + lo, Footprint{ 0, hi - lo }, v, false));
		reach = t == rank() ? Reach::Direct : Reach::Process;
		direct = nullptr;
		remote = 0;
	}
	if (reach != Reach::Process && reach != Reach::Direct)
		return makeError(RMA_ERR_NOT_SUPPORTED, "accumulate to a target of this kind from another host");

	/* Path 3: the apply lock, then read, apply plainly, write back through cross-memory attach. */
	std::atomic<uint64_t> &word = accLines_[t].applyLock;
	uint64_t v = 0;
	/* Acquire: pairs with the release in unlockApply(). */
	if (word.load(std::memory_order_relaxed) != 0 ||
	    !word.compare_exchange_strong(v, me, std::memory_order_acquire, std::memory_order_relaxed))
		return remoteRingBusy(t, busy, true);
	std::vector<std::byte> cur(static_cast<size_t>(bytes));
	std::vector<iovec> far;
	BlockCursor cursor(nodes, nnodes, extent, count);
	for (uint64_t left = bytes; left > 0 && !cursor.done();) {
		rma_count step = std::min<rma_count>(cursor.left(), static_cast<rma_count>(left));
		/* The server's own plain memory is Direct here (but still locked: the others reach it by attach). */
		const uint64_t where = static_cast<uint64_t>(offset + cursor.offset());
		void *at = reach == Reach::Direct ? (direct ? static_cast<void *>(direct + where)
							     : reinterpret_cast<void *>(static_cast<uintptr_t>(where)))
						  : reinterpret_cast<void *>(remote + where);
		far.push_back({ at, static_cast<size_t>(step) });
		left -= static_cast<uint64_t>(step);
		cursor.advance(step);
	}
	auto move = [&](bool write) {
		size_t at = 0;
		for (const iovec &r : far) {
			if (reach == Reach::Direct) {
				if (write)
					std::memcpy(r.iov_base, cur.data() + at, r.iov_len);
				else
					std::memcpy(cur.data() + at, r.iov_base, r.iov_len);
				at += r.iov_len;
				continue;
			}
			iovec l{ cur.data() + at, r.iov_len };
			ssize_t n = write ? process_vm_writev(tv.pid, &l, 1, &r, 1, 0) : process_vm_readv(tv.pid, &l, 1, &r, 1, 0);
			if (n != static_cast<ssize_t>(r.iov_len))
				return n < 0 ? errno : EIO;
			at += r.iov_len;
		}
		return 0;
	};
	int err = move(false);
	if (!err) {
		if (old)
			std::memcpy(old, cur.data(), cur.size());
		bool write = true;
		if (cas) {
			write = std::memcmp(cur.data(), data + eb, eb) == 0;
			if (write)
				std::memcpy(cur.data(), data, eb);
		} else if (op == Op::NoOp) {
			write = false;
		} else if (isPairElem(elem)) {
			const uint32_t vb = detail::kElemInfo[elem].valueBytes;
			for (size_t off = 0; off + eb <= cur.size(); off += eb)
				applyPairOp(op, elem, cur.data() + off, cur.data() + off + vb, data + off, nullptr);
		} else {
			applyOpPlain(op, elem, cur.data(), data, nullptr, cur.size() / eb);
		}
		if (write)
			err = move(true);
	}
	unlockApply(t);
	if (err)
		return makeErrnoError(err == ESRCH ? RMA_ERR_PROC_FAILED : RMA_ERR_INTERN, err,
				      "cross-memory access to process %d for another host's accumulate failed",
				      static_cast<int>(tv.pid));
	return RMA_SUCCESS;
}

} /* namespace librma */
