// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * CPU-bound workload for the --cpu overhead measurement: a fixed amount of integer work in a
 * call chain three frames deep, no system calls and no allocations while it runs.
 *
 *   cpu_spin [--gate] [UNITS]   (default 40; one unit is 25M multiply-adds, ~40 ms here)
 *   --gate: read one byte from stdin first (the harness attaches the profiler while we wait).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define NOINLINE __attribute__((noinline))

static volatile unsigned long sink;

static NOINLINE unsigned long mix(unsigned long x, unsigned long n)
{
	for (unsigned long i = 0; i < n; i++)
		x = x * 6364136223846793005UL + 1442695040888963407UL;
	return x;
}

static NOINLINE unsigned long unit(unsigned long x)
{
	x = mix(x, 25000000UL);
	__asm__ volatile("" ::: "memory"); /* not a tail call: keep the frame */
	return x;
}

static NOINLINE void spin(long units)
{
	unsigned long x = 1;

	for (long u = 0; u < units; u++)
		x = unit(x);
	sink = x;
}

int main(int argc, char **argv)
{
	long units = 40;
	char go;

	for (int i = 1; i < argc; i++) {
		if (!strcmp(argv[i], "--gate")) {
			if (read(0, &go, 1) != 1)
				return 1;
		} else {
			units = atol(argv[i]);
		}
	}
	spin(units);
	return 0;
}
