// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "export/svg.h"
#include "profile/profile.h"

/* Locations: 1 main, 2 a, 3 b, 4 a kernel function, 5 a Python frame (no address), 6 malloc,
 * 7 c, 8 a name full of markup. */
static int setup(void **state)
{
	struct profile_mapping kernel = {
		.start = 0xffff0000, .limit = 0xffffffff, .file = "[kernel.kallsyms]"};
	struct profile_mapping exe = {.start = 0x1000, .limit = 0x9000, .file = "/bin/app"};
	uint32_t mk, me, fn, id;
	struct profile *p;
	int err = 0;

	if (profile__new(&p, "cpu"))
		return -1;
	err |= profile__add_type(p, "samples", "count");
	err |= profile__add_type(p, "cpu", "nanoseconds");
	p->default_type = 1;
	err |= profile__mapping(p, &mk, &kernel);
	err |= profile__mapping(p, &me, &exe);
	err |= profile__function(p, &fn, "main", "main", "app.c", 10);
	err |= profile__location(p, &id, 0x1100, me, fn, 12);
	err |= profile__function(p, &fn, "a", "a", "app.c", 20);
	err |= profile__location(p, &id, 0x1200, me, fn, 21);
	err |= profile__function(p, &fn, "b", "b", "", 0);
	err |= profile__location(p, &id, 0x1300, me, fn, 0);
	err |= profile__function(p, &fn, "do_syscall_64", "do_syscall_64", "", 0);
	err |= profile__location(p, &id, 0xffff1000, mk, fn, 0);
	err |= profile__function(p, &fn, "handler", "handler", "web.py", 7);
	err |= profile__location(p, &id, 0, 0, fn, 9);
	err |= profile__function(p, &fn, "malloc", "malloc", "", 0);
	err |= profile__location(p, &id, 0x1400, me, fn, 0);
	err |= profile__function(p, &fn, "c", "c", "", 0);
	err |= profile__location(p, &id, 0x1500, me, fn, 0);
	err |= profile__function(p, &fn, "<script>&\"x'</script>\xff", "x", "", 0);
	err |= profile__location(p, &id, 0x1600, me, fn, 0);
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

/* A sample of process "app" worth `samples` and 10 ns per sample. */
static void add(struct profile *p, const uint32_t *stack, uint32_t n, int64_t samples)
{
	int64_t v[] = {samples, samples * 10};

	assert_int_equal(profile__add_sample(p, 1, 1, "app", "app", stack, n, v, 0), 0);
}

static void expect_frame(const struct svg_frame *f, const char *name, uint32_t parent,
			 uint32_t depth, int64_t value, double x, double width)
{
	assert_string_equal(f->name, name);
	assert_int_equal(f->parent, parent);
	assert_int_equal(f->depth, depth);
	assert_int_equal(f->value, value);
	assert_true(f->x == x);
	assert_true(f->width == width);
}

static void test_svg__layout_exact_rectangles(void **state)
{
	struct profile *p = *state;
	struct svg_layout *l;

	/* main;a x3 and main;b x1 (leaf first), in an order the layout must not keep */
	add(p, (uint32_t[]){3, 1}, 2, 1);
	add(p, (uint32_t[]){2, 1}, 2, 2);
	add(p, (uint32_t[]){2, 1}, 2, 1);
	assert_int_equal(svg__layout(&l, p, 1, 0), 0);
	assert_int_equal(l->total, 40);
	assert_int_equal(l->nframes, 5);
	assert_int_equal(l->max_depth, 3);
	assert_int_equal(l->merged, 0);
	/* 1180 px for 40 ns: 29.5 px each */
	expect_frame(&l->frames[0], "all", 0, 0, 40, 0, 1180);
	expect_frame(&l->frames[1], "app", 0, 1, 40, 0, 1180);
	expect_frame(&l->frames[2], "main", 1, 2, 40, 0, 1180);
	expect_frame(&l->frames[3], "a", 2, 3, 30, 0, 885);
	expect_frame(&l->frames[4], "b", 2, 3, 10, 885, 295);
	assert_int_equal(l->frames[0].kind, SVG_KIND_ROOT);
	assert_int_equal(l->frames[1].kind, SVG_KIND_PROCESS);
	assert_int_equal(l->frames[3].kind, SVG_KIND_NATIVE);
	assert_string_equal(l->frames[3].file, "app.c");
	assert_int_equal(l->frames[3].line, 21);
	assert_string_equal(l->frames[4].file, "");
	svg__layout_free(l);

	/* the other type: samples, 4 in all */
	assert_int_equal(svg__layout(&l, p, 0, 0), 0);
	assert_int_equal(l->total, 4);
	expect_frame(&l->frames[3], "a", 2, 3, 3, 0, 885);
	svg__layout_free(l);
	assert_int_equal(svg__layout(&l, p, 2, 0), -EINVAL);
}

static void test_svg__narrow_frames_merged_into_other(void **state)
{
	struct profile *p = *state;
	struct svg_layout *l;

	add(p, (uint32_t[]){2, 1}, 2, 998);
	add(p, (uint32_t[]){3, 1}, 2, 1);
	add(p, (uint32_t[]){7, 3, 1}, 3, 1); /* c under b: goes with b */
	add(p, (uint32_t[]){7, 1}, 2, 1);
	/* 1 % of 1001 samples: b (2) and c (1) are under it, a is not */
	assert_int_equal(svg__layout(&l, p, 0, 0.01), 0);
	assert_int_equal(l->total, 1001);
	assert_int_equal(l->nframes, 5);
	assert_int_equal(l->merged, 2);
	assert_string_equal(l->frames[3].name, "a");
	assert_string_equal(l->frames[4].name, "other");
	assert_int_equal(l->frames[4].kind, SVG_KIND_OTHER);
	assert_int_equal(l->frames[4].merged, 2);
	assert_int_equal(l->frames[4].value, 3);
	assert_int_equal(l->frames[4].parent, 2);
	assert_true(l->frames[4].x == 998.0 * 1180 / 1001);
	assert_true(l->frames[4].width == 3.0 * 1180 / 1001);
	svg__layout_free(l);

	/* exactly at the share is not under it: 1/1001 of 1001 keeps the 1-sample c */
	assert_int_equal(svg__layout(&l, p, 0, 1.0 / 1001), 0);
	assert_int_equal(l->merged, 0);
	assert_int_equal(l->nframes, 7);
	svg__layout_free(l);
}

static void test_svg__kinds_and_skipped_negatives(void **state)
{
	struct profile *p = *state;
	struct svg_layout *l;
	int64_t neg[] = {-5, -50};

	add(p, (uint32_t[]){4, 1}, 2, 1); /* main -> kernel */
	add(p, (uint32_t[]){6, 5}, 2, 1); /* python handler -> malloc */
	assert_int_equal(profile__add_sample(p, 2, 2, "t", "other", (uint32_t[]){1}, 1, neg, 0), 0);
	assert_int_equal(svg__layout(&l, p, 0, 0), 0);
	assert_int_equal(l->skipped, 1);
	assert_int_equal(l->total, 2);
	/* all, app, handler, malloc, main, do_syscall_64 (siblings by name) */
	assert_int_equal(l->nframes, 6);
	assert_string_equal(l->frames[2].name, "handler");
	assert_int_equal(l->frames[2].kind, SVG_KIND_INTERP);
	assert_int_equal(l->frames[2].line, 9);
	assert_int_equal(l->frames[3].kind, SVG_KIND_ALLOC);
	assert_int_equal(l->frames[3].parent, 2);
	assert_string_equal(l->frames[4].name, "main");
	assert_int_equal(l->frames[5].kind, SVG_KIND_KERNEL);
	svg__layout_free(l);
}

static char *escaped(const char *s, size_t max, size_t *n)
{
	char *buf = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&buf, &len);

	assert_non_null(f);
	*n = svg__escape(f, s, max);
	assert_int_equal(fclose(f), 0);
	return buf;
}

