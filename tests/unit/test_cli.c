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
#include <sys/stat.h>
#include <unistd.h>

#include <cmocka.h>

#include "cli.h"

#define ARGV(...)	((char *[]){"bpftrace-prof", __VA_ARGS__, NULL})
#define ARGC(...)	((int)(sizeof((char *[]){"bpftrace-prof", __VA_ARGS__}) / sizeof(char *)))
#define PARSE(env, ...) cli__parse(env, ARGC(__VA_ARGS__), ARGV(__VA_ARGS__))

static void test_cli__pid_list_and_defaults(void **state)
{
	struct env env;

	assert_int_equal(PARSE(&env, "-p", "12,34"), CLI_RUN);
	assert_int_equal(env.npids, 2);
	assert_int_equal(env.pids[0], 12);
	assert_int_equal(env.pids[1], 34);
	assert_int_equal(env.modes, MODE_HEAP);
	assert_int_equal(env.format, FMT_PPROF);
	assert_string_equal(env.output, "bpftrace-prof.pb.gz");
	assert_int_equal(env.top, 10);
	assert_null(env.cmd);
	cli__free(&env);
}

static void test_cli__command_keeps_its_options(void **state)
{
	struct env env;

	assert_int_equal(PARSE(&env, "--heap", "-d", "2.5", "--", "ls", "-l", "-p", "x"), CLI_RUN);
	assert_non_null(env.cmd);
	assert_string_equal(env.cmd[0], "ls");
	assert_string_equal(env.cmd[1], "-l");
	assert_string_equal(env.cmd[2], "-p");
	assert_null(env.cmd[4]);
	assert_int_equal(env.npids, 0);
	assert_true(env.duration > 2.4 && env.duration < 2.6);
	cli__free(&env);
}

static void test_cli__offcpu_mode(void **state)
{
	struct env env;

	(void)state;
	assert_int_equal(PARSE(&env, "--offcpu", "-p", "1"), CLI_RUN);
	assert_int_equal(env.modes, MODE_OFFCPU);
	cli__free(&env);
	assert_int_equal(PARSE(&env, "--offcpu", "--cpu", "--heap", "-p", "1"), CLI_RUN);
	assert_int_equal(env.modes, MODE_OFFCPU | MODE_CPU | MODE_HEAP);
	cli__free(&env);
	/* it takes no value */
	assert_int_equal(PARSE(&env, "--offcpu=5", "-p", "1"), -EINVAL);
}

static void test_cli__modes_and_options(void **state)
{
	struct env env;

	assert_int_equal(PARSE(&env, "--cpu=999", "--heap", "--calls", "-p", "1", "-f", "folded",
			       "--top", "0", "--sample-bytes", "524288", "-vv", "-o", "x.folded"),
			 CLI_RUN);
	assert_int_equal(env.modes, MODE_HEAP | MODE_CPU | MODE_CALLS);
	assert_int_equal(env.cpu_hz, 999);
	assert_int_equal(env.format, FMT_FOLDED);
	assert_int_equal(env.top, 0);
	assert_int_equal(env.sample_bytes, 524288);
	assert_int_equal(env.verbosity, 2);
	cli__free(&env);
}

static void test_cli__event_trace_formats(void **state)
{
	struct env env;

	(void)state;
	assert_int_equal(PARSE(&env, "--calls", "-f", "chrome", "-p", "1"), CLI_RUN);
	assert_int_equal(env.format, FMT_CHROME);
	assert_string_equal(env.output, "bpftrace-prof.json");
	cli__free(&env);
	assert_int_equal(PARSE(&env, "--calls", "-f", "perfetto", "-p", "1"), CLI_RUN);
	assert_int_equal(env.format, FMT_PERFETTO);
	assert_string_equal(env.output, "bpftrace-prof.pftrace");
	cli__free(&env);
	assert_int_equal(PARSE(&env, "--calls", "-f", "chrome", "-o", "t.json.gz", "-p", "1"),
			 CLI_RUN);
	assert_string_equal(env.output, "t.json.gz");
	cli__free(&env);
	/* --heap alone, beside --calls, and as the default mode. */
	assert_int_equal(PARSE(&env, "--heap", "-f", "chrome", "-p", "1"), CLI_RUN);
	assert_int_equal(env.modes, MODE_HEAP);
	cli__free(&env);
	assert_int_equal(PARSE(&env, "--calls", "--heap", "-f", "perfetto", "-p", "1"), CLI_RUN);
	assert_int_equal(env.modes, MODE_CALLS | MODE_HEAP);
	assert_string_equal(env.output, "bpftrace-prof.pftrace");
	cli__free(&env);
	assert_int_equal(PARSE(&env, "-f", "perfetto", "-p", "1"), CLI_RUN);
	assert_int_equal(env.modes, MODE_HEAP);
	cli__free(&env);
	/* Modes the event traces do not record, alone or beside --calls. */
	assert_int_equal(PARSE(&env, "--calls", "--cpu", "-f", "perfetto", "-p", "1"), CLI_RUN);
	assert_int_equal(env.modes, MODE_CALLS | MODE_CPU);
	cli__free(&env);
	assert_int_equal(PARSE(&env, "--calls", "--offcpu", "-f", "chrome", "-p", "1"), CLI_RUN);
	cli__free(&env);
	assert_int_equal(PARSE(&env, "--heap", "--cpu", "--offcpu", "-f", "perfetto", "-p", "1"),
			 CLI_RUN);
	cli__free(&env);
	assert_int_equal(PARSE(&env, "--cpu", "-f", "codetracer", "-p", "1"), -EINVAL);
	assert_int_equal(PARSE(&env, "--heap", "-f", "codetracer", "-p", "1"), -EINVAL);
	/* Continuous mode writes pprof. */
	assert_int_equal(PARSE(&env, "--calls", "-f", "chrome", "-p", "1", "--interval", "1",
			       "--output-dir", "/tmp"),
			 -EINVAL);
}

