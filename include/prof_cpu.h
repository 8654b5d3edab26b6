/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/* On-CPU sampling (bpf/cpu.bpf.c): samples are counted in the kernel per (pid, tid, stacks);
 * userspace reads the count map, so no sample travels through the ring buffer. */
#ifndef PROF_CPU_H
#define PROF_CPU_H

#include "prof_common.h"

#define PROF_CPU_COUNT_ENTRIES 65536

struct prof_cpu_key {
	__u32 pid;
	__u32 tid;
	__s32 user_stack_id; /* < 0: none (kernel thread) or lost (counted) */
	__s32 kern_stack_id; /* < 0: the sample hit user mode, or lost (counted) */
};
_Static_assert(sizeof(struct prof_cpu_key) == 16, "prof_cpu_key layout");

#endif /* PROF_CPU_H */
