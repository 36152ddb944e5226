/* SPDX-License-Identifier: MIT */
/*
 * Synchronization other than fence: passive target (lock, lock_all, flush)
 * and generalized active target (post, start, complete, wait, test), all
 * through words of the window's control segment (see control.h for the
 * lock protocol). Nothing here waits for the target process to call
 * librma: a target that computes and never calls in is truly passive.
 *
 * RMA operations to Direct and Process targets complete when their call
 * returns, so "completing" operations (flush, unlock, complete) only has to
 * order stores: an sfence for the non-temporal stores a large memcpy may
 * use, and the release of the synchronization word itself.
 */
#include <signal.h>

#include <atomic>
#include <cerrno>
#include <string>

#include "common/spin_wait.h"
#include "common/tsan.h"
#include "error/error.h"
#include "win/remote.h"
#include "win/window.h"

namespace librma {

/* ---- Helpers -------------------------------------------------------------- */

std::string Window::describeEpochs() const
{
	std::string out;
	auto add = [&out](const std::string &s) {
		if (!out.empty())
			out += ", ";
		out += s;
	};
	if (fenceEpoch_)
		add(pendingOps_ ? "a fence epoch with operations issued" : "a fence epoch");
	if (lockAll_)
		add("a lock_all epoch");
	if (locksHeld_) {
		std::string locks = locksHeld_ == 1 ? "a lock on rank" : "locks on ranks";
		int shown = 0;
		for (size_t t = 0; t < locks_.size() && shown < 8; ++t) {
			if (!locks_[t])
				continue;
			locks += (shown++ ? ", " : " ") + std::to_string(t) +
				 ((locks_[t] & kLockExclusive) ? " (exclusive)" : " (shared)");
		}
		if (locksHeld_ > shown)
			locks += ", ...";
		add(locks);
	}
	if (started_)
		add("an access epoch (rma_win_start) to " + std::to_string(startGroup_.size()) + " rank(s)");
	if (exposed_)
		add("an exposure epoch (rma_win_post) to " + std::to_string(postGroup_.size()) + " rank(s)");
	return out.empty() ? "no epoch" : out;
}

bool Window::peerDead(int peer) const
{
	if (runtime().bootstrap->dead(group()->worldRank(peer)))
		return true;
#ifdef RMA_HAVE_NET
	/* Another host's pid means nothing here: its link is what tells. */
	if (targets_[peer].reach == Reach::Remote)
		return remote_ && remote_->peerLost(peer);
#endif
	return kill(targets_[peer].pid, 0) < 0 && errno == ESRCH;
}

int Window::deadTarget(const char *call, int peer) const
{
	if (peer < 0 || static_cast<size_t>(peer) >= targets_.size() || peer == rank() || !peerDead(peer))
		return RMA_SUCCESS;
	return makeError(RMA_ERR_PROC_FAILED, "%s: rank %d (pid %d) of window '%s' has died", call, peer,
			 static_cast<int>(targets_[peer].pid), name.c_str());
}

int Window::deadAmong(const char *call, const std::vector<int> *peers) const
{
	if (peers) {
		for (int p : *peers)
			RMA_TRY(deadTarget(call, p));
		return RMA_SUCCESS;
	}
	for (int p = 0; p < size(); ++p)
		RMA_TRY(deadTarget(call, p));
	return RMA_SUCCESS;
}

bool Window::memberDead() const
{
	for (int p = 0; p < size(); ++p)
		if (p != rank() && peerDead(p))
			return true;
	return false;
}

int Window::checkAlive(const char *call, const char *what, int peer)
{
	if (!peerDead(peer))
		return RMA_SUCCESS;
	return makeError(RMA_ERR_PROC_FAILED, "%s: rank %d (pid %d) of window '%s' died while this process waited for %s",
			 call, peer, static_cast<int>(targets_[peer].pid), name.c_str(), what);
}

uint64_t Window::grantsOnThisHost() const
{
	uint64_t sum = 0;
	for (int t = 0; t < size(); ++t)
		sum += slots_[t].grants.load(std::memory_order_relaxed);
	return sum;
}

int Window::deadLockHolder(int blockers, bool thisHost) const
{
	for (int p = 0; p < size(); ++p) {
		if (p == rank() || (thisHost && targets_[p].reach == Reach::Remote) || !peerDead(p))
			continue;
		/* Its stores are all visible now that it is dead (see RankSlot::lockActivity). */
		const uint32_t activity = slots_[p].lockActivity.load(std::memory_order_relaxed);
		const bool blocks = (remote_ && !thisHost) || (activity & ~lockactivity::kSharedMask) != 0 ||
				    (blockers == kBlockedByAny && (activity & lockactivity::kSharedMask) != 0);
		if (blocks)
			return p;
	}
	return -1;
}

int Window::deadLockBlocker(const char *call, const char *what, int blockers) const
{
	const int p = deadLockHolder(blockers, false);
	if (p < 0)
		return RMA_SUCCESS;
	return makeError(RMA_ERR_PROC_FAILED,
			 "%s: rank %d (pid %d) of window '%s' died holding or waiting for a lock while this "
			 "process waited for %s",
			 call, p, static_cast<int>(targets_[p].pid), name.c_str(), what);
}

int Window::translateGroup(const char *call, const Group &g, std::vector<int> &out) const
{
	out.clear();
	out.reserve(g.size());
	for (int i = 0; i < g.size(); ++i) {
		int r = group()->rankOf(g.worldRank(i));
		if (r == RMA_UNDEFINED)
			return makeError(RMA_ERR_GROUP, "%s: member %d of the group (world rank %d) is not in window '%s'",
					 call, i, g.worldRank(i), name.c_str());
		out.push_back(r);
	}
	return RMA_SUCCESS;
}

/* The error of a call that needs an epoch the window does not have. */
int Window::missingEpoch(const char *call, const char *needed) const
{
	return makeError(RMA_ERR_RMA_SYNC, "%s: window '%s' has no %s open (open: %s)", call, name.c_str(), needed,
			 describeEpochs().c_str());
}

/* A fence epoch with no operation in it may give way to another kind of epoch. */
namespace {

[[gnu::cold]] int fenceInTheWay(const char *call, const std::string &win)
{
	return makeError(RMA_ERR_RMA_SYNC,
			 "%s: window '%s' has a fence epoch with operations issued; end it with "
			 "rma_win_fence(RMA_MODE_NOSUCCEED) before another kind of epoch",
			 call, win.c_str());
}

} /* namespace */

/*
 * Whether a new epoch may open: not while @conflict (an epoch it cannot
 * coexist with) holds, nor over a fence epoch that has operations in it.
 */
int Window::checkCanOpen(const char *call, bool conflict) const
{
	if (conflict)
		return makeError(RMA_ERR_RMA_SYNC, "%s: window '%s' already has %s open", call, name.c_str(),
				 describeEpochs().c_str());
	if (fenceEpoch_ && pendingOps_)
		return fenceInTheWay(call, name);
	return RMA_SUCCESS;
}

/* ---- Passive target ------------------------------------------------------- */

int Window::acquireLock(const char *call, int target, bool exclusive)
{
	std::atomic<uint64_t> &word = slots_[target].lock;
	std::atomic<uint64_t> &waiters = slots_[target].waiters;
	noteLockActivity(exclusive, +1);
	if (!exclusive) {
		std::atomic<uint32_t> &grants = slots_[target].grants;
		GrantWatch watch;
		int rc = waitUntil(call, "a shared lock", kBlockedByExclusive, [&word, &waiters, &grants, &watch] {
			uint64_t v = word.load(std::memory_order_relaxed);
			/*
			 * Writer preference, phase-fair (GrantWatch): no new
			 * shared holder while an exclusive locker waits, until
			 * one has been granted (relaxed: hints; exclusion itself
			 * is the CAS). Acquire on success: pairs with the
			 * release store in releaseLock() of the last exclusive
			 * holder. A CAS lost to another shared locker is retried
			 * here: only an exclusive locker makes this a wait
			 * (whose death checks would blame an unrelated dead rank
			 * otherwise).
			 */
			while ((v & lockword::kHolderMask) == 0) {
				if (waiters.load(std::memory_order_relaxed) != 0 &&
				    watch.yieldTo(grants.load(std::memory_order_relaxed)))
					return false;
				if (word.compare_exchange_weak(v, v + lockword::kShared, std::memory_order_acquire,
							       std::memory_order_relaxed))
					return true;
			}
			return false;
		});
		if (rc != RMA_SUCCESS)
			noteLockActivity(false, -1);
		return rc;
	}

	std::atomic<uint64_t> &global = globalLocks_->word;
	auto tryTake = [this, target] { return tryTakeExclusive(target); };
	/*
	 * Uncontended: one locked instruction for the whole lock/unlock pair.
	 * Not past waiting exclusive lockers (relaxed: a hint, on the word's
	 * line): a holder that unlocks and relocks at once would otherwise
	 * barge past a waiter that polls less often (it yields when ranks
	 * outnumber cores), and the waiter's count blocks every shared and
	 * lock_all caller meanwhile.
	 */
	if (waiters.load(std::memory_order_relaxed) == 0 && tryTake()) [[likely]]
		return RMA_SUCCESS;

	/*
	 * Contended. Announce ourselves: to shared lockers of this target
	 * (waiters, relaxed: a hint) and to new lock_all callers (the high
	 * half of the global word, relaxed: lockAll() waits while it is
	 * non-zero, so lock_all cannot starve us; the word's own RMWs order it).
	 */
	waiters.fetch_add(1, std::memory_order_relaxed);
	global.fetch_add(lockword::kExclusive, std::memory_order_relaxed);
	int rc = waitUntil(call, "an exclusive lock", kBlockedByAny, [&word, &tryTake] {
		return word.load(std::memory_order_relaxed) == 0 && tryTake();
	});
	global.fetch_sub(lockword::kExclusive, std::memory_order_relaxed);
	waiters.fetch_sub(1, std::memory_order_relaxed);
	if (rc != RMA_SUCCESS)
		noteLockActivity(true, -1);
	return rc;
}

int Window::lock(int lockType, int target, int assert)
{
	static constexpr const char *kCall = "rma_win_lock";
	if (lockType != RMA_LOCK_SHARED && lockType != RMA_LOCK_EXCLUSIVE)
		return makeError(RMA_ERR_LOCKTYPE, "%s: lock type %d is neither RMA_LOCK_SHARED nor RMA_LOCK_EXCLUSIVE",
				 kCall, lockType);
	if (assert & ~RMA_MODE_NOCHECK)
		return makeError(RMA_ERR_ASSERT, "%s: assert %#x: only RMA_MODE_NOCHECK applies to a lock", kCall, assert);
	if (target == RMA_PROC_NULL)
		return RMA_SUCCESS;
	if (static_cast<unsigned>(target) >= targets_.size())
		return makeError(RMA_ERR_RANK, "%s: target rank %d is not in window '%s' (ranks 0..%zu)", kCall, target,
				 name.c_str(), targets_.size() - 1);
	if (hints_.noLocks)
		return makeError(RMA_ERR_RMA_SYNC, "%s: window '%s' was created with no_locks=true: it cannot be locked",
				 kCall, name.c_str());
	if (locks_[target] || lockAll_ || started_)
		return makeError(RMA_ERR_RMA_SYNC, "%s: asked to lock rank %d of window '%s', but %s is already open",
				 kCall, target, name.c_str(), describeEpochs().c_str());
	if (fenceEpoch_ && pendingOps_)
		return fenceInTheWay(kCall, name);
	if (anyDead()) [[unlikely]]
		RMA_TRY(deadTarget(kCall, target));
	bool exclusive = lockType == RMA_LOCK_EXCLUSIVE;
	if (!(assert & RMA_MODE_NOCHECK)) {
#ifdef RMA_HAVE_NET
		if (isRemote(target))
			RMA_TRY(remote_->lock(kCall, target, exclusive));
		else
#endif
			RMA_TRY(acquireLock(kCall, target, exclusive));
	}
	openLock(target, (exclusive ? kLockExclusive : kLockShared) | ((assert & RMA_MODE_NOCHECK) ? kLockNoCheck : 0));
	return RMA_SUCCESS;
}

int Window::unlock(int target)
{
	static constexpr const char *kCall = "rma_win_unlock";
	if (target == RMA_PROC_NULL)
		return RMA_SUCCESS;
	if (static_cast<unsigned>(target) >= targets_.size())
		return makeError(RMA_ERR_RANK, "%s: target rank %d is not in window '%s' (ranks 0..%zu)", kCall, target,
				 name.c_str(), targets_.size() - 1);
	if (!locks_[target])
		return makeError(RMA_ERR_RMA_SYNC, "%s: rank %d of window '%s' is not locked by this process (open: %s)",
				 kCall, target, name.c_str(), describeEpochs().c_str());
	if (anyDead()) [[unlikely]] {
		if (int rc = deadTarget(kCall, target); rc != RMA_SUCCESS) {
			/* The epoch ends here anyway: the window can still be freed. */
			if (!(locks_[target] & kLockNoCheck)) {
#ifdef RMA_HAVE_NET
				/* Its host's server holds the lock for us: give it back if that host still answers. */
				if (isRemote(target))
					(void)remote_->unlock(kCall, target, locks_[target] & kLockExclusive);
				else
#endif
					releaseLock(target, locks_[target] & kLockExclusive);
			}
			closeLock(target);
			return rc;
		}
	}
#ifdef RMA_HAVE_NET
	if (isRemote(target) && !(locks_[target] & kLockNoCheck)) {
		/* UNLOCK is applied after everything sent before it: its ACK completes them too. */
		if (int rc = remote_->unlock(kCall, target, locks_[target] & kLockExclusive); rc != RMA_SUCCESS) {
			/*
			 * The epoch ends all the same: the UNLOCK was applied (an
			 * error is an earlier frame's refusal, reported here), or the
			 * host is lost and its server released what we held. Kept
			 * open, it could never be closed: the server has nothing left
			 * to unlock and would refuse every later UNLOCK.
			 */
			closeLock(target);
			return rc;
		}
		accApplied_[target] = accIssued_[target];
		completeLocally();
		closeLock(target);
		return RMA_SUCCESS;
	}
#endif
	if (accIssued_[target] != accApplied_[target])
		if (int rc = completeAccumulates(kCall, target); rc != RMA_SUCCESS) [[unlikely]]
			return unlockFailed(target, rc);
	completeLocally();
	if (!(locks_[target] & kLockNoCheck) && !isRemote(target))
		releaseLock(target, locks_[target] & kLockExclusive);
	closeLock(target);
	return RMA_SUCCESS;
}

/*
 * unlock(@target) could not complete its operations (@rc). A failed process
 * (a dead agent holding the target's ring): the epoch ends all the same, so
 * the window can still be freed. Other errors leave it open.
 */
int Window::unlockFailed(int target, int rc)
{
	if (errorClass(rc) != RMA_ERR_PROC_FAILED)
		return rc;
	completeLocally();
	if (!(locks_[target] & kLockNoCheck) && !isRemote(target))
		releaseLock(target, locks_[target] & kLockExclusive);
	closeLock(target);
	return rc;
}

int Window::lockAll(int assert)
{
	static constexpr const char *kCall = "rma_win_lock_all";
	if (assert & ~RMA_MODE_NOCHECK)
		return makeError(RMA_ERR_ASSERT, "%s: assert %#x: only RMA_MODE_NOCHECK applies to lock_all", kCall,
				 assert);
	if (hints_.noLocks)
		return makeError(RMA_ERR_RMA_SYNC, "%s: window '%s' was created with no_locks=true: it cannot be locked",
				 kCall, name.c_str());
	RMA_TRY(checkCanOpen(kCall, lockAll_ || locksHeld_ || started_));
	if (anyDead()) [[unlikely]]
		RMA_TRY(deadAmong(kCall, nullptr));
	if (!(assert & RMA_MODE_NOCHECK)) {
		noteLockActivity(false, +1);
		if (int rc = takeLockAll(kCall); rc != RMA_SUCCESS) {
			noteLockActivity(false, -1);
			return rc;
		}
	}
	fenceEpoch_ = false;
	allAccess_ = true;
	lockAll_ = kLockShared | ((assert & RMA_MODE_NOCHECK) ? kLockNoCheck : 0);
	crossProcessEdge();
	return RMA_SUCCESS;
}

/* lock_all's protocol (control.h): this host's global word; on a window spanning hosts, every host's (remote.h). */
int Window::takeLockAll(const char *kCall)
{
#ifdef RMA_HAVE_NET
	if (remote_)
		return remote_->lockAll(kCall);
#endif
	GrantWatch watch;
	bool granted = false;
	return takeLocalLockAll(kCall, watch, true, granted);
}

int Window::takeLocalLockAll(const char *kCall, GrantWatch &watch, bool wait, bool &granted)
{
	std::atomic<uint64_t> &global = globalLocks_->word;
	granted = false;
	auto count = [this, &global, &watch] {
		uint64_t v = global.load(std::memory_order_relaxed);
		for (;;) {
			/*
			 * No exclusive locker waiting: they have preference,
			 * phase-fair (GrantWatch over every target's grants).
			 * seq_cst: the Dekker half of acquireLock()'s pair;
			 * also acquires past unlock_alls. A CAS lost to another
			 * lock_all caller is retried at once.
			 */
			if ((v & ~lockword::kLockAllMask) != 0 && watch.yieldTo(grantsOnThisHost()))
				return false;
			if (global.compare_exchange_weak(v, v + lockword::kLockAll, std::memory_order_seq_cst,
							 std::memory_order_relaxed))
				return true;
		}
	};
	for (;;) {
		if (wait)
			RMA_TRY(waitUntil(kCall, "exclusive lockers to unlock", kBlockedByExclusive, count));
		else if (!count())
			return RMA_SUCCESS;
		/*
		 * Counted: from now on no exclusive locker keeps a word.
		 * One that took a word before we counted is seen here
		 * (seq_cst loads; acquire pairs with its release store
		 * when it has let go).
		 */
		int busy = -1;
		for (int t = 0; t < size() && busy < 0; ++t)
			if (slots_[t].lock.load(std::memory_order_seq_cst) & lockword::kHolderMask)
				busy = t;
		if (busy < 0) {
			granted = true;
			return RMA_SUCCESS;
		}
		/*
		 * Give way to it and wait until it unlocks (or dies). Not
		 * keeping the count: its holder may be about to lock
		 * another target (MPI lets a process hold several), which
		 * our count would refuse: a deadlock. Relaxed: nothing was
		 * published under the count.
		 */
		global.fetch_sub(lockword::kLockAll, std::memory_order_relaxed);
		if (!wait)
			return RMA_SUCCESS;
		std::atomic<uint64_t> &word = slots_[busy].lock;
		RMA_TRY(waitUntil(kCall, "an exclusive lock holder to unlock", kBlockedByExclusive, [&word] {
			return (word.load(std::memory_order_relaxed) & lockword::kHolderMask) == 0;
		}));
	}
}

int Window::unlockAll()
{
	if (!lockAll_)
		return missingEpoch("rma_win_unlock_all", "lock_all epoch");
	if (anyDead()) [[unlikely]] {
		if (int rc = deadAmong("rma_win_unlock_all", nullptr); rc != RMA_SUCCESS) {
			if (!(lockAll_ & kLockNoCheck)) {
				releaseGlobalLockAll();
#ifdef RMA_HAVE_NET
				/* The other hosts' parts too, where their servers still answer. */
				if (remote_)
					(void)remote_->unlockAll("rma_win_unlock_all");
#endif
			}
			lockAll_ = 0;
			allAccess_ = false;
			return rc;
		}
	}
	/* Other hosts' targets: UNLOCK_ALL is applied after everything before it, and its ACK completes them. */
	const bool remoteByUnlock = remote_ && !(lockAll_ & kLockNoCheck);
	if (int rc = completeAllAccumulates("rma_win_unlock_all", !remoteByUnlock); rc != RMA_SUCCESS) [[unlikely]]
		return unlockAllFailed(rc);
	completeLocally();
	int rc = RMA_SUCCESS;
	if (!(lockAll_ & kLockNoCheck)) {
		releaseGlobalLockAll();
#ifdef RMA_HAVE_NET
		if (remote_) {
			/*
			 * The epoch ends whatever this reports (an operation another
			 * host refused, a lost host): every host that answers has
			 * released its part, and a lost one's server releases it.
			 */
			rc = remote_->unlockAll("rma_win_unlock_all");
			for (int t = 0; t < size(); ++t)
				if (isRemote(t))
					accApplied_[t] = accIssued_[t];
		}
#endif
	}
	lockAll_ = 0;
	allAccess_ = false;
	return rc;
}

/* unlockAll() could not complete its operations (@rc): as unlockFailed(). */
int Window::unlockAllFailed(int rc)
{
	if (errorClass(rc) != RMA_ERR_PROC_FAILED)
		return rc;
	completeLocally();
	if (!(lockAll_ & kLockNoCheck)) {
		releaseGlobalLockAll();
#ifdef RMA_HAVE_NET
		if (remote_)
			(void)remote_->unlockAll("rma_win_unlock_all"); /* the first failure is the one reported */
#endif
	}
	lockAll_ = 0;
	allAccess_ = false;
	return rc;
}

int Window::flush(const char *call, int target)
{
	if (target != RMA_PROC_NULL && static_cast<unsigned>(target) >= targets_.size())
		return makeError(RMA_ERR_RANK, "%s: target rank %d is not in window '%s' (ranks 0..%zu)", call, target,
				 name.c_str(), targets_.size() - 1);
	bool covered = lockAll_ || (target == RMA_PROC_NULL ? locksHeld_ > 0 : locks_[target] != 0);
	if (!covered) [[unlikely]]
		return makeError(RMA_ERR_RMA_SYNC,
				 "%s: no passive-target epoch (lock or lock_all) covers rank %d of window '%s' (open: %s)",
				 call, target, name.c_str(), describeEpochs().c_str());
	if (anyDead() && target != RMA_PROC_NULL) [[unlikely]]
		RMA_TRY(deadTarget(call, target));
	if (target != RMA_PROC_NULL && accIssued_[target] != accApplied_[target])
		RMA_TRY(completeAccumulates(call, target));
	completeLocally();
	return RMA_SUCCESS;
}

int Window::flushAll(const char *call)
{
	if (!lockAll_ && !locksHeld_) [[unlikely]]
		return missingEpoch(call, "passive-target epoch (lock or lock_all)");
	if (anyDead()) [[unlikely]] {
		for (int t = 0; t < size(); ++t)
			if (lockAll_ || locks_[t])
				RMA_TRY(deadTarget(call, t));
	}
	RMA_TRY(completeAllAccumulates(call, true));
	completeLocally();
	return RMA_SUCCESS;
}

int Window::checkRequestEpoch(const char *call, int target) const
{
	/*
	 * RMA_PROC_NULL is a no-op with a completed request in any access
	 * epoch (as MPICH and Open MPI do); a real target needs a passive one.
	 */
	bool covered = lockAll_ ||
		       (target == RMA_PROC_NULL ? locksHeld_ > 0 || allAccess_ || started_
						: static_cast<unsigned>(target) < locks_.size() && locks_[target] != 0);
	if (covered) [[likely]]
		return RMA_SUCCESS;
	return makeError(RMA_ERR_RMA_SYNC,
			 "%s: request-based operations need a passive-target epoch (lock or lock_all) covering "
			 "target rank %d of window '%s' (open: %s)",
			 call, target, name.c_str(), describeEpochs().c_str());
}

/* ---- Generalized active target (PSCW) ------------------------------------- */

int Window::post(const Group &g, int assert)
{
	static constexpr const char *kCall = "rma_win_post";
	if (assert & ~(RMA_MODE_NOCHECK | RMA_MODE_NOSTORE | RMA_MODE_NOPUT))
		return makeError(RMA_ERR_ASSERT, "%s: assert %#x: only NOCHECK, NOSTORE and NOPUT apply to post", kCall,
				 assert);
	RMA_TRY(checkCanOpen(kCall, exposed_));
	std::vector<int> members;
	RMA_TRY(translateGroup(kCall, g, members));
	if (anyDead()) [[unlikely]]
		RMA_TRY(deadAmong(kCall, &members));
	fenceEpoch_ = false;
	allAccess_ = lockAll_ != 0;
	/* Our local stores to the window must be visible to the origins we expose it to. */
	completeLocally();
	const int me = rank();
#ifdef RMA_HAVE_NET
	if (remote_) {
		std::vector<int> far;
		for (int o : members)
			if (isRemote(o))
				far.push_back(o);
		if (!far.empty())
			RMA_TRY(remote_->post(kCall, far));
	}
#endif
	for (int o : members) {
		if (isRemote(o)) {
			++completesExpected_[o];
			continue;
		}
		std::atomic_ref<uint32_t> counter(postedRow(o)[me]);
		/* Release: pairs with the acquire in origin o's start(); publishes our window's contents. */
		counter.store(counter.load(std::memory_order_relaxed) + 1, std::memory_order_release);
		++completesExpected_[o];
	}
	postGroup_ = std::move(members);
	exposed_ = true;
	return RMA_SUCCESS;
}

int Window::start(const Group &g, int assert)
{
	static constexpr const char *kCall = "rma_win_start";
	if (assert & ~RMA_MODE_NOCHECK)
		return makeError(RMA_ERR_ASSERT, "%s: assert %#x: only RMA_MODE_NOCHECK applies to start", kCall, assert);
	RMA_TRY(checkCanOpen(kCall, started_ || locksHeld_ || lockAll_));
	std::vector<int> members;
	RMA_TRY(translateGroup(kCall, g, members));
	if (anyDead()) [[unlikely]]
		RMA_TRY(deadAmong(kCall, &members));
	const int me = rank();
	for (size_t i = 0; i < members.size(); ++i) {
		int t = members[i];
		uint32_t want = postsConsumed_[t] + 1;
		if (assert & RMA_MODE_NOCHECK)
			continue;
		int rc = waitUntil(kCall, "a matching rma_win_post", t, [this, t, me, want] {
			/* Acquire: pairs with the release in target t's post(). */
			uint32_t posted = std::atomic_ref<uint32_t>(postedRow(me)[t]).load(std::memory_order_acquire);
			return static_cast<int32_t>(posted - want) >= 0;
		});
		if (rc != RMA_SUCCESS)
			return rc; /* nothing consumed yet: the epoch did not start */
	}
	for (int t : members) {
		++postsConsumed_[t];
		access_[t] = 1;
	}
	fenceEpoch_ = false;
	allAccess_ = false;
	startGroup_ = std::move(members);
	started_ = true;
	crossProcessEdge();
	return RMA_SUCCESS;
}

int Window::complete()
{
	if (!started_)
		return missingEpoch("rma_win_complete", "access epoch from rma_win_start");
	if (anyDead()) [[unlikely]] {
		if (int rc = deadAmong("rma_win_complete", &startGroup_); rc != RMA_SUCCESS) {
			/* The epoch ends anyway (the live targets' wait will report the failure too, or complete). */
			for (int t : startGroup_)
				access_[t] = 0;
			startGroup_.clear();
			started_ = false;
			return rc;
		}
	}
	/* A failed process (a dead agent holding a target's ring): the targets are still told, then it is reported. */
	int failed = RMA_SUCCESS;
	for (int t : startGroup_) {
		if (isRemote(t))
			continue;
		if (int rc = completeAccumulates("rma_win_complete", t); rc != RMA_SUCCESS) {
			if (errorClass(rc) != RMA_ERR_PROC_FAILED)
				return rc;
			if (failed == RMA_SUCCESS)
				failed = rc;
		}
	}
	completeLocally();
	const int me = rank();
	for (int t : startGroup_) {
#ifdef RMA_HAVE_NET
		if (isRemote(t)) {
			/*
			 * Our completes to t so far, counted here (t's row lives on its
			 * host). COMPLETE leaves even after a refused operation (t's wait
			 * would never end otherwise); the refusal is reported below.
			 */
			if (int rc = remote_->complete("rma_win_complete", t, ++completesSent_[t]);
			    rc != RMA_SUCCESS && failed == RMA_SUCCESS)
				failed = rc;
			access_[t] = 0;
			continue;
		}
#endif
		std::atomic_ref<uint32_t> counter(completedRow(t)[me]);
		/* Release: pairs with the acquire in target t's wait()/test(); publishes our RMA stores. */
		counter.store(counter.load(std::memory_order_relaxed) + 1, std::memory_order_release);
		access_[t] = 0;
	}
	startGroup_.clear();
	started_ = false;
	return failed;
}

int Window::wait()
{
	static constexpr const char *kCall = "rma_win_wait";
	if (!exposed_)
		return missingEpoch(kCall, "exposure epoch from rma_win_post");
	if (anyDead()) [[unlikely]] {
		if (int rc = deadAmong(kCall, &postGroup_); rc != RMA_SUCCESS) {
			postGroup_.clear();
			exposed_ = false;
			return rc;
		}
	}
	const int me = rank();
	for (int o : postGroup_) {
		uint32_t want = completesExpected_[o];
		RMA_TRY(waitUntil(kCall, "rma_win_complete", o, [this, o, me, want] {
			/* Acquire: pairs with the release in origin o's complete(). */
			uint32_t done = std::atomic_ref<uint32_t>(completedRow(me)[o]).load(std::memory_order_acquire);
			return static_cast<int32_t>(done - want) >= 0;
		}));
	}
	postGroup_.clear();
	exposed_ = false;
	crossProcessEdge();
	return RMA_SUCCESS;
}

int Window::test(int *flag)
{
	if (!exposed_)
		return missingEpoch("rma_win_test", "exposure epoch from rma_win_post");
	if (anyDead()) [[unlikely]] {
		if (int rc = deadAmong("rma_win_test", &postGroup_); rc != RMA_SUCCESS) {
			postGroup_.clear();
			exposed_ = false;
			*flag = 1;
			return rc;
		}
	}
	const int me = rank();
	for (int o : postGroup_) {
		/* Acquire: as in wait(). */
		uint32_t done = std::atomic_ref<uint32_t>(completedRow(me)[o]).load(std::memory_order_acquire);
		if (static_cast<int32_t>(done - completesExpected_[o]) < 0) {
			*flag = 0;
			return RMA_SUCCESS;
		}
	}
	postGroup_.clear();
	exposed_ = false;
	*flag = 1;
	crossProcessEdge();
	return RMA_SUCCESS;
}

} /* namespace librma */
