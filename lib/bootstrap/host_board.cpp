/* SPDX-License-Identifier: MIT */
#include "bootstrap/host_board.h"

#include <fcntl.h>
#include <signal.h>
#include <sys/mman.h>
#include <linux/futex.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include <cerrno>
#include <climits>
#include <cstdio>
#include <cstring>
#include <algorithm>
#include <new>
#include <utility>

#include "common/cache.h"
#include "common/spin_wait.h"
#include "error/error.h"

namespace librma {

namespace {

constexpr uint64_t kBoardMagic = 0x64726f62616d72ull; /* "rmaboard" */

struct BoardHeader {
	uint64_t magic;
	uint32_t slots;
	uint32_t slotBytes;
};

std::size_t boardBytes(uint32_t slots)
{
	return HostBoard::kSlotBytes * (std::size_t{ slots } + 1); /* the first slot's room holds the header */
}

} /* namespace */

struct HostBoard::Slot {
	/* Written by the owner only (see host_board.h). */
	alignas(64) std::atomic<uint64_t> version;
	std::atomic<uint64_t> ctx;
	std::atomic<uint64_t> seq;
	std::atomic<uint32_t> len;
	std::atomic<uint32_t> nfds;
	alignas(64) std::atomic<uint64_t> finished;
	/* Rung (seq_cst) after every publish and finish; sleepers FUTEX_WAIT on it, counted in waiters. */
	alignas(64) std::atomic<uint32_t> bell;
	std::atomic<uint32_t> waiters;
	/* Each descriptor's number and identity: a reopened one must be the same file. */
	struct Fd {
		int32_t fd;
		uint32_t pad;
		uint64_t dev;
		uint64_t ino;
	};
	alignas(64) Fd fds[kFds];
	alignas(64) std::byte data[kDataBytes];
};
static_assert(sizeof(HostBoard::Slot) <= HostBoard::kSlotBytes);
static_assert(offsetof(HostBoard::Slot, data) <= HostBoard::kHeaderBytes + HostBoard::kFds * 24);

HostBoard::HostBoard(HostBoard &&other) noexcept
    : fd_(std::move(other.fd_)), base_(std::exchange(other.base_, nullptr)), bytes_(std::exchange(other.bytes_, 0)),
      slots_(std::exchange(other.slots_, 0)), reopen_(other.reopen_), oversubscribed_(other.oversubscribed_),
      pending_(std::move(other.pending_))
{
}

HostBoard &HostBoard::operator=(HostBoard &&other) noexcept
{
	if (this != &other) {
		if (base_)
			munmap(base_, bytes_);
		fd_ = std::move(other.fd_);
		base_ = std::exchange(other.base_, nullptr);
		bytes_ = std::exchange(other.bytes_, 0);
		slots_ = std::exchange(other.slots_, 0);
		reopen_ = other.reopen_;
		oversubscribed_ = other.oversubscribed_;
		pending_ = std::move(other.pending_);
	}
	return *this;
}

HostBoard::~HostBoard()
{
	if (base_)
		munmap(base_, bytes_);
}

HostBoard::Slot *HostBoard::slot(uint32_t i) const
{
	return reinterpret_cast<Slot *>(base_ + kSlotBytes * (std::size_t{ i } + 1));
}

Result<HostBoard> HostBoard::create(uint32_t slots)
{
	UniqueFd fd(memfd_create("librma-host-board", MFD_CLOEXEC | MFD_ALLOW_SEALING));
	const std::size_t bytes = boardBytes(slots);
	if (!fd.isValid() || ftruncate(fd.get(), static_cast<off_t>(bytes)) < 0)
		return Result<HostBoard>::failure(
			makeErrnoError(RMA_ERR_INTERN, errno, "cannot make the host's collective board (%zu bytes)", bytes));
	(void)fcntl(fd.get(), F_ADD_SEALS, F_SEAL_SHRINK | F_SEAL_GROW);
	void *p = mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_SHARED, fd.get(), 0);
	if (p == MAP_FAILED)
		return Result<HostBoard>::failure(
			makeErrnoError(RMA_ERR_INTERN, errno, "cannot map the host's collective board (%zu bytes)", bytes));
	HostBoard b;
	b.fd_ = std::move(fd);
	b.base_ = static_cast<std::byte *>(p);
	b.bytes_ = bytes;
	b.slots_ = slots;
	/* A fresh memfd reads as zeros: every slot at version 0, finished 0. */
	auto *h = new (p) BoardHeader{};
	h->magic = kBoardMagic;
	h->slots = slots;
	h->slotBytes = static_cast<uint32_t>(kSlotBytes);
	for (uint32_t i = 0; i < slots; ++i)
		new (b.slot(i)) Slot{};
	return b;
}

