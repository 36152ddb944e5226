/* SPDX-License-Identifier: MIT */
/*
 * launch(): fork the ranks, then run one poll() loop until every rank has
 * been reaped. The loop watches
 *  - each rank's bootstrap socket: collectives (GatherServer) and abort;
 *  - each rank's pidfd, which becomes readable when the rank exits (where
 *    pidfd_open is missing, or RMA_NO_PIDFD is set to test that leg,
 *    SIGCHLD through the self-pipe instead);
 *  - each rank's stdout and stderr pipes when tagging output;
 *  - the self-pipe, for SIGINT and SIGTERM sent to the launcher;
 *  - two deadlines: the job's time limit and the end of the SIGTERM grace.
 *
 * Job rules: a rank that exits 0 is done. The first failure (a rank that
 * exits non-zero or is killed, abort, a signal to the launcher, the time
 * limit) fixes the job's status and stops the job: SIGTERM to every rank
 * still running (the launcher's own SIGINT/SIGTERM is forwarded as is), and
 * SIGKILL after killGraceSeconds; a second signal to the launcher sends
 * SIGKILL at once. Statuses: a rank's exit code, 128 + signal for a rank
 * killed by a signal or a signal to the launcher, abort's code,
 * kTimeoutStatus (124, as timeout(1)) for the time limit, and
 * kCannotStartStatus (127) when a rank could not be started.
 *
 * Reaping: waitpid() on each rank's own pid only, so that the caller's other
 * children are left alone. Ranks get PR_SET_PDEATHSIG(SIGKILL), so they die
 * with the launcher's thread and never outlive it as orphans.
 *
 * While it runs, launch() owns the SIGINT, SIGTERM and SIGCHLD dispositions
 * of the process; it restores the caller's on return, and in each rank
 * before the rank's code runs.
 *
 * Assumptions: one launch() at a time per process (the signal handlers share
 * one self-pipe); the calling process is single-threaded when it calls
 * launch(), because the child runs non-async-signal-safe code after fork();
 * and the thread that calls launch() outlives the job (PDEATHSIG fires when
 * the forking thread exits). Ranks inherit the launcher's stdin.
 */
#include "bootstrap/launcher.h"

#include <fcntl.h>
#include <poll.h>
#include <sys/resource.h>
#include <pthread.h>
#include <signal.h>
#include <sys/ioctl.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <chrono>
#include <cmath>
#include <cstdarg>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <optional>
#include <string>
#include <vector>

#include "common/knobs.h"
#include "config.h"

#include "bootstrap/binding.h"
#include "bootstrap/gather_server.h"
#include "bootstrap/job_status.h"
#include "bootstrap/pidfd.h"
#include "bootstrap/protocol.h"
#include "numa/topology.h"

