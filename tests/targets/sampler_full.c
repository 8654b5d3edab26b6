// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * More live blocks than the preloaded sampler's set holds (tests/e2e/test_sampling.sh): run
 * under `--heap --sample-bytes 1 -- CMD`, every allocation of 64 bytes is sampled, so the last
 * OVER of them (and as many more as the blocks the C library keeps live from before main) find
 * the set full and are lost.  Prints the sampler's own count of them: "table_full N".
 */
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>

#include "prof_sampler.h"

#define OVER 1000
#define N    (PROF_SAMPLER_MAX_LIVE + OVER)

static void *block[N];

__attribute__((noinline)) static void hold_blocks(void)
{
	for (int i = 0; i < N; i++) {
		block[i] = malloc(64);
		if (!block[i])
			exit(1);
	}
}

int main(void)
{
	prof_sampler_stats_fn stats_fn =
		(prof_sampler_stats_fn)dlsym(RTLD_DEFAULT, PROF_SAMPLER_STATS_FN);
	struct prof_sampler_stats s = {0};

	if (!stats_fn) {
		fprintf(stderr, "%s not found: is the sampler preloaded?\n", PROF_SAMPLER_STATS_FN);
		return 3;
	}
	hold_blocks();
	stats_fn(&s);
	for (int i = 0; i < N; i++)
		free(block[i]);
	printf("table_full %llu\n", (unsigned long long)s.table_full);
	return 0;
}
