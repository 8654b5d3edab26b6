// A fork whose child allocates after its parent's (tests/e2e/test_otel.sh: a wide scope's
// allocators probed per process follow a fork).
//
//   child_kept   300 x malloc(10000) in the child, kept until it exits.
//
// Prints "READY <pid>", waits for a line, forks; the child prints "CHILD <pid>", waits for a
// line, allocates, prints "DONE" and waits for a line before it exits; the parent waits for it.
#include <stdio.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <unistd.h>

#define NOINLINE __attribute__((noinline))

static void *kept[300];

NOINLINE void child_kept(void)
{
	for (int i = 0; i < 300; i++)
		kept[i] = malloc(10000);
}

static void wait_line(void)
{
	char line[64];

	if (!fgets(line, sizeof(line), stdin))
		exit(1);
}

int main(void)
{
	pid_t pid;

	setvbuf(stdout, NULL, _IONBF, 0);
	printf("READY %d\n", getpid());
	wait_line();
	pid = fork();
	if (pid < 0)
		return 1;
	if (pid == 0) {
		printf("CHILD %d\n", getpid());
		wait_line();
		child_kept();
		printf("DONE\n");
		wait_line();
		return 0;
	}
	return waitpid(pid, NULL, 0) == pid ? 0 : 1;
}
