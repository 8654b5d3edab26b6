// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * Allocations made by static functions only, so a stripped copy names them nowhere (not even
 * in .dynsym): tests/e2e/test_names.sh profiles static_alloc_stripped, whose names come from its
 * debug file (static_alloc.debug) served by debuginfod.  Exactly known: hidden_keep allocates 300
 * blocks of 1000 bytes and keeps them; hidden_churn allocates 2000 of 64 bytes and frees each.
 */
#include <stdlib.h>

#define NOINLINE __attribute__((noinline))

static void *volatile sink;
static void *kept[300];

static NOINLINE void hidden_keep(int i)
{
	kept[i] = malloc(1000);
}

static NOINLINE void hidden_churn(void)
{
	sink = malloc(64);
	free(sink);
}

int main(void)
{
	for (int i = 0; i < 300; i++)
		hidden_keep(i);
	for (int i = 0; i < 2000; i++)
		hidden_churn();
	return kept[299] ? 0 : 1;
}
