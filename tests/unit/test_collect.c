// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/* The consumer without BPF: a NULL loader stands for one whose ring buffer never opened. */
#include <errno.h>
#include <fcntl.h>
#include <sched.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmocka.h>

#include "cli.h"
#include "collect.h"
#include "heap_agg.h"
#include "prof_heap.h"

static struct env heap_env = {.modes = MODE_HEAP};

static void test_collect__exiting_before_events_started(void **state)
{
	struct collect *c;

	/*
	 * loader__start_events failed: the session cleans up, and a traced CMD's exit stop
	 * lands here.  Nothing may poll the ring buffer that does not exist.
	 */
	assert_int_equal(collect__new(&c, &heap_env, NULL), 0);
	collect__process_exiting(c, (uint32_t)getpid());
	assert_int_equal(collect__error(c), 0);
	collect__free(c);
}

static void send_alloc(struct collect *c, uint32_t pid, uint64_t addr, uint64_t size)
{
	struct prof_heap_event e = {
		.type = PROF_REC_HEAP_ALLOC,
		.pid = pid,
		.tid = pid,
		.stack_id = -1,
		.addr = addr,
		.size = size,
	};

	assert_int_equal(collect__on_event(c, &e, sizeof(e)), 0);
}

static void test_collect__exec_ends_live_blocks(void **state)
{
	const uint32_t pid = 999999; /* no such process: nothing to read or attach */
	struct prof_proc_event ex = {.type = PROF_REC_PROC_EXEC, .pid = pid, .tid = pid};
	const struct heap_site_values *v;
	struct collect *c;

	assert_int_equal(collect__new(&c, &heap_env, NULL), 0);
	for (uint64_t i = 0; i < 10; i++)
		send_alloc(c, pid, 0x1000 + i * 32, 32);
	memcpy(ex.comm, "newimage", 9);
	assert_int_equal(collect__on_event(c, &ex, sizeof(ex)), 0);
	v = heap_agg__site(collect__heap(c), pid, pid, -1);
	assert_non_null(v);
	assert_int_equal((int64_t)v->alloc_objects, 10);
	assert_int_equal((int64_t)v->inuse_objects, 0);
	assert_int_equal((int64_t)v->inuse_bytes, 0);
	assert_int_equal(heap_agg__stats(collect__heap(c))->exec_released, 10);
	collect__free(c);
}

/* Exit status of the reuse scenario, run as init of a fresh pid namespace. */
enum { REUSE_OK, REUSE_SIGNALLED, REUSE_SETUP };

static int reuse_scenario(void)
{
	static struct env cmd_env = {.modes = MODE_HEAP};
	struct prof_proc_event fork_ev = {.type = PROF_REC_PROC_FORK, .ppid = 1};
	struct collect *c;
	pid_t x, r, w;
	int fd, st;

	if (collect__new(&c, &cmd_env, NULL))
		return REUSE_SETUP;
	x = fork();
	if (x == 0) {
		pause();
		_exit(0);
	}
	/* A followed child... */
	fork_ev.pid = fork_ev.tid = (uint32_t)x;
	if (x < 0 || collect__on_event(c, &fork_ev, sizeof(fork_ev)))
		return REUSE_SETUP;
	/* ...dies, and its exit event is not consumed yet (or was lost)... */
	kill(x, SIGKILL);
	if (waitpid(x, NULL, 0) != x)
		return REUSE_SETUP;
	/* ...and a stranger takes its pid. */
	fd = open("/proc/sys/kernel/ns_last_pid", O_WRONLY);
	if (fd < 0 || dprintf(fd, "%d", (int)x - 1) < 0)
		return REUSE_SETUP;
	close(fd);
	r = fork();
	if (r == 0) {
		pause();
		_exit(0);
	}
	if (r != x)
		return REUSE_SETUP;
	collect__signal_all(c, SIGTERM);
	usleep(100000); /* a signal sent would have landed by now */
	w = waitpid(r, &st, WNOHANG);
	kill(r, SIGKILL);
	waitpid(r, NULL, 0);
	collect__free(c);
	return w == 0 ? REUSE_OK : REUSE_SIGNALLED;
}

static void test_collect__signal_never_reaches_a_reused_pid(void **state)
{
	pid_t outer = fork(), init;
	int st;

	assert_true(outer >= 0);
	if (outer == 0) {
		/* Own pid namespace (and user namespace, so no privilege is needed): its pids
		 * are ours to reuse through ns_last_pid. */
		if (unshare(CLONE_NEWUSER | CLONE_NEWPID))
			_exit(10 + REUSE_SETUP);
		init = fork();
		if (init == 0)
			_exit(10 + reuse_scenario());
		if (init < 0 || waitpid(init, &st, 0) != init || !WIFEXITED(st))
			_exit(10 + REUSE_SETUP);
		_exit(WEXITSTATUS(st));
	}
	assert_int_equal(waitpid(outer, &st, 0), outer);
	assert_true(WIFEXITED(st));
	assert_int_not_equal(WEXITSTATUS(st), 10 + REUSE_SETUP);
	assert_int_equal(WEXITSTATUS(st), 10 + REUSE_OK);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_collect__exiting_before_events_started),
		cmocka_unit_test(test_collect__exec_ends_live_blocks),
		cmocka_unit_test(test_collect__signal_never_reaches_a_reused_pid),
	};

	return cmocka_run_group_tests_name("collect", tests, NULL, NULL);
}
