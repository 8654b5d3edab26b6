// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "util/escape.h"

/* s[0..len) through escape__write, as a NUL-terminated string to free. */
static char *escaped(const char *s, size_t len)
{
	char *out = NULL;
	size_t n = 0;
	FILE *f = open_memstream(&out, &n);

	assert_non_null(f);
	assert_int_equal(escape__write(f, s, len), 0);
	assert_int_equal(fclose(f), 0);
	return out;
}

static void check(const char *in, size_t len, const char *want)
{
	char *out = escaped(in, len);

	assert_string_equal(out, want);
	free(out);
}

#define CHECK(in, want) check(in, sizeof(in) - 1, want)

static void test_escape__c0_controls(void **state)
{
	CHECK("\x1b]0;pwn\x07", "\\x1b]0;pwn\\x07");
	CHECK("a\nb\tc\rd", "a\\x0ab\\x09c\\x0dd");
	CHECK("\x01\x1f", "\\x01\\x1f");
	/* A NUL inside the bytes given is a byte like the others. */
	check("a\0b", 3, "a\\x00b");
	/* The printable ASCII neighbours stay. */
	CHECK(" ~!", " ~!");
}

static void test_escape__del(void **state)
{
	CHECK("\x7e\x7f", "~\\x7f");
}

/* U+007F is DEL (above), U+0080-U+009F are C1 controls, U+00A0 (no-break space) is text. */
static void test_escape__c1_boundaries(void **state)
{
	CHECK("\xc2\x80", "\\xc2\\x80");
	CHECK("\xc2\x9b"
	      "2J",
	      "\\xc2\\x9b2J"); /* CSI */
	CHECK("\xc2\x9f", "\\xc2\\x9f");
	CHECK("\xc2\xa0", "\xc2\xa0");
	CHECK("\xc3\xa9t\xc3\xa9", "\xc3\xa9t\xc3\xa9");
}

static void test_escape__valid_utf8_kept(void **state)
{
	CHECK("\xdf\xbf", "\xdf\xbf");				       /* U+07FF */
	CHECK("\xe0\xa0\x80", "\xe0\xa0\x80");			       /* U+0800 */
	CHECK("\xe6\x97\xa5\xe6\x9c\xac", "\xe6\x97\xa5\xe6\x9c\xac"); /* CJK */
	CHECK("\xef\xbf\xbf", "\xef\xbf\xbf");			       /* U+FFFF */
	CHECK("\xf0\x90\x80\x80", "\xf0\x90\x80\x80");		       /* U+10000 */
	CHECK("\xf0\x9f\x98\x80", "\xf0\x9f\x98\x80");		       /* an emoji */
	CHECK("\xf4\x8f\xbf\xbf", "\xf4\x8f\xbf\xbf");		       /* U+10FFFF, the last */
}

static void test_escape__invalid_utf8(void **state)
{
	/* Overlong forms of '/', NUL and U+07FF. */
	CHECK("\xc0\xaf", "\\xc0\\xaf");
	CHECK("\xc1\x80", "\\xc1\\x80");
	CHECK("\xe0\x80\xaf", "\\xe0\\x80\\xaf");
	CHECK("\xe0\x9f\xbf", "\\xe0\\x9f\\xbf");
	CHECK("\xf0\x8f\xbf\xbf", "\\xf0\\x8f\\xbf\\xbf");
	/* Surrogates U+D800 and U+DFFF; U+D7FF just below them is text. */
	CHECK("\xed\xa0\x80", "\\xed\\xa0\\x80");
	CHECK("\xed\xbf\xbf", "\\xed\\xbf\\xbf");
	CHECK("\xed\x9f\xbf", "\xed\x9f\xbf");
	/* Past U+10FFFF, and lead bytes no character has. */
	CHECK("\xf4\x90\x80\x80", "\\xf4\\x90\\x80\\x80");
	CHECK("\xf5\x80\x80\x80", "\\xf5\\x80\\x80\\x80");
	CHECK("\xfe\xff", "\\xfe\\xff");
	/* A lone continuation byte. */
	CHECK("a\x80z", "a\\x80z");
}

