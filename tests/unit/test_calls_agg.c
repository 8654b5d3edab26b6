// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "agg/calls_agg.h"

#define PID 100
#define TID 101

/* Function ids as BPF would hash them: any nonzero value. */
enum { MAIN = 11, A = 12, B = 13, C = 14, F = 15 };

static int setup(void **state)
{
	struct calls_agg *a;

	if (calls_agg__new(&a))
		return -1;
	*state = a;
	return 0;
}

static int teardown(void **state)
{
	calls_agg__free(*state);
	return 0;
}

static void ev(struct calls_agg *a, uint32_t type, uint32_t tid, uint64_t ts, uint64_t id,
	       uint8_t flags)
{
	struct prof_call_event e = {
		.type = type,
		.pid = PID,
		.tid = tid,
		.line = (uint32_t)id, /* one line per function keeps paths easy to find */
		.ts = ts,
		.name_id = id,
		.runtime = PROF_RT_PHP,
		.flags = flags,
	};

	calls_agg__event(a, &e);
}

static void in(struct calls_agg *a, uint64_t ts, uint64_t id)
{
	ev(a, PROF_REC_CALL_ENTRY, TID, ts, id, 0);
}

static void out(struct calls_agg *a, uint64_t ts, uint64_t id)
{
	ev(a, PROF_REC_CALL_RETURN, TID, ts, id, 0);
}

/* Node of the path root -> ids[0] -> ids[1] …, 0 when absent. */
static uint32_t path(struct calls_agg *a, uint32_t parent, int n, const uint64_t *ids)
{
	uint32_t node = parent;

	for (int i = 0; i < n && (i == 0 || node); i++)
		node = calls_agg__find_node(a, node, ids[i], (uint32_t)ids[i]);
	return node;
}

#define PATH(a, ...) \
	path(a, 0, sizeof((uint64_t[]){__VA_ARGS__}) / sizeof(uint64_t), (uint64_t[]){__VA_ARGS__})

static void expect(struct calls_agg *a, uint32_t node, uint64_t calls, uint64_t wall)
{
	const struct calls_values *v;

	assert_int_not_equal(node, 0);
	v = calls_agg__values(a, PID, TID, node);
	assert_non_null(v);
	assert_int_equal(v->calls, calls);
	assert_int_equal(v->wall_ns, wall);
}

/* Walks up from node: the names on the path (leaf first) and whether it ends unknown. */
static int chain(struct calls_agg *a, uint32_t node, uint64_t *ids, bool *partial)
{
	int n = 0;

	*partial = false;
	while (node) {
		const struct calls_node *cn = calls_agg__node(a, node);

		if (!cn->name_id) {
			*partial = true;
			break;
		}
		ids[n++] = cn->name_id;
		node = cn->parent;
	}
	return n;
}

/* An event with the thread's on-CPU clock. */
static void evb(struct calls_agg *a, uint32_t type, uint64_t ts, uint64_t busy, uint64_t id)
{
	struct prof_call_event e = {
		.type = type,
		.pid = PID,
		.tid = TID,
		.line = (uint32_t)id,
		.ts = ts,
		.name_id = id,
		.runtime = PROF_RT_PHP,
		.busy = busy,
	};

	calls_agg__event(a, &e);
}

static void expect_busy(struct calls_agg *a, uint32_t node, uint64_t wall, uint64_t busy)
{
	const struct calls_values *v = calls_agg__values(a, PID, TID, node);

	assert_non_null(v);
	assert_int_equal(v->wall_ns, wall);
	assert_int_equal(v->busy_ns, busy);
}

/*
 * Busy is self time like wall: main runs 1000 ns (600 on the CPU) around A's 500 (100 on the
 * CPU); a clock reading behind an earlier one counts 0, and busy never exceeds wall.
 */
