// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * `bpftrace-prof dump -p PID…`: one pass of the task iterator (bpf/dump.bpf.c) gives every
 * thread's state and, for threads off the CPU, their kernel and user stacks, unwound in BPF with
 * the profiler's own tables and Python walker.  Threads on a CPU at that moment get the first
 * stacks the cpu sampler (at DUMP_HZ, for at most DUMP_RUNNING_WAIT_MS) takes of them.  Nothing
 * stops the process: the capture reads its memory while it runs.
 */
#include "cmd/dump.h"

#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "agg/collect.h"
#include "agg/parts.h"
#include "sym/symbolizer.h"
#include "track/tracker.h"
#include "agg/cpu_agg.h"
#include "sym/stackres.h"
#include "attach/loader.h"
#include "export/output.h"
#include "export/stackdump.h"
#include "prof_dump.h"
#include "prof_python.h"
#include "proc/procinfo.h"
#include "proc/syscalls.h"
#include "profile/build.h"
#include "profile/profile.h"
#include "profile/run.h"
#include "util/clock.h"
#include "util/log.h"

#define DUMP_HZ		     997
#define DUMP_RUNNING_WAIT_MS 1000
#define DUMP_UNWIND_WAIT_MS  10000
#define DUMP_MAX_LOCS	     (PROF_KERN_FRAMES + PROF_STACK_WORDS)

/* task->__state bits (include/linux/sched.h). */
#define TASK_INTERRUPTIBLE_   0x0001
#define TASK_UNINTERRUPTIBLE_ 0x0002
#define TASK_STOPPED_	      0x0004
#define TASK_TRACED_	      0x0008
#define TASK_DEAD_MASK_	      (0x0010 | 0x0020 | 0x0080)
#define TASK_NOLOAD_	      0x0400

static const char *state_name(const struct collect_dump_thread *t)
{
	uint32_t s = t->state;

	if (t->flags & PROF_DUMP_ON_CPU)
		return "running";
	if (s & TASK_STOPPED_)
		return "stopped";
	if (s & TASK_TRACED_)
		return "traced";
	if (s & TASK_DEAD_MASK_)
		return "exiting";
	if (s & TASK_UNINTERRUPTIBLE_)
		return s & TASK_NOLOAD_ ? "idle" : "disk-sleep";
	if (s & TASK_INTERRUPTIBLE_)
		return "sleeping";
	return "runnable"; /* TASK_RUNNING, off the CPU: preempted, waiting for one */
}

/* The cpu sample seen most for tid (any, when counts tie), NULL if none. */
static const struct cpu_agg_key *sampled(struct cpu_agg *cpu, uint32_t tid)
{
	const struct cpu_agg_key *k, *best = NULL;
	uint64_t n, most = 0;
	size_t it = 0;

	while (cpu && cpu_agg__next(cpu, &it, &k, &n))
		if (k->tid == tid && n > most) {
			best = k;
			most = n;
		}
	return best;
}

/* Until every thread that was on a CPU has a sample (or the wait is over). */
static int wait_running(struct collect *c, struct loader *l)
{
	int64_t deadline = clock__mono_us() + DUMP_RUNNING_WAIT_MS * 1000LL;
	const struct collect_dump_thread *t;
	size_t n;
	int err;

	for (;;) {
		bool missing = false;

		err = loader__poll(l, 10);
		if (err < 0)
			return err;
		err = collect__error(c);
		if (err)
			return err;
		t = collect__dump_threads(c, &n);
		for (size_t i = 0; i < n && !missing; i++)
			missing = (t[i].flags & PROF_DUMP_ON_CPU) &&
				  !sampled(collect__cpu(c), t[i].tid);
		if (!missing || clock__mono_us() >= deadline)
			return 0;
	}
}

/* -v: how long each way of capturing took (docs/usage.md, Stack dump: "How it captures"). */
static void log_capture(struct collect *c, int64_t iter_us, int64_t wait_us)
{
	const struct collect_dump_thread *t = NULL;
	size_t n = 0, running = 0;

	t = collect__dump_threads(c, &n);
	for (size_t i = 0; i < n; i++)
		running += (t[i].flags & PROF_DUMP_ON_CPU) != 0;
	pr_info("dump: %zu threads read by the task iterator in %" PRId64 " us (%.1f us a "
		"thread); %zu on a CPU, sampled within %" PRId64 " us\n",
		n, iter_us, n ? (double)iter_us / (double)n : 0.0, running, wait_us);
}

static int by_pid_tid(const void *a, const void *b)
{
	const struct collect_dump_thread *x = a, *y = b;

	if (x->pid != y->pid)
		return x->pid < y->pid ? -1 : 1;
	return x->tid < y->tid ? -1 : x->tid > y->tid;
}

