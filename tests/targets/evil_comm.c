// A target that names itself with terminal escape sequences, as any unprivileged process may
// (prctl PR_SET_NAME; 15 bytes at most):
//   main thread, comm ESC "]0;pwn" BEL ESC "[31m" "é": an OSC title change, red, then UTF-8
//                that must stay; spins in spin_here
//   thread, comm "nap" U+009B "2J" 0xff: the C1 CSI ("clear the screen") and a byte that is not
//                UTF-8; sleeps in nap_here
// The summary, the text report, `dump` and the live view print comm: escaped, as \xNN.
// Usage: evil_comm [SECONDS]  (default 30); prints "READY PID" once both names are set.
#define _GNU_SOURCE
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/prctl.h>
#include <time.h>
#include <unistd.h>

#define NOINLINE __attribute__((noinline))

static volatile unsigned long sink;

static NOINLINE void nap_here(void)
{
	struct timespec ts = {.tv_sec = 1};

	for (;;)
		nanosleep(&ts, NULL);
}

static void *napper(void *arg)
{
	prctl(PR_SET_NAME, "nap\xc2\x9b" "2J\xff");
	nap_here();
	return arg;
}

static NOINLINE void spin_here(time_t end)
{
	while (time(NULL) < end)
		for (unsigned long i = 0; i < 1000000; i++)
			sink = sink * 6364136223846793005UL + 1442695040888963407UL;
}

int main(int argc, char **argv)
{
	time_t end = time(NULL) + (argc > 1 ? atoi(argv[1]) : 30);
	pthread_t t;

	if (prctl(PR_SET_NAME, "\x1b]0;pwn\x07\x1b[31m\xc3\xa9"))
		return 1;
	if (pthread_create(&t, NULL, napper, NULL))
		return 1;
	usleep(100000); /* the thread names itself */
	printf("READY %d\n", getpid());
	fflush(stdout);
	spin_here(end);
	return 0;
}
