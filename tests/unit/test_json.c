// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "util/json.h"

/* json__write_string of s[0..n), as a C string (the output never holds a NUL). */
static char *json(const char *s, size_t n)
{
	char *buf = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&buf, &len);

	assert_non_null(f);
	assert_int_equal(json__write_string(f, s, n), 0);
	assert_int_equal(fclose(f), 0);
	assert_int_equal(strlen(buf), len);
	return buf;
}

#define expect_json(in, out)                          \
	do {                                          \
		char *got = json(in, sizeof(in) - 1); \
		assert_string_equal(got, out);        \
		free(got);                            \
	} while (0)

static void test_json__plain_names_unchanged(void **state)
{
	(void)state;
	expect_json("Calc::alpha", "\"Calc::alpha\"");
	expect_json("", "\"\"");
	expect_json("java.lang.String.<init>", "\"java.lang.String.<init>\"");
}

static void test_json__quotes_backslashes_and_controls(void **state)
{
	(void)state;
	expect_json("a\"b\\c", "\"a\\\"b\\\\c\"");
	expect_json("l1\nl2\r\tx", "\"l1\\nl2\\r\\tx\"");
	expect_json("\x01\x1f\x7f\b\f", "\"\\u0001\\u001f\\u007f\\u0008\\u000c\"");
	expect_json("a\0b", "\"a\\u0000b\"");
	/* A name that tries to close the string and add a key. */
	expect_json("x\",\"ph\":\"E", "\"x\\\",\\\"ph\\\":\\\"E\"");
}

static void test_json__line_separators_escaped(void **state)
{
	(void)state;
	expect_json("a\xe2\x80\xa8"
		    "b\xe2\x80\xa9",
		    "\"a\\u2028b\\u2029\"");
	/* Their neighbours are ordinary characters. */
	expect_json("\xe2\x80\xa7\xe2\x80\xaa", "\"\xe2\x80\xa7\xe2\x80\xaa\"");
}

static void test_json__valid_utf8_kept(void **state)
{
	(void)state;
	expect_json("caf\xc3\xa9", "\"caf\xc3\xa9\"");
	expect_json("\xe4\xb8\xad\xf0\x9f\x98\x80\xf4\x8f\xbf\xbf",
		    "\"\xe4\xb8\xad\xf0\x9f\x98\x80\xf4\x8f\xbf\xbf\"");
}

static void test_json__invalid_utf8_replaced(void **state)
{
	(void)state;
	/* A lone continuation byte, a lead without its continuation, and bytes never in UTF-8. */
	expect_json("a\x80z", "\"a\xef\xbf\xbdz\"");
	expect_json("a\xc3z", "\"a\xef\xbf\xbdz\"");
	expect_json("\xfe\xff", "\"\xef\xbf\xbd\xef\xbf\xbd\"");
	/* Overlong '/' and NUL: each byte replaced, never decoded to the ASCII they spell. */
	expect_json("\xc0\xaf\xc0\x80", "\"\xef\xbf\xbd\xef\xbf\xbd\xef\xbf\xbd\xef\xbf\xbd\"");
	/* A surrogate (ED A0 80) and a code point past U+10FFFF (F4 90 80 80). */
	expect_json("\xed\xa0\x80", "\"\xef\xbf\xbd\xef\xbf\xbd\xef\xbf\xbd\"");
	expect_json("\xf4\x90\x80\x80", "\"\xef\xbf\xbd\xef\xbf\xbd\xef\xbf\xbd\xef\xbf\xbd\"");
	/* Truncated at the end: the quote still closes the string. */
	expect_json("ok\xe2\x82", "\"ok\xef\xbf\xbd\xef\xbf\xbd\"");
	/* A replaced byte does not swallow the quote after it. */
	expect_json("\xc3\"", "\"\xef\xbf\xbd\\\"\"");
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_json__plain_names_unchanged),
		cmocka_unit_test(test_json__quotes_backslashes_and_controls),
		cmocka_unit_test(test_json__line_separators_escaped),
		cmocka_unit_test(test_json__valid_utf8_kept),
		cmocka_unit_test(test_json__invalid_utf8_replaced),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