static void test_calls_agg__busy_self_time(void **state)
{
	struct calls_agg *a = *state;

	evb(a, PROF_REC_CALL_ENTRY, 1000, 5000, MAIN);
	evb(a, PROF_REC_CALL_ENTRY, 1200, 5200, A);
	evb(a, PROF_REC_CALL_RETURN, 1700, 5300, A);
	evb(a, PROF_REC_CALL_RETURN, 2000, 5600, MAIN);
	expect_busy(a, PATH(a, MAIN, A), 500, 100);
	expect_busy(a, PATH(a, MAIN), 500, 500);
	/* B: the clock went back (a tick-late reading after an exact one): no busy time */
	evb(a, PROF_REC_CALL_ENTRY, 3000, 7000, B);
	evb(a, PROF_REC_CALL_RETURN, 3100, 6990, B);
	expect_busy(a, PATH(a, B), 100, 0);
	/* and more busy than wall is capped at wall */
	evb(a, PROF_REC_CALL_ENTRY, 4000, 8000, B);
	evb(a, PROF_REC_CALL_RETURN, 4100, 8500, B);
	expect_busy(a, PATH(a, B), 200, 100);
}

static int busy_at_end(void *ctx, uint32_t pid, uint32_t tid, uint64_t *busy)
{
	(void)ctx;
	if (pid != PID || tid != TID)
		return -ENOENT;
	*busy = 9000;
	return 0;
}

/* A call still open at the end is busy up to the thread's clock then. */
static void test_calls_agg__finish_reads_busy_clock(void **state)
{
	struct calls_agg *a = *state;

	evb(a, PROF_REC_CALL_ENTRY, 1000, 5000, A);
	calls_agg__finish(a, 10000, busy_at_end, NULL);
	expect_busy(a, PATH(a, A), 9000, 4000);
}

/*
 * Attached mid-run: the entry probe was in place before the return probe, so events before the
 * thread was marked (at 1000) are partial and not used: B's entry alone would never close.
 */
static void test_calls_agg__attach_window_events_ignored(void **state)
{
	struct calls_agg *a = *state;
	uint32_t node = 0;

	assert_int_equal(calls_agg__thread_preexisting(a, PID, TID, 1000), 0);
	in(a, 900, B);
	in(a, 1100, A);
	out(a, 1300, A);
	for (uint32_t n = 1; n < calls_agg__node_count(a); n++) {
		assert_int_not_equal(calls_agg__node(a, n)->name_id, B);
		if (calls_agg__node(a, n)->name_id == A)
			node = n;
	}
	/* on the placeholder of its unknown callers, not under B */
	assert_int_equal(calls_agg__node(a, calls_agg__node(a, node)->parent)->name_id, 0);
	expect(a, node, 1, 200);
	assert_int_equal(calls_agg__stats(a)->attach_window, 1);
	assert_int_equal(calls_agg__stats(a)->entries, 1);
}

static void test_calls_agg__nested_self_time(void **state)
{
	struct calls_agg *a = *state;

	in(a, 1000, MAIN);
	in(a, 1100, A);
	in(a, 1200, B);
	out(a, 1500, B); /* B: 300 */
	in(a, 1600, B);
	out(a, 1650, B); /* B: 50 */
	out(a, 2000, A); /* A: 900 inclusive, 550 self */
	out(a, 3000, MAIN);
	expect(a, PATH(a, MAIN, A, B), 2, 350);
	expect(a, PATH(a, MAIN, A), 1, 550);
	expect(a, PATH(a, MAIN), 1, 2000 - 900);
	assert_int_equal(calls_agg__stats(a)->entries, 4);
	assert_int_equal(calls_agg__stats(a)->returns, 4);
	assert_int_equal(calls_agg__stats(a)->mismatched_returns, 0);
}

static void test_calls_agg__recursion_keeps_each_depth(void **state)
{
	struct calls_agg *a = *state;

	in(a, 0, F);
	in(a, 10, F);
	in(a, 20, F);
	out(a, 30, F);
	out(a, 50, F);
	out(a, 100, F);
	expect(a, PATH(a, F, F, F), 1, 10);
	expect(a, PATH(a, F, F), 1, 30);
	expect(a, PATH(a, F), 1, 60);
}

