/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * What every program shares: the target set and the drop counters.  Maps a program may or may
 * not use live in their own headers (events.bpf.h, heap_state.bpf.h), so each
 * skeleton declares only the maps it uses.  Every object declares a shared map under the same
 * name; the loader creates it once and hands the same fd to every skeleton that declares it
 * (bpf_map__reuse_fd), so all programs filter on one target set, write one ring buffer and
 * count into one counter array.
 */
#ifndef PROF_COMMON_BPF_H
#define PROF_COMMON_BPF_H

#include "vmlinux.h"
#include <bpf/bpf_core_read.h>
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_tracing.h>

#include "prof_common.h"

#ifndef EFAULT
#define EFAULT 14 /* errno values are not in vmlinux.h */
#endif

char LICENSE[] SEC("license") = "Dual BSD/GPL";

/*
 * Whose user memory the stack walkers (unwind.bpf.h, python.bpf.h) read.  Every probe and sampler
 * walks the thread it runs in.  The dump iterator (bpf/dump.bpf.c defines PROF_CROSS_TASK) walks
 * another thread, named by prof_walk_tid: reads go through bpf_copy_from_user_task (sleepable
 * programs only) on a reference taken per read, since global functions and bpf_loop callbacks
 * cannot be handed the iterator's trusted task pointer.
 */
#ifdef PROF_CROSS_TASK
extern struct task_struct *bpf_task_from_pid(s32 pid) __ksym;
extern void bpf_task_release(struct task_struct *p) __ksym;

__u32 prof_walk_tgid, prof_walk_tid; /* the thread being dumped (one iterator read at a time) */

static __always_inline struct task_struct *prof_walk_task_get(void)
{
	return bpf_task_from_pid(prof_walk_tid);
}

static __always_inline void prof_walk_task_put(struct task_struct *t)
{
	bpf_task_release(t);
}

/* Not inlined: the walkers' frames would hold the task reference across each read. */
static __noinline long prof_read_user(void *dst, __u32 size, const void *src)
{
	struct task_struct *t = prof_walk_task_get();
	long err;

	if (!t)
		return -3; /* -ESRCH: the thread is gone */
	err = bpf_copy_from_user_task(dst, size, src, t, 0);
	prof_walk_task_put(t);
	return err;
}

static __always_inline __u64 prof_walk_pid_tgid(void)
{
	return (__u64)prof_walk_tgid << 32 | prof_walk_tid;
}
#else
static __always_inline struct task_struct *prof_walk_task_get(void)
{
	return bpf_get_current_task_btf();
}

static __always_inline void prof_walk_task_put(struct task_struct *t)
{
	(void)t;
}

#define prof_read_user(dst, size, src) bpf_probe_read_user(dst, size, src)
#define prof_walk_pid_tgid()	       bpf_get_current_pid_tgid()
#endif

/* tgid -> 1 for every process being profiled. */
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, PROF_MAX_TARGETS);
	__type(key, __u32);
	__type(value, __u8);
} prof_targets SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, PROF_CNT__COUNT);
	__type(key, __u32);
	__type(value, __u64);
} prof_counters SEC(".maps");

/* --cgroup / --container: the cgroup v2 directory whose tasks (at any depth below it) are
 * profiled, as index 0. */
struct {
	__uint(type, BPF_MAP_TYPE_CGROUP_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, __u32);
} prof_scope_cgroup SEC(".maps");

const volatile __u32 prof_scope = PROF_SCOPE_PIDS; /* enum prof_scope */
const volatile __u32 prof_self_tgid = 0;	   /* ours: never profiled in the wide scopes */

/*
 * tgid is the current task's process (every caller asks about the task it runs in): with a
 * cgroup scope, the kernel checks the task's cgroup ancestry, so processes started later in
 * the cgroup or in a new cgroup below it are in without userspace doing anything.
 */
static __always_inline bool prof_is_target(__u32 tgid)
{
	if (prof_scope == PROF_SCOPE_ALL)
		return tgid != prof_self_tgid;
	if (prof_scope == PROF_SCOPE_CGROUP)
		return tgid != prof_self_tgid &&
		       bpf_current_task_under_cgroup(&prof_scope_cgroup, 0) == 1;
	return bpf_map_lookup_elem(&prof_targets, &tgid);
}

static __always_inline void prof_count_n(enum prof_counter c, __u64 n)
{
	__u32 key = c;
	__u64 *v = bpf_map_lookup_elem(&prof_counters, &key);

	if (v)
		*v += n;
}

static __always_inline void prof_count(enum prof_counter c)
{
	prof_count_n(c, 1);
}

#endif /* PROF_COMMON_BPF_H */
