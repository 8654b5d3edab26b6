// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "export/rank.h"
#include "profile/profile.h"

/* Two locations in main (grouped by name), a recursive function, a leaf, an unknown address. */
enum { L_MAIN_A = 1, L_MAIN_B, L_REC, L_LEAF, L_UNKNOWN };

/*
 * Value type 1:  leaf;rec;rec;main 10   rec;main(other pc) 5   [unknown];main 1
 * plus a sample worth 0 in type 1 (7 in type 0), which must not touch the rows.
 * By flat: leaf 10, rec 5, [unknown] 1, main 0.  By cum: main 16, rec 15 (once per stack),
 * leaf 10, [unknown] 1.
 */
static int setup(void **state)
{
	struct profile *p;
	uint32_t fn, id;
	int err = 0;

	if (profile__new(&p, "cpu"))
		return -1;
	err |= profile__add_type(p, "samples", "count");
	err |= profile__add_type(p, "cpu", "nanoseconds");
	err |= profile__function(p, &fn, "main", "main", "", 0);
	err |= profile__location(p, &id, 0x100, 0, fn, 0);
	err |= profile__location(p, &id, 0x104, 0, fn, 0);
	err |= profile__function(p, &fn, "rec", "rec", "", 0);
	err |= profile__location(p, &id, 0x200, 0, fn, 0);
	err |= profile__function(p, &fn, "leaf", "leaf", "", 0);
	err |= profile__location(p, &id, 0x300, 0, fn, 0);
	err |= profile__location(p, &id, 0xdead, 0, 0, 0);
	err |= profile__add_sample(p, 1, 1, "t", "t", (uint32_t[]){L_LEAF, L_REC, L_REC, L_MAIN_A},
				   4, (int64_t[]){1, 10}, false);
	err |= profile__add_sample(p, 1, 1, "t", "t", (uint32_t[]){L_REC, L_MAIN_B}, 2,
				   (int64_t[]){1, 5}, false);
	err |= profile__add_sample(p, 2, 2, "t", "t", (uint32_t[]){L_UNKNOWN, L_MAIN_A}, 2,
				   (int64_t[]){1, 1}, false);
	err |= profile__add_sample(p, 2, 2, "t", "t", (uint32_t[]){L_LEAF, L_MAIN_A}, 2,
				   (int64_t[]){7, 0}, false);
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

static void expect_row(const struct rank_row *r, const char *name, int64_t flat, int64_t cum)
{
	assert_string_equal(r->name, name);
	assert_int_equal(r->flat, flat);
	assert_int_equal(r->cum, cum);
}

static void test_rank__by_flat_and_by_cum(void **state)
{
	const struct rank_row *rows;
	struct rank *r;
	uint32_t n;

	assert_int_equal(rank__new(&r, *state), 0);
	assert_int_equal(rank__compute(r, &rows, &n, NULL, 0, 1, RANK_BY_FLAT), 0);
	assert_int_equal(n, 4);
	expect_row(&rows[0], "leaf", 10, 10);
	expect_row(&rows[1], "rec", 5, 15);
	expect_row(&rows[2], "[unknown] 0xdead", 1, 1);
	expect_row(&rows[3], "main", 0, 16);
	/* A second computation starts from zero. */
	assert_int_equal(rank__compute(r, &rows, &n, NULL, 0, 1, RANK_BY_CUM), 0);
	assert_int_equal(n, 4);
	expect_row(&rows[0], "main", 0, 16);
	expect_row(&rows[1], "rec", 5, 15);
	expect_row(&rows[2], "leaf", 10, 10);
	expect_row(&rows[3], "[unknown] 0xdead", 1, 1);
	rank__free(r);
}

static void test_rank__other_type_and_subset(void **state)
{
	const struct rank_row *rows;
	struct rank *r;
	uint32_t n;

	assert_int_equal(rank__new(&r, *state), 0);
	/* Type 0 counts the fourth sample: leaf owns 1 + 7. */
	assert_int_equal(rank__compute(r, &rows, &n, NULL, 0, 0, RANK_BY_FLAT), 0);
	assert_int_equal(n, 4);
	expect_row(&rows[0], "leaf", 8, 8);
	expect_row(&rows[3], "main", 0, 10);
	/* Only samples 1 and 2 (indexes into p->samples). */
	assert_int_equal(rank__compute(r, &rows, &n, (uint32_t[]){1, 2}, 2, 1, RANK_BY_CUM), 0);
	assert_int_equal(n, 3);
	expect_row(&rows[0], "main", 0, 6);
	expect_row(&rows[1], "rec", 5, 5);
	expect_row(&rows[2], "[unknown] 0xdead", 1, 1);
	/* No type 2 in this profile. */
	assert_int_equal(rank__compute(r, &rows, &n, NULL, 0, 2, RANK_BY_FLAT), -EINVAL);
	rank__free(r);
}

static void test_rank__empty_profile(void **state)
{
	const struct rank_row *rows;
	struct profile *p;
	struct rank *r;
	uint32_t n = 99;

	(void)state;
	assert_int_equal(profile__new(&p, "cpu"), 0);
	assert_int_equal(profile__add_type(p, "cpu", "nanoseconds"), 0);
	assert_int_equal(rank__new(&r, p), 0);
	assert_int_equal(rank__compute(r, &rows, &n, NULL, 0, 0, RANK_BY_CUM), 0);
	assert_int_equal(n, 0);
	rank__free(r);
	rank__free(NULL);
	profile__free(p);
}

/* __schedule;schedule;do_nanosleep (kernel);sleeper (user) 30, and a stack of __schedule alone
 * 2, in a profile of mode `mode`. */
static struct profile *sched_profile(const char *mode)
{
	struct profile_mapping km = {.start = 0xffff0000,
				     .limit = 0xffffffff,
				     .file = "[kernel.kallsyms]",
				     .build_id = ""};
	struct profile_mapping um = {
		.start = 0x1000, .limit = 0x2000, .file = "/bin/t", .build_id = ""};
	const char *names[] = {"__schedule", "schedule", "do_nanosleep", "sleeper"};
	uint32_t kmap, umap, ids[4], fn;
	struct profile *p;
	int err = 0;

	if (profile__new(&p, mode))
		return NULL;
	err |= profile__add_type(p, "offcpu", "nanoseconds");
	err |= profile__mapping(p, &kmap, &km);
	err |= profile__mapping(p, &umap, &um);
	for (int i = 0; i < 4; i++) {
		err |= profile__function(p, &fn, names[i], names[i], "", 0);
		err |= profile__location(p, &ids[i], (uint64_t)(i < 3 ? 0xffff1000 : 0x1100) + i,
					 i < 3 ? kmap : umap, fn, 0);
	}
	err |= profile__add_sample(p, 1, 1, "t", "t", ids, 4, (int64_t[]){30}, 0);
	err |= profile__add_sample(p, 1, 2, "t", "t", ids, 1, (int64_t[]){2}, 0);
	if (err) {
		profile__free(p);
		return NULL;
	}
	return p;
}

static int64_t flat_of(const struct rank_row *rows, uint32_t n, const char *name)
{
	for (uint32_t i = 0; i < n; i++)
		if (!strcmp(rows[i].name, name))
			return rows[i].flat;
	return -1;
}

/* Off-CPU: own time goes to the first frame below the scheduler's (why the thread waited); a
 * stack of nothing else keeps its leaf.  Other modes keep the leaf. */
static void test_rank__offcpu_own_skips_scheduler(void **state)
{
	const struct rank_row *rows;
	struct profile *p = sched_profile("offcpu");
	struct rank *r;
	uint32_t n;

	(void)state;
	assert_non_null(p);
	assert_int_equal(rank__new(&r, p), 0);
	assert_int_equal(rank__compute(r, &rows, &n, NULL, 0, 0, RANK_BY_FLAT), 0);
	assert_string_equal(rows[0].name, "do_nanosleep");
	assert_int_equal(rows[0].flat, 30);
	assert_int_equal(flat_of(rows, n, "__schedule"), 2);
	assert_int_equal(flat_of(rows, n, "schedule"), 0);
	assert_int_equal(flat_of(rows, n, "sleeper"), 0);
	rank__free(r);
	profile__free(p);

	p = sched_profile("cpu");
	assert_non_null(p);
	assert_int_equal(rank__new(&r, p), 0);
	assert_int_equal(rank__compute(r, &rows, &n, NULL, 0, 0, RANK_BY_FLAT), 0);
	assert_int_equal(flat_of(rows, n, "__schedule"), 32);
	assert_int_equal(flat_of(rows, n, "do_nanosleep"), 0);
	rank__free(r);
	profile__free(p);
}

int main(void)
{
#define T(name) cmocka_unit_test_setup_teardown(name, setup, teardown)
	const struct CMUnitTest tests[] = {
		T(test_rank__by_flat_and_by_cum),
		T(test_rank__other_type_and_subset),
		cmocka_unit_test(test_rank__empty_profile),
		cmocka_unit_test(test_rank__offcpu_own_skips_scheduler),
	};
#undef T

	return cmocka_run_group_tests_name("rank", tests, NULL, NULL);
}
