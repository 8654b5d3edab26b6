// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
#include "proc/memlimit.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "prof_common.h"
#include "proc/cgroup.h"
#include "proc/safe_open.h"

/* /proc/PID/cgroup: one line per hierarchy, a few hundred bytes in all. */
#define PROC_CGROUP_MAX	  8192
/* The kernel's file handle type of a kernfs node (a cgroup directory): its 64-bit id. */
#define FILEID_KERNFS	  0xfe
/* A limit file: a decimal number or "max", and its newline. */
#define LIMIT_FILE_MAX	  64
/* Ancestors looked at for a smaller limit (cgroup.c's walks stop at 16 levels too). */
#define ANCESTORS_MAX	  16
/* v1 reports "no limit" as the page counter's maximum rounded to pages: anything this large. */
#define V1_UNLIMITED_FROM (1ULL << 62)

int memlimit__parse_proc(char *out, size_t size, bool *v1, const char *buf, size_t len)
{
	int err = cgroup__parse_proc_v1(out, size, buf, len, "memory");

	*v1 = err != -ENOENT;
	return *v1 ? err : cgroup__parse_proc(out, size, buf, len);
}

int memlimit__parse_value(uint64_t *out, const char *buf)
{
	unsigned long long v;
	char *e;

	if (!strncmp(buf, "max", 3) && (!buf[3] || buf[3] == '\n')) {
		*out = 0;
		return 0;
	}
	if (buf[0] < '0' || buf[0] > '9')
		return -EINVAL;
	errno = 0;
	v = strtoull(buf, &e, 10);
	if (errno || (*e && *e != '\n'))
		return -EINVAL;
	*out = v >= V1_UNLIMITED_FROM ? 0 : (uint64_t)v;
	return 0;
}

/* The limit file of the cgroup at rel below root_fd; 0 when none is set or readable. */
static uint64_t limit_at(int root_fd, const char *rel, const char *file)
{
	char buf[LIMIT_FILE_MAX];
	uint64_t v = 0;
	size_t len;
	int fd;

	if (cgroup__open_rel(&fd, root_fd, rel))
		return 0;
	if (safe_open__read_small(buf, sizeof(buf), &len, fd, file) ||
	    memlimit__parse_value(&v, buf))
		v = 0;
	close(fd);
	return v;
}

