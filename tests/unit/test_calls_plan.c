// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
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

#include "attach/calls_plan.h"
#include "proc/maps.h"

/* A literal and its length without the final NUL. */
#define LIST(s) s, sizeof(s) - 1

static void classify(const char *path, enum prof_runtime rt, int major, int minor)
{
	struct calls_runtime_file f;

	assert_true(calls_plan__classify(path, &f));
	assert_int_equal(f.runtime, rt);
	assert_int_equal(f.major, major);
	assert_int_equal(f.minor, minor);
	assert_string_equal(f.path, path);
}

static void test_calls_plan__classify_runtimes(void **state)
{
	classify("/usr/bin/python3.11", PROF_RT_PYTHON, 3, 11);
	classify("/usr/bin/python2.7", PROF_RT_PYTHON, 2, 7);
	classify("/usr/local/bin/python3.15d", PROF_RT_PYTHON, 3, 15);
	classify("/usr/lib/x86_64-linux-gnu/libpython3.11.so.1.0", PROF_RT_PYTHON, 3, 11);
	classify("/usr/lib/x86_64-linux-gnu/libruby-3.1.so.3.1.2", PROF_RT_RUBY, 3, 1);
	classify("/opt/ruby/lib/libruby.so.2.4.10", PROF_RT_RUBY, 2, 4);
	classify("/usr/bin/ruby3.1", PROF_RT_RUBY, 3, 1);
	classify("/usr/bin/php8.2", PROF_RT_PHP, 8, 2);
	classify("/usr/sbin/php-fpm8.2", PROF_RT_PHP, 8, 2);
	classify("/usr/lib/apache2/modules/libphp8.2.so", PROF_RT_PHP, 8, 2);
	classify("/usr/local/bin/php", PROF_RT_PHP, -1, -1);
	classify("/usr/lib/jvm/java-17-openjdk-amd64/lib/server/libjvm.so", PROF_RT_JAVA, -1, -1);

	assert_false(calls_plan__classify("/usr/bin/python3.11-config", NULL));
	assert_false(calls_plan__classify("/usr/bin/python", NULL)); /* no version: a script */
	assert_false(calls_plan__classify("/usr/bin/phpunit", NULL));
	assert_false(calls_plan__classify("/usr/bin/perl", NULL));
	assert_false(calls_plan__classify("/usr/lib/jvm/x/lib/libjava.so", NULL));
	assert_false(calls_plan__classify("/usr/bin/rubocop", NULL));
}

static const char maps_text[] =
	"55d1c0a00000-55d1c0a5e000 r--p 00000000 08:01 1311 /usr/bin/php8.2\n"
	"55d1c0a5e000-55d1c0e2a000 r-xp 0005e000 08:01 1311 /usr/bin/php8.2\n"
	"7f1a2c000000-7f1a2c021000 rw-p 00000000 00:00 0 \n"
	"7f1a2d000000-7f1a2d200000 r-xp 00000000 08:01 2222 /usr/lib/x86_64-linux-gnu/libc.so.6\n"
	"7f1a2e000000-7f1a2e100000 r--p 00000000 08:01 3333 "
	"/usr/lib/x86_64-linux-gnu/libpython3.11.so.1.0\n"
	"7f1a2e100000-7f1a2e400000 r-xp 00100000 08:01 3333 "
	"/usr/lib/x86_64-linux-gnu/libpython3.11.so.1.0\n"
	"7f1a2e400000-7f1a2e500000 r-xp 00400000 08:01 3333 "
	"/usr/lib/x86_64-linux-gnu/libpython3.11.so.1.0\n"
	"7f1a2f000000-7f1a2f001000 r--p 00000000 08:01 4444 "
	"/usr/lib/ruby/3.1.0/x86_64-linux-gnu/enc/libruby-data.so\n"
	"7ffc1c000000-7ffc1c021000 rw-p 00000000 00:00 0 [stack]\n";

