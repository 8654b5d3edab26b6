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

#define CNT_NAME(e, n, d) n,
#define CNT_DESC(e, n, d) d,
static const char *const counter_names[] = {PROF_COUNTERS(CNT_NAME)};
static const char *const counter_descs[] = {PROF_COUNTERS(CNT_DESC)};

/* Files refused as unsafe and lines skipped: symbols lost, so counted like every drop. */
static int add_symbolizer_counters(struct collect *c, struct profile *p)
{
	const struct symbolizer_stats *st = collect__symbolizer_stats(c);
	int err;

	err = profile__add_counter(p, "files_refused",
				   "mapped files not read: not regular, too large, or swapped",
				   st->files_refused);
	if (!err)
		err = profile__add_counter(
			p, "perfmaps_refused",
			"perf maps not read: symlink, FIFO, device, other owner, or too large",
			st->perfmaps_refused);
	if (!err)
		err = profile__add_counter(p, "perfmap_lines_skipped",
					   "perf map lines skipped: too long, or too many",
					   st->perfmap_lines_skipped);
	return err;
}

int report__add_common(struct collect *c, const struct env *env, struct profile *p)
{
	uint64_t counters[PROF_CNT__COUNT];
	int err;

	err = profile__add_comment(p, "bpftrace-prof %s", PROF_VERSION);
	if (!err)
		err = profile__add_comment(p, "command: %s", env->cmdline);
	if (err)
		return err;
	err = loader__counters(collect__loader(c), counters);
	if (err)
		return err;
	for (int i = 0; i < PROF_CNT__COUNT; i++) {
		err = profile__add_counter(p, counter_names[i], counter_descs[i], counters[i]);
		if (err)
			return err;
	}
	err = profile__add_counter(p, "bad_records", "ring-buffer records not understood",
				   collect__bad_records(c));
	if (!err)
		err = add_symbolizer_counters(c, p);
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

		err = stackres__locations(collect__stacks(c), p, pid, stack_id, STACK_USER_RET,
					  locs, PROF_MAX_FRAMES, &n);
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
	if (!err && st) {
		err = profile__add_counter(
			p, "unknown_frees",
			"frees of blocks never seen allocated (before attach, or inside libc)",
			st->unknown_frees);
		if (!err)
			err = profile__add_counter(p, "failed_allocs",
						   "allocations that returned NULL",
						   st->failed_allocs);
		if (!err)
			err = profile__add_counter(
				p, "replaced_live",
				"blocks handed out again before their free was seen",
				st->replaced_live);
		if (!err)
			err = profile__add_counter(
				p, "no_stack", "allocations kept without a stack", st->no_stack);
	}
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
