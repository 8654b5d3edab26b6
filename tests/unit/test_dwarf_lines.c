// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * Source lines from a debug file's DWARF, checked against binutils' addr2line reading the same
 * file (an independent reader of .debug_line), for the symfix fixture's functions; files without
 * DWARF or not ELF refused.
 */
#include <errno.h>
#include <inttypes.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cmocka.h>

#include "fixture_nm.h"
#include "sym/dwarf_lines.h"

#define FIX "build/fixtures/"

/* addr2line's "file:line" of vaddr in path. */
static void addr2line(const char *path, uint64_t vaddr, char *file, size_t size, int *line)
{
	char cmd[512], out[1024], *colon;
	FILE *p;

	snprintf(cmd, sizeof(cmd), "addr2line -e '%s' 0x%" PRIx64, path, vaddr);
	p = popen(cmd, "r");
	assert_non_null(p);
	assert_non_null(fgets(out, sizeof(out), p));
	pclose(p);
	out[strcspn(out, " \n")] = '\0';
	colon = strrchr(out, ':');
	assert_non_null(colon);
	*colon = '\0';
	*line = atoi(colon + 1);
	snprintf(file, size, "%s", out);
}

/* Every line of some functions of path (addresses from nm listing) as addr2line has it. */
static void check_as_addr2line(const char *path, const char *nm)
{
	static const char *const funcs[] = {"symfix_alpha", "symfix_beta", "symfix_gamma",
					    "__symfix_impl", "main"};
	struct dwlines *d;

	assert_int_equal(dwlines__open(&d, path), 0);
	assert_true(dwlines__bytes(d) > 0);
	for (size_t i = 0; i < sizeof(funcs) / sizeof(funcs[0]); i++) {
		uint64_t v = nm_addr(nm, funcs[i]);

		for (uint64_t off = 0; off < 8; off += 4) {
			char want[1024];
			const char *file;
			int line, want_line;

			addr2line(path, v + off, want, sizeof(want), &want_line);
			assert_true(want_line > 0);
			assert_int_equal(dwlines__lookup(d, v + off, &file, &line), 0);
			assert_int_equal(line, want_line);
			assert_string_equal(file, want);
		}
	}
	/* Outside every unit: nothing. */
	{
		const char *file;
		int line;

		assert_int_equal(dwlines__lookup(d, 0x10, &file, &line), -ENOENT);
	}
	dwlines__free(d);
}

static void test_dwarf_lines__as_addr2line_reads_them(void **state)
{
	(void)state;
	check_as_addr2line(FIX "symfix-pie.debug", FIX "symfix-pie.nm");   /* gcc, DWARF 5 */
	check_as_addr2line(FIX "symfix-pie-z.debug", FIX "symfix-pie.nm"); /* compressed */
	/* DWARF 4: the compilation directory from .debug_info's unit */
	check_as_addr2line(FIX "symfix-dwarf4", FIX "symfix-dwarf4.nm");
}

static void test_dwarf_lines__no_dwarf_no_lines(void **state)
{
	struct dwlines *d = (void *)1;

	(void)state;
	assert_int_equal(dwlines__open(&d, FIX "symfix-stripped"), -ENOENT);
	assert_null(d);
	assert_int_equal(dwlines__open(&d, "tests/fixtures/symfix.c"), -ENOEXEC);
	assert_int_equal(dwlines__open(&d, "/nonexistent"), -ENOENT);
	assert_int_equal(dwlines__open(&d, "/dev/zero"), -EINVAL); /* not a regular file */
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_dwarf_lines__as_addr2line_reads_them),
		cmocka_unit_test(test_dwarf_lines__no_dwarf_no_lines),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
