// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "agg/collect.h"
#include "export/status.h"
#include "prof_common.h"
#include "util/log.h"

/* The start lines of plan p. */
static char *lines(const struct status_plan *p)
{
	char *text = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&text, &len);

	assert_non_null(f);
	assert_int_equal(status__start_lines(f, p), 0);
	assert_int_equal(fclose(f), 0);
	return text;
}

/* The default of -- CMD: exact heap tracing, and its cost said; Ctrl-C without -d. */
static void test_status__cmd_exact_heap_says_cost(void **state)
{
	const char *paths[] = {"bpftrace-prof.pb.gz"};
	struct status_plan p = {.modes = MODE_HEAP, .cmd = "sqlite3", .paths = paths, .npaths = 1};
	char *out = lines(&p);

	assert_string_equal(out, "profiling heap (every allocation) of sqlite3 and its children\n"
				 "exact heap tracing: every malloc and free is probed (slows "
				 "allocation-heavy programs several-fold); --sample-bytes N "
				 "samples instead\n"
				 "writing bpftrace-prof.pb.gz at the end; Ctrl-C to stop\n");
	free(out);
}

/*
 * The path taken: -p of a process on its own otel_memory probes has no allocator probe (no
 * cost line, the rate its own); our sampler preloaded into -- CMD says so; a mix keeps the cost.
 */
static void test_status__heap_path_taken(void **state)
{
	const uint32_t pids[] = {12, 34};
	const char *paths[] = {"p.pb.gz"};
	struct status_plan p = {.modes = MODE_HEAP,
				.pids = pids,
				.npids = 1,
				.heap_otel = 1,
				.paths = paths,
				.npaths = 1,
				.duration = 1};
	char *out = lines(&p);

	(void)state;
	assert_string_equal(out, "profiling heap (through the program's own otel_memory probes, "
				 "its own sampling: no allocator probe) of pid 12 for 1 s\n"
				 "writing p.pb.gz at the end\n");
	free(out);
	/* a second process on the allocator probes: probed exactly, the cost said */
	p.npids = 2;
	p.heap_uprobes = 1;
	out = lines(&p);
	assert_non_null(strstr(out, "profiling heap (every allocation) of pids 12, 34"));
	assert_non_null(strstr(out, "exact heap tracing"));
	free(out);
	/* -- CMD whose executable carries the probes, before its image is attached */
	p = (struct status_plan){
		.modes = MODE_HEAP, .cmd = "otel_probes", .cmd_own_probes = true, .duration = 1};
	out = lines(&p);
	assert_non_null(strstr(out, "its own sampling: no allocator probe) of otel_probes and"));
	assert_null(strstr(out, "exact heap tracing"));
	free(out);
	/* the wide scopes probe libc file-wide whatever the processes found so far */
	p = (struct status_plan){.modes = MODE_HEAP, .all = true, .heap_otel = 1, .duration = 1};
	out = lines(&p);
	assert_non_null(strstr(out, "exact heap tracing"));
	free(out);
	p = (struct status_plan){.modes = MODE_HEAP,
				 .cmd = "python3",
				 .sample_bytes = 65536,
				 .heap_preload = true,
				 .heap_otel = 1,
				 .duration = 1};
	out = lines(&p);
	assert_string_equal(out, "profiling heap (sampled in the program by our preloaded sampler: "
				 "about one allocation per 65536 bytes; no allocator probe) of "
				 "python3 and its children for 1 s\n\n");
	free(out);
}

