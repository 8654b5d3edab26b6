// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * proc/asuser: a status file's credentials, and files opened as another user by a real child:
 * the modes and owners that allow or refuse it, groups, no capability left even at fsuid 0, and
 * the kernel file systems refused whatever the rights.  The opening tests need root (skipped
 * otherwise): as the user they run as, nothing could be refused.
 */
#include <errno.h>
#include <fcntl.h>
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

#include "proc/asuser.h"

static const char status_text[] = "Name:\tpython3\nUmask:\t0022\nState:\tS (sleeping)\n"
				  "Uid:\t1000\t1001\t1002\t1003\nGid:\t2000\t2001\t2002\t2003\n"
				  "FDSize:\t64\nGroups:\t4 24 27 \nNStgid:\t42\n";

static void test_asuser__parse_status(void **state)
{
	struct asuser_cred c;
	char text[4096], *p;

	(void)state;
	assert_int_equal(asuser__parse_status(&c, status_text, strlen(status_text)), 0);
	assert_int_equal(c.fsuid, 1003); /* the fourth field: file system ids */
	assert_int_equal(c.fsgid, 2003);
	assert_int_equal(c.ngroups, 3);
	assert_int_equal(c.groups[0], 4);
	assert_int_equal(c.groups[2], 27);
	/* No groups at all. */
	snprintf(text, sizeof(text), "Uid:\t0\t0\t0\t5\nGid:\t0\t0\t0\t6\nGroups:\n");
	assert_int_equal(asuser__parse_status(&c, text, strlen(text)), 0);
	assert_int_equal(c.ngroups, 0);
	assert_int_equal(c.fsuid, 5);
	/* More groups than kept: the first ASUSER_GROUPS_MAX (fewer rights, never more). */
	p = text + sprintf(text, "Uid:\t1\t1\t1\t1\nGid:\t1\t1\t1\t1\nGroups:\t");
	for (int i = 0; i < ASUSER_GROUPS_MAX + 10; i++)
		p += sprintf(p, "%d ", 100 + i);
	strcpy(p, "\n");
	assert_int_equal(asuser__parse_status(&c, text, strlen(text)), 0);
	assert_int_equal(c.ngroups, ASUSER_GROUPS_MAX);
	assert_int_equal(c.groups[ASUSER_GROUPS_MAX - 1], 100 + ASUSER_GROUPS_MAX - 1);
	/* Missing or malformed lines. */
	snprintf(text, sizeof(text), "Uid:\t0\t0\t0\t5\nGid:\t0\t0\t0\t6\n");
	assert_int_equal(asuser__parse_status(&c, text, strlen(text)), -EINVAL);
	snprintf(text, sizeof(text), "Uid:\t0\t0\t5\nGid:\t0\t0\t0\t6\nGroups:\n");
	assert_int_equal(asuser__parse_status(&c, text, strlen(text)), -EINVAL);
	snprintf(text, sizeof(text), "Uid:\t0\t0\t0\t99999999999\nGid:\t0\t0\t0\t6\nGroups:\n");
	assert_int_equal(asuser__parse_status(&c, text, strlen(text)), -EINVAL);
	snprintf(text, sizeof(text), "Uid:\t0\t0\t0\t5\nGid:\t0\t0\t0\t6\nGroups:\t1 x\n");
	assert_int_equal(asuser__parse_status(&c, text, strlen(text)), -EINVAL);
}

/* Our own status, read through our /proc directory. */
static void test_asuser__read_cred_self(void **state)
{
	struct asuser_cred c;
	int dir = open("/proc/self", O_PATH | O_DIRECTORY);

	(void)state;
	assert_true(dir >= 0);
	assert_int_equal(asuser__read_cred(&c, dir), 0);
	assert_int_equal(c.fsuid, (uint32_t)geteuid());
	assert_int_equal(c.fsgid, (uint32_t)getegid());
	close(dir);
}

struct files {
	char dir[64];
	char root_only[96];  /* root's, 0600 */
	char others[96];     /* uid 1's, 0644 */
	char uid1_only[96];  /* uid 1's, 0600 */
	char group_only[96]; /* uid 1's, group 4242, 0640 */
};

static void put(const char *path, const char *text, uid_t uid, gid_t gid, mode_t mode)
{
	FILE *f = fopen(path, "w");

	assert_non_null(f);
	fputs(text, f);
	assert_int_equal(fclose(f), 0);
	assert_int_equal(chown(path, uid, gid), 0);
	assert_int_equal(chmod(path, mode), 0);
}

static void make_files(struct files *x)
{
	snprintf(x->dir, sizeof(x->dir), "/tmp/asuser.XXXXXX");
	assert_non_null(mkdtemp(x->dir));
	assert_int_equal(chmod(x->dir, 0755), 0);
	snprintf(x->root_only, sizeof(x->root_only), "%s/root-only", x->dir);
	snprintf(x->others, sizeof(x->others), "%s/others", x->dir);
	snprintf(x->uid1_only, sizeof(x->uid1_only), "%s/uid1-only", x->dir);
	snprintf(x->group_only, sizeof(x->group_only), "%s/group-only", x->dir);
	put(x->root_only, "root's secret\n", 0, 0, 0600);
	put(x->others, "readable\n", 1, 1, 0644);
	put(x->uid1_only, "uid 1's secret\n", 1, 1, 0600);
	put(x->group_only, "group 4242's\n", 1, 4242, 0640);
}

static void remove_files(struct files *x)
{
	unlink(x->root_only);
	unlink(x->others);
	unlink(x->uid1_only);
	unlink(x->group_only);
	rmdir(x->dir);
}

