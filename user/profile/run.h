/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * The run as every mode's profile records it: our version, the command line, the time span,
 * and the counters of include/prof_common.h's lists (drops and bookkeeping) by name.  The
 * session fills a profile_run; profile_run__apply writes it into each profile it built.
 */
#ifndef PROF_RUN_H
#define PROF_RUN_H

#include <stdint.h>

#include "prof_common.h"

struct calls_agg_stats;
struct cgroup_stats;
struct heap_agg_stats;
struct loader_attach_stats;
struct maps_stats;
struct profile;
struct symbolizer_stats;
struct unwinder_stats;

/* PROF_COLLECT_STATS as a struct: the consumer's own counts. */
#define RUN_STAT_FIELD(f, n, d, k) uint64_t f;
struct run_collect_stats {
	PROF_COLLECT_STATS(RUN_STAT_FIELD)
};
/* PROF_REPORT_STATS as a struct: what the report could not write. */
struct run_report_stats {
	PROF_REPORT_STATS(RUN_STAT_FIELD)
};
#undef RUN_STAT_FIELD

struct profile_run {
	const char *cmdline;
	int64_t time_nanos;	/* wall-clock start of what the profile covers */
	int64_t duration_nanos; /* its length */
	uint64_t bpf[PROF_CNT__COUNT];
	struct run_collect_stats collect;
	struct run_report_stats report;
	const struct symbolizer_stats *sym;
	const struct unwinder_stats *unw; /* NULL: the unwinder did not run */
	const char *unw_failed; /* the first files without a table, and why (NULL, "": none) */
	const uint64_t *push;	/* PROF_PUSH_STATS values in list order; NULL: no --push */
	const uint64_t *oom;	/* PROF_OOM_STATS values in list order; NULL: no --heap */
	const struct cgroup_stats *cgroup; /* --cgroup/--container: the walks; NULL otherwise */
	const struct loader_attach_stats *attach; /* the probes on files; NULL: none loaded */
	const struct maps_stats *maps;		  /* the /proc/PID/maps reads; NULL: none counted */
};

/* The version, command line, span and every counter list of run, into p. */
int profile_run__apply(const struct profile_run *run, struct profile *p);

/*
 * Each list of include/prof_common.h as named counters of p (pprof comments, text "drops"),
 * every entry whatever its value, in list order.
 */
int run__add_bpf_counters(struct profile *p, const uint64_t vals[PROF_CNT__COUNT]);
/* The sum of the BPF counters that count losses (PROF_KIND_DROP: py_frames or
 * unwind_fp_frames left out). */
uint64_t run__bpf_losses(const uint64_t vals[PROF_CNT__COUNT]);
int run__add_heap_stats(struct profile *p, const struct heap_agg_stats *st);
int run__add_call_stats(struct profile *p, const struct calls_agg_stats *st);
int run__add_collect_stats(struct profile *p, const struct run_collect_stats *st);
int run__add_report_stats(struct profile *p, const struct run_report_stats *st);
int run__add_symbolizer_stats(struct profile *p, const struct symbolizer_stats *st);
int run__add_unwinder_stats(struct profile *p, const struct unwinder_stats *st);
/* p's non-zero bookkeeping counters (PROF_KIND_BOOK: kept out of the pprof comments) in one
 * line of the -v log. */
void run__log_bookkeeping(const struct profile *p);

#endif /* PROF_RUN_H */
