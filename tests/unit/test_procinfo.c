// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cmocka.h>

#include "proc/procinfo.h"

static char root[64];

static void put(const char *rel, const char *text)
{
	char path[256], dir[256];
	FILE *f;

	snprintf(path, sizeof(path), "%s/%s", root, rel);
	snprintf(dir, sizeof(dir), "%s", path);
	for (char *s = dir + strlen(root) + 1; (s = strchr(s, '/')); s++) {
		*s = 0;
		mkdir(dir, 0755);
		*s = '/';
	}
	f = fopen(path, "w");
	assert_non_null(f);
	fputs(text, f);
	fclose(f);
}

static int setup(void **state)
{
	snprintf(root, sizeof(root), "/tmp/procinfo-test.XXXXXX");
	if (!mkdtemp(root))
		return -1;
	put("100/comm", "server\n");
	put("100/task/100/comm", "server\n");
	put("100/task/101/comm", "worker-1\n");
	put("100/task/101/schedstat", "123456789 42 7\n");
	put("100/task/102/schedstat", "garbage\n");
	put("100/task/103/schedstat", "18446744073709551616 1 1\n");
	return 0;
}

static int teardown(void **state)
{
	char cmd[128];

	snprintf(cmd, sizeof(cmd), "rm -rf %s", root);
	return system(cmd);
}

static void test_procinfo__names_read_at_first_sight(void **state)
{
	struct procinfo *pi;

	assert_int_equal(procinfo__new(&pi, root), 0);
	procinfo__note(pi, 100, 101);
	assert_string_equal(procinfo__comm(pi, 100, 101), "worker-1");
	assert_string_equal(procinfo__process(pi, 100), "server");
	/* a thread never seen falls back to the process name */
	assert_string_equal(procinfo__comm(pi, 100, 102), "server");
	/* unknown process */
	assert_string_equal(procinfo__process(pi, 999), "?");
	procinfo__free(pi);
}

/* A thread's CPU time is the first field of its schedstat line; anything else is refused. */
static void test_procinfo__run_ns_from_schedstat(void **state)
{
	struct procinfo *pi;
	uint64_t ns = 5;

	assert_int_equal(procinfo__new(&pi, root), 0);
	assert_int_equal(procinfo__run_ns(pi, 100, 101, &ns), 0);
	assert_int_equal(ns, 123456789);
	ns = 5;
	assert_int_equal(procinfo__run_ns(pi, 100, 102, &ns), -EINVAL);
	assert_int_equal(procinfo__run_ns(pi, 100, 103, &ns), -EINVAL); /* past 2^64 */
	assert_int_equal(procinfo__run_ns(pi, 100, 104, &ns), -ENOENT); /* gone */
	assert_int_equal(ns, 5);
	procinfo__free(pi);
}

static void test_procinfo__exit_name_wins(void **state)
{
	struct procinfo *pi;

	assert_int_equal(procinfo__new(&pi, root), 0);
	procinfo__note(pi, 100, 101);
	procinfo__set_comm(pi, 100, 101, "renamed");
	assert_string_equal(procinfo__comm(pi, 100, 101), "renamed");
	/* a thread that exited before we read /proc still gets its name */
	procinfo__note(pi, 100, 105);
	procinfo__set_comm(pi, 100, 105, "short-lived");
	assert_string_equal(procinfo__comm(pi, 100, 105), "short-lived");
	/* the main thread's final name is the process name */
	procinfo__set_comm(pi, 200, 200, "exec-ed");
	assert_string_equal(procinfo__process(pi, 200), "exec-ed");
	procinfo__free(pi);
}

static void test_procinfo__reused_ids_read_again(void **state)
{
	struct procinfo *pi;

	put("300/comm", "first\n");
	put("300/task/300/comm", "first\n");
	put("300/task/301/comm", "first-worker\n");
	assert_int_equal(procinfo__new(&pi, root), 0);
	assert_int_equal(procinfo__note(pi, 300, 301), 0);
	assert_string_equal(procinfo__comm(pi, 300, 301), "first-worker");
	/* The worker exits: its final name stays for the report. */
	assert_int_equal(procinfo__exited(pi, 300, 301, "first-worker", false), 0);
	assert_string_equal(procinfo__comm(pi, 300, 301), "first-worker");
	/* A new thread of the same process reuses the tid. */
	put("300/task/301/comm", "second-worker\n");
	assert_int_equal(procinfo__note(pi, 300, 301), 0);
	assert_string_equal(procinfo__comm(pi, 300, 301), "second-worker");
	/* The process dies; a new process reuses its pid (fork event). */
	assert_int_equal(procinfo__exited(pi, 300, 300, "first", true), 0);
	assert_string_equal(procinfo__process(pi, 300), "first");
	put("300/comm", "reuser\n");
	put("300/task/300/comm", "reuser\n");
	assert_int_equal(procinfo__note(pi, 300, 300), 0);
	assert_string_equal(procinfo__process(pi, 300), "reuser");
	assert_string_equal(procinfo__comm(pi, 300, 300), "reuser");
	/* Still alive: a second sight does not read again (the name is cached). */
	put("300/comm", "renamed-later\n");
	assert_int_equal(procinfo__note(pi, 300, 300), 0);
	assert_string_equal(procinfo__process(pi, 300), "reuser");
	procinfo__free(pi);
}

static void test_procinfo__gone_thread_keeps_exit_name(void **state)
{
	struct procinfo *pi;

	assert_int_equal(procinfo__new(&pi, root), 0);
	/* Exited, then noted again (a late sample) with no /proc entry: the exit name stays. */
	assert_int_equal(procinfo__exited(pi, 400, 401, "gone", false), 0);
	assert_int_equal(procinfo__note(pi, 400, 401), 0);
	assert_string_equal(procinfo__comm(pi, 400, 401), "gone");
	procinfo__free(pi);
}

/* PF_KTHREAD from /proc/PID/stat: we are not one; kthreadd (pid 2 outside a pid namespace)
 * is; a name with ") " in it cannot shift the fields (ours, set with PR_SET_NAME). */
static void test_procinfo__kthread(void **state)
{
	char comm[32] = "";
	FILE *f;

	(void)state;
	assert_int_equal(procinfo__kthread((uint32_t)getpid()), 0);
	assert_int_equal(procinfo__kthread(0x7ffffff0), -ESRCH);
	assert_int_equal(prctl(PR_SET_NAME, "x) R 1 1 1 1 1"), 0);
	assert_int_equal(procinfo__kthread((uint32_t)getpid()), 0);
	f = fopen("/proc/2/comm", "r");
	if (!f || !fgets(comm, sizeof(comm), f) || strcmp(comm, "kthreadd\n")) {
		if (f)
			fclose(f);
		skip(); /* in a pid namespace: pid 2 is someone else */
	}
	fclose(f);
	assert_int_equal(procinfo__kthread(2), 1);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_procinfo__names_read_at_first_sight),
		cmocka_unit_test(test_procinfo__run_ns_from_schedstat),
		cmocka_unit_test(test_procinfo__exit_name_wins),
		cmocka_unit_test(test_procinfo__reused_ids_read_again),
		cmocka_unit_test(test_procinfo__gone_thread_keeps_exit_name),
		cmocka_unit_test(test_procinfo__kthread),
	};

	return cmocka_run_group_tests_name("procinfo", tests, setup, teardown);
}
