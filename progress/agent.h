/* SPDX-License-Identifier: MIT */
/*
 * ProgressAgent: the loop that drains the rings (or anything else that needs
 * a consumer), and how the job is configured to run it.
 *
 * The agent knows nothing about rings: it serves *sources*, each a poll
 * function that does some work and says how much, plus a pending function
 * for the park re-check. doWork() is one pass over every source and returns
 * the work done; tests step it by hand with no thread. start() wraps the
 * same pass in a thread with an idle strategy:
 *
 *   work found            -> pass again at once
 *   no work for < spinNs  -> PAUSE and pass again
 *   no work for < idleNs  -> sched_yield() and pass again (a core shared
 *                            with a rank gets it back)
 *   then                  -> park on the doorbell: announce sleep, re-check
 *                            every source's pending(), FUTEX_WAIT for a
 *                            ring() or parkTimeoutNs
 *
 * The park timeout is a safety net: a ring whose producer died mid-claim
 * still gets polled now and then, so its dead-slot recovery runs. After a
 * timeout that found nothing, the agent parks again after one pass.
 *
 * Sources come and go at run time (windows are created and freed while the
 * agent runs). The list is copied on write: addSource()/removeSource() build
 * a new list under a mutex and publish it; a pass reads the current list
 * once. removeSource() then waits until the pass that may still hold the
 * old list is over, so when it returns the agent is not inside (and will not
 * enter) that source's poll or pending: the caller may free the source.
 *
 * Orderings (each release or fence with its pair):
 *   R1 list_ store (release), publish() -> A1 list_ load (acquire), enter():
 *      publishes the new list and the sources it names.
 *   F3 fence (seq_cst), enter() after pass_ = odd  <->  F4 fence (seq_cst),
 *      quiesce() after the list_ store: either the pass loads the new list,
 *      or quiesce() sees the pass running (pass_ odd) and waits for it. The
 *      store->load pattern of a grace period, as in the doorbell handshake.
 *   R2 pass_ = even (release), leave() -> A2 pass_ load (acquire), quiesce():
 *      the pass's calls into the old list's sources are over before the
 *      caller frees them.
 *   stop_: set, then the doorbell's ring() (F2) pairs with park()'s F1
 *      around the re-check, which reads stop_.
 *
 * Thread safety: addSource(), removeSource(), sourceCount(), stats(),
 * cpuTimeNs(), wake() are thread-safe. doWork() and hasPending() are for
 * one thread at a time: the agent's thread once start() has succeeded (then
 * progress-thread only), else the caller's. addSource() and removeSource()
 * must not be called from inside a source's poll or pending (removeSource
 * would wait for its own pass). start()/stop() are control path, serialized
 * by the caller. Data path (doWork): noexcept, no allocation, no lock, no
 * system call of its own (sources decide for themselves).
 */
#pragma once

#include <pthread.h>
#include <sys/types.h>

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <mutex>
#include <vector>

#include "common/cache.h"
#include "common/result.h"
#include "progress/doorbell.h"

namespace librma {

/* One thing the agent serves. */
struct ProgressSource {
	/* Do what work there is, without waiting; returns how much (0: none). Required. */
	int (*poll)(void *ctx) noexcept = nullptr;
	/*
	 * Whether poll() would find work now (the park re-check: must see
	 * anything published before a producer's ring()). nullptr: the
	 * source never keeps the agent awake.
	 */
	bool (*pending)(void *ctx) noexcept = nullptr;
	/* Passed to both; also the key removeSource() looks for. */
	void *ctx = nullptr;
};

/* How the agent's thread waits when it finds nothing to do. */
struct IdleStrategy {
	/* Busy-poll (with PAUSE) for this long after the last work. */
	uint64_t spinNs = 20000;
	/* Then yield the core on every pass until this long after the last work, then park. */
	uint64_t idleNs = 50000;
	/* Longest park (the safety net for dead-producer recovery); < 0: none. */
	int64_t parkTimeoutNs = 100000000;
};

/* Counters of an agent (relaxed snapshots; each counter is exact, they are not taken atomically together). */
struct ProgressStats {
	uint64_t passes = 0;   /* doWork() passes */
	uint64_t work = 0;     /* sum of what they returned */
	uint64_t parks = 0;    /* sleeps on the futex, counted as they end */
	uint64_t wakeups = 0;  /* parks ended by a wake (or a signal) */
	uint64_t timeouts = 0; /* parks ended by the safety timeout */
	uint64_t parkSkips = 0; /* parks called off because the re-check found work */
};

class ProgressAgent
{
public:
	/*
	 * @doorbell: where the thread parks and producers ring (shared memory
	 * the producers map). nullptr: a doorbell of the agent's own, which
	 * only this process can ring (through wake()).
	 */
	explicit ProgressAgent(Doorbell *doorbell = nullptr, const IdleStrategy &idle = {});
	/* Stops the thread if it runs. */
	~ProgressAgent();
	ProgressAgent(const ProgressAgent &) = delete;
	ProgressAgent &operator=(const ProgressAgent &) = delete;

