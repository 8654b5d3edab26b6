// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
#include "export/json.h"

#include <errno.h>
#include <stdint.h>

/* Length of the well-formed UTF-8 sequence at p (at most n bytes), 0 when there is none:
 * overlong forms, surrogates and code points past U+10FFFF are not well formed. */
static size_t utf8_len(const uint8_t *p, size_t n)
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
	/* The second byte's range narrows for the edge leads (Unicode table 3-7). */
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

int json__write_string(FILE *f, const void *s, size_t len)
{
	static const char hex[] = "0123456789abcdef";
	const uint8_t *p = s, *end = p + len;

	putc('"', f);
	while (p < end) {
		size_t n = utf8_len(p, (size_t)(end - p));

		if (!n) {
			fputs("\xef\xbf\xbd", f); /* U+FFFD for this byte; go on from the next */
			p++;
			continue;
		}
		if (n == 3 && p[0] == 0xe2 && p[1] == 0x80 && (p[2] == 0xa8 || p[2] == 0xa9)) {
			fputs(p[2] == 0xa8 ? "\\u2028" : "\\u2029", f);
		} else if (n > 1) {
			fwrite(p, 1, n, f);
		} else if (*p == '"' || *p == '\\') {
			putc('\\', f);
			putc(*p, f);
		} else if (*p == '\n') {
			fputs("\\n", f);
		} else if (*p == '\t') {
			fputs("\\t", f);
		} else if (*p == '\r') {
			fputs("\\r", f);
		} else if (*p < 0x20 || *p == 0x7f) {
			fputs("\\u00", f);
			putc(hex[*p >> 4], f);
			putc(hex[*p & 15], f);
		} else {
			putc(*p, f);
		}
		p += n;
	}
	putc('"', f);
	return ferror(f) ? -EIO : 0;
}
