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

/*
 * PROF_REC_CPU_SAMPLE, followed by __u64 frames[nkern + nuser]: the kernel frames (none when
 * the sample hit user mode), then the user frames, each part leaf first.
 */
struct prof_cpu_sample {
	__u32 type;
	__u32 pid;
	__u32 tid;
	__u8 nuser; /* user frames (<= PROF_MAX_FRAMES); 0: none or capture failed (counted) */
	__u8 nkern; /* kernel frames (<= PROF_MAX_FRAMES) */
	__u8 py;    /* enum prof_py_thread (include/prof_python.h) */
	__u8 pad;
	__u64 ts; /* bpf_ktime_get_ns() of the sample (event traces' time) */
};
_Static_assert(sizeof(struct prof_cpu_sample) == 24, "prof_cpu_sample layout");

/* A cpu record at its largest: the per-CPU scratch BPF builds it in before sending it. */
struct prof_cpu_record {
	struct prof_cpu_sample s;
	__u64 frames[2 * PROF_MAX_FRAMES];
};

#endif /* PROF_CPU_H */
