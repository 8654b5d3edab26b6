/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * Strings appended one after another into one growing buffer: a symbol table's names in one
 * allocation rather than one each.  Every add may move the buffer, so a string is known by its
 * offset until the last add; after that, buf + offset is its lasting address.  Unlike strpool,
 * nothing is interned: equal strings added twice are stored twice.
 */
#ifndef PROF_STRARENA_H
#define PROF_STRARENA_H

#include <stddef.h>

struct strarena {
	char *buf; /* NUL-terminated strings back to back */
	size_t len, cap;
	size_t first_cap; /* the first allocation's size; 0 means 4096 */
};

/* Append s[0..len) and a NUL; *out is its offset.  0 or -ENOMEM (the arena is unchanged). */
int strarena__add(struct strarena *a, size_t *out, const char *s, size_t len);
/* Free the buffer; the arena is empty again (first_cap kept). */
void strarena__release(struct strarena *a);

#endif /* PROF_STRARENA_H */
