// A process that lives a few milliseconds: 10 x 1000 bytes from short_alloc, kept, then exit.
#include <stdlib.h>
#include <string.h>

#define NOINLINE __attribute__((noinline))

static void *keep[10];

NOINLINE void short_alloc(void)
{
	for (int i = 0; i < 10; i++) {
		keep[i] = malloc(1000);
		memset(keep[i], 3, 1000);
	}
}

int main(void)
{
	short_alloc();
	return keep[0] == keep[9];
}
