// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
#include <dirent.h>
#include <errno.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmocka.h>

#include "export/output.h"

struct fixture {
	char dir[64];
	char path[128];
};

static int setup(void **state)
{
	struct fixture *fx = calloc(1, sizeof(*fx));

	if (!fx)
		return -1;
	strcpy(fx->dir, "/tmp/test_output.XXXXXX");
	if (!mkdtemp(fx->dir)) {
		free(fx);
		return -1;
	}
	snprintf(fx->path, sizeof(fx->path), "%s/out.pb.gz", fx->dir);
	*state = fx;
	return 0;
}

static int teardown(void **state)
{
	struct fixture *fx = *state;
	char cmd[128];

	chmod(fx->dir, 0700);
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", fx->dir);
	if (system(cmd) != 0)
		return -1;
	free(fx);
	return 0;
}

/* Number of entries in dir other than . and .., and the first one's name. */
static int entries(const char *dir, char *first, size_t len)
{
	DIR *d = opendir(dir);
	struct dirent *e;
	int n = 0;

	assert_non_null(d);
	while ((e = readdir(d))) {
		if (!strcmp(e->d_name, ".") || !strcmp(e->d_name, ".."))
			continue;
		if (!n && first)
			snprintf(first, len, "%s", e->d_name);
		n++;
	}
	closedir(d);
	return n;
}

static void read_file(const char *path, char *buf, size_t len)
{
	FILE *f = fopen(path, "r");
	size_t n;

	assert_non_null(f);
	n = fread(buf, 1, len - 1, f);
	buf[n] = '\0';
	fclose(f);
}

static void write_file(const char *path, const char *s)
{
	FILE *f = fopen(path, "w");

	assert_non_null(f);
	fputs(s, f);
	assert_int_equal(fclose(f), 0);
}

static void test_output__atomic_rename(void **state)
{
	struct fixture *fx = *state;
	struct output *o;
	char name[256], buf[64];
	struct stat st;

	assert_int_equal(output__open(&o, fx->path), 0);
	assert_string_equal(output__path(o), fx->path);
	fputs("profile", output__file(o));
	/* Before the commit only the hidden temporary exists. */
	assert_int_equal(entries(fx->dir, name, sizeof(name)), 1);
	assert_int_equal(strncmp(name, ".out.pb.gz.", 11), 0);
	assert_int_equal(access(fx->path, F_OK), -1);
	assert_int_equal(output__commit(o), 0);
	assert_int_equal(entries(fx->dir, name, sizeof(name)), 1);
	assert_string_equal(name, "out.pb.gz");
	read_file(fx->path, buf, sizeof(buf));
	assert_string_equal(buf, "profile");
	assert_int_equal(stat(fx->path, &st), 0);
	assert_int_equal(st.st_mode & 07777, 0600);
}

/* Profiles hold command lines: never readable by others, and a stricter umask is honoured. */
static void test_output__private_mode_honours_umask(void **state)
{
	static const mode_t masks[] = {0, 022, 077, 0277};
	static const mode_t want[] = {0600, 0600, 0600, 0400};
	struct fixture *fx = *state;
	struct output *o;
	struct stat st;

	for (size_t i = 0; i < sizeof(masks) / sizeof(masks[0]); i++) {
		mode_t old = umask(masks[i]);

		assert_int_equal(output__open(&o, fx->path), 0);
		fputs("profile", output__file(o));
		assert_int_equal(output__commit(o), 0);
		umask(old);
		assert_int_equal(stat(fx->path, &st), 0);
		assert_int_equal(st.st_mode & 07777, want[i]);
		assert_int_equal(unlink(fx->path), 0);
	}
}

static void test_output__replaces_existing_file_only_on_commit(void **state)
{
	struct fixture *fx = *state;
	struct output *o;
	char buf[64];

	write_file(fx->path, "old");
	assert_int_equal(output__open(&o, fx->path), 0);
	fputs("new", output__file(o));
	fflush(output__file(o));
	read_file(fx->path, buf, sizeof(buf));
	assert_string_equal(buf, "old");
	assert_int_equal(output__commit(o), 0);
	read_file(fx->path, buf, sizeof(buf));
	assert_string_equal(buf, "new");
	assert_int_equal(entries(fx->dir, NULL, 0), 2); /* and out.pb.gz.old */
}

/* As perf keeps perf.data.old: the file replaced becomes .old, a previous .old goes. */
static void test_output__previous_file_kept_as_old(void **state)
{
	struct fixture *fx = *state;
	const char *text[] = {"first", "second", "third"};
	char old[160], buf[64];
	struct output *o;

	snprintf(old, sizeof(old), "%s.old", fx->path);
	for (size_t i = 0; i < 3; i++) {
		assert_int_equal(output__open(&o, fx->path), 0);
		fputs(text[i], output__file(o));
		assert_int_equal(output__commit(o), 0);
		read_file(fx->path, buf, sizeof(buf));
		assert_string_equal(buf, text[i]);
		if (!i) {
			assert_int_equal(access(old, F_OK), -1); /* nothing was there before */
			continue;
		}
		read_file(old, buf, sizeof(buf));
		assert_string_equal(buf, text[i - 1]);
		assert_int_equal(entries(fx->dir, NULL, 0), 2);
	}
}

