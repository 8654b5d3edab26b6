// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
#include "agg/collect.h"
#include "agg/holds.h"

#include <dirent.h>
#include <limits.h>
#include <errno.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ptrace.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include <bpf/bpf.h>

#include "agg/calls_agg.h"
#include "attach/calls_attach.h"
#include "agg/cpu_agg.h"
#include "util/hashmap.h"
#include "sym/elf_needed.h"
#include "agg/heap_agg.h"
#include "agg/offcpu_agg.h"
#include "attach/heap_attach.h"
#include "attach/loader.h"
#include "attach/owners.h"
#include "util/clock.h"
#include "util/log.h"
#include "proc/maps.h"
#include "proc/procinfo.h"
#include "proc/pidfd.h"
#include "prof_calls.h"
#include "prof_cpu.h"
#include "prof_heap.h"
#include "prof_dump.h"
#include "prof_offcpu.h"
#include "sym/stackres.h"
#include "proc/safe_open.h"
#include "sym/symbolizer.h"
#include "unwind/unwinder.h"

/*
 * The last stack a heap event carried.  Runs of events from one call site are the common case:
 * comparing the frames with the last ones is cheaper than hashing them.
 */
struct last_stack {
	uint32_t pid; /* 0: nothing cached */
	unsigned n;
	int32_t id;
	uint64_t ips[PROF_MAX_FRAMES];
};

struct collect {
	struct collect_opts opts;
	struct loader *loader;
	struct symbolizer *sym;
	struct procinfo *procs;
	struct stackres *stacks;
	struct heap_agg *heap;
	collect_heap_tap_fn heap_tap; /* trace formats: every heap event, in order */
	void *heap_tap_ctx;
	collect_cpu_tap_fn cpu_tap; /* trace formats: every cpu sample, in order */
	void *cpu_tap_ctx;
	collect_offcpu_tap_fn offcpu_tap; /* trace formats: every off-CPU period, in order */
	void *offcpu_tap_ctx;
	struct cpu_agg *cpu;
	struct collect_dump_thread *dump; /* `dump`: the threads the iterator sent */
	size_t ndump, dump_cap;
	struct offcpu_agg *offcpu;
	struct calls_agg *calls;
	struct calls_attach *calls_at;
	struct unwinder *unw; /* NULL with --unwind fp, or without --heap, --cpu, --offcpu */
	int unwind_asked_fd;  /* prof_unwind_asked: processes without an entry that asked */
	bool unwind_stale;    /* some target waits for a re-read of its mappings */
	struct holds *holds;  /* processes BPF stopped for us, until resumed */
	struct held *held;    /* processes stopped at exec until their tables load */
	bool holds_over;      /* the run is ending: nobody is held for tables any more */
	size_t nheld, held_cap;
	int64_t held_deadline; /* CLOCK_MONOTONIC: let them go even if builds still run */
	uint64_t dlopen_holds, dlopen_hold_timeouts; /* PROF_COLLECT_STATS, this interval */
	uint64_t calls_last_thread;		     /* pid << 32 | tid whose name was last noted */
	struct hashmap *targets;		     /* pid -> struct target */
	struct hashmap *roots;	  /* wide scopes: (dev, ino) of the roots probed */
	struct hashmap *prepared; /* (dev, ino) of executables whose image was prepared */
	struct owners *owners;	  /* wide scopes: what keeps each probed file */
	bool owners_released;	  /* a process released what it kept: sweep at the next tick */
	/* Prepared (dev, ino) -> the BPF's prof_exec_key of its held exec. */
	struct hashmap *exec_keys;
	uint32_t *dead; /* continuous mode: processes gone in this interval */
	size_t ndead, dead_cap;
	uint64_t bad_records;
	int err;		      /* first fatal error while consuming events (0 or -errno) */
	bool events_started;	      /* the ring buffer exists: polling it is allowed */
	uint32_t last_tid;	      /* on_heap's thread whose name was last noted */
	uint32_t last_py_tid;	      /* on_heap's Python thread whose threading name was asked */
	uint64_t cpu_last_thread;     /* pid << 32 | tid: sample_stacks' */
	bool cpu_last_py;	      /* and its name was asked for (a Python sample of it) */
	int64_t py_retry_ns;	      /* when collect__python_retry last asked for names */
	struct last_stack last_stack; /* on_heap's */
	const struct mode_ops *modes[5]; /* the run's modes' operations */
	size_t nmodes;
};

/*
 * A process being profiled.  The pidfd pins the process itself, not its number: once it is
 * gone, signals sent through the pidfd go nowhere, even if a new process took the pid.
 */
struct target {
	int pidfd; /* -1 if the process was gone before we could open one */
	uint8_t alive;
	uint8_t unwind_stale;	/* its mappings changed: re-read them when the time comes */
	uint8_t unwind_quick;	/* re-reads in the current UNWIND_REREAD_NS window */
	int64_t unwind_read_ns; /* CLOCK_MONOTONIC of the last read of its mappings */
};

/*
 * What each mode does with the events of a run; the collector itself keeps what they share
 * (targets, names, stacks, symbols, unwind tables, attach) and calls the operations of the
 * modes the run has, in this order.  A NULL operation: nothing to do for that mode.
 */
struct mode_ops {
	unsigned bit; /* enum prof_mode_bit */
	/*
	 * A record of the mode (type: one of its PROF_REC_*; size as received).  0, -errno (fatal)
	 * or 1: malformed, counted as a bad record.
	 */
	int (*on_record)(struct collect *c, uint32_t type, const void *data, size_t size);
	/* Wide scopes: a process in scope found at start (it may be mid-call, mid-allocation). */
	int (*on_found)(struct collect *c, uint32_t pid);
	int (*on_exec)(struct collect *c, uint32_t pid); /* new image: old addresses are gone */
	/* The dynamic loader mapped objects into pid (startup, dlopen). */
	int (*on_dlopen)(struct collect *c, uint32_t pid);
	/* A thread exited (e->flags & PROF_PROC_GROUP_DEAD: its whole process). */
	int (*on_exit)(struct collect *c, const struct prof_proc_event *e);
	void (*tick)(struct collect *c); /* every turn of the event loop */
	/* Before a profile is built from the mode's aggregate (last: the run ends). */
	void (*snapshot)(struct collect *c, bool last);
	int (*reset)(struct collect *c); /* after the snapshot of an interval: the next one */
	int (*forget)(struct collect *c, uint32_t pid); /* pid gone, its last interval written */
};

static const struct mode_ops heap_ops, cpu_ops, offcpu_ops, calls_ops, dump_ops;
static const struct mode_ops *const all_modes[] = {&heap_ops, &cpu_ops, &offcpu_ops, &calls_ops,
						   &dump_ops};

/*
 * A process stopped at its exec until the unwind tables of its new image are loaded: by ptrace
 * (`-- CMD`'s tree, hold 0: PTRACE_CONT resumes it) or by BPF's exec hold (wide scopes: hold is
 * its id in c->holds).
 */
struct held {
	uint32_t pid;
	uint32_t tid; /* a dlopen hold under ptrace: the thread in our SIGSTOP's delivery stop */
	uint64_t hold;
	int64_t deadline; /* a dlopen hold: resumed then (PROF_DL_HOLD_MS); 0: held_deadline's */
};

/*
 * An unknown pc asks for a re-read of the process's mappings: at once for the first few in a
 * window (a new program maps its libraries right after exec, then dlopens), then at most once
 * per window (a pc that stays unknown must not make us read the maps at every sample).
 */
#define UNWIND_REREAD_NS	 (200 * 1000000LL)
#define UNWIND_REREAD_QUICK	 4
/* How long a new program of `-- CMD`'s tree waits at its exec for its tables; in a wide scope
 * (the first exec of each executable, while other programs may be building theirs) less. */
#define UNWIND_EXEC_WAIT_MS	 3000
#define UNWIND_EXEC_WAIT_WIDE_MS 500
/* How often the loop asks for the names of Python threads seen unnamed (the symbolizer reads a
 * process's at most every 100 ms anyway). */
#define PY_RETRY_NS		 (100 * 1000000LL)

static int fatal(struct collect *c, int err);
static void unwind_release_held(struct collect *c);
static void dlopen_expire(struct collect *c, int64_t now);
static bool hold_for_tables(struct collect *c, uint32_t pid, uint64_t hold, int64_t deadline);
static int discover_root(struct collect *c, uint32_t pid);
static int note_dead(struct collect *c, uint32_t pid);
static void prepare_image(struct collect *c, uint32_t pid);
static void undead(struct collect *c, uint32_t pid);
static void owned_gone(void *ctx, enum owners_kind kind, const struct owners_key *key);

/* The unwinder found (or lost) a CPython in pid: the symbolizer reads its code objects so. */
static void python_found(void *arg, uint32_t pid, const struct py_version *v,
			 const struct prof_py_proc *py)
{
	struct collect *c = arg;
	int err = stackres__python(c->stacks, pid, v, py->runtime, py->code_type);

	if (err)
		fatal(c, err);
}

