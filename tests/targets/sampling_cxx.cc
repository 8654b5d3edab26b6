// --sample-bytes with C++ (tests/e2e/test_sampling.sh): every allocation goes through operator
// new, which calls malloc (new[] jumps to new first), so one allocation is two or three probed
// calls on one thread.  Known counts and sizes, on the main thread:
//
//   cxx_churn_64    1,000,000 x new char[64], each deleted at once     (64,000,000 bytes)
//   cxx_pages_4096    100,000 x new Page (4096 bytes), 1 in 10 kept    (409,600,000 bytes)
//
// Usage: sampling_cxx [--wait] [DIVISOR]
//   --wait: print READY and block on stdin before starting, then block again after finishing
//   (for -p attach tests); DIVISOR: each count divided by it (100: 10,000 and 1,000, 100 kept).
#include <cstddef>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <unistd.h>

#define NOINLINE __attribute__((noinline))

struct Page {
	char bytes[4096];
};

static char *volatile sink;
static Page *kept[10000];

extern "C" NOINLINE void cxx_churn_64(int n)
{
	for (int i = 0; i < n; i++) {
		char *p = new char[64];

		p[0] = 1;
		sink = p; /* escapes: the pair cannot be optimised away */
		delete[] p;
	}
}

extern "C" NOINLINE void cxx_pages_4096(int n)
{
	for (int i = 0; i < n; i++) {
		Page *p = new Page;

		p->bytes[0] = 1;
		sink = p->bytes;
		if (i % 10 == 9)
			kept[i / 10] = p;
		else
			delete p;
	}
}

static void wait_stdin(void)
{
	char buf[16];

	if (!fgets(buf, sizeof(buf), stdin))
		return;
}

int main(int argc, char **argv)
{
	bool wait = false;
	int div = 1;

	for (int i = 1; i < argc; i++) {
		if (!strcmp(argv[i], "--wait"))
			wait = true;
		else
			div = atoi(argv[i]);
	}
	if (div < 1 || div > 100000)
		return 2;
	if (wait) {
		printf("READY %d\n", getpid());
		fflush(stdout);
		wait_stdin();
	}
	cxx_churn_64(1000000 / div);
	cxx_pages_4096(100000 / div);
	if (wait) {
		printf("DONE\n");
		fflush(stdout);
		wait_stdin();
	}
	return 0;
}
