// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * A process's memory cgroup and limit for an OOM kill's profile: /proc/PID/cgroup parsed (v1's
 * memory line first, v2's "0::" else, a forged duplicate refused), limit files read (v1's
 * "unlimited" and v2's "max" are none), the smallest of the cgroup and its ancestors, from a
 * fake /proc and fake hierarchies under /tmp.
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
#include <unistd.h>

#include <cmocka.h>

#include "prof_common.h"
#include "proc/memlimit.h"

static int parse(const char *text, char *out, bool *v1)
{
	return memlimit__parse_proc(out, MEMLIMIT_PATH_MAX, v1, text, strlen(text));
}

static void test_memlimit__parse_proc(void **state)
{
	char out[MEMLIMIT_PATH_MAX];
	bool v1 = false;

	(void)state;
	/* a hybrid host: v1's memory line wins over v2's */
	assert_int_equal(
		parse("12:pids:/docker/a\n4:memory:/docker/abc\n1:name=systemd:/x\n0::/u\n", out,
		      &v1),
		0);
	assert_string_equal(out, "/docker/abc");
	assert_true(v1);
	/* memory in a list of controllers; the last line without its newline */
	assert_int_equal(parse("3:cpu,memory,io:/a/b", out, &v1), 0);
	assert_string_equal(out, "/a/b");
	/* "memoryx" is not memory; v2 only */
	assert_int_equal(parse("5:memoryx:/no\n0::/system.slice/x.service\n", out, &v1), 0);
	assert_string_equal(out, "/system.slice/x.service");
	assert_false(v1);
	assert_int_equal(parse("0::/\n", out, &v1), 0);
	assert_string_equal(out, "/");
	/* a cgroup name holding a newline forged a second memory line */
	assert_int_equal(parse("4:memory:/evil\n4:memory:/host\n", out, &v1), -EINVAL);
	assert_int_equal(parse("4:memory:relative\n", out, &v1), -EINVAL);
	assert_int_equal(parse("1:name=systemd:/x\n", out, &v1), -ENOENT);
	assert_int_equal(parse("", out, &v1), -ENOENT);
	assert_int_equal(memlimit__parse_proc(out, 4, &v1, "0::/long\n", 9), -ENAMETOOLONG);
}

static void test_memlimit__parse_value(void **state)
{
	uint64_t v = 1;

	(void)state;
	assert_int_equal(memlimit__parse_value(&v, "67108864\n"), 0);
	assert_int_equal(v, 67108864);
	assert_int_equal(memlimit__parse_value(&v, "max\n"), 0);
	assert_int_equal(v, 0);
	/* v1's "no limit": the page counter's maximum */
	assert_int_equal(memlimit__parse_value(&v, "9223372036854771712\n"), 0);
	assert_int_equal(v, 0);
	assert_int_equal(memlimit__parse_value(&v, "-1\n"), -EINVAL);
	assert_int_equal(memlimit__parse_value(&v, "12ab\n"), -EINVAL);
	assert_int_equal(memlimit__parse_value(&v, ""), -EINVAL);
}

static void put(const char *dir, const char *name, const char *text)
{
	char path[512];
	FILE *f;

	snprintf(path, sizeof(path), "%s/%s", dir, name);
	f = fopen(path, "w");
	assert_non_null(f);
	fputs(text, f);
	fclose(f);
}

static void mk(const char *base, const char *rel)
{
	char path[512];

	snprintf(path, sizeof(path), "%s/%s", base, rel);
	assert_int_equal(mkdir(path, 0700), 0);
}

/* The smallest limit of the cgroup and its ancestors binds; unlimited ones are skipped. */
static void test_memlimit__read_smallest_of_ancestors(void **state)
{
	char base[] = "/tmp/test_memlimit.XXXXXX", path[512], cmd[600];
	int proc_fd, v1_fd;
	struct memlimit m;

	(void)state;
	assert_non_null(mkdtemp(base));
	mk(base, "proc");
	mk(base, "proc/4242");
	mk(base, "mem");
	mk(base, "mem/docker");
	mk(base, "mem/docker/abc");
	snprintf(path, sizeof(path), "%s/proc/4242", base);
	put(path, "cgroup", "4:memory:/docker/abc\n0::/\n");
	snprintf(path, sizeof(path), "%s/mem", base);
	put(path, "memory.limit_in_bytes", "9223372036854771712\n");
	snprintf(path, sizeof(path), "%s/mem/docker", base);
	put(path, "memory.limit_in_bytes", "1073741824\n");
	snprintf(path, sizeof(path), "%s/mem/docker/abc", base);
	put(path, "memory.limit_in_bytes", "67108864\n");
	snprintf(path, sizeof(path), "%s/proc", base);
	proc_fd = open(path, O_RDONLY | O_DIRECTORY);
	snprintf(path, sizeof(path), "%s/mem", base);
	v1_fd = open(path, O_RDONLY | O_DIRECTORY);
	assert_true(proc_fd >= 0 && v1_fd >= 0);
	assert_int_equal(memlimit__read(&m, proc_fd, v1_fd, -1, 4242), 0);
	assert_string_equal(m.path, "/docker/abc");
	assert_true(m.v1);
	assert_int_equal(m.limit, 67108864);
	/* the parent's smaller: it binds */
	snprintf(path, sizeof(path), "%s/mem/docker", base);
	put(path, "memory.limit_in_bytes", "33554432\n");
	assert_int_equal(memlimit__read(&m, proc_fd, v1_fd, -1, 4242), 0);
	assert_int_equal(m.limit, 33554432);
	/* no hierarchy to read: the path only */
	assert_int_equal(memlimit__read(&m, proc_fd, -1, -1, 4242), 0);
	assert_string_equal(m.path, "/docker/abc");
	assert_int_equal(m.limit, 0);
	/* gone */
	assert_int_equal(memlimit__read(&m, proc_fd, v1_fd, -1, 4243), -ENOENT);
	close(proc_fd);
	close(v1_fd);
	snprintf(cmd, sizeof(cmd), "rm -rf %s", base);
	assert_int_equal(system(cmd), 0);
}

