// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
#include <errno.h>
#include <limits.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "proc/maps.h"

static struct maps *parse_text(const char *text, int *err)
{
	FILE *f = fmemopen((void *)text, strlen(text), "r");
	struct maps *m = NULL;

	assert_non_null(f);
	*err = maps__parse(&m, f);
	fclose(f);
	return m;
}

/* A /proc/PID/maps excerpt with every kind of line the kernel writes. */
static const char sample[] =
	"55d0c6a00000-55d0c6a02000 r--p 00000000 fd:01 1311012                    /usr/bin/cat\n"
	"55d0c6a02000-55d0c6a07000 r-xp 00002000 fd:01 1311012                    /usr/bin/cat\n"
	"55d0c7f8c000-55d0c7fad000 rw-p 00000000 00:00 0                          [heap]\n"
	"7f3c1a000000-7f3c1a021000 rw-p 00000000 00:00 0 \n"
	"7f3c1b4e5000-7f3c1b4e7000 r-xs 00001000 103:1a2 42      /tmp/my lib.so (deleted)\n"
	"7f3c1b600000-7f3c1b601000 rwxp 00000000 00:00 0                          [anon:v8 jit]\n"
	"7ffd1a3f0000-7ffd1a3f2000 r-xp 00000000 00:00 0                          [vdso]\n"
	"ffffffffff600000-ffffffffff601000 --xp 00000000 00:00 0                  [vsyscall]\n";

static void test_maps__parses_every_field(void **state)
{
	const struct maps_entry *e;
	struct maps *m;
	int err;

	m = parse_text(sample, &err);
	assert_int_equal(err, 0);
	assert_int_equal(m->count, 8);

	e = &m->entries[1];
	assert_int_equal(e->start, 0x55d0c6a02000);
	assert_int_equal(e->end, 0x55d0c6a07000);
	assert_int_equal(e->offset, 0x2000);
	assert_int_equal(e->dev_major, 0xfd);
	assert_int_equal(e->dev_minor, 0x01);
	assert_int_equal(e->inode, 1311012);
	assert_true(e->read && !e->write && e->exec && !e->shared && !e->deleted);
	assert_string_equal(e->path, "/usr/bin/cat");

	assert_string_equal(m->entries[2].path, "[heap]");
	assert_true(m->entries[2].write && !m->entries[2].exec);
	/* Anonymous: nothing after the inode but spaces. */
	assert_string_equal(m->entries[3].path, "");
	assert_int_equal(m->entries[3].inode, 0);

	/* Spaces inside the path; " (deleted)" stripped and flagged; minor above 0xff. */
	e = &m->entries[4];
	assert_string_equal(e->path, "/tmp/my lib.so");
	assert_true(e->deleted && e->shared && e->exec);
	assert_int_equal(e->dev_major, 0x103);
	assert_int_equal(e->dev_minor, 0x1a2);
	assert_int_equal(e->offset, 0x1000);

	assert_string_equal(m->entries[5].path, "[anon:v8 jit]");
	assert_string_equal(m->entries[6].path, "[vdso]");
	assert_int_equal(m->entries[7].start, 0xffffffffff600000);
	assert_true(!m->entries[7].read && m->entries[7].exec);
	maps__free(m);
}

static void test_maps__find_uses_half_open_ranges(void **state)
{
	/* Out of order on purpose: fixtures need not be sorted. */
	static const char text[] = "3000-4000 r-xp 00000000 00:00 0 [c]\n"
				   "1000-2000 r-xp 00000000 00:00 0 [a]\n"
				   "2000-2800 r-xp 00000000 00:00 0 [b]\n";
	struct maps *m;
	int err;

	m = parse_text(text, &err);
	assert_int_equal(err, 0);
	assert_string_equal(m->entries[0].path, "[a]");
	assert_string_equal(m->entries[2].path, "[c]");
	assert_null(maps__find(m, 0xfff));
	assert_string_equal(maps__find(m, 0x1000)->path, "[a]");
	assert_string_equal(maps__find(m, 0x1fff)->path, "[a]");
	assert_string_equal(maps__find(m, 0x2000)->path, "[b]");
	assert_null(maps__find(m, 0x2800)); /* the gap */
	assert_null(maps__find(m, 0x2fff));
	assert_string_equal(maps__find(m, 0x3fff)->path, "[c]");
	assert_null(maps__find(m, 0x4000));
	maps__free(m);
}

static void test_maps__rejects_malformed_lines(void **state)
{
	int err;

	assert_null(parse_text("hello world\n", &err));
	assert_int_equal(err, -EINVAL);
	assert_null(parse_text("2000-1000 r-xp 00000000 00:00 0 /x\n", &err));
	assert_int_equal(err, -EINVAL);
	assert_null(parse_text("1000-2000 r-xp 00000000 00:00\n", &err));
	assert_int_equal(err, -EINVAL);
	assert_null(parse_text("1000-2000 r-x 00000000 00:00 0 /x\n", &err));
	assert_int_equal(err, -EINVAL);
}

static void test_maps__empty_input(void **state)
{
	struct maps *m;
	int err;

	m = parse_text("\n", &err);
	assert_int_equal(err, 0);
	assert_int_equal(m->count, 0);
	assert_null(maps__find(m, 0x1000));
	maps__free(m);
}

