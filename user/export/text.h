/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * Human report: per process (by pid) the totals of every sample type and the thread count,
 * then for each of the profile's text_types the top functions by flat value with flat, flat%,
 * cum, cum% (exact integers, so scripts can grep them); then every counter.
 */
#ifndef PROF_TEXT_H
#define PROF_TEXT_H

#include <stdio.h>

struct profile;

/* top = rows per table; 0 prints totals and counters only.  0 or a negative errno. */
int text__write(const struct profile *p, FILE *f, unsigned top);

#endif /* PROF_TEXT_H */