static void test_calls_plan__detect_from_maps(void **state)
{
	struct calls_runtime_file files[8];
	struct maps *m = NULL;
	FILE *f = fmemopen((void *)maps_text, sizeof(maps_text) - 1, "r");
	size_t n;

	assert_non_null(f);
	assert_int_equal(maps__parse(&m, f), 0);
	fclose(f);
	n = calls_plan__detect(m, files, 8);
	/* Executable mappings only, each file once; the read-only libruby-data is not code. */
	assert_int_equal(n, 2);
	assert_int_equal(files[0].runtime, PROF_RT_PHP);
	assert_string_equal(files[0].path, "/usr/bin/php8.2");
	assert_int_equal(files[1].runtime, PROF_RT_PYTHON);
	assert_int_equal(files[1].minor, 11);
	assert_int_equal(calls_plan__detect(m, files, 1), 1);
	maps__free(m);
}

static void test_calls_plan__java_release(void **state)
{
	assert_int_equal(calls_plan__java_release_major(
				 LIST("IMPLEMENTOR=\"Debian\"\nJAVA_VERSION=\"17.0.15\"\n")),
			 17);
	assert_int_equal(calls_plan__java_release_major(LIST("JAVA_VERSION=\"1.8.0_392\"\n")), 8);
	assert_int_equal(calls_plan__java_release_major(LIST("JAVA_VERSION=\"21\"\n")), 21);
	assert_int_equal(calls_plan__java_release_major(LIST("X_JAVA_VERSION=\"21\"\n")), -1);
	assert_int_equal(calls_plan__java_release_major(LIST("")), -1);
	/* Bounded by len, not by a NUL: the version past len is not read. */
	assert_int_equal(calls_plan__java_release_major("JAVA_VERSION=\"21\"", 15), 2);
	assert_int_equal(calls_plan__java_release_major("JAVA_VERSION=\"21\"", 14), -1);
	assert_int_equal(calls_plan__java_release_major(LIST("A=1\nJAVA_VERSION=\"11")), 11);
}

/* A scratch directory for release files, removed by the test. */
static void release_dir(char *dir, size_t len, char *path, size_t plen)
{
	snprintf(dir, len, "/tmp/prof-release.XXXXXX");
	assert_non_null(mkdtemp(dir));
	snprintf(path, plen, "%s/release", dir);
}

static void test_calls_plan__release_file_read(void **state)
{
	static const char text[] = "IMPLEMENTOR=\"Debian\"\nJAVA_VERSION=\"17.0.15\"\n";
	char dir[64], path[96];
	int major = 0;
	FILE *f;

	release_dir(dir, sizeof(dir), path, sizeof(path));
	f = fopen(path, "w");
	assert_non_null(f);
	assert_int_equal(fwrite(text, 1, sizeof(text) - 1, f), sizeof(text) - 1);
	/* A huge file: only its first CALLS_RELEASE_MAX bytes are read. */
	for (int i = 0; i < 64; i++)
		assert_int_equal(
			fputs("# padding line of a release file that keeps going on and on\n", f) >=
				0,
			1);
	assert_int_equal(fclose(f), 0);
	assert_int_equal(calls_plan__java_release_read(&major, -1, path), 0);
	assert_int_equal(major, 17);
	assert_int_equal(calls_plan__java_release_read(&major, -1, "/nonexistent/release"),
			 -ENOENT);
	unlink(path);
	rmdir(dir);
}

/* A FIFO would block the open (no writer) or the read forever; a symlink to /dev/zero would
 * be read until memory runs out.  Both are refused at once; the alarm turns a hang into a
 * failure. */
