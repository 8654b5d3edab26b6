// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
#include "export/output.h"

#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

struct output {
	FILE *f;
	char *path;
	char *tmp; /* NULL for stdout */
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

int output__open(struct output **out, const char *path)
{
	struct output *o = NULL;
	char *dir = NULL, *base = NULL;
	struct stat st;
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

	/* rename() would replace a symlink rather than follow it, but a user who points -o at a
	 * link expects the link's target to change: refuse instead of surprising them. */
	if (lstat(path, &st) == 0) {
		if (S_ISLNK(st.st_mode)) {
			err = -ELOOP;
			goto cleanup;
		}
		if (S_ISDIR(st.st_mode)) {
			err = -EISDIR;
			goto cleanup;
		}
	} else if (errno != ENOENT) {
		err = -errno;
		goto cleanup;
	}
	err = split_path(path, &dir, &base);
	if (err)
		goto cleanup;
	if (!*base) {
		err = -EISDIR; /* "dir/" */
		goto cleanup;
	}
	/* Same directory as the target, so the final rename cannot cross file systems. */
	if (asprintf(&o->tmp, "%s/.%s.XXXXXX", dir, base) < 0) {
		o->tmp = NULL;
		err = -ENOMEM;
		goto cleanup;
	}
	/*
	 * O_EXCL, mode 0600 less the umask: a profile holds command lines (secrets passed as
	 * arguments), paths and symbols, so like perf.data it is its owner's alone.
	 */
	fd = mkostemp(o->tmp, O_CLOEXEC);
	if (fd < 0) {
		err = -errno;
		free(o->tmp);
		o->tmp = NULL;
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
	free(dir);
	free(base);
	return err;
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

int output__commit(struct output *o)
{
	int err = 0;

	if (!o->tmp) {
		if (fflush(o->f))
			err = -errno;
		else if (ferror(o->f))
			err = -EIO;
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
	if (o->tmp) {
		if (o->f)
			fclose(o->f);
		unlink(o->tmp);
	}
	output_free(o);
}
