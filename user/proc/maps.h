/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * Parsing of /proc/PID/maps text into address ranges with their file identity, and the one place
 * that reads a process's maps (maps__read_pid).  The parser is pure: it reads from a path or a
 * FILE*, so tests feed it fixtures.  A read is a snapshot shared by its users (the unwinder, the
 * attach plans, the symbolizer's worker): counted references, dropped by maps__free.
 */
#ifndef PROF_MAPS_H
#define PROF_MAPS_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#include "prof_common.h"

struct maps_entry {
	uint64_t start, end; /* [start, end) */
	uint64_t offset;     /* file offset of start */
	uint64_t inode;
	uint32_t dev_major, dev_minor;
	bool read, write, exec, shared; /* "rwxs" / "rwxp" */
	bool deleted;			/* " (deleted)" was appended: the file was unlinked */
	char *path; /* "" when anonymous, else as shown (e.g. "[heap]"), without " (deleted)" */
};

struct maps {
	struct maps_entry *entries; /* sorted by start */
	size_t count;
	bool cut;      /* the text went on past a cap: the mappings after the cut are unknown */
	unsigned refs; /* maps__get; the last maps__free frees (atomically: several threads) */
};

/*
 * A read stops at MAPS_MAX_LINES lines or MAPS_MAX_BYTES bytes of text, whichever comes first
 * (counted in maps_stats.reads_cut).  The kernel lets a process have 65530 mappings unless
 * vm.max_map_count is raised, so the line cap cuts no default system; real lines are ~100
 * bytes, so the byte cap cuts only long paths chosen to be long (a target mapping files with
 * 2000-byte paths made 134 MB of text: 151 ms and 131 MB of memory to parse here, now 16 MiB).
 */
#define MAPS_MAX_LINES 65536
#define MAPS_MAX_BYTES (16u << 20)

#define MAPS_STAT_FIELD(f, n, d, k) uint64_t f;
struct maps_stats {
	PROF_MAPS_STATS(MAPS_STAT_FIELD)
};
#undef MAPS_STAT_FIELD

/* Parse maps text from f; -EINVAL for a malformed line.  Past a cap: what came before, cut. */
int maps__parse(struct maps **out, FILE *f);
/* Parse the file at path (e.g. "/proc/1234/maps"); -ENOENT/-ESRCH when the process is gone
 * (-ESRCH also for empty maps: a process whose memory is gone). */
int maps__read(struct maps **out, const char *path);
/* <proc_root>/PID/maps ("/proc", or a test's copy of it); as maps__read. */
int maps__read_pid(struct maps **out, const char *proc_root, uint32_t pid);
/* Our own mappings. */
int maps__read_self(struct maps **out);
/* Another reference to m (NULL: NULL), for a user on another thread or later. */
struct maps *maps__get(struct maps *m);
/* Drops a reference: the last one frees m. */
void maps__free(struct maps *m);
/* What every parse in this process has counted so far (five readers on three threads share
 * one count, so it is kept here rather than by each caller). */
void maps__stats(struct maps_stats *out);

/* The entry containing addr, or NULL. */
const struct maps_entry *maps__find(const struct maps *m, uint64_t addr);
/* Backed by a file that can be opened (not anonymous, not "[heap]", "[vdso]", …). */
bool maps_entry__is_file(const struct maps_entry *e);

#endif /* PROF_MAPS_H */