static void test_calls_agg__exception_unwinds_frames(void **state)
{
	struct calls_agg *a = *state;

	/* C and B were left by an exception without returns; A's return closes them. */
	in(a, 0, A);
	in(a, 10, B);
	in(a, 20, C);
	out(a, 100, A);
	expect(a, PATH(a, A, B, C), 1, 80);
	expect(a, PATH(a, A, B), 1, 10);
	expect(a, PATH(a, A), 1, 10);
	assert_int_equal(calls_agg__stats(a)->unwound_frames, 2);
}

static void test_calls_agg__attach_mid_call_recovers_callers(void **state)
{
	struct calls_agg *a = *state;
	uint64_t ids[8];
	bool partial;
	uint32_t b_node, a_node;

	/* MAIN -> A were running when we attached at 1000. */
	assert_int_equal(calls_agg__thread_preexisting(a, PID, TID, 1000), 0);
	in(a, 1100, B);
	out(a, 1300, B);
	out(a, 2000, A); /* no entry seen: A was B's caller */
	assert_int_equal(calls_agg__stats(a)->outer_returns, 1);

	/* B's path: B <- A <- (unknown) */
	b_node = 0;
	for (uint32_t n = 1; n < calls_agg__node_count(a); n++)
		if (calls_agg__node(a, n)->name_id == B)
			b_node = n;
	assert_int_not_equal(b_node, 0);
	expect(a, b_node, 1, 200);
	assert_int_equal(chain(a, b_node, ids, &partial), 2);
	assert_int_equal(ids[1], A);
	assert_true(partial);
	a_node = calls_agg__node(a, b_node)->parent;
	/* A: seen for 1000 ns (a lower bound), 200 of them in B. */
	expect(a, a_node, 1, 800);

	/* MAIN returns too: the whole path is now known, MAIN's time a lower bound again. */
	out(a, 2500, MAIN);
	assert_int_equal(chain(a, b_node, ids, &partial), 3);
	assert_int_equal(ids[2], MAIN);
	expect(a, calls_agg__node(a, a_node)->parent, 1, 500);
}

static void test_calls_agg__new_thread_is_complete(void **state)
{
	struct calls_agg *a = *state;

	/* Not pre-existing: a return without an entry is an error, not an outer frame. */
	out(a, 50, A);
	assert_int_equal(calls_agg__stats(a)->mismatched_returns, 1);
	in(a, 100, B);
	out(a, 150, A); /* matches nothing open: ignored, B stays open */
	out(a, 200, B);
	expect(a, PATH(a, B), 1, 100);
	assert_int_equal(calls_agg__stats(a)->mismatched_returns, 2);
}

static void test_calls_agg__lost_events_resync(void **state)
{
	struct calls_agg *a = *state;
	uint64_t ids[8];
	bool partial;
	uint32_t c_node = 0;

	in(a, 0, MAIN);
	in(a, 100, A);
	/* Events of this thread were dropped here; the next one says so. */
	ev(a, PROF_REC_CALL_ENTRY, TID, 500, C, PROF_CALL_F_LOST);
	assert_int_equal(calls_agg__stats(a)->resyncs, 1);
	/* MAIN and A were closed at the last event before the gap, without calls. */
	expect(a, PATH(a, MAIN, A), 0, 0);
	expect(a, PATH(a, MAIN), 0, 100);
	assert_int_equal(calls_agg__stats(a)->unfinished_frames, 2);
	out(a, 600, C);
	out(a, 900, A); /* still open in reality: names the new placeholder */
	for (uint32_t n = 1; n < calls_agg__node_count(a); n++)
		if (calls_agg__node(a, n)->name_id == C)
			c_node = n;
	expect(a, c_node, 1, 100);
	assert_int_equal(chain(a, c_node, ids, &partial), 2);
	assert_int_equal(ids[1], A);
	assert_true(partial);
	expect(a, calls_agg__node(a, c_node)->parent, 1, 300);
}

static void test_calls_agg__return_only(void **state)
{
	struct calls_agg *a = *state;
	uint32_t node = 0;
	uint64_t ids[4];
	bool partial;

	for (int i = 0; i < 1500; i++)
		ev(a, PROF_REC_CALL_RETURN, TID, (uint64_t)i, F, PROF_CALL_F_RETURN_ONLY);
	for (uint32_t n = 1; n < calls_agg__node_count(a); n++)
		if (calls_agg__node(a, n)->name_id == F)
			node = n;
	expect(a, node, 1500, 0);
	assert_int_equal(chain(a, node, ids, &partial), 1);
	assert_true(partial);
	assert_int_equal(calls_agg__stats(a)->return_only, 1500);
}

