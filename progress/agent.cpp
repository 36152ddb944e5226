/* SPDX-License-Identifier: MIT */
#include "progress/agent.h"

#include <sched.h>
#include <signal.h>
#include <time.h>
#include <unistd.h>

#include <cerrno>
#include <climits>
#include <cstdlib>
#include <cstring>

#include "common/cpu_list.h"
#include "common/spin_wait.h"
#include "error/error.h"

namespace librma {

namespace {

uint64_t monotonicNs() noexcept
{
	timespec ts;
	/* Through the vDSO: no system call. */
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return static_cast<uint64_t>(ts.tv_sec) * 1000000000u + static_cast<uint64_t>(ts.tv_nsec);
}

uint64_t clockNs(clockid_t clock)
{
	timespec ts;
	if (clock_gettime(clock, &ts) != 0)
		return 0;
	return static_cast<uint64_t>(ts.tv_sec) * 1000000000u + static_cast<uint64_t>(ts.tv_nsec);
}

/* The largest core number we accept (CPU_ALLOC's sets grow that far in binding.cpp too). */
constexpr long kMaxCore = (1 << 20) - 1;

} /* namespace */

ProgressAgent::ProgressAgent(Doorbell *doorbell, const IdleStrategy &idle)
	: current_(std::make_unique<SourceList>()), doorbell_(doorbell ? doorbell : &ownDoorbell_), idle_(idle)
{
	/* No pass can run yet: nothing to pair with. */
	list_.store(current_.get(), std::memory_order_relaxed);
}

ProgressAgent::~ProgressAgent()
{
	stop();
}

bool ProgressAgent::running() const
{
	return running_ && owner_ == getpid();
}

void ProgressAgent::forgetForkedThread()
{
	if (!running_ || owner_ == getpid())
		return;
	running_ = false;
	/* Relaxed: no thread steps this copy of the agent yet. */
	uint64_t pass = pass_.load(std::memory_order_relaxed);
	pass_.store(pass + (pass & 1), std::memory_order_relaxed);
}

int ProgressAgent::setDoorbell(Doorbell *doorbell)
{
	forgetForkedThread();
	if (running_)
		return makeError(RMA_ERR_OTHER, "progress agent: the doorbell cannot change while the thread runs");
	doorbell_ = doorbell ? doorbell : &ownDoorbell_;
	return RMA_SUCCESS;
}

int ProgressAgent::setIdleStrategy(const IdleStrategy &idle)
{
	forgetForkedThread();
	if (running_)
		return makeError(RMA_ERR_OTHER, "progress agent: the idle strategy cannot change while the thread runs");
	idle_ = idle;
	return RMA_SUCCESS;
}

/* ---- Sources ----------------------------------------------------------------- */

int ProgressAgent::addSource(const ProgressSource &source)
{
	if (!source.poll)
		return makeError(RMA_ERR_ARG, "progress agent: a source needs a poll function");
	{
		std::lock_guard lock(control_);
		for (const ProgressSource &s : current_->items)
			if (s.ctx == source.ctx)
				return makeError(RMA_ERR_ARG, "progress agent: context %p is already served", source.ctx);
		forgetForkedThread();
		auto next = std::make_unique<SourceList>(*current_);
		next->items.push_back(source);
		publish(std::move(next));
	}
	/* A parked thread re-checks the sources, the new one included. */
	wake();
	return RMA_SUCCESS;
}

int ProgressAgent::removeSource(void *ctx)
{
	std::lock_guard lock(control_);
	auto next = std::make_unique<SourceList>();
	next->items.reserve(current_->items.size());
	for (const ProgressSource &s : current_->items)
		if (s.ctx != ctx)
			next->items.push_back(s);
	forgetForkedThread();
	if (next->items.size() == current_->items.size())
		return makeError(RMA_ERR_ARG, "progress agent: no source has context %p", ctx);
	publish(std::move(next));
	return RMA_SUCCESS;
}

std::size_t ProgressAgent::sourceCount() const
{
	std::lock_guard lock(control_);
	return current_->items.size();
}

void ProgressAgent::publish(std::unique_ptr<SourceList> next)
{
	/* R1: pairs with A1 in enter(); publishes the list and the sources it names. */
	list_.store(next.get(), std::memory_order_release);
	quiesce();
	/* No pass holds the old list any more. */
	current_ = std::move(next);
}

void ProgressAgent::quiesce()
{
	/* F4: pairs with F3 in enter(); orders the list_ store (R1) before the pass_ load below. */
	std::atomic_thread_fence(std::memory_order_seq_cst);
	/* A2: pairs with R2 in leave(); the pass we saw end has made its last call into the old list. */
	uint64_t seen = pass_.load(std::memory_order_acquire);
	if (!(seen & 1))
		return; /* no pass runs: any later one loads the new list (F3 after F4) */
	/*
	 * Pass `seen` may hold the old list; any pass after it loads the new
	 * one (its F3 comes after our F4, else we would have read its odd
	 * value). So one change of pass_ is enough.
	 */
	SpinWait wait;
	while (pass_.load(std::memory_order_acquire) == seen)
		wait.once();
}

const ProgressAgent::SourceList *ProgressAgent::enter() noexcept
{
	/* Relaxed load: only the stepping thread writes pass_. */
	pass_.store(pass_.load(std::memory_order_relaxed) + 1, std::memory_order_relaxed);
	/* F3: pairs with F4 in quiesce(); orders pass_ = odd before the list_ load. */
	std::atomic_thread_fence(std::memory_order_seq_cst);
	/* A1: pairs with R1 in publish(). */
	return list_.load(std::memory_order_acquire);
}

void ProgressAgent::leave() noexcept
{
	/* R2: pairs with A2 in quiesce(); our calls into the list's sources are over. */
	pass_.store(pass_.load(std::memory_order_relaxed) + 1, std::memory_order_release);
}

/* ---- The pass ---------------------------------------------------------------- */

int ProgressAgent::doWork() noexcept
{
	const SourceList *list = enter();
	int work = 0;
	for (const ProgressSource &s : list->items)
		work += s.poll(s.ctx);
	leave();
	count(passes_);
	if (work > 0)
		count(work_, static_cast<uint64_t>(work));
	return work;
}

bool ProgressAgent::hasPending() noexcept
{
	const SourceList *list = enter();
	bool pending = false;
	for (const ProgressSource &s : list->items) {
		if (s.pending && s.pending(s.ctx)) {
			pending = true;
			break;
		}
	}
	leave();
	return pending;
}

/* ---- The thread -------------------------------------------------------------- */

int ProgressAgent::start(int core)
{
	forgetForkedThread();
	if (running_)
		return makeError(RMA_ERR_OTHER, "progress agent: the thread already runs");
	if (core > kMaxCore)
		return makeError(RMA_ERR_ARG, "progress agent: CPU %d is out of range", core);
	stop_.store(false, std::memory_order_relaxed);

	/* Pinned from its first instruction: the affinity goes in the attributes. */
	pthread_attr_t attr;
	int rc = pthread_attr_init(&attr);
	if (rc != 0)
		return makeErrnoError(RMA_ERR_INTERN, rc, "progress agent: cannot start the thread");
	cpu_set_t *set = nullptr;
	if (core >= 0) {
		set = CPU_ALLOC(core + 1);
		if (!set) {
			pthread_attr_destroy(&attr);
			return makeErrnoError(RMA_ERR_INTERN, ENOMEM, "progress agent: cannot start the thread");
		}
		std::size_t bytes = CPU_ALLOC_SIZE(core + 1);
		CPU_ZERO_S(bytes, set);
		CPU_SET_S(core, bytes, set);
		rc = pthread_attr_setaffinity_np(&attr, bytes, set);
	}

	/* The thread starts with every signal blocked: they are the application's. */
	if (rc == 0) {
		sigset_t all, old;
		sigfillset(&all);
		pthread_sigmask(SIG_SETMASK, &all, &old);
		rc = pthread_create(&thread_, &attr, threadMain, this);
		pthread_sigmask(SIG_SETMASK, &old, nullptr);
	}
	pthread_attr_destroy(&attr);
	if (set)
		CPU_FREE(set);
	if (rc == EINVAL && core >= 0)
		return makeErrnoError(RMA_ERR_ARG, rc, "progress agent: cannot pin the thread to CPU %d", core);
	if (rc != 0)
		return makeErrnoError(RMA_ERR_INTERN, rc, "progress agent: cannot start the thread");

	running_ = true;
	owner_ = getpid();
	core_ = core;
	pthread_setname_np(thread_, "rma-progress");
	if (pthread_getcpuclockid(thread_, &cpuClock_) != 0)
		cpuClock_ = CLOCK_THREAD_CPUTIME_ID; /* never: the thread lives until stop() joins it */
	return RMA_SUCCESS;
}

void ProgressAgent::stop()
{
	forgetForkedThread();
	if (!running_)
		return;
	/* Relaxed: ring()'s F2 orders it before the state load; park()'s F1 before the re-check. */
	stop_.store(true, std::memory_order_relaxed);
	wake();
	if (pthread_equal(thread_, pthread_self())) {
		/* Called from a source's poll (exit() on the thread): the loop ends on its own. */
		pthread_detach(thread_);
	} else {
		pthread_join(thread_, nullptr);
	}
	running_ = false;
}

void *ProgressAgent::threadMain(void *self)
{
	static_cast<ProgressAgent *>(self)->run();
	return nullptr;
}

void ProgressAgent::run() noexcept
{
	const IdleStrategy idle = idle_;
	bool idling = false;
	uint64_t idleSince = 0;
	auto wanted = [this]() noexcept { return stop_.load(std::memory_order_relaxed) || hasPending(); };

	/* Relaxed: stop() sets it and rings; a pass in progress finishes first. */
	while (!stop_.load(std::memory_order_relaxed)) {
		if (doWork() > 0) {
			idling = false;
			continue;
		}
		uint64_t now = monotonicNs();
		if (!idling) {
			idling = true;
			idleSince = now;
		}
		uint64_t quiet = now - idleSince;
		if (quiet < idle.spinNs) {
			cpuRelax();
			continue;
		}
		if (quiet < idle.idleNs) {
			sched_yield();
			continue;
		}
		switch (doorbell_->park(wanted, idle.parkTimeoutNs)) {
		case ParkResult::Work:
			/* Not a sleep after all. */
			count(parkSkips_);
			idling = false;
			break;
		case ParkResult::Woken:
			count(parks_);
			count(wakeups_);
			idling = false;
			break;
		case ParkResult::TimedOut:
			count(parks_);
			/* Stay idle: if the next pass finds nothing, park again at once. */
			count(timeouts_);
			idleSince = now - idle.idleNs;
			break;
		}
	}
	finalCpuNs_.store(clockNs(CLOCK_THREAD_CPUTIME_ID), std::memory_order_relaxed);
}

/* ---- Statistics -------------------------------------------------------------- */

ProgressStats ProgressAgent::stats() const
{
	ProgressStats s;
	/* Relaxed: statistics. */
	s.passes = passes_.load(std::memory_order_relaxed);
	s.work = work_.load(std::memory_order_relaxed);
	s.parks = parks_.load(std::memory_order_relaxed);
	s.wakeups = wakeups_.load(std::memory_order_relaxed);
	s.timeouts = timeouts_.load(std::memory_order_relaxed);
	s.parkSkips = parkSkips_.load(std::memory_order_relaxed);
	return s;
}

uint64_t ProgressAgent::cpuTimeNs() const
{
	if (running())
		return clockNs(cpuClock_);
	return finalCpuNs_.load(std::memory_order_relaxed);
}

/* ---- Configuration ------------------------------------------------------------- */

Result<ProgressConfig> parseProgressConfig(const char *mode, const char *core, long cpuCount)
{
	ProgressConfig config;
	config.mode = kDefaultProgressMode;
	if (mode && *mode) {
		if (!std::strcmp(mode, "none"))
			config.mode = ProgressConfig::Mode::None;
		else if (!std::strcmp(mode, "thread"))
			config.mode = ProgressConfig::Mode::Thread;
		else if (!std::strcmp(mode, "agent"))
			config.mode = ProgressConfig::Mode::Agent;
		else
			return Result<ProgressConfig>::failure(
				makeError(RMA_ERR_ARG, "RMA_PROGRESS='%s': want none, thread or agent", mode));
	}
	if (core && *core) {
		auto cpus = parseCpuListStrict(core);
		if (!cpus || cpus->back() > kMaxCore)
			return Result<ProgressConfig>::failure(makeError(
				RMA_ERR_ARG, "RMA_PROGRESS_CORE='%s': want a CPU number or list (\"7\", \"7,15\")", core));
		if (cpuCount > 0 && cpus->back() >= cpuCount)
			return Result<ProgressConfig>::failure(makeError(
				RMA_ERR_ARG, "RMA_PROGRESS_CORE='%s': this host has CPUs 0 to %ld only", core, cpuCount - 1));
		config.cores = std::move(*cpus);
	}
	return config;
}

Result<ProgressConfig> progressConfigFromEnvironment()
{
	return parseProgressConfig(std::getenv("RMA_PROGRESS"), std::getenv("RMA_PROGRESS_CORE"),
				   sysconf(_SC_NPROCESSORS_CONF));
}

} /* namespace librma */
