// CPU end-to-end target built without frame pointers (Makefile: *_nofp), for the .eh_frame
// unwinder; tests/e2e/test_unwind.sh checks:
//   main thread "split":  main -> work -> hot_a / hot_b alternately; hot_a runs the same loop 3x
//                         as many times as hot_b, so it gets 3x the samples
//   thread "syscaller":   syscaller -> in_syscall, a loop on glibc's syscall(SYS_getppid): the
//                         samples in the kernel sit on top of glibc's syscall() and its caller
// Usage: cpu_nofp [SECONDS]  (default 3).  Sleeps 1 s first (not sampled), so the profiler's
// unwind tables for the files it maps are ready before the work starts.
#define _GNU_SOURCE
#include <pthread.h>
#include <stdlib.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#define NOIPA __attribute__((noinline, noipa))

static volatile int stop;
static volatile unsigned long sink;

static inline void spin(unsigned long n)
{
	unsigned long x = sink;

	for (unsigned long i = 0; i < n; i++)
		x = x * 6364136223846793005UL + 1442695040888963407UL;
	sink = x;
}

NOIPA void hot_a(void)
{
	spin(3 * 2000000UL);
}

NOIPA void hot_b(void)
{
	spin(2000000UL);
}

NOIPA void work(double secs)
{
	struct timespec t0, t;

	clock_gettime(CLOCK_MONOTONIC, &t0);
	do {
		hot_a();
		hot_b();
		clock_gettime(CLOCK_MONOTONIC, &t);
	} while ((t.tv_sec - t0.tv_sec) + (t.tv_nsec - t0.tv_nsec) / 1e9 < secs);
}

NOIPA void in_syscall(void)
{
	while (!stop)
		syscall(SYS_getppid);
}

static void *syscaller(void *arg)
{
	pthread_setname_np(pthread_self(), "syscaller");
	in_syscall();
	return NULL;
}

int main(int argc, char **argv)
{
	double secs = argc > 1 ? atof(argv[1]) : 3.0;
	pthread_t t;

	sleep(1);
	pthread_setname_np(pthread_self(), "split");
	if (pthread_create(&t, NULL, syscaller, NULL))
		return 1;
	work(secs);
	stop = 1;
	pthread_join(t, NULL);
	return 0;
}
