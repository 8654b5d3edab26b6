// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * `bpftrace-prof dump`: every thread of a process, once, without stopping it.  A sleepable task
 * iterator (one pass, filtered to the process by the link) sends each thread's state and, for a
 * thread off the CPU, its kernel stack (bpf_get_task_stack) and its user stack, walked by the
 * same unwinder as the sampler's from the registers the thread entered the kernel with (or was
 * preempted in user mode with), reading the thread's memory with bpf_copy_from_user_task
 * (PROF_CROSS_TASK in common.bpf.h).  A thread on a CPU has no saved registers worth walking: it
 * is flagged, and userspace takes its stack from the cpu sampler.
 */
#define PROF_CROSS_TASK 1

#include "common.bpf.h"
#include "events.bpf.h"
#include "prof_dump.h"
#include "unwind.bpf.h"

#ifndef PF_KTHREAD
#define PF_KTHREAD 0x00200000
#endif

/* One record in the making (the iterator runs with migration disabled). */
struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct prof_dump_record);
} prof_dump_scratch SEC(".maps");

SEC("iter.s/task")
int dump_task(struct bpf_iter__task *ctx)
{
	struct task_struct *task = ctx->task;
	struct prof_dump_record *r;
	struct pt_regs *regs;
	__u64 nkern = 0, nuser = 0, size;
	__u32 zero = 0;
	long got;

	if (!task)
		return 0;
	r = bpf_map_lookup_elem(&prof_dump_scratch, &zero);
	if (!r)
		return 0;
	r->t.type = PROF_REC_DUMP_THREAD;
	r->t.pid = task->tgid;
	r->t.tid = task->pid;
	r->t.state = task->__state;
	r->t.flags = 0;
	r->t.py = PROF_PY_THREAD_NONE;
	__builtin_memset(r->t.pad, 0, sizeof(r->t.pad));
	bpf_probe_read_kernel_str(r->t.comm, sizeof(r->t.comm), task->comm);
	regs = (struct pt_regs *)bpf_task_pt_regs(task);
	r->t.orig_ax = (__s64)BPF_CORE_READ(regs, orig_ax);
	if (task->flags & PF_KTHREAD)
		r->t.flags |= PROF_DUMP_KTHREAD;
	if (task->on_cpu) {
		/* Its saved registers and kernel stack are stale while it runs. */
		r->t.flags |= PROF_DUMP_ON_CPU;
	} else {
		if ((BPF_CORE_READ(regs, cs) & 3) == 3 && r->t.orig_ax < 0)
			r->t.flags |= PROF_DUMP_USER;
		got = bpf_get_task_stack(task, r->frames, PROF_KERN_FRAMES * sizeof(__u64), 0);
		if (got < 0)
			prof_count(PROF_CNT_STACK_FAIL);
		nkern = prof_bound(got > 0 ? (__u64)got / sizeof(__u64) : 0, PROF_KERN_FRAMES);
		if (!(r->t.flags & PROF_DUMP_KTHREAD)) {
			prof_walk_tgid = r->t.pid;
			prof_walk_tid = r->t.tid;
			got = prof_user_stack_py(
				regs, &r->frames[nkern], 0, &r->t.py,
				(struct prof_stack_cap){PROF_MAX_FRAMES, PROF_STACK_WORDS});
			nuser = prof_bound(got > 0 ? (__u64)got : 0, PROF_STACK_WORDS);
		}
	}
	r->t.nkern = (__u8)nkern;
	r->t.nuser = (__u16)nuser;
	size = prof_bound(sizeof(r->t) + (nkern + nuser) * sizeof(__u64), sizeof(*r));
	if (bpf_ringbuf_output(&prof_events, r, size, 0))
		prof_count(PROF_CNT_RINGBUF_FULL);
	return 0;
}
