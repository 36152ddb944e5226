/* SPDX-License-Identifier: MIT */
/*
 * rmabench's tests, written once against rmabench_backend.h.
 *
 * Roles: in most tests rank 0 is the origin and rank 1 the target; other
 * ranks are bystanders that only join collective synchronization. In
 * put_bibw ranks 0 and 1 are both. In contention rank 0 is the target and
 * every other rank an origin.
 *
 * Every rank runs the same loops with the same counts (they follow from the
 * options alone), so active modes (fence, pscw) stay in step. In passive
 * modes the target never enters the loops: it waits in a barrier (idle) or,
 * with --busy-target, computes without calling the library until the origins
 * say, through memory both map, that they are done.
 *
 * Times are bulk-timed over blocks of iterations (a clock read per operation
 * would cost as much as the operation); a row reports the mean and the
 * min / median / p99 of the block means.
 *
 * --verify checks every result after the synchronization that completes it:
 * puts and accumulates are read back with a get in the same sync mode, gets
 * and fetching atomics are compared with a model of the target's memory the
 * origin keeps. RMA_BENCH_CORRUPT=1 (a test-only hook) flips one byte of
 * the first result checked, to prove the check fails.
 */
#include "rmabench_tests.h"

#include <linux/mempolicy.h>
#include <sched.h>
#include <sys/syscall.h>
#include <sys/utsname.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cinttypes>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <iterator>
#include <memory>
#include <sstream>

namespace rmabench {

size_t elemSize(Elem e)
{
	switch (e) {
	case Elem::Byte:
		return 1;
	case Elem::Int32:
	case Elem::Float:
		return 4;
	case Elem::Int64:
	case Elem::Uint64:
	case Elem::Double:
		return 8;
	}
	return 1;
}

const char *testName(Test t)
{
	static const char *const names[] = { "latency", "bandwidth", "bibw", "rate",
					     "lock",	"flush",     "fence", "contention", "win_create" };
	return names[static_cast<int>(t)];
}

const char *opName(Operation o)
{
	static const char *const names[] = { "put", "get", "acc", "get_acc", "fop", "cas" };
	return names[static_cast<int>(o)];
}

const char *syncName(Sync s)
{
	static const char *const names[] = { "fence", "pscw", "lock", "lock_all", "flush", "flush_local" };
	return names[static_cast<int>(s)];
}

const char *flavorName(Flavor f)
{
	static const char *const names[] = { "allocate", "allocate_shared", "create", "dynamic" };
	return names[static_cast<int>(f)];
}

const char *shapeName(Shape s)
{
	static const char *const names[] = { "contiguous", "vector", "indexed" };
	return names[static_cast<int>(s)];
}

const char *elemName(Elem e)
{
	static const char *const names[] = { "byte", "int32", "int64", "uint64", "float", "double" };
	return names[static_cast<int>(e)];
}

const char *accOpName(AccOp o)
{
	static const char *const names[] = { "sum", "prod", "max", "min", "band", "bor", "bxor", "replace", "no_op" };
	return names[static_cast<int>(o)];
}

std::string Run::get(const std::string &key) const
{
	for (const auto &kv : meta)
		if (kv.first == key)
			return kv.second;
	return "";
}

bool higherIsBetter(const std::string &unit)
{
	return unit != "us";
}

namespace {

constexpr int kVerifyFailed = 3;

/* ---- Buffers and layouts --------------------------------------------------- */

/* Page-aligned, zeroed memory (OSU aligns too: a misaligned source slows rep movsb). */
struct PageBuffer {
	explicit PageBuffer(size_t bytes = 0) { resize(bytes); }
	void resize(size_t bytes)
	{
		size_ = std::max<size_t>(bytes, 64);
		data_.reset(static_cast<std::byte *>(std::aligned_alloc(4096, (size_ + 4095) / 4096 * 4096)));
		std::memset(data_.get(), 0, size_);
	}
	std::byte *data() const { return data_.get(); }
	size_t size() const { return size_; }

private:
	struct Free {
		void operator()(std::byte *p) const { std::free(p); }
	};
	std::unique_ptr<std::byte, Free> data_;
	size_t size_ = 0;
};

/*
 * What one operation moves: @count x @type, covering @blocks (offset,
 * bytes) of a @footprint-byte span, the same on origin and target. Vector
 * and indexed shapes move blocks of 8 bytes (or one element if larger),
 * vector with a gap of one block, indexed with gaps of two and three.
 */
struct Layout {
	Handle type = 0;
	int count = 0;
	bool derived = false;
	size_t payload = 0;
	size_t footprint = 0;
	std::vector<std::pair<size_t, size_t>> blocks;

