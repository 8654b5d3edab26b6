/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * Per-process heap-tracing state (bpf/heap.bpf.c), shared with bpf/proc.bpf.c so that fork, exec
 * and exit keep it right.  The loader sizes the maps (1 entry when unused).
 */
#ifndef PROF_HEAP_STATE_BPF_H
#define PROF_HEAP_STATE_BPF_H

#include "common.bpf.h"
#include "prof_heap.h"

/*
 * --cgroup/--container with --heap: tgid -> 1 for the processes in scope from their birth (a
 * fork or an exec in the cgroup) or found there at start.  A process missing from it joined by
 * migration (cgroup.procs written, as runc does with its init): a return whose call began
 * before it joined was never ours to record (pending_joined), unlike a call entered before
 * the probes were attached (pending_missing).  LRU: one pushed out only blurs that line.
 */
struct {
	__uint(type, BPF_MAP_TYPE_LRU_HASH);
	__uint(max_entries, PROF_MAX_TARGETS);
	__type(key, __u32);
	__type(value, __u8);
} prof_scope_born SEC(".maps");

/*
 * tgid -> the heap path userspace chose for the process's image (enum prof_heap_path):
 * PROF_PATH_OTEL for its own otel_memory probes (an in-process sampler, docs/how-it-works.md),
 * which the allocator probes then skip so nothing is counted twice; PROF_PATH_ALLOC for the
 * allocator probes (kept so each image is counted once, and moved to OTEL if a library with the
 * probes comes later); PROF_PATH_OWN for allocator probes attached for it alone.  A fork
 * inherits its parent's entry (same image) but OWN, whose links are its parent's; an exec or
 * the group's death removes it (bpf/proc.bpf.c).
 */
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, PROF_MAX_TARGETS);
	__type(key, __u32);
	__type(value, __u8);
} prof_otel_procs SEC(".maps");

/*
 * --sample-bytes: tgid -> its blocks in prof_sampled (__s64), held under a share of that map
 * (bpf/heap.bpf.c).  An exec or the group's death removes it (bpf/proc.bpf.c).
 */
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, PROF_MAX_TARGETS);
	__type(key, __u32);
	__type(value, __s64);
} prof_sampled_procs SEC(".maps");

/* tgid's heap path (enum prof_heap_path); PROF_PATH_ALLOC when none was decided. */
static __always_inline __u8 prof_heap_path(__u32 tgid)
{
	__u8 *v = bpf_map_lookup_elem(&prof_otel_procs, &tgid);

	return v ? *v : PROF_PATH_ALLOC;
}

static __always_inline bool prof_heap_otel(__u32 tgid)
{
	return prof_heap_path(tgid) == PROF_PATH_OTEL;
}

/* A process born in (or found in) the cgroup scope. */
static __always_inline void prof_scope_birth(__u32 tgid)
{
	__u8 one = 1;

	if (prof_scope == PROF_SCOPE_CGROUP)
		bpf_map_update_elem(&prof_scope_born, &tgid, &one, BPF_ANY);
}

#endif /* PROF_HEAP_STATE_BPF_H */