namespace librma {

namespace {

using Clock = std::chrono::steady_clock;

/*
 * The descriptor a rank finds its bootstrap socket on (RMA_BOOT_FD): clear
 * of stdio and of the low numbers programs open first, below any
 * RLIMIT_NOFILE in use.
 */
constexpr int kBootFd = 100;
/* Descriptors the launcher holds per running rank: socket, two output pipes, pidfd (and one in flight). */
constexpr int kFdsPerRank = 5;
constexpr int kTimeoutStatus = 124;
constexpr int kCannotStartStatus = 127;
/* Longest line kept waiting for its newline when tagging output. */
constexpr std::size_t kMaxLine = 64 * 1024;

/*
 * Signal handler state. The handler records the signal in a bit mask and
 * writes a byte to the self-pipe to wake the loop; the loop drains the pipe,
 * then takes the mask, so a signal that lands after the drain leaves a byte
 * for the next poll(). Lock-free atomics are async-signal-safe.
 */
std::atomic<int> gSignalPipe{ -1 };
std::atomic<unsigned> gPendingSignals{ 0 };
static_assert(std::atomic<int>::is_always_lock_free && std::atomic<unsigned>::is_always_lock_free);

extern "C" void onSignal(int signo)
{
	int saved = errno;
	gPendingSignals.fetch_or(1u << signo, std::memory_order_relaxed);
	unsigned char byte = 1;
	/* A full pipe already holds a wake-up byte. */
	[[maybe_unused]] ssize_t n = write(gSignalPipe.load(std::memory_order_relaxed), &byte, 1);
	errno = saved;
}

[[gnu::format(printf, 1, 2)]] void say(const char *fmt, ...)
{
	char line[1024];
	va_list ap;
	va_start(ap, fmt);
	std::vsnprintf(line, sizeof(line), fmt, ap);
	va_end(ap);
	std::fprintf(stderr, "launcher: %s\n", line);
	std::fflush(stderr);
}

/* Write all of @text to @fd; output is dropped if @fd is broken. */
void writeAll(int fd, std::string_view text)
{
	while (!text.empty()) {
		ssize_t n = write(fd, text.data(), text.size());
		if (n > 0) {
			text.remove_prefix(n);
		} else if (n < 0 && errno == EAGAIN) {
			pollfd p = { fd, POLLOUT, 0 };
			poll(&p, 1, -1);
		} else if (n < 0 && errno != EINTR) {
			return;
		}
	}
}

struct RankState {
	pid_t pid = -1;
	bool running = false; /* started and not reaped */
	UniqueFd pidfd;
	UniqueFd sock; /* the launcher's end; closed once the rank is gone */
	boot::InMessage in;
	UniqueFd output[2];	/* read ends of the rank's stdout, stderr (tagging) */
	std::string partial[2]; /* output after the last newline */
};

/* Which pollfd is which. */
struct Source {
	enum class Kind { Signal, Socket, Pidfd, Output } kind;
	int rank = -1;
	int stream = 0;
};

class Job
{
public:
	explicit Job(const LaunchOptions &options) : opts_(options), ranks_(options.nranks), server_(options.nranks) {}

	int run();

private:
	bool installSignals();
	void restoreSignals();
	int startRank(int rank, const Binding &binding, const std::vector<char *> &argv);
	[[noreturn]] void becomeRank(int rank, int sock, const int outputs[2], const std::vector<int> &launcherFds,
				     const sigset_t &callerMask, const Binding &binding,
				     const std::vector<char *> &argv);
	void loop();
	int pollTimeout() const;
	void onSignals();
	void readSocket(int rank);
	void dispatch(int rank, boot::InMessage msg);
	void flushOutbox(int rank);
	void flushOutboxes();
	void closeRank(int rank);
	void reap(int rank);
	void onExit(int rank, int status);
	[[gnu::format(printf, 4, 5)]] void fail(int status, int signo, const char *fmt, ...);
	void signalRunning(int signo);
	void readOutput(int rank, int stream);
	void finishOutput(int rank, int stream);
	void emitLines(int rank, int stream, bool final);

