// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * The depth sweep of `make bench`: PAIRS malloc(64)+free made DEPTH frames below main, so the
 * cost of one stack walk can be measured at a known depth.  Built with frame pointers (like every
 * bench program): the frame-pointer walk and the .eh_frame unwinder then see the same complete
 * stack, and the difference between them is the cost per frame, not a different stack.
 *
 *   deep_stack [--gate] DEPTH PAIRS
 *   --gate: read one byte from stdin first (the harness attaches a tracer while we wait); after
 *   the last pair, write "done" to stdout and wait for stdin to close, so the harness can read
 *   the tracer's program statistics while it is still attached.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define NOINLINE __attribute__((noinline))

static void *volatile sink;

static NOINLINE void churn(long pairs)
{
	for (long i = 0; i < pairs; i++) {
		char *p = malloc(64);

		if (!p)
			exit(1);
		p[0] = 1; /* touch it, so the allocation cannot be elided */
		sink = p;
		free(p);
	}
}

static NOINLINE void descend_b(int depth, long pairs);

/*
 * One frame per level, alternating between two functions: consecutive frames are never the same
 * function, so the unwinder's cache of the last row found never serves (the worst case: every
 * frame is looked up).  The empty asm after the call keeps it from becoming a tail call (which
 * would reuse the frame) and the volatile depth keeps gcc from turning the recursion into a loop.
 */
static NOINLINE void descend_a(int depth, long pairs)
{
	volatile int d = depth;

	if (d <= 1)
		churn(pairs);
	else
		descend_b(d - 1, pairs);
	__asm__ volatile("" ::: "memory");
}

static NOINLINE void descend_b(int depth, long pairs)
{
	volatile int d = depth;

	if (d <= 1)
		churn(pairs);
	else
		descend_a(d - 1, pairs);
	__asm__ volatile("" ::: "memory");
}

int main(int argc, char **argv)
{
	int gate = 0, depth;
	long pairs;
	char c;

	if (argc > 1 && !strcmp(argv[1], "--gate")) {
		gate = 1;
		argc--;
		argv++;
	}
	if (argc != 3) {
		fprintf(stderr, "usage: deep_stack [--gate] DEPTH PAIRS\n");
		return 2;
	}
	depth = atoi(argv[1]);
	pairs = atol(argv[2]);
	if (depth < 1 || depth > 4000 || pairs < 1) {
		fprintf(stderr, "deep_stack: DEPTH 1..4000, PAIRS >= 1\n");
		return 2;
	}
	if (gate && read(0, &c, 1) != 1)
		return 1;
	descend_a(depth, pairs);
	if (gate) {
		/* write(), not stdio: no buffer allocation after the measured pairs */
		if (write(1, "done\n", 5) != 5)
			return 1;
		while (read(0, &c, 1) > 0)
			;
	}
	return 0;
}
