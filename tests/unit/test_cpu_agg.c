// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "agg/cpu_agg.h"
#include "sym/stackres.h"

static void test_cpu_agg__counts_per_thread_and_stacks(void **state)
{
	struct cpu_agg_key a = {.pid = 10, .tid = 11, .user_stack = 0, .kern_stack = STACKRES_NONE};
	struct cpu_agg_key b = a, c = a;
	const struct cpu_agg_key *k;
	uint64_t count, total = 0;
	struct cpu_agg *agg;
	size_t it = 0;
	int rows = 0;

	(void)state;
	b.kern_stack = 3;
	c.tid = 12;
	assert_int_equal(cpu_agg__new(&agg), 0);
	for (int i = 0; i < 5; i++)
		assert_int_equal(cpu_agg__add(agg, &a), 0);
	assert_int_equal(cpu_agg__add(agg, &b), 0);
	assert_int_equal(cpu_agg__add(agg, &c), 0);
	assert_int_equal(cpu_agg__add(agg, &c), 0);
	assert_int_equal(cpu_agg__count(agg, &a), 5);
	assert_int_equal(cpu_agg__count(agg, &b), 1);
	assert_int_equal(cpu_agg__count(agg, &c), 2);
	while (cpu_agg__next(agg, &it, &k, &count)) {
		rows++;
		total += count;
	}
	assert_int_equal(rows, 3);
	assert_int_equal(total, 8);
	cpu_agg__free(agg);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_cpu_agg__counts_per_thread_and_stacks),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