/* A sequence cut short: each of its bytes escaped, and what follows read afresh. */
static void test_escape__truncated_sequences(void **state)
{
	CHECK("\xe6\x97", "\\xe6\\x97");
	CHECK("\xe6\x97z", "\\xe6\\x97z");
	CHECK("\xf0\x9f\x98", "\\xf0\\x9f\\x98");
	CHECK("\xf0\x9f\x98\xc3\xa9", "\\xf0\\x9f\\x98\xc3\xa9");
	CHECK("\xc3", "\\xc3");
	/* The length given cuts a character that the memory goes on with. */
	check("\xc3\xa9", 1, "\\xc3");
}

static void test_escape__backslash_kept(void **state)
{
	CHECK("C:\\dir\\x1b", "C:\\dir\\x1b");
}

/* Into a buffer: always terminated, cut at a whole unit, never inside an escape or a
 * character. */
static void test_escape__str_cuts_whole_units(void **state)
{
	char buf[8];

	assert_string_equal(escape__str(buf, sizeof(buf), "ab\x1b"), "ab\\x1b");
	assert_string_equal(escape__str(buf, sizeof(buf), "abcd\x1b"), "abcd");
	assert_string_equal(escape__str(buf, sizeof(buf), "abcde\xe6\x97\xa5"), "abcde");
	assert_string_equal(escape__str(buf, sizeof(buf), "abcd\xe6\x97\xa5"), "abcd\xe6\x97\xa5");
	assert_string_equal(escape__str(buf, 1, "abc"), "");
}

/* escape__fit counts columns: an escape takes 4, a wide character 2, others 1. */
static void test_escape__fit_counts_columns(void **state)
{
	const char *wide = "\xe6\x97\xa5\xe6\x9c\xac\xe8\xaa\x9e"; /* 3 characters, 6 columns */
	char out[64];

	assert_int_equal(escape__fit(out, sizeof(out), wide, strlen(wide), 6), 9);
	assert_int_equal(escape__fit(out, sizeof(out), wide, strlen(wide), 5), 6);
	assert_int_equal(escape__fit(out, sizeof(out), "\xc3\xa9\xc3\xa9", 4, 2), 4);
	assert_int_equal(escape__fit(out, sizeof(out), "a\x1b", 2, 4), 1);
	assert_int_equal(escape__fit(out, sizeof(out), "a\x1b", 2, 5), 5);
	assert_memory_equal(out, "a\\x1b", 5);
	/* An emoji, 4 bytes, 2 columns. */
	assert_int_equal(escape__fit(out, sizeof(out), "\xf0\x9f\x98\x80", 4, 1), 0);
	assert_int_equal(escape__fit(out, sizeof(out), "\xf0\x9f\x98\x80", 4, 2), 4);
	/* The buffer's size bounds it too. */
	assert_int_equal(escape__fit(out, 3, "a\x1b", 2, 100), 1);
}

static void test_escape__dup(void **state)
{
	char *s = escape__dup("\x1b[31mred\xff");

	assert_non_null(s);
	assert_string_equal(s, "\\x1b[31mred\\xff");
	free(s);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_escape__c0_controls),
		cmocka_unit_test(test_escape__del),
		cmocka_unit_test(test_escape__c1_boundaries),
		cmocka_unit_test(test_escape__valid_utf8_kept),
		cmocka_unit_test(test_escape__invalid_utf8),
		cmocka_unit_test(test_escape__truncated_sequences),
		cmocka_unit_test(test_escape__backslash_kept),
		cmocka_unit_test(test_escape__str_cuts_whole_units),
		cmocka_unit_test(test_escape__fit_counts_columns),
		cmocka_unit_test(test_escape__dup),
	};

	return cmocka_run_group_tests_name("escape", tests, NULL, NULL);
}