	const LaunchOptions &opts_;
	std::vector<RankState> ranks_;
	boot::GatherServer server_;
	/* Which ranks died: mapped by every rank (RMA_JOB_FD), so operations to them fail fast. */
	JobStatus jobStatus_;
	const pid_t launcherPid_ = getpid();
	bool usePidfd_ = true;
	/* What the launcher buffers for its ranks, at most (RMA_LAUNCHER_MAX_MIB). */
	std::size_t maxBufferedBytes_ = std::size_t(1024) << 20;
	static constexpr std::size_t kMaxPendingCollectives = 4096;
	int running_ = 0;
	std::optional<int> status_;
	bool stopping_ = false;
	std::optional<Clock::time_point> deadline_;
	std::optional<Clock::time_point> killAt_;
	UniqueFd signalRead_;
	UniqueFd signalWrite_;
	struct sigaction oldInt_ = {}, oldTerm_ = {}, oldChld_ = {};
};

int Job::run()
{
	if (opts_.nranks < 1 || (!opts_.childMain && opts_.argv.empty())) {
		say("nothing to launch (%d ranks, %s)", opts_.nranks,
		    opts_.argv.empty() ? "no program" : opts_.argv[0].c_str());
		return kCannotStartStatus;
	}
	if (!opts_.rankCpus.empty() && opts_.rankCpus.size() != static_cast<std::size_t>(opts_.nranks)) {
		say("the placement places %zu ranks, not the job's %d", opts_.rankCpus.size(), opts_.nranks);
		return kCannotStartStatus;
	}

	const Topology *topology = opts_.topology;
	if (opts_.bind != Bind::None && !topology)
		topology = &Topology::system();
	std::vector<int> allowed = affinityCpus();

	std::vector<char *> argv;
	for (const std::string &arg : opts_.argv)
		argv.push_back(const_cast<char *>(arg.c_str()));
	argv.push_back(nullptr);

	if (const char *mib = knobValue("RMA_LAUNCHER_MAX_MIB"))
		maxBufferedBytes_ = static_cast<std::size_t>(std::strtoull(mib, nullptr, 10)) << 20;
	const char *noPidfd = knobValue("RMA_NO_PIDFD");
	if (noPidfd && !std::strcmp(noPidfd, "1")) {
		usePidfd_ = false;
	} else {
		UniqueFd probe(pidfdOpen(getpid()));
		usePidfd_ = probe.isValid();
	}
	if (!installSignals()) {
		say("cannot create the signal pipe: %s", std::strerror(errno));
		return kCannotStartStatus;
	}
	if (int rc = jobStatus_.create(opts_.nranks); rc < 0)
		say("cannot create the job status page (%s): operations to a dead rank are noticed only when a "
		    "synchronization waits for it", std::strerror(-rc));
	if (opts_.verbose)
		say("%d ranks; exits watched through %s", opts_.nranks, usePidfd_ ? "pidfds" : "SIGCHLD");

	if (opts_.timeoutSeconds > 0)
		deadline_ = Clock::now() + std::chrono::duration_cast<Clock::duration>(
						   std::chrono::duration<double>(opts_.timeoutSeconds));

	/* Children must not inherit (and print again) what stdio holds. */
	std::fflush(nullptr);
	for (int rank = 0; rank < opts_.nranks; ++rank) {
		Binding binding = opts_.rankCpus.empty() ? bindingFor(opts_.bind, opts_.mapBy, rank, allowed, topology)
							 : bindingToCpus(opts_.rankCpus[static_cast<std::size_t>(rank)]);
		int rc = startRank(rank, binding, argv);
		if (rc == -EMFILE || rc == -ENFILE) {
			struct rlimit lim {};
			getrlimit(RLIMIT_NOFILE, &lim);
			fail(kCannotStartStatus, SIGTERM,
			     "cannot start rank %d: %s: the launcher keeps %d descriptors per rank (%d for %d ranks, plus "
			     "its own), and this process may open %llu (RLIMIT_NOFILE); raise it with ulimit -n %d",
			     rank, std::strerror(-rc), kFdsPerRank, kFdsPerRank * opts_.nranks, opts_.nranks,
			     static_cast<unsigned long long>(lim.rlim_cur), kFdsPerRank * opts_.nranks + 64);
			for (int r = rank; r < opts_.nranks; ++r)
				server_.rankGone(r);
			break;
		}
		if (rc < 0) {
			fail(kCannotStartStatus, SIGTERM, "cannot start rank %d: %s", rank, std::strerror(-rc));
			/* Ranks never started count as gone for the collectives. */
			for (int r = rank; r < opts_.nranks; ++r)
				server_.rankGone(r);
			break;
		}
		if (opts_.verbose)
			say("rank %d: pid %d, bound to %s", rank, ranks_[rank].pid, binding.text.c_str());
	}

	loop();

	for (int rank = 0; rank < opts_.nranks; ++rank) {
		for (int stream = 0; stream < 2; ++stream) {
			if (ranks_[rank].output[stream].isValid())
				finishOutput(rank, stream);
		}
	}
	restoreSignals();
	return status_.value_or(0);
}

bool Job::installSignals()
{
	int fds[2];
	if (pipe2(fds, O_CLOEXEC | O_NONBLOCK) < 0)
		return false;
	signalRead_.reset(fds[0]);
	signalWrite_.reset(fds[1]);
	gPendingSignals.store(0, std::memory_order_relaxed);
	gSignalPipe.store(fds[1], std::memory_order_relaxed);

	struct sigaction sa = {};
	sa.sa_handler = onSignal;
	sa.sa_flags = SA_RESTART;
	sigemptyset(&sa.sa_mask);
	sigaction(SIGINT, &sa, &oldInt_);
	sigaction(SIGTERM, &sa, &oldTerm_);
	/*
	 * With pidfds SIGCHLD is not needed, but it must not be SIG_IGN, which
	 * would reap the ranks behind our back.
	 */
	struct sigaction chld = {};
	chld.sa_handler = usePidfd_ ? SIG_DFL : onSignal;
	chld.sa_flags = SA_RESTART | SA_NOCLDSTOP;
	sigemptyset(&chld.sa_mask);
	sigaction(SIGCHLD, &chld, &oldChld_);
	return true;
}

void Job::restoreSignals()
{
	sigaction(SIGINT, &oldInt_, nullptr);
	sigaction(SIGTERM, &oldTerm_, nullptr);
	sigaction(SIGCHLD, &oldChld_, nullptr);
	gSignalPipe.store(-1, std::memory_order_relaxed);
}

/* Returns 0, or -errno if the rank could not be started (nothing is left running then). */
int Job::startRank(int rank, const Binding &binding, const std::vector<char *> &argv)
{
	int sv[2];
	if (socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sv) < 0)
		return -errno;
	UniqueFd mine(sv[0]), theirs(sv[1]);

