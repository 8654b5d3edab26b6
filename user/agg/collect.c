// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
#include "agg/collect.h"
#include "agg/collect_priv.h"
#include "agg/parts.h"
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

static const struct mode_ops *const all_modes[] = {&collect_heap_ops, &collect_cpu_ops,
						   &collect_offcpu_ops, &collect_calls_ops,
						   &collect_dump_ops};

/* How often the loop asks for the names of Python threads seen unnamed (the symbolizer reads a
 * process's at most every 100 ms anyway). */
#define PY_RETRY_NS (100 * 1000000LL)

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

int collect__new(struct collect **out, const struct collect_opts *opts,
		 const struct run_parts *parts)
{
	struct collect *c = calloc(1, sizeof(*c));
	struct loader *l = parts->loader;
	int err = 0;

	if (!c)
		return -ENOMEM;
	c->opts = *opts;
	c->loader = l;
	c->sym = parts->sym;
	c->procs = parts->procs;
	c->stacks = parts->stacks;
	c->tr = parts->tracker;
	if (!err && (opts->modes & MODE_HEAP))
		err = heap_agg__new(&c->heap, opts->sample_bytes);
	if (!err && (opts->modes & MODE_HEAP))
		heap_agg__set_sizes(c->heap, opts->min_size, opts->max_size);
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

int collect__add_child(struct collect *c, uint32_t pid)
{
	int err = tracker__add_child(c->tr, pid);

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

int collect__start_events(struct collect *c, ring_record_fn fn, void *ctx)
{
	int err = loader__start_events(c->loader, fn, ctx);

	if (!err)
		tracker__events_started(c->tr);
	return err;
}

int collect__event_attach_heap(struct collect *c, uint32_t pid, int probe_pid,
			       enum heap_attach_why why, bool late, int *nfns)
{
	struct owners *owners = tracker__owners(c->tr);
	const struct maps *m;
	int err = tracker__maps(c->tr, pid, &m);

	if (!err && owners && probe_pid < 0)
		err = heap_attach__scoped(c->loader, owners, pid, m, why, late, nfns);
	else if (!err)
		err = heap_attach__process(c->loader, pid, m, probe_pid, why, nfns);

	/* A process that is gone has nothing left to probe; anything else loses allocations. */
	if (err && err != -ENOENT && err != -ESRCH)
		pr_err("attaching the heap probes to process %u failed: %s\n", pid, strerror(-err));
	return err;
}

int collect__attach_heap(struct collect *c, uint32_t pid, int probe_pid, int *nfns)
{
	int err = collect__event_attach_heap(c, pid, probe_pid, HEAP_ATTACH_IMAGE, false, nfns);

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
	/* --heap: the new image's path (its own otel_memory probes, or the allocators) decided and
	 * its probes attached before it runs, not when its exec record is read: a sampler that
	 * counts blocks from the start needs its semaphore set then. */
	if (c->opts.modes & MODE_HEAP) {
		int n = 0;

		err = collect__event_attach_heap(c, pid, -1, HEAP_ATTACH_IMAGE, false, &n);
		/* Killed at its exec: nothing to probe.  Else its own tree: a miss is an error
		 * (reported there). */
		if (err && err != -ENOENT && err != -ESRCH)
			collect__fatal(c, err);
	}
	held = tracker__exec_stop(c->tr, pid);
	tracker__event_end(c->tr);
	return held;
}

void collect__set_exec_stops(struct collect *c, bool on)
{
	c->exec_stops = on;
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

int collect__sync(struct collect *c)
{
	return collect__fatal(c, stackres__sync(c->stacks));
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

void collect__rescan_calls(struct collect *c)
{
	tracker__each_alive(c->tr, rescan_one, c);
}

int collect__fatal(struct collect *c, int err)
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
		collect__fatal(c, stackres__python_retry(c->stacks));
	}
}

void collect__tick(struct collect *c)
{
	collect__fatal(c, tracker__tick(c->tr));
	collect__fatal(c, stackres__debug(c->stacks, STACKRES_TICK));
	for (size_t i = 0; i < c->nmodes; i++)
		if (c->modes[i]->tick)
			c->modes[i]->tick(c);
}

void collect__set_heap_tap(struct collect *c, collect_heap_tap_fn fn, void *ctx)
{
	c->heap_tap = fn;
	c->heap_tap_ctx = ctx;
}

void collect__set_oom(struct collect *c, collect_oom_fn fn, void *ctx)
{
	c->oom_fn = fn;
	c->oom_ctx = ctx;
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

/* The dynamic loader mapped pid's libraries (startup) or a dlopen's (held: stopped for us). */
static int on_dlopen(struct collect *c, uint32_t pid, bool held)
{
	int err = tracker__dlopen(c->tr, pid, held);

	for (size_t i = 0; !err && i < c->nmodes; i++)
		if (c->modes[i]->on_dlopen)
			err = c->modes[i]->on_dlopen(c, pid);
	return err;
}

/* exec replaced pid's image: new maps, names, runtimes, allocator. */
static int on_exec(struct collect *c, uint32_t pid, const char *comm, bool held)
{
	int err = tracker__exec(c->tr, pid, comm);

	if (c->last_stack.pid == pid)
		c->last_stack.pid = 0;
	for (size_t i = 0; !err && i < c->nmodes; i++)
		if (c->modes[i]->on_exec)
			err = c->modes[i]->on_exec(c, pid, held);
	return err;
}

static int on_proc(struct collect *c, const struct prof_proc_event *e)
{
	char comm[PROF_COMM_LEN + 1];
	bool held;
	int err;

	memcpy(comm, e->comm, PROF_COMM_LEN);
	comm[PROF_COMM_LEN] = 0;
	switch (e->type) {
	case PROF_REC_PROC_FORK:
		pr_debug("following child %u of %u\n", e->pid, e->ppid);
		undead(c, e->pid);
		err = tracker__fork(c->tr, e->pid, e->ppid);
		for (size_t i = 0; !err && i < c->nmodes; i++)
			if (c->modes[i]->on_fork)
				err = c->modes[i]->on_fork(c, e->pid, e->ppid);
		return err;
	case PROF_REC_PROC_EXEC:
		err = on_exec(c, e->pid, comm, e->flags & PROF_PROC_EXEC_HELD);
		tracker__release(c->tr, e); /* an exec hold: it goes on once its tables are in */
		return err;
	case PROF_REC_PROC_DLOPEN:
		/* Tests only: an unheld loader report handled late, as by a loader behind on its
		 * events, while the process maps on. */
		held = e->flags & (PROF_PROC_DL_HELD | PROF_PROC_DLOPEN_HELD);
		if (!held)
			clock__fault_delay("BPFTRACE_PROF_FAULT_DLOPEN_LATE_MS");
		err = on_dlopen(c, e->pid, held);
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
	collect__fatal(
		c, tracker__error(c->tr)); /* the unwinder's Python discovery ran out of memory */
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
		return collect__fatal(c, stackres__error(c->stacks));
	}
	switch (type) {
	case PROF_REC_HEAP_ALLOC:
	case PROF_REC_HEAP_REALLOC:
	case PROF_REC_HEAP_FREE:
		m = &collect_heap_ops;
		break;
	case PROF_REC_CPU_SAMPLE:
		m = &collect_cpu_ops;
		break;
	case PROF_REC_OFFCPU:
		m = &collect_offcpu_ops;
		break;
	case PROF_REC_DUMP_THREAD:
		m = &collect_dump_ops;
		break;
	case PROF_REC_CALL_ENTRY:
	case PROF_REC_CALL_RETURN:
	case PROF_REC_CALL_NAME:
	case PROF_REC_CALL_MARKER:
		m = &collect_calls_ops;
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
	case PROF_REC_OOM_VICTIM:
		if (size < sizeof(struct prof_oom_event))
			break;
		if (c->oom_fn)
			c->oom_fn(c->oom_ctx, data);
		return 0;
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
	return collect__fatal(c, err);
}

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
	stackres__capped(c->stacks, true);
	tracker__new_interval(c->tr);
	return err;
}

void collect__snapshot(struct collect *c, bool last)
{
	/* Python threads named since their first samples (the profile says thread_name). */
	collect__fatal(c, stackres__python_names(c->stacks, 0));
	/* Debug files debuginfod sent and the DWARF indexed name the frames of their files (the
	 * first profile waits for the DWARF, the last for everything). */
	collect__fatal(c, stackres__debug(c->stacks, last ? STACKRES_LAST : STACKRES_PROFILE));
	for (size_t i = 0; i < c->nmodes; i++)
		if (c->modes[i]->snapshot)
			c->modes[i]->snapshot(c, last);
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

uint64_t collect__bad_records(struct collect *c)
{
	return c->bad_records;
}

uint64_t collect__stacks_capped(struct collect *c)
{
	return stackres__capped(c->stacks, false);
}

int collect__on_event(void *ctx, void *data, size_t size)
{
	struct collect *c = ctx;
	int err = on_event(c, data, size);

	tracker__event_end(c->tr); /* the maps read for this record are its own */
	return err;
}