Result<HostBoard> HostBoard::attach(int rawFd, uint32_t slots)
{
	UniqueFd fd(rawFd);
	const std::size_t bytes = boardBytes(slots);
	struct stat st{};
	if (fstat(fd.get(), &st) < 0 || static_cast<std::size_t>(st.st_size) != bytes)
		return Result<HostBoard>::failure(makeError(
			RMA_ERR_INTERN, "the host's collective board has %lld bytes, expected %zu for %u ranks",
			static_cast<long long>(st.st_size), bytes, slots));
	void *p = mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_SHARED, fd.get(), 0);
	if (p == MAP_FAILED)
		return Result<HostBoard>::failure(
			makeErrnoError(RMA_ERR_INTERN, errno, "cannot map the host's collective board (%zu bytes)", bytes));
	const auto *h = static_cast<const BoardHeader *>(p);
	if (h->magic != kBoardMagic || h->slots != slots || h->slotBytes != kSlotBytes) {
		munmap(p, bytes);
		return Result<HostBoard>::failure(makeError(RMA_ERR_INTERN, "the host's collective board is not one"));
	}
	HostBoard b;
	b.fd_ = std::move(fd);
	b.base_ = static_cast<std::byte *>(p);
	b.bytes_ = bytes;
	b.slots_ = slots;
	return b;
}

namespace {

/* FUTEX_WAIT on a word of a shared mapping (not PRIVATE: other processes wake it), at most @ns. */
void futexWait(std::atomic<uint32_t> &word, uint32_t expected, long ns)
{
	timespec t{ ns / 1'000'000'000L, ns % 1'000'000'000L };
	syscall(SYS_futex, reinterpret_cast<uint32_t *>(&word), FUTEX_WAIT, expected, &t, nullptr, 0);
}

/* Tell the sleepers on @s that its owner changed something. */
void ring(std::atomic<uint32_t> &bell, std::atomic<uint32_t> &waiters)
{
	/*
	 * seq_cst, a Dekker pair with waitFor(): either the sleeper's count
	 * is seen here, or its read of the bell (after counting itself)
	 * sees this ring and it does not sleep.
	 */
	bell.fetch_add(1, std::memory_order_seq_cst);
	if (waiters.load(std::memory_order_seq_cst) != 0)
		syscall(SYS_futex, reinterpret_cast<uint32_t *>(&bell), FUTEX_WAKE, INT32_MAX, nullptr, nullptr, 0);
}

int64_t nowNs()
{
	timespec t;
	clock_gettime(CLOCK_MONOTONIC, &t);
	return t.tv_sec * 1'000'000'000LL + t.tv_nsec;
}

} /* namespace */

