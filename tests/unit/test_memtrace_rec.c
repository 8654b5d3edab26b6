// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/* The recorder's sample counts (trace/memtrace_rec.c); the recording itself runs end to end
 * (tests/e2e/test_memtrace.sh). */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "trace/memtrace_rec.h"

static void test_memtrace_rec__nsamples_every_allocation_is_words(void **state)
{
	(void)state;
	assert_int_equal(memtrace_rec__nsamples(64, 0, 0.5), 8);
	assert_int_equal(memtrace_rec__nsamples(65, 0, 0.5), 9);
	assert_int_equal(memtrace_rec__nsamples(0, 0, 0.5), 0);
}

/* A block of size s taken with probability 1 - exp(-s/N) stands for s / (1 - exp(-s/N)) bytes:
 * x samples of N bytes, rounded at random so the mean stays x. */
static void test_memtrace_rec__nsamples_unbiased(void **state)
{
	const uint64_t n = 16384, sizes[] = {1, 64, 4096, 16384, 100000, 1 << 20};

	(void)state;
	assert_int_equal(memtrace_rec__nsamples(0, n, 0.5), 1);
	/* s = N: x = 1 / (1 - 1/e) = 1.58198 */
	assert_int_equal(memtrace_rec__nsamples(n, n, 0.5), 2);
	assert_int_equal(memtrace_rec__nsamples(n, n, 0.6), 1);
	for (size_t i = 0; i < sizeof(sizes) / sizeof(sizes[0]); i++) {
		double x = ((double)sizes[i] / n) / -expm1(-(double)sizes[i] / n), sum = 0;

		for (int k = 0; k < 1000; k++)
			sum += (double)memtrace_rec__nsamples(sizes[i], n, (k + 0.5) / 1000);
		assert_true(fabs(sum / 1000 - x) < 0.001);
		assert_true(memtrace_rec__nsamples(sizes[i], n, 0.0) >= 1);
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_memtrace_rec__nsamples_every_allocation_is_words),
		cmocka_unit_test(test_memtrace_rec__nsamples_unbiased),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
