// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * The string pool: one copy per text, and sweeps that free exactly the strings not kept, after
 * which the kept ones keep their pointers and the others intern afresh.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "util/hashmap.h"
#include "util/strpool.h"

static struct hashmap *new_set(void)
{
	struct hashmap *h = NULL;

	assert_int_equal(hashmap__new(&h, sizeof(const void *), 0), 0);
	return h;
}

static void add(struct hashmap *set, const void *ptr)
{
	void *v;

	assert_int_equal(hashmap__upsert(set, &v, &ptr, NULL), 0);
}

static void test_strpool__one_copy_per_text(void **state)
{
	struct strpool *p = NULL;
	char buf[16];
	const char *a;

	(void)state;
	assert_int_equal(strpool__new(&p), 0);
	assert_int_equal(strpool__count(p), 0);
	a = strpool__intern(p, "malloc");
	strcpy(buf, "malloc");
	assert_ptr_equal(strpool__intern(p, buf), a);
	assert_ptr_not_equal(strpool__intern(p, "free"), a);
	assert_string_equal(strpool__intern(p, ""), "");
	assert_null(strpool__intern(p, NULL));
	assert_int_equal(strpool__count(p), 3);
	assert_int_equal(strpool__bytes(p), sizeof("malloc") + sizeof("free") + sizeof(""));
	strpool__free(p);
}

static void test_strpool__sweep_frees_what_is_not_kept(void **state)
{
	struct hashmap *keep = new_set();
	struct strpool *p = NULL;
	const char *a, *b, *c, *b2;
	int outsider = 0;

	(void)state;
	assert_int_equal(strpool__new(&p), 0);
	a = strpool__intern(p, "alpha");
	b = strpool__intern(p, "beta");
	c = strpool__intern(p, "gamma");
	assert_non_null(a);
	assert_non_null(b);
	assert_non_null(c);
	add(keep, a);
	add(keep, c);
	add(keep, &outsider); /* not a pool string: ignored */
	strpool__sweep(p, keep);
	assert_int_equal(strpool__count(p), 2);
	assert_int_equal(strpool__bytes(p), sizeof("alpha") + sizeof("gamma"));
	/* Kept: readable, and still the one copy. */
	assert_string_equal(a, "alpha");
	assert_string_equal(c, "gamma");
	assert_ptr_equal(strpool__intern(p, "alpha"), a);
	assert_ptr_equal(strpool__intern(p, "gamma"), c);
	assert_int_equal(strpool__count(p), 2);
	/* Freed: interned again as a new copy, and then shared again. */
	b2 = strpool__intern(p, "beta");
	assert_non_null(b2);
	assert_string_equal(b2, "beta");
	assert_int_equal(strpool__count(p), 3);
	assert_ptr_equal(strpool__intern(p, "beta"), b2);
	assert_int_equal(strpool__count(p), 3);
	hashmap__free(keep);
	strpool__free(p);
}

static void test_strpool__sweep_with_nothing_kept_empties_it(void **state)
{
	struct hashmap *keep = new_set();
	struct strpool *p = NULL;
	char buf[32];

	(void)state;
	assert_int_equal(strpool__new(&p), 0);
	for (int i = 0; i < 100; i++) {
		snprintf(buf, sizeof(buf), "s%d", i);
		assert_non_null(strpool__intern(p, buf));
	}
	assert_int_equal(strpool__count(p), 100);
	strpool__sweep(p, keep);
	assert_int_equal(strpool__count(p), 0);
	assert_int_equal(strpool__bytes(p), 0);
	/* A sweep of an empty pool is a no-op; the pool still works after. */
	strpool__sweep(p, keep);
	assert_string_equal(strpool__intern(p, "s7"), "s7");
	assert_int_equal(strpool__count(p), 1);
	hashmap__free(keep);
	strpool__free(p);
}

/* Many strings, every other one kept, over several rounds: the index stays exact. */
static void test_strpool__repeated_sweeps_keep_the_index_exact(void **state)
{
	enum { N = 5000 };
	const char **ptrs = calloc(N, sizeof(*ptrs));
	struct strpool *p = NULL;
	char buf[32];

	(void)state;
	assert_non_null(ptrs);
	assert_int_equal(strpool__new(&p), 0);
	for (int round = 0; round < 3; round++) {
		struct hashmap *keep = new_set();
		size_t before;

		for (int i = 0; i < N; i++) {
			snprintf(buf, sizeof(buf), "name-%d", i);
			ptrs[i] = strpool__intern(p, buf);
			assert_non_null(ptrs[i]);
			if (i % 2 == 0)
				add(keep, ptrs[i]);
		}
		assert_int_equal(strpool__count(p), N);
		strpool__sweep(p, keep);
		assert_int_equal(strpool__count(p), N / 2);
		before = strpool__count(p);
		for (int i = 0; i < N; i += 2) {
			snprintf(buf, sizeof(buf), "name-%d", i);
			assert_string_equal(ptrs[i], buf);
			assert_ptr_equal(strpool__intern(p, buf), ptrs[i]);
		}
		assert_int_equal(strpool__count(p), before);
		hashmap__free(keep);
	}
	strpool__free(p);
	free(ptrs);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_strpool__one_copy_per_text),
		cmocka_unit_test(test_strpool__sweep_frees_what_is_not_kept),
		cmocka_unit_test(test_strpool__sweep_with_nothing_kept_empties_it),
		cmocka_unit_test(test_strpool__repeated_sweeps_keep_the_index_exact),
	};

	return cmocka_run_group_tests_name("strpool", tests, NULL, NULL);
}
