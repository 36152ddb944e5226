/* SPDX-License-Identifier: MIT */
/*
 * remote_fault: a link cut in the middle of an epoch across hosts (issue
 * #14, docs/design/inter-host.md §7). Two ranks, one on each of two hosts.
 *
 *   remote_fault RESULT-DIR CUT-COMMAND
 *
 * Rank 0 opens a lock_all epoch and puts + flushes to rank 1 in a loop;
 * after 200 rounds it runs CUT-COMMAND (the driver passes `ip link set dev
 * eth0 down`: rank 0's host loses its link) and goes on until an operation
 * fails. Rank 1 waits in a fence that rank 0 never joins. Each rank must see
 * RMA_ERR_PROC_FAILED (never hang), then free its window. Each writes one
 * line to RESULT-DIR/rank<N> (the file system is shared by the simulated
 * hosts; stdout of rank 1 cannot cross the cut link):
 *   "class C after M ms: MESSAGE" and then "free class F".
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

int main(int argc, char **argv)
{
	if (argc != 3) {
		fprintf(stderr, "usage: remote_fault RESULT-DIR CUT-COMMAND\n");
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
	if (!g_out || n != 2)
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
	int rc = RMA_SUCCESS;
	if (me == 0) {
		long v = 42;
		double cut = 0;
		rma_win_lock_all(0, win);
		for (int i = 0; rc == RMA_SUCCESS; ++i) {
			if (i == 200) {
				cut = nowMs();
				if (system(argv[2]) != 0)
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
	int cls = -1;
	rma_error_class(rma_win_free(&win), &cls);
	report("free class %d", cls);
	fclose(g_out);
	/* No rma_finalize: its barrier cannot meet a rank on the other side of the cut. */
	_exit(0);
}
