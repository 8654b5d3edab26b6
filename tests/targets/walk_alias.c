// One start state of a stack walk reached on four paths (tests/e2e/test_unwind.sh,
// t_unwind_walk_cache_other_paths).  leaf calls malloc; via_a and via_b call leaf, top_1 and
// top_2 call those, all with frames of one size: at malloc's return the return address, the
// stack pointer and the frame pointer are the same on every path, and only the return
// addresses up the stack tell them apart.  The walk cache (bpf/unwind.bpf.h) keeps whole walks
// by their start, so it must check those words before it hands one path's stack to another.
//
// After a 1 s sleep (the profiler builds the tables of a launched command in the background),
// ROUNDS times, each path BURST times in a row: malloc(size)+free, the size the path's own
// (top_1/via_a 100, top_1/via_b 200, top_2/via_a 300, top_2/via_b 400 bytes).  With the
// argument "interleave", ROUNDS * BURST times the four paths one call each, in turn: four walks
// from one start alternate, as sqlite3's do (a cache holding fewer per start misses them all).
// Prints "DONE".
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define NOIPA __attribute__((noinline))

#define ROUNDS 40
#define BURST  25

static void *volatile sink;

NOIPA void *leaf(size_t n)
{
	void *p = malloc(n);

	if (!p)
		exit(1);
	sink = p;
	return p;
}

// Identical bodies: identical frames.  The store after each call keeps it a call (no tail
// call that would take the caller's frame off the stack).
NOIPA void via_a(size_t n)
{
	free(leaf(n));
	sink = NULL;
}

NOIPA void via_b(size_t n)
{
	free(leaf(n));
	sink = NULL;
}

NOIPA void top_1(int b, size_t n)
{
	if (b)
		via_b(n);
	else
		via_a(n);
	sink = NULL;
}

NOIPA void top_2(int b, size_t n)
{
	if (b)
		via_b(n);
	else
		via_a(n);
	sink = NULL;
}

int main(int argc, char **argv)
{
	sleep(1);
	if (argc > 1 && !strcmp(argv[1], "interleave")) {
		for (int r = 0; r < ROUNDS * BURST; r++) {
			top_1(0, 100);
			top_1(1, 200);
			top_2(0, 300);
			top_2(1, 400);
		}
		puts("DONE");
		return 0;
	}
	for (int r = 0; r < ROUNDS; r++) {
		for (int i = 0; i < BURST; i++)
			top_1(0, 100);
		for (int i = 0; i < BURST; i++)
			top_1(1, 200);
		for (int i = 0; i < BURST; i++)
			top_2(0, 300);
		for (int i = 0; i < BURST; i++)
			top_2(1, 400);
	}
	puts("DONE");
	return 0;
}
