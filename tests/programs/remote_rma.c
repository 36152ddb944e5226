/* SPDX-License-Identifier: MIT */
/*
 * One-sided communication between every pair of ranks, through the public
 * API only, for any number of ranks (>= 2) under any bootstrap (rmarun,
 * mpirun through PMIx, on one host or across hosts). Written for the
 * inter-host transport (issue #14, docs/design/inter-host.md §3): run across
 * hosts, most targets are remote; run on one host, all are local and the
 * program checks the single-host engine with the same cases.
 *
 * Usage: remote_rma [--iters N] [--timeout SECONDS]
 *
 * It first prints where each rank runs:
 *
 *   remote_rma: rank R of N on host NAME: local ranks L; remote ranks M
 *
 * (NAME from gethostname, L and M from rma_comm_split_type: the ranks that
 * share this rank's host, itself included, and the others, or "none"), then
 * one line per case that passed at this rank:
 *
 *   remote_rma: rank R case NAME/FLAVOR ok
 *
 * for each case below and FLAVOR allocate (rma_win_allocate) and create
 * (rma_win_create over malloc'd memory), then "case win_free ok" and
 * "case finalize ok". Case "windows" is the creation of the flavor's nine
 * windows (one per case below but put/get, which share one); the others
 * follow in the order below. On the first wrong result or failed call it prints
 *
 *   remote_rma: rank R case NAME/FLAVOR FAILED: what, expected X, got Y
 *
 * on stderr and ends the job with rma_abort (exit status 1). A watchdog
 * (--timeout, default 60 s) names the case a hung rank was in and exits 124.
 *
 * Cases (every window is a window of RMA_COMM_WORLD; every rank is origin):
 *  put_8, put_1m      8 and 1 MiB + 3 bytes to each other rank under
 *                     lock_all + flush_all; each target checks its memory,
 *                     and that the guard bytes around each slot are intact.
 *  bulk_reconnect     allocate flavor: every rank shuts down its own bulk
 *                     connections to other hosts (the sockets that sent
 *                     the put_1m chunks), then put_1m again must pass:
 *                     a bulk connection that failed unnoticed is replaced
 *                     and the chunk sent again (nothing of it was applied).
 *                     create flavor: put_1m again over the new connections.
 *  bulk_reconnect_get the same, then get_1m (its chunk requests resent).
 *  get_8, get_1m      the same sizes read back from each other rank under
 *                     lock_all, checked at the origin after rma_win_flush.
 *  dtype_put          origin and target datatypes of the same signature but
 *                     different shapes, under lock exclusive/put/unlock to
 *                     each target in turn: 2 x vector(16,3,5,INT) into
 *                     contiguous(2, indexed(...,INT)), and vector(3000,40,64,
 *                     BYTE) into indexed_block(1500,80,...,BYTE) (120000 bytes,
 *                     more than 1024 blocks); window disp_unit 4. Targets
 *                     check the exact placement and that no byte outside the
 *                     footprint changed.
 *  dtype_get          the mirror image (target types vector, origin types
 *                     indexed) under lock_all + flush_all, checked at the
 *                     origin, whose gaps must stay untouched.
 *  dtype_struct_subarray  under a shared lock per target: a put of 50 x
 *                     struct{int; double; char[3]}, packed (resized to 16)
 *                     at the origin and in C layout (extent 24) at the
 *                     target, and a get of 24 shorts from a 3-d C-order
 *                     subarray into a 2-d Fortran-order one; disp_unit 8.
 *  lock_excl_counter  every rank, --iters times, for every target (itself
 *                     included): lock exclusive, get the target's counter,
 *                     flush, put counter + 1 and its own rank into the
 *                     target's log at index counter, unlock. Each target's
 *                     counter must end at ranks x iters with each rank in
 *                     its log exactly iters times: a lost update or a
 *                     torn read means two exclusive locks overlapped.
 *  lock_all_vs_exclusive  the last rank B locks itself exclusively, then,
 *                     300 ms later, rank 0 too; rank 0 calls lock_all in
 *                     between (at 100 ms). With B on another host, a
 *                     lock_all that kept rank 0's host while it waited for
 *                     B's host deadlocked (B waits for rank 0's host). Rank 0
 *                     must read 0 at both under lock_all (B writes 1 and puts
 *                     0 back inside its epochs).
 *  lock_shared_get    every rank holds a shared lock on every rank at once
 *                     (so shared locks must not exclude each other), gets,
 *                     unlocks one by one.
 *  fence_rounds       rounds of fence epochs with changing sizes (1 B to
 *                     70000 B) and data: put to the right neighbour and get
 *                     from the left one, fence, check.
 *  flush_local_reuse  one origin buffer, refilled right after
 *                     rma_win_flush_local (or flush_local_all) for each of
 *                     4 puts of 66003 bytes to each other rank.
 *  mixed_targets      one lock_all epoch with a put to and a get from every
 *                     rank, this one included, in one pass: on several hosts
 *                     local and remote targets share the epoch.
 *  rput_rget          rma_rput and rma_rget to and from every other rank,
 *                     one rma_waitall; rget data checked right after it,
 *                     rput data at the targets after flush_all.
 * Windows stay allocated until every case of both flavors has run; then
 * win_free (each handle must become RMA_WIN_NULL) and rma_finalize.
 */
#include <dirent.h>
#include <linux/tcp.h>
#include <netinet/in.h>
#include <sched.h>
#include <signal.h>
#include <sys/socket.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <rma/rma.h>

#define GUARD 64	       /* bytes of sentinel after every slot */
#define SENT 0xA5	       /* what no one writes: untouched window and buffer bytes */
#define POISON 0x5A	       /* origin bytes outside a datatype's footprint: must not travel */
#define BIG (1024 * 1024 + 3)  /* put_1m / get_1m */
#define FLUSH_LOCAL_SIZE 66003 /* above 64 KiB: the transport's bulk path */
#define FLUSH_LOCAL_PUTS 4
#define SHARED_SIZE 4101
#define MIXED_SIZE 5000
#define REQUEST_SIZE 3001
#define FENCE_ROUNDS 6
#define FENCE_MAX 70000

static const size_t fenceSizes[FENCE_ROUNDS] = { 1, 8, 3000, FENCE_MAX, 5, 4096 };

enum { FLAVOR_ALLOCATE, FLAVOR_CREATE, FLAVORS };
static const char *const flavorNames[FLAVORS] = { "allocate", "create" };

static int g_rank = -1, g_size = 0, g_iters = 10;
static int g_remoteRanks; /* ranks on other hosts than this one */
static unsigned char *g_isRemote; /* [rank]: on another host than this one */
static int g_flavor = FLAVOR_ALLOCATE;
static char g_case[96] = "init";
static char g_prefix[64] = "remote_rma: rank ?";

/* ---- Output ----------------------------------------------------------------- */

/* One line to stdout in one write(), so lines of different ranks do not mix. */
static void say(const char *fmt, ...)
{
	char line[1024];
	va_list ap;
	va_start(ap, fmt);
	int n = vsnprintf(line, sizeof line - 1, fmt, ap);
	va_end(ap);
	if (n < 0)
		return;
	if ((size_t)n > sizeof line - 2)
		n = (int)sizeof line - 2;
	line[n++] = '\n';
	ssize_t done = write(STDOUT_FILENO, line, (size_t)n);
	(void)done;
}

/* "remote_rma: rank R case NAME FAILED: ..." on stderr, then the job ends. */
static void fail(const char *fmt, ...)
{
	char what[768];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(what, sizeof what, fmt, ap);
	va_end(ap);
	fprintf(stderr, "%s case %s FAILED: %s\n", g_prefix, g_case, what);
	fflush(stderr);
	int initialized = 0, finalized = 0;
	rma_initialized(&initialized);
	rma_finalized(&finalized);
	if (initialized && !finalized)
		rma_abort(RMA_COMM_WORLD, 1);
	_exit(1);
}

static void callFailed(const char *call, int rc, int line)
{
	char text[RMA_MAX_ERROR_STRING] = "";
	int len = 0;
	if (rma_error_string(rc, text, &len) != RMA_SUCCESS)
		snprintf(text, sizeof text, "error %d", rc);
	fail("%s (line %d) returned %d, expected RMA_SUCCESS: %s", call, line, rc, text);
}