/* -p with names, several modes, -d: the duration instead of Ctrl-C, no cost when sampled. */
static void test_status__pids_modes_duration(void **state)
{
	const uint32_t pids[] = {12, 34};
	const char *names[] = {"nginx", NULL};
	const char *paths[] = {"p.heap.pb.gz", "p.cpu.pb.gz", "p.offcpu.pb.gz"};
	struct status_plan p = {
		.modes = MODE_HEAP | MODE_CPU | MODE_OFFCPU,
		.cpu_hz = 99,
		.sample_bytes = 524288,
		.pids = pids,
		.pid_names = names,
		.npids = 2,
		.duration = 2.5,
		.paths = paths,
		.npaths = 3,
	};
	char *out = lines(&p);

	assert_string_equal(out,
			    "profiling heap (sampled: about one allocation per 524288 bytes), "
			    "cpu (99 Hz) and offcpu of pids 12 (nginx), 34 for 2.5 s\n"
			    "writing p.heap.pb.gz, p.cpu.pb.gz and p.offcpu.pb.gz at the end\n");
	free(out);
}

/* Many pids: the first eight, then how many more. */
static void test_status__many_pids_counted(void **state)
{
	uint32_t pids[11];
	const char *paths[] = {"-"};
	struct status_plan p = {.modes = MODE_CPU,
				.cpu_hz = 49,
				.pids = pids,
				.npids = 11,
				.paths = paths,
				.npaths = 1};
	char *out;

	for (uint32_t i = 0; i < 11; i++)
		pids[i] = 100 + i;
	out = lines(&p);
	assert_string_equal(out, "profiling cpu (49 Hz) of pids 100, 101, 102, 103, 104, 105, 106, "
				 "107 and 3 more\n"
				 "writing to stdout at the end; Ctrl-C to stop\n");
	free(out);
}

/* The wide scopes, continuous mode and push: the URL shown without what may be a secret. */
static void test_status__wide_interval_push(void **state)
{
	struct status_plan p = {
		.modes = MODE_CPU | MODE_CALLS,
		.cpu_hz = 99,
		.container = "4f2a",
		.interval = 10,
		.output_dir = "/var/prof",
		.retain = 6,
		.push_url = "https://u:tok@pyro.example:4040/base?token=s3cret#x",
	};
	char *out = lines(&p);

	assert_string_equal(out, "profiling cpu (99 Hz) and calls of container 4f2a\n"
				 "writing a profile per mode every 10 s to /var/prof/ (keeping the "
				 "newest 6), pushing every 10 s to https://pyro.example:4040/base; "
				 "Ctrl-C to stop\n");
	free(out);
	p.container = NULL;
	p.all = true;
	p.output_dir = NULL;
	out = lines(&p);
	assert_string_equal(out, "profiling cpu (99 Hz) and calls of every process on the host\n"
				 "pushing every 10 s to https://pyro.example:4040/base; Ctrl-C to "
				 "stop\n");
	free(out);
	p.all = false;
	p.cgroup = "/sys/fs/cgroup/unified/system.slice";
	p.push_url = NULL;
	p.modes = MODE_CALLS;
	p.folder = true;
	p.paths = (const char *[]){"trace-dir"};
	p.npaths = 1;
	out = lines(&p);
	assert_string_equal(out, "profiling calls of cgroup /sys/fs/cgroup/unified/system.slice\n"
				 "writing the folder trace-dir at the end; Ctrl-C to stop\n");
	free(out);
}

static void test_status__url_shown(void **state)
{
	char b[128];

	assert_string_equal(status__url_shown(b, sizeof(b), "http://h:1/x/y"), "http://h:1/x/y");
	assert_string_equal(status__url_shown(b, sizeof(b), "http://a@h"), "http://h");
	assert_string_equal(status__url_shown(b, sizeof(b), "https://a:b@h/p?k=v"), "https://h/p");
	assert_string_equal(status__url_shown(b, sizeof(b), "https://h?x@y"), "https://h");
	assert_string_equal(status__url_shown(b, sizeof(b), "https://h/p@q#f"), "https://h/p@q");
}

static void test_status__is_sample(void **state)
{
	uint32_t rec[4] = {0};

	for (uint32_t t = 0; t <= PROF_REC_DUMP_THREAD; t++) {
		bool want = t == PROF_REC_HEAP_ALLOC || t == PROF_REC_HEAP_REALLOC ||
			    t == PROF_REC_CPU_SAMPLE || t == PROF_REC_OFFCPU ||
			    t == PROF_REC_CALL_RETURN;

		rec[0] = t;
		assert_int_equal(status__is_sample(rec, sizeof(rec)), want);
	}
	rec[0] = PROF_REC_CPU_SAMPLE;
	assert_false(status__is_sample(rec, 2)); /* too short to hold a type */
}