/* Is one of locs[0..n) the kernel's system call entry? */
static bool in_syscall(const struct profile *p, const uint32_t *locs, uint32_t n)
{
	char buf[128];

	for (uint32_t i = 0; i < n; i++) {
		const char *name = profile__location_name(p, locs[i], buf, sizeof(buf));

		if (!strcmp(name, "do_syscall_64") || !strncmp(name, "entry_SYSCALL", 13))
			return true;
	}
	return false;
}

struct dump_out {
	struct stackdump_process *procs;
	size_t nprocs;
	struct stackdump_thread *threads;
	uint32_t *locs;
};

static void dump_out__free(struct dump_out *o)
{
	free(o->procs);
	free(o->threads);
	free(o->locs);
}

/* One thread's stack and labels into *st (its locations at locs). */
static int add_thread(struct profile *p, const struct build_inputs *in, struct collect *c,
		      const struct collect_dump_thread *t, struct stackdump_thread *st,
		      uint32_t *locs)
{
	const struct cpu_agg_key *k = NULL;
	int32_t kern = t->kern_stack, user = t->user_stack;
	uint32_t n = 0, py = t->py;
	int64_t one = 1;
	int err;

	*st = (struct stackdump_thread){.tid = t->tid, .state = state_name(t), .syscall_nr = -1};
	if (t->flags & PROF_DUMP_ON_CPU) {
		k = sampled(collect__cpu(c), t->tid);
		if (k) {
			kern = k->kern_stack;
			user = k->user_stack;
			py = k->py;
		} else {
			st->note = "on a CPU, and no sample caught it in time";
		}
	}
	/* As the cpu profile: kernel frames leafward of user frames. */
	err = build__locations(p, in->stacks, kern, locs, DUMP_MAX_LOCS, &n);
	if (!err)
		err = build__locations(p, in->stacks, user, locs, DUMP_MAX_LOCS, &n);
	if (!err)
		err = build__sample(p, in, t->pid, t->tid, locs, n, &one, build__py_flags(py));
	if (err)
		return err;
	st->locs = locs;
	st->nlocs = n;
	st->comm = procinfo__comm(in->procs, t->pid, t->tid);
	if (!st->comm || !*st->comm)
		st->comm = profile__intern(p, t->comm);
	st->thread_name = stackres__thread_name(in->stacks, t->pid, t->tid);
	if (st->thread_name)
		st->thread_name = profile__intern(p, st->thread_name);
	st->gil = py == PROF_PY_THREAD_GIL	? "held"
		  : py == PROF_PY_THREAD_NO_GIL ? "released"
						: NULL;
	if (!k && !(t->flags & (PROF_DUMP_ON_CPU | PROF_DUMP_USER)) && t->orig_ax >= 0 &&
	    in_syscall(p, locs, n)) {
		st->syscall_nr = t->orig_ax;
		st->syscall = syscalls__name((long)t->orig_ax);
	}
	if (!st->note && !n)
		st->note = t->flags & PROF_DUMP_KTHREAD ? "a kernel thread" : "no stack captured";
	return 0;
}

static int build_out(struct dump_out *o, struct profile **out, struct collect *c,
		     const struct build_inputs *in)
{
	static const char *const types[][2] = {{"threads", "count"}};
	const struct collect_dump_thread *src;
	struct collect_dump_thread *t = NULL;
	struct profile *p = NULL;
	size_t n;
	int err;

	src = collect__dump_threads(c, &n);
	err = build__profile(&p, in,
			     &(struct build_shape){.mode = "dump", .types = types, .ntypes = 1});
	if (err)
		return err;
	t = malloc((n ? n : 1) * sizeof(*t));
	o->threads = calloc(n ? n : 1, sizeof(*o->threads));
	o->procs = calloc(n ? n : 1, sizeof(*o->procs));
	o->locs = malloc((n ? n : 1) * DUMP_MAX_LOCS * sizeof(*o->locs));
	if (!t || !o->threads || !o->procs || !o->locs) {
		err = -ENOMEM;
		goto cleanup;
	}
	memcpy(t, src, n * sizeof(*t));
	qsort(t, n, sizeof(*t), by_pid_tid);
	for (size_t i = 0; i < n; i++) {
		struct stackdump_process *pr;

		err = add_thread(p, in, c, &t[i], &o->threads[i], o->locs + i * DUMP_MAX_LOCS);
		if (err)
			goto cleanup;
		if (!o->nprocs || o->procs[o->nprocs - 1].pid != t[i].pid) {
			const char *exe = procinfo__exe(in->procs, t[i].pid);
			const char *name = procinfo__process(in->procs, t[i].pid);

			pr = &o->procs[o->nprocs++];
			pr->pid = t[i].pid;
			pr->name = profile__intern(p, name ? name : "");
			pr->exe = profile__intern(p, exe ? exe : "");
			pr->threads = &o->threads[i];
		}
		o->procs[o->nprocs - 1].nthreads++;
	}
	*out = p;
	p = NULL;
cleanup:
	free(t);
	profile__free(p);
	return err;
}

