/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/* Interned, immutable strings: equal strings share one pointer, valid until strpool__free. */
#ifndef PROF_STRPOOL_H
#define PROF_STRPOOL_H

struct strpool;

int strpool__new(struct strpool **out);
void strpool__free(struct strpool *p);
/* The pool's copy of s (NULL for NULL, or on allocation failure). */
const char *strpool__intern(struct strpool *p, const char *s);

#endif /* PROF_STRPOOL_H */
