/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * A process's memory cgroup and its limit, for an OOM kill's profile: cgroup v1's memory
 * controller (memory.limit_in_bytes, what our machines use) or, without one, cgroup v2
 * (memory.max).  The smallest limit of the cgroup and its ancestors is the one that binds.  The
 * process chooses its cgroup's name (a delegated subtree): paths are resolved beneath the
 * hierarchy's root without following anything, and every read is capped.
 */
#ifndef PROF_MEMLIMIT_H
#define PROF_MEMLIMIT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define MEMLIMIT_PATH_MAX 512

struct memlimit {
	char path[MEMLIMIT_PATH_MAX]; /* the memory cgroup ("/docker/<id>"), "" when unknown */
	bool v1;		      /* path is in the v1 memory hierarchy (else v2) */
	uint64_t limit;		      /* bytes; 0: none set or none readable */
};

/*
 * The memory cgroup's path from the content of /proc/PID/cgroup: the v1 line whose controllers
 * include "memory", else the v2 "0::" line (*v1 says which).  -ENOENT when neither is there,
 * -EINVAL when the chosen line appears twice (a cgroup name holding a newline forged one) or is
 * not a path, -ENAMETOOLONG.
 */
int memlimit__parse_proc(char *out, size_t size, bool *v1, const char *buf, size_t len);

/* A limit file's content: a decimal byte count, or "max" (v2).  *out 0 for no limit ("max", or
 * v1's page-counter maximum, any value of 2^62 or more).  -EINVAL when it is neither. */
int memlimit__parse_value(uint64_t *out, const char *buf);

/*
 * pid's memory cgroup and limit: /proc/PID/cgroup read below proc_fd, the limit files below
 * v1_root_fd (the v1 memory hierarchy, -1: none) or v2_root_fd (the cgroup2 mount, -1: none).
 * 0 when the cgroup was found (out->limit 0 when no limit could be read); -errno otherwise
 * (-ENOENT/-ESRCH: the process is gone).
 */
int memlimit__read(struct memlimit *out, int proc_fd, int v1_root_fd, int v2_root_fd, uint32_t pid);

/* The same with the host's hierarchies (/proc, /sys/fs/cgroup/memory, the cgroup2 mount). */
int memlimit__read_host(struct memlimit *out, uint32_t pid);

/*
 * The path below the hierarchy mounted at root_fd of the cgroup whose kernfs id is id (what
 * BPF reads from a task: the directory's file handle, as cgroup__id says), opened by that
 * handle and named by /proc/self/fd: no walk.  -ESTALE when no cgroup there has the id.
 */
int memlimit__path_by_id(char *out, size_t size, int root_fd, uint64_t id);

/*
 * A cgroup's path from the names BPF read at an OOM kill (struct prof_oom_event's memcg_names:
 * n names of stride bytes each, the leaf first, each NUL-terminated within its slot or cut at
 * it): "/a/b/leaf", "/" for none; cut (levels or a name were left out) puts ".../" first.
 * -EINVAL for an empty or unterminated name or one holding '/', -ENAMETOOLONG.
 */
int memlimit__join_names(char *out, size_t size, const char *names, size_t stride, unsigned n,
			 bool cut);

struct prof_oom_event;
/*
 * What BPF read at an OOM kill: the memory cgroup's path as named then (whole), else looked up
 * by its id in the hierarchy BPF saw it in (the cgroup may be gone already), else as much of the
 * path as was named; the limit from pages (0: none).
 */
void memlimit__from_kill(struct memlimit *out, const struct prof_oom_event *e);

#endif /* PROF_MEMLIMIT_H */
