/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * -f chrome / -f perfetto: the run's event trace, from its output file (opened at the start,
 * written through while the run goes, committed at the end) to the drop counters printed with
 * it.  The session's hooks: open, stream (given to the collector), bind, finish.
 */
#ifndef PROF_TRACEFILE_H
#define PROF_TRACEFILE_H

#include <stdbool.h>

struct collect;
struct run_parts;
struct collect_stream;
struct env;
struct loader;
struct tracefile;

/* Whether env's format is an event trace. */
bool tracefile__wanted(const struct env *env);
/* Opens the output (atomically: a temporary file until finish) and the trace writer.  Prints
 * one line on failure.  0 or -errno (-ELOOP: a symbolic link). */
int tracefile__open(struct tracefile **out, const struct env *env);
/* The collector's hooks (collect_opts.stream): valid while t lives; NULL for t NULL. */
const struct collect_stream *tracefile__stream(struct tracefile *t);
/* The collector exists: calls and taps come from it, names and stacks from the run's parts. */
void tracefile__bind(struct tracefile *t, struct collect *c, const struct run_parts *parts);
/* The run ended: close what is open, write the drop counters (the BPF ones from l), commit the
 * file and print the drops.  0 or -errno (printed). */
int tracefile__finish(struct tracefile *t, struct loader *l);
/* Removes the temporary file unless finished.  NULL is a no-op. */
void tracefile__free(struct tracefile *t);

#endif /* PROF_TRACEFILE_H */
