/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * The run's profiles, from the collected data to files: one profile per mode built at the end
 * of the run (written to -o in the chosen format, atomically, with the top-N summary), or per
 * interval (into --output-dir), or peeked at for --live; each set also goes to the sink (--live,
 * --push).  Not the `report` subcommand (cmd/report.h), which reads a recorded trace back.
 */
#ifndef PROF_WRITEOUT_H
#define PROF_WRITEOUT_H

#include <limits.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "export/metrics.h"

struct collect;
struct run_parts;
struct env;

struct growth;
struct profile;
struct writeout;

/* c's aggregates and the parts it shares (both outlive the writeout). */
int writeout__new(struct writeout **out, struct collect *c, const struct run_parts *parts,
		  const struct env *env);
void writeout__free(struct writeout *r);

/* Given every interval's (or the final) profiles once built: --live, --push.  last: the run
 * ends with these. */
typedef void (*writeout_sink_fn)(void *ctx, const struct profile *const *profiles, size_t n,
				 bool last);
void writeout__set_sink(struct writeout *r, writeout_sink_fn fn, void *ctx);
struct push;
/* --push: its counters go into every profile built after this. */
void writeout__set_push(struct writeout *r, const struct push *push);
struct cgroup_stats;
/* --cgroup/--container: what the cgroup walks left out, in every profile built after this. */
void writeout__set_cgroup_stats(struct writeout *r, const struct cgroup_stats *st);

/*
 * What every profile of the run says of it as of now: its command line and time, and the
 * counters of the collector, symbolizer, unwinder, holds, attachments, maps (into *maps) and BPF.
 * 0, or the BPF counters' -errno (they are 0 then).  Read after collect__sync.
 */
struct profile_run;
struct maps_stats;
struct run_parts;
int writeout__run_now(struct profile_run *run, struct maps_stats *maps, struct collect *c,
		      const struct run_parts *parts, const char *cmdline, int64_t time_nanos);

/* --heap: the OOM kills' counters (PROF_OOM_STATS, oomout.h), in every profile built after this. */
void writeout__set_oom_stats(struct writeout *r, const uint64_t *oom);

/* One profile per mode at the end of the run, to -o, and the summary.  0 when every profile
 * was written, else -errno (the message is printed). */
int writeout__write(struct writeout *r, int64_t start_wall_ns, int64_t duration_ns);

/* Continuous mode: one profile per mode of the interval [start, +duration) into --output-dir
 * (as <UTC start>.<mode>.pb.gz, --retain applied), then the aggregates start the next one.
 * last: the run ends (open calls get their time so far). */
int writeout__interval(struct writeout *r, int64_t start_wall_ns, int64_t duration_ns, bool last);

/* --live without --output-dir: every mode's profile of the run so far [start, +duration), given
 * to the sink only: nothing is written, nothing reset (-o gets the whole run at the end). */
int writeout__peek(struct writeout *r, int64_t start_wall_ns, int64_t duration_ns);

/* --metrics: the run's counters (cumulative) and our gauges (g's uptime and events given, the
 * rest read here) rendered and handed to m's server.  0 or -ENOMEM. */
int writeout__metrics(struct writeout *r, struct metrics *m, struct metrics_gauges g);

/* --growth-intervals: the interval ends kept so far (by writeout__interval and writeout__peek),
 * NULL before the first. */
const struct growth *writeout__growth(const struct writeout *r);

/* The files the run writes at the end (none in continuous mode), one per mode or one for an
 * event trace, into out[0..max) (PATH_MAX each).  Returns how many. */
unsigned writeout__output_paths(char (*out)[PATH_MAX], unsigned max, const struct env *env);

/* The start lines (export/status.h) on stderr: what is profiled and how (the heap path taken:
 * cmd_own_probes, -- CMD's executable carries otel_memory probes), where the result goes (what
 * it will write), how the run stops. */
void writeout__say_start(const struct writeout *r, bool cmd_own_probes);

/* --output-dir exists (created 0700 if missing) and is a directory: 0 or -errno. */
int writeout__prepare_dir(const struct env *env);

/* After writeout__write: the bytes never freed at the end that no leak rule suppresses, in
 * the processes of -- CMD (--fail-on-leak). */
uint64_t writeout__leaked(const struct writeout *r);

#endif /* PROF_WRITEOUT_H */
