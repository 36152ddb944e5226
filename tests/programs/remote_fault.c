/* SPDX-License-Identifier: MIT */
/*
 * remote_fault: faults across hosts in the middle of an epoch (issue #14,
 * docs/design/inter-host.md §7).
 *
 *   remote_fault RESULT-DIR CUT-COMMAND [shared|lockall|exclusive|deadtarget|deadholder|deadunlock]
 *
 * Without a lock kind: a link cut mid-epoch. Two ranks, one on each of two
 * hosts. Rank 0 opens a lock_all epoch and puts + flushes to rank 1 in a
 * loop; after 200 rounds it runs CUT-COMMAND (the driver passes `ip link set
 * dev eth0 down`: rank 0's host loses its link) and goes on until an
 * operation fails. Rank 1 waits in a fence that rank 0 never joins. Each
 * rank must see RMA_ERR_PROC_FAILED (never hang), then free its window.
 *
 * With a lock kind: an origin that dies holding a lock on a target of
 * another host. Three ranks on three hosts. Rank 0 takes a shared lock on
 * rank 1 (or lock_all, or an exclusive lock), puts 1001 (1002, 1003) there and
 * flushes; once rank 2 asks for an exclusive lock on rank 1, it cuts its
 * host's link and never unlocks. Rank 1's host must release what the lost
 * origin held, so rank 2 gets the lock within the liveness bound, reads rank
 * 0's value, writes and reads back its own, and unlocks. Rank 1 serves
 * until rank 2 is done. The ranks signal each other with files in
 * RESULT-DIR ("held", "asking", "done").
 *
 * With "deadtarget": a dead rank on a host whose server lives. Three ranks,
 * placed by node on two hosts: ranks 0 and 2 on the first (rank 0 its
 * server), rank 1 on the second. Rank 2 is killed after the first fence;
 * rank 1 then puts + flushes to rank 2 in a lock_all epoch until an
 * operation fails (it must: RMA_ERR_PROC_FAILED, not a put into a dead
 * process's memory that succeeds for ever), then puts 55 to rank 0, which
 * must still be served, and rank 0 reads it.
 *
 * With "deadholder": a dead rank holding an exclusive lock on a rank of its
 * own host, and an origin on another host asking for that lock. The
 * layout of "deadtarget"; rank 2 locks rank 0 exclusively, puts, flushes and
 * is killed holding the lock; rank 1 then asks for an exclusive lock on rank
 * 0 and puts and flushes there; rank 0's host's server parks the request.
 * The server must refuse it and the put behind it (RMA_ERR_PROC_FAILED
 * naming rank 2, at the flush or the unlock), not park it for ever.
 *
 * With "deadunlock": an unlock_all that reports a dead rank must still give
 * back the other hosts' parts of the lock_all. The layout of "deadtarget";
 * rank 1 opens a lock_all epoch, puts 77 to rank 0 and flushes; rank 2 is
 * then killed; rank 1 puts + flushes to rank 2 until that fails (it now
 * knows rank 2 is dead), then calls unlock_all (which reports the death)
 * and stays alive (its lost connection would release its locks anyway).
 * Rank 0 must then get an exclusive lock on itself, which rank 1's lock_all
 * part on that host would block for ever had it been kept, and read 77.
 *
 * Each rank writes its lines to RESULT-DIR/rank<N> (the file system is
 * shared by the simulated hosts; stdout cannot cross the cut link):
 *   "class C after M ms: MESSAGE" for a failed operation,
 *   "exclusive after M ms: read V, then W" for rank 2's lock (lock kinds),
 *   and then "free class F".
 * A watchdog ends a rank that is still waiting after 30 s (exit 124), so a
 * hang fails the test instead of stalling it.
 */
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <rma/rma.h>

static FILE *g_out;

static double nowMs(void)
{
	struct timespec t;
	clock_gettime(CLOCK_MONOTONIC, &t);
	return t.tv_sec * 1e3 + t.tv_nsec / 1e6;
}

static void report(const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	vfprintf(g_out, fmt, ap);
	va_end(ap);
	fputc('\n', g_out);
	fflush(g_out);
}

static void describe(int rc, double since)
{
	char text[RMA_MAX_ERROR_STRING] = "";
	int len = 0, cls = -1;
	rma_error_string(rc, text, &len);
	rma_error_class(rc, &cls);
	report("class %d after %.0f ms: %s", cls, nowMs() - since, text);
}

