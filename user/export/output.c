// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
#include "export/output.h"

#include <errno.h>
#include <fcntl.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "util/log.h"

struct output {
	FILE *f;
	char *path;
	char *tmp;     /* NULL for stdout and for a stream */
	bool keep_old; /* an existing file at path becomes path.old */
	bool stream;   /* path is a character device or a pipe, written in place */
};

static void output_free(struct output *o)
{
	free(o->path);
	free(o->tmp);
	free(o);
}

/* Split path into its directory ("." when none) and base name; both newly allocated. */
static int split_path(const char *path, char **dir, char **base)
{
	const char *slash = strrchr(path, '/');

	if (!slash) {
		*dir = strdup(".");
		*base = strdup(path);
	} else {
		*dir = slash == path ? strdup("/") : strndup(path, slash - path);
		*base = strdup(slash + 1);
	}
	if (!*dir || !*base) {
		free(*dir);
		free(*base);
		return -ENOMEM;
	}
	return 0;
}

/*
 * What output__open refuses at path itself: a symbolic link, a directory, a block device or a
 * socket.  TARGET_STREAM for a character device or a pipe (-o /dev/null, a FIFO): written in place,
 * as a shell's redirection would — a file renamed over it would replace the node itself (as root,
 * /dev/null for every program on the machine).
 */
#define TARGET_STREAM 1

static int check_target(const char *path)
{
	struct stat st;

	if (lstat(path, &st))
		return errno == ENOENT ? 0 : -errno;
	/* rename() would replace a symlink rather than follow it, but a user who points -o at a
	 * link expects the link's target to change: refuse instead of surprising them. */
	if (S_ISLNK(st.st_mode))
		return -ELOOP;
	if (S_ISDIR(st.st_mode))
		return -EISDIR;
	if (S_ISCHR(st.st_mode) || S_ISFIFO(st.st_mode))
		return TARGET_STREAM;
	return S_ISREG(st.st_mode) ? 0 : -ENOTSUP; /* a disk, a socket */
}

/* Creates <dir>/.<base>.XXXXXX for path, in the same directory so that the final rename cannot
 * cross file systems.  Returns its descriptor (*tmp its name, newly allocated) or -errno. */
static int make_temp(char **tmp, const char *path)
{
	char *dir = NULL, *base = NULL;
	int err;

	*tmp = NULL;
	err = split_path(path, &dir, &base);
	if (err)
		return err;
	if (!*base) {
		err = -EISDIR; /* "dir/" */
		goto cleanup;
	}
	if (asprintf(tmp, "%s/.%s.XXXXXX", dir, base) < 0) {
		*tmp = NULL;
		err = -ENOMEM;
		goto cleanup;
	}
	/*
	 * O_EXCL, mode 0600 less the umask: a profile holds command lines (secrets passed as
	 * arguments), paths and symbols, so like perf.data it is its owner's alone.
	 */
	err = mkostemp(*tmp, O_CLOEXEC);
	if (err < 0) {
		err = -errno;
		free(*tmp);
		*tmp = NULL;
	}
cleanup:
	free(dir);
	free(base);
	return err;
}

int output__check(const char *path)
{
	char *tmp = NULL;
	int fd, err;

	if (!path || !*path)
		return -EINVAL;
	if (!strcmp(path, "-"))
		return 0;
	err = check_target(path);
	if (err)
		return err < 0 ? err : 0;
	fd = make_temp(&tmp, path);
	if (fd < 0)
		return fd;
	close(fd);
	unlink(tmp);
	free(tmp);
	return 0;
}