/* -f firefox and -f codetracer: defaults, firefox's --heap, codetracer's folder. */
static void test_cli__firefox_codetracer_formats(void **state)
{
	struct env env;

	(void)state;
	assert_int_equal(PARSE(&env, "--calls", "-f", "firefox", "-p", "1"), CLI_RUN);
	assert_int_equal(env.format, FMT_FIREFOX);
	assert_string_equal(env.output, "bpftrace-prof.profile.json.gz");
	cli__free(&env);
	assert_int_equal(PARSE(&env, "--calls", "--heap", "-f", "firefox", "-p", "1"), CLI_RUN);
	assert_int_equal(env.modes, MODE_CALLS | MODE_HEAP);
	cli__free(&env);
	assert_int_equal(PARSE(&env, "--calls", "-f", "codetracer", "-p", "1"), CLI_RUN);
	assert_int_equal(env.format, FMT_CODETRACER);
	assert_string_equal(env.output, "bpftrace-prof-trace");
	cli__free(&env);
	assert_int_equal(PARSE(&env, "--calls", "-f", "codetracer", "-o", "dir", "-p", "1"),
			 CLI_RUN);
	assert_string_equal(env.output, "dir");
	cli__free(&env);
	/* firefox: --heap and --offcpu beside --calls, --cpu alone; a folder is not stdout. */
	assert_int_equal(PARSE(&env, "--calls", "--offcpu", "-f", "firefox", "-p", "1"), CLI_RUN);
	cli__free(&env);
	assert_int_equal(PARSE(&env, "--cpu", "-f", "firefox", "-p", "1"), CLI_RUN);
	cli__free(&env);
	assert_int_equal(PARSE(&env, "--offcpu", "-f", "firefox", "-p", "1"), -EINVAL);
	assert_int_equal(PARSE(&env, "--calls", "--heap", "-f", "codetracer", "-p", "1"), -EINVAL);
	assert_int_equal(PARSE(&env, "--heap", "-f", "firefox", "-p", "1"), -EINVAL);
	assert_int_equal(PARSE(&env, "--calls", "--heap", "--cpu", "-f", "firefox", "-p", "1"),
			 -EINVAL);
	assert_int_equal(PARSE(&env, "--calls", "-f", "codetracer", "-o", "-", "-p", "1"), -EINVAL);
	assert_int_equal(PARSE(&env, "--calls", "-f", "firefox", "--live", "-p", "1"), -EINVAL);
}

static void test_cli__errors(void **state)
{
	struct env env;

	assert_int_equal(PARSE(&env, "--heap"), -EINVAL);		/* no target */
	assert_int_equal(PARSE(&env, "-p", "abc"), -EINVAL);		/* bad pid */
	assert_int_equal(PARSE(&env, "-p", "0"), -EINVAL);		/* pid 0 */
	assert_int_equal(PARSE(&env, "-p", "-5"), -EINVAL);		/* negative */
	assert_int_equal(PARSE(&env, "-p", "1", "--", "ls"), -EINVAL);	/* two targets */
	assert_int_equal(PARSE(&env, "-p", "1", "-f", "xml"), -EINVAL); /* bad format */
	assert_int_equal(PARSE(&env, "-p", "1", "-d", "0"), -EINVAL);	/* zero duration */
	assert_int_equal(PARSE(&env, "-p", "1", "-d", "x"), -EINVAL);	/* bad duration */
	assert_int_equal(PARSE(&env, "-p", "1", "--bogus"), -EINVAL);	/* unknown option */
	assert_int_equal(PARSE(&env, "-p", "1", "--cpu=0"), -EINVAL);	/* bad frequency */
	assert_int_equal(PARSE(&env, "-p", "1", "stray"), -EINVAL);	/* stray argument */
	assert_int_equal(PARSE(&env, "--heap", "--"), -EINVAL);		/* empty command */
	assert_int_equal(PARSE(&env, "-p", "1", "--heap", "--cpu", "-o", "-"), -EINVAL);
	assert_int_equal(PARSE(&env, "-p"), -EINVAL); /* missing value */
}

static void test_cli__duration_bounds(void **state)
{
	struct env env;

	/* Each of these used to reach an out-of-range double -> int64_t cast. */
	assert_int_equal(PARSE(&env, "-p", "1", "-d", "1e300"), -EINVAL);
	assert_int_equal(PARSE(&env, "-p", "1", "-d", "31536001"), -EINVAL);
	assert_int_equal(PARSE(&env, "-p", "1", "-d", "inf"), -EINVAL);
	assert_int_equal(PARSE(&env, "-p", "1", "-d", "nan"), -EINVAL);
	assert_int_equal(PARSE(&env, "-p", "1", "-d", "-1"), -EINVAL);
	assert_int_equal(PARSE(&env, "-p", "1", "-d", "1e999"), -EINVAL);
	/* The bound itself is accepted. */
	assert_int_equal(PARSE(&env, "-p", "1", "-d", "31536000"), CLI_RUN);
	assert_true(env.duration == CLI_MAX_DURATION);
	cli__free(&env);
}

/* --ring-buffer: MiB, a power of two (the kernel's ring is), 1 to 1024; none: the loader's. */
static void test_cli__ring_buffer(void **state)
{
	static char *const bad[] = {"0", "3", "1536", "2048", "1.5", "-1", "4k", ""};
	struct env env;

	(void)state;
	assert_int_equal(PARSE(&env, "-p", "1"), CLI_RUN);
	assert_int_equal(env.ring_bytes, 0);
	cli__free(&env);
	assert_int_equal(PARSE(&env, "-p", "1", "--ring-buffer", "1"), CLI_RUN);
	assert_int_equal(env.ring_bytes, 1u << 20);
	cli__free(&env);
	assert_int_equal(PARSE(&env, "-p", "1", "--ring-buffer", "1024"), CLI_RUN);
	assert_int_equal(env.ring_bytes, 1u << 30);
	cli__free(&env);
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
		assert_int_equal(PARSE(&env, "-p", "1", "--ring-buffer", bad[i]), -EINVAL);
}

