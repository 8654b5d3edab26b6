/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * Sampled `--heap -- CMD`: our in-process sampler (user/sampler/), preloaded into CMD's tree so
 * that only sampled allocations reach the kernel (through its otel_memory probes) instead of a
 * trap per malloc and per free.  Here: where the library is, and the environment that loads it.
 */
#ifndef PROF_PRELOAD_H
#define PROF_PRELOAD_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct maps;
struct maps_entry;

#define PRELOAD_LIB "libbpftrace-prof-sampler.so"

/*
 * The sampler beside the executable exe (the path of the running profiler): exe's folder's
 * build/ (a source tree, `make`) or ../lib/bpftrace-prof/ (`make install`).  It must be a
 * regular file writable by its owner alone, owned by root or by us, and its path usable in
 * LD_PRELOAD (absolute, no ':' nor white space, which ld.so splits on).  0 and the path in out,
 * -ENOENT if none is there, or the -errno of the last candidate refused.
 */
int preload__find(char *out, size_t len, const char *exe);
/*
 * The entries CMD's environment gets: "LD_PRELOAD=<lib>" ahead of what old_preload (the
 * current value, or NULL) already loads, so a user's allocator stays next in line, and
 * "BPFTRACE_PROF_SAMPLE_BYTES=<n>".  0, or -ENAMETOOLONG.
 */
int preload__env(char *preload, size_t plen, char *bytes, size_t blen, const char *lib,
		 const char *old_preload, uint64_t sample_bytes);

/* What CMD's environment gets, built before the fork (the child may not allocate). */
struct preload_env {
	char lib[4096];		 /* the sampler's path */
	char preload[4096 + 64]; /* "LD_PRELOAD=..." */
	char bytes[64];		 /* "BPFTRACE_PROF_SAMPLE_BYTES=..." */
	const char *set[3];	 /* the two above, NULL-terminated: child__spawn's set_env */
};

/* The sampler beside our own executable (/proc/self/exe) and the entries for CMD, ahead of our
 * own LD_PRELOAD.  0, or -errno (pe->lib then says where it was looked for when known). */
int preload__prepare(struct preload_env *pe, uint64_t sample_bytes);

/*
 * The libraries a process's LD_PRELOAD names, in the order ld.so loads them, from the text of
 * its /proc/PID/environ (env, len bytes: NUL-separated NAME=value entries, maybe cut short).
 * As ld.so reads it: the last LD_PRELOAD entry, split on ':' and ' ', empty names skipped.
 * fn(name, nlen, arg) for each of the first PRELOAD_NAMES_MAX, until fn returns non-zero: that
 * value, else 0.  The names point into env, not NUL-terminated.
 */
#define PRELOAD_NAMES_MAX   16
#define PRELOAD_ENVIRON_MAX (256u << 10) /* bytes of /proc/PID/environ read, at most */
int preload__each(const char *env, size_t len, int (*fn)(const char *name, size_t nlen, void *arg),
		  void *arg);

/*
 * Is an allocator preloaded ahead of otel (pid's mapping of a library carrying otel_memory
 * probes) in pid's lookup scope?  ld.so looks in the executable, then in LD_PRELOAD's
 * libraries in order: one named before otel's own name (any, when otel is not named) whose file
 * exports_free serves the program's malloc and free, and a sampler in otel is bypassed
 * (user/sampler/sampler.c).  The list is the one the process started with (its environ, as
 * ld.so read it); a name with a '/' is the file it opens inside the process's root (root_fd,
 * safe_open__root), a bare name the mapped file (m) it ends.  proc_root: "/proc", or a test's
 * copy of it.  False when it cannot tell (no environ, over PRELOAD_ENVIRON_MAX).
 */
bool preload__ahead(const char *proc_root, uint32_t pid, const struct maps *m, int root_fd,
		    const struct maps_entry *otel, bool (*exports_free)(int fd));

#endif /* PROF_PRELOAD_H */