static void expect_text(int fd, const char *text)
{
	char buf[128] = {0};

	assert_true(fd >= 0);
	assert_int_equal(read(fd, buf, sizeof(buf) - 1), (ssize_t)strlen(text));
	assert_string_equal(buf, text);
	close(fd);
}

/* uid 65534 without groups: its rights, and the kernel's files refused however readable. */
static void test_asuser__opens_as_nobody(void **state)
{
	struct asuser_cred nobody = {.fsuid = 65534, .fsgid = 65534};
	struct files x;
	const char *paths[6];
	int fds[6], root;

	(void)state;
	if (geteuid())
		skip();
	make_files(&x);
	paths[0] = x.root_only;
	paths[1] = x.others;
	paths[2] = "/proc/self/environ"; /* readable, but ours: the secret the issue names */
	paths[3] = "/dev/null";
	paths[4] = "/sys/kernel/notes";
	paths[5] = "/nonexistent/file.py";
	root = open("/", O_PATH | O_DIRECTORY | O_CLOEXEC);
	assert_true(root >= 0);
	assert_int_equal(asuser__open(fds, &nobody, root, paths, 6, 1 << 20, 5000), 0);
	assert_int_equal(fds[0], -EACCES);
	expect_text(fds[1], "readable\n");
	assert_int_equal(fds[2], -EXDEV);
	assert_int_equal(fds[3], -EXDEV);
	assert_int_equal(fds[4], -EXDEV);
	assert_int_equal(fds[5], -ENOENT);
	/* Too large. */
	assert_int_equal(asuser__open(fds, &nobody, root, paths + 1, 1, 4, 5000), 0);
	assert_int_equal(fds[0], -EFBIG);
	close(root);
	remove_files(&x);
}

/* fsuid 0 alone is no longer root: a file of uid 1 with mode 0600, which we (root, with
 * CAP_DAC_OVERRIDE) read, is refused; root's own 0600 file is not (its owner). */
static void test_asuser__no_capabilities(void **state)
{
	struct asuser_cred root_user = {.fsuid = 0, .fsgid = 0};
	struct files x;
	const char *paths[2];
	int fds[2], root, fd;

	(void)state;
	if (geteuid())
		skip();
	make_files(&x);
	fd = open(x.uid1_only, O_RDONLY);
	expect_text(fd, "uid 1's secret\n"); /* we can: the child must not */
	paths[0] = x.uid1_only;
	paths[1] = x.root_only;
	root = open("/", O_PATH | O_DIRECTORY | O_CLOEXEC);
	assert_true(root >= 0);
	assert_int_equal(asuser__open(fds, &root_user, root, paths, 2, 1 << 20, 5000), 0);
	assert_int_equal(fds[0], -EACCES);
	expect_text(fds[1], "root's secret\n");
	close(root);
	remove_files(&x);
}

/* Supplementary groups count: group 4242's 0640 file with and without the group. */
static void test_asuser__groups(void **state)
{
	struct asuser_cred with = {
		.fsuid = 65534, .fsgid = 65534, .ngroups = 2, .groups = {7, 4242}};
	struct asuser_cred without = {.fsuid = 65534, .fsgid = 65534, .ngroups = 1, .groups = {7}};
	struct files x;
	const char *path;
	int fd, root;

	(void)state;
	if (geteuid())
		skip();
	make_files(&x);
	path = x.group_only;
	root = open("/", O_PATH | O_DIRECTORY | O_CLOEXEC);
	assert_true(root >= 0);
	assert_int_equal(asuser__open(&fd, &with, root, &path, 1, 1 << 20, 5000), 0);
	expect_text(fd, "group 4242's\n");
	assert_int_equal(asuser__open(&fd, &without, root, &path, 1, 1 << 20, 5000), 0);
	assert_int_equal(fd, -EACCES);
	close(root);
	remove_files(&x);
}

/* Inside a root: an absolute symlink stays in it. */
static void test_asuser__inside_root(void **state)
{
	struct asuser_cred nobody = {.fsuid = 65534, .fsgid = 65534};
	char dir[] = "/tmp/asuser-root.XXXXXX", p[128];
	const char *paths[2] = {"/app/main.py", "/app/link.py"};
	int fds[2], root;

	(void)state;
	if (geteuid())
		skip();
	assert_non_null(mkdtemp(dir));
	assert_int_equal(chmod(dir, 0755), 0);
	snprintf(p, sizeof(p), "%s/app", dir);
	assert_int_equal(mkdir(p, 0755), 0);
	snprintf(p, sizeof(p), "%s/app/main.py", dir);
	put(p, "print(1)\n", 0, 0, 0644);
	snprintf(p, sizeof(p), "%s/app/link.py", dir);
	assert_int_equal(symlink("/app/main.py", p), 0);
	root = open(dir, O_PATH | O_DIRECTORY | O_CLOEXEC);
	assert_true(root >= 0);
	assert_int_equal(asuser__open(fds, &nobody, root, paths, 2, 1 << 20, 5000), 0);
	expect_text(fds[0], "print(1)\n");
	expect_text(fds[1], "print(1)\n");
	close(root);
	unlink(p);
	snprintf(p, sizeof(p), "%s/app/main.py", dir);
	unlink(p);
	snprintf(p, sizeof(p), "%s/app", dir);
	rmdir(p);
	rmdir(dir);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_asuser__parse_status),
		cmocka_unit_test(test_asuser__read_cred_self),
		cmocka_unit_test(test_asuser__opens_as_nobody),
		cmocka_unit_test(test_asuser__no_capabilities),
		cmocka_unit_test(test_asuser__groups),
		cmocka_unit_test(test_asuser__inside_root),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
