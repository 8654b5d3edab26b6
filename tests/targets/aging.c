// Blocks of known ages (tests/e2e/test_heap.sh, --min-age and the `age` label): keep_old keeps
// 1,000 bytes at start, then 1.5 s later keep_young keeps 2,000 bytes and churn allocates and
// frees 100 x 64 bytes; then it exits.  At exit keep_old's block is 1.5 s old, keep_young's new.
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
	keep_young();
	churn();
	return 0;
}