/* --backlog: MiB, 0 (none) to 65536; none: PROF_BACKLOG_BYTES. */
static void test_cli__backlog(void **state)
{
	static char *const bad[] = {"65537", "1.5", "-1", "4k", "", "x"};
	struct env env;

	(void)state;
	assert_int_equal(PARSE(&env, "-p", "1"), CLI_RUN);
	assert_true(env.backlog_bytes == PROF_BACKLOG_BYTES);
	cli__free(&env);
	assert_int_equal(PARSE(&env, "-p", "1", "--backlog", "0"), CLI_RUN);
	assert_true(env.backlog_bytes == 0);
	cli__free(&env);
	assert_int_equal(PARSE(&env, "-p", "1", "--backlog", "65536"), CLI_RUN);
	assert_true(env.backlog_bytes == 65536ULL << 20);
	cli__free(&env);
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
		assert_int_equal(PARSE(&env, "-p", "1", "--backlog", bad[i]), -EINVAL);
}

static void test_cli__unwind_memory(void **state)
{
	struct env env;

	assert_int_equal(PARSE(&env, "-p", "1"), CLI_RUN);
	assert_int_equal(env.unwind_memory, 0); /* the unwinder's default */
	cli__free(&env);
	assert_int_equal(PARSE(&env, "-p", "1", "--unwind-memory", "64"), CLI_RUN);
	assert_int_equal(env.unwind_memory, 64ull << 20);
	cli__free(&env);
	assert_int_equal(PARSE(&env, "-p", "1", "--unwind-memory", "262144"), CLI_RUN);
	assert_int_equal(env.unwind_memory, 256ull << 30);
	cli__free(&env);
	assert_int_equal(PARSE(&env, "-p", "1", "--unwind-memory", "0"), -EINVAL);
	assert_int_equal(PARSE(&env, "-p", "1", "--unwind-memory", "262145"), -EINVAL);
	assert_int_equal(PARSE(&env, "-p", "1", "--unwind-memory", "1.5"), -EINVAL);
	assert_int_equal(PARSE(&env, "-p", "1", "--unwind-memory", "-1"), -EINVAL);
	/* The caps per file: rows, and MiB of CFI (0: the builder's defaults). */
	assert_int_equal(PARSE(&env, "-p", "1"), CLI_RUN);
	assert_int_equal(env.unwind_max_rows, 0);
	assert_int_equal(env.unwind_max_cfi, 0);
	cli__free(&env);
	assert_int_equal(
		PARSE(&env, "-p", "1", "--unwind-max-rows", "100", "--unwind-max-cfi", "8"),
		CLI_RUN);
	assert_int_equal(env.unwind_max_rows, 100);
	assert_int_equal(env.unwind_max_cfi, 8ull << 20);
	cli__free(&env);
	/* all a table in the kernel holds: 2,048-row chunks, 4,096 of them in the index */
	assert_int_equal(PARSE(&env, "-p", "1", "--unwind-max-rows", "8388608"), CLI_RUN);
	assert_int_equal(env.unwind_max_rows, 8388608);
	cli__free(&env);
	assert_int_equal(PARSE(&env, "-p", "1", "--unwind-max-rows", "0"), -EINVAL);
	assert_int_equal(PARSE(&env, "-p", "1", "--unwind-max-rows", "8388609"), -EINVAL);
	assert_int_equal(PARSE(&env, "-p", "1", "--unwind-max-cfi", "0"), -EINVAL);
	assert_int_equal(PARSE(&env, "-p", "1", "--unwind-max-cfi", "65537"), -EINVAL);
}

/* Leak triage's filters: --min-age (seconds), -z / -Z (bytes), all with --heap only. */
static void test_cli__heap_filters(void **state)
{
	struct env env;

	(void)state;
	assert_int_equal(PARSE(&env, "-p", "1", "--min-age", "2.5", "-z", "16", "-Z", "4096"),
			 CLI_RUN);
	assert_true(env.min_age_ns == 2500000000ULL);
	assert_true(env.min_size == 16 && env.max_size == 4096);
	cli__free(&env);
	assert_int_equal(PARSE(&env, "-p", "1", "--min-size", "8", "--max-size", "8"), CLI_RUN);
	assert_true(env.min_size == 8 && env.max_size == 8);
	cli__free(&env);
	assert_int_equal(PARSE(&env, "-p", "1", "--min-age", "0"), -EINVAL);
	assert_int_equal(PARSE(&env, "-p", "1", "--min-age", "nan"), -EINVAL);
	assert_int_equal(PARSE(&env, "-p", "1", "--min-age", "31536001"), -EINVAL);
	assert_int_equal(PARSE(&env, "-p", "1", "-Z", "0"), -EINVAL);
	assert_int_equal(PARSE(&env, "-p", "1", "-z", "-1"), -EINVAL);
	assert_int_equal(PARSE(&env, "-p", "1", "-z", "100", "-Z", "10"), -EINVAL);
	assert_int_equal(PARSE(&env, "-p", "1", "--cpu", "--min-age", "1"), -EINVAL);
	assert_int_equal(PARSE(&env, "-p", "1", "--cpu", "-z", "1"), -EINVAL);
	/* the leak check goes with --heap -- CMD; a bad rules file is bad usage */
	assert_int_equal(PARSE(&env, "--fail-on-leak", "0", "--", "true"), CLI_RUN);
	assert_true(env.leak_gate && env.fail_on_leak == 0 && env.suppress);
	cli__free(&env);
	assert_int_equal(PARSE(&env, "-p", "1", "--fail-on-leak", "0"), -EINVAL);
	assert_int_equal(PARSE(&env, "--cpu", "--fail-on-leak", "0", "--", "true"), -EINVAL);
	assert_int_equal(PARSE(&env, "--fail-on-leak", "x", "--", "true"), -EINVAL);
	assert_int_equal(PARSE(&env, "--leak-suppressions", "/nonexistent", "--", "true"), -EINVAL);
	cli__free(&env);
	assert_int_equal(PARSE(&env, "--leak-suppressions", "/dev/null", "--", "true"), -EINVAL);
	cli__free(&env);
}

