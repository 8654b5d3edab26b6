// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
#include "proc/safe_open.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <linux/openat2.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include "proc/maps.h"

static int check_regular(int fd, uint64_t max_size, struct stat *out)
{
	struct stat st;

	if (fstat(fd, &st))
		return -errno;
	if (!S_ISREG(st.st_mode))
		return -EINVAL;
	if (max_size && (uint64_t)st.st_size > max_size)
		return -EFBIG;
	if (out)
		*out = st;
	return 0;
}

int safe_open__root(int *out, const char *proc_root, uint32_t pid)
{
	char path[PATH_MAX];
	int fd;

	if (snprintf(path, sizeof(path), "%s/%u/root", proc_root, pid) >= (int)sizeof(path))
		return -ENAMETOOLONG;
	fd = open(path, O_PATH | O_DIRECTORY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	*out = fd;
	return 0;
}

int safe_open__at(int *out, int root_fd, const char *path, unsigned flags, uint64_t max_size,
		  struct stat *st)
{
	struct open_how how = {.flags = O_RDONLY | O_NONBLOCK | O_CLOEXEC | O_NOCTTY};
	int fd, err;

	if (flags & SAFE_OPEN_NOFOLLOW)
		how.flags |= O_NOFOLLOW;
	/* A target's /proc inside its root would lead back out to the host: no magic links. */
	if (root_fd >= 0)
		how.resolve |= RESOLVE_IN_ROOT | RESOLVE_NO_MAGICLINKS;
	fd = (int)syscall(SYS_openat2, root_fd >= 0 ? root_fd : AT_FDCWD, path, &how, sizeof(how));
	if (fd < 0)
		return -errno;
	err = check_regular(fd, max_size, st);
	if (err) {
		close(fd);
		return err;
	}
	*out = fd;
	return 0;
}

bool safe_open__matches(const struct stat *st, const struct maps_entry *e)
{
	return major(st->st_dev) == e->dev_major && minor(st->st_dev) == e->dev_minor &&
	       st->st_ino == e->inode;
}

int safe_open__mapped(int *out, const char *proc_root, uint32_t pid, const struct maps_entry *e,
		      struct stat *st)
{
	char path[PATH_MAX];
	struct stat s;
	int fd, err;

	if (snprintf(path, sizeof(path), "%s/%u/map_files/%" PRIx64 "-%" PRIx64, proc_root, pid,
		     e->start, e->end) >= (int)sizeof(path))
		return -ENAMETOOLONG;
	/* The one magic link we follow: the kernel resolves it to the mapping's own file. */
	fd = open(path, O_RDONLY | O_NONBLOCK | O_CLOEXEC | O_NOCTTY);
	if (fd < 0)
		return -errno;
	err = check_regular(fd, SAFE_OPEN_ELF_MAX, &s);
	if (!err && !safe_open__matches(&s, e))
		err = -ESTALE; /* unmapped and replaced since the maps line was read */
	if (err) {
		close(fd);
		return err;
	}
	if (st)
		*st = s;
	*out = fd;
	return 0;
}

int safe_open__mapping(int *out, const char *proc_root, uint32_t pid, const struct maps_entry *e,
		       int root_fd)
{
	struct stat st;
	int err, first;

	first = err = safe_open__mapped(out, proc_root, pid, e, NULL);
	if (!err)
		return 0;
	if (root_fd >= 0) {
		err = safe_open__at(out, root_fd, e->path, 0, SAFE_OPEN_ELF_MAX, &st);
		if (!err && (safe_open__matches(&st, e) || !e->deleted))
			return 0;
	} else {
		err = safe_open__at(out, -1, e->path, 0, SAFE_OPEN_ELF_MAX, &st);
		if (!err && safe_open__matches(&st, e))
			return 0;
	}
	if (!err) {
		close(*out);
		err = -ESTALE;
	}
	return safe_open__refused(first) ? first : err;
}

bool safe_open__refused(int err)
{
	return err == -ELOOP || err == -EINVAL || err == -EFBIG || err == -EPERM;
}

int safe_open__read_all(char **out, size_t *len, int fd, size_t max)
{
	size_t n = 0, cap;
	struct stat st;
	char *buf;
	int err;

	err = check_regular(fd, max, &st);
	if (err)
		return err;
	/* Sized from fstat, but the file may grow meanwhile: never past max. */
	cap = (size_t)st.st_size < max ? (size_t)st.st_size + 1 : max + 1;
	buf = malloc(cap + 1);
	if (!buf)
		return -ENOMEM;
	for (;;) {
		ssize_t r = pread(fd, buf + n, cap - n, (off_t)n);

		if (r < 0 && errno == EINTR)
			continue;
		if (r < 0) {
			err = -errno;
			goto fail;
		}
		if (!r)
			break;
		n += (size_t)r;
		if (n > max) {
			err = -EFBIG;
			goto fail;
		}
		if (n == cap) {
			size_t ncap = cap * 2 > max + 1 ? max + 1 : cap * 2;
			char *nb = realloc(buf, ncap + 1);

			if (!nb) {
				err = -ENOMEM;
				goto fail;
			}
			buf = nb;
			cap = ncap;
		}
	}
	buf[n] = '\0';
	*out = buf;
	*len = n;
	return 0;
fail:
	free(buf);
	return err;
}

int safe_open__create(int *out, int dir_fd, const char *name)
{
	int fd = openat(dir_fd, name, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);

	if (fd < 0)
		return -errno;
	*out = fd;
	return 0;
}

int safe_open__fcreate(FILE **out, int dir_fd, const char *name)
{
	FILE *f;
	int fd = -1, err;

	err = safe_open__create(&fd, dir_fd, name);
	if (err)
		return err;
	f = fdopen(fd, "w");
	if (!f) {
		err = -errno;
		close(fd);
		return err;
	}
	*out = f;
	return 0;
}

void safe_open__fd_path(char *buf, size_t size, int fd)
{
	snprintf(buf, size, "/proc/self/fd/%d", fd);
}

const char *safe_open__strerror(int err)
{
	switch (err) {
	case -ELOOP:
		return "a symbolic link where a file was expected (refused)";
	case -EINVAL:
		return "not a regular file (refused)";
	case -EFBIG:
		return "too large (refused)";
	case -ESTALE:
		return "replaced since it was mapped (refused)";
	case -EPERM:
		return "owned by another user (refused)";
	default:
		return strerror(-err);
	}
}

/* Read at most max bytes of a file below dir_fd into buf (NUL-terminated); -EFBIG if longer. */
int safe_open__read_small(char *buf, size_t max, size_t *len, int dir_fd, const char *name)
{
	size_t n = 0;
	ssize_t r;
	int fd, err = 0;

	fd = openat(dir_fd, name, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	while (n < max) {
		r = read(fd, buf + n, max - n);
		if (r < 0 && errno == EINTR)
			continue;
		if (r < 0) {
			err = -errno;
			goto cleanup;
		}
		if (!r)
			break;
		n += (size_t)r;
	}
	if (n == max) {
		err = -EFBIG;
		goto cleanup;
	}
	buf[n] = 0;
	*len = n;
cleanup:
	close(fd);
	return err;
}
