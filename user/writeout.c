// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
#include "writeout.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "agg/calls_agg.h"
#include "agg/collect.h"
#include "agg/heap_agg.h"
#include "agg/parts.h"
#include "sym/symbolizer.h"
#include "track/tracker.h"
#include "attach/calls_attach.h"
#include "attach/loader.h"
#include "cli.h"
#include "export/format.h"
#include "export/growth.h"
#include "export/metrics.h"
#include "export/oldblocks.h"
#include "export/outdir.h"
#include "export/push.h"
#include "export/status.h"
#include "export/text.h"
#include "profile/build.h"
#include "profile/calls_profile.h"
#include "profile/cpu_profile.h"
#include "profile/offcpu_profile.h"
#include "profile/heap_profile.h"
#include "profile/profile.h"
#include "util/clock.h"
#include "profile/run.h"
#include "proc/maps.h"
#include "proc/procinfo.h"
#include "util/log.h"

/* One mode's profile to path in -f's format, atomically. */
static int write_one(const struct profile *p, const struct env *env, const char *path)
{
	struct format_opts o = {
		.format = env->format,
		.top = env->top,
		.svg_type = env->svg_type,
		.icicle = env->icicle,
		.cmdline = env->cmdline,
		/* the series' names are new; --retain counts its files */
		.no_backup = env->output_dir != NULL,
	};

	return format__write(p, path, &o);
}

static const struct {
	unsigned bit;
	const char *name;
} modes[] = {
	{MODE_HEAP, "heap"},
	{MODE_CPU, "cpu"},
	{MODE_OFFCPU, "offcpu"},
	{MODE_CALLS, "calls"},
};
#define NMODES (sizeof(modes) / sizeof(modes[0]))

struct writeout {
	struct collect *c;
	const struct run_parts *parts;
	const struct env *env;
	uint64_t bpf_prev[PROF_CNT__COUNT]; /* continuous mode: counters at the interval's start */
	unsigned intervals;
	unsigned written;	      /* continuous mode: profiles written so far */
	struct outdir_series *series; /* continuous mode: names and --retain */
	struct run_report_stats stats;
	const struct push *push;
	const struct cgroup_stats *cgroup;
	const uint64_t *oom; /* PROF_OOM_STATS (oomout.h) */
	writeout_sink_fn sink;
	void *sink_ctx;
	double leaked_bytes;   /* leak_list's, for --fail-on-leak */
	struct growth *growth; /* continuous --heap: in use per stack at the last interval ends */
	bool growth_failed;
};

int writeout__new(struct writeout **out, struct collect *c, const struct run_parts *parts,
		  const struct env *env)
{
	struct writeout *r = calloc(1, sizeof(*r));

	if (!r)
		return -ENOMEM;
	r->c = c;
	r->parts = parts;
	r->env = env;
	*out = r;
	return 0;
}

void writeout__free(struct writeout *r)
{
	if (!r)
		return;
	outdir_series__free(r->series);
	growth__free(r->growth);
	free(r);
}

void writeout__set_push(struct writeout *r, const struct push *push)
{
	r->push = push;
}

void writeout__set_cgroup_stats(struct writeout *r, const struct cgroup_stats *st)
{
	r->cgroup = st;
}

void writeout__set_oom_stats(struct writeout *r, const uint64_t *oom)
{
	r->oom = oom;
}

void writeout__set_sink(struct writeout *r, writeout_sink_fn fn, void *ctx)
{
	r->sink = fn;
	r->sink_ctx = ctx;
}

static int build_mode(struct profile **out, unsigned mode, struct collect *c, const struct env *env,
		      const struct build_inputs *in)
{
	const char *const *notes = NULL;
	size_t nnotes = 0;

	switch (mode) {
	case MODE_HEAP:
		return heap_profile__build(
			out, collect__heap(c), in, env->sample_bytes,
			&(struct heap_age){.now = clock__mono_ns(), .min_age_ns = env->min_age_ns});
	case MODE_CPU:
		return cpu_profile__build(out, collect__cpu(c), in, env->cpu_hz);
	case MODE_OFFCPU:
		return offcpu_profile__build(out, collect__offcpu(c), in);
	case MODE_CALLS:
		if (collect__calls_attach(c))
			nnotes = calls_attach__notes(collect__calls_attach(c), &notes);
		return calls_profile__build(out, collect__calls(c), in, notes, nnotes);
	}
	return -EINVAL;
}