static int unwinder_start(struct collect *c)
{
	struct unwinder_opts o = {0};
	struct loader_unwind_fds fds;
	int err;

	if (!c->loader)
		return 0; /* unit tests without BPF */
	err = loader__unwind_fds(c->loader, &fds);
	if (err)
		return 0; /* no program that walks stacks was loaded */
	o.procs_fd = fds.procs;
	o.tables_fd = fds.tables;
	o.files_fd = fds.files;
	c->unwind_asked_fd = fds.asked;
	o.on_python = python_found;
	o.on_python_arg = c;
	o.max_table_bytes = c->opts.unwind_memory;
	err = unwinder__new(&c->unw, &o);
	if (err)
		pr_err("starting the unwind-table worker failed: %s\n", strerror(-err));
	return err;
}

/*
 * Read pid's mappings for the unwinder (first sight, exec, an unknown pc).  A process that is
 * gone is not an error; a full process map is counted by the unwinder.
 */
static void unwind_read(struct collect *c, uint32_t pid, struct target *t)
{
	int err;

	if (!c->unw)
		return;
	if (t) {
		t->unwind_stale = 0;
		t->unwind_read_ns = clock__mono_ns();
	}
	err = unwinder__add_process(c->unw, pid);
	if (err && err != -ESRCH && err != -ENOENT && err != -ENOSPC)
		pr_debug("reading the mappings of %u for unwinding: %s\n", pid, strerror(-err));
	/* A process that had no entry asked once: it may ask again. */
	bpf_map_delete_elem(c->unwind_asked_fd, &pid);
}

/* The BPF walker met a pc outside pid's known mappings (a dlopen since we read them). */
static void unwind_miss(struct collect *c, uint32_t pid)
{
	struct target *t = hashmap__find(c->targets, &pid);

	if (!c->unw)
		return;
	if (t && clock__mono_ns() - t->unwind_read_ns >= UNWIND_REREAD_NS)
		t->unwind_quick = 0;
	if (!t || t->unwind_quick < UNWIND_REREAD_QUICK) {
		if (t)
			t->unwind_quick++;
		unwind_read(c, pid, t);
		return;
	}
	t->unwind_stale = 1; /* read recently: collect__poll_unwinder re-reads it later */
	c->unwind_stale = true;
}

int collect__poll_unwinder(struct collect *c)
{
	const uint32_t *pid;
	struct target *t;
	size_t it = 0;
	int64_t now;
	bool left = false;
	int err;

	if (!c->unw)
		return 0;
	if (c->unwind_stale) {
		now = clock__mono_ns();
		while (hashmap__next(c->targets, &it, (const void **)&pid, (void **)&t)) {
			if (!t->unwind_stale)
				continue;
			if (t->alive && now - t->unwind_read_ns >= UNWIND_REREAD_NS)
				unwind_read(c, *pid, t);
			else if (t->alive)
				left = true;
			else
				t->unwind_stale = 0;
		}
		c->unwind_stale = left;
	}
	err = unwinder__poll(c->unw);
	if (c->nheld && unwinder__pending(c->unw))
		dlopen_expire(c, clock__mono_ns());
	if (c->nheld && (!unwinder__pending(c->unw) || clock__mono_ns() >= c->held_deadline)) {
		if (unwinder__pending(c->unw))
			pr_warn("unwind tables still building after %d ms: letting %zu new "
				"process(es) run (frame pointers meanwhile)\n",
				c->opts.wide ? UNWIND_EXEC_WAIT_WIDE_MS : UNWIND_EXEC_WAIT_MS,
				c->nheld);
		unwind_release_held(c);
	}
	if (err == -ENOMEM) {
		pr_err("out of memory while loading unwind tables\n");
		return fatal(c, err);
	}
	return 0;
}

int collect__wait_unwinder(struct collect *c, int timeout_ms)
{
	int err;

	if (!c->unw)
		return 0;
	err = unwinder__wait(c->unw, timeout_ms);
	if (err == -ETIMEDOUT)
		pr_warn("unwind tables still building after %d ms: frame pointers meanwhile\n",
			timeout_ms);
	return err == -ETIMEDOUT ? 0 : err;
}

static int calls_thread(void *ctx, uint32_t pid, uint32_t tid, uint64_t ts)
{
	struct collect *c = ctx;

	/* ts: when every probe of the process was in; no call after it misses a half. */
	if (c->opts.stream)
		return c->opts.stream->attached(c->opts.stream->ctx, pid, ts);
	return calls_agg__thread_preexisting(c->calls, pid, tid, ts);
}

int collect__new(struct collect **out, const struct collect_opts *opts, struct loader *l)
{
	struct collect *c = calloc(1, sizeof(*c));
	int err;

	if (!c)
		return -ENOMEM;
	c->opts = *opts;
	c->loader = l;
	err = symbolizer__new(&c->sym, NULL);
	if (!err)
		err = procinfo__new(&c->procs, NULL);
	/* Wide scopes label each process with its container, cgroup and own pid. */
	if (!err && opts->wide)
		err = procinfo__enable_labels(c->procs);
	if (!err)
		err = stackres__new(&c->stacks, c->sym);
	/* Symbols are read on a thread of their own: the event loop never waits for them. */
	if (!err)
		err = stackres__start_worker(c->stacks);
	if (!err)
		err = hashmap__new(&c->targets, sizeof(uint32_t), sizeof(struct target));
	if (!err)
		err = hashmap__new(&c->roots, 2 * sizeof(uint64_t), 1);
	if (!err)
		err = hashmap__new(&c->prepared, 2 * sizeof(uint64_t), 1);
	if (!err && opts->wide)
		err = owners__new(&c->owners);
	if (!err)
		err = hashmap__new(&c->exec_keys, 2 * sizeof(uint64_t),
				   sizeof(struct prof_exec_key));
	if (!err && (opts->modes & MODE_HEAP))
		err = heap_agg__new(&c->heap, opts->sample_bytes);
	if (!err && (opts->modes & MODE_CPU))
		err = cpu_agg__new(&c->cpu);
	if (!err && (opts->modes & MODE_OFFCPU))
		err = offcpu_agg__new(&c->offcpu);
	if (!err && (opts->modes & MODE_CALLS))
		err = calls_agg__new(&c->calls);
	if (!err && (opts->modes & MODE_CALLS))
		err = calls_attach__new(&c->calls_at, l, calls_thread, c);
	if (!err && (opts->modes & MODE_CALLS) && opts->stream && opts->stream->marker)
		calls_attach__set_markers(c->calls_at, true);
	if (!err && opts->unwind_tables &&
	    (opts->modes & (MODE_HEAP | MODE_CPU | MODE_OFFCPU | MODE_DUMP)))
		err = unwinder_start(c);
	if (!err)
		err = holds__new(&c->holds, l ? loader__held_map_fd(l) : -1);
	for (size_t i = 0; i < sizeof(all_modes) / sizeof(all_modes[0]); i++)
		if (opts->modes & all_modes[i]->bit)
			c->modes[c->nmodes++] = all_modes[i];
	if (err) {
		collect__free(c);
		return err;
	}
	*out = c;
	return 0;
}

static void target_close(struct target *t)
{
	if (t->pidfd >= 0)
		close(t->pidfd);
	t->pidfd = -1;
	t->alive = 0;
}

void collect__free(struct collect *c)
{
	struct target *t;
	size_t it = 0;

	if (!c)
		return;
	while (c->targets && hashmap__next(c->targets, &it, NULL, (void **)&t))
		target_close(t);
	unwind_release_held(c);
	free(c->held);
	unwinder__free(c->unw);
	heap_agg__free(c->heap);
	cpu_agg__free(c->cpu);
	free(c->dump);
	offcpu_agg__free(c->offcpu);
	calls_attach__free(c->calls_at);
	calls_agg__free(c->calls);
	stackres__free(c->stacks);
	/* After the symbolizer's thread, which resumes exit holds: those left go now. */
	holds__free(c->holds);
	procinfo__free(c->procs);
	symbolizer__free(c->sym);
	hashmap__free(c->targets);
	hashmap__free(c->roots);
	hashmap__free(c->prepared);
	owners__free(c->owners);
	hashmap__free(c->exec_keys);
	free(c->dead);
	free(c);
}

/*
 * pid became a target (given, started, or a followed child).  Its pidfd is opened now; the
 * pid is a target still only if BPF has not dropped it (its thread group died), so a pidfd
 * opened before that check names the process we meant, or a dead one: never a stranger that
 * reused the number.
 */
/*
 * -p and `-- CMD` with unwind tables: hook the dynamic loader pid runs (ld-*, once per file, every
 * process filtered in BPF), so that its dlopens are held until their tables are in.  Wide
 * scopes hook every root's loaders (heap_attach__root).  A loader without the hook (not
 * glibc's) is none of our business.
 */
static void hook_loader(struct collect *c, uint32_t pid)
{
	struct maps *m = NULL;
	char path[64];
	int fd;

	if (!c->unw || !c->loader || c->opts.wide)
		return;
	snprintf(path, sizeof(path), "/proc/%u/maps", pid);
	if (maps__read(&m, path))
		return; /* gone */
	for (size_t i = 0; i < m->count; i++) {
		const struct maps_entry *e = &m->entries[i];
		const char *base = strrchr(e->path, '/');

		if (!e->exec || !base || strncmp(base + 1, "ld-", 3) ||
		    safe_open__mapping(&fd, "/proc", pid, e, -1))
			continue;
		if (loader__attach_hook(c->loader, LOADER_HOOK_DL, fd, e->path) < 0)
			pr_debug("not hooking the loader %s\n", e->path);
		close(fd);
		break;
	}
	maps__free(m);
}