int output__open(struct output **out, const char *path)
{
	struct output *o = NULL;
	int fd = -1, err;

	if (!path || !*path)
		return -EINVAL;
	o = calloc(1, sizeof(*o));
	if (!o)
		return -ENOMEM;
	o->path = strdup(path);
	if (!o->path) {
		err = -ENOMEM;
		goto cleanup;
	}
	if (!strcmp(path, "-")) {
		o->f = stdout;
		*out = o;
		return 0;
	}
	err = check_target(path);
	if (err < 0)
		goto cleanup;
	o->stream = err == TARGET_STREAM;
	o->keep_old = !o->stream;
	if (o->stream) {
		/* No O_TRUNC, no O_CREAT: the node is there, and a pipe's reader is waited for. */
		fd = open(path, O_WRONLY | O_NOCTTY | O_CLOEXEC);
		if (fd < 0)
			fd = -errno;
	} else {
		fd = make_temp(&o->tmp, path);
	}
	if (fd < 0) {
		err = fd;
		goto cleanup;
	}
	o->f = fdopen(fd, "w");
	if (!o->f) {
		err = -errno;
		goto cleanup;
	}
	fd = -1;
	*out = o;
	err = 0;
	o = NULL;
cleanup:
	if (fd >= 0)
		close(fd);
	if (o) {
		if (o->tmp)
			unlink(o->tmp);
		output_free(o);
	}
	return err;
}

void output__no_backup(struct output *o)
{
	o->keep_old = false;
}

FILE *output__file(struct output *o)
{
	return o->f;
}

const char *output__path(const struct output *o)
{
	return o->path;
}

void output__sync_parent(const char *path)
{
	char *dir, *base;
	int fd;

	if (split_path(path, &dir, &base))
		return;
	fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (fd >= 0) {
		fsync(fd);
		close(fd);
	}
	free(dir);
	free(base);
}

/*
 * The regular file at o->path, about to be replaced, becomes o->path.old: a second name made
 * beside it, then moved over .old, so that the path itself is still replaced by one rename (a
 * reader never finds it missing).  linkat without AT_SYMLINK_FOLLOW and rename never follow a
 * symbolic link: one put at either name is what gets linked or replaced, not its target.
 */
static void keep_previous(const struct output *o)
{
	char *old = NULL, *second = NULL;
	struct stat st;
	int err = 0;

	if (lstat(o->path, &st) || !S_ISREG(st.st_mode))
		return; /* nothing there, or not a file of ours to move */
	if (asprintf(&old, "%s.old", o->path) < 0) {
		old = NULL;
		err = -ENOMEM;
		goto cleanup;
	}
	if (asprintf(&second, "%s.old", o->tmp) < 0) {
		second = NULL;
		err = -ENOMEM;
		goto cleanup;
	}
	if (linkat(AT_FDCWD, o->path, AT_FDCWD, second, 0)) {
		err = -errno;
		goto cleanup;
	}
	if (rename(second, old)) {
		err = -errno;
		unlink(second);
		goto cleanup;
	}
	pr_warn("kept the previous %s as %s\n", o->path, old);
cleanup:
	if (err)
		pr_warn("replacing %s: its previous version could not be kept as %s.old: %s\n",
			o->path, o->path, strerror(-err));
	free(old);
	free(second);
}

int output__commit(struct output *o)
{
	int err = 0;

	if (!o->tmp) {
		if (fflush(o->f))
			err = -errno;
		else if (ferror(o->f))
			err = -EIO;
		if (o->stream && fclose(o->f) && !err)
			err = -errno;
		output_free(o);
		return err;
	}
	if (fflush(o->f))
		err = -errno;
	else if (ferror(o->f))
		err = -EIO;
	else if (fsync(fileno(o->f)))
		err = -errno;
	if (fclose(o->f) && !err)
		err = -errno;
	o->f = NULL;
	if (!err && o->keep_old)
		keep_previous(o);
	if (!err && rename(o->tmp, o->path))
		err = -errno;
	if (err)
		unlink(o->tmp);
	else
		output__sync_parent(o->path);
	output_free(o);
	return err;
}

void output__abort(struct output *o)
{
	if (!o)
		return;
	if ((o->tmp || o->stream) && o->f)
		fclose(o->f);
	if (o->tmp)
		unlink(o->tmp);
	output_free(o);
}
