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
// With "starts": STARTS call sites of malloc, each a start of its own, called in turn ROUNDS /
// 4 times, pinned to one CPU (the cache is per CPU): a cache of too few slots per CPU misses
// them all.  Prints "DONE".
#define _GNU_SOURCE
#include <sched.h>
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

// STARTS call sites (100..499), each allocating 16 + its number bytes.
// clang-format off
#define SITE(n)                                                                                    \
	NOIPA static void *site_##n(void)                                                          \
	{                                                                                          \
		void *p = malloc(16 + n);                                                          \
		if (!p)                                                                            \
			exit(1);                                                                   \
		sink = p;                                                                          \
		return p;                                                                          \
	}
#define SITES_10(b)                                                                                \
	SITE(b##0) SITE(b##1) SITE(b##2) SITE(b##3) SITE(b##4)                                    \
	SITE(b##5) SITE(b##6) SITE(b##7) SITE(b##8) SITE(b##9)
#define SITES_100(b)                                                                               \
	SITES_10(b##0) SITES_10(b##1) SITES_10(b##2) SITES_10(b##3) SITES_10(b##4)                \
	SITES_10(b##5) SITES_10(b##6) SITES_10(b##7) SITES_10(b##8) SITES_10(b##9)
SITES_100(1) SITES_100(2) SITES_100(3) SITES_100(4)

#define REF(n) site_##n,
#define REFS_10(b)                                                                                 \
	REF(b##0) REF(b##1) REF(b##2) REF(b##3) REF(b##4)                                          \
	REF(b##5) REF(b##6) REF(b##7) REF(b##8) REF(b##9)
#define REFS_100(b)                                                                                \
	REFS_10(b##0) REFS_10(b##1) REFS_10(b##2) REFS_10(b##3) REFS_10(b##4)                     \
	REFS_10(b##5) REFS_10(b##6) REFS_10(b##7) REFS_10(b##8) REFS_10(b##9)
static void *(*const sites[])(void) = {REFS_100(1) REFS_100(2) REFS_100(3) REFS_100(4)};
// clang-format on
#define STARTS ((int)(sizeof(sites) / sizeof(sites[0])))

int main(int argc, char **argv)
{
	sleep(1);
	if (argc > 1 && !strcmp(argv[1], "starts")) {
		cpu_set_t one;
		int cpu = sched_getcpu();

		CPU_ZERO(&one);
		CPU_SET(cpu < 0 ? 0 : cpu, &one);
		if (sched_setaffinity(0, sizeof(one), &one))
			perror("sched_setaffinity"); /* the test's count then tells */
		for (int r = 0; r < ROUNDS / 4; r++)
			for (int i = 0; i < STARTS; i++)
				free(sites[i]());
		puts("DONE");
		return 0;
	}
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
