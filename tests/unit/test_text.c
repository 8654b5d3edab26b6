// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "profile/profile.h"
#include "export/text.h"

enum { L_MAIN = 1, L_LEAK, L_MALLOC, L_RECURSE, L_UNKNOWN };

/* A heap profile: inuse_space is the first table, alloc_space the second. */
static int setup(void **state)
{
	uint32_t fn, id;
	struct profile *p;
	int err = 0;

	if (profile__new(&p, "heap"))
		return -1;
	err |= profile__add_type(p, "alloc_objects", "count");
	err |= profile__add_type(p, "alloc_space", "bytes");
	err |= profile__add_type(p, "inuse_objects", "count");
	err |= profile__add_type(p, "inuse_space", "bytes");
	p->default_type = 3;
	p->text_types[0] = 3;
	p->text_types[1] = 1;
	p->ntext_types = 2;
	err |= profile__function(p, &fn, "main", "main", "", 0);
	err |= profile__location(p, &id, 0x100, 0, fn, 0);
	err |= profile__function(p, &fn, "leak_pages", "leak_pages", "", 0);
	err |= profile__location(p, &id, 0x200, 0, fn, 0);
	err |= profile__function(p, &fn, "malloc", "malloc", "", 0);
	err |= profile__location(p, &id, 0x300, 0, fn, 0);
	err |= profile__function(p, &fn, "recurse", "recurse", "", 0);
	err |= profile__location(p, &id, 0x400, 0, fn, 0);
	err |= profile__location(p, &id, 0xdead, 0, 0, 0);
	err |= profile__add_counter(p, "ringbuf_full", "events lost: ring buffer full", 0);
	err |= profile__add_counter(p, "unknown_free", "frees of blocks never seen", 3);
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

static char *report(const struct profile *p, unsigned top)
{
	char *buf = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&buf, &len);

	assert_non_null(f);
	assert_int_equal(text__write(p, f, top), 0);
	assert_int_equal(fclose(f), 0);
	return buf;
}

static void add(struct profile *p, uint32_t pid, uint32_t tid, const char *process,
		const uint32_t *stack, uint32_t n, int64_t objects, int64_t bytes, int64_t inuse)
{
	int64_t v[] = {objects, bytes, inuse ? objects : 0, inuse};

	assert_int_equal(profile__add_sample(p, pid, tid, "t", process, stack, n, v, false), 0);
}

/* The whole line of out that contains needle (a copy), or fail. */
static char *line_with(const char *out, const char *needle)
{
	const char *hit = strstr(out, needle), *start, *end;

	if (!hit)
		fail_msg("no line with \"%s\" in:\n%s", needle, out);
	for (start = hit; start > out && start[-1] != '\n'; start--)
		;
	end = strchr(hit, '\n');
	return strndup(start, end ? (size_t)(end - start) : strlen(start));
}

/* The line of the first table after `after` whose last column is fn. */
static char *row(const char *out, const char *after, const char *fn)
{
	char needle[128];
	const char *from = strstr(out, after);

	assert_non_null(from);
	snprintf(needle, sizeof(needle), "%%  %s\n", fn);
	return line_with(from, needle);
}

static void test_text__totals_per_process_ordered_by_pid(void **state)
{
	struct profile *p = *state;
	char *out, *l;

	add(p, 200, 200, "second", (uint32_t[]){L_MALLOC, L_MAIN}, 2, 1, 100, 100);
	add(p, 100, 100, "leaky", (uint32_t[]){L_MALLOC, L_LEAK, L_MAIN}, 3, 1000, 4096000,
	    4096000);
	add(p, 100, 101, "leaky", (uint32_t[]){L_MALLOC, L_MAIN}, 2, 100000, 6400000, 0);
	add(p, 100, 102, "leaky", (uint32_t[]){L_MALLOC, L_MAIN}, 2, 1, 64, 0);
	out = report(p, 10);
	assert_non_null(strstr(out, "pid 100 (leaky): "));
	assert_non_null(strstr(out, "pid 200 (second): "));
	assert_true(strstr(out, "pid 100 (") < strstr(out, "pid 200 ("));
	l = line_with(out, "pid 100 (leaky): ");
	assert_non_null(strstr(l, "alloc_objects 101001"));
	assert_non_null(strstr(l, "alloc_space 10.01 MiB (10496064 bytes)"));
	assert_non_null(strstr(l, "inuse_objects 1000"));
	assert_non_null(strstr(l, "inuse_space 3.91 MiB (4096000 bytes)"));
	assert_non_null(strstr(l, "3 threads"));
	free(l);
	l = line_with(out, "pid 200 (second): ");
	assert_non_null(strstr(l, "inuse_space 100 bytes"));
	assert_non_null(strstr(l, "1 thread"));
	free(l);
	free(out);
}

