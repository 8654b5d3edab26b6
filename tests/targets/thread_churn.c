// Many short threads one after another (tests/e2e/test_sampling.sh): more threads than the
// per-thread BPF maps hold, so their entries must go when the threads exit.
//
//   thread_alloc   20,000 threads, each malloc(100) + free once, one after another
//
// Usage: thread_churn
#include <pthread.h>
#include <stdlib.h>

#define NOINLINE __attribute__((noinline))

static void *volatile sink;

NOINLINE void thread_alloc(void)
{
	void *p = malloc(100);

	sink = p;
	free(p);
}

static void *run(void *arg)
{
	(void)arg;
	thread_alloc();
	return NULL;
}

int main(void)
{
	for (int i = 0; i < 20000; i++) {
		pthread_t t;

		if (pthread_create(&t, NULL, run, NULL))
			return 1;
		pthread_join(t, NULL);
	}
	return 0;
}
