// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "export/folded.h"
#include "profile/profile.h"

/* Locations: 1 main, 2 work, 3 malloc, 4 work at another address, 5 unsymbolized in libc,
 * 6 a name with separators in it. */
static int setup(void **state)
{
	struct profile_mapping libc = {.start = 0x7f00, .limit = 0x8f00, .file = "/lib/libc.so.6"};
	uint32_t m, fn, id;
	struct profile *p;
	int err = 0;

	if (profile__new(&p, "heap"))
		return -1;
	err |= profile__add_type(p, "alloc_space", "bytes");
	err |= profile__add_type(p, "inuse_space", "bytes");
	p->default_type = 1;
	err |= profile__mapping(p, &m, &libc);
	err |= profile__function(p, &fn, "main", "main", "", 0);
	err |= profile__location(p, &id, 0x100, 0, fn, 0);
	err |= profile__function(p, &fn, "work", "work", "", 0);
	err |= profile__location(p, &id, 0x200, 0, fn, 0);
	err |= profile__function(p, &fn, "malloc", "malloc", "", 0);
	err |= profile__location(p, &id, 0x7f10, m, fn, 0);
	err |= profile__location(p, &id, 0x204, 0, fn - 1, 0);
	err |= profile__location(p, &id, 0x7f20, m, 0, 0);
	err |= profile__function(p, &fn, "operator<<(std::ostream&; int)\nx", "x", "", 0);
	err |= profile__location(p, &id, 0x300, 0, fn, 0);
	if (err) {
		profile__free(p);
		return -1;
	}
	*state = p;
	return 0;
}

static int teardown(void **state)
{
	profile__free(*state);
	return 0;
}

static char *folded(const struct profile *p)
{
	char *buf = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&buf, &len);

	assert_non_null(f);
	assert_int_equal(folded__write(p, f), 0);
	assert_int_equal(fclose(f), 0);
	return buf;
}

static void add(struct profile *p, uint32_t pid, uint32_t tid, const char *process,
		const uint32_t *stack, uint32_t n, int64_t alloc, int64_t inuse)
{
	int64_t v[] = {alloc, inuse};

	assert_int_equal(profile__add_sample(p, pid, tid, "thread", process, stack, n, v, false),
			 0);
}

static void test_folded__root_first_with_process(void **state)
{
	struct profile *p = *state;
	char *out;

	add(p, 1, 1, "app", (uint32_t[]){3, 2, 1}, 3, 100, 64);
	out = folded(p);
	assert_string_equal(out, "app;main;work;malloc 64\n");
	free(out);
}

static void test_folded__threads_merged_and_sorted(void **state)
{
	struct profile *p = *state;
	char *out;

	add(p, 1, 2, "zeta", (uint32_t[]){3, 1}, 2, 1, 1);
	add(p, 1, 1, "app", (uint32_t[]){3, 2, 1}, 3, 100, 64);
	add(p, 1, 2, "app", (uint32_t[]){3, 2, 1}, 3, 100, 36);
	add(p, 1, 3, "app", (uint32_t[]){3, 1}, 2, 100, 5);
	out = folded(p);
	assert_string_equal(out, "app;main;malloc 5\n"
				 "app;main;work;malloc 100\n"
				 "zeta;main;malloc 1\n");
	free(out);
}

static void test_folded__same_function_other_address_merged(void **state)
{
	struct profile *p = *state;
	char *out;

	add(p, 1, 1, "app", (uint32_t[]){3, 2, 1}, 3, 0, 10);
	add(p, 1, 1, "app", (uint32_t[]){3, 4, 1}, 3, 0, 20);
	out = folded(p);
	assert_string_equal(out, "app;main;work;malloc 30\n");
	free(out);
}

static void test_folded__zero_values_omitted(void **state)
{
	struct profile *p = *state;
	char *out;

	/* All freed: allocated bytes but nothing in use (the default type). */
	add(p, 1, 1, "app", (uint32_t[]){3, 2, 1}, 3, 4096, 0);
	add(p, 1, 1, "app", (uint32_t[]){3, 1}, 2, 4096, 8);
	out = folded(p);
	assert_string_equal(out, "app;main;malloc 8\n");
	free(out);
}

static void test_folded__unknown_frames_named(void **state)
{
	struct profile *p = *state;
	char *out;

	add(p, 1, 1, "app", (uint32_t[]){5, 1}, 2, 0, 7);
	out = folded(p);
	assert_string_equal(out, "app;main;libc.so.6+0x20 7\n");
	free(out);
}

static void test_folded__separators_in_names_replaced(void **state)
{
	struct profile *p = *state;
	char *out;

	add(p, 1, 1, "my;app\n", (uint32_t[]){6, 1}, 2, 0, 3);
	out = folded(p);
	/* Spaces survive: readers split the count off at the last space.  A newline is escaped
	 * as on the terminal. */
	assert_string_equal(out, "my_app\\x0a;main;operator<<(std::ostream&_ int)\\x0ax 3\n");
	free(out);
}

static void test_folded__empty_profile(void **state)
{
	char *out = folded(*state);

	assert_string_equal(out, "");
	free(out);
}

/* --cpu: the samples count, not the default cpu nanoseconds (as stackcollapse-perf). */
static void test_folded__cpu_counts_samples(void **state)
{
	struct profile *p;
	uint32_t fn, id;
	char *out;

	(void)state;
	assert_int_equal(profile__new(&p, "cpu"), 0);
	assert_int_equal(profile__add_type(p, "samples", "count"), 0);
	assert_int_equal(profile__add_type(p, "cpu", "nanoseconds"), 0);
	p->default_type = 1;
	assert_int_equal(profile__function(p, &fn, "work", "work", "", 0), 0);
	assert_int_equal(profile__location(p, &id, 0x100, 0, fn, 0), 0);
	assert_int_equal(
		profile__add_sample(p, 1, 1, "t", "app", &id, 1, (int64_t[]){3, 30303030}, false),
		0);
	out = folded(p);
	assert_string_equal(out, "app;work 3\n");
	free(out);
	profile__free(p);
}

int main(void)
{
#define T(name) cmocka_unit_test_setup_teardown(name, setup, teardown)
	const struct CMUnitTest tests[] = {
		T(test_folded__root_first_with_process),
		T(test_folded__threads_merged_and_sorted),
		T(test_folded__same_function_other_address_merged),
		T(test_folded__zero_values_omitted),
		T(test_folded__unknown_frames_named),
		T(test_folded__separators_in_names_replaced),
		T(test_folded__empty_profile),
		cmocka_unit_test(test_folded__cpu_counts_samples),
	};
#undef T

	return cmocka_run_group_tests_name("folded", tests, NULL, NULL);
}
