// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * safe_open against a fake container root under /tmp: absolute symlinks and ".." that would
 * lead to a host file, FIFOs, devices, oversized files, and our own mappings through
 * /proc/self/map_files.  Every open is under alarm(): a FIFO that blocks fails the test.
 */
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
#include <sys/auxv.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cmocka.h>

#include "proc/maps.h"
#include "proc/safe_open.h"

struct fixture {
	char dir[64];  /* holds root/ (the "container") and host/ */
	char root[96]; /* the fake container's root */
	char host[96]; /* a host file the container must not reach */
	int root_fd;
};

static void put(const char *path, const char *text)
{
	FILE *f = fopen(path, "w");

	assert_non_null(f);
	fputs(text, f);
	fclose(f);
}

#define sub(out, base, rel) snprintf(out, sizeof(out), "%s/%s", base, rel)

static int setup(void **state)
{
	struct fixture *fx = calloc(1, sizeof(*fx));
	char p[PATH_MAX];

	strcpy(fx->dir, "/tmp/safe-open.XXXXXX");
	assert_non_null(mkdtemp(fx->dir));
	sub(fx->root, fx->dir, "root");
	assert_int_equal(mkdir(fx->root, 0755), 0);
	sub(p, fx->dir, "host");
	assert_int_equal(mkdir(p, 0755), 0);
	sub(fx->host, fx->dir, "host/secret");
	put(fx->host, "host secret\n");
	sub(p, fx->root, "lib");
	assert_int_equal(mkdir(p, 0755), 0);
	sub(p, fx->root, "lib/real.so");
	put(p, "container file\n");
	fx->root_fd = open(fx->root, O_PATH | O_DIRECTORY | O_CLOEXEC);
	assert_true(fx->root_fd >= 0);
	alarm(10); /* a blocking open is a failure, not a hung suite */
	*state = fx;
	return 0;
}

static int teardown(void **state)
{
	struct fixture *fx = *state;
	char cmd[128];

	alarm(0);
	close(fx->root_fd);
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", fx->dir);
	assert_int_equal(system(cmd), 0);
	free(fx);
	return 0;
}

static void read_fd(int fd, char *buf, size_t size)
{
	ssize_t n = pread(fd, buf, size - 1, 0);

	assert_true(n >= 0);
	buf[n] = '\0';
}

static void test_safe_open__regular_file_inside_root(void **state)
{
	struct fixture *fx = *state;
	char buf[64];
	struct stat st;
	int fd;

	assert_int_equal(safe_open__at(&fd, fx->root_fd, "/lib/real.so", 0, 1024, &st), 0);
	read_fd(fd, buf, sizeof(buf));
	assert_string_equal(buf, "container file\n");
	assert_int_equal(st.st_size, strlen("container file\n"));
	close(fd);
}

/* The attack of a container: a path of its own that is a symlink to a host file. */
static void test_safe_open__absolute_symlink_stays_in_root(void **state)
{
	struct fixture *fx = *state;
	char link[PATH_MAX], inside[PATH_MAX], buf[PATH_MAX + 32];
	int fd;

	sub(link, fx->root, "lib/evil.so");
	assert_int_equal(symlink(fx->host, link), 0);
	/* Resolved in the container's root, the host path does not exist there. */
	assert_int_equal(safe_open__at(&fd, fx->root_fd, "/lib/evil.so", 0, 1024, NULL), -ENOENT);
	/* ... and where it does exist inside, that file is what is opened. */
	snprintf(inside, sizeof(inside), "%s%s", fx->root, fx->dir);
	snprintf(buf, sizeof(buf), "mkdir -p '%s/host'", inside);
	assert_int_equal(system(buf), 0);
	snprintf(inside + strlen(inside), sizeof(inside) - strlen(inside), "/host/secret");
	put(inside, "inside\n");
	assert_int_equal(safe_open__at(&fd, fx->root_fd, "/lib/evil.so", 0, 1024, NULL), 0);
	read_fd(fd, buf, sizeof(buf));
	assert_string_equal(buf, "inside\n");
	close(fd);
	/* On the host (no root) the same link reaches the host file: the confinement is ours. */
	assert_int_equal(safe_open__at(&fd, -1, link, 0, 1024, NULL), 0);
	read_fd(fd, buf, sizeof(buf));
	assert_string_equal(buf, "host secret\n");
	close(fd);
}

