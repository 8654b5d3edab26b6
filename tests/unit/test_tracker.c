// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * The process tracker without BPF: real processes, the real symbolizer (with and without its
 * worker thread) and the real maps reader.  What is checked is the contract of one read of
 * /proc/PID/maps per process event, shared by every user of that event.
 */
#include <errno.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmocka.h>

#include "proc/maps.h"
#include "proc/procinfo.h"
#include "sym/stackres.h"
#include "sym/symbolizer.h"
#include "track/tracker.h"

struct fixture {
	struct symbolizer *sym;
	struct stackres *stacks;
	struct procinfo *procs;
	struct tracker *tr;
	pid_t child;
};

static uint64_t maps_reads(void)
{
	struct maps_stats st;

	maps__stats(&st);
	return st.reads;
}

static void start(struct fixture *fx, bool worker)
{
	fx->child = fork();
	assert_true(fx->child >= 0);
	if (!fx->child) {
		/* Gone with the test, even one that failed before stop(). */
		prctl(PR_SET_PDEATHSIG, SIGKILL);
		pause();
		_exit(0);
	}
	assert_int_equal(symbolizer__new(&fx->sym, NULL), 0);
	assert_int_equal(stackres__new(&fx->stacks, fx->sym), 0);
	if (worker)
		assert_int_equal(stackres__start_worker(fx->stacks), 0);
	assert_int_equal(procinfo__new(&fx->procs, NULL), 0);
	assert_int_equal(tracker__new(&fx->tr, &(struct tracker_opts){.stacks = fx->stacks,
								      .procs = fx->procs}),
			 0);
}

static void stop(struct fixture *fx)
{
	tracker__free(fx->tr);
	stackres__free(fx->stacks);
	procinfo__free(fx->procs);
	symbolizer__free(fx->sym);
	kill(fx->child, SIGKILL);
	waitpid(fx->child, NULL, 0);
}

/* An exec: the symbolizer, and then every caller of tracker__maps, see one read. */
static void one_read_per_event(bool worker)
{
	struct fixture fx = {0};
	const struct maps *m, *again;
	uint64_t before;

	start(&fx, worker);
	before = maps_reads();
	assert_int_equal(tracker__exec(fx.tr, (uint32_t)fx.child, "child"), 0);
	assert_int_equal(tracker__maps(fx.tr, (uint32_t)fx.child, &m), 0);
	assert_non_null(m);
	assert_true(m->count > 0);
	assert_int_equal(tracker__maps(fx.tr, (uint32_t)fx.child, &again), 0);
	assert_ptr_equal(m, again);
	/* The symbolizer's reload is queued as the event ends, with the event's read. */
	tracker__event_end(fx.tr);
	assert_int_equal(stackres__sync(fx.stacks), 0);
	assert_int_equal(maps_reads() - before, 1);
	/* The next event reads afresh: a snapshot never outlives its event. */
	assert_int_equal(tracker__dlopen(fx.tr, (uint32_t)fx.child, true), 0);
	assert_int_equal(tracker__maps(fx.tr, (uint32_t)fx.child, &m), 0);
	assert_int_equal(maps_reads() - before, 2);
	tracker__event_end(fx.tr);
	stop(&fx);
}

static void test_tracker__exec_reads_maps_once(void **state)
{
	(void)state;
	one_read_per_event(false);
}

/* The worker symbolizes later, on its own thread, from the event's snapshot (a reference). */
static void test_tracker__exec_reads_maps_once_with_worker(void **state)
{
	(void)state;
	one_read_per_event(true);
}

/* A fork needs the maps on this thread for nothing (no unwinder here): the symbolizer's worker
 * reads them, once. */
static void test_tracker__fork_reads_maps_once(void **state)
{
	struct fixture fx = {0};
	uint64_t before;

	(void)state;
	start(&fx, true);
	before = maps_reads();
	assert_int_equal(tracker__fork(fx.tr, (uint32_t)fx.child, (uint32_t)getpid()), 0);
	assert_int_equal(maps_reads() - before, 0); /* nothing read on this thread */
	tracker__event_end(fx.tr);
	assert_int_equal(stackres__sync(fx.stacks), 0);
	assert_int_equal(maps_reads() - before, 1);
	assert_true(tracker__any_alive(fx.tr));
	stop(&fx);
}

/* A process gone: the read fails once, quietly, and every user hears -ESRCH/-ENOENT. */
static void test_tracker__gone_process(void **state)
{
	struct fixture fx = {0};
	const struct maps *m = (const void *)1;
	int err;

	(void)state;
	start(&fx, false);
	kill(fx.child, SIGKILL);
	waitpid(fx.child, NULL, 0);
	err = tracker__maps(fx.tr, (uint32_t)fx.child, &m);
	assert_true(err == -ESRCH || err == -ENOENT);
	assert_null(m);
	tracker__event_end(fx.tr);
	assert_false(tracker__any_alive(fx.tr));
	stop(&fx);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_tracker__exec_reads_maps_once),
		cmocka_unit_test(test_tracker__exec_reads_maps_once_with_worker),
		cmocka_unit_test(test_tracker__fork_reads_maps_once),
		cmocka_unit_test(test_tracker__gone_process),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
