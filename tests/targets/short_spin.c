// Short-lived process target: spins in burn() for MILLION x 10^6 steps of arithmetic (default 15:
// about 20 ms here), then exits.  A container's `sh -c` loop runs it over and over
// (tests/e2e/test_container.sh): each process lives well under 50 ms, so its maps must be read
// at exec or exit for its samples to name burn and main.  Built static (Makefile) and calling
// nothing while it spins (no clock_gettime: its vDSO frames would need the vDSO read from the
// gone process): every user frame is in this one file, so an address left bare can only mean
// the process was not symbolized.
// Usage: short_lived [MILLION]
#include <stdlib.h>

#define NOINLINE __attribute__((noinline))

static volatile unsigned long sink;

NOINLINE void burn(unsigned long steps)
{
	unsigned long x = sink;

	for (unsigned long i = 0; i < steps; i++)
		x = x * 6364136223846793005UL + 1442695040888963407UL;
	sink = x;
}

int main(int argc, char **argv)
{
	burn((argc > 1 ? strtoul(argv[1], NULL, 10) : 15) * 1000000UL);
	return 0;
}
