// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "proc/maps.h"
#include "proc/preload.h"
#include "proc/safe_open.h"

/* ld.so splits LD_PRELOAD on ':' and on white space: such a path would load something else. */
static bool preload_safe(const char *path)
{
	if (path[0] != '/')
		return false;
	for (const char *p = path; *p; p++)
		if (*p == ':' || *p == ' ' || *p == '\t' || *p == '\n')
			return false;
	return true;
}

static int candidate(char *out, size_t len, const char *dir, const char *rel)
{
	char path[PATH_MAX], real[PATH_MAX];
	struct stat st;
	int n = snprintf(path, sizeof(path), "%s/%s" PRELOAD_LIB, dir, rel);

	if (n < 0 || (size_t)n >= sizeof(path))
		return -ENAMETOOLONG;
	/* The path CMD's ld.so will open: without "..", links resolved (ours, root's). */
	if (!realpath(path, real))
		return -errno;
	if (strlen(real) >= len)
		return -ENAMETOOLONG;
	strcpy(out, real);
	if (!preload_safe(out))
		return -EINVAL;
	if (stat(out, &st))
		return -errno;
	if (!S_ISREG(st.st_mode))
		return -EINVAL;
	/* Loaded into every process of CMD's tree: nobody but its owner may have changed it. */
	if ((st.st_mode & (S_IWGRP | S_IWOTH)) || (st.st_uid != 0 && st.st_uid != geteuid()))
		return -EPERM;
	return 0;
}

int preload__find(char *out, size_t len, const char *exe)
{
	static const char *const rel[] = {"build/", "../lib/bpftrace-prof/"};
	char dir[4096];
	const char *slash = strrchr(exe, '/');
	int err = -ENOENT;

	if (!slash || (size_t)(slash - exe) >= sizeof(dir))
		return -ENOENT;
	memcpy(dir, exe, (size_t)(slash - exe));
	dir[slash - exe] = '\0';
	for (size_t i = 0; i < sizeof(rel) / sizeof(rel[0]); i++) {
		int e = candidate(out, len, dir, rel[i]);

		if (!e)
			return 0;
		if (e != -ENOENT)
			err = e;
	}
	return err;
}

int preload__env(char *preload, size_t plen, char *bytes, size_t blen, const char *lib,
		 const char *old_preload, uint64_t sample_bytes)
{
	int n;

	if (old_preload && *old_preload)
		n = snprintf(preload, plen, "LD_PRELOAD=%s:%s", lib, old_preload);
	else
		n = snprintf(preload, plen, "LD_PRELOAD=%s", lib);
	if (n < 0 || (size_t)n >= plen)
		return -ENAMETOOLONG;
	n = snprintf(bytes, blen, "BPFTRACE_PROF_SAMPLE_BYTES=%" PRIu64, sample_bytes);
	return n < 0 || (size_t)n >= blen ? -ENAMETOOLONG : 0;
}

int preload__prepare(struct preload_env *pe, uint64_t sample_bytes)
{
	char exe[4096];
	ssize_t n = readlink("/proc/self/exe", exe, sizeof(exe) - 1);
	int err;

	pe->set[0] = NULL;
	snprintf(pe->lib, sizeof(pe->lib), "/proc/self/exe");
	if (n <= 0)
		return n < 0 ? -errno : -ENOENT;
	exe[n] = '\0';
	snprintf(pe->lib, sizeof(pe->lib), "%s", exe);
	err = preload__find(pe->lib, sizeof(pe->lib), exe);
	if (err)
		return err;
	err = preload__env(pe->preload, sizeof(pe->preload), pe->bytes, sizeof(pe->bytes), pe->lib,
			   getenv("LD_PRELOAD"), sample_bytes);
	if (err)
		return err;
	pe->set[0] = pe->preload;
	pe->set[1] = pe->bytes;
	pe->set[2] = NULL;
	return 0;
}

