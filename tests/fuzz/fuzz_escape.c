// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * The escaper of terminal text (util/escape.h) with any bytes: what it writes must be safe on a
 * terminal and in a line format.  Checked with a UTF-8 reader of our own, separate from
 * escape.c's: the output is valid UTF-8 with no C0 control, no DEL and no C1 control; an input
 * that already is such text comes out unchanged; escape__fit stays within its columns and its
 * buffer and writes a prefix of the whole output.
 */
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "util/escape.h"

/* The code point of the UTF-8 character at s[0..n) into *cp, its length; 0 when it is not one
 * (RFC 3629: shortest form, no surrogates, nothing past U+10FFFF). */
static size_t utf8_char(const unsigned char *s, size_t n, uint32_t *cp)
{
	size_t len;

	if (s[0] < 0x80)
		len = 1, *cp = s[0];
	else if ((s[0] & 0xe0) == 0xc0)
		len = 2, *cp = s[0] & 0x1f;
	else if ((s[0] & 0xf0) == 0xe0)
		len = 3, *cp = s[0] & 0x0f;
	else if ((s[0] & 0xf8) == 0xf0)
		len = 4, *cp = s[0] & 0x07;
	else
		return 0;
	if (len > n)
		return 0;
	for (size_t i = 1; i < len; i++) {
		if ((s[i] & 0xc0) != 0x80)
			return 0;
		*cp = *cp << 6 | (s[i] & 0x3f);
	}
	if ((len == 2 && *cp < 0x80) || (len == 3 && *cp < 0x800) || (len == 4 && *cp < 0x10000) ||
	    *cp > 0x10ffff || (*cp >= 0xd800 && *cp <= 0xdfff))
		return 0;
	return len;
}

/* Whether s[0..n) is valid UTF-8 without a control character (C0, DEL, C1); its characters
 * counted into *chars. */
static bool safe_text(const unsigned char *s, size_t n, size_t *chars)
{
	*chars = 0;
	for (size_t i = 0; i < n; ++*chars) {
		uint32_t cp;
		size_t len = utf8_char(s + i, n - i, &cp);

		if (!len || cp < 0x20 || (cp >= 0x7f && cp < 0xa0))
			return false;
		i += len;
	}
	return true;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char *out = NULL, *fit, *str, *dup, *s;
	unsigned cols = size ? data[0] : 0;
	size_t len = 0, n, chars;
	FILE *f;

	f = open_memstream(&out, &len);
	if (!f)
		return 0;
	if (escape__write(f, (const char *)data, size) || fclose(f)) {
		free(out);
		return 0;
	}
	if (!safe_text((const unsigned char *)out, len, &chars))
		__builtin_trap();
	if (safe_text(data, size, &chars) && (len != size || memcmp(out, data, size)))
		__builtin_trap();

	/* Cut by columns and bytes: a prefix of the whole, within both (every character takes a
	 * column at least). */
	fit = malloc(size + 1);
	if (fit) {
		n = escape__fit(fit, size + 1, (const char *)data, size, cols);
		if (n > size + 1 || n > len || memcmp(fit, out, n) ||
		    !safe_text((const unsigned char *)fit, n, &chars) || chars > cols)
			__builtin_trap();
		free(fit);
	}

	/* The NUL-terminated forms: escape__dup is the whole, escape__str a cut of it. */
	s = malloc(size + 1);
	if (s) {
		memcpy(s, data, size);
		s[size] = 0;
		dup = escape__dup(s);
		str = malloc(cols + 1);
		if (dup && str) {
			size_t dlen = strlen(dup);

			escape__str(str, cols + 1, s);
			if (dlen > len || memcmp(dup, out, dlen) || strlen(str) > cols ||
			    strncmp(str, dup, strlen(str)))
				__builtin_trap();
		}
		free(str);
		free(dup);
		free(s);
	}
	free(out);
	return 0;
}
