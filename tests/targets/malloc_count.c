// Exactly MALLOCS malloc(64), CALLOCS calloc(1, 64) and ALIGNED posix_memalign(64, 64) calls
// after its gate, nothing else
// (tests/unit/test_uprobe_multi.c counts them from BPF): the first calls' lazy set-up happens
// before it says "ready"; after the gate no stdio, no exit handlers (_exit).
//
// Usage: malloc_count MALLOCS CALLOCS [ALIGNED]  (prints "ready", then reads one byte from
// stdin); exit status 3 when an allocation fails or comes back misaligned.
#include <stdlib.h>
#include <unistd.h>

static void *volatile sink;
/* Through volatile pointers: the compiler may not fold a malloc + free pair away. */
static void *(*volatile do_malloc)(size_t) = malloc;
static void *(*volatile do_calloc)(size_t, size_t) = calloc;
static int (*volatile do_memalign)(void **, size_t, size_t) = posix_memalign;
static void (*volatile do_free)(void *) = free;

int main(int argc, char **argv)
{
	long mallocs, callocs, aligned = 0;
	void *p;
	char c;

	if (argc != 3 && argc != 4)
		return 2;
	mallocs = atol(argv[1]);
	callocs = atol(argv[2]);
	if (argc == 4)
		aligned = atol(argv[3]);
	do_free(do_malloc(64));
	do_free(do_calloc(1, 64));
	if (do_memalign(&p, 64, 64))
		return 3;
	do_free(p);
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
	for (long i = 0; i < aligned; i++) {
		/* A return probe that broke the return (address or value) shows here. */
		if (do_memalign(&p, 64, 64) || !p || ((unsigned long)p & 63))
			_exit(3);
		do_free(p);
	}
	_exit(0);
}
