/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * Off-CPU time (bpf/offcpu.bpf.c): when a target thread leaves a CPU, its kernel and user
 * frames and the time are kept per thread; when it runs again one record with the time it spent
 * off the CPU travels through the ring buffer.  Userspace sums them per (pid, tid, user stack,
 * kernel stack, state) (user/agg/offcpu_agg.c).  A user stack deeper than the thread's record
 * holds is kept whole in a record of its own while the thread is off (PROF_OFFCPU_WORDS).
 */
#ifndef PROF_OFFCPU_H
#define PROF_OFFCPU_H

#include "prof_common.h"
#include "prof_stack.h"

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
	/* user words (<= PROF_STACK_WORDS; in a thread's record <= PROF_OFFCPU_WORDS); 0: none or
	 * capture failed (counted) */
	__u16 nuser;
	__u16 nkern; /* kernel frames (<= PROF_KERN_FRAMES) */
	__u64 ns;
	/*
	 * The thread's CPU time (task->se.sum_exec_runtime, ns) when it left: a period whose end
	 * the tracepoint never reported is timed by how long the thread has run since.
	 */
	__u64 run_ns;
	__u8 state; /* enum prof_offcpu_state */
	__u8 py;    /* enum prof_py_thread (include/prof_python.h); 0 until Python sets it */
	/* 1: the user stack is deeper than PROF_OFFCPU_WORDS and whole in prof_offcpu_deep; the
	 * thread's record keeps no user words (nuser 0) */
	__u8 deep;
	__u8 pad[5];
	__u64 out_ns; /* the switch-out time (bpf_ktime_get_ns), kept when ns becomes the length */
};
_Static_assert(sizeof(struct prof_offcpu_event) == 48, "prof_offcpu_event layout");

/*
 * A user stack off the CPU kept in the thread's record: at most this many words.  Smaller than
 * the other modes' cap: the record is copied whole into that map at every switch, so its size is
 * paid by every switch.  A deeper stack is kept whole (up to PROF_MAX_FRAMES frames, both ends of
 * a deeper one: include/prof_stack.h) in a record of its own, struct prof_offcpu_deep, and the
 * thread's record says so (deep); when no such record can be had the stack is cut to this many
 * words (offcpu_deep_full).
 */
#define PROF_OFFCPU_WORDS 255

/* Threads off the CPU at once with a stack deeper than PROF_OFFCPU_WORDS (18 KiB each). */
#define PROF_OFFCPU_DEEP_THREADS 4096

/* An off-CPU record as the kernel keeps it per thread. */
struct prof_offcpu_record {
	struct prof_offcpu_event e;
	__u64 frames[PROF_KERN_FRAMES + PROF_OFFCPU_WORDS];
};

/* An off-CPU record at its largest: a deep stack's, kept apart while its thread is off. */
struct prof_offcpu_deep {
	struct prof_offcpu_event e;
	__u64 frames[PROF_KERN_FRAMES + PROF_STACK_WORDS];
};

/* The per-CPU scratch a record is built in: room for the walk past the cap; either record is its
 * start. */
struct prof_offcpu_scratch {
	union {
		struct prof_offcpu_record r;
		struct prof_offcpu_deep d;
		__u64 words[(sizeof(struct prof_offcpu_event) / 8) + PROF_KERN_FRAMES +
			    PROF_WALK_WORDS];
	};
};

#endif /* PROF_OFFCPU_H */
