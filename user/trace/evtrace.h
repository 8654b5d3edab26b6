/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * Event traces (-f chrome, -f perfetto, and firefox/codetracer through their sinks): --calls,
 * --heap and --offcpu events written as they arrive, in a trace file's slices, counters and
 * instants, instead of being aggregated; --cpu samples kept in a temporary file and written at
 * the end, when their stacks are named.  Kept in memory: the interned names, the processes and
 * threads seen, each live thread's open frames (to close them when the thread ends, and to skip
 * returns whose entry we never saw) and, with --heap, the size of each live block (at most the
 * caps of agg/live_cap.h, per process and in all); nothing per event.
 *
 * Events of one thread arrive in order (one ring buffer).  Timestamps are written as the BPF
 * programs took them (bpf_ktime_get_ns, CLOCK_MONOTONIC).  Calls still open when their thread
 * exits close at its last event, those open at the end at the end's time.
 */
#ifndef PROF_EVTRACE_H
#define PROF_EVTRACE_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#include "prof_calls.h"

#define EVTRACE_MAX_DEPTH	 4096 /* deeper entries are counted (depth_exceeded), not written */
/* --heap (chrome, perfetto): allocations of at least this many bytes are instant events. */
#define EVTRACE_LARGE_ALLOC	 (1ULL << 20)
#define EVTRACE_LARGE_ALLOC_NAME "large allocation"

enum evtrace_format {
	EVTRACE_CHROME,	  /* Trace Event JSON */
	EVTRACE_PERFETTO, /* Perfetto TrackEvent protobuf */
};

struct evtrace_stats {
#define EVTRACE_FIELD(f, n, d, k) uint64_t f;
	PROF_TRACE_STATS(EVTRACE_FIELD)
#undef EVTRACE_FIELD
};

struct evtrace;
struct calls_agg;
struct procinfo;

/* Writes to f from now on (gzip: chrome only, compressed). */
int evtrace__new(struct evtrace **out, FILE *f, enum evtrace_format fmt, bool gzip);
/* The same with a sink of the caller's (trace/trace_sink.h), freed with t even on failure. */
struct trace_sink;
int evtrace__new_sink(struct evtrace **out, struct trace_sink *sink);
void evtrace__free(struct evtrace *t);
/* Where names come from: the function names interned by names (calls_agg__name), the
 * process and thread names by procs.  Either may be NULL (names then unknown / ""). */
void evtrace__set_sources(struct evtrace *t, const struct calls_agg *names, struct procinfo *procs);

/* A PROF_REC_CALL_ENTRY / _RETURN record.  0 or -errno (writing failed, out of memory). */
int evtrace__call(struct evtrace *t, const struct prof_call_event *e);
/* Process pid, running, has every probe in since ts: its events before ts are skipped
 * (counted), for their other half may be missing (probes attach one by one). */
int evtrace__attached(struct evtrace *t, uint32_t pid, uint64_t ts);
/*
 * --heap: tid allocated size bytes at addr (old_addr: the block a realloc gave back, else 0),
 * or freed addr, at ts (the probe's bpf_ktime_get_ns; written no earlier than the thread's
 * last event).  Frees are paired here by address, per process, with the blocks followed (under
 * the caps of agg/live_cap.h).  Given to formats that take allocations (firefox: each one, and
 * the frees of followed blocks with their size), to those that show the heap over time
 * (chrome, perfetto: a per-process counter of the bytes in use, and allocations of
 * EVTRACE_LARGE_ALLOC or more as instants), ignored by others.
 */
int evtrace__alloc(struct evtrace *t, uint32_t pid, uint32_t tid, uint64_t ts, uint64_t addr,
		   uint64_t old_addr, uint64_t size);
int evtrace__free_block(struct evtrace *t, uint32_t pid, uint32_t tid, uint64_t ts, uint64_t addr);
/* The same for an allocation whose free will not come (BPF keeps no record of it, counted
 * there): written, but never followed (not in the heap counter), since nothing would ever
 * take it out. */
int evtrace__alloc_untracked(struct evtrace *t, uint32_t pid, uint32_t tid, uint64_t ts,
			     uint64_t addr, uint64_t old_addr, uint64_t size);
/* A PROF_REC_CALL_MARKER record (exception, import, log), in its thread's timeline (never
 * before the thread's last event), for formats that take markers (firefox); ignored by others.
 * The record's strings may lack a NUL (a field full): they are cut at their length. */
int evtrace__marker(struct evtrace *t, const struct prof_call_marker *m);
/* Whether the sink takes markers (only then are the marker probes worth attaching). */
bool evtrace__wants_markers(const struct evtrace *t);
/* --heap: at most per_pid live blocks a process and total in all are followed (0: the defaults
 * of agg/live_cap.h); allocations past either are counted (heap_untracked), not in the counter
 * (chrome, perfetto), and their frees are not written (firefox).  Tests set them lower. */
void evtrace__set_caps(struct evtrace *t, uint32_t per_pid, uint32_t total);
/* --heap: pid exec'd at ts: its blocks are gone (its heap counter drops to 0). */
int evtrace__heap_exec(struct evtrace *t, uint32_t pid, uint64_t ts);
/* --heap: pid exited: its blocks are no longer followed (its counter keeps its last value). */
int evtrace__heap_exit(struct evtrace *t, uint32_t pid);
/* --cpu: where the samples' stacks (stackres ids) are named, at the end (after a sync). */
struct stackres;
void evtrace__set_stacks(struct evtrace *t, const struct stackres *stacks);
/* --cpu: the sampling period (1e9 / HZ), for formats that draw a sample as a length of time. */
void evtrace__set_cpu_period(struct evtrace *t, uint64_t ns);
/*
 * --cpu (formats with cpu_sample or cpu_stack): tid was sampled on a CPU at ts with the
 * stackres stacks user and kern.  Kept in an unlinked temporary file (24 bytes a sample) and
 * written at the end once the stacks are symbolized, with the frames of its pprof stack
 * (cpu_sample: named after the leaf, the stack as text; cpu_stack: each frame's name
 * interned).  0 or -errno.
 */
int evtrace__cpu_sample(struct evtrace *t, uint32_t pid, uint32_t tid, uint64_t ts, int32_t user,
			int32_t kern);
/*
 * --offcpu: tid was off the CPU from start for ns (blocked: asleep or waiting; else runnable,
 * waiting for a CPU): a slice "off-CPU: idle" / "off-CPU: runnable" on its thread, inside the
 * calls open then (never before the thread's last event).  0 or -errno.
 */
int evtrace__offcpu(struct evtrace *t, uint32_t pid, uint32_t tid, uint64_t start, uint64_t ns,
		    bool runnable);
#define EVTRACE_OFFCPU_IDLE	"off-CPU: idle"
#define EVTRACE_OFFCPU_RUNNABLE "off-CPU: runnable"
/* Thread tid of pid ended: its open frames close at its last event, its state goes. */
int evtrace__thread_exit(struct evtrace *t, uint32_t pid, uint32_t tid);
/* pid exec'd: its threads' frames belong to the old image (closed at their last event); its
 * name is written again at its next event. */
int evtrace__process_exec(struct evtrace *t, uint32_t pid);
/*
 * The end at ts: open frames close at ts, then the drop counters are written into the
 * trace (names[i] = values[i], then our own stats) and the file's last bytes.  Nothing is
 * written after.  0 or -errno.
 */
int evtrace__finish(struct evtrace *t, uint64_t ts, const char *const *names,
		    const uint64_t *values, size_t n);
const struct evtrace_stats *evtrace__stats(const struct evtrace *t);

#endif /* PROF_EVTRACE_H */
