// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
#include "agg/collect.h"
#include "track/tracker.h"

#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <bpf/bpf.h>

#include "agg/calls_agg.h"
#include "attach/calls_attach.h"
#include "agg/cpu_agg.h"
#include "util/hashmap.h"
#include "agg/heap_agg.h"
#include "agg/offcpu_agg.h"
#include "attach/heap_attach.h"
#include "attach/loader.h"
#include "util/clock.h"
#include "util/log.h"
#include "proc/procinfo.h"
#include "prof_calls.h"
#include "prof_cpu.h"
#include "prof_heap.h"
#include "prof_dump.h"
#include "prof_offcpu.h"
#include "sym/stackres.h"
#include "sym/symbolizer.h"

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
	struct tracker *tr; /* the target processes, their holds and what their images need */
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
	uint64_t calls_last_thread; /* pid << 32 | tid whose name was last noted */
	uint32_t *dead;		    /* continuous mode: processes gone in this interval */
	size_t ndead, dead_cap;
	uint64_t bad_records;
	int err;		      /* first fatal error while consuming events (0 or -errno) */
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

/* How often the loop asks for the names of Python threads seen unnamed (the symbolizer reads a
 * process's at most every 100 ms anyway). */
#define PY_RETRY_NS (100 * 1000000LL)

static int fatal(struct collect *c, int err);
static int note_dead(struct collect *c, uint32_t pid);
static void undead(struct collect *c, uint32_t pid);

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
		err = tracker__new(
			&c->tr, &(struct tracker_opts){
					.loader = l,
					.stacks = c->stacks,
					.procs = c->procs,
					.wide = opts->wide,
					.cmd = opts->cmd != NULL,
					.hold_exits = opts->hold_exits,
					.unwind_tables = opts->unwind_tables &&
							 (opts->modes & (MODE_HEAP | MODE_CPU |
									 MODE_OFFCPU | MODE_DUMP)),
					.unwind_memory = opts->unwind_memory,
					.probe_allocators = (opts->modes & MODE_HEAP) &&
							    (opts->wide || opts->cmd),
				});
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

void collect__free(struct collect *c)
{
	if (!c)
		return;
	heap_agg__free(c->heap);
	cpu_agg__free(c->cpu);
	free(c->dump);
	offcpu_agg__free(c->offcpu);
	calls_attach__free(c->calls_at);
	calls_agg__free(c->calls);
	stackres__free(c->stacks);
	/* After the symbolizer's thread, which resumes exit holds: those left go now. */
	tracker__free(c->tr);
	procinfo__free(c->procs);
	symbolizer__free(c->sym);
	free(c->dead);
	free(c);
}

int collect__add_pid(struct collect *c, uint32_t pid)
{
	int err = tracker__add_pid(c->tr, pid);

	tracker__event_end(c->tr);
	return err;
}

int collect__add_scoped(struct collect *c, uint32_t pid)
{
	int err = tracker__add_scoped(c->tr, pid);

	for (size_t i = 0; !err && i < c->nmodes; i++)
		if (c->modes[i]->on_found)
			err = c->modes[i]->on_found(c, pid);
	tracker__event_end(c->tr);
	return err;
}

int collect__discover_root(struct collect *c, uint32_t pid)
{
	return tracker__discover_root(c->tr, pid);
}

int collect__add_child(struct collect *c, uint32_t pid)
{
	int err = tracker__track(c->tr, pid);

	tracker__event_end(c->tr);
	return err;
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

		const struct maps *m;

		n = tracker__maps(c->tr, c->opts.pids[i], &m);
		if (!n)
			n = calls_attach__pid(c->calls_at, c->opts.pids[i], m);
		tracker__event_end(c->tr);
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
		tracker__events_started(c->tr);
	return err;
}

/* collect__attach_heap within an event: pid's maps are the event's. */
static int attach_heap(struct collect *c, uint32_t pid, int probe_pid, int *nfns)
{
	struct owners *owners = tracker__owners(c->tr);
	const struct maps *m;
	int err = tracker__maps(c->tr, pid, &m);

	if (!err && owners && probe_pid < 0)
		err = heap_attach__scoped(c->loader, owners, pid, m, nfns);
	else if (!err)
		err = heap_attach__process(c->loader, pid, m, probe_pid, nfns);

	/* A process that is gone has nothing left to probe; anything else loses allocations. */
	if (err && err != -ENOENT && err != -ESRCH)
		pr_err("attaching the heap probes to process %u failed: %s\n", pid, strerror(-err));
	return err;
}

