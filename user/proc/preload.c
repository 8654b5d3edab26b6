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

#include "proc/preload.h"

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