static void test_maps__is_file(void **state)
{
	struct maps *m;
	int err;

	m = parse_text(sample, &err);
	assert_int_equal(err, 0);
	assert_true(maps_entry__is_file(&m->entries[1]));  /* /usr/bin/cat */
	assert_false(maps_entry__is_file(&m->entries[2])); /* [heap] */
	assert_false(maps_entry__is_file(&m->entries[3])); /* anonymous */
	assert_true(maps_entry__is_file(&m->entries[4]));  /* deleted, still a file */
	assert_false(maps_entry__is_file(&m->entries[6])); /* [vdso] */
	maps__free(m);
}

static __attribute__((noinline)) int marker(void)
{
	return 42;
}

static void test_maps__reads_own_process(void **state)
{
	char exe[PATH_MAX];
	const struct maps_entry *e;
	struct maps *m = NULL;
	ssize_t n;

	n = readlink("/proc/self/exe", exe, sizeof(exe) - 1);
	assert_true(n > 0);
	exe[n] = '\0';
	assert_int_equal(maps__read(&m, "/proc/self/maps"), 0);
	e = maps__find(m, (uint64_t)(uintptr_t)marker);
	assert_non_null(e);
	assert_true(e->exec && e->read);
	assert_string_equal(e->path, exe);
	assert_true(e->inode != 0);
	maps__free(m);
}

static void test_maps__missing_file(void **state)
{
	struct maps *m = NULL;

	assert_int_equal(maps__read(&m, "/nonexistent/4242/maps"), -ENOENT);
	assert_null(m);
	maps__free(NULL);
}

static void test_maps__empty_file_is_a_gone_process(void **state)
{
	char path[] = "/tmp/maps-empty.XXXXXX";
	struct maps *m = NULL;
	int fd = mkstemp(path);

	/* What /proc/PID/maps reads once the process's memory is gone. */
	assert_true(fd >= 0);
	close(fd);
	assert_int_equal(maps__read(&m, path), -ESRCH);
	assert_null(m);
	unlink(path);
}

/* n lines of maps text, each a file mapping whose path is plen bytes long; *len its length. */
static char *synthetic_maps(size_t n, size_t plen, size_t *len)
{
	size_t cap = n * (plen + 80) + 1, off = 0;
	char *buf = malloc(cap), *path = malloc(plen + 1);

	assert_non_null(buf);
	assert_non_null(path);
	memset(path, 'a', plen);
	path[0] = '/';
	path[plen] = '\0';
	for (size_t i = 0; i < n; i++)
		off += (size_t)snprintf(buf + off, cap - off,
					"%08zx000-%08zx000 r-xp 00000000 08:01 %08zu /%s\n",
					2 * i + 16, 2 * i + 17, i + 1, path);
	free(path);
	*len = off;
	return buf;
}

static struct maps *parse_buf(char *buf, size_t len, int *err)
{
	FILE *f = fmemopen(buf, len, "r");
	struct maps *m = NULL;

	assert_non_null(f);
	*err = maps__parse(&m, f);
	fclose(f);
	return m;
}

/* A target with more mappings than the cap (vm.max_map_count raised): the first 65536 are
 * kept, the read is counted as cut; exactly at the cap is not a cut. */
static void test_maps__caps_lines(void **state)
{
	struct maps_stats before, after;
	struct maps *m;
	size_t len;
	char *buf = synthetic_maps(MAPS_MAX_LINES + 4000, 10, &len);
	int err;

	maps__stats(&before);
	m = parse_buf(buf, len, &err);
	assert_int_equal(err, 0);
	assert_int_equal(m->count, MAPS_MAX_LINES);
	assert_true(m->cut);
	assert_int_equal(m->entries[MAPS_MAX_LINES - 1].inode, MAPS_MAX_LINES);
	maps__free(m);
	maps__stats(&after);
	assert_int_equal(after.reads_cut, before.reads_cut + 1);
	free(buf);

	buf = synthetic_maps(MAPS_MAX_LINES, 10, &len);
	m = parse_buf(buf, len, &err);
	assert_int_equal(err, 0);
	assert_int_equal(m->count, MAPS_MAX_LINES);
	assert_false(m->cut);
	maps__free(m);
	maps__stats(&before);
	assert_int_equal(before.reads_cut, after.reads_cut);
	free(buf);
}

/* Long paths (a target chooses them): the read stops before the line that would pass 16 MiB. */
static void test_maps__caps_bytes(void **state)
{
	struct maps_stats before, after;
	struct maps *m;
	size_t len, line;
	char *buf = synthetic_maps(10000, 4000, &len);
	int err;

	line = len / 10000; /* every line is as long */
	assert_int_equal(len % 10000, 0);
	maps__stats(&before);
	m = parse_buf(buf, len, &err);
	assert_int_equal(err, 0);
	assert_int_equal(m->count, MAPS_MAX_BYTES / line);
	assert_true(m->cut);
	assert_int_equal(strlen(m->entries[0].path), 4001);
	maps__free(m);
	maps__stats(&after);
	assert_int_equal(after.reads_cut, before.reads_cut + 1);
	free(buf);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_maps__parses_every_field),
		cmocka_unit_test(test_maps__find_uses_half_open_ranges),
		cmocka_unit_test(test_maps__rejects_malformed_lines),
		cmocka_unit_test(test_maps__empty_input),
		cmocka_unit_test(test_maps__is_file),
		cmocka_unit_test(test_maps__reads_own_process),
		cmocka_unit_test(test_maps__missing_file),
		cmocka_unit_test(test_maps__empty_file_is_a_gone_process),
		cmocka_unit_test(test_maps__caps_lines),
		cmocka_unit_test(test_maps__caps_bytes),
	};

	return cmocka_run_group_tests_name("maps", tests, NULL, NULL);
}