static int track(struct collect *c, uint32_t pid)
{
	struct target *t;
	bool created;
	int fd;

	if (hashmap__upsert(c->targets, (void **)&t, &pid, &created))
		return -ENOMEM;
	if (!created)
		target_close(t);
	t->pidfd = -1;
	fd = pidfd__open((pid_t)pid);
	if (fd < 0) {
		pr_debug("no pidfd for %u: %s\n", pid, strerror(-fd));
		return 0; /* gone already: its exit event follows */
	}
	if (c->loader && !c->opts.wide && loader__has_target(c->loader, pid) != 1) {
		close(fd);
		return 0;
	}
	t->pidfd = fd;
	t->alive = 1;
	unwind_read(c, pid, t);
	hook_loader(c, pid);
	return 0;
}

int collect__add_pid(struct collect *c, uint32_t pid)
{
	int err = track(c, pid);

	if (!err)
		err = procinfo__note(c->procs, pid, pid);
	return err ? err : stackres__load_pid(c->stacks, pid);
}

int collect__add_scoped(struct collect *c, uint32_t pid)
{
	int err;

	loader__scope_found(c->loader, pid);
	err = collect__add_pid(c, pid);

	if (!err)
		err = discover_root(c, pid);
	/* Its executable and libraries: tables, allocators and the exit hook before the
	 * processes that run them after it come and go. */
	if (!err)
		prepare_image(c, pid);
	for (size_t i = 0; !err && i < c->nmodes; i++)
		if (c->modes[i]->on_found)
			err = c->modes[i]->on_found(c, pid);
	return err;
}

int collect__discover_root(struct collect *c, uint32_t pid)
{
	return discover_root(c, pid);
}

int collect__add_child(struct collect *c, uint32_t pid)
{
	return track(c, pid);
}

/* --calls: the runtimes of every -p process, or those `-- CMD` will run (attached before it
 * execs, for every process, filtered in BPF, so its first call is seen).  For `-- CMD` this
 * is only the fast path: a launcher (sh -c, env, javac, mvn) shows no runtime up front, and
 * each exec in its tree attaches what it runs (collect__exec_stop). */
static int attach_calls(struct collect *c)
{
	int n, total = 0;

	if (c->opts.cmd) {
		n = calls_attach__cmd(c->calls_at, c->opts.cmd);
		if (n < 0)
			goto failed;
		return 0;
	}
	/* Wide scopes: each process found or exec'd attaches its runtime (collect__add_scoped,
	 * on_exec); none running yet is no error. */
	if (c->opts.wide)
		return 0;
	for (unsigned i = 0; i < c->opts.npids; i++) {
		char who[32];

		n = calls_attach__pid(c->calls_at, c->opts.pids[i]);
		if (n < 0)
			goto failed;
		/* With several pids, the others may still have an interpreter: say which not. */
		if (!n) {
			snprintf(who, sizeof(who), "process %u", c->opts.pids[i]);
			calls_attach__explain_none(c->calls_at, who);
		}
		total += n;
	}
	return total ? 0 : -ENOENT;
failed:
	pr_err("attaching the --calls probes failed: %s\n", strerror(-n));
	return n == -ESRCH ? -ENOENT : n;
}

int collect__attach_modes(struct collect *c)
{
	int err;

	if (c->opts.modes & MODE_CALLS) {
		err = attach_calls(c);
		if (err)
			return err;
	}

	if (c->opts.modes & MODE_CPU) {
		err = loader__attach_cpu(c->loader);
		if (err) {
			pr_err("starting CPU sampling failed: %s\n", strerror(-err));
			return err;
		}
	}
	if (c->opts.modes & MODE_OFFCPU) {
		err = loader__attach_offcpu(c->loader);
		if (err) {
			pr_err("attaching the scheduler tracepoint (--offcpu) failed: %s\n",
			       strerror(-err));
			return err;
		}
	}
	return 0;
}

int collect__start_events(struct collect *c, ring_buffer_sample_fn fn, void *ctx)
{
	int err = loader__start_events(c->loader, fn, ctx);

	if (!err)
		c->events_started = true;
	return err;
}

int collect__attach_heap(struct collect *c, uint32_t pid, int probe_pid, int *nfns)
{
	int err = c->owners && probe_pid < 0
			  ? heap_attach__scoped(c->loader, c->owners, pid, nfns)
			  : heap_attach__process(c->loader, pid, probe_pid, nfns);

	/* A process that is gone has nothing left to probe; anything else loses allocations. */
	if (err && err != -ENOENT && err != -ESRCH)
		pr_err("attaching the heap probes to process %u failed: %s\n", pid, strerror(-err));
	return err;
}

void collect__process_exiting(struct collect *c, uint32_t pid)
{
	/* Its mappings are final and still readable: reload, then let queued events resolve,
	 * and wait for their stacks to be symbolized before it goes on exiting. */
	fatal(c, stackres__reload_pid(c->stacks, pid));
	fatal(c, stackres__python_names(c->stacks, pid));
	/* Without a ring buffer (setting it up failed) there is nothing queued to resolve. */
	if (c->events_started)
		while (loader__poll(c->loader, 0) > 0)
			;
	fatal(c, stackres__sync(c->stacks));
}

/* Libraries whose tables are built before a new program runs (two levels of DT_NEEDED). */
struct unwind_libs {
	struct collect *c;
	int root_fd;
	unsigned depth, n;
	const struct owners_key *image; /* wide scopes: the executable they are kept for */
};

#define UNWIND_PREPARE_MAX 64

static void unwind_lib(const char *path, void *arg)
{
	struct unwind_libs *l = arg;
	char origin[PATH_MAX];
	int fd;

	if (l->n >= UNWIND_PREPARE_MAX ||
	    safe_open__at(&fd, l->root_fd, path, 0, SAFE_OPEN_ELF_MAX, NULL))
		return;
	l->n++;
	if (l->c->unw)
		unwinder__prepare(l->c->unw, fd); /* 0 at once when the file is known */
	/* A container's own libc: probed before the program's first allocation when we can. */
	if (l->c->heap && (l->c->opts.wide || l->c->opts.cmd)) {
		int n = heap_attach__file(l->c->loader, fd, path, -1);

		if (n < 0)
			pr_debug("not probing %s: %s\n", path, strerror(-n));
	}
	/* A libc's _exit holds its short-lived processes for their symbols (holds on). */
	if (l->c->opts.hold_exits)
		loader__attach_hook(l->c->loader, LOADER_HOOK_EXIT, fd, path);
	if (l->image && owners__group_fd(l->c->owners, OWNERS_IMAGE, l->image, fd))
		pr_debug("not noting %s as kept by its executable: out of memory\n", path);
	if (l->depth < 2) {
		snprintf(origin, sizeof(origin), "%s", path);
		if (strrchr(origin, '/'))
			*strrchr(origin, '/') = 0;
		l->depth++;
		elf_needed__each(fd, origin, l->root_fd, NULL, NULL, unwind_lib, l);
		l->depth--;
	}
	close(fd);
}

/*
 * `-- CMD`: build the tables of what CMD will map before it starts, so its first stacks are
 * complete: its executable and the libraries its DT_NEEDED entries name (ld.so and what a
 * launcher execs are queued at their exec stop).
 */
int collect__prepare_unwind(struct collect *c, const char *exe)
{
	struct unwind_libs l = {.c = c, .root_fd = -1, .depth = 1};

	if (c->unw)
		unwind_lib(exe, &l);
	return 0;
}

/* Wide scopes: the root (container) pid runs in, first time seen: its allocators and loaders
 * are probed for every process there. */
static int discover_root(struct collect *c, uint32_t pid)
{
	struct root_key {
		uint64_t dev, ino;
	} key = {0};
	struct stat st;
	bool created;
	void *v;
	int err, root_fd, n = 0;

	if (safe_open__root(&root_fd, "/proc", pid))
		return 0; /* gone, or a kernel thread */
	if (fstat(root_fd, &st)) {
		err = 0;
		goto cleanup;
	}
	key.dev = st.st_dev;
	key.ino = st.st_ino;
	err = hashmap__upsert(c->roots, &v, &key, &created);
	if (!err && c->owners)
		err = owners__join(c->owners, pid, OWNERS_ROOT, (const struct owners_key *)&key);
	if (err || !created)
		goto cleanup;
	err = heap_attach__root(c->loader, c->owners, root_fd, c->opts.hold_exits, &n);
	if (n)
		pr_info("probed %d allocator functions in the root of process %u\n", n, pid);
	err = err == -ENOMEM ? err : 0;
cleanup:
	close(root_fd);
	return err;
}

/* Let one held process run on: its BPF hold resumed, and the thread our SIGSTOP stopped in
 * its delivery (ptrace) continued without it; a ptrace exec stop continued. */
static void held_release(struct collect *c, const struct held *h)
{
	pid_t t = (pid_t)(h->hold ? h->tid : h->pid);

	if (h->hold)
		holds__resume(c->holds, h->hold);
	if (t && ptrace(PTRACE_CONT, t, 0, 0) && errno != ESRCH)
		pr_debug("resuming %u after its hold: %s\n", (unsigned)t, strerror(errno));
}

