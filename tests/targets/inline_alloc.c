// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * An allocating static function inlined into its caller: built with gcc -O2 -g and not stripped
 * (tests/e2e/test_names.sh t_names_inlined_frames), so its own DWARF says that keep_block, inlined
 * into inl_caller, made the malloc call.  Exactly known: keep_block allocates 200 blocks of 512
 * bytes and keeps them.
 */
#include <stdlib.h>

static void *kept[200];

static inline __attribute__((always_inline)) void keep_block(int i)
{
	kept[i] = malloc(512);
}

__attribute__((noinline)) void inl_caller(int i)
{
	keep_block(i);
	__asm__ volatile("" ::: "memory"); /* no tail call: inl_caller stays on the stack */
}

int main(void)
{
	for (int i = 0; i < 200; i++)
		inl_caller(i);
	return kept[199] ? 0 : 1;
}
