/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * cgroup v2 discovery for container and host modes: where the cgroup2 hierarchy is mounted, which
 * cgroup a process is in, which container (if any) a cgroup path names, a container id (or a
 * unique prefix) back to its cgroup directory, a directory's id as BPF sees it, and the pids of a
 * cgroup subtree.
 *
 * Containers create cgroup directories (a delegated subtree) and choose their names, so every
 * walk is bounded (CGROUP_WALK_DEPTH, CGROUP_WALK_DIRS), follows nothing (openat with
 * O_NOFOLLOW from a directory fd) and every read is capped.  Parsers take a buffer or a FILE*
 * so the fuzzer and the tests feed them directly.
 */
#ifndef PROF_CGROUP_H
#define PROF_CGROUP_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "prof_common.h"

#define CGROUP_PATH_MAX	  4096	  /* a cgroup path relative to the mount, with its NUL */
#define CGROUP_ID_SIZE	  65	  /* a container id (64 hex, or an lxc/buildkit name) + NUL */
#define CGROUP_WALK_DEPTH 16	  /* levels below the starting directory that a walk enters */
#define CGROUP_WALK_DIRS  100000  /* directories one walk visits at most */
#define CGROUP_PROCS_MAX  4194304 /* lines read from one cgroup.procs (PID_MAX_LIMIT) */

#define CGROUP_STAT_FIELD(f, n, d, k) uint64_t f;
struct cgroup_stats {
	PROF_CGROUP_STATS(CGROUP_STAT_FIELD)
};
#undef CGROUP_STAT_FIELD

/*
 * The cgroup2 mount point from a file in /proc/self/mounts format: the first "cgroup2" entry,
 * its octal escapes (\040 space, \011 tab, \012 newline, \134 backslash) decoded.  -ENOENT when
 * there is none, -ENAMETOOLONG when it does not fit in size bytes.
 */
int cgroup__parse_mounts(char *out, size_t size, FILE *mounts);

/*
 * A process's cgroup v2 path ("/docker/<id>", "/" for the root) from the content of its
 * /proc/PID/cgroup: the "0::" line; v1 lines ("N:controllers:path") are ignored.  A dead
 * cgroup's " (deleted)" suffix is dropped.  -ENOENT without a "0::" line (v1 only), -EINVAL when
 * it is not a path or appears twice (a cgroup name holding a newline forged one),
 * -ENAMETOOLONG.
 */
int cgroup__parse_proc(char *out, size_t size, const char *buf, size_t len);

/* The same for the v1 hierarchy of controller ("memory"): the line whose controller list names
 * it; -ENOENT without one. */
int cgroup__parse_proc_v1(char *out, size_t size, const char *buf, size_t len,
			  const char *controller);

/* The same, read from <proc_fd>/<pid>/cgroup (proc_fd: a directory fd of /proc or a fake one).
 * -ENOENT/-ESRCH when the process is gone. */
int cgroup__read_pid(char *out, size_t size, int proc_fd, uint32_t pid);

/*
 * The container a cgroup path names, the innermost match (Docker in Docker, a systemd
 * init.scope inside a container): 64 hex from Docker "docker-<id>.scope" and "/docker/<id>",
 * containerd "cri-containerd-<id>.scope", CRI-O "crio-<id>.scope", Podman "libpod-<id>.scope"
 * (not "libpod-conmon-…", the monitor), Kubernetes cgroupfs "/kubepods/<qos>/pod<uid>/<id>"
 * and any other bare 64-hex directory; the name from "/lxc/<name>", "/lxc.payload/<name>",
 * "lxc.payload.<name>" and "/buildkit/<name>" (letters, digits, '.', '_', '-'; at most 64).
 * -ENOENT when it names none.  A label, not a proof: a container with a delegated subtree can
 * name a cgroup of its own after another id (innermost wins); filtering is by cgroup id.
 */
int cgroup__container_id(char out[CGROUP_ID_SIZE], const char *path);

