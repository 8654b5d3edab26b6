// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
#include "tracefile.h"

#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "agg/collect.h"
#include "agg/parts.h"
#include "sym/stackres.h"
#include "attach/loader.h"
#include "cli.h"
#include "trace/evtrace.h"
#include "export/format.h"
#include "util/json.h"
#include "export/outdir.h"
#include "export/output.h"
#include "proc/safe_open.h"
#include "trace/trace_sink.h"
#include "profile/profile.h"
#include "profile/run.h"
#include "prof_common.h"
#include "prof_offcpu.h"
#include "util/clock.h"
#include "util/log.h"

struct tracefile {
	struct output *out;
	struct outdir *dir;    /* -f codetracer: the trace folder, in place of out */
	struct trace_sink *ct; /* -f codetracer: its sink (owned by trace) */
	char workdir[4096];    /* -f codetracer: trace_metadata.json's, taken at the start */
	char program[4096];
	struct evtrace *trace;
	struct stackres *stacks; /* bound: symbolized before the end is written */
	struct collect_stream stream;
	const struct env *env;
	char path[4096];
};

bool tracefile__wanted(const struct env *env)
{
	return format__event_trace(env->format);
}

static int on_call(void *ctx, const struct prof_call_event *e)
{
	int err = evtrace__call(ctx, e);

	if (err == -EIO)
		pr_err("writing the trace failed: %s\n", strerror(EIO));
	return err;
}

static int on_marker(void *ctx, const struct prof_call_marker *m)
{
	return evtrace__marker(ctx, m);
}

static int on_thread_exit(void *ctx, uint32_t pid, uint32_t tid)
{
	return evtrace__thread_exit(ctx, pid, tid);
}

static int on_exec(void *ctx, uint32_t pid)
{
	return evtrace__process_exec(ctx, pid);
}

/*
 * --heap (-f firefox, chrome, perfetto): the collector's heap events, at the time their probe
 * fired (bpf_ktime_get_ns, the call events' clock; the recorder keeps them no earlier than the
 * thread's last event).  A failed allocation has no block; an exec ends every block of the
 * process (the heap counter drops to 0; firefox writes no free of them) when it is seen.
 */
static int on_heap(void *ctx, const struct collect_heap_event *e)
{
	switch (e->kind) {
	case COLLECT_HEAP_ALLOC:
	case COLLECT_HEAP_REALLOC:
		if (!e->addr)
			return 0;
		return (e->untracked ? evtrace__alloc_untracked : evtrace__alloc)(
			ctx, e->pid, e->tid, e->ts, e->addr,
			e->kind == COLLECT_HEAP_REALLOC ? e->old_addr : 0, e->size);
	case COLLECT_HEAP_FREE:
		return evtrace__free_block(ctx, e->pid, e->tid, e->ts, e->addr);
	case COLLECT_HEAP_EXEC:
		return evtrace__heap_exec(ctx, e->pid, e->ts);
	case COLLECT_HEAP_EXIT:
		return evtrace__heap_exit(ctx, e->pid);
	default:
		return 0;
	}
}

/* --cpu (-f chrome, perfetto): each sample, at its BPF time, its stacks named at the end. */
static int on_cpu(void *ctx, const struct collect_cpu_event *e)
{
	return evtrace__cpu_sample(ctx, e->pid, e->tid, e->ts, e->user_stack, e->kern_stack);
}

