// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "export/stackdump.h"
#include "proc/syscalls.h"
#include "profile/profile.h"

/* Locations: 1 a kernel frame, 2 clock_nanosleep in libc, 3 wait_here in the executable, 4 a
 * Python frame (no address) with file and line, 5 an address that did not symbolize, 6 a name
 * JSON must escape. */
static int setup(void **state)
{
	struct profile_mapping kernel = {.file = "[kernel.kallsyms]"};
	struct profile_mapping libc = {.start = 0x7f00, .limit = 0x8f00, .file = "/lib/libc.so.6"};
	struct profile_mapping exe = {.start = 0x100, .limit = 0x900, .file = "/opt/app/bin/app"};
	uint32_t mk, ml, me, fn, id;
	struct profile *p;
	int err = 0;

	if (profile__new(&p, "dump"))
		return -1;
	err |= profile__add_type(p, "threads", "count");
	err |= profile__mapping(p, &mk, &kernel);
	err |= profile__mapping(p, &ml, &libc);
	err |= profile__mapping(p, &me, &exe);
	err |= profile__function(p, &fn, "hrtimer_nanosleep", "hrtimer_nanosleep", "", 0);
	err |= profile__location(p, &id, 0xffffffff81000010ULL, mk, fn, 0);
	err |= profile__function(p, &fn, "clock_nanosleep", "clock_nanosleep", "", 0);
	err |= profile__location(p, &id, 0x7f10, ml, fn, 0);
	err |= profile__function(p, &fn, "wait_here", "wait_here", "app.c", 0);
	err |= profile__location(p, &id, 0x120, me, fn, 14);
	err |= profile__function(p, &fn, "nap", "nap", "/srv/job.py", 9);
	err |= profile__location(p, &id, 0, 0, fn, 10);
	err |= profile__location(p, &id, 0x7f20, ml, 0, 0);
	err |= profile__function(p, &fn, "a\"b\\\n", "x", "", 0);
	err |= profile__location(p, &id, 0x130, me, fn, 0);
	err |= profile__add_counter(p, "stack_fail", "stacks lost", 2);
	err |= profile__add_counter(p, "ringbuf_full", "events dropped", 0);
	if (err) {
		profile__free(p);
		return -1;
	}
	*state = p;
	return 0;
}

static int teardown(void **state)
{
	profile__free(*state);
	return 0;
}

static char *write(const struct profile *p, const struct stackdump_process *procs, size_t n,
		   bool json)
{
	char *buf = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&buf, &len);

	assert_non_null(f);
	if (json)
		assert_int_equal(stackdump__write_json(f, p, procs, n), 0);
	else
		assert_int_equal(stackdump__write_text(f, p, procs, n), 0);
	assert_int_equal(fclose(f), 0);
	return buf;
}

static const struct stackdump_thread threads[] = {
	{.tid = 7,
	 .comm = "app",
	 .state = "sleeping",
	 .syscall = "clock_nanosleep",
	 .syscall_nr = 230,
	 .locs = (const uint32_t[]){1, 2, 3},
	 .nlocs = 3},
	{.tid = 9,
	 .comm = "python3",
	 .thread_name = "worker",
	 .state = "running",
	 .syscall_nr = -1,
	 .gil = "held",
	 .locs = (const uint32_t[]){5, 4},
	 .nlocs = 2},
	{.tid = 11,
	 .comm = "odd",
	 .state = "runnable",
	 .syscall_nr = -1,
	 .note = "no stack captured"},
	{.tid = 12,
	 .comm = "esc",
	 .state = "stopped",
	 .syscall_nr = 999,
	 .locs = (const uint32_t[]){6},
	 .nlocs = 1},
};

static const struct stackdump_process procs[] = {
	{.pid = 7, .name = "app", .exe = "/opt/app/bin/app", .threads = threads, .nthreads = 4},
};

static void test_stackdump__text(void **state)
{
	char *out = write(*state, procs, 1, false);

	assert_string_equal(out, "Process 7 (app): /opt/app/bin/app\n"
				 "  Thread 7 \"app\" (sleeping in clock_nanosleep)\n"
				 "    hrtimer_nanosleep [kernel]\n"
				 "    clock_nanosleep [libc.so.6]\n"
				 "    wait_here (app.c:14) [app]\n"
				 "  Thread 9 \"python3\" [worker] (running, gil held)\n"
				 "    libc.so.6+0x20\n"
				 "    nap (/srv/job.py:10)\n"
				 "  Thread 11 \"odd\" (runnable): no stack captured\n"
				 "  Thread 12 \"esc\" (stopped in system call 999)\n"
				 "    a\"b\\\\x0a [app]\n");
	free(out);
}

