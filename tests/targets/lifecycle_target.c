// Process-lifecycle end-to-end target: exactly known allocations around exec, fork, exit and
// a leader thread that leaves first.  Every allocation is made by a named noinline function.
//
//   leader-exit N    prints "READY pid worker_tid"; after a line on stdin the main thread
//                    pthread_exit()s; the worker waits until the leader is a zombie, prints
//                    LEADER-GONE, and after another line makes N malloc(100) (kept) in
//                    worker_alloc, prints DONE, and exits after a third line.
//   exec-after N PROG [ARG...]   N malloc(64) (kept) in first_image_alloc, prints READY,
//                    then execv(PROG) after a line on stdin.
//   exec-wait PROG [ARG...]      prints READY, execv(PROG) after a line on stdin.
//   fork-exit        forks a child that exits at once, reaps it, prints "CHILD pid", then
//                    sleeps until a signal ends it.
//   reuser           forks a child that sleeps ("GRANDCHILD pid"), makes 10 malloc(48) (kept)
//                    in reuser_alloc, prints DONE, and sleeps until a signal ends it.
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#define NOINLINE __attribute__((noinline))

static void *volatile sink;
static int go_pipe[2];
static pid_t leader;
static long count;

static NOINLINE void keep(void *p)
{
	sink = p;
}

static NOINLINE void worker_alloc(long n)
{
	for (long i = 0; i < n; i++)
		keep(malloc(100));
}

static NOINLINE void first_image_alloc(long n)
{
	for (long i = 0; i < n; i++)
		keep(malloc(64));
}

static NOINLINE void reuser_alloc(long n)
{
	for (long i = 0; i < n; i++)
		keep(malloc(48));
}

static void wait_line(void)
{
	char line[64];

	if (!fgets(line, sizeof(line), stdin))
		exit(3);
}

/* State letter of the leader thread ('Z' once it has left with pthread_exit). */
static char leader_state(void)
{
	char path[64], buf[256], *p;
	FILE *f;
	size_t n;

	snprintf(path, sizeof(path), "/proc/self/task/%d/stat", (int)leader);
	f = fopen(path, "r");
	if (!f)
		return 'X';
	n = fread(buf, 1, sizeof(buf) - 1, f);
	fclose(f);
	buf[n] = 0;
	p = strrchr(buf, ')');
	return p && p[1] ? p[2] : '?';
}

static void *worker(void *arg)
{
	char b;

	(void)arg;
	if (read(go_pipe[0], &b, 1) != 1)
		exit(4);
	for (int i = 0; i < 1000 && leader_state() != 'Z'; i++)
		usleep(10000);
	if (leader_state() != 'Z')
		exit(5);
	printf("LEADER-GONE\n");
	fflush(stdout);
	wait_line();
	worker_alloc(count);
	printf("DONE\n");
	fflush(stdout);
	wait_line();
	exit(0);
}

static int leader_exit(long n)
{
	pthread_t t;

	count = n;
	leader = getpid();
	if (pipe(go_pipe) || pthread_create(&t, NULL, worker, NULL))
		return 1;
	/* The worker's tid, from the thread itself, is not portable: read it from /proc. */
	for (int i = 0; i < 100; i++) {
		char cmd[128];
		FILE *f;
		int tid = 0;

		snprintf(cmd, sizeof(cmd), "ls /proc/%d/task | grep -vx %d", (int)leader,
			 (int)leader);
		f = popen(cmd, "r");
		if (f && fscanf(f, "%d", &tid) == 1 && tid > 0) {
			pclose(f);
			printf("READY %d %d\n", (int)leader, tid);
			fflush(stdout);
			break;
		}
		if (f)
			pclose(f);
		usleep(10000);
	}
	wait_line();
	if (write(go_pipe[1], "g", 1) != 1)
		return 1;
	pthread_exit(NULL);
}

int main(int argc, char **argv)
{
	if (argc >= 3 && !strcmp(argv[1], "leader-exit"))
		return leader_exit(atol(argv[2]));
	if (argc >= 4 && !strcmp(argv[1], "exec-after")) {
		first_image_alloc(atol(argv[2]));
		printf("READY\n");
		fflush(stdout);
		wait_line();
		execv(argv[3], &argv[3]);
		perror("execv");
		return 127;
	}
	if (argc >= 3 && !strcmp(argv[1], "exec-wait")) {
		printf("READY\n");
		fflush(stdout);
		wait_line();
		execv(argv[2], &argv[2]);
		perror("execv");
		return 127;
	}
	if (argc >= 2 && !strcmp(argv[1], "fork-exit")) {
		pid_t c = fork();

		if (c == 0)
			_exit(0);
		if (c < 0 || waitpid(c, NULL, 0) != c)
			return 1;
		printf("CHILD %d\n", (int)c);
		fflush(stdout);
		for (;;)
			pause();
	}
	if (argc >= 2 && !strcmp(argv[1], "reuser")) {
		pid_t c = fork();

		if (c == 0) {
			/* Gone with its parent: a failed test leaves nothing behind. */
			prctl(PR_SET_PDEATHSIG, SIGKILL);
			for (;;)
				pause();
		}
		printf("GRANDCHILD %d\n", (int)c);
		reuser_alloc(10);
		printf("DONE\n");
		fflush(stdout);
		for (;;)
			pause();
	}
	fprintf(stderr, "usage: see the comment at the top of lifecycle_target.c\n");
	return 2;
}