int memlimit__read(struct memlimit *out, int proc_fd, int v1_root_fd, int v2_root_fd, uint32_t pid)
{
	char buf[PROC_CGROUP_MAX], name[16], rel[MEMLIMIT_PATH_MAX];
	int dir, root, err;
	size_t len;

	memset(out, 0, sizeof(*out));
	snprintf(name, sizeof(name), "%u", pid);
	dir = openat(proc_fd, name, O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (dir < 0)
		return -errno;
	err = safe_open__read_small(buf, sizeof(buf), &len, dir, "cgroup");
	close(dir);
	if (!err)
		err = memlimit__parse_proc(out->path, sizeof(out->path), &out->v1, buf, len);
	if (err)
		return err;
	root = out->v1 ? v1_root_fd : v2_root_fd;
	if (root < 0)
		return 0;
	/* The cgroup, then each ancestor up to the root: the smallest limit binds. */
	snprintf(rel, sizeof(rel), "%s", out->path);
	for (int depth = 0; depth <= ANCESTORS_MAX; depth++) {
		uint64_t v = limit_at(root, rel, out->v1 ? "memory.limit_in_bytes" : "memory.max");
		char *slash = strrchr(rel, '/');

		if (v && (!out->limit || v < out->limit))
			out->limit = v;
		if (!slash || slash == rel)
			break;
		*slash = 0;
	}
	return 0;
}

/* The host's v1 memory hierarchy and cgroup2 mount, open (not O_PATH: open_by_handle_at refuses
 * those), -1 each when missing. */
static void host_roots(int *v1, int *v2)
{
	char mount[MEMLIMIT_PATH_MAX];
	FILE *mounts;

	*v2 = -1;
	*v1 = open("/sys/fs/cgroup/memory", O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	mounts = fopen("/proc/self/mounts", "re");
	if (mounts && !cgroup__parse_mounts(mount, sizeof(mount), mounts))
		*v2 = open(mount, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (mounts)
		fclose(mounts);
}

int memlimit__read_host(struct memlimit *out, uint32_t pid)
{
	int proc_fd, v1, v2, err;

	proc_fd = open("/proc", O_PATH | O_DIRECTORY | O_CLOEXEC);
	if (proc_fd < 0)
		return -errno;
	host_roots(&v1, &v2);
	err = memlimit__read(out, proc_fd, v1, v2, pid);
	if (v2 >= 0)
		close(v2);
	if (v1 >= 0)
		close(v1);
	close(proc_fd);
	return err;
}

/* What /proc/self/fd/N names, NUL-terminated; 0 or -errno. */
static int fd_name(char *out, size_t size, int fd)
{
	char link[64];
	ssize_t n;

	snprintf(link, sizeof(link), "/proc/self/fd/%d", fd);
	n = readlink(link, out, size - 1);
	if (n < 0)
		return -errno;
	if ((size_t)n >= size - 1)
		return -ENAMETOOLONG;
	out[n] = 0;
	return 0;
}

int memlimit__path_by_id(char *out, size_t size, int root_fd, uint64_t id)
{
	union {
		struct file_handle fh;
		char space[sizeof(struct file_handle) + sizeof(uint64_t)];
	} h;
	char root[PATH_MAX], dir[PATH_MAX];
	size_t rlen;
	int fd, err;

	memset(&h, 0, sizeof(h));
	h.fh.handle_bytes = sizeof(uint64_t);
	h.fh.handle_type = FILEID_KERNFS;
	memcpy(h.fh.f_handle, &id, sizeof(id));
	fd = open_by_handle_at(root_fd, &h.fh, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	err = fd_name(root, sizeof(root), root_fd);
	if (!err)
		err = fd_name(dir, sizeof(dir), fd);
	close(fd);
	if (err)
		return err;
	rlen = strlen(root);
	if (strncmp(dir, root, rlen) || (dir[rlen] && dir[rlen] != '/'))
		return -EXDEV; /* another hierarchy's directory */
	if (snprintf(out, size, "%s", dir[rlen] ? dir + rlen : "/") >= (int)size)
		return -ENAMETOOLONG;
	return 0;
}

int memlimit__join_names(char *out, size_t size, const char *names, size_t stride, unsigned n,
			 bool cut)
{
	size_t len = 0;
	int k;

	if (size < 2)
		return -ENAMETOOLONG;
	out[0] = 0;
	if (cut) {
		if (size <= 4)
			return -ENAMETOOLONG;
		memcpy(out, "...", 4);
		len = 3;
	}
	for (k = (int)n - 1; k >= 0; k--) {
		const char *name = names + (size_t)k * stride;
		size_t l = strnlen(name, stride);

		if (!l || (l == stride && !cut) || memchr(name, '/', l))
			return -EINVAL;
		if (len + 1 + l >= size)
			return -ENAMETOOLONG;
		out[len++] = '/';
		memcpy(out + len, name, l);
		len += l;
		out[len] = 0;
	}
	if (!len)
		memcpy(out, "/", 2);
	return 0;
}

void memlimit__from_kill(struct memlimit *out, const struct prof_oom_event *e)
{
	bool named = e->flags & PROF_OOM_NAMES, cut = e->flags & PROF_OOM_NAMES_CUT;
	unsigned n =
		e->memcg_levels < PROF_OOM_NAME_LEVELS ? e->memcg_levels : PROF_OOM_NAME_LEVELS;
	long page = sysconf(_SC_PAGESIZE);
	int v1, v2, root;

	memset(out, 0, sizeof(*out));
	out->v1 = e->flags & PROF_OOM_MEMCG_V1;
	if (named && !cut &&
	    !memlimit__join_names(out->path, sizeof(out->path), e->memcg_names[0],
				  PROF_OOM_NAME_LEN, n, false))
		goto limit;
	out->path[0] = 0;
	host_roots(&v1, &v2);
	root = out->v1 ? v1 : v2;
	if (root < 0 || memlimit__path_by_id(out->path, sizeof(out->path), root, e->memcg_id))
		out->path[0] = 0;
	if (v2 >= 0)
		close(v2);
	if (v1 >= 0)
		close(v1);
	if (!out->path[0] && named &&
	    memlimit__join_names(out->path, sizeof(out->path), e->memcg_names[0], PROF_OOM_NAME_LEN,
				 n, true))
		out->path[0] = 0;
limit:
	if (page > 0 && e->memcg_max_pages &&
	    e->memcg_max_pages < V1_UNLIMITED_FROM / (uint64_t)page)
		out->limit = e->memcg_max_pages * (uint64_t)page;
}