static void test_safe_open__dotdot_stays_in_root(void **state)
{
	struct fixture *fx = *state;
	char link[PATH_MAX];
	int fd;

	assert_int_equal(safe_open__at(&fd, fx->root_fd, "/../host/secret", 0, 1024, NULL),
			 -ENOENT);
	assert_int_equal(safe_open__at(&fd, fx->root_fd, "../../../host/secret", 0, 1024, NULL),
			 -ENOENT);
	sub(link, fx->root, "lib/up");
	assert_int_equal(symlink("../../host/secret", link), 0);
	assert_int_equal(safe_open__at(&fd, fx->root_fd, "/lib/up", 0, 1024, NULL), -ENOENT);
}

/* Inside a target's root, its /proc/…/root or /proc/…/fd/N would lead back out to the host. */
static void test_safe_open__magic_links_refused_in_root(void **state)
{
	struct fixture *fx = *state;
	char path[PATH_MAX];
	int root, fd;

	/* Our own root through /proc: a real root that has /proc in it. */
	assert_int_equal(safe_open__root(&root, "/proc", (uint32_t)getpid()), 0);
	snprintf(path, sizeof(path), "/proc/self/root%.*s", 200, fx->host);
	assert_int_equal(safe_open__at(&fd, root, path, 0, 1024, NULL), -ELOOP);
	snprintf(path, sizeof(path), "/proc/%d/fd/%d", getpid(), fx->root_fd);
	assert_int_equal(safe_open__at(&fd, root, path, 0, 1024, NULL), -ELOOP);
	/* Plain paths in that root still work. */
	assert_int_equal(safe_open__at(&fd, root, fx->host, 0, 1024, NULL), 0);
	close(fd);
	close(root);
}

static void test_safe_open__fifo_refused_without_blocking(void **state)
{
	struct fixture *fx = *state;
	char p[PATH_MAX];
	int fd;

	sub(p, fx->root, "lib/fifo");
	assert_int_equal(mkfifo(p, 0666), 0);
	assert_int_equal(safe_open__at(&fd, fx->root_fd, "/lib/fifo", 0, 1024, NULL), -EINVAL);
	assert_int_equal(safe_open__at(&fd, -1, p, 0, 1024, NULL), -EINVAL);
}

static void test_safe_open__devices_and_directories_refused(void **state)
{
	struct fixture *fx = *state;
	char p[PATH_MAX];
	int fd;

	assert_int_equal(safe_open__at(&fd, -1, "/dev/zero", 0, 1024, NULL), -EINVAL);
	assert_int_equal(safe_open__at(&fd, -1, "/tmp", 0, 1024, NULL), -EINVAL);
	sub(p, fx->root, "lib/zero");
	assert_int_equal(symlink("/dev/zero", p), 0);
	/* Inside the root /dev/zero does not exist; on the host it is a device. */
	assert_int_equal(safe_open__at(&fd, fx->root_fd, "/lib/zero", 0, 1024, NULL), -ENOENT);
	assert_int_equal(safe_open__at(&fd, -1, p, 0, 1024, NULL), -EINVAL);
	assert_int_equal(safe_open__at(&fd, -1, p, SAFE_OPEN_NOFOLLOW, 1024, NULL), -ELOOP);
}

static void test_safe_open__size_cap(void **state)
{
	struct fixture *fx = *state;
	char *text;
	size_t len;
	int fd;

	assert_int_equal(safe_open__at(&fd, fx->root_fd, "/lib/real.so", 0, 4, NULL), -EFBIG);
	assert_int_equal(safe_open__at(&fd, fx->root_fd, "/lib/real.so", 0, 0, NULL), 0);
	assert_int_equal(safe_open__read_all(&text, &len, fd, 4), -EFBIG);
	assert_int_equal(safe_open__read_all(&text, &len, fd, 1024), 0);
	assert_int_equal(len, strlen("container file\n"));
	assert_string_equal(text, "container file\n");
	free(text);
	close(fd);
}

