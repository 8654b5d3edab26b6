// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/* The consumer without BPF: a NULL loader stands for one whose ring buffer never opened. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
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

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_collect__exiting_before_events_started),
		cmocka_unit_test(test_collect__exec_ends_live_blocks),
	};

	return cmocka_run_group_tests_name("collect", tests, NULL, NULL);
}
