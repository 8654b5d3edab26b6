// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/* The formats' names and extensions, and the one write-a-profile (format__write) on real files. */
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

#include "export/format.h"
#include "profile/profile.h"

struct fixture {
	char dir[64];
	char path[128];
	struct profile *p;
};

/* One sample: main -> work, 100 bytes. */
static int setup(void **state)
{
	struct fixture *fx = calloc(1, sizeof(*fx));
	uint32_t fn, loc[2];
	int64_t v[] = {100};
	int err = 0;

	if (!fx)
		return -1;
	strcpy(fx->dir, "/tmp/test_format.XXXXXX");
	if (!mkdtemp(fx->dir) || profile__new(&fx->p, "heap")) {
		free(fx);
		return -1;
	}
	snprintf(fx->path, sizeof(fx->path), "%s/out.folded", fx->dir);
	err |= profile__add_type(fx->p, "alloc_space", "bytes");
	err |= profile__function(fx->p, &fn, "work", "work", "", 0);
	err |= profile__location(fx->p, &loc[0], 0x200, 0, fn, 0);
	err |= profile__function(fx->p, &fn, "main", "main", "", 0);
	err |= profile__location(fx->p, &loc[1], 0x100, 0, fn, 0);
	err |= profile__add_sample(fx->p, 7, 7, "app", "app", loc, 2, v, false);
	*state = fx;
	return err ? -1 : 0;
}

static int teardown(void **state)
{
	struct fixture *fx = *state;
	char cmd[128];

	profile__free(fx->p);
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", fx->dir);
	if (system(cmd) != 0)
		return -1;
	free(fx);
	return 0;
}

static char *slurp(const char *path)
{
	static char buf[4096];
	FILE *f = fopen(path, "r");
	size_t n;

	assert_non_null(f);
	n = fread(buf, 1, sizeof(buf) - 1, f);
	buf[n] = 0;
	fclose(f);
	return buf;
}

static void test_format__names_round_trip(void **state)
{
	enum out_format f;

	for (int i = FMT_PPROF; i <= FMT_SVG; i++) {
		assert_int_equal(format__parse(&f, format__name((enum out_format)i)), 0);
		assert_int_equal(f, i);
	}
	assert_int_equal(format__parse(&f, "json"), -EINVAL);
	assert_true(format__event_trace(FMT_FIREFOX));
	assert_false(format__event_trace(FMT_MEMTRACE));
	assert_false(format__event_trace(FMT_SVG));
}

/* The longest extension wins; case does not matter; a dot in a directory is no extension. */
static void test_format__extension_longest_match(void **state)
{
	assert_int_equal(format__ext("x/p.profile.json.gz")->format, FMT_FIREFOX);
	assert_int_equal(format__ext("p.json.gz")->format, FMT_CHROME);
	assert_int_equal(format__ext("P.PB.GZ")->format, FMT_PPROF);
	assert_string_equal(format__ext("t.txt")->ext, ".txt");
	assert_true(format__ext("t.txt")->also & (1u << FMT_FOLDED));
	assert_null(format__ext("dir.svg/out"));
	assert_null(format__ext(".svg"));
	assert_null(format__ext("noext"));
}

static void test_format__write_folded(void **state)
{
	struct fixture *fx = *state;
	struct format_opts o = {.format = FMT_FOLDED};

	assert_int_equal(format__write(fx->p, fx->path, &o), 0);
	assert_string_equal(slurp(fx->path), "app;main;work 100\n");
}

/* A file replaced is kept as .old, except when asked not to (--output-dir's series). */
static void test_format__write_backup_unless_asked(void **state)
{
	struct fixture *fx = *state;
	struct format_opts o = {.format = FMT_FOLDED};
	char old[160];

	snprintf(old, sizeof(old), "%s.old", fx->path);
	assert_int_equal(format__write(fx->p, fx->path, &o), 0);
	assert_int_equal(format__write(fx->p, fx->path, &o), 0);
	assert_int_equal(access(old, F_OK), 0);
	assert_int_equal(unlink(old), 0);
	o.no_backup = true;
	assert_int_equal(format__write(fx->p, fx->path, &o), 0);
	assert_int_equal(access(old, F_OK), -1);
	assert_string_equal(slurp(fx->path), "app;main;work 100\n");
}

/* Never through a symbolic link; the event traces are not written here: nothing is left. */
static void test_format__write_refuses(void **state)
{
	struct fixture *fx = *state;
	struct format_opts o = {.format = FMT_PPROF};
	char target[160];

	snprintf(target, sizeof(target), "%s/target", fx->dir);
	assert_int_equal(symlink(target, fx->path), 0);
	assert_int_equal(format__write(fx->p, fx->path, &o), -ELOOP);
	assert_int_equal(access(target, F_OK), -1);
	assert_int_equal(unlink(fx->path), 0);
	o.format = FMT_CHROME;
	assert_int_equal(format__write(fx->p, fx->path, &o), -EINVAL);
	assert_int_equal(access(fx->path, F_OK), -1);
}

int main(void)
{
#define T(name) cmocka_unit_test_setup_teardown(name, setup, teardown)
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_format__names_round_trip),
		cmocka_unit_test(test_format__extension_longest_match),
		T(test_format__write_folded),
		T(test_format__write_backup_unless_asked),
		T(test_format__write_refuses),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
#undef T
}
