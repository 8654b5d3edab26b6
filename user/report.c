// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
#include "report.h"

#include <errno.h>
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "calls_profile.h"
#include "cli.h"
#include "collect.h"
#include "calls_agg.h"
#include "cpu_profile.h"
#include "folded.h"
#include "heap_agg.h"
#include "loader.h"
#include "log.h"
#include "output.h"
#include "pprof.h"
#include "procinfo.h"
#include "profile.h"
#include "stackres.h"
#include "symbolizer.h"
#include "text.h"
#include "unwinder.h"

/* The counter lists of include/prof_common.h, as (name, meaning) rows. */
struct counter_row {
	const char *name, *desc;
};

#define COUNTER_ROW(e, n, d) {n, d},
static const struct counter_row bpf_rows[] = {PROF_COUNTERS(COUNTER_ROW)};
#undef COUNTER_ROW
#define STAT_ROW(f, n, d) {n, d},
static const struct counter_row heap_rows[] = {PROF_HEAP_STATS(STAT_ROW)};
static const struct counter_row call_rows[] = {PROF_CALL_STATS(STAT_ROW)};
static const struct counter_row collect_rows[] = {PROF_COLLECT_STATS(STAT_ROW)};
static const struct counter_row symbolizer_rows[] = {PROF_SYMBOLIZER_STATS(STAT_ROW)};
static const struct counter_row unwinder_rows[] = {PROF_UNWINDER_STATS(STAT_ROW)};
#undef STAT_ROW

#define NROWS(a) (sizeof(a) / sizeof((a)[0]))
_Static_assert(NROWS(bpf_rows) == PROF_CNT__COUNT, "one row per BPF counter");
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
		err = profile__add_counter(p, rows[i].name, rows[i].desc, vals[i]);
	return err;
}

int report__add_bpf_counters(struct profile *p, const uint64_t vals[PROF_CNT__COUNT])
{
	return add_rows(p, bpf_rows, vals, PROF_CNT__COUNT);
}

/* report__add_<name>(p, st): one counter per member of a stats struct, in its list's order. */
#define STAT_VAL(f, n, d) st->f,
#define STATS_ADDER(name, type, list, rows)                              \
	int report__add_##name(struct profile *p, const struct type *st) \
	{                                                                \
		const uint64_t vals[] = {list(STAT_VAL)};                \
                                                                         \
		return add_rows(p, rows, vals, NROWS(rows));             \
	}
STATS_ADDER(heap_stats, heap_agg_stats, PROF_HEAP_STATS, heap_rows)
STATS_ADDER(call_stats, calls_agg_stats, PROF_CALL_STATS, call_rows)
STATS_ADDER(collect_stats, report_collect_stats, PROF_COLLECT_STATS, collect_rows)
STATS_ADDER(symbolizer_stats, symbolizer_stats, PROF_SYMBOLIZER_STATS, symbolizer_rows)
STATS_ADDER(unwinder_stats, unwinder_stats, PROF_UNWINDER_STATS, unwinder_rows)
#undef STATS_ADDER
#undef STAT_VAL

int report__add_common(struct collect *c, const struct env *env, struct profile *p)
{
	struct report_collect_stats cs = {.bad_records = collect__bad_records(c)};
	uint64_t counters[PROF_CNT__COUNT];
	int err;

	err = profile__add_comment(p, "bpftrace-prof %s", PROF_VERSION);
	if (!err)
		err = profile__add_comment(p, "command: %s", env->cmdline);
	if (err)
		return err;
	err = loader__counters(collect__loader(c), counters);
	if (!err)
		err = report__add_bpf_counters(p, counters);
	if (!err)
		err = report__add_collect_stats(p, &cs);
	if (!err)
		err = report__add_symbolizer_stats(p, collect__symbolizer_stats(c));
	if (!err && collect__unwinder_stats(c))
		err = report__add_unwinder_stats(p, collect__unwinder_stats(c));
	return err;
}

