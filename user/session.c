// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
#include "session.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <dirent.h>
#include <sys/ptrace.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "attach/calls_attach.h"
#include "cli.h"
#include "proc/cgroup.h"
#include "proc/child.h"
#include "proc/cmdpath.h"
#include "proc/pidfd.h"
#include "agg/collect.h"
#include "agg/parts.h"
#include "track/tracker.h"
#include "track/holds.h"
#include "attach/loader.h"
#include "util/clock.h"
#include "util/log.h"
#include "attach/heap_attach.h"
#include "attach/heap_front.h"
#include "attach/otel_notes.h"
#include "export/live.h"
#include "export/metrics.h"
#include "trace/memtrace_rec.h"
#include "export/push.h"
#include "export/status.h"
#include "oomout.h"
#include "writeout.h"
#include "tracefile.h"
#include "proc/preload.h"
#include "proc/procinfo.h"
#include "profile/run.h"

/* How long `-- CMD` has between SIGTERM and SIGKILL when profiling stops before it exits. */
#define STOP_GRACE_NS	     (2 * 1000000000LL)
/* How long the start waits for the unwind tables of what the targets map (a few ms each). */
#define UNWIND_START_WAIT_MS 10000

static volatile sig_atomic_t stop_signal;
static volatile sig_atomic_t signal_count; /* a second SIGINT/SIGTERM cuts the grace short */

/* SIGCHLD only interrupts the ring buffer's wait, so a process of the tree stopped at its exec
 * waits for us a moment, not a whole poll period. */
static void on_sigchld(int sig)
{
	(void)sig;
}

static void on_signal(int sig)
{
	stop_signal = sig;
	signal_count++;
}

/* CMD's allocators, probed before it runs. */
static int attach_heap_cmd(struct loader *l, const char *cmd, int *nfns)
{
	char exe[PATH_MAX];
	int err = cmdpath__resolve(exe, sizeof(exe), cmd);

	return err ? err : heap_attach__cmd(l, exe, nfns);
}

/* -v: ring-buffer records the consumer took and what was lost (read by `make bench`): the loss
 * counters only (a Python run's py_frames once showed there as 1.47 M lost stacks); the backlog. */
static void log_events(struct loader *l, uint64_t events, int64_t ns)
{
	struct ring_backlog_stats bl = loader__backlog_stats(l);
	uint64_t cnt[PROF_CNT__COUNT], dropped;
	double secs = (double)ns / 1e9;

	if (loader__counters(l, cnt))
		return;
	dropped = run__bpf_losses(cnt);
	pr_info("events: %llu in %.2f s (%.0f/s), dropped %llu (ringbuf_full %llu), backlog peak "
		"%.1f MiB (full %llu)\n",
		(unsigned long long)events, secs, secs > 0 ? (double)events / secs : 0.0,
		(unsigned long long)dropped, (unsigned long long)cnt[PROF_CNT_RINGBUF_FULL],
		(double)bl.peak / (1 << 20), (unsigned long long)bl.full);
}

struct run {
	struct env env; /* the caller's, with -p thread ids replaced by their process ids */
	int scope_fd;	/* --cgroup / --container: the cgroup directory, open */
	struct cgroup_stats cgroup_stats; /* its walks */
	struct loader *loader;
	struct run_parts
		parts; /* symbolizer, names, stacks, tracker: opened before the collector */
	bool parts_open;
	struct collect *collect;
	struct writeout *writeout;
	/* -f chrome / perfetto: written as events arrive */
	struct tracefile *trace;
	struct live *live;	  /* --live: the terminal view */
	int64_t start_mono;	  /* when profiling started */
	uint64_t screens;	  /* --live: screens drawn */
	uint64_t screen_failures; /* --live: screens that could not be drawn */
	int screen_err;		  /* the last failure's -errno */
	struct child child;
	bool have_child;
	struct child_hooks hooks;      /* CMD's ptrace stops that reach the collector */
	uint64_t events;	       /* ring-buffer records consumed */
	struct push *push;	       /* --push */
	struct metrics *metrics;       /* --metrics */
	struct oomout *oom;	       /* --heap: OOM kills' profiles */
	struct memtrace_rec *memtrace; /* -f memtrace: the trace being written */
	int watchdog;		       /* holds on: our end of the watchdog's socket, or -1 */
	bool holds_ended;	       /* end_holds ran */
	struct status *status;	       /* the status line on a terminal, or NULL */
	uint64_t samples;	       /* records with a stack, for the status line */
	struct loader_opts lo;	       /* what the loader opens, from env */
	bool leave; /* failed before there was anything to undo: no cleanup (as always) */
	int nfns;   /* allocator functions probed */
	/* the clocks: when the run started, its -d deadline, the interval under way */
	int64_t start_wall, last_tick, deadline, next_interval, interval_mono, interval_wall;
	bool poll_err;		    /* the loop ended on a failure */
	bool cmd_ended;		    /* CMD ended by itself, before anything stopped the run */
	int trace_err;		    /* -f memtrace: writing the trace failed */
	struct preload_env preload; /* sampled --heap -- CMD: our sampler in CMD's environment */
	bool cmd_own_probes;	    /* --heap -- CMD: its executable carries otel_memory probes */
	bool cmd_own_allocator;	    /* ... exports an allocator of its own (free) */
};