int collect__attach_heap(struct collect *c, uint32_t pid, int probe_pid, int *nfns)
{
	int err = attach_heap(c, pid, probe_pid, nfns);

	tracker__event_end(c->tr);
	return err;
}

bool collect__exec_stop(struct collect *c, uint32_t pid)
{
	bool held;
	int err;

	/* --calls first: its probes must be in place before the process runs on. */
	if (c->calls_at) {
		const struct maps *m;

		err = tracker__maps(c->tr, pid, &m);
		if (!err)
			err = calls_attach__exec(c->calls_at, pid, m);
		else if (err == -ENOENT || err == -ESRCH)
			err = 0; /* killed at its exec */
		/* Not fatal: the periodic rescan of the tree's maps tries again. */
		if (err < 0)
			pr_warn("--calls: attaching to the runtime of process %u at its exec "
				"failed: "
				"%s\n",
				pid, strerror(-err));
	}
	held = tracker__exec_stop(c->tr, pid);
	tracker__event_end(c->tr);
	return held;
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
	return c->err ? c->err : tracker__error(c->tr);
}

void collect__holds_over(struct collect *c)
{
	tracker__holds_over(c->tr);
}

int collect__sync(struct collect *c)
{
	return fatal(c, stackres__sync(c->stacks));
}

/* `-- CMD`: a followed child may have exec'd another interpreter, or loaded one (dlopen):
 * attach to runtimes its maps show now (each file once). */
static void rescan_one(void *ctx, uint32_t pid)
{
	struct collect *c = ctx;
	const struct maps *m;

	if (!tracker__maps(c->tr, pid, &m))
		calls_attach__rescan(c->calls_at, pid, m);
	tracker__event_end(c->tr);
}

static void rescan_calls(struct collect *c)
{
	tracker__each_alive(c->tr, rescan_one, c);
}

/* Remember the first fatal error (already reported where it happened). */
static int fatal(struct collect *c, int err)
{
	if (err && !c->err) {
		c->err = err;
		tracker__fail(c->tr, err); /* holds are released at once from now on */
	}
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
	fatal(c, tracker__tick(c->tr));
	for (size_t i = 0; i < c->nmodes; i++)
		if (c->modes[i]->tick)
			c->modes[i]->tick(c);
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
	int err = tracker__dlopen(c->tr, pid);

	for (size_t i = 0; !err && i < c->nmodes; i++)
		if (c->modes[i]->on_dlopen)
			err = c->modes[i]->on_dlopen(c, pid);
	return err;
}

/* exec replaced pid's image: new maps, names, runtimes, allocator. */
static int on_exec(struct collect *c, uint32_t pid, const char *comm)
{
	int err = tracker__exec(c->tr, pid, comm);

	if (c->last_stack.pid == pid)
		c->last_stack.pid = 0;
	for (size_t i = 0; !err && i < c->nmodes; i++)
		if (c->modes[i]->on_exec)
			err = c->modes[i]->on_exec(c, pid);
	return err;
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
	err = attach_heap(c, tid, (int)tid, &n);
	if (err == -ENOENT || err == -ESRCH)
		return 0;
	if (!err)
		pr_info("main thread of %u exited: heap probes moved to its thread %u\n", pid, tid);
	return err;
}

static int on_proc(struct collect *c, const struct prof_proc_event *e)
{
	char comm[PROF_COMM_LEN + 1];
	int err;

	memcpy(comm, e->comm, PROF_COMM_LEN);
	comm[PROF_COMM_LEN] = 0;
	switch (e->type) {
	case PROF_REC_PROC_FORK:
		pr_debug("following child %u of %u\n", e->pid, e->ppid);
		undead(c, e->pid);
		return tracker__fork(c->tr, e->pid, e->ppid);
	case PROF_REC_PROC_EXEC:
		err = on_exec(c, e->pid, comm);
		tracker__release(c->tr, e); /* an exec hold: it goes on once its tables are in */
		return err;
	case PROF_REC_PROC_DLOPEN:
		err = on_dlopen(c, e->pid);
		/* Held at its loader's startup or a dlopen: its maps are read, its probes in. */
		tracker__release(c->tr, e);
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
			tracker__group_exited(c->tr, e->pid);
		}
		return 0;
	}
	return 0;
}

