/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * The one JSON string writer every JSON output uses.  Names, paths and thread names are bytes
 * from other processes: the result is always one valid JSON string, whatever they hold.
 */
#ifndef PROF_JSON_H
#define PROF_JSON_H

#include <stddef.h>
#include <stdio.h>

/*
 * Writes s[0..len) to f as a quoted JSON string: `"` and `\` escaped, control characters as
 * \n, \t, … or \u00XX, U+2028 and U+2029 as \u2028 / \u2029 (JavaScript reads them as line
 * ends), each byte that is not part of well-formed UTF-8 as U+FFFD.  Embedded NULs are written
 * as \u0000.  0 or -EIO when f reports an error.
 */
int json__write_string(FILE *f, const void *s, size_t len);

#endif /* PROF_JSON_H */
