/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * Functions ranked by flat (self) and cumulative value over a set of a profile's samples: the
 * top tables of the text report and of the live view.  A row is a function as displayed:
 * locations are grouped by their display name, so the addresses inside one function add up
 * (as pprof -top does), and the names match the folded output.
 */
#ifndef PROF_RANK_H
#define PROF_RANK_H

#include <stdint.h>

struct profile;
struct rank;

struct rank_row {
	const char *name; /* display name, valid until rank__free */
	/* value of the samples whose leaf it is; off-CPU: whose first frame below the kernel's
	 * scheduling functions (__schedule, schedule*, io_schedule*, preempt_schedule*) it is */
	int64_t flat;
	int64_t cum; /* value of the samples it is on the stack of (once per sample) */
};

enum rank_order {
	RANK_BY_FLAT, /* flat, then cum, descending; then by name */
	RANK_BY_CUM,  /* cum, then flat, descending; then by name */
};

/* Names every location of p (p must outlive the rank).  0 or -ENOMEM. */
int rank__new(struct rank **out, const struct profile *p);
void rank__free(struct rank *r);

/*
 * Rank the functions on the stacks of samples[0..nsamples) (indexes into p->samples; NULL =
 * every sample of p) by value type t.  *out gets the rows that have a non-zero value, sorted,
 * valid until the next call; *nrows their number.  0 or -EINVAL (t out of range).
 */
int rank__compute(struct rank *r, const struct rank_row **out, uint32_t *nrows,
		  const uint32_t *samples, uint32_t nsamples, uint32_t t, enum rank_order order);

#endif /* PROF_RANK_H */
