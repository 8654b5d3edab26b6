// CPU end-to-end target built without frame pointers (Makefile: *_nofp), for the .eh_frame
// unwinder; tests/e2e/test_unwind.sh checks:
//   main thread "split":  main -> work -> hot_a / hot_b alternately; hot_a runs the same loop 3x
//                         as many times as hot_b, so it gets 3x the samples
//   thread "syscaller":   syscaller -> in_syscall, a loop on glibc's syscall(SYS_getppid): the
//                         samples in the kernel sit on top of glibc's syscall() and its caller
// Usage: cpu_nofp [ROUNDS]  (default 300 rounds of hot_a + hot_b, about 3 s of CPU here): a fixed
// amount of work, so the number of samples does not depend on how loaded the machine is.
// Sleeps 1 s first (not sampled), so the profiler's unwind tables for the files it maps are ready
// before the work starts.
#define _GNU_SOURCE
#include <pthread.h>
#include <stdlib.h>
#include <sys/syscall.h>
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

NOIPA void work(long rounds)
{
	for (long i = 0; i < rounds; i++) {
		hot_a();
		hot_b();
	}
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
	long rounds = argc > 1 ? atol(argv[1]) : 300;
	pthread_t t;

	sleep(1);
	pthread_setname_np(pthread_self(), "split");
	if (pthread_create(&t, NULL, syscaller, NULL))
		return 1;
	work(rounds);
	stop = 1;
	pthread_join(t, NULL);
	return 0;
}