/*
 * Every mode's profile of [start_wall_ns, +duration_ns) into ps[] (NULL where building failed,
 * reported); counters are those since `since` (NULL: since the start).  Returns 0 or the last
 * error.
 */
int writeout__run_now(struct profile_run *run, struct maps_stats *maps, struct collect *c,
		      const struct run_parts *parts, const char *cmdline, int64_t time_nanos)
{
	int err;

	*run = (struct profile_run){
		.cmdline = cmdline,
		.time_nanos = time_nanos,
		.collect = {.bad_records = collect__bad_records(c),
			    .stacks_capped = collect__stacks_capped(c)},
		.sym = symbolizer__stats(parts->sym),
		.unw = tracker__unwinder_stats(parts->tracker),
		.unw_failed = tracker__unwinder_failed(parts->tracker),
		.attach = loader__attach_stats(parts->loader),
		.maps = maps,
	};
	tracker__hold_stats(parts->tracker, &run->collect.hold_timeouts, &run->collect.hold_gone);
	tracker__dlopen_stats(parts->tracker, &run->collect.dlopen_holds,
			      &run->collect.dlopen_hold_timeouts);
	maps__stats(maps);
	err = loader__counters(parts->loader, run->bpf);
	if (err)
		memset(run->bpf, 0, sizeof(run->bpf));
	return err;
}

/* The counters the writeout keeps itself, and --push's (into push), into run. */
static void run_ours(const struct writeout *r, struct profile_run *run, struct push_stats *push)
{
	run->report = r->stats;
	run->cgroup = r->cgroup;
	run->oom = r->oom;
	if (r->push) {
		push__stats(r->push, push);
		run->push = (const uint64_t *)push;
	}
}

static int build_all(struct writeout *r, struct profile *ps[NMODES], int64_t start_wall_ns,
		     int64_t duration_ns, const uint64_t *since)
{
	struct collect *c = r->c;
	const struct run_parts *parts = r->parts;
	struct profile_run run;
	struct push_stats push;
	struct maps_stats maps;
	struct build_inputs in = {
		.stacks = parts->stacks,
		.procs = parts->procs,
		.run = &run,
	};
	int ret;

	for (size_t i = 0; i < NMODES; i++)
		ps[i] = NULL;
	/* Whoever reads stacks and symbols reads them once the worker is done with them (out of
	 * memory there is the run's failure: collect__error). */
	collect__sync(c);
	ret = writeout__run_now(&run, &maps, c, parts, r->env->cmdline, start_wall_ns);
	run.duration_nanos = duration_ns;
	run_ours(r, &run, &push);
	if (ret) {
		pr_err("reading the BPF counters failed: %s\n", strerror(-ret));
		return ret;
	}
	for (int i = 0; since && i < PROF_CNT__COUNT; i++)
		run.bpf[i] -= since[i];
	for (size_t i = 0; i < NMODES; i++) {
		int err;

		if (!(r->env->modes & modes[i].bit))
			continue;
		err = build_mode(&ps[i], modes[i].bit, c, r->env, &in);
		if (!err)
			err = build__main_mapping(ps[i], in.procs);
		if (err) {
			pr_err("building the %s profile failed: %s\n", modes[i].name,
			       strerror(-err));
			ret = err;
		}
	}
	return ret;
}

static void give_sink(struct writeout *r, struct profile *ps[NMODES], bool last)
{
	const struct profile *built[NMODES];
	size_t n = 0;

	for (size_t i = 0; i < NMODES; i++)
		if (ps[i])
			built[n++] = ps[i];
	if (r->sink)
		r->sink(r->sink_ctx, built, n, last);
}

