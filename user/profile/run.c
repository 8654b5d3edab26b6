// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
#include "profile/run.h"

#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "agg/calls_agg.h"
#include "agg/heap_agg.h"
#include "attach/loader.h"
#include "proc/cgroup.h"
#include "proc/maps.h"
#include "profile/profile.h"
#include "sym/symbolizer.h"
#include "unwind/unwinder.h"
#include "util/log.h"

/* The counter lists of include/prof_common.h, as (name, meaning, kind) rows. */
struct counter_row {
	const char *name, *desc;
	enum prof_counter_kind kind;
};

#define COUNTER_ROW(e, n, d, k) {n, d, PROF_KIND_##k},
static const struct counter_row bpf_rows[] = {PROF_COUNTERS(COUNTER_ROW)};
#undef COUNTER_ROW
#define STAT_ROW(f, n, d, k) {n, d, PROF_KIND_##k},
static const struct counter_row heap_rows[] = {PROF_HEAP_STATS(STAT_ROW)};
static const struct counter_row call_rows[] = {PROF_CALL_STATS(STAT_ROW)};
static const struct counter_row collect_rows[] = {PROF_COLLECT_STATS(STAT_ROW)};
static const struct counter_row report_rows[] = {PROF_REPORT_STATS(STAT_ROW)};
static const struct counter_row symbolizer_rows[] = {PROF_SYMBOLIZER_STATS(STAT_ROW)};
static const struct counter_row unwinder_rows[] = {PROF_UNWINDER_STATS(STAT_ROW)};
static const struct counter_row push_rows[] = {PROF_PUSH_STATS(STAT_ROW)};
static const struct counter_row oom_rows[] = {PROF_OOM_STATS(STAT_ROW)};
static const struct counter_row cgroup_rows[] = {PROF_CGROUP_STATS(STAT_ROW)};
static const struct counter_row attach_rows[] = {PROF_ATTACH_STATS(STAT_ROW)};
static const struct counter_row maps_rows[] = {PROF_MAPS_STATS(STAT_ROW)};
#undef STAT_ROW

#define NROWS(a) (sizeof(a) / sizeof((a)[0]))
_Static_assert(NROWS(bpf_rows) == PROF_CNT__COUNT, "one row per BPF counter");
_Static_assert(sizeof(struct cgroup_stats) == NROWS(cgroup_rows) * sizeof(uint64_t),
	       "every cgroup_stats member is in PROF_CGROUP_STATS");
_Static_assert(sizeof(struct loader_attach_stats) == NROWS(attach_rows) * sizeof(uint64_t),
	       "every loader_attach_stats member is in PROF_ATTACH_STATS");
_Static_assert(sizeof(struct maps_stats) == NROWS(maps_rows) * sizeof(uint64_t),
	       "every maps_stats member is in PROF_MAPS_STATS");
/* A stats member missing from its list would never be printed: the sizes catch it.  The heap
 * aggregator's allocs and frees are its bookkeeping, not losses. */
_Static_assert(sizeof(struct heap_agg_stats) == (2 + NROWS(heap_rows)) * sizeof(uint64_t),
	       "every heap_agg_stats member but allocs/frees is in PROF_HEAP_STATS");
_Static_assert(sizeof(struct calls_agg_stats) == NROWS(call_rows) * sizeof(uint64_t),
	       "every calls_agg_stats member is in PROF_CALL_STATS");
_Static_assert(sizeof(struct symbolizer_stats) == NROWS(symbolizer_rows) * sizeof(uint64_t),
	       "every symbolizer_stats member is in PROF_SYMBOLIZER_STATS");

static int add_rows(struct profile *p, const struct counter_row *rows, const uint64_t *vals,
		    size_t n)
{
	int err = 0;

	for (size_t i = 0; i < n && !err; i++)
		err = profile__add_counter_kind(p, rows[i].name, rows[i].desc, vals[i],
						rows[i].kind);
	return err;
}

int run__add_bpf_counters(struct profile *p, const uint64_t vals[PROF_CNT__COUNT])
{
	return add_rows(p, bpf_rows, vals, PROF_CNT__COUNT);
}

uint64_t run__bpf_losses(const uint64_t vals[PROF_CNT__COUNT])
{
	uint64_t n = 0;

	for (size_t i = 0; i < PROF_CNT__COUNT; i++)
		if (bpf_rows[i].kind == PROF_KIND_DROP)
			n += vals[i];
	return n;
}

