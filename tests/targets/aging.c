// Blocks of known ages (tests/e2e/test_leaks.sh, --min-age and the `age` label): keep_old keeps
// 1,000 bytes at start, then 1.5 s later spike holds 100 x 10,000 bytes at once and frees them
// (the process's peak: spike's 1,000,000 and keep_old's 1,000), keep_young keeps 2,000 bytes and
// churn allocates and frees 100 x 64 bytes; then it exits.  At exit keep_old's block is 1.5 s
// old, keep_young's new.
#include <stdlib.h>
#include <unistd.h>

#define NOINLINE __attribute__((noinline))

static void *volatile sink;
static void *kept[2];

NOINLINE void keep_old(void)
{
	kept[0] = malloc(1000);
}

NOINLINE void keep_young(void)
{
	kept[1] = malloc(2000);
}

NOINLINE void spike(void)
{
	void *held[100];

	for (int i = 0; i < 100; i++)
		held[i] = malloc(10000);
	for (int i = 0; i < 100; i++)
		free(held[i]);
}

NOINLINE void churn(void)
{
	for (int i = 0; i < 100; i++) {
		sink = malloc(64);
		free(sink);
	}
}

int main(void)
{
	keep_old();
	usleep(1500000);
	spike();
	keep_young();
	churn();
	return 0;
}
