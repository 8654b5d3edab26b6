// CPU end-to-end target.  Runs for SECONDS (default 3), then exits:
#define _GNU_SOURCE
//   main thread "split"  : alternates hot_three (3 units of work) and hot_one (1 unit)
//   thread "spinner"     : spins in spin_other
//   thread "syscaller"   : loops on a cheap system call in syscall_loop (kernel frames)
// Usage: cpu_target [SECONDS] [--wait]   --wait: print READY, block on stdin, then run.
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#define NOINLINE __attribute__((noinline))

static volatile int stop;
static volatile unsigned long sink;

/* One unit of work: about 2.5 ms on our machines. */
#define UNIT 2000000UL

static NOINLINE void work(unsigned long n)
{
	unsigned long x = sink;

	for (unsigned long i = 0; i < n; i++)
		x = x * 6364136223846793005UL + 1442695040888963407UL;
	sink = x;
}

NOINLINE void hot_three(unsigned long n)
{
	work(3 * n);
	__asm__ volatile("" ::: "memory"); /* keep the call a call, not a tail jump */
}

NOINLINE void hot_one(unsigned long n)
{
	work(n);
	__asm__ volatile("" ::: "memory");
}

NOINLINE void spin_other(void)
{
	while (!stop)
		work(UNIT);
}

NOINLINE void syscall_loop(void)
{
	while (!stop)
		syscall(SYS_getppid);
}

static void *spinner(void *arg)
{
	pthread_setname_np(pthread_self(), "spinner");
	spin_other();
	return NULL;
}

static void *syscaller(void *arg)
{
	pthread_setname_np(pthread_self(), "syscaller");
	syscall_loop();
	return NULL;
}

int main(int argc, char **argv)
{
	double secs = argc > 1 ? atof(argv[1]) : 3.0;
	struct timespec t0, t;
	pthread_t a, b;
	unsigned long seed = 1;

	if (argc > 2 && !strcmp(argv[2], "--wait")) {
		char buf[8];

		printf("READY %d\n", getpid());
		fflush(stdout);
		if (!fgets(buf, sizeof(buf), stdin))
			return 1;
	}
	pthread_setname_np(pthread_self(), "split");
	pthread_create(&a, NULL, spinner, NULL);
	pthread_create(&b, NULL, syscaller, NULL);
	clock_gettime(CLOCK_MONOTONIC, &t0);
	/*
	 * Each round's length is drawn anew (hot_one 0.1 to 0.5 units, hot_three three times as
	 * many: 0.4 to 2 units a round, 3:1 within it): a round of fixed length (4 units, 10 ms)
	 * beat against the 99 Hz sampling period (10.1 ms), and the samples could stay on one
	 * function for a second at a time.
	 */
	do {
		unsigned long n;

		seed = seed * 6364136223846793005UL + 1442695040888963407UL;
		n = UNIT / 10 + (seed >> 33) % (UNIT * 4 / 10);
		hot_three(n);
		hot_one(n);
		clock_gettime(CLOCK_MONOTONIC, &t);
	} while ((t.tv_sec - t0.tv_sec) + (t.tv_nsec - t0.tv_nsec) / 1e9 < secs);
	stop = 1;
	pthread_join(a, NULL);
	pthread_join(b, NULL);
	return 0;
}
