// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
#include "proc/asuser.h"
#include "proc/pidfd.h"

#include <errno.h>
#include <fcntl.h>
#include <linux/capability.h>
#include <linux/magic.h>
#include <linux/openat2.h>
#include <poll.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include "proc/safe_open.h"
#include "util/fdpass.h"

#ifndef P_PIDFD
#define P_PIDFD 3
#endif

/* A status file is about 1.5 KiB; its Groups line may hold thousands of numbers. */
#define STATUS_MAX (64 * 1024)

/* Parse whitespace-separated decimal numbers in [s, end) into v (at most max kept; *n counts
 * them all). */
static int numbers(uint32_t *v, size_t max, size_t *n, const char *s, const char *end)
{
	*n = 0;
	while (s < end) {
		uint64_t x = 0;

		if (*s == ' ' || *s == '\t') {
			s++;
			continue;
		}
		if (*s < '0' || *s > '9')
			return -EINVAL;
		for (; s < end && *s >= '0' && *s <= '9'; s++) {
			x = x * 10 + (uint64_t)(*s - '0');
			if (x > UINT32_MAX)
				return -EINVAL;
		}
		if (*n < max)
			v[*n] = (uint32_t)x;
		(*n)++;
	}
	return 0;
}

int asuser__parse_status(struct asuser_cred *out, const char *text, size_t len)
{
	const char *end = text + len;
	struct asuser_cred c = {0};
	unsigned have = 0;

	for (const char *l = text; l < end;) {
		const char *nl = memchr(l, '\n', (size_t)(end - l));
		const char *le = nl ? nl : end;
		uint32_t ids[4];
		size_t n;

		/* Real, effective, saved, fs: the kernel checks file access with the last. */
		if (le - l > 4 && (!memcmp(l, "Uid:", 4) || !memcmp(l, "Gid:", 4))) {
			if (numbers(ids, 4, &n, l + 4, le) || n != 4)
				return -EINVAL;
			if (l[0] == 'U')
				c.fsuid = ids[3];
			else
				c.fsgid = ids[3];
			have |= l[0] == 'U' ? 1 : 2;
		} else if (le - l >= 7 && !memcmp(l, "Groups:", 7)) {
			if (numbers(c.groups, ASUSER_GROUPS_MAX, &n, l + 7, le))
				return -EINVAL;
			c.ngroups = n < ASUSER_GROUPS_MAX ? (uint32_t)n : ASUSER_GROUPS_MAX;
			have |= 4;
		}
		l = nl ? nl + 1 : end;
	}
	if (have != 7)
		return -EINVAL;
	*out = c;
	return 0;
}

int asuser__read_cred(struct asuser_cred *out, int pid_dir_fd)
{
	char *buf = malloc(STATUS_MAX);
	size_t n = 0;
	int err;

	if (!buf)
		return -ENOMEM;
	err = safe_open__read_small(buf, STATUS_MAX, &n, pid_dir_fd, "status");
	if (!err)
		err = asuser__parse_status(out, buf, n);
	free(buf);
	return err;
}

bool asuser__same_cred(const struct asuser_cred *a, const struct asuser_cred *b)
{
	return a->fsuid == b->fsuid && a->fsgid == b->fsgid && a->ngroups == b->ngroups &&
	       !memcmp(a->groups, b->groups, a->ngroups * sizeof(a->groups[0]));
}

/* File systems whose files are the kernel's (or a process's) answers, not stored bytes. */
static bool refused_fs(int64_t type)
{
	switch (type) {
	case PROC_SUPER_MAGIC:
	case SYSFS_MAGIC:
	case DEVPTS_SUPER_MAGIC:
	case CGROUP_SUPER_MAGIC:
	case CGROUP2_SUPER_MAGIC:
	case DEBUGFS_MAGIC:
	case TRACEFS_MAGIC:
	case SECURITYFS_MAGIC:
	case SELINUX_MAGIC:
	case SMACK_MAGIC:
	case BPF_FS_MAGIC:
	case PSTOREFS_MAGIC:
	case EFIVARFS_MAGIC:
	case BINFMTFS_MAGIC:
	case BINDERFS_SUPER_MAGIC:
	case NSFS_MAGIC:
	case ANON_INODE_FS_MAGIC:
	case USBDEVICE_SUPER_MAGIC:
	case AUTOFS_SUPER_MAGIC:
	case FUSE_SUPER_MAGIC:
	case 0x62656570: /* configfs */
	case 0x19800202: /* mqueue */
	case 0x65735543: /* fusectl */
		return true;
	default:
		return false;
	}
}

static int open_in_root(int root_fd, const char *path, uint64_t flags)
{
	struct open_how how = {.flags = flags | O_PATH | O_CLOEXEC,
			       .resolve = RESOLVE_IN_ROOT | RESOLVE_NO_MAGICLINKS};
	int fd = (int)syscall(SYS_openat2, root_fd, path, &how, sizeof(how));

	return fd < 0 ? -errno : fd;
}