static void onAlarm(int sig)
{
	(void)sig;
	static const char msg[] = "watchdog: still waiting after 30 s\n";
	if (g_out)
		fputs(msg, g_out), fflush(g_out);
	_exit(124);
}

/* The link-cut case (no lock kind): see the top of the file. */
static int cutMidEpoch(rma_win win, int me, const char *cutCommand)
{
	int rc = RMA_SUCCESS;
	if (me == 0) {
		long v = 42;
		double cut = 0;
		rma_win_lock_all(0, win);
		for (int i = 0; rc == RMA_SUCCESS; ++i) {
			if (i == 200) {
				cut = nowMs();
				if (system(cutCommand) != 0)
					report("cut command failed");
			}
			rc = rma_put(&v, 1, RMA_LONG, 1, 0, 1, RMA_LONG, win);
			if (rc == RMA_SUCCESS)
				rc = rma_win_flush(1, win);
		}
		describe(rc, cut);
		rma_win_unlock_all(win);
	} else {
		double start = nowMs();
		rc = rma_win_fence(0, win); /* rank 0 never comes */
		describe(rc, start);
	}
	return 0;
}

/* Make the empty file DIR/@name: a signal to the ranks of other hosts. */
static void signalFile(const char *dir, const char *name)
{
	char path[4096];
	snprintf(path, sizeof path, "%s/%s", dir, name);
	FILE *f = fopen(path, "w");
	if (f)
		fclose(f);
}

/* Wait for DIR/@name (the watchdog bounds the wait). */
static void waitFile(const char *dir, const char *name)
{
	char path[4096];
	snprintf(path, sizeof path, "%s/%s", dir, name);
	while (access(path, F_OK) != 0)
		usleep(5000);
}

/*
 * The lock cases: rank 0 dies (its host's link is cut) holding @kind on
 * rank 1; rank 2's exclusive lock on rank 1 must still come. The steps
 * meet through files, not a barrier: the launcher's own traffic could be
 * cut off mid-barrier.
 */
static int lostLockHolder(rma_win win, int me, const char *dir, const char *cutCommand, const char *kind)
{
	const long theirs = 1000 + (kind[0] == 's' ? 1 : kind[0] == 'l' ? 2 : 3);
	if (me == 0) {
		int rc;
		if (strcmp(kind, "lockall") == 0)
			rc = rma_win_lock_all(0, win);
		else
			rc = rma_win_lock(strcmp(kind, "shared") == 0 ? RMA_LOCK_SHARED : RMA_LOCK_EXCLUSIVE, 1, 0,
					  win);
		if (rc == RMA_SUCCESS)
			rc = rma_put(&theirs, 1, RMA_LONG, 1, 0, 1, RMA_LONG, win);
		if (rc == RMA_SUCCESS)
			rc = rma_win_flush(1, win);
		if (rc != RMA_SUCCESS) {
			describe(rc, nowMs());
			return 1;
		}
		report("holding %s", kind);
		signalFile(dir, "held");
		waitFile(dir, "asking");
		/* "Dies": its host drops off the network with the lock held, and never unlocks. */
		const double cut = nowMs();
		if (system(cutCommand) != 0)
			report("cut command failed");
		while (rc == RMA_SUCCESS) {
			rc = rma_put(&theirs, 1, RMA_LONG, 1, 0, 1, RMA_LONG, win);
			if (rc == RMA_SUCCESS)
				rc = rma_win_flush(1, win);
		}
		describe(rc, cut);
		fclose(g_out);
		_exit(0);
	}
	if (me == 1) {
		/* Serve (this process is its host's server) until rank 2 is through. */
		waitFile(dir, "done");
		report("served");
		return 0;
	}
	waitFile(dir, "held");
	report("asking for an exclusive lock on rank 1");
	signalFile(dir, "asking");
	const double start = nowMs();
	int rc = rma_win_lock(RMA_LOCK_EXCLUSIVE, 1, 0, win);
	if (rc != RMA_SUCCESS) {
		describe(rc, start);
	} else {
		const double granted = nowMs();
		long seen = -1, mine = 7, back = -1;
		rc = rma_get(&seen, 1, RMA_LONG, 1, 0, 1, RMA_LONG, win);
		if (rc == RMA_SUCCESS)
			rc = rma_win_flush(1, win);
		if (rc == RMA_SUCCESS)
			rc = rma_put(&mine, 1, RMA_LONG, 1, 0, 1, RMA_LONG, win);
		if (rc == RMA_SUCCESS)
			rc = rma_win_flush(1, win);
		if (rc == RMA_SUCCESS)
			rc = rma_get(&back, 1, RMA_LONG, 1, 0, 1, RMA_LONG, win);
		if (rc == RMA_SUCCESS)
			rc = rma_win_unlock(1, win);
		if (rc != RMA_SUCCESS)
			describe(rc, granted);
		else
			report("exclusive after %.0f ms: read %ld, then %ld (rank 0 wrote %ld)", granted - start, seen,
			       back, theirs);
	}
	signalFile(dir, "done");
	return 0;
}