/* A symbolic link at .old is replaced, never followed: its target keeps its bytes. */
static void test_output__old_symlink_not_followed(void **state)
{
	struct fixture *fx = *state;
	char old[160], target[160], buf[64];
	struct output *o;
	struct stat st;

	snprintf(old, sizeof(old), "%s.old", fx->path);
	snprintf(target, sizeof(target), "%s/precious", fx->dir);
	write_file(target, "precious");
	assert_int_equal(symlink(target, old), 0);
	write_file(fx->path, "previous");
	assert_int_equal(output__open(&o, fx->path), 0);
	fputs("new", output__file(o));
	assert_int_equal(output__commit(o), 0);
	read_file(target, buf, sizeof(buf));
	assert_string_equal(buf, "precious");
	assert_int_equal(lstat(old, &st), 0);
	assert_true(S_ISREG(st.st_mode));
	read_file(old, buf, sizeof(buf));
	assert_string_equal(buf, "previous");
	assert_int_equal(entries(fx->dir, NULL, 0), 3);
}

/* A directory at .old: the new file still replaces the old one, and nothing else is left. */
static void test_output__old_not_kept_when_a_directory_is_there(void **state)
{
	struct fixture *fx = *state;
	char old[160], inside[192], buf[64];
	struct output *o;

	snprintf(old, sizeof(old), "%s.old", fx->path);
	assert_int_equal(mkdir(old, 0700), 0);
	snprintf(inside, sizeof(inside), "%s/keep", old);
	write_file(inside, "");
	write_file(fx->path, "previous");
	assert_int_equal(output__open(&o, fx->path), 0);
	fputs("new", output__file(o));
	assert_int_equal(output__commit(o), 0);
	read_file(fx->path, buf, sizeof(buf));
	assert_string_equal(buf, "new");
	assert_int_equal(entries(fx->dir, NULL, 0), 2);
	assert_int_equal(entries(old, NULL, 0), 1);
}

static void test_output__no_backup_replaces_only(void **state)
{
	struct fixture *fx = *state;
	struct output *o;
	char buf[64];

	write_file(fx->path, "previous");
	assert_int_equal(output__open(&o, fx->path), 0);
	output__no_backup(o);
	fputs("new", output__file(o));
	assert_int_equal(output__commit(o), 0);
	read_file(fx->path, buf, sizeof(buf));
	assert_string_equal(buf, "new");
	assert_int_equal(entries(fx->dir, NULL, 0), 1);
}

/* What the run would find only at its end, found before it; nothing is left behind. */
static void test_output__check(void **state)
{
	struct fixture *fx = *state;
	char path[192], link[160];

	assert_int_equal(output__check(fx->path), 0);
	assert_int_equal(output__check("-"), 0);
	assert_int_equal(entries(fx->dir, NULL, 0), 0);
	snprintf(path, sizeof(path), "%s/nope/out.pb.gz", fx->dir);
	assert_int_equal(output__check(path), -ENOENT);
	assert_int_equal(output__check(fx->dir), -EISDIR);
	snprintf(path, sizeof(path), "%s/", fx->dir);
	assert_int_equal(output__check(path), -EISDIR);
	/* A file where a directory should be. */
	write_file(fx->path, "x");
	snprintf(path, sizeof(path), "%s/sub.pb.gz", fx->path);
	assert_int_equal(output__check(path), -ENOTDIR);
	/* An existing file is fine (it is replaced at the end), a symbolic link is not. */
	assert_int_equal(output__check(fx->path), 0);
	snprintf(link, sizeof(link), "%s/link.pb.gz", fx->dir);
	assert_int_equal(symlink(fx->path, link), 0);
	assert_int_equal(output__check(link), -ELOOP);
	assert_int_equal(entries(fx->dir, NULL, 0), 2);
}

/* Root ignores directory permissions: as nobody, in a child. */
static void test_output__check_unwritable_dir(void **state)
{
	struct fixture *fx = *state;
	int status;
	pid_t pid;

	assert_int_equal(chmod(fx->dir, 0555), 0);
	pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		if (geteuid() == 0 && (setgid(65534) || setuid(65534)))
			_exit(77);
		_exit(output__check(fx->path) == -EACCES ? 0 : 1);
	}
	assert_int_equal(waitpid(pid, &status, 0), pid);
	assert_true(WIFEXITED(status));
	if (WEXITSTATUS(status) == 77)
		skip();
	assert_int_equal(WEXITSTATUS(status), 0);
	assert_int_equal(entries(fx->dir, NULL, 0), 0);
}

