/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * The DWARF of a file (its lines and inlined calls, sym/dwarf_lines.h) indexed on a thread of its
 * own: a big library's takes a few hundred milliseconds, which the symbolizer's worker must not
 * spend, since the same queue reads the names of new Python threads that may live no longer than
 * that.  The worker asks (dwbuild__submit), goes on naming frames without lines, and takes what
 * is built at its next debug job (dwbuild__take), redoing the stacks of those files.
 */
#ifndef PROF_SYM_DWBUILD_H
#define PROF_SYM_DWBUILD_H

#include <stdbool.h>
#include <stddef.h>

struct dwlines;
struct dwbuild;

/* A built index, handed to the worker: d NULL when the file has no DWARF (or err refused it). */
struct dwbuild_done {
	char *build_id; /* owned */
	struct dwlines *d;
	int err;
	struct dwbuild_done *next;
};

/* The thread starts at the first submit; alternate files are looked for under debug_dir (may be
 * NULL: not).  0 or -ENOMEM. */
int dwbuild__new(struct dwbuild **out, const char *debug_dir);
/* Stops the thread (an index being built is finished first) and frees what was not taken. */
void dwbuild__free(struct dwbuild *b);
/*
 * Index the DWARF of build id bid: of the debug file at path, else of the open ELF file fd
 * (taken: closed once read; -1 when path is given).  0 or -ENOMEM (fd closed either way).
 */
int dwbuild__submit(struct dwbuild *b, const char *bid, const char *path, int fd);
/* Something built waits to be taken (read from any thread). */
bool dwbuild__ready(const struct dwbuild *b);
/* What is built, as a list (the caller frees each build_id, d and node); NULL: nothing. */
struct dwbuild_done *dwbuild__take(struct dwbuild *b);
/* Until nothing is queued or being built (the run's end: every stack's lines in). */
void dwbuild__wait(struct dwbuild *b);

#endif /* PROF_SYM_DWBUILD_H */