/* run__add_<name>(p, st): one counter per member of a stats struct, in its list's order. */
#define STAT_VAL(f, n, d, k) st->f,
#define STATS_ADDER(name, type, list, rows)                           \
	int run__add_##name(struct profile *p, const struct type *st) \
	{                                                             \
		const uint64_t vals[] = {list(STAT_VAL)};             \
                                                                      \
		return add_rows(p, rows, vals, NROWS(rows));          \
	}
STATS_ADDER(heap_stats, heap_agg_stats, PROF_HEAP_STATS, heap_rows)
STATS_ADDER(call_stats, calls_agg_stats, PROF_CALL_STATS, call_rows)
STATS_ADDER(collect_stats, run_collect_stats, PROF_COLLECT_STATS, collect_rows)
STATS_ADDER(report_stats, run_report_stats, PROF_REPORT_STATS, report_rows)
STATS_ADDER(symbolizer_stats, symbolizer_stats, PROF_SYMBOLIZER_STATS, symbolizer_rows)
STATS_ADDER(unwinder_stats, unwinder_stats, PROF_UNWINDER_STATS, unwinder_rows)

/* run__add_unwinder_stats, the files without a table named on their counter's line. */
static int add_unwinder(struct profile *p, const struct unwinder_stats *st, const char *failed)
{
	const uint64_t vals[] = {PROF_UNWINDER_STATS(STAT_VAL)};
	char desc[512];
	int err = 0;

	for (size_t i = 0; i < NROWS(unwinder_rows) && !err; i++) {
		const struct counter_row *r = &unwinder_rows[i];

		if (vals[i] && failed && *failed && !strcmp(r->name, "unwind_table_build_failed")) {
			snprintf(desc, sizeof(desc), "%s: %s", r->desc, failed);
			err = profile__add_counter_kind(p, r->name, desc, vals[i], r->kind);
		} else {
			err = profile__add_counter_kind(p, r->name, r->desc, vals[i], r->kind);
		}
	}
	return err;
}
#undef STATS_ADDER
#undef STAT_VAL

int profile_run__apply(const struct profile_run *run, struct profile *p)
{
	int err;

	p->time_nanos = run->time_nanos;
	p->duration_nanos = run->duration_nanos;
	err = profile__add_comment(p, "bpftrace-prof %s", PROF_VERSION);
	if (!err)
		err = profile__add_comment(p, "command: %s", run->cmdline);
	if (!err)
		err = run__add_bpf_counters(p, run->bpf);
	if (!err)
		err = run__add_collect_stats(p, &run->collect);
	if (!err)
		err = run__add_report_stats(p, &run->report);
	if (!err && run->sym)
		err = run__add_symbolizer_stats(p, run->sym);
	if (!err && run->unw)
		err = add_unwinder(p, run->unw, run->unw_failed);
	/* What --push did up to this profile (this one is sent after it is built). */
	if (!err && run->push)
		err = add_rows(p, push_rows, run->push, NROWS(push_rows));
	if (!err && run->oom)
		err = add_rows(p, oom_rows, run->oom, NROWS(oom_rows));
	if (!err && run->cgroup)
		err = add_rows(p, cgroup_rows, (const uint64_t *)run->cgroup, NROWS(cgroup_rows));
	if (!err && run->attach)
		err = add_rows(p, attach_rows, (const uint64_t *)run->attach, NROWS(attach_rows));
	if (!err && run->maps)
		err = add_rows(p, maps_rows, (const uint64_t *)run->maps, NROWS(maps_rows));
	return err;
}

void run__log_bookkeeping(const struct profile *p)
{
	char line[1024];
	size_t len = 0;

	/* One line, cut at its buffer: this is diagnostics, not data. */
	for (uint32_t i = 0; i < p->ncounters && len < sizeof(line); i++) {
		const struct profile_counter *c = &p->counters[i];

		if (c->kind == PROF_KIND_BOOK && c->value)
			len += (size_t)snprintf(line + len, sizeof(line) - len, " %s=%" PRIu64,
						c->name, c->value);
	}
	if (len)
		pr_info("%s profile bookkeeping:%s\n", p->mode, line);
}
