// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
#include <errno.h>
#include <fcntl.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "proc/pidns.h"

static int parse(uint32_t *out, const char *text)
{
	return pidns__parse_nspid(out, text, strlen(text));
}

static void test_pidns__innermost_pid(void **state)
{
	uint32_t pid = 0;

	/* a container's process: host pid, then its own */
	assert_int_equal(parse(&pid, "Name:\tsleep\nTgid:\t30942\nPid:\t30942\nPPid:\t30921\n"
				     "NStgid:\t30942\t1\nNSpid:\t30942\t1\nNSpgid:\t30942\t1\n"),
			 0);
	assert_int_equal(pid, 1);
	/* nested: host, a container, a sandbox inside it */
	assert_int_equal(parse(&pid, "NSpid:\t4000\t37\t2\n"), 0);
	assert_int_equal(pid, 2);
	/* the host's own namespace only */
	assert_int_equal(parse(&pid, "Name:\tbash\nNSpid:\t1234\n"), 0);
	assert_int_equal(pid, 1234);
	/* last line without a newline */
	assert_int_equal(parse(&pid, "Pid:\t5\nNSpid:\t5\t9"), 0);
	assert_int_equal(pid, 9);
	/* NStgid is not NSpid; the length is the bound */
	assert_int_equal(parse(&pid, "NStgid:\t1\t2\n"), -ENOENT);
	assert_int_equal(pidns__parse_nspid(&pid, "NSpid:\t12\t34\n", 11), 0);
	assert_int_equal(pid, 3);
}

static void test_pidns__malformed(void **state)
{
	uint32_t pid = 77;

	assert_int_equal(parse(&pid, ""), -ENOENT);
	assert_int_equal(parse(&pid, "Pid:\t5\n"), -ENOENT);
	assert_int_equal(parse(&pid, "xNSpid:\t5\n"), -ENOENT);
	assert_int_equal(parse(&pid, "NSpid:\n"), -EINVAL);
	assert_int_equal(parse(&pid, "NSpid:\t\t\n"), -EINVAL);
	assert_int_equal(parse(&pid, "NSpid:\t5\tx\n"), -EINVAL);
	assert_int_equal(parse(&pid, "NSpid:\t-5\n"), -EINVAL);
	assert_int_equal(parse(&pid, "NSpid:\t0\n"), -EINVAL);
	assert_int_equal(parse(&pid, "NSpid:\t5\t4294967296\n"), -EINVAL);
	assert_int_equal(parse(&pid, "NSpid:\t99999999999999999999999\n"), -EINVAL);
	assert_int_equal(pid, 77);
	assert_int_equal(parse(&pid, "NSpid:\t4294967295\n"), 0);
	assert_int_equal(pid, 4294967295u);
}

static void test_pidns__read_own(void **state)
{
	int proc_fd = open("/proc", O_RDONLY | O_DIRECTORY);
	uint32_t pid = 0;
	char buf[4096];
	FILE *f;
	size_t n;

	assert_true(proc_fd >= 0);
	/* Our own innermost pid is what getpid() says in our namespace. */
	assert_int_equal(pidns__read_nspid(&pid, proc_fd, (uint32_t)getpid()), 0);
	f = fopen("/proc/self/status", "r");
	assert_non_null(f);
	n = fread(buf, 1, sizeof(buf) - 1, f);
	fclose(f);
	buf[n] = 0;
	assert_non_null(strstr(buf, "NSpid:"));
	assert_int_equal(pid, (uint32_t)getpid());
	assert_int_equal(pidns__read_nspid(&pid, proc_fd, 999999999), -ENOENT);
	close(proc_fd);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_pidns__innermost_pid),
		cmocka_unit_test(test_pidns__malformed),
		cmocka_unit_test(test_pidns__read_own),
	};

	return cmocka_run_group_tests_name("pidns", tests, NULL, NULL);
}
