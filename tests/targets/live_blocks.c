// Holds live blocks, for the per-process caps of the heap profiler (tests/e2e/test_caps.sh).
// Prints "READY pid" and waits for a line on stdin; then keep_blocks makes N malloc(64) blocks,
// free_blocks frees them all, keep_again makes M more and keeps them; prints "DONE" and waits
// for another line, then exits without freeing.  No other allocation after the first line.
//
// Usage: live_blocks N M
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#define MAX_BLOCKS 100000

static void *blocks[MAX_BLOCKS];
/* Through volatile pointers: the compiler may not fold a malloc + free pair away. */
static void *(*volatile do_malloc)(size_t) = malloc;
static void (*volatile do_free)(void *) = free;

__attribute__((noinline)) static void keep_blocks(long n)
{
	for (long i = 0; i < n; i++)
		if (!(blocks[i] = do_malloc(64)))
			_exit(3);
}

__attribute__((noinline)) static void free_blocks(long n)
{
	for (long i = 0; i < n; i++)
		do_free(blocks[i]);
}

__attribute__((noinline)) static void keep_again(long n)
{
	for (long i = 0; i < n; i++)
		if (!(blocks[i] = do_malloc(64)))
			_exit(3);
}

int main(int argc, char **argv)
{
	char line[16];
	long n, m;

	if (argc != 3)
		return 2;
	n = atol(argv[1]);
	m = atol(argv[2]);
	if (n < 0 || m < 0 || n > MAX_BLOCKS || m > MAX_BLOCKS)
		return 2;
	/* stdio's buffers now, before the profiler attaches */
	printf("READY %d\n", (int)getpid());
	fflush(stdout);
	if (!fgets(line, sizeof(line), stdin))
		return 1;
	keep_blocks(n);
	free_blocks(n);
	keep_again(m);
	if (write(1, "DONE\n", 5) != 5 || read(0, line, 1) < 0)
		_exit(1);
	_exit(0);
}
