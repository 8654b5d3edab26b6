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

static void test_dwarf_lines__as_addr2line_reads_them(void **state)
{
	static const char *const funcs[] = {"symfix_alpha", "symfix_beta", "symfix_gamma",
					    "__symfix_impl", "main"};
	struct dwlines *d;

	(void)state;
	assert_int_equal(dwlines__open(&d, FIX "symfix-pie.debug"), 0);
	assert_true(dwlines__bytes(d) > 0);
	for (size_t i = 0; i < sizeof(funcs) / sizeof(funcs[0]); i++) {
		uint64_t v = nm_addr(FIX "symfix-pie.nm", funcs[i]);

		for (uint64_t off = 0; off < 8; off += 4) {
			char want[1024];
			const char *file;
			int line, want_line;

			addr2line(FIX "symfix-pie.debug", v + off, want, sizeof(want), &want_line);
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

/* libdw trusts its input: only files root alone could have written are read. */
static void test_dwarf_lines__only_roots_files(void **state)
{
	char tmp[] = "/tmp/dwlines.XXXXXX", cmd[256];
	struct dwlines *d = NULL;
	int fd;

	(void)state;
	if (geteuid())
		skip(); /* run as root by make test */
	fd = mkstemp(tmp);
	assert_true(fd >= 0);
	close(fd);
	snprintf(cmd, sizeof(cmd), "cp " FIX "symfix-pie.debug %s", tmp);
	assert_int_equal(system(cmd), 0);
	assert_int_equal(chmod(tmp, 0644), 0);
	assert_int_equal(dwlines__open(&d, tmp), 0);
	dwlines__free(d);
	assert_int_equal(chmod(tmp, 0664), 0); /* group-writable */
	assert_int_equal(dwlines__open(&d, tmp), -EPERM);
	assert_int_equal(chmod(tmp, 0644), 0);
	assert_int_equal(chown(tmp, 65534, 65534), 0); /* nobody's */
	assert_int_equal(dwlines__open(&d, tmp), -EPERM);
	assert_null(d);
	unlink(tmp);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_dwarf_lines__as_addr2line_reads_them),
		cmocka_unit_test(test_dwarf_lines__no_dwarf_no_lines),
		cmocka_unit_test(test_dwarf_lines__only_roots_files),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
