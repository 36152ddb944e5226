/* SPDX-License-Identifier: MIT */
/*
 * What placement a rank actually got, as the kernel sees it, for the
 * rmarun --placement tests. Each rank allocates a window (one page, no
 * info keys, so the job's defaults apply), then prints one line:
 *
 *   rank R cpus LIST policy MODE nodes LIST placement P huge H
 *
 * With arguments, one window per argument instead, each created with the
 * info keys the argument gives: "-" none, "NAME" rma_win_name=NAME,
 * "NAME/POLICY" rma_win_name=NAME and rma_placement=POLICY, "/POLICY"
 * rma_placement=POLICY; each line then ends with " name N", the window's
 * name from rma_win_get_name.
 *
 * cpus: sched_getaffinity; policy and nodes: get_mempolicy(MPOL_F_ADDR)
 * on the window's memory (default, bind, interleave, preferred, local);
 * placement and huge: rma_placement and rma_huge_pages from
 * rma_win_get_info. Exits 1 with a message on any failure.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <sched.h>
#include <stdio.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <rma/rma.h>

#define MPOL_F_ADDR_ (1 << 1)
#define MASK_BITS 1024

/* "0-3,6" into @out from the set bits 0..@n-1 of @isSet. */
static void listText(int n, int (*isSet)(int, const void *), const void *set, char *out, size_t len)
{
	size_t used = 0;
	out[0] = '\0';
	for (int i = 0; i < n; ++i) {
		if (!isSet(i, set))
			continue;
		int j = i;
		while (j + 1 < n && isSet(j + 1, set))
			++j;
		used += (size_t)snprintf(out + used, len - used, used ? ",%d" : "%d", i);
		if (j > i)
			used += (size_t)snprintf(out + used, len - used, "-%d", j);
		i = j;
		if (used >= len)
			break;
	}
	if (!out[0])
		snprintf(out, len, "-");
}

static int cpuIsSet(int cpu, const void *set)
{
	return CPU_ISSET(cpu, (const cpu_set_t *)set);
}

static int nodeIsSet(int node, const void *mask)
{
	const unsigned long *m = mask;
	const int bits = (int)(sizeof(unsigned long) * 8);
	return (int)((m[node / bits] >> (node % bits)) & 1);
}

static const char *modeName(int mode)
{
	static const char *const names[] = { "default", "preferred", "bind", "interleave", "local" };
	return mode >= 0 && mode < 5 ? names[mode] : "other";
}

/* Make a window over one page with the info keys @spec gives (see the top) and print its line. */
static int checkWindow(int rank, const char *cpuText, const char *spec)
{
	long page = sysconf(_SC_PAGESIZE);
	rma_info keys = RMA_INFO_NULL;
	if (spec && strcmp(spec, "-") != 0) {
		char name[RMA_MAX_OBJECT_NAME + 1];
		const char *slash = strchr(spec, '/');
		size_t len = slash ? (size_t)(slash - spec) : strlen(spec);
		if (len >= sizeof(name))
			len = sizeof(name) - 1;
		memcpy(name, spec, len);
		name[len] = '\0';
		rma_info_create(&keys);
		if (len > 0)
			rma_info_set(keys, "rma_win_name", name);
		if (slash)
			rma_info_set(keys, "rma_placement", slash + 1);
	}
	char *base = NULL;
	rma_win win;
	int rc = rma_win_allocate(page, 1, keys, RMA_COMM_WORLD, &base, &win);
	if (keys != RMA_INFO_NULL)
		rma_info_free(&keys);
	if (rc != RMA_SUCCESS) {
		char text[RMA_MAX_ERROR_STRING];
		int len = 0;
		rma_error_string(rc, text, &len);
		fprintf(stderr, "rank %d: rma_win_allocate: %s\n", rank, text);
		return 1;
	}
	base[0] = 1; /* touch: the page exists under the policy */

	int mode = -1;
	unsigned long mask[MASK_BITS / (sizeof(unsigned long) * 8)];
	memset(mask, 0, sizeof(mask));
	if (syscall(SYS_get_mempolicy, &mode, mask, (unsigned long)MASK_BITS, base, (unsigned long)MPOL_F_ADDR_) != 0) {
		perror("get_mempolicy");
		return 1;
	}
	char nodeText[256];
	listText(MASK_BITS, nodeIsSet, mask, nodeText, sizeof(nodeText));
	/* MPOL_DEFAULT reports no mask. */
	if (mode == 0)
		snprintf(nodeText, sizeof(nodeText), "-");

	rma_info info;
	char placement[RMA_MAX_INFO_VAL + 1] = "?", huge[RMA_MAX_INFO_VAL + 1] = "?";
	int flag = 0;
	if (rma_win_get_info(win, &info) == RMA_SUCCESS) {
		rma_info_get(info, "rma_placement", RMA_MAX_INFO_VAL, placement, &flag);
		rma_info_get(info, "rma_huge_pages", RMA_MAX_INFO_VAL, huge, &flag);
		rma_info_free(&info);
	}
	char winName[RMA_MAX_OBJECT_NAME] = "?";
	int nameLen = 0;
	rma_win_get_name(win, winName, &nameLen);
	printf("rank %d cpus %s policy %s nodes %s placement %s huge %s", rank, cpuText, modeName(mode), nodeText,
	       placement, huge);
	if (spec)
		printf(" name %s", winName);
	printf("\n");
	fflush(stdout);
	return rma_win_free(&win) == RMA_SUCCESS ? 0 : 1;
}

int main(int argc, char **argv)
{
	int rank;
	if (rma_init(&argc, &argv) != RMA_SUCCESS)
		return 1; /* librma has said why */
	rma_comm_rank(RMA_COMM_WORLD, &rank);

	cpu_set_t cpus;
	CPU_ZERO(&cpus);
	if (sched_getaffinity(0, sizeof(cpus), &cpus) != 0) {
		perror("sched_getaffinity");
		return 1;
	}
	char cpuText[1024];
	listText(CPU_SETSIZE, cpuIsSet, &cpus, cpuText, sizeof(cpuText));

	if (argc < 2) {
		if (checkWindow(rank, cpuText, NULL) != 0)
			return 1;
	}
	for (int i = 1; i < argc; ++i)
		if (checkWindow(rank, cpuText, argv[i]) != 0)
			return 1;
	return rma_finalize() == RMA_SUCCESS ? 0 : 1;
}
