/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * Output directories.  outdir: atomic trace folders (-f codetracer -o DIR), filled under a
 * temporary name beside DIR (mode 0700) and swapped into place on commit, so a reader never
 * sees half a trace folder.  outdir_series: continuous mode's --output-dir (names, --retain).
 */
#ifndef PROF_OUTDIR_H
#define PROF_OUTDIR_H

#include <stddef.h>
#include <stdint.h>

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
/*
 * Syncs the folder's files and folders, puts it in place of path and syncs path's parent.  Only
 * the folder that was at path when outdir__open saw it (same device and inode) is replaced (swapped
 * out, then removed); if path was made or replaced by someone else meanwhile, nothing of it is
 * deleted: ours is kept beside it as <path>.N, said in one line on stderr, and -EEXIST returned.
 * Frees d either way; on other failures the temporary directory is removed.  0 or -errno.
 */
int outdir__commit(struct outdir *d);
/* Removes the temporary directory and what is in it, frees d.  NULL is a no-op. */
void outdir__abort(struct outdir *d);

/*
 * Continuous mode's --output-dir: one profile per mode per interval, named
 * <UTC start>-<run id>.<mode>.pb.gz (e.g. 20261128T082425Z-1f0c9a3b.cpu.pb.gz): the run id is 8
 * hex digits drawn when the run starts, so two runs writing one directory in the same second do
 * not overwrite each other, and names still sort by time.
 *
 * --retain N, after each profile written: this run's profiles of the mode beyond its newest N
 * (in the order it wrote them, whatever their names say) are deleted; then profiles named like
 * ours (this format or the older <UTC start>.<mode>.pb.gz) whose time is before this run's start
 * (earlier runs) fill the slots left, newest name first, and the rest of them are deleted.  A
 * file named with a time at or after the start that is not this run's (another run writing the
 * directory now, a name from the future) is never deleted, and the profile just written never
 * is.  Directory entries are checked with fstatat where the file system gives no type.
 */
struct outdir_series;

/* Over dir_fd (duplicated: the caller keeps its own); run_start_ns: the wall-clock start of the
 * run.  retain 0 deletes nothing.  0 or -errno. */
int outdir_series__new(struct outdir_series **out, int dir_fd, unsigned retain,
		       int64_t run_start_ns);
/* The name of mode's profile of the interval starting at start_ns into buf (-ENAMETOOLONG when
 * it does not fit). */
int outdir_series__name(const struct outdir_series *s, char *buf, size_t len, int64_t start_ns,
			const char *mode);
/* name (from outdir_series__name) was written: --retain applied to its mode.  0 or -errno (the
 * first failure; every deletion is tried). */
int outdir_series__written(struct outdir_series *s, const char *mode, const char *name);
void outdir_series__free(struct outdir_series *s);

#endif /* PROF_OUTDIR_H */
