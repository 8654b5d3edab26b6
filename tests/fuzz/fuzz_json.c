// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * The JSON string writer (user/util/json.c) on arbitrary bytes: names from other processes.
 * Its output is checked here by a reader of our own, written from RFC 8259 and the Unicode
 * standard rather than from the writer: it must be exactly one JSON string of well-formed
 * UTF-8 with no raw U+2028/U+2029, and reading it back must give the input itself when the
 * input was well-formed UTF-8 (otherwise well-formed UTF-8 with a U+FFFD in it).
 */
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "util/json.h"

/* Decodes one code point at p (n bytes left) into *cp; its length, 0 when not well formed. */
static size_t decode(const uint8_t *p, size_t n, uint32_t *cp)
{
	static const uint32_t min[] = {0, 0, 0x80, 0x800, 0x10000};
	size_t len = p[0] < 0x80	 ? 1
		     : (p[0] >> 5) == 6	 ? 2
		     : (p[0] >> 4) == 14 ? 3
		     : (p[0] >> 3) == 30 ? 4
					 : 0;
	uint32_t v;

	if (!len || len > n)
		return 0;
	v = len == 1 ? p[0] : p[0] & (0x7f >> len);
	for (size_t i = 1; i < len; i++) {
		if ((p[i] & 0xc0) != 0x80)
			return 0;
		v = v << 6 | (p[i] & 0x3f);
	}
	if (v < min[len] || v > 0x10ffff || (v >= 0xd800 && v <= 0xdfff))
		return 0;
	*cp = v;
	return len;
}

static bool well_formed(const uint8_t *p, size_t n)
{
	uint32_t cp;

	for (size_t i = 0, k; i < n; i += k)
		if (!(k = decode(p + i, n - i, &cp)))
			return false;
	return true;
}

static void put_utf8(uint8_t *out, size_t *o, uint32_t cp)
{
	if (cp < 0x80) {
		out[(*o)++] = (uint8_t)cp;
	} else if (cp < 0x800) {
		out[(*o)++] = (uint8_t)(0xc0 | cp >> 6);
		out[(*o)++] = (uint8_t)(0x80 | (cp & 0x3f));
	} else {
		out[(*o)++] = (uint8_t)(0xe0 | cp >> 12);
		out[(*o)++] = (uint8_t)(0x80 | (cp >> 6 & 0x3f));
		out[(*o)++] = (uint8_t)(0x80 | (cp & 0x3f));
	}
}

/* Reads the JSON string s[0..n) into out (the bytes it denotes); false if it is not one. */
static bool read_string(const uint8_t *s, size_t n, uint8_t *out, size_t *olen)
{
	size_t i = 1, o = 0;
	uint32_t cp;

	if (n < 2 || s[0] != '"' || !well_formed(s, n))
		return false;
	while (i < n - 1) {
		size_t k;

		if (s[i] == '"' || s[i] < 0x20)
			return false; /* must be escaped */
		if (s[i] != '\\') {
			k = decode(s + i, n - i, &cp);
			if (cp == 0x2028 || cp == 0x2029)
				return false;
			memcpy(out + o, s + i, k);
			o += k;
			i += k;
			continue;
		}
		if (i + 1 >= n - 1)
			return false;
		switch (s[i + 1]) {
		case '"':
		case '\\':
		case '/':
			out[o++] = s[i + 1];
			i += 2;
			break;
		case 'b':
			out[o++] = '\b';
			i += 2;
			break;
		case 'f':
			out[o++] = '\f';
			i += 2;
			break;
		case 'n':
			out[o++] = '\n';
			i += 2;
			break;
		case 'r':
			out[o++] = '\r';
			i += 2;
			break;
		case 't':
			out[o++] = '\t';
			i += 2;
			break;
		case 'u': {
			char hex[5] = {0};
			char *end;

			if (i + 6 > n - 1)
				return false;
			memcpy(hex, s + i + 2, 4);
			cp = (uint32_t)strtoul(hex, &end, 16);
			if (end != hex + 4 || (cp >= 0xd800 && cp <= 0xdfff))
				return false; /* we never need surrogate pairs: no escape above
						 U+FFFF */
			put_utf8(out, &o, cp);
			i += 6;
			break;
		}
		default:
			return false;
		}
	}
	if (i != n - 1 || s[n - 1] != '"')
		return false;
	*olen = o;
	return true;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char *buf = NULL;
	size_t len = 0, olen = 0;
	uint8_t *back;
	FILE *f = open_memstream(&buf, &len);

	if (!f)
		return 0;
	if (json__write_string(f, data, size))
		__builtin_trap();
	if (fclose(f) || !buf)
		__builtin_trap();
	back = malloc(len + 1);
	if (!back)
		__builtin_trap();
	if (!read_string((const uint8_t *)buf, len, back, &olen))
		__builtin_trap();
	if (well_formed(data, size)) {
		if (olen != size || memcmp(back, data, size))
			__builtin_trap();
	} else if (!memmem(back, olen, "\xef\xbf\xbd", 3)) {
		__builtin_trap();
	}
	free(back);
	free(buf);
	return 0;
}
