// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * Off-CPU time from the scheduler.  At every context switch the thread leaving the CPU, if it
 * is a target, has its kernel and user frames taken while it is still current (the tracepoint
 * runs in its context: bpf_task_pt_regs gives the user registers it entered the kernel with),
 * kept under its tid with the time; when that thread is switched back in, one record with the
 * time it spent off the CPU goes to userspace, which sums them per stack.  A thread switched out
 * while still runnable was preempted (waiting for a CPU); otherwise it blocked.  A user stack
 * deeper than the thread's record holds (255 words: the record is copied at every switch) is
 * kept whole in a record of its own (prof_offcpu_deep), sent in its place.
 */
#include "common.bpf.h"
#include "events.bpf.h"
#include "prof_offcpu.h"
#include "unwind.bpf.h"

#ifndef TASK_DEAD
#define TASK_DEAD 0x80 /* the task's last switch: it never runs again */
#endif

/*
 * The kernel stack taken here starts in this program and bpf_trace_run4 (the tracepoint calls
 * it directly, a static call): dropped, so the leaf is __schedule (kernel 6.18).
 */
#define OFFCPU_KERN_SKIP 2

/* The record of the thread leaving this CPU, built here before it is kept. */
struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct prof_offcpu_scratch);
} prof_offcpu_scratch SEC(".maps");

/*
 * tid -> its record while it is off the CPU.  Not preallocated: a value holds a whole stack
 * (2 KiB) and only the threads off the CPU now take one.
 */
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, PROF_OFFCPU_THREADS);
	__uint(map_flags, BPF_F_NO_PREALLOC);
	__type(key, __u32);
	__type(value, struct prof_offcpu_record);
} prof_offcpu_start SEC(".maps");

/*
 * tid -> the whole record of a thread off the CPU whose user stack is deeper than its record
 * holds (prof_offcpu_record.e.deep), from switch-out to the record's end, when it is sent.
 */
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, PROF_OFFCPU_DEEP_THREADS);
	__uint(map_flags, BPF_F_NO_PREALLOC);
	__type(key, __u32);
	__type(value, struct prof_offcpu_deep);
} prof_offcpu_deep SEC(".maps");

/* 0: every deep stack is cut as when prof_offcpu_deep is full (BPFTRACE_PROF_OFFCPU_NO_DEEP, for
 * tests/e2e/test_deep.sh). */
const volatile bool deep_room = true;

/* A record of at most max bytes, ns now the time off the CPU, to userspace. */
static __always_inline void send_record(struct prof_offcpu_event *e, __u64 max)
{
	__u64 size = prof_bound(sizeof(*e) + ((__u64)e->nkern + e->nuser) * sizeof(__u64), max);

	/* Every period, however short: userspace sums them. */
	if (bpf_ringbuf_output(&prof_events, e, size, prof_wakeup_flags(size)))
		prof_count(PROF_CNT_RINGBUF_FULL);
}

/* r's period is over: its record goes to userspace, the deep one in its place (which goes). */
static __always_inline void send_period(struct prof_offcpu_record *r, __u32 tid)
{
	struct prof_offcpu_deep *d;

	if (r->e.deep) {
		d = bpf_map_lookup_elem(&prof_offcpu_deep, &tid);
		if (d) {
			d->e.ns = r->e.ns;
			send_record(&d->e, sizeof(*d));
			bpf_map_delete_elem(&prof_offcpu_deep, &tid);
			return;
		}
		prof_count(PROF_CNT_STACK_FAIL); /* not reached: only its period goes */
	}
	send_record(&r->e, sizeof(*r));
}

/*
 * The user stack of the record in sc, n words (> PROF_OFFCPU_WORDS), is kept whole in
 * prof_offcpu_deep: the user words the thread's record keeps (none).  When there is no room, it
 * is cut to PROF_OFFCPU_WORDS words in sc (counted): those words.
 */
static __noinline __u32 keep_deep(struct prof_offcpu_scratch *sc, __u32 tid, __u32 n)
{
	__u32 nkern = prof_bound(sc->r.e.nkern, PROF_KERN_FRAMES);

	sc->d.e.nuser = (__u16)n;
	sc->d.e.deep = 1;
	if (deep_room && !bpf_map_update_elem(&prof_offcpu_deep, &tid, &sc->d, BPF_ANY))
		return 0;
	sc->d.e.deep = 0;
	prof_count(PROF_CNT_OFFCPU_DEEP_FULL);
	return prof_stack_recut(&sc->d.frames[nkern], n, PROF_OFFCPU_WORDS, PROF_OFFCPU_WORDS);
}

/*
 * The thread of r leaves the CPU again (or exits) while its last period is still open: it ran
 * in between without the tracepoint reporting its switch-in.  (Seen here about once in 300
 * switches of a test target: on these VMs no switch away from the sandbox's own agent threads
 * is traced, by this program or by the kernel's sched_switch event, so a thread the agent
 * preempted comes back unseen.)  Its period ended when it ran again: the time since it left
 * minus the CPU time it has had since, which the scheduler keeps exactly.
 */
