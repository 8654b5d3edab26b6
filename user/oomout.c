// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
#include "oomout.h"

#include <errno.h>
#include <inttypes.h>
#include <limits.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "agg/collect.h"
#include "agg/heap_agg.h"
#include "agg/parts.h"
#include "attach/oom_attach.h"
#include "cli.h"
#include "export/format.h"
#include "export/push.h"
#include "proc/maps.h"
#include "proc/memlimit.h"
#include "proc/procinfo.h"
#include "profile/build.h"
#include "profile/heap_profile.h"
#include "profile/profile.h"
#include "profile/run.h"
#include "util/clock.h"
#include "util/escape.h"
#include "util/log.h"
#include "writeout.h"

#define OOM_IDX(f, n, d, k) OOM_##f,
enum { PROF_OOM_STATS(OOM_IDX) OOM__COUNT };
#undef OOM_IDX

/* One victim's profile, written by a thread of its own. */
struct oom_job {
	pthread_t thread;
	bool started; /* the thread runs (else the write was done, or failed, on the loop) */
	struct profile *p;
	uint64_t *failed; /* the writer's oom_writes_failed */
	int err;
	uint32_t pid;
	char comm[64]; /* escaped */
	char path[PATH_MAX];
};

struct oomout {
	struct oomout_opts o;
	uint64_t stats[OOM__COUNT];
	struct oom_job **jobs;
	size_t njobs, cap;
};

static void *write_job(void *arg)
{
	struct oom_job *j = arg;
	struct format_opts fo = {.format = FMT_PPROF, .no_backup = true};

	j->err = format__write(j->p, j->path, &fo); /* says why on failure */
	if (j->err)
		__atomic_add_fetch(j->failed, 1, __ATOMIC_RELAXED);
	profile__free(j->p);
	j->p = NULL;
	return NULL;
}

/* Where the file goes: --output-dir, else beside -o (the working directory for -o -). */
static int file_path(char *out, size_t size, const struct env *env, int64_t wall_ns, uint32_t pid)
{
	const char *slash = env->output ? strrchr(env->output, '/') : NULL;
	time_t t = (time_t)(wall_ns / 1000000000LL);
	char stamp[32];
	struct tm tm;
	int dlen = 1, n;
	const char *dir = ".";

	if (!gmtime_r(&t, &tm) || !strftime(stamp, sizeof(stamp), "%Y%m%dT%H%M%SZ", &tm))
		return -EINVAL;
	if (env->output_dir) {
		dir = env->output_dir;
		dlen = (int)strlen(dir);
	} else if (slash && strcmp(env->output, "-")) {
		dir = env->output;
		dlen = slash == env->output ? 1 : (int)(slash - env->output);
	}
	n = snprintf(out, size, "%.*s/%s.oom.%u.heap.pb.gz", dlen, dir, stamp, pid);
	return n < 0 || (size_t)n >= size ? -ENAMETOOLONG : 0;
}

/* What the profile says of the kill: one comment, and labels on every sample. */
static int describe(struct profile *p, const struct prof_oom_event *e, uint32_t pid,
		    const char *comm, const struct memlimit *ml, const char *when)
{
	char adj[32] = "unknown", limit[64] = "none read";
	int err;

	if (e->flags & PROF_OOM_ADJ_KNOWN)
		snprintf(adj, sizeof(adj), "%d", e->oom_score_adj);
	if (ml->limit)
		snprintf(limit, sizeof(limit), "%" PRIu64 " bytes (%s)", ml->limit,
			 ml->v1 ? "memory.limit_in_bytes" : "memory.max");
	err = profile__add_comment(p,
				   "OOM kill: process %u (%s) chosen by the OOM killer at %s; "
				   "oom_score_adj %s; memory cgroup %s%s, limit %s; its memory "
				   "in use by stack at that moment",
				   pid, comm, when, adj, ml->path[0] ? ml->path : "unknown",
				   ml->path[0] ? (ml->v1 ? " (v1)" : " (v2)") : "", limit);
	if (!err)
		err = profile__add_label(p, "oom_kill", "true", 0, true);
	/* A string: pprof's numeric label leaves 0, the default, unwritten. */
	if (!err && (e->flags & PROF_OOM_ADJ_KNOWN))
		err = profile__add_label(p, "oom_score_adj", adj, 0, false);
	if (!err && ml->path[0])
		err = profile__add_label(p, "memory_cgroup", ml->path, 0, false);
	if (!err && ml->limit)
		err = profile__add_label(p, "memory_limit", NULL, (int64_t)ml->limit, false);
	return err;
}