	Layout() = default;
	Layout(const Layout &) = delete;
	Layout &operator=(const Layout &) = delete;
	~Layout()
	{
		if (derived)
			be::freeType(type);
	}
};

void makeLayout(Layout &l, Shape shape, Elem elem, size_t payload)
{
	const size_t es = elemSize(elem);
	const size_t blockBytes = std::max<size_t>(8, es);
	const int blockElems = static_cast<int>(blockBytes / es);
	Handle basic = be::basicType(elem);
	if (shape == Shape::Contiguous) {
		payload = std::max(es, payload / es * es);
		l.type = basic;
		l.count = static_cast<int>(payload / es);
		l.payload = payload;
		l.footprint = payload;
		l.blocks = { { 0, payload } };
		return;
	}
	const int nb = static_cast<int>(std::max<size_t>(1, payload / blockBytes));
	l.payload = static_cast<size_t>(nb) * blockBytes;
	l.count = 1;
	l.derived = true;
	if (shape == Shape::Vector) {
		l.type = be::vectorType(nb, blockElems, 2 * blockElems, basic);
		for (int i = 0; i < nb; ++i)
			l.blocks.push_back({ static_cast<size_t>(i) * 2 * blockBytes, blockBytes });
	} else {
		std::vector<int> lens(nb, blockElems), displs(nb);
		int d = 0;
		for (int i = 0; i < nb; ++i) {
			displs[i] = d;
			l.blocks.push_back({ static_cast<size_t>(d) * es, blockBytes });
			d += blockElems * (i % 2 ? 3 : 2);
		}
		l.type = be::indexedType(nb, lens.data(), displs.data(), basic);
	}
	l.footprint = l.blocks.back().first + l.blocks.back().second;
}

/* The footprint of the largest payload, without building its datatype. */
size_t footprintFor(Shape shape, Elem elem, size_t payload)
{
	const size_t es = elemSize(elem);
	const size_t blockBytes = std::max<size_t>(8, es);
	if (shape == Shape::Contiguous)
		return std::max(es, payload);
	size_t nb = std::max<size_t>(1, payload / blockBytes);
	return shape == Shape::Vector ? (2 * nb - 1) * blockBytes : (nb / 2 * 5 + nb % 2 * 2) * blockBytes + blockBytes;
}

/* ---- Element arithmetic for the verification model ------------------------- */

template<typename T>
T applyOp(AccOp op, T a, T b)
{
	switch (op) {
	case AccOp::Sum:
		return static_cast<T>(a + b);
	case AccOp::Prod:
		return static_cast<T>(a * b);
	case AccOp::Max:
		return std::max(a, b);
	case AccOp::Min:
		return std::min(a, b);
	case AccOp::Replace:
		return b;
	case AccOp::NoOp:
		return a;
	default:
		break;
	}
	if constexpr (std::is_integral_v<T>) {
		if (op == AccOp::Band)
			return a & b;
		if (op == AccOp::Bor)
			return a | b;
		return a ^ b;
	}
	return a;
}

/* The origin's value at step @s: exact in every type, no overflow. */
template<typename T>
T stepValue(AccOp op, long s)
{
	switch (op) {
	case AccOp::Sum:
		return static_cast<T>(1 + s % 3);
	case AccOp::Prod:
		return static_cast<T>(1);
	case AccOp::Max:
	case AccOp::Replace:
		return static_cast<T>(s % 1000);
	case AccOp::Min:
		return static_cast<T>(1000 - s % 1000);
	default:
		break;
	}
	if constexpr (std::is_integral_v<T>)
		return static_cast<T>(op == AccOp::Band ? ~(T(1) << (s % 7)) : T(1) << (s % 7));
	return static_cast<T>(s % 100);
}

template<typename Fn>
void withType(Elem e, Fn &&fn)
{
	switch (e) {
	case Elem::Byte:
		fn(uint8_t{});
		break;
	case Elem::Int32:
		fn(int32_t{});
		break;
	case Elem::Int64:
		fn(int64_t{});
		break;
	case Elem::Uint64:
		fn(uint64_t{});
		break;
	case Elem::Float:
		fn(float{});
		break;
	case Elem::Double:
		fn(double{});
		break;
	}
}

/* Fill the payload of @l in @buf with the value of step @s. */
void fillStep(Elem e, AccOp op, const Layout &l, std::byte *buf, long s)
{
	withType(e, [&](auto zero) {
		using T = decltype(zero);
		T v = stepValue<T>(op, s);
		for (auto [off, len] : l.blocks)
			for (size_t i = 0; i < len; i += sizeof(T))
				std::memcpy(buf + off + i, &v, sizeof(T));
	});
}

/* model[block elements] = op(model, src) */
void applyModel(Elem e, AccOp op, const Layout &l, std::byte *model, const std::byte *src)
{
	withType(e, [&](auto zero) {
		using T = decltype(zero);
		for (auto [off, len] : l.blocks)
			for (size_t i = 0; i < len; i += sizeof(T)) {
				T a, b;
				std::memcpy(&a, model + off + i, sizeof(T));
				std::memcpy(&b, src + off + i, sizeof(T));
				a = applyOp(op, a, b);
				std::memcpy(model + off + i, &a, sizeof(T));
			}
	});
}

/* The byte a get test finds at @offset of rank @r's window. */
inline std::byte pattern(int r, size_t offset)
{
	return static_cast<std::byte>((offset * 7 + static_cast<size_t>(r) * 13 + 3) & 0xff);
}

/* ---- Machine facts --------------------------------------------------------- */

std::string firstLine(const char *path, const char *prefix)
{
	std::ifstream in(path);
	std::string line;
	while (std::getline(in, line)) {
		if (line.rfind(prefix, 0) == 0) {
			auto colon = line.find(':');
			std::string v = colon == std::string::npos ? line : line.substr(colon + 1);
			v.erase(0, v.find_first_not_of(" \t"));
			return v;
		}
	}
	return "?";
}

/* The kernel page size backing @addr, from /proc/self/smaps (0 if unknown). */
long pageSizeOf(const void *addr)
{
	std::ifstream in("/proc/self/smaps");
	std::string line;
	auto a = reinterpret_cast<uintptr_t>(addr);
	bool inside = false;
	while (std::getline(in, line)) {
		uintptr_t lo, hi;
		if (std::sscanf(line.c_str(), "%" SCNxPTR "-%" SCNxPTR " ", &lo, &hi) == 2 && line.find(':') > 20) {
			inside = a >= lo && a < hi;
			continue;
		}
		long kb;
		if (inside && std::sscanf(line.c_str(), "KernelPageSize: %ld kB", &kb) == 1)
			return kb * 1024;
	}
	return 0;
}

/* The NUMA node holding the page at @addr (-1 if unknown). */
int nodeOf(const void *addr)
{
	int node = -1;
	if (syscall(SYS_get_mempolicy, &node, nullptr, 0, addr, MPOL_F_NODE | MPOL_F_ADDR) != 0)
		return -1;
	return node;
}

std::string cpuList(const cpu_set_t &set)
{
	std::string out;
	for (int c = 0; c < CPU_SETSIZE; ++c) {
		if (!CPU_ISSET(c, &set))
			continue;
		int e = c;
		while (e + 1 < CPU_SETSIZE && CPU_ISSET(e + 1, &set))
			++e;
		if (!out.empty())
			out += ',';
		out += e == c ? std::to_string(c) : std::to_string(c) + "-" + std::to_string(e);
		c = e;
	}
	return out;
}

struct RankFacts {
	int cpu;
	int node;
	long pageSize;
	char allowed[48];
	char host[64]; /* gethostname(): ranks on one host share memory, the others talk TCP */
};

/* ---- The bench ------------------------------------------------------------- */

class Bench
{
public:
	Bench(const Options &o, Run &run) : o_(o), run_(run) {}
	int run();

private:
	/* Setup */
	void chooseRoles();
	size_t windowBytes() const;
	void initWindow();
	void header(const std::vector<RankFacts> &facts, const WinReport &rep);

	/* One timed step and its pieces */
	void issue(const Layout &l, int target, int k);
	template<typename Fn>
	void step(Fn &&fn);
	void openEpoch();
	void closeEpoch();
	Disp dispAt(int target, size_t offset) const { return win_.disp0[target] + static_cast<Disp>(offset); }
	size_t region() const;

	/* Verification */
	void prepareStep(const Layout &l, long s);
	void verifyStep(const Layout &l, long s);
	void compare(const std::byte *got, const std::byte *want, const Layout &l, long s, const char *what);
	void compareBytes(const std::byte *got, const std::byte *want, size_t n, size_t at, long s, const char *what);
	[[noreturn]] void verifyFailed(const std::string &msg);
	void maybeCorrupt(std::byte *result);

	/* Tests */
	template<typename Fn>
	std::vector<double> timeBlocks(long iters, long block, Fn &&fn);
	bool tightCase(const Layout &l, be::TightCase &c) const;
	int sizeSweep();
	void sizelessTest();
	void windowCreateTest();
	double rawBarrierMicros(long iters);
	void finishPassive();
	void contentionSummary(const PageBuffer &expect);
	void calibrateCompute();

	long itersFor(long size, long small, long large) const;
	long skipFor(long iters) const { return o_.skip >= 0 ? o_.skip : std::max<long>(iters / 10, 1); }
	bool fetching() const { return o_.op == Operation::GetAcc || o_.op == Operation::Fop || o_.op == Operation::Cas; }
	bool atomicOp() const { return o_.op != Operation::Put && o_.op != Operation::Get; }
	long opsPerStep() const;