/* Let the processes held at their exec run on (their tables are loaded, or it took too long). */
static void unwind_release_held(struct collect *c)
{
	for (size_t i = 0; i < c->nheld; i++)
		held_release(c, &c->held[i]);
	c->nheld = 0;
}

/* Dlopen holds past their own deadline go, tables or not (counted). */
static void dlopen_expire(struct collect *c, int64_t now)
{
	for (size_t i = 0; i < c->nheld;) {
		if (c->held[i].deadline && now >= c->held[i].deadline) {
			c->dlopen_hold_timeouts++;
			held_release(c, &c->held[i]);
			c->held[i] = c->held[--c->nheld];
		} else {
			i++;
		}
	}
}

/* A new image of pid, once per executable: the unwind tables, allocator probes and (holds on)
 * exit hook of its executable and of what its DT_NEEDED entries name, two levels deep,
 * resolved inside its root.  pid's own mappings are the caller's business (unwind_read). */
static void prepare_image(struct collect *c, uint32_t pid)
{
	struct unwind_libs l = {.c = c, .root_fd = -1, .depth = 1};
	char path[64], exe[PATH_MAX];
	struct owners_key key;
	struct stat st;
	ssize_t len;

	snprintf(path, sizeof(path), "/proc/%u/exe", pid);
	/* An executable prepared once is prepared for good: a loop of short processes must not
	 * pay for it at every exec (their held exits wait for us).  Wide scopes: until no process
	 * runs it (owned_gone). */
	if (!stat(path, &st)) {
		bool created;
		void *v;

		key = (struct owners_key){st.st_dev, st.st_ino};
		if (c->owners && owners__join(c->owners, pid, OWNERS_IMAGE, &key))
			return;
		l.image = c->owners ? &key : NULL;
		if (hashmap__upsert(c->prepared, &v, &key, &created) || !created)
			return;
	}
	len = readlink(path, exe, sizeof(exe) - 1);
	if (len > 0 && !safe_open__root(&l.root_fd, "/proc", pid)) {
		exe[len] = 0;
		unwind_lib(exe, &l); /* known already: its DT_NEEDED are what is new */
		close(l.root_fd);
	}
}

/*
 * A process of `-- CMD`'s tree is stopped at its exec, its new image not yet run: read its
 * mappings (executable, ld.so, vDSO) and queue the tables of the libraries ld.so will map.
 * True when it stays stopped until they are loaded (collect__poll_unwinder resumes it, at the
 * latest after UNWIND_EXEC_WAIT_MS): its first stacks are then complete.  Each file is built
 * once, on the worker: the event loop goes on meanwhile.
 */
static bool unwind_exec_stop(struct collect *c, uint32_t pid)
{
	unwind_read(c, pid, hashmap__find(c->targets, &pid));
	hook_loader(c, pid);
	prepare_image(c, pid);
	return hold_for_tables(c, pid, 0, 0);
}

/*
 * Keep pid stopped (ptrace, or hold: a BPF exec hold's id in c->holds) until the tables
 * being built are loaded, at most UNWIND_EXEC_WAIT_MS (wide: _WIDE_MS) from the first of a
 * batch.  False when nothing is building (or no room): the caller resumes it now.
 */
static bool hold_for_tables(struct collect *c, uint32_t pid, uint64_t hold, int64_t deadline)
{
	struct held *held;

	if (!c->unw || c->holds_over)
		return false;
	unwinder__poll(c->unw);
	if (!unwinder__pending(c->unw))
		return false;
	if (c->nheld == c->held_cap) {
		size_t cap = c->held_cap ? 2 * c->held_cap : 8;

		held = realloc(c->held, cap * sizeof(*held));
		if (!held)
			return false; /* not held: frame pointers until its tables load */
		c->held = held;
		c->held_cap = cap;
	}
	if (!c->nheld)
		c->held_deadline =
			clock__mono_ns() +
			(c->opts.wide ? UNWIND_EXEC_WAIT_WIDE_MS : UNWIND_EXEC_WAIT_MS) * 1000000LL;
	c->held[c->nheld++] = (struct held){.pid = pid, .hold = hold, .deadline = deadline};
	return true;
}

bool collect__exec_stop(struct collect *c, uint32_t pid)
{
	int err;

	/* --calls first: its probes must be in place before the process runs on. */
	if (c->calls_at) {
		err = calls_attach__exec(c->calls_at, pid);
		/* Not fatal: the periodic rescan of the tree's maps tries again. */
		if (err < 0)
			pr_warn("--calls: attaching to the runtime of process %u at its exec "
				"failed: "
				"%s\n",
				pid, strerror(-err));
	}
	return c->unw && unwind_exec_stop(c, pid);
}

void collect__set_exec_stops(struct collect *c, bool on)
{
	if (c->calls_at)
		calls_attach__set_exec_stops(c->calls_at, on);
}

bool collect__calls_none(struct collect *c)
{
	return c->calls_at && !calls_attach__total(c->calls_at);
}

int collect__error(struct collect *c)
{
	return c->err;
}

void collect__holds_over(struct collect *c)
{
	c->holds_over = true;
	unwind_release_held(c);
}

int collect__sync(struct collect *c)
{
	return fatal(c, stackres__sync(c->stacks));
}

/* `-- CMD`: a followed child may have exec'd another interpreter, or loaded one (dlopen):
 * attach to runtimes its maps show now (each file once). */
static void rescan_calls(struct collect *c)
{
	const uint32_t *pid;
	struct target *t;
	size_t it = 0;

	while (hashmap__next(c->targets, &it, (const void **)&pid, (void **)&t))
		if (t->alive)
			calls_attach__rescan(c->calls_at, *pid);
}

/* Remember the first fatal error (already reported where it happened). */
static int fatal(struct collect *c, int err)
{
	if (err && !c->err)
		c->err = err;
	return err;
}

void collect__python_retry(struct collect *c)
{
	int64_t now = clock__mono_ns();

	/* Python threads seen before threading named them, maybe asleep since: named now. */
	if (now - c->py_retry_ns >= PY_RETRY_NS) {
		c->py_retry_ns = now;
		fatal(c, stackres__python_retry(c->stacks));
	}
}

void collect__tick(struct collect *c)
{
	/* The probes of files no process in scope maps any more go (README: Probes go with the
	 * last process …), whatever the output. */
	if (c->owners_released) {
		c->owners_released = false;
		if (owners__sweep(c->owners, owned_gone, c) == -ENOMEM)
			fatal(c, -ENOMEM);
	}
	for (size_t i = 0; i < c->nmodes; i++)
		if (c->modes[i]->tick)
			c->modes[i]->tick(c);
}

/*
 * A pidfd polls readable once its whole thread group has exited (a leader that called
 * pthread_exit is not that), and it never follows the pid to another process.
 */
bool collect__any_alive(struct collect *c)
{
	struct pollfd pfd = {.events = POLLIN};
	struct target *t;
	size_t it = 0;
	bool any = false;

	while (hashmap__next(c->targets, &it, NULL, (void **)&t)) {
		if (!t->alive)
			continue;
		pfd.fd = t->pidfd;
		if (poll(&pfd, 1, 0) == 1 && (pfd.revents & (POLLIN | POLLHUP | POLLERR)))
			target_close(t);
		else
			any = true;
	}
	return any;
}

void collect__signal_all(struct collect *c, int sig)
{
	const uint32_t *pid;
	struct target *t;
	size_t it = 0;
	int err;

	while (hashmap__next(c->targets, &it, (const void **)&pid, (void **)&t))
		if (t->alive && (err = pidfd__signal(t->pidfd, sig)) && err != -ESRCH)
			pr_debug("signal %d to %u: %s\n", sig, *pid, strerror(-err));
}

void collect__set_heap_tap(struct collect *c, collect_heap_tap_fn fn, void *ctx)
{
	c->heap_tap = fn;
	c->heap_tap_ctx = ctx;
}

void collect__set_offcpu_tap(struct collect *c, collect_offcpu_tap_fn fn, void *ctx)
{
	c->offcpu_tap = fn;
	c->offcpu_tap_ctx = ctx;
}

void collect__set_cpu_tap(struct collect *c, collect_cpu_tap_fn fn, void *ctx)
{
	c->cpu_tap = fn;
	c->cpu_tap_ctx = ctx;
}

static int heap_tap(struct collect *c, enum collect_heap_kind kind, uint32_t pid, uint32_t tid,
		    int32_t stack_id, uint64_t addr, uint64_t old_addr, uint64_t size, uint64_t ts)
{
	struct collect_heap_event e = {kind, pid, tid, stack_id, addr, old_addr, size, ts};

	return c->heap_tap ? c->heap_tap(c->heap_tap_ctx, &e) : 0;
}

/* The id of a heap event's stack, through the last-stack cache. */
static int heap_stack(struct collect *c, int32_t *id, const struct prof_heap_event *e,
		      const uint64_t *ips)
{
	struct last_stack *last = &c->last_stack;
	unsigned n = e->nframes;
	int err;

	if (last->pid == e->pid && last->n == n && !memcmp(last->ips, ips, n * sizeof(*ips))) {
		*id = last->id;
		return 0;
	}
	err = stackres__intern(c->stacks, id, e->pid, STACK_USER_RET, ips, n);
	if (err)
		return err;
	last->pid = e->pid;
	last->n = n;
	last->id = *id;
	memcpy(last->ips, ips, n * sizeof(*ips));
	return 0;
}