static void name(struct prof_oom_event *e, unsigned level, const char *text)
{
	strncpy(e->memcg_names[level], text, PROF_OOM_NAME_LEN);
}

/* The path BPF named at the kill, leaf first, joined root first; foreign bytes checked. */
static void test_memlimit__join_names(void **state)
{
	struct prof_oom_event e;
	char out[MEMLIMIT_PATH_MAX];

	(void)state;
	memset(&e, 0, sizeof(e));
	name(&e, 0, "4f2a");
	name(&e, 1, "docker");
	assert_int_equal(memlimit__join_names(out, sizeof(out), e.memcg_names[0], PROF_OOM_NAME_LEN,
					      2, false),
			 0);
	assert_string_equal(out, "/docker/4f2a");
	assert_int_equal(memlimit__join_names(out, sizeof(out), e.memcg_names[0], PROF_OOM_NAME_LEN,
					      2, true),
			 0);
	assert_string_equal(out, ".../docker/4f2a");
	/* the root cgroup */
	assert_int_equal(memlimit__join_names(out, sizeof(out), e.memcg_names[0], PROF_OOM_NAME_LEN,
					      0, false),
			 0);
	assert_string_equal(out, "/");
	/* too long for out */
	assert_int_equal(
		memlimit__join_names(out, 8, e.memcg_names[0], PROF_OOM_NAME_LEN, 2, false),
		-ENAMETOOLONG);
	/* a name filling its slot without a NUL: only when the path is said to be cut */
	memset(e.memcg_names[0], 'a', PROF_OOM_NAME_LEN);
	assert_int_equal(memlimit__join_names(out, sizeof(out), e.memcg_names[0], PROF_OOM_NAME_LEN,
					      2, false),
			 -EINVAL);
	assert_int_equal(memlimit__join_names(out, sizeof(out), e.memcg_names[0], PROF_OOM_NAME_LEN,
					      2, true),
			 0);
	assert_int_equal(strlen(out), 3 + 1 + 6 + 1 + PROF_OOM_NAME_LEN);
	/* empty, or holding a slash: not a kernfs name */
	name(&e, 0, "");
	assert_int_equal(memlimit__join_names(out, sizeof(out), e.memcg_names[0], PROF_OOM_NAME_LEN,
					      2, false),
			 -EINVAL);
	name(&e, 0, "a/b");
	assert_int_equal(memlimit__join_names(out, sizeof(out), e.memcg_names[0], PROF_OOM_NAME_LEN,
					      2, false),
			 -EINVAL);
}

/* A kill's record whose cgroup is gone by the time it is read (no cgroup has its id): the
 * path named at the kill, the hierarchy BPF saw, the limit from pages. */
static void test_memlimit__from_kill_of_a_removed_cgroup(void **state)
{
	struct prof_oom_event e;
	struct memlimit m;

	(void)state;
	memset(&e, 0, sizeof(e));
	e.flags = PROF_OOM_MEMCG | PROF_OOM_MEMCG_V1 | PROF_OOM_NAMES;
	e.memcg_id = 0x7fffffff00000001ULL;
	e.memcg_max_pages = 67108864 / sysconf(_SC_PAGESIZE);
	e.memcg_levels = 2;
	name(&e, 0, "4f2a");
	name(&e, 1, "docker");
	memlimit__from_kill(&m, &e);
	assert_string_equal(m.path, "/docker/4f2a");
	assert_true(m.v1);
	assert_int_equal(m.limit, 67108864);
	/* v2, deeper than named: what was named, marked cut */
	e.flags = PROF_OOM_MEMCG | PROF_OOM_NAMES | PROF_OOM_NAMES_CUT;
	memlimit__from_kill(&m, &e);
	assert_string_equal(m.path, ".../docker/4f2a");
	assert_false(m.v1);
	/* nothing named: no path, the limit still */
	e.flags = PROF_OOM_MEMCG;
	memlimit__from_kill(&m, &e);
	assert_string_equal(m.path, "");
	assert_int_equal(m.limit, 67108864);
	/* no limit set anywhere */
	e.memcg_max_pages = ~0ULL;
	memlimit__from_kill(&m, &e);
	assert_int_equal(m.limit, 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_memlimit__parse_proc),
		cmocka_unit_test(test_memlimit__parse_value),
		cmocka_unit_test(test_memlimit__read_smallest_of_ancestors),
		cmocka_unit_test(test_memlimit__join_names),
		cmocka_unit_test(test_memlimit__from_kill_of_a_removed_cgroup),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
