/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * On-CPU sampling (bpf/cpu.bpf.c): each sample of a target thread travels through the ring
 * buffer with its frames; userspace counts them per (pid, tid, user stack, kernel stack)
 * (user/agg/cpu_agg.c).  Raw frames instead of stack-map ids: no sample loses its stack to a
 * bucket collision.
 */
#ifndef PROF_CPU_H
#define PROF_CPU_H

#include "prof_common.h"
#include "prof_python.h"
#include "prof_stack.h"

/*
 * PROF_REC_CPU_SAMPLE, followed by __u64 frames[nkern + nuser]: the kernel frames (none when
 * the sample hit user mode), then the user frames, each part leaf first.
 */
struct prof_cpu_sample {
	__u32 type;
	__u32 pid;
	__u32 tid;
	/* user words (<= PROF_STACK_WORDS: include/prof_stack.h); 0: none or capture failed
	 * (counted) */
	__u16 nuser;
	__u8 nkern; /* kernel frames (<= PROF_KERN_FRAMES) */
	__u8 py;    /* enum prof_py_thread (include/prof_python.h) */
	__u64 ts;   /* bpf_ktime_get_ns() of the sample (event traces' time) */
};
_Static_assert(sizeof(struct prof_cpu_sample) == 24, "prof_cpu_sample layout");

/* The per-CPU scratch BPF builds a record in before sending it: room for the walk past the cap
 * (30 KiB, under the 32 KiB of a per-CPU value). */
struct prof_cpu_record {
	struct prof_cpu_sample s;
	__u64 frames[PROF_KERN_FRAMES + PROF_WALK_WORDS];
};

#endif /* PROF_CPU_H */