static __always_inline void end_unseen(struct prof_offcpu_record *r, __u64 now, __u64 run_ns)
{
	__u64 span = now > r->e.ns ? now - r->e.ns : 0;
	__u64 ran = run_ns > r->e.run_ns ? run_ns - r->e.run_ns : 0;

	r->e.ns = span > ran ? span - ran : 0;
	send_period(r, r->e.tid);
	prof_count(PROF_CNT_OFFCPU_UNSEEN);
}

/* prev leaves the CPU (it is still current): keep its frames, the time and why. */
static __always_inline void switched_out(void *ctx, bool preempt, struct task_struct *prev,
					 __u32 prev_state)
{
	__u32 tid = BPF_CORE_READ(prev, pid), zero = 0;
	__u64 run_ns = BPF_CORE_READ(prev, se.sum_exec_runtime);
	struct prof_offcpu_scratch *sc;
	struct prof_offcpu_record *r;
	__u64 nkern, nuser;
	long got;

	if (!tid || !prof_is_target(BPF_CORE_READ(prev, tgid)))
		return; /* idle, or not ours */
	/* An open period (its deep record goes with it) */
	r = bpf_map_lookup_elem(&prof_offcpu_start, &tid);
	if (r)
		end_unseen(r, bpf_ktime_get_ns(), run_ns);
	if (prev_state & TASK_DEAD) {
		/* Exiting: no switch-in will end this one; an entry would outlive the tid. */
		if (r)
			bpf_map_delete_elem(&prof_offcpu_start, &tid);
		return;
	}
	sc = bpf_map_lookup_elem(&prof_offcpu_scratch, &zero);
	if (!sc)
		return;
	r = &sc->r;
	r->e.type = PROF_REC_OFFCPU;
	r->e.pid = BPF_CORE_READ(prev, tgid);
	r->e.tid = tid;
	r->e.run_ns = run_ns;
	/*
	 * Preempted, it stays on the run queue whatever state it was setting up to sleep in (the
	 * kernel's own trace shows it as R+); otherwise only a task still TASK_RUNNING (0) is.
	 */
	r->e.state = preempt || !prev_state ? PROF_OFFCPU_RUNNABLE : PROF_OFFCPU_BLOCKED;
	got = bpf_get_stack(ctx, r->frames, PROF_KERN_FRAMES * sizeof(__u64),
			    OFFCPU_KERN_SKIP & BPF_F_SKIP_FIELD_MASK);
	if (got < 0)
		prof_count(PROF_CNT_STACK_FAIL);
	nkern = prof_bound(got > 0 ? (__u64)got / sizeof(__u64) : 0, PROF_KERN_FRAMES);
	/* failures counted; the walk runs on past the cap into sc, a deeper stack cut there */
	got = prof_user_stack_py(ctx, &r->frames[nkern], PROF_USTACK_TASK, &r->e.py,
				 (struct prof_stack_cap){PROF_MAX_FRAMES, PROF_STACK_WORDS});
	nuser = prof_bound(got > 0 ? (__u64)got : 0, PROF_STACK_WORDS);
	r->e.nkern = (__u16)nkern;
	r->e.deep = 0;
	/* Last: the time it actually left, not when we started looking at it. */
	r->e.ns = bpf_ktime_get_ns();
	r->e.out_ns = r->e.ns;
	if (nuser > PROF_OFFCPU_WORDS)
		nuser = keep_deep(sc, tid, nuser);
	r->e.nuser = (__u16)prof_bound(nuser, PROF_OFFCPU_WORDS);
	if (bpf_map_update_elem(&prof_offcpu_start, &tid, r, BPF_ANY)) {
		prof_count(PROF_CNT_OFFCPU_FULL);
		if (r->e.deep)
			bpf_map_delete_elem(&prof_offcpu_deep, &tid);
	}
}

/* next runs again: send how long it was off the CPU, and where. */
static __always_inline void switched_in(struct task_struct *next)
{
	__u32 tid = BPF_CORE_READ(next, pid);
	struct prof_offcpu_record *r;
	__u64 now;

	r = bpf_map_lookup_elem(&prof_offcpu_start, &tid);
	if (!r)
		return;
	now = bpf_ktime_get_ns();
	r->e.ns = now > r->e.ns ? now - r->e.ns : 0;
	send_period(r, tid);
	bpf_map_delete_elem(&prof_offcpu_start, &tid);
}

SEC("tp_btf/sched_switch")
int BPF_PROG(offcpu_switch, bool preempt, struct task_struct *prev, struct task_struct *next,
	     unsigned int prev_state)
{
	switched_out(ctx, preempt, prev, prev_state);
	switched_in(next);
	return 0;
}
