/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * pprof exporter: the profile as a gzip-compressed perftools.profiles.Profile (profile.proto),
 * readable by go tool pprof, Pyroscope, Parca and speedscope.  Every sample carries the labels
 * pid, tid (numbers), comm, process (strings) and, for incomplete stacks, stack=partial; the
 * profile's comments are followed by one "name=value (description)" comment per counter.
 */
#ifndef PROF_PPROF_H
#define PROF_PPROF_H

#include <stdio.h>

struct profile;

/* Writes the whole profile to f (not flushed or closed); 0 or a negative errno. */
int pprof__write(const struct profile *p, FILE *f);

#endif /* PROF_PPROF_H */
