// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
#include "proc/cgroup.h"

#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <linux/openat2.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/vfs.h>
#include <unistd.h>

#include "proc/safe_open.h"
#include "util/log.h"

#include "proc/pidns.h"

/* include/linux/exportfs.h: the handle type of kernfs (cgroup) directories. */
#define FILEID_KERNFS 0xfe

#ifndef CGROUP2_SUPER_MAGIC
#define CGROUP2_SUPER_MAGIC 0x63677270
#endif

/* Counted only when the caller keeps stats. */
#define STAT_INC(st, field)            \
	do {                           \
		if (st)                \
			(st)->field++; \
	} while (0)

/* /proc/PID/cgroup: one line per hierarchy (a dozen on a hybrid host), each path ≤ PATH_MAX. */
#define PROC_CGROUP_MAX (64 * 1024)
/* A mounts line longer than this (a mount point of thousands of escaped bytes) is skipped. */
#define MOUNTS_LINE_MAX 8192

/* ---- /proc/self/mounts ---------------------------------------------------------------- */

/* Decode the kernel's octal escapes of a mounts field in place (\ooo; anything else kept). */
static void unescape_octal(char *s)
{
	char *w = s;

	for (char *r = s; *r;) {
		if (r[0] == '\\' && r[1] >= '0' && r[1] <= '3' && r[2] >= '0' && r[2] <= '7' &&
		    r[3] >= '0' && r[3] <= '7') {
			*w++ = (char)((r[1] - '0') << 6 | (r[2] - '0') << 3 | (r[3] - '0'));
			r += 4;
		} else {
			*w++ = *r++;
		}
	}
	*w = 0;
}

/* The next space-separated field of a mounts line (fields never hold a raw space). */
static char *next_field(char **cursor)
{
	char *s = *cursor, *e;

	while (*s == ' ' || *s == '\t')
		s++;
	if (!*s)
		return NULL;
	e = s + strcspn(s, " \t");
	if (*e)
		*e++ = 0;
	*cursor = e;
	return s;
}

int cgroup__parse_mounts(char *out, size_t size, FILE *mounts)
{
	char line[MOUNTS_LINE_MAX];
	bool skipping = false;

	while (fgets(line, sizeof(line), mounts)) {
		size_t n = strlen(line);
		bool whole = n && line[n - 1] == '\n';
		char *cur = line, *dir, *type;

		/* The tail of a line too long for the buffer: not a line start. */
		if (skipping) {
			skipping = !whole;
			continue;
		}
		if (!whole && !feof(mounts)) {
			skipping = true;
			continue;
		}
		if (whole)
			line[n - 1] = 0;
		if (!next_field(&cur) || !(dir = next_field(&cur)) || !(type = next_field(&cur)))
			continue;
		if (strcmp(type, "cgroup2") != 0)
			continue;
		unescape_octal(dir);
		if (dir[0] != '/')
			continue;
		if (strlen(dir) >= size)
			return -ENAMETOOLONG;
		memcpy(out, dir, strlen(dir) + 1);
		return 0;
	}
	return -ENOENT;
}

/* ---- /proc/PID/cgroup ------------------------------------------------------------------ */

/* Does the comma-separated controller list [s, e) name controller? */
static bool names_controller(const char *s, const char *e, const char *controller)
{
	size_t want = strlen(controller);

	while (s < e) {
		const char *c = memchr(s, ',', (size_t)(e - s));
		size_t n = (size_t)((c ? c : e) - s);

		if (n == want && !memcmp(s, controller, n))
			return true;
		s = c ? c + 1 : e;
	}
	return false;
}