/*
 * Sampled --heap -- CMD: our sampler preloaded into CMD's tree, so only sampled allocations
 * reach the kernel (through its otel_memory probes), not a trap per malloc and free.  The
 * environment entries that do it, or NULL: not sampling, --no-preload, or no library (said;
 * the allocator uprobes then sample in BPF, as before).
 */
static const char *const *preload(struct run *r)
{
	const struct env *env = &r->env;
	int err;

	if (!(env->modes & MODE_HEAP) || !env->sample_bytes || env->no_preload)
		return NULL;
	/* The sampler is found when ld.so has mapped it, through the loader hook --unwind fp has
	 * not. */
	if (env->unwind == UNWIND_FP) {
		pr_info("--unwind fp: not preloading the sampler (allocator probes instead)\n");
		return NULL;
	}
	/* A program with a sampler of its own: a second one would count its allocations twice. */
	if (r->cmd_own_probes) {
		pr_info("%s carries otel_memory probes of its own: not preloading ours\n",
			env->cmd[0]);
		return NULL;
	}
	/* Its own malloc and free are found before a preload's: ours would never be called. */
	if (r->cmd_own_allocator) {
		pr_info("%s has an allocator of its own (it exports free): not preloading the "
			"sampler (allocator probes instead)\n",
			env->cmd[0]);
		return NULL;
	}
	err = preload__prepare(&r->preload, env->sample_bytes);
	if (err) {
		pr_warn("no sampler to preload (" PRELOAD_LIB " beside %s: %s): allocator "
			"uprobes instead\n",
			r->preload.lib, strerror(-err));
		return NULL;
	}
	pr_info("preloading %s into %s: no allocator probe\n", r->preload.lib, env->cmd[0]);
	r->lo.heap_otel_only = true;
	return r->preload.set;
}

/* At exit, what --push may still spend sending before the rest goes to the backlog. */
#define PUSH_FLUSH_MS 5000

/* --push: every interval's profiles, one series per service. */
static void push_sink(void *ctx, const struct profile *const *profiles, size_t n, bool last)
{
	struct run *r = ctx;

	for (size_t i = 0; i < n; i++) {
		int err = push__submit_profile(r->push, profiles[i]);

		if (err)
			pr_warn("push: a profile not queued: %s\n", strerror(-err));
	}
}

/* --live: one screen; a failure is counted, said once at the end. */
static void live_draw(struct run *r, const struct profile *const *profiles, size_t n,
		      uint64_t interval)
{
	struct live_status st = {
		.cmdline = r->env.cmdline,
		.interval = interval,
		.elapsed_ns = clock__mono_ns() - r->start_mono,
		.growth = writeout__growth(r->writeout),
		.stacks = r->parts.stacks,
	};
	int err = live__render(r->live, profiles, n, &st);

	if (err) {
		r->screen_failures++;
		r->screen_err = err;
	}
}

/* --live: leave the view (the terminal back as it was) and say if screens were lost. */
static void live_close(struct run *r)
{
	if (!r->live)
		return;
	live__free(r->live);
	r->live = NULL;
	if (r->screen_failures)
		pr_warn("--live: %llu screen(s) could not be drawn: %s\n",
			(unsigned long long)r->screen_failures, strerror(-r->screen_err));
}

/* The writeout's sink: each interval's profiles go to --push and to the live view.  The last ones
 * not to the view: it closes before the end-of-run summary, so that stays on the terminal. */
static void on_profiles(void *ctx, const struct profile *const *profiles, size_t n, bool last)
{
	struct run *r = ctx;

	if (r->push)
		push_sink(r, profiles, n, last);
	if (r->live && !last)
		live_draw(r, profiles, n, ++r->screens);
}

/* -f memtrace: the trace file opens now and takes every heap event as it is consumed. */
static int start_memtrace(struct run *r)
{
	const struct env *env = &r->env;
	uint32_t pid = r->have_child ? (uint32_t)r->child.pid : env->npids ? env->pids[0] : 0;
	char exe[PATH_MAX] = "", link[64];
	ssize_t n;
	int err;

	snprintf(link, sizeof(link), "/proc/%u/exe", pid);
	if (env->cmd)
		snprintf(exe, sizeof(exe), "%s", env->cmd[0]);
	else if (pid && (n = readlink(link, exe, sizeof(exe) - 1)) > 0)
		exe[n] = 0;
	err = memtrace_rec__new(&r->memtrace,
				&(struct memtrace_rec_opts){.path = env->output,
							    .sample_bytes = env->sample_bytes,
							    .pid = pid,
							    .executable = exe,
							    .cmdline = env->cmdline},
				r->parts.stacks);
	if (err) {
		pr_err("cannot write %s: %s\n", env->output,
		       err == -ELOOP ? "it is a symbolic link (refusing to follow)"
				     : strerror(-err));
		return err;
	}
	collect__set_heap_tap(r->collect, memtrace_rec__on_heap, r->memtrace);
	return 0;
}

/* Counts every record for the -v summary, then hands it to the collector. */
static int on_event(void *ctx, void *data, size_t size)
{
	struct run *r = ctx;

	r->events++;
	r->samples += status__is_sample(data, size);
	return collect__on_event(r->collect, data, size);
}

