// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/* The leak rules (export/suppress.c): the file's syntax, its bounds, and what a rule matches. */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "export/suppress.h"
#include "sym/stackres.h"

static unsigned ndefaults(void)
{
	unsigned n = 0;

	while (suppress__defaults[n])
		n++;
	return n;
}

static struct stackres_frame frame(const char *name, const struct sym_mapping *m)
{
	struct stackres_frame f = {.addr = 0x1000};

	f.sym.name = name;
	f.sym.system_name = name;
	f.sym.map = m;
	return f;
}

static void test_suppress__match_any_frame_or_leaf(void **state)
{
	const struct sym_mapping app = {.path = "/opt/app/bin/server"},
				 lib = {.path = "/usr/lib/libfoo.so.1"};
	struct stackres_frame st[3] = {frame("make_cache", &lib), frame("load", &app),
				       frame("main", &app)};
	const char rules[] = "# a comment\n\n  leaf:libfoo.so.*  \nleak:load\r\n";
	struct suppress *s;
	char err[128];
	unsigned n = ndefaults();

	(void)state;
	assert_int_equal(suppress__new(&s), 0);
	/* none of the built-in rules */
	assert_int_equal(suppress__match(s, st, 3), 0);
	assert_int_equal(suppress__parse(s, rules, strlen(rules), err, sizeof(err)), 0);
	/* the leaf's file base name */
	assert_int_equal(suppress__match(s, st, 3), n + 1);
	/* leaf: only the leaf; leak: any frame, by function name */
	st[0] = frame("other", &app);
	assert_int_equal(suppress__match(s, st, 3), n + 2);
	st[1] = frame("store", &lib);
	assert_int_equal(suppress__match(s, st, 3), 0);
	/* no stack, no match */
	assert_int_equal(suppress__match(s, st, 0), 0);
	suppress__free(s);
}

static void test_suppress__defaults(void **state)
{
	const struct sym_mapping libc = {.path = "/usr/lib/x86_64-linux-gnu/libc.so.6"},
				 py = {.path = "/usr/bin/python3.11"},
				 app = {.path = "/usr/bin/app"};
	struct stackres_frame locale[3] = {frame("_nl_make_l10nflist", &libc),
					   frame("setlocale", &libc), frame("main", &app)};
	struct stackres_frame pymalloc[2] = {frame("new_arena", &py), frame("main", &py)};
	struct stackres_frame ext[2] = {frame("strdup", &libc), frame("PyInit_x", &py)};
	struct suppress *s;

	(void)state;
	assert_int_equal(suppress__new(&s), 0);
	assert_true(suppress__match(s, locale, 3) > 0);
	/* the interpreter's own allocation; a C call from it is the caller's */
	assert_true(suppress__match(s, pymalloc, 2) > 0);
	assert_int_equal(suppress__match(s, ext, 2), 0);
	suppress__free(s);
}

static void test_suppress__bad_lines_refused(void **state)
{
	static const struct {
		const char *text, *why;
	} bad[] = {
		{"leak_pages\n", "line 1: not leak:PATTERN or leaf:PATTERN"},
		{"# ok\nleak:\n", "line 2: not leak:PATTERN or leaf:PATTERN"},
		{"leak:a\nfun:b\n", "line 2: not leak:PATTERN or leaf:PATTERN"},
	};
	struct suppress *s;
	char err[128], *big;
	size_t len;

	(void)state;
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		assert_int_equal(suppress__new(&s), 0);
		assert_int_equal(
			suppress__parse(s, bad[i].text, strlen(bad[i].text), err, sizeof(err)),
			-EINVAL);
		assert_string_equal(err, bad[i].why);
		suppress__free(s);
	}
	assert_int_equal(suppress__new(&s), 0);
	/* a NUL inside a line */
	assert_int_equal(suppress__parse(s, "leak:a\0b\n", 9, err, sizeof(err)), -EINVAL);
	assert_string_equal(err, "line 1: a NUL byte");
	/* a line too long */
	big = malloc(SUPPRESS_MAX_LINE + 10);
	assert_non_null(big);
	memcpy(big, "leak:", 5);
	memset(big + 5, 'x', SUPPRESS_MAX_LINE + 4);
	big[SUPPRESS_MAX_LINE + 9] = '\n';
	assert_int_equal(suppress__parse(s, big, SUPPRESS_MAX_LINE + 10, err, sizeof(err)),
			 -EINVAL);
	free(big);
	/* too many rules */
	len = (size_t)SUPPRESS_MAX_RULES * 7;
	big = malloc(len);
	assert_non_null(big);
	for (size_t i = 0; i < SUPPRESS_MAX_RULES; i++)
		memcpy(big + i * 7, "leak:a\n", 7);
	assert_int_equal(suppress__parse(s, big, len, err, sizeof(err)), -EINVAL);
	assert_non_null(strstr(err, "more than 4096 rules"));
	free(big);
	suppress__free(s);
}

static void test_suppress__load_files(void **state)
{
	char path[] = "/tmp/test_suppress.XXXXXX", err[128];
	struct suppress *s;
	int fd;

	(void)state;
	assert_int_equal(suppress__new(&s), 0);
	assert_int_equal(suppress__load(s, "/nonexistent/rules", err, sizeof(err)), -ENOENT);
	assert_int_equal(suppress__load(s, "/tmp", err, sizeof(err)), -EINVAL);
	assert_string_equal(err, "not a regular file");
	fd = mkstemp(path);
	assert_true(fd >= 0);
	assert_int_equal(write(fd, "leak:x\n", 7), 7);
	close(fd);
	assert_int_equal(suppress__load(s, path, err, sizeof(err)), 0);
	assert_int_equal(truncate(path, SUPPRESS_MAX_FILE + 1), 0);
	assert_int_equal(suppress__load(s, path, err, sizeof(err)), -EFBIG);
	unlink(path);
	suppress__free(s);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_suppress__match_any_frame_or_leaf),
		cmocka_unit_test(test_suppress__defaults),
		cmocka_unit_test(test_suppress__bad_lines_refused),
		cmocka_unit_test(test_suppress__load_files),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
