/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/* The shared stack map: records and count keys carry ids into it. */
#ifndef PROF_STACKS_BPF_H
#define PROF_STACKS_BPF_H

#include "common.bpf.h"

struct {
	__uint(type, BPF_MAP_TYPE_STACK_TRACE);
	__uint(max_entries, PROF_STACK_ENTRIES);
	__uint(key_size, sizeof(__u32));
	__uint(value_size, PROF_MAX_FRAMES * sizeof(__u64));
} prof_stacks SEC(".maps");

#endif /* PROF_STACKS_BPF_H */