static void test_cli__debuginfod(void **state)
{
	struct env env;

	(void)state;
	assert_int_equal(PARSE(&env, "-p", "1"), CLI_RUN);
	assert_false(env.no_debuginfod);
	assert_int_equal(env.debuginfod_timeout, 0); /* the fetcher's default */
	cli__free(&env);
	assert_false(env.no_inline); /* inlined frames by default */
	cli__free(&env);
	assert_int_equal(PARSE(&env, "-p", "1", "--no-inline"), CLI_RUN);
	assert_true(env.no_inline);
	assert_false(env.no_debuginfod);
	cli__free(&env);
	assert_int_equal(PARSE(&env, "-p", "1", "--no-debuginfod", "--debuginfod-timeout", "5"),
			 CLI_RUN);
	assert_true(env.no_debuginfod);
	assert_int_equal(env.debuginfod_timeout, 5);
	cli__free(&env);
	assert_int_equal(PARSE(&env, "-p", "1", "--debuginfod-timeout", "3600"), CLI_RUN);
	cli__free(&env);
	assert_int_equal(PARSE(&env, "-p", "1", "--debuginfod-timeout", "0"), -EINVAL);
	assert_int_equal(PARSE(&env, "-p", "1", "--debuginfod-timeout", "3601"), -EINVAL);
	assert_int_equal(PARSE(&env, "-p", "1", "--debuginfod-timeout", "2s"), -EINVAL);
}

/* --python-frames: python (the default) folds the interpreter's frames, all keeps them. */
static void test_cli__python_frames(void **state)
{
	struct env env;
	struct dump_env d;

	(void)state;
	assert_int_equal(PARSE(&env, "-p", "1"), CLI_RUN);
	assert_int_equal(env.python_frames, STACKRES_PY_PYTHON);
	cli__free(&env);
	assert_int_equal(PARSE(&env, "-p", "1", "--python-frames", "all"), CLI_RUN);
	assert_int_equal(env.python_frames, STACKRES_PY_ALL);
	cli__free(&env);
	assert_int_equal(
		PARSE(&env, "-p", "1", "--python-frames", "all", "--python-frames", "python"),
		CLI_RUN);
	assert_int_equal(env.python_frames, STACKRES_PY_PYTHON);
	cli__free(&env);
	assert_int_equal(PARSE(&env, "-p", "1", "--python-frames", "native"), -EINVAL);
	assert_int_equal(PARSE(&env, "-p", "1", "--python-frames", ""), -EINVAL);
	assert_int_equal(PARSE(&env, "-p", "1", "--python-frames", "ALL"), -EINVAL);
	assert_int_equal(PARSE(&env, "-p", "1", "--python-frames"), -EINVAL);
	/* dump shows stacks too: the same option, the same default */
	assert_int_equal(cli__parse_dump(&d, ARGC("-p", "5"), ARGV("-p", "5")), CLI_RUN);
	assert_int_equal(d.python_frames, STACKRES_PY_PYTHON);
	assert_int_equal(cli__parse_dump(&d, ARGC("-p", "5", "--python-frames", "all"),
					 ARGV("-p", "5", "--python-frames", "all")),
			 CLI_RUN);
	assert_int_equal(d.python_frames, STACKRES_PY_ALL);
	assert_int_equal(cli__parse_dump(&d, ARGC("-p", "5", "--python-frames", "some"),
					 ARGV("-p", "5", "--python-frames", "some")),
			 -EINVAL);
}

static void test_cli__help_and_version_exit(void **state)
{
	struct env env;

	assert_int_equal(PARSE(&env, "--help"), CLI_EXIT);
	assert_int_equal(PARSE(&env, "--version"), CLI_EXIT);
}

/* Parses with stdout replaced by fd (a terminal or not), then puts stdout back. */
static int parse_with_stdout(struct env *env, int fd, int argc, char **argv)
{
	int saved = dup(STDOUT_FILENO), ret;

	assert_true(saved >= 0);
	fflush(stdout);
	assert_int_equal(dup2(fd, STDOUT_FILENO), STDOUT_FILENO);
	ret = cli__parse(env, argc, argv);
	assert_int_equal(dup2(saved, STDOUT_FILENO), STDOUT_FILENO);
	close(saved);
	return ret;
}

#define PARSE_OUT(env, fd, ...) parse_with_stdout(env, fd, ARGC(__VA_ARGS__), ARGV(__VA_ARGS__))

static void test_cli__live(void **state)
{
	int tty, pty, devnull;
	struct env env;

	tty = posix_openpt(O_RDWR | O_NOCTTY);
	assert_true(tty >= 0);
	assert_int_equal(grantpt(tty), 0);
	assert_int_equal(unlockpt(tty), 0);
	pty = open(ptsname(tty), O_RDWR | O_NOCTTY);
	assert_true(pty >= 0);
	devnull = open("/dev/null", O_WRONLY);
	assert_true(devnull >= 0);

	/* --live alone: intervals of 2 s, no --output-dir needed, -o gets the run. */
	assert_int_equal(PARSE_OUT(&env, pty, "--cpu", "--live", "--", "x"), CLI_RUN);
	assert_true(env.live);
	assert_true(env.interval == CLI_LIVE_INTERVAL);
	assert_null(env.output_dir);
	assert_string_equal(env.output, "bpftrace-prof.pb.gz");
	cli__free(&env);
	/* Any format for that one file. */
	assert_int_equal(PARSE_OUT(&env, pty, "--live", "-f", "text", "-p", "1"), CLI_RUN);
	cli__free(&env);
	/* With --interval and --output-dir: those. */
	assert_int_equal(
		PARSE_OUT(&env, pty, "--live", "--interval", "5", "--output-dir", "d", "-p", "1"),
		CLI_RUN);
	assert_true(env.interval == 5);
	assert_string_equal(env.output_dir, "d");
	cli__free(&env);
	/* Without --live, --interval still needs --output-dir. */
	assert_int_equal(PARSE_OUT(&env, pty, "--interval", "5", "-p", "1"), -EINVAL);
	/* stdout is the screen: not a terminal, or the profile going there, is a usage error. */
	assert_int_equal(PARSE_OUT(&env, devnull, "--live", "-p", "1"), -EINVAL);
	assert_int_equal(PARSE_OUT(&env, pty, "--live", "-o", "-", "-p", "1"), -EINVAL);
	close(devnull);
	close(pty);
	close(tty);
}

