// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
#include "util/json.h"

#include <errno.h>
#include <stdint.h>

#include "util/escape.h"

int json__write_string(FILE *f, const void *s, size_t len)
{
	static const char hex[] = "0123456789abcdef";
	const uint8_t *p = s, *end = p + len;

	putc('"', f);
	while (p < end) {
		size_t n = escape__utf8_len(p, (size_t)(end - p));

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