/* The status line's numbers; the drops are read from the kernel's counters. */
static void status_draw(struct run *r, int64_t now)
{
	struct status_counts c = {.events = r->events, .samples = r->samples};
	uint64_t cnt[PROF_CNT__COUNT];

	if (!loader__counters(r->loader, cnt))
		c.drops = run__bpf_losses(cnt);
	status__draw(r->status, now, &c);
}

/*
 * -p takes any thread id as its process (the kernel and /proc accept either); say so, and
 * profile each process once.  Returns 0 or the exit status.
 */
static int resolve_pids(struct env *env)
{
	unsigned n = 0;

	for (unsigned i = 0; i < env->npids; i++) {
		uint32_t tgid;
		bool dup = false;
		int err = procinfo__tgid(&tgid, env->pids[i]);

		if (err) {
			pr_err("no such process: %u\n", env->pids[i]);
			return 2;
		}
		if (tgid != env->pids[i])
			pr_warn("%u is a thread of process %u: profiling process %u (all its "
				"threads)\n",
				env->pids[i], tgid, tgid);
		/* A kernel thread has no user memory to probe: heap and calls would see nothing,
		 * the scheduler and the CPU sampler see its kernel stacks. */
		if (procinfo__kthread(tgid) == 1) {
			if (env->modes & (MODE_HEAP | MODE_CALLS)) {
				pr_err("%u is a kernel thread: --heap and --calls need user "
				       "memory; --cpu and --offcpu show its kernel stacks\n",
				       env->pids[i]);
				return 2;
			}
			pr_warn("%u is a kernel thread: kernel stacks only\n", env->pids[i]);
		}
		for (unsigned j = 0; j < n; j++)
			dup |= env->pids[j] == tgid;
		if (!dup)
			env->pids[n++] = tgid;
	}
	env->npids = n;
	return 0;
}

/* CMD's ptrace stops that need the collector (proc/ knows processes, not profiles). */
static void hook_exiting(void *ctx, uint32_t pid)
{
	struct run *r = ctx;

	tracker__process_exiting(r->parts.tracker, pid);
}

static bool hook_exec_stop(void *ctx, uint32_t pid)
{
	struct run *r = ctx;

	return collect__exec_stop(r->collect, pid);
}

static bool hook_kernel_sigstop(void *ctx, uint32_t tgid, uint32_t tid)
{
	struct run *r = ctx;

	return tracker__traced_sigstop(r->parts.tracker, tgid, tid);
}

/* None until the collector exists: the stops are then only continued. */
static const struct child_hooks *child_hooks(struct run *r)
{
	if (!r->collect)
		return NULL;
	r->hooks = (struct child_hooks){.ctx = r,
					.exiting = hook_exiting,
					.exec_stop = hook_exec_stop,
					.kernel_sigstop = hook_kernel_sigstop};
	return &r->hooks;
}

/* Send sig to CMD (and the children it made, while they are targets) through pidfds. */
static void signal_cmd(struct run *r, int sig)
{
	if (r->collect)
		tracker__signal_all(r->parts.tracker, sig); /* CMD is one of the targets */
	else if (r->child.pidfd >= 0)
		pidfd__signal(r->child.pidfd, sig);
}

/*
 * Profiling stopped before CMD exited: SIGTERM, then SIGKILL after STOP_GRACE_NS or at a
 * further SIGINT/SIGTERM to us, so a command that ignores SIGTERM cannot hold us forever.
 */
static void stop_cmd(struct run *r)
{
	int64_t deadline = clock__mono_ns() + STOP_GRACE_NS;
	sig_atomic_t seen = signal_count;
	struct timespec tick = {.tv_nsec = 20 * 1000000L};

	signal_cmd(r, SIGTERM);
	for (;;) {
		child__wait(&r->child, child_hooks(r), WNOHANG);
		if (r->child.exited)
			return;
		if (signal_count != seen || clock__mono_ns() >= deadline)
			break;
		nanosleep(&tick, NULL); /* a signal cuts it short */
	}
	pr_warn("%s still running %s SIGTERM: sending SIGKILL\n", r->env.cmd[0],
		signal_count != seen ? "after another signal to us and" : "2 s after");
	signal_cmd(r, SIGKILL);
	child__wait(&r->child, child_hooks(r), 0);
}

typedef int (*scope_pid_fn)(void *ctx, uint32_t pid);

/* -a: every process in /proc. */
static int each_host_pid(scope_pid_fn fn, void *ctx)
{
	struct dirent *d;
	DIR *dir = opendir("/proc");
	int err = 0;

	if (!dir)
		return -errno;
	while (!err && (d = readdir(dir))) {
		char *end;
		unsigned long pid = strtoul(d->d_name, &end, 10);

		if (!*end && pid)
			err = fn(ctx, (uint32_t)pid);
	}
	closedir(dir);
	return err;
}