/* Whether st is on the mount at the root's /dev (devtmpfs, or a container's tmpfs). */
static bool under_dev(int root_fd, const struct stat *st)
{
	struct stat dev, root;
	int fd = open_in_root(root_fd, "/dev", O_DIRECTORY);
	bool r;

	if (fd < 0)
		return false;
	r = !fstat(fd, &dev) && !fstat(root_fd, &root) && dev.st_dev != root.st_dev &&
	    st->st_dev == dev.st_dev;
	close(fd);
	return r;
}

/* fd's file, if it is one we read: root_fd (-1: none) for its /dev. */
static int check_fd(int fd, int root_fd, uint64_t max_size, struct stat *st)
{
	struct statfs fs;

	if (fstatfs(fd, &fs) || fstat(fd, st))
		return -errno;
	if (refused_fs((int64_t)fs.f_type) || (root_fd >= 0 && under_dev(root_fd, st)))
		return -EXDEV;
	if (!S_ISREG(st->st_mode))
		return -EINVAL;
	if ((uint64_t)st->st_size > max_size)
		return -EFBIG;
	return 0;
}

int asuser__check(int fd, uint64_t max_size)
{
	struct stat st;

	return check_fd(fd, -1, max_size, &st);
}

/* "/proc/self/fd/N" without stdio (we are a forked child of a threaded process). */
static void fd_path(char *buf, int fd)
{
	char digits[16];
	int n = 0;

	memcpy(buf, "/proc/self/fd/", 14);
	do
		digits[n++] = (char)('0' + fd % 10);
	while ((fd /= 10));
	for (int i = 0; i < n; i++)
		buf[14 + i] = digits[n - 1 - i];
	buf[14 + n] = '\0';
}

/* In the child: path checked as an O_PATH descriptor, then opened for reading. */
static int open_one(int *out, int root_fd, const char *path, uint64_t max_size)
{
	struct stat st, st2;
	char self[32];
	int pfd, fd, err;

	pfd = open_in_root(root_fd, path, 0);
	if (pfd < 0)
		return pfd;
	err = check_fd(pfd, root_fd, max_size, &st);
	if (!err) {
		/* The kernel checks our (the target's) right to read here. */
		fd_path(self, pfd);
		fd = open(self, O_RDONLY | O_NONBLOCK | O_NOCTTY | O_CLOEXEC);
		if (fd < 0) {
			err = -errno;
		} else if (fstat(fd, &st2) || st2.st_dev != st.st_dev || st2.st_ino != st.st_ino) {
			close(fd);
			err = -ESTALE;
		} else {
			*out = fd;
		}
	}
	close(pfd);
	return err;
}

static bool in_groups(gid_t g, const gid_t *list, int n)
{
	for (int i = 0; i < n; i++)
		if (list[i] == g)
			return true;
	return false;
}

/* In the child: the target's file credentials, no capability left (checked). */
static int become(const struct asuser_cred *c)
{
	struct __user_cap_header_struct hdr = {.version = _LINUX_CAPABILITY_VERSION_3};
	struct __user_cap_data_struct caps[_LINUX_CAPABILITY_U32S_3] = {{0}};
	gid_t want[ASUSER_GROUPS_MAX], have[ASUSER_GROUPS_MAX];
	int n;

	for (uint32_t i = 0; i < c->ngroups; i++)
		want[i] = c->groups[i];
	if (syscall(SYS_setgroups, (size_t)c->ngroups, want)) {
		int err = -errno;

		/* Unprivileged (unit tests): fine only if they are ours already. */
		n = (int)syscall(SYS_getgroups, ASUSER_GROUPS_MAX, have);
		if (n != (int)c->ngroups)
			return err;
		for (int i = 0; i < n; i++)
			if (!in_groups(have[i], want, n))
				return err;
	}
	/* setfsuid says nothing on failure: ask again with an invalid id to read it back. */
	syscall(SYS_setfsgid, (gid_t)c->fsgid);
	if ((uint32_t)syscall(SYS_setfsgid, (gid_t)-1) != c->fsgid)
		return -EPERM;
	syscall(SYS_setfsuid, (uid_t)c->fsuid);
	if ((uint32_t)syscall(SYS_setfsuid, (uid_t)-1) != c->fsuid)
		return -EPERM;
	/* An fsuid of 0 would keep CAP_DAC_OVERRIDE: drop every capability, whatever the uid. */
	if (syscall(SYS_capset, &hdr, caps))
		return -errno;
	if (syscall(SYS_capget, &hdr, caps))
		return -errno;
	for (int i = 0; i < _LINUX_CAPABILITY_U32S_3; i++)
		if (caps[i].effective || caps[i].permitted)
			return -EPERM;
	return 0;
}

static void send_result(int sock, int err, int fd)
{
	int32_t e = err;

	fdpass__send(sock, &e, sizeof(e), fd);
}