	const Options &o_;
	Run &run_;
	int rank_ = 0, size_ = 0;
	bool origin_ = false, target_ = false;
	int peer_ = 1; /* whom an origin targets */
	bool passive_ = false;
	std::vector<int> origins_, targets_;
	Handle startGroup_ = 0, postGroup_ = 0;
	Window win_;
	Window doneWin_;
	uint64_t *doneCount_ = nullptr; /* accessed through std::atomic_ref only; nullptr when the job spans hosts */
	bool oneHost_ = true;
	int doneRank_ = -1; /* across hosts: the rank whose window holds the done flag */
	Handle op_ = 0;
	Elem elem_ = Elem::Byte;
	PageBuffer originBuf_, resultBuf_, checkBuf_, compareBuf_, model_;
	long steps_ = 0;	 /* steps run so far: the verification stamp */
	uint64_t casSeen_ = 0;	 /* contention cas: the counter value last seen */
	uint64_t casWins_ = 0;	 /* contention cas: successful swaps */
	double lastFetched_ = -1; /* contention: the previous fetched value */
	bool corrupt_ = false;
	double computeAlone_ = 0;  /* busy target: compute chunks per second with no origin running */
	double computeShare_ = -1; /* busy target: its rate during the test / computeAlone_ */
	std::vector<double> gathered_;	 /* contention: this origin's block means, per size */
	std::vector<size_t> blockCounts_; /* contention: blocks per size (the same on every rank) */
};

long Bench::opsPerStep() const
{
	switch (o_.test) {
	case Test::Bandwidth:
	case Test::Bibw:
	case Test::Rate:
		return o_.window;
	default:
		return 1;
	}
}

size_t Bench::region() const
{
	/* Contention puts/gets: each origin has its own region of the target, so each can check its data. */
	return footprintFor(o_.shape, elem_, static_cast<size_t>(o_.maxSize));
}

void Bench::chooseRoles()
{
	passive_ = o_.sync == Sync::Lock || o_.sync == Sync::LockAll || o_.sync == Sync::Flush ||
		   o_.sync == Sync::FlushLocal;
	switch (o_.test) {
	case Test::Fence:
		for (int r = 0; r < size_; ++r)
			origins_.push_back(r);
		origin_ = true;
		return;
	case Test::Bibw:
		origins_ = { 0, 1 };
		targets_ = { 0, 1 };
		origin_ = target_ = rank_ <= 1;
		peer_ = rank_ == 0 ? 1 : 0;
		break;
	case Test::Contention:
		targets_ = { 0 };
		for (int r = 1; r < size_; ++r)
			origins_.push_back(r);
		origin_ = rank_ != 0;
		target_ = rank_ == 0;
		peer_ = 0;
		break;
	default:
		origins_ = { 0 };
		targets_ = { 1 };
		origin_ = rank_ == 0;
		target_ = rank_ == 1;
		peer_ = 1;
		break;
	}
	if (o_.sync == Sync::Pscw) {
		if (origin_)
			startGroup_ = be::group(o_.test == Test::Bibw ? std::vector<int>{ peer_ } : targets_);
		if (target_)
			postGroup_ = be::group(o_.test == Test::Bibw ? std::vector<int>{ peer_ } : origins_);
	}
}

size_t Bench::windowBytes() const
{
	if (o_.test == Test::WinCreate)
		return 64; /* the test makes its own windows */
	size_t fp = footprintFor(o_.shape, elem_, static_cast<size_t>(o_.maxSize));
	if (o_.test == Test::Contention && !atomicOp())
		fp *= static_cast<size_t>(std::max(1, size_ - 1));
	return std::max<size_t>(fp, 64);
}

void Bench::initWindow()
{
	/* Gets find a known pattern; accumulates start from zero. Local stores, made visible by the fence. */
	if (o_.op == Operation::Get)
		for (size_t i = 0; i < win_.bytes; ++i)
			win_.base[i] = pattern(rank_, i);
	else
		std::memset(win_.base, 0, win_.bytes);
	be::fence(o_.sync == Sync::Fence ? 0 : 1, win_.win);
}

void Bench::openEpoch()
{
	if (origin_ && (o_.sync == Sync::Flush || o_.sync == Sync::FlushLocal))
		be::lockAll(win_.win);
}

void Bench::closeEpoch()
{
	if (origin_ && (o_.sync == Sync::Flush || o_.sync == Sync::FlushLocal))
		be::unlockAll(win_.win);
}

/* Operation @k of a step at @target (fetching ops under --verify keep one result slot per op). */
void Bench::issue(const Layout &l, int target, int k)
{
	size_t at = o_.test == Test::Contention && !atomicOp() ? static_cast<size_t>(rank_ - 1) * region() : 0;
	Disp disp = dispAt(target, at);
	Handle w = win_.win;
	switch (o_.op) {
	case Operation::Put:
		be::put(originBuf_.data(), l.count, l.type, target, disp, l.count, l.type, w);
		break;
	case Operation::Get:
		be::get(resultBuf_.data(), l.count, l.type, target, disp, l.count, l.type, w);
		break;
	case Operation::Acc:
		be::accumulate(originBuf_.data(), l.count, l.type, target, disp, l.count, l.type, op_, w);
		break;
	case Operation::GetAcc: {
		std::byte *result = resultBuf_.data() + (o_.verify ? static_cast<size_t>(k) * l.footprint : 0);
		be::getAccumulate(originBuf_.data(), l.count, l.type, result, l.count, l.type, target, disp, l.count,
				  l.type, op_, w);
		break;
	}
	case Operation::Fop:
		be::fetchAndOp(originBuf_.data(), resultBuf_.data() + static_cast<size_t>(k) * 8, l.type, target, disp,
			       op_, w);
		break;
	case Operation::Cas:
		be::compareAndSwap(originBuf_.data(), compareBuf_.data(), resultBuf_.data() + static_cast<size_t>(k) * 8,
				   l.type, target, disp, w);
		break;
	}
}

/*
 * One step: @fn issues the operations (origins only), then the sync mode
 * completes them. Bystanders join fences; targets post/wait in pscw.
 */
template<typename Fn>
void Bench::step(Fn &&fn)
{
	Handle w = win_.win;
	switch (o_.sync) {
	case Sync::Fence:
		if (origin_)
			fn();
		be::fence(0, w);
		break;
	case Sync::Pscw:
		if (target_)
			be::post(postGroup_, w);
		if (origin_) {
			be::start(startGroup_, w);
			fn();
			be::complete(w);
		}
		if (target_)
			be::wait(w);
		break;
	case Sync::Lock:
		if (origin_) {
			be::lock(o_.exclusive, peer_, w);
			fn();
			be::unlock(peer_, w);
		}
		break;
	case Sync::LockAll:
		if (origin_) {
			be::lockAll(w);
			fn();
			be::unlockAll(w);
		}
		break;
	case Sync::Flush:
		if (origin_) {
			fn();
			be::flush(peer_, w);
		}
		break;
	case Sync::FlushLocal:
		if (origin_) {
			fn();
			be::flushLocal(peer_, w);
		}
		break;
	}
}

/* ---- Verification ------------------------------------------------------------ */

void Bench::verifyFailed(const std::string &msg)
{
	std::fprintf(stderr, "rmabench: --verify: rank %d: %s%s\n", rank_, msg.c_str(),
		     corrupt_ ? " (RMA_BENCH_CORRUPT=1 corrupted a result on purpose)" : "");
	std::fflush(stderr);
	be::abort(kVerifyFailed);
}

/* The test-only hook: with RMA_BENCH_CORRUPT=1, flip a byte of the first result checked. */
void Bench::maybeCorrupt(std::byte *result)
{
	if (corrupt_)
		return;
	if (const char *c = std::getenv("RMA_BENCH_CORRUPT"); c && std::strcmp(c, "1") == 0) {
		corrupt_ = true;
		result[0] ^= std::byte{ 0x5a };
	}
}

void Bench::compareBytes(const std::byte *got, const std::byte *want, size_t n, size_t at, long s, const char *what)
{
	if (std::memcmp(got, want, n) == 0)
		return;
	size_t i = 0;
	while (got[i] == want[i])
		++i;
	char msg[256];
	std::snprintf(msg, sizeof(msg), "%s %s, step %ld: byte %zu is 0x%02x, expected 0x%02x", opName(o_.op), what,
		      s, at + i, static_cast<unsigned>(got[i]), static_cast<unsigned>(want[i]));
	verifyFailed(msg);
}

void Bench::compare(const std::byte *got, const std::byte *want, const Layout &l, long s, const char *what)
{
	for (auto [off, len] : l.blocks)
		compareBytes(got + off, want + off, len, off, s, what);
}

/* Before step @s: the origin's values for it (and, for cas, what to compare with). */
void Bench::prepareStep(const Layout &l, long s)
{
	if (!o_.verify)
		return;
	if (o_.op == Operation::Put) {
		for (auto [off, len] : l.blocks)
			for (size_t i = 0; i < len; ++i)
				originBuf_.data()[off + i] = static_cast<std::byte>((s * 31 + (off + i) + rank_) & 0xff);
		return;
	}
	if (o_.op == Operation::Get)
		return;
	if (o_.test == Test::Contention) {
		/* Every origin adds one (or, for cas, increments the value it last saw). */
		withType(elem_, [&](auto zero) {
			using T = decltype(zero);
			T one = 1, seen = static_cast<T>(casSeen_), next = static_cast<T>(casSeen_ + 1);
			if (o_.op == Operation::Cas) {
				std::memcpy(compareBuf_.data(), &seen, sizeof(T));
				std::memcpy(originBuf_.data(), &next, sizeof(T));
			} else {
				for (auto [off, len] : l.blocks)
					for (size_t i = 0; i < len; i += sizeof(T))
						std::memcpy(originBuf_.data() + off + i, &one, sizeof(T));
			}
		});
		return;
	}
	fillStep(elem_, o_.accOp, l, originBuf_.data(), s);
	if (o_.op == Operation::Cas) {
		/* Every other step compares with a value the target does not hold. */
		std::memcpy(compareBuf_.data(), model_.data(), elemSize(elem_));
		if (s % 2)
			compareBuf_.data()[0] ^= std::byte{ 1 };
	}
}

/* After step @s completed: check what it fetched or wrote. */
void Bench::verifyStep(const Layout &l, long s)
{
	if (!o_.verify)
		return;
	const long ops = opsPerStep();
	auto hook = [&](std::byte *p) { maybeCorrupt(p); };
	const bool contention = o_.test == Test::Contention;
	size_t at = contention && !atomicOp() ? static_cast<size_t>(rank_ - 1) * region() : 0;

	if (o_.op == Operation::Get) {
		if (!origin_)
			return;
		PageBuffer want(l.footprint);
		for (auto [off, len] : l.blocks)
			for (size_t i = 0; i < len; ++i)
				want.data()[off + i] = pattern(peer_, at + off + i);
		hook(resultBuf_.data() + l.blocks[0].first);
		compare(resultBuf_.data(), want.data(), l, s, "result");
		return;
	}
	if (fetching()) {
		if (!origin_)
			return;
		/* Each fetched result against the model, one op at a time. */
		for (long k = 0; k < ops; ++k) {
			std::byte *res = resultBuf_.data() + static_cast<size_t>(k) * (o_.op == Operation::GetAcc ? l.footprint : 8);
			hook(res + l.blocks[0].first);
			if (contention) {
				double v = 0;
				withType(elem_, [&](auto zero) {
					using T = decltype(zero);
					T t;
					std::memcpy(&t, res + l.blocks[0].first, sizeof(T));
					v = static_cast<double>(t);
				});
				bool ok = o_.op == Operation::Cas ? v >= lastFetched_ : v > lastFetched_;
				if (!ok) {
					char msg[160];
					std::snprintf(msg, sizeof(msg),
						      "%s under contention, step %ld: fetched %.0f after %.0f (the shared counter went back)",
						      opName(o_.op), s, v, lastFetched_);
					verifyFailed(msg);
				}
				lastFetched_ = v;
				if (o_.op == Operation::Cas) {
					if (static_cast<uint64_t>(v) == casSeen_) {
						++casWins_;
						++casSeen_;
					} else {
						casSeen_ = static_cast<uint64_t>(v);
					}
				}
				continue;
			}
			compare(res, model_.data(), l, s, "fetched value");
			if (o_.op == Operation::Cas) {
				if (std::memcmp(compareBuf_.data(), model_.data(), elemSize(elem_)) == 0)
					std::memcpy(model_.data(), originBuf_.data(), elemSize(elem_));
			} else {
				applyModel(elem_, o_.accOp, l, model_.data(), originBuf_.data());
			}
		}
		return;
	}
	if (o_.op == Operation::Acc && origin_ && !contention)
		for (long k = 0; k < ops; ++k)
			applyModel(elem_, o_.accOp, l, model_.data(), originBuf_.data());
	if (contention && atomicOp())
		return; /* the target checks the total at the end */

	/* Puts and accumulates: read the target back in the same sync mode. */
	step([&] {
		be::get(checkBuf_.data(), l.count, l.type, peer_, dispAt(peer_, at), l.count, l.type, win_.win);
	});
	if (!origin_)
		return;
	hook(checkBuf_.data() + l.blocks[0].first);
	compare(checkBuf_.data(), o_.op == Operation::Put ? originBuf_.data() : model_.data(), l, s, "read back");
}

/* ---- Timing ------------------------------------------------------------------ */

long Bench::itersFor(long size, long small, long large) const
{
	if (o_.iterations)
		return o_.iterations;
	return size <= 8192 ? small : std::max<long>(large * 8192 / size, 20);
}

/*
 * Whether a latency step of layout @l can run as one tight loop (@c): one
 * operation per step, no verification, a synchronization that is the
 * origin's alone or a fence (PSCW needs the target's side of each step).
 */
bool Bench::tightCase(const Layout &l, be::TightCase &c) const
{
	if (o_.test != Test::Latency || o_.verify || opsPerStep() != 1 || o_.sync == Sync::Pscw)
		return false;
	/* By Sync: Fence, Pscw (refused above), Lock, LockAll, Flush, FlushLocal. */
	static constexpr be::TightSync kSyncs[] = { be::TightSync::Fence, be::TightSync::Fence,
						    be::TightSync::Lock,  be::TightSync::LockAll,
						    be::TightSync::Flush, be::TightSync::FlushLocal };
	static_assert(std::size(kSyncs) == static_cast<std::size_t>(Sync::FlushLocal) + 1 &&
			      static_cast<int>(Sync::Fence) == 0 && static_cast<int>(Sync::Lock) == 2 &&
			      static_cast<int>(Sync::Flush) == 4,
		      "kSyncs follows enum Sync's order");
	c.sync = o_.sync == Sync::Lock && o_.exclusive ? be::TightSync::LockExclusive
							: kSyncs[static_cast<int>(o_.sync)];
	/* By Operation: Put, Get, Acc, GetAcc, Fop, Cas. */
	static constexpr be::TightOp kOps[] = { be::TightOp::Put, be::TightOp::Get,	be::TightOp::Acc,
						be::TightOp::GetAcc, be::TightOp::Fop, be::TightOp::Cas };
	static_assert(std::size(kOps) == static_cast<std::size_t>(Operation::Cas) + 1 &&
			      static_cast<int>(Operation::Put) == 0 && static_cast<int>(Operation::Acc) == 2,
		      "kOps follows enum Operation's order");
	/* A fence's ranks that are not origins take part in each fence with no operation (step()). */
	c.op = origin_ ? kOps[static_cast<int>(o_.op)] : be::TightOp::None;
	c.origin = originBuf_.data();
	c.result = resultBuf_.data();
	c.compare = compareBuf_.data();
	c.count = l.count;
	c.type = l.type;
	c.target = peer_;
	c.disp = dispAt(peer_, 0);
	c.accOp = op_;
	c.win = win_.win;
	return true;
}

/* @skip untimed rounds of @c, then the mean time per round in blocks of @block (be::tightLoop). */
std::vector<double> timeTight(const be::TightCase &c, long skip, long iters, long block)
{
	be::tightLoop(c, skip);
	std::vector<double> out;
	for (long done = 0; done < iters; done += block) {
		const long n = std::min(block, iters - done);
		const double t0 = be::wtime();
		be::tightLoop(c, n);
		out.push_back((be::wtime() - t0) / static_cast<double>(n));
	}
	return out;
}

/* Mean time of @fn per call, in blocks of @block calls. */
template<typename Fn>
std::vector<double> Bench::timeBlocks(long iters, long block, Fn &&fn)
{
	std::vector<double> out;
	for (long done = 0; done < iters; done += block) {
		long n = std::min(block, iters - done);
		double t0 = be::wtime();
		for (long i = 0; i < n; ++i)
			fn();
		out.push_back((be::wtime() - t0) / static_cast<double>(n));
	}
	return out;
}

void summarize(std::vector<double> blocks, Row &row, double scale)
{
	std::sort(blocks.begin(), blocks.end());
	row.min = blocks.front() * scale;
	row.median = blocks[blocks.size() / 2] * scale;
	row.p99 = blocks[std::min(blocks.size() - 1, static_cast<size_t>(static_cast<double>(blocks.size()) * 0.99))] *
		  scale;
}

double memcpyBandwidth(size_t bytes, long reps)
{
	PageBuffer a(bytes), b(bytes);
	std::memset(a.data(), 1, bytes);
	for (int i = 0; i < 3; ++i)
		std::memcpy(b.data(), a.data(), bytes);
	double t0 = be::wtime();
	for (long i = 0; i < reps; ++i) {
		std::memcpy(b.data(), a.data(), bytes);
		asm volatile("" ::"r"(b.data()) : "memory");
	}
	double t = be::wtime() - t0;
	return static_cast<double>(bytes) * static_cast<double>(reps) / t / 1e6;
}

/* The sizes a sweep visits. */
std::vector<long> sweep(const Options &o, long minimum)
{
	std::vector<long> out;
	if (!o.sizes.empty()) {
		for (long s : o.sizes)
			out.push_back(std::max(s, minimum));
		return out;
	}
	for (long s = std::max(o.minSize, minimum); s <= o.maxSize; s *= 2)
		out.push_back(s);
	if (out.empty())
		out.push_back(minimum);
	return out;
}

int Bench::sizeSweep()
{
	const bool sizeless = o_.op == Operation::Fop || o_.op == Operation::Cas;
	const long es = static_cast<long>(elemSize(elem_));
	std::vector<long> sizes = sizeless ? std::vector<long>{ es } : sweep(o_, atomicOp() ? es : 1);
	const long ops = opsPerStep();
	const long nOrigins = static_cast<long>(origins_.size());
	/* The target's expected totals under contention: every origin adds one per op. */
	PageBuffer expect(win_.bytes);

	for (long sz : sizes) {
		Layout l;
		makeLayout(l, sizeless ? Shape::Contiguous : o_.shape, elem_, static_cast<size_t>(sz));
		Row row;
		row.size = static_cast<long>(l.payload);
		long iters, block;
		switch (o_.test) {
		case Test::Latency:
		case Test::Contention:
			iters = itersFor(sz, passive_ ? 100000 : 10000, 1000);
			block = passive_ ? 1000 : 100;
			break;
		default:
			iters = itersFor(sz, 1000, 100);
			block = 10;
			break;
		}
		block = std::min(block, std::max<long>(iters / 10, 1));
		long skip = skipFor(iters);
		row.iterations = iters;
		if (o_.op == Operation::Fop || o_.op == Operation::Cas || o_.op == Operation::Acc) {
			/* Start each size from the origin's values (acc/fop/cas read originBuf only). */
			fillStep(elem_, o_.accOp == AccOp::NoOp ? AccOp::Sum : o_.accOp, l, originBuf_.data(), 1);
			if (o_.op == Operation::Cas)
				std::memset(compareBuf_.data(), 0, 8);
		}

		auto one = [&] {
			long s = steps_++;
			prepareStep(l, s);
			step([&] {
				for (long k = 0; k < ops; ++k)
					issue(l, peer_, static_cast<int>(k));
			});
			verifyStep(l, s);
		};
		bool runs = passive_ ? origin_ : true;
		std::vector<double> blocks;
		be::TightCase tc;
		if (runs && tightCase(l, tc)) {
			/* The same steps as one() does without --verify, in OSU's loop (rmabench_tight.h). */
			blocks = timeTight(tc, skip, iters, block);
			steps_ += skip + iters;
		} else if (runs) {
			for (long i = 0; i < skip; ++i)
				one();
			blocks = timeBlocks(iters, block, one);
		}
		if (o_.test == Test::Contention && o_.verify && atomicOp() && o_.op != Operation::Cas)
			for (const auto &run : l.blocks) {
				/* Named copies: C++20 lambdas may not capture structured bindings (clang refuses). */
				const size_t off = run.first, len = run.second;
				for (size_t i = 0; i < len; i += static_cast<size_t>(es))
					withType(elem_, [&](auto zero) {
						using T = decltype(zero);
						T t;
						std::memcpy(&t, expect.data() + off + i, sizeof(T));
						t = static_cast<T>(t + static_cast<T>(nOrigins * (skip + iters) * ops));
						std::memcpy(expect.data() + off + i, &t, sizeof(T));
					});
			}
		if (o_.test == Test::Contention) {
			if (origin_)
				gathered_.insert(gathered_.end(), blocks.begin(), blocks.end());
			blockCounts_.push_back(static_cast<size_t>((iters + block - 1) / block));
			run_.rows.push_back(row);
			continue;
		}
		if (!runs || !origin_ || rank_ != origins_[0]) {
			run_.rows.push_back(row);
			continue;
		}
		double mean = 0;
		for (double b : blocks)
			mean += b;
		mean /= static_cast<double>(blocks.size());
		const double bytesPerStep = static_cast<double>(l.payload) * static_cast<double>(ops) *
					    (o_.test == Test::Bibw ? 2.0 : 1.0);
		if (o_.test == Test::Latency) {
			row.mean = mean * 1e6;
			summarize(blocks, row, 1e6);
		} else {
			/* Per-step seconds -> steps per second, scaled to MB/s or Mops/s. */
			double scale = o_.test == Test::Rate ? static_cast<double>(ops) / 1e6 : bytesPerStep / 1e6;
			row.mean = scale / mean;
			/* Statistics of block times: "min" is the fastest block (the highest rate). */
			summarize(blocks, row, 1.0);
			row.min = scale / row.min;
			row.median = scale / row.median;
			row.p99 = scale / row.p99;
			if (o_.test == Test::Rate)
				row.extra = bytesPerStep / mean / 1e6;
			else if (o_.op == Operation::Put || o_.op == Operation::Get)
				row.extra = memcpyBandwidth(l.payload, std::max<long>(iters * ops / 4, 16));
		}
		run_.rows.push_back(row);
	}
	finishPassive();

	if (o_.test == Test::Contention)
		contentionSummary(expect);
	return 0;
}

/*
 * Contention rows at rank 0: every origin's block means pooled, and the
 * aggregate rate (the sum of each origin's ops/s). Under --verify the
 * target's memory must hold every origin's every op (@expect).
 */
void Bench::contentionSummary(const PageBuffer &expect)
{
	/* Every origin ran the same block counts: gather them all (allgather: n is small). */
	size_t per = 0;
	{
		std::vector<uint64_t> mine{ gathered_.size() }, all(size_);
		be::allgather(mine.data(), sizeof(uint64_t), all.data());
		per = *std::max_element(all.begin(), all.end());
	}
	gathered_.resize(per, 0.0);
	std::vector<double> all(per * size_);
	be::allgather(gathered_.data(), per * sizeof(double), all.data());
	uint64_t wins = casWins_;
	std::vector<uint64_t> allWins(size_);
	be::allgather(&wins, sizeof(wins), allWins.data());
	if (rank_ == 0) {
		size_t at = 0;
		for (Row &row : run_.rows) {
			const size_t nb = blockCounts_[static_cast<size_t>(&row - run_.rows.data())];
			std::vector<double> pooled;
			double rate = 0;
			for (int r : origins_) {
				double m = 0;
				for (size_t i = 0; i < nb; ++i) {
					double v = all[static_cast<size_t>(r) * per + at + i];
					pooled.push_back(v);
					m += v;
				}
				m /= static_cast<double>(nb);
				rate += 1.0 / m;
			}
			at += nb;
			double m = 0;
			for (double v : pooled)
				m += v;
			row.mean = m / static_cast<double>(pooled.size()) * 1e6;
			summarize(pooled, row, 1e6);
			row.extra = rate / 1e6;
		}
		if (o_.verify && atomicOp()) {
			/* The total at the target: every op of every origin counted once. */
			PageBuffer now(win_.bytes), want(win_.bytes);
			std::memcpy(want.data(), expect.data(), win_.bytes);
			Layout full;
			makeLayout(full, Shape::Contiguous, Elem::Byte, win_.bytes);
			be::lock(true, 0, win_.win);
			be::get(now.data(), full.count, full.type, 0, dispAt(0, 0), full.count, full.type, win_.win);
			be::unlock(0, win_.win);
			if (o_.op == Operation::Cas) {
				uint64_t total = 0;
				for (uint64_t w : allWins)
					total += w;
				withType(elem_, [&](auto zero) {
					using T = decltype(zero);
					T t = static_cast<T>(total);
					std::memcpy(want.data(), &t, sizeof(T));
				});
			}
			maybeCorrupt(now.data());
			compareBytes(now.data(), want.data(), win_.bytes, 0, steps_, "total at the target after");
		}
	}
}

/* The busy target's work: floating point that never touches librma or the window. */
void computeChunk()
{
	static volatile double x = 1.0;
	for (int i = 0; i < 1000; ++i)
		x = x * 1.0000001 + 1e-9;
}

/*
 * The busy target's compute rate: chunks per second over windows of 2.5 ms,
 * @windows of them or (0) until @stop says so; the median window, so that
 * the rate alone and the rate under the origins' traffic are judged alike
 * on a host that other processes share.
 */
template<typename Stop>
double computeRate(size_t windows, Stop &&stop)
{
	std::vector<double> rates;
	while (windows ? rates.size() < windows : !stop()) {
		double t0 = be::wtime(), t;
		long chunks = 0;
		do {
			computeChunk();
			++chunks;
		} while ((t = be::wtime() - t0) < 0.0025 && (windows || !stop()));
		if (t >= 0.0025)
			rates.push_back(static_cast<double>(chunks) / t);
	}
	if (rates.empty())
		return 0;
	std::sort(rates.begin(), rates.end());
	return rates[rates.size() / 2];
}

/* A busy target's compute rate alone, before any origin starts. */
void Bench::calibrateCompute()
{
	if (!passive_ || !o_.busyTarget || !target_ || origin_)
		return;
	computeAlone_ = computeRate(8, [] { return false; });
}

/*
 * The end of the timed part: close the epoch (a last fence in fence mode),
 * and in passive modes the origins tell the target they are done; a busy
 * target computes until then.
 */
void Bench::finishPassive()
{
	closeEpoch();
	if (o_.sync == Sync::Fence && o_.test != Test::Fence)
		be::fence(1, win_.win);
	if (!passive_)
		return;
	if (origin_) {
		if (doneRank_ >= 0) {
			/* Across hosts: raise the target's flag through the library (its server applies it). */
			const uint64_t one = 1;
			Handle u64 = be::basicType(Elem::Uint64);
			be::lock(false, doneRank_, doneWin_.win);
			be::accumulate(&one, 1, u64, doneRank_, doneWin_.disp0[doneRank_], 1, u64, be::op(AccOp::Sum),
				       doneWin_.win);
			be::unlock(doneRank_, doneWin_.win);
		} else if (doneCount_) {
			/* Release: pairs with the acquire load below; publishes nothing but the count. */
			std::atomic_ref<uint64_t>(*doneCount_).fetch_add(1, std::memory_order_release);
		}
	} else if (o_.busyTarget) {
		const uint64_t want = origins_.size();
		double rate = computeRate(0, [&] {
			return std::atomic_ref<uint64_t>(*doneCount_).load(std::memory_order_acquire) >= want;
		});
		if (target_ && computeAlone_ > 0 && rate > 0)
			computeShare_ = rate / computeAlone_;
	}
}

double Bench::rawBarrierMicros(long iters)
{
	/* The floor under any fence: each rank stores a counter to its own line and polls the others'. */
	WinSpec spec;
	spec.flavor = Flavor::AllocateShared;
	spec.bytes = 128;
	Window w = be::allocate(spec);
	std::vector<uint64_t *> lines(size_);
	for (int r = 0; r < size_; ++r)
		lines[r] = static_cast<uint64_t *>(be::sharedBase(w, r));
	be::fence(0, w.win);
	uint64_t e = 0;
	/*
	 * More ranks than CPUs: a pure spin only waits out the time slice of
	 * the rank it waits for (milliseconds per barrier, minutes per run,
	 * issue #12), so yield after a few polls, as librma's waits do there.
	 */
	const long cpus = sysconf(_SC_NPROCESSORS_ONLN);
	const bool yield = cpus > 0 && size_ > cpus;
	auto barrier = [&] {
		++e;
		/* Release: pairs with the peers' acquire loads; nothing else is published. */
		std::atomic_ref<uint64_t>(*lines[rank_]).store(e, std::memory_order_release);
		for (int r = 0; r < size_; ++r) {
			for (unsigned polls = 0;
			     r != rank_ && std::atomic_ref<uint64_t>(*lines[r]).load(std::memory_order_acquire) < e; ++polls)
				if (yield && polls >= 256)
					sched_yield();
		}
	};
	for (long i = 0; i < iters / 10; ++i)
		barrier();
	auto blocks = timeBlocks(iters, 1000, barrier);
	std::sort(blocks.begin(), blocks.end());
	double t = blocks[blocks.size() / 2] * 1e6;
	be::fence(1, w.win);
	be::free(w);
	return t;
}

/*
 * Window creation: every rank creates (and frees) a window of each size, as
 * a collective; rank 0's times. Each iteration starts from a barrier. The
 * extra column repeats it with every page of the rank's memory written once
 * (what a program pays before it uses the window).
 */
void Bench::windowCreateTest()
{
	const long page = sysconf(_SC_PAGESIZE);
	for (long sz : sweep(o_, 1)) {
		Row row;
		row.size = sz;
		const long iters = o_.iterations ? o_.iterations : (sz >= (256L << 20) ? 5 : 20);
		const long skip = o_.skip >= 0 ? o_.skip : 1;
		row.iterations = iters;
		WinSpec spec;
		spec.flavor = o_.flavor;
		spec.bytes = static_cast<size_t>(sz);
		spec.hugePages = o_.hugePages;
		spec.placement = o_.placement;
		auto once = [&](bool touch) {
			be::barrier();
			double t0 = be::wtime();
			Window w = be::allocate(spec);
			if (touch)
				for (size_t off = 0; off < w.bytes; off += static_cast<size_t>(page))
					reinterpret_cast<volatile std::byte *>(w.base)[off] = std::byte{ 1 };
			be::free(w);
			return be::wtime() - t0;
		};
		std::vector<double> plain, touched;
		for (long i = 0; i < skip; ++i)
			once(false);
		for (long i = 0; i < iters; ++i) {
			plain.push_back(once(false));
			touched.push_back(once(true));
		}
		if (rank_ == 0) {
			double mean = 0;
			for (double b : plain)
				mean += b;
			row.mean = mean / static_cast<double>(plain.size()) * 1e6;
			summarize(plain, row, 1e6);
			std::sort(touched.begin(), touched.end());
			row.extra = touched[touched.size() / 2] * 1e6;
		}
		run_.rows.push_back(row);
	}
}

void Bench::sizelessTest()
{
	Row row;
	long iters = o_.iterations ? o_.iterations : (o_.test == Test::Fence ? 20000 : 100000);
	long skip = skipFor(iters);
	long block = std::min<long>(1000, std::max<long>(iters / 10, 1));
	row.iterations = iters;
	std::vector<double> blocks;
	Handle w = win_.win;
	if (o_.test == Test::Fence || origin_) {
		/* The synchronization alone, in OSU's loop (rmabench_tight.h): fence, shared lock + unlock, or flush. */
		be::TightCase c;
		c.sync = o_.test == Test::Fence ? be::TightSync::Fence
			 : o_.test == Test::Lock ? be::TightSync::Lock
						  : be::TightSync::Flush;
		c.target = peer_;
		c.win = w;
		blocks = timeTight(c, skip, iters, block);
	}
	finishPassive();
	if (o_.test == Test::Fence) {
		be::fence(1, w);
		/* The raw barrier is shared memory: one host only. */
		if (oneHost_)
			row.extra = rawBarrierMicros(iters);
	}
	if (rank_ == 0) {
		double mean = 0;
		for (double b : blocks)
			mean += b;
		row.mean = mean / static_cast<double>(blocks.size()) * 1e6;
		summarize(blocks, row, 1e6);
	}
	run_.rows.push_back(row);
}

void Bench::header(const std::vector<RankFacts> &facts, const WinReport &rep)
{
	auto &m = run_.meta;
	char host[256] = "?";
	gethostname(host, sizeof(host) - 1);
	utsname u{};
	uname(&u);
	const bool acc = o_.op == Operation::Acc || o_.op == Operation::GetAcc || o_.op == Operation::Fop;
	m.push_back({ "tool", "rmabench" });
	m.push_back({ "backend", be::kind() });
	m.push_back({ "library", be::library() });
	m.push_back({ "test", o_.testName });
	m.push_back({ "op", opName(o_.op) });
	m.push_back({ "sync", o_.sync == Sync::Lock && o_.exclusive ? "lock_exclusive" : syncName(o_.sync) });
	m.push_back({ "flavor", flavorName(o_.flavor) });
	m.push_back({ "datatype", shapeName(o_.shape) });
	m.push_back({ "elem", elemName(elem_) });
	if (acc)
		m.push_back({ "acc_op", accOpName(o_.accOp) });
	m.push_back({ "ranks", std::to_string(size_) });
	if (opsPerStep() > 1)
		m.push_back({ "window", std::to_string(o_.window) });
	m.push_back({ "host", host });
	m.push_back({ "cpu", firstLine("/proc/cpuinfo", "model name") });
	m.push_back({ "cpus_online", std::to_string(sysconf(_SC_NPROCESSORS_ONLN)) });
	m.push_back({ "kernel", u.release });
	std::string bind;
	for (int r = 0; r < size_; ++r) {
		char one[96];
		std::snprintf(one, sizeof(one), "%srank %d on cpu %d (allowed %s)", r ? ", " : "", r, facts[r].cpu,
			      facts[r].allowed);
		bind += one;
	}
	m.push_back({ "binding", bind });
	/* How each measured pair is connected (issue #14: librma reaches other hosts over TCP). */
	std::string transport;
	for (int tgt : targets_.empty() ? std::vector<int>{ 1 % size_ } : targets_) {
		const bool same = std::strcmp(facts[0].host, facts[tgt].host) == 0;
		char one[192];
		std::snprintf(one, sizeof(one), "%srank 0 -> %d: %s (%s -> %s)", transport.empty() ? "" : ", ", tgt,
			      same ? "shared memory" : "tcp", facts[0].host, facts[tgt].host);
		transport += one;
	}
	m.push_back({ "transport", transport });
	/* The target's memory is what the operations touch. */
	int t = targets_.empty() ? 0 : targets_[0];
	m.push_back({ "page_size", facts[t].pageSize ? std::to_string(facts[t].pageSize) : "?" });
	m.push_back({ "numa_node", facts[t].node >= 0 ? std::to_string(facts[t].node) : "?" });
	m.push_back({ "placement", !rep.placement.empty() ? rep.placement : "the library's (first touch)" });
	m.push_back({ "huge_pages", !rep.hugePages.empty() ? rep.hugePages : "the library's" });
	m.push_back({ "progress", !rep.progress.empty() ? rep.progress : be::progress() });
	std::string tgt = !passive_ ? "takes part in every synchronization"
			  : o_.busyTarget ? "computes, never calling the library (truly passive)"
					  : "idle in a barrier";
	m.push_back({ "target", tgt });
	m.push_back({ "verify", o_.verify ? "on (timings include the checks)" : "off" });
	m.push_back({ "timing", "mean over blocks of iterations; min/median/p99 of the block times (min = fastest)" });
}

int Bench::run()
{
	rank_ = be::rank();
	size_ = be::size();
	const bool needs2 = o_.test != Test::Fence;
	if (needs2 && size_ < 2) {
		if (rank_ == 0)
			std::fprintf(stderr, "rmabench: %s needs at least 2 ranks (rmarun -n 2 rmabench ...)\n",
				     o_.testName.c_str());
		return 2;
	}
	elem_ = atomicOp() ? o_.elem : Elem::Byte;
	chooseRoles();
	if (atomicOp())
		op_ = be::op(o_.op == Operation::Cas ? AccOp::Sum : o_.accOp);

	WinSpec spec;
	spec.flavor = o_.flavor;
	spec.bytes = windowBytes();
	spec.hugePages = o_.hugePages;
	spec.placement = o_.placement;
	win_ = be::allocate(spec);
	initWindow();

	/* Whether every rank runs on this host (else some pairs go over TCP, and nothing is shared by all). */
	{
		char host[64] = {};
		gethostname(host, sizeof(host) - 1);
		std::vector<char> hosts(static_cast<size_t>(size_) * sizeof(host));
		be::allgather(host, sizeof(host), hosts.data());
		for (int r = 0; r < size_; ++r)
			oneHost_ = oneHost_ && std::strncmp(host, hosts.data() + static_cast<size_t>(r) * sizeof(host),
							    sizeof(host)) == 0;
	}
	if (!oneHost_ && passive_ && o_.busyTarget) {
		/*
		 * Across hosts the done flag is window memory of the target that
		 * origins raise with an accumulate: it needs a library that
		 * progresses a target that never calls it (the MPIs do not).
		 */
		if (std::strcmp(be::kind(), "librma") != 0) {
			if (rank_ == 0)
				std::fprintf(stderr, "rmabench: --busy-target across hosts needs a truly passive target "
						     "(librma): %s cannot progress a target that never calls it\n",
					     be::kind());
			return 2;
		}
		WinSpec done;
		done.flavor = Flavor::Allocate;
		doneRank_ = targets_.empty() ? 0 : targets_[0];
		done.bytes = rank_ == doneRank_ ? 64 : 0;
		doneWin_ = be::allocate(done);
		if (rank_ == doneRank_) {
			doneCount_ = reinterpret_cast<uint64_t *>(doneWin_.base);
			std::atomic_ref<uint64_t>(*doneCount_).store(0, std::memory_order_relaxed); /* published by the barrier below */
		}
	}
	/* The flag passive origins raise when done, in memory every rank maps (one host only: nobody reads it otherwise). */
	if (oneHost_) {
		WinSpec done;
		done.flavor = Flavor::AllocateShared;
		done.bytes = rank_ == 0 ? 64 : 0;
		doneWin_ = be::allocate(done);
		doneCount_ = static_cast<uint64_t *>(be::sharedBase(doneWin_, 0));
		if (rank_ == 0)
			std::atomic_ref<uint64_t>(*doneCount_).store(0, std::memory_order_relaxed); /* published by the barrier below */
	}
	static_assert(std::atomic_ref<uint64_t>::is_always_lock_free);

	size_t fp = footprintFor(o_.shape, elem_, static_cast<size_t>(o_.maxSize));
	originBuf_.resize(fp);
	checkBuf_.resize(fp);
	compareBuf_.resize(64);
	model_.resize(win_.bytes);
	size_t slots = o_.verify && fetching() ? static_cast<size_t>(opsPerStep()) : 1;
	resultBuf_.resize(o_.op == Operation::Fop || o_.op == Operation::Cas ? slots * 8 : slots * fp);

	/* What this rank runs on, for the header. */
	RankFacts mine{};
	mine.cpu = sched_getcpu();
	mine.node = nodeOf(win_.base);
	mine.pageSize = pageSizeOf(win_.base);
	cpu_set_t set;
	CPU_ZERO(&set);
	sched_getaffinity(0, sizeof(set), &set);
	std::snprintf(mine.allowed, sizeof(mine.allowed), "%s", cpuList(set).c_str());
	gethostname(mine.host, sizeof(mine.host) - 1);
	std::vector<RankFacts> facts(size_);
	be::allgather(&mine, sizeof(mine), facts.data());
	WinReport rep = be::report(win_);
	if (rank_ == 0)
		header(facts, rep);

	calibrateCompute();
	be::barrier();
	if (o_.test != Test::WinCreate) /* its own windows only */
		openEpoch();
	if (o_.test == Test::Fence || o_.test == Test::Lock || o_.test == Test::Flush)
		sizelessTest();
	else if (o_.test == Test::WinCreate)
		windowCreateTest();
	else
		sizeSweep();
	/* How much of its computing the truly passive target kept. */
	std::vector<double> shares(size_);
	be::allgather(&computeShare_, sizeof(double), shares.data());
	if (rank_ == 0 && o_.busyTarget && passive_ && !targets_.empty() && shares[targets_[0]] > 0) {
		char v[96];
		std::snprintf(v, sizeof(v), "%.0f%% of its rate with no origin running (median of 2.5 ms windows)", shares[targets_[0]] * 100);
		run_.meta.push_back({ "target_compute", v });
	}
	be::barrier();

	std::string what;
	switch (o_.test) {
	case Test::Fence:
		what = "empty fence (extra: a raw store/poll barrier in the same run, median us; it yields after 256 polls when ranks outnumber CPUs)";
		run_.extraName = "raw_barrier_us";
		break;
	case Test::Lock:
		what = "lock + unlock of the target, nothing in between";
		break;
	case Test::Flush:
		what = "flush with nothing to complete (lock_all epoch)";
		break;
	case Test::Latency:
		what = std::string(opName(o_.op)) + " latency + " + syncName(o_.sync);
		break;
	case Test::Bandwidth:
		what = std::string(opName(o_.op)) + " bandwidth, " + std::to_string(o_.window) + " ops per " +
		       syncName(o_.sync);
		if (o_.op == Operation::Put || o_.op == Operation::Get)
			run_.extraName = "memcpy_mbs";
		break;
	case Test::Bibw:
		what = std::string(opName(o_.op)) + " bidirectional bandwidth, " + std::to_string(o_.window) +
		       " ops each way per " + syncName(o_.sync);
		break;
	case Test::Rate:
		what = std::string(opName(o_.op)) + " message rate, " + std::to_string(o_.window) + " ops per " +
		       syncName(o_.sync);
		run_.extraName = "mbs";
		break;
	case Test::WinCreate:
		what = std::string("window creation: allocate + free, ") + flavorName(o_.flavor) +
		       " (extra: with every page of the window written once, median us)";
		run_.extraName = "touched_us";
		break;
	case Test::Contention:
		what = std::string(opName(o_.op)) + " latency + " + syncName(o_.sync) + ", " +
		       std::to_string(size_ - 1) + " origins at rank 0 (extra: aggregate Mops/s)";
		run_.extraName = "aggregate_mops";
		break;
	}
	if (passive_ && o_.busyTarget)
		what += "; target computing, never calling the library";
	run_.backend = be::kind();
	run_.test = o_.testName;
	run_.what = what;
	run_.unit = o_.test == Test::Bandwidth || o_.test == Test::Bibw ? "MB/s" : o_.test == Test::Rate ? "Mops/s" : "us";

	if (oneHost_ || doneRank_ >= 0)
		be::free(doneWin_);
	be::free(win_);
	if (startGroup_)
		be::freeGroup(startGroup_);
	if (postGroup_)
		be::freeGroup(postGroup_);
	return 0;
}

} /* namespace */

int runTest(const Options &o, Run &run)
{
	Bench b(o, run);
	return b.run();
}

} /* namespace rmabench */