static int add_job(struct oomout *o, struct oom_job *j)
{
	if (o->njobs == o->cap) {
		size_t cap = o->cap ? 2 * o->cap : 8;
		struct oom_job **n = realloc(o->jobs, cap * sizeof(*n));

		if (!n)
			return -ENOMEM;
		o->jobs = n;
		o->cap = cap;
	}
	o->jobs[o->njobs++] = j;
	return 0;
}

/* The profile of pid as the kill found it, and the job that writes it. */
static int build_job(struct oomout *o, const struct prof_oom_event *e, uint32_t pid,
		     struct oom_job *j, const char *when, int64_t wall_ns)
{
	const struct run_parts *parts = o->o.parts;
	struct build_inputs in = {.stacks = parts->stacks, .procs = parts->procs};
	struct profile_run run;
	struct maps_stats maps;
	struct memlimit ml = {.limit = 0};
	int err;

	/* Its stacks symbolized first, while its mappings can still be read. */
	err = collect__sync(o->o.c);
	/* BPFTRACE_PROF_FAULT_OOM_LATE_MS (tests only): the cgroup asked for that much later, as by
	 * a loader behind on its events, when a runtime has removed it. */
	clock__fault_delay("BPFTRACE_PROF_FAULT_OOM_LATE_MS");
	/* The cgroup as BPF named it at the kill (the process leaves it as it exits, a runtime
	 * removes it); else asked while the process may still be there. */
	if (e->flags & PROF_OOM_MEMCG)
		memlimit__from_kill(&ml, e);
	/* Nothing read at the kill (an older kernel), or nothing named and no handle to open its id
	 * by (no CAP_DAC_READ_SEARCH): asked, BPF's limit kept when it read one. */
	if (!(e->flags & PROF_OOM_MEMCG) || !ml.path[0]) {
		struct memlimit asked;

		if (!memlimit__read_host(&asked, pid)) {
			if ((e->flags & PROF_OOM_MEMCG) && ml.limit)
				asked.limit = ml.limit;
			ml = asked;
		}
	}
	writeout__run_now(&run, &maps, o->o.c, parts, o->o.env->cmdline, wall_ns);
	/* What the allocation values cover: from the run's (or the interval's) start to the kill.
	 */
	if (o->o.since_wall && *o->o.since_wall > 0 && *o->o.since_wall <= wall_ns) {
		run.time_nanos = *o->o.since_wall;
		run.duration_nanos = wall_ns - *o->o.since_wall;
	}
	run.oom = o->stats;
	in.run = &run;
	if (!err)
		err = heap_profile__build(&j->p, collect__heap(o->o.c), &in, o->o.env->sample_bytes,
					  &(struct heap_age){.now = e->ts, .pid = pid});
	if (!err)
		err = build__main_mapping(j->p, parts->procs);
	if (!err)
		err = describe(j->p, e, pid, j->comm, &ml, when);
	if (!err)
		err = file_path(j->path, sizeof(j->path), o->o.env, wall_ns, pid);
	if (!err) {
		char esc[2 * MEMLIMIT_PATH_MAX];

		pr_note("the OOM killer chose process %u (%s), oom_score_adj %d, memory cgroup %s "
			"(limit %" PRIu64 " bytes): its heap, %" PRId64 " bytes in use, to %s\n",
			pid, j->comm, e->oom_score_adj,
			ml.path[0] ? escape__str(esc, sizeof(esc), ml.path) : "unknown", ml.limit,
			profile__type_total(j->p,
					    (uint32_t)profile__type_index(j->p, "inuse_space")),
			j->path);
	}
	return err;
}