static void test_cli__output_path_per_mode(void **state)
{
	struct env env;
	char buf[256];

	assert_int_equal(PARSE(&env, "--heap", "--cpu", "-p", "1", "-o", "dir.d/out.pb.gz"),
			 CLI_RUN);
	assert_string_equal(cli__output_path(&env, "heap", buf, sizeof(buf)),
			    "dir.d/out.heap.pb.gz");
	assert_string_equal(cli__output_path(&env, "cpu", buf, sizeof(buf)), "dir.d/out.cpu.pb.gz");
	cli__free(&env);
	assert_int_equal(PARSE(&env, "--heap", "--cpu", "-p", "1", "-o", "noext"), CLI_RUN);
	assert_string_equal(cli__output_path(&env, "cpu", buf, sizeof(buf)), "noext.cpu");
	cli__free(&env);
	assert_int_equal(PARSE(&env, "--heap", "-p", "1", "-o", "one.pb.gz"), CLI_RUN);
	assert_string_equal(cli__output_path(&env, "heap", buf, sizeof(buf)), "one.pb.gz");
	cli__free(&env);
}

static void test_cli__push_options(void **state)
{
	struct env env;

	assert_int_equal(PARSE(&env, "--cpu", "-a", "--interval", "5", "--output-dir", "/tmp/o",
			       "--push", "https://p.example:4040", "--push-protocol", "parca",
			       "--push-auth-file", "/etc/prof-auth"),
			 CLI_RUN);
	assert_string_equal(env.push_url, "https://p.example:4040");
	assert_int_equal(env.push_protocol, PUSH_PARCA);
	assert_string_equal(env.push_auth_file, "/etc/prof-auth");
	cli__free(&env);
	assert_int_equal(PARSE(&env, "-a", "--interval", "5", "--output-dir", "/tmp/o", "--push",
			       "http://h:4040"),
			 CLI_RUN);
	assert_int_equal(env.push_protocol, PUSH_PYROSCOPE);
	assert_null(env.push_auth_file);
	cli__free(&env);
}

/* Wide targets: cpu by default, sampled heap, exits held in a cgroup but not host-wide. */
static void test_cli__wide_target_defaults(void **state)
{
	struct env env;

	(void)state;
	assert_int_equal(PARSE(&env, "--cgroup", "/sys/fs/cgroup/x"), CLI_RUN);
	assert_true(env.wide);
	assert_int_equal(env.modes, MODE_CPU);
	assert_int_equal(env.sample_bytes, CLI_WIDE_SAMPLE_BYTES);
	assert_int_equal(env.hold_exits, 1);
	cli__free(&env);
	assert_int_equal(PARSE(&env, "-a", "--heap", "--sample-bytes", "0"), CLI_RUN);
	assert_int_equal(env.modes, MODE_HEAP);
	assert_int_equal(env.sample_bytes, 0);
	assert_int_equal(env.hold_exits, -1);
	cli__free(&env);
	assert_int_equal(PARSE(&env, "-a", "--hold-exits"), CLI_RUN);
	assert_int_equal(env.hold_exits, 1);
	cli__free(&env);
	assert_int_equal(PARSE(&env, "--container", "3f2a", "--no-hold-exits"), CLI_RUN);
	assert_int_equal(env.hold_exits, -1);
	cli__free(&env);
	assert_int_equal(PARSE(&env, "-p", "1", "--hold-exits"), -EINVAL);
	assert_int_equal(PARSE(&env, "-a", "-p", "1"), -EINVAL);
	assert_int_equal(PARSE(&env, "-a", "--interval", "2"), -EINVAL); /* no --output-dir */
	assert_int_equal(PARSE(&env, "-a", "--interval", "0.5", "--output-dir", "d"), -EINVAL);
	assert_int_equal(PARSE(&env, "-a", "--retain", "3"), -EINVAL);
	/* --no-preload: what we start we preload; nothing else can be. */
	assert_int_equal(
		PARSE(&env, "--heap", "--sample-bytes", "4096", "--no-preload", "--", "true"),
		CLI_RUN);
	assert_true(env.no_preload);
	cli__free(&env);
	assert_int_equal(PARSE(&env, "--no-preload", "-p", "1"), -EINVAL);
	assert_int_equal(PARSE(&env, "--no-preload", "-a"), -EINVAL);
}

static void test_cli__push_needs_interval_and_a_url(void **state)
{
	struct env env;

	assert_int_equal(PARSE(&env, "-a", "--push", "http://h:4040"), -EINVAL);
	assert_int_equal(
		PARSE(&env, "-a", "--interval", "5", "--output-dir", "/tmp/o", "--push", "ftp://h"),
		-EINVAL);
	assert_int_equal(PARSE(&env, "-a", "--interval", "5", "--output-dir", "/tmp/o",
			       "--push-protocol", "parca"),
			 -EINVAL);
	assert_int_equal(PARSE(&env, "-a", "--interval", "5", "--output-dir", "/tmp/o", "--push",
			       "http://h", "--push-protocol", "otlp-grpc"),
			 -EINVAL);
	assert_int_equal(PARSE(&env, "-a", "--interval", "5", "--output-dir", "/tmp/o", "--push",
			       "http://h", "--push-protocol", "otlp"),
			 CLI_RUN);
	assert_int_equal(env.push_protocol, PUSH_OTLP);
	assert_string_equal(env.push_url, "http://h");
	cli__free(&env);
	/* otlp without --push: the URL from OTEL_EXPORTER_OTLP_(PROFILES_)ENDPOINT, else refused.
	 */
	unsetenv("OTEL_EXPORTER_OTLP_PROFILES_ENDPOINT");
	unsetenv("OTEL_EXPORTER_OTLP_ENDPOINT");
	assert_int_equal(PARSE(&env, "-a", "--interval", "5", "--output-dir", "/tmp/o",
			       "--push-protocol", "otlp"),
			 -EINVAL);
	setenv("OTEL_EXPORTER_OTLP_ENDPOINT", "http://collector:4318", 1);
	assert_int_equal(PARSE(&env, "-a", "--interval", "5", "--output-dir", "/tmp/o",
			       "--push-protocol", "otlp"),
			 CLI_RUN);
	assert_string_equal(env.push_url, "http://collector:4318");
	cli__free(&env);
	unsetenv("OTEL_EXPORTER_OTLP_ENDPOINT");
	/* Back to a protocol that leaves the OTel variables to CMD. */
	assert_int_equal(PARSE(&env, "-a", "--interval", "5", "--output-dir", "/tmp/o", "--push",
			       "http://h", "--push-protocol", "parca"),
			 CLI_RUN);
	cli__free(&env);
}

