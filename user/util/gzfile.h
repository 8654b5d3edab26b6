/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * The one gzip writer: bytes in, one gzip member out to a stdio stream as they come, so memory
 * stays bounded by a chunk, not by the file.  Two faces over the same deflate loop: calls, for
 * a writer that holds its bytes in buffers (pprof), and a stdio stream, for writers that print
 * (the JSON traces).  Level 1, as Go's runtime/pprof: profiles and traces are large and
 * repetitive, and the fastest level already shrinks them several times.
 */
#ifndef PROF_GZFILE_H
#define PROF_GZFILE_H

#include <stddef.h>
#include <stdio.h>

struct gzfile;

/* *out compresses into sink (which stays the caller's: never closed, not flushed).  0 or
 * -errno. */
int gzfile__new(struct gzfile **out, FILE *sink);
/* 0, or -errno of the first failure (a write to sink or the compression), sticky. */
int gzfile__write(struct gzfile *g, const void *data, size_t len);
/* Ends the member (the gzip trailer).  0 or -errno, the first failure of any call. */
int gzfile__finish(struct gzfile *g);
/* Without gzfile__finish, sink is left with an unfinished member (a failed write is not
 * dressed up as a complete file).  NULL is a no-op. */
void gzfile__free(struct gzfile *g);

/* *out: a write-only FILE whose bytes reach sink as one gzip member.  fclose(*out) ends the
 * member (sink stays open, not flushed) and fails (EOF, errno set) when any write to sink or
 * the compression failed.  0 or -errno. */
int gzfile__open(FILE **out, FILE *sink);

#endif /* PROF_GZFILE_H */
