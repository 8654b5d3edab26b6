/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * Which allocator a process's malloc and free reach.  ld.so looks a symbol up in the executable
 * first, then in LD_PRELOAD's libraries in order, then in the rest: an allocator found before a
 * preloaded sampler (user/sampler/) serves the program, and the sampler is bypassed — its
 * otel_memory probes stay silent, so the profiler must serve that process through its
 * allocator probes (user/attach/heap_attach.c).
 */
#ifndef PROF_HEAP_FRONT_H
#define PROF_HEAP_FRONT_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/stat.h>

struct maps;
struct maps_entry;

/*
 * Does the ELF file open as fd export an allocator of its own (a defined free in .dynsym)?  An
 * executable that does is looked up before any preloaded library: a sampler preloaded into it
 * is bypassed (user/sampler/sampler.c), and its allocator probes serve it.
 */
bool heap_front__own_allocator(int fd);

/* --heap -- CMD's executable (cmd as execvp finds it): true when it carries otel_memory
 * probes of its own (a sampler of its own); *own_allocator: heap_front__own_allocator. */
bool heap_front__cmd_exe(const char *cmd, bool *own_allocator);

/*
 * pid's executable, when it exports an allocator of its own: its (dev, inode) in *exe (also
 * when it does not, if it could be opened), true.  Through the kernel's link, which the target
 * cannot point elsewhere.
 */
bool heap_front__exe_allocator(uint32_t pid, struct stat *exe);

/*
 * Is an allocator that is no sampler preloaded ahead of otel (pid's mapping of a library
 * carrying the otel_memory probes)?  preload__ahead (proc/preload.h) with such allocators:
 * ours under a name it did not recognise is not an allocator ahead of itself.  Said at -v.
 * root_fd: the process's root (safe_open__root).
 */
bool heap_front__preload_ahead(uint32_t pid, const struct maps *m, int root_fd,
			       const struct maps_entry *otel);

#endif /* PROF_HEAP_FRONT_H */