template<typename Ready>
int HostBoard::waitFor(Slot &own, std::size_t member, const std::function<bool(std::size_t)> &dead,
		       Ready &&ready) const
{
	/*
	 * Spin while the member is likely to come soon (up to kSpinNs when
	 * every rank of the host has a CPU; a few polls when they share CPUs,
	 * where spinning only delays it), then sleep on our own slot's bell,
	 * which the last member to publish (or to finish) rings for all: one
	 * wake per phase, where a futex wake costs tens of microseconds and a
	 * yield loop among more ranks than CPUs far more. Asleep, look every
	 * kNapNs for the member's death.
	 */
	const int64_t spinNs = oversubscribed_ ? 0 : kSpinNs;
	const int64_t start = nowNs();
	for (unsigned n = 0; !ready(); ++n) {
		if (n < SpinWait::kTightPolls)
			continue;
		cpuRelax();
		if ((n & 63) == 0 && nowNs() - start >= spinNs)
			break;
	}
	for (;;) {
		if (ready())
			return RMA_SUCCESS;
		/* seq_cst: the Dekker pair with ring(). */
		own.waiters.fetch_add(1, std::memory_order_seq_cst);
		const uint32_t bell = own.bell.load(std::memory_order_seq_cst);
		bool done = ready();
		if (!done)
			futexWait(own.bell, bell, kNapNs);
		own.waiters.fetch_sub(1, std::memory_order_relaxed);
		if (done || ready())
			return RMA_SUCCESS;
		/*
		 * Ready after all: a member that published and then died has
		 * still arrived, for every member alike (all look at its slot).
		 */
		if (dead(member))
			return ready() ? RMA_SUCCESS : RMA_ERR_PROC_FAILED;
	}
}

