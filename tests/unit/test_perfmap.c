// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
#include <errno.h>
#include <limits.h>
#include <sys/stat.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "sym/perfmap.h"

static struct perfmap *load_text(const char *text, int *err)
{
	char path[] = "/tmp/perf-test.XXXXXX";
	struct perfmap *pm = NULL;
	int fd = mkstemp(path);

	assert_true(fd >= 0);
	assert_int_equal(write(fd, text, strlen(text)), (ssize_t)strlen(text));
	close(fd);
	*err = perfmap__load(&pm, path);
	unlink(path);
	return pm;
}

/* As V8, the JVM's perf-map-agent and CPython 3.12 write them. */
static const char sample[] = "7f0000001000 40 LazyCompile:~foo /srv/app.js:12\n"
			     "0x7f0000002000 0x20 py::bar:/srv/app.py\n"
			     "7f0000003000 10 Interpreter\n";

static void test_perfmap__parses_lines(void **state)
{
	const struct perfmap_sym *s;
	struct perfmap *pm;
	int err;

	pm = load_text(sample, &err);
	assert_int_equal(err, 0);
	assert_int_equal(perfmap__count(pm), 3);
	assert_int_equal(perfmap__file_size(pm), strlen(sample));
	s = perfmap__resolve(pm, 0x7f0000001000);
	assert_non_null(s);
	/* The name runs to the end of the line, spaces included. */
	assert_string_equal(s->name, "LazyCompile:~foo /srv/app.js:12");
	assert_int_equal(s->start, 0x7f0000001000);
	assert_int_equal(s->size, 0x40);
	assert_string_equal(perfmap__resolve(pm, 0x7f000000103f)->name,
			    "LazyCompile:~foo /srv/app.js:12");
	assert_string_equal(perfmap__resolve(pm, 0x7f0000002010)->name, "py::bar:/srv/app.py");
	perfmap__free(pm);
}

static void test_perfmap__ranges_are_half_open(void **state)
{
	struct perfmap *pm;
	int err;

	pm = load_text(sample, &err);
	assert_int_equal(err, 0);
	assert_null(perfmap__resolve(pm, 0x7f0000000fff));
	assert_null(perfmap__resolve(pm, 0x7f0000001040)); /* just past foo */
	assert_null(perfmap__resolve(pm, 0x7f0000002020));
	assert_null(perfmap__resolve(pm, 0x7f0000003010));
	assert_null(perfmap__resolve(pm, UINT64_MAX));
	perfmap__free(pm);
}

static void test_perfmap__recompiled_code_last_line_wins(void **state)
{
	static const char text[] = "1000 100 old_version\n"
				   "2000 10 other\n"
				   "1000 80 new_version\n";
	struct perfmap *pm;
	int err;

	pm = load_text(text, &err);
	assert_int_equal(err, 0);
	assert_int_equal(perfmap__count(pm), 2);
	assert_string_equal(perfmap__resolve(pm, 0x1010)->name, "new_version");
	assert_null(perfmap__resolve(pm, 0x1090)); /* the new body is shorter */
	perfmap__free(pm);
}

static void test_perfmap__skips_bad_and_partial_lines(void **state)
{
	static const char text[] = "garbage here\n"
				   "1000\n"
				   "1000 zz name\n"
				   "3000 0 empty_size\n"
				   "4000 10 \n"
				   "5000 10 good\n"
				   "6000 10 being_writ"; /* no newline: the runtime is writing */
	struct perfmap *pm;
	int err;

	pm = load_text(text, &err);
	assert_int_equal(err, 0);
	assert_int_equal(perfmap__count(pm), 1);
	assert_string_equal(perfmap__resolve(pm, 0x5008)->name, "good");
	assert_null(perfmap__resolve(pm, 0x6000));
	assert_int_equal(perfmap__file_size(pm), strlen(text) - strlen("6000 10 being_writ"));
	perfmap__free(pm);
}

