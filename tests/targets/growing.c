// Memory that grows and memory that comes and goes (tests/e2e/test_leaks.sh, the growth list of
// continuous mode): every 250 ms leak_step keeps 100,000 bytes (400,000 bytes/s, never freed),
// and cache_fill adds a 50,000-byte block to a cache that is emptied every 1.6 s (a sawtooth:
// sampled once a second it never grows at every end).  Runs argv[1] seconds (default 5).
#include <stdlib.h>
#include <time.h>

#define NOINLINE __attribute__((noinline))
#define CACHE_MAX 64

static void *volatile leaked;
static void *cache[CACHE_MAX];
static int ncache;

NOINLINE void leak_step(void)
{
	leaked = malloc(100000);
}

NOINLINE void cache_fill(void)
{
	if (ncache < CACHE_MAX)
		cache[ncache++] = malloc(50000);
}

static void cache_empty(void)
{
	while (ncache)
		free(cache[--ncache]);
}

int main(int argc, char **argv)
{
	struct timespec step = {.tv_nsec = 250000000};
	int steps = (argc > 1 ? atoi(argv[1]) : 5) * 4;

	for (int i = 1; i <= steps; i++) {
		nanosleep(&step, NULL);
		leak_step();
		/* 6.4 steps of 250 ms per cache cycle: emptied on steps 7, 13, 20, 26, ... */
		if ((i * 10) % 64 < 10)
			cache_empty();
		else
			cache_fill();
	}
	return 0;
}