static int add_scoped(void *ctx, uint32_t pid)
{
	struct run *r = ctx;
	int err;

	if (!pid || pid == (uint32_t)getpid())
		return 0;
	/* The scan takes a while: meanwhile processes in scope come and go, and their records
	 * (and held exits) want a consumer. */
	loader__hold_gate(r->loader, true);
	if (loader__poll(r->loader, 0) < 0 && collect__error(r->collect))
		return collect__error(r->collect);
	err = collect__add_scoped(r->collect, pid);
	if (err == -ENOENT || err == -ESRCH)
		return 0;		 /* gone meanwhile */
	return err == -ENOMEM ? err : 0; /* others were reported; the rest go on */
}

/*
 * No more holds, and every held process resumed: the gate closed, whatever is queued consumed
 * (after a fatal error too: the consumer then takes only the holds), the processes held for
 * tables let go.  Once per run, on every way out after the gate may have opened.
 */
static void end_holds(struct run *r)
{
	if (r->holds_ended || !r->loader || !r->collect)
		return;
	r->holds_ended = true;
	tracker__holds_over(r->parts.tracker);
	loader__hold_gate(r->loader, false);
	while (loader__poll(r->loader, 0) > 0)
		;
	if (r->env.wide) {
		/* A hold that passed the gate just before it closed: its record follows. */
		nanosleep(&(struct timespec){.tv_nsec = 20 * 1000000L}, NULL);
		while (loader__poll(r->loader, 0) > 0)
			;
	}
}

/* The processes in scope when we start (later ones announce themselves by fork and exec). */
static int scan_scope(struct run *r)
{
	if (r->scope_fd >= 0)
		return cgroup__for_each_pid(r->scope_fd, add_scoped, r, &r->cgroup_stats);
	return each_host_pid(add_scoped, r);
}

/* What the loader opens, from the options. */
static void loader_opts_of(struct loader_opts *out, const struct env *env)
{
	*out = (struct loader_opts){
		.heap = env->modes & MODE_HEAP,
		.cpu = env->modes & MODE_CPU,
		.cpu_hz = env->cpu_hz,
		.offcpu = env->modes & MODE_OFFCPU,
		.calls = env->modes & MODE_CALLS,
		.follow_children = env->cmd != NULL,
		.sample_bytes = env->sample_bytes,
		.heap_fine_ts = format__event_trace(env->format),
		.ring_bytes = env->ring_bytes,
		.backlog_bytes = env->backlog_bytes,
		.walk = {.mode = env->unwind,
			 .fp_max_stack = env->unwind == UNWIND_FP ? procinfo__perf_max_stack() : 0},
		.unwind_fp = env->unwind == UNWIND_FP,
		.hold_execs = env->wide && env->hold_exits > 0,
		.hold_rate = env->hold_rate,
		/* Held at each dlopen until the new library's unwind table is in (wide scopes: only
		 * with holds on). */
		.hold_dlopen = env->unwind != UNWIND_FP &&
			       (env->modes & (MODE_HEAP | MODE_CPU | MODE_OFFCPU)) &&
			       (!env->wide || env->hold_exits > 0),
		.hold_traced = env->cmd != NULL,
		/* --cpu and --offcpu walk every process's stacks: their holds stay. */
		.dlopen_skip_otel = !(env->modes & (MODE_CPU | MODE_OFFCPU)),
		/* For comparison (make bench, the tests of the fallback): the environment turns
		 * the sessions off, as on a kernel without them. */
		.heap_sessions = !getenv("BPFTRACE_PROF_NO_UPROBE_SESSIONS"),
		.heap_multi = !getenv("BPFTRACE_PROF_NO_UPROBE_MULTI"),
		.heap_split = !getenv("BPFTRACE_PROF_NO_HEAP_SPLIT"),
	};
}

/* `-- CMD` forked, waiting until we release it, and seized: its exit stops (and its tree's
 * execs) wait for us.  0, or the exit status (then nothing is undone: r->leave). */
static int spawn_cmd(struct run *r)
{
	struct sigaction sc = {.sa_handler = on_sigchld, .sa_flags = SA_RESTART};
	const struct env *env = &r->env;
	/* --calls traces the whole tree: every exec stops until its runtime is attached. */
	long trace_opts = PTRACE_O_TRACEEXIT;
	int err;

	sigaction(SIGCHLD, &sc, NULL);
	/* So do they when user stacks are unwound: until their tables are built (a few ms,
	 * once per file); and with --heap, until the new image's heap path is decided (its own
	 * otel_memory probes, whose sampler counts from its first block, or the allocators). */
	if (r->lo.calls || r->lo.heap || (env->unwind != UNWIND_FP && (r->lo.cpu || r->lo.offcpu)))
		trace_opts |= PTRACE_O_TRACEEXEC | PTRACE_O_TRACEFORK | PTRACE_O_TRACEVFORK |
			      PTRACE_O_TRACECLONE;
	if (env->modes & MODE_HEAP)
		r->cmd_own_probes = heap_front__cmd_exe(env->cmd[0], &r->cmd_own_allocator);
	err = child__spawn(&r->child, env->cmd, push__is_secret_env, preload(r));
	if (err) {
		pr_err("cannot start %s: %s\n", env->cmd[0], strerror(-err));
		r->leave = true;
		return 1;
	}
	r->have_child = true;
	/* Not fatal: without it a command that exits very fast may lose some symbols. */
	err = child__seize(&r->child, trace_opts);
	if (err)
		pr_info("ptrace(SEIZE) of %d failed (%s): symbols of a fast-exiting command may "
			"be missing\n",
			r->child.pid, strerror(-err));
	return 0;
}

