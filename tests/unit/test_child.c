// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/* `-- CMD` as proc/child.c runs it: real children (sh, true), real ptrace, real wait statuses. */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ptrace.h>

#include <cmocka.h>

#include "proc/child.h"

/* CMD spawned, released and waited for: its shell-style exit status. */
static int run_cmd(char *const *cmd, bool (*hide_env)(const char *), long trace_opts,
		   const struct child_hooks *hooks)
{
	struct child c = CHILD_INIT;

	assert_int_equal(child__spawn(&c, cmd, hide_env, NULL), 0);
	assert_true(c.pid > 0);
	assert_true(c.pidfd >= 0);
	if (trace_opts)
		assert_int_equal(child__seize(&c, trace_opts), 0);
	assert_int_equal(child__release(&c), 0);
	child__wait(&c, hooks, 0);
	assert_true(c.exited);
	child__close(&c);
	return child__exit_status(c.status);
}

static void test_child__exit_status_as_a_shell_reports_it(void **state)
{
	char *yes[] = {"true", NULL};
	char *three[] = {"sh", "-c", "exit 3", NULL};
	char *killed[] = {"sh", "-c", "kill -9 $$", NULL};
	char *term[] = {"sh", "-c", "kill -TERM $$", NULL};

	assert_int_equal(run_cmd(yes, NULL, 0, NULL), 0);
	assert_int_equal(run_cmd(three, NULL, 0, NULL), 3);
	assert_int_equal(run_cmd(killed, NULL, 0, NULL), 128 + 9);
	assert_int_equal(run_cmd(term, NULL, 0, NULL), 128 + 15);
}

static void test_child__release_reports_a_missing_command(void **state)
{
	char *cmd[] = {"bpftrace-prof-no-such-command", NULL};
	struct child c = CHILD_INIT;

	assert_int_equal(child__spawn(&c, cmd, NULL, NULL), 0);
	assert_int_equal(child__release(&c), -ENOENT);
	/* reaped already: the child's own 127 */
	assert_true(c.exited);
	assert_int_equal(child__exit_status(c.status), 127);
	child__close(&c);
}

static void test_child__abandoned_never_runs_cmd(void **state)
{
	char *cmd[] = {"sh", "-c", "exit 3", NULL};
	struct child c = CHILD_INIT;

	assert_int_equal(child__spawn(&c, cmd, NULL, NULL), 0);
	child__abandon(&c, NULL);
	assert_true(c.exited);
	assert_int_equal(c.go_fd, -1);
	assert_int_equal(child__exit_status(c.status), 127); /* not CMD's 3 */
	child__close(&c);
}

static bool hide_secret(const char *entry)
{
	return !strncmp(entry, "PROF_TEST_SECRET=", 17);
}

static void test_child__environment_without_hidden_entries(void **state)
{
	char *cmd[] = {"sh", "-c", "test -z \"$PROF_TEST_SECRET\" && test \"$PROF_TEST_PLAIN\" = 2",
		       NULL};

	setenv("PROF_TEST_SECRET", "1", 1);
	setenv("PROF_TEST_PLAIN", "2", 1);
	assert_int_equal(run_cmd(cmd, hide_secret, 0, NULL), 0);
	assert_int_equal(run_cmd(cmd, NULL, 0, NULL), 1); /* the check itself can fail */
	unsetenv("PROF_TEST_SECRET");
	unsetenv("PROF_TEST_PLAIN");
}

/* set_env's entries replace ours of the same name (once, not twice) and add the others. */
static void test_child__environment_with_set_entries(void **state)
{
	char *cmd[] = {"sh", "-c",
		       "test \"$PROF_TEST_PRELOAD\" = new && test \"$PROF_TEST_ADDED\" = 3 && "
		       "test \"$PROF_TEST_PLAIN\" = 2 && "
		       "test \"$(env | grep -c '^PROF_TEST_PRELOAD=')\" = 1",
		       NULL};
	const char *set[] = {"PROF_TEST_PRELOAD=new", "PROF_TEST_ADDED=3", NULL};
	struct child c = CHILD_INIT;

	setenv("PROF_TEST_PRELOAD", "old", 1);
	setenv("PROF_TEST_PLAIN", "2", 1);
	assert_int_equal(child__spawn(&c, cmd, NULL, set), 0);
	assert_int_equal(child__release(&c), 0);
	child__wait(&c, NULL, 0);
	child__close(&c);
	assert_int_equal(child__exit_status(c.status), 0);
	assert_int_equal(run_cmd(cmd, NULL, 0, NULL), 1); /* the check itself can fail */
	unsetenv("PROF_TEST_PRELOAD");
	unsetenv("PROF_TEST_PLAIN");
}

struct seen {
	uint32_t exiting[8];
	int nexiting, nexec;
	uint32_t exec_pid;
};

static void on_exiting(void *ctx, uint32_t pid)
{
	struct seen *s = ctx;

	if (s->nexiting < 8)
		s->exiting[s->nexiting] = pid;
	s->nexiting++;
}

static bool on_exec_stop(void *ctx, uint32_t pid)
{
	struct seen *s = ctx;

	s->nexec++;
	s->exec_pid = pid;
	return false; /* not held: continued */
}

static bool on_kernel_sigstop(void *ctx, uint32_t tgid, uint32_t tid)
{
	return false;
}

/* Seized with the tree's options: the exit stop of CMD and of the process it forks, and CMD's
 * exec stop, reach the hooks; the statuses are still the processes' own. */
static void test_child__ptrace_stops_reach_the_hooks(void **state)
{
	char *cmd[] = {"sh", "-c", "/bin/true; exit 3", NULL};
	struct seen s = {0};
	struct child_hooks hooks = {.ctx = &s,
				    .exiting = on_exiting,
				    .exec_stop = on_exec_stop,
				    .kernel_sigstop = on_kernel_sigstop};
	long opts = PTRACE_O_TRACEEXIT | PTRACE_O_TRACEEXEC | PTRACE_O_TRACEFORK |
		    PTRACE_O_TRACEVFORK | PTRACE_O_TRACECLONE;
	struct child c = CHILD_INIT;

	assert_int_equal(child__spawn(&c, cmd, NULL, NULL), 0);
	assert_int_equal(child__seize(&c, opts), 0);
	assert_true(c.traced);
	assert_int_equal(child__release(&c), 0);
	child__wait(&c, &hooks, 0);
	assert_true(c.exited);
	assert_int_equal(child__exit_status(c.status), 3);
	/* sh's exec, and /bin/true's in the forked child */
	assert_int_equal(s.nexec, 2);
	/* the forked child's exit, then sh's own */
	assert_int_equal(s.nexiting, 2);
	assert_int_not_equal(s.exiting[0], (uint32_t)c.pid);
	assert_int_equal(s.exiting[1], (uint32_t)c.pid);
	child__close(&c);

	/* without hooks every stop is only continued */
	assert_int_equal(run_cmd(cmd, NULL, opts, NULL), 3);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_child__exit_status_as_a_shell_reports_it),
		cmocka_unit_test(test_child__release_reports_a_missing_command),
		cmocka_unit_test(test_child__abandoned_never_runs_cmd),
		cmocka_unit_test(test_child__environment_without_hidden_entries),
		cmocka_unit_test(test_child__environment_with_set_entries),
		cmocka_unit_test(test_child__ptrace_stops_reach_the_hooks),
	};

	return cmocka_run_group_tests_name("child", tests, NULL, NULL);
}
