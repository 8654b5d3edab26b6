// -f chrome / -f perfetto --heap target (tests/e2e/test_trace.sh): every allocation it makes is
// listed here (no stdio: write(2) only), so the heap counter's values are exact:
//   keep_large()  3 x 1 MiB, kept                           -> 3145728 in use
//   keep_small()  calloc(10, 4096), kept                    -> 3186688
//   churn()       1000 x 100 bytes, then all freed          -> peak 3286688, back to 3186688
//   big_temp()    2 MiB, freed                              -> peak 5283840, back to 3186688
//   grow()        512 KiB, realloc'd to 1.5 MiB, kept       -> 3711 (…) then 4759552 at the end
// Allocations of 1 MiB or more (large-allocation instants): 3 + 1 + 1 (the realloc) = 5.
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define MiB (1UL << 20)

static void *volatile keep[16];

__attribute__((noinline)) static void keep_large(void)
{
	for (int i = 0; i < 3; i++) {
		keep[i] = malloc(MiB);
		memset(keep[i], 1, 64);
	}
}

__attribute__((noinline)) static void keep_small(void)
{
	keep[3] = calloc(10, 4096);
}

__attribute__((noinline)) static void churn(void)
{
	static void *p[1000];

	for (int i = 0; i < 1000; i++)
		p[i] = malloc(100);
	for (int i = 0; i < 1000; i++)
		free(p[i]);
}

__attribute__((noinline)) static void big_temp(void)
{
	char *volatile p = malloc(2 * MiB);

	p[0] = 1;
	free(p);
}

__attribute__((noinline)) static void grow(void)
{
	char *p = malloc(MiB / 2);

	p[0] = 1;
	keep[4] = realloc(p, 3 * MiB / 2);
}

int main(void)
{
	keep_large();
	keep_small();
	churn();
	big_temp();
	grow();
	if (write(1, "done\n", 5) != 5)
		return 1;
	return 0;
}
