/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * The heap profile of a process the OOM killer chose (tracepoint oom/mark_victim, --heap runs):
 * built as its record is consumed, from its process's in-use blocks only (it never reaches an
 * exit hold, its memory goes soon), labelled oom_kill, written off the event loop as
 * <UTC time>.oom.<pid>.heap.pb.gz in --output-dir (or beside -o), --push'ed, logged in one line.
 * The file is named unlike the interval series, so --retain never counts or deletes it.
 */
#ifndef PROF_OOMOUT_H
#define PROF_OOMOUT_H

#include <stdint.h>

struct collect;
struct env;
struct push;
struct run_parts;

struct oomout_opts {
	struct collect *c;
	const struct run_parts *parts;
	const struct env *env;
	struct push *push; /* NULL: no --push */
	/* The wall time the heap's allocation values count from: the run's start, or the interval's
	 * in continuous mode (read at each kill: the profile's time and, to the kill, duration). */
	const int64_t *since_wall;
};

struct oomout;

/* Watches OOM kills from now on: the tracepoint attached (a kernel without it is said in one
 * line and counted in oom_unwatched), the collector told to hand us its records. */
int oomout__new(struct oomout **out, const struct oomout_opts *opts);
/* Waits for the writes under way.  NULL is a no-op. */
void oomout__free(struct oomout *o);

/* PROF_OOM_STATS, in list order (profile_run.oom). */
const uint64_t *oomout__stats(const struct oomout *o);

/* Waits until every OOM kill profile is written: 0, or -EIO when one could not be (counted in
 * oom_writes_failed, said when it happened). */
int oomout__finish(struct oomout *o);
/* The end-of-run lines: each OOM kill and where its profile is. */
void oomout__say(const struct oomout *o);

#endif /* PROF_OOMOUT_H */
