/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * Which allocator functions a file defines and where to probe them: malloc-family entry
 * points in libc (or in an executable / preloaded allocator that brings its own), C++
 * operator new in libstdc++ (so `new` is attributed to its caller, not to operator new).
 */
#ifndef PROF_HEAP_ATTACH_H
#define PROF_HEAP_ATTACH_H

#include <stdint.h>

struct loader;
struct bpf_program;

/* Attach enter/return/free programs to every allocator function in path (see loader.h).
 * Returns the number of functions probed, or -errno. */
int heap_attach__file(struct loader *l, struct bpf_program *enter, struct bpf_program *ret,
		      struct bpf_program *free_, const char *path, int pid);
/* Attach to every file pid maps executable that defines allocator functions; probe_pid is the
 * process the uprobes are limited to (-1: any, filtered in BPF).  Adds the count to *nfns. */
int heap_attach__process(struct loader *l, uint32_t pid, int probe_pid, int *nfns);
/* 1 if the executable at path has no program interpreter (static), 0 if dynamic or a script,
 * -errno if unreadable or not ELF. */
int heap_attach__is_static(const char *path);
/* Fill the --sample-bytes interval table: exponential with the given mean. */
int heap_attach__fill_intervals(int map_fd, uint64_t mean);

#endif /* PROF_HEAP_ATTACH_H */