/* Before anything is opened: the targets checked, the watchdog, the scope, the event-trace
 * file, our signals, `-- CMD` forked.  0, or the exit status (r->leave: nothing to undo). */
static int run_prepare(struct run *r)
{
	struct sigaction sa = {.sa_handler = on_signal};
	const struct env *env = &r->env;
	int status, err;

	r->leave = true;
	status = resolve_pids(&r->env);
	if (status)
		return status;
	/*
	 * Holds stop other people's processes: something that outlives us resumes them if we die
	 * holding them.  Forked first, while we have no thread, BPF object or other child.
	 */
	if (r->lo.hold_execs || r->lo.hold_dlopen) {
		err = holds__watchdog_start(&r->watchdog);
		if (err) {
			pr_err("starting the hold watchdog failed: %s\n", strerror(-err));
			return 1;
		}
	}
	if (env->cgroup || env->container) {
		status = cgroup__open_scope(&r->scope_fd, env->cgroup, env->container);
		if (status)
			return status;
		r->lo.scope = PROF_SCOPE_CGROUP;
		r->lo.scope_cgroup_fd = r->scope_fd;
	} else if (env->all) {
		r->lo.scope = PROF_SCOPE_ALL;
	}
	r->leave = false;
	/* An event trace is written while the run goes: its file must be usable first. */
	if (tracefile__wanted(env)) {
		err = tracefile__open(&r->trace, env);
		if (err)
			return err == -ENOMEM ? 1 : 2;
	}
	/* Bound now: a port in use is said before anything runs. */
	if (env->metrics && (err = metrics__start(&r->metrics, env->metrics))) {
		pr_err("--metrics %s: %s\n", env->metrics, strerror(-err));
		return 1;
	}
	/* A dropped ssh session (SIGHUP) or a SIGQUIT ends a run as SIGTERM does: written. */
	sigaction(SIGINT, &sa, NULL);
	sigaction(SIGTERM, &sa, NULL);
	sigaction(SIGHUP, &sa, NULL);
	sigaction(SIGQUIT, &sa, NULL);
	signal(SIGPIPE, SIG_IGN);
	return env->cmd ? spawn_cmd(r) : 0;
}

/* The BPF side, the collector, the writers (profiles, --push, -f memtrace), the ring buffer.
 * 0, or the exit status. */
static int run_open(struct run *r)
{
	const struct env *env = &r->env;
	int err;

	err = loader__open(&r->loader, &r->lo);
	if (err)
		return 1;
	if (r->watchdog >= 0) {
		err = holds__watchdog_arm(r->watchdog, loader__held_map_fd(r->loader));
		if (err) {
			pr_err("arming the hold watchdog failed: %s\n", strerror(-err));
			return 1;
		}
	}
	err = run_parts__open(
		&r->parts, r->loader,
		&(struct run_parts_opts){.modes = env->modes,
					 .wide = env->wide,
					 .cmd = env->cmd != NULL,
					 .hold_exits = env->wide && env->hold_exits > 0,
					 .unwind_tables = env->unwind != UNWIND_FP,
					 .unwind_memory = env->unwind_memory,
					 .unwind_max_rows = env->unwind_max_rows,
					 .unwind_max_cfi = env->unwind_max_cfi,
					 .no_debuginfod = env->no_debuginfod,
					 .no_inline = env->no_inline,
					 .debuginfod_timeout = env->debuginfod_timeout,
					 .python_frames = env->python_frames});
	r->parts_open = !err;
	if (!err)
		err = collect__new(&r->collect,
				   &(struct collect_opts){.modes = env->modes,
							  .sample_bytes = env->sample_bytes,
							  .min_size = env->min_size,
							  .max_size = env->max_size,
							  .cmd = env->cmd,
							  .pids = env->pids,
							  .npids = env->npids,
							  .wide = env->wide,
							  .interval = env->output_dir != NULL,
							  .stream = tracefile__stream(r->trace)},
				   &r->parts);
	if (err) {
		pr_err("setting up the aggregation failed: %s\n", strerror(-err));
		return 1;
	}
	if (r->trace)
		tracefile__bind(r->trace, r->collect, &r->parts);
	err = writeout__new(&r->writeout, r->collect, &r->parts, env);
	if (err) {
		pr_err("setting up the report failed: %s\n", strerror(-err));
		return 1;
	}
	if (r->scope_fd >= 0)
		writeout__set_cgroup_stats(r->writeout, &r->cgroup_stats);
	writeout__set_sink(r->writeout, on_profiles, r);
	if (env->output_dir) {
		err = writeout__prepare_dir(env);
		if (err) {
			pr_err("cannot use --output-dir %s: %s\n", env->output_dir, strerror(-err));
			return 2;
		}
	}
	if (env->push_url) {
		struct push_opts po = {
			.url = env->push_url,
			.protocol = env->push_protocol,
			.auth_file = env->push_auth_file,
			.spool_dir = env->output_dir,
		};

		err = push__new(&r->push, &po); /* says why on failure */
		if (err)
			return 2;
		writeout__set_push(r->writeout, r->push);
	}
	if (env->modes & MODE_HEAP) {
		err = oomout__new(&r->oom, &(struct oomout_opts){
						   .c = r->collect,
						   .parts = &r->parts,
						   .env = env,
						   .push = r->push,
						   .since_wall = env->output_dir ? &r->interval_wall
										 : &r->start_wall});
		if (err) {
			pr_err("setting up the OOM kill profiles failed: %s\n", strerror(-err));
			return 1;
		}
		writeout__set_oom_stats(r->writeout, oomout__stats(r->oom));
	}
	if (env->format == FMT_MEMTRACE && start_memtrace(r))
		return 1;
	err = collect__start_events(r->collect, on_event, r);
	if (err) {
		pr_err("opening the ring buffer failed: %s\n", strerror(-err));
		return 1;
	}
	return 0;
}