static void test_cli__svg_format(void **state)
{
	struct env env;
	char path[64];

	(void)state;
	assert_int_equal(PARSE(&env, "--cpu", "-f", "svg", "-p", "1"), CLI_RUN);
	assert_int_equal(env.format, FMT_SVG);
	assert_string_equal(env.output, "bpftrace-prof.svg");
	assert_null(env.svg_type);
	assert_false(env.icicle);
	cli__free(&env);
	assert_int_equal(PARSE(&env, "--heap", "--cpu", "-f", "svg", "--svg-type", "alloc_space",
			       "--icicle", "-o", "g.svg", "-p", "1"),
			 CLI_RUN);
	assert_string_equal(env.svg_type, "alloc_space");
	assert_true(env.icicle);
	/* one SVG per mode */
	assert_string_equal(cli__output_path(&env, "heap", path, sizeof(path)), "g.heap.svg");
	assert_string_equal(cli__output_path(&env, "cpu", path, sizeof(path)), "g.cpu.svg");
	cli__free(&env);
	/* a type of no mode given, of another mode, options without -f svg */
	assert_int_equal(PARSE(&env, "--cpu", "-f", "svg", "--svg-type", "bogus", "-p", "1"),
			 -EINVAL);
	assert_int_equal(PARSE(&env, "--cpu", "-f", "svg", "--svg-type", "alloc_space", "-p", "1"),
			 -EINVAL);
	assert_int_equal(PARSE(&env, "--heap", "--svg-type", "alloc_space", "-p", "1"), -EINVAL);
	assert_int_equal(PARSE(&env, "--heap", "-f", "folded", "--icicle", "-p", "1"), -EINVAL);
	assert_int_equal(PARSE(&env, "--offcpu", "-f", "svg", "--svg-type", "offcpu", "-p", "1"),
			 CLI_RUN);
	cli__free(&env);
}

static void test_cli__memtrace_format(void **state)
{
	struct env env;

	(void)state;
	assert_int_equal(PARSE(&env, "-f", "memtrace", "-p", "1"), CLI_RUN);
	assert_int_equal(env.format, FMT_MEMTRACE);
	assert_int_equal(env.modes, MODE_HEAP);
	assert_true(env.sample_bytes == 524288); /* memtrace traces sampled allocations */
	assert_string_equal(env.output, "bpftrace-prof.memtrace");
	cli__free(&env);
	assert_int_equal(PARSE(&env, "--heap", "-f", "memtrace", "--sample-bytes", "0", "-p", "1"),
			 CLI_RUN);
	assert_true(env.sample_bytes == 0);
	cli__free(&env);
	assert_int_equal(PARSE(&env, "--calls", "-f", "memtrace", "-p", "1"), -EINVAL);
	assert_int_equal(PARSE(&env, "--heap", "--cpu", "-f", "memtrace", "-p", "1"), -EINVAL);
	assert_int_equal(
		PARSE(&env, "-f", "memtrace", "--interval", "5", "--output-dir", "d", "-p", "1"),
		-EINVAL);
}

static void test_cli__report_subcommand(void **state)
{
	struct report_env env;

	(void)state;
	assert_int_equal(cli__parse_report(&env, ARGC("t.memtrace"), ARGV("t.memtrace")), CLI_RUN);
	assert_string_equal(env.file, "t.memtrace");
	assert_int_equal(env.format, FMT_PPROF);
	assert_string_equal(env.output, "bpftrace-prof.pb.gz");
	assert_false(env.at);
	assert_int_equal(cli__parse_report(&env, ARGC("-f", "text", "--at", "2.5", "t"),
					   ARGV("-f", "text", "--at", "2.5", "t")),
			 CLI_RUN);
	assert_int_equal(env.format, FMT_TEXT);
	assert_string_equal(env.output, "-");
	assert_true(env.at && env.at_s == 2.5);
	assert_int_equal(
		cli__parse_report(&env, ARGC("-f", "memtrace", "t"), ARGV("-f", "memtrace", "t")),
		-EINVAL);
	assert_int_equal(cli__parse_report(&env, ARGC("--at", "-1", "t"), ARGV("--at", "-1", "t")),
			 -EINVAL);
	assert_int_equal(cli__parse_report(&env, ARGC("a", "b"), ARGV("a", "b")), -EINVAL);
	assert_int_equal(cli__parse_report(&env, ARGC("-o", "x"), ARGV("-o", "x")), -EINVAL);
}

static void test_cli__dump_subcommand(void **state)
{
	struct dump_env env;

	(void)state;
	assert_int_equal(cli__parse_dump(&env, ARGC("-p", "12,34"), ARGV("-p", "12,34")), CLI_RUN);
	assert_int_equal(env.npids, 2);
	assert_int_equal(env.pids[0], 12);
	assert_int_equal(env.pids[1], 34);
	assert_false(env.json);
	assert_string_equal(env.output, "-");
	assert_int_equal(cli__parse_dump(&env, ARGC("--pid", "5", "--json", "-o", "d.json", "-vv"),
					 ARGV("--pid", "5", "--json", "-o", "d.json", "-vv")),
			 CLI_RUN);
	assert_true(env.json);
	assert_string_equal(env.output, "d.json");
	assert_int_equal(env.verbosity, 2);
	/* -o's extension says JSON without --json; any other name stays text */
	assert_int_equal(cli__parse_dump(&env, ARGC("-p", "5", "-o", "d.json"),
					 ARGV("-p", "5", "-o", "d.json")),
			 CLI_RUN);
	assert_true(env.json);
	assert_int_equal(cli__parse_dump(&env, ARGC("-p", "5", "-o", "d.txt"),
					 ARGV("-p", "5", "-o", "d.txt")),
			 CLI_RUN);
	assert_false(env.json);
	assert_int_equal(cli__parse_dump(&env, ARGC("-p", "5", "-o", ".json"),
					 ARGV("-p", "5", "-o", ".json")),
			 CLI_RUN);
	assert_false(env.json);
	/* no pid, a bad one, a profiling option, a stray argument, an empty output */
	assert_int_equal(cli__parse_dump(&env, ARGC("--json"), ARGV("--json")), -EINVAL);
	assert_int_equal(cli__parse_dump(&env, ARGC("-p", "0"), ARGV("-p", "0")), -EINVAL);
	assert_int_equal(cli__parse_dump(&env, ARGC("-p", "1x"), ARGV("-p", "1x")), -EINVAL);
	assert_int_equal(
		cli__parse_dump(&env, ARGC("-p", "1", "--heap"), ARGV("-p", "1", "--heap")),
		-EINVAL);
	assert_int_equal(cli__parse_dump(&env, ARGC("-p", "1", "x"), ARGV("-p", "1", "x")),
			 -EINVAL);
	assert_int_equal(
		cli__parse_dump(&env, ARGC("-p", "1", "-o", ""), ARGV("-p", "1", "-o", "")),
		-EINVAL);
}

