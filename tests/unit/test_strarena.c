// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * The string arena of the ELF and kallsyms symbol tables: strings back to back with their NULs,
 * known by offset across the reallocations that growing takes, equal strings stored twice.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

#include "util/strarena.h"

static void test_strarena__back_to_back(void **state)
{
	struct strarena a = {0};
	size_t o1, o2, o3;

	assert_int_equal(strarena__add(&a, &o1, "malloc@@GLIBC", 6), 0);
	assert_int_equal(strarena__add(&a, &o2, "", 0), 0);
	assert_int_equal(strarena__add(&a, &o3, "malloc", 6), 0);
	assert_int_equal(o1, 0);
	assert_int_equal(o2, 7);
	assert_int_equal(o3, 8);
	assert_int_equal(a.len, 15);
	assert_int_equal(a.cap, 4096); /* first_cap 0: the default */
	assert_memory_equal(a.buf, "malloc\0\0malloc\0", 15);
	strarena__release(&a);
	assert_null(a.buf);
	assert_int_equal(a.len, 0);
	assert_int_equal(a.cap, 0);
}

/* Past first_cap the buffer doubles (as often as one long string needs); offsets stay right. */
static void test_strarena__offsets_survive_growth(void **state)
{
	struct strarena a = {.first_cap = 16};
	char name[32], big[100];
	size_t off[200], big_off;

	for (int i = 0; i < 200; i++) {
		int n = snprintf(name, sizeof(name), "sym_%d", i);

		assert_int_equal(strarena__add(&a, &off[i], name, (size_t)n), 0);
	}
	memset(big, 'x', sizeof(big));
	assert_int_equal(strarena__add(&a, &big_off, big, sizeof(big)), 0);
	for (int i = 0; i < 200; i++) {
		snprintf(name, sizeof(name), "sym_%d", i);
		assert_string_equal(a.buf + off[i], name);
	}
	assert_int_equal(strlen(a.buf + big_off), sizeof(big));
	/* 16, 32, … : always a power-of-two multiple of the first size, never more than twice
	 * what is held. */
	assert_int_equal(a.cap & (a.cap - 1), 0);
	assert_true(a.cap >= a.len && a.cap < 2 * a.len);
	strarena__release(&a);
	assert_int_equal(a.first_cap, 16);
}

static void test_strarena__one_string_larger_than_first(void **state)
{
	struct strarena a = {.first_cap = 8};
	char big[1000];
	size_t off;

	memset(big, 'y', sizeof(big));
	assert_int_equal(strarena__add(&a, &off, big, sizeof(big)), 0);
	assert_int_equal(off, 0);
	assert_int_equal(a.cap, 1024);
	assert_int_equal(strlen(a.buf), sizeof(big));
	strarena__release(&a);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_strarena__back_to_back),
		cmocka_unit_test(test_strarena__offsets_survive_growth),
		cmocka_unit_test(test_strarena__one_string_larger_than_first),
	};

	return cmocka_run_group_tests_name("strarena", tests, NULL, NULL);
}