	UniqueFd readEnds[2], writeEnds[2];
	if (opts_.tagOutput) {
		for (int stream = 0; stream < 2; ++stream) {
			int p[2];
			if (pipe2(p, O_CLOEXEC) < 0)
				return -errno;
			readEnds[stream].reset(p[0]);
			writeEnds[stream].reset(p[1]);
		}
	}

	/* What the child must not keep: the launcher's own descriptors. */
	std::vector<int> launcherFds = { signalRead_.get(), signalWrite_.get(), mine.get(), readEnds[0].get(),
					 readEnds[1].get() };
	for (int r = 0; r < rank; ++r) {
		const RankState &state = ranks_[r];
		for (const UniqueFd *fd : { &state.sock, &state.pidfd, &state.output[0], &state.output[1] }) {
			if (fd->isValid())
				launcherFds.push_back(fd->get());
		}
	}

	/*
	 * Block signals across fork(): until the child has restored the
	 * caller's handlers, a SIGTERM from us would run our handler in the
	 * child and be lost. The child unblocks them after the restore.
	 */
	sigset_t all, callerMask;
	sigfillset(&all);
	pthread_sigmask(SIG_SETMASK, &all, &callerMask);
	pid_t pid = fork();
	if (pid == 0) {
		int outputs[2] = { writeEnds[0].get(), writeEnds[1].get() };
		becomeRank(rank, theirs.get(), outputs, launcherFds, callerMask, binding, argv);
	}
	int forkErr = errno;
	pthread_sigmask(SIG_SETMASK, &callerMask, nullptr);
	if (pid < 0)
		return -forkErr;