static void count_alive(void *ctx, uint32_t pid)
{
	(void)pid;
	(*(uint64_t *)ctx)++;
}

/*
 * --growth-intervals: this interval's end kept (after build_all: symbols are in).  A failure to
 * keep it is said once; the list then compares fewer ends.
 */
static void growth_keep(struct writeout *r)
{
	int err = 0;

	if (!r->env->growth_intervals || !collect__heap(r->c))
		return;
	if (!r->growth)
		err = growth__new(&r->growth, r->env->growth_intervals);
	if (!err)
		err = growth__record(r->growth, collect__heap(r->c), (uint64_t)clock__mono_ns());
	if (err && !r->growth_failed)
		pr_warn("--growth-intervals: %s; the growth list compares fewer intervals\n",
			strerror(-err));
	r->growth_failed |= err != 0;
}

/* The list of the stacks that grew, to stderr: at the end (at each interval with -v). */
static void growth_list(struct writeout *r, bool last)
{
	const struct env *env = r->env;

	if (!r->growth || !env->top || env->verbosity < 0 || !(last || env->verbosity > 0))
		return;
	if (growth__write(stderr, r->growth, r->parts->stacks, env->top))
		pr_warn("--growth-intervals: out of memory for the list\n");
}

int writeout__metrics(struct writeout *r, struct metrics *m, struct metrics_gauges g)
{
	struct push_stats push;
	struct profile_run run;
	struct maps_stats maps;
	struct profile *p = NULL;
	char *text = NULL;
	size_t len = 0;
	int err;

	/* The worker's counters are read as they are now (no wait for it: a second's staleness
	 * is nothing to a scrape); every value is cumulative, as Prometheus counters are. */
	err = profile__new(&p, "metrics");
	if (!err)
		err = writeout__run_now(&run, &maps, r->c, r->parts, r->env->cmdline, 0);
	run_ours(r, &run, &push);
	if (!err)
		err = profile_run__apply(&run, p);
	if (!err && collect__heap(r->c))
		err = run__add_heap_stats(p, heap_agg__stats(collect__heap(r->c)));
	if (!err && collect__calls(r->c))
		err = run__add_call_stats(p, calls_agg__stats(collect__calls(r->c)));
	tracker__each_alive(r->parts->tracker, count_alive, &g.processes_tracked);
	metrics__read_self(&g);
	if (!err)
		err = metrics__render(&text, &len, p, &g);
	if (!err)
		err = metrics__set(m, text, len);
	free(text);
	profile__free(p);
	return err;
}

const struct growth *writeout__growth(const struct writeout *r)
{
	return r->growth;
}

/*
 * What stayed in use, to f (NULL: counted only): the blocks at least --min-age old, or without
 * it every block never freed (-- CMD) or those in use for half the run; stacks the leak rules
 * suppress apart.  The bytes counted are --fail-on-leak's.
 */
static void leak_list(struct writeout *r, FILE *f, int64_t duration_ns)
{
	const struct env *env = r->env;
	uint64_t min_age = env->min_age_ns ? env->min_age_ns
			   : env->cmd	   ? 0
					   : (uint64_t)duration_ns / 2;
	struct oldblocks_totals t;
	char title[64], age[32];

	if (!collect__heap(r->c))
		return;
	if (!min_age)
		snprintf(title, sizeof(title), "never freed");
	else
		snprintf(title, sizeof(title), "in use for at least %s",
			 oldblocks__age(age, sizeof(age), min_age));
	if (!oldblocks__write(f, collect__heap(r->c), r->parts->stacks, (uint64_t)clock__mono_ns(),
			      min_age, env->top, env->suppress, title, &t))
		r->leaked_bytes = t.bytes;
}

uint64_t writeout__leaked(const struct writeout *r)
{
	return (uint64_t)llround(r->leaked_bytes);
}

