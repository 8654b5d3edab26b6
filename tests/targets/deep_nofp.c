// Deep stacks (tests/e2e/test_deep.sh): after a 1 s sleep (the profiler builds the tables of a
// launched command in the background), main calls deep_a, which calls deep_b, which calls deep_a
// … DEPTH calls in all (deep_a and deep_b alternate; one frame each), and the last calls
// deep_leaf, which mallocs COUNT blocks of 4321 bytes and keeps them.  Prints "DONE DEPTH" and
// exits without freeing.  Built without frame pointers (the .eh_frame unwinder walks it), and
// with them as deep_fp (Makefile: for --unwind fp).  With "sleep", deep_leaf sleeps COUNT times
// 100 ms (nanosleep) instead of allocating: COUNT periods off the CPU at the bottom (--offcpu).
//
//   deep_nofp DEPTH COUNT [sleep]
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define NOIPA	    __attribute__((noinline, noipa))
#define BLOCK_BYTES 4321

static void *volatile sink;
static int sleeps;

NOIPA void deep_leaf(long count)
{
	for (long i = 0; i < count && sleeps; i++) {
		struct timespec ts = {0, 100 * 1000 * 1000};

		while (nanosleep(&ts, &ts))
			;
	}
	for (long i = 0; i < count && !sleeps; i++) {
		void *p = malloc(BLOCK_BYTES);

		if (!p)
			exit(1);
		sink = p; /* kept: in use at the end */
	}
}

NOIPA void deep_b(int depth, long count);

/* The call is not a tail call (the volatile read after it), so every level keeps its frame. */
NOIPA void deep_a(int depth, long count)
{
	volatile int d = depth;

	if (d <= 1)
		deep_leaf(count);
	else
		deep_b(d - 1, count);
	d = 0;
}

NOIPA void deep_b(int depth, long count)
{
	volatile int d = depth;

	if (d <= 1)
		deep_leaf(count);
	else
		deep_a(d - 1, count);
	d = 0;
}

int main(int argc, char **argv)
{
	int depth;
	long count;

	if (argc < 3 || argc > 4 || (depth = atoi(argv[1])) < 1 || depth > 100000 ||
	    (count = atol(argv[2])) < 1 || (argc == 4 && strcmp(argv[3], "sleep"))) {
		fprintf(stderr, "usage: deep_nofp DEPTH COUNT [sleep]\n");
		return 2;
	}
	sleeps = argc == 4;
	sleep(1);
	deep_a(depth, count);
	printf("DONE %d\n", depth);
	return 0;
}