static void test_calls_agg__thread_exit_and_finish_close_open_frames(void **state)
{
	struct calls_agg *a = *state;

	in(a, 0, MAIN);
	in(a, 100, A);
	ev(a, PROF_REC_CALL_ENTRY, TID + 1, 50, B, 0);
	calls_agg__thread_exit(a, PID, TID); /* closed at its last event (100) */
	expect(a, PATH(a, MAIN), 0, 100);
	expect(a, PATH(a, MAIN, A), 0, 0);
	calls_agg__finish(a, 1050, NULL, NULL);
	assert_int_equal(calls_agg__values(a, PID, TID + 1, PATH(a, B))->wall_ns, 1000);
	assert_int_equal(calls_agg__values(a, PID, TID + 1, PATH(a, B))->calls, 0);
	assert_int_equal(calls_agg__stats(a)->unfinished_frames, 3);
}

static void test_calls_agg__exec_forgets_stacks(void **state)
{
	struct calls_agg *a = *state;

	in(a, 0, A);
	calls_agg__process_exec(a, PID);
	/* The new image's first return finds nothing open. */
	out(a, 100, A);
	assert_int_equal(calls_agg__stats(a)->mismatched_returns, 1);
	expect(a, PATH(a, A), 0, 0);
}

static void test_calls_agg__time_going_back_is_clamped(void **state)
{
	struct calls_agg *a = *state;

	in(a, 1000, A);
	out(a, 900, A);
	expect(a, PATH(a, A), 1, 0);
	assert_int_equal(calls_agg__stats(a)->clamped_times, 1);
}

static void test_calls_agg__depth_limit(void **state)
{
	struct calls_agg *a = *state;

	for (int i = 0; i < CALLS_AGG_MAX_DEPTH + 3; i++)
		in(a, (uint64_t)i, F);
	assert_int_equal(calls_agg__stats(a)->depth_exceeded, 3);
	for (int i = 0; i < CALLS_AGG_MAX_DEPTH + 3; i++)
		out(a, 100000 + (uint64_t)i, F);
	/* The outermost frame returns last (100000 + MAX + 2), its callee 1 ns later in and 1 ns
	 * earlier out. */
	expect(a, PATH(a, F), 1, 2);
	assert_int_equal(calls_agg__stats(a)->mismatched_returns, 0);
}

/* A HotSpot entry: the Java frame's SP and probe site (PROF_CALL_F_FRAME). */
static void java_in(struct calls_agg *a, uint64_t ts, uint64_t id, uint64_t sp, uint32_t site)
{
	struct prof_call_event e = {
		.type = PROF_REC_CALL_ENTRY,
		.pid = PID,
		.tid = TID,
		.line = (uint32_t)id,
		.ts = ts,
		.name_id = id,
		.runtime = PROF_RT_JAVA,
		.flags = PROF_CALL_F_FRAME,
		.site = site,
		.frame_sp = sp,
	};

	calls_agg__event(a, &e);
}

static void test_calls_agg__java_frames_left_by_exceptions(void **state)
{
	struct calls_agg *a = *state;

	/* Compiled code: an exception unwinds C, B, A without returns; MAIN calls A again. */
	java_in(a, 0, MAIN, 1000, 1);
	java_in(a, 10, A, 900, 2);
	java_in(a, 20, B, 800, 3);
	java_in(a, 30, C, 700, 4);
	java_in(a, 100, A, 900, 2); /* deeper frames and the same site at the same SP: gone */
	assert_int_equal(calls_agg__stats(a)->unwound_frames, 3);
	expect(a, PATH(a, MAIN, A, B, C), 1, 70);
	expect(a, PATH(a, MAIN, A, B), 1, 10);
	expect(a, PATH(a, MAIN, A), 1, 10);
	out(a, 150, A);
	expect(a, PATH(a, MAIN, A), 2, 60);
	out(a, 200, MAIN);
	expect(a, PATH(a, MAIN), 1, 200 - 90 - 50);
	assert_int_equal(calls_agg__stats(a)->mismatched_returns, 0);
}

