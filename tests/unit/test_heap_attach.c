// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#include <cmocka.h>

#include "heap_attach.h"

static void write_file(const char *path, const char *text)
{
	FILE *f = fopen(path, "w");

	assert_non_null(f);
	fputs(text, f);
	fclose(f);
}

static void test_heap_attach__static_detection(void **state)
{
	char script[] = "/tmp/heap-attach-test.XXXXXX";
	int fd = mkstemp(script);

	assert_true(fd >= 0);
	close(fd);
	/* this test binary is dynamic: the system libc will be probed for it */
	assert_int_equal(heap_attach__is_static("/proc/self/exe"), 0);
	/* a script runs under a (dynamic) interpreter */
	write_file(script, "#!/bin/sh\necho hi\n");
	assert_int_equal(heap_attach__is_static(script), 0);
	/* neither ELF nor script */
	write_file(script, "plain text\n");
	assert_int_equal(heap_attach__is_static(script), -ENOEXEC);
	unlink(script);
	assert_int_equal(heap_attach__is_static("/nonexistent/x"), -ENOENT);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_heap_attach__static_detection),
	};

	return cmocka_run_group_tests_name("heap_attach", tests, NULL, NULL);
}
