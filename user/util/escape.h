/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * Bytes a target chose (process, thread, function and file names, paths) made safe for a
 * terminal and for a line-based text file: C0 controls (newline, tab, ESC included), DEL, C1
 * controls (U+0080-U+009F as UTF-8) and bytes that are not well-formed UTF-8 (overlong forms,
 * surrogates, code points past U+10FFFF, truncated sequences, 0xC0, 0xC1, 0xF5-0xFF) are shown
 * as \xNN, one per byte; valid UTF-8 is kept.  A backslash is kept as it is: the escaping is
 * there to protect the terminal and the line formats, and a literal "\x1b" in a name is only
 * text (pprof keeps the exact bytes).
 */
#ifndef PROF_ESCAPE_H
#define PROF_ESCAPE_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

/* Length of the well-formed UTF-8 sequence at p (at most n bytes, n >= 1), 0 when there is
 * none (Unicode table 3-7: no overlong forms, no surrogates, nothing past U+10FFFF). */
size_t escape__utf8_len(const uint8_t *p, size_t n);

/* Bytes one unit takes at most once shown: "\xNN" or a 4-byte character. */
#define ESCAPE_UNIT_MAX 4

/* The first unit of s[0..len), len >= 1: its shown form into out (no NUL), its length into
 * *out_len.  Returns how many bytes of s it stands for (>= 1). */
size_t escape__unit(char out[ESCAPE_UNIT_MAX], size_t *out_len, const char *s, size_t len);
/* Terminal columns of a shown unit; an overestimate where terminals differ (East Asian and
 * emoji ranges count 2), so a line cut by it never wraps. */
unsigned escape__width(const char *unit, size_t len);
/* s[0..len) escaped to f.  0 or -EIO. */
int escape__write(FILE *f, const char *s, size_t len);
/* Escaped s into out[0..size) at most cols columns wide, whole units only, no NUL written.
 * Returns the bytes written. */
size_t escape__fit(char *out, size_t size, const char *s, size_t len, unsigned cols);
/* Escaped NUL-terminated s into buf (size >= 1), cut at a whole unit if it does not fit.
 * Returns buf, for printf's arguments. */
const char *escape__str(char *buf, size_t size, const char *s);
/* A malloc'ed escaped copy of s, NULL when out of memory. */
char *escape__dup(const char *s);

#endif /* PROF_ESCAPE_H */
