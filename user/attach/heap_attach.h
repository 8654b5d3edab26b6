/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * Which allocator functions a file defines and where to probe them: malloc-family entry
 * points in libc (or in an executable / preloaded allocator that brings its own), C++
 * operator new in libstdc++ (so `new` is attributed to its caller, not to operator new).
 */
#ifndef PROF_HEAP_ATTACH_H
#define PROF_HEAP_ATTACH_H

#include <stdbool.h>
#include <stdint.h>

#include "prof_heap.h"

struct loader;
struct elf_file;
struct owners;
struct maps;

enum heap_probe_kind {
	HEAP_PROBE_RETURN,
	HEAP_PROBE_FREE,
	HEAP_PROBE_ENTRY,
};

struct heap_probe {
	const char *name;	   /* the allocator function */
	uint64_t offset;	   /* file offset of the probed instruction */
	uint64_t skipped;	   /* prologue bytes skipped to reach an emulated instruction */
	enum prof_alloc_fn fn;	   /* the uprobe cookie */
	uint64_t code_size;	   /* entry-only operator new: its size, in the cookie too */
	enum heap_probe_kind kind; /* which program */
};

/* Every probe a file needs, in attach order: all return probes, then free, then entries. */
struct heap_plan {
	struct heap_probe probes[2 * PROF_FN__COUNT];
	unsigned count;
	unsigned nfns; /* allocator functions covered */
};

/* What to probe in ef (opened with keep_fd, so prologues can be decoded). */
int heap_attach__plan(struct heap_plan *out, const struct elf_file *ef);

/*
 * Attach the heap programs to every allocator function of the file open as fd, by the fd's own
 * path (what the kernel attaches to is the file verified; name is for messages), once per
 * (file, pid) in the loader's attached set.  pid -1: every process mapping the file (BPF
 * filters on the targets).  Returns the functions probed (0: none, or no --heap) or -errno.
 */
int heap_attach__file(struct loader *l, int fd, const char *name, int pid);
/* What an attach to a process is for. */
enum heap_attach_why {
	/* Files probed before a program maps them (`-- CMD`'s libc, through our own maps): no
	 * process's path is decided. */
	HEAP_ATTACH_PREPARE,
	/* A new image of pid: its path decided — its own otel_memory probes when a file it maps
	 * carries them, else the allocator probes — and counted (heap_procs_otel, _uprobes). */
	HEAP_ATTACH_IMAGE,
	/* More of the same image (a dlopen): otel_memory probes there move pid onto them. */
	HEAP_ATTACH_MORE,
	/* The same, the otel_memory probes only (`-- CMD` and -p: the allocators are probed). */
	HEAP_ATTACH_OTEL,
};

/*
 * Attach to every file pid maps executable that defines allocator functions; m: its mappings as
 * the tracker read them (NULL: read now); probe_pid is the process the uprobes are limited to
 * (-1: any, filtered in BPF).  Adds the count to *nfns.  A file carrying the otel_memory probes
 * (both alloc and free) gets them attached, and pid goes on their path (loader__heap_path):
 * BPF's allocator probes skip it, and probed per process (probe_pid >= 0) it gets none.
 */
int heap_attach__process(struct loader *l, uint32_t pid, const struct maps *m, int probe_pid,
			 enum heap_attach_why why, int *nfns);
/* -p: probe_pid exec'd (its new image attached): the files its dynamic loader maps are probed
 * at the loader's reports (HEAP_ATTACH_MORE). */
int heap_attach__exec(struct loader *l, int probe_pid);
/*
 * Wide scopes: heap_attach__process for every process (-1), and pid's executable file mappings
 * recorded in o as what it keeps (owners__set_files).  A file mapped by a process on its
 * otel_memory probes is probed per process from then on (enum prof_heap_path): the processes
 * that map it move onto links of their own, and so does a later one that maps it (late: it ran
 * before they were in, a fork or an exec not held: counted in heap_own_late).
 */
int heap_attach__scoped(struct loader *l, struct owners *o, uint32_t pid, const struct maps *m,
			enum heap_attach_why why, bool late, int *nfns);
/* Wide scopes: pid's group is gone; its own allocator links go (call before owners__release). */
void heap_attach__gone(struct loader *l, struct owners *o, uint32_t pid);
/*
 * A file system root seen for the first time (a container's, open as root_fd): probe the
 * allocators, hook the dynamic loaders and (exit_hooks) the libcs' _exit (loader__attach_hook) at
 * the usual library paths inside it, for every process (filtered in BPF), before any process there
 * maps them: a program started in that container later is traced from its first allocation and
 * symbolized however short its life.  Adds the functions probed to *nfns.  With o, the files
 * are recorded as the root's there (owners__group_file, OWNERS_ROOT, the root's fstat).
 */
int heap_attach__root(struct loader *l, struct owners *o, int root_fd, bool exit_hooks, int *nfns);
/* 1 if the executable at path has no program interpreter (static), 0 if dynamic or a script,
 * -errno if unreadable or not ELF. */
int heap_attach__is_static(const char *path);
/*
 * `-- CMD` before it runs: the executable exe (resolved) and, unless static, the libc and
 * libstdc++ it will load (the system's, as we map them), probed for every process (BPF
 * filters on the targets).  Adds the functions probed to *nfns.  0 or -errno.
 */
int heap_attach__cmd(struct loader *l, const char *exe, int *nfns);

#endif /* PROF_HEAP_ATTACH_H */
