/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * `bpftrace-prof dump -p PID` (bpf/dump.bpf.c): one pass of a sleepable task iterator over the
 * threads of a process sends one record per thread, with its state and, when it is off the CPU,
 * its kernel and user frames (the user stack walked from the registers it entered the kernel
 * with, reading its memory with bpf_copy_from_user_task).  A thread on a CPU at that moment gets
 * its frames from the cpu sampler instead (its saved registers are stale while it runs).
 */
#ifndef PROF_DUMP_H
#define PROF_DUMP_H

#include "prof_common.h"
#include "prof_stack.h"

#define PROF_DUMP_COMM 16

/* prof_dump_thread.flags */
enum prof_dump_flags {
	PROF_DUMP_ON_CPU = 1,  /* running on a CPU: no frames here, the sampler takes them */
	PROF_DUMP_KTHREAD = 2, /* a kernel thread: no user stack */
	PROF_DUMP_USER = 4, /* stopped in user mode (preempted or interrupted), not in the kernel */
};

/*
 * PROF_REC_DUMP_THREAD, followed by __u64 frames[nkern + nuser]: the kernel frames, then the
 * user frames, each part leaf first (as a cpu sample's).
 */
struct prof_dump_thread {
	__u32 type;
	__u32 pid;
	__u32 tid;
	__u32 state;   /* task->__state: 0 running/runnable, 1 sleeping, 2 disk sleep, … */
	__s64 orig_ax; /* the system call number when in one (x86-64 pt_regs->orig_ax), else < 0 */
	__u16 nuser;   /* user words (<= PROF_STACK_WORDS: include/prof_stack.h) */
	__u8 nkern;    /* kernel frames (<= PROF_KERN_FRAMES) */
	__u8 py;       /* enum prof_py_thread (include/prof_python.h) */
	__u8 flags;    /* enum prof_dump_flags */
	__u8 pad[3];
	char comm[PROF_DUMP_COMM];
};
_Static_assert(sizeof(struct prof_dump_thread) == 48, "prof_dump_thread layout");

/* The per-CPU scratch the iterator builds a record in (room for the walk past the cap). */
struct prof_dump_record {
	struct prof_dump_thread t;
	__u64 frames[PROF_KERN_FRAMES + PROF_WALK_WORDS];
};

#endif /* PROF_DUMP_H */
