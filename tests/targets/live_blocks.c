// Holds live blocks, for the per-process caps of the heap profiler (tests/e2e/test_caps.sh).
// Prints "READY pid" and waits for a line on stdin; then keep_blocks makes N malloc(64) blocks,
// free_blocks frees them all, keep_again makes M more and keeps them; prints "DONE" and waits
// for another line, then exits without freeing.  No other allocation after the first line.
// With -x: no waits, no output, nothing allocated but those blocks; given N2 M2, it then execs
// itself (`live_blocks -x N2 M2`) with its blocks still live.
//
// Usage: live_blocks N M | live_blocks -x N M [N2 M2]
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
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

static int run(long n, long m)
{
	if (n < 0 || m < 0 || n > MAX_BLOCKS || m > MAX_BLOCKS)
		_exit(2);
	keep_blocks(n);
	free_blocks(n);
	keep_again(m);
	return 0;
}

int main(int argc, char **argv)
{
	char line[16];

	if (argc >= 4 && !strcmp(argv[1], "-x")) {
		char *again[] = {argv[0], "-x", argv[4], argv[5], NULL};

		run(atol(argv[2]), atol(argv[3]));
		if (argc == 6)
			execv("/proc/self/exe", again);
		_exit(argc == 4 ? 0 : 2);
	}
	if (argc != 3)
		return 2;
	/* stdio's buffers now, before the profiler attaches */
	printf("READY %d\n", (int)getpid());
	fflush(stdout);
	if (!fgets(line, sizeof(line), stdin))
		return 1;
	run(atol(argv[1]), atol(argv[2]));
	if (write(1, "DONE\n", 5) != 5 || read(0, line, 1) < 0)
		_exit(1);
	_exit(0);
}
