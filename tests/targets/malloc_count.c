// Exactly MALLOCS malloc(64) and CALLOCS calloc(1, 64) calls after its gate, nothing else
// (tests/unit/test_uprobe_multi.c counts them from BPF): the first calls' lazy set-up happens
// before it says "ready"; after the gate no stdio, no exit handlers (_exit).
//
// Usage: malloc_count MALLOCS CALLOCS  (prints "ready", then reads one byte from stdin)
#include <stdlib.h>
#include <unistd.h>

static void *volatile sink;
/* Through volatile pointers: the compiler may not fold a malloc + free pair away. */
static void *(*volatile do_malloc)(size_t) = malloc;
static void *(*volatile do_calloc)(size_t, size_t) = calloc;
static void (*volatile do_free)(void *) = free;

int main(int argc, char **argv)
{
	long mallocs, callocs;
	char c;

	if (argc != 3)
		return 2;
	mallocs = atol(argv[1]);
	callocs = atol(argv[2]);
	do_free(do_malloc(64));
	do_free(do_calloc(1, 64));
	if (write(1, "ready\n", 6) != 6 || read(0, &c, 1) != 1)
		_exit(1);
	for (long i = 0; i < mallocs; i++) {
		sink = do_malloc(64);
		do_free(sink);
	}
	for (long i = 0; i < callocs; i++) {
		sink = do_calloc(1, 64);
		do_free(sink);
	}
	_exit(0);
}
