/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * Off-CPU time (bpf/offcpu.bpf.c): when a target thread leaves a CPU, its kernel and user
 * frames and the time are kept per thread; when it runs again one record with the time it spent
 * off the CPU travels through the ring buffer.  Userspace sums them per (pid, tid, user stack,
 * kernel stack, state) (user/agg/offcpu_agg.c).
 */
#ifndef PROF_OFFCPU_H
#define PROF_OFFCPU_H

#include "prof_common.h"

/* Why the thread was off the CPU. */
enum prof_offcpu_state {
	/* It went to sleep (a wait, a lock, I/O, a sleep): not runnable until woken. */
	PROF_OFFCPU_BLOCKED = 0,
	/* It was preempted (or yielded) while runnable: waiting for a CPU. */
	PROF_OFFCPU_RUNNABLE = 1,
	PROF_OFFCPU__COUNT,
};

/* Threads off the CPU at once that the kernel keeps a stack for (prof_offcpu_start). */
#define PROF_OFFCPU_THREADS 16384

/*
 * PROF_REC_OFFCPU, followed by __u64 frames[nkern + nuser]: the kernel frames at the switch,
 * then the user frames, each part leaf first.  Kept per thread while it is off the CPU with ns
 * holding the switch-out time (CLOCK_MONOTONIC); sent with ns the time it was off.
 */
struct prof_offcpu_event {
	__u32 type;
	__u32 pid;
	__u32 tid;
	__u16 nuser; /* user frames (<= PROF_MAX_FRAMES); 0: none or capture failed (counted) */
	__u16 nkern; /* kernel frames (<= PROF_MAX_FRAMES) */
	__u64 ns;
	/*
	 * The thread's CPU time (task->se.sum_exec_runtime, ns) when it left: a period whose end
	 * the tracepoint never reported is timed by how long the thread has run since.
	 */
	__u64 run_ns;
	__u8 state; /* enum prof_offcpu_state */
	__u8 py;    /* enum prof_py_thread (include/prof_python.h); 0 until Python sets it */
	__u8 pad[6];
	__u64 out_ns; /* the switch-out time (bpf_ktime_get_ns), kept when ns becomes the length */
};
_Static_assert(sizeof(struct prof_offcpu_event) == 48, "prof_offcpu_event layout");

/* An off-CPU record at its largest: what the kernel keeps per thread and builds per CPU. */
struct prof_offcpu_record {
	struct prof_offcpu_event e;
	__u64 frames[2 * PROF_MAX_FRAMES];
};

#endif /* PROF_OFFCPU_H */