static void test_calls_agg__java_inlined_frames_stay(void **state)
{
	struct calls_agg *a = *state;

	/* A and B inlined into MAIN's compiled frame: one SP, one probe site each. */
	java_in(a, 0, MAIN, 1000, 1);
	java_in(a, 10, A, 1000, 5);
	java_in(a, 20, B, 1000, 6); /* another site in the same frame: A is its live caller */
	assert_int_equal(calls_agg__stats(a)->unwound_frames, 0);
	out(a, 30, B);
	java_in(a, 40, B, 1000, 6); /* B returned: nothing to unwind */
	assert_int_equal(calls_agg__stats(a)->unwound_frames, 0);
	expect(a, PATH(a, MAIN, A, B), 1, 10);
	/* An exception leaves B and A; MAIN's loop enters A's inlined copy again. */
	java_in(a, 60, A, 1000, 5);
	assert_int_equal(calls_agg__stats(a)->unwound_frames, 2);
	expect(a, PATH(a, MAIN, A, B), 2, 30);
	expect(a, PATH(a, MAIN, A), 1, 20);
	/* A callee in a frame of its own (lower SP) does not disturb its callers. */
	java_in(a, 70, C, 900, 7);
	assert_int_equal(calls_agg__stats(a)->unwound_frames, 2);
	out(a, 80, C);
	expect(a, PATH(a, MAIN, A, C), 1, 10);
}

static void test_calls_agg__endless_outer_returns_are_capped(void **state)
{
	struct calls_agg *a = *state;

	/* A runtime firing returns without entries (e.g. Ruby's method__return): not a stack. */
	assert_int_equal(calls_agg__thread_preexisting(a, PID, TID, 0), 0);
	for (int i = 0; i < CALLS_AGG_MAX_DEPTH + 100; i++)
		out(a, 10 + (uint64_t)i, F);
	assert_int_equal(calls_agg__stats(a)->outer_returns, CALLS_AGG_MAX_DEPTH);
	assert_int_equal(calls_agg__stats(a)->mismatched_returns, 100);
	assert_true(calls_agg__node_count(a) <= CALLS_AGG_MAX_DEPTH + 3);
}

static void test_calls_agg__names_are_length_bounded(void **state)
{
	struct calls_agg *a = *state;
	struct prof_call_name n;
	const struct calls_name *got;

	memset(&n, 'x', sizeof(n));
	n.type = PROF_REC_CALL_NAME;
	n.pid = PID;
	n.name_id = 42;
	n.runtime = PROF_RT_JAVA;
	/* HotSpot: length-delimited, no NUL, garbage after. */
	memcpy(n.cls, "java/lang/StringGARBAGE", 23);
	n.cls_len = 16;
	memcpy(n.fn, "valueOf", 7);
	n.fn_len = 7;
	n.file_len = PROF_CALL_FILE_LEN; /* full field, no NUL at all */
	assert_int_equal(calls_agg__name(a, &n), 0);
	got = calls_agg__lookup_name(a, 42);
	assert_non_null(got);
	assert_int_equal(got->runtime, PROF_RT_JAVA);
	assert_string_equal(got->cls, "java/lang/String");
	assert_string_equal(got->fn, "valueOf");
	assert_int_equal(strlen(got->file), PROF_CALL_FILE_LEN);
	assert_null(calls_agg__lookup_name(a, 43));
}

/* An entry or a return of another process's thread. */
static void ev_pid(struct calls_agg *a, uint32_t type, uint32_t pid, uint64_t ts, uint64_t id)
{
	struct prof_call_event e = {
		.type = type,
		.pid = pid,
		.tid = pid,
		.line = (uint32_t)id,
		.ts = ts,
		.name_id = id,
		.runtime = PROF_RT_PYTHON,
	};

	assert_int_equal(calls_agg__event(a, &e), 0);
}