/* ips: the e->nframes frames after the header (the caller checked the record holds them). */
static int on_heap(struct collect *c, const struct prof_heap_event *e, const uint64_t *ips)
{
	int32_t id = STACKRES_NONE;
	int err;

	/* Runs of events from one thread are the common case: skip the lookup. */
	if (e->tid != c->last_tid) {
		err = procinfo__note(c->procs, e->pid, e->tid);
		if (err)
			return err;
		c->last_tid = e->tid;
	}
	/* A Python thread: its threading name (as sample_stacks; the first events of a thread may
	 * come before the interpreter's). */
	if (e->py && e->tid != c->last_py_tid) {
		err = stackres__python_thread(c->stacks, e->pid, e->tid);
		if (err)
			return err;
		c->last_py_tid = e->tid;
	}
	if (!(e->flags & PROF_HEAP_STACK_FAILED)) {
		err = heap_stack(c, &id, e, ips);
		if (err)
			return err;
	}
	if (e->type == PROF_REC_HEAP_ALLOC)
		heap_agg__alloc(c->heap, e->pid, e->tid, id, e->py, e->addr, e->size);
	else
		heap_agg__realloc(c->heap, e->pid, e->tid, id, e->py, e->old_addr, e->addr,
				  e->size);
	return heap_tap(c,
			e->type == PROF_REC_HEAP_ALLOC ? COLLECT_HEAP_ALLOC : COLLECT_HEAP_REALLOC,
			e->pid, e->tid, id, e->addr, e->old_addr, e->size, e->ts);
}

/*
 * A stack sample of a thread (cpu, offcpu): the thread's name noted, frames[0..nkern) interned
 * as its kernel stack and the nuser frames after them as its user stack.
 */
static int sample_stacks(struct collect *c, int32_t *kern, int32_t *user, uint32_t pid,
			 uint32_t tid, uint8_t py, const uint64_t *frames, unsigned nkern,
			 unsigned nuser)
{
	uint64_t thread = (uint64_t)pid << 32 | tid;
	int err;

	if (thread != c->cpu_last_thread) {
		err = procinfo__note(c->procs, pid, tid);
		if (err)
			return err;
		c->cpu_last_thread = thread;
		c->cpu_last_py = false;
	}
	/* A Python thread: its threading name, asked once per run of its samples (the symbolizer
	 * skips known ones).  Not with the thread's first sample: a thread sampled before the
	 * interpreter was found (its startup) is a Python thread from a later sample on. */
	if (py && !c->cpu_last_py) {
		err = stackres__python_thread(c->stacks, pid, tid);
		if (err)
			return err;
		c->cpu_last_py = true;
	}
	err = stackres__intern(c->stacks, kern, pid, STACK_KERNEL, frames, nkern);
	if (!err)
		err = stackres__intern(c->stacks, user, pid, STACK_USER, frames + nkern, nuser);
	return err;
}

/* A cpu sample: frames[0..nkern) kernel, then nuser user frames. */
static int on_cpu(struct collect *c, const struct prof_cpu_sample *s, const uint64_t *frames)
{
	struct cpu_agg_key k = {.pid = s->pid, .tid = s->tid, .py = s->py};
	int err;

	err = sample_stacks(c, &k.kern_stack, &k.user_stack, s->pid, s->tid, s->py, frames,
			    s->nkern, s->nuser);
	if (!err)
		err = cpu_agg__add(c->cpu, &k);
	if (!err && c->cpu_tap)
		err = c->cpu_tap(c->cpu_tap_ctx,
				 &(struct collect_cpu_event){.pid = s->pid,
							     .tid = s->tid,
							     .ts = s->ts,
							     .user_stack = k.user_stack,
							     .kern_stack = k.kern_stack});
	return err;
}

/* A period off the CPU (or, at the end, one still going on): its frames as a cpu sample's. */
static int on_offcpu(struct collect *c, const struct prof_offcpu_event *e, const uint64_t *frames,
		     uint64_t ns)
{
	struct offcpu_agg_key k = {.pid = e->pid, .tid = e->tid, .state = e->state, .py = e->py};
	int err;

	err = sample_stacks(c, &k.kern_stack, &k.user_stack, e->pid, e->tid, e->py, frames,
			    e->nkern, e->nuser);
	if (!err)
		err = offcpu_agg__add(c->offcpu, &k, ns);
	if (!err && c->offcpu_tap)
		err = c->offcpu_tap(c->offcpu_tap_ctx,
				    &(struct collect_offcpu_event){.pid = e->pid,
								   .tid = e->tid,
								   .start = e->out_ns,
								   .ns = ns,
								   .state = e->state});
	return err;
}

/* Does a record of size bytes hold its header and the nframes frames it announces? */
static bool frames_fit(size_t size, size_t header, unsigned nframes, unsigned max)
{
	return nframes <= max && size >= header + (size_t)nframes * sizeof(uint64_t);
}

static int on_call(struct collect *c, const struct prof_call_event *e)
{
	uint64_t thread = (uint64_t)e->pid << 32 | e->tid;
	int err;

	/* Events come in runs per thread: look its name up only when the thread changes. */
	if (thread != c->calls_last_thread) {
		err = procinfo__note(c->procs, e->pid, e->tid);
		if (err)
			return err;
		c->calls_last_thread = thread;
	}
	if (c->opts.stream)
		return c->opts.stream->call(c->opts.stream->ctx, e);
	return calls_agg__event(c->calls, e);
}

/* The dynamic loader mapped pid's libraries (startup) or a dlopen's. */
static int on_dlopen(struct collect *c, uint32_t pid)
{
	int err;

	/* Wide scopes: read the maps while the process lives, however short its life. */
	if (c->opts.wide) {
		pr_debug("%u: the dynamic loader changed its maps\n", pid);
		err = stackres__load_pid(c->stacks, pid);
		if (err)
			return err;
		if (c->unw)
			unwind_read(c, pid, hashmap__find(c->targets, &pid));
	}
	for (size_t i = 0; i < c->nmodes; i++)
		if (c->modes[i]->on_dlopen && (err = c->modes[i]->on_dlopen(c, pid)))
			return err;
	return 0;
}

/* exec replaced pid's image: new maps, names, runtimes, allocator. */
static int on_exec(struct collect *c, uint32_t pid, const char *comm)
{
	int err;

	err = stackres__reload_pid(c->stacks, pid);
	if (err)
		return err;
	unwind_read(c, pid, hashmap__find(c->targets, &pid));
	pr_debug("%u exec'd %s\n", pid, comm);
	err = stackres__exec(c->stacks, pid);
	if (err)
		return err;
	if (c->last_stack.pid == pid)
		c->last_stack.pid = 0;
	err = procinfo__set_comm(c->procs, pid, pid, comm);
	/* Wide scopes: its labels while it lives (a short life may end before its samples). */
	if (!err && c->opts.wide)
		err = procinfo__note(c->procs, pid, pid);
	if (err)
		return err;
	/* Wide scopes, whatever the modes: a new root, the new image's tables, allocators and
	 * exit hook.  Not held (no ptrace here): its libraries are being mapped as we read, its
	 * first calls may run before the probes are in. */
	if (c->opts.wide) {
		err = discover_root(c, pid);
		if (err)
			return err;
		prepare_image(c, pid);
	}
	for (size_t i = 0; !err && i < c->nmodes; i++)
		if (c->modes[i]->on_exec)
			err = c->modes[i]->on_exec(c, pid);
	return err;
}

/*
 * Resume pid, stopped for us at a hold (its exec, its loader's startup) — once the unwind tables
 * being built are loaded (at most UNWIND_EXEC_WAIT_WIDE_MS), so that its first stacks are
 * complete.  where: for the warning.
 */
static void held_resume(struct collect *c, const struct prof_proc_event *e)
{
	uint64_t hold;

	if (holds__take(c->holds, &hold, e))
		return; /* killed meanwhile, or out of memory: resumed already */
	if (!c->err && hold_for_tables(c, e->pid, hold, 0))
		return;
	holds__resume(c->holds, hold);
}

/*
 * A process stopped in a dlopen, its new objects mapped and their constructors not run
 * (PROF_PROC_DLOPEN_HELD): its maps read again (the new files' tables queued, the symbolizer
 * told) and it goes on once those tables are in, at most PROF_DL_HOLD_MS later.
 */
static void dlopen_held(struct collect *c, const struct prof_proc_event *e)
{
	uint64_t hold;

	if (holds__take(c->holds, &hold, e))
		return; /* killed meanwhile, or out of memory: resumed already */
	c->dlopen_holds++;
	if (!c->err) {
		unwind_read(c, e->pid, hashmap__find(c->targets, &e->pid));
		fatal(c, stackres__load_pid(c->stacks, e->pid));
	}
	if (!c->err &&
	    hold_for_tables(c, e->pid, hold, clock__mono_ns() + PROF_DL_HOLD_MS * 1000000LL))
		return;
	holds__resume(c->holds, hold);
}

bool collect__traced_sigstop(struct collect *c, uint32_t pid, uint32_t tid)
{
	/* Its hold's record was sent before the signal: consume it now. */
	if (c->events_started)
		while (loader__poll(c->loader, 0) > 0)
			;
	for (size_t i = 0; i < c->nheld; i++) {
		struct held *h = &c->held[i];

		if (h->pid == pid && h->hold && h->deadline && !h->tid) {
			h->tid = tid;
			return true;
		}
	}
	return false;
}

