/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * The DWARF of a file (its lines and inlined calls, sym/dwarf_lines.h) indexed on a thread of its
 * own: a big library's takes a few hundred milliseconds, which the symbolizer's worker must not
 * spend, since the same queue reads the names of new Python threads that may live no longer than
 * that.  The worker asks (dwbuild__submit), goes on naming frames without lines, and takes what
 * is built at its next debug job (dwbuild__take), redoing the stacks of those files.
 * Nothing is built before the first profile is (dwbuild__open, or dwbuild__wait): lines are
 * wanted only there, and indexing glibc's debug file took ~150 ms of CPU during a 0.5 s sqlite3
 * run, 4 % of its wall on 2 cores (where the profiled program shares the machine with it).
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
/* Build what is queued and whatever comes later (the first profile is being made). */
void dwbuild__open(struct dwbuild *b);
/* Whether dwbuild__open (or dwbuild__wait) was called; b NULL: true. */
bool dwbuild__is_open(const struct dwbuild *b);
/* Open, then until nothing is queued or being built (a profile: every stack's lines in). */
void dwbuild__wait(struct dwbuild *b);

#endif /* PROF_SYM_DWBUILD_H */
