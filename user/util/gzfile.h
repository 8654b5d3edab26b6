/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * A stdio stream that gzip-compresses what is written to it into another stream: writers that
 * print (the JSON traces) get a .gz output without holding the file in memory.
 */
#ifndef PROF_GZFILE_H
#define PROF_GZFILE_H

#include <stdio.h>

/* *out: a write-only FILE whose bytes reach sink as one gzip member.  fclose(*out) ends the
 * member (sink stays open, not flushed) and fails (EOF, errno set) when any write to sink or
 * the compression failed.  0 or -errno. */
int gzfile__open(FILE **out, FILE *sink);

#endif /* PROF_GZFILE_H */