/*
 * A process stopped at the first exec of its executable (wide scopes, holds on) has had its new
 * image prepared by on_exec — allocator probes, exit and loader hooks, runtime probes, unwind
 * tables queued — before its first instruction: mark the executable done (its later execs run
 * unheld) and let it go once those tables are loaded (or after UNWIND_EXEC_WAIT_WIDE_MS).
 */
static void exec_release(struct collect *c, const struct prof_proc_event *e)
{
	struct prof_exec_key *k;
	char path[64];
	struct stat st;

	if (loader__exec_seen(c->loader, &e->exe))
		pr_debug("marking the executable of %u prepared failed\n", e->pid);
	/* The BPF's key by ours (they differ on overlayfs): forgotten with the image (owned_gone).
	 */
	snprintf(path, sizeof(path), "/proc/%u/exe", e->pid);
	if (!stat(path, &st) &&
	    !hashmap__upsert(c->exec_keys, (void **)&k,
			     &(struct owners_key){(uint64_t)st.st_dev, (uint64_t)st.st_ino}, NULL))
		*k = e->exe;
	held_resume(c, e);
}

/*
 * -p: the kernel filters per-process uprobes by the memory of the thread they were opened on,
 * the leader, and a leader that left (pthread_exit) has none: probes opened on a thread still
 * running take over.  Allocations between the two are missed (README: limits).
 */
static int leader_left(struct collect *c, uint32_t pid)
{
	char path[64];
	struct dirent *d;
	uint32_t tid = 0;
	int err, n = 0;
	DIR *dir;

	snprintf(path, sizeof(path), "/proc/%u/task", pid);
	dir = opendir(path);
	if (!dir)
		return 0; /* the whole process is going: its last exit event follows */
	while (!tid && (d = readdir(dir))) {
		unsigned long v = strtoul(d->d_name, NULL, 10); /* 0 for "." and ".." */

		if (v && v != pid)
			tid = (uint32_t)v;
	}
	closedir(dir);
	if (!tid)
		return 0;
	/* /proc/TID/maps: the leader's own maps read empty now. */
	err = collect__attach_heap(c, tid, (int)tid, &n);
	if (err == -ENOENT || err == -ESRCH)
		return 0;
	if (!err)
		pr_info("main thread of %u exited: heap probes moved to its thread %u\n", pid, tid);
	return err;
}

static int on_proc(struct collect *c, const struct prof_proc_event *e)
{
	char comm[PROF_COMM_LEN + 1];
	struct target *t;
	int err;

	memcpy(comm, e->comm, PROF_COMM_LEN);
	comm[PROF_COMM_LEN] = 0;
	switch (e->type) {
	case PROF_REC_PROC_FORK:
		pr_debug("following child %u of %u\n", e->pid, e->ppid);
		undead(c, e->pid);
		err = track(c, e->pid);
		if (!err && c->owners)
			err = owners__fork(c->owners, e->pid, e->ppid);
		if (err)
			return err;
		/* Same image as the parent until it execs: same mappings, same symbols. */
		err = stackres__load_pid(c->stacks, e->pid);
		return err ? err : procinfo__note(c->procs, e->pid, e->pid);
	case PROF_REC_PROC_EXEC:
		err = on_exec(c, e->pid, comm);
		if (e->flags & PROF_PROC_EXEC_HELD)
			exec_release(c, e);
		return err;
	case PROF_REC_PROC_DLOPEN:
		err = on_dlopen(c, e->pid);
		/* Held at its loader's startup: its maps are read now, its probes attached. */
		if (e->flags & PROF_PROC_DL_HELD)
			held_resume(c, e);
		if (e->flags & PROF_PROC_DLOPEN_HELD)
			dlopen_held(c, e);
		return err;
	case PROF_REC_PROC_THREAD:
		/* Its name is wanted from now on: read until threading registers it. */
		return stackres__python_thread(c->stacks, e->pid, e->tid);
	case PROF_REC_PROC_EXIT:
		/* The tid may come back as another thread: look its name up again then. */
		c->last_tid = 0;
		c->last_py_tid = 0;
		c->calls_last_thread = 0;
		c->cpu_last_thread = 0;
		err = procinfo__exited(c->procs, e->pid, e->tid, comm,
				       e->flags & PROF_PROC_GROUP_DEAD);
		for (size_t i = 0; !err && i < c->nmodes; i++)
			if (c->modes[i]->on_exit)
				err = c->modes[i]->on_exit(c, e);
		if (err)
			return err;
		if (e->flags & PROF_PROC_GROUP_DEAD) {
			if (c->opts.interval) {
				err = note_dead(c, e->pid);
				if (err)
					return err;
			}
			t = hashmap__find(c->targets, &e->pid);
			if (t)
				target_close(t);
			if (c->unw)
				unwinder__remove_process(c->unw, e->pid);
			if (c->owners) {
				owners__release(c->owners, e->pid);
				c->owners_released = true;
			}
		}
		return 0;
	}
	return 0;
}

/* On the symbolizer's thread: the held process goes on exiting (unless the hold's time
 * limit resumed it already). */
static void exit_resume(void *ctx, uint64_t hold)
{
	struct collect *c = ctx;

	holds__resume(c->holds, hold);
}

/*
 * A process stopped itself (BPF sent SIGSTOP) in _exit: every record it sent came before this
 * one and was consumed while it lived.  Its maps are read once more (what symbolizes records
 * still to come from its last moments) and, once its stacks are symbolized, it goes on exiting
 * (at the latest after HOLDS_MAX_MS).
 */
static void exit_hold(struct collect *c, const struct prof_proc_event *e)
{
	uint64_t hold;

	if (holds__take(c->holds, &hold, e))
		return; /* killed meanwhile, or out of memory: resumed already */
	if (c->err || stackres__load_pid(c->stacks, e->pid) ||
	    stackres__python_names(c->stacks, e->pid) ||
	    stackres__after(c->stacks, exit_resume, c, hold))
		holds__resume(c->holds, hold); /* never left stopped */
}

/* A negative return stops the ring buffer's poll: only for errors that end the session. */
int collect__on_event(void *ctx, void *data, size_t size)
{
	struct collect *c = ctx;
	const struct mode_ops *m = NULL;
	uint32_t type;
	int err;

	if (size < sizeof(type)) {
		c->bad_records++;
		return 0;
	}
	memcpy(&type, data, sizeof(type));
	/* A held process is resumed whatever else went wrong. */
	if (type == PROF_REC_PROC_EXIT_HOLD && size >= sizeof(struct prof_proc_event)) {
		exit_hold(c, data);
		return 0;
	}
	/*
	 * After a fatal error (reported once, by the negative return that ended that poll) every
	 * record is consumed and dropped but for the holds, so that the drains at the end reach
	 * every held process: libbpf stops a poll at the first negative return.
	 */
	if (c->err) {
		if (type == PROF_REC_PROC_EXEC && size >= sizeof(struct prof_proc_event) &&
		    (((struct prof_proc_event *)data)->flags & PROF_PROC_EXEC_HELD))
			exec_release(c, data);
		if (type == PROF_REC_PROC_DLOPEN && size >= sizeof(struct prof_proc_event) &&
		    (((struct prof_proc_event *)data)->flags & PROF_PROC_DL_HELD))
			held_resume(c, data);
		if (type == PROF_REC_PROC_DLOPEN && size >= sizeof(struct prof_proc_event) &&
		    (((struct prof_proc_event *)data)->flags & PROF_PROC_DLOPEN_HELD))
			dlopen_held(c, data);
		return 0;
	}
	if (stackres__error(c->stacks)) {
		pr_err("out of memory while symbolizing\n");
		return fatal(c, stackres__error(c->stacks));
	}
	switch (type) {
	case PROF_REC_HEAP_ALLOC:
	case PROF_REC_HEAP_REALLOC:
	case PROF_REC_HEAP_FREE:
		m = &heap_ops;
		break;
	case PROF_REC_CPU_SAMPLE:
		m = &cpu_ops;
		break;
	case PROF_REC_OFFCPU:
		m = &offcpu_ops;
		break;
	case PROF_REC_DUMP_THREAD:
		m = &dump_ops;
		break;
	case PROF_REC_CALL_ENTRY:
	case PROF_REC_CALL_RETURN:
	case PROF_REC_CALL_NAME:
	case PROF_REC_CALL_MARKER:
		m = &calls_ops;
		break;
	case PROF_REC_PROC_FORK:
	case PROF_REC_PROC_EXEC:
	case PROF_REC_PROC_EXIT:
	case PROF_REC_PROC_DLOPEN:
	case PROF_REC_PROC_THREAD:
		if (size < sizeof(struct prof_proc_event))
			break;
		err = on_proc(c, data);
		goto done;
	case PROF_REC_UNWIND_MISS:
		if (size < sizeof(struct prof_proc_event))
			break;
		unwind_miss(c, ((struct prof_proc_event *)data)->pid);
		return 0;
	default:
		break;
	}
	/* A mode's record: its own operation checks it (a mode the run lacks has none). */
	err = m && (c->opts.modes & m->bit) ? m->on_record(c, type, data, size) : 1;
	if (err == 1) {
		c->bad_records++;
		return 0;
	}
done:
	/* Attach failures were reported where they happened; memory runs out anywhere. */
	if (err == -ENOMEM)
		pr_err("out of memory while collecting events\n");
	return fatal(c, err);
}

