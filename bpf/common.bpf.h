/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * Maps and helpers every program shares.  Each object declares these maps under the same
 * names; the loader creates them once and hands the same fds to every skeleton
 * (bpf_map__reuse_fd), so all programs filter on one target set, write one ring buffer and
 * count into one counter array.
 */
#ifndef PROF_COMMON_BPF_H
#define PROF_COMMON_BPF_H

#include "vmlinux.h"
#include <bpf/bpf_core_read.h>
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_tracing.h>

#include "prof_common.h"
#include "prof_heap.h"

#ifndef EEXIST
#define EEXIST 17 /* errno values are not in vmlinux.h */
#endif

char LICENSE[] SEC("license") = "Dual BSD/GPL";

/* tgid -> 1 for every process being profiled. */
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, PROF_MAX_TARGETS);
	__type(key, __u32);
	__type(value, __u8);
} prof_targets SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_RINGBUF);
	__uint(max_entries, 16 << 20);
} prof_events SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, PROF_CNT__COUNT);
	__type(key, __u32);
	__type(value, __u64);
} prof_counters SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_STACK_TRACE);
	__uint(max_entries, PROF_STACK_ENTRIES);
	__uint(key_size, sizeof(__u32));
	__uint(value_size, PROF_MAX_FRAMES * sizeof(__u64));
} prof_stacks SEC(".maps");

/*
 * tid -> arguments of the allocator call in flight (bpf/heap.bpf.c).  Shared so that the exit
 * tracepoint (bpf/proc.bpf.c) can drop the entry of a thread that dies inside an allocator.
 */
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 16384);
	__type(key, __u32);
	__type(value, struct prof_heap_pending);
} prof_pending SEC(".maps");

/* -a/--all: every process is a target; the map lookup is skipped. */
const volatile bool prof_all_targets = false;

static __always_inline bool prof_is_target(__u32 tgid)
{
	return prof_all_targets || bpf_map_lookup_elem(&prof_targets, &tgid);
}

static __always_inline void prof_count(enum prof_counter c)
{
	__u32 key = c;
	__u64 *v = bpf_map_lookup_elem(&prof_counters, &key);

	if (v)
		*v += 1;
}

/*
 * Wake the consumer only once a batch has queued: a wake-up per event costs more than the
 * probe itself (DESIGN.md §7).  The consumer also drains on a short timer.
 */
static __always_inline __u64 prof_wakeup_flags(void)
{
	return bpf_ringbuf_query(&prof_events, BPF_RB_AVAIL_DATA) >= PROF_WAKEUP_BYTES
		       ? BPF_RB_FORCE_WAKEUP
		       : BPF_RB_NO_WAKEUP;
}

static __always_inline void *prof_reserve(__u64 size)
{
	void *rec = bpf_ringbuf_reserve(&prof_events, size, 0);

	if (!rec)
		prof_count(PROF_CNT_RINGBUF_FULL);
	return rec;
}

static __always_inline void prof_submit(void *rec)
{
	bpf_ringbuf_submit(rec, prof_wakeup_flags());
}

#endif /* PROF_COMMON_BPF_H */