static int write_out(const struct dump_env *env, const struct profile *p, const struct dump_out *o)
{
	struct output *out = NULL;
	FILE *f = stdout;
	int err;

	if (strcmp(env->output, "-")) {
		err = output__open(&out, env->output);
		if (err) {
			pr_err("cannot write %s: %s\n", env->output, strerror(-err));
			return err;
		}
		f = output__file(out);
	}
	err = env->json ? stackdump__write_json(f, p, o->procs, o->nprocs)
			: stackdump__write_text(f, p, o->procs, o->nprocs);
	if (!out) {
		if (fflush(f) && !err)
			err = -errno;
		return err;
	}
	if (err) {
		output__abort(out);
		return err;
	}
	return output__commit(out);
}

int dump__run(const struct dump_env *env)
{
	struct loader_opts lo = {
		.cpu = true, .cpu_hz = DUMP_HZ, .dump = true, .backlog_bytes = PROF_BACKLOG_BYTES};
	uint32_t pids[DUMP_MAX_PIDS];
	struct collect *c = NULL;
	struct run_parts parts = {0};
	bool parts_open = false;
	struct loader *l = NULL;
	struct profile *p = NULL;
	struct dump_out o = {0};
	struct profile_run run = {.cmdline = "dump"};
	struct build_inputs in = {.run = &run};
	int64_t t0, t1;
	int status = 1, err;

	for (unsigned i = 0; i < env->npids; i++) {
		err = procinfo__tgid(&pids[i], env->pids[i]);
		if (err) {
			pr_err("no process %u: %s\n", env->pids[i], strerror(-err));
			return 2;
		}
	}
	err = loader__open(&l, &lo);
	if (err)
		goto cleanup;
	err = run_parts__open(&parts, l,
			      &(struct run_parts_opts){.modes = MODE_CPU | MODE_DUMP,
						       .unwind_tables = true,
						       .python_frames = env->python_frames});
	parts_open = !err;
	if (!err)
		err = collect__new(&c,
				   &(struct collect_opts){.modes = MODE_CPU | MODE_DUMP,
							  .pids = pids,
							  .npids = env->npids},
				   &parts);
	if (!err)
		err = collect__start_events(c, collect__on_event, c);
	if (err) {
		pr_err("setting up the capture failed: %s\n", strerror(-err));
		goto cleanup;
	}
	for (unsigned i = 0; i < env->npids; i++) {
		err = loader__add_target(l, pids[i]);
		if (!err)
			err = collect__add_pid(c, pids[i]);
		if (err) {
			pr_err("adding pid %u failed: %s\n", pids[i], strerror(-err));
			status = err == -ESRCH ? 2 : 1;
			goto cleanup;
		}
	}
	/* The unwind tables of what the targets map, so user stacks are complete. */
	err = tracker__wait_unwinder(parts.tracker, DUMP_UNWIND_WAIT_MS);
	if (err) {
		pr_err("loading unwind tables failed: %s\n", strerror(-err));
		goto cleanup;
	}
	err = collect__attach_modes(c); /* the sampler, for threads found running */
	if (err)
		goto cleanup;
	t0 = clock__mono_us();
	for (unsigned i = 0; i < env->npids; i++) {
		err = loader__dump(l, pids[i]);
		if (err) {
			pr_err("reading the threads of %u failed: %s\n", pids[i], strerror(-err));
			goto cleanup;
		}
	}
	t1 = clock__mono_us();
	err = wait_running(c, l);
	loader__stop_cpu(l);
	log_capture(c, t1 - t0, clock__mono_us() - t1);
	if (!err)
		err = loader__poll(l, 0) < 0 ? -EIO : 0;
	if (!err)
		err = stackres__debug(parts.stacks, STACKRES_LAST);
	if (!err)
		err = collect__sync(c);
	if (err) {
		pr_err("capturing the stacks failed: %s\n", strerror(-err));
		goto cleanup;
	}
	in.stacks = parts.stacks; /* symbolized: collect__sync above */
	in.procs = parts.procs;
	run.collect.bad_records = collect__bad_records(c);
	run.collect.stacks_capped = collect__stacks_capped(c);
	run.sym = symbolizer__stats(parts.sym);
	run.unw = tracker__unwinder_stats(parts.tracker);
	run.unw_failed = tracker__unwinder_failed(parts.tracker);
	err = loader__counters(l, run.bpf);
	if (!err)
		err = build_out(&o, &p, c, &in);
	if (err) {
		pr_err("building the dump failed: %s\n", strerror(-err));
		goto cleanup;
	}
	if (!o.nprocs) {
		pr_err("no thread found: the process exited or cannot be read (run with -v)\n");
		status = 2;
		goto cleanup;
	}
	status = write_out(env, p, &o) ? 1 : 0;
cleanup:
	dump_out__free(&o);
	profile__free(p);
	collect__free(c);
	if (parts_open)
		run_parts__close(&parts);
	loader__free(l);
	return status;
}
