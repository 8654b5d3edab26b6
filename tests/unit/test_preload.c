// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/* Where the sampler is found and the environment that preloads it (user/proc/preload.c). */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
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

#include "proc/preload.h"

static char root[32];

static void put(const char *rel, mode_t mode)
{
	char path[256], dir[256], *slash;
	int fd;

	snprintf(path, sizeof(path), "%s/%s", root, rel);
	snprintf(dir, sizeof(dir), "%s", path);
	for (slash = strchr(dir + strlen(root) + 1, '/'); slash; slash = strchr(slash + 1, '/')) {
		*slash = '\0';
		mkdir(dir, 0755);
		*slash = '/';
	}
	fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, mode);
	assert_true(fd >= 0);
	close(fd);
	assert_int_equal(chmod(path, mode), 0); /* whatever the umask */
}

static int setup(void **state)
{
	snprintf(root, sizeof(root), "/tmp/test_preload.XXXXXX");
	return mkdtemp(root) ? 0 : -1;
}

static int teardown(void **state)
{
	char cmd[PATH_MAX + 16];

	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", root);
	return system(cmd) ? -1 : 0;
}

static void test_preload__found_in_the_tree_then_installed(void **state)
{
	char exe[PATH_MAX], want[PATH_MAX], out[PATH_MAX];

	/* a source tree: <dir>/bpftrace-prof and <dir>/build/ */
	snprintf(exe, sizeof(exe), "%s/tree/bpftrace-prof", root);
	assert_int_equal(preload__find(out, sizeof(out), exe), -ENOENT);
	put("tree/build/" PRELOAD_LIB, 0644);
	assert_int_equal(preload__find(out, sizeof(out), exe), 0);
	snprintf(want, sizeof(want), "%s/tree/build/" PRELOAD_LIB, root);
	assert_string_equal(out, want);
	/* installed: <prefix>/sbin/bpftrace-prof and <prefix>/lib/bpftrace-prof/ */
	snprintf(exe, sizeof(exe), "%s/usr/sbin/bpftrace-prof", root);
	put("usr/sbin/bpftrace-prof", 0755);
	put("usr/lib/bpftrace-prof/" PRELOAD_LIB, 0644);
	assert_int_equal(preload__find(out, sizeof(out), exe), 0);
	snprintf(want, sizeof(want), "%s/usr/lib/bpftrace-prof/" PRELOAD_LIB, root);
	assert_string_equal(out, want);
	assert_int_equal(preload__find(out, sizeof(out), "bpftrace-prof"), -ENOENT);
}

/* Loaded into every process of CMD's tree: one anybody could have rewritten is refused, and so
 * is a path ld.so would split. */
static void test_preload__refuses_writable_and_unsplittable(void **state)
{
	char exe[PATH_MAX], out[PATH_MAX];

	snprintf(exe, sizeof(exe), "%s/w/bpftrace-prof", root);
	put("w/build/" PRELOAD_LIB, 0666);
	assert_int_equal(preload__find(out, sizeof(out), exe), -EPERM);
	put("w/build/" PRELOAD_LIB, 0664);
	assert_int_equal(preload__find(out, sizeof(out), exe), -EPERM);
	put("w/build/" PRELOAD_LIB, 0644);
	assert_int_equal(preload__find(out, sizeof(out), exe), 0);
	snprintf(exe, sizeof(exe), "%s/a:b/bpftrace-prof", root);
	put("a:b/build/" PRELOAD_LIB, 0644);
	assert_int_equal(preload__find(out, sizeof(out), exe), -EINVAL);
	snprintf(exe, sizeof(exe), "%s/a b/bpftrace-prof", root);
	put("a b/build/" PRELOAD_LIB, 0644);
	assert_int_equal(preload__find(out, sizeof(out), exe), -EINVAL);
	/* a directory where the library should be */
	snprintf(exe, sizeof(exe), "%s/d/bpftrace-prof", root);
	put("d/build/" PRELOAD_LIB "/x", 0644);
	assert_int_equal(preload__find(out, sizeof(out), exe), -EINVAL);
}

/* Ours first, then what the user preloads (their allocator stays next in line). */
static void test_preload__env_keeps_the_users_preload(void **state)
{
	char p[64], b[64];

	assert_int_equal(preload__env(p, sizeof(p), b, sizeof(b), "/l/s.so", NULL, 524288), 0);
	assert_string_equal(p, "LD_PRELOAD=/l/s.so");
	assert_string_equal(b, "BPFTRACE_PROF_SAMPLE_BYTES=524288");
	assert_int_equal(preload__env(p, sizeof(p), b, sizeof(b), "/l/s.so", "", 1), 0);
	assert_string_equal(p, "LD_PRELOAD=/l/s.so");
	assert_int_equal(
		preload__env(p, sizeof(p), b, sizeof(b), "/l/s.so", "/usr/lib/libjemalloc.so.2", 1),
		0);
	assert_string_equal(p, "LD_PRELOAD=/l/s.so:/usr/lib/libjemalloc.so.2");
	assert_int_equal(preload__env(p, 20, b, sizeof(b), "/l/s.so", "/usr/lib/x.so", 1),
			 -ENAMETOOLONG);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_preload__found_in_the_tree_then_installed),
		cmocka_unit_test(test_preload__refuses_writable_and_unsplittable),
		cmocka_unit_test(test_preload__env_keeps_the_users_preload),
	};

	return cmocka_run_group_tests_name("preload", tests, setup, teardown);
}
