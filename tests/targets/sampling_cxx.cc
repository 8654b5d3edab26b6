// --sample-bytes with C++ (tests/e2e/test_sampling.sh): every allocation goes through operator
// new, which calls malloc (new[] jumps to new first), so one allocation is two or three probed
// calls on one thread.  Known counts and sizes, on the main thread:
//
//   cxx_churn_64    1,000,000 x new char[64], each deleted at once     (64,000,000 bytes)
//   cxx_pages_4096    100,000 x new Page (4096 bytes), 1 in 10 kept    (409,600,000 bytes)
//
// Usage: sampling_cxx
#include <cstddef>

#define NOINLINE __attribute__((noinline))

struct Page {
	char bytes[4096];
};

static char *volatile sink;
static Page *kept[10000];

extern "C" NOINLINE void cxx_churn_64(void)
{
	for (int i = 0; i < 1000000; i++) {
		char *p = new char[64];

		p[0] = 1;
		sink = p; /* escapes: the pair cannot be optimised away */
		delete[] p;
	}
}

extern "C" NOINLINE void cxx_pages_4096(void)
{
	for (int i = 0; i < 100000; i++) {
		Page *p = new Page;

		p->bytes[0] = 1;
		sink = p->bytes;
		if (i % 10 == 9)
			kept[i / 10] = p;
		else
			delete p;
	}
}

int main(void)
{
	cxx_churn_64();
	cxx_pages_4096();
	return 0;
}
