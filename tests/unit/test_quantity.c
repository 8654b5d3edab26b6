// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "export/quantity.h"

#define Q(v, unit, exact) quantity__format(buf, sizeof(buf), v, unit, exact)

static void test_quantity__bytes(void **state)
{
	char buf[QUANTITY_MAX];

	(void)state;
	assert_string_equal(Q(0, "bytes", true), "0 bytes");
	assert_string_equal(Q(1023, "bytes", true), "1023 bytes");
	assert_string_equal(Q(1024, "bytes", false), "1.00 KiB");
	assert_string_equal(Q(4096000, "bytes", true), "3.91 MiB (4096000 bytes)");
	assert_string_equal(Q(4096000, "bytes", false), "3.91 MiB");
	assert_string_equal(Q(-2048, "bytes", false), "-2.00 KiB");
	/* 1048575 bytes is 1023.999 KiB: shown as the next unit, not as "1024.00 KiB". */
	assert_string_equal(Q(1048575, "bytes", false), "1.00 MiB");
	assert_string_equal(Q(INT64_MAX, "bytes", true), "8192.00 PiB (9223372036854775807 bytes)");
}

static void test_quantity__nanoseconds(void **state)
{
	char buf[QUANTITY_MAX];

	(void)state;
	assert_string_equal(Q(999, "nanoseconds", true), "999 ns");
	assert_string_equal(Q(1500, "nanoseconds", false), "1.50 us");
	assert_string_equal(Q(2500000, "nanoseconds", true), "2.50 ms (2500000 ns)");
	assert_string_equal(Q(1500000000, "nanoseconds", true), "1.50 s (1500000000 ns)");
	assert_string_equal(Q(500000000, "nanoseconds", false), "500.00 ms");
	/* 999.999 ms: "1.00 s", never "1000.00 ms". */
	assert_string_equal(Q(999999000, "nanoseconds", false), "1.00 s");
	assert_string_equal(Q(999990000, "nanoseconds", false), "999.99 ms");
}

static void test_quantity__counts_and_other_units(void **state)
{
	char buf[QUANTITY_MAX];
	char small[8];

	(void)state;
	assert_string_equal(Q(123456789, "count", true), "123456789");
	assert_string_equal(Q(7, "", false), "7");
	assert_string_equal(Q(7, NULL, false), "7");
	assert_string_equal(Q(7, "widgets", false), "7 widgets");
	/* Cut to the buffer, never past it. */
	assert_string_equal(quantity__format(small, sizeof(small), 4096000, "bytes", true),
			    "3.91 Mi");
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_quantity__bytes),
		cmocka_unit_test(test_quantity__nanoseconds),
		cmocka_unit_test(test_quantity__counts_and_other_units),
	};

	return cmocka_run_group_tests_name("quantity", tests, NULL, NULL);
}
