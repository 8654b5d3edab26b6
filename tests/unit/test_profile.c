// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

#include "profile/profile.h"

static int setup(void **state)
{
	struct profile *p;

	if (profile__new(&p, "heap"))
		return -1;
	if (profile__add_type(p, "alloc_objects", "count") ||
	    profile__add_type(p, "alloc_space", "bytes")) {
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

static void test_profile__new_sets_mode(void **state)
{
	struct profile *p = *state;

	assert_string_equal(p->mode, "heap");
	assert_int_equal(p->ntypes, 2);
	assert_string_equal(p->types[1].type, "alloc_space");
	assert_string_equal(p->types[1].unit, "bytes");
}

static void test_profile__intern_null_is_empty(void **state)
{
	struct profile *p = *state;
	char a[] = "libc.so.6", b[] = "libc.so.6";

	assert_string_equal(profile__intern(p, NULL), "");
	assert_ptr_equal(profile__intern(p, NULL), profile__intern(p, ""));
	assert_ptr_equal(profile__intern(p, a), profile__intern(p, b));
	assert_ptr_not_equal(profile__intern(p, a), a);
}

static void test_profile__add_type_limit(void **state)
{
	struct profile *p = *state;

	assert_int_equal(profile__add_type(p, "inuse_objects", "count"), 0);
	assert_int_equal(profile__add_type(p, "inuse_space", "bytes"), 0);
	assert_int_equal(profile__add_type(p, "peak_objects", "count"), 0);
	assert_int_equal(profile__add_type(p, "peak_space", "bytes"), 0);
	assert_int_equal(profile__add_type(p, "one_too_many", "count"), -E2BIG);
	assert_int_equal(p->ntypes, PROFILE_MAX_VALUES);
}

static void test_profile__mappings_dedup(void **state)
{
	struct profile *p = *state;
	char file1[] = "/usr/lib/libc.so.6", file2[] = "/usr/lib/libc.so.6";
	struct profile_mapping m = {.start = 0x1000, .limit = 0x2000, .offset = 0, .file = file1};
	uint32_t a, b, c, d;

	assert_int_equal(profile__mapping(p, &a, &m), 0);
	assert_int_equal(a, 1);
	m.file = file2; /* same contents, another buffer */
	assert_int_equal(profile__mapping(p, &b, &m), 0);
	assert_int_equal(b, a);
	m.offset = 0x1000;
	assert_int_equal(profile__mapping(p, &c, &m), 0);
	assert_int_equal(c, 2);
	m.offset = 0;
	m.file = "/usr/bin/other";
	assert_int_equal(profile__mapping(p, &d, &m), 0);
	assert_int_equal(d, 3);
	assert_int_equal(p->nmappings, 3);
	assert_string_equal(p->mappings[0].file, "/usr/lib/libc.so.6");
	assert_ptr_not_equal(p->mappings[0].file, file1);
	assert_string_equal(p->mappings[0].build_id, ""); /* NULL build id becomes "" */
}

static void test_profile__mapping_learns_symbols_later(void **state)
{
	struct profile *p = *state;
	struct profile_mapping m = {.start = 0x1000, .limit = 0x2000, .file = "/bin/x"};
	uint32_t a, b;

	assert_int_equal(profile__mapping(p, &a, &m), 0);
	assert_false(p->mappings[a - 1].has_functions);
	m.has_functions = true;
	m.build_id = "abcd";
	assert_int_equal(profile__mapping(p, &b, &m), 0);
	assert_int_equal(a, b);
	assert_true(p->mappings[a - 1].has_functions);
	assert_string_equal(p->mappings[a - 1].build_id, "abcd");
}

static void test_profile__functions_dedup(void **state)
{
	struct profile *p = *state;
	uint32_t a, b, c, d;

	assert_int_equal(profile__function(p, &a, "foo", "_Z3foov", "foo.c", 10), 0);
	assert_int_equal(profile__function(p, &b, "foo", "_Z3foov", "foo.c", 10), 0);
	assert_int_equal(a, b);
	assert_int_equal(profile__function(p, &c, "foo", "_Z3foov", "bar.c", 10), 0);
	assert_int_not_equal(c, a);
	assert_int_equal(profile__function(p, &d, "foo", "_Z3foov", "foo.c", 11), 0);
	assert_int_not_equal(d, a);
	assert_int_not_equal(d, c);
	assert_int_equal(p->nfunctions, 3);
	assert_string_equal(p->functions[a - 1].system_name, "_Z3foov");
	assert_int_equal(p->functions[d - 1].start_line, 11);
}

static void test_profile__locations_dedup(void **state)
{
	struct profile *p = *state;
	struct profile_mapping m = {.start = 0x1000, .limit = 0x2000, .file = "/bin/x"};
	uint32_t mid, fid, a, b, c, d, e;

	assert_int_equal(profile__mapping(p, &mid, &m), 0);
	assert_int_equal(profile__function(p, &fid, "foo", "foo", "", 0), 0);
	assert_int_equal(profile__location(p, &a, 0x1100, mid, fid, 0), 0);
	assert_int_equal(profile__location(p, &b, 0x1100, mid, fid, 0), 0);
	assert_int_equal(a, b);
	assert_int_equal(profile__location(p, &c, 0x1104, mid, fid, 0), 0);
	assert_int_equal(profile__location(p, &d, 0x1100, mid, fid, 7), 0);
	assert_int_equal(profile__location(p, &e, 0x1100, mid, 0, 0), 0);
	assert_int_equal(p->nlocations, 4);
	assert_int_equal(c, 2);
	assert_int_equal(d, 3);
	assert_int_equal(e, 4);
	assert_int_equal(p->locations[e - 1].function_id, 0);
	assert_int_equal(p->locations[e - 1].mapping_id, mid);
}

static void test_profile__location_rejects_unknown_ids(void **state)
{
	struct profile *p = *state;
	uint32_t id;

	assert_int_equal(profile__location(p, &id, 0x10, 1, 0, 0), -EINVAL);
	assert_int_equal(profile__location(p, &id, 0x10, 0, 1, 0), -EINVAL);
	assert_int_equal(p->nlocations, 0);
}

/* Three locations: 1 = foo, 2 = main, 3 = unsymbolized. */
static void add_locations(struct profile *p)
{
	uint32_t fid, id;

	assert_int_equal(profile__function(p, &fid, "foo", "foo", "", 0), 0);
	assert_int_equal(profile__location(p, &id, 0x10, 0, fid, 0), 0);
	assert_int_equal(profile__function(p, &fid, "main", "main", "", 0), 0);
	assert_int_equal(profile__location(p, &id, 0x20, 0, fid, 0), 0);
	assert_int_equal(profile__location(p, &id, 0x30, 0, 0, 0), 0);
}

static void test_profile__samples_merge(void **state)
{
	struct profile *p = *state;
	uint32_t stack[] = {1, 2}, other[] = {3, 2};
	int64_t v[] = {1, 64};

	add_locations(p);
	assert_int_equal(profile__add_sample(p, 10, 11, "worker", "app", stack, 2, v, false), 0);
	stack[0] = 1; /* the sample owns a copy; reusing the caller's array is fine */
	assert_int_equal(profile__add_sample(p, 10, 11, "worker", "app", stack, 2, v, false), 0);
	assert_int_equal(p->nsamples, 1);
	assert_int_equal(p->samples[0].values[0], 2);
	assert_int_equal(p->samples[0].values[1], 128);

	/* Any difference in pid, tid, comm, process, stack or completeness keeps them apart. */
	assert_int_equal(profile__add_sample(p, 10, 12, "worker", "app", stack, 2, v, false), 0);
	assert_int_equal(profile__add_sample(p, 20, 11, "worker", "app", stack, 2, v, false), 0);
	assert_int_equal(profile__add_sample(p, 10, 11, "main", "app", stack, 2, v, false), 0);
	assert_int_equal(profile__add_sample(p, 10, 11, "worker", "app2", stack, 2, v, false), 0);
	assert_int_equal(profile__add_sample(p, 10, 11, "worker", "app", other, 2, v, false), 0);
	assert_int_equal(profile__add_sample(p, 10, 11, "worker", "app", stack, 1, v, false), 0);
	assert_int_equal(profile__add_sample(p, 10, 11, "worker", "app", stack, 2, v, true), 0);
	assert_int_equal(p->nsamples, 8);
	assert_true(p->samples[7].partial);
	assert_int_equal(p->samples[6].nlocs, 1);
	assert_int_equal(p->samples[0].values[1], 128);

	/* An empty stack is a sample too (the stack was lost, the bytes were not). */
	assert_int_equal(profile__add_sample(p, 10, 11, "worker", "app", NULL, 0, v, false), 0);
	assert_int_equal(profile__add_sample(p, 10, 11, "worker", "app", NULL, 0, v, false), 0);
	assert_int_equal(p->nsamples, 9);
	assert_int_equal(p->samples[8].values[0], 2);
}

/* A state label (offcpu) is part of a sample's identity: equal states merge, others do not. */
static void test_profile__samples_state_kept_apart(void **state)
{
	struct profile *p = *state;
	uint32_t stack[] = {1, 2};
	int64_t v[] = {1, 64};
	char copy[] = "blocked"; /* another pointer, the same text: interned to one */

	add_locations(p);
	assert_int_equal(
		profile__add_sample_state(p, 10, 11, "w", "app", stack, 2, v, false, "blocked"), 0);
	assert_int_equal(profile__add_sample_state(p, 10, 11, "w", "app", stack, 2, v, false, copy),
			 0);
	assert_int_equal(
		profile__add_sample_state(p, 10, 11, "w", "app", stack, 2, v, false, "runnable"),
		0);
	assert_int_equal(profile__add_sample(p, 10, 11, "w", "app", stack, 2, v, false), 0);
	assert_int_equal(p->nsamples, 3);
	assert_string_equal(p->samples[0].state, "blocked");
	assert_int_equal(p->samples[0].values[0], 2);
	assert_string_equal(p->samples[1].state, "runnable");
	assert_null(p->samples[2].state);
}

static void test_profile__samples_merge_after_growth(void **state)
{
	struct profile *p = *state;
	int64_t v[] = {1, 8};

	add_locations(p);
	for (int round = 0; round < 3; round++)
		for (uint32_t i = 0; i < 5000; i++) {
			uint32_t stack[] = {1 + i % 3, 2, 3};

			assert_int_equal(
				profile__add_sample(p, i / 3, i, "t", "proc", stack, 3, v, false),
				0);
		}
	assert_int_equal(p->nsamples, 5000);
	for (uint32_t i = 0; i < p->nsamples; i++) {
		assert_int_equal(p->samples[i].values[0], 3);
		assert_int_equal(p->samples[i].values[1], 24);
		assert_int_equal(p->samples[i].tid, i);
	}
}

static void test_profile__sample_rejects_unknown_location(void **state)
{
	struct profile *p = *state;
	uint32_t stack[] = {1, 4};
	int64_t v[] = {1, 1};

	add_locations(p);
	assert_int_equal(profile__add_sample(p, 1, 1, "a", "a", stack, 2, v, false), -EINVAL);
	stack[1] = 0;
	assert_int_equal(profile__add_sample(p, 1, 1, "a", "a", stack, 2, v, false), -EINVAL);
	assert_int_equal(p->nsamples, 0);
}

static void test_profile__location_name(void **state)
{
	struct profile *p = *state;
	struct profile_mapping m = {
		.start = 0x7f0000000000,
		.limit = 0x7f0000100000,
		.file = "/lib/x86_64-linux-gnu/libc.so.6",
	};
	uint32_t mid, fid, named, bare, mapped, noname;
	char buf[128];

	assert_int_equal(profile__mapping(p, &mid, &m), 0);
	assert_int_equal(profile__function(p, &fid, "std::vector<int>::push_back",
					   "_ZNSt6vectorIiE9push_backE", "", 0),
			 0);
	assert_int_equal(profile__location(p, &named, 0x7f0000001000, mid, fid, 0), 0);
	assert_int_equal(profile__location(p, &bare, 0xdeadbeef, 0, 0, 0), 0);
	assert_int_equal(profile__location(p, &mapped, 0x7f0000001234, mid, 0, 0), 0);
	assert_int_equal(profile__function(p, &fid, "", "raw_sym", "", 0), 0);
	assert_int_equal(profile__location(p, &noname, 0x7f0000002000, mid, fid, 0), 0);

	assert_string_equal(profile__location_name(p, named, buf, sizeof(buf)),
			    "std::vector<int>::push_back");
	assert_string_equal(profile__location_name(p, bare, buf, sizeof(buf)),
			    "[unknown] 0xdeadbeef");
	/* A file's frame without a function: its file offset, never the address. */
	assert_string_equal(profile__location_name(p, mapped, buf, sizeof(buf)),
			    "libc.so.6+0x1234");
	assert_string_equal(profile__location_name(p, noname, buf, sizeof(buf)), "raw_sym");
	/* Truncated rather than overflowed. */
	assert_string_equal(profile__location_name(p, mapped, buf, 10), "libc.so.6");
}

static void test_profile__comments_and_counters(void **state)
{
	struct profile *p = *state;

	assert_int_equal(profile__add_comment(p, "cmdline: %s -p %d", "bpftrace-prof", 42), 0);
	assert_int_equal(profile__add_counter(p, "ringbuf_full", "events lost", 0), 0);
	assert_int_equal(profile__add_counter(p, "unknown_free", "frees never seen", 7), 0);
	assert_int_equal(p->ncomments, 1);
	assert_string_equal(p->comments[0], "cmdline: bpftrace-prof -p 42");
	assert_int_equal(p->ncounters, 2);
	assert_string_equal(p->counters[1].name, "unknown_free");
	assert_string_equal(p->counters[1].desc, "frees never seen");
	assert_int_equal(p->counters[1].value, 7);
}

int main(void)
{
#define T(name) cmocka_unit_test_setup_teardown(name, setup, teardown)
	const struct CMUnitTest tests[] = {
		T(test_profile__new_sets_mode),
		T(test_profile__intern_null_is_empty),
		T(test_profile__add_type_limit),
		T(test_profile__mappings_dedup),
		T(test_profile__mapping_learns_symbols_later),
		T(test_profile__functions_dedup),
		T(test_profile__locations_dedup),
		T(test_profile__location_rejects_unknown_ids),
		T(test_profile__samples_merge),
		T(test_profile__samples_state_kept_apart),
		T(test_profile__samples_merge_after_growth),
		T(test_profile__sample_rejects_unknown_location),
		T(test_profile__location_name),
		T(test_profile__comments_and_counters),
	};
#undef T

	return cmocka_run_group_tests_name("profile", tests, NULL, NULL);
}
