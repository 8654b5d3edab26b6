/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * Parsing of /proc/PID/maps text into address ranges with their file identity.  Pure: it reads
 * from a path or a FILE*, so tests feed it fixtures.
 */
#ifndef PROF_MAPS_H
#define PROF_MAPS_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

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
};

/* Parse maps text from f; -EINVAL for a malformed line. */
int maps__parse(struct maps **out, FILE *f);
/* Parse the file at path (e.g. "/proc/1234/maps"); -ENOENT/-ESRCH when the process is gone
 * (-ESRCH also for empty maps: a process whose memory is gone). */
int maps__read(struct maps **out, const char *path);
void maps__free(struct maps *m);

/* The entry containing addr, or NULL. */
const struct maps_entry *maps__find(const struct maps *m, uint64_t addr);
/* Backed by a file that can be opened (not anonymous, not "[heap]", "[vdso]", …). */
bool maps_entry__is_file(const struct maps_entry *e);

#endif /* PROF_MAPS_H */
