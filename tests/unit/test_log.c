// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include <cmocka.h>

#include <bpf/libbpf.h>

#include "util/log.h"

/* What the messages logged by fn wrote to stderr (fd 2 pointed at a memory file meanwhile). */
static char *captured(void (*fn)(void))
{
	int fd = memfd_create("stderr", MFD_CLOEXEC), saved = dup(STDERR_FILENO);
	char *out;
	off_t len;

	assert_true(fd >= 0 && saved >= 0);
	fflush(stderr);
	assert_int_equal(dup2(fd, STDERR_FILENO), STDERR_FILENO);
	fn();
	fflush(stderr);
	assert_int_equal(dup2(saved, STDERR_FILENO), STDERR_FILENO);
	close(saved);
	len = lseek(fd, 0, SEEK_END);
	assert_true(len >= 0);
	out = calloc(1, (size_t)len + 1);
	assert_non_null(out);
	assert_int_equal(pread(fd, out, (size_t)len, 0), len);
	close(fd);
	return out;
}

static void hostile_warning(void)
{
	log__set_verbosity(LOG_WARN);
	pr_warn("not probing %s of %u: %s\n", "/tmp/\x1b]0;pwn\x07/lib\xc3\xa9.so\n", 42u,
		"refused");
	pr_info("not shown at this verbosity %s\n", "\x1b[2J");
}

/* Paths and names in messages come from targets: escaped, the message's own newline kept. */
static void test_log__arguments_escaped(void **state)
{
	char *out = captured(hostile_warning);

	assert_string_equal(out, "bpftrace-prof: warning: not probing "
				 "/tmp/\\x1b]0;pwn\\x07/lib\xc3\xa9.so\\x0a of 42: refused\n");
	free(out);
}

static void long_message(void)
{
	char name[3000];

	memset(name, 'a', sizeof(name) - 2);
	name[sizeof(name) - 2] = '\x1b';
	name[sizeof(name) - 1] = 0;
	log__set_verbosity(LOG_INFO);
	pr_info("%s\n", name);
}

/* Longer than the printer's stack buffer: whole, escaped to its end. */
static void test_log__long_message_whole(void **state)
{
	char *out = captured(long_message);
	size_t len = strlen(out);

	assert_int_equal(len, strlen("bpftrace-prof: ") + 2998 + 4 + 1);
	assert_string_equal(out + len - 6, "a\\x1b\n");
	free(out);
}

static libbpf_print_fn_t libbpf_printer;

static int libbpf_says(enum libbpf_print_level level, const char *fmt, ...)
{
	va_list ap;
	int ret;

	va_start(ap, fmt);
	ret = libbpf_printer(level, fmt, ap);
	va_end(ap);
	return ret;
}

static void verifier_log(void)
{
	log__set_verbosity(LOG_LIBBPF);
	log__hook_libbpf();
	libbpf_printer = libbpf_set_print(NULL); /* gives back the printer just hooked */
	libbpf_says(LIBBPF_WARN, "libbpf: load log:\n%s-- END --\n", "0: r1 = 0\n\x1b[2J1: exit\n");
	libbpf_set_print(libbpf_printer);
}

/* libbpf's messages span lines (the verifier's log): their newlines kept, the rest escaped. */
static void test_log__libbpf_lines_kept_rest_escaped(void **state)
{
	char *out = captured(verifier_log);

	assert_string_equal(out, "libbpf: load log:\n0: r1 = 0\n\\x1b[2J1: exit\n-- END --\n");
	free(out);
}

static int hook_calls;

static void count_hook(void *ctx)
{
	hook_calls++;
	fputs((const char *)ctx, stderr);
}

static void notes(void)
{
	hook_calls = 0;
	log__set_line_hook(count_hook, "[cleared]");
	log__set_verbosity(LOG_WARN);
	pr_note("profiling %s\n", "\x1b[2Jcmd");
	log__set_verbosity(LOG_ERROR); /* -q */
	pr_note("not shown with -q\n");
	pr_err("shown with -q\n");
	log__set_line_hook(NULL, NULL);
	pr_err("no hook\n");
}

/* A note is a plain line (no "warning:"), escaped, hidden by -q; the hook runs before every line
 * printed (the status line clears itself there) and only then. */
static void test_log__note_and_line_hook(void **state)
{
	char *out = captured(notes);

	assert_string_equal(out, "[cleared]bpftrace-prof: profiling \\x1b[2Jcmd\n"
				 "[cleared]bpftrace-prof: shown with -q\n"
				 "bpftrace-prof: no hook\n");
	assert_int_equal(hook_calls, 2);
	free(out);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_log__arguments_escaped),
		cmocka_unit_test(test_log__long_message_whole),
		cmocka_unit_test(test_log__libbpf_lines_kept_rest_escaped),
		cmocka_unit_test(test_log__note_and_line_hook),
	};

	return cmocka_run_group_tests_name("log", tests, NULL, NULL);
}
