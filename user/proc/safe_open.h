/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * Opening files that other users and containers control, as root.  A target decides what its
 * paths resolve to: a library path may be swapped for a symlink to a host file, "/tmp/perf-N.map"
 * may be a FIFO or a link to /dev/zero.  So:
 *   - a mapped object is opened through /proc/PID/map_files/START-END (the kernel's own reference
 *     to the mapped file, which the target cannot swap) and checked against the maps line;
 *   - any other file inside a target's root is resolved with openat2(RESOLVE_IN_ROOT |
 *     RESOLVE_NO_MAGICLINKS): absolute symlinks and ".." stay inside that root;
 *   - every open is O_NONBLOCK (a FIFO cannot block us) and O_CLOEXEC, only regular files are
 *     accepted and their size is capped before anything is read;
 *   - whatever is handed to the kernel by path afterwards (uprobes) uses /proc/self/fd/N of the
 *     verified file, never the target's path.
 */
#ifndef PROF_SAFE_OPEN_H
#define PROF_SAFE_OPEN_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <sys/stat.h>

struct maps_entry;

/* Caps on what we read from files we do not control. */
#define SAFE_OPEN_ELF_MAX (8ULL << 30) /* executables, libraries, debug files (mmapped) */

enum safe_open_flags {
	SAFE_OPEN_NOFOLLOW = 1 << 0, /* the last component must not be a symbolic link */
};

/*
 * O_PATH directory fd of a process's root ("<proc_root>/<pid>/root"), for safe_open__at.
 * -ENOENT/-ESRCH when the process is gone.
 */
int safe_open__root(int *out, const char *proc_root, uint32_t pid);

/*
 * A regular file at path resolved inside root_fd as if root_fd were "/", magic links
 * (/proc/…/fd, /proc/…/root) never followed; root_fd -1: a path of our own, not confined.  Errors:
 * -ELOOP (a symlink where SAFE_OPEN_NOFOLLOW forbids one), -EINVAL (not a regular file: FIFO,
 * device, directory), -EFBIG (larger than max_size), or open's -errno. st (may be NULL) receives
 * the file's stat.
 */
int safe_open__at(int *out, int root_fd, const char *path, unsigned flags, uint64_t max_size,
		  struct stat *st);

/*
 * The object mapped by maps line e of pid, through <proc_root>/<pid>/map_files/START-END,
 * checked to be a regular file with e's (device, inode): -ESTALE when the mapping changed.
 */
int safe_open__mapped(int *out, const char *proc_root, uint32_t pid, const struct maps_entry *e,
		      struct stat *st);

/*
 * The file behind maps line e, the best way still open: its map_files link (checked); else its
 * path inside the process's root root_fd (confined), accepted with another (dev, inode) only when
 * the file was not deleted (overlay and btrfs report other device numbers in maps than stat
 * does); else, with root_fd -1 (the process is gone), the host path only when it is exactly the
 * mapped file.  A refusal (safe_open__refused) wins over a plain miss in the error returned.
 */
int safe_open__mapping(int *out, const char *proc_root, uint32_t pid, const struct maps_entry *e,
		       int root_fd);

/* The error says a file was there but refused (symlink, not regular, too big, wrong owner). */
bool safe_open__refused(int err);

/* Whether st is the file a maps line names (device numbers and inode). */
bool safe_open__matches(const struct stat *st, const struct maps_entry *e);

/*
 * A small kernel-made file below dir_fd (/proc/PID/cgroup, /proc/PID/status: their size reads
 * 0), at most max - 1 bytes, into buf (NUL-terminated); -EFBIG if longer, -errno when it cannot
 * be opened (the process is gone).  Never follows a symlink, never blocks on a FIFO.
 */
int safe_open__read_small(char *buf, size_t max, size_t *len, int dir_fd, const char *name);

/* Read all of a regular file (at most max bytes, else -EFBIG), NUL-terminated. */
int safe_open__read_all(char **out, size_t *len, int fd, size_t max);

/*
 * A new file of ours, name below dir_fd, opened for writing with mode 0600 (less the umask: what
 * we write holds command lines and paths).  Whatever already stands at name is refused, never
 * written through: a file or a symlink (planted, or a name used twice) is -EEXIST.
 */
int safe_open__create(int *out, int dir_fd, const char *name);

/* The same, as a stdio stream. */
int safe_open__fcreate(FILE **out, int dir_fd, const char *name);

/* A path naming fd's file that nobody else can redirect: "/proc/self/fd/N". */
void safe_open__fd_path(char *buf, size_t size, int fd);

/* What an error of this module means, for a one-line message. */
const char *safe_open__strerror(int err);

#endif /* PROF_SAFE_OPEN_H */
