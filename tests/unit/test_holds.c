// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/* Holds without BPF: a real child stopped as BPF would stop it, and no prof_held map (-1). */
#include <errno.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>

#include "agg/collect.h"
#include "agg/parts.h"
#include "track/holds.h"
#include "prof_heap.h"

/* A child that stops itself at once, as stop_self makes a held process do; waited until
 * stopped. */
static pid_t stopped_child(void)
{
	pid_t pid = fork();
	int st;

	assert_true(pid >= 0);
	if (pid == 0) {
		/* Gone with the test, even one that crashed: a stopped orphan would keep the
		 * runner's pipe open forever. */
		prctl(PR_SET_PDEATHSIG, SIGKILL);
		raise(SIGSTOP);
		_exit(7);
	}
	assert_int_equal(waitpid(pid, &st, WUNTRACED), pid);
	assert_true(WIFSTOPPED(st));
	return pid;
}

/* Its start as BPF reads it (start_boottime, ns): /proc's ticks, plus less than a tick. */
static uint64_t start_ns_of(pid_t pid)
{
	char path[64], buf[1024], *p;
	uint64_t tick_ns = 1000000000ULL / (uint64_t)sysconf(_SC_CLK_TCK);
	FILE *f;
	size_t n;

	snprintf(path, sizeof(path), "/proc/%d/stat", (int)pid);
	f = fopen(path, "r");
	assert_non_null(f);
	n = fread(buf, 1, sizeof(buf) - 1, f);
	fclose(f);
	buf[n] = 0;
	p = strrchr(buf, ')');
	assert_non_null(p);
	for (int field = 2; field < 22; field++)
		assert_non_null(p = strchr(p + 1, ' '));
	return strtoull(p + 1, NULL, 10) * tick_ns + tick_ns / 2;
}

/* Did the child go on (exited 7) within a second? */
static bool resumed(pid_t pid)
{
	for (int i = 0; i < 100; i++) {
		int st;
		pid_t w = waitpid(pid, &st, WNOHANG | WCONTINUED);

		if (w == pid && WIFEXITED(st))
			return WEXITSTATUS(st) == 7;
		usleep(10000);
	}
	return false;
}

static void reap(pid_t pid)
{
	kill(pid, SIGKILL);
	waitpid(pid, NULL, 0);
}

static struct prof_proc_event hold_record(uint32_t type, pid_t pid, uint64_t start_ns)
{
	return (struct prof_proc_event){.type = type,
					.pid = (uint32_t)pid,
					.tid = (uint32_t)pid,
					.hold_seq = 1,
					.start_ns = start_ns};
}

/* Another process with the held one's pid (it was killed, the pid reused) has another start
 * time: never signalled, counted. */
static void test_holds__other_start_time_is_not_resumed(void **state)
{
	pid_t pid = stopped_child();
	struct prof_proc_event e =
		hold_record(PROF_REC_PROC_EXIT_HOLD, pid, start_ns_of(pid) + 1000000000ULL);
	struct holds *h;
	uint64_t id = 0;

	assert_int_equal(holds__new(&h, -1), 0);
	assert_int_equal(holds__take(h, &id, &e), -ESRCH);
	assert_int_equal(holds__stats(h, false).gone, 1);
	holds__free(h); /* resumes what it holds: nothing */
	assert_false(resumed(pid));
	reap(pid);
}

static void test_holds__taken_then_resumed_once(void **state)
{
	pid_t pid = stopped_child();
	struct prof_proc_event e = hold_record(PROF_REC_PROC_EXIT_HOLD, pid, start_ns_of(pid));
	struct holds *h;
	uint64_t id = 0;

	assert_int_equal(holds__new(&h, -1), 0);
	assert_int_equal(holds__take(h, &id, &e), 0);
	assert_true(id != 0);
	holds__resume(h, id);
	holds__resume(h, id); /* the time limit and the work may both come: one SIGCONT */
	assert_true(resumed(pid));
	assert_int_equal(holds__stats(h, false).gone, 0);
	holds__free(h);
}

/* However long its work takes, no process stays held past HOLDS_MAX_MS. */
static void test_holds__time_limit(void **state)
{
	pid_t pid = stopped_child();
	struct prof_proc_event e = hold_record(PROF_REC_PROC_EXIT_HOLD, pid, start_ns_of(pid));
	struct timespec ts;
	int64_t now_ms;
	struct holds *h;
	uint64_t id;

	assert_int_equal(holds__new(&h, -1), 0);
	assert_int_equal(holds__take(h, &id, &e), 0);
	clock_gettime(CLOCK_MONOTONIC, &ts);
	now_ms = (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
	holds__expire(h, now_ms); /* just taken: kept */
	assert_false(resumed(pid));
	holds__expire(h, now_ms + HOLDS_MAX_MS + 1);
	assert_true(resumed(pid));
	assert_int_equal(holds__stats(h, true).timeouts, 1);
	assert_int_equal(holds__stats(h, false).timeouts, 0);
	holds__free(h);
}

static int failing_tap(void *ctx, const struct collect_heap_event *e)
{
	return -ENOSPC; /* a trace writer on a full disk */
}

/*
 * After a fatal error every record is still consumed (0: libbpf stops a poll at the first
 * negative return, and the drains at the end would take one record a poll), and a held
 * process behind the error is resumed.
 */
static void test_holds__consumed_after_a_fatal_error(void **state)
{
	struct collect_opts opts = {.modes = MODE_HEAP};
	struct prof_heap_event a = {.type = PROF_REC_HEAP_ALLOC,
				    .pid = 999999,
				    .tid = 999999,
				    .addr = 0x1000,
				    .size = 8};
	pid_t pid = stopped_child();
	struct prof_proc_event e = hold_record(PROF_REC_PROC_EXIT_HOLD, pid, start_ns_of(pid));
	struct run_parts parts;
	struct collect *c;

	assert_int_equal(
		run_parts__open(&parts, NULL, &(struct run_parts_opts){.modes = MODE_HEAP}), 0);
	assert_int_equal(collect__new(&c, &opts, &parts), 0);
	collect__set_heap_tap(c, failing_tap, NULL);
	assert_int_equal(collect__on_event(c, &a, sizeof(a)), -ENOSPC);
	assert_int_equal(collect__error(c), -ENOSPC);
	assert_int_equal(collect__on_event(c, &a, sizeof(a)), 0);
	assert_int_equal(collect__on_event(c, &e, sizeof(e)), 0);
	assert_true(resumed(pid));
	collect__free(c);
	run_parts__close(&parts);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_holds__other_start_time_is_not_resumed),
		cmocka_unit_test(test_holds__taken_then_resumed_once),
		cmocka_unit_test(test_holds__time_limit),
		cmocka_unit_test(test_holds__consumed_after_a_fatal_error),
	};

	return cmocka_run_group_tests_name("holds", tests, NULL, NULL);
}