/* -p: each process a target, the tables of what it maps, its allocator probed.  0, or the exit
 * status. */
static int add_pids(struct run *r)
{
	const struct env *env = &r->env;
	int err;

	for (unsigned i = 0; i < env->npids; i++) {
		err = loader__add_target(r->loader, env->pids[i]);
		if (!err)
			err = collect__add_pid(r->collect, env->pids[i]);
		if (err) {
			pr_err("adding pid %u failed: %s\n", env->pids[i], strerror(-err));
			return 1;
		}
	}
	/* Complete stacks from the first event: the tables of what the targets map (a few ms each).
	 */
	if (env->npids) {
		err = tracker__wait_unwinder(r->parts.tracker, UNWIND_START_WAIT_MS);
		if (err) {
			pr_err("loading unwind tables failed: %s\n", strerror(-err));
			return 1;
		}
	}
	for (unsigned i = 0; i < env->npids; i++) {
		if (r->lo.heap) {
			err = collect__attach_heap(r->collect, env->pids[i], (int)env->pids[i],
						   &r->nfns);
			if (err == -ENOENT || err == -ESRCH) {
				pr_err("process %u exited before it could be attached\n",
				       env->pids[i]);
				return 2;
			}
			if (err)
				return 1; /* anything else was reported */
		}
	}
	return 0;
}

/* `-- CMD`: a target before it runs, its allocator probed.  0, or the exit status. */
static int add_cmd(struct run *r)
{
	const struct env *env = &r->env;
	int err;

	err = loader__add_target(r->loader, (uint32_t)r->child.pid);
	if (!err)
		err = collect__add_child(r->collect, (uint32_t)r->child.pid);
	if (!err && r->lo.heap)
		err = attach_heap_cmd(r->loader, env->cmd[0], &r->nfns);
	if (err == -ENOENT) {
		pr_err("cannot run %s: command not found\n", env->cmd[0]);
		return 2;
	}
	if (err) {
		pr_err("preparing %s failed: %s\n", env->cmd[0], strerror(-err));
		return 1;
	}
	return 0;
}

/* What is profiled: -p, CMD, the wide scope's processes; then the modes attached.  0, or the
 * exit status. */
static int run_targets(struct run *r)
{
	const struct env *env = &r->env;
	int status, err;

	status = add_pids(r);
	if (!status && r->have_child)
		status = add_cmd(r);
	if (status)
		return status;
	if (env->wide) {
		/* No wait for the unwind tables here: processes come and go meanwhile, and
		 * their records wait in the ring buffer until the loop runs; the tables load
		 * as it turns (frame pointers until then). */
		err = tracker__discover_root(r->parts.tracker, (uint32_t)getpid());
		if (!err)
			err = scan_scope(r);
		if (err) {
			pr_err("listing the processes to profile failed: %s\n", strerror(-err));
			return 1;
		}
	}
	/* Wide scopes may have no allocator mapped yet: processes that start later bring theirs;
	 * CMD with our sampler brings it. */
	if (r->lo.heap && !r->nfns && !env->wide && !r->lo.heap_otel_only) {
		pr_err("no allocator to probe: no malloc/free found in the target's libc or "
		       "executable\n");
		return 2;
	}
	if (r->have_child) {
		char exe[PATH_MAX];

		if (!cmdpath__resolve(exe, sizeof(exe), env->cmd[0]))
			tracker__prepare_unwind(r->parts.tracker, exe);
	}
	/* `-- CMD`: the tables of its executable and libraries before it runs (not for the wide
	 * scopes: see above). */
	err = env->wide ? 0 : tracker__wait_unwinder(r->parts.tracker, UNWIND_START_WAIT_MS);
	if (err) {
		pr_err("loading unwind tables failed: %s\n", strerror(-err));
		return 1;
	}
	/* --calls and --heap trace execs (spawn_cmd's options): each attaches at the stop. */
	collect__set_exec_stops(r->collect, r->child.traced && (r->lo.calls || r->lo.heap));
	err = collect__attach_modes(r->collect);
	if (err)
		return err == -ENOENT || err == -ENOTSUP ? 2 : 1;
	return 0;
}

/* The clocks start, CMD runs, the status line or the live view appear.  0, or the exit
 * status. */