static void test_output__relative_path(void **state)
{
	struct fixture *fx = *state;
	struct output *o;
	char cwd[4096], buf[16];

	assert_non_null(getcwd(cwd, sizeof(cwd)));
	assert_int_equal(chdir(fx->dir), 0);
	assert_int_equal(output__open(&o, "rel.txt"), 0);
	fputs("x", output__file(o));
	assert_int_equal(output__commit(o), 0);
	read_file("rel.txt", buf, sizeof(buf));
	assert_int_equal(chdir(cwd), 0);
	assert_string_equal(buf, "x");
}

static void test_output__symlink_refused(void **state)
{
	struct fixture *fx = *state;
	char target[160], buf[64];
	struct output *o = NULL;

	snprintf(target, sizeof(target), "%s/target", fx->dir);
	write_file(target, "precious");
	assert_int_equal(symlink(target, fx->path), 0);
	assert_int_equal(output__open(&o, fx->path), -ELOOP);
	assert_null(o);
	read_file(target, buf, sizeof(buf));
	assert_string_equal(buf, "precious");
	assert_int_equal(entries(fx->dir, NULL, 0), 2); /* the link and its target, nothing else */

	/* A dangling link is refused too: writing through it would create its target. */
	assert_int_equal(unlink(target), 0);
	assert_int_equal(output__open(&o, fx->path), -ELOOP);
	assert_int_equal(entries(fx->dir, NULL, 0), 1);
}

static void test_output__directory_refused(void **state)
{
	struct fixture *fx = *state;
	struct output *o = NULL;

	assert_int_equal(output__open(&o, fx->dir), -EISDIR);
	assert_null(o);
}

static void test_output__missing_dir_fails(void **state)
{
	struct fixture *fx = *state;
	struct output *o = NULL;
	char path[160];

	snprintf(path, sizeof(path), "%s/nope/out.pb.gz", fx->dir);
	assert_int_equal(output__open(&o, path), -ENOENT);
	assert_null(o);
	assert_int_equal(entries(fx->dir, NULL, 0), 0);
}

/* Root ignores directory permissions, so as root the attempt runs in a child that has
 * become nobody. */
static void test_output__unwritable_dir_fails_without_temp(void **state)
{
	struct fixture *fx = *state;
	int status;
	pid_t pid;

	assert_int_equal(chmod(fx->dir, 0555), 0);
	pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		struct output *o = NULL;
		int err;

		if (geteuid() == 0 && (setgid(65534) || setuid(65534)))
			_exit(77);
		err = output__open(&o, fx->path);
		_exit(err == -EACCES && !o ? 0 : 1);
	}
	assert_int_equal(waitpid(pid, &status, 0), pid);
	assert_true(WIFEXITED(status));
	if (WEXITSTATUS(status) == 77)
		skip();
	assert_int_equal(WEXITSTATUS(status), 0);
	assert_int_equal(entries(fx->dir, NULL, 0), 0);
}

static void test_output__failed_commit_removes_temp(void **state)
{
	struct fixture *fx = *state;
	struct output *o;
	char inside[160];

	assert_int_equal(output__open(&o, fx->path), 0);
	fputs("data", output__file(o));
	/* Something else took the name meanwhile: a non-empty directory cannot be renamed over. */
	assert_int_equal(mkdir(fx->path, 0755), 0);
	snprintf(inside, sizeof(inside), "%s/keep", fx->path);
	write_file(inside, "");
	assert_int_not_equal(output__commit(o), 0);
	assert_int_equal(entries(fx->dir, NULL, 0), 1); /* only the directory */
}

static void test_output__abort_removes_temp(void **state)
{
	struct fixture *fx = *state;
	struct output *o;

	assert_int_equal(output__open(&o, fx->path), 0);
	fputs("half a profile", output__file(o));
	output__abort(o);
	assert_int_equal(entries(fx->dir, NULL, 0), 0);
	output__abort(NULL);
}

static void test_output__dash_is_stdout(void **state)
{
	struct fixture *fx = *state;
	struct output *o;

	assert_int_equal(output__open(&o, "-"), 0);
	assert_ptr_equal(output__file(o), stdout);
	assert_string_equal(output__path(o), "-");
	assert_int_equal(output__commit(o), 0);
	assert_int_equal(entries(fx->dir, NULL, 0), 0);
	/* stdout is still usable afterwards. */
	assert_true(fprintf(stdout, "%s", "") >= 0);
	assert_int_equal(fflush(stdout), 0);
}

/* A pipe at the path (mkfifo, or a shell's process substitution) is written in place: its
 * reader gets the profile, and the node stays a pipe, with nothing made beside it. */