/* The summary goes to the operator's terminal: process and function names come from the
 * target and are escaped; valid UTF-8 stays. */
static void test_text__target_names_escaped(void **state)
{
	struct profile *p = *state;
	uint32_t fn, id;
	char *out, *l;

	assert_int_equal(profile__function(p, &fn, "f\x1b]0;pwn\x07\xc3\xa9\xff", "x", "", 0), 0);
	assert_int_equal(profile__location(p, &id, 0x500, 0, fn, 0), 0);
	add(p, 300, 300, "\x1b[31mred\n", (uint32_t[]){id, L_MAIN}, 2, 1, 100, 100);
	out = report(p, 10);
	assert_null(strchr(out, '\x1b'));
	l = line_with(out, "pid 300 (");
	assert_non_null(strstr(l, "pid 300 (\\x1b[31mred\\x0a): "));
	free(l);
	free(row(out, "top 10 by inuse_space", "f\\x1b]0;pwn\\x07\xc3\xa9\\xff"));
	free(out);
}

static void test_text__top_table_exact_flat_and_cum(void **state)
{
	struct profile *p = *state;
	char *out, *l;

	add(p, 100, 100, "leaky", (uint32_t[]){L_MALLOC, L_LEAK, L_MAIN}, 3, 1000, 4096000,
	    4096000);
	add(p, 100, 100, "leaky", (uint32_t[]){L_UNKNOWN, L_MAIN}, 2, 10, 1024000, 1024000);
	out = report(p, 10);
	/* First table: inuse_space, total 5120000. */
	l = row(out, "top 10 by inuse_space", "malloc");
	assert_non_null(strstr(l, " 4096000  80.00%  "));
	free(l);
	l = row(out, "top 10 by inuse_space", "leak_pages");
	assert_non_null(strstr(l, " 0   0.00%  "));
	assert_non_null(strstr(l, " 4096000  80.00%"));
	free(l);
	l = row(out, "top 10 by inuse_space", "main");
	assert_non_null(strstr(l, " 5120000 100.00%"));
	free(l);
	l = row(out, "top 10 by inuse_space", "[unknown] 0xdead");
	assert_non_null(strstr(l, " 1024000  20.00%"));
	free(l);
	/* Then alloc_space. */
	assert_true(strstr(out, "top 10 by inuse_space") < strstr(out, "top 10 by alloc_space"));
	free(out);
}

static void test_text__rows_sorted_by_flat_and_limited(void **state)
{
	struct profile *p = *state;
	char *out;

	add(p, 1, 1, "a", (uint32_t[]){L_MALLOC, L_MAIN}, 2, 1, 10, 10);
	add(p, 1, 1, "a", (uint32_t[]){L_LEAK, L_MAIN}, 2, 1, 30, 30);
	add(p, 1, 1, "a", (uint32_t[]){L_RECURSE, L_MAIN}, 2, 1, 20, 20);
	out = report(p, 2);
	assert_non_null(strstr(out, "%  leak_pages\n"));
	assert_non_null(strstr(out, "%  recurse\n"));
	assert_null(strstr(out, "%  malloc\n"));
	assert_null(strstr(out, "%  main\n"));
	assert_true(strstr(out, "%  leak_pages\n") < strstr(out, "%  recurse\n"));
	free(out);
}

static void test_text__recursion_counted_once_in_cum(void **state)
{
	struct profile *p = *state;
	char *out, *l;

	add(p, 1, 1, "a", (uint32_t[]){L_RECURSE, L_RECURSE, L_RECURSE, L_MAIN}, 4, 1, 300, 300);
	add(p, 1, 1, "a", (uint32_t[]){L_MALLOC, L_RECURSE, L_MAIN}, 3, 1, 100, 100);
	out = report(p, 10);
	l = row(out, "by inuse_space", "recurse");
	assert_non_null(strstr(l, " 300  75.00% "));
	assert_non_null(strstr(l, " 400 100.00%"));
	free(l);
	free(out);
}