/* Our own executable mapping, through map_files, matched against its maps line. */
static void test_safe_open__mapped_checks_the_maps_line(void **state)
{
	struct maps *m = NULL;
	const struct maps_entry *e;
	struct maps_entry other;
	struct stat st, want;
	int fd;

	assert_int_equal(maps__read(&m, "/proc/self/maps"), 0);
	e = maps__find(m, (uint64_t)(uintptr_t)&test_safe_open__mapped_checks_the_maps_line);
	assert_non_null(e);
	assert_int_equal(safe_open__mapped(&fd, "/proc", (uint32_t)getpid(), e, &st), 0);
	assert_int_equal(stat("/proc/self/exe", &want), 0);
	assert_int_equal(st.st_ino, want.st_ino);
	assert_true(safe_open__matches(&st, e));
	close(fd);
	/* The same range with another inode in its maps line: replaced since, refused. */
	other = *e;
	other.inode++;
	assert_int_equal(safe_open__mapped(&fd, "/proc", (uint32_t)getpid(), &other, NULL),
			 -ESTALE);
	/* safe_open__mapping falls back to the path in the root: still not the mapped inode. */
	assert_int_equal(safe_open__mapping(&fd, "/proc", (uint32_t)getpid(), &other, -1), -ESTALE);
	assert_int_equal(safe_open__mapping(&fd, "/proc", (uint32_t)getpid(), e, -1), 0);
	close(fd);
	maps__free(m);
}

static void test_safe_open__fd_path_names_the_file(void **state)
{
	struct fixture *fx = *state;
	char path[64], buf[64];
	int fd, fd2;

	assert_int_equal(safe_open__at(&fd, fx->root_fd, "/lib/real.so", 0, 1024, NULL), 0);
	safe_open__fd_path(path, sizeof(path), fd);
	fd2 = open(path, O_RDONLY);
	assert_true(fd2 >= 0);
	read_fd(fd2, buf, sizeof(buf));
	assert_string_equal(buf, "container file\n");
	close(fd2);
	close(fd);
}

/* Files we write (trace metadata, trace files): 0600, and nothing planted at the name is used. */
static void test_safe_open__create_refuses_what_stands_there(void **state)
{
	struct fixture *fx = *state;
	char path[PATH_MAX], made[PATH_MAX], buf[64];
	int fd;
	mode_t old;
	struct stat st;
	FILE *f;

	old = umask(0); /* the mode asked for, not the umask's */
	assert_int_equal(safe_open__fcreate(&f, fx->root_fd, "new.json"), 0);
	umask(old);
	fputs("ours\n", f);
	assert_int_equal(fclose(f), 0);
	sub(path, fx->root, "new.json");
	assert_int_equal(lstat(path, &st), 0);
	assert_true(S_ISREG(st.st_mode));
	assert_int_equal(st.st_mode & 07777, 0600);
	/* A name used twice is not truncated. */
	assert_int_equal(safe_open__create(&fd, fx->root_fd, "new.json"), -EEXIST);
	assert_int_equal(safe_open__fcreate(&f, fx->root_fd, "new.json"), -EEXIST);
	fd = open(path, O_RDONLY);
	assert_true(fd >= 0);
	read_fd(fd, buf, sizeof(buf));
	assert_string_equal(buf, "ours\n");
	close(fd);
	/* A symlink planted at the name (to a host file, or dangling) is not followed. */
	sub(path, fx->root, "link.json");
	assert_int_equal(symlink(fx->host, path), 0);
	assert_int_equal(safe_open__create(&fd, fx->root_fd, "link.json"), -EEXIST);
	assert_int_equal(safe_open__fcreate(&f, fx->root_fd, "link.json"), -EEXIST);
	fd = open(fx->host, O_RDONLY);
	assert_true(fd >= 0);
	read_fd(fd, buf, sizeof(buf));
	assert_string_equal(buf, "host secret\n");
	close(fd);
	sub(path, fx->root, "dangling.json");
	sub(made, fx->dir, "host/made");
	assert_int_equal(symlink(made, path), 0);
	assert_int_equal(safe_open__create(&fd, fx->root_fd, "dangling.json"), -EEXIST);
	assert_int_equal(access(made, F_OK), -1);
}

int main(void)
{
#define T(name) cmocka_unit_test_setup_teardown(name, setup, teardown)
	const struct CMUnitTest tests[] = {
		T(test_safe_open__regular_file_inside_root),
		T(test_safe_open__absolute_symlink_stays_in_root),
		T(test_safe_open__dotdot_stays_in_root),
		T(test_safe_open__magic_links_refused_in_root),
		T(test_safe_open__fifo_refused_without_blocking),
		T(test_safe_open__devices_and_directories_refused),
		T(test_safe_open__size_cap),
		T(test_safe_open__mapped_checks_the_maps_line),
		T(test_safe_open__fd_path_names_the_file),
		T(test_safe_open__create_refuses_what_stands_there),
	};
#undef T

	return cmocka_run_group_tests_name("safe_open", tests, NULL, NULL);
}
