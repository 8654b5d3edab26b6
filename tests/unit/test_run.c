// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * Every counter of include/prof_common.h's lists has a name and reaches both outputs: the text
 * report's "drops" lines and the pprof comments.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>
#include <zlib.h>

#include "agg/calls_agg.h"
#include "agg/heap_agg.h"
#include "export/pprof.h"
#include "profile/profile.h"
#include "profile/run.h"
#include "sym/symbolizer.h"
#include "export/text.h"
#include "unwind/unwinder.h"

#define BASE 7000 /* counter i gets BASE + i: non-zero, and each value tells its counter */

static struct profile *new_profile(void)
{
	struct profile *p = NULL;

	assert_int_equal(profile__new(&p, "heap"), 0);
	assert_int_equal(profile__add_type(p, "inuse_space", "bytes"), 0);
	p->text_types[0] = 0;
	p->ntext_types = 1;
	return p;
}

static char *text_of(const struct profile *p)
{
	char *buf = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&buf, &len);

	assert_non_null(f);
	assert_int_equal(text__write(p, f, 10), 0);
	assert_int_equal(fclose(f), 0);
	return buf;
}

/* The decompressed pprof bytes (strings appear verbatim in the string table). */
static char *pprof_of(const struct profile *p, size_t *len)
{
	char path[] = "/tmp/test_report.XXXXXX";
	size_t cap = 1 << 20;
	char *buf = malloc(cap);
	int fd = mkstemp(path), n;
	FILE *f;
	gzFile gz;

	assert_non_null(buf);
	assert_true(fd >= 0);
	f = fdopen(fd, "w");
	assert_non_null(f);
	assert_int_equal(pprof__write(p, f), 0);
	assert_int_equal(fclose(f), 0);
	gz = gzopen(path, "rb");
	assert_non_null(gz);
	n = gzread(gz, buf, (unsigned)cap);
	assert_true(n > 0 && (size_t)n < cap);
	gzclose(gz);
	unlink(path);
	*len = (size_t)n;
	return buf;
}

/* Each counter of p is named, named once, and printed with its value in both outputs. */
static void check_written(const struct profile *p, uint32_t n)
{
	char *text = text_of(p), line[256], comment[256];
	size_t plen;
	char *pb = pprof_of(p, &plen);

	assert_int_equal(p->ncounters, n);
	for (uint32_t i = 0; i < n; i++) {
		const struct profile_counter *c = &p->counters[i];

		assert_non_null(c->name);
		assert_true(c->name[0] != '\0');
		assert_non_null(c->desc);
		assert_true(c->desc[0] != '\0');
		for (uint32_t j = 0; j < i; j++)
			assert_string_not_equal(p->counters[j].name, c->name);
		assert_int_equal(c->value, BASE + i);
		/* The summary shows losses only; event totals go to the pprof comments, our own
		 * bookkeeping to neither. */
		snprintf(line, sizeof(line), "  %s: %u  %s\n", c->name, BASE + i, c->desc);
		if (profile_counter__is_drop(c) && !strstr(text, line))
			fail_msg("text report lacks \"%s\"", line);
		if (!profile_counter__is_drop(c) && strstr(text, line))
			fail_msg("text report shows \"%s\" as a drop", line);
		snprintf(comment, sizeof(comment), "%s=%u (%s)", c->name, BASE + i, c->desc);
		if (c->kind != PROF_KIND_BOOK && !memmem(pb, plen, comment, strlen(comment)))
			fail_msg("pprof comments lack \"%s\"", comment);
		if (c->kind == PROF_KIND_BOOK && memmem(pb, plen, comment, strlen(comment)))
			fail_msg("pprof comments show bookkeeping \"%s\"", comment);
	}
	free(text);
	free(pb);
}

static void test_run__every_bpf_counter_named_and_written(void **state)
{
	struct profile *p = new_profile();
	uint64_t vals[PROF_CNT__COUNT];

	(void)state;
	for (uint32_t i = 0; i < PROF_CNT__COUNT; i++)
		vals[i] = BASE + i;
	assert_int_equal(run__add_bpf_counters(p, vals), 0);
	check_written(p, PROF_CNT__COUNT);
	profile__free(p);
}

