/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * Inside the collector: its state and the operations of each mode, shared by collect.c (the
 * dispatch, the targets' events, intervals) and modes.c (what each mode does with a record).
 * Nothing outside agg/collect*.c and agg/modes.c includes this.
 */
#ifndef PROF_COLLECT_PRIV_H
#define PROF_COLLECT_PRIV_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "agg/collect.h"
#include "attach/heap_attach.h"
#include "prof_common.h"

/*
 * The last stack a heap event carried.  Runs of events from one call site are the common case:
 * comparing the frames with the last ones is cheaper than hashing them.
 */
struct last_stack {
	uint32_t pid; /* 0: nothing cached */
	unsigned n;
	int32_t id;
	uint64_t ips[PROF_STACK_WORDS];
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
	collect_oom_fn oom_fn; /* an OOM kill (collect__set_oom) */
	void *oom_ctx;
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
	bool exec_stops;	    /* every exec of `-- CMD`'s tree reaches collect__exec_stop */
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
	/* A new image (old addresses are gone); held: stopped at its exec until we are done. */
	int (*on_exec)(struct collect *c, uint32_t pid, bool held);
	/* A followed child (PROF_REC_PROC_FORK), running since its fork. */
	int (*on_fork)(struct collect *c, uint32_t pid, uint32_t ppid);
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

/* The operations of each mode (modes.c). */
extern const struct mode_ops collect_heap_ops, collect_cpu_ops, collect_offcpu_ops,
	collect_calls_ops, collect_dump_ops;

/* Remember the first fatal error (already reported where it happened); returns err. */
int collect__fatal(struct collect *c, int err);
/* collect__attach_heap within an event: pid's maps are the event's (tracker__maps); why: a new
 * image, or more of one; late: it ran before this (heap_attach.h). */
int collect__event_attach_heap(struct collect *c, uint32_t pid, int probe_pid,
			       enum heap_attach_why why, bool late, int *nfns);
/* `-- CMD`: attach to the runtimes the maps of each target alive show now. */
void collect__rescan_calls(struct collect *c);

#endif /* PROF_COLLECT_PRIV_H */
