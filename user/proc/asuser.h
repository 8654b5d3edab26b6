/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * Opening files a target names with the target's rights, not ours.  A runtime tells us the
 * source file of each function (Python's co_filename, which compile() sets to anything); root
 * would read whatever it names: /etc/shadow, /run/secrets/…, and through the host's /proc our
 * own /proc/self/environ.  So such a file is opened by a short-lived child process:
 *   - with the target's fsuid, fsgid and supplementary groups (its /proc/PID/status when it
 *     named the file) and no capability at all — setfsuid/setfsgid, not setresuid: its real and
 *     effective uid stay 0, so the target can neither signal nor ptrace it, and a credential
 *     change makes it non-dumpable.  A child, because glibc's set*id wrappers change every
 *     thread of a process and ours must keep root's rights;
 *   - the path resolved inside the target's root (RESOLVE_IN_ROOT | RESOLVE_NO_MAGICLINKS),
 *     first as O_PATH (no driver's open runs), refused on a kernel file system (proc, sysfs,
 *     cgroup, debugfs, tracefs, securityfs, bpf, devpts, …), on FUSE (a process, maybe the
 *     target, answers its reads: a read could stall us forever), on the mount at the root's
 *     /dev, when not a regular file or larger than the cap; only then opened for reading,
 *     through /proc/self/fd/N, where the kernel checks the child's rights;
 *   - the descriptor handed back over a socket (SCM_RIGHTS); we read it, it never runs our
 *     code with the target's rights.
 */
#ifndef PROF_ASUSER_H
#define PROF_ASUSER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* Supplementary groups kept (a target with more gets fewer rights from us, never more). */
#define ASUSER_GROUPS_MAX 64

/* What the kernel checks a file access with (capabilities aside: the child has none). */
struct asuser_cred {
	uint32_t fsuid, fsgid;
	uint32_t ngroups;
	uint32_t groups[ASUSER_GROUPS_MAX];
};

/* The Uid:, Gid: (fourth field: fs) and Groups: lines of a /proc/PID/status text; -EINVAL if a
 * line is missing or malformed. */
int asuser__parse_status(struct asuser_cred *out, const char *text, size_t len);

/* The credentials of the process whose /proc directory is pid_dir_fd (-ESRCH: gone). */
int asuser__read_cred(struct asuser_cred *out, int pid_dir_fd);

bool asuser__same_cred(const struct asuser_cred *a, const struct asuser_cred *b);

/*
 * Open paths[0..n) inside root_fd (an O_PATH directory: the target's root) as cred would.
 * out[i] receives a read-only descriptor of a regular file of at most max_size bytes, or
 * -errno: -EACCES (or -EPERM) not readable as cred, -EXDEV on a kernel or FUSE file system or
 * the root's /dev, -EINVAL not a regular file, -EFBIG larger than max_size, -ENOENT, -ELOOP …,
 * -ETIMEDOUT when the child answered nothing for timeout_ms (it is killed; the paths after it
 * get -ECANCELED).  Returns 0, or -errno when no child could be started (every out[i] then
 * holds it too).
 */
int asuser__open(int *out, const struct asuser_cred *cred, int root_fd, const char *const *paths,
		 size_t n, uint64_t max_size, int timeout_ms);

/* Whether fd is a regular file of at most max_size bytes on none of the refused file systems
 * (0, -EINVAL, -EFBIG, -EXDEV). */
int asuser__check(int fd, uint64_t max_size);

/* What an error of asuser__open means, for a one-line message. */
const char *asuser__strerror(int err);

#endif /* PROF_ASUSER_H */