/* The dead-target case ("deadtarget"): see the top of the file. */
static int deadTarget(rma_win win, long *base, int me, const char *dir)
{
	if (me == 2) {
		report("dying");
		fclose(g_out);
		g_out = NULL;
		signalFile(dir, "dying");
		kill(getpid(), SIGKILL);
	}
	if (me == 0) {
		/* Serve rank 1 until it is through, then look at what it wrote. */
		waitFile(dir, "done");
		report("value %ld", base[0]);
		return 0;
	}
	waitFile(dir, "dying");
	long v = 42;
	int rc = rma_win_lock_all(0, win);
	const double start = nowMs();
	while (rc == RMA_SUCCESS) {
		rc = rma_put(&v, 1, RMA_LONG, 2, 0, 1, RMA_LONG, win);
		if (rc == RMA_SUCCESS)
			rc = rma_win_flush(2, win);
	}
	describe(rc, start);
	/* The other rank of that host is still served. */
	v = 55;
	rc = rma_put(&v, 1, RMA_LONG, 0, 0, 1, RMA_LONG, win);
	if (rc == RMA_SUCCESS)
		rc = rma_win_flush(0, win);
	int cls = -1;
	rma_error_class(rc, &cls);
	report("live target class %d", cls);
	rma_win_unlock_all(win);
	signalFile(dir, "done");
	return 0;
}

/* The dead-holder case ("deadholder"): see the top of the file. */
static int deadHolder(rma_win win, long *base, int me, const char *dir)
{
	if (me == 2) {
		long v = 2002;
		int rc = rma_win_lock(RMA_LOCK_EXCLUSIVE, 0, 0, win);
		if (rc == RMA_SUCCESS)
			rc = rma_put(&v, 1, RMA_LONG, 0, 0, 1, RMA_LONG, win);
		if (rc == RMA_SUCCESS)
			rc = rma_win_flush(0, win);
		if (rc != RMA_SUCCESS)
			describe(rc, nowMs());
		else
			report("dying holding an exclusive lock on rank 0");
		fclose(g_out);
		g_out = NULL;
		signalFile(dir, "dying");
		kill(getpid(), SIGKILL);
	}
	if (me == 0) {
		/* Serve until rank 1 is through. */
		waitFile(dir, "done");
		/* Rank 2's put, not rank 1's: the refused lock's put was refused too. */
		report("served, holds %ld", base[0]);
		return 0;
	}
	waitFile(dir, "dying");
	const double start = nowMs();
	/* A lock on another host's rank is granted lazily: the refusal may come at the put's flush or the unlock. */
	long v = 1001;
	int rc = rma_win_lock(RMA_LOCK_EXCLUSIVE, 0, 0, win);
	if (rc == RMA_SUCCESS) {
		rc = rma_put(&v, 1, RMA_LONG, 0, 0, 1, RMA_LONG, win);
		if (rc == RMA_SUCCESS)
			rc = rma_win_flush(0, win);
		int unlocked = rma_win_unlock(0, win);
		if (rc == RMA_SUCCESS)
			rc = unlocked;
	}
	if (rc == RMA_SUCCESS)
		report("granted the lock that dead rank 2 holds");
	else
		describe(rc, start);
	signalFile(dir, "done");
	return 0;
}