static void test_output__fifo_written_in_place(void **state)
{
	struct fixture *fx = *state;
	char got[192], buf[64];
	struct output *o;
	struct stat st;
	pid_t child;
	int status;

	snprintf(got, sizeof(got), "%s/got", fx->dir);
	assert_int_equal(mkfifo(fx->path, 0600), 0);
	assert_int_equal(output__check(fx->path), 0);
	child = fork();
	assert_true(child >= 0);
	if (!child) { /* the reader: the pipe's bytes into got */
		FILE *in = fopen(fx->path, "r"), *out = fopen(got, "w");
		size_t n;

		if (!in || !out)
			_exit(1);
		while ((n = fread(buf, 1, sizeof(buf), in)) > 0)
			fwrite(buf, 1, n, out);
		_exit(fclose(out) ? 1 : 0);
	}
	assert_int_equal(output__open(&o, fx->path), 0);
	fputs("profile", output__file(o));
	assert_int_equal(output__commit(o), 0);
	if (lstat(fx->path, &st) || !S_ISFIFO(st.st_mode)) {
		kill(child, SIGKILL); /* waiting for a writer that never came */
		waitpid(child, &status, 0);
		fail_msg("the pipe at %s was replaced", fx->path);
	}
	assert_int_equal(waitpid(child, &status, 0), child);
	assert_true(WIFEXITED(status) && WEXITSTATUS(status) == 0);
	read_file(got, buf, sizeof(buf));
	assert_string_equal(buf, "profile");
	assert_int_equal(entries(fx->dir, NULL, 0), 2); /* the pipe and got */
}

/* -o /dev/null: a character device is written, never replaced (a file renamed over it would
 * be a root-owned 0600 file where every program writes).  A node of its own (mknod needs
 * CAP_MKNOD: skipped without it), so that a failure here cannot break the machine's. */
static void test_output__char_device_written_in_place(void **state)
{
	struct fixture *fx = *state;
	struct output *o;
	struct stat st;

	if (mknod(fx->path, S_IFCHR | 0666, makedev(1, 3))) {
		assert_int_equal(errno, EPERM);
		skip();
	}
	assert_int_equal(output__check(fx->path), 0);
	assert_int_equal(output__open(&o, fx->path), 0);
	fputs("profile", output__file(o));
	assert_int_equal(output__commit(o), 0);
	assert_int_equal(output__open(&o, fx->path), 0);
	output__abort(o);
	assert_int_equal(lstat(fx->path, &st), 0);
	assert_true(S_ISCHR(st.st_mode));
	assert_int_equal(st.st_rdev, makedev(1, 3));
	assert_int_equal(entries(fx->dir, NULL, 0), 1); /* no temporary file, no .old */
}

/* A socket (and a disk: S_IFBLK) is refused, before the run and at its end. */
static void test_output__socket_refused(void **state)
{
	struct fixture *fx = *state;
	struct sockaddr_un sa = {.sun_family = AF_UNIX};
	struct output *o = NULL;
	int fd = socket(AF_UNIX, SOCK_STREAM, 0);

	assert_true(fd >= 0);
	assert_true(strlen(fx->path) < sizeof(sa.sun_path));
	memcpy(sa.sun_path, fx->path, strlen(fx->path) + 1);
	assert_int_equal(bind(fd, (struct sockaddr *)&sa, sizeof(sa)), 0);
	assert_int_equal(output__check(fx->path), -ENOTSUP);
	assert_int_equal(output__open(&o, fx->path), -ENOTSUP);
	assert_null(o);
	assert_int_equal(entries(fx->dir, NULL, 0), 1);
	close(fd);
}

int main(void)
{
#define T(name) cmocka_unit_test_setup_teardown(name, setup, teardown)
	const struct CMUnitTest tests[] = {
		T(test_output__atomic_rename),
		T(test_output__private_mode_honours_umask),
		T(test_output__replaces_existing_file_only_on_commit),
		T(test_output__relative_path),
		T(test_output__symlink_refused),
		T(test_output__directory_refused),
		T(test_output__missing_dir_fails),
		T(test_output__unwritable_dir_fails_without_temp),
		T(test_output__failed_commit_removes_temp),
		T(test_output__abort_removes_temp),
		T(test_output__dash_is_stdout),
		T(test_output__previous_file_kept_as_old),
		T(test_output__old_symlink_not_followed),
		T(test_output__old_not_kept_when_a_directory_is_there),
		T(test_output__no_backup_replaces_only),
		T(test_output__check),
		T(test_output__check_unwritable_dir),
		T(test_output__fifo_written_in_place),
		T(test_output__char_device_written_in_place),
		T(test_output__socket_refused),
	};
#undef T

	return cmocka_run_group_tests_name("output", tests, NULL, NULL);
}