/* Without -f, -o's extension picks the format (a .svg holding gzip'd pprof opens nowhere). */
static void test_cli__format_from_extension(void **state)
{
	static const struct {
		char *out;
		char *mode;
		enum out_format want;
	} cases[] = {
		{"g.svg", "--cpu", FMT_SVG},
		{"G.SVG", "--cpu", FMT_SVG},
		{"s.folded", "--cpu", FMT_FOLDED},
		{"r.txt", "--heap", FMT_TEXT},
		{"t.json", "--calls", FMT_CHROME},
		{"t.json.gz", "--cpu", FMT_CHROME},
		{"f.profile.json.gz", "--cpu", FMT_FIREFOX},
		{"f.profile.json", "--cpu", FMT_FIREFOX},
		{"p.pftrace", "--heap", FMT_PERFETTO},
		{"p.perfetto-trace", "--heap", FMT_PERFETTO},
		{"h.memtrace", "--heap", FMT_MEMTRACE},
		{"h.ctf", "--heap", FMT_MEMTRACE},
		{"x.pb.gz", "--heap", FMT_PPROF},
		{"x.pb", "--heap", FMT_PPROF},
		{"noext", "--heap", FMT_PPROF},
		{"dir.svg/out", "--heap", FMT_PPROF}, /* a dot in the directory is no extension */
		{".svg", "--heap", FMT_PPROF},	      /* a hidden file, no extension */
		{"x.gz", "--heap", FMT_PPROF},
		{"-", "--heap", FMT_PPROF},
	};
	struct env env;

	(void)state;
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		assert_int_equal(PARSE(&env, cases[i].mode, "-o", cases[i].out, "-p", "1"),
				 CLI_RUN);
		if (env.format != cases[i].want)
			fail_msg("-o %s: format %d, expected %d", cases[i].out, env.format,
				 cases[i].want);
		cli__free(&env);
	}
	/* memtrace's sampling default comes with it. */
	assert_int_equal(PARSE(&env, "-o", "h.memtrace", "-p", "1"), CLI_RUN);
	assert_int_equal(env.sample_bytes, CLI_WIDE_SAMPLE_BYTES);
	cli__free(&env);
	/* several modes: one file per mode, the mode before the extension */
	assert_int_equal(PARSE(&env, "--heap", "--cpu", "-o", "g.svg", "-p", "1"), CLI_RUN);
	assert_int_equal(env.format, FMT_SVG);
	cli__free(&env);
	/* An extension's format still has to fit the modes, and says where it came from. */
	assert_int_equal(PARSE(&env, "--heap", "-o", "f.profile.json.gz", "-p", "1"), -EINVAL);
	assert_int_equal(PARSE(&env, "--cpu", "-o", "h.memtrace", "-p", "1"), -EINVAL);
}

/* -f given: a known extension of another format is refused; names that may hold it are not. */
static void test_cli__format_contradicting_extension(void **state)
{
	struct env env;

	(void)state;
	assert_int_equal(PARSE(&env, "-f", "pprof", "-o", "g.svg", "-p", "1"), -EINVAL);
	assert_int_equal(PARSE(&env, "-f", "text", "-o", "s.folded", "-p", "1"), -EINVAL);
	assert_int_equal(PARSE(&env, "-f", "svg", "-o", "x.pb.gz", "-p", "1"), -EINVAL);
	assert_int_equal(PARSE(&env, "--calls", "-f", "chrome", "-o", "x.pftrace", "-p", "1"),
			 -EINVAL);
	assert_int_equal(PARSE(&env, "--calls", "-f", "codetracer", "-o", "d.json", "-p", "1"),
			 -EINVAL);
	/* folded stacks are text; firefox and chrome both write JSON, gzip'd for a .gz name */
	assert_int_equal(PARSE(&env, "-f", "folded", "-o", "s.txt", "-p", "1"), CLI_RUN);
	assert_int_equal(env.format, FMT_FOLDED);
	cli__free(&env);
	assert_int_equal(PARSE(&env, "--calls", "-f", "firefox", "-o", "t.json", "-p", "1"),
			 CLI_RUN);
	assert_int_equal(env.format, FMT_FIREFOX);
	cli__free(&env);
	assert_int_equal(
		PARSE(&env, "--calls", "-f", "chrome", "-o", "t.profile.json.gz", "-p", "1"),
		CLI_RUN);
	assert_int_equal(env.format, FMT_CHROME);
	cli__free(&env);
	/* an unknown extension: -f decides */
	assert_int_equal(PARSE(&env, "-f", "text", "-o", "out.data", "-p", "1"), CLI_RUN);
	assert_int_equal(env.format, FMT_TEXT);
	cli__free(&env);
}

