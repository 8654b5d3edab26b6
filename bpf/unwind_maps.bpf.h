/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * The maps of the user-stack unwinder (include/prof_unwind.h), filled by user/unwind/unwinder.c:
 * unwind tables per file, executable mappings per process.  Shared by every object that includes
 * this (the loader hands one fd to all): the heap and cpu programs read them, the lifecycle program
 * keeps process entries right across fork, exec and exit.
 */
#ifndef PROF_UNWIND_MAPS_BPF_H
#define PROF_UNWIND_MAPS_BPF_H

#include "common.bpf.h"
#include "prof_unwind.h"

/* The template of every table's inner map: BPF_F_INNER_MAP lets each have its own size. */
struct prof_unwind_inner {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(map_flags, BPF_F_INNER_MAP);
	__uint(max_entries, 1);
	/* Sizes, not types: BTF would hold the chunk struct only as a forward declaration. */
	__uint(key_size, sizeof(__u32));
	__uint(value_size, sizeof(struct prof_unwind_chunk));
};

/* table id -> its chunks. */
struct {
	__uint(type, BPF_MAP_TYPE_HASH_OF_MAPS);
	__uint(max_entries, PROF_UNWIND_TABLES);
	__type(key, __u32);
	__array(values, struct prof_unwind_inner);
} prof_unwind_tables SEC(".maps");

/*
 * tgid -> its executable mappings.  Not preallocated: an update then replaces the value under
 * RCU, so a program on another CPU never reads a half-written entry.
 */
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(map_flags, BPF_F_NO_PREALLOC);
	__uint(max_entries, PROF_MAX_TARGETS);
	__type(key, __u32);
	__type(value, struct prof_unwind_proc);
} prof_unwind_procs SEC(".maps");

/* (dev, inode) of a mapped file -> its table (include/prof_unwind.h). */
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(map_flags, BPF_F_NO_PREALLOC);
	__uint(max_entries, PROF_UNWIND_FILES);
	__type(key, struct prof_unwind_file_key);
	__type(value, struct prof_unwind_file);
} prof_unwind_files SEC(".maps");

#endif /* PROF_UNWIND_MAPS_BPF_H */
