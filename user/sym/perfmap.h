/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * Symbols of JIT-compiled code from a perf map, /tmp/perf-PID.map: one "START SIZE name" line
 * (hex, "0x" optional) per function, written by the runtime as it compiles.
 */
#ifndef PROF_PERFMAP_H
#define PROF_PERFMAP_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

/* Bounds on a file any local user or container can write (DESIGN.md: hostile files). */
#define PERFMAP_SIZE_MAX    (256ULL << 20)
#define PERFMAP_LINE_MAX    16384
#define PERFMAP_MAX_ENTRIES (1u << 22)

struct perfmap;

struct perfmap_sym {
	uint64_t start, size;
	const char *name;
};

/* Parse a perf map from a stream (the caller owns f); malformed lines are skipped (the runtime
 * may be writing the last one as we read). */
int perfmap__parse(struct perfmap **out, FILE *f);
/* From an fd the caller opened and vetted (a regular file of bounded size). */
int perfmap__load_fd(struct perfmap **out, int fd);
/* A host path: refused unless a regular file of at most PERFMAP_SIZE_MAX, not a symlink. */
int perfmap__load(struct perfmap **out, const char *path);
void perfmap__free(struct perfmap *pm);
size_t perfmap__count(const struct perfmap *pm);
/* Lines skipped for being longer than PERFMAP_LINE_MAX or past PERFMAP_MAX_ENTRIES. */
uint64_t perfmap__skipped(const struct perfmap *pm);
/* Bytes of the file parsed: a larger file means new entries were appended since. */
uint64_t perfmap__file_size(const struct perfmap *pm);

/* The entry containing addr, or NULL.  Code recompiled at the same start: the last line wins. */
const struct perfmap_sym *perfmap__resolve(const struct perfmap *pm, uint64_t addr);

#endif /* PROF_PERFMAP_H */
