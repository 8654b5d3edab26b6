// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * On-CPU sampling: a cpu-clock perf event per CPU runs this at HZ; samples of target threads
 * are counted in place by (pid, tid, user stack, kernel stack).
 */
#include "common.bpf.h"
#include "stacks.bpf.h"
#include "prof_cpu.h"

#ifndef EFAULT
#define EFAULT 14
#endif

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, PROF_CPU_COUNT_ENTRIES);
	__type(key, struct prof_cpu_key);
	__type(value, __u64);
} prof_cpu_counts SEC(".maps");

static __always_inline __s32 stack_or_count(long id)
{
	/* -EFAULT: no stack of that kind at this sample (user mode for kernel stacks). */
	if (id < 0 && id != -EFAULT)
		prof_count(id == -EEXIST ? PROF_CNT_STACK_COLLISION : PROF_CNT_STACK_FAIL);
	return (__s32)id;
}

SEC("perf_event")
int cpu_sample(struct bpf_perf_event_data *ctx)
{
	__u64 id = bpf_get_current_pid_tgid();
	struct prof_cpu_key key = {};
	__u64 one = 1, *v;

	key.pid = id >> 32;
	key.tid = (__u32)id;
	if (!key.tid || !prof_is_target(key.pid))
		return 0; /* idle, or not ours */
	key.user_stack_id = stack_or_count(bpf_get_stackid(ctx, &prof_stacks, BPF_F_USER_STACK));
	key.kern_stack_id = stack_or_count(bpf_get_stackid(ctx, &prof_stacks, 0));
	v = bpf_map_lookup_elem(&prof_cpu_counts, &key);
	if (v) {
		__sync_fetch_and_add(v, 1);
		return 0;
	}
	if (bpf_map_update_elem(&prof_cpu_counts, &key, &one, BPF_NOEXIST)) {
		/* Another CPU may have inserted it meanwhile. */
		v = bpf_map_lookup_elem(&prof_cpu_counts, &key);
		if (v)
			__sync_fetch_and_add(v, 1);
		else
			prof_count(PROF_CNT_CPU_COUNTS_FULL);
	}
	return 0;
}
