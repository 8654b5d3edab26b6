/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * The user-stack walker shared by the heap return probe and the cpu sampler.
 * STUB: frame pointers through bpf_get_stack; the .eh_frame unwinder replaces the body.
 */
#ifndef PROF_UNWIND_BPF_H
#define PROF_UNWIND_BPF_H

#include "common.bpf.h"
#include "prof_unwind.h"

/* ctx is a perf_event program's context (bpf_perf_event_data) */
#define PROF_USTACK_PERF 1

/*
 * The current task's user stack, leaf first, into ips[0..PROF_MAX_FRAMES): the number of
 * frames (0 when there is none), or < 0 when the capture failed (counted here).
 * ctx: the program's context (pt_regs of a uprobe, or bpf_perf_event_data with PROF_USTACK_PERF).
 */
static __always_inline long prof_user_stack(void *ctx, __u64 *ips, __u32 flags)
{
	long n = bpf_get_stack(ctx, ips, PROF_MAX_FRAMES * sizeof(__u64), BPF_F_USER_STACK);

	if (n < 0) {
		prof_count(PROF_CNT_STACK_FAIL);
		return n;
	}
	return n / sizeof(__u64);
}

#endif /* PROF_UNWIND_BPF_H */
