// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <errno.h>

#include <cmocka.h>

#include "util/hashmap.h"
#include "util/strpool.h"

struct key {
	uint32_t a, b;
};

static void test_hashmap__insert_find_grow(void **state)
{
	struct hashmap *h;
	uint64_t *v;
	bool created;

	assert_int_equal(hashmap__new(&h, sizeof(struct key), sizeof(uint64_t)), 0);
	for (uint32_t i = 0; i < 10000; i++) {
		struct key k = {i, i * 7};

		assert_int_equal(hashmap__upsert(h, (void **)&v, &k, &created), 0);
		assert_true(created);
		assert_int_equal(*v, 0); /* new values start zeroed */
		*v = i + 1;
	}
	assert_int_equal(hashmap__count(h), 10000);
	for (uint32_t i = 0; i < 10000; i++) {
		struct key k = {i, i * 7};

		v = hashmap__find(h, &k);
		assert_non_null(v);
		assert_int_equal(*v, i + 1);
	}
	assert_null(hashmap__find(h, &(struct key){1, 1}));
	assert_int_equal(hashmap__upsert(h, (void **)&v, &(struct key){5, 35}, &created), 0);
	assert_false(created);
	assert_int_equal(*v, 6);
	hashmap__free(h);
}

static void test_hashmap__delete_keeps_clusters_reachable(void **state)
{
	struct hashmap *h;
	uint32_t *v;

	assert_int_equal(hashmap__new(&h, sizeof(uint32_t), sizeof(uint32_t)), 0);
	for (uint32_t i = 0; i < 5000; i++) {
		assert_int_equal(hashmap__upsert(h, (void **)&v, &i, NULL), 0);
		*v = i;
	}
	/* delete every third key; the rest must still be found (backward-shift deletion) */
	for (uint32_t i = 0; i < 5000; i += 3)
		assert_int_equal(hashmap__delete(h, &i), 0);
	for (uint32_t i = 0; i < 5000; i++) {
		v = hashmap__find(h, &i);
		if (i % 3 == 0) {
			assert_null(v);
		} else {
			assert_non_null(v);
			assert_int_equal(*v, i);
		}
	}
	assert_int_equal(hashmap__delete(h, &(uint32_t){0}), -ENOENT);
	assert_int_equal(hashmap__count(h), 5000 - 1667);
	hashmap__free(h);
}

static void test_hashmap__iterate_all(void **state)
{
	struct hashmap *h;
	const uint32_t *k;
	uint32_t *v, sum = 0, n = 0;
	size_t it = 0;

	assert_int_equal(hashmap__new(&h, sizeof(uint32_t), sizeof(uint32_t)), 0);
	for (uint32_t i = 1; i <= 100; i++) {
		assert_int_equal(hashmap__upsert(h, (void **)&v, &i, NULL), 0);
		*v = i * 2;
	}
	while (hashmap__next(h, &it, (const void **)&k, (void **)&v)) {
		assert_int_equal(*v, *k * 2);
		sum += *k;
		n++;
	}
	assert_int_equal(n, 100);
	assert_int_equal(sum, 5050);
	hashmap__free(h);
}

static bool odd_key(const void *key, const void *val, void *ctx)
{
	(void)val;
	(void)ctx;
	return *(const uint32_t *)key % 2;
}

static void sum_gone(const void *key, void *val, void *ctx)
{
	assert_int_equal(*(uint32_t *)val, *(const uint32_t *)key * 2);
	*(uint32_t *)ctx += *(const uint32_t *)key;
}

/* delete_if: every chosen entry goes, each told once; the others stay findable (clusters
 * shifted under the removal keep their members reachable). */
static void test_hashmap__delete_if(void **state)
{
	struct hashmap *h;
	uint32_t *v, gone = 0;

	(void)state;
	assert_int_equal(hashmap__new(&h, sizeof(uint32_t), sizeof(uint32_t)), 0);
	for (uint32_t i = 1; i <= 1000; i++) {
		assert_int_equal(hashmap__upsert(h, (void **)&v, &i, NULL), 0);
		*v = i * 2;
	}
	assert_int_equal(hashmap__delete_if(h, odd_key, sum_gone, &gone), 0);
	assert_int_equal(gone, 250000); /* 1 + 3 + ... + 999 */
	assert_int_equal(hashmap__count(h), 500);
	for (uint32_t i = 1; i <= 1000; i++) {
		v = hashmap__find(h, &i);
		if (i % 2) {
			assert_null(v);
		} else {
			assert_non_null(v);
			assert_int_equal(*v, i * 2);
		}
	}
	assert_int_equal(hashmap__delete_if(h, odd_key, NULL, NULL), 0);
	assert_int_equal(hashmap__count(h), 500);
	hashmap__free(h);
}

static void test_hashmap__strpool_interns(void **state)
{
	struct strpool *p;
	char buf[32];
	const char *a, *b;

	assert_int_equal(strpool__new(&p), 0);
	a = strpool__intern(p, "malloc");
	snprintf(buf, sizeof(buf), "mal%s", "loc");
	b = strpool__intern(p, buf);
	assert_ptr_equal(a, b);
	assert_string_equal(a, "malloc");
	assert_ptr_not_equal(strpool__intern(p, "free"), a);
	assert_null(strpool__intern(p, NULL));
	assert_string_equal(strpool__intern(p, ""), "");
	strpool__free(p);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_hashmap__insert_find_grow),
		cmocka_unit_test(test_hashmap__delete_keeps_clusters_reachable),
		cmocka_unit_test(test_hashmap__iterate_all),
		cmocka_unit_test(test_hashmap__delete_if),
		cmocka_unit_test(test_hashmap__strpool_interns),
	};

	return cmocka_run_group_tests_name("hashmap", tests, NULL, NULL);
}
