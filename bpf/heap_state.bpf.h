/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * Per-thread heap-tracing state (bpf/heap.bpf.c), shared with bpf/proc.bpf.c so that the exit
 * tracepoint can drop the entries of a thread that dies: a thread id is reused, and a map of
 * dead threads' entries fills up.  The loader sizes both maps (1 entry when unused).
 */
#ifndef PROF_HEAP_STATE_BPF_H
#define PROF_HEAP_STATE_BPF_H

#include "common.bpf.h"
#include "prof_heap.h"

/* tid -> the outermost allocator call in flight. */
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, PROF_PENDING_ENTRIES);
	__type(key, __u32);
	__type(value, struct prof_heap_pending);
} prof_pending SEC(".maps");

/* --sample-bytes: tid -> bytes left until the thread's next sampled allocation. */
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, PROF_SAMPLE_LEFT_ENTRIES);
	__type(key, __u32);
	__type(value, __s64);
} prof_sample_left SEC(".maps");

#endif /* PROF_HEAP_STATE_BPF_H */
