// Sampling end-to-end target (tests/e2e/test_sampling.sh): a few million allocations of known
// sizes from two named noinline functions, on the main thread.
//
//   churn_64     3,000,000 x malloc(64), each freed at once            (192,000,000 bytes)
//   pages_4096     200,000 x malloc(4096), 1 in 10 kept (20,000 kept)  (819,200,000 bytes)
//
// Usage: sampling_target [pages] [DIV]   pages: pages_4096 only (the default-rate tests: 200,000
// probed calls instead of 3,200,000, which cost about 40 s under uprobes on our machines);
// DIV: a DIVth of each count (the kept blocks too), for the mechanisms whose traps are slow.
#include <stdlib.h>
#include <string.h>

#define NOINLINE __attribute__((noinline))

static void *volatile sink;
static void *kept[20000];

NOINLINE void churn_64(int n)
{
	for (int i = 0; i < n; i++) {
		char *p = malloc(64);

		p[0] = 1;
		sink = p; /* escapes: the pair cannot be optimised away */
		free(p);
	}
}

NOINLINE void pages_4096(int n)
{
	for (int i = 0; i < n; i++) {
		char *p = malloc(4096);

		p[0] = 1;
		sink = p;
		if (i % 10 == 9)
			kept[i / 10] = p;
		else
			free(p);
	}
}

int main(int argc, char **argv)
{
	int pages_only = 0, div = 1;

	for (int i = 1; i < argc; i++) {
		if (!strcmp(argv[i], "pages"))
			pages_only = 1;
		else
			div = atoi(argv[i]);
	}
	if (div < 1 || div > 100000)
		return 2;
	if (!pages_only)
		churn_64(3000000 / div);
	pages_4096(200000 / div);
	return 0;
}