	/*
	 * Use @doorbell (nullptr: the agent's own) / @idle from the next
	 * start() on. RMA_ERR_OTHER while the thread runs. Control path.
	 */
	int setDoorbell(Doorbell *doorbell);
	int setIdleStrategy(const IdleStrategy &idle);

	Doorbell *doorbell() const { return doorbell_; }
	const IdleStrategy &idleStrategy() const { return idle_; }

	/*
	 * Serve @source from the next pass on, and wake the thread so that
	 * work already queued is seen. RMA_ERR_ARG if @source has no poll
	 * function or its ctx is already served. Thread-safe.
	 */
	int addSource(const ProgressSource &source);

	/*
	 * Stop serving the source whose ctx is @ctx. When this returns, no
	 * pass is inside that source's poll or pending, and none will call
	 * them again: the caller may free what @ctx points to. Waits for at
	 * most the pass under way. RMA_ERR_ARG if no source has @ctx.
	 * Thread-safe, but never from inside a source's poll or pending.
	 */
	int removeSource(void *ctx);

	/* Sources served now. Thread-safe. */
	std::size_t sourceCount() const;

	/*
	 * One pass: poll every source once. Returns the sum of what they
	 * returned (0: nothing to do). One thread at a time (see above).
	 */
	int doWork() noexcept;

	/* Whether any source's pending() says it has work. Same rules as doWork(). */
	bool hasPending() noexcept;

	/*
	 * Start the thread, pinned to CPU @core if @core >= 0 (else it keeps
	 * the caller's affinity). The thread blocks every signal. Returns
	 * RMA_SUCCESS; RMA_ERR_OTHER if it already runs; RMA_ERR_ARG if @core
	 * cannot be used (not allowed, offline, out of range), with no thread
	 * left running; RMA_ERR_INTERN if no thread can be made. Control path.
	 */
	int start(int core);

	/*
	 * Stop the thread and join it (after its pass under way). No-op if it
	 * does not run. In a child forked while it ran, just forgets it: the
	 * thread is not there (every control call does the same, so a forked
	 * child may use the agent afresh). Control path, never from a
	 * source's poll.
	 */
	void stop();

	/* Whether the thread runs (in this process: not in a child forked while it ran). */
	bool running() const;
	/* The CPU the thread was pinned to, -1 if none. */
	int core() const { return core_; }

	/* Wake the thread if it is parked (as a producer's ring() does). Thread-safe. */
	void wake() noexcept { doorbell_->ring(); }

	ProgressStats stats() const;

	/*
	 * CPU time the thread has used, in ns: live while it runs, frozen at
	 * its exit after stop(); 0 if it never ran. Thread-safe.
	 */
	uint64_t cpuTimeNs() const;

private:
	struct SourceList {
		std::vector<ProgressSource> items;
	};

	static void *threadMain(void *self);
	void run() noexcept;
	/* Start a pass: mark it running and take the current list. */
	const SourceList *enter() noexcept;
	/* End the pass begun by enter(). */
	void leave() noexcept;
	/* Publish @next (control_ held) and wait until no pass holds the previous list. */
	void publish(std::unique_ptr<SourceList> next);
	/* Wait until no pass that may have loaded the previous list is running. */
	void quiesce();
	/*
	 * In a child forked while the thread ran: forget the thread (it stayed
	 * in the parent) and the pass it may have been inside. Control path.
	 */
	void forgetForkedThread();
	void count(std::atomic<uint64_t> &counter, uint64_t n = 1) noexcept
	{
		/* Relaxed, load + store: only the stepping thread writes the counters. */
		counter.store(counter.load(std::memory_order_relaxed) + n, std::memory_order_relaxed);
	}

