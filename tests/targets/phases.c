// Continuous-mode target: leaks at known moments, so each interval's profile holds a known part.
//   leak_early: 100 x 4096 bytes at once, then 2.5 s of sleep
//   leak_late:  50 x 4096 bytes, then 3 s of sleep, then exit (nothing freed)
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define NOINLINE __attribute__((noinline))

static void *keep[150];

static void nap(long ms)
{
	struct timespec ts = {ms / 1000, (ms % 1000) * 1000000L};

	nanosleep(&ts, NULL);
}

NOINLINE void leak_early(void)
{
	for (int i = 0; i < 100; i++) {
		keep[i] = malloc(4096);
		memset(keep[i], 1, 4096);
	}
}

NOINLINE void leak_late(void)
{
	for (int i = 100; i < 150; i++) {
		keep[i] = malloc(4096);
		memset(keep[i], 2, 4096);
	}
}

int main(void)
{
	leak_early();
	nap(2500);
	leak_late();
	nap(3000);
	return keep[0] == keep[149];
}
