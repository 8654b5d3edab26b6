// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <time.h>

#include <cmocka.h>

#include "util/clock.h"

static int64_t ts_ns(const struct timespec *ts)
{
	return (int64_t)ts->tv_sec * 1000000000LL + ts->tv_nsec;
}

/* Each unit is the monotonic clock, read in order: never behind the reading before it. */
static void test_clock__mono_units_agree(void **state)
{
	struct timespec ts;
	int64_t before, ns, us, ms, after;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	before = ts_ns(&ts);
	ns = clock__mono_ns();
	us = clock__mono_us();
	ms = clock__mono_ms();
	clock_gettime(CLOCK_MONOTONIC, &ts);
	after = ts_ns(&ts);
	assert_true(before <= ns && ns <= after);
	assert_true(before / 1000 <= us && us <= after / 1000 && ns / 1000 <= us);
	assert_true(before / 1000000 <= ms && ms <= after / 1000000 && us / 1000 <= ms);
}

/* Wall time, not time since boot (which the monotonic clock counts here): past 2020.  No
 * ordering against another reading: the wall clock may be stepped meanwhile. */
static void test_clock__real_is_wall_time(void **state)
{
	assert_true(clock__real_ns() > 1577836800LL * 1000000000LL);
}

static void test_clock__timespec_splits_ns(void **state)
{
	struct timespec ts;

	clock__timespec(&ts, 0);
	assert_int_equal(ts.tv_sec, 0);
	assert_int_equal(ts.tv_nsec, 0);
	clock__timespec(&ts, 999999999);
	assert_int_equal(ts.tv_sec, 0);
	assert_int_equal(ts.tv_nsec, 999999999);
	clock__timespec(&ts, 12LL * 1000000000LL + 345);
	assert_int_equal(ts.tv_sec, 12);
	assert_int_equal(ts.tv_nsec, 345);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_clock__mono_units_agree),
		cmocka_unit_test(test_clock__real_is_wall_time),
		cmocka_unit_test(test_clock__timespec_splits_ns),
	};

	return cmocka_run_group_tests_name("clock", tests, NULL, NULL);
}