/* A negative return stops the ring buffer's poll: only for errors that end the session. */
static int on_event(struct collect *c, void *data, size_t size)
{
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
		tracker__exit_hold(c->tr, data);
		return 0;
	}
	fatal(c, tracker__error(c->tr)); /* the unwinder's Python discovery ran out of memory */
	/*
	 * After a fatal error (reported once, by the negative return that ended that poll) every
	 * record is consumed and dropped but for the holds, so that the drains at the end reach
	 * every held process: libbpf stops a poll at the first negative return.
	 */
	if (c->err) {
		if ((type == PROF_REC_PROC_EXEC || type == PROF_REC_PROC_DLOPEN) &&
		    size >= sizeof(struct prof_proc_event))
			tracker__release(c->tr, data);
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
		tracker__unwind_miss(c->tr, ((struct prof_proc_event *)data)->pid);
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
	int n = 0, err = attach_heap(c, pid, -1, &n);

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
	err = attach_heap(c, pid, -1, &n);
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
	const struct maps *m;
	int n = tracker__maps(c->tr, pid, &m);

	calls_attached(n ? n : calls_attach__pid(c->calls_at, pid, m), pid, "");
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
	if (c->opts.wide) {
		const struct maps *m;
		int n = tracker__maps(c->tr, pid, &m);

		calls_attached(n ? n : calls_attach__exec(c->calls_at, pid, m), pid,
			       " at its exec");
	}
	return 0;
}

/* A runtime loaded by dlopen (a JDK launcher's libjvm, mod_php's libphp): attach now.  The
 * process runs on meanwhile: its calls until then are missed (README). */
static int calls_on_dlopen(struct collect *c, uint32_t pid)
{
	const struct maps *m;

	if ((c->opts.cmd || c->opts.wide) && !tracker__maps(c->tr, pid, &m))
		calls_attach__rescan(c->calls_at, pid, m);
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

		for (size_t m = 0; m < c->nmodes; m++)
			if (c->modes[m]->forget && !err)
				err = c->modes[m]->forget(c, pid);
		stackres__forget_pid(c->stacks, pid);
		procinfo__forget(c->procs, pid);
		if (!err)
			err = stackres__drop_pid(c->stacks, pid);
		tracker__forget(c->tr, pid);
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
	tracker__new_interval(c->tr);
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

uint64_t collect__bad_records(struct collect *c)
{
	return c->bad_records;
}

const struct symbolizer_stats *collect__symbolizer_stats(struct collect *c)
{
	fatal(c, stackres__sync(c->stacks));
	return symbolizer__stats(c->sym);
}

/* The tracker's, for the session until it holds the tracker itself. */
int collect__poll_unwinder(struct collect *c)
{
	return fatal(c, tracker__poll(c->tr));
}

int collect__wait_unwinder(struct collect *c, int timeout_ms)
{
	return tracker__wait_unwinder(c->tr, timeout_ms);
}

int collect__prepare_unwind(struct collect *c, const char *exe)
{
	tracker__prepare_unwind(c->tr, exe);
	return 0;
}

void collect__process_exiting(struct collect *c, uint32_t pid)
{
	tracker__process_exiting(c->tr, pid);
}

bool collect__traced_sigstop(struct collect *c, uint32_t pid, uint32_t tid)
{
	return tracker__traced_sigstop(c->tr, pid, tid);
}

bool collect__any_alive(struct collect *c)
{
	return tracker__any_alive(c->tr);
}

void collect__signal_all(struct collect *c, int sig)
{
	tracker__signal_all(c->tr, sig);
}

void collect__poll_holds(struct collect *c)
{
	(void)c; /* tracker__poll expires them */
}

void collect__hold_stats(struct collect *c, uint64_t *timeouts, uint64_t *gone)
{
	tracker__hold_stats(c->tr, timeouts, gone);
}

void collect__dlopen_stats(struct collect *c, uint64_t *holds, uint64_t *timeouts)
{
	tracker__dlopen_stats(c->tr, holds, timeouts);
}

bool collect__holding(struct collect *c)
{
	return tracker__holding(c->tr);
}

const struct unwinder_stats *collect__unwinder_stats(struct collect *c)
{
	return tracker__unwinder_stats(c->tr);
}

int collect__on_event(void *ctx, void *data, size_t size)
{
	struct collect *c = ctx;
	int err = on_event(c, data, size);

	tracker__event_end(c->tr); /* the maps read for this record are its own */
	return err;
}
