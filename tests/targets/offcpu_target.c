// Off-CPU end-to-end target (tests/e2e/test_offcpu.sh).  A thread "sleeper" runs, three times:
//   sleeper_a : sleeps 300 ms (nanosleep)                        -> >= 900 ms blocked in all
//   blocker_b : waits 100 ms on a futex nobody wakes            -> >= 300 ms blocked in all
// The main thread joins it (blocked for the whole run, in pthread_join), then exits.
// With --runnable instead: two threads "spin1", "spin2" pinned to one CPU spin in spin_c for
// 600 ms each (wall): each waits, runnable, while the other runs.
// Usage: offcpu_target [--wait] [--runnable]   --wait: print READY, block on stdin, then run.
#define _GNU_SOURCE
#include <sched.h>
#include <errno.h>
#include <linux/futex.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#define NOINLINE __attribute__((noinline))

static int never; /* a futex word nobody wakes */

static int64_t mono_ns(void)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	return t.tv_sec * 1000000000LL + t.tv_nsec;
}

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

/* A futex wait by its own syscall instruction: --unwind fp walks from here (through libc's
 * pthread_cond_timedwait or syscall(2) it would lose this frame). */
NOINLINE void blocker_b(void)
{
	int64_t until = mono_ns() + 100 * 1000000LL, left;

	while ((left = until - mono_ns()) > 0) {
		struct timespec t = {.tv_sec = left / 1000000000LL, .tv_nsec = left % 1000000000LL};

		register const struct timespec *r10 __asm__("r10") = &t;
		long ret;

		/* The system call made here: a user stack from blocker_b itself, frame pointers or
		 * not. */
		__asm__ volatile("syscall"
				 : "=a"(ret)
				 : "0"((long)SYS_futex), "D"(&never), "S"((long)FUTEX_WAIT_PRIVATE),
				   "d"(0L), "r"(r10)
				 : "rcx", "r11", "memory");
		(void)ret;
	}
	__asm__ volatile("" ::: "memory");
}

NOINLINE void spin_c(int64_t until)
{
	while (mono_ns() < until)
		__asm__ volatile("" ::: "memory");
}

static void *spinner(void *arg)
{
	char name[16];

	snprintf(name, sizeof(name), "spin%d", (int)(intptr_t)arg);
	pthread_setname_np(pthread_self(), name);
	spin_c(mono_ns() + 600 * 1000000LL);
	return NULL;
}

/* Two spinners sharing the first CPU we may run on. */
static int run_spinners(void)
{
	pthread_attr_t attr;
	pthread_t t[2];
	cpu_set_t all, one;
	int cpu = 0;

	if (sched_getaffinity(0, sizeof(all), &all))
		return 1;
	while (cpu < CPU_SETSIZE && !CPU_ISSET(cpu, &all))
		cpu++;
	CPU_ZERO(&one);
	CPU_SET(cpu, &one);
	if (pthread_attr_init(&attr) || pthread_attr_setaffinity_np(&attr, sizeof(one), &one))
		return 1;
	for (int i = 0; i < 2; i++)
		if (pthread_create(&t[i], &attr, spinner, (void *)(intptr_t)(i + 1)))
			return 1;
	for (int i = 0; i < 2; i++)
		pthread_join(t[i], NULL);
	pthread_attr_destroy(&attr);
	return 0;
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
	int runnable = argc > 1 && !strcmp(argv[argc - 1], "--runnable");
	pthread_t t;

	if (argc > 1 && !strcmp(argv[1], "--wait")) {
		char buf[8];

		printf("READY %d\n", getpid());
		fflush(stdout);
		if (!fgets(buf, sizeof(buf), stdin))
			return 1;
	}
	if (runnable)
		return run_spinners();
	if (pthread_create(&t, NULL, sleeper, NULL))
		return 1;
	pthread_join(t, NULL);
	return 0;
}