/* The PROF_REC_CALL_NAME record BPF sends for id in pid. */
static void name_rec(struct calls_agg *a, uint32_t pid, uint64_t id, const char *fn)
{
	struct prof_call_name n = {
		.type = PROF_REC_CALL_NAME,
		.pid = pid,
		.name_id = id,
		.runtime = PROF_RT_PYTHON,
		.fn_len = (uint16_t)strlen(fn),
		.file_len = 4,
	};

	memcpy(n.fn, fn, n.fn_len);
	memcpy(n.file, "x.py", 4);
	assert_int_equal(calls_agg__name(a, &n), 0);
}

/*
 * Continuous mode: each interval calls 20 functions never seen before, under a MAIN that runs
 * through all 50 intervals.  After each interval only MAIN's open path is left in the tree,
 * and MAIN's own frame keeps what its callees took.
 */
static void test_calls_agg__intervals_free_finished_paths(void **state)
{
	struct calls_agg *a = *state;
	uint64_t t = 1;

	in(a, 0, MAIN);
	for (uint64_t k = 0; k < 50; k++) {
		for (uint64_t j = 0; j < 20; j++) {
			uint64_t id = 1000 + k * 20 + j;

			in(a, t, id);
			in(a, t + 1, C);
			out(a, t + 2, C);
			out(a, t + 3, id);
			t += 4;
		}
		/* The interval's calls are all there for its snapshot. */
		expect(a, PATH(a, MAIN, 1000 + k * 20, C), 1, 1);
		expect(a, PATH(a, MAIN, 1000 + k * 20 + 19), 1, 2);
		assert_int_equal(calls_agg__new_interval(a), 0);
		/* The root, the return-only caller and MAIN: nothing else is open. */
		assert_int_equal(calls_agg__node_count(a), 3);
		assert_int_equal(PATH(a, MAIN, 1000 + k * 20), 0);
		assert_int_not_equal(PATH(a, MAIN), 0);
		assert_null(calls_agg__values(a, PID, TID, PATH(a, MAIN)));
	}
	out(a, t, MAIN);
	/* 4001 ns, of which 1000 callees took 3 ns each. */
	expect(a, PATH(a, MAIN), 1, 1001);
	assert_int_equal(calls_agg__stats(a)->mismatched_returns, 0);
}

/* A thread seen mid-call keeps its unknown callers across intervals: the placeholder under its
 * stack is renumbered with it, and named when its frame returns. */
static void test_calls_agg__intervals_keep_outer_frames(void **state)
{
	struct calls_agg *a = *state;
	uint32_t c_node = 0;
	uint64_t ids[8];
	bool partial;

	assert_int_equal(calls_agg__thread_preexisting(a, PID, TID, 1000), 0);
	in(a, 1100, B);
	assert_int_equal(calls_agg__new_interval(a), 0);
	assert_int_equal(calls_agg__node_count(a), 4); /* root, return-only, placeholder, B */
	out(a, 1300, B);
	assert_int_equal(calls_agg__new_interval(a), 0);
	assert_int_equal(calls_agg__node_count(a), 3); /* B finished: gone */
	in(a, 1400, C);
	out(a, 2000, A); /* the placeholder was A: C is closed under it */
	assert_int_equal(calls_agg__stats(a)->outer_returns, 1);
	for (uint32_t n = 1; n < calls_agg__node_count(a); n++)
		if (calls_agg__node(a, n)->name_id == C)
			c_node = n;
	assert_int_not_equal(c_node, 0);
	expect(a, c_node, 1, 600);
	assert_int_equal(chain(a, c_node, ids, &partial), 2);
	assert_int_equal(ids[1], A);
	assert_true(partial);
	/* A: seen for 1000 ns; B (an interval ago) and C took 800 of them. */
	expect(a, calls_agg__node(a, c_node)->parent, 1, 200);
}

