/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * Atomic output directories (-f codetracer -o DIR): filled under a temporary name beside DIR
 * (mode 0700) and swapped into place on commit, so a reader never sees half a trace folder.
 */
#ifndef PROF_OUTDIR_H
#define PROF_OUTDIR_H

struct outdir;

/*
 * Creates <parent>/.<basename>.XXXXXX (0700) for path.  Refuses with -ELOOP a path that is a
 * symbolic link, with -ENOTDIR one that is not a directory, and with -ENOTEMPTY an existing
 * directory that is neither empty nor a trace folder of ours (no trace_metadata.json): it would
 * be replaced.  0 or -errno.
 */
int outdir__open(struct outdir **out, const char *path);
/* The temporary directory's fd: files go in with openat(). */
int outdir__fd(const struct outdir *d);
/* Puts the directory in place of path (an old one is swapped out, then removed).  Frees d
 * either way; on failure the temporary directory is removed.  0 or -errno. */
int outdir__commit(struct outdir *d);
/* Removes the temporary directory and what is in it, frees d.  NULL is a no-op. */
void outdir__abort(struct outdir *d);

#endif /* PROF_OUTDIR_H */