	/* Written by the stepping thread on every pass: its own lines. */
	alignas(kFalseSharingPad) std::atomic<uint64_t> pass_{ 0 }; /* odd while a pass runs */
	std::atomic<uint64_t> passes_{ 0 };
	std::atomic<uint64_t> work_{ 0 };
	std::atomic<uint64_t> parks_{ 0 };
	std::atomic<uint64_t> wakeups_{ 0 };
	std::atomic<uint64_t> timeouts_{ 0 };
	std::atomic<uint64_t> parkSkips_{ 0 };

	/* Read by every pass, written by the control path. */
	alignas(kFalseSharingPad) std::atomic<const SourceList *> list_{ nullptr };
	std::atomic<bool> stop_{ false };

	alignas(kFalseSharingPad) mutable std::mutex control_; /* guards current_, the list's owner */
	std::unique_ptr<SourceList> current_;

	Doorbell *doorbell_;
	Doorbell ownDoorbell_{};
	IdleStrategy idle_;

	pthread_t thread_{};
	bool running_ = false;
	int core_ = -1;
	pid_t owner_ = 0; /* the process that started the thread */
	clockid_t cpuClock_{};
	std::atomic<uint64_t> finalCpuNs_{ 0 };
};

/* ---- Configuration --------------------------------------------------------- */

/*
 * Who drains the rings, from RMA_PROGRESS and RMA_PROGRESS_CORE:
 *   none    no thread: origins drain the rings themselves while they wait;
 *   thread  every rank runs its own progress thread for the rings of its
 *           own windows (it keeps the rank's binding);
 *   agent   one agent per NUMA node of each host serves the rings of every
 *           window whose target memory is on that node, whatever the
 *           window's communicator: a thread inside the lowest world rank
 *           bound to that node (lib/core picks it; targets publish their
 *           rings in the host's ServedDirectory, progress/directory.h).
 *           RMA_PROGRESS_CORE lists the agents' CPUs: each agent is pinned
 *           to the listed CPU of its node (a single CPU pins the only
 *           agent of a one-node host); an agent whose node has none keeps
 *           its rank's binding.
 *
 * The default is thread (kDefaultProgressMode): it costs nothing extra
 * where no core can be spared (an idle thread parks after ~50 us without
 * work and wakes only for a ring or its 100 ms safety timeout), while the
 * agents' advantage is a spinning core off the ranks' cores, which needs a
 * core to dedicate; an agent also makes its rank's process the node's
 * single point of progress (its death leaves the origins draining).
 */
struct ProgressConfig {
	enum class Mode { None, Thread, Agent };
	Mode mode = Mode::Thread; /* kDefaultProgressMode */
	/* The agents' CPUs (agent mode): sorted, unique; empty: not pinned. */
	std::vector<int> cores;
};

inline constexpr ProgressConfig::Mode kDefaultProgressMode = ProgressConfig::Mode::Thread;

/* "none", "thread" or "agent". */
inline const char *progressModeName(ProgressConfig::Mode mode)
{
	switch (mode) {
	case ProgressConfig::Mode::None:
		return "none";
	case ProgressConfig::Mode::Thread:
		return "thread";
	case ProgressConfig::Mode::Agent:
		return "agent";
	}
	return "?";
}

/*
 * Parse the two variables' values (nullptr or "": unset; the core a CPU
 * list such as "7" or "7,15"). @cpuCount: CPUs the host has configured
 * (every core must be below it). RMA_ERR_ARG with a message naming the
 * variable and its value when one is bad.
 */
Result<ProgressConfig> parseProgressConfig(const char *mode, const char *core, long cpuCount);

/* parseProgressConfig() of this process's environment and host. */
Result<ProgressConfig> progressConfigFromEnvironment();

} /* namespace librma */
