// --sample-bytes with realloc and fork (tests/e2e/test_sampling.sh).  Every block ends freed,
// so every in-use value must end at exactly 0.
//
//   realloc_moved   2,000 x malloc(4096), each followed by a fence block (malloc(16) from
//                   fence()), then each realloc'd to 16384 (it must move: the fence is in the
//                   way), then all freed.  No later allocation reuses the 4096-byte addresses,
//                   so a stale record of one is never healed by a reuse.
//   fork_blocks     100 x malloc(1 MiB) kept across a fork; the child frees its copies and
//                   exits, then the parent frees its own.  At 1 MiB every block is sampled
//                   (weight 1.0 in a double) at --sample-bytes 16384: p = 1 - e^-64.
//
// Usage: realloc_fork
#include <stdlib.h>
#include <sys/wait.h>
#include <unistd.h>

#define NOINLINE __attribute__((noinline))

static void *blocks[100];

NOINLINE void *fence(void)
{
	return malloc(16);
}

static char *moved[2000], *fences[2000];

NOINLINE void realloc_moved(void)
{
	for (int i = 0; i < 2000; i++) {
		moved[i] = malloc(4096);
		moved[i][0] = 1;
		fences[i] = fence();
	}
	for (int i = 0; i < 2000; i++) {
		moved[i] = realloc(moved[i], 16384);
		moved[i][16383] = 1;
	}
	for (int i = 0; i < 2000; i++) {
		free(moved[i]);
		free(fences[i]);
	}
}

NOINLINE void fork_blocks(void)
{
	for (int i = 0; i < 100; i++) {
		blocks[i] = malloc(1 << 20);
		((char *)blocks[i])[0] = 1;
	}
}

NOINLINE void free_blocks(void)
{
	for (int i = 0; i < 100; i++)
		free(blocks[i]);
}

int main(void)
{
	pid_t child;
	int status;

	realloc_moved();
	fork_blocks();
	child = fork();
	if (child < 0)
		return 1;
	if (child == 0) {
		free_blocks(); /* the child's copies: not the parent's blocks */
		_exit(0);
	}
	if (waitpid(child, &status, 0) != child || !WIFEXITED(status))
		return 1;
	free_blocks();
	return 0;
}
