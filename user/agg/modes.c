// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * What each mode does with the events of a run (the mode tables of collect_priv.h): heap, cpu,
 * offcpu, calls and dump records into their aggregators, each new image's per-mode probes, and
 * the aggregators' intervals.
 */
#include "agg/collect_priv.h"

#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <bpf/bpf.h>

#include "agg/calls_agg.h"
#include "agg/cpu_agg.h"
#include "agg/heap_agg.h"
#include "agg/offcpu_agg.h"
#include "attach/calls_attach.h"
#include "attach/loader.h"
#include "proc/procinfo.h"
#include "prof_calls.h"
#include "prof_cpu.h"
#include "prof_dump.h"
#include "prof_heap.h"
#include "prof_offcpu.h"
#include "sym/stackres.h"
#include "track/tracker.h"
#include "util/clock.h"
#include "util/log.h"

static int heap_tap(struct collect *c, enum collect_heap_kind kind, uint32_t pid, uint32_t tid,
		    int32_t stack_id, uint64_t addr, uint64_t old_addr, uint64_t size, uint64_t ts,
		    uint64_t weight, bool untracked)
{
	struct collect_heap_event e = {kind,	 pid,  tid, stack_id, addr,
				       old_addr, size, ts,  weight,   untracked};

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
	heap_agg__at(c->heap, e->ts);
	if (e->type == PROF_REC_HEAP_ALLOC && e->weight)
		heap_agg__alloc_weighted(c->heap, e->pid, e->tid, id, e->py, e->addr, e->size,
					 e->weight);
	else if (e->type == PROF_REC_HEAP_ALLOC)
		heap_agg__alloc(c->heap, e->pid, e->tid, id, e->py, e->addr, e->size);
	else
		heap_agg__realloc(c->heap, e->pid, e->tid, id, e->py, e->old_addr, e->addr,
				  e->size);
	/* BPF keeps no record of it: its free will not come (counted there). */
	if (e->flags & PROF_HEAP_UNTRACKED)
		heap_agg__untrack(c->heap, e->pid, e->addr);
	return heap_tap(c,
			e->type == PROF_REC_HEAP_ALLOC ? COLLECT_HEAP_ALLOC : COLLECT_HEAP_REALLOC,
			e->pid, e->tid, id, e->addr, e->old_addr, e->size, e->ts, e->weight,
			e->flags & PROF_HEAP_UNTRACKED);
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
	err = collect__event_attach_heap(c, tid, (int)tid, HEAP_ATTACH_MORE, false, &n);
	if (err == -ENOENT || err == -ESRCH)
		return 0;
	if (!err)
		pr_info("main thread of %u exited: heap probes moved to its thread %u\n", pid, tid);
	return err;
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
				f->ts, 0, false);
	}
	if (size < sizeof(*e) || !frames_fit(size, sizeof(*e), e->nframes, PROF_STACK_WORDS))
		return 1;
	return on_heap(c, e, (const uint64_t *)(e + 1));
}

static int heap_attach_any(struct collect *c, uint32_t pid)
{
	int n = 0, err = collect__event_attach_heap(c, pid, -1, HEAP_ATTACH_IMAGE, false, &n);

	return err == -ENOENT || err == -ESRCH ? 0 : err;
}

static int heap_on_exec(struct collect *c, uint32_t pid, bool held)
{
	/* The old address space is gone, and every block still live in it. */
	int err = heap_agg__exec(c->heap, pid), n = 0;

	if (!err)
		err = heap_tap(c, COLLECT_HEAP_EXEC, pid, 0, STACKRES_NONE, 0, 0, 0, 0, 0, false);
	/* -p: the new image now (a static program's own allocator), what its dynamic loader maps
	 * at the loader's reports (heap_attach__exec). */
	if (!err && !c->opts.cmd && !c->opts.wide) {
		err = collect__event_attach_heap(c, pid, (int)pid, HEAP_ATTACH_IMAGE, false, &n);
		if (!err && c->loader)
			err = heap_attach__exec(c->loader, (int)pid);
		return err == -ENOENT || err == -ESRCH ? 0 : err;
	}
	/* `-- CMD` traced: attached at its exec stop already (collect__exec_stop). */
	if (err || !(c->opts.cmd || c->opts.wide) || (c->opts.cmd && c->exec_stops))
		return err;
	err = collect__event_attach_heap(c, pid, -1, HEAP_ATTACH_IMAGE, !held, &n);
	/* -- CMD: its own tree, a miss is an error; wide scopes: one of many (reported). */
	return err && err != -ENOENT && err != -ESRCH && !c->opts.wide ? err : 0;
}

/*
 * A library loaded later: wide scopes probe its allocators; every scope looks for its
 * otel_memory probes, which move the process onto them (-p: probed for it alone).
 */
static int heap_on_dlopen(struct collect *c, uint32_t pid)
{
	int n = 0;

	/* one file of many: reported, not fatal */
	collect__event_attach_heap(c, pid, c->opts.cmd || c->opts.wide ? -1 : (int)pid,
				   c->opts.wide ? HEAP_ATTACH_MORE : HEAP_ATTACH_OTEL, false, &n);
	return 0;
}

