// Four threads that do nothing but malloc and free, for a while (tests/e2e/test_scope.sh): at
// any instant some thread is inside an allocator call, so a process moved into a cgroup by
// writing cgroup.procs is caught mid-call.
//
//   churn   malloc(64..4159) + free, over and over, until the time is up
//
// Usage: malloc_threads SECONDS
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#define NOINLINE __attribute__((noinline))
#define NTHREADS 4

static void *volatile sink;
static time_t until;

NOINLINE void churn(unsigned i)
{
	void *p = malloc(64 + (i & 4095));

	sink = p;
	free(p);
}

static void *run(void *arg)
{
	(void)arg;
	for (unsigned i = 0; time(NULL) < until; i++)
		churn(i);
	return NULL;
}

int main(int argc, char **argv)
{
	pthread_t t[NTHREADS];

	if (argc != 2) {
		fprintf(stderr, "usage: malloc_threads SECONDS\n");
		return 2;
	}
	until = time(NULL) + atoi(argv[1]);
	for (int i = 0; i < NTHREADS; i++)
		if (pthread_create(&t[i], NULL, run, NULL))
			return 1;
	for (int i = 0; i < NTHREADS; i++)
		pthread_join(t[i], NULL);
	return 0;
}
