// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * Names from other processes (function, file, process names) into an SVG: the escaper must
 * turn any bytes into well-formed XML text.  Checked here with a UTF-8 and entity reader of our
 * own, separate from svg.c's: valid UTF-8 out, no markup character, only the five entities,
 * no control character, and the character counts agree.
 */
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "export/svg.h"
#include "profile/profile.h"

/* Bytes of the UTF-8 character at s[0..n), 0 when it is not one (strict, as RFC 3629). */
static size_t utf8_len(const unsigned char *s, size_t n)
{
	uint32_t cp;
	size_t len;

	if (s[0] < 0x80)
		return 1;
	if ((s[0] & 0xe0) == 0xc0)
		len = 2, cp = s[0] & 0x1f;
	else if ((s[0] & 0xf0) == 0xe0)
		len = 3, cp = s[0] & 0x0f;
	else if ((s[0] & 0xf8) == 0xf0)
		len = 4, cp = s[0] & 0x07;
	else
		return 0;
	if (len > n)
		return 0;
	for (size_t i = 1; i < len; i++) {
		if ((s[i] & 0xc0) != 0x80)
			return 0;
		cp = cp << 6 | (s[i] & 0x3f);
	}
	if ((len == 2 && cp < 0x80) || (len == 3 && cp < 0x800) || (len == 4 && cp < 0x10000) ||
	    cp > 0x10ffff || (cp >= 0xd800 && cp <= 0xdfff) || cp == 0xfffe || cp == 0xffff ||
	    (cp >= 0x7f && cp < 0xa0))
		return 0;
	return len;
}

static void check_xml_text(const unsigned char *s, size_t n)
{
	static const char *const entities[] = {"&amp;", "&lt;", "&gt;", "&quot;", "&#39;"};

	for (size_t i = 0; i < n;) {
		size_t len;

		if (s[i] == '<' || s[i] == '>' || s[i] == '"' || s[i] == '\'' || s[i] < 0x20)
			__builtin_trap();
		if (s[i] == '&') {
			bool ok = false;

			for (size_t e = 0; e < 5 && !ok; e++) {
				size_t el = strlen(entities[e]);

				if (n - i >= el && !memcmp(s + i, entities[e], el)) {
					ok = true;
					i += el;
				}
			}
			if (!ok)
				__builtin_trap();
			continue;
		}
		len = utf8_len(s + i, n - i);
		if (!len)
			__builtin_trap();
		i += len;
	}
}

static void escape_and_check(const char *in, size_t max)
{
	char *out = NULL;
	size_t len = 0, chars, all = svg__chars(in);
	FILE *f = open_memstream(&out, &len);

	if (!f)
		return;
	chars = svg__escape(f, in, max);
	if (fclose(f)) {
		free(out);
		return;
	}
	if (chars != (max < all ? max : all))
		__builtin_trap();
	check_xml_text((const unsigned char *)out, len);
	free(out);
}

/* The whole writer with the input as a function's name: it must not crash or leak. */
static void write_profile(const char *name)
{
	struct svg_opts o = {.type = 0, .cmdline = name, .min_share = SVG_MIN_SHARE};
	struct profile *p = NULL;
	uint32_t fn, loc;
	int64_t v[] = {3};
	char *out = NULL;
	size_t len = 0;
	FILE *f;

	if (profile__new(&p, "cpu"))
		return;
	if (!profile__add_type(p, "samples", "count") &&
	    !profile__function(p, &fn, name, name, name, 1) &&
	    !profile__location(p, &loc, 0x10, 0, fn, 2) &&
	    !profile__add_sample(p, 1, 1, name, name, &loc, 1, v, 0)) {
		f = open_memstream(&out, &len);
		if (f) {
			svg__write(p, f, &o);
			fclose(f);
		}
		free(out);
	}
	profile__free(p);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char *s = malloc(size + 1);

	if (!s)
		return 0;
	memcpy(s, data, size);
	s[size] = 0;
	escape_and_check(s, SIZE_MAX);
	escape_and_check(s, size ? data[0] % 16 : 0);
	write_profile(s);
	free(s);
	return 0;
}