static void test_calls_plan__release_fifo_and_zero_refused(void **state)
{
	char dir[64], path[96];
	int major = 0;

	release_dir(dir, sizeof(dir), path, sizeof(path));
	assert_int_equal(mkfifo(path, 0600), 0);
	alarm(20);
	assert_int_equal(calls_plan__java_release_read(&major, -1, path), -EINVAL);
	alarm(0);
	unlink(path);
	assert_int_equal(symlink("/dev/zero", path), 0);
	alarm(20);
	assert_int_equal(calls_plan__java_release_read(&major, -1, path), -ELOOP);
	alarm(0);
	/* /dev/zero itself, named directly: a device, not a regular file. */
	alarm(20);
	assert_int_equal(calls_plan__java_release_read(&major, -1, "/dev/zero"), -EINVAL);
	alarm(0);
	unlink(path);
	rmdir(dir);
}

static void test_calls_plan__plans_follow_measured_probes(void **state)
{
	struct calls_plan p;

	/* CPython 3.11: returns only, flagged, with the warning. */
	calls_plan__init(&p, PROF_RT_PYTHON, 3, 11);
	assert_int_equal(p.nprobes, 1);
	assert_string_equal(p.probes[0].name, "function__return");
	assert_true(p.probes[0].ret);
	assert_int_equal(p.probes[0].flags, PROF_CALL_F_RETURN_ONLY);
	assert_non_null(strstr(p.limit, "gh-98894"));
	for (int minor = 12; minor <= 14; minor++) {
		calls_plan__init(&p, PROF_RT_PYTHON, 3, minor);
		assert_int_equal(p.nprobes, 0);
		assert_non_null(strstr(p.limit, "removed"));
	}
	calls_plan__init(&p, PROF_RT_PYTHON, 3, 10);
	assert_int_equal(p.nprobes, 2);
	assert_null(p.limit);
	calls_plan__init(&p, PROF_RT_PYTHON, 3, 15);
	assert_int_equal(p.nprobes, 2);
	assert_false(p.probes[0].ret);
	assert_true(p.probes[1].ret);

	/* Ruby >= 2.5: C methods only (method__return alone would unbalance the stacks). */
	calls_plan__init(&p, PROF_RT_RUBY, 3, 1);
	assert_int_equal(p.nprobes, 2);
	assert_string_equal(p.probes[0].name, "cmethod__entry");
	assert_non_null(strstr(p.limit, "16084"));
	calls_plan__init(&p, PROF_RT_RUBY, -1, -1);
	assert_int_equal(p.nprobes, 2);
	calls_plan__init(&p, PROF_RT_RUBY, 2, 4);
	assert_int_equal(p.nprobes, 4);
	assert_null(p.limit);

	calls_plan__init(&p, PROF_RT_PHP, 8, 2);
	assert_int_equal(p.nprobes, 2);
	assert_string_equal(p.probes[0].provider, "php");
	calls_plan__init(&p, PROF_RT_JAVA, 17, -1);
	assert_int_equal(p.nprobes, 2);
	assert_string_equal(p.probes[1].provider, "hotspot");
	assert_string_equal(p.probes[1].name, "method__return");
}

/* The marker probes: PHP's exceptions (and error), CPython's imports, HotSpot's class loads
 * (it has no exception probe); none for Ruby. */
static void test_calls_plan__marker_plans(void **state)
{
	struct calls_marker_probe mp[CALLS_MAX_MARKERS];

	(void)state;
	assert_int_equal(calls_plan__markers(mp, PROF_RT_PHP), 3);
	assert_string_equal(mp[0].provider, "php");
	assert_string_equal(mp[0].name, "exception__thrown");
	assert_int_equal(mp[0].kind, PROF_MARK_EXC_THROWN);
	assert_string_equal(mp[1].name, "exception__caught");
	assert_int_equal(mp[1].kind, PROF_MARK_EXC_CAUGHT);
	assert_string_equal(mp[2].name, "error");
	assert_int_equal(mp[2].kind, PROF_MARK_ERROR);
	assert_int_equal(calls_plan__markers(mp, PROF_RT_PYTHON), 2);
	assert_string_equal(mp[0].name, "import__find__load__start");
	assert_int_equal(mp[0].kind, PROF_MARK_IMPORT_START);
	assert_string_equal(mp[1].name, "import__find__load__done");
	assert_int_equal(mp[1].kind, PROF_MARK_IMPORT_DONE);
	assert_int_equal(calls_plan__markers(mp, PROF_RT_JAVA), 1);
	assert_string_equal(mp[0].provider, "hotspot");
	assert_string_equal(mp[0].name, "class__loaded");
	assert_int_equal(mp[0].kind, PROF_MARK_CLASS_LOAD);
	assert_int_equal(calls_plan__markers(mp, PROF_RT_RUBY), 0);
}