static void test_perfmap__empty_and_missing(void **state)
{
	struct perfmap *pm = NULL;
	int err;

	pm = load_text("", &err);
	assert_int_equal(err, 0);
	assert_int_equal(perfmap__count(pm), 0);
	assert_null(perfmap__resolve(pm, 0x1000));
	perfmap__free(pm);
	pm = NULL;
	assert_int_equal(perfmap__load(&pm, "/nonexistent/perf-1.map"), -ENOENT);
	assert_null(pm);
}

/* A line longer than PERFMAP_LINE_MAX is skipped and counted; the lines around it stay. */
static void test_perfmap__overlong_line_skipped_and_counted(void **state)
{
	size_t big = PERFMAP_LINE_MAX * 4;
	char *text = malloc(big + 256);
	struct perfmap *pm;
	int err;

	assert_non_null(text);
	strcpy(text, "1000 10 before\n2000 10 ");
	memset(text + strlen(text), 'x', big);
	strcpy(text + strlen("1000 10 before\n2000 10 ") + big, "\n3000 10 after\n");
	pm = load_text(text, &err);
	assert_int_equal(err, 0);
	assert_int_equal(perfmap__count(pm), 2);
	assert_int_equal(perfmap__skipped(pm), 1);
	assert_string_equal(perfmap__resolve(pm, 0x1000)->name, "before");
	assert_null(perfmap__resolve(pm, 0x2000));
	assert_string_equal(perfmap__resolve(pm, 0x3000)->name, "after");
	assert_int_equal(perfmap__file_size(pm), strlen(text));
	perfmap__free(pm);
	free(text);
}

/* Anyone can create /tmp/perf-PID.map: a FIFO, a link to /dev/zero — refused, never read. */
static void test_perfmap__load_refuses_fifo_and_symlinks(void **state)
{
	char dir[] = "/tmp/perfmap-test.XXXXXX", p[PATH_MAX];
	struct perfmap *pm = NULL;

	assert_non_null(mkdtemp(dir));
	snprintf(p, sizeof(p), "%s/perf-1.map", dir);
	alarm(10); /* blocking on the FIFO is the failure */
	assert_int_equal(mkfifo(p, 0666), 0);
	assert_int_equal(perfmap__load(&pm, p), -EINVAL);
	unlink(p);
	assert_int_equal(symlink("/dev/zero", p), 0);
	assert_int_equal(perfmap__load(&pm, p), -ELOOP);
	alarm(0);
	assert_null(pm);
	unlink(p);
	rmdir(dir);
}

/* The parser over a stream (what the loader and the fuzzer feed it): the same entries. */
static void test_perfmap__parses_a_stream(void **state)
{
	FILE *f = fmemopen((void *)sample, strlen(sample), "r");
	struct perfmap *pm = NULL;

	assert_non_null(f);
	assert_int_equal(perfmap__parse(&pm, f), 0);
	fclose(f);
	assert_int_equal(perfmap__count(pm), 3);
	assert_int_equal(perfmap__file_size(pm), strlen(sample));
	assert_string_equal(perfmap__resolve(pm, 0x7f0000002010)->name, "py::bar:/srv/app.py");
	perfmap__free(pm);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_perfmap__parses_lines),
		cmocka_unit_test(test_perfmap__ranges_are_half_open),
		cmocka_unit_test(test_perfmap__recompiled_code_last_line_wins),
		cmocka_unit_test(test_perfmap__skips_bad_and_partial_lines),
		cmocka_unit_test(test_perfmap__empty_and_missing),
		cmocka_unit_test(test_perfmap__overlong_line_skipped_and_counted),
		cmocka_unit_test(test_perfmap__load_refuses_fifo_and_symlinks),
		cmocka_unit_test(test_perfmap__parses_a_stream),
	};

	return cmocka_run_group_tests_name("perfmap", tests, NULL, NULL);
}
