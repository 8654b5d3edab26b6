// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * malloc/free microbenchmark: PAIRS malloc+free pairs made four frames below main
 * (main -> run -> layer_a -> layer_b -> churn), so a stack walk has some work to do.
 *
 *   malloc_micro [--gate] [PAIRS]           PAIRS x malloc(64) + free (default 200000)
 *   malloc_micro [--gate] --mixed [PAIRS]   the sampling workload: PAIRS allocations of known
 *                                           sizes from four named functions, 1 in 8 kept:
 *     small_objs   70% of PAIRS x 48 B         medium_objs  25% x 1000 B
 *     large_objs    4.9% x 16384 B             huge_objs     0.1% x 262144 B
 *   malloc_micro [--gate] --aligned [PAIRS] as the first, with posix_memalign(64) instead of
 *                                           malloc: glibc's begins with a cmpb the kernel
 *                                           single-steps (where a probe lands matters)
 *   --gate: read one byte from stdin first (the harness attaches a tracer while we wait).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define NOINLINE __attribute__((noinline))

static void *volatile sink;
static void **kept;
static long nkept;
static int aligned;

static NOINLINE void churn(size_t size)
{
	char *p;

	if (aligned) {
		if (posix_memalign((void **)&p, 64, size))
			exit(1);
	} else {
		p = malloc(size);
	}
	p[0] = 1; /* touch it, so the allocation cannot be elided */
	sink = p;
	free(p);
}

static NOINLINE void layer_b(long pairs)
{
	for (long i = 0; i < pairs; i++)
		churn(64);
	__asm__ volatile("" ::: "memory");
}

/* The empty asm after each call keeps it from becoming a tail call: every frame stays. */
static NOINLINE void layer_a(long pairs)
{
	layer_b(pairs);
	__asm__ volatile("" ::: "memory");
}

static NOINLINE void run(long pairs)
{
	layer_a(pairs);
	__asm__ volatile("" ::: "memory");
}

/* --mixed: one allocation of `size`, freed unless it is the 8th of its kind. */
static inline void one(size_t size, long i)
{
	char *p = malloc(size);

	p[0] = 1;
	if (i % 8 == 7)
		kept[nkept++] = p;
	else
		free(p);
}

NOINLINE void small_objs(long n)
{
	for (long i = 0; i < n; i++)
		one(48, i);
}

NOINLINE void medium_objs(long n)
{
	for (long i = 0; i < n; i++)
		one(1000, i);
}

NOINLINE void large_objs(long n)
{
	for (long i = 0; i < n; i++)
		one(16384, i);
}

NOINLINE void huge_objs(long n)
{
	for (long i = 0; i < n; i++)
		one(262144, i);
}

static NOINLINE void run_mixed(long pairs)
{
	long n_small = pairs * 700 / 1000, n_medium = pairs * 250 / 1000;
	long n_large = pairs * 49 / 1000, n_huge = pairs - n_small - n_medium - n_large;

	kept = calloc(pairs / 8 + 4, sizeof(*kept));
	if (!kept)
		exit(1);
	/* Interleaved in chunks, as a real program would, rather than one phase per size. */
	for (int chunk = 0; chunk < 100; chunk++) {
		small_objs(n_small / 100 + (chunk < n_small % 100));
		medium_objs(n_medium / 100 + (chunk < n_medium % 100));
		large_objs(n_large / 100 + (chunk < n_large % 100));
		huge_objs(n_huge / 100 + (chunk < n_huge % 100));
	}
}

int main(int argc, char **argv)
{
	long pairs = 200000;
	int mixed = 0;
	char go;

	for (int i = 1; i < argc; i++) {
		if (!strcmp(argv[i], "--gate")) {
			if (read(0, &go, 1) != 1)
				return 1;
		} else if (!strcmp(argv[i], "--mixed")) {
			mixed = 1;
		} else if (!strcmp(argv[i], "--aligned")) {
			aligned = 1;
		} else {
			pairs = atol(argv[i]);
		}
	}
	if (mixed)
		run_mixed(pairs);
	else
		run(pairs);
	return 0;
}