static void test_calls_plan__php_environment(void **state)
{
	assert_true(calls_plan__env_enabled(LIST("HOME=/root\0USE_ZEND_DTRACE=1\0"),
					    "USE_ZEND_DTRACE"));
	assert_true(calls_plan__env_enabled(LIST("USE_ZEND_DTRACE=2"), "USE_ZEND_DTRACE"));
	assert_false(calls_plan__env_enabled(LIST("USE_ZEND_DTRACE=0\0"), "USE_ZEND_DTRACE"));
	assert_false(calls_plan__env_enabled(LIST("USE_ZEND_DTRACE=\0"), "USE_ZEND_DTRACE"));
	assert_false(calls_plan__env_enabled(LIST("XUSE_ZEND_DTRACE=1\0"), "USE_ZEND_DTRACE"));
	assert_false(calls_plan__env_enabled(LIST("USE_ZEND_DTRACEX=1\0"), "USE_ZEND_DTRACE"));
	assert_false(calls_plan__env_enabled("", 0, "USE_ZEND_DTRACE"));
}

static void test_calls_plan__java_flags(void **state)
{
	assert_true(calls_plan__java_probes_enabled(
		LIST("java\0-XX:+ExtendedDTraceProbes\0-cp\0.\0Calls\0"), LIST("")));
	assert_true(
		calls_plan__java_probes_enabled(LIST("java\0-XX:+DTraceMethodProbes\0"), LIST("")));
	assert_true(calls_plan__java_probes_enabled(
		LIST("java\0Calls\0"),
		LIST("A=b\0JAVA_TOOL_OPTIONS=-Xmx1g -XX:+ExtendedDTraceProbes\0")));
	assert_false(calls_plan__java_probes_enabled(LIST("java\0-XX:-ExtendedDTraceProbes\0"),
						     LIST("OTHER=-XX:+ExtendedDTraceProbes\0")));
	assert_false(calls_plan__java_probes_enabled(LIST("java\0Calls\0"), LIST("")));
}

/* javac, jshell, jar run the JVM in process and hand it their -J options. */
static void test_calls_plan__java_flags_of_jdk_tools(void **state)
{
	(void)state;
	assert_true(calls_plan__java_probes_enabled(
		LIST("javac\0-J-XX:+ExtendedDTraceProbes\0-d\0out\0Calls.java\0"), LIST("")));
	assert_true(calls_plan__java_probes_enabled(LIST("jshell\0-J-XX:+DTraceMethodProbes\0"),
						    LIST("")));
	assert_false(calls_plan__java_probes_enabled(
		LIST("javac\0-J-XX:-ExtendedDTraceProbes\0Calls.java\0"), LIST("")));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_calls_plan__classify_runtimes),
		cmocka_unit_test(test_calls_plan__detect_from_maps),
		cmocka_unit_test(test_calls_plan__java_release),
		cmocka_unit_test(test_calls_plan__release_file_read),
		cmocka_unit_test(test_calls_plan__release_fifo_and_zero_refused),
		cmocka_unit_test(test_calls_plan__plans_follow_measured_probes),
		cmocka_unit_test(test_calls_plan__marker_plans),
		cmocka_unit_test(test_calls_plan__php_environment),
		cmocka_unit_test(test_calls_plan__java_flags),
		cmocka_unit_test(test_calls_plan__java_flags_of_jdk_tools),
	};

	return cmocka_run_group_tests_name("calls_plan", tests, NULL, NULL);
}