static void test_run__every_user_stat_named_and_written(void **state)
{
	struct profile *p = new_profile();
	struct heap_agg_stats hs = {0};
	struct calls_agg_stats cs = {0};
	struct run_collect_stats rs = {0};
	struct symbolizer_stats ss = {0};
	struct unwinder_stats us = {0};
	uint64_t v = BASE;

	(void)state;
#define SET_HS(f, n, d, k) hs.f = v++;
#define SET_CS(f, n, d, k) cs.f = v++;
#define SET_RS(f, n, d, k) rs.f = v++;
#define SET_SS(f, n, d, k) ss.f = v++;
#define SET_US(f, n, d, k) us.f = v++;
	PROF_HEAP_STATS(SET_HS)
	PROF_CALL_STATS(SET_CS)
	PROF_COLLECT_STATS(SET_RS)
	PROF_SYMBOLIZER_STATS(SET_SS)
	PROF_UNWINDER_STATS(SET_US)
	assert_int_equal(run__add_heap_stats(p, &hs), 0);
	assert_int_equal(run__add_call_stats(p, &cs), 0);
	assert_int_equal(run__add_collect_stats(p, &rs), 0);
	assert_int_equal(run__add_symbolizer_stats(p, &ss), 0);
	assert_int_equal(run__add_unwinder_stats(p, &us), 0);
	check_written(p, (uint32_t)(v - BASE));
	profile__free(p);
}

/* --push's counters reach the profile through the run, every one of its list. */
static void test_run__push_stats_applied(void **state)
{
#define PUSH_N(f, n, d, k) +1
	uint64_t vals[0 PROF_PUSH_STATS(PUSH_N)];
#undef PUSH_N
	struct profile_run run = {.cmdline = "bpftrace-prof -a --push x", .push = vals};
	struct profile *p = new_profile();
	/* Before --push's: the BPF counters, the consumer's and the report's lists. */
#define ONE(f, n, d, k) +1
	const uint32_t others = PROF_CNT__COUNT PROF_COLLECT_STATS(ONE) PROF_REPORT_STATS(ONE);
#undef ONE
	uint32_t before;

	(void)state;
	for (size_t i = 0; i < sizeof(vals) / sizeof(vals[0]); i++)
		vals[i] = BASE + i;
	before = p->ncounters;
	assert_int_equal(profile_run__apply(&run, p), 0);
	assert_int_equal(p->ncounters - before, others + sizeof(vals) / sizeof(vals[0]));
	assert_string_equal(p->counters[p->ncounters - 1].name, "push_sent_bytes");
	assert_int_equal(p->counters[p->ncounters - 1].value,
			 BASE + sizeof(vals) / sizeof(vals[0]) - 1);
	profile__free(p);
}

/* The BPF failure paths that used to count nothing each have their own counter. */
static void test_run__bpf_failure_paths_counted(void **state)
{
	static const char *const needed[] = {
		"heap_read_fail", /* heap: posix_memalign result unreadable */
		"cxx_throws",	  /* heap: operator new left by an exception */
		"call_arg_fail",  /* calls: bpf_usdt_arg failed */
		"call_lost_full", /* calls: lost-thread map update failed */
	};
	struct profile *p = new_profile();
	uint64_t vals[PROF_CNT__COUNT] = {0};

	(void)state;
	assert_int_equal(run__add_bpf_counters(p, vals), 0);
	for (size_t i = 0; i < sizeof(needed) / sizeof(needed[0]); i++) {
		bool found = false;

		for (uint32_t j = 0; j < p->ncounters; j++)
			found |= !strcmp(p->counters[j].name, needed[i]);
		if (!found)
			fail_msg("no counter named %s", needed[i]);
	}
	profile__free(p);
}

/* -v's "dropped" (make bench's loss column) sums the loss counters, never the bookkeeping. */
static void test_run__bpf_losses_leave_out_bookkeeping(void **state)
{
	uint64_t vals[PROF_CNT__COUNT] = {0};

	(void)state;
	vals[PROF_CNT_PY_FRAMES] = 1467931;
	vals[PROF_CNT_UNWIND_FP_FRAMES] = 40;
	vals[PROF_CNT_PENDING_JOINED] = 3;
	assert_int_equal(run__bpf_losses(vals), 0);
	vals[PROF_CNT_RINGBUF_FULL] = 5;
	vals[PROF_CNT_UNWIND_NO_TABLE_NEVER] = 4;
	vals[PROF_CNT_UNWIND_NO_TABLE_YET] = 3;
	assert_int_equal(run__bpf_losses(vals), 12);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_run__bpf_losses_leave_out_bookkeeping),
		cmocka_unit_test(test_run__every_bpf_counter_named_and_written),
		cmocka_unit_test(test_run__every_user_stat_named_and_written),
		cmocka_unit_test(test_run__bpf_failure_paths_counted),
		cmocka_unit_test(test_run__push_stats_applied),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
