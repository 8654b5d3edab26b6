// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
#include "util/escape.h"

#include <errno.h>
#include <limits.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

size_t escape__utf8_len(const uint8_t *p, size_t n)
{
	uint8_t lo = 0x80, hi = 0xbf;
	size_t len;

	if (p[0] < 0x80)
		return 1;
	if (p[0] >= 0xc2 && p[0] <= 0xdf)
		len = 2;
	else if (p[0] >= 0xe0 && p[0] <= 0xef)
		len = 3;
	else if (p[0] >= 0xf0 && p[0] <= 0xf4)
		len = 4;
	else
		return 0;
	if (n < len)
		return 0;
	if (p[0] == 0xe0)
		lo = 0xa0;
	else if (p[0] == 0xed)
		hi = 0x9f;
	else if (p[0] == 0xf0)
		lo = 0x90;
	else if (p[0] == 0xf4)
		hi = 0x8f;
	if (p[1] < lo || p[1] > hi)
		return 0;
	for (size_t i = 2; i < len; i++)
		if (p[i] < 0x80 || p[i] > 0xbf)
			return 0;
	return len;
}

size_t escape__unit(char out[ESCAPE_UNIT_MAX], size_t *out_len, const char *s, size_t len)
{
	static const char hex[] = "0123456789abcdef";
	const uint8_t *p = (const uint8_t *)s;
	size_t n = escape__utf8_len(p, len);

	/* C1 controls are U+0080-U+009F: 0xc2 0x80-0x9f.  A terminal may act on them as on
	 * ESC [ (U+009B is CSI). */
	if (n == 2 && p[0] == 0xc2 && p[1] < 0xa0)
		n = 0;
	if (n == 1 && (p[0] < 0x20 || p[0] == 0x7f))
		n = 0;
	if (!n) {
		out[0] = '\\';
		out[1] = 'x';
		out[2] = hex[p[0] >> 4];
		out[3] = hex[p[0] & 15];
		*out_len = 4;
		return 1; /* the next byte is a unit of its own: one \xNN per byte */
	}
	memcpy(out, s, n);
	*out_len = n;
	return n;
}

/* Code points most terminals draw two columns wide (East Asian Wide and Fullwidth, emoji),
 * taken broadly: counting a narrow one as 2 only cuts a line a column early. */
static bool wide(uint32_t cp)
{
	return (cp >= 0x1100 && cp <= 0x115f) || (cp >= 0x231a && cp <= 0x23ff) ||
	       (cp >= 0x2600 && cp <= 0x27bf) || (cp >= 0x2b1b && cp <= 0x2b55) ||
	       (cp >= 0x2e80 && cp <= 0xa4cf) || (cp >= 0xa960 && cp <= 0xa97f) ||
	       (cp >= 0xac00 && cp <= 0xd7a3) || (cp >= 0xf900 && cp <= 0xfaff) ||
	       (cp >= 0xfe10 && cp <= 0xfe19) || (cp >= 0xfe30 && cp <= 0xfe6f) ||
	       (cp >= 0xff00 && cp <= 0xff60) || (cp >= 0xffe0 && cp <= 0xffe6) || cp >= 0x10000;
}

unsigned escape__width(const char *unit, size_t len)
{
	const uint8_t *p = (const uint8_t *)unit;
	uint32_t cp;

	if (len && p[0] == '\\')
		return (unsigned)len; /* \xNN, or a backslash */
	if (len < 3)
		return len ? 1 : 0;
	if (len == 3)
		cp = (uint32_t)(p[0] & 0x0f) << 12 | (uint32_t)(p[1] & 0x3f) << 6 | (p[2] & 0x3f);
	else
		cp = (uint32_t)(p[0] & 0x07) << 18 | (uint32_t)(p[1] & 0x3f) << 12 |
		     (uint32_t)(p[2] & 0x3f) << 6 | (p[3] & 0x3f);
	return wide(cp) ? 2 : 1;
}

int escape__write(FILE *f, const char *s, size_t len)
{
	while (len) {
		char u[ESCAPE_UNIT_MAX];
		size_t ulen, used = escape__unit(u, &ulen, s, len);

		fwrite(u, 1, ulen, f);
		s += used;
		len -= used;
	}
	return ferror(f) ? -EIO : 0;
}

size_t escape__fit(char *out, size_t size, const char *s, size_t len, unsigned cols)
{
	size_t w = 0;

	while (len) {
		char u[ESCAPE_UNIT_MAX];
		size_t ulen, used = escape__unit(u, &ulen, s, len);
		unsigned uw = escape__width(u, ulen);

		if (ulen > size - w || uw > cols)
			break;
		memcpy(out + w, u, ulen);
		w += ulen;
		cols -= uw;
		s += used;
		len -= used;
	}
	return w;
}

const char *escape__str(char *buf, size_t size, const char *s)
{
	size_t n = escape__fit(buf, size - 1, s, strlen(s), UINT_MAX);

	buf[n] = 0;
	return buf;
}

char *escape__dup(const char *s)
{
	size_t len = strlen(s), size = len * ESCAPE_UNIT_MAX + 1;
	char *out = malloc(size);

	if (!out)
		return NULL;
	escape__str(out, size, s);
	return out;
}
