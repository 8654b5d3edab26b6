/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/* The one ring buffer of records to userspace (shared by every object that includes this). */
#ifndef PROF_EVENTS_BPF_H
#define PROF_EVENTS_BPF_H

#include "common.bpf.h"

struct {
	__uint(type, BPF_MAP_TYPE_RINGBUF);
	__uint(max_entries, PROF_RINGBUF_BYTES); /* the loader sets the size it uses */
} prof_events SEC(".maps");

/* A sixteenth of the ring's size, at most 256 KiB (set by the loader: wakeup_bytes). */
const volatile __u64 prof_wakeup_bytes = PROF_WAKEUP_MAX;

/* Bytes this CPU submitted since it last asked how much is queued. */
struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, __u64);
} prof_wake_unasked SEC(".maps");

/*
 * Wake the consumer only once a batch has queued: a wake-up per event costs more than the
 * probe itself (DESIGN.md §7).  The consumer also drains on a short timer.  How much is queued
 * is asked once a CPU has submitted a sixteenth of the batch since it last asked: the ring's
 * positions sit on lines the consumer writes from another CPU, and reading them for every
 * record cost one cache miss a record.  (Two programs preempting each other on one CPU may
 * lose an update of the count: a wake-up comes a little later.)
 */
static __always_inline __u64 prof_wakeup_flags(__u64 size)
{
	__u64 *unasked = bpf_map_lookup_elem(&prof_wake_unasked, &(__u32){0});

	if (unasked) {
		*unasked += size;
		if (*unasked < prof_wakeup_bytes / 16)
			return BPF_RB_NO_WAKEUP;
		*unasked = 0;
	}
	return bpf_ringbuf_query(&prof_events, BPF_RB_AVAIL_DATA) >= prof_wakeup_bytes
		       ? BPF_RB_FORCE_WAKEUP
		       : BPF_RB_NO_WAKEUP;
}

/*
 * A zeroed record of size bytes, or NULL (counted).  Zeroed: a reserved slot holds whatever an
 * earlier record left there, and padding or a field a path forgets must not carry it out.
 * size is a constant at every call site (always inlined), so the memset becomes plain stores.
 */
static __always_inline void *prof_reserve(__u64 size)
{
	void *rec = bpf_ringbuf_reserve(&prof_events, size, 0);

	if (!rec) {
		prof_count(PROF_CNT_RINGBUF_FULL);
		return NULL;
	}
	__builtin_memset(rec, 0, size);
	return rec;
}

/*
 * v, never above max, in a form the verifier can bound (frame counts, the length of a record
 * copied out of scratch).  A plain clamp is not enough: clang may test a zero-extended copy of
 * the register it then uses, leaving the verifier without a bound on the one it sees.
 */
static __always_inline __u64 prof_bound(__u64 v, __u64 max)
{
	barrier_var(v);
	if (v > max)
		v = max;
	barrier_var(v);
	return v;
}

/* Submit rec, reserved with size bytes. */
static __always_inline void prof_submit(void *rec, __u64 size)
{
	bpf_ringbuf_submit(rec, prof_wakeup_flags(size));
}

#endif /* PROF_EVENTS_BPF_H */
