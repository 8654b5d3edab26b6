// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * Continuous mode's interval profiles (outdir_series) in a real directory under /tmp: names
 * unique per run, --retain that never deletes what this run just wrote, whatever other names
 * sit beside it.
 */
#include <errno.h>
#include <fcntl.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>

#include "export/outdir.h"

#define SEC 1000000000LL

struct fixture {
	char dir[64];
	int fd;
};

static int setup(void **state)
{
	struct fixture *f = calloc(1, sizeof(*f));

	assert_non_null(f);
	snprintf(f->dir, sizeof(f->dir), "/tmp/test_outdir.XXXXXX");
	assert_non_null(mkdtemp(f->dir));
	f->fd = open(f->dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	assert_true(f->fd >= 0);
	*state = f;
	return 0;
}

static int teardown(void **state)
{
	struct fixture *f = *state;
	char cmd[128];

	close(f->fd);
	snprintf(cmd, sizeof(cmd), "rm -rf %s", f->dir);
	assert_int_equal(system(cmd), 0);
	free(f);
	return 0;
}

static void put(struct fixture *f, const char *name)
{
	int fd = openat(f->fd, name, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);

	assert_true(fd >= 0);
	close(fd);
}

static bool exists(struct fixture *f, const char *name)
{
	struct stat st;

	return !fstatat(f->fd, name, &st, AT_SYMLINK_NOFOLLOW);
}

/* Writes mode's profile of the interval at t as the report does: named, created, retained. */
static void write_profile(struct fixture *f, struct outdir_series *s, int64_t t, const char *mode,
			  char *name, size_t len)
{
	assert_int_equal(outdir_series__name(s, name, len, t, mode), 0);
	put(f, name);
	assert_int_equal(outdir_series__written(s, mode, name), 0);
	assert_true(exists(f, name));
}

/* 2026-11-28T08:24:25Z */
static const int64_t now = 1795854265LL * SEC;

/* Two runs started in the same second write different names; each sorts by time. */
static void test_outdir__series_names_unique_per_run(void **state)
{
	struct fixture *f = *state;
	struct outdir_series *a, *b;
	char na[64], nb[64], later[64];

	assert_int_equal(outdir_series__new(&a, f->fd, 0, now), 0);
	assert_int_equal(outdir_series__new(&b, f->fd, 0, now), 0);
	assert_int_equal(outdir_series__name(a, na, sizeof(na), now, "cpu"), 0);
	assert_int_equal(outdir_series__name(b, nb, sizeof(nb), now, "cpu"), 0);
	assert_string_not_equal(na, nb);
	assert_int_equal(strlen(na), strlen("20261128T082425Z-12345678.cpu.pb.gz"));
	assert_memory_equal(na, "20261128T082425Z-", 17);
	assert_string_equal(na + 25, ".cpu.pb.gz");
	assert_int_equal(outdir_series__name(a, later, sizeof(later), now + SEC, "cpu"), 0);
	assert_true(strcmp(na, later) < 0);
	assert_int_equal(outdir_series__name(a, na, 30, now, "cpu"), -ENAMETOOLONG);
	outdir_series__free(a);
	outdir_series__free(b);
}

/*
 * Names from the future beside ours (a clock once wrong, a file put there): --retain 2 keeps
 * this run's two newest profiles and leaves those names alone.
 */
static void test_outdir__retain_beside_future_names(void **state)
{
	struct fixture *f = *state;
	struct outdir_series *s;
	char names[5][64];

	put(f, "20990101T000000Z.cpu.pb.gz");
	put(f, "20990101T000000Z-00000001.cpu.pb.gz");
	assert_int_equal(outdir_series__new(&s, f->fd, 2, now), 0);
	for (int i = 0; i < 5; i++)
		write_profile(f, s, now + i * SEC, "cpu", names[i], sizeof(names[i]));
	assert_false(exists(f, names[0]));
	assert_false(exists(f, names[1]));
	assert_false(exists(f, names[2]));
	assert_true(exists(f, names[3]));
	assert_true(exists(f, names[4]));
	assert_true(exists(f, "20990101T000000Z.cpu.pb.gz"));
	assert_true(exists(f, "20990101T000000Z-00000001.cpu.pb.gz"));
	outdir_series__free(s);
}

/* The clock steps back during the run: this run's profiles go in the order written, not by
 * the times in their names. */
static void test_outdir__retain_own_in_write_order(void **state)
{
	struct fixture *f = *state;
	struct outdir_series *s;
	char names[3][64];

	assert_int_equal(outdir_series__new(&s, f->fd, 2, now), 0);
	write_profile(f, s, now + 3600 * SEC, "cpu", names[0], sizeof(names[0]));
	write_profile(f, s, now + 1, "cpu", names[1], sizeof(names[1]));
	write_profile(f, s, now + 2 * SEC, "cpu", names[2], sizeof(names[2]));
	assert_false(exists(f, names[0]));
	assert_true(exists(f, names[1]));
	assert_true(exists(f, names[2]));
	outdir_series__free(s);
}

/*
 * Profiles of earlier runs (both name formats) fill the slots this run has not used yet, newest
 * name first; other modes, other files, directories and symbolic links named like ours are
 * never touched.
 */
static void test_outdir__retain_earlier_runs_fill_free_slots(void **state)
{
	struct fixture *f = *state;
	struct outdir_series *s;
	char names[3][64];

	put(f, "20200101T000000Z.cpu.pb.gz");
	put(f, "20200101T000001Z-0000abcd.cpu.pb.gz");
	put(f, "20200101T000002Z.cpu.pb.gz");
	put(f, "20200101T000000Z.heap.pb.gz");
	put(f, "20200101T000000Z-0000abcd.cpu.pb.gz.tmp");
	put(f, "notes.txt");
	assert_int_equal(mkdirat(f->fd, "20190101T000000Z.cpu.pb.gz", 0700), 0);
	assert_int_equal(symlinkat("notes.txt", f->fd, "20190101T000001Z.cpu.pb.gz"), 0);
	assert_int_equal(outdir_series__new(&s, f->fd, 3, now), 0);
	write_profile(f, s, now, "cpu", names[0], sizeof(names[0]));
	/* Two slots left: the two newest earlier ones stay. */
	assert_false(exists(f, "20200101T000000Z.cpu.pb.gz"));
	assert_true(exists(f, "20200101T000001Z-0000abcd.cpu.pb.gz"));
	assert_true(exists(f, "20200101T000002Z.cpu.pb.gz"));
	write_profile(f, s, now + SEC, "cpu", names[1], sizeof(names[1]));
	assert_false(exists(f, "20200101T000001Z-0000abcd.cpu.pb.gz"));
	assert_true(exists(f, "20200101T000002Z.cpu.pb.gz"));
	write_profile(f, s, now + 2 * SEC, "cpu", names[2], sizeof(names[2]));
	assert_false(exists(f, "20200101T000002Z.cpu.pb.gz"));
	for (int i = 0; i < 3; i++)
		assert_true(exists(f, names[i]));
	assert_true(exists(f, "20200101T000000Z.heap.pb.gz"));
	assert_true(exists(f, "20200101T000000Z-0000abcd.cpu.pb.gz.tmp"));
	assert_true(exists(f, "notes.txt"));
	assert_true(exists(f, "20190101T000000Z.cpu.pb.gz"));
	assert_true(exists(f, "20190101T000001Z.cpu.pb.gz"));
	outdir_series__free(s);
}

/* Another run writing the directory now (named at or after our start): left alone. */
static void test_outdir__retain_leaves_a_concurrent_run(void **state)
{
	struct fixture *f = *state;
	struct outdir_series *a, *b;
	char na[4][64], nb[4][64];

	assert_int_equal(outdir_series__new(&a, f->fd, 2, now), 0);
	assert_int_equal(outdir_series__new(&b, f->fd, 2, now), 0);
	for (int i = 0; i < 4; i++) {
		write_profile(f, a, now + i * SEC, "cpu", na[i], sizeof(na[i]));
		write_profile(f, b, now + i * SEC, "cpu", nb[i], sizeof(nb[i]));
	}
	for (int i = 0; i < 4; i++) {
		assert_int_equal(exists(f, na[i]), i >= 2);
		assert_int_equal(exists(f, nb[i]), i >= 2);
	}
	outdir_series__free(a);
	outdir_series__free(b);
}

/* --retain 0 (the default) deletes nothing. */
static void test_outdir__retain_zero_keeps_all(void **state)
{
	struct fixture *f = *state;
	struct outdir_series *s;
	char names[3][64];

	put(f, "20200101T000000Z.cpu.pb.gz");
	assert_int_equal(outdir_series__new(&s, f->fd, 0, now), 0);
	for (int i = 0; i < 3; i++)
		write_profile(f, s, now + i * SEC, "cpu", names[i], sizeof(names[i]));
	for (int i = 0; i < 3; i++)
		assert_true(exists(f, names[i]));
	assert_true(exists(f, "20200101T000000Z.cpu.pb.gz"));
	outdir_series__free(s);
}

/* Entries of the fixture's directory whose name starts with a dot (temporary folders). */
static int hidden_entries(struct fixture *f)
{
	char cmd[128];
	FILE *p;
	int n = -1;

	snprintf(cmd, sizeof(cmd), "ls -A %s | grep -c '^\\.'", f->dir);
	p = popen(cmd, "r");
	assert_non_null(p);
	assert_int_equal(fscanf(p, "%d", &n), 1);
	pclose(p);
	return n;
}

/* A trace folder of ours, not yet in place, holding one file. */
static struct outdir *open_trace(struct fixture *f, const char *name)
{
	char path[128];
	struct outdir *d;
	int fd;

	snprintf(path, sizeof(path), "%s/%s", f->dir, name);
	assert_int_equal(outdir__open(&d, path), 0);
	fd = openat(outdir__fd(d), "trace_metadata.json", O_WRONLY | O_CREAT | O_EXCL, 0600);
	assert_true(fd >= 0);
	close(fd);
	return d;
}

/* The folder seen at the start is still there at the end: replaced by ours. */
static void test_outdir__commit_replaces_the_folder_seen(void **state)
{
	struct fixture *f = *state;
	struct outdir *d;

	assert_int_equal(mkdirat(f->fd, "t", 0700), 0);
	d = open_trace(f, "t");
	assert_int_equal(outdir__commit(d), 0);
	assert_true(exists(f, "t/trace_metadata.json"));
	assert_false(exists(f, "t.1"));
	assert_int_equal(hidden_entries(f), 0);
}

/* Nothing was there at the start; someone made a folder there during the run: it is not
 * touched, ours is kept beside it as t.1 (-EEXIST). */
static void test_outdir__commit_keeps_a_folder_made_meanwhile(void **state)
{
	struct fixture *f = *state;
	struct outdir *d = open_trace(f, "t");

	assert_int_equal(mkdirat(f->fd, "t", 0700), 0);
	put(f, "t/theirs");
	assert_int_equal(outdir__commit(d), -EEXIST);
	assert_true(exists(f, "t/theirs"));
	assert_false(exists(f, "t/trace_metadata.json"));
	assert_true(exists(f, "t.1/trace_metadata.json"));
	assert_int_equal(hidden_entries(f), 0);
}

/* The folder seen at the start was replaced by another during the run: that one stays, ours
 * goes beside it (the first free t.N). */
static void test_outdir__commit_keeps_a_folder_replaced_meanwhile(void **state)
{
	struct fixture *f = *state;
	struct outdir *d;

	assert_int_equal(mkdirat(f->fd, "t", 0700), 0);
	assert_int_equal(mkdirat(f->fd, "t.1", 0700), 0);
	d = open_trace(f, "t");
	assert_int_equal(unlinkat(f->fd, "t", AT_REMOVEDIR), 0);
	assert_int_equal(mkdirat(f->fd, "t", 0700), 0);
	put(f, "t/theirs");
	assert_int_equal(outdir__commit(d), -EEXIST);
	assert_true(exists(f, "t/theirs"));
	assert_false(exists(f, "t/trace_metadata.json"));
	assert_true(exists(f, "t.2/trace_metadata.json"));
	assert_int_equal(hidden_entries(f), 0);
}

/* An OOM kill's profile (<stamp>.oom.<pid>.heap.pb.gz, user/oomout.c) beside the series is no
 * profile of it: --retain 1 neither counts nor deletes it, an older one included. */
static void test_outdir__retain_leaves_oom_profiles(void **state)
{
	struct fixture *f = *state;
	struct outdir_series *s;
	char names[3][64];

	put(f, "20261128T082420Z.oom.4242.heap.pb.gz");
	put(f, "20261128T082426Z.oom.4243.heap.pb.gz");
	assert_int_equal(outdir_series__new(&s, f->fd, 1, now), 0);
	for (int i = 0; i < 3; i++)
		write_profile(f, s, now + i * SEC, "heap", names[i], sizeof(names[i]));
	assert_false(exists(f, names[0]));
	assert_false(exists(f, names[1]));
	assert_true(exists(f, names[2]));
	assert_true(exists(f, "20261128T082420Z.oom.4242.heap.pb.gz"));
	assert_true(exists(f, "20261128T082426Z.oom.4243.heap.pb.gz"));
	outdir_series__free(s);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_outdir__retain_leaves_oom_profiles, setup,
						teardown),
		cmocka_unit_test_setup_teardown(test_outdir__series_names_unique_per_run, setup,
						teardown),
		cmocka_unit_test_setup_teardown(test_outdir__retain_beside_future_names, setup,
						teardown),
		cmocka_unit_test_setup_teardown(test_outdir__retain_own_in_write_order, setup,
						teardown),
		cmocka_unit_test_setup_teardown(test_outdir__retain_earlier_runs_fill_free_slots,
						setup, teardown),
		cmocka_unit_test_setup_teardown(test_outdir__retain_leaves_a_concurrent_run, setup,
						teardown),
		cmocka_unit_test_setup_teardown(test_outdir__retain_zero_keeps_all, setup,
						teardown),
		cmocka_unit_test_setup_teardown(test_outdir__commit_replaces_the_folder_seen, setup,
						teardown),
		cmocka_unit_test_setup_teardown(test_outdir__commit_keeps_a_folder_made_meanwhile,
						setup, teardown),
		cmocka_unit_test_setup_teardown(
			test_outdir__commit_keeps_a_folder_replaced_meanwhile, setup, teardown),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
