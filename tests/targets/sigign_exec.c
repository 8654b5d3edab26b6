// Run a command with signals ignored the way a foreign launcher may leave them: the two
// signals glibc reserves for itself (32, 33), which glibc's own signal() and sigaction()
// refuse to change, a real-time one (40) and SIGHUP.
// Usage: sigign_exec CMD [ARG...]
#define _GNU_SOURCE
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <sys/syscall.h>
#include <unistd.h>

int main(int argc, char **argv)
{
	static const int sigs[] = {SIGHUP, 32, 33, 40};
	struct {
		void (*handler)(int);
		unsigned long flags;
		void (*restorer)(void);
		uint64_t mask;
	} ign = {.handler = SIG_IGN};

	if (argc < 2)
		return 2;
	for (unsigned i = 0; i < sizeof(sigs) / sizeof(sigs[0]); i++)
		if (syscall(SYS_rt_sigaction, sigs[i], &ign, NULL, sizeof(ign.mask)))
			return perror("rt_sigaction"), 1;
	execvp(argv[1], argv + 1);
	perror("execvp");
	return 127;
}
