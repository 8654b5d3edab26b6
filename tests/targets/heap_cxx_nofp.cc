// C++ heap end-to-end target built without frame pointers (Makefile: *_nofp): operator new
// (libstdc++, no frame pointers either) called from two named functions; test_unwind.sh asserts
// each block is charged to the function that wrote `new`, with main above it:
//
//   make_a   400 x new A (1200 bytes), kept     480 000 bytes
//   make_b   600 x new B (500 bytes), kept      300 000 bytes
//
// Sleeps 1 s first, for the profiler's unwind tables (see heap_nofp.c).  Prints "DONE".
#include <stdio.h>
#include <unistd.h>

#define NOIPA __attribute__((noinline, noipa))

struct A {
	char bytes[1200];
};
struct B {
	char bytes[500];
};

static A *kept_a[400];
static B *kept_b[600];

extern "C" NOIPA void make_a(void)
{
	for (auto &p : kept_a)
		p = new A; // kept in a global: the compiler may not elide the allocation
}

extern "C" NOIPA void make_b(void)
{
	for (auto &p : kept_b)
		p = new B;
}

int main(void)
{
	static_assert(sizeof(A) == 1200 && sizeof(B) == 500, "sizes the test asserts");
	sleep(1);
	make_a();
	make_b();
	printf("DONE %d\n", (void *)kept_a[0] != (void *)kept_b[0]);
	return 0;
}
