// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * otel_memory probes on 5-byte nops, the two ways Linux 6.18 breaks a program whose uprobe on
 * such a nop it has turned into a call (the "optimized" uprobe):
 *   - leaf() keeps data in its red zone (the 128 bytes below %rsp a leaf may use without moving
 *     %rsp) across its alloc probe: the call pushes a return address there;
 *   - a child forked after the sites were turned runs into them and dies of SIGSEGV.
 * So the profiler does not attach to nop5 sites.  Built by the _nofp rule (no frame pointer:
 * leaf() spills nothing of its own below %rsp).  Prints "corrupt X of N, child Y" (Y: 0, or the
 * signal that killed the child) and exits 1 when either is non-zero.
 *
 *   otel_nop5_nofp [N]   (default 20000; reads a line from stdin first: a gate for -p)
 */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/sdt.h>
#include <sys/wait.h>
#include <unistd.h>

#undef _SDT_NOP
#define _SDT_NOP .nops 5

#define PATTERN 0x5a5a5a5aUL

/* 0 if the red zone kept what was put there across the probe. */
__attribute__((noinline)) static int leaf(void *p, unsigned long size)
{
	unsigned long v, bad = 0;

	asm volatile("movq %0, -8(%%rsp)\n\t"
		     "movq %0, -16(%%rsp)\n\t"
		     "movq %0, -32(%%rsp)\n\t"
		     "movq %0, -64(%%rsp)\n\t"
		     "movq %0, -128(%%rsp)" ::"i"(PATTERN)
		     : "memory");
	STAP_PROBE3(otel_memory, alloc, p, size, size);
#define CHECK(off)                                                    \
	asm volatile("movq " #off "(%%rsp), %0" : "=r"(v)::"memory"); \
	bad += v != PATTERN
	CHECK(-8);
	CHECK(-16);
	CHECK(-32);
	CHECK(-64);
	CHECK(-128);
	return bad != 0;
}

__attribute__((noinline)) static void release(void *p)
{
	STAP_PROBE1(otel_memory, free, p);
	free(p);
}

int main(int argc, char **argv)
{
	long n = argc > 1 ? atol(argv[1]) : 20000, corrupt = 0;
	int status = 0, child_sig = 0;
	pid_t child;

	if (getchar() == EOF) {
		/* no gate: run all the same */
	}
	for (long i = 0; i < n; i++) {
		void *p = malloc(64);

		corrupt += leaf(p, 64);
		release(p);
	}
	child = fork();
	if (child == 0) {
		release(malloc(64));
		_exit(0);
	}
	if (child > 0 && waitpid(child, &status, 0) == child && WIFSIGNALED(status))
		child_sig = WTERMSIG(status);
	printf("corrupt %ld of %ld, child %d\n", corrupt, n, child_sig);
	return corrupt || child_sig ? 1 : 0;
}
