// Short-lived process target: spins in burn() for MS milliseconds of wall time (default 20),
// then exits.  A container's `sh -c` loop runs it over and over (tests/e2e/test_container.sh):
// each process lives well under 50 ms, so its maps must be read at exec or exit for its samples
// to name burn and main.  Built static (Makefile): every user frame is in this one file, so an
// address left bare can only mean the process was not symbolized.
// Usage: short_lived [MS]
#include <stdlib.h>
#include <time.h>

#define NOINLINE __attribute__((noinline))

static volatile unsigned long sink;

static long long now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1000000000LL + ts.tv_nsec;
}

NOINLINE void burn(long long ns)
{
	long long end = now_ns() + ns;
	unsigned long x = sink;

	while (now_ns() < end)
		for (int i = 0; i < 10000; i++)
			x = x * 6364136223846793005UL + 1442695040888963407UL;
	sink = x;
}

int main(int argc, char **argv)
{
	burn((argc > 1 ? atoll(argv[1]) : 20) * 1000000LL);
	return 0;
}