/* A process forgotten: its names and its paths go, another process's stay. */
static void test_calls_agg__forget_frees_names_and_nodes(void **state)
{
	struct calls_agg *a = *state;
	const uint32_t other = 200;
	const struct calls_name *n;

	name_rec(a, PID, A, "a");
	name_rec(a, other, B, "b");
	in(a, 10, A);
	ev_pid(a, PROF_REC_CALL_ENTRY, other, 10, B);
	ev_pid(a, PROF_REC_CALL_RETURN, other, 20, B);
	assert_int_equal(calls_agg__new_interval(a), 0);
	assert_int_equal(calls_agg__node_count(a), 3); /* A is open */

	calls_agg__forget_pid(a, PID);
	assert_int_equal(calls_agg__new_interval(a), 0);
	assert_null(calls_agg__lookup_name(a, A));
	n = calls_agg__lookup_name(a, B);
	assert_non_null(n);
	assert_string_equal(n->fn, "b");
	assert_string_equal(n->file, "x.py");
	assert_int_equal(calls_agg__name_count(a), 1);
	assert_int_equal(calls_agg__node_count(a), 2);
	/* The survivor goes on: a new path, its name intact. */
	ev_pid(a, PROF_REC_CALL_ENTRY, other, 30, B);
	ev_pid(a, PROF_REC_CALL_RETURN, other, 45, B);
	assert_non_null(calls_agg__values(a, other, other, PATH(a, B)));
	assert_int_equal(calls_agg__values(a, other, other, PATH(a, B))->wall_ns, 15);
}

/* Names past the cap are counted, not kept; a name BPF sends again replaces its strings;
 * forgetting a process makes room. */
static void test_calls_agg__names_capped(void **state)
{
	struct calls_agg *a = *state;
	const uint64_t over = CALLS_AGG_MAX_NAMES + 1;

	for (uint64_t i = 1; i <= CALLS_AGG_MAX_NAMES; i++)
		name_rec(a, PID, i, "f");
	assert_int_equal(calls_agg__name_count(a), CALLS_AGG_MAX_NAMES);
	name_rec(a, 200, over, "g");
	assert_null(calls_agg__lookup_name(a, over));
	assert_int_equal(calls_agg__stats(a)->names_over_cap, 1);
	name_rec(a, PID, 1, "f2"); /* its BPF LRU entry was evicted: sent again */
	assert_string_equal(calls_agg__lookup_name(a, 1)->fn, "f2");
	assert_int_equal(calls_agg__stats(a)->names_over_cap, 1);

	calls_agg__forget_pid(a, PID);
	assert_int_equal(calls_agg__new_interval(a), 0);
	assert_int_equal(calls_agg__name_count(a), 0);
	name_rec(a, 200, over, "g");
	assert_string_equal(calls_agg__lookup_name(a, over)->fn, "g");
	assert_int_equal(calls_agg__stats(a)->names_over_cap, 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
#define T(name) cmocka_unit_test_setup_teardown(name, setup, teardown)
		T(test_calls_agg__nested_self_time),
		T(test_calls_agg__busy_self_time),
		T(test_calls_agg__attach_window_events_ignored),
		T(test_calls_agg__finish_reads_busy_clock),
		T(test_calls_agg__recursion_keeps_each_depth),
		T(test_calls_agg__exception_unwinds_frames),
		T(test_calls_agg__attach_mid_call_recovers_callers),
		T(test_calls_agg__new_thread_is_complete),
		T(test_calls_agg__lost_events_resync),
		T(test_calls_agg__return_only),
		T(test_calls_agg__thread_exit_and_finish_close_open_frames),
		T(test_calls_agg__exec_forgets_stacks),
		T(test_calls_agg__time_going_back_is_clamped),
		T(test_calls_agg__depth_limit),
		T(test_calls_agg__java_frames_left_by_exceptions),
		T(test_calls_agg__java_inlined_frames_stay),
		T(test_calls_agg__endless_outer_returns_are_capped),
		T(test_calls_agg__names_are_length_bounded),
		T(test_calls_agg__intervals_free_finished_paths),
		T(test_calls_agg__intervals_keep_outer_frames),
		T(test_calls_agg__forget_frees_names_and_nodes),
		T(test_calls_agg__names_capped),
#undef T
	};

	return cmocka_run_group_tests_name("calls_agg", tests, NULL, NULL);
}
