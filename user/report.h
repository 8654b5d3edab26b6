/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/* End of a run: build one profile per mode from the collected data, write each in the chosen
 * format (atomically), and print the top-N summary. */
#ifndef PROF_REPORT_H
#define PROF_REPORT_H

#include <limits.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct collect;
struct env;

struct profile;
struct report;

int report__new(struct report **out, struct collect *c, const struct env *env);
void report__free(struct report *r);

/* Given every interval's (or the final) profiles once built: --live, --push.  last: the run
 * ends with these. */
typedef void (*report_sink_fn)(void *ctx, const struct profile *const *profiles, size_t n,
			       bool last);
void report__set_sink(struct report *r, report_sink_fn fn, void *ctx);
struct push;
/* --push: its counters go into every profile built after this. */
void report__set_push(struct report *r, const struct push *push);
struct cgroup_stats;
/* --cgroup/--container: what the cgroup walks left out, in every profile built after this. */
void report__set_cgroup_stats(struct report *r, const struct cgroup_stats *st);

/* One profile per mode at the end of the run, to -o, and the summary.  0 when every profile
 * was written, else -errno (the message is printed). */
int report__write(struct report *r, int64_t start_wall_ns, int64_t duration_ns);

/* Continuous mode: one profile per mode of the interval [start, +duration) into --output-dir
 * (as <UTC start>.<mode>.pb.gz, --retain applied), then the aggregates start the next one.
 * last: the run ends (open calls get their time so far). */
int report__interval(struct report *r, int64_t start_wall_ns, int64_t duration_ns, bool last);

/* --live without --output-dir: every mode's profile of the run so far [start, +duration), given
 * to the sink only: nothing is written, nothing reset (-o gets the whole run at the end). */
int report__peek(struct report *r, int64_t start_wall_ns, int64_t duration_ns);

/* The files the run writes at the end (none in continuous mode), one per mode or one for an
 * event trace, into out[0..max) (PATH_MAX each).  Returns how many. */
unsigned report__output_paths(char (*out)[PATH_MAX], unsigned max, const struct env *env);

/* The start lines (export/status.h) on stderr: what is profiled and how, where the result goes
 * (what this report will write), how the run stops. */
void report__say_start(const struct report *r);

/* --output-dir exists (created 0700 if missing) and is a directory: 0 or -errno. */
int report__prepare_dir(const struct env *env);

#endif /* PROF_REPORT_H */