/* What container and host modes label a process's samples with (profile_process). */
struct cgroup_labels {
	uint32_t ns_pid;		   /* its pid in its own pid namespace; 0 unknown */
	char container_id[CGROUP_ID_SIZE]; /* "" when its cgroup names none */
	char cgroup[CGROUP_PATH_MAX];	   /* relative to the cgroup2 mount; "" unknown (v1 only) */
};

/*
 * A process's labels, read from <proc_fd>/<pid>/cgroup and /status.  0 when the process was
 * there (a part that cannot be read or parsed is left empty); -ENOENT/-ESRCH when it is gone.
 */
int cgroup__labels(struct cgroup_labels *out, int proc_fd, uint32_t pid);

/*
 * Open a cgroup directory the user named (absolute or relative to the working directory) as an
 * O_DIRECTORY fd, and its path relative to the cgroup2 mount (rel, "/" for the mount itself).
 * -ENOENT: no such directory; -EXDEV: not below mount or not on a cgroup2 file system.
 */
int cgroup__open_path(int *out, char *rel, size_t rel_size, const char *mount, const char *path);

/* A directory below root_fd by its path relative to it ("/docker/<id>", "/" for root_fd
 * itself), resolved beneath root_fd without following any symlink or crossing a mount. */
int cgroup__open_rel(int *out, int root_fd, const char *rel);

/* One container found in the cgroup tree. */
struct cgroup_container {
	char id[CGROUP_ID_SIZE];
	char path[CGROUP_PATH_MAX]; /* relative to the directory the walk started from */
};

/*
 * Find a container's cgroup directory by walking the tree below root_fd (the cgroup2 mount):
 * want is a full id, a prefix of at least 4 hex digits, or an lxc/buildkit name (exact).  The
 * directory is the one whose own name carries the id (not its descendants).  0: out holds it;
 * -EEXIST: more than one matches, out and other (may be NULL) hold two of them for the message;
 * -ENOENT: none; -EINVAL: want is not an id; -E2BIG: the walk stopped at CGROUP_WALK_DIRS
 * before deciding.  Directories left out are counted in st (may be NULL).
 */
int cgroup__find_container(struct cgroup_container *out, struct cgroup_container *other,
			   int root_fd, const char *want, struct cgroup_stats *st);

/*
 * A cgroup directory's v2 id: what bpf_get_current_cgroup_id() returns for a task in it (the
 * kernfs node id, which the kernel hands out as the file handle of the directory and, on 64-bit
 * kernels, also as its inode number; the handle is read, as it is the id on 32-bit kernels too).
 * Checked on 6.18 here: handle, st_ino and the BPF helper agree.  -EOPNOTSUPP: not kernfs.
 */
int cgroup__id(uint64_t *out, int dir_fd);

/* Depth of a path relative to the cgroup2 root ("/" is 0, "/docker/<id>" 2): the level
 * bpf_get_current_ancestor_cgroup_id() takes, for a reader in the initial cgroup namespace.
 * -EINVAL unless the path starts with '/'. */
int cgroup__level(uint32_t *out, const char *rel);

/* Called with each pid; a non-zero return stops the walk and is returned. */
typedef int (*cgroup_pid_fn)(void *ctx, uint32_t pid);

/* Every pid listed in a cgroup.procs file (one decimal per line; other lines and lines past
 * CGROUP_PROCS_MAX are counted in st and skipped). */
int cgroup__parse_procs(FILE *procs, cgroup_pid_fn fn, void *ctx, struct cgroup_stats *st);

/* Every pid in the cgroup directory dir_fd and its descendants (bounded like the container
 * walk; what is left out is counted in st).  0, fn's non-zero return, or -errno. */
int cgroup__for_each_pid(int dir_fd, cgroup_pid_fn fn, void *ctx, struct cgroup_stats *st);

/* --cgroup PATH or (path NULL) --container ID: the scope's cgroup v2 directory, open in *out
 * (BPF checks ancestry against it).  0, or the exit status (1 or 2) after a one-line message. */
int cgroup__open_scope(int *out, const char *path, const char *container);

#endif /* PROF_CGROUP_H */
