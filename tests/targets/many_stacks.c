// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * More distinct allocation stacks than a BPF stack map holds: allocation i (0 <= i < 2^17)
 * walks 17 levels down, calling left() or right() at level d as bit d of i says, and
 * alloc_leaf() at the bottom mallocs 24 bytes and keeps the block.  Every i has its own call
 * path: 131072 distinct stacks through alloc_leaf, 131072 blocks, 3145728 bytes, all live at
 * exit.  Between batches of 4096 the program pauses briefly, so a profiler's consumer keeps up
 * on a loaded machine (a full ring buffer would be counted, and the test would say so).
 * Built with frame pointers, like every target.
 */
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#define DEPTH	 17
#define NSTACKS	 (1u << DEPTH)
#define BATCH	 4096
#define BLOCK_SZ 24

static void *blocks[NSTACKS];
/* Work after each call: no call below becomes a tail call, so every level keeps its frame. */
static volatile unsigned sink;

static void level(unsigned i, unsigned d);

__attribute__((noinline)) static void alloc_leaf(unsigned i)
{
	blocks[i] = malloc(BLOCK_SZ);
	sink++;
}

__attribute__((noinline)) static void left(unsigned i, unsigned d)
{
	level(i, d + 1);
	sink += 1;
}

__attribute__((noinline)) static void right(unsigned i, unsigned d)
{
	level(i, d + 1);
	sink += 2;
}

__attribute__((noinline)) static void level(unsigned i, unsigned d)
{
	if (d == DEPTH)
		alloc_leaf(i);
	else if ((i >> d) & 1)
		right(i, d);
	else
		left(i, d);
	sink += 3;
}

int main(void)
{
	struct timespec pause = {.tv_nsec = 20 * 1000000L};
	unsigned missing = 0;

	for (unsigned i = 0; i < NSTACKS; i++) {
		level(i, 0);
		if ((i + 1) % BATCH == 0)
			nanosleep(&pause, NULL);
	}
	for (unsigned i = 0; i < NSTACKS; i++)
		missing += !blocks[i];
	printf("%u blocks of %d bytes, %u failed\n", NSTACKS, BLOCK_SZ, missing);
	return missing != 0;
}
