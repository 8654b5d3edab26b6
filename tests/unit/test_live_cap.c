// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/* The caps of the tables of live heap blocks (agg/live_cap.c), shared by heap_agg and the trace
 * writers. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>

#include <cmocka.h>

#include "agg/live_cap.h"

/* Per process and in all; counts down one by one and to zero at once; the others keep room. */
static void test_live_cap__per_process_and_total(void **state)
{
	struct live_cap *lc;

	(void)state;
	assert_int_equal(live_cap__new(&lc), 0);
	live_cap__set(lc, 2, 3);
	assert_int_equal(live_cap__add(lc, 1), 0);
	assert_int_equal(live_cap__add(lc, 1), 0);
	assert_false(live_cap__room(lc, 1));
	assert_true(live_cap__room(lc, 2));
	assert_int_equal(live_cap__add(lc, 2), 0);
	assert_false(live_cap__room(lc, 3)); /* 3 in all */
	live_cap__sub(lc, 1);
	assert_true(live_cap__room(lc, 1));
	assert_int_equal(live_cap__count(lc, 1), 1);
	live_cap__drop(lc, 1);
	assert_int_equal(live_cap__count(lc, 1), 0);
	assert_int_equal(live_cap__total(lc), 1);
	live_cap__sub(lc, 1); /* none counted: nothing */
	assert_int_equal(live_cap__total(lc), 1);
	live_cap__free(lc);
}

/* The defaults: the environment lowers the per-process cap (tests), read once for every table;
 * the total stays LIVE_CAP_TOTAL. */
static void test_live_cap__default_from_environment(void **state)
{
	struct live_cap *a, *b;

	(void)state;
	setenv("BPFTRACE_PROF_LIVE_CAP", "2", 1);
	assert_int_equal(live_cap__new(&a), 0);
	setenv("BPFTRACE_PROF_LIVE_CAP", "5", 1);
	assert_int_equal(live_cap__new(&b), 0);
	for (int i = 0; i < 2; i++) {
		assert_int_equal(live_cap__add(a, 1), 0);
		assert_int_equal(live_cap__add(b, 1), 0);
	}
	assert_false(live_cap__room(a, 1));
	assert_false(live_cap__room(b, 1));
	live_cap__set(a, 3, 0);
	assert_true(live_cap__room(a, 1));
	live_cap__free(a);
	live_cap__free(b);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		/* First: the environment is read at the first table's creation. */
		cmocka_unit_test(test_live_cap__default_from_environment),
		cmocka_unit_test(test_live_cap__per_process_and_total),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
