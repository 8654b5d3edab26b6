// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * The benchmark floor: the probes bpftrace-prof --heap attaches, with programs that do nothing
 * (floor_features = 0), or only one piece of bpftrace-prof's per-event work each, so `make
 * bench` can say where the cost per malloc+free goes.  The maps and helpers are the real ones
 * (common.bpf.h), sized as in bpftrace-prof.  With the features off, the verifier removes the
 * dead branches: the programs are empty.
 */
#include "common.bpf.h"
#include "events.bpf.h"
#include "prof_heap.h"

#include "floor.h"

const volatile __u32 floor_features = 0;
/* --session: the return runs for one call in this many; the entry skips it for the others. */
const volatile __u32 floor_session_keep = 64;
__u64 floor_session_seq; /* not atomic: a benchmark's decision, not a count */

/* Uprobe sessions' kfuncs (Linux 6.13); weak, so the object loads where they are missing. */
extern bool bpf_session_is_return(void) __ksym __weak;
extern __u64 *bpf_session_cookie(void) __ksym __weak;

#define HAS(f) (floor_features & (f))

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, PROF_PENDING_ENTRIES);
	__type(key, __u32);
	__type(value, struct prof_heap_pending);
} floor_pending SEC(".maps");

/*
 * FLOOR_STACK: the floor keeps a stack map of its own (bpftrace-prof sends frames instead).  Its
 * frames: at most the kernel's perf_event_max_stack (127 by default); a stack map wider than that
 * is refused (EINVAL), and 255 (PROF_KERN_FRAMES) is.
 */
#define FLOOR_STACK_FRAMES 127
struct {
	__uint(type, BPF_MAP_TYPE_STACK_TRACE);
	__uint(max_entries, 65536); /* the size bpftrace-prof's stack map had */
	__uint(key_size, sizeof(__u32));
	__uint(value_size, FLOOR_STACK_FRAMES * sizeof(__u64));
} floor_stacks SEC(".maps");

/* FLOOR_RAWSTACK: where bpf_get_stack writes the frames. */
struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__uint(value_size, PROF_KERN_FRAMES * sizeof(__u64));
} floor_frames SEC(".maps");

/* FLOOR_RB_OUTPUT: the record is built here; FLOOR_RB_RESERVE_MAX: reserved at this size. */
struct floor_heap_record {
	struct prof_heap_event e;
	__u64 frames[PROF_STACK_WORDS];
};

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct floor_heap_record);
} floor_scratch SEC(".maps");

/* The record with FLOOR_REC_FRAMES frames, copied at its length or written in a reservation of
 * the largest record; 0, or -1 when the ring buffer is full. */
static __always_inline int floor_send_frames(__u64 id, long ret)
{
	struct floor_heap_record *r;
	__u32 zero = 0;
	__u64 len;

	if (HAS(FLOOR_RB_RESERVE_MAX))
		r = bpf_ringbuf_reserve(&prof_events, sizeof(*r), 0);
	else
		r = bpf_map_lookup_elem(&floor_scratch, &zero);
	if (!r)
		return -1;
	r->e.type = PROF_REC_HEAP_ALLOC;
	r->e.pid = id >> 32;
	r->e.tid = (__u32)id;
	r->e.nframes = FLOOR_REC_FRAMES;
	r->e.flags = 0;
	r->e.py = 0;
	r->e.addr = (__u64)ret;
	r->e.old_addr = 0;
	r->e.size = 64;
	r->e.ts = 0;
	r->e.weight = 0;
	for (int i = 0; i < FLOOR_REC_FRAMES; i++)
		r->frames[i] = 0x401000 + i;
	if (HAS(FLOOR_RB_RESERVE_MAX)) {
		prof_submit(r, sizeof(*r));
		return 0;
	}
	len = sizeof(r->e) + FLOOR_REC_FRAMES * sizeof(__u64);
	return bpf_ringbuf_output(&prof_events, r, len, prof_wakeup_flags(len)) ? -1 : 0;
}

SEC("uprobe")
int BPF_KPROBE(floor_enter, __u64 size)
{
	__u64 id;
	__u32 tid;
	struct prof_heap_pending p = {};

	if (!floor_features)
		return 0;
	id = bpf_get_current_pid_tgid();
	tid = (__u32)id;
	if (HAS(FLOOR_FILTER) && !prof_is_target(id >> 32))
		return 0;
	if (HAS(FLOOR_PENDING)) {
		p.size = size;
		p.fn = PROF_FN_MALLOC;
		bpf_map_update_elem(&floor_pending, &tid, &p, BPF_NOEXIST);
	}
	return 0;
}

SEC("uretprobe")
int BPF_KRETPROBE(floor_return, long ret)
{
	struct prof_heap_pending *p = NULL;
	struct prof_heap_event *e = NULL;
	long stack_id = -1;
	__u64 id;
	__u32 tid;

	if (!floor_features)
		return 0;
	id = bpf_get_current_pid_tgid();
	tid = (__u32)id;
	if (HAS(FLOOR_FILTER) && !prof_is_target(id >> 32))
		return 0;
	if (HAS(FLOOR_PENDING)) {
		p = bpf_map_lookup_elem(&floor_pending, &tid);
		if (!p)
			return 0;
	}
	if (HAS(FLOOR_RINGBUF) && HAS(FLOOR_RB_OUTPUT | FLOOR_RB_RESERVE_MAX)) {
		floor_send_frames(id, ret);
	} else if (HAS(FLOOR_RINGBUF)) {
		e = prof_reserve(sizeof(*e));
		if (!e)
			goto out;
	}
	if (HAS(FLOOR_STACK))
		stack_id = bpf_get_stackid(ctx, &floor_stacks, BPF_F_USER_STACK);
	if (HAS(FLOOR_RAWSTACK)) {
		__u32 zero = 0;
		void *buf = bpf_map_lookup_elem(&floor_frames, &zero);

		if (buf)
			stack_id = bpf_get_stack(ctx, buf, PROF_KERN_FRAMES * sizeof(__u64),
						 BPF_F_USER_STACK);
	}
	if (e) {
		e->type = PROF_REC_HEAP_ALLOC;
		e->pid = id >> 32;
		e->tid = tid;
		/* The floor measures the capture, not the copy: it sends no frames. */
		e->nframes = 0;
		e->flags = stack_id < 0 ? PROF_HEAP_STACK_FAILED : 0;
		e->addr = (__u64)ret;
		e->old_addr = 0;
		e->size = p ? p->size : 0;
		e->ts = 0;
		prof_submit(e, sizeof(*e));
	}
out:
	if (p)
		bpf_map_delete_elem(&floor_pending, &tid);
	return 0;
}

SEC("uprobe")
int BPF_KPROBE(floor_free, __u64 addr)
{
	struct prof_heap_free *e;
	__u64 id;

	if (!floor_features)
		return 0;
	id = bpf_get_current_pid_tgid();
	if (HAS(FLOOR_FILTER) && !prof_is_target(id >> 32))
		return 0;
	if (HAS(FLOOR_RINGBUF)) {
		e = prof_reserve(sizeof(*e));
		if (!e)
			return 0;
		e->type = PROF_REC_HEAP_FREE;
		e->pid = id >> 32;
		e->tid = (__u32)id;
		e->pad = 0;
		e->addr = addr;
		e->ts = 0; /* the floor measures the probe, not the clock */
		prof_submit(e, sizeof(*e));
	}
	return 0;
}

/*
 * --session: one program at the entry and the return of each allocator function (a uprobe
 * session link, made by floor.c before load).  The entry returns 1 — the kernel then skips this
 * call's return — except for one call in floor_session_keep, whose return runs (and sees the
 * entry's cookie: the size, where --pending keeps it in a map).
 */
SEC("?uprobe")
int BPF_KPROBE(floor_session, __u64 size)
{
	__u64 *cookie = bpf_session_cookie();

	if (bpf_session_is_return())
		return 0;
	if (floor_session_seq++ % floor_session_keep)
		return 1;
	if (cookie)
		*cookie = size;
	return 0;
}