/* Our other descriptors (BPF maps, the output, pipes whose end others wait for) are not the
 * child's business: it keeps its socket and the root, nothing else past stderr. */
static void keep_only(int a, int b)
{
	unsigned lo = (unsigned)(a < b ? a : b), hi = (unsigned)(a < b ? b : a);

	if (lo > 3)
		syscall(SYS_close_range, 3u, lo - 1, 0u);
	if (hi > lo + 1)
		syscall(SYS_close_range, lo + 1, hi - 1, 0u);
	syscall(SYS_close_range, hi + 1, ~0u, 0u);
}

/* The forked child: only system calls from here on (other threads held locks at the fork). */
static void child(int sock, const struct asuser_cred *cred, int root_fd, const char *const *paths,
		  size_t n, uint64_t max_size)
{
	int err;
	char c;

	prctl(PR_SET_PDEATHSIG, SIGKILL, 0, 0, 0);
	prctl(PR_SET_DUMPABLE, 0, 0, 0, 0);
	keep_only(sock, root_fd);
	err = become(cred);
	for (size_t i = 0; i < n; i++) {
		int fd = -1, e = err ? err : open_one(&fd, root_fd, paths[i], max_size);

		send_result(sock, e, fd);
		if (fd >= 0)
			close(fd);
	}
	/* Until the parent closes its end, so that our pid stays its child's (see the waitid). */
	while (recv(sock, &c, 1, 0) < 0 && errno == EINTR)
		;
	_exit(0);
}

/* One answer: a descriptor, or -errno. */
static int receive(int sock)
{
	int32_t e = 0;
	ssize_t r;
	int fd;

	r = fdpass__recv(sock, &e, sizeof(e), &fd);
	if (r < 0)
		return (int)r;
	if (r != sizeof(e) || e > 0 || (!e && fd < 0))
		e = -EIO; /* the child died, or said nothing we understand */
	if (e && fd >= 0)
		close(fd);
	return e ? e : fd;
}

int asuser__open(int *out, const struct asuser_cred *cred, int root_fd, const char *const *paths,
		 size_t n, uint64_t max_size, int timeout_ms)
{
	int sv[2] = {-1, -1}, pidfd = -1, err = 0;
	size_t i = 0;
	siginfo_t si;
	pid_t pid;

	for (size_t j = 0; j < n; j++)
		out[j] = -ECANCELED;
	if (root_fd < 0) {
		err = -EBADF;
		goto cleanup;
	}
	if (socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sv)) {
		err = -errno;
		goto cleanup;
	}
	pid = fork();
	if (pid < 0) {
		err = -errno;
		goto cleanup;
	}
	if (!pid) {
		close(sv[0]);
		child(sv[1], cred, root_fd, paths, n, max_size);
	}
	close(sv[1]);
	sv[1] = -1;
	/* Others may reap children (the session's waitpid(-1)): wait for this one by pidfd, taken
	 * while it cannot have exited (it waits for our end to close). */
	pidfd = pidfd__open(pid);
	if (pidfd < 0) {
		err = pidfd;
		kill(pid, SIGKILL);
		waitpid(pid, NULL, 0);
		goto cleanup;
	}
	while (i < n) {
		struct pollfd p = {.fd = sv[0], .events = POLLIN};
		int r = poll(&p, 1, timeout_ms);

		if (r < 0 && errno == EINTR)
			continue;
		if (r <= 0) {
			out[i] = r ? -errno : -ETIMEDOUT;
			break;
		}
		out[i] = receive(sv[0]);
		if (out[i] >= 0) {
			/* Checked again here: what we read is what we checked, whoever opened it.
			 */
			int e = asuser__check(out[i], max_size);

			if (e) {
				close(out[i]);
				out[i] = e;
			}
		}
		if (out[i++] == -EIO)
			break;
	}
	if (i < n)
		pidfd__signal(pidfd, SIGKILL);
	close(sv[0]);
	sv[0] = -1;
	while (waitid((idtype_t)P_PIDFD, (id_t)pidfd, &si, WEXITED) < 0 && errno == EINTR)
		;
cleanup:
	if (err)
		for (size_t j = 0; j < n; j++)
			out[j] = err;
	if (pidfd >= 0)
		close(pidfd);
	if (sv[0] >= 0)
		close(sv[0]);
	if (sv[1] >= 0)
		close(sv[1]);
	return err;
}

const char *asuser__strerror(int err)
{
	switch (err) {
	case -EACCES:
	case -EPERM:
		return "not readable by the process that named it (refused)";
	case -EXDEV:
		return "on /proc, /sys, /dev or another kernel or FUSE file system (refused)";
	case -ETIMEDOUT:
		return "opening it took too long (refused; the opener was killed)";
	case -ECANCELED:
		return "not tried: an earlier file's opener was killed";
	default:
		return safe_open__strerror(err);
	}
}