/*
 * Wide scopes: a child of a process on allocator links of its own (PROF_PATH_OWN) gets its own,
 * its parent's serving only the parent (its first allocations in files probed per process are
 * not seen: heap_own_late).
 */
static int heap_on_fork(struct collect *c, uint32_t pid, uint32_t ppid)
{
	int n = 0, err;

	if (!c->opts.wide || loader__heap_path_of(c->loader, ppid) != PROF_PATH_OWN)
		return 0;
	/* Only running out of memory ends the run; a failed attach was reported. */
	err = collect__event_attach_heap(c, pid, -1, HEAP_ATTACH_MORE, true, &n);
	return err == -ENOMEM ? err : 0;
}

static int heap_on_exit(struct collect *c, const struct prof_proc_event *e)
{
	struct owners *o = tracker__owners(c->tr);

	if (e->flags & PROF_PROC_GROUP_DEAD) {
		/* Its own allocator links go with it (wide scopes). */
		if (o)
			heap_attach__gone(c->loader, o, e->pid);
		/* The trace writers' tables of live blocks let the process's go. */
		return heap_tap(c, COLLECT_HEAP_EXIT, e->pid, 0, STACKRES_NONE, 0, 0, 0, 0, 0,
				false);
	}
	if (e->tid != e->pid || c->opts.cmd || c->opts.wide)
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

const struct mode_ops collect_heap_ops = {
	.bit = MODE_HEAP,
	.on_record = heap_on_record,
	.on_found = heap_attach_any,
	.on_exec = heap_on_exec,
	.on_fork = heap_on_fork,
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
	/* nkern is a byte: within PROF_KERN_FRAMES (255) by its type. */
	_Static_assert(PROF_KERN_FRAMES <= UINT8_MAX, "kernel frames of a cpu sample are a byte");
	if (size < sizeof(*s) || s->nuser > PROF_STACK_WORDS ||
	    !frames_fit(size, sizeof(*s), s->nkern + s->nuser, PROF_KERN_FRAMES + PROF_STACK_WORDS))
		return 1;
	return on_cpu(c, s, (const uint64_t *)(s + 1));
}

static int cpu_reset(struct collect *c)
{
	return cpu_agg__reset(c->cpu);
}

const struct mode_ops collect_cpu_ops = {
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
	if (size < sizeof(*t) || t->nuser > PROF_STACK_WORDS ||
	    !frames_fit(size, sizeof(*t), t->nkern + t->nuser, PROF_KERN_FRAMES + PROF_STACK_WORDS))
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

const struct mode_ops collect_dump_ops = {
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
	return size >= sizeof(*e) && e->nkern <= PROF_KERN_FRAMES && e->nuser <= PROF_STACK_WORDS &&
	       e->state < PROF_OFFCPU__COUNT &&
	       frames_fit(size, sizeof(*e), e->nkern + e->nuser,
			  PROF_KERN_FRAMES + PROF_STACK_WORDS);
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
	int fd = c->loader ? loader__offcpu_fd(c->loader, false) : -1, err = 0;
	struct prof_offcpu_deep *d = NULL;
	const struct prof_offcpu_event *e;
	struct prof_offcpu_record r;
	uint64_t now, span, run, ran;
	uint32_t key, next;
	bool first = true;

	if (!last || fd < 0)
		return;
	d = malloc(sizeof(*d));
	if (!d) {
		collect__fatal(c, -ENOMEM);
		return;
	}
	now = (uint64_t)clock__mono_ns();
	while (!err && !bpf_map_get_next_key(fd, first ? NULL : &key, &next)) {
		first = false;
		key = next;
		if (bpf_map_lookup_elem(fd, &key, &r) || !offcpu_fits(&r.e, sizeof(r)))
			continue; /* gone meanwhile */
		/* A stack deeper than the thread's record holds: its own record has it whole. */
		e = r.e.deep && !bpf_map_lookup_elem(loader__offcpu_fd(c->loader, true), &key, d) &&
				    offcpu_fits(&d->e, sizeof(*d))
			    ? &d->e
			    : &r.e;
		span = now > r.e.ns ? now - r.e.ns : 0;
		if (!procinfo__run_ns(c->procs, r.e.pid, r.e.tid, &run) && run > r.e.run_ns) {
			ran = run - r.e.run_ns;
			span = span > ran ? span - ran : 0;
		}
		err = on_offcpu(c, e, (const uint64_t *)(e + 1), span);
	}
	free(d);
	collect__fatal(c, err);
}

static int offcpu_reset(struct collect *c)
{
	return offcpu_agg__reset(c->offcpu);
}

const struct mode_ops collect_offcpu_ops = {
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

static int calls_on_exec(struct collect *c, uint32_t pid, bool held)
{
	(void)held;
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
		collect__rescan_calls(c);
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

const struct mode_ops collect_calls_ops = {
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
