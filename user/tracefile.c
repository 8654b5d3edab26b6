// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
#include "tracefile.h"

#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "agg/collect.h"
#include "attach/loader.h"
#include "cli.h"
#include "export/evtrace.h"
#include "export/output.h"
#include "profile/profile.h"
#include "profile/run.h"
#include "prof_common.h"
#include "util/log.h"

struct tracefile {
	struct output *out;
	struct evtrace *trace;
	struct collect_stream stream;
	const struct env *env;
	char path[4096];
};

bool tracefile__wanted(const struct env *env)
{
	return env->format == FMT_CHROME || env->format == FMT_PERFETTO;
}

static int on_call(void *ctx, const struct prof_call_event *e)
{
	int err = evtrace__call(ctx, e);

	if (err == -EIO)
		pr_err("writing the trace failed: %s\n", strerror(EIO));
	return err;
}

static int on_thread_exit(void *ctx, uint32_t pid, uint32_t tid)
{
	return evtrace__thread_exit(ctx, pid, tid);
}

static int on_exec(void *ctx, uint32_t pid)
{
	return evtrace__process_exec(ctx, pid);
}

static int on_attached(void *ctx, uint32_t pid, uint64_t ts)
{
	return evtrace__attached(ctx, pid, ts);
}

static bool ends_with(const char *s, const char *suffix)
{
	size_t n = strlen(s), m = strlen(suffix);

	return n >= m && !strcmp(s + n - m, suffix);
}

int tracefile__open(struct tracefile **out, const struct env *env)
{
	struct tracefile *t = calloc(1, sizeof(*t));
	int err;

	if (!t)
		return -ENOMEM;
	t->env = env;
	cli__output_path(env, "calls", t->path, sizeof(t->path));
	err = output__open(&t->out, t->path);
	if (err) {
		pr_err("cannot write %s: %s\n", t->path,
		       err == -ELOOP ? "it is a symbolic link (refusing to follow)"
				     : strerror(-err));
		goto cleanup;
	}
	err = evtrace__new(&t->trace, output__file(t->out),
			   env->format == FMT_PERFETTO ? EVTRACE_PERFETTO : EVTRACE_CHROME,
			   ends_with(t->path, ".gz"));
	if (err) {
		pr_err("starting the trace in %s failed: %s\n", t->path, strerror(-err));
		goto cleanup;
	}
	t->stream = (struct collect_stream){
		.ctx = t->trace,
		.call = on_call,
		.thread_exit = on_thread_exit,
		.process_exec = on_exec,
		.attached = on_attached,
	};
	*out = t;
	return 0;
cleanup:
	tracefile__free(t);
	return err;
}

const struct collect_stream *tracefile__stream(struct tracefile *t)
{
	return t ? &t->stream : NULL;
}

void tracefile__bind(struct tracefile *t, struct collect *c)
{
	evtrace__set_sources(t->trace, collect__calls(c), collect__procinfo(c));
}

/* Only what was lost, as the profiles' summaries print it: the counters sorted into losses
 * and bookkeeping the way every profile sorts them (profile/run.c). */
static int print_drops(FILE *f, const uint64_t bpf[PROF_CNT__COUNT], const struct evtrace_stats *st)
{
	struct profile *p = NULL;
	unsigned drops = 0;
	int err;

	err = profile__new(&p, "calls");
	if (!err)
		err = run__add_bpf_counters(p, bpf);
		/* Slices closed early are how the trace ends, not losses (as
		 * call_unfinished_frames). */
#define TRACE_ROW(fl, n, d)                                                                       \
	if (!err)                                                                                 \
		err = !strcmp(n, "trace_unwound_frames") || !strcmp(n, "trace_unfinished_frames") \
			      ? profile__add_stat(p, n, d, st->fl)                                \
			      : profile__add_counter(p, n, d, st->fl);
	PROF_TRACE_STATS(TRACE_ROW)
#undef TRACE_ROW
	for (uint32_t i = 0; !err && i < p->ncounters; i++) {
		const struct profile_counter *c = &p->counters[i];

		if (!c->value || c->info)
			continue;
		if (!drops++)
			fprintf(f, "\ndrops:\n");
		fprintf(f, "  %s: %" PRIu64 "  %s\n", c->name, c->value, c->desc);
	}
	if (!err && !drops)
		fprintf(f, "\nno drops\n");
	profile__free(p);
	return err;
}

int tracefile__finish(struct tracefile *t, struct loader *l)
{
	static const char *const names[] = {
#define CNT_NAME(e, n, d) n,
		PROF_COUNTERS(CNT_NAME)
#undef CNT_NAME
	};
	uint64_t bpf[PROF_CNT__COUNT] = {0};
	struct timespec now;
	int err;

	/* bpf_ktime_get_ns() is CLOCK_MONOTONIC: the end is on the events' clock. */
	clock_gettime(CLOCK_MONOTONIC, &now);
	err = l ? loader__counters(l, bpf) : 0;
	if (err)
		pr_warn("reading the BPF counters failed: %s (written as 0)\n", strerror(-err));
	err = evtrace__finish(t->trace,
			      (uint64_t)now.tv_sec * 1000000000ULL + (uint64_t)now.tv_nsec, names,
			      bpf, PROF_CNT__COUNT);
	if (err) {
		pr_err("writing %s failed: %s\n", t->path, strerror(-err));
		return err;
	}
	err = output__commit(t->out);
	t->out = NULL;
	if (err) {
		pr_err("cannot write %s: %s\n", t->path, strerror(-err));
		return err;
	}
	if (strcmp(t->path, "-"))
		pr_info("wrote calls trace to %s\n", t->path);
	err = print_drops(strcmp(t->path, "-") ? stdout : stderr, bpf, evtrace__stats(t->trace));
	if (err)
		pr_err("printing the drop counters failed: %s\n", strerror(-err));
	return 0;
}

void tracefile__free(struct tracefile *t)
{
	if (!t)
		return;
	evtrace__free(t->trace);
	output__abort(t->out);
	free(t);
}