int writeout__write(struct writeout *r, int64_t start_wall_ns, int64_t duration_ns)
{
	const struct env *env = r->env;
	struct profile *ps[NMODES];
	char paths[NMODES][PATH_MAX];
	bool written[NMODES] = {false};
	int ret;

	collect__snapshot(r->c, true);
	ret = build_all(r, ps, start_wall_ns, duration_ns, NULL);
	for (size_t i = 0; i < NMODES; i++) {
		int err;

		if (!ps[i])
			continue;
		cli__output_path(env, modes[i].name, paths[i], sizeof(paths[i]));
		/* memtrace: the session wrote the trace as the events came. */
		err = env->format == FMT_MEMTRACE ? 0 : write_one(ps[i], env, paths[i]);
		if (err)
			ret = err;
		written[i] = !err && env->format != FMT_MEMTRACE && strcmp(paths[i], "-");
	}
	/*
	 * The summary, on stderr as perf's: stdout carries only data asked for (-o -), and a
	 * `-- CMD`'s output may be there.  Not with -q, nor with -f text: that report is the
	 * output, written once.
	 */
	for (size_t i = 0; i < NMODES; i++) {
		if (!ps[i] || !env->top || env->verbosity < 0 || env->format == FMT_TEXT)
			continue;
		text__write(ps[i], stderr, env->top);
		if (modes[i].bit == MODE_HEAP)
			leak_list(r, stderr, duration_ns);
		/* --live without --output-dir: its screens' ends, and this one */
		if (modes[i].bit == MODE_HEAP && r->growth) {
			growth_keep(r);
			growth_list(r, true);
		}
	}
	/* --fail-on-leak's count, printed or not */
	if (env->leak_gate && (env->verbosity < 0 || !env->top || env->format == FMT_TEXT))
		leak_list(r, NULL, duration_ns);
	for (size_t i = 0; i < NMODES; i++)
		if (written[i])
			pr_note("wrote %s profile to %s\n", ps[i]->mode, paths[i]);
	give_sink(r, ps, true);
	for (size_t i = 0; i < NMODES; i++)
		profile__free(ps[i]);
	return ret;
}

/* The series of interval profiles in --output-dir, from the first interval (the run's start). */
static int open_series(struct writeout *r, int64_t run_start_ns)
{
	int fd = open(r->env->output_dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC), err;

	if (fd < 0)
		return -errno;
	err = outdir_series__new(&r->series, fd, r->env->retain, run_start_ns);
	close(fd);
	return err;
}

int writeout__interval(struct writeout *r, int64_t start_wall_ns, int64_t duration_ns, bool last)
{
	const struct env *env = r->env;
	struct profile *ps[NMODES];
	int ret, err;

	collect__snapshot(r->c, last);
	ret = build_all(r, ps, start_wall_ns, duration_ns, r->bpf_prev);
	growth_keep(r);
	growth_list(r, last);
	err = r->series ? 0 : open_series(r, start_wall_ns);
	if (err)
		pr_err("cannot use --output-dir %s: %s\n", env->output_dir, strerror(-err));
	for (size_t i = 0; i < NMODES; i++) {
		char name[128], path[PATH_MAX];

		if (!ps[i]) {
			if (env->modes & modes[i].bit) /* not built (said): lost as well */
				r->stats.interval_writes_failed++;
			continue;
		}
		if (r->series) {
			err = outdir_series__name(r->series, name, sizeof(name), start_wall_ns,
						  modes[i].name);
			if (!err && snprintf(path, sizeof(path), "%s/%s", env->output_dir, name) >=
					    (int)sizeof(path))
				err = -ENAMETOOLONG;
			if (!err)
				err = write_one(ps[i], env, path);
			else
				pr_err("cannot write the %s profile: %s\n", modes[i].name,
				       strerror(-err));
		}
		/* Lost, and counted: the next profiles and the end of the run say so. */
		if (err) {
			r->stats.interval_writes_failed++;
			ret = err;
			continue;
		}
		/* Every interval's files with -v; how many at the end. */
		pr_info("wrote %s profile to %s\n", ps[i]->mode, path);
		r->written++;
		err = outdir_series__written(r->series, modes[i].name, name);
		if (err) {
			pr_warn("--retain in %s: %s\n", env->output_dir, strerror(-err));
			ret = err;
		}
	}
	if (last)
		pr_note("wrote %u profile%s to %s\n", r->written, r->written == 1 ? "" : "s",
			env->output_dir);
	if (last && r->stats.interval_writes_failed) {
		pr_err("%" PRIu64 " interval profiles were not written to %s "
		       "(interval_writes_failed)\n",
		       r->stats.interval_writes_failed, env->output_dir);
		if (!ret)
			ret = -EIO;
	}
	give_sink(r, ps, last);
	for (size_t i = 0; i < NMODES; i++)
		profile__free(ps[i]);
	r->intervals++;
	/* The next interval's counters start here; so do its aggregates. */
	err = loader__counters(r->parts->loader, r->bpf_prev);
	if (!err)
		err = collect__new_interval(r->c);
	return err ? err : ret;
}

