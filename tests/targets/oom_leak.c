// Leaks until the OOM killer ends it (tests/e2e/test_oom.sh): leak_block allocates one block of
// SIZE bytes (argv[1], default 65536) and writes to every byte, then the block count is written
// to stdout ("N\n", one write each): the truth, to at most the one block being filled when the
// kill came.  With argv[2], it first waits for that file to exist (a container started before
// the profiler attaches to it).
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define NOINLINE __attribute__((noinline))

static void *volatile sink;

NOINLINE void *leak_block(size_t size)
{
	void *p = malloc(size);

	if (p)
		memset(p, 0x5a, size);
	return p;
}

int main(int argc, char **argv)
{
	size_t size = argc > 1 ? strtoul(argv[1], NULL, 0) : 65536;
	unsigned long n = 0;
	char line[32];

	while (argc > 2 && access(argv[2], F_OK))
		usleep(10000);
	for (;;) {
		int len;

		sink = leak_block(size);
		if (!sink)
			return 1;
		len = snprintf(line, sizeof(line), "%lu\n", ++n);
		if (write(1, line, (size_t)len) != len)
			return 1;
	}
}
