// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
#include <limits.h>
#include <errno.h>
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

#include "proc/cmdpath.h"

static void test_cmdpath__searches_path_in_order(void **state)
{
	char dir1[] = "/tmp/cmdpath1.XXXXXX", dir2[] = "/tmp/cmdpath2.XXXXXX";
	char exe[PATH_MAX], path[2 * PATH_MAX], out[PATH_MAX], *old = getenv("PATH");
	char *saved = old ? strdup(old) : NULL;
	FILE *f;

	assert_non_null(mkdtemp(dir1));
	assert_non_null(mkdtemp(dir2));
	/* only dir2 holds an executable "tool"; dir1 holds a non-executable one */
	snprintf(exe, sizeof(exe), "%s/tool", dir1);
	f = fopen(exe, "w");
	assert_non_null(f);
	fclose(f);
	snprintf(exe, sizeof(exe), "%s/tool", dir2);
	f = fopen(exe, "w");
	assert_non_null(f);
	fclose(f);
	assert_int_equal(chmod(exe, 0755), 0);
	snprintf(path, sizeof(path), "%s:%s", dir1, dir2);
	setenv("PATH", path, 1);

	assert_int_equal(cmdpath__resolve(out, sizeof(out), "tool"), 0);
	assert_string_equal(out, exe);
	assert_int_equal(cmdpath__resolve(out, sizeof(out), "no-such-tool"), -ENOENT);
	/* a name with a slash is taken as given */
	assert_int_equal(cmdpath__resolve(out, sizeof(out), exe), 0);
	assert_string_equal(out, exe);
	assert_int_equal(cmdpath__resolve(out, sizeof(out), "/nonexistent/tool"), -ENOENT);

	if (saved)
		setenv("PATH", saved, 1);
	free(saved);
	unlink(exe);
	snprintf(exe, sizeof(exe), "%s/tool", dir1);
	unlink(exe);
	rmdir(dir1);
	rmdir(dir2);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_cmdpath__searches_path_in_order),
	};

	return cmocka_run_group_tests_name("cmdpath", tests, NULL, NULL);
}