/* The path of the one line "N:controllers:path" naming controller (NULL: v2's "0::path"). */
static int proc_path(char *out, size_t size, const char *buf, size_t len, const char *controller)
{
	const char *found = NULL, *fend = NULL, *end = buf + len;
	size_t n;

	for (const char *l = buf; l < end;) {
		const char *nl = memchr(l, '\n', (size_t)(end - l));
		const char *le = nl ? nl : end;
		const char *c1 = memchr(l, ':', (size_t)(le - l));
		const char *c2 = c1 ? memchr(c1 + 1, ':', (size_t)(le - c1 - 1)) : NULL;
		bool match = c2 && (controller ? names_controller(c1 + 1, c2, controller)
					       : c1 == l + 1 && l[0] == '0' && c2 == c1 + 1);

		l = nl ? nl + 1 : end;
		if (!match)
			continue;
		/* One line per hierarchy: a second came from a cgroup name holding a newline. */
		if (found)
			return -EINVAL;
		found = c2 + 1;
		fend = le;
	}
	if (!found)
		return -ENOENT;
	n = (size_t)(fend - found);
	/* The kernel marks the cgroup of a process that outlived it. */
	if (n >= 10 && memcmp(found + n - 10, " (deleted)", 10) == 0)
		n -= 10;
	if (!n || found[0] != '/' || memchr(found, 0, n))
		return -EINVAL;
	if (n >= size)
		return -ENAMETOOLONG;
	memcpy(out, found, n);
	out[n] = 0;
	return 0;
}

int cgroup__parse_proc(char *out, size_t size, const char *buf, size_t len)
{
	return proc_path(out, size, buf, len, NULL);
}

int cgroup__parse_proc_v1(char *out, size_t size, const char *buf, size_t len,
			  const char *controller)
{
	return proc_path(out, size, buf, len, controller);
}

int cgroup__read_pid(char *out, size_t size, int proc_fd, uint32_t pid)
{
	char name[32], *buf;
	size_t len = 0;
	int err;

	buf = malloc(PROC_CGROUP_MAX + 1);
	if (!buf)
		return -ENOMEM;
	snprintf(name, sizeof(name), "%u/cgroup", pid);
	err = safe_open__read_small(buf, PROC_CGROUP_MAX + 1, &len, proc_fd, name);
	if (!err)
		err = cgroup__parse_proc(out, size, buf, len);
	free(buf);
	return err;
}

int cgroup__labels(struct cgroup_labels *out, int proc_fd, uint32_t pid)
{
	int err;

	memset(out, 0, sizeof(*out));
	err = cgroup__read_pid(out->cgroup, sizeof(out->cgroup), proc_fd, pid);
	if (err == -ENOENT || err == -ESRCH) {
		/* No such process, or a v1-only host (the file is there, without a "0::" line). */
		char name[32];

		snprintf(name, sizeof(name), "%u", pid);
		if (faccessat(proc_fd, name, F_OK, 0))
			return -errno;
	}
	if (err)
		out->cgroup[0] = 0;
	else if (cgroup__container_id(out->container_id, out->cgroup))
		out->container_id[0] = 0;
	if (pidns__read_nspid(&out->ns_pid, proc_fd, pid))
		out->ns_pid = 0;
	return 0;
}

/* ---- container ids --------------------------------------------------------------------- */

static bool is_hex64(const char *s, size_t n)
{
	if (n != 64)
		return false;
	for (size_t i = 0; i < n; i++)
		if (!((s[i] >= '0' && s[i] <= '9') || (s[i] >= 'a' && s[i] <= 'f')))
			return false;
	return true;
}

/* An lxc or buildkit name we are willing to put in a label. */
static bool is_name(const char *s, size_t n)
{
	if (!n || n >= CGROUP_ID_SIZE || s[0] == '.')
		return false;
	for (size_t i = 0; i < n; i++)
		if (!isalnum((unsigned char)s[i]) && s[i] != '.' && s[i] != '_' && s[i] != '-')
			return false;
	return true;
}

static bool starts(const char *s, size_t n, const char *prefix)
{
	size_t p = strlen(prefix);

	return n >= p && memcmp(s, prefix, p) == 0;
}

static bool equals(const char *s, size_t n, const char *word)
{
	return n == strlen(word) && memcmp(s, word, n) == 0;
}

