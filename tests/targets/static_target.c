// A statically linked program: its allocator lives in the executable itself, not in a libc.so.
//   static_leak   200 x malloc(1000), kept
//   static_churn  5000 x malloc(32) then free
// Usage: static_target [--wait]   (--wait: print READY, block on stdin, run, print DONE, block)
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define NOINLINE __attribute__((noinline))

static void *volatile sink;
static void *kept[200];

NOINLINE void static_leak(void)
{
	for (int i = 0; i < 200; i++)
		kept[i] = malloc(1000);
}

NOINLINE void static_churn(void)
{
	for (int i = 0; i < 5000; i++) {
		void *p = malloc(32);

		sink = p;
		free(p);
	}
}

int main(int argc, char **argv)
{
	int wait = argc > 1 && !strcmp(argv[1], "--wait");
	char buf[8];

	if (wait) {
		printf("READY %d\n", (int)getpid());
		fflush(stdout);
		if (!fgets(buf, sizeof(buf), stdin))
			return 1;
	}
	static_leak();
	static_churn();
	if (wait) {
		printf("DONE\n");
		fflush(stdout);
		if (!fgets(buf, sizeof(buf), stdin))
			return 1;
	}
	return 0;
}