static void test_status__format(void **state)
{
	struct status_counts c = {.events = 1234567, .samples = 999, .drops = 1000};
	char b[256];

	assert_string_equal(
		status__format(b, sizeof(b), 65500000000LL, &c, 0),
		"bpftrace-prof: 1:05 elapsed, 1,234,567 events, 999 samples, 1,000 drops");
	c = (struct status_counts){0};
	assert_string_equal(status__format(b, sizeof(b), 3723000000000LL, &c, 200),
			    "bpftrace-prof: 1:02:03 elapsed, 0 events, 0 samples, 0 drops");
	/* Never as wide as the terminal: a wrapped line could not be cleared. */
	assert_string_equal(status__format(b, sizeof(b), 0, &c, 21), "bpftrace-prof: 0:00 ");
	assert_int_equal(strlen(status__format(b, sizeof(b), 0, &c, 1)), 0);
}

/* The line: not before STATUS_DELAY_NS, then at most every STATUS_PERIOD_NS; drawn in place,
 * cleared before a message and at the end, only when shown. */
static void test_status__drawn_and_cleared(void **state)
{
	struct status_counts c = {.events = 3, .samples = 2};
	struct status *s;
	char *text = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&text, &len);
	FILE *saved = stderr;

	assert_non_null(f);
	assert_int_equal(status__new(&s, f, 1000), 0);
	assert_false(status__due(s, 1000 + STATUS_DELAY_NS - 1));
	assert_true(status__due(s, 1000 + STATUS_DELAY_NS));
	status__draw(s, 1000 + STATUS_DELAY_NS, &c);
	assert_false(status__due(s, 1000 + STATUS_DELAY_NS + STATUS_PERIOD_NS - 1));
	assert_true(status__due(s, 1000 + STATUS_DELAY_NS + STATUS_PERIOD_NS));
	/* A message through the log printer (to f, as stderr) clears the line first. */
	stderr = f;
	log__set_verbosity(LOG_WARN);
	pr_note("a message\n");
	pr_note("another\n"); /* nothing left to clear */
	stderr = saved;
	status__free(s); /* nothing shown: nothing written */
	assert_int_equal(fclose(f), 0);
	assert_string_equal(text,
			    "\r\033[Kbpftrace-prof: 0:01 elapsed, 3 events, 2 samples, 0 "
			    "drops\r\033[Kbpftrace-prof: a message\nbpftrace-prof: another\n");
	free(text);
}

/* Shown at the end: cleared; the printer unhooked. */
static void test_status__cleared_at_the_end(void **state)
{
	struct status_counts c = {0};
	struct status *s;
	char *text = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&text, &len);

	assert_non_null(f);
	assert_int_equal(status__new(&s, f, 0), 0);
	status__draw(s, STATUS_DELAY_NS, &c);
	status__free(s);
	assert_int_equal(fclose(f), 0);
	assert_string_equal(text, "\r\033[Kbpftrace-prof: 0:01 elapsed, 0 events, 0 samples, 0 "
				  "drops\r\033[K");
	free(text);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_status__cmd_exact_heap_says_cost),
		cmocka_unit_test(test_status__pids_modes_duration),
		cmocka_unit_test(test_status__heap_path_taken),
		cmocka_unit_test(test_status__many_pids_counted),
		cmocka_unit_test(test_status__wide_interval_push),
		cmocka_unit_test(test_status__url_shown),
		cmocka_unit_test(test_status__is_sample),
		cmocka_unit_test(test_status__format),
		cmocka_unit_test(test_status__drawn_and_cleared),
		cmocka_unit_test(test_status__cleared_at_the_end),
	};

	return cmocka_run_group_tests_name("status", tests, NULL, NULL);
}