int HostBoard::allgather(uint64_t ctx, uint64_t seq, std::span<const int> members, int myIndex,
			 std::span<const uint32_t> slots, std::span<const pid_t> pids, std::span<const std::byte> data,
			 std::span<const int> fds, const std::function<bool(std::size_t)> &dead, GatherResult &out,
			 bool &fdsElsewhere)
{
	const std::size_t n = members.size();
	const std::size_t len = data.size();
	Slot &me = *slot(slots[myIndex]);

	/* Our last contribution: every member of that collective must be done with it before we overwrite it. */
	for (const Pending &p : pending_) {
		Slot &s = *slot(p.slot);
		const std::function<bool(std::size_t)> gone = [&p](std::size_t) {
			return kill(p.pid, 0) < 0 && errno == ESRCH;
		};
		/* A member that died reading it will not read it any more: go on either way. */
		(void)waitFor(me, 0, gone, [&] { return s.finished.load(std::memory_order_acquire) >= p.want; });
	}
	pending_.clear();

	/*
	 * Publish (seqlock writer). Nobody reads what we overwrite: our last
	 * collective returned only once its members had finished with it.
	 * Relaxed odd store, then a release fence: no reader that sees the
	 * fields below change can see the old even version after them.
	 */
	const uint64_t v = me.version.load(std::memory_order_relaxed);
	me.version.store(v + 1, std::memory_order_relaxed);
	std::atomic_thread_fence(std::memory_order_release);
	me.ctx.store(ctx, std::memory_order_relaxed);
	me.seq.store(seq, std::memory_order_relaxed);
	me.len.store(static_cast<uint32_t>(len), std::memory_order_relaxed);
	me.nfds.store(static_cast<uint32_t>(fds.size()), std::memory_order_relaxed);
	for (std::size_t i = 0; i < fds.size() && i < kFds; ++i) {
		struct stat st{};
		(void)fstat(fds[i], &st); /* a bad descriptor's identity (0, 0) matches no reopened file */
		me.fds[i] = Slot::Fd{ fds[i], 0, static_cast<uint64_t>(st.st_dev), static_cast<uint64_t>(st.st_ino) };
	}
	if (len)
		std::memcpy(me.data, data.data(), len);
	const uint64_t mine = v + 2;
	/* Release: the contribution above before the version that announces it. */
	me.version.store(mine, std::memory_order_release);
	/*
	 * The last to publish wakes everyone (each sleeps on its own bell).
	 * seq_cst fence between our store and our loads of the others', as
	 * theirs: of two members publishing at once, at least one sees both.
	 */
	std::atomic_thread_fence(std::memory_order_seq_cst);
	bool everyone = true;
	for (std::size_t i = 0; i < n && everyone; ++i) {
		if (i == static_cast<std::size_t>(myIndex))
			continue;
		const Slot &s = *slot(slots[i]);
		const uint64_t v1 = s.version.load(std::memory_order_acquire);
		everyone = !(v1 & 1) && s.ctx.load(std::memory_order_relaxed) == ctx &&
			   s.seq.load(std::memory_order_relaxed) == seq;
		std::atomic_thread_fence(std::memory_order_acquire);
		everyone = everyone && s.version.load(std::memory_order_relaxed) == v1;
	}
	if (everyone)
		for (std::size_t i = 0; i < n; ++i)
			if (i != static_cast<std::size_t>(myIndex))
				ring(slot(slots[i])->bell, slot(slots[i])->waiters);

	/* Read every member's contribution to (ctx, seq). */
	std::vector<uint64_t> seen(n, 0);
	std::vector<int> fdCounts(n, 0);
	std::vector<std::byte> all(n * len);
	bool tooMany = false;
	int mismatch = -1;
	uint32_t theirLen = 0;
	std::size_t totalFds = 0;
	for (std::size_t i = 0; i < n; ++i) {
		Slot &s = *slot(slots[i]);
		uint64_t ver = mine;
		if (i != static_cast<std::size_t>(myIndex)) {
			int rc = waitFor(me, i, dead, [&] {
				/* Acquire: the contribution behind an even version. */
				const uint64_t v1 = s.version.load(std::memory_order_acquire);
				if (v1 & 1)
					return false;
				const bool match = s.ctx.load(std::memory_order_relaxed) == ctx &&
						   s.seq.load(std::memory_order_relaxed) == seq;
				/* Acquire fence, then the reload: the fields were read before it (seqlock reader). */
				std::atomic_thread_fence(std::memory_order_acquire);
				if (s.version.load(std::memory_order_relaxed) != v1 || !match)
					return false;
				ver = v1;
				return true;
			});
			if (rc != RMA_SUCCESS) {
				/*
				 * It died without publishing: every member fails alike
				 * (none can see it). We read nothing more: finished, and
				 * the others' sleepers woken to see that.
				 */
				me.finished.store(mine, std::memory_order_release);
				for (std::size_t j = 0; j < n; ++j)
					if (j != static_cast<std::size_t>(myIndex))
						ring(slot(slots[j])->bell, slot(slots[j])->waiters);
				return makeError(RMA_ERR_PROC_FAILED,
						 "allgather ctx=%llu seq=%llu: rank %d (pid %d) died before it joined",
						 (unsigned long long)ctx, (unsigned long long)seq, members[i],
						 static_cast<int>(pids[i]));
			}
			/*
			 * Stable now: its owner rewrites it only after we report
			 * finished below. A length that differs (a caller's bug)
			 * fails the collective at both ends, after the whole
			 * exchange, so that nobody is left waiting.
			 */
			if (s.len.load(std::memory_order_relaxed) != len && mismatch < 0) {
				mismatch = static_cast<int>(i);
				theirLen = s.len.load(std::memory_order_relaxed);
			}
		}
		seen[i] = ver;
		fdCounts[i] = static_cast<int>(s.nfds.load(std::memory_order_relaxed));
		totalFds += static_cast<std::size_t>(fdCounts[i]);
		tooMany = tooMany || static_cast<std::size_t>(fdCounts[i]) > kFds;
		if (len && mismatch != static_cast<int>(i))
			std::memcpy(all.data() + i * len, s.data, std::min<std::size_t>(len, kDataBytes));
	}

	/* Descriptors: reopened through /proc where the host allows it (the same choice at every member). */
	fdsElsewhere = totalFds > 0 && (tooMany || !reopen_) && mismatch < 0;
	std::vector<UniqueFd> got;
	int failed = 0;
	if (totalFds > 0 && !fdsElsewhere && mismatch < 0) {
		got.reserve(totalFds);
		for (std::size_t i = 0; i < n && !failed; ++i) {
			const Slot &s = *slot(slots[i]);
			for (int k = 0; k < fdCounts[i]; ++k) {
				int fd;
				if (i == static_cast<std::size_t>(myIndex)) {
					fd = fcntl(fds[static_cast<std::size_t>(k)], F_DUPFD_CLOEXEC, 0);
				} else {
					char path[64];
					std::snprintf(path, sizeof(path), "/proc/%d/fd/%d", static_cast<int>(pids[i]), s.fds[k].fd);
					fd = open(path, O_RDWR | O_CLOEXEC);
					/* The same file, not another process's that happens to bear the pid (namespaces). */
					struct stat st{};
					if (fd >= 0 && (fstat(fd, &st) < 0 || static_cast<uint64_t>(st.st_dev) != s.fds[k].dev ||
							static_cast<uint64_t>(st.st_ino) != s.fds[k].ino)) {
						close(fd);
						fd = -1;
						errno = ESTALE;
					}
				}
				if (fd < 0) {
					failed = errno;
					break;
				}
				got.emplace_back(fd);
			}
		}
	}

	/*
	 * Finished with every contribution (release: our reads before it).
	 * Wait until every member has finished with ours (acquire), so that
	 * none is read after we return and overwrite it.
	 */
	me.finished.store(mine, std::memory_order_release);
	/* The last to finish wakes everyone, as the last to publish does (seq_cst fence: the same pairing). */
	std::atomic_thread_fence(std::memory_order_seq_cst);
	bool allDone = true;
	for (std::size_t i = 0; i < n && allDone; ++i)
		allDone = i == static_cast<std::size_t>(myIndex) ||
			  slot(slots[i])->finished.load(std::memory_order_acquire) >= seen[i];
	if (allDone)
		for (std::size_t i = 0; i < n; ++i)
			if (i != static_cast<std::size_t>(myIndex))
				ring(slot(slots[i])->bell, slot(slots[i])->waiters);
	/*
	 * Without descriptors (which must stay open until every reader has
	 * reopened them) the wait is left to our next collective, which
	 * overwrites our slot: by then the others are done, and nobody here
	 * sleeps twice per collective.
	 */
	if (totalFds == 0 && mismatch < 0) {
		for (std::size_t i = 0; i < n; ++i)
			if (i != static_cast<std::size_t>(myIndex))
				pending_.push_back(Pending{ slots[i], seen[i], pids[i] });
	}
	for (std::size_t i = 0; i < n && pending_.empty(); ++i) {
		if (i == static_cast<std::size_t>(myIndex))
			continue;
		Slot &s = *slot(slots[i]);
		const uint64_t want = seen[i];
		/* A member that died reads nothing more: done with ours all the same. */
		(void)waitFor(me, i, dead, [&] { return s.finished.load(std::memory_order_acquire) >= want; });
	}
	if (mismatch >= 0)
		return makeError(RMA_ERR_INTERN,
				 "allgather ctx=%llu seq=%llu: rank %d gave %u bytes, this rank %zu: lengths must match",
				 (unsigned long long)ctx, (unsigned long long)seq, members[static_cast<std::size_t>(mismatch)],
				 theirLen, len);
	if (failed)
		return makeErrnoError(RMA_ERR_INTERN, failed,
				      "allgather ctx=%llu seq=%llu: cannot reopen a descriptor of another rank of this "
				      "host through /proc",
				      (unsigned long long)ctx, (unsigned long long)seq);

	out.data = std::move(all);
	out.fds = std::move(got);
	out.fdCounts = std::move(fdCounts);
	/*
	 * The hub's world rank over its collective count (its version / 2),
	 * as ChannelBootstrap makes them, with bit 39 set: never one of the
	 * channel's (counters below 2^39) nor the launcher's (a job-wide count).
	 */
	out.instance = (static_cast<uint64_t>(members[0]) << 40) | (uint64_t(1) << 39) |
		       ((seen[0] / 2) & ((uint64_t(1) << 39) - 1));
	return RMA_SUCCESS;
}

} /* namespace librma */