	RankState &state = ranks_[rank];
	if (usePidfd_) {
		state.pidfd.reset(pidfdOpen(pid));
		if (!state.pidfd.isValid()) {
			int err = errno;
			kill(pid, SIGKILL);
			while (waitpid(pid, nullptr, 0) < 0 && errno == EINTR)
				;
			return -err;
		}
	}
	fcntl(mine.get(), F_SETFL, O_NONBLOCK);
	state.sock = std::move(mine);
	for (int stream = 0; stream < 2; ++stream) {
		if (readEnds[stream].isValid())
			fcntl(readEnds[stream].get(), F_SETFL, O_NONBLOCK);
		state.output[stream] = std::move(readEnds[stream]);
	}
	state.pid = pid;
	state.running = true;
	++running_;
	return 0;
}

/* In the child after fork(): undo what the launcher set up, then become the rank. */
void Job::becomeRank(int rank, int sock, const int outputs[2], const std::vector<int> &launcherFds,
		     const sigset_t &callerMask, const Binding &binding, const std::vector<char *> &argv)
{
	/* A signal sent to us meanwhile is pending: it acts once unblocked. */
	sigaction(SIGINT, &oldInt_, nullptr);
	sigaction(SIGTERM, &oldTerm_, nullptr);
	sigaction(SIGCHLD, &oldChld_, nullptr);
	pthread_sigmask(SIG_SETMASK, &callerMask, nullptr);

	/* If the launcher died before prctl(), getppid() already names another process. */
	if (prctl(PR_SET_PDEATHSIG, SIGKILL) < 0 || getppid() != launcherPid_)
		_exit(kCannotStartStatus);

	/* They are CLOEXEC, but childMain runs without exec. */
	for (int fd : launcherFds) {
		if (fd >= 0)
			close(fd);
	}

	/*
	 * The channel goes to descriptor 100, out of the program's way; under a
	 * descriptor limit of 100 or less, to the lowest free one instead.
	 */
	int bootFd = kBootFd;
	struct rlimit lim {};
	if (getrlimit(RLIMIT_NOFILE, &lim) == 0 && lim.rlim_cur <= static_cast<rlim_t>(kBootFd))
		bootFd = -1;
	if (sock == bootFd) {
		fcntl(sock, F_SETFD, 0);
	} else if (bootFd >= 0) {
		if (dup2(sock, bootFd) < 0 || close(sock) < 0)
			_exit(kCannotStartStatus);
	} else {
		bootFd = sock;
		fcntl(sock, F_SETFD, 0);
	}
	for (int stream = 0; stream < 2; ++stream) {
		if (outputs[stream] < 0)
			continue;
		if (dup2(outputs[stream], STDOUT_FILENO + stream) < 0)
			_exit(kCannotStartStatus);
		close(outputs[stream]);
	}

	/* The status page goes next to it (it is CLOEXEC in the launcher). */
	if (jobStatus_.valid()) {
		int jobFd = bootFd == kBootFd ? kBootFd + 1 : -1;
		if (jobFd >= 0 && lim.rlim_cur <= static_cast<rlim_t>(jobFd))
			jobFd = -1;
		if (jobFd >= 0) {
			if (dup2(jobStatus_.fd(), jobFd) < 0)
				_exit(kCannotStartStatus);
		} else {
			jobFd = fcntl(jobStatus_.fd(), F_DUPFD, 0);
			if (jobFd < 0)
				_exit(kCannotStartStatus);
		}
		/* The launcher's own copy is CLOEXEC, but childMain runs without exec. */
		close(jobStatus_.fd());
		setenv("RMA_JOB_FD", std::to_string(jobFd).c_str(), 1);
	}
	setenv("RMA_BOOT_FD", std::to_string(bootFd).c_str(), 1);
	setenv("RMA_RANK", std::to_string(rank).c_str(), 1);
	setenv("RMA_SIZE", std::to_string(opts_.nranks).c_str(), 1);
	setenv("RMA_BIND", binding.text.c_str(), 1);
	if (!binding.cpus.empty()) {
		int rc = setAffinityCpus(binding.cpus);
		if (rc < 0)
			say("rank %d: cannot bind to %s: %s", rank, binding.text.c_str(), std::strerror(-rc));
		/* A placement is applied exactly or not at all. */
		if (rc < 0 && binding.exact)
			_exit(kCannotStartStatus);
	}

	if (opts_.childMain) {
		int rc = opts_.childMain(rank);
		std::fflush(nullptr);
		_exit(rc);
	}
	execvp(argv[0], argv.data());
	say("rank %d: cannot execute %s: %s", rank, argv[0], std::strerror(errno));
	_exit(kCannotStartStatus);
}

void Job::loop()
{
	std::vector<pollfd> fds;
	std::vector<Source> sources;
	while (running_ > 0) {
		fds.clear();
		sources.clear();
		fds.push_back({ signalRead_.get(), POLLIN, 0 });
		sources.push_back({ Source::Kind::Signal });
		for (int rank = 0; rank < opts_.nranks; ++rank) {
			RankState &state = ranks_[rank];
			if (state.sock.isValid()) {
				short events = POLLIN | (server_.outbox(rank).empty() ? 0 : POLLOUT);
				fds.push_back({ state.sock.get(), events, 0 });
				sources.push_back({ Source::Kind::Socket, rank });
			}
			if (state.running && state.pidfd.isValid()) {
				fds.push_back({ state.pidfd.get(), POLLIN, 0 });
				sources.push_back({ Source::Kind::Pidfd, rank });
			}
			for (int stream = 0; stream < 2; ++stream) {
				if (state.output[stream].isValid()) {
					fds.push_back({ state.output[stream].get(), POLLIN, 0 });
					sources.push_back({ Source::Kind::Output, rank, stream });
				}
			}
		}

		if (poll(fds.data(), fds.size(), pollTimeout()) < 0 && errno != EINTR) {
			say("poll: %s", std::strerror(errno));
			/* Nothing can be served any more: make sure the loop ends. */
			fail(kCannotStartStatus, SIGKILL, "the launcher cannot wait for its ranks");
			for (int rank = 0; rank < opts_.nranks; ++rank) {
				if (ranks_[rank].running) {
					while (waitpid(ranks_[rank].pid, nullptr, 0) < 0 && errno == EINTR)
						;
					ranks_[rank].running = false;
					--running_;
				}
			}
			return;
		}

		Clock::time_point now = Clock::now();
		if (deadline_ && now >= *deadline_) {
			deadline_.reset();
			fail(kTimeoutStatus, SIGTERM, "the job exceeded its time limit of %g s", opts_.timeoutSeconds);
		}
		if (killAt_ && now >= *killAt_) {
			killAt_.reset();
			signalRunning(SIGKILL);
		}

		/*
		 * A handler may close descriptors of later entries (a rank that
		 * exits); each entry is checked against the rank's state, which
		 * never reopens a closed source.
		 */
		for (std::size_t i = 0; i < fds.size(); ++i) {
			short revents = fds[i].revents;
			if (!revents)
				continue;
			const Source &source = sources[i];
			if (source.kind == Source::Kind::Signal) {
				onSignals();
				continue;
			}
			RankState &state = ranks_[source.rank];
			if (source.kind == Source::Kind::Socket) {
				if (state.sock.isValid() && (revents & POLLOUT))
					flushOutbox(source.rank);
				if (state.sock.isValid() && (revents & ~POLLOUT))
					readSocket(source.rank);
			} else if (source.kind == Source::Kind::Pidfd) {
				if (state.running)
					reap(source.rank);
			} else if (state.output[source.stream].isValid()) {
				readOutput(source.rank, source.stream);
			}
		}
	}
}

/* Milliseconds until the next deadline (rounded up), or -1 for none. */
int Job::pollTimeout() const
{
	std::optional<Clock::time_point> next = deadline_;
	if (killAt_ && (!next || *killAt_ < *next))
		next = killAt_;
	if (!next)
		return -1;
	auto ms = std::chrono::ceil<std::chrono::milliseconds>(*next - Clock::now()).count();
	return static_cast<int>(std::clamp<decltype(ms)>(ms, 0, 60 * 1000));
}

void Job::onSignals()
{
	char buf[64];
	while (read(signalRead_.get(), buf, sizeof(buf)) > 0)
		;
	unsigned pending = gPendingSignals.exchange(0, std::memory_order_relaxed);

	for (int signo : { SIGINT, SIGTERM }) {
		if (!(pending & (1u << signo)))
			continue;
		if (stopping_)
			signalRunning(SIGKILL);
		else
			fail(128 + signo, signo, "got %s; stopping the job", strsignal(signo));
	}
	if (pending & (1u << SIGCHLD)) {
		for (int rank = 0; rank < opts_.nranks; ++rank) {
			if (ranks_[rank].running)
				reap(rank);
		}
	}
}

void Job::readSocket(int rank)
{
	RankState &state = ranks_[rank];
	while (state.sock.isValid()) {
		int rc = boot::recvPacket(state.sock.get(), state.in, MSG_DONTWAIT);
		if (rc == 0) {
			if (state.in.body.size() > maxBufferedBytes_) {
				fail(1, SIGTERM,
				     "rank %d sent a bootstrap message of more than %zu MiB (RMA_LAUNCHER_MAX_MIB); "
				     "stopping the job",
				     rank, maxBufferedBytes_ >> 20);
				closeRank(rank);
				return;
			}
			continue;
		}
		if (rc == 1) {
			dispatch(rank, std::exchange(state.in, {}));
			continue;
		}
		if (rc == -EAGAIN)
			return;
		/* Junk on the bootstrap channel is a broken rank: the job cannot go on with it. */
		if (rc != -ECONNRESET)
			fail(1, SIGTERM, "rank %d sent a malformed bootstrap message (%s); stopping the job", rank,
			     std::strerror(-rc));
		closeRank(rank);
	}
}

void Job::dispatch(int rank, boot::InMessage msg)
{
	uint32_t type = boot::messageType(msg.body);
	if (type == static_cast<uint32_t>(boot::MsgType::Gather)) {
		server_.gather(rank, msg.body, std::move(msg.fds));
		/*
		 * A rank that floods collectives (or never reads its replies)
		 * would grow the launcher without bound: past the limit the
		 * job fails, naming the rank whose message crossed it.
		 */
		if (server_.bufferedBytes() > maxBufferedBytes_ || server_.pendingCount() > kMaxPendingCollectives ||
		    server_.outbox(rank).size() > kMaxPendingCollectives) {
			fail(1, SIGTERM,
			     "rank %d: the launcher holds %zu unanswered collectives (%zu bytes) and %zu replies for it, "
			     "over its limit of %zu collectives and %zu MiB (RMA_LAUNCHER_MAX_MIB); stopping the job",
			     rank, server_.pendingCount(), server_.bufferedBytes(), server_.outbox(rank).size(),
			     kMaxPendingCollectives, maxBufferedBytes_ >> 20);
			closeRank(rank);
			return;
		}
		flushOutboxes();
		return;
	}
	boot::AbortRequest abort;
	if (type == static_cast<uint32_t>(boot::MsgType::Abort) && boot::BodyReader(msg.body).read(abort)) {
		fail(abort.code, SIGTERM, "rank %d called abort(%d)", rank, abort.code);
		return;
	}
	fail(1, SIGTERM, "rank %d sent a bootstrap message of unknown type %u; stopping the job", rank, type);
	closeRank(rank);
}

void Job::flushOutbox(int rank)
{
	std::deque<boot::OutMessage> &box = server_.outbox(rank);
	while (!box.empty()) {
		int rc = boot::sendPacket(ranks_[rank].sock.get(), box.front(), MSG_DONTWAIT);
		if (rc == -EAGAIN)
			return;
		if (rc < 0) {
			/* EPIPE, ECONNRESET: the rank is gone. */
			closeRank(rank);
			return;
		}
		if (box.front().done())
			box.pop_front();
	}
}

void Job::flushOutboxes()
{
	for (int rank = 0; rank < opts_.nranks; ++rank) {
		if (ranks_[rank].sock.isValid() && !server_.outbox(rank).empty())
			flushOutbox(rank);
	}
}

void Job::closeRank(int rank)
{
	RankState &state = ranks_[rank];
	if (!state.sock.isValid())
		return;
	state.sock.reset();
	state.in = {};
	/* Error replies it queues for the peers go out when their sockets are writable. */
	server_.rankGone(rank);
}

void Job::reap(int rank)
{
	RankState &state = ranks_[rank];
	int status = 0;
	pid_t rc;
	while ((rc = waitpid(state.pid, &status, WNOHANG)) < 0 && errno == EINTR)
		;
	if (rc == 0)
		return;
	if (rc < 0) {
		/* ECHILD: someone else reaped it; its status is lost. */
		say("rank %d: cannot reap pid %d: %s", rank, state.pid, std::strerror(errno));
		status = W_EXITCODE(kCannotStartStatus, 0);
	}
	state.running = false;
	state.pidfd.reset();
	--running_;
	/* Before anything else: the survivors' operations to it fail from now on. */
	if (!WIFEXITED(status) || WEXITSTATUS(status) != 0)
		jobStatus_.markDead(rank);

	/*
	 * Serve what the rank sent before it exited (an abort, say) before
	 * acting on the exit; then it is gone, even if a child of it still
	 * holds the socket open.
	 */
	readSocket(rank);
	closeRank(rank);
	onExit(rank, status);
}

void Job::onExit(int rank, int status)
{
	if (WIFEXITED(status) && WEXITSTATUS(status) == 0) {
		if (opts_.verbose)
			say("rank %d exited with status 0", rank);
		return;
	}
	if (stopping_) {
		if (opts_.verbose)
			say("rank %d stopped (wait status %#x)", rank, status);
		return;
	}
	if (opts_.keepGoing) {
		int code = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
		if (!status_)
			status_ = code;
		say("rank %d failed (status %d); the others go on (keep-going)", rank, code);
		return;
	}
	if (WIFEXITED(status))
		fail(WEXITSTATUS(status), SIGTERM, "rank %d exited with status %d; stopping the job", rank,
		     WEXITSTATUS(status));
	else
		fail(128 + WTERMSIG(status), SIGTERM, "rank %d was killed by signal %d (%s); stopping the job", rank,
		     WTERMSIG(status), strsignal(WTERMSIG(status)));
}

/* The first failure fixes the job's status; every failure makes sure the job stops. */
void Job::fail(int status, int signo, const char *fmt, ...)
{
	if (!status_) {
		status_ = status;
		char reason[512];
		va_list ap;
		va_start(ap, fmt);
		std::vsnprintf(reason, sizeof(reason), fmt, ap);
		va_end(ap);
		say("%s", reason);
	}
	if (stopping_)
		return;
	stopping_ = true;
	signalRunning(signo);
	killAt_ = Clock::now() +
		  std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(opts_.killGraceSeconds));
}

