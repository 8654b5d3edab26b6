// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
#include "proc/maps.h"

#include <errno.h>
#include <inttypes.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define DELETED_SUFFIX " (deleted)"

static uint64_t reads, reads_cut; /* atomically: the readers run on several threads */

/* "start-end perms offset major:minor inode   path" */
static int parse_line(struct maps_entry *e, char *line)
{
	size_t len = strlen(line), sfx = strlen(DELETED_SUFFIX);
	char perms[5];
	int n = -1;
	char *path;

	while (len && (line[len - 1] == '\n' || line[len - 1] == '\r'))
		line[--len] = '\0';
	memset(e, 0, sizeof(*e));
	if (sscanf(line, "%" SCNx64 "-%" SCNx64 " %4s %" SCNx64 " %x:%x %" SCNu64 "%n", &e->start,
		   &e->end, perms, &e->offset, &e->dev_major, &e->dev_minor, &e->inode, &n) != 7 ||
	    n < 0 || strlen(perms) != 4 || e->end < e->start)
		return -EINVAL;
	e->read = perms[0] == 'r';
	e->write = perms[1] == 'w';
	e->exec = perms[2] == 'x';
	e->shared = perms[3] == 's';
	path = line + n;
	while (*path == ' ' || *path == '\t')
		path++;
	len = strlen(path);
	if (len > sfx && strcmp(path + len - sfx, DELETED_SUFFIX) == 0) {
		path[len - sfx] = '\0';
		e->deleted = true;
	}
	e->path = strdup(path);
	return e->path ? 0 : -ENOMEM;
}

static int cmp_entry(const void *a, const void *b)
{
	const struct maps_entry *x = a, *y = b;

	return x->start < y->start ? -1 : x->start > y->start;
}

int maps__parse(struct maps **out, FILE *f)
{
	struct maps *m = calloc(1, sizeof(*m));
	size_t cap = 0, linecap = 0, lines = 0, bytes = 0;
	char *line = NULL;
	ssize_t len;
	int err = 0;

	if (!m)
		return -ENOMEM;
	m->refs = 1;
	errno = 0;
	while ((len = getline(&line, &linecap, f)) >= 0) {
		/* A target chooses how many mappings it has and how long their paths are. */
		if (lines == MAPS_MAX_LINES || (size_t)len > MAPS_MAX_BYTES - bytes) {
			m->cut = true;
			__atomic_add_fetch(&reads_cut, 1, __ATOMIC_RELAXED);
			break;
		}
		lines++;
		bytes += (size_t)len;
		if (line[strspn(line, " \t\r\n")] == '\0')
			continue;
		if (m->count == cap) {
			size_t ncap = cap ? cap * 2 : 64;
			struct maps_entry *ne = realloc(m->entries, ncap * sizeof(*ne));

			if (!ne) {
				err = -ENOMEM;
				goto cleanup;
			}
			m->entries = ne;
			cap = ncap;
		}
		err = parse_line(&m->entries[m->count], line);
		if (err)
			goto cleanup;
		m->count++;
		errno = 0;
	}
	if (ferror(f)) {
		/* /proc/PID/maps of a process that exits while we read fails with ESRCH. */
		err = errno ? -errno : -EIO;
		goto cleanup;
	}
	/* The kernel lists mappings in order; fixtures need not. */
	if (m->count)
		qsort(m->entries, m->count, sizeof(*m->entries), cmp_entry);
	*out = m;
	m = NULL;
cleanup:
	free(line);
	maps__free(m);
	return err;
}

int maps__read(struct maps **out, const char *path)
{
	FILE *f = fopen(path, "re");
	int err;

	if (!f)
		return -errno;
	err = maps__parse(out, f);
	fclose(f);
	/*
	 * Every live process maps something: empty maps mean its memory is gone (exiting, or read
	 * through a leader thread that left with pthread_exit).  Not a set of mappings to use.
	 */
	if (!err && !(*out)->count) {
		maps__free(*out);
		*out = NULL;
		err = -ESRCH;
	}
	return err;
}

void maps__stats(struct maps_stats *out)
{
	out->reads = __atomic_load_n(&reads, __ATOMIC_RELAXED);
	out->reads_cut = __atomic_load_n(&reads_cut, __ATOMIC_RELAXED);
}

int maps__read_pid(struct maps **out, const char *proc_root, uint32_t pid)
{
	char path[PATH_MAX];

	if (snprintf(path, sizeof(path), "%s/%u/maps", proc_root, pid) >= (int)sizeof(path))
		return -ENAMETOOLONG;
	__atomic_add_fetch(&reads, 1, __ATOMIC_RELAXED); /* a target's, not our own */
	return maps__read(out, path);
}

int maps__read_self(struct maps **out)
{
	return maps__read(out, "/proc/self/maps");
}

struct maps *maps__get(struct maps *m)
{
	if (m)
		__atomic_add_fetch(&m->refs, 1, __ATOMIC_RELAXED);
	return m;
}

void maps__free(struct maps *m)
{
	if (!m || __atomic_sub_fetch(&m->refs, 1, __ATOMIC_ACQ_REL))
		return;
	for (size_t i = 0; i < m->count; i++)
		free(m->entries[i].path);
	free(m->entries);
	free(m);
}

const struct maps_entry *maps__find(const struct maps *m, uint64_t addr)
{
	size_t lo = 0, hi = m->count;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		const struct maps_entry *e = &m->entries[mid];

		if (addr < e->start)
			hi = mid;
		else if (addr >= e->end)
			lo = mid + 1;
		else
			return e;
	}
	return NULL;
}

bool maps_entry__is_file(const struct maps_entry *e)
{
	return e->path[0] == '/';
}