static void set_id(char out[CGROUP_ID_SIZE], const char *s, size_t n)
{
	memcpy(out, s, n);
	out[n] = 0;
}

/*
 * Whether one path component (with its parent component, "" at the top) names a container.
 * Runtime prefixes, each followed by the 64-hex id and, with systemd's cgroup driver, ".scope":
 * the monitor processes (libpod-conmon-, crio-conmon-) never match, their next part not hex.
 */
static bool match_component(char out[CGROUP_ID_SIZE], const char *parent, size_t plen,
			    const char *c, size_t n)
{
	static const char *const prefixes[] = {"docker-", "cri-containerd-", "crio-", "libpod-"};

	if (n > 6 && memcmp(c + n - 6, ".scope", 6) == 0)
		n -= 6;
	for (size_t i = 0; i < sizeof(prefixes) / sizeof(prefixes[0]); i++) {
		size_t p = strlen(prefixes[i]);

		if (starts(c, n, prefixes[i]) && is_hex64(c + p, n - p)) {
			set_id(out, c + p, 64);
			return true;
		}
	}
	/* Docker's and Kubernetes' cgroupfs drivers, containerd namespaces, ECS: the bare id. */
	if (is_hex64(c, n)) {
		set_id(out, c, n);
		return true;
	}
	if (starts(c, n, "lxc.payload.") && is_name(c + 12, n - 12)) {
		set_id(out, c + 12, n - 12);
		return true;
	}
	if ((equals(parent, plen, "lxc") || equals(parent, plen, "lxc.payload") ||
	     equals(parent, plen, "buildkit")) &&
	    is_name(c, n)) {
		set_id(out, c, n);
		return true;
	}
	return false;
}

int cgroup__container_id(char out[CGROUP_ID_SIZE], const char *path)
{
	const char *end = path + strlen(path);

	/* From the innermost component outwards. */
	while (end > path) {
		const char *c = end, *p, *pe;

		while (c > path && c[-1] != '/')
			c--;
		pe = c > path ? c - 1 : path;
		p = pe;
		while (p > path && p[-1] != '/')
			p--;
		if (end > c && match_component(out, p, (size_t)(pe - p), c, (size_t)(end - c)))
			return 0;
		end = c > path ? c - 1 : path;
	}
	return -ENOENT;
}

/* ---- opening and identifying cgroup directories ----------------------------------------- */

