// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/* Continuous mode's list of what grew (export/growth.c) over heap_agg's in-use values. */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>

#include <cmocka.h>

#include "agg/heap_agg.h"
#include "export/growth.h"

#define S 1000000000ULL

static const struct growth_row *row_of(const struct growth_row *rows, size_t n, int32_t stack)
{
	for (size_t i = 0; i < n; i++)
		if (rows[i].stack_id == stack)
			return &rows[i];
	return NULL;
}

/*
 * Stack 1 keeps 1,000 bytes per interval (a leak); stack 2 goes 0, 5000, 0, 5000 (grows over
 * the window, not at every end); stack 3 shrinks; stack 4 is freed at once.  Window of 3
 * intervals: 4 ends kept, the oldest dropped as the ring turns.
 */
static void test_growth__rank_window_and_monotonic(void **state)
{
	static const uint64_t two[] = {0, 5000, 0, 5000, 0, 5000};
	struct growth_row *rows;
	struct heap_agg *h;
	struct growth *g;
	uint64_t window, addr = 0x100000;
	unsigned intervals;
	size_t n;

	(void)state;
	assert_int_equal(growth__new(&g, 0), -EINVAL);
	assert_int_equal(growth__new(&g, GROWTH_INTERVALS_MAX + 1), -EINVAL);
	assert_int_equal(heap_agg__new(&h, 0), 0);
	assert_int_equal(growth__new(&g, 3), 0);
	heap_agg__alloc(h, 7, 7, 3, 0, 0x3000, 9000);
	for (int e = 0; e < 6; e++) {
		heap_agg__alloc(h, 7, 7, 1, 0, addr++, 1000);
		if (two[e])
			heap_agg__alloc(h, 7, 7, 2, 0, 0x2000, two[e]);
		else
			heap_agg__free_block(h, 7, 0x2000);
		if (e == 1)
			heap_agg__free_block(h, 7, 0x3000);
		assert_int_equal(growth__record(g, h, (uint64_t)e * 2 * S), 0);
		assert_int_equal(heap_agg__new_interval(h), 0);
		if (e == 0) {
			assert_int_equal(growth__rank(g, &rows, &n, &window, &intervals), 0);
			assert_int_equal(intervals, 0);
			assert_int_equal(n, 0);
		}
	}
	/* ends 2..5 (t = 4..10 s): stack 1 3000 more, stack 2 0 -> 5000, stack 3 none left */
	assert_int_equal(growth__rank(g, &rows, &n, &window, &intervals), 0);
	assert_int_equal(intervals, 3);
	assert_int_equal(window, 6 * S);
	assert_int_equal(n, 2);
	assert_int_equal(rows[0].stack_id, 2); /* most bytes first */
	assert_int_equal((int64_t)rows[0].grown, 5000);
	assert_false(rows[0].monotonic);
	assert_non_null(row_of(rows, n, 1));
	assert_int_equal((int64_t)row_of(rows, n, 1)->grown, 3000);
	assert_int_equal((int64_t)row_of(rows, n, 1)->now, 6000);
	assert_int_equal((int64_t)row_of(rows, n, 1)->per_s, 500);
	assert_true(row_of(rows, n, 1)->monotonic);
	assert_null(row_of(rows, n, 3));
	free(rows);
	growth__free(g);
	heap_agg__free(h);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_growth__rank_window_and_monotonic),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
