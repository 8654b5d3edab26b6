/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * Source lines of a separate debug file's DWARF (.debug_line through its compile units), read
 * with libdw (elfutils): address -> file and line, for native frames' pprof Lines.  The file is
 * opened through safe_open (a regular file) and read, not mapped (a file truncated under us
 * cannot raise SIGBUS); files over DWLINES_MAX_BYTES are not read, and the DWARF sections a
 * lookup may load are counted in dwlines__bytes for the symbolizer's memory cap.
 *
 * Only files root installed: libdw 0.188 is not safe on hostile DWARF (our fuzzer found a heap
 * overflow in its line-table reader within a minute), so a file owned by another user or
 * writable by others is refused here, and the symbolizer asks only for debug files under the
 * host's debug directory (never one a target's root or a debuginfod server supplied).
 */
#ifndef PROF_SYM_DWARF_LINES_H
#define PROF_SYM_DWARF_LINES_H

#include <stddef.h>
#include <stdint.h>

#define DWLINES_MAX_BYTES (1ULL << 30)

struct dwlines;

/* The DWARF of debug file path: -ENOENT when it has no line table, -EFBIG over the cap, -EPERM
 * when not root's alone. */
int dwlines__open(struct dwlines **out, const char *path);
void dwlines__free(struct dwlines *d);
/* The bytes of its DWARF sections: at most what lookups load. */
uint64_t dwlines__bytes(const struct dwlines *d);
/*
 * The source file and line of ELF virtual address vaddr: 0 and *file (valid while d lives) and
 * *line, or -ENOENT when no line covers it.
 */
int dwlines__lookup(struct dwlines *d, uint64_t vaddr, const char **file, int *line);

#endif /* PROF_SYM_DWARF_LINES_H */