#define RC "\xef\xbf\xbd" /* U+FFFD */

static void expect_escape(const char *in, size_t max, const char *want, size_t chars)
{
	size_t n;
	char *out = escaped(in, max, &n);

	assert_string_equal(out, want);
	assert_int_equal(n, chars);
	free(out);
}

static void test_svg__escape_nasty_names(void **state)
{
	(void)state;
	expect_escape("<a&b>\"'", SIZE_MAX, "&lt;a&amp;b&gt;&quot;&#39;", 7);
	expect_escape("]]>", SIZE_MAX, "]]&gt;", 3);
	/* valid UTF-8 passes: é, €, an emoji */
	expect_escape("\xc3\xa9\xe2\x82\xac\xf0\x9f\x98\x80", SIZE_MAX,
		      "\xc3\xa9\xe2\x82\xac\xf0\x9f\x98\x80", 3);
	/* a stray byte, an overlong '/', a surrogate, a truncated sequence, past U+10FFFF */
	expect_escape("x\xffy", SIZE_MAX, "x" RC "y", 3);
	expect_escape("\xc0\xaf", SIZE_MAX, RC RC, 2);
	expect_escape("\xed\xa0\x80", SIZE_MAX, RC RC RC, 3);
	expect_escape("\xe2\x82", SIZE_MAX, RC RC, 2);
	expect_escape("\xf4\x90\x80\x80", SIZE_MAX, RC RC RC RC, 4);
	/* controls and the non-characters XML refuses */
	expect_escape("\x01\t\n\r\x7f", SIZE_MAX, RC RC RC RC RC, 5);
	expect_escape("\xef\xbf\xbe\xef\xbf\xbf", SIZE_MAX, RC RC, 2);
	expect_escape("\xc2\x85", SIZE_MAX, RC, 1); /* C1 NEL */
	/* max counts characters, never splitting one */
	expect_escape("h\xc3\xa9llo", 2, "h\xc3\xa9", 2);
	expect_escape("&&&", 1, "&amp;", 1);
	expect_escape("", SIZE_MAX, "", 0);
	assert_int_equal(svg__chars("h\xff\xc3\xa9"), 3);
	assert_int_equal(svg__chars(""), 0);
}

