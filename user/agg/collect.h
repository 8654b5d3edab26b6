/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * The consumer: ring-buffer records -> per-mode aggregators.  What every mode shares (the
 * tracker of target processes, thread names, symbolizer, stack cache) comes in as run_parts.
 * Each mode is a table of operations (on_record, on_found, on_exec, on_dlopen, on_exit, tick,
 * snapshot, reset, forget) that the collector calls for the modes of the run; the report reads
 * the aggregates at each snapshot.
 */
#ifndef PROF_COLLECT_H
#define PROF_COLLECT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "attach/ring.h"

struct collect;
struct run_parts;
struct loader;
struct heap_agg;
struct cpu_agg;
struct offcpu_agg;
struct calls_agg;
struct calls_attach;

/* The modes a run collects (any combination). */
enum prof_mode_bit {
	MODE_HEAP = 1 << 0,
	MODE_CPU = 1 << 1,
	MODE_CALLS = 1 << 2,
	MODE_OFFCPU = 1 << 3,
	MODE_DUMP = 1 << 4, /* `dump`: each thread's stack once (include/prof_dump.h) */
};

struct prof_call_event;
struct prof_call_marker;

/*
 * Event traces (-f chrome / perfetto): --calls events go to these as they arrive, in place of
 * the aggregator (which still interns the names: collect__calls, calls_agg__lookup_name).
 * Each returns 0 or a negative errno, fatal like the aggregator's.
 */
struct collect_stream {
	void *ctx;
	int (*call)(void *ctx, const struct prof_call_event *e);
	int (*thread_exit)(void *ctx, uint32_t pid, uint32_t tid);
	int (*process_exec)(void *ctx, uint32_t pid);
	/* A running process's probes are all in at ts (CLOCK_MONOTONIC): an event before it may
	 * lack its other half (an entry probed before its return probe was). */
	int (*attached)(void *ctx, uint32_t pid, uint64_t ts);
	/* Optional: an exception, import or log a runtime reported (PROF_REC_CALL_MARKER).
	 * Set: the runtimes' marker probes are attached too (only -f firefox shows them). */
	int (*marker)(void *ctx, const struct prof_call_marker *m);
	/* (--heap events reach a trace through collect__set_heap_tap) */
};

/* What the collector needs to know of the run; the pointers must outlive it. */
struct collect_opts {
	unsigned modes;		     /* enum prof_mode_bit */
	uint64_t sample_bytes;	     /* --sample-bytes */
	uint64_t min_size, max_size; /* --min-size, --max-size (0: none) */
	char *const *cmd;	     /* -- CMD ARG…, NULL-terminated; NULL with -p */
	const uint32_t *pids;	     /* -p */
	unsigned npids;
	bool wide;     /* --cgroup / --container / -a: BPF decides who is in scope */
	bool interval; /* continuous mode: processes gone are forgotten after their interval */
	const struct collect_stream *stream; /* NULL: --calls aggregates */
};

/* parts: what the run shares (agg/parts.h), opened before and closed after the collector. */
int collect__new(struct collect **out, const struct collect_opts *opts,
		 const struct run_parts *parts);
void collect__free(struct collect *c);

/* Open the ring buffer: fn(ctx, …) gets each record (session counts, then calls
 * collect__on_event).  Until this succeeds nothing polls it. */
int collect__start_events(struct collect *c, ring_record_fn fn, void *ctx);
/* ring_record_fn.  Returns a negative errno (stopping the poll) after a fatal error:
 * out of memory, or a new image that could not be probed. */
int collect__on_event(void *ctx, void *data, size_t size);
/* The first fatal error met while consuming events (reported on stderr already), or 0. */
int collect__error(struct collect *c);
/* Wait until every stack consumed so far is symbolized.  0 or -ENOMEM. */
int collect__sync(struct collect *c);

/* A target given with -p: load its symbols now, while it lives. */
int collect__add_pid(struct collect *c, uint32_t pid);
/* --cgroup / --container / -a: a process found in scope at start (its allocator files are
 * probed for every process, filtered in BPF). */
int collect__add_scoped(struct collect *c, uint32_t pid);
/* The `-- CMD` child, not yet exec'd (its exec arrives as an event that loads its maps). */
int collect__add_child(struct collect *c, uint32_t pid);
/* heap_attach__process, reporting failures other than a vanished process (-ENOENT/-ESRCH,
 * returned quietly) in one line on stderr. */
int collect__attach_heap(struct collect *c, uint32_t pid, int probe_pid, int *nfns);
/* Attach the modes other than heap (cpu, offcpu, calls) once targets are known. */
int collect__attach_modes(struct collect *c);
/* A process of `-- CMD`'s tree is stopped (ptrace) at its exec, the new image not yet run:
 * --calls attaches to the runtime it runs or will load; the unwinder queues the tables of what
 * it will map.  True when the collector keeps it stopped (until those tables are loaded; it
 * resumes it itself, PTRACE_CONT); false: the caller resumes it. */