int report__build_heap(struct collect *c, const struct env *env, struct profile **out)
{
	const struct heap_agg_stats *st =
		collect__heap(c) ? heap_agg__stats(collect__heap(c)) : NULL;
	const struct heap_site_values *v;
	struct profile *p = NULL;
	uint32_t locs[PROF_MAX_FRAMES];
	uint32_t pid, tid;
	int32_t stack_id;
	size_t it = 0;
	int err;

	err = profile__new(&p, "heap");
	if (err)
		return err;
	err = profile__add_type(p, "alloc_objects", "count");
	if (!err)
		err = profile__add_type(p, "alloc_space", "bytes");
	if (!err)
		err = profile__add_type(p, "inuse_objects", "count");
	if (!err)
		err = profile__add_type(p, "inuse_space", "bytes");
	if (err)
		goto cleanup;
	p->default_type = 3;
	p->text_types[0] = 3;
	p->text_types[1] = 1;
	p->ntext_types = 2;
	p->period_type.type = profile__intern(p, "space");
	p->period_type.unit = profile__intern(p, "bytes");
	p->period = (int64_t)env->sample_bytes;

	while (heap_agg__next_site(collect__heap(c), &it, &pid, &tid, &stack_id, &v)) {
		int64_t vals[4] = {llround(v->alloc_objects), llround(v->alloc_bytes),
				   llround(v->inuse_objects), llround(v->inuse_bytes)};
		uint32_t n = 0;

		err = stackres__locations(collect__stacks(c), p, stack_id, locs, PROF_MAX_FRAMES,
					  &n);
		if (!err)
			err = profile__add_sample(
				p, pid, tid, procinfo__comm(collect__procinfo(c), pid, tid),
				procinfo__process(collect__procinfo(c), pid), locs, n, vals, false);
		if (err)
			goto cleanup;
	}
	err = report__add_common(c, env, p);
	if (!err && env->sample_bytes)
		err = profile__add_comment(p,
					   "sampled: one allocation per %llu bytes on average, "
					   "values scaled to unbiased totals",
					   (unsigned long long)env->sample_bytes);
	if (!err && st)
		err = report__add_heap_stats(p, st);
	if (err)
		goto cleanup;
	*out = p;
	return 0;
cleanup:
	profile__free(p);
	return err;
}

static int write_one(const struct profile *p, const struct env *env, const char *path)
{
	struct output *o = NULL;
	int err;

	err = output__open(&o, path);
	if (err) {
		pr_err("cannot write %s: %s\n", path,
		       err == -ELOOP ? "it is a symbolic link (refusing to follow)"
				     : strerror(-err));
		return err;
	}
	switch (env->format) {
	case FMT_PPROF:
		err = pprof__write(p, output__file(o));
		break;
	case FMT_FOLDED:
		err = folded__write(p, output__file(o));
		break;
	case FMT_TEXT:
		err = text__write(p, output__file(o), env->top ? env->top : 10);
		break;
	}
	if (err) {
		output__abort(o);
		pr_err("writing %s failed: %s\n", path, strerror(-err));
		return err;
	}
	err = output__commit(o);
	if (err)
		pr_err("cannot write %s: %s\n", path, strerror(-err));
	else if (strcmp(path, "-"))
		pr_info("wrote %s profile to %s\n", p->mode, path);
	return err;
}

int report__write(struct collect *c, const struct env *env, int64_t start_wall_ns,
		  int64_t duration_ns)
{
	static const struct {
		unsigned bit;
		const char *name;
		int (*build)(struct collect *, const struct env *, struct profile **);
	} modes[] = {
		{MODE_HEAP, "heap", report__build_heap},
		{MODE_CPU, "cpu", cpu_profile__build},
		{MODE_CALLS, "calls", calls_profile__build},
	};
	bool to_stdout = !strcmp(env->output, "-");
	int ret = 0;

	for (size_t i = 0; i < sizeof(modes) / sizeof(modes[0]); i++) {
		struct profile *p = NULL;
		char path[PATH_MAX];
		int err;

		if (!(env->modes & modes[i].bit))
			continue;
		err = modes[i].build(c, env, &p);
		if (err) {
			pr_err("building the %s profile failed: %s\n", modes[i].name,
			       strerror(-err));
			ret = err;
			continue;
		}
		p->time_nanos = start_wall_ns;
		p->duration_nanos = duration_ns;
		err = write_one(p, env, cli__output_path(env, modes[i].name, path, sizeof(path)));
		if (err)
			ret = err;
		/* The summary: on stdout, unless the profile itself went there. */
		if (env->top && !(to_stdout && env->format == FMT_TEXT))
			text__write(p, to_stdout ? stderr : stdout, env->top);
		profile__free(p);
	}
	return ret;
}