#define CALL(expr)                                                                                                     \
	do {                                                                                                           \
		int rc_ = (expr);                                                                                      \
		if (rc_ != RMA_SUCCESS)                                                                                \
			callFailed(#expr, rc_, __LINE__);                                                              \
	} while (0)

static void beginCase(const char *name)
{
	snprintf(g_case, sizeof g_case, "%s/%s", name, flavorNames[g_flavor]);
}

static void caseOk(void)
{
	say("%s case %s ok", g_prefix, g_case);
}

/* The watchdog: name the case this rank is stuck in (async-signal-safe calls only). */
static void onAlarm(int sig)
{
	(void)sig;
	const char *parts[] = { g_prefix, " case ", g_case,
				" FAILED: still running when the watchdog (--timeout) fired: a hang\n" };
	for (size_t i = 0; i < sizeof parts / sizeof parts[0]; ++i) {
		ssize_t done = write(STDERR_FILENO, parts[i], strlen(parts[i]));
		(void)done;
	}
	_exit(124);
}

/* ---- Data ------------------------------------------------------------------- */

/* The byte at @offset of what @origin sends to (or reads from) @target in @round. */
static inline uint8_t pat(int origin, int target, size_t offset, int round)
{
	uint64_t x = (uint64_t)offset * 0x9E3779B97F4A7C15ull + ((uint64_t)(origin + 1) << 40) +
		     ((uint64_t)(target + 1) << 20) + (uint64_t)(round + 1) * 0xD6E8FEB86659FD93ull;
	x ^= x >> 31;
	x *= 0xBF58476D1CE4E5B9ull;
	x ^= x >> 29;
	return (uint8_t)(x >> 8);
}

static void fillPattern(unsigned char *p, size_t n, int origin, int target, int round)
{
	for (size_t i = 0; i < n; ++i)
		p[i] = pat(origin, target, i, round);
}

/* @n bytes at @p must be pat(origin, target, 0.., round); @what names them. */
static void checkPattern(const char *what, const unsigned char *p, size_t n, int origin, int target, int round)
{
	size_t wrong = 0, first = 0;
	for (size_t i = 0; i < n; ++i) {
		if (p[i] != pat(origin, target, i, round) && wrong++ == 0)
			first = i;
	}
	if (wrong)
		fail("%s (%zu bytes, pattern of origin %d and target %d): byte %zu expected 0x%02x, got 0x%02x (%zu "
		     "of %zu bytes wrong)",
		     what, n, origin, target, first, pat(origin, target, first, round), p[first], wrong, n);
}

/* @n bytes at @p must all be @value. */
static void checkFill(const char *what, const unsigned char *p, size_t n, uint8_t value)
{
	size_t wrong = 0, first = 0;
	for (size_t i = 0; i < n; ++i) {
		if (p[i] != value && wrong++ == 0)
			first = i;
	}
	if (wrong)
		fail("%s: byte %zu of %zu expected 0x%02x (untouched), got 0x%02x (%zu bytes changed)", what, first, n,
		     value, p[first], wrong);
}

static size_t round64(size_t n)
{
	return (n + 63) & ~(size_t)63;
}

static void *xmalloc(size_t n)
{
	void *p = NULL;
	if (posix_memalign(&p, 64, n ? n : 1) != 0)
		fail("cannot allocate %zu bytes", n);
	return p;
}

/* ---- Windows ---------------------------------------------------------------- */

typedef struct {
	rma_win win;
	unsigned char *base;
	size_t bytes;
	void *own; /* the create flavor's memory */
} window;

#define MAX_WINDOWS 32
static window *g_windows[MAX_WINDOWS];
static int g_nwindows;

static window *makeWindow(size_t bytes, int dispUnit)
{
	window *w = calloc(1, sizeof *w);
	if (!w || g_nwindows == MAX_WINDOWS)
		fail("out of window slots");
	w->bytes = bytes;
	if (g_flavor == FLAVOR_ALLOCATE) {
		CALL(rma_win_allocate((rma_aint)bytes, dispUnit, RMA_INFO_NULL, RMA_COMM_WORLD, &w->base, &w->win));
	} else {
		w->own = xmalloc(bytes);
		w->base = w->own;
		CALL(rma_win_create(w->own, (rma_aint)bytes, dispUnit, RMA_INFO_NULL, RMA_COMM_WORLD, &w->win));
	}
	CALL(rma_win_set_errhandler(w->win, RMA_ERRORS_RETURN));
	int *flavor = NULL, flag = 0;
	CALL(rma_win_get_attr(w->win, RMA_WIN_CREATE_FLAVOR, &flavor, &flag));
	int expected = g_flavor == FLAVOR_ALLOCATE ? RMA_WIN_FLAVOR_ALLOCATE : RMA_WIN_FLAVOR_CREATE;
	if (!flag || !flavor || *flavor != expected)
		fail("RMA_WIN_CREATE_FLAVOR expected %d, got %d", expected, flag && flavor ? *flavor : -1);
	g_windows[g_nwindows++] = w;
	return w;
}

static void barrier(void)
{
	CALL(rma_barrier(RMA_COMM_WORLD));
}

/*
 * The barrier between a case's phases, as MPI's unified model asks for it:
 * window memory this rank stored to is synchronized before the others
 * access it, and what others wrote is synchronized before this rank loads it.
 */
static void barrierWith(window *w)
{
	CALL(rma_win_sync(w->win));
	barrier();
	CALL(rma_win_sync(w->win));
}

/* ---- put / get of plain bytes ------------------------------------------------ */

/* Each origin o owns slot o (stride bytes) of every window; slot o of rank o stays untouched. */
static void casePut(window *w, size_t size, const char *name, int round)
{
	beginCase(name);
	const int n = g_size, me = g_rank;
	const size_t stride = round64(size + GUARD);
	memset(w->base, SENT, (size_t)n * stride);
	unsigned char **src = calloc((size_t)n, sizeof *src);
	barrierWith(w);

	CALL(rma_win_lock_all(0, w->win));
	for (int j = 1; j < n; ++j) {
		int t = (me + j) % n;
		src[t] = xmalloc(size);
		fillPattern(src[t], size, me, t, round);
		CALL(rma_put(src[t], (int)size, RMA_BYTE, t, (rma_aint)((size_t)me * stride), (int)size, RMA_BYTE,
			     w->win));
	}
	CALL(rma_win_flush_all(w->win));
	CALL(rma_win_unlock_all(w->win));
	barrierWith(w);

	char what[128];
	for (int o = 0; o < n; ++o) {
		const unsigned char *slot = w->base + (size_t)o * stride;
		if (o == me) {
			snprintf(what, sizeof what, "own slot %d, which no one writes", o);
			checkFill(what, slot, stride, SENT);
			continue;
		}
		snprintf(what, sizeof what, "put data in slot %d", o);
		checkPattern(what, slot, size, o, me, round);
		snprintf(what, sizeof what, "guard bytes after slot %d", o);
		checkFill(what, slot + size, stride - size, SENT);
	}
	for (int t = 0; t < n; ++t)
		free(src[t]);
	free(src);
	caseOk();
	barrierWith(w);
}

/*
 * Shut down this process's bulk connections to other hosts' servers: its
 * connected TCP sockets to another address that have sent at least 256 KiB
 * (put_1m's chunks) and are not a server's (their local port is no
 * listening socket's).
 * Right after put_1m of the first flavor only: by then the ordered streams
 * have carried far less. Returns how many.
 */
/* tcp_info's states (the kernel's include/net/tcp_states.h; not in linux/tcp.h). */
enum { STATE_ESTABLISHED = 1, STATE_LISTEN = 10 };

static int shutBulkConnections(void)
{
	enum { MAX_FDS = 4096 };
	static int fds[MAX_FDS];
	int nfds = 0;
	DIR *d = opendir("/proc/self/fd");
	if (!d)
		fail("opendir /proc/self/fd failed");
	struct dirent *e;
	while ((e = readdir(d)) != NULL && nfds < MAX_FDS)
		if (e->d_name[0] != '.')
			fds[nfds++] = atoi(e->d_name);
	closedir(d);
	unsigned short listening[64];
	int nlisten = 0;
	for (int pass = 0; pass < 2; ++pass) {
		int shut = 0;
		for (int i = 0; i < nfds; ++i) {
			int type = 0;
			socklen_t len = sizeof type;
			if (getsockopt(fds[i], SOL_SOCKET, SO_TYPE, &type, &len) != 0 || type != SOCK_STREAM)
				continue;
			struct tcp_info ti;
			memset(&ti, 0, sizeof ti);
			len = sizeof ti;
			if (getsockopt(fds[i], IPPROTO_TCP, TCP_INFO, &ti, &len) != 0 ||
			    len < offsetof(struct tcp_info, tcpi_bytes_acked) + sizeof ti.tcpi_bytes_acked)
				continue;
			struct sockaddr_storage a;
			socklen_t alen = sizeof a;
			if (getsockname(fds[i], (struct sockaddr *)&a, &alen) != 0)
				continue;
			const unsigned short port = a.ss_family == AF_INET6 ? ((struct sockaddr_in6 *)&a)->sin6_port
									 : ((struct sockaddr_in *)&a)->sin_port;
			if (pass == 0) {
				if (ti.tcpi_state == STATE_LISTEN && nlisten < 64)
					listening[nlisten++] = port;
				continue;
			}
			int server = 0;
			for (int l = 0; l < nlisten; ++l)
				server |= listening[l] == port;
			if (server || ti.tcpi_state != STATE_ESTABLISHED || ti.tcpi_bytes_acked < 256 * 1024)
				continue;
			/* To another host only: not the launcher's local connections (PMIx to its daemon). */
			struct sockaddr_storage peer;
			socklen_t plen = sizeof peer;
			if (getpeername(fds[i], (struct sockaddr *)&peer, &plen) != 0 || peer.ss_family != a.ss_family)
				continue;
			const int sameHost =
				a.ss_family == AF_INET6
					? !memcmp(&((struct sockaddr_in6 *)&a)->sin6_addr,
						  &((struct sockaddr_in6 *)&peer)->sin6_addr, sizeof(struct in6_addr))
					: ((struct sockaddr_in *)&a)->sin_addr.s_addr ==
						  ((struct sockaddr_in *)&peer)->sin_addr.s_addr;
			if (sameHost)
				continue;
			if (shutdown(fds[i], SHUT_RDWR) != 0)
				fail("shutdown of a bulk connection (fd %d) failed", fds[i]);
			++shut;
		}
		if (pass == 1)
			return shut;
	}
	return 0;
}

static void caseGet(window *w, size_t size, const char *name, int round);

/*
 * Allocate flavor: shut this rank's bulk connections down under it (only
 * where they exist: without them put_1m went on the ordered streams, which
 * must live), then the transfer @get or not of BIG bytes must pass.
 */
static void shutThenTransfer(window *w, int get, const char *name, int round)
{
	if (g_flavor == FLAVOR_ALLOCATE) {
		snprintf(g_case, sizeof g_case, "%s/%s", name, flavorNames[g_flavor]);
		const char *k = getenv("RMA_NET_BULK"), *min = getenv("RMA_NET_BULK_MIN");
		const int bulk = g_remoteRanks > 0 && (!k || atoi(k) > 0) && (!min || atol(min) <= BIG);
		if (bulk && shutBulkConnections() == 0)
			fail("found no bulk connection to shut down, expected at least 1");
	}
	if (get)
		caseGet(w, BIG, name, round);
	else
		casePut(w, BIG, name, round);
}

/* Rank t fills its slot o with what o reads: pat(o, t, ...); o reads it into a guarded buffer. */
static void caseGet(window *w, size_t size, const char *name, int round)
{
	beginCase(name);
	const int n = g_size, me = g_rank;
	const size_t stride = round64(size + GUARD);
	memset(w->base, SENT, (size_t)n * stride);
	for (int o = 0; o < n; ++o) {
		if (o != me)
			fillPattern(w->base + (size_t)o * stride, size, o, me, round);
	}
	unsigned char **dst = calloc((size_t)n, sizeof *dst);
	barrierWith(w);

	CALL(rma_win_lock_all(0, w->win));
	for (int j = 1; j < n; ++j) {
		int t = (me + j) % n;
		dst[t] = xmalloc(size + 2 * GUARD);
		memset(dst[t], SENT, size + 2 * GUARD);
		CALL(rma_get(dst[t] + GUARD, (int)size, RMA_BYTE, t, (rma_aint)((size_t)me * stride), (int)size,
			     RMA_BYTE, w->win));
	}
	char what[128];
	for (int j = 1; j < n; ++j) {
		int t = (me + j) % n;
		CALL(rma_win_flush(t, w->win));
		snprintf(what, sizeof what, "data got from rank %d", t);
		checkPattern(what, dst[t] + GUARD, size, me, t, round);
		snprintf(what, sizeof what, "origin buffer before the data got from rank %d", t);
		checkFill(what, dst[t], GUARD, SENT);
		snprintf(what, sizeof what, "origin buffer after the data got from rank %d", t);
		checkFill(what, dst[t] + GUARD + size, GUARD, SENT);
	}
	CALL(rma_win_unlock_all(w->win));
	for (int t = 0; t < n; ++t)
		free(dst[t]);
	free(dst);
	caseOk();
	barrierWith(w);
}

/* ---- Derived datatypes ---------------------------------------------------------- */

/*
 * A datatype (count x type) with, worked out here by hand from the
 * constructor's arguments, where each byte of its type signature lives:
 * pos[k] is the offset of the k-th byte from the buffer's start, mask[i]
 * says whether byte i belongs to the footprint.
 */
typedef struct {
	const char *name;
	rma_datatype type;
	int count;
	size_t span;
	size_t nbytes;
	size_t *pos;
	unsigned char *mask;
} layout;

static void layoutInit(layout *l, const char *name, rma_datatype type, int count, size_t span, size_t nbytes)
{
	l->name = name;
	l->type = type;
	l->count = count;
	l->span = span;
	l->nbytes = 0;
	l->pos = xmalloc(nbytes * sizeof *l->pos);
	l->mask = xmalloc(span);
	memset(l->mask, 0, span);
}

static void layoutBlock(layout *l, size_t disp, size_t len)
{
	for (size_t j = 0; j < len; ++j) {
		if (l->mask[disp + j])
			fail("layout %s: byte %zu twice", l->name, disp + j);
		l->mask[disp + j] = 1;
		l->pos[l->nbytes++] = disp + j;
	}
}

/* The type's size, lower bound and extent must agree with the hand-made layout. */
static void layoutCheck(const layout *l, size_t expectBytes, size_t expectExtent)
{
	rma_count size = 0, lb = -1, extent = 0;
	CALL(rma_type_size_c(l->type, &size));
	CALL(rma_type_get_extent_c(l->type, &lb, &extent));
	if (l->nbytes != expectBytes || (size_t)size * (size_t)l->count != l->nbytes || lb != 0 ||
	    (size_t)extent != expectExtent)
		fail("layout %s: %zu bytes by hand, %lld x %d by rma_type_size; lb %lld, expected 0; extent %lld, "
		     "expected %zu",
		     l->name, l->nbytes, (long long)size, l->count, (long long)lb, (long long)extent, expectExtent);
}

static layout g_smallVec, g_smallIdx, g_bigVec, g_bigIdx, g_structPacked, g_structC, g_sub3d, g_sub2d;
static rma_datatype g_types[10];

#define SMALL_INTS 96

static void makeTypes(void)
{
	rma_datatype vec, idx, tgt, bigVec, bigIdx;
	/* 2 x vector(16, 3, 5, INT): extent 78 ints, 96 ints. */
	CALL(rma_type_vector(16, 3, 5, RMA_INT, &vec));
	CALL(rma_type_commit(&vec));
	layoutInit(&g_smallVec, "2 x vector(16,3,5,INT)", vec, 2, 156 * sizeof(int), SMALL_INTS * sizeof(int));
	for (int c = 0; c < 2; ++c)
		for (int b = 0; b < 16; ++b)
			layoutBlock(&g_smallVec, (size_t)(c * 78 + b * 5) * sizeof(int), 3 * sizeof(int));
	layoutCheck(&g_smallVec, SMALL_INTS * sizeof(int), 78 * sizeof(int));

	/* contiguous(2, indexed(lengths 1,2,4,8,16,17 at 0,3,7,13,25,45, INT)): extent 62 ints each. */
	static const int lens[6] = { 1, 2, 4, 8, 16, 17 };
	static const int disps[6] = { 0, 3, 7, 13, 25, 45 };
	CALL(rma_type_indexed(6, lens, disps, RMA_INT, &idx));
	CALL(rma_type_contiguous(2, idx, &tgt));
	CALL(rma_type_commit(&tgt));
	layoutInit(&g_smallIdx, "contiguous(2, indexed(6,...,INT))", tgt, 1, 124 * sizeof(int),
		   SMALL_INTS * sizeof(int));
	for (int c = 0; c < 2; ++c)
		for (int b = 0; b < 6; ++b)
			layoutBlock(&g_smallIdx, (size_t)(c * 62 + disps[b]) * sizeof(int),
				    (size_t)lens[b] * sizeof(int));
	layoutCheck(&g_smallIdx, SMALL_INTS * sizeof(int), 124 * sizeof(int));

	/* vector(3000, 40, 64, BYTE): 120000 bytes in 3000 blocks. */
	CALL(rma_type_vector(3000, 40, 64, RMA_BYTE, &bigVec));
	CALL(rma_type_commit(&bigVec));
	layoutInit(&g_bigVec, "vector(3000,40,64,BYTE)", bigVec, 1, 2999 * 64 + 40, 120000);
	for (int b = 0; b < 3000; ++b)
		layoutBlock(&g_bigVec, (size_t)b * 64, 40);
	layoutCheck(&g_bigVec, 120000, 2999 * 64 + 40);

	/* indexed_block(1500, 80, b*100 + (b%3)*5, BYTE): the same 120000 bytes in 1500 uneven gaps. */
	int *bd = xmalloc(1500 * sizeof *bd);
	for (int b = 0; b < 1500; ++b)
		bd[b] = b * 100 + (b % 3) * 5;
	CALL(rma_type_create_indexed_block(1500, 80, bd, RMA_BYTE, &bigIdx));
	CALL(rma_type_commit(&bigIdx));
	layoutInit(&g_bigIdx, "indexed_block(1500,80,...,BYTE)", bigIdx, 1, 1499 * 100 + 10 + 80, 120000);
	for (int b = 0; b < 1500; ++b)
		layoutBlock(&g_bigIdx, (size_t)bd[b], 80);
	layoutCheck(&g_bigIdx, 120000, 1499 * 100 + 10 + 80);
	free(bd);

	g_types[0] = vec;
	g_types[1] = idx;
	g_types[2] = tgt;
	g_types[3] = bigVec;
	g_types[4] = bigIdx;

	/*
	 * 50 x struct { int; double; char[3] }: packed at 0, 4, 12 and resized
	 * to 16 bytes (origin of dtype_struct_subarray's put), and at the C
	 * offsets 0, 8, 16 with the extent rounded up to 24 as C's sizeof
	 * (its target).
	 */
	static const int structLens[3] = { 1, 1, 3 };
	static const rma_datatype structTypes[3] = { RMA_INT, RMA_DOUBLE, RMA_CHAR };
	static const rma_aint packedDisps[3] = { 0, 4, 12 }, cDisps[3] = { 0, 8, 16 };
	rma_datatype packed0, packed, cStruct;
	CALL(rma_type_create_struct(3, structLens, packedDisps, structTypes, &packed0));
	CALL(rma_type_create_resized(packed0, 0, 16, &packed));
	CALL(rma_type_commit(&packed));
	layoutInit(&g_structPacked, "50 x resized(struct{INT@0,DOUBLE@4,CHARx3@12},16)", packed, 50, 49 * 16 + 15,
		   50 * 15);
	for (int c = 0; c < 50; ++c) {
		layoutBlock(&g_structPacked, (size_t)c * 16, 4);
		layoutBlock(&g_structPacked, (size_t)c * 16 + 4, 8);
		layoutBlock(&g_structPacked, (size_t)c * 16 + 12, 3);
	}
	layoutCheck(&g_structPacked, 50 * 15, 16);
	CALL(rma_type_create_struct(3, structLens, cDisps, structTypes, &cStruct));
	CALL(rma_type_commit(&cStruct));
	layoutInit(&g_structC, "50 x struct{INT@0,DOUBLE@8,CHARx3@16}", cStruct, 50, 49 * 24 + 19, 50 * 15);
	for (int c = 0; c < 50; ++c) {
		layoutBlock(&g_structC, (size_t)c * 24, 4);
		layoutBlock(&g_structC, (size_t)c * 24 + 8, 8);
		layoutBlock(&g_structC, (size_t)c * 24 + 16, 3);
	}
	layoutCheck(&g_structC, 50 * 15, 24);

	/*
	 * 24 SHORTs as a 2x3x4 block at (1,2,3) of a 6x7x8 C-order array (the
	 * get's target), and as a 4x6 block at (2,1) of an 8x10 Fortran-order
	 * array (its origin: first index fastest).
	 */
	static const int sizes3[3] = { 6, 7, 8 }, subs3[3] = { 2, 3, 4 }, starts3[3] = { 1, 2, 3 };
	static const int sizes2[2] = { 8, 10 }, subs2[2] = { 4, 6 }, starts2[2] = { 2, 1 };
	rma_datatype sub3d, sub2d;
	CALL(rma_type_create_subarray(3, sizes3, subs3, starts3, RMA_ORDER_C, RMA_SHORT, &sub3d));
	CALL(rma_type_commit(&sub3d));
	layoutInit(&g_sub3d, "subarray(6x7x8 at 1,2,3 size 2x3x4, C, SHORT)", sub3d, 1, 6 * 7 * 8 * 2, 48);
	for (int i = 1; i < 3; ++i)
		for (int j = 2; j < 5; ++j)
			for (int k = 3; k < 7; ++k)
				layoutBlock(&g_sub3d, (size_t)((i * 7 + j) * 8 + k) * 2, 2);
	layoutCheck(&g_sub3d, 48, 6 * 7 * 8 * 2);
	CALL(rma_type_create_subarray(2, sizes2, subs2, starts2, RMA_ORDER_FORTRAN, RMA_SHORT, &sub2d));
	CALL(rma_type_commit(&sub2d));
	layoutInit(&g_sub2d, "subarray(8x10 at 2,1 size 4x6, Fortran, SHORT)", sub2d, 1, 8 * 10 * 2, 48);
	for (int j = 1; j < 7; ++j)
		for (int i = 2; i < 6; ++i)
			layoutBlock(&g_sub2d, (size_t)(i + j * 8) * 2, 2);
	layoutCheck(&g_sub2d, 48, 8 * 10 * 2);

	g_types[5] = packed0;
	g_types[6] = packed;
	g_types[7] = cStruct;
	g_types[8] = sub3d;
	g_types[9] = sub2d;
}

/* Per origin, in every rank's dtype window: a small area, then a big one. disp_unit 4. */
static size_t dtypeSmallStride(void)
{
	size_t span = g_smallVec.span > g_smallIdx.span ? g_smallVec.span : g_smallIdx.span;
	return round64(span + GUARD);
}

static size_t dtypeBigStride(void)
{
	size_t span = g_bigVec.span > g_bigIdx.span ? g_bigVec.span : g_bigIdx.span;
	return round64(span + GUARD);
}

/* @buf (@span bytes) holds pat(origin, target, k, round) at @l's positions and @other elsewhere. */
static void checkPlaced(const char *what, const unsigned char *buf, size_t span, const layout *l, int origin,
			int target, int round, uint8_t other)
{
	for (size_t k = 0; k < l->nbytes; ++k) {
		uint8_t want = pat(origin, target, k, round);
		if (buf[l->pos[k]] != want)
			fail("%s, as %s: signature byte %zu at offset %zu expected 0x%02x, got 0x%02x", what, l->name,
			     k, l->pos[k], want, buf[l->pos[k]]);
	}
	for (size_t i = 0; i < span; ++i) {
		if ((i >= l->span || !l->mask[i]) && buf[i] != other)
			fail("%s, as %s: byte %zu outside the footprint expected 0x%02x (untouched), got 0x%02x", what,
			     l->name, i, other, buf[i]);
	}
}

/* @buf gets @other everywhere, then pat(origin, target, k, round) at @l's positions. */
static void place(unsigned char *buf, size_t span, const layout *l, int origin, int target, int round, uint8_t other)
{
	memset(buf, other, span);
	for (size_t k = 0; k < l->nbytes; ++k)
		buf[l->pos[k]] = pat(origin, target, k, round);
}

static void caseDtypePut(window *w, int round)
{
	beginCase("dtype_put");
	const int n = g_size, me = g_rank;
	const size_t ss = dtypeSmallStride(), bs = dtypeBigStride(), region = ss + bs;
	memset(w->base, SENT, (size_t)n * region);
	unsigned char *small = xmalloc(g_smallVec.span), *big = xmalloc(g_bigVec.span);
	barrierWith(w);

	/* Lock exclusive / put / unlock to each target in turn: one buffer pair, reused after each unlock. */
	for (int j = 1; j < n; ++j) {
		int t = (me + j) % n;
		place(small, g_smallVec.span, &g_smallVec, me, t, round, POISON);
		place(big, g_bigVec.span, &g_bigVec, me, t, round + 1, POISON);
		rma_aint disp = (rma_aint)((size_t)me * region / 4);
		CALL(rma_win_lock(RMA_LOCK_EXCLUSIVE, t, 0, w->win));
		CALL(rma_put(small, g_smallVec.count, g_smallVec.type, t, disp, g_smallIdx.count, g_smallIdx.type,
			     w->win));
		CALL(rma_put(big, g_bigVec.count, g_bigVec.type, t, disp + (rma_aint)(ss / 4), g_bigIdx.count,
			     g_bigIdx.type, w->win));
		CALL(rma_win_unlock(t, w->win));
	}
	barrierWith(w);

	char what[128];
	for (int o = 0; o < n; ++o) {
		const unsigned char *at = w->base + (size_t)o * region;
		if (o == me) {
			checkFill("own region, which no one writes", at, region, SENT);
			continue;
		}
		snprintf(what, sizeof what, "small put from rank %d", o);
		checkPlaced(what, at, ss, &g_smallIdx, o, me, round, SENT);
		snprintf(what, sizeof what, "big put from rank %d", o);
		checkPlaced(what, at + ss, bs, &g_bigIdx, o, me, round + 1, SENT);
	}
	free(small);
	free(big);
	caseOk();
	barrierWith(w);
}

static void caseDtypeGet(window *w, int round)
{
	beginCase("dtype_get");
	const int n = g_size, me = g_rank;
	const size_t ss = dtypeSmallStride(), bs = dtypeBigStride(), region = ss + bs;
	/* Region o holds what o reads, at the target types' positions, POISON in the gaps. */
	for (int o = 0; o < n; ++o) {
		unsigned char *at = w->base + (size_t)o * region;
		memset(at, SENT, region);
		if (o == me)
			continue;
		place(at, g_smallVec.span, &g_smallVec, o, me, round, POISON);
		place(at + ss, g_bigVec.span, &g_bigVec, o, me, round + 1, POISON);
	}
	unsigned char **small = calloc((size_t)n, sizeof *small), **big = calloc((size_t)n, sizeof *big);
	barrierWith(w);

	CALL(rma_win_lock_all(0, w->win));
	for (int j = 1; j < n; ++j) {
		int t = (me + j) % n;
		small[t] = xmalloc(g_smallIdx.span);
		big[t] = xmalloc(g_bigIdx.span);
		memset(small[t], SENT, g_smallIdx.span);
		memset(big[t], SENT, g_bigIdx.span);
		rma_aint disp = (rma_aint)((size_t)me * region / 4);
		CALL(rma_get(small[t], g_smallIdx.count, g_smallIdx.type, t, disp, g_smallVec.count, g_smallVec.type,
			     w->win));
		CALL(rma_get(big[t], g_bigIdx.count, g_bigIdx.type, t, disp + (rma_aint)(ss / 4), g_bigVec.count,
			     g_bigVec.type, w->win));
	}
	CALL(rma_win_flush_all(w->win));
	char what[128];
	for (int j = 1; j < n; ++j) {
		int t = (me + j) % n;
		snprintf(what, sizeof what, "small get from rank %d", t);
		checkPlaced(what, small[t], g_smallIdx.span, &g_smallIdx, me, t, round, SENT);
		snprintf(what, sizeof what, "big get from rank %d", t);
		checkPlaced(what, big[t], g_bigIdx.span, &g_bigIdx, me, t, round + 1, SENT);
	}
	CALL(rma_win_unlock_all(w->win));
	for (int t = 0; t < n; ++t) {
		free(small[t]);
		free(big[t]);
	}
	free(small);
	free(big);
	caseOk();
	barrierWith(w);
}

/*
 * Heterogeneous and multi-dimensional types. Per origin, in every rank's
 * window (disp_unit 8): an area the origin puts 50 structs into (packed at
 * the origin, C layout at the target), then one it gets a subarray from (a
 * 3-d block at the target, a Fortran-order 2-d block at the origin). Both
 * under a shared lock per target, in one epoch.
 */
static size_t structStride(void)
{
	return round64(g_structC.span + GUARD);
}

static size_t subStride(void)
{
	return round64(g_sub3d.span + GUARD);
}

static void caseDtypeStruct(window *w, int round)
{
	beginCase("dtype_struct_subarray");
	const int n = g_size, me = g_rank;
	const size_t ps = structStride(), gs = subStride(), region = ps + gs;
	for (int o = 0; o < n; ++o) {
		unsigned char *at = w->base + (size_t)o * region;
		memset(at, SENT, region);
		if (o != me)
			place(at + ps, g_sub3d.span, &g_sub3d, o, me, round + 1, POISON);
	}
	unsigned char **src = calloc((unsigned)n, sizeof *src), **dst = calloc((unsigned)n, sizeof *dst);
	barrierWith(w);

	for (int j = 1; j < n; ++j) {
		int t = (me + j) % n;
		src[t] = xmalloc(g_structPacked.span);
		dst[t] = xmalloc(g_sub2d.span);
		place(src[t], g_structPacked.span, &g_structPacked, me, t, round, POISON);
		memset(dst[t], SENT, g_sub2d.span);
		rma_aint disp = (rma_aint)((size_t)me * region / 8);
		CALL(rma_win_lock(RMA_LOCK_SHARED, t, 0, w->win));
		CALL(rma_put(src[t], g_structPacked.count, g_structPacked.type, t, disp, g_structC.count,
			     g_structC.type, w->win));
		CALL(rma_get(dst[t], g_sub2d.count, g_sub2d.type, t, disp + (rma_aint)(ps / 8), g_sub3d.count,
			     g_sub3d.type, w->win));
		CALL(rma_win_unlock(t, w->win));
	}
	char what[128];
	for (int j = 1; j < n; ++j) {
		int t = (me + j) % n;
		snprintf(what, sizeof what, "subarray got from rank %d", t);
		checkPlaced(what, dst[t], g_sub2d.span, &g_sub2d, me, t, round + 1, SENT);
	}
	barrierWith(w);

	for (int o = 0; o < n; ++o) {
		const unsigned char *at = w->base + (size_t)o * region;
		if (o == me) {
			checkFill("own region, which no one writes", at, region, SENT);
			continue;
		}
		snprintf(what, sizeof what, "structs put by rank %d", o);
		checkPlaced(what, at, ps, &g_structC, o, me, round, SENT);
	}
	for (int t = 0; t < n; ++t) {
		free(src[t]);
		free(dst[t]);
	}
	free(src);
	free(dst);
	caseOk();
	barrierWith(w);
}

/* ---- Locks ------------------------------------------------------------------ */

/* Window: int64 counter at byte 0, then an int32 log of size x iters entries. */
static void caseLockExclusive(window *w)
{
	beginCase("lock_excl_counter");
	const int n = g_size, me = g_rank, total = g_size * g_iters;
	int64_t zero = 0;
	memcpy(w->base, &zero, sizeof zero);
	memset(w->base + 8, 0xff, (size_t)total * 4); /* -1: no entry */
	barrierWith(w);

	for (int it = 0; it < g_iters; ++it) {
		for (int j = 1; j <= n; ++j) {
			int t = (me + j) % n; /* every target, this rank last */
			int64_t value = -1, next;
			CALL(rma_win_lock(RMA_LOCK_EXCLUSIVE, t, 0, w->win));
			CALL(rma_get(&value, 1, RMA_INT64_T, t, 0, 1, RMA_INT64_T, w->win));
			CALL(rma_win_flush(t, w->win));
			if (value < 0 || value >= total)
				fail("counter of rank %d read under an exclusive lock: expected 0..%d, got %lld", t,
				     total - 1, (long long)value);
			next = value + 1;
			/* Give a locker that wrongly got in at the same time every chance to show. */
			sched_yield();
			CALL(rma_put(&next, 1, RMA_INT64_T, t, 0, 1, RMA_INT64_T, w->win));
			CALL(rma_put(&g_rank, 1, RMA_INT, t, (rma_aint)(8 + 4 * value), 1, RMA_INT, w->win));
			CALL(rma_win_unlock(t, w->win));
		}
	}
	barrierWith(w);

	int64_t counter;
	memcpy(&counter, w->base, sizeof counter);
	if (counter != total)
		fail("own counter after %d ranks x %d exclusive increments: expected %d, got %lld (updates lost or "
		     "doubled: exclusive locks overlapped)",
		     n, g_iters, total, (long long)counter);
	int *seen = calloc((size_t)n, sizeof *seen);
	for (int i = 0; i < total; ++i) {
		int32_t who;
		memcpy(&who, w->base + 8 + 4 * (size_t)i, sizeof who);
		if (who < 0 || who >= n)
			fail("own log entry %d: expected a rank 0..%d, got %d (an increment's log write was lost)", i,
			     n - 1, who);
		++seen[who];
	}
	for (int r = 0; r < n; ++r) {
		if (seen[r] != g_iters)
			fail("own log: rank %d's entries expected %d, got %d (two lockers read the same counter)", r,
			     g_iters, seen[r]);
	}
	free(seen);
	caseOk();
	barrierWith(w);
}

static void caseLockAllVsExclusive(window *w)
{
	beginCase("lock_all_vs_exclusive");
	const int a = 0, b = g_size - 1;
	const int64_t zero = 0, one = 1;
	memcpy(w->base, &zero, sizeof zero);
	barrierWith(w);
	if (g_rank == b) {
		CALL(rma_win_lock(RMA_LOCK_EXCLUSIVE, b, 0, w->win));
		CALL(rma_put(&one, 1, RMA_INT64_T, b, 0, 1, RMA_INT64_T, w->win));
		CALL(rma_win_flush(b, w->win));
		usleep(300000);
		/* Holding b, ask for a: rank 0's lock_all must not hold a's host while it waits for b's. */
		CALL(rma_win_lock(RMA_LOCK_EXCLUSIVE, a, 0, w->win));
		CALL(rma_put(&one, 1, RMA_INT64_T, a, 0, 1, RMA_INT64_T, w->win));
		CALL(rma_win_flush(a, w->win));
		usleep(20000);
		CALL(rma_put(&zero, 1, RMA_INT64_T, a, 0, 1, RMA_INT64_T, w->win));
		CALL(rma_win_unlock(a, w->win));
		CALL(rma_put(&zero, 1, RMA_INT64_T, b, 0, 1, RMA_INT64_T, w->win));
		CALL(rma_win_unlock(b, w->win));
	} else if (g_rank == a) {
		int64_t va = -1, vb = -1;
		usleep(100000);
		CALL(rma_win_lock_all(0, w->win));
		CALL(rma_get(&va, 1, RMA_INT64_T, a, 0, 1, RMA_INT64_T, w->win));
		CALL(rma_get(&vb, 1, RMA_INT64_T, b, 0, 1, RMA_INT64_T, w->win));
		CALL(rma_win_flush_all(w->win));
		CALL(rma_win_unlock_all(w->win));
		if (va != 0 || vb != 0)
			fail("under lock_all, read %lld at rank %d and %lld at rank %d: expected 0 and 0 (rank %d's "
			     "exclusive epoch was open at the same time)",
			     (long long)va, a, (long long)vb, b, b);
	}
	barrierWith(w);
	caseOk();
	barrierWith(w);
}

/* Every rank holds a shared lock on every rank at once and reads its data. */
/*
 * A lock held for longer than the silence bound (RMA_NET_TIMEOUT_MS) while
 * others ask for it: the last rank takes an exclusive lock on itself,
 * writes a marker, holds it (allocate flavor: past the bound) and writes a
 * second marker before it unlocks. Every other rank locks it exclusively,
 * which for another host's origin returns before the grant, and sends
 * into its own slot either more than the transport keeps behind a LOCK not
 * granted (even ranks: PARKED_PIECES x PARKED_PIECE bytes) or one piece (odd
 * ranks: their unlock is the first wait), reads the marker and unlocks.
 * Nothing may time out, every put must land whole, and each origin must
 * read the second marker: nothing of its epoch ran before the grant. Odd
 * ranks also hold lock_all on another window and get from the holder's
 * rank there under this lock: on the connection that frame waits behind
 * the parked LOCK, past the silence bound, and its flush must not take
 * the host for dead (the other window's own waits know of no lock).
 */
#define PARKED_PIECE (64 * 1024)
#define PARKED_PIECES 24
static int parkedPieces(int origin)
{
	return origin % 2 == 0 ? PARKED_PIECES : 1;
}
static void caseLockParked(window *w, int round)
{
	beginCase("lock_parked");
	const int n = g_size, me = g_rank, t = g_size - 1;
	const int64_t first = 1000 + round, second = 2000 + round;
	memset(w->base, SENT, w->bytes);
	barrierWith(w);
	if (me == t) {
		CALL(rma_win_lock(RMA_LOCK_EXCLUSIVE, t, 0, w->win));
		CALL(rma_put(&first, 1, RMA_INT64_T, t, 0, 1, RMA_INT64_T, w->win));
		CALL(rma_win_flush(t, w->win));
		barrier(); /* held: the others ask now */
		const char *bound = getenv("RMA_NET_TIMEOUT_MS");
		long holdMs = g_flavor == FLAVOR_ALLOCATE && g_remoteRanks ? (bound ? atol(bound) : 3000) + 500 : 200;
		usleep((useconds_t)holdMs * 1000);
		CALL(rma_put(&second, 1, RMA_INT64_T, t, 0, 1, RMA_INT64_T, w->win));
		CALL(rma_win_unlock(t, w->win));
	} else {
		unsigned char *src = xmalloc((size_t)PARKED_PIECES * PARKED_PIECE);
		for (int k = 0; k < PARKED_PIECES; ++k)
			fillPattern(src + (size_t)k * PARKED_PIECE, PARKED_PIECE, me, t, round + k);
		window *other = NULL;
		for (int i = 0; i < g_nwindows && me % 2 == 1; ++i)
			if (g_windows[i] != w && g_windows[i]->bytes >= 8)
				other = g_windows[i];
		if (other)
			CALL(rma_win_lock_all(0, other->win));
		barrier();
		int64_t seen = -1;
		CALL(rma_win_lock(RMA_LOCK_EXCLUSIVE, t, 0, w->win));
		for (int k = 0; k < parkedPieces(me); ++k)
			CALL(rma_put(src + (size_t)k * PARKED_PIECE, PARKED_PIECE, RMA_BYTE, t,
				     (rma_aint)(64 + (size_t)me * PARKED_PIECE), PARKED_PIECE, RMA_BYTE, w->win));
		if (other) {
			int64_t peek = 0;
			CALL(rma_get(&peek, 1, RMA_INT64_T, t, 0, 1, RMA_INT64_T, other->win));
			CALL(rma_win_flush(t, other->win));
			CALL(rma_win_unlock_all(other->win));
		}
		CALL(rma_get(&seen, 1, RMA_INT64_T, t, 0, 1, RMA_INT64_T, w->win));
		CALL(rma_win_unlock(t, w->win));
		if (seen != second)
			fail("read %lld at rank %d under an exclusive lock: expected %lld, the holder's last write (%s)",
			     (long long)seen, t, (long long)second,
			     seen == first ? "this epoch ran while the holder still held the lock" : "lost");
		free(src);
	}
	barrierWith(w);
	if (me == t) {
		/*
		 * On the ordered stream the last piece wins. Pieces that go over
		 * the bulk connections (RMA_NET_BULK_MIN at most a piece) are not
		 * ordered among themselves, nor does MPI order puts to one
		 * location: then any one piece, whole.
		 */
		const char *min = getenv("RMA_NET_BULK_MIN"), *k = getenv("RMA_NET_BULK");
		const int bulkPieces = min && atol(min) <= PARKED_PIECE && (!k || atoi(k) > 0);
		char what[128];
		for (int o = 0; o < n - 1; ++o) {
			const int unordered = bulkPieces && g_isRemote[o];
			const unsigned char *slot = w->base + 64 + (size_t)o * PARKED_PIECE;
			int last = round + parkedPieces(o) - 1;
			for (int piece = round; unordered && piece < last; ++piece) {
				size_t i = 0;
				while (i < PARKED_PIECE && slot[i] == pat(o, t, i, piece))
					++i;
				if (i == PARKED_PIECE)
					last = piece; /* this piece, whole */
			}
			snprintf(what, sizeof what, "%s piece put by rank %d behind its lock", unordered ? "a" : "last", o);
			checkPattern(what, slot, PARKED_PIECE, o, t, last);
		}
	}
	caseOk();
	barrierWith(w);
}

static void caseLockShared(window *w, int round)
{
	beginCase("lock_shared_get");
	const int n = g_size, me = g_rank;
	memset(w->base, SENT, round64(SHARED_SIZE + GUARD));
	fillPattern(w->base, SHARED_SIZE, n, me, round); /* origin n: the same for every reader */
	unsigned char *dst = xmalloc((size_t)n * (SHARED_SIZE + GUARD));
	memset(dst, SENT, (size_t)n * (SHARED_SIZE + GUARD));
	barrierWith(w);

	for (int j = 0; j < n; ++j)
		CALL(rma_win_lock(RMA_LOCK_SHARED, (me + j) % n, 0, w->win));
	for (int j = 0; j < n; ++j) {
		int t = (me + j) % n;
		CALL(rma_get(dst + (size_t)t * (SHARED_SIZE + GUARD), SHARED_SIZE, RMA_BYTE, t, 0, SHARED_SIZE,
			     RMA_BYTE, w->win));
	}
	for (int j = 0; j < n; ++j)
		CALL(rma_win_unlock((me + j) % n, w->win));
	char what[128];
	for (int t = 0; t < n; ++t) {
		snprintf(what, sizeof what, "data got from rank %d under a shared lock", t);
		checkPattern(what, dst + (size_t)t * (SHARED_SIZE + GUARD), SHARED_SIZE, n, t, round);
		snprintf(what, sizeof what, "origin buffer after the data got from rank %d", t);
		checkFill(what, dst + (size_t)t * (SHARED_SIZE + GUARD) + SHARED_SIZE, GUARD, SENT);
	}
	free(dst);
	caseOk();
	barrierWith(w);
}

/* ---- Fence ------------------------------------------------------------------ */

/* Window: an inbox (the left neighbour puts into it), then an export area (the right one reads it). */
static void caseFence(window *w, int round0)
{
	beginCase("fence_rounds");
	const int n = g_size, me = g_rank, right = (me + 1) % n, left = (me + n - 1) % n;
	const size_t inbox = round64(FENCE_MAX + GUARD);
	unsigned char *src = xmalloc(FENCE_MAX), *dst = xmalloc(FENCE_MAX + GUARD);
	char what[160];
	for (int r = 0; r < FENCE_ROUNDS; ++r) {
		const int round = round0 + r;
		const size_t size = fenceSizes[r];
		/* Local stores, then a fence with no operations before it: no one reads or writes them before. */
		memset(w->base, SENT, inbox);
		fillPattern(w->base + inbox, FENCE_MAX, me, -1, round);
		fillPattern(src, size, me, right, round);
		memset(dst, SENT, FENCE_MAX + GUARD);
		CALL(rma_win_fence(r % 2 ? 0 : RMA_MODE_NOPRECEDE, w->win));
		CALL(rma_put(src, (int)size, RMA_BYTE, right, 0, (int)size, RMA_BYTE, w->win));
		CALL(rma_get(dst, (int)size, RMA_BYTE, left, (rma_aint)inbox, (int)size, RMA_BYTE, w->win));
		CALL(rma_win_fence(r == FENCE_ROUNDS - 1 ? RMA_MODE_NOSUCCEED : 0, w->win));
		snprintf(what, sizeof what, "round %d: inbox after the left neighbour's put of %zu bytes", r, size);
		checkPattern(what, w->base, size, left, me, round);
		snprintf(what, sizeof what, "round %d: inbox beyond the %zu bytes put", r, size);
		checkFill(what, w->base + size, inbox - size, SENT);
		snprintf(what, sizeof what, "round %d: %zu bytes got from the left neighbour's export area", r, size);
		checkPattern(what, dst, size, left, -1, round);
		snprintf(what, sizeof what, "round %d: origin buffer beyond the %zu bytes got", r, size);
		checkFill(what, dst + size, FENCE_MAX + GUARD - size, SENT);
		/* The next round's local stores must wait until every rank has checked this one. */
		barrierWith(w);
	}
	free(src);
	free(dst);
	caseOk();
}

/* ---- flush_local ------------------------------------------------------------ */

static void caseFlushLocal(window *w, int round0)
{
	beginCase("flush_local_reuse");
	const int n = g_size, me = g_rank;
	const size_t stride = round64(FLUSH_LOCAL_SIZE + GUARD);
	memset(w->base, SENT, (size_t)n * FLUSH_LOCAL_PUTS * stride);
	unsigned char *buf = xmalloc(FLUSH_LOCAL_SIZE);
	barrierWith(w);

	CALL(rma_win_lock_all(0, w->win));
	for (int k = 0; k < FLUSH_LOCAL_PUTS; ++k) {
		for (int j = 1; j < n; ++j) {
			int t = (me + j) % n;
			fillPattern(buf, FLUSH_LOCAL_SIZE, me, t, round0 + k);
			CALL(rma_put(buf, FLUSH_LOCAL_SIZE, RMA_BYTE, t,
				     (rma_aint)(((size_t)me * FLUSH_LOCAL_PUTS + (size_t)k) * stride), FLUSH_LOCAL_SIZE,
				     RMA_BYTE, w->win));
			if (k % 2)
				CALL(rma_win_flush_local_all(w->win));
			else
				CALL(rma_win_flush_local(t, w->win));
			/* The buffer is ours again: scribble over it before the next fill. */
			memset(buf, POISON, FLUSH_LOCAL_SIZE);
		}
	}
	CALL(rma_win_flush_all(w->win));
	CALL(rma_win_unlock_all(w->win));
	barrierWith(w);

	char what[128];
	for (int o = 0; o < n; ++o) {
		for (int k = 0; k < FLUSH_LOCAL_PUTS; ++k) {
			const unsigned char *slot = w->base + ((size_t)o * FLUSH_LOCAL_PUTS + (size_t)k) * stride;
			if (o == me) {
				checkFill("own slots, which no one writes", slot, stride, SENT);
				continue;
			}
			snprintf(what, sizeof what, "put %d from rank %d (origin buffer reused after flush_local)", k,
				 o);
			checkPattern(what, slot, FLUSH_LOCAL_SIZE, o, me, round0 + k);
			snprintf(what, sizeof what, "guard bytes after put %d from rank %d", k, o);
			checkFill(what, slot + FLUSH_LOCAL_SIZE, stride - FLUSH_LOCAL_SIZE, SENT);
		}
	}
	free(buf);
	caseOk();
	barrierWith(w);
}

/* ---- Local and remote targets in one epoch ------------------------------------ */

/* Window: area A (slot o: o's put), then area B (slot o: what o gets). */
static void caseMixed(window *w, int round)
{
	beginCase("mixed_targets");
	const int n = g_size, me = g_rank;
	const size_t stride = round64(MIXED_SIZE + GUARD), area = (size_t)n * stride;
	memset(w->base, SENT, 2 * area);
	for (int o = 0; o < n; ++o)
		fillPattern(w->base + area + (size_t)o * stride, MIXED_SIZE, o, me, round + 1);
	unsigned char *src = xmalloc((size_t)n * MIXED_SIZE), *dst = xmalloc((size_t)n * stride);
	memset(dst, SENT, (size_t)n * stride);
	for (int t = 0; t < n; ++t)
		fillPattern(src + (size_t)t * MIXED_SIZE, MIXED_SIZE, me, t, round);
	barrierWith(w);

	CALL(rma_win_lock_all(0, w->win));
	for (int j = 0; j < n; ++j) {
		int t = (me + j) % n;
		CALL(rma_put(src + (size_t)t * MIXED_SIZE, MIXED_SIZE, RMA_BYTE, t, (rma_aint)((size_t)me * stride),
			     MIXED_SIZE, RMA_BYTE, w->win));
		CALL(rma_get(dst + (size_t)t * stride, MIXED_SIZE, RMA_BYTE, t, (rma_aint)(area + (size_t)me * stride),
			     MIXED_SIZE, RMA_BYTE, w->win));
	}
	CALL(rma_win_flush_all(w->win));
	char what[128];
	for (int t = 0; t < n; ++t) {
		snprintf(what, sizeof what, "data got from rank %d", t);
		checkPattern(what, dst + (size_t)t * stride, MIXED_SIZE, me, t, round + 1);
		snprintf(what, sizeof what, "origin buffer after the data got from rank %d", t);
		checkFill(what, dst + (size_t)t * stride + MIXED_SIZE, stride - MIXED_SIZE, SENT);
	}
	CALL(rma_win_unlock_all(w->win));
	barrierWith(w);

	for (int o = 0; o < n; ++o) {
		snprintf(what, sizeof what, "put data in slot %d", o);
		checkPattern(what, w->base + (size_t)o * stride, MIXED_SIZE, o, me, round);
		snprintf(what, sizeof what, "guard bytes after slot %d", o);
		checkFill(what, w->base + (size_t)o * stride + MIXED_SIZE, stride - MIXED_SIZE, SENT);
	}
	free(src);
	free(dst);
	caseOk();
	barrierWith(w);
}

/* ---- Request-based operations -------------------------------------------------- */

/*
 * rma_rput and rma_rget to and from every other rank under lock_all, all
 * waited for at once: a completed rget's data is in the buffer without a
 * flush; the rputs are complete at their targets after flush_all.
 */
static void caseRequests(window *w, int round)
{
	beginCase("rput_rget");
	const int n = g_size, me = g_rank;
	const size_t stride = round64(REQUEST_SIZE + GUARD), area = (size_t)n * stride;
	memset(w->base, SENT, 2 * area);
	for (int o = 0; o < n; ++o) {
		if (o != me)
			fillPattern(w->base + area + (size_t)o * stride, REQUEST_SIZE, o, me, round + 1);
	}
	unsigned char *src = xmalloc((size_t)n * REQUEST_SIZE), *dst = xmalloc((size_t)n * stride);
	memset(dst, SENT, (size_t)n * stride);
	for (int t = 0; t < n; ++t)
		fillPattern(src + (size_t)t * REQUEST_SIZE, REQUEST_SIZE, me, t, round);
	rma_request *requests = calloc(2 * (size_t)n, sizeof *requests);
	int count = 0;
	barrierWith(w);

	CALL(rma_win_lock_all(0, w->win));
	for (int j = 1; j < n; ++j) {
		int t = (me + j) % n;
		CALL(rma_rput(src + (size_t)t * REQUEST_SIZE, REQUEST_SIZE, RMA_BYTE, t,
			      (rma_aint)((size_t)me * stride), REQUEST_SIZE, RMA_BYTE, w->win, &requests[count++]));
		CALL(rma_rget(dst + (size_t)t * stride, REQUEST_SIZE, RMA_BYTE, t,
			      (rma_aint)(area + (size_t)me * stride), REQUEST_SIZE, RMA_BYTE, w->win,
			      &requests[count++]));
	}
	CALL(rma_waitall(count, requests, RMA_STATUSES_IGNORE));
	for (int i = 0; i < count; ++i) {
		if (requests[i] != RMA_REQUEST_NULL)
			fail("request %d after rma_waitall: expected RMA_REQUEST_NULL, got a live handle", i);
	}
	char what[128];
	for (int j = 1; j < n; ++j) {
		int t = (me + j) % n;
		snprintf(what, sizeof what, "data of the rget from rank %d, after rma_waitall", t);
		checkPattern(what, dst + (size_t)t * stride, REQUEST_SIZE, me, t, round + 1);
		snprintf(what, sizeof what, "origin buffer after the rget from rank %d", t);
		checkFill(what, dst + (size_t)t * stride + REQUEST_SIZE, stride - REQUEST_SIZE, SENT);
	}
	CALL(rma_win_flush_all(w->win));
	CALL(rma_win_unlock_all(w->win));
	barrierWith(w);

	for (int o = 0; o < n; ++o) {
		const unsigned char *slot = w->base + (size_t)o * stride;
		if (o == me) {
			checkFill("own slot, which no one writes", slot, stride, SENT);
			continue;
		}
		snprintf(what, sizeof what, "data of the rput from rank %d", o);
		checkPattern(what, slot, REQUEST_SIZE, o, me, round);
		snprintf(what, sizeof what, "guard bytes after the rput from rank %d", o);
		checkFill(what, slot + REQUEST_SIZE, stride - REQUEST_SIZE, SENT);
	}
	free(src);
	free(dst);
	free(requests);
	caseOk();
	barrierWith(w);
}

/* ---- Set-up and the run ------------------------------------------------------ */

/* "0,2,5" or "none" */
/* ---- the accumulate family: atomic across local and remote origins ---------- */

#define ACC_INTS 5000

/*
 * Every rank, local and remote alike, hits one counter per target with
 * fetch_and_op SUM (each fetched value must be unique: the counts before
 * each increment), a CAS-loop increment of a second counter, and
 * accumulate SUM of an int array (5000 ints: the ring or in-place path for
 * local origins), then get_accumulate NO_OP reads the array back. Lost or
 * torn updates show in the totals; non-atomic fetches in duplicate values.
 */
static void caseAccumulate(window *w)
{
	beginCase("acc_atomic");
	const int n = g_size, me = g_rank, per = g_iters * 10;
	/* Layout: [0] fop counter, [8] cas counter, [16..] ints, then n x per fetched values at the origin side. */
	memset(w->base, 0, 16 + ACC_INTS * 4);
	barrierWith(w);
	int64_t *fetched = xmalloc((size_t)n * per * sizeof *fetched);
	int *ones = xmalloc(ACC_INTS * sizeof *ones);
	for (int i = 0; i < ACC_INTS; ++i)
		ones[i] = i + 1 + me; /* rank-dependent values */
	CALL(rma_win_lock_all(0, w->win));
	for (int it = 0; it < per; ++it) {
		for (int j = 0; j < n; ++j) {
			int t = (me + j) % n;
			int64_t one = 1;
			CALL(rma_fetch_and_op(&one, &fetched[(size_t)t * per + it], RMA_INT64_T, t, 0, RMA_SUM, w->win));
		}
	}
	CALL(rma_win_flush_all(w->win));
	for (int t = 0; t < n; ++t) {
		for (int it = 0; it < per; ++it) {
			int64_t v = fetched[(size_t)t * per + it];
			if (v < 0 || v >= (int64_t)n * per)
				fail("fetch_and_op on rank %d returned %lld, expected 0..%d", t, (long long)v, n * per - 1);
			for (int k = 0; k < it; ++k)
				if (fetched[(size_t)t * per + k] == v)
					fail("fetch_and_op on rank %d returned %lld twice (not atomic)", t, (long long)v);
		}
	}
	for (int it = 0; it < g_iters; ++it) {
		for (int j = 0; j < n; ++j) {
			int t = (me + j) % n;
			int64_t seen = 0, want, got;
			/* Read, then CAS until our increment lands. */
			CALL(rma_fetch_and_op(NULL, &seen, RMA_INT64_T, t, 8, RMA_NO_OP, w->win));
			CALL(rma_win_flush(t, w->win));
			for (int tries = 0;; ++tries) {
				want = seen + 1;
				CALL(rma_compare_and_swap(&want, &seen, &got, RMA_INT64_T, t, 8, w->win));
				CALL(rma_win_flush(t, w->win));
				if (got == seen)
					break;
				seen = got;
				if (tries > 100000)
					fail("compare_and_swap on rank %d never succeeded", t);
			}
			CALL(rma_accumulate(ones, ACC_INTS, RMA_INT, t, 16, ACC_INTS, RMA_INT, RMA_SUM, w->win));
		}
	}
	CALL(rma_win_unlock_all(w->win));
	barrierWith(w);
	int64_t fop, cas;
	memcpy(&fop, w->base, 8);
	memcpy(&cas, w->base + 8, 8);
	if (fop != (int64_t)n * per)
		fail("fetch_and_op counter: expected %d, got %lld", n * per, (long long)fop);
	if (cas != (int64_t)n * g_iters)
		fail("compare_and_swap counter: expected %d, got %lld", n * g_iters, (long long)cas);
	for (int i = 0; i < ACC_INTS; ++i) {
		int32_t v;
		memcpy(&v, w->base + 16 + 4 * (size_t)i, 4);
		/* sum over ranks r of iters * (i + 1 + r) */
		int64_t want = (int64_t)g_iters * ((int64_t)n * (i + 1) + (int64_t)n * (n - 1) / 2);
		if (v != (int32_t)want)
			fail("accumulate SUM element %d: expected %lld, got %d", i, (long long)want, v);
	}
	/* get_accumulate NO_OP reads the array of every rank; a strided result type on the way. */
	rma_datatype every2;
	CALL(rma_type_vector(ACC_INTS, 1, 2, RMA_INT, &every2));
	CALL(rma_type_commit(&every2));
	int *back = xmalloc(2 * ACC_INTS * sizeof *back);
	CALL(rma_win_lock_all(0, w->win));
	for (int t = 0; t < n; ++t) {
		memset(back, 0xee, 2 * ACC_INTS * sizeof *back);
		if (t % 2 == 0) {
			CALL(rma_get_accumulate(NULL, 0, RMA_INT, back, 1, every2, t, 16, ACC_INTS, RMA_INT, RMA_NO_OP,
						w->win));
			CALL(rma_win_flush(t, w->win));
		} else {
			/* The request form: its result must be there once the request completes. */
			rma_request req;
			CALL(rma_rget_accumulate(NULL, 0, RMA_INT, back, 1, every2, t, 16, ACC_INTS, RMA_INT, RMA_NO_OP,
						 w->win, &req));
			CALL(rma_wait(&req, RMA_STATUS_IGNORE));
		}
		for (int i = 0; i < ACC_INTS; ++i) {
			int64_t want = (int64_t)g_iters * ((int64_t)n * (i + 1) + (int64_t)n * (n - 1) / 2);
			if (back[2 * i] != (int32_t)want)
				fail("get_accumulate from rank %d element %d: expected %lld, got %d", t, i, (long long)want,
				     back[2 * i]);
			if (back[2 * i + 1] != (int)0xeeeeeeee)
				fail("get_accumulate from rank %d wrote the gap after element %d", t, i);
		}
	}
	CALL(rma_win_unlock_all(w->win));
	CALL(rma_type_free(&every2));
	free(back);
	free(fetched);
	free(ones);
	caseOk();
	barrierWith(w);
}

/* ---- generalized active target (PSCW) across hosts -------------------------- */

#define PSCW_ROUNDS 4
#define PSCW_SIZE 1000

/*
 * Round k: every rank exposes its window to all ranks (post), opens an
 * access epoch to all (start), puts PSCW_SIZE bytes into its slot at every
 * rank and gets the slot of the rank after it, completes and waits; then it
 * checks every slot of its own window. The pattern changes each round, so
 * data that arrived before the matching post, or after wait, is caught.
 */
static void casePscw(window *w, int round0)
{
	beginCase("pscw");
	const int n = g_size, me = g_rank;
	const size_t slot = round64(PSCW_SIZE);
	rma_group world, all;
	CALL(rma_win_get_group(w->win, &world));
	int *ranks = xmalloc((size_t)n * sizeof *ranks);
	for (int r = 0; r < n; ++r)
		ranks[r] = r;
	CALL(rma_group_incl(world, n, ranks, &all));
	unsigned char *src = xmalloc(PSCW_SIZE), *got = xmalloc(PSCW_SIZE);
	for (int k = 0; k < PSCW_ROUNDS; ++k) {
		const int round = round0 + k;
		CALL(rma_win_post(all, 0, w->win));
		CALL(rma_win_start(all, 0, w->win));
		for (int t = 0; t < n; ++t) {
			fillPattern(src, PSCW_SIZE, me, t, round);
			CALL(rma_put(src, PSCW_SIZE, RMA_BYTE, t, (rma_aint)(me * slot), PSCW_SIZE, RMA_BYTE, w->win));
		}
		const int next = (me + 1) % n;
		/* The slot of rank `next` in rank next's own window was last written in the previous round (or never). */
		CALL(rma_win_complete(w->win));
		CALL(rma_win_wait(w->win));
		for (int o = 0; o < n; ++o)
			checkPattern("pscw slot", w->base + (size_t)o * slot, PSCW_SIZE, o, me, round);
		/* A second epoch in the same round: read back what this rank put at `next`. */
		CALL(rma_win_post(all, RMA_MODE_NOPUT, w->win));
		CALL(rma_win_start(all, 0, w->win));
		CALL(rma_get(got, PSCW_SIZE, RMA_BYTE, next, (rma_aint)(me * slot), PSCW_SIZE, RMA_BYTE, w->win));
		CALL(rma_win_complete(w->win));
		checkPattern("pscw get", got, PSCW_SIZE, me, next, round);
		CALL(rma_win_wait(w->win));
	}
	CALL(rma_group_free(&all));
	CALL(rma_group_free(&world));
	free(ranks);
	free(src);
	free(got);
	caseOk();
	barrierWith(w);
}

/* ---- dynamic windows across hosts ------------------------------------------ */

#define DYN_SLOT 64

/*
 * Every rank attaches a malloc'd region to a dynamic window and publishes
 * its address (through @addrs, an allocate window). Each rank puts a slot
 * into every rank's region, gets its slot back from the next rank, and
 * adds 1 with fetch_and_op to a counter at the end of every region. An
 * address outside the attached region must fail (at the call, or for a
 * target on another host at the next flush) with RMA_ERR_RMA_RANGE.
 */
/*
 * A put past rank @next's attached region returned @put, and the unlock
 * (@release names it) that ended its epoch @released: one of them must
 * report RMA_ERR_RMA_RANGE (the put at once on this host, the release for
 * another host), and a put refused at once leaves nothing for the release.
 */
static void expectRefusedAtRelease(const char *release, int put, int released, int next)
{
	if (put != RMA_SUCCESS && released != RMA_SUCCESS)
		fail("%s after a put refused at once returned %d, expected RMA_SUCCESS", release, released);
	int cls = -1;
	rma_error_class(put != RMA_SUCCESS ? put : released, &cls);
	if (cls != RMA_ERR_RMA_RANGE)
		fail("a put past rank %d's attached region, then %s: expected RMA_ERR_RMA_RANGE (%d), got class %d",
		     next, release, RMA_ERR_RMA_RANGE, cls);
}

/* @rc must be an error of class RMA_ERR_RMA_RANGE: @what names the call. */
static void expectRange(const char *what, int rc, int next)
{
	int cls = -1;
	if (rc != RMA_SUCCESS)
		rma_error_class(rc, &cls);
	if (cls != RMA_ERR_RMA_RANGE)
		fail("%s (an rget past rank %d's attached region): expected RMA_ERR_RMA_RANGE (%d), got %s class %d",
		     what, next, RMA_ERR_RMA_RANGE, rc == RMA_SUCCESS ? "success," : "", cls);
}

/*
 * A request another host refuses (rma_rget past rank @next's region of
 * @bytes at @addr) reports it in its own wait or test, and no other call
 * does: not the flush that completes it (read before the wait), not the
 * flush after. A good rget issued behind a refused one completes with its
 * data and no error. On this host the rget itself is refused.
 */
static void checkRefusedRequests(rma_win dw, int next, rma_aint addr, size_t bytes, int round)
{
	unsigned char got[DYN_SLOT];
	const rma_aint past = addr + (rma_aint)bytes;
	rma_request bad, good;
	CALL(rma_win_lock(RMA_LOCK_SHARED, next, 0, dw));
	int rc = rma_rget(got, 16, RMA_BYTE, next, past, 16, RMA_BYTE, dw, &bad);
	if (!g_isRemote[next]) {
		expectRange("rma_rget on this host", rc, next);
		CALL(rma_win_unlock(next, dw));
		return;
	}
	CALL(rc);
	/* The flush reads the refusal first and leaves it to the request, whose wait reports it. */
	CALL(rma_win_flush(next, dw));
	expectRange("rma_wait on a refused rget, after a flush", rma_wait(&bad, RMA_STATUS_IGNORE), next);
	if (bad != RMA_REQUEST_NULL)
		fail("a refused rget's request is still live after rma_wait reported its error");
	CALL(rma_win_flush(next, dw));
	/* Tested, not waited for: rma_test reports it; the flush after has nothing left to report. */
	CALL(rma_rget(got, 16, RMA_BYTE, next, past, 16, RMA_BYTE, dw, &bad));
	int flag = 0;
	for (rc = RMA_SUCCESS; rc == RMA_SUCCESS && !flag;)
		rc = rma_test(&bad, &flag, RMA_STATUS_IGNORE);
	expectRange("rma_test on a refused rget", rc, next);
	CALL(rma_win_flush(next, dw));
	/* A good rget behind a refused one: its wait succeeds with its data; the refused one's reports it. */
	CALL(rma_rget(got, 16, RMA_BYTE, next, past, 16, RMA_BYTE, dw, &bad));
	memset(got + 16, 0, DYN_SLOT - 16);
	CALL(rma_rget(got + 16, DYN_SLOT - 16, RMA_BYTE, next, addr + g_rank * DYN_SLOT + 16, DYN_SLOT - 16, RMA_BYTE,
		      dw, &good));
	CALL(rma_wait(&good, RMA_STATUS_IGNORE));
	unsigned char want[DYN_SLOT];
	fillPattern(want, DYN_SLOT, g_rank, next, round);
	if (memcmp(got + 16, want + 16, DYN_SLOT - 16) != 0)
		fail("a good rget behind a refused one did not bring rank %d's slot", next);
	expectRange("rma_wait on a refused rget, after a good one's wait", rma_wait(&bad, RMA_STATUS_IGNORE), next);
	CALL(rma_win_flush(next, dw));
	/* rma_waitall over a refused rget_accumulate and a good rget: both complete and are freed; it reports the refusal. */
	const int64_t one = 1;
	int64_t old = -1;
	rma_request both[2];
	CALL(rma_rget_accumulate(&one, 1, RMA_INT64_T, &old, 1, RMA_INT64_T, next, past, 1, RMA_INT64_T, RMA_SUM, dw,
				 &both[0]));
	memset(got, 0, DYN_SLOT);
	CALL(rma_rget(got, DYN_SLOT, RMA_BYTE, next, addr + g_rank * DYN_SLOT, DYN_SLOT, RMA_BYTE, dw, &both[1]));
	expectRange("rma_waitall on a refused rget_accumulate and a good rget", rma_waitall(2, both, RMA_STATUSES_IGNORE),
		    next);
	if (both[0] != RMA_REQUEST_NULL || both[1] != RMA_REQUEST_NULL)
		fail("rma_waitall that reported a refusal left a request live");
	checkPattern("a good rget waited with a refused rget_accumulate", got, DYN_SLOT, g_rank, next, round);
	if (old != -1)
		fail("a refused rget_accumulate wrote its result buffer (%lld)", (long long)old);
	CALL(rma_win_flush(next, dw));
	/* Freed unwaited: nobody else can report its refusal, so the next flush does (once). */
	CALL(rma_rget(got, 16, RMA_BYTE, next, past, 16, RMA_BYTE, dw, &bad));
	CALL(rma_request_free(&bad));
	expectRange("rma_win_flush after a refused rget was freed unwaited", rma_win_flush(next, dw), next);
	CALL(rma_win_flush(next, dw));
	CALL(rma_win_unlock(next, dw));
}

static void caseDynamic(window *addrs, int round)
{
	beginCase("dynamic");
	const int n = g_size, me = g_rank;
	const size_t bytes = (size_t)n * DYN_SLOT + 8;
	unsigned char *region = xmalloc(bytes);
	memset(region, 0, bytes);
	rma_win dw;
	CALL(rma_win_create_dynamic(RMA_INFO_NULL, RMA_COMM_WORLD, &dw));
	CALL(rma_win_set_errhandler(dw, RMA_ERRORS_RETURN));
	CALL(rma_win_attach(dw, region, (rma_aint)bytes));
	rma_aint mine;
	CALL(rma_get_address(region, &mine));
	/* Publish: every rank's address at slot r of every rank's addrs window. */
	CALL(rma_win_fence(0, addrs->win));
	for (int t = 0; t < n; ++t)
		CALL(rma_put(&mine, 1, RMA_AINT, t, (rma_aint)(me * 8), 1, RMA_AINT, addrs->win));
	CALL(rma_win_fence(0, addrs->win));
	rma_aint *at = xmalloc((size_t)n * sizeof *at);
	memcpy(at, addrs->base, (size_t)n * sizeof *at);
	barrier();

	unsigned char src[DYN_SLOT], got[DYN_SLOT];
	/* Results stay valid until the flush completes them (MPI's rule for every result buffer). */
	int64_t *old = xmalloc((size_t)(unsigned)n * sizeof *old);
	const int64_t one = 1;
	CALL(rma_win_lock_all(0, dw));
	for (int t = 0; t < n; ++t) {
		fillPattern(src, DYN_SLOT, me, t, round);
		CALL(rma_put(src, DYN_SLOT, RMA_BYTE, t, at[t] + me * DYN_SLOT, DYN_SLOT, RMA_BYTE, dw));
		CALL(rma_fetch_and_op(&one, &old[t], RMA_INT64_T, t, at[t] + (rma_aint)n * DYN_SLOT, RMA_SUM, dw));
	}
	CALL(rma_win_flush_all(dw));
	for (int t = 0; t < n; ++t)
		if (old[t] < 0 || old[t] >= n)
			fail("fetch_and_op on rank %d's dynamic counter returned %lld, expected 0..%d", t, (long long)old[t],
			     n - 1);
	free(old);
	CALL(rma_win_unlock_all(dw));
	barrier();
	CALL(rma_win_sync(dw));
	for (int o = 0; o < n; ++o)
		checkPattern("dynamic region slot", region + (size_t)o * DYN_SLOT, DYN_SLOT, o, me, round);
	int64_t counter;
	memcpy(&counter, region + (size_t)n * DYN_SLOT, 8);
	if (counter != n)
		fail("dynamic region counter: expected %d, got %lld", n, (long long)counter);
	barrier();

	const int next = (me + 1) % n;
	CALL(rma_win_lock(RMA_LOCK_SHARED, next, 0, dw));
	CALL(rma_get(got, DYN_SLOT, RMA_BYTE, next, at[next] + me * DYN_SLOT, DYN_SLOT, RMA_BYTE, dw));
	CALL(rma_win_flush(next, dw));
	checkPattern("dynamic get", got, DYN_SLOT, me, next, round);
	/* Past the end of next's region. */
	int rc = rma_put(src, 16, RMA_BYTE, next, at[next] + (rma_aint)bytes, 16, RMA_BYTE, dw);
	if (rc == RMA_SUCCESS)
		rc = rma_win_flush(next, dw);
	int cls = -1;
	rma_error_class(rc, &cls);
	if (cls != RMA_ERR_RMA_RANGE)
		fail("a put past rank %d's attached region: expected RMA_ERR_RMA_RANGE (%d), got class %d", next,
		     RMA_ERR_RMA_RANGE, cls);
	CALL(rma_win_unlock(next, dw));
	/*
	 * The same put with no flush: another host refuses it at the unlock,
	 * which must report it and still end the epoch (its server released
	 * the lock); the rank can be locked again.
	 */
	CALL(rma_win_lock(RMA_LOCK_SHARED, next, 0, dw));
	rc = rma_put(src, 16, RMA_BYTE, next, at[next] + (rma_aint)bytes, 16, RMA_BYTE, dw);
	expectRefusedAtRelease("unlock", rc, rma_win_unlock(next, dw), next);
	CALL(rma_win_lock(RMA_LOCK_EXCLUSIVE, next, 0, dw));
	CALL(rma_win_unlock(next, dw));
	checkRefusedRequests(dw, next, at[next], bytes, round);
	/* Under lock_all: unlock_all reports it, ends the epoch and gives back every host's part. */
	barrier();
	CALL(rma_win_lock_all(0, dw));
	rc = rma_put(src, 16, RMA_BYTE, next, at[next] + (rma_aint)bytes, 16, RMA_BYTE, dw);
	expectRefusedAtRelease("unlock_all", rc, rma_win_unlock_all(dw), next);
	barrier();
	/* Every part was given back: each rank can be locked exclusively (a kept part would hang here). */
	for (int j = 0; j < n; ++j) {
		CALL(rma_win_lock(RMA_LOCK_EXCLUSIVE, (me + j) % n, 0, dw));
		CALL(rma_win_unlock((me + j) % n, dw));
	}
	barrier();
	/*
	 * A refusal that arrives after its epoch's fence (a stream put's NACK
	 * is not waited for there) and is read by the next lock_all, while
	 * another host grants its part: lock_all reports it and gives that
	 * part back (a kept one hangs the exclusive locks below). A refusal
	 * already read (by a liveness check) fails lock_all before it asks.
	 * Either way it is reported once, and lock_all then succeeds.
	 */
	{
		int reported = 0;
		CALL(rma_win_fence(0, dw));
		int calls[2];
		calls[0] = rma_put(src, 16, RMA_BYTE, next, at[next] + (rma_aint)bytes, 16, RMA_BYTE, dw);
		calls[1] = rma_win_fence(RMA_MODE_NOSUCCEED, dw);
		for (int i = 0; i < 2; ++i) {
			if (calls[i] == RMA_SUCCESS)
				continue;
			rma_error_class(calls[i], &cls);
			if (cls != RMA_ERR_RMA_RANGE)
				fail("a refused put, then fence: call %d returned class %d, expected RMA_ERR_RMA_RANGE", i,
				     cls);
			++reported;
		}
		for (int tries = 0;; ++tries) {
			rc = rma_win_lock_all(0, dw);
			if (rc == RMA_SUCCESS)
				break;
			rma_error_class(rc, &cls);
			if (cls != RMA_ERR_RMA_RANGE || tries == 1)
				fail("lock_all after a refused put: class %d (try %d), expected RMA_ERR_RMA_RANGE, then success",
				     cls, tries);
			++reported;
		}
		rc = rma_win_unlock_all(dw);
		if (rc != RMA_SUCCESS) {
			rma_error_class(rc, &cls);
			if (cls != RMA_ERR_RMA_RANGE)
				fail("unlock_all after a refused put returned class %d, expected RMA_ERR_RMA_RANGE", cls);
			++reported;
		}
		if (reported != 1)
			fail("a put past rank %d's region, then fence, lock_all, unlock_all: the refusal was reported %d "
			     "times, expected once",
			     next, reported);
		barrier();
		for (int j = 0; j < n; ++j) {
			CALL(rma_win_lock(RMA_LOCK_EXCLUSIVE, (me + j) % n, 0, dw));
			CALL(rma_win_unlock((me + j) % n, dw));
		}
	}
	barrier();
	/*
	 * In a fence epoch, where every put takes the bulk connections
	 * (RMA_NET_BULK_MIN=1: the fence waits for them): the fence reports
	 * the refusal, and every member's fence still ends (one that stopped
	 * at the refusal left the others waiting for its word). A stream put's
	 * NACK comes behind its FENCE, which is not waited for: some later
	 * call reports it, so that case is not checked here.
	 */
	const char *bulkMin = getenv("RMA_NET_BULK_MIN");
	if (bulkMin && atol(bulkMin) <= 16) {
		CALL(rma_win_fence(0, dw));
		rc = rma_put(src, 16, RMA_BYTE, next, at[next] + (rma_aint)bytes, 16, RMA_BYTE, dw);
		expectRefusedAtRelease("fence", rc, rma_win_fence(RMA_MODE_NOSUCCEED, dw), next);
	}
	barrier();
	/*
	 * Rank T detaches its region while every rank on another host streams
	 * puts and fetch_and_ops at it (erroneous in MPI, but a frame from
	 * another host must never write the memory once rma_win_detach
	 * returned): after the detach T fills the region with its own bytes,
	 * and finds them intact once every streamer has stopped. T is the
	 * highest rank on rank 0's host, so that its host's server (the
	 * lowest rank there) is another process where the host has two. A
	 * streamer's first put lands (before the barrier); it then streams
	 * until an operation is refused with RMA_ERR_RMA_RANGE (nothing else
	 * is allowed) and stops.
	 */
	CALL(rma_win_fence(0, addrs->win));
	if (me == 0) {
		rma_aint highest = 0;
		for (int r = 0; r < n; ++r)
			if (!g_isRemote[r])
				highest = r;
		for (int t = 0; t < n; ++t)
			CALL(rma_put(&highest, 1, RMA_AINT, t, 0, 1, RMA_AINT, addrs->win));
	}
	CALL(rma_win_fence(0, addrs->win));
	const int owner = (int)((rma_aint *)addrs->base)[0];
	CALL(rma_win_lock_all(0, dw));
	const int streams = me != owner && g_isRemote[owner];
	if (streams) {
		fillPattern(src, DYN_SLOT, me, owner, round);
		CALL(rma_put(src, DYN_SLOT, RMA_BYTE, owner, at[owner] + me * DYN_SLOT, DYN_SLOT, RMA_BYTE, dw));
		CALL(rma_win_flush(owner, dw));
	}
	barrier();
	if (me == owner) {
		CALL(rma_win_detach(dw, region));
		memset(region, 0xEE, bytes);
	} else if (streams) {
		struct timespec t0, t1;
		int64_t fetched = 0;
		clock_gettime(CLOCK_MONOTONIC, &t0);
		for (int landed = 0;; ++landed) {
			if (landed & 1)
				rc = rma_fetch_and_op(&one, &fetched, RMA_INT64_T, owner, at[owner] + (rma_aint)n * DYN_SLOT,
						      RMA_SUM, dw);
			else
				rc = rma_put(src, DYN_SLOT, RMA_BYTE, owner, at[owner] + me * DYN_SLOT, DYN_SLOT, RMA_BYTE,
					     dw);
			if (rc == RMA_SUCCESS)
				rc = rma_win_flush(owner, dw);
			if (rc != RMA_SUCCESS) {
				rma_error_class(rc, &cls);
				if (cls != RMA_ERR_RMA_RANGE)
					fail("an operation racing rank %d's detach: expected success or RMA_ERR_RMA_RANGE, "
					     "got class %d",
					     owner, cls);
				break;
			}
			clock_gettime(CLOCK_MONOTONIC, &t1);
			if (t1.tv_sec - t0.tv_sec > 10)
				fail("operations on rank %d's region still land 10 s after its detach (%d of them)", owner,
				     landed);
		}
	}
	barrier();
	if (me == owner)
		checkFill("the region after its owner's detach", region, bytes, 0xEE);
	CALL(rma_win_unlock_all(dw));
	if (me != owner)
		CALL(rma_win_detach(dw, region));
	CALL(rma_win_free(&dw));
	free(region);
	free(at);
	caseOk();
}

static void rankList(const int *ranks, int count, char *out, size_t len)
{
	size_t used = 0;
	out[0] = '\0';
	for (int i = 0; i < count && used < len; ++i)
		used += (size_t)snprintf(out + used, len - used, i ? ",%d" : "%d", ranks[i]);
	if (count == 0)
		snprintf(out, len, "none");
}

static void sayWhere(void)
{
	char host[256] = "?";
	if (gethostname(host, sizeof host - 1) != 0)
		snprintf(host, sizeof host, "? (gethostname failed)");
	host[sizeof host - 1] = '\0';

	rma_comm node;
	rma_group world, nodeGroup;
	CALL(rma_comm_split_type(RMA_COMM_WORLD, RMA_COMM_TYPE_SHARED, 0, RMA_INFO_NULL, &node));
	CALL(rma_comm_group(RMA_COMM_WORLD, &world));
	CALL(rma_comm_group(node, &nodeGroup));
	int *all = malloc((size_t)g_size * sizeof *all), *inNode = malloc((size_t)g_size * sizeof *inNode);
	int *local = malloc((size_t)g_size * sizeof *local), *remote = malloc((size_t)g_size * sizeof *remote);
	for (int r = 0; r < g_size; ++r)
		all[r] = r;
	CALL(rma_group_translate_ranks(world, g_size, all, nodeGroup, inNode));
	int nl = 0, nr = 0;
	g_isRemote = xmalloc((size_t)g_size);
	for (int r = 0; r < g_size; ++r) {
		g_isRemote[r] = inNode[r] == RMA_UNDEFINED;
		if (inNode[r] == RMA_UNDEFINED)
			remote[nr++] = r;
		else
			local[nl++] = r;
	}
	char localText[512], remoteText[512];
	rankList(local, nl, localText, sizeof localText);
	rankList(remote, nr, remoteText, sizeof remoteText);
	say("%s of %d on host %s: local ranks %s; remote ranks %s", g_prefix, g_size, host, localText, remoteText);
	g_remoteRanks = nr;
	free(all);
	free(inNode);
	free(local);
	free(remote);
	CALL(rma_group_free(&nodeGroup));
	CALL(rma_group_free(&world));
	CALL(rma_comm_free(&node));
}

static void usage(void)
{
	fprintf(stderr, "usage: remote_rma [--iters N] [--timeout SECONDS]\n");
	exit(2);
}

int main(int argc, char **argv)
{
	unsigned timeout = 60;
	for (int i = 1; i < argc; ++i) {
		if (!strcmp(argv[i], "--iters") && i + 1 < argc)
			g_iters = atoi(argv[++i]);
		else if (!strcmp(argv[i], "--timeout") && i + 1 < argc)
			timeout = (unsigned)atoi(argv[++i]);
		else
			usage();
	}
	if (g_iters < 1 || timeout < 1)
		usage();
	signal(SIGALRM, onAlarm);
	alarm(timeout);

	if (rma_init(&argc, &argv) != RMA_SUCCESS) {
		fprintf(stderr, "remote_rma: case init FAILED: rma_init did not return RMA_SUCCESS\n");
		return 1;
	}
	CALL(rma_comm_set_errhandler(RMA_COMM_WORLD, RMA_ERRORS_RETURN));
	CALL(rma_comm_rank(RMA_COMM_WORLD, &g_rank));
	CALL(rma_comm_size(RMA_COMM_WORLD, &g_size));
	snprintf(g_prefix, sizeof g_prefix, "remote_rma: rank %d", g_rank);
	if (g_size < 2)
		fail("needs 2 ranks or more, got %d", g_size);
	sayWhere();
	makeTypes();

	/* Every window of both flavors stays until the end: several windows live at once. */
	for (g_flavor = 0; g_flavor < FLAVORS; ++g_flavor) {
		const int n = g_size, base = 100 * g_flavor;
		beginCase("windows");
		window *xfer = makeWindow((size_t)n * round64(BIG + GUARD), 1);
		window *dtype = makeWindow((size_t)n * (dtypeSmallStride() + dtypeBigStride()), 4);
		window *locks = makeWindow(8 + 4 * (size_t)n * (size_t)g_iters, 1);
		window *shared = makeWindow(round64(SHARED_SIZE + GUARD), 1);
		window *fence = makeWindow(2 * round64(FENCE_MAX + GUARD), 1);
		window *flushLocal = makeWindow((size_t)n * FLUSH_LOCAL_PUTS * round64(FLUSH_LOCAL_SIZE + GUARD), 1);
		window *mixed = makeWindow(2 * (size_t)n * round64(MIXED_SIZE + GUARD), 1);
		window *structs = makeWindow((size_t)n * (structStride() + subStride()), 8);
		window *requests = makeWindow(2 * (size_t)n * round64(REQUEST_SIZE + GUARD), 1);
		window *acc = makeWindow(16 + ACC_INTS * 4, 1);
		window *pscw = makeWindow((size_t)n * round64(PSCW_SIZE), 1);
		window *addrs = makeWindow((size_t)n * 8, 1);
		window *parked = makeWindow(64 + (size_t)n * PARKED_PIECE, 1);
		caseOk();

		casePut(xfer, 8, "put_8", base + 1);
		casePut(xfer, BIG, "put_1m", base + 2);
		shutThenTransfer(xfer, 0, "bulk_reconnect", base + 90);
		shutThenTransfer(xfer, 1, "bulk_reconnect_get", base + 91);
		caseGet(xfer, 8, "get_8", base + 3);
		caseGet(xfer, BIG, "get_1m", base + 4);
		caseDtypePut(dtype, base + 5);
		caseDtypeGet(dtype, base + 7);
		caseDtypeStruct(structs, base + 40);
		caseLockExclusive(locks);
		caseLockAllVsExclusive(locks);
		caseLockShared(shared, base + 9);
		caseLockParked(parked, base + 80);
		caseFence(fence, base + 10);
		caseFlushLocal(flushLocal, base + 20);
		caseMixed(mixed, base + 30);
		caseRequests(requests, base + 50);
		caseAccumulate(acc);
		casePscw(pscw, base + 60);
		caseDynamic(addrs, base + 70);
	}

	snprintf(g_case, sizeof g_case, "win_free");
	for (int i = 0; i < g_nwindows; ++i) {
		window *w = g_windows[i];
		CALL(rma_win_free(&w->win));
		if (w->win != RMA_WIN_NULL)
			fail("window %d: rma_win_free left the handle set, expected RMA_WIN_NULL", i);
		free(w->own);
		free(w);
	}
	for (size_t i = 0; i < sizeof g_types / sizeof g_types[0]; ++i)
		CALL(rma_type_free(&g_types[i]));
	const layout *layouts[] = { &g_smallVec,     &g_smallIdx, &g_bigVec, &g_bigIdx,
				    &g_structPacked, &g_structC,  &g_sub3d,  &g_sub2d };
	for (size_t i = 0; i < sizeof layouts / sizeof layouts[0]; ++i) {
		free(layouts[i]->pos);
		free(layouts[i]->mask);
	}
	say("%s case win_free ok", g_prefix);

	snprintf(g_case, sizeof g_case, "finalize");
	free(g_isRemote);
	int rc = rma_finalize();
	if (rc != RMA_SUCCESS)
		fail("rma_finalize returned %d, expected RMA_SUCCESS", rc);
	say("%s case finalize ok", g_prefix);
	return 0;
}
