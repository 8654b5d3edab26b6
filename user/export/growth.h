/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * Continuous mode: which stacks' memory in use grew over the last N intervals.  At each
 * interval's end every (process, stack)'s in-use bytes are kept, N + 1 ends in all; the list
 * ranks stacks by what they gained from the oldest kept end to the newest, with the rate and
 * whether they grew at every end (a leak grows monotonically; a cache that fills and drains
 * does not).  Files are compared with pprof instead (go tool pprof -diff_base A B).
 */
#ifndef PROF_GROWTH_H
#define PROF_GROWTH_H

#include <stdint.h>
#include <stdio.h>

struct heap_agg;
struct stackres;

/* --growth-intervals: its default and bounds. */
#define GROWTH_INTERVALS_DEFAULT 5
#define GROWTH_INTERVALS_MAX	 60

struct growth;

/* One stack's growth over the window. */
struct growth_row {
	uint32_t pid;
	int32_t stack_id;
	double grown, now; /* bytes gained over the window, and in use at its end */
	double per_s;	   /* grown / the window's seconds */
	int monotonic;	   /* never less at one end than at the one before */
};

/* n: the window, in intervals (1..GROWTH_INTERVALS_MAX).  0 or -ENOMEM, -EINVAL. */
int growth__new(struct growth **out, unsigned n);
void growth__free(struct growth *g);

/* An interval ended at now_ns (any monotonic clock): h's in-use bytes per (process, stack).
 * 0 or -ENOMEM (this end not kept: the window is a step short, said in the list). */
int growth__record(struct growth *g, const struct heap_agg *h, uint64_t now_ns);

/*
 * The stacks that grew over the window (as many ends as were kept, up to n + 1), most bytes
 * first, into a malloc'ed array (*rows, *nrows; free()); *window_ns and *intervals say how long
 * the window was.  0 or -ENOMEM.
 */
int growth__rank(const struct growth *g, struct growth_row **rows, size_t *nrows,
		 uint64_t *window_ns, unsigned *intervals);

/* The top `top` of growth__rank to f as the summary's list, names escaped.  0 or -ENOMEM. */
int growth__write(FILE *f, const struct growth *g, const struct stackres *stacks, unsigned top);

#endif /* PROF_GROWTH_H */