/* --offcpu: each period a slice on its thread. */
static int on_offcpu(void *ctx, const struct collect_offcpu_event *e)
{
	return evtrace__offcpu(ctx, e->pid, e->tid, e->start, e->ns,
			       e->state == PROF_OFFCPU_RUNNABLE);
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

/* What the target is, for trace_metadata.json: ours for -- CMD (the child starts in our
 * directory), the first -p process's otherwise (it may be gone by the end). */
static void note_program(struct tracefile *t, const struct env *env)
{
	char link[64];
	ssize_t n;

	if (env->cmd && env->cmd[0]) {
		snprintf(t->program, sizeof(t->program), "%s", env->cmd[0]);
		if (!getcwd(t->workdir, sizeof(t->workdir)))
			t->workdir[0] = '\0';
		return;
	}
	if (!env->npids)
		return;
	snprintf(link, sizeof(link), "/proc/%u/exe", env->pids[0]);
	n = readlink(link, t->program, sizeof(t->program) - 1);
	t->program[n > 0 ? n : 0] = '\0';
	snprintf(link, sizeof(link), "/proc/%u/cwd", env->pids[0]);
	n = readlink(link, t->workdir, sizeof(t->workdir) - 1);
	t->workdir[n > 0 ? n : 0] = '\0';
}

static int open_codetracer(struct tracefile *t, const struct env *env)
{
	struct trace_sink *sink;
	int err = outdir__open(&t->dir, t->path);

	if (err) {
		pr_err("cannot write the trace folder %s: %s\n", t->path,
		       err == -ELOOP	   ? "it is a symbolic link (refusing to follow)"
		       : err == -ENOTEMPTY ? "it is a directory with other files (not replaced)"
					   : strerror(-err));
		return err;
	}
	note_program(t, env);
	err = codetracer_trace__new(&sink, outdir__fd(t->dir), "/proc");
	if (!err) {
		t->ct = sink;
		err = evtrace__new_sink(&t->trace, sink);
	}
	if (err)
		pr_err("starting the trace in %s failed: %s\n", t->path, strerror(-err));
	return err;
}

/* The directory a file path is in ("." for a bare name). */
static void dir_of(const char *path, char *buf, size_t size)
{
	const char *slash = strrchr(path, '/');

	if (!slash)
		snprintf(buf, size, ".");
	else if (slash == path)
		snprintf(buf, size, "/");
	else
		snprintf(buf, size, "%.*s", (int)(slash - path), path);
}

int tracefile__open(struct tracefile **out, const struct env *env)
{
	struct tracefile *t = calloc(1, sizeof(*t));
	int err;

	if (!t)
		return -ENOMEM;
	t->env = env;
	/* One file whatever the modes (-f firefox --calls --heap). */
	snprintf(t->path, sizeof(t->path), "%s", env->output);
	if (env->format == FMT_CODETRACER) {
		err = open_codetracer(t, env);
		if (err)
			goto cleanup;
		goto stream;
	}
	err = output__open(&t->out, t->path);
	if (err) {
		pr_err("cannot write %s: %s\n", t->path,
		       err == -ELOOP ? "it is a symbolic link (refusing to follow)"
				     : strerror(-err));
		goto cleanup;
	}
	if (env->format == FMT_FIREFOX) {
		struct trace_sink *sink;
		char dir[4096];

		/* Its events wait beside the output (-o -: in $TMPDIR). */
		dir_of(t->path, dir, sizeof(dir));
		err = firefox_trace__new(&sink, output__file(t->out), ends_with(t->path, ".gz"),
					 strcmp(t->path, "-") ? dir : NULL);
		if (!err)
			err = evtrace__new_sink(&t->trace, sink);
	} else {
		err = evtrace__new(&t->trace, output__file(t->out),
				   env->format == FMT_PERFETTO ? EVTRACE_PERFETTO : EVTRACE_CHROME,
				   ends_with(t->path, ".gz"));
	}
	if (err) {
		pr_err("starting the trace in %s failed: %s\n", t->path, strerror(-err));
		goto cleanup;
	}
stream:
	t->stream = (struct collect_stream){
		.ctx = t->trace,
		.call = on_call,
		.thread_exit = on_thread_exit,
		.process_exec = on_exec,
		.attached = on_attached,
		/* Only a format that shows markers gets the runtimes' marker probes attached. */
		.marker = evtrace__wants_markers(t->trace) ? on_marker : NULL,
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

void tracefile__bind(struct tracefile *t, struct collect *c, const struct run_parts *parts)
{
	t->stacks = parts->stacks;
	evtrace__set_sources(t->trace, collect__calls(c), parts->procs);
	evtrace__set_stacks(t->trace, parts->stacks);
	if (t->env->modes & MODE_HEAP)
		collect__set_heap_tap(c, on_heap, t->trace);
	if (t->env->modes & MODE_CPU) {
		collect__set_cpu_tap(c, on_cpu, t->trace);
		evtrace__set_cpu_period(t->trace, 1000000000ULL / t->env->cpu_hz);
	}
	if (t->env->modes & MODE_OFFCPU)
		collect__set_offcpu_tap(c, on_offcpu, t->trace);
}

/* Only what was lost, as the profiles' summaries print it: the counters sorted into losses
 * and bookkeeping the way every profile sorts them (profile/run.c). */
static int print_drops(FILE *f, const uint64_t bpf[PROF_CNT__COUNT], const struct evtrace_stats *st,
		       const struct codetracer_stats *ct)
{
	struct profile *p = NULL;
	unsigned drops = 0;
	int err;

	err = profile__new(&p, "calls");
	if (!err)
		err = run__add_bpf_counters(p, bpf);
		/* Each with its kind from the list: slices closed early are how a trace ends and
		 * frees of blocks it never saw are expected (as call_unfinished_frames,
		 * unknown_frees), not losses. */
#define TRACE_ROW(fl, n, d, k) \
	if (!err)              \
		err = profile__add_counter_kind(p, n, d, st->fl, PROF_KIND_##k);
	PROF_TRACE_STATS(TRACE_ROW)
#undef TRACE_ROW
	/* -f codetracer: the sources not copied, by why. */
#define CT_ROW(fl, n, d) \
	if (!err && ct)  \
		err = profile__add_counter(p, n, d, ct->fl);
	PROF_CODETRACER_STATS(CT_ROW)
#undef CT_ROW
	for (uint32_t i = 0; !err && i < p->ncounters; i++) {
		const struct profile_counter *c = &p->counters[i];

		if (!c->value || !profile_counter__is_drop(c))
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

/* trace_metadata.json: {workdir, program, args} of the target. */
static int write_metadata(struct tracefile *t)
{
	FILE *f;
	int err = safe_open__fcreate(&f, outdir__fd(t->dir), "trace_metadata.json");

	if (err)
		return err;
	fputs("{\"workdir\":", f);
	json__write_string(f, t->workdir, strlen(t->workdir));
	fputs(",\"program\":", f);
	json__write_string(f, t->program, strlen(t->program));
	fputs(",\"args\":[", f);
	for (char **a = t->env->cmd ? t->env->cmd + 1 : NULL; a && *a; a++) {
		if (a != t->env->cmd + 1)
			putc(',', f);
		json__write_string(f, *a, strlen(*a));
	}
	fputs("]}\n", f);
	err = ferror(f) ? -EIO : 0;
	if (fclose(f) && !err)
		err = -EIO;
	return err;
}

int tracefile__finish(struct tracefile *t, struct loader *l)
{
	static const char *const names[] = {
#define CNT_NAME(e, n, d, k) n,
		PROF_COUNTERS(CNT_NAME)
#undef CNT_NAME
	};
	uint64_t bpf[PROF_CNT__COUNT] = {0};
	uint64_t now;
	int err, commit_err;

	/* bpf_ktime_get_ns() is CLOCK_MONOTONIC: the end is on the events' clock. */
	now = (uint64_t)clock__mono_ns();
	/* --cpu samples are named from their symbolized stacks. */
	err = t->stacks ? stackres__debug(t->stacks, STACKRES_LAST) : 0;
	if (!err && t->stacks)
		err = stackres__sync(t->stacks);
	if (err) {
		pr_err("symbolizing the stacks failed: %s\n", strerror(-err));
		return err;
	}
	err = l ? loader__counters(l, bpf) : 0;
	if (err)
		pr_warn("reading the BPF counters failed: %s (written as 0)\n", strerror(-err));
	err = evtrace__finish(t->trace, now, names, bpf, PROF_CNT__COUNT);
	if (err) {
		pr_err("writing %s failed: %s\n", t->path, strerror(-err));
		return err;
	}
	if (t->dir) {
		err = write_metadata(t);
		if (!err)
			err = outdir__commit(t->dir);
		t->dir = NULL;
	} else {
		err = output__commit(t->out);
		t->out = NULL;
	}
	/* -EEXIST: kept beside what now sits at the path (outdir__commit said where). */
	if (err && err != -EEXIST) {
		pr_err("cannot write %s: %s\n", t->path, strerror(-err));
		return err;
	}
	commit_err = err;
	/* The summary on stderr, as the profiles' (stdout is for data asked for); -q: none. */
	if (t->env->verbosity >= 0) {
		err = print_drops(stderr, bpf, evtrace__stats(t->trace),
				  t->ct ? codetracer_trace__stats(t->ct) : NULL);
		if (err)
			pr_err("printing the drop counters failed: %s\n", strerror(-err));
	}
	if (t->ct && t->env->verbosity >= 0) {
		uint64_t copied, missing;

		codetracer_trace__files(t->ct, &copied, &missing);
		fprintf(stderr, "sources copied: %" PRIu64 ", not copied: %" PRIu64 "%s\n", copied,
			missing, missing ? " (listed above)" : "");
	}
	if (!commit_err && strcmp(t->path, "-"))
		pr_note("wrote the trace to %s\n", t->path);
	return commit_err;
}

void tracefile__free(struct tracefile *t)
{
	if (!t)
		return;
	evtrace__free(t->trace);
	output__abort(t->out);
	outdir__abort(t->dir);
	free(t);
}