static void on_victim(void *ctx, const struct prof_oom_event *e)
{
	struct oomout *o = ctx;
	struct heap_agg *h = collect__heap(o->o.c);
	int64_t wall_ns = clock__real_ns() - (clock__mono_ns() - (int64_t)e->ts);
	char comm[PROF_COMM_LEN + 1], ecomm[64], when[40];
	time_t t = (time_t)(wall_ns / 1000000000LL);
	uint32_t pid = e->pid;
	struct oom_job *j;
	struct tm tm;
	int err;

	if (!h)
		return;
	/* An older kernel names the thread: its process, while it is there. */
	if ((e->flags & PROF_OOM_TID_ONLY) && procinfo__tgid(&pid, e->tid))
		pid = e->tid;
	/* Wide scopes hear of every victim: ours are those whose heap we follow. */
	if (o->o.env->wide && !heap_agg__live_count(h, pid)) {
		pr_debug("OOM kill of process %u: not profiled\n", pid);
		return;
	}
	o->stats[OOM_kills]++;
	memcpy(comm, e->comm, PROF_COMM_LEN);
	comm[PROF_COMM_LEN] = 0;
	if (!comm[0] && procinfo__process(o->o.parts->procs, pid))
		snprintf(comm, sizeof(comm), "%s", procinfo__process(o->o.parts->procs, pid));
	escape__str(ecomm, sizeof(ecomm), comm); /* the target's bytes: never raw */
	if (!gmtime_r(&t, &tm) || !strftime(when, sizeof(when), "%Y-%m-%dT%H:%M:%SZ", &tm))
		snprintf(when, sizeof(when), "?");
	j = calloc(1, sizeof(*j));
	err = j ? add_job(o, j) : -ENOMEM;
	if (err) {
		free(j);
		goto failed;
	}
	j->pid = pid;
	j->failed = &o->stats[OOM_writes_failed];
	snprintf(j->comm, sizeof(j->comm), "%s", ecomm);
	err = build_job(o, e, pid, j, when, wall_ns);
	if (err)
		goto failed;
	/* Sent from the loop (the pusher is the loop's); the copy it queued is its own. */
	if (o->o.push && push__submit_profile(o->o.push, j->p))
		pr_warn("push: the OOM kill profile of process %u not queued\n", pid);
	if (!pthread_create(&j->thread, NULL, write_job, j))
		j->started = true;
	else
		write_job(j); /* no thread to be had: written here, late rather than never */
	return;
failed:
	pr_err("the OOM killer chose process %u (%s): its heap profile could not be built: %s\n",
	       pid, ecomm, strerror(-err));
	if (j) {
		profile__free(j->p);
		j->p = NULL;
		j->err = err;
	}
	o->stats[OOM_writes_failed]++;
}

int oomout__new(struct oomout **out, const struct oomout_opts *opts)
{
	struct oomout *o = calloc(1, sizeof(*o));
	int err;

	if (!o)
		return -ENOMEM;
	o->o = *opts;
	err = oom_attach__watch(opts->parts->loader);
	if (err) {
		o->stats[OOM_unwatched] = 1;
		pr_info("OOM kills not watched: the kernel has no oom/mark_victim tracepoint "
			"(%s)\n",
			strerror(-err));
	} else {
		collect__set_oom(opts->c, on_victim, o);
	}
	*out = o;
	return 0;
}

const uint64_t *oomout__stats(const struct oomout *o)
{
	return o->stats;
}

int oomout__finish(struct oomout *o)
{
	int ret = 0;

	for (size_t i = 0; o && i < o->njobs; i++) {
		struct oom_job *j = o->jobs[i];

		if (j->started) {
			pthread_join(j->thread, NULL);
			j->started = false;
		}
		if (j->err)
			ret = -EIO;
	}
	return ret;
}

void oomout__say(const struct oomout *o)
{
	for (size_t i = 0; o && i < o->njobs; i++) {
		const struct oom_job *j = o->jobs[i];

		if (j->err)
			pr_err("process %u (%s) was killed by the OOM killer; its heap profile was "
			       "not written (oom_writes_failed)\n",
			       j->pid, j->comm);
		else
			pr_note("process %u (%s) was killed by the OOM killer; its heap at that "
				"moment is in %s\n",
				j->pid, j->comm, j->path);
	}
}

void oomout__free(struct oomout *o)
{
	if (!o)
		return;
	oomout__finish(o);
	for (size_t i = 0; i < o->njobs; i++) {
		profile__free(o->jobs[i]->p);
		free(o->jobs[i]);
	}
	free(o->jobs);
	free(o);
}
