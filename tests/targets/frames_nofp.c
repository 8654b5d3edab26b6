// Two builds of this file (Makefile: frames_nofp with FRAME 256, frames_wide_nofp with FRAME
// 2048), both without PIE, so the same functions sit at the same addresses in both with
// different frame sizes: a row of one file's unwind table used for a pc of the other gives a
// wrong CFA (tests/e2e/test_unwind.sh, t_unwind_same_pcs_other_rows).
//
// After a 1 s sleep (the profiler builds the tables of a launched command in the background),
// ROUNDS times: BURST malloc(64)+free from frame_leaf, called by frame_mid, called by main; then
// a 2 ms sleep, so that two of these pinned to one CPU take turns.  Prints "DONE".
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#define NOIPA __attribute__((noinline, noipa))

#ifndef FRAME
#define FRAME 256
#endif
#define ROUNDS 50
#define BURST  200

static void *volatile sink;
static volatile char last;

NOIPA void frame_leaf(void)
{
	volatile char pad[FRAME];

	pad[0] = 1;
	for (int i = 0; i < BURST; i++) {
		void *p = malloc(64);

		if (!p)
			exit(1);
		sink = p;
		free(p);
	}
	pad[FRAME - 1] = 2;
	last = pad[0];
}

NOIPA void frame_mid(void)
{
	frame_leaf();
	sink = NULL;
}

int main(void)
{
	sleep(1);
	for (int r = 0; r < ROUNDS; r++) {
		frame_mid();
		usleep(2000);
	}
	puts("DONE");
	return 0;
}
