// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
#include "export/outdir.h"

#include <dirent.h>
#include <errno.h>
#include <stdbool.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

struct outdir {
	int fd;
	char *path;
	char *tmp;
};

/* Everything below dir_fd's entry name, then the entry (never following a symlink: entries
 * are unlinked, directories opened with O_NOFOLLOW). */
static int remove_tree(int dir_fd, const char *name, int depth)
{
	struct dirent *de;
	DIR *dir;
	int fd, err = 0;

	if (!unlinkat(dir_fd, name, 0))
		return 0;
	if (errno != EISDIR && errno != EPERM)
		return errno == ENOENT ? 0 : -errno;
	if (depth > 64)
		return -ELOOP;
	fd = openat(dir_fd, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	dir = fdopendir(fd);
	if (!dir) {
		err = -errno;
		close(fd);
		return err;
	}
	while (!err && (de = readdir(dir)))
		if (strcmp(de->d_name, ".") && strcmp(de->d_name, ".."))
			err = remove_tree(dirfd(dir), de->d_name, depth + 1);
	closedir(dir);
	if (!err && unlinkat(dir_fd, name, AT_REMOVEDIR))
		err = -errno;
	return err;
}

/* Empty, or one of our trace folders (which we may replace). */
static int replaceable(const char *path)
{
	int fd = open(path, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	struct dirent *de;
	struct stat st;
	bool empty = true;
	DIR *dir;
	int err = 0;

	if (fd < 0)
		return -errno;
	if (!fstatat(fd, "trace_metadata.json", &st, AT_SYMLINK_NOFOLLOW) && S_ISREG(st.st_mode)) {
		close(fd);
		return 0;
	}
	dir = fdopendir(fd);
	if (!dir) {
		err = -errno;
		close(fd);
		return err;
	}
	while ((de = readdir(dir)))
		if (strcmp(de->d_name, ".") && strcmp(de->d_name, ".."))
			empty = false;
	closedir(dir);
	return empty ? 0 : -ENOTEMPTY;
}

int outdir__open(struct outdir **out, const char *path)
{
	struct outdir *d = calloc(1, sizeof(*d));
	const char *slash;
	struct stat st;
	int err = 0;
	size_t n;

	if (!d)
		return -ENOMEM;
	d->fd = -1;
	if (!path || !*path || !strcmp(path, "-")) {
		err = -EINVAL;
		goto cleanup;
	}
	if (!lstat(path, &st)) {
		if (S_ISLNK(st.st_mode))
			err = -ELOOP;
		else if (!S_ISDIR(st.st_mode))
			err = -ENOTDIR;
		else
			err = replaceable(path);
	} else if (errno != ENOENT) {
		err = -errno;
	}
	if (err)
		goto cleanup;
	d->path = strdup(path);
	/* Beside it, so the rename stays on one file system. */
	n = strlen(path) + 16;
	d->tmp = malloc(n);
	if (!d->path || !d->tmp) {
		err = -ENOMEM;
		goto cleanup;
	}
	/* "out/" names out: its temporary directory is beside it, not in it. */
	for (size_t len = strlen(d->path); len > 1 && d->path[len - 1] == '/'; len--)
		d->path[len - 1] = '\0';
	slash = strrchr(d->path, '/');
	if (slash)
		snprintf(d->tmp, n, "%.*s.%s.XXXXXX", (int)(slash - d->path + 1), d->path,
			 slash + 1);
	else
		snprintf(d->tmp, n, ".%s.XXXXXX", d->path);
	if (!mkdtemp(d->tmp)) { /* mode 0700 */
		err = -errno;
		goto cleanup;
	}
	d->fd = open(d->tmp, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (d->fd < 0) {
		err = -errno;
		rmdir(d->tmp);
		goto cleanup;
	}
	*out = d;
	return 0;
cleanup:
	free(d->path);
	free(d->tmp);
	free(d);
	return err;
}

int outdir__fd(const struct outdir *d)
{
	return d->fd;
}

static void outdir_free(struct outdir *d)
{
	if (d->fd >= 0)
		close(d->fd);
	free(d->path);
	free(d->tmp);
	free(d);
}

int outdir__commit(struct outdir *d)
{
	int err = 0;

	if (fsync(d->fd))
		err = -errno;
	/* An old trace folder is swapped with ours in one step, then removed under our name. */
	if (!err && renameat2(AT_FDCWD, d->tmp, AT_FDCWD, d->path, RENAME_NOREPLACE)) {
		if (errno != EEXIST)
			err = -errno;
		else if (renameat2(AT_FDCWD, d->tmp, AT_FDCWD, d->path, RENAME_EXCHANGE))
			err = -errno;
		else
			remove_tree(AT_FDCWD, d->tmp, 0); /* the old folder: ours is in place */
		if (err == 0)
			d->tmp[0] = '\0';
	} else if (!err) {
		d->tmp[0] = '\0';
	}
	if (err && d->tmp[0])
		remove_tree(AT_FDCWD, d->tmp, 0);
	outdir_free(d);
	return err;
}

void outdir__abort(struct outdir *d)
{
	if (!d)
		return;
	if (d->tmp[0])
		remove_tree(AT_FDCWD, d->tmp, 0);
	outdir_free(d);
}