static int run_start(struct run *r)
{
	const struct env *env = &r->env;
	int err;

	/* The heap probes begin together, at the start (not one by one as they went in). */
	loader__arm_heap(r->loader);
	r->start_mono = clock__mono_ns();
	r->start_wall = clock__real_ns();
	if (env->duration > 0)
		r->deadline = r->start_mono + (int64_t)(env->duration * 1e9);
	if (env->interval) {
		r->interval_mono = r->start_mono;
		r->interval_wall = r->start_wall;
		r->next_interval = r->start_mono + (int64_t)(env->interval * 1e9);
	}
	/* Said before CMD runs: its own output comes after ours. */
	if (env->verbosity >= 0)
		writeout__say_start(r->writeout, r->cmd_own_probes);
	if (r->have_child) {
		err = child__release(&r->child);
		if (err) {
			pr_err("cannot run %s: %s\n", env->cmd[0], strerror(-err));
			return 2;
		}
	}
	/* Progress on a terminal: never into a file, with -q, over the live view, or among the
	 * lines of a -- CMD writing its output to that terminal. */
	if (env->verbosity >= 0 && !env->live && isatty(STDERR_FILENO) &&
	    !(env->cmd && isatty(STDOUT_FILENO))) {
		err = status__new(&r->status, stderr, r->start_mono);
		if (err) {
			pr_err("the status line: %s\n", strerror(-err));
			return 1;
		}
	}
	if (env->live) {
		err = live__new(&r->live, STDOUT_FILENO);
		if (err) {
			pr_err("--live: cannot use the terminal: %s\n", strerror(-err));
			return 1;
		}
		/* Something on the screen until the first interval ends (interval 0). */
		live_draw(r, NULL, 0, 0);
	}
	return 0;
}

/* An interval ended at now: its profiles written (--output-dir) or shown.  false on a failure
 * that ends the run. */
static bool run_interval(struct run *r, int64_t now)
{
	const struct env *env = &r->env;
	int err;

	/* Wall time advances with the monotonic clock, not by a second reading
	 * that could jump: intervals tile exactly.  --live alone: the run so far.
	 */
	if (env->output_dir)
		err = writeout__interval(r->writeout, r->interval_wall, now - r->interval_mono,
					 false);
	else
		err = writeout__peek(r->writeout, r->start_wall, now - r->start_mono);
	if (err == -ENOMEM)
		return false;
	r->interval_wall += now - r->interval_mono;
	r->interval_mono = now;
	/* From now, not from when this one was due: a late turn lengthens its interval and the
	 * next is whole.  Every interval but the last is at least --interval long, so no two of
	 * a run's files share a start second (their names). */
	r->next_interval = now + (int64_t)(env->interval * 1e9);
	return true;
}

/* One turn of the loop: records consumed, holds and tables looked after, the clocks checked.
 * false: the run stops (r->poll_err if on a failure). */
static bool run_turn(struct run *r)
{
	const struct env *env = &r->env;
	int64_t now;
	int err;

	/* Exits and dlopens are held only while this loop turns (the consumer resumes
	 * them).
	 */
	if (env->wide || r->lo.hold_dlopen)
		loader__hold_gate(r->loader, true);
	/* A process waits for its tables: look at the builds again soon. */
	err = loader__poll(r->loader, tracker__holding(r->parts.tracker) ? 2 : 100);
	/* After a fatal error the consumer keeps taking records (holds): err stays 0. */
	if (err < 0 || collect__error(r->collect)) {
		/* The collector's own failures were reported where they happened. */
		if (!collect__error(r->collect))
			pr_err("reading events failed: %s\n", strerror(-err));
		r->poll_err = true;
		return false;
	}
	if (r->push)
		push__poll(r->push);
	if (tracker__poll(r->parts.tracker)) {
		r->poll_err = true;
		return false;
	}
	collect__python_retry(r->collect);
	now = clock__mono_ns();
	if (r->status && status__due(r->status, now))
		status_draw(r, now);
	if (now - r->last_tick >= 1000000000LL) {
		collect__tick(r->collect);
		if (r->metrics)
			writeout__metrics(r->writeout, r->metrics,
					  (struct metrics_gauges){
						  .uptime_ns = now - r->start_mono,
						  .events = r->events,
						  .backlog = loader__backlog_stats(r->loader)});
		r->last_tick = now;
	}
	if (r->deadline && now >= r->deadline)
		return false;
	/* q in the live view: stop as on SIGINT. */
	if (r->live && live__key(r->live, 0) == LIVE_KEY_QUIT) {
		pr_info("stopping: q pressed\n");
		return false;
	}
	if (r->next_interval && now >= r->next_interval && !run_interval(r, now)) {
		r->poll_err = true;
		return false;
	}
	if (r->have_child)
		child__wait(&r->child, child_hooks(r), WNOHANG);
	return r->have_child ? !r->child.exited : env->wide || tracker__any_alive(r->parts.tracker);
}

/* Until a signal, -d, q, a failure, or the end of the targets (CMD's exit). */
static void run_loop(struct run *r)
{
	r->last_tick = r->start_mono;
	while (!stop_signal && run_turn(r))
		;
}

/*
 * The ending, in this order: the samplers stopped, the screen back, the holds over (what is
 * queued consumed), the -v numbers.  0, or the exit status when there is nothing to write.
 */