/* The BPF record of a sampled block of a process that is gone. */
static void sampled_gone(void *ctx, uint64_t addr)
{
	const uint32_t *pid = ctx;
	struct prof_sampled_key key = {.tgid = pid[0], .addr = addr};

	bpf_map_delete_elem((int)pid[1], &key);
}

/* Nothing in scope keeps key any more: a file's probes go, a root or executable is probed
 * afresh when a process runs in it again. */
static void owned_gone(void *ctx, enum owners_kind kind, const struct owners_key *key)
{
	struct collect *c = ctx;

	const struct prof_exec_key *k;

	if (kind == OWNERS_FILE && c->loader)
		loader__detach_file(c->loader, key->dev, key->ino);
	else if (kind != OWNERS_FILE)
		hashmap__delete(kind == OWNERS_ROOT ? c->roots : c->prepared, key);
	/* An executable no process runs: its next first exec is held and prepared again. */
	k = kind == OWNERS_IMAGE ? hashmap__find(c->exec_keys, key) : NULL;
	if (k) {
		if (c->loader)
			loader__exec_forget(c->loader, k);
		hashmap__delete(c->exec_keys, key);
	}
}

/*
 * --heap.  Records carry a stack; frees only an address.  -- CMD and the wide scopes probe the
 * allocators of each new image (a static binary's own, a container's libc).
 */
static int heap_on_record(struct collect *c, uint32_t type, const void *data, size_t size)
{
	const struct prof_heap_event *e = data;
	const struct prof_heap_free *f = data;

	if (type == PROF_REC_HEAP_FREE) {
		if (size < sizeof(*f))
			return 1;
		heap_agg__free_block(c->heap, f->pid, f->addr);
		return heap_tap(c, COLLECT_HEAP_FREE, f->pid, f->tid, STACKRES_NONE, f->addr, 0, 0,
				f->ts);
	}
	if (size < sizeof(*e) || !frames_fit(size, sizeof(*e), e->nframes, PROF_MAX_FRAMES))
		return 1;
	return on_heap(c, e, (const uint64_t *)(e + 1));
}

static int heap_attach_any(struct collect *c, uint32_t pid)
{
	int n = 0, err = collect__attach_heap(c, pid, -1, &n);

	return err == -ENOENT || err == -ESRCH ? 0 : err;
}

static int heap_on_exec(struct collect *c, uint32_t pid)
{
	/* The old address space is gone, and every block still live in it. */
	int err = heap_agg__exec(c->heap, pid), n = 0;

	if (!err)
		err = heap_tap(c, COLLECT_HEAP_EXEC, pid, 0, STACKRES_NONE, 0, 0, 0, 0);
	if (err || !(c->opts.cmd || c->opts.wide))
		return err;
	err = collect__attach_heap(c, pid, -1, &n);
	/* -- CMD: its own tree, a miss is an error; wide scopes: one of many (reported). */
	return err && err != -ENOENT && err != -ESRCH && !c->opts.wide ? err : 0;
}

static int heap_on_dlopen(struct collect *c, uint32_t pid)
{
	if (c->opts.wide)
		heap_attach_any(c, pid); /* one file of many: reported, not fatal */
	return 0;
}

static int heap_on_exit(struct collect *c, const struct prof_proc_event *e)
{
	if (e->flags & PROF_PROC_GROUP_DEAD || e->tid != e->pid || c->opts.cmd || c->opts.wide)
		return 0;
	return leader_left(c, e->pid);
}

static int heap_reset(struct collect *c)
{
	return heap_agg__new_interval(c->heap);
}

static int heap_forget(struct collect *c, uint32_t pid)
{
	uint32_t ctx[2] = {pid, (uint32_t)loader__sampled_fd(c->loader)};

	return heap_agg__forget_pid(c->heap, pid, (int)ctx[1] >= 0 ? sampled_gone : NULL, ctx);
}

static const struct mode_ops heap_ops = {
	.bit = MODE_HEAP,
	.on_record = heap_on_record,
	.on_found = heap_attach_any,
	.on_exec = heap_on_exec,
	.on_dlopen = heap_on_dlopen,
	.on_exit = heap_on_exit,
	.reset = heap_reset,
	.forget = heap_forget,
};

/* --cpu: a sample carries its kernel then user frames; the counts start again each interval. */
static int cpu_on_record(struct collect *c, uint32_t type, const void *data, size_t size)
{
	const struct prof_cpu_sample *s = data;

	(void)type;
	/* nkern and nuser are bytes: each is within PROF_MAX_FRAMES (255) by its type. */
	_Static_assert(PROF_MAX_FRAMES <= UINT8_MAX, "frame counts of a cpu sample are bytes");
	if (size < sizeof(*s) ||
	    !frames_fit(size, sizeof(*s), s->nkern + s->nuser, 2 * PROF_MAX_FRAMES))
		return 1;
	return on_cpu(c, s, (const uint64_t *)(s + 1));
}

static int cpu_reset(struct collect *c)
{
	return cpu_agg__reset(c->cpu);
}

static const struct mode_ops cpu_ops = {
	.bit = MODE_CPU,
	.on_record = cpu_on_record,
	.reset = cpu_reset,
};

/* `dump`: a thread's state and, when it was off the CPU, its frames. */
static int dump_on_record(struct collect *c, uint32_t type, const void *data, size_t size)
{
	const struct prof_dump_thread *t = data;
	struct collect_dump_thread *d;
	int err;

	(void)type;
	_Static_assert(sizeof(d->comm) == sizeof(t->comm), "comm sizes");
	if (size < sizeof(*t) ||
	    !frames_fit(size, sizeof(*t), t->nkern + t->nuser, 2 * PROF_MAX_FRAMES))
		return 1;
	if (c->ndump == c->dump_cap) {
		size_t cap = c->dump_cap ? 2 * c->dump_cap : 64;
		struct collect_dump_thread *n = realloc(c->dump, cap * sizeof(*n));

		if (!n)
			return -ENOMEM;
		c->dump = n;
		c->dump_cap = cap;
	}
	d = &c->dump[c->ndump];
	*d = (struct collect_dump_thread){.pid = t->pid,
					  .tid = t->tid,
					  .state = t->state,
					  .orig_ax = t->orig_ax,
					  .flags = t->flags,
					  .py = t->py};
	memcpy(d->comm, t->comm, sizeof(d->comm));
	d->comm[sizeof(d->comm) - 1] = 0;
	err = sample_stacks(c, &d->kern_stack, &d->user_stack, t->pid, t->tid, t->py,
			    (const uint64_t *)(t + 1), t->nkern, t->nuser);
	if (err)
		return err;
	c->ndump++;
	return 0;
}

static const struct mode_ops dump_ops = {
	.bit = MODE_DUMP,
	.on_record = dump_on_record,
};

const struct collect_dump_thread *collect__dump_threads(struct collect *c, size_t *n)
{
	*n = c->ndump;
	return c->dump;
}

/* A record the kernel built for --offcpu: its header and the frames it announces. */
static bool offcpu_fits(const struct prof_offcpu_event *e, size_t size)
{
	return size >= sizeof(*e) && e->nkern <= PROF_MAX_FRAMES && e->nuser <= PROF_MAX_FRAMES &&
	       e->state < PROF_OFFCPU__COUNT &&
	       frames_fit(size, sizeof(*e), e->nkern + e->nuser, 2 * PROF_MAX_FRAMES);
}

/* --offcpu: a period off the CPU carries its length and its kernel then user frames. */
static int offcpu_on_record(struct collect *c, uint32_t type, const void *data, size_t size)
{
	const struct prof_offcpu_event *e = data;

	(void)type;
	if (!offcpu_fits(e, size))
		return 1;
	return on_offcpu(c, e, (const uint64_t *)(e + 1), e->ns);
}

/*
 * The run ends: threads that left the CPU during the run and have not come back count up to
 * now, from the kernel's records of them (the program is detached by now, so none moves),
 * less the CPU time they have had since (one whose return the tracepoint never reported has
 * been running: bpf/offcpu.bpf.c).  Between intervals they count when they run again.
 */
static void offcpu_snapshot(struct collect *c, bool last)
{
	int fd = c->loader ? loader__offcpu_fd(c->loader) : -1, err = 0;
	struct prof_offcpu_record r;
	uint64_t now, span, run, ran;
	uint32_t key, next;
	bool first = true;

	if (!last || fd < 0)
		return;
	now = (uint64_t)clock__mono_ns();
	while (!err && !bpf_map_get_next_key(fd, first ? NULL : &key, &next)) {
		first = false;
		key = next;
		if (bpf_map_lookup_elem(fd, &key, &r) || !offcpu_fits(&r.e, sizeof(r)))
			continue; /* gone meanwhile */
		span = now > r.e.ns ? now - r.e.ns : 0;
		if (!procinfo__run_ns(c->procs, r.e.pid, r.e.tid, &run) && run > r.e.run_ns) {
			ran = run - r.e.run_ns;
			span = span > ran ? span - ran : 0;
		}
		err = on_offcpu(c, &r.e, (const uint64_t *)r.frames, span);
	}
	fatal(c, err);
}

