// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * Unwind-table build cost per ELF file (user/unwind/unwind_table.c): rows, table bytes, FDEs,
 * unsupported rows, build time (best of N runs) and how much the peak RSS grew in a child
 * process that builds only that table (so one file's memory is not hidden by another's).
 * Kernel memory: the chunks the table takes in its inner array map (include/prof_unwind.h: 16 KiB
 * chunks, one more for the index when the rows fill more than one) and, as root, what the kernel
 * charges for an array map of that many chunks (its fdinfo "memlock").
 * Usage: unwind_tables [-n RUNS] FILE...   (default: the four libraries of the README table)
 */
#include <bpf/bpf.h>
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "proc/safe_open.h"
#include "unwind/unwind_table.h"

static const char *const default_files[] = {
	"/lib/x86_64-linux-gnu/libc.so.6",
	"/usr/lib/x86_64-linux-gnu/libstdc++.so.6",
	"/usr/lib/x86_64-linux-gnu/libsqlite3.so.0",
	"/usr/bin/python3.11",
};

/* User CPU time between two getrusage calls: unlike wall time, not inflated by uprobes that
 * other tools on this machine put on libc's malloc (their traps count as system time). */
static double user_ms(const struct rusage *a, const struct rusage *b)
{
	return (a->ru_utime.tv_sec - b->ru_utime.tv_sec) * 1e3 +
	       (a->ru_utime.tv_usec - b->ru_utime.tv_usec) / 1e3;
}

static double now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
}

/* Chunks of the inner map: the rows in 16 KiB chunks, plus the index chunk when there are
 * several (the layout include/prof_unwind.h describes). */
static uint32_t kernel_chunks(uint32_t rows)
{
	uint32_t n = (rows + PROF_UNWIND_CHUNK_ROWS - 1) / PROF_UNWIND_CHUNK_ROWS;

	return n <= 1 ? 1 : n + 1;
}

/*
 * What the kernel charges for an array map of `chunks` chunks (its "memlock" in fdinfo, the
 * map's own accounting: values plus the map's header), measured rather than computed so a change
 * in the kernel's accounting shows.  Fails without CAP_BPF (not root).
 */
static int kernel_memlock(long long *out, uint32_t chunks)
{
	char path[64], line[128];
	FILE *f = NULL;
	int fd, err = -ENOENT;

	fd = bpf_map_create(BPF_MAP_TYPE_ARRAY, "bench_unwind", sizeof(__u32),
			    sizeof(struct prof_unwind_chunk), chunks, NULL);
	if (fd < 0)
		return fd; /* libbpf returns -errno */
	snprintf(path, sizeof(path), "/proc/self/fdinfo/%d", fd);
	f = fopen(path, "r");
	if (!f) {
		err = -errno;
		goto cleanup;
	}
	while (fgets(line, sizeof(line), f))
		if (sscanf(line, "memlock: %lld", out) == 1) {
			err = 0;
			break;
		}
cleanup:
	if (f)
		fclose(f);
	close(fd);
	return err;
}

/* Build once in this (child) process; print the row and write the peak RSS to the parent. */
static int one(const char *path, int runs)
{
	struct unwind_table *t = NULL;
	double best = 1e18;
	struct rusage before, after;
	long long memlock = -1;
	uint32_t nr = 0;
	int fd = -1, err;

	getrusage(RUSAGE_SELF, &before);

	err = safe_open__at(&fd, -1, path, 0, SAFE_OPEN_ELF_MAX, NULL);
	if (err)
		goto cleanup;
	for (int i = 0; i < runs; i++) {
		double t0 = now_ms();

		unwind_table__free(t);
		err = unwind_table__build(&t, fd, NULL);
		if (err)
			goto cleanup;
		if (now_ms() - t0 < best)
			best = now_ms() - t0;
	}
	unwind_table__rows(t, &nr);
	getrusage(RUSAGE_SELF, &after);
	if (kernel_memlock(&memlock, kernel_chunks(nr)))
		memlock = -1; /* shown as unknown; the computed bytes remain */
	printf("%-44s %9u %11zu %6u %7u %9.2f %8.2f %9ld %6u %10" PRIu64 " %10lld\n", path, nr,
	       (size_t)nr * sizeof(struct prof_unwind_row), unwind_table__stats(t)->fdes,
	       unwind_table__stats(t)->unsupported_rows, best, user_ms(&after, &before) / runs,
	       after.ru_maxrss - before.ru_maxrss, kernel_chunks(nr),
	       (uint64_t)kernel_chunks(nr) * sizeof(struct prof_unwind_chunk), memlock);
	fflush(stdout);
cleanup:
	if (err)
		fprintf(stderr, "%s: %s\n", path, strerror(-err));
	unwind_table__free(t);
	if (fd >= 0)
		close(fd);
	return err ? 1 : 0;
}

int main(int argc, char **argv)
{
	const char *const *files = default_files;
	int nfiles = 4, runs = 5, rc = 0;

	if (argc > 2 && strcmp(argv[1], "-n") == 0) {
		runs = atoi(argv[2]);
		argc -= 2;
		argv += 2;
	}
	if (runs < 1)
		runs = 1;
	if (argc > 1) {
		files = (const char *const *)argv + 1;
		nfiles = argc - 1;
	}
	printf("%-44s %9s %11s %6s %7s %9s %8s %9s %6s %10s %10s\n", "file", "rows", "table_B",
	       "fdes", "unsupp", "build_ms", "user_ms", "peak+KiB", "chunks", "kernel_B",
	       "memlock_B");
	for (int i = 0; i < nfiles; i++) {
		int status;
		pid_t pid;

		fflush(stdout);
		pid = fork();
		if (pid < 0)
			return 1;
		if (pid == 0)
			_exit(one(files[i], runs));
		if (waitpid(pid, &status, 0) < 0 || !WIFEXITED(status) || WEXITSTATUS(status))
			rc = 1;
	}
	return rc;
}
