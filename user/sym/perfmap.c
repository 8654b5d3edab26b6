// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
#include "sym/perfmap.h"

#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "proc/safe_open.h"

struct entry {
	struct perfmap_sym pub;
	size_t seq; /* line number: later lines replace earlier ones */
};

struct perfmap {
	struct entry *entries; /* by start, one per start */
	size_t count;
	uint64_t file_size;
	uint64_t skipped; /* lines over PERFMAP_LINE_MAX, entries over PERFMAP_MAX_ENTRIES */
};

static int cmp_entry(const void *pa, const void *pb)
{
	const struct entry *a = pa, *b = pb;

	if (a->pub.start != b->pub.start)
		return a->pub.start < b->pub.start ? -1 : 1;
	return a->seq < b->seq ? 1 : a->seq > b->seq ? -1 : 0; /* newest first */
}

/* 0 and fills e for a well-formed line, -EINVAL otherwise. */
static int parse_line(struct entry *e, char *line)
{
	char *p = line, *end;
	size_t len;

	e->pub.start = strtoull(p, &end, 16);
	if (end == p || !isspace((unsigned char)*end))
		return -EINVAL;
	p = end;
	e->pub.size = strtoull(p, &end, 16);
	if (end == p || (*end != ' ' && *end != '\t'))
		return -EINVAL;
	/* The name runs to the end of the line and may hold spaces ("LazyCompile:~f a.js:1"). */
	p = end + 1;
	len = strlen(p);
	while (len && (p[len - 1] == '\n' || p[len - 1] == '\r'))
		p[--len] = '\0';
	if (!len || !e->pub.size)
		return -EINVAL;
	e->pub.name = strdup(p);
	return e->pub.name ? 0 : -ENOMEM;
}

/*
 * Next line of f into buf (NUL-terminated, with its '\n').  A line longer than the buffer is
 * consumed and reported as -E2BIG; 0 at EOF or on a last line without '\n' (the runtime may be
 * writing it).  *len gets the bytes consumed.
 */
static int next_line(FILE *f, char *buf, size_t size, size_t *len)
{
	size_t n;
	int c;

	if (!fgets(buf, (int)size, f))
		return 0;
	n = strlen(buf);
	*len = n;
	if (n && buf[n - 1] == '\n')
		return 1;
	if (feof(f))
		return 0;
	while ((c = getc(f)) != EOF) {
		(*len)++;
		if (c == '\n')
			return -E2BIG;
	}
	return 0;
}

int perfmap__parse(struct perfmap **out, FILE *f)
{
	struct perfmap *pm = calloc(1, sizeof(*pm));
	char *line = malloc(PERFMAP_LINE_MAX + 2);
	size_t cap = 0, n = 0, len;
	int err = 0, r;

	if (!pm || !line) {
		err = -ENOMEM;
		goto cleanup;
	}
	while ((r = next_line(f, line, PERFMAP_LINE_MAX + 2, &len))) {
		pm->file_size += (uint64_t)len;
		if (r < 0 || pm->count >= PERFMAP_MAX_ENTRIES) {
			pm->skipped++; /* a line too long, or past the entry cap */
			continue;
		}
		if (pm->count == cap) {
			size_t ncap = cap ? cap * 2 : 256;
			struct entry *ne = realloc(pm->entries, ncap * sizeof(*ne));

			if (!ne) {
				err = -ENOMEM;
				goto cleanup;
			}
			pm->entries = ne;
			cap = ncap;
		}
		pm->entries[pm->count].seq = n++;
		err = parse_line(&pm->entries[pm->count], line);
		if (err == -ENOMEM)
			goto cleanup;
		if (!err)
			pm->count++;
		err = 0;
	}
	if (ferror(f)) {
		err = -EIO;
		goto cleanup;
	}
	if (pm->count) {
		size_t w = 0;

		qsort(pm->entries, pm->count, sizeof(*pm->entries), cmp_entry);
		for (size_t i = 0; i < pm->count; i++) {
			if (w && pm->entries[w - 1].pub.start == pm->entries[i].pub.start) {
				free((char *)pm->entries[i].pub.name);
				continue;
			}
			pm->entries[w++] = pm->entries[i];
		}
		pm->count = w;
	}
	*out = pm;
	pm = NULL;
cleanup:
	free(line);
	perfmap__free(pm);
	return err;
}

int perfmap__load_fd(struct perfmap **out, int fd)
{
	int dfd = fcntl(fd, F_DUPFD_CLOEXEC, 0);
	FILE *f;
	int err;

	if (dfd < 0)
		return -errno;
	f = fdopen(dfd, "r");
	if (!f) {
		err = -errno;
		close(dfd);
		return err;
	}
	err = perfmap__parse(out, f);
	fclose(f);
	return err;
}

int perfmap__load(struct perfmap **out, const char *path)
{
	int fd, err;

	err = safe_open__at(&fd, -1, path, SAFE_OPEN_NOFOLLOW, PERFMAP_SIZE_MAX, NULL);
	if (err)
		return err;
	err = perfmap__load_fd(out, fd);
	close(fd);
	return err;
}

void perfmap__free(struct perfmap *pm)
{
	if (!pm)
		return;
	for (size_t i = 0; i < pm->count; i++)
		free((char *)pm->entries[i].pub.name);
	free(pm->entries);
	free(pm);
}

size_t perfmap__count(const struct perfmap *pm)
{
	return pm->count;
}

uint64_t perfmap__skipped(const struct perfmap *pm)
{
	return pm->skipped;
}

uint64_t perfmap__file_size(const struct perfmap *pm)
{
	return pm->file_size;
}

const struct perfmap_sym *perfmap__resolve(const struct perfmap *pm, uint64_t addr)
{
	size_t lo = 0, hi = pm->count;
	const struct perfmap_sym *s;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (pm->entries[mid].pub.start <= addr)
			lo = mid + 1;
		else
			hi = mid;
	}
	if (!lo)
		return NULL;
	s = &pm->entries[lo - 1].pub;
	return addr - s->start < s->size ? s : NULL;
}
