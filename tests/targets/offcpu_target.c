// Off-CPU end-to-end target (tests/e2e/test_offcpu.sh).  A thread "sleeper" runs, three times:
//   sleeper_a : sleeps 300 ms (nanosleep)                        -> >= 900 ms blocked in all
//   blocker_b : waits 100 ms on a condition nobody signals (futex) -> >= 300 ms blocked in all
// The main thread joins it (blocked for the whole run, in pthread_join), then exits.
// Usage: offcpu_target [--wait]   --wait: print READY, block on stdin, then run.
#define _GNU_SOURCE
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define NOINLINE __attribute__((noinline))

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t never = PTHREAD_COND_INITIALIZER;

/* Sleep ms milliseconds, whatever signals interrupt it. */
static NOINLINE void sleep_ms(long ms)
{
	struct timespec left = {.tv_sec = ms / 1000, .tv_nsec = (ms % 1000) * 1000000L};

	while (nanosleep(&left, &left) && errno == EINTR)
		;
}

NOINLINE void sleeper_a(void)
{
	sleep_ms(300);
	__asm__ volatile("" ::: "memory"); /* keep the call a call, not a tail jump */
}

NOINLINE void blocker_b(void)
{
	struct timespec until;

	clock_gettime(CLOCK_REALTIME, &until);
	until.tv_nsec += 100 * 1000000L;
	if (until.tv_nsec >= 1000000000L) {
		until.tv_sec++;
		until.tv_nsec -= 1000000000L;
	}
	pthread_mutex_lock(&lock);
	while (pthread_cond_timedwait(&never, &lock, &until) != ETIMEDOUT)
		;
	pthread_mutex_unlock(&lock);
	__asm__ volatile("" ::: "memory");
}

static void *sleeper(void *arg)
{
	(void)arg;
	pthread_setname_np(pthread_self(), "sleeper");
	for (int i = 0; i < 3; i++) {
		sleeper_a();
		blocker_b();
	}
	return NULL;
}

int main(int argc, char **argv)
{
	pthread_t t;

	if (argc > 1 && !strcmp(argv[1], "--wait")) {
		char buf[8];

		printf("READY %d\n", getpid());
		fflush(stdout);
		if (!fgets(buf, sizeof(buf), stdin))
			return 1;
	}
	if (pthread_create(&t, NULL, sleeper, NULL))
		return 1;
	pthread_join(t, NULL);
	return 0;
}
