// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * On-CPU sampling: a cpu-clock perf event per CPU runs this at HZ; each sample of a target
 * thread goes to userspace with its kernel and user frames, which counts them per (pid, tid,
 * user stack, kernel stack).  Frames rather than stack-map ids: a map bucket shared by two
 * stacks lost one of them.
 */
#include "common.bpf.h"
#include "events.bpf.h"
#include "prof_cpu.h"
#include "unwind.bpf.h"

/* A sample with its frames, built here and copied into the ring buffer at its real size. */
struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct prof_cpu_record);
} prof_cpu_scratch SEC(".maps");

SEC("perf_event")
int cpu_sample(struct bpf_perf_event_data *ctx)
{
	__u64 id = bpf_get_current_pid_tgid();
	struct prof_cpu_record *r;
	__u64 nkern, nuser, size;
	__u32 zero = 0;
	long got;

	if (!(__u32)id || !prof_is_target(id >> 32))
		return 0; /* idle, or not ours */
	r = bpf_map_lookup_elem(&prof_cpu_scratch, &zero);
	if (!r)
		return 0;
	r->s.type = PROF_REC_CPU_SAMPLE;
	r->s.pid = id >> 32;
	r->s.tid = (__u32)id;
	r->s.ts = bpf_ktime_get_ns();
	/* No kernel frames when the sample hit user mode: 0 frames (or -EFAULT, not a loss). */
	got = bpf_get_stack(ctx, r->frames, PROF_KERN_FRAMES * sizeof(__u64), 0);
	if (got < 0 && got != -EFAULT)
		prof_count(PROF_CNT_STACK_FAIL);
	nkern = prof_bound(got > 0 ? (__u64)got / sizeof(__u64) : 0, PROF_KERN_FRAMES);
	/* failures counted */
	got = prof_user_stack_py(ctx, &r->frames[nkern], PROF_USTACK_PERF, &r->s.py,
				 (struct prof_stack_cap){PROF_MAX_FRAMES, PROF_STACK_WORDS});
	nuser = prof_bound(got > 0 ? (__u64)got : 0, PROF_STACK_WORDS);
	r->s.nkern = (__u8)nkern;
	r->s.nuser = (__u16)nuser;
	size = prof_bound(sizeof(r->s) + (nkern + nuser) * sizeof(__u64), sizeof(*r));
	if (bpf_ringbuf_output(&prof_events, r, size, prof_wakeup_flags(size)))
		prof_count(PROF_CNT_RINGBUF_FULL);
	return 0;
}
