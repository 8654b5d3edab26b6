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

struct perfmap;

struct perfmap_sym {
	uint64_t start, size;
	const char *name;
};

/* -ENOENT when there is no such file; malformed lines are skipped (the runtime may be
 * writing the last one as we read). */
int perfmap__load(struct perfmap **out, const char *path);
/* The same over an open stream (the parser; the caller owns f). */
int perfmap__parse(struct perfmap **out, FILE *f);
void perfmap__free(struct perfmap *pm);
size_t perfmap__count(const struct perfmap *pm);
/* Bytes of the file parsed: a larger file means new entries were appended since. */
uint64_t perfmap__file_size(const struct perfmap *pm);

/* The entry containing addr, or NULL.  Code recompiled at the same start: the last line wins. */
const struct perfmap_sym *perfmap__resolve(const struct perfmap *pm, uint64_t addr);

#endif /* PROF_PERFMAP_H */
