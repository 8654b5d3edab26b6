// `dump` end-to-end target (tests/e2e/test_dump.sh).  Three threads parked in known places:
//   main        : waits in pthread_join below main_waits
//   "napper"    : sleeps in nanosleep (libc's) below wait_here, 1 s at a time, forever
//   "spinner"   : spins in spin_here, forever
// It prints READY once both threads are in place, then runs until killed.
#define _GNU_SOURCE
#include <pthread.h>
#include <stdio.h>
#include <time.h>

#define NOINLINE __attribute__((noinline))

static volatile int napping, spinning;
static volatile unsigned long spins;

NOINLINE void wait_here(void)
{
	struct timespec t = {.tv_sec = 1};

	napping = 1;
	for (;;)
		nanosleep(&t, NULL);
}

NOINLINE void spin_here(void)
{
	spinning = 1;
	for (;;)
		spins++;
}

static void *napper(void *arg)
{
	(void)arg;
	wait_here();
	return NULL;
}

static void *spinner(void *arg)
{
	(void)arg;
	spin_here();
	return NULL;
}

NOINLINE static void main_waits(pthread_t t)
{
	pthread_join(t, NULL);
	__asm__ volatile("" ::: "memory");
}

int main(void)
{
	pthread_t a, b;
	struct timespec ms = {.tv_nsec = 1000000};

	pthread_create(&a, NULL, napper, NULL);
	pthread_setname_np(a, "napper");
	pthread_create(&b, NULL, spinner, NULL);
	pthread_setname_np(b, "spinner");
	while (!napping || !spinning)
		nanosleep(&ms, NULL);
	printf("READY\n");
	fflush(stdout);
	main_waits(a);
	return 0;
}