bool collect__exec_stop(struct collect *c, uint32_t pid);
/* Every exec of `-- CMD`'s tree stops and reaches collect__exec_stop (ptrace holds it). */
void collect__set_exec_stops(struct collect *c, bool on);
/* --calls found no runtime to probe in any target (so far). */
bool collect__calls_none(struct collect *c);
/* Periodic work while profiling (about once a second): --calls rescans `-- CMD`'s tree. */
void collect__tick(struct collect *c);
/* Every turn of the loop: at most every 100 ms, the names of Python threads seen before the
 * threading module had them (stackres__python_retry). */
void collect__python_retry(struct collect *c);

/* Continuous mode: the aggregates start a new interval (allocations, samples and calls from
 * zero; in-use heap and open calls carried over).  0 or -ENOMEM. */
int collect__new_interval(struct collect *c);
/* Before profiles are built from the aggregates (last: the run ends: calls still open get their
 * time so far, 0 calls: not completed). */
void collect__snapshot(struct collect *c, bool last);

/* --heap as events, in arrival order, for the trace formats (after the aggregator saw them). */
enum collect_heap_kind {
	COLLECT_HEAP_ALLOC,   /* pid, tid, stack_id, addr (0: failed), size */
	COLLECT_HEAP_REALLOC, /* the same, and old_addr: the block it replaced (0: none known) */
	COLLECT_HEAP_FREE,    /* pid, addr */
	COLLECT_HEAP_EXEC,    /* pid exec'd: its blocks are gone */
	COLLECT_HEAP_EXIT,    /* pid's last thread exited: its blocks are no one's now */
};
struct collect_heap_event {
	enum collect_heap_kind kind;
	uint32_t pid, tid;
	int32_t stack_id; /* stackres id (STACKRES_NONE: lost) */
	uint64_t addr, old_addr, size;
	uint64_t ts; /* bpf_ktime_get_ns() of the probe (EXEC: 0, not known) */
	/* ALLOC from otel_memory:alloc: the bytes the sample stands for; 0: from the allocator
	 * probes (weighted by --sample-bytes' estimator) */
	uint64_t weight;
	/* ALLOC, REALLOC: BPF keeps no record of this block (PROF_HEAP_UNTRACKED, counted there):
	 * its free will not come, so it is no live block to follow */
	bool untracked;
};
/* A negative errno from fn stops the run like any fatal collection error. */
typedef int (*collect_heap_tap_fn)(void *ctx, const struct collect_heap_event *e);
void collect__set_heap_tap(struct collect *c, collect_heap_tap_fn fn, void *ctx);

/* --cpu samples as events, in arrival order, for the trace formats (after the aggregator). */
struct collect_cpu_event {
	uint32_t pid, tid;
	uint64_t ts;			/* bpf_ktime_get_ns() of the sample */
	int32_t user_stack, kern_stack; /* stackres ids (STACKRES_NONE: none) */
};
/* A negative errno from fn stops the run like any fatal collection error. */
typedef int (*collect_cpu_tap_fn)(void *ctx, const struct collect_cpu_event *e);
void collect__set_cpu_tap(struct collect *c, collect_cpu_tap_fn fn, void *ctx);

/* --offcpu periods as events, in arrival order, for the trace formats (after the aggregator). */
struct collect_offcpu_event {
	uint32_t pid, tid;
	uint64_t start, ns; /* switch-out time (bpf_ktime_get_ns) and the time off the CPU */
	uint8_t state;	    /* enum prof_offcpu_state */
};
typedef int (*collect_offcpu_tap_fn)(void *ctx, const struct collect_offcpu_event *e);
void collect__set_offcpu_tap(struct collect *c, collect_offcpu_tap_fn fn, void *ctx);

/* The OOM killer chose a process (PROF_REC_OOM_VICTIM, --heap runs only): told as it is
 * consumed, after every record before it.  Not set: the record is dropped. */
struct prof_oom_event;
typedef void (*collect_oom_fn)(void *ctx, const struct prof_oom_event *e);
void collect__set_oom(struct collect *c, collect_oom_fn fn, void *ctx);

struct heap_agg *collect__heap(struct collect *c);
/* --cpu sample counts, NULL without --cpu. */
struct cpu_agg *collect__cpu(struct collect *c);
/* --offcpu periods, NULL without --offcpu. */
struct offcpu_agg *collect__offcpu(struct collect *c);
/* --calls state, NULL without --calls. */
struct calls_agg *collect__calls(struct collect *c);
struct calls_attach *collect__calls_attach(struct collect *c);

/* `dump`: a thread as the task iterator found it, its frames interned (stackres ids). */
struct collect_dump_thread {
	uint32_t pid, tid;
	uint32_t state;	    /* task->__state */
	int64_t orig_ax;    /* the system call number when in one, else < 0 */
	uint8_t flags;	    /* enum prof_dump_flags */
	uint8_t py;	    /* enum prof_py_thread */
	int32_t kern_stack; /* STACKRES_NONE when none */
	int32_t user_stack;
	char comm[16];
};
/* The threads dumped so far, in the order they came. */
const struct collect_dump_thread *collect__dump_threads(struct collect *c, size_t *n);
/* Records that were malformed or of an unknown type (should stay 0). */
uint64_t collect__bad_records(struct collect *c);
/* Allocations whose stack was not kept this interval: past the cap on allocation stacks held
 * (stackres.h). */
uint64_t collect__stacks_capped(struct collect *c);

#endif /* PROF_COLLECT_H */