/* The dead-rank unlock_all case ("deadunlock"): see the top of the file. */
static int deadUnlock(rma_win win, long *base, int me, const char *dir)
{
	if (me == 2) {
		waitFile(dir, "locked");
		report("dying");
		fclose(g_out);
		g_out = NULL;
		signalFile(dir, "dying");
		kill(getpid(), SIGKILL);
	}
	if (me == 0) {
		waitFile(dir, "unlocked");
		const double start = nowMs();
		int rc = rma_win_lock(RMA_LOCK_EXCLUSIVE, 0, 0, win);
		if (rc != RMA_SUCCESS) {
			describe(rc, start);
		} else {
			report("exclusive on rank 0 after %.0f ms: read %ld", nowMs() - start, base[0]);
			rma_win_unlock(0, win);
		}
		signalFile(dir, "done");
		return 0;
	}
	long v = 77;
	int rc = rma_win_lock_all(0, win);
	if (rc == RMA_SUCCESS)
		rc = rma_put(&v, 1, RMA_LONG, 0, 0, 1, RMA_LONG, win);
	if (rc == RMA_SUCCESS)
		rc = rma_win_flush(0, win);
	if (rc != RMA_SUCCESS) {
		describe(rc, nowMs());
		signalFile(dir, "unlocked");
		return 0;
	}
	signalFile(dir, "locked");
	waitFile(dir, "dying");
	const double start = nowMs();
	while (rc == RMA_SUCCESS) {
		rc = rma_put(&v, 1, RMA_LONG, 2, 0, 1, RMA_LONG, win);
		if (rc == RMA_SUCCESS)
			rc = rma_win_flush(2, win);
	}
	describe(rc, start);
	int cls = -1;
	rma_error_class(rma_win_unlock_all(win), &cls);
	report("unlock_all class %d", cls);
	signalFile(dir, "unlocked");
	/* Alive until rank 0 is through: a closed connection would release rank 1's locks by itself. */
	waitFile(dir, "done");
	return 0;
}

int main(int argc, char **argv)
{
	if (argc != 3 && argc != 4) {
		fprintf(stderr, "usage: remote_fault RESULT-DIR CUT-COMMAND "
				"[shared|lockall|exclusive|deadtarget|deadholder|deadunlock]\n");
		return 2;
	}
	const char *kind = argc == 4 ? argv[3] : NULL;
	if (kind && strcmp(kind, "shared") != 0 && strcmp(kind, "lockall") != 0 && strcmp(kind, "exclusive") != 0 &&
	    strcmp(kind, "deadtarget") != 0 && strcmp(kind, "deadholder") != 0 && strcmp(kind, "deadunlock") != 0) {
		fprintf(stderr, "remote_fault: unknown lock kind '%s'\n", kind);
		return 2;
	}
	int me = -1, n = 0;
	if (rma_init(&argc, &argv) != RMA_SUCCESS)
		return 1;
	rma_comm_rank(RMA_COMM_WORLD, &me);
	rma_comm_size(RMA_COMM_WORLD, &n);
	char path[4096];
	snprintf(path, sizeof path, "%s/rank%d", argv[1], me);
	g_out = fopen(path, "w");
	if (!g_out || n != (kind ? 3 : 2))
		return 1;
	signal(SIGALRM, onAlarm);
	alarm(30);

	long *base;
	rma_win win;
	if (rma_win_allocate(4096, 8, RMA_INFO_NULL, RMA_COMM_WORLD, &base, &win) != RMA_SUCCESS)
		return 1;
	rma_win_set_errhandler(win, RMA_ERRORS_RETURN);
	if (rma_win_fence(0, win) != RMA_SUCCESS)
		return 1;
	int rc = !kind				    ? cutMidEpoch(win, me, argv[2])
		 : strcmp(kind, "deadtarget") == 0 ? deadTarget(win, base, me, argv[1])
		 : strcmp(kind, "deadholder") == 0 ? deadHolder(win, base, me, argv[1])
		 : strcmp(kind, "deadunlock") == 0 ? deadUnlock(win, base, me, argv[1])
						    : lostLockHolder(win, me, argv[1], argv[2], kind);
	if (rc != 0)
		return 1;
	int cls = -1;
	rma_error_class(rma_win_free(&win), &cls);
	report("free class %d", cls);
	fclose(g_out);
	/* No rma_finalize: its barrier cannot meet a rank on the other side of the cut. */
	_exit(0);
}