static char *written(const struct profile *p, const struct svg_opts *o)
{
	char *buf = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&buf, &len);

	assert_non_null(f);
	assert_int_equal(svg__write(p, f, o), 0);
	assert_int_equal(fclose(f), 0);
	return buf;
}

static void test_svg__write_title_escapes_and_layout(void **state)
{
	struct profile *p = *state;
	struct svg_opts o = {.type = 1, .cmdline = "prof -p 1 <&>", .min_share = 0};
	char *out;

	add(p, (uint32_t[]){8, 1}, 2, 3);
	add(p, (uint32_t[]){3, 1}, 2, 1);
	p->duration_nanos = 2000000000;
	assert_int_equal(profile__add_counter(p, "lost_samples", "samples lost", 7), 0);
	assert_int_equal(profile__add_counter(p, "zero_counter", "nothing", 0), 0);
	assert_int_equal(profile__add_stat(p, "tables_built", "bookkeeping", 5), 0);
	assert_int_equal(profile__type_index(p, "samples"), 0);
	assert_int_equal(profile__type_index(p, "cpu"), 1);
	assert_int_equal(profile__type_index(p, "alloc_space"), -ENOENT);

	out = written(p, &o);
	assert_non_null(strstr(out, ">cpu profile: cpu (nanoseconds), total 40 ns, 2.00 s<"));
	assert_non_null(strstr(out, ">command: prof -p 1 &lt;&amp;&gt;<"));
	/* losses only: not the zero counter, not the bookkeeping */
	assert_non_null(strstr(out, ">drops: lost_samples=7<"));
	assert_null(strstr(out, "zero_counter"));
	assert_null(strstr(out, "tables_built"));
	assert_non_null(
		strstr(out, "data-n=\"&lt;script&gt;&amp;&quot;x&#39;&lt;/script&gt;" RC "\">"));
	assert_null(strstr(out, "<script>&"));
	/* the title: name, value and share, file:line */
	assert_non_null(strstr(out, "<title>main\n40 ns (100.00%)\napp.c:12</title>"));
	assert_non_null(strstr(out, "<title>b\n10 ns (25.00%)</title>"));
	/* flame: the root at the bottom (3 levels above it), main's children a level above it,
	 * by name ('<' sorts before 'b') */
	assert_non_null(strstr(out, "id=\"f0\" data-d=\"0\" data-k=\"root\" data-v=\"40\""));
	assert_non_null(strstr(out, "<rect x=\"10.0000\" y=\"138.0\" width=\"1180.0000\""));
	assert_non_null(strstr(out, "<rect x=\"10.0000\" y=\"90.0\" width=\"885.0000\""));
	assert_non_null(strstr(out, "<rect x=\"895.0000\" y=\"90.0\" width=\"295.0000\""));
	free(out);

	o.icicle = true;
	out = written(p, &o);
	assert_non_null(strstr(out, "<rect x=\"10.0000\" y=\"90.0\" width=\"1180.0000\""));
	assert_non_null(strstr(out, "<rect x=\"895.0000\" y=\"138.0\" width=\"295.0000\""));
	free(out);
}