int cgroup__open_path(int *out, char *rel, size_t rel_size, const char *mount, const char *path)
{
	char *real_path = NULL, *real_mount = NULL;
	const char *tail;
	struct statfs sfs;
	size_t mlen;
	int fd = -1, err;

	real_path = realpath(path, NULL);
	if (!real_path) {
		err = -errno;
		goto cleanup;
	}
	real_mount = realpath(mount, NULL);
	if (!real_mount) {
		err = -errno;
		goto cleanup;
	}
	mlen = strlen(real_mount);
	if (strcmp(real_mount, "/") == 0)
		mlen = 0;
	if (strncmp(real_path, real_mount, mlen) != 0 ||
	    (real_path[mlen] != '/' && real_path[mlen] != 0)) {
		err = -EXDEV;
		goto cleanup;
	}
	tail = real_path[mlen] ? real_path + mlen : "/";
	if (strlen(tail) >= rel_size) {
		err = -ENAMETOOLONG;
		goto cleanup;
	}
	fd = open(real_path, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (fd < 0) {
		err = -errno;
		goto cleanup;
	}
	if (fstatfs(fd, &sfs)) {
		err = -errno;
		goto cleanup;
	}
	if (sfs.f_type != CGROUP2_SUPER_MAGIC) {
		err = -EXDEV;
		goto cleanup;
	}
	memcpy(rel, tail, strlen(tail) + 1);
	*out = fd;
	fd = -1;
	err = 0;
cleanup:
	if (fd >= 0)
		close(fd);
	free(real_path);
	free(real_mount);
	return err;
}

int cgroup__open_rel(int *out, int root_fd, const char *rel)
{
	struct open_how how = {
		.flags = O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC,
		.resolve = RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS | RESOLVE_NO_XDEV,
	};
	const char *p = rel;
	int fd;

	while (*p == '/')
		p++;
	fd = (int)syscall(SYS_openat2, root_fd, *p ? p : ".", &how, sizeof(how));
	if (fd < 0)
		return -errno;
	*out = fd;
	return 0;
}

int cgroup__id(uint64_t *out, int dir_fd)
{
	/* A kernfs handle is the node id: 8 bytes (FILEID_KERNFS). */
	union {
		struct file_handle fh;
		char space[sizeof(struct file_handle) + 16];
	} h;
	int mount_id;

	memset(&h, 0, sizeof(h));
	h.fh.handle_bytes = 16;
	if (name_to_handle_at(dir_fd, "", &h.fh, &mount_id, AT_EMPTY_PATH))
		return errno == EOVERFLOW ? -EOPNOTSUPP : -errno;
	if (h.fh.handle_type != FILEID_KERNFS || h.fh.handle_bytes != sizeof(uint64_t))
		return -EOPNOTSUPP;
	memcpy(out, h.fh.f_handle, sizeof(uint64_t));
	return 0;
}

int cgroup__level(uint32_t *out, const char *rel)
{
	uint32_t level = 0;

	if (rel[0] != '/')
		return -EINVAL;
	for (const char *s = rel; *s;) {
		while (*s == '/')
			s++;
		if (!*s)
			break;
		level++;
		s += strcspn(s, "/");
	}
	*out = level;
	return 0;
}

/* ---- walking the tree -------------------------------------------------------------------- */

struct walk;
/* Called for each directory below the start (not the start itself): its fd, its name, its
 * parent's name and its path relative to the start.  Non-zero stops the walk. */
typedef int (*walk_fn)(struct walk *w, int dir_fd, const char *parent, const char *name);

struct walk {
	walk_fn fn;
	struct cgroup_stats *st;
	uint32_t dirs;
	char path[CGROUP_PATH_MAX];
	size_t path_len;
	bool cut; /* stopped at CGROUP_WALK_DIRS */
	void *ctx;
};

static int walk_dir(struct walk *w, int dir_fd, const char *dir_name, uint32_t depth)
{
	struct dirent *de;
	DIR *d;
	int fd, err = 0;

	/* A new open file description: a dup would share (and move) the caller's offset. */
	fd = openat(dir_fd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	d = fdopendir(fd);
	if (!d) {
		err = -errno;
		close(fd);
		return err;
	}
	while (!err && (errno = 0, de = readdir(d))) {
		size_t saved = w->path_len, n = strlen(de->d_name);
		int child;

		if (de->d_type != DT_DIR && de->d_type != DT_UNKNOWN)
			continue;
		if (strcmp(de->d_name, ".") == 0 || strcmp(de->d_name, "..") == 0)
			continue;
		if (depth >= CGROUP_WALK_DEPTH) {
			STAT_INC(w->st, walk_depth_cut);
			continue;
		}
		if (w->dirs >= CGROUP_WALK_DIRS) {
			/* Stop the whole walk: w->cut tells a callback's value from this. */
			STAT_INC(w->st, walk_dirs_cut);
			w->cut = true;
			err = 1;
			break;
		}
		child = openat(dirfd(d), de->d_name,
			       O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
		if (child < 0) {
			/* A file of unknown type, or a directory removed since readdir. */
			if (errno != ENOTDIR)
				STAT_INC(w->st, walk_open_failed);
			continue;
		}
		w->dirs++;
		if (saved + 1 + n >= sizeof(w->path)) {
			/* Unreachable with 16 levels of 255-byte names, but never overflow. */
			STAT_INC(w->st, walk_depth_cut);
			close(child);
			continue;
		}
		w->path[saved] = '/';
		memcpy(w->path + saved + 1, de->d_name, n + 1);
		w->path_len = saved + 1 + n;
		err = w->fn(w, child, dir_name, de->d_name);
		if (!err)
			err = walk_dir(w, child, de->d_name, depth + 1);
		w->path_len = saved;
		w->path[saved] = 0;
		close(child);
	}
	if (!err && errno)
		err = -errno;
	closedir(d);
	return err;
}

/* Walk below dir_fd; 0, a callback's value or -errno; w->cut when it stopped at the cap. */
static int walk(struct walk *w, int dir_fd)
{
	int err;

	w->path[0] = 0;
	w->path_len = 0;
	w->dirs = 0;
	w->cut = false;
	err = walk_dir(w, dir_fd, "", 0);
	return w->cut ? 0 : err;
}

/* ---- --container ----------------------------------------------------------------------- */

struct find_ctx {
	const char *want;
	size_t want_len;
	bool prefix; /* hex prefix match; otherwise the whole id */
	struct cgroup_container *out, *other;
	unsigned found;
};

static int find_one(struct walk *w, int dir_fd, const char *parent, const char *name)
{
	struct find_ctx *f = w->ctx;
	struct cgroup_container *dst;
	char id[CGROUP_ID_SIZE];

	if (!match_component(id, parent, strlen(parent), name, strlen(name)))
		return 0;
	if (f->prefix ? strncmp(id, f->want, f->want_len) != 0 : strcmp(id, f->want) != 0)
		return 0;
	dst = f->found == 0 ? f->out : f->found == 1 ? f->other : NULL;
	f->found++;
	if (dst) {
		snprintf(dst->id, sizeof(dst->id), "%s", id);
		snprintf(dst->path, sizeof(dst->path), "%s", w->path);
	}
	return 0;
}

int cgroup__find_container(struct cgroup_container *out, struct cgroup_container *other,
			   int root_fd, const char *want, struct cgroup_stats *st)
{
	struct cgroup_container spare = {0};
	struct find_ctx f = {.want = want, .out = out, .other = other ? other : &spare};
	struct walk *w;
	bool hex = true;
	int err;

	f.want_len = strlen(want);
	for (size_t i = 0; i < f.want_len; i++)
		hex = hex &&
		      ((want[i] >= '0' && want[i] <= '9') || (want[i] >= 'a' && want[i] <= 'f'));
	f.prefix = hex && f.want_len >= 4 && f.want_len <= 64;
	if (!f.prefix && !is_name(want, f.want_len))
		return -EINVAL;
	w = calloc(1, sizeof(*w));
	if (!w)
		return -ENOMEM;
	w->fn = find_one;
	w->st = st;
	w->ctx = &f;
	err = walk(w, root_fd);
	if (!err && w->cut && f.found < 2)
		err = -E2BIG;
	free(w);
	if (err)
		return err;
	if (f.found > 1)
		return -EEXIST;
	return f.found ? 0 : -ENOENT;
}

/* ---- pids of a subtree ------------------------------------------------------------------ */

int cgroup__parse_procs(FILE *procs, cgroup_pid_fn fn, void *ctx, struct cgroup_stats *st)
{
	char line[32];
	uint32_t lines = 0;
	bool skipping = false;
	int err;

	while (fgets(line, sizeof(line), procs)) {
		size_t n = strlen(line);
		bool whole = n && line[n - 1] == '\n';
		unsigned long v;
		char *end;

		if (skipping) {
			skipping = !whole;
			continue;
		}
		if (++lines > CGROUP_PROCS_MAX) {
			STAT_INC(st, procs_lines_skipped);
			skipping = !whole;
			continue;
		}
		if (whole)
			line[--n] = 0;
		else if (!feof(procs))
			skipping = true;
		errno = 0;
		v = strtoul(line, &end, 10);
		if (skipping || !n || !isdigit((unsigned char)line[0]) || *end || errno || !v ||
		    v > UINT32_MAX) {
			STAT_INC(st, procs_lines_skipped);
			continue;
		}
		err = fn(ctx, (uint32_t)v);
		if (err)
			return err;
	}
	return ferror(procs) ? -EIO : 0;
}

struct pids_ctx {
	cgroup_pid_fn fn;
	void *ctx;
};

static int procs_of(int dir_fd, struct pids_ctx *p, struct cgroup_stats *st)
{
	FILE *f;
	int fd, err;

	fd = openat(dir_fd, "cgroup.procs", O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
	if (fd < 0) {
		/* The directory was removed under us: its processes are gone too. */
		STAT_INC(st, walk_open_failed);
		return 0;
	}
	f = fdopen(fd, "r");
	if (!f) {
		err = -errno;
		close(fd);
		return err;
	}
	err = cgroup__parse_procs(f, p->fn, p->ctx, st);
	fclose(f);
	return err;
}

static int pids_one(struct walk *w, int dir_fd, const char *parent, const char *name)
{
	return procs_of(dir_fd, w->ctx, w->st);
}

int cgroup__for_each_pid(int dir_fd, cgroup_pid_fn fn, void *ctx, struct cgroup_stats *st)
{
	struct pids_ctx p = {fn, ctx};
	struct walk *w;
	int err;

	err = procs_of(dir_fd, &p, st);
	if (err)
		return err;
	w = calloc(1, sizeof(*w));
	if (!w)
		return -ENOMEM;
	w->fn = pids_one;
	w->st = st;
	w->ctx = &p;
	/* Cut short (counted), the pids found so far are all we give. */
	err = walk(w, dir_fd);
	free(w);
	return err;
}

int cgroup__open_scope(int *out, const char *cgroup, const char *container)
{
	char mount[PATH_MAX], rel[CGROUP_PATH_MAX];
	struct cgroup_container *found = NULL;
	int err, root_fd = -1, status = 2;
	FILE *f;

	f = fopen("/proc/self/mounts", "re");
	err = f ? cgroup__parse_mounts(mount, sizeof(mount), f) : -errno;
	if (f)
		fclose(f);
	if (err) {
		pr_err("no cgroup v2 file system mounted (containers need one): %s\n",
		       strerror(-err));
		return 2;
	}
	if (cgroup) {
		err = cgroup__open_path(out, rel, sizeof(rel), mount, cgroup);
		if (err == -EXDEV)
			pr_err("%s is not a cgroup v2 directory (the cgroup2 mount is %s)\n",
			       cgroup, mount);
		else if (err)
			pr_err("cannot open cgroup %s: %s\n", cgroup, strerror(-err));
		return err ? 2 : 0;
	}
	/* Two of them, for an ambiguous prefix's message; a few KiB each. */
	found = calloc(2, sizeof(*found));
	root_fd = open(mount, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (!found || root_fd < 0) {
		pr_err("cannot read the cgroup tree at %s: %s\n", mount, strerror(errno));
		status = 1;
		goto cleanup;
	}
	err = cgroup__find_container(&found[0], &found[1], root_fd, container, NULL);
	if (err == -EEXIST)
		pr_err("container id %s is ambiguous: %s and %s (and maybe more): give more "
		       "digits\n",
		       container, found[0].id, found[1].id);
	else if (err == -ENOENT)
		pr_err("no container %s: no cgroup names it under %s\n", container, mount);
	else if (err == -EINVAL)
		pr_err("invalid container id '%s' (hex, at least 4 digits)\n", container);
	else if (err)
		pr_err("looking for container %s failed: %s\n", container, strerror(-err));
	if (err)
		goto cleanup;
	err = cgroup__open_rel(out, root_fd, found[0].path);
	if (err)
		pr_err("cannot open the cgroup of container %s (%s): %s\n", container,
		       found[0].path, strerror(-err));
	else
		pr_info("container %s: cgroup %s\n", found[0].id, found[0].path);
	status = err ? 2 : 0;
cleanup:
	if (root_fd >= 0)
		close(root_fd);
	free(found);
	return status;
}
