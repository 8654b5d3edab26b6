// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * A leaf function keeping data in the red zone (the 128 bytes below %rsp the x86-64 ABI lets a
 * leaf use without moving %rsp) across an otel_memory:alloc probe emitted on a 5-byte nop.
 * Linux 6.18 turns a uprobe on such a nop into a call, which pushes a return address below
 * %rsp: the data is overwritten.  Whoever attaches to this site corrupts this program, so the
 * profiler must not (it attaches to nop5 sites only in files that say they are built without a
 * red zone).  Prints "corrupt X of N" and exits 1 when X > 0.
 *
 *   otel_redzone_nofp [N]   (default 20000; waits for a line on stdin first)
 */
#include <stdio.h>
#include <stdlib.h>
#include <sys/sdt.h>

#undef _SDT_NOP
#define _SDT_NOP .nops 5

#define PATTERN 0x5a5a5a5aUL

/* 0 if the red zone kept what was put there across the probe. */
__attribute__((noinline)) static int leaf(void *p, unsigned long size)
{
	unsigned long v, bad = 0;

	/* Built without frame pointers (the _nofp rule): this leaf spills nothing of its own. */
	asm volatile("movq %0, -8(%%rsp)\n\t"
		     "movq %0, -16(%%rsp)\n\t"
		     "movq %0, -32(%%rsp)\n\t"
		     "movq %0, -64(%%rsp)\n\t"
		     "movq %0, -128(%%rsp)" ::"i"(PATTERN)
		     : "memory");
	STAP_PROBE3(otel_memory, alloc, p, size, size);
#define CHECK(off)                                                                    \
	asm volatile("movq " #off "(%%rsp), %0" : "=r"(v)::"memory");                 \
	bad += v != PATTERN
	CHECK(-8);
	CHECK(-16);
	CHECK(-32);
	CHECK(-64);
	CHECK(-128);
	return bad != 0;
}

int main(int argc, char **argv)
{
	long n = argc > 1 ? atol(argv[1]) : 20000, corrupt = 0;

	if (getchar() == EOF) {
		/* no gate: run anyway */
	}
	for (long i = 0; i < n; i++) {
		void *p = malloc(64);

		corrupt += leaf(p, 64);
		free(p);
	}
	printf("corrupt %ld of %ld\n", corrupt, n);
	return corrupt ? 1 : 0;
}
