/* SPDX-License-Identifier: MIT */
/*
 * The raw baseline for librma across hosts (issue #14): a TCP round trip of
 * SIZE bytes between two processes, both busy-polling nonblocking sockets
 * (TCP_NODELAY), the way librma's origin and server poll theirs. Run the
 * server on one host (or network namespace) and the client on the other:
 *
 *   tcp_pingpong server PORT [SIZE]
 *   tcp_pingpong client ADDRESS PORT [SIZE [ITERATIONS]]
 *
 * The client prints the median, minimum and 99th percentile of the single
 * round trips in microseconds; the server exits when the client closes.
 * bench/net_table.sh runs it between namespace hosts beside rmabench.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

static double nowUs(void)
{
	struct timespec t;
	clock_gettime(CLOCK_MONOTONIC, &t);
	return t.tv_sec * 1e6 + t.tv_nsec / 1e3;
}

static int cmp(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;
	return x < y ? -1 : x > y;
}

/* Busy-poll until @n bytes are read; 0 when the peer closed. */
static int readAll(int fd, char *buf, size_t n)
{
	size_t got = 0;
	while (got < n) {
		ssize_t r = recv(fd, buf + got, n - got, MSG_DONTWAIT);
		if (r > 0)
			got += (size_t)r;
		else if (r == 0)
			return 0;
		else if (errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR)
			return -1;
	}
	return 1;
}

static int writeAll(int fd, const char *buf, size_t n)
{
	size_t put = 0;
	while (put < n) {
		ssize_t w = send(fd, buf + put, n - put, MSG_NOSIGNAL | MSG_DONTWAIT);
		if (w > 0)
			put += (size_t)w;
		else if (w < 0 && errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR)
			return -1;
	}
	return 1;
}

int main(int argc, char **argv)
{
	if (argc < 3 || (strcmp(argv[1], "server") && strcmp(argv[1], "client"))) {
		fprintf(stderr, "usage: tcp_pingpong server PORT [SIZE] | client ADDRESS PORT [SIZE [ITERATIONS]]\n");
		return 2;
	}
	const int server = !strcmp(argv[1], "server");
	const int one = 1;
	size_t size = 16;
	long iters = 20000;
	struct sockaddr_in a = { .sin_family = AF_INET };
	int fd;
	if (server) {
		if (argc > 3)
			size = strtoul(argv[3], NULL, 10);
		int l = socket(AF_INET, SOCK_STREAM, 0);
		setsockopt(l, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
		a.sin_port = htons((uint16_t)atoi(argv[2]));
		if (bind(l, (struct sockaddr *)&a, sizeof a) || listen(l, 1)) {
			perror("tcp_pingpong: listen");
			return 1;
		}
		fd = accept(l, NULL, NULL);
		close(l);
	} else {
		if (argc < 4) {
			fprintf(stderr, "tcp_pingpong client ADDRESS PORT [SIZE [ITERATIONS]]\n");
			return 2;
		}
		if (argc > 4)
			size = strtoul(argv[4], NULL, 10);
		if (argc > 5)
			iters = atol(argv[5]);
		inet_pton(AF_INET, argv[2], &a.sin_addr);
		a.sin_port = htons((uint16_t)atoi(argv[3]));
		fd = socket(AF_INET, SOCK_STREAM, 0);
		int tries = 0;
		while (connect(fd, (struct sockaddr *)&a, sizeof a) != 0) {
			if (++tries > 200) {
				perror("tcp_pingpong: connect");
				return 1;
			}
			close(fd);
			fd = socket(AF_INET, SOCK_STREAM, 0);
			usleep(10000);
		}
	}
	setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
	char *buf = calloc(1, size);
	if (server) {
		while (readAll(fd, buf, size) == 1)
			if (writeAll(fd, buf, size) != 1)
				break;
		return 0;
	}
	double *t = malloc(sizeof(double) * (size_t)iters);
	for (long i = -1000; i < iters; ++i) { /* 1000 warm-up round trips */
		double t0 = nowUs();
		if (writeAll(fd, buf, size) != 1 || readAll(fd, buf, size) != 1) {
			fprintf(stderr, "tcp_pingpong: the server went away\n");
			return 1;
		}
		if (i >= 0)
			t[i] = nowUs() - t0;
	}
	qsort(t, (size_t)iters, sizeof *t, cmp);
	printf("tcp_pingpong %zu bytes: median %.2f us, min %.2f, p99 %.2f (%ld round trips)\n", size, t[iters / 2],
	       t[0], t[(size_t)(iters * 0.99)], iters);
	return 0;
}
