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
#include <sys/sysmacros.h>
#include <unistd.h>

#include <cmocka.h>

#include "proc/maps.h"
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

/* Collects the names preload__each gives, "|"-joined; stops (returns 7) at "stop". */
struct names {
	char s[256];
};

static int collect(const char *name, size_t nlen, void *arg)
{
	struct names *n = arg;
	size_t have = strlen(n->s);

	snprintf(n->s + have, sizeof(n->s) - have, "%s%.*s", have ? "|" : "", (int)nlen, name);
	return nlen == 4 && !memcmp(name, "stop", 4) ? 7 : 0;
}

static int each(struct names *n, const char *env, size_t len)
{
	n->s[0] = '\0';
	return preload__each(env, len, collect, n);
}

/* An environ's LD_PRELOAD as ld.so reads it: the last one, split on ':' and ' ', empty names
 * skipped, not past the text (no NUL at its end), at most PRELOAD_NAMES_MAX names. */
static void test_preload__each_reads_ldpreload_as_ldso(void **state)
{
	static const char env[] = "A=1\0LD_PRELOAD=/x/a.so\0B=LD_PRELOAD=no\0"
				  "LD_PRELOAD=libj.so.2: /l/s.so::x\0C=3";
	static const char cut[] = {'L', 'D', '_', 'P', 'R', 'E', 'L',
				   'O', 'A', 'D', '=', 'a', ':', 'b'};
	char many[256];
	struct names n;
	int len;

	assert_int_equal(each(&n, env, sizeof(env)), 0);
	assert_string_equal(n.s, "libj.so.2|/l/s.so|x");
	assert_int_equal(each(&n, env, 8), 0); /* "A=1", "LD_P": none */
	assert_string_equal(n.s, "");
	assert_int_equal(each(&n, cut, sizeof(cut)), 0);
	assert_string_equal(n.s, "a|b");
	assert_int_equal(each(&n, "LD_PRELOAD=a:stop:c", 20), 7);
	assert_string_equal(n.s, "a|stop");
	assert_int_equal(each(&n, "LD_PRELOAD=", 12), 0);
	assert_string_equal(n.s, "");
	assert_int_equal(each(&n, "", 0), 0);
	len = snprintf(many, sizeof(many), "LD_PRELOAD=");
	for (int i = 0; i < PRELOAD_NAMES_MAX + 4; i++)
		len += snprintf(many + len, sizeof(many) - (size_t)len, "%c:", 'a' + i);
	assert_int_equal(each(&n, many, (size_t)len), 0);
	assert_int_equal(strlen(n.s), 2 * PRELOAD_NAMES_MAX - 1); /* "a|b|…|p" */
}

/* preload__ahead's stand-in for an ELF file's dynsym: a file beginning "FREE" exports free. */
static bool starts_free(int fd)
{
	char b[4];

	return pread(fd, b, sizeof(b), 0) == (ssize_t)sizeof(b) && !memcmp(b, "FREE", 4);
}

/* A fake process 4242 under <root>/proc: its environ says env (len bytes); its root is
 * <root>/fs, where lib/alloc.so (exporting free), lib/sampler.so and lib/link.so (a link to
 * the sampler) are, the first two mapped.  preload__ahead with the sampler as the probes' file. */
static bool ahead(const char *env, size_t len)
{
	char path[PATH_MAX], fs[PATH_MAX];
	struct maps_entry e[2] = {
		{.start = 0x1000, .end = 0x2000, .exec = true, .path = "/lib/alloc.so"},
		{.start = 0x3000, .end = 0x4000, .exec = true, .path = "/lib/sampler.so"},
	};
	struct maps m = {.entries = e, .count = 2};
	struct stat st;
	int root_fd, fd;
	bool r;

	put("fs/lib/sampler.so", 0644);
	snprintf(path, sizeof(path), "%s/fs/lib/alloc.so", root);
	fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0644);
	assert_true(fd >= 0);
	assert_int_equal(write(fd, "FREE", 4), 4);
	close(fd);
	snprintf(path, sizeof(path), "%s/fs/lib/link.so", root);
	unlink(path);
	assert_int_equal(symlink("/lib/sampler.so", path), 0); /* absolute: inside the root */
	for (int i = 0; i < 2; i++) {
		snprintf(path, sizeof(path), "%s/fs%s", root, e[i].path);
		assert_int_equal(stat(path, &st), 0);
		e[i].inode = st.st_ino;
		e[i].dev_major = major(st.st_dev);
		e[i].dev_minor = minor(st.st_dev);
	}
	put("proc/4242/environ", 0644);
	snprintf(path, sizeof(path), "%s/proc/4242/environ", root);
	fd = open(path, O_WRONLY | O_TRUNC);
	assert_true(fd >= 0);
	assert_int_equal(write(fd, env, len), (ssize_t)len);
	close(fd);
	snprintf(fs, sizeof(fs), "%s/fs", root);
	root_fd = open(fs, O_PATH | O_DIRECTORY);
	assert_true(root_fd >= 0);
	snprintf(path, sizeof(path), "%s/proc", root);
	r = preload__ahead(path, 4242, &m, root_fd, &e[1], starts_free);
	close(root_fd);
	return r;
}

#define AHEAD(s) ahead(s, sizeof(s))

/* Which LD_PRELOAD orders put an allocator ahead of the sampler: paths (a link to the sampler
 * is the sampler) or bare names (the mapped file they end), the sampler not named at all; not
 * one after it, nor a library without free, nor no LD_PRELOAD. */
static void test_preload__ahead_by_ldpreload_order(void **state)
{
	assert_true(AHEAD("LD_PRELOAD=/lib/alloc.so:/lib/sampler.so"));
	assert_false(AHEAD("LD_PRELOAD=/lib/sampler.so:/lib/alloc.so"));
	assert_true(AHEAD("X=1\0LD_PRELOAD=alloc.so sampler.so"));
	assert_false(AHEAD("LD_PRELOAD=sampler.so alloc.so"));
	assert_false(AHEAD("LD_PRELOAD=/lib/link.so:/lib/alloc.so"));
	assert_true(AHEAD("LD_PRELOAD=/lib/alloc.so"));
	assert_false(AHEAD("LD_PRELOAD=/lib/missing.so:/lib/sampler.so"));
	assert_false(AHEAD("LD_PRELOAD=/lib/alloc.so:x\0LD_PRELOAD=/lib/sampler.so:/lib/alloc.so"));
	assert_false(AHEAD("HOME=/"));
	assert_false(AHEAD(""));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_preload__found_in_the_tree_then_installed),
		cmocka_unit_test(test_preload__refuses_writable_and_unsplittable),
		cmocka_unit_test(test_preload__env_keeps_the_users_preload),
		cmocka_unit_test(test_preload__each_reads_ldpreload_as_ldso),
		cmocka_unit_test(test_preload__ahead_by_ldpreload_order),
	};

	return cmocka_run_group_tests_name("preload", tests, setup, teardown);
}
