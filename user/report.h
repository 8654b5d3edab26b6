/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/* End of a run: build one profile per mode from the collected data, write each in the chosen
 * format (atomically), and print the top-N summary. */
#ifndef PROF_REPORT_H
#define PROF_REPORT_H

#include <stdint.h>

#include "prof_common.h"

struct calls_agg_stats;
struct collect;
struct env;
struct heap_agg_stats;
struct profile;
struct symbolizer_stats;
struct unwinder_stats;

/* PROF_COLLECT_STATS as a struct: the consumer's own counts. */
#define REPORT_STAT_FIELD(f, n, d) uint64_t f;
struct report_collect_stats {
	PROF_COLLECT_STATS(REPORT_STAT_FIELD)
};
#undef REPORT_STAT_FIELD

/* Returns 0 when every profile was written, else -errno (the message is printed). */
int report__write(struct collect *c, const struct env *env, int64_t start_wall_ns,
		  int64_t duration_ns);

/* Heap profile from the collected data (exposed for the calls/cpu builders' shared parts). */
int report__build_heap(struct collect *c, const struct env *env, struct profile **out);
/* Drop counters, the command line and the version, common to every mode's profile. */
int report__add_common(struct collect *c, const struct env *env, struct profile *p);

/*
 * Each list of include/prof_common.h as named counters of p (pprof comments, text "drops"),
 * every entry whatever its value, in list order.
 */
int report__add_bpf_counters(struct profile *p, const uint64_t vals[PROF_CNT__COUNT]);
int report__add_heap_stats(struct profile *p, const struct heap_agg_stats *st);
int report__add_call_stats(struct profile *p, const struct calls_agg_stats *st);
int report__add_collect_stats(struct profile *p, const struct report_collect_stats *st);
int report__add_symbolizer_stats(struct profile *p, const struct symbolizer_stats *st);
int report__add_unwinder_stats(struct profile *p, const struct unwinder_stats *st);

#endif /* PROF_REPORT_H */
