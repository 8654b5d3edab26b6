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

/*
 * Wake the consumer only once a batch has queued: a wake-up per event costs more than the
 * probe itself (DESIGN.md §7).  The consumer also drains on a short timer.
 */
static __always_inline __u64 prof_wakeup_flags(void)
{
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

static __always_inline void prof_submit(void *rec)
{
	bpf_ringbuf_submit(rec, prof_wakeup_flags());
}

#endif /* PROF_EVENTS_BPF_H */