/* Every file the run will write, checked before it: the names with the mode inserted too. */
static void test_cli__check_outputs(void **state)
{
	char dir[] = "/tmp/test_cli.XXXXXX", out[64], sub[96], cmd[64];
	struct env env;

	(void)state;
	assert_non_null(mkdtemp(dir));
	snprintf(out, sizeof(out), "%s/p.pb.gz", dir);
	assert_int_equal(PARSE(&env, "--heap", "--cpu", "-o", out, "-p", "1"), CLI_RUN);
	assert_int_equal(cli__check_outputs(&env), 0);
	/* p.cpu.pb.gz is a directory: the run would lose that profile at its end. */
	snprintf(sub, sizeof(sub), "%s/p.cpu.pb.gz", dir);
	assert_int_equal(mkdir(sub, 0700), 0);
	assert_int_equal(cli__check_outputs(&env), -EISDIR);
	cli__free(&env);
	/* one mode: p.pb.gz itself is fine */
	assert_int_equal(PARSE(&env, "--cpu", "-o", out, "-p", "1"), CLI_RUN);
	assert_int_equal(cli__check_outputs(&env), 0);
	cli__free(&env);
	snprintf(sub, sizeof(sub), "%s/none/x.svg", dir);
	assert_int_equal(PARSE(&env, "--cpu", "-o", sub, "-p", "1"), CLI_RUN);
	assert_int_equal(cli__check_outputs(&env), -ENOENT);
	cli__free(&env);
	assert_int_equal(PARSE(&env, "--cpu", "-o", dir, "-p", "1"), CLI_RUN);
	assert_int_equal(cli__check_outputs(&env), -EISDIR);
	cli__free(&env);
	/* an event trace: one file, whatever the modes */
	snprintf(sub, sizeof(sub), "%s/none/t.json", dir);
	assert_int_equal(PARSE(&env, "--heap", "--cpu", "-o", sub, "-p", "1"), CLI_RUN);
	assert_int_equal(cli__check_outputs(&env), -ENOENT);
	cli__free(&env);
	assert_int_equal(PARSE(&env, "--cpu", "-o", "-", "-p", "1"), CLI_RUN);
	assert_int_equal(cli__check_outputs(&env), 0);
	cli__free(&env);
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", dir);
	assert_int_equal(system(cmd), 0);
}

/* `dump --help` and `report --help`: their own text, not the profiler's. */
static void test_cli__subcommand_help(void **state)
{
	struct report_env renv;
	struct dump_env denv;
	char buf[256] = "";
	FILE *f = tmpfile();
	int saved = dup(STDOUT_FILENO);

	(void)state;
	assert_non_null(f);
	assert_true(saved >= 0);
	fflush(stdout);
	assert_int_equal(dup2(fileno(f), STDOUT_FILENO), STDOUT_FILENO);
	assert_int_equal(cli__parse_dump(&denv, ARGC("--help"), ARGV("--help")), CLI_EXIT);
	fflush(stdout);
	assert_int_equal(cli__parse_report(&renv, ARGC("-h"), ARGV("-h")), CLI_EXIT);
	fflush(stdout);
	assert_int_equal(dup2(saved, STDOUT_FILENO), STDOUT_FILENO);
	close(saved);
	rewind(f);
	assert_non_null(fgets(buf, sizeof(buf), f));
	assert_int_equal(strncmp(buf, "Usage: bpftrace-prof dump -p PID", 32), 0);
	while (fgets(buf, sizeof(buf), f) && strncmp(buf, "Usage:", 6))
		assert_null(strstr(buf, "--heap")); /* none of the profiler's options */
	assert_int_equal(strncmp(buf, "Usage: bpftrace-prof report FILE", 32), 0);
	fclose(f);
}

/* report: -o's extension picks pprof, folded or text; other formats are not report's. */
static void test_cli__report_format_from_extension(void **state)
{
	struct report_env env;

	(void)state;
	assert_int_equal(
		cli__parse_report(&env, ARGC("t", "-o", "r.txt"), ARGV("t", "-o", "r.txt")),
		CLI_RUN);
	assert_int_equal(env.format, FMT_TEXT);
	assert_int_equal(
		cli__parse_report(&env, ARGC("t", "-o", "r.folded"), ARGV("t", "-o", "r.folded")),
		CLI_RUN);
	assert_int_equal(env.format, FMT_FOLDED);
	assert_int_equal(
		cli__parse_report(&env, ARGC("t", "-o", "r.svg"), ARGV("t", "-o", "r.svg")),
		-EINVAL);
	assert_int_equal(cli__parse_report(&env, ARGC("-f", "pprof", "t", "-o", "r.txt"),
					   ARGV("-f", "pprof", "t", "-o", "r.txt")),
			 -EINVAL);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_cli__firefox_codetracer_formats),
		cmocka_unit_test(test_cli__push_options),
		cmocka_unit_test(test_cli__wide_target_defaults),
		cmocka_unit_test(test_cli__push_needs_interval_and_a_url),
		cmocka_unit_test(test_cli__pid_list_and_defaults),
		cmocka_unit_test(test_cli__command_keeps_its_options),
		cmocka_unit_test(test_cli__modes_and_options),
		cmocka_unit_test(test_cli__offcpu_mode),
		cmocka_unit_test(test_cli__errors),
		cmocka_unit_test(test_cli__duration_bounds),
		cmocka_unit_test(test_cli__ring_buffer),
		cmocka_unit_test(test_cli__backlog),
		cmocka_unit_test(test_cli__unwind_memory),
		cmocka_unit_test(test_cli__debuginfod),
		cmocka_unit_test(test_cli__heap_filters),
		cmocka_unit_test(test_cli__help_and_version_exit),
		cmocka_unit_test(test_cli__output_path_per_mode),
		cmocka_unit_test(test_cli__event_trace_formats),
		cmocka_unit_test(test_cli__live),
		cmocka_unit_test(test_cli__memtrace_format),
		cmocka_unit_test(test_cli__svg_format),
		cmocka_unit_test(test_cli__report_subcommand),
		cmocka_unit_test(test_cli__dump_subcommand),
		cmocka_unit_test(test_cli__format_from_extension),
		cmocka_unit_test(test_cli__format_contradicting_extension),
		cmocka_unit_test(test_cli__check_outputs),
		cmocka_unit_test(test_cli__python_frames),
		cmocka_unit_test(test_cli__subcommand_help),
		cmocka_unit_test(test_cli__report_format_from_extension),
	};

	return cmocka_run_group_tests_name("cli", tests, NULL, NULL);
}
