/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * Interned, immutable strings: equal strings share one pointer, valid until strpool__free or
 * until a strpool__sweep that does not keep it (after which the same text interns afresh, maybe
 * at another address).
 */
#ifndef PROF_STRPOOL_H
#define PROF_STRPOOL_H

#include <stddef.h>

struct hashmap;
struct strpool;

int strpool__new(struct strpool **out);
void strpool__free(struct strpool *p);
/* The pool's copy of s (NULL for NULL, or on allocation failure). */
const char *strpool__intern(struct strpool *p, const char *s);
/*
 * Free every string whose pointer is not a key of keep (a hashmap with `const void *` keys, of
 * any value size; other keys are ignored).  Cannot fail: what it cannot free now it frees at the
 * next sweep.
 */
void strpool__sweep(struct strpool *p, const struct hashmap *keep);
/* Strings held, and their bytes (with their terminators). */
size_t strpool__count(const struct strpool *p);
size_t strpool__bytes(const struct strpool *p);

#endif /* PROF_STRPOOL_H */
