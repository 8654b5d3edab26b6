/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * --calls aggregation: per-thread shadow stacks rebuilt from entry/return events, and per
 * (pid, tid, call path) the number of completed calls and the self wall time of the leaf, and
 * how much of it the thread was on the CPU (busy) — from the events' on-CPU clocks.
 * Pure logic, no BPF: fed by the consumer, read by calls_profile at the end.
 *
 * Call paths are nodes of a tree (node 0 = the root); a sample is (pid, tid, node).
 * A thread whose outer frames were not seen (it was running when we attached, or its events
 * were dropped) sits on an unnamed "placeholder" node instead of the root.  A return with no
 * matching entry names the placeholder after the returning function — that frame was the
 * caller of everything seen so far — and a new placeholder goes beneath it; so the outer
 * frames are recovered as they return.  A path still ending in a placeholder is partial.
 */
#ifndef PROF_CALLS_AGG_H
#define PROF_CALLS_AGG_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "prof_calls.h"

#define CALLS_AGG_MAX_DEPTH 4096 /* deeper frames are counted (depth_exceeded), not kept */
/*
 * Function names kept at once (about 64 MiB at the 262 bytes a name measured with 1 M
 * names); more are counted (names_over_cap) and their calls stay unnamed.  A name is kept
 * until its process is forgotten: BPF sends it only once.
 */
#define CALLS_AGG_MAX_NAMES (256u << 10)

struct calls_agg;

struct calls_agg_stats {
	uint64_t entries, returns;
	uint64_t return_only;	     /* returns of runtimes without entries (CPython 3.11) */
	uint64_t outer_returns;	     /* returns of frames entered before we saw the thread */
	uint64_t unwound_frames;     /* frames left without their own return (exceptions) */
	uint64_t mismatched_returns; /* returns matching no frame of a fully seen thread */
	uint64_t resyncs;	     /* stacks dropped after lost events */
	uint64_t unfinished_frames;  /* frames still open at thread exit / end of profiling */
	uint64_t depth_exceeded;     /* entries deeper than CALLS_AGG_MAX_DEPTH */
	uint64_t clamped_times;	     /* timestamps going backwards (treated as 0 ns) */
	uint64_t attach_window;	     /* events before the thread's process was fully attached */
	uint64_t names_over_cap;     /* name records past CALLS_AGG_MAX_NAMES (not kept) */
};

struct calls_values {
	uint64_t calls;	  /* completed calls of the leaf on this path */
	uint64_t wall_ns; /* self time of the leaf on this path */
	uint64_t busy_ns; /* of which on the CPU (idle, off the CPU: wall_ns - busy_ns) */
};

struct calls_node {
	uint32_t parent; /* node id; 0 = root */
	uint32_t line;
	uint64_t name_id; /* 0: a placeholder, or the root */
};

/* One function's strings as the runtime gave them (see struct prof_call_name). */
struct calls_name {
	enum prof_runtime runtime;
	const char *cls, *fn, *file; /* never NULL */
};

int calls_agg__new(struct calls_agg **out);
void calls_agg__free(struct calls_agg *a);

/* A PROF_REC_CALL_ENTRY / _RETURN record.  0 or -ENOMEM (the event is then lost). */
int calls_agg__event(struct calls_agg *a, const struct prof_call_event *e);
/* A PROF_REC_CALL_NAME record. */
int calls_agg__name(struct calls_agg *a, const struct prof_call_name *n);

/*
 * Thread tid existed before the probes were attached, the last of them before ts: its outer
 * frames are unknown, and its events before ts are not used (with only some of its probes in
 * place, entries without their returns or the reverse would leave frames that never close).
 */
int calls_agg__thread_preexisting(struct calls_agg *a, uint32_t pid, uint32_t tid, uint64_t ts);
/* Thread ended: close its open frames at its last event. */
void calls_agg__thread_exit(struct calls_agg *a, uint32_t pid, uint32_t tid);
/* pid exec'd: every thread's stack belongs to the old image. */
void calls_agg__process_exec(struct calls_agg *a, uint32_t pid);
/* A thread's on-CPU clock now (the ns it has run, as prof_call_event.busy counts them): 0, or
 * -errno when it cannot be read (the thread is gone). */
typedef int (*calls_agg_busy_fn)(void *ctx, uint32_t pid, uint32_t tid, uint64_t *busy);

/* End of profiling at ts: open frames get their self time so far (0 calls: not completed),
 * their on-CPU time up to busy_now (NULL, or it fails: up to the thread's last event). */
void calls_agg__finish(struct calls_agg *a, uint64_t ts, calls_agg_busy_fn busy_now, void *ctx);

/*
 * Continuous mode, after an interval's snapshot: the completed calls' values and the stats start
 * again from zero; open frames stay open (a call is counted in the interval it returns in).
 * Nodes go except the paths of open frames (node ids change); the strings of names forgotten
 * since the last interval are freed.  0, or -ENOMEM (the values are zeroed all the same; what
 * could not be freed is freed at a later interval).
 */
int calls_agg__new_interval(struct calls_agg *a);

/* Continuous mode: pid is gone and its interval written: its samples, threads and names go
 * (their memory at the next calls_agg__new_interval). */
void calls_agg__forget_pid(struct calls_agg *a, uint32_t pid);

/* Iterate samples: size_t it = 0; while (calls_agg__next_sample(a, &it, …)) … */
bool calls_agg__next_sample(const struct calls_agg *a, size_t *it, uint32_t *pid, uint32_t *tid,
			    uint32_t *node, const struct calls_values **vals);
/* Values of one (pid, tid, node), NULL if none — for tests. */
const struct calls_values *calls_agg__values(const struct calls_agg *a, uint32_t pid, uint32_t tid,
					     uint32_t node);
/* Node by id (0 = root), NULL when out of range. */
const struct calls_node *calls_agg__node(const struct calls_agg *a, uint32_t node);
uint32_t calls_agg__node_count(const struct calls_agg *a);
/* The child of parent for (name_id, line), or 0 when that path was never seen — for tests. */
uint32_t calls_agg__find_node(const struct calls_agg *a, uint32_t parent, uint64_t name_id,
			      uint32_t line);
/* Strings of a name id, NULL when its record never arrived (or its process was forgotten). */
const struct calls_name *calls_agg__lookup_name(const struct calls_agg *a, uint64_t name_id);
uint32_t calls_agg__name_count(const struct calls_agg *a);
const struct calls_agg_stats *calls_agg__stats(const struct calls_agg *a);

#endif /* PROF_CALLS_AGG_H */