/* comm, thread names, the executable's path and symbols come from the target: escaped. */
static void test_stackdump__text_escapes_target_bytes(void **state)
{
	const struct stackdump_thread t[] = {
		{.tid = 5,
		 .comm = "\x1b[31m",
		 .thread_name = "w\xc2\x9b"
				"2J\xc3\xa9",
		 .state = "sleeping",
		 .syscall_nr = -1,
		 .locs = (const uint32_t[]){6},
		 .nlocs = 1},
	};
	const struct stackdump_process pr[] = {
		{.pid = 5,
		 .name = "\x1b]0;pwn\x07",
		 .exe = "/tmp/a\rb",
		 .threads = t,
		 .nthreads = 1},
	};
	char *out = write(*state, pr, 1, false);

	assert_string_equal(out, "Process 5 (\\x1b]0;pwn\\x07): /tmp/a\\x0db\n"
				 "  Thread 5 \"\\x1b[31m\" [w\\xc2\\x9b2J\xc3\xa9] (sleeping)\n"
				 "    a\"b\\\\x0a [app]\n");
	free(out);
}

static void test_stackdump__json(void **state)
{
	char *out = write(*state, procs, 1, true);

	assert_string_equal(
		out,
		"{\"processes\":[{\"pid\":7,\"name\":\"app\",\"exe\":\"/opt/app/bin/"
		"app\",\"threads\":["
		"{\"tid\":7,\"name\":\"app\",\"thread_name\":null,\"state\":\"sleeping\","
		"\"syscall\":\"clock_nanosleep\",\"syscall_nr\":230,\"gil\":null,\"note\":null,"
		"\"frames\":["
		"{\"function\":\"hrtimer_nanosleep\",\"kind\":\"kernel\",\"module\":"
		"\"[kernel.kallsyms]\",\"file\":\"\",\"line\":0,\"address\":\"0xffffffff81000010\"}"
		","
		"{\"function\":\"clock_nanosleep\",\"kind\":\"native\",\"module\":\"libc.so.6\","
		"\"file\":\"\",\"line\":0,\"address\":\"0x7f10\"},"
		"{\"function\":\"wait_here\",\"kind\":\"native\",\"module\":\"app\",\"file\":\"app."
		"c\","
		"\"line\":14,\"address\":\"0x120\"}]},"
		"{\"tid\":9,\"name\":\"python3\",\"thread_name\":\"worker\",\"state\":\"running\","
		"\"syscall\":null,\"syscall_nr\":null,\"gil\":\"held\",\"note\":null,\"frames\":["
		"{\"function\":\"libc.so.6+0x20\",\"kind\":\"native\",\"module\":"
		"\"libc.so.6\",\"file\":\"\",\"line\":0,\"address\":\"0x7f20\"},"
		"{\"function\":\"nap\",\"kind\":\"python\",\"module\":\"\",\"file\":\"/srv/"
		"job.py\","
		"\"line\":10,\"address\":\"0x0\"}]},"
		"{\"tid\":11,\"name\":\"odd\",\"thread_name\":null,\"state\":\"runnable\","
		"\"syscall\":null,\"syscall_nr\":null,\"gil\":null,\"note\":\"no stack captured\","
		"\"frames\":[]},"
		"{\"tid\":12,\"name\":\"esc\",\"thread_name\":null,\"state\":\"stopped\","
		"\"syscall\":null,\"syscall_nr\":999,\"gil\":null,\"note\":null,\"frames\":["
		"{\"function\":\"a\\\"b\\\\\\n\",\"kind\":\"native\",\"module\":\"app\",\"file\":"
		"\"\","
		"\"line\":0,\"address\":\"0x130\"}]}]}],"
		"\"counters\":{\"stack_fail\":2}}\n");
	free(out);
}

static void test_stackdump__kinds(void **state)
{
	struct profile *p = *state;

	assert_int_equal(profile__location_kind(p, 1), PROFILE_FRAME_KERNEL);
	assert_int_equal(profile__location_kind(p, 2), PROFILE_FRAME_NATIVE);
	assert_int_equal(profile__location_kind(p, 4), PROFILE_FRAME_INTERP);
	assert_int_equal(profile__location_kind(p, 5), PROFILE_FRAME_NATIVE);
	assert_int_equal(profile__location_kind(p, 99), PROFILE_FRAME_NATIVE);
}

static void test_stackdump__no_processes(void **state)
{
	char *out = write(*state, NULL, 0, true);

	assert_string_equal(out, "{\"processes\":[],\"counters\":{\"stack_fail\":2}}\n");
	free(out);
	out = write(*state, NULL, 0, false);
	assert_string_equal(out, "");
	free(out);
}

/* The names come from this machine's <asm/unistd.h> (x86-64 numbers here). */
static void test_stackdump__syscall_names(void **state)
{
	(void)state;
#ifdef __x86_64__
	assert_string_equal(syscalls__name(0), "read");
	assert_string_equal(syscalls__name(202), "futex");
	assert_string_equal(syscalls__name(230), "clock_nanosleep");
#endif
	assert_null(syscalls__name(-1));
	assert_null(syscalls__name(100000));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_stackdump__text, setup, teardown),
		cmocka_unit_test_setup_teardown(test_stackdump__text_escapes_target_bytes, setup,
						teardown),
		cmocka_unit_test_setup_teardown(test_stackdump__json, setup, teardown),
		cmocka_unit_test_setup_teardown(test_stackdump__kinds, setup, teardown),
		cmocka_unit_test_setup_teardown(test_stackdump__no_processes, setup, teardown),
		cmocka_unit_test(test_stackdump__syscall_names),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