static int offcpu_reset(struct collect *c)
{
	return offcpu_agg__reset(c->offcpu);
}

static const struct mode_ops offcpu_ops = {
	.bit = MODE_OFFCPU,
	.on_record = offcpu_on_record,
	.snapshot = offcpu_snapshot,
	.reset = offcpu_reset,
};

/* --calls: entries and returns per thread; frames still open are closed when the run ends. */
static int calls_on_record(struct collect *c, uint32_t type, const void *data, size_t size)
{
	if (type == PROF_REC_CALL_NAME) {
		if (size < sizeof(struct prof_call_name))
			return 1;
		calls_agg__name(c->calls, data);
		return 0;
	}
	if (type == PROF_REC_CALL_MARKER) {
		const struct prof_call_marker *mk = data;

		if (size < sizeof(*mk) || !c->opts.stream || !c->opts.stream->marker)
			return 1;
		/* The thread's name, as for its calls. */
		if (((uint64_t)mk->pid << 32 | mk->tid) != c->calls_last_thread) {
			int err = procinfo__note(c->procs, mk->pid, mk->tid);

			if (err)
				return err;
			c->calls_last_thread = (uint64_t)mk->pid << 32 | mk->tid;
		}
		return c->opts.stream->marker(c->opts.stream->ctx, mk);
	}
	return size < sizeof(struct prof_call_event) ? 1 : on_call(c, data);
}

/* Attach failures are reported, not fatal: a wide scope has many processes, and -- CMD's
 * periodic rescan tries again. */
static void calls_attached(int n, uint32_t pid, const char *when)
{
	if (n < 0 && n != -ENOENT && n != -ESRCH)
		pr_warn("--calls: attaching to the runtime of process %u%s failed: %s\n", pid, when,
			strerror(-n));
}

/* A process found in scope: probes limited to it (its threads may be mid-call). */
static int calls_on_found(struct collect *c, uint32_t pid)
{
	calls_attached(calls_attach__pid(c->calls_at, pid), pid, "");
	return 0;
}

static int calls_on_exec(struct collect *c, uint32_t pid)
{
	calls_agg__process_exec(c->calls, pid);
	if (c->opts.stream) {
		int err = c->opts.stream->process_exec(c->opts.stream->ctx, pid);

		if (err)
			return err;
	}
	/* -- CMD attached at the exec stop already (collect__exec_stop). */
	if (c->opts.wide)
		calls_attached(calls_attach__exec(c->calls_at, pid), pid, " at its exec");
	return 0;
}

/* A runtime loaded by dlopen (a JDK launcher's libjvm, mod_php's libphp): attach now.  The
 * process runs on meanwhile: its calls until then are missed (README). */
static int calls_on_dlopen(struct collect *c, uint32_t pid)
{
	if (c->opts.cmd || c->opts.wide)
		calls_attach__rescan(c->calls_at, pid);
	return 0;
}

static int calls_on_exit(struct collect *c, const struct prof_proc_event *e)
{
	calls_agg__thread_exit(c->calls, e->pid, e->tid);
	if (c->opts.stream)
		return c->opts.stream->thread_exit(c->opts.stream->ctx, e->pid, e->tid);
	return 0;
}

static void calls_tick(struct collect *c)
{
	if (c->opts.cmd)
		rescan_calls(c);
}

/* A thread's run time from /proc: the busy clock of a call still open at the end. */
static int thread_run_ns(void *ctx, uint32_t pid, uint32_t tid, uint64_t *busy)
{
	struct collect *c = ctx;

	return procinfo__run_ns(c->procs, pid, tid, busy);
}

static void calls_snapshot(struct collect *c, bool last)
{
	/* Between intervals a call still open goes on: only the end of the run closes it. */
	if (last)
		calls_agg__finish(c->calls, (uint64_t)clock__mono_ns(), thread_run_ns, c);
}

static int calls_reset(struct collect *c)
{
	return calls_agg__new_interval(c->calls);
}

static int calls_forget(struct collect *c, uint32_t pid)
{
	calls_agg__forget_pid(c->calls, pid);
	return 0;
}

static const struct mode_ops calls_ops = {
	.bit = MODE_CALLS,
	.on_record = calls_on_record,
	.on_found = calls_on_found,
	.on_exec = calls_on_exec,
	.on_dlopen = calls_on_dlopen,
	.on_exit = calls_on_exit,
	.tick = calls_tick,
	.snapshot = calls_snapshot,
	.reset = calls_reset,
	.forget = calls_forget,
};

/* Continuous mode: the processes gone during the interval just written leave every table, so
 * memory follows the processes alive, not all that ever ran. */
static int forget_dead(struct collect *c)
{
	struct hashmap *used = NULL;
	int err = 0;

	for (size_t i = 0; i < c->ndead; i++) {
		uint32_t pid = c->dead[i];
		struct target *t = hashmap__find(c->targets, &pid);

		for (size_t m = 0; m < c->nmodes; m++)
			if (c->modes[m]->forget && !err)
				err = c->modes[m]->forget(c, pid);
		stackres__forget_pid(c->stacks, pid);
		procinfo__forget(c->procs, pid);
		if (!err)
			err = stackres__drop_pid(c->stacks, pid);
		if (t) {
			target_close(t);
			hashmap__delete(c->targets, &pid);
		}
		if (c->last_stack.pid == pid)
			c->last_stack.pid = 0;
	}
	if (!c->ndead)
		return err;
	c->ndead = 0;
	/* Mapping records and names only the forgotten stacks used (stackres__used waits for the
	 * worker: the symbolizer is ours until the next job is queued). */
	if (!err)
		err = hashmap__new(&used, sizeof(void *), 0);
	if (!err)
		err = stackres__used(c->stacks, used);
	if (!err)
		err = symbolizer__sweep(c->sym, used);
	hashmap__free(used);
	return err;
}

/* A process's whole thread group exited: remembered for forget_dead (continuous mode). */
static int note_dead(struct collect *c, uint32_t pid)
{
	if (c->ndead == c->dead_cap) {
		size_t cap = c->dead_cap ? 2 * c->dead_cap : 64;
		uint32_t *d = realloc(c->dead, cap * sizeof(*d));

		if (!d)
			return -ENOMEM;
		c->dead = d;
		c->dead_cap = cap;
	}
	c->dead[c->ndead++] = pid;
	return 0;
}

/* pid is alive again (a new process reusing the number): not to be forgotten. */
static void undead(struct collect *c, uint32_t pid)
{
	for (size_t i = 0; i < c->ndead; i++)
		if (c->dead[i] == pid)
			c->dead[i] = c->dead[--c->ndead];
}

int collect__new_interval(struct collect *c)
{
	int err = forget_dead(c);

	for (size_t i = 0; !err && i < c->nmodes; i++)
		if (c->modes[i]->reset)
			err = c->modes[i]->reset(c);
	c->bad_records = 0;
	c->dlopen_holds = 0;
	c->dlopen_hold_timeouts = 0;
	if (c->holds)
		holds__stats(c->holds, true);
	return err;
}

void collect__snapshot(struct collect *c, bool last)
{
	/* Python threads named since their first samples (the profile says thread_name). */
	fatal(c, stackres__python_names(c->stacks, 0));
	for (size_t i = 0; i < c->nmodes; i++)
		if (c->modes[i]->snapshot)
			c->modes[i]->snapshot(c, last);
}

struct loader *collect__loader(struct collect *c)
{
	return c->loader;
}

struct heap_agg *collect__heap(struct collect *c)
{
	return c->heap;
}

struct cpu_agg *collect__cpu(struct collect *c)
{
	return c->cpu;
}

struct offcpu_agg *collect__offcpu(struct collect *c)
{
	return c->offcpu;
}

struct calls_agg *collect__calls(struct collect *c)
{
	return c->calls;
}

struct calls_attach *collect__calls_attach(struct collect *c)
{
	return c->calls_at;
}

struct stackres *collect__stacks(struct collect *c)
{
	/* Whoever reads stacks reads their symbols: the worker must be done with them. */
	fatal(c, stackres__sync(c->stacks));
	return c->stacks;
}

struct procinfo *collect__procinfo(struct collect *c)
{
	return c->procs;
}

void collect__poll_holds(struct collect *c)
{
	if (c->holds)
		holds__expire(c->holds, clock__mono_ns() / 1000000);
}

void collect__hold_stats(struct collect *c, uint64_t *timeouts, uint64_t *gone)
{
	struct holds_stats st = {0};

	if (c->holds)
		st = holds__stats(c->holds, false);
	*timeouts = st.timeouts;
	*gone = st.gone;
}

void collect__dlopen_stats(struct collect *c, uint64_t *holds, uint64_t *timeouts)
{
	*holds = c->dlopen_holds;
	*timeouts = c->dlopen_hold_timeouts;
}

bool collect__holding(struct collect *c)
{
	return c->nheld != 0;
}

uint64_t collect__bad_records(struct collect *c)
{
	return c->bad_records;
}

const struct unwinder_stats *collect__unwinder_stats(struct collect *c)
{
	return c->unw ? unwinder__stats(c->unw) : NULL;
}

const struct symbolizer_stats *collect__symbolizer_stats(struct collect *c)
{
	fatal(c, stackres__sync(c->stacks));
	return symbolizer__stats(c->sym);
}
