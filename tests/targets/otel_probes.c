// otel_memory end-to-end target: its own tiny deterministic sampler (tests/targets/lib/
// otel_sampler.h: every 4th block through sampled_malloc fires otel_memory:alloc with weight
// 4 x size; a sampled block's sampled_free fires otel_memory:free), so --heap's numbers are exact:
//
//   alloc_a      400 x 1000 bytes through the sampler, kept:  100 samples of 4000 bytes
//                alloc_space 400000, alloc_objects 400, inuse_space 400000, inuse_objects 400
//   alloc_b      200 x 3000 bytes through the sampler, freed:  50 samples of 12000 bytes
//                alloc_space 600000, alloc_objects 200, inuse_space 0
//   plain_alloc  100 x 5000 bytes by malloc itself, kept: never seen (the process is on its
//                probes' path, the allocator probes skip it)
//
//   otel_probes [--wait]   --wait: print "READY pid", wait for a line on stdin before allocating
//                          and for another before exiting (-p, --cgroup)
//
// Prints "DONE" when the allocations are done.
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "lib/otel_sampler.h"

#define A_COUNT 400
#define A_SIZE	1000
#define B_COUNT 200
#define B_SIZE	3000
#define P_COUNT 100
#define P_SIZE	5000

static void *kept_a[A_COUNT], *kept_p[P_COUNT];

NOIPA static void alloc_a(void)
{
	for (int i = 0; i < A_COUNT; i++)
		kept_a[i] = sampled_malloc(A_SIZE);
}

NOIPA static void alloc_b(void)
{
	void *b[B_COUNT];

	for (int i = 0; i < B_COUNT; i++)
		b[i] = sampled_malloc(B_SIZE);
	for (int i = 0; i < B_COUNT; i++)
		sampled_free(b[i]);
}

NOIPA static void plain_alloc(void)
{
	for (int i = 0; i < P_COUNT; i++) {
		kept_p[i] = malloc(P_SIZE);
		if (!kept_p[i])
			abort();
	}
}

static void wait_line(void)
{
	char buf[64];

	if (!fgets(buf, sizeof(buf), stdin))
		exit(1);
}

int main(int argc, char **argv)
{
	int wait = argc > 1 && !strcmp(argv[1], "--wait");

	if (wait) {
		printf("READY %d\n", (int)getpid());
		fflush(stdout);
		wait_line();
	}
	alloc_a();
	alloc_b();
	plain_alloc();
	printf("DONE\n");
	fflush(stdout);
	if (wait)
		wait_line();
	return 0;
}
