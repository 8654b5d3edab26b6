/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * Folded-stacks exporter (flamegraph.pl, inferno, speedscope): one line per (process, stack),
 * "process;root;…;leaf VALUE", value = the profile's default sample type, threads of a process
 * merged, zero lines omitted, lines sorted so the output is deterministic.
 */
#ifndef PROF_FOLDED_H
#define PROF_FOLDED_H

#include <stdio.h>

struct profile;

/* Writes the folded lines to f (not flushed or closed); 0 or a negative errno. */
int folded__write(const struct profile *p, FILE *f);

#endif /* PROF_FOLDED_H */
