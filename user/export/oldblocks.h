/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * The summary's leak list: the stacks holding the blocks in use for at least a given age (by
 * default half the run), with their bytes, blocks and the oldest block's age, largest first —
 * memleak's "outstanding allocations", heaptrack's "leaked".
 */
#ifndef PROF_OLDBLOCKS_H
#define PROF_OLDBLOCKS_H

#include <stdint.h>
#include <stdio.h>

struct heap_agg;
struct stackres;
struct suppress;

/* What the list found: the blocks counted (not suppressed) and those suppressed. */
struct oldblocks_totals {
	double bytes, blocks;
	size_t stacks;
	double suppressed_bytes, suppressed_blocks;
	size_t suppressed_stacks;
};

/*
 * The blocks of h at least min_age_ns old at now (bpf_ktime_get_ns's clock), per (process,
 * stack), those of stacks sup suppresses (export/suppress.h; NULL: none) set apart; with f, the
 * top `top` written to f by bytes under title ("in use for at least 2.0s", "never freed"), each
 * stack leaf first, a few frames, names escaped, and the suppressed ones in one line.  Blocks
 * of unknown birth are left out.  *tot (may be NULL) gets the totals.  0 or -ENOMEM.
 */
int oldblocks__write(FILE *f, const struct heap_agg *h, const struct stackres *stacks, uint64_t now,
		     uint64_t min_age_ns, unsigned top, const struct suppress *sup,
		     const char *title, struct oldblocks_totals *tot);

/* A stack as the list writes it: a few frames, leaf first, names escaped ("[no stack]"). */
void oldblocks__write_stack(FILE *f, const struct stackres *stacks, int32_t id);

/* A duration as the list writes it: "0.8s", "45s", "3m07s", "2h05m". */
const char *oldblocks__age(char *buf, size_t len, uint64_t ns);

#endif /* PROF_OLDBLOCKS_H */