int writeout__peek(struct writeout *r, int64_t start_wall_ns, int64_t duration_ns)
{
	struct profile *ps[NMODES];
	int ret;

	ret = build_all(r, ps, start_wall_ns, duration_ns, NULL);
	growth_keep(r);
	give_sink(r, ps, false);
	for (size_t i = 0; i < NMODES; i++)
		profile__free(ps[i]);
	return ret;
}

unsigned writeout__output_paths(char (*out)[PATH_MAX], unsigned max, const struct env *env)
{
	unsigned n = 0;

	if (env->output_dir)
		return 0;
	/* Event traces and memtrace: one file whatever the modes. */
	if (env->format == FMT_MEMTRACE || format__event_trace(env->format)) {
		if (max)
			snprintf(out[n++], PATH_MAX, "%s", env->output);
		return n;
	}
	for (size_t i = 0; i < NMODES && n < max; i++)
		if (env->modes & modes[i].bit)
			cli__output_path(env, modes[i].name, out[n++], PATH_MAX);
	return n;
}

void writeout__say_start(const struct writeout *r, bool cmd_own_probes)
{
	const struct env *env = r->env;
	const struct loader_attach_stats *as = loader__attach_stats(r->parts->loader);
	const char *names[CLI_MAX_PIDS], *paths[NMODES];
	char buf[NMODES][PATH_MAX];
	struct status_plan p = {
		.modes = env->modes,
		.cpu_hz = env->cpu_hz,
		.sample_bytes = env->sample_bytes,
		.heap_preload = r->parts->loader && loader__heap_otel_only(r->parts->loader),
		.heap_otel = as ? (unsigned)as->heap_procs_otel : 0,
		.heap_uprobes = as ? (unsigned)as->heap_procs_uprobes : 0,
		.cmd_own_probes = cmd_own_probes,
		.pids = env->pids,
		.pid_names = names,
		.npids = env->npids,
		.cmd = env->cmd ? env->cmd[0] : NULL,
		.cgroup = env->cgroup,
		.container = env->container,
		.all = env->all,
		.duration = env->duration,
		.paths = paths,
		.npaths = writeout__output_paths(buf, NMODES, env),
		.folder = env->format == FMT_CODETRACER,
		.interval = env->interval,
		.output_dir = env->output_dir,
		.retain = env->retain,
		.push_url = env->push_url,
	};
	int err;

	for (unsigned i = 0; i < p.npaths; i++)
		paths[i] = buf[i];
	for (unsigned i = 0; i < env->npids; i++)
		names[i] = procinfo__process(r->parts->procs, env->pids[i]);
	err = status__say_start(&p);
	if (err)
		pr_warn("cannot say what runs: %s\n", strerror(-err));
}

int writeout__prepare_dir(const struct env *env)
{
	struct stat st;

	if (mkdir(env->output_dir, 0700) && errno != EEXIST)
		return -errno;
	if (stat(env->output_dir, &st))
		return -errno;
	return S_ISDIR(st.st_mode) ? 0 : -ENOTDIR;
}
