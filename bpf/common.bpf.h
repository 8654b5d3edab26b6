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

/* -a/--all: every process is a target; the map lookup is skipped. */
const volatile bool prof_all_targets = false;

static __always_inline bool prof_is_target(__u32 tgid)
{
	return prof_all_targets || bpf_map_lookup_elem(&prof_targets, &tgid);
}

static __always_inline void prof_count(enum prof_counter c)
{
	__u32 key = c;
	__u64 *v = bpf_map_lookup_elem(&prof_counters, &key);

	if (v)
		*v += 1;
}

#endif /* PROF_COMMON_BPF_H */
