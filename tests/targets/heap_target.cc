// Heap end-to-end target: every allocation is made by a named noinline function, with exactly
// known counts and sizes (tests/e2e/test_heap.sh asserts them).
//
//   leak_pages      1000 x malloc(4096), kept                        (main thread)
//   churn_small     100000 x malloc(64) then free, on each of 4 threads "worker-N"
//   calloc_kept     50 x calloc(10, 100) = 1000 bytes each, kept
//   realloc_chain   1 block: malloc(100) -> realloc 200 -> 400 -> 800, kept
//   memalign_kept   10 x posix_memalign(64, 512) and 10 x aligned_alloc(256, 1024), kept
//   cxx_new_kept    20 x new std::array<char, 2000>, kept; 30 x new char[300] deleted
//   before_main     3 x malloc(777), kept, from a constructor that runs before main
//
// Usage: heap_target [--wait]   --wait: print READY and block on stdin before starting,
//                               then block again after finishing (for -p attach tests).
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <array>

#define NOINLINE __attribute__((noinline))

static void *volatile sink;
static void *kept[4096];
static int nkept;

static void keep(void *p)
{
	kept[nkept++ % 4096] = p;
}

extern "C" NOINLINE void leak_pages(void)
{
	for (int i = 0; i < 1000; i++)
		keep(malloc(4096));
}

extern "C" NOINLINE void churn_small(void)
{
	for (int i = 0; i < 100000; i++) {
		void *p = malloc(64);
		sink = p;
		free(p);
	}
}

static void *worker(void *arg)
{
	char name[16];

	snprintf(name, sizeof(name), "worker-%ld", (long)arg);
	pthread_setname_np(pthread_self(), name);
	churn_small();
	return NULL;
}

extern "C" NOINLINE void calloc_kept(void)
{
	for (int i = 0; i < 50; i++)
		keep(calloc(10, 100));
}

extern "C" NOINLINE void realloc_chain(void)
{
	void *p = malloc(100);
	p = realloc(p, 200);
	p = realloc(p, 400);
	p = realloc(p, 800);
	keep(p);
}

extern "C" NOINLINE void memalign_kept(void)
{
	for (int i = 0; i < 10; i++) {
		void *p = NULL;
		if (posix_memalign(&p, 64, 512) == 0)
			keep(p);
	}
	for (int i = 0; i < 10; i++)
		keep(aligned_alloc(256, 1024));
}

extern "C" NOINLINE void cxx_new_kept(void)
{
	for (int i = 0; i < 20; i++)
		keep(new std::array<char, 2000>());
	for (int i = 0; i < 30; i++) {
		char *p = new char[300];
		sink = p;
		delete[] p;
	}
}

extern "C" __attribute__((constructor)) NOINLINE void before_main(void)
{
	for (int i = 0; i < 3; i++)
		keep(malloc(777));
}

static void wait_stdin(void)
{
	char buf[16];

	if (!fgets(buf, sizeof(buf), stdin))
		return;
}

int main(int argc, char **argv)
{
	bool wait = argc > 1 && !strcmp(argv[1], "--wait");
	pthread_t th[4];

	if (wait) {
		printf("READY %d\n", getpid());
		fflush(stdout);
		wait_stdin();
	}
	leak_pages();
	for (long i = 0; i < 4; i++)
		pthread_create(&th[i], NULL, worker, (void *)i);
	for (int i = 0; i < 4; i++)
		pthread_join(th[i], NULL);
	calloc_kept();
	realloc_chain();
	memalign_kept();
	cxx_new_kept();
	if (wait) {
		printf("DONE\n");
		fflush(stdout);
		wait_stdin();
	}
	return 0;
}
