/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * Atomic output files: written under a temporary name in the target's directory and renamed
 * over the target on commit, so a reader never sees half a profile.  "-" is stdout.  A regular
 * file the commit replaces is kept as <path>.old (as perf keeps perf.data.old), said on stderr.
 */
#ifndef PROF_OUTPUT_H
#define PROF_OUTPUT_H

#include <stdio.h>

struct output;

/*
 * Opens <dir>/.<basename>.XXXXXX (mode 0644) for path, or stdout for "-"; a character
 * device or a pipe already at path (/dev/null, a FIFO) is opened and written in place, never
 * replaced.  Refuses, with -ELOOP, a path that is a symbolic link, with -EISDIR one that is a
 * directory, and with -ENOTSUP a block device or a socket.
 */
int output__open(struct output **out, const char *path);
/*
 * Whether path can be written, before a run that would only find out at its end: what
 * output__open refuses (-ELOOP, -EISDIR, -ENOTSUP), a missing directory (-ENOENT, -ENOTDIR), and
 * what creating the temporary file there says (-EACCES, -EROFS, -ENAMETOOLONG…): one is made and
 * removed.  "-" is 0.
 */
int output__check(const char *path);
/* Replace an existing file without keeping <path>.old (--output-dir's series: its names are
 * new, and its own files are counted by --retain). */
void output__no_backup(struct output *o);
FILE *output__file(struct output *o);
/* The final path ("-" for stdout). */
const char *output__path(const struct output *o);
/* Flushes, syncs, closes and renames into place; on failure the temporary file is removed.
 * Frees o either way.  0 or a negative errno. */
int output__commit(struct output *o);
/* Closes and removes the temporary file, frees o.  NULL is a no-op. */
void output__abort(struct output *o);
/* The directory path is in, to disk: a rename into it is durable after this (a failure loses
 * nothing already renamed). */
void output__sync_parent(const char *path);

#endif /* PROF_OUTPUT_H */