static void test_svg__empty_profile_no_drops(void **state)
{
	struct profile *p = *state;
	struct svg_opts o = {.type = 0, .min_share = SVG_MIN_SHARE};
	char *out = written(p, &o);

	assert_non_null(strstr(out, ">no drops<"));
	assert_non_null(strstr(out, ">no samples<"));
	assert_non_null(strstr(out, ">command: (unknown)<"));
	assert_null(strstr(out, "class=\"f\""));
	free(out);
}

/* A heap whose in-use is under 1 % of its allocations (a server that freed it all) draws
 * alloc_space and says so, unless the type was asked for; at 1 % and over, in-use. */
static void test_svg__tiny_inuse_draws_alloc_space(void **state)
{
	struct svg_opts o = {.type = 3, .min_share = 0};
	struct profile *p;
	uint32_t fn, id;
	char *out;

	(void)state;
	assert_int_equal(profile__new(&p, "heap"), 0);
	assert_int_equal(profile__add_type(p, "alloc_objects", "count"), 0);
	assert_int_equal(profile__add_type(p, "alloc_space", "bytes"), 0);
	assert_int_equal(profile__add_type(p, "inuse_objects", "count"), 0);
	assert_int_equal(profile__add_type(p, "inuse_space", "bytes"), 0);
	p->default_type = 3;
	assert_int_equal(profile__function(p, &fn, "handle", "handle", "", 0), 0);
	assert_int_equal(profile__location(p, &id, 0x100, 0, fn, 0), 0);
	assert_int_equal(profile__add_sample(p, 1, 1, "t", "srv", &id, 1,
					     (int64_t[]){100, 100000, 1, 999}, false),
			 0);
	out = written(p, &o);
	assert_non_null(strstr(out, ">heap profile: alloc_space (bytes), total 97.66 KiB; drawn "
				    "instead of inuse_space (999 bytes, under 1% of it: freed "
				    "while attached)<"));
	free(out);
	o.exact_type = true;
	out = written(p, &o);
	assert_non_null(strstr(out, ">heap profile: inuse_space (bytes), total 999 bytes<"));
	free(out);
	o.exact_type = false;
	p->samples[0].values[3] = 1000;
	out = written(p, &o);
	assert_non_null(strstr(out, ">heap profile: inuse_space (bytes), total 1000 bytes<"));
	assert_null(strstr(out, "drawn instead"));
	free(out);
	profile__free(p);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_svg__layout_exact_rectangles, setup, teardown),
		cmocka_unit_test_setup_teardown(test_svg__narrow_frames_merged_into_other, setup,
						teardown),
		cmocka_unit_test_setup_teardown(test_svg__kinds_and_skipped_negatives, setup,
						teardown),
		cmocka_unit_test(test_svg__escape_nasty_names),
		cmocka_unit_test_setup_teardown(test_svg__write_title_escapes_and_layout, setup,
						teardown),
		cmocka_unit_test_setup_teardown(test_svg__empty_profile_no_drops, setup, teardown),
		cmocka_unit_test(test_svg__tiny_inuse_draws_alloc_space),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