/* Safe by pid: a rank not yet reaped keeps its pid. */
void Job::signalRunning(int signo)
{
	for (const RankState &state : ranks_) {
		if (state.running)
			kill(state.pid, signo);
	}
}

void Job::readOutput(int rank, int stream)
{
	RankState &state = ranks_[rank];
	char buf[16 * 1024];
	ssize_t n = read(state.output[stream].get(), buf, sizeof(buf));
	if (n < 0 && (errno == EINTR || errno == EAGAIN))
		return;
	if (n <= 0) {
		emitLines(rank, stream, true);
		state.output[stream].reset();
		return;
	}
	state.partial[stream].append(buf, n);
	emitLines(rank, stream, false);
}

/*
 * After the rank has exited: take what is in the pipe now, then close it.
 * A process the rank left behind may hold the pipe open and keep writing,
 * so neither EOF nor an empty pipe is waited for.
 */
void Job::finishOutput(int rank, int stream)
{
	RankState &state = ranks_[rank];
	int fd = state.output[stream].get();
	int pending = 0;
	if (ioctl(fd, FIONREAD, &pending) == 0 && pending > 0) {
		std::size_t old = state.partial[stream].size();
		state.partial[stream].resize(old + pending);
		ssize_t n = read(fd, state.partial[stream].data() + old, pending);
		state.partial[stream].resize(old + std::max<ssize_t>(n, 0));
	}
	emitLines(rank, stream, true);
	state.output[stream].reset();
}

/* Write out complete lines with their "[rank] " tag; with @final also the rest. */
void Job::emitLines(int rank, int stream, bool final)
{
	std::string &text = ranks_[rank].partial[stream];
	std::string tag(1, '[');
	tag += std::to_string(rank);
	tag += "] ";
	std::string out;
	std::size_t start = 0;
	for (;;) {
		std::size_t end = text.find('\n', start);
		if (end == std::string::npos) {
			/* A line too long to wait for, or the end of the stream: cut it here. */
			if (start < text.size() && (final || text.size() - start >= kMaxLine)) {
				out += tag;
				out.append(text, start);
				out += '\n';
				start = text.size();
			}
			break;
		}
		out += tag;
		out.append(text, start, end + 1 - start);
		start = end + 1;
	}
	text.erase(0, start);
	writeAll(stream == 0 ? STDOUT_FILENO : STDERR_FILENO, out);
}

} /* namespace */

int launch(const LaunchOptions &options)
{
	return Job(options).run();
}

} /* namespace librma */