static void test_text__top_zero_prints_totals_and_counters_only(void **state)
{
	struct profile *p = *state;
	char *out;

	add(p, 1, 1, "a", (uint32_t[]){L_MALLOC, L_MAIN}, 2, 1, 4096, 4096);
	out = report(p, 0);
	assert_non_null(strstr(out, "pid 1 (a): "));
	assert_null(strstr(out, "flat"));
	assert_null(strstr(out, "malloc"));
	assert_non_null(strstr(out, "unknown_free: 3"));
	free(out);
}

static void test_text__only_nonzero_drops_printed(void **state)
{
	char *out = report(*state, 10);

	assert_non_null(strstr(out, "\ndrops:\n"));
	assert_null(strstr(out, "ringbuf_full"));
	assert_non_null(strstr(out, "  unknown_free: 3  frees of blocks never seen\n"));
	assert_null(strstr(out, "no drops"));
	free(out);
}

static void test_text__no_drops_said_once(void **state)
{
	struct profile *p;
	char *out;

	(void)state;
	assert_int_equal(profile__new(&p, "heap"), 0);
	assert_int_equal(profile__add_type(p, "inuse_space", "bytes"), 0);
	assert_int_equal(profile__add_counter(p, "ringbuf_full", "events lost", 0), 0);
	assert_int_equal(profile__add_stat(p, "unwind_tables_built", "tables", 4), 0);
	out = report(p, 10);
	assert_non_null(strstr(out, "\nno drops\n"));
	assert_null(strstr(out, "drops:"));
	assert_null(strstr(out, "ringbuf_full"));
	assert_null(strstr(out, "unwind_tables_built"));
	free(out);
	profile__free(p);
}

static void test_text__time_units(void **state)
{
	struct profile *p;
	uint32_t fn, id;
	int64_t v[2] = {7, 1500000000};
	char *out, *l;

	(void)state;
	assert_int_equal(profile__new(&p, "calls"), 0);
	assert_int_equal(profile__add_type(p, "calls", "count"), 0);
	assert_int_equal(profile__add_type(p, "wall", "nanoseconds"), 0);
	p->text_types[0] = 1;
	p->ntext_types = 1;
	assert_int_equal(profile__function(p, &fn, "app.handler", "", "app.py", 3), 0);
	assert_int_equal(profile__location(p, &id, 0, 0, fn, 4), 0);
	assert_int_equal(profile__add_sample(p, 5, 5, "python3", "python3", &id, 1, v, true), 0);
	v[1] = 2500000;
	assert_int_equal(profile__add_sample(p, 6, 6, "python3", "python3", &id, 1, v, false), 0);
	out = report(p, 10);
	l = line_with(out, "pid 5 (");
	assert_non_null(strstr(l, "calls 7, wall 1.50 s (1500000000 ns), 1 thread"));
	assert_non_null(strstr(l, "1 partial stack"));
	free(l);
	l = line_with(out, "pid 6 (");
	assert_non_null(strstr(l, "wall 2.50 ms (2500000 ns)"));
	free(l);
	/* The tables read as time, not as ten-digit ns. */
	l = row(out, "pid 5", "app.handler");
	assert_non_null(strstr(l, "1.50 s"));
	assert_null(strstr(l, "1500000000"));
	free(l);
	free(out);
	profile__free(p);
}

static void test_text__empty_profile(void **state)
{
	char *out = report(*state, 10);

	assert_non_null(strstr(out, "no samples"));
	free(out);
}

int main(void)
{
#define T(name) cmocka_unit_test_setup_teardown(name, setup, teardown)
	const struct CMUnitTest tests[] = {
		T(test_text__totals_per_process_ordered_by_pid),
		T(test_text__target_names_escaped),
		T(test_text__top_table_exact_flat_and_cum),
		T(test_text__rows_sorted_by_flat_and_limited),
		T(test_text__recursion_counted_once_in_cum),
		T(test_text__top_zero_prints_totals_and_counters_only),
		T(test_text__only_nonzero_drops_printed),
		cmocka_unit_test(test_text__time_units),
		cmocka_unit_test(test_text__no_drops_said_once),
		T(test_text__empty_profile),
	};
#undef T

	return cmocka_run_group_tests_name("text", tests, NULL, NULL);
}