int preload__each(const char *env, size_t len, int (*fn)(const char *name, size_t nlen, void *arg),
		  void *arg)
{
	static const char key[] = "LD_PRELOAD=";
	const char *value = NULL, *end = env + len, *p, *q;
	unsigned names = 0;
	int r;

	for (p = env; p < end; p = q + 1) {
		q = memchr(p, '\0', (size_t)(end - p));
		if (!q)
			q = end;
		if ((size_t)(q - p) >= sizeof(key) - 1 && !memcmp(p, key, sizeof(key) - 1))
			value = p; /* the last wins, as in ld.so's process_envvars */
	}
	if (!value)
		return 0;
	p = value + sizeof(key) - 1;
	q = memchr(p, '\0', (size_t)(end - p));
	end = q ? q : end;
	while (p < end && names < PRELOAD_NAMES_MAX) {
		const char *stop = p;

		while (stop < end && *stop != ':' && *stop != ' ')
			stop++;
		if (stop > p) {
			names++;
			r = fn(p, (size_t)(stop - p), arg);
			if (r)
				return r;
		}
		p = stop + 1;
	}
	return 0;
}

/* An LD_PRELOAD name of the process preload__ahead asks about. */
struct preload_probe {
	const char *proc_root;
	uint32_t pid;
	const struct maps *m;
	int root_fd;
	const struct maps_entry *otel; /* the file carrying the probes */
	bool (*exports_free)(int fd);
};

static const char *last_part(const char *path)
{
	const char *slash = strrchr(path, '/');

	return slash ? slash + 1 : path;
}

/* 1: the library name names exports an allocator (free); 2: it is the probes' file (the names
 * after it are looked up after it); 0: neither, or not found. */
static int preload_name(const char *name, size_t nlen, void *arg)
{
	const struct preload_probe *pp = arg;
	char path[PATH_MAX];
	struct stat st;
	int fd = -1;
	bool own;

	if (nlen >= sizeof(path))
		return 0;
	memcpy(path, name, nlen);
	path[nlen] = '\0';
	if (!strcmp(last_part(path), last_part(pp->otel->path)))
		return 2;
	/* A path: the file it opens inside the process's root (a link to the mapped name too). */
	if (strchr(path, '/') && pp->root_fd >= 0 &&
	    !safe_open__at(&fd, pp->root_fd, path, 0, SAFE_OPEN_ELF_MAX, &st) &&
	    safe_open__matches(&st, pp->otel)) {
		close(fd);
		return 2;
	}
	/* A name ld.so searched for: the mapped file that ends with it. */
	for (size_t i = 0; fd < 0 && i < pp->m->count; i++) {
		const struct maps_entry *e = &pp->m->entries[i];

		if (e->exec && maps_entry__is_file(e) && !strcmp(last_part(e->path), path) &&
		    safe_open__mapping(&fd, pp->proc_root, pp->pid, e, pp->root_fd))
			fd = -1;
	}
	if (fd < 0)
		return 0;
	own = pp->exports_free(fd);
	close(fd);
	return own ? 1 : 0;
}

bool preload__ahead(const char *proc_root, uint32_t pid, const struct maps *m, int root_fd,
		    const struct maps_entry *otel, bool (*exports_free)(int fd))
{
	struct preload_probe pp = {.proc_root = proc_root,
				   .pid = pid,
				   .m = m,
				   .root_fd = root_fd,
				   .otel = otel,
				   .exports_free = exports_free};
	char name[PATH_MAX], *env;
	size_t len = 0;
	bool ahead = false;

	if (snprintf(name, sizeof(name), "%s/%u/environ", proc_root, pid) >= (int)sizeof(name))
		return false;
	env = malloc(PRELOAD_ENVIRON_MAX);
	if (!env)
		return false;
	if (!safe_open__read_small(env, PRELOAD_ENVIRON_MAX, &len, AT_FDCWD, name))
		ahead = preload__each(env, len, preload_name, &pp) == 1;
	free(env);
	return ahead;
}
