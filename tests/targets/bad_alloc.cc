// A std::bad_alloc thrown by operator new must still unwind and be caught while --heap probes
// operator new (tests/e2e/test_heap.sh).  Prints "caught" and exits 0.
//
//   huge_new      1 x new char[1 << 62]: fails, throws std::bad_alloc, caught here
//   after_throw   10 x new char[1000], kept: allocations after the throw are still counted
//
// Usage: bad_alloc
#include <cstdio>
#include <new>

#define NOINLINE __attribute__((noinline))

static char *volatile sink;
static char *volatile kept[10]; /* volatile: the allocations cannot be elided */

extern "C" NOINLINE int huge_new(void)
{
	try {
		sink = new char[(size_t)1 << 62];
	} catch (const std::bad_alloc &) {
		return 1;
	}
	return 0;
}

extern "C" NOINLINE void after_throw(void)
{
	for (int i = 0; i < 10; i++)
		kept[i] = new char[1000];
}

int main(void)
{
	if (!huge_new()) {
		puts("no exception");
		return 1;
	}
	puts("caught");
	after_throw();
	return 0;
}