static int run_stop(struct run *r)
{
	const struct env *env = &r->env;

	/* CMD ended by itself, before anything stopped the run: its status is the verdict. */
	r->cmd_ended = r->have_child && r->child.exited && !stop_signal;
	/*
	 * Wide scopes: no more samples, and every one taken symbolized while exits are still
	 * held — a process exiting after the gate closes is not held, and would be gone before
	 * its last samples are read.
	 */
	if (env->wide && (env->modes & (MODE_CPU | MODE_OFFCPU))) {
		loader__hold_gate(r->loader, true);
		loader__stop_cpu(r->loader);
		loader__stop_offcpu(r->loader);
		while (loader__poll(r->loader, 0) > 0)
			;
		collect__sync(r->collect);
	}
	/* --offcpu: no period ends after this; those still going on count up to now (read from
	 * the kernel's map when the profile is built). */
	loader__stop_offcpu(r->loader);
	/* What follows (messages, the summary) goes to the normal screen, on a line of its own. */
	status__free(r->status);
	r->status = NULL;
	live_close(r);
	/* No more holds; whatever is still queued belongs to the profile (and resumes the
	 * processes held so far). */
	end_holds(r);
	log_events(r->loader, r->events, clock__mono_ns() - r->start_mono);
	if (stop_signal)
		pr_info("stopping on signal %d\n", (int)stop_signal);

	/* --calls: no process of the tree ever ran a runtime with probes.  Nothing to write. */
	if (r->have_child && collect__calls_none(r->collect)) {
		calls_attach__explain_none(collect__calls_attach(r->collect), env->cmd[0]);
		return 2;
	}
	return 0;
}

/* The profiles (or the trace) written, --push flushed.  The run's exit status. */
static int run_write(struct run *r)
{
	const struct env *env = &r->env;
	int status, err, oom_err;

	if (r->memtrace) {
		err = memtrace_rec__finish(r->memtrace);
		if (err)
			pr_err("writing the memtrace to %s failed: %s\n", env->output,
			       strerror(-err));
		if (env->verbosity >= 0)
			memtrace_rec__print_drops(r->memtrace, stderr);
		r->trace_err = err;
	}
	/* Every OOM kill's profile written first: its failures are in the run's counters. */
	oom_err = oomout__finish(r->oom);
	if (env->output_dir)
		err = writeout__interval(r->writeout, r->interval_wall,
					 clock__mono_ns() - r->interval_mono, true);
	else if (r->trace)
		err = tracefile__finish(r->trace, r->loader);
	else
		err = writeout__write(r->writeout, r->start_wall, clock__mono_ns() - r->start_mono);
	/* Last, after the summary: the files written, the OOM kills. */
	oomout__say(r->oom);
	if (r->memtrace && !r->trace_err && strcmp(env->output, "-"))
		pr_note("wrote the memtrace trace to %s\n", env->output);
	if (r->push) {
		push__flush(r->push, PUSH_FLUSH_MS);
		push__log(r->push);
	}
	/* A profile written after a fatal collection error is incomplete: still a failure. */
	status =
		err || oom_err || r->trace_err || collect__error(r->collect) || r->poll_err ? 1 : 0;
	/* Ours first, then CMD's own status (as time and strace do) when it ended by itself; a run
	 * stopped first (-d, q, a signal to us: Ctrl-C reaches CMD too) is not CMD's verdict. */
	if (!status && r->cmd_ended)
		status = child__exit_status(r->child.status);
	if (!status && r->cmd_ended && env->leak_gate &&
	    writeout__leaked(r->writeout) > env->fail_on_leak)
		status = 3; /* the leak gate, last */
	return status;
}

/* On every way out once something is open: CMD ended, the terminal back, the holds over,
 * everything freed (the collector resumes what is still held). */
static void run_cleanup(struct run *r)
{
	if (r->have_child && !r->child.exited) {
		if (r->child.go_fd >= 0)
			child__abandon(&r->child, child_hooks(r)); /* never released */
		else
			stop_cmd(r); /* stopped early: CMD ends with us */
	}
	child__close(&r->child);
	status__free(r->status);
	live_close(r); /* also on failures: the terminal must come back */
	end_holds(r);
	memtrace_rec__free(r->memtrace);
	metrics__free(r->metrics);
	writeout__free(r->writeout);
	tracefile__free(r->trace);
	oomout__free(r->oom); /* its writes done before anything it read from is freed */
	push__free(r->push);
	collect__free(r->collect);
	if (r->parts_open)
		run_parts__close(&r->parts); /* resumes what is still held */
	loader__free(r->loader);
	if (r->watchdog >= 0) {
		holds__watchdog_bye(r->watchdog);
		close(r->watchdog);
	}
	if (r->scope_fd >= 0)
		close(r->scope_fd);
}

int session__run(const struct env *caller_env)
{
	struct run r = {.env = *caller_env, .scope_fd = -1, .watchdog = -1, .child = CHILD_INIT};
	int status;

	loader_opts_of(&r.lo, &r.env);
	status = run_prepare(&r);
	if (status && r.leave)
		return status;
	if (!status)
		status = run_open(&r);
	if (!status)
		status = run_targets(&r);
	if (!status)
		status = run_start(&r);
	if (!status) {
		run_loop(&r);
		status = run_stop(&r);
		if (!status)
			status = run_write(&r);
	}
	run_cleanup(&r);
	return status;
}
