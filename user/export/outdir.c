// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
#include "export/outdir.h"
#include "export/output.h"

#include "util/clock.h"
#include "util/log.h"

#include <dirent.h>
#include <errno.h>
#include <stdbool.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

struct outdir {
	int fd;
	char *path;
	char *tmp;
	/* The folder at path when we started, the only one we may replace: held open so that its
	 * inode number cannot go to another file while we run; -1: nothing was there. */
	int old_fd;
	dev_t dev; /* … its device and inode */
	ino_t ino;
};

/* name under dir_fd (flags: O_NOFOLLOW or 0) as a stream of its own; 0 or -errno. */
static int dir_open(DIR **out, int dir_fd, const char *name, int flags)
{
	int fd = openat(dir_fd, name, O_RDONLY | O_DIRECTORY | O_CLOEXEC | flags), err;

	if (fd < 0)
		return -errno;
	*out = fdopendir(fd);
	if (!*out) {
		err = -errno;
		close(fd);
		return err;
	}
	return 0;
}

/* Everything below dir_fd's entry name, then the entry (never following a symlink: entries
 * are unlinked, directories opened with O_NOFOLLOW). */
static int remove_tree(int dir_fd, const char *name, int depth)
{
	struct dirent *de;
	DIR *dir;
	int err = 0;

	if (!unlinkat(dir_fd, name, 0))
		return 0;
	if (errno != EISDIR && errno != EPERM)
		return errno == ENOENT ? 0 : -errno;
	if (depth > 64)
		return -ELOOP;
	err = dir_open(&dir, dir_fd, name, O_NOFOLLOW);
	if (err)
		return err;
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
	d->old_fd = -1;
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
		if (!err) {
			d->old_fd = open(path, O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
			if (d->old_fd < 0 || fstat(d->old_fd, &st))
				err = -errno;
			d->dev = st.st_dev;
			d->ino = st.st_ino;
		}
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
	if (d->old_fd >= 0)
		close(d->old_fd);
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
	if (d->old_fd >= 0)
		close(d->old_fd);
	free(d->path);
	free(d->tmp);
	free(d);
}

/* Every file and folder of the tree under fd, then fd itself, to disk (the tree is ours: 0700,
 * built by us; entries are opened without following links all the same). */
static int sync_tree(int fd, int depth)
{
	struct dirent *de;
	int err = 0;
	DIR *dir;

	if (depth > 64)
		return -ELOOP;
	err = dir_open(&dir, fd, ".", 0);
	if (err)
		return err;
	while (!err && (de = readdir(dir))) {
		struct stat st;
		int cfd;

		if (!strcmp(de->d_name, ".") || !strcmp(de->d_name, ".."))
			continue;
		cfd = openat(dirfd(dir), de->d_name,
			     O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_NOCTTY | O_CLOEXEC);
		if (cfd < 0) {
			if (errno != ELOOP) /* a symbolic link: nothing of its own to sync */
				err = -errno;
			continue;
		}
		if (fstat(cfd, &st))
			err = -errno;
		else if (S_ISDIR(st.st_mode))
			err = sync_tree(cfd, depth + 1);
		else if (S_ISREG(st.st_mode) && fsync(cfd))
			err = -errno;
		close(cfd);
	}
	closedir(dir);
	if (!err && fsync(fd))
		err = -errno;
	return err;
}

/* The folder at from is kept beside path as <path>.N (the first N free); the name into kept. */
static int keep_beside(const char *from, const char *path, char *kept, size_t len)
{
	for (int n = 1; n < 1000; n++) {
		snprintf(kept, len, "%s.%d", path, n);
		if (!renameat2(AT_FDCWD, from, AT_FDCWD, kept, RENAME_NOREPLACE))
			return 0;
		if (errno != EEXIST)
			return -errno;
	}
	return -EEXIST;
}

/*
 * Something else than the folder seen at the start is at path: the folder at from is kept
 * beside it, never deleted, and where is said (ours: the trace; else what we had swapped out).
 */
static void keep_other(struct outdir *d, bool ours)
{
	char kept[PATH_MAX];

	if (keep_beside(d->tmp, d->path, kept, sizeof(kept)))
		snprintf(kept, sizeof(kept), "%s", d->tmp);
	if (ours)
		pr_err("%s was replaced during the run (not deleted): the trace is in %s\n",
		       d->path, kept);
	else
		pr_err("%s was replaced during the run: the trace is in its place, what was there "
		       "is in %s\n",
		       d->path, kept);
	d->tmp[0] = '\0';
}

int outdir__commit(struct outdir *d)
{
	struct stat st;
	int err;

	/* The files, the folders and, after the rename, the parent: the trace survives a crash. */
	err = sync_tree(d->fd, 0);
	if (err)
		goto cleanup;
	if (!renameat2(AT_FDCWD, d->tmp, AT_FDCWD, d->path, RENAME_NOREPLACE))
		goto placed;
	err = -errno;
	if (err != -EEXIST)
		goto cleanup;
	if (d->old_fd < 0) { /* created during the run */
		keep_other(d, true);
		goto cleanup;
	}
	/* The folder seen at the start is swapped with ours in one step, then removed under our
	 * name; anything else found there (replaced during the run) is swapped back. */
	if (renameat2(AT_FDCWD, d->tmp, AT_FDCWD, d->path, RENAME_EXCHANGE)) {
		err = -errno;
		goto cleanup;
	}
	if (!fstatat(AT_FDCWD, d->tmp, &st, AT_SYMLINK_NOFOLLOW) && st.st_dev == d->dev &&
	    st.st_ino == d->ino) {
		remove_tree(AT_FDCWD, d->tmp, 0); /* the old folder: ours is in place */
		err = 0;
		goto placed;
	}
	keep_other(d, !renameat2(AT_FDCWD, d->tmp, AT_FDCWD, d->path, RENAME_EXCHANGE));
	output__sync_parent(d->path);
	goto cleanup;
placed:
	d->tmp[0] = '\0';
	output__sync_parent(d->path); /* failing, it loses nothing already renamed */
cleanup:
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

/* ---- continuous mode's profiles (--output-dir, --retain) ---- */

#define STAMP_LEN	 16 /* YYYYmmddTHHMMSSZ */
#define SERIES_MAX_MODES 8  /* heap, cpu, offcpu, calls */

struct series_mode {
	char *mode;
	char **names; /* this run's profiles still kept, oldest first */
	size_t n, cap;
};

struct outdir_series {
	int dir_fd;
	unsigned retain;
	uint32_t id;
	char start[STAMP_LEN + 1];
	struct series_mode modes[SERIES_MAX_MODES];
	size_t nmodes;
};

static void utc_stamp(char buf[STAMP_LEN + 1], int64_t ns)
{
	time_t t = (time_t)(ns / 1000000000LL);
	struct tm tm;

	/* A year past 9999 does not fit: such a clock names nothing. */
	if (!gmtime_r(&t, &tm) || strftime(buf, STAMP_LEN + 1, "%Y%m%dT%H%M%SZ", &tm) != STAMP_LEN)
		snprintf(buf, STAMP_LEN + 1, "00000000T000000Z");
}

int outdir_series__new(struct outdir_series **out, int dir_fd, unsigned retain,
		       int64_t run_start_ns)
{
	struct outdir_series *s = calloc(1, sizeof(*s));

	if (!s)
		return -ENOMEM;
	s->dir_fd = fcntl(dir_fd, F_DUPFD_CLOEXEC, 0);
	if (s->dir_fd < 0) {
		int err = -errno;

		free(s);
		return err;
	}
	s->retain = retain;
	/* Unique enough between runs sharing a directory; the clock and pid if there is no
	 * entropy yet (early boot). */
	if (getrandom(&s->id, sizeof(s->id), GRND_NONBLOCK) != sizeof(s->id)) {
		s->id = (uint32_t)(clock__mono_ns() % 1000000000) ^ ((uint32_t)getpid() << 12);
	}
	utc_stamp(s->start, run_start_ns);
	*out = s;
	return 0;
}

int outdir_series__name(const struct outdir_series *s, char *buf, size_t len, int64_t start_ns,
			const char *mode)
{
	char stamp[STAMP_LEN + 1];
	int n;

	utc_stamp(stamp, start_ns);
	n = snprintf(buf, len, "%s-%08x.%s.pb.gz", stamp, s->id, mode);
	return n < 0 || (size_t)n >= len ? -ENAMETOOLONG : 0;
}

/*
 * Is name a profile of mode named like ours (<stamp>-<8 hex>.<mode>.pb.gz, or the older
 * <stamp>.<mode>.pb.gz)?  *id: its run id, or -1 for the older names.
 */
static bool series_file(const char *name, const char *mode, int64_t *id)
{
	size_t m = strlen(mode);
	const char *p = name + STAMP_LEN;
	uint32_t v = 0;

	if (strnlen(name, STAMP_LEN + 1) <= STAMP_LEN || name[8] != 'T' || name[15] != 'Z')
		return false;
	for (int i = 0; i < 15; i++)
		if (i != 8 && (name[i] < '0' || name[i] > '9'))
			return false;
	*id = -1;
	if (*p == '-') {
		for (int i = 1; i <= 8; i++) {
			char c = p[i];

			if (c >= '0' && c <= '9')
				v = v << 4 | (uint32_t)(c - '0');
			else if (c >= 'a' && c <= 'f')
				v = v << 4 | (uint32_t)(c - 'a' + 10);
			else
				return false;
		}
		*id = v;
		p += 9;
	}
	return *p == '.' && !strncmp(p + 1, mode, m) && !strcmp(p + 1 + m, ".pb.gz");
}

static int mode_of(struct outdir_series *s, const char *mode, struct series_mode **out)
{
	size_t i;

	for (i = 0; i < s->nmodes; i++)
		if (!strcmp(s->modes[i].mode, mode))
			break;
	if (i == s->nmodes) {
		if (i == SERIES_MAX_MODES)
			return -E2BIG;
		s->modes[i].mode = strdup(mode);
		if (!s->modes[i].mode)
			return -ENOMEM;
		s->nmodes++;
	}
	*out = &s->modes[i];
	return 0;
}

static int cmp_names(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

/*
 * Profiles of earlier runs (named before this run's start, not this run's) beyond `slots`,
 * oldest name first.  d_type is not trusted to be there: DT_UNKNOWN is asked with fstatat.
 */
static int prune_earlier(struct outdir_series *s, const char *mode, size_t slots)
{
	char **names = NULL;
	size_t n = 0, cap = 0;
	struct dirent *de;
	int err = 0;
	DIR *dir;

	/* A description of its own: the directory is read from the start each time. */
	err = dir_open(&dir, s->dir_fd, ".", 0);
	if (err)
		return err;
	while ((de = readdir(dir))) {
		struct stat st;
		int64_t id;

		if (!series_file(de->d_name, mode, &id) || id == (int64_t)s->id ||
		    strncmp(de->d_name, s->start, STAMP_LEN) >= 0)
			continue;
		if (de->d_type == DT_UNKNOWN &&
		    !fstatat(dirfd(dir), de->d_name, &st, AT_SYMLINK_NOFOLLOW))
			de->d_type = S_ISREG(st.st_mode) ? DT_REG : DT_UNKNOWN;
		if (de->d_type != DT_REG)
			continue;
		if (n == cap) {
			char **nn = realloc(names, (cap = cap ? 2 * cap : 32) * sizeof(*nn));

			if (!nn) {
				err = -ENOMEM;
				goto cleanup;
			}
			names = nn;
		}
		names[n] = strdup(de->d_name);
		if (!names[n]) {
			err = -ENOMEM;
			goto cleanup;
		}
		n++;
	}
	if (n > slots) {
		qsort(names, n, sizeof(*names), cmp_names);
		for (size_t i = 0; i < n - slots; i++)
			if (unlinkat(dirfd(dir), names[i], 0) && errno != ENOENT && !err)
				err = -errno;
	}
cleanup:
	for (size_t i = 0; i < n; i++)
		free(names[i]);
	free(names);
	closedir(dir);
	return err;
}

int outdir_series__written(struct outdir_series *s, const char *mode, const char *name)
{
	struct series_mode *m;
	int err, e;

	if (!s->retain)
		return 0;
	err = mode_of(s, mode, &m);
	if (err)
		return err;
	/* The same name again (rewritten in place) is one profile, not two. */
	if (!m->n || strcmp(m->names[m->n - 1], name)) {
		if (m->n == m->cap) {
			size_t ncap = m->cap ? 2 * m->cap : 16;
			char **nn = realloc(m->names, ncap * sizeof(*nn));

			if (!nn)
				return -ENOMEM;
			m->names = nn;
			m->cap = ncap;
		}
		m->names[m->n] = strdup(name);
		if (!m->names[m->n])
			return -ENOMEM;
		m->n++;
	}
	/* Ours in the order written: a name's time may be anything the clock said. */
	while (m->n > s->retain) {
		if (unlinkat(s->dir_fd, m->names[0], 0) && errno != ENOENT && !err)
			err = -errno;
		free(m->names[0]);
		memmove(m->names, m->names + 1, --m->n * sizeof(*m->names));
	}
	e = prune_earlier(s, mode, s->retain - m->n);
	return err ? err : e;
}

void outdir_series__free(struct outdir_series *s)
{
	if (!s)
		return;
	for (size_t i = 0; i < s->nmodes; i++) {
		for (size_t j = 0; j < s->modes[i].n; j++)
			free(s->modes[i].names[j]);
		free(s->modes[i].names);
		free(s->modes[i].mode);
	}
	close(s->dir_fd);
	free(s);
}
