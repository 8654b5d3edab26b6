// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * --offcpu accounting: the aggregate itself, then synthetic off-CPU records through the
 * consumer (a NULL loader: no BPF) and the offcpu profile built from them.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "agg/collect.h"
#include "collect_fixture.h"
#include "agg/offcpu_agg.h"
#include "sym/stackres.h"
#include "prof_offcpu.h"
#include "profile/build.h"
#include "profile/offcpu_profile.h"
#include "profile/profile.h"
#include "profile/run.h"

#define PID 999999 /* no such process: nothing is read for it */
#define TID 999998

static void test_offcpu_agg__sums_periods_per_key(void **state)
{
	struct offcpu_agg_key a = {.pid = 10, .tid = 11, .user_stack = 0, .kern_stack = 1};
	struct offcpu_agg_key b = a, c = a;
	const struct offcpu_agg_value *v;
	const struct offcpu_agg_key *k;
	uint64_t count = 0, ns = 0;
	struct offcpu_agg *agg;
	size_t it = 0;
	int rows = 0;

	(void)state;
	b.state = PROF_OFFCPU_RUNNABLE; /* same stack, another state: another row */
	c.tid = 12;
	assert_int_equal(offcpu_agg__new(&agg), 0);
	assert_int_equal(offcpu_agg__add(agg, &a, 300000000), 0);
	assert_int_equal(offcpu_agg__add(agg, &a, 300000001), 0);
	assert_int_equal(offcpu_agg__add(agg, &a, 0), 0); /* a period of 0 ns still counts */
	assert_int_equal(offcpu_agg__add(agg, &b, 5000), 0);
	assert_int_equal(offcpu_agg__add(agg, &c, 7), 0);
	v = offcpu_agg__get(agg, &a);
	assert_non_null(v);
	assert_int_equal(v->count, 3);
	assert_int_equal(v->ns, 600000001);
	v = offcpu_agg__get(agg, &b);
	assert_non_null(v);
	assert_int_equal(v->count, 1);
	assert_int_equal(v->ns, 5000);
	assert_int_equal(offcpu_agg__get(agg, &c)->ns, 7);
	c.tid = 13;
	assert_null(offcpu_agg__get(agg, &c));
	while (offcpu_agg__next(agg, &it, &k, &v)) {
		rows++;
		count += v->count;
		ns += v->ns;
	}
	assert_int_equal(rows, 3);
	assert_int_equal(count, 5);
	assert_int_equal(ns, 600005008);
	offcpu_agg__free(agg);
}

static void test_offcpu_agg__reset_starts_from_zero(void **state)
{
	struct offcpu_agg_key a = {.pid = 10, .tid = 11, .user_stack = 2, .kern_stack = 3};
	const struct offcpu_agg_value *v;
	const struct offcpu_agg_key *k;
	struct offcpu_agg *agg;
	size_t it = 0;

	(void)state;
	assert_int_equal(offcpu_agg__new(&agg), 0);
	assert_int_equal(offcpu_agg__add(agg, &a, 100), 0);
	assert_int_equal(offcpu_agg__reset(agg), 0);
	assert_null(offcpu_agg__get(agg, &a));
	assert_int_equal(offcpu_agg__next(agg, &it, &k, &v), 0);
	assert_int_equal(offcpu_agg__add(agg, &a, 40), 0);
	assert_int_equal(offcpu_agg__get(agg, &a)->ns, 40);
	assert_int_equal(offcpu_agg__get(agg, &a)->count, 1);
	offcpu_agg__free(agg);
}

/* A record as bpf/offcpu.bpf.c sends it: one kernel frame, two user frames. */
struct offcpu_rec {
	struct prof_offcpu_event e;
	uint64_t frames[3];
};

static struct offcpu_rec offcpu_rec(uint8_t st, uint64_t ns, uint64_t user_leaf)
{
	struct offcpu_rec r = {
		.e = {.type = PROF_REC_OFFCPU,
		      .pid = PID,
		      .tid = TID,
		      .nkern = 1,
		      .nuser = 2,
		      .ns = ns,
		      .state = st},
		.frames = {0xffffffff81001000, user_leaf, 0x402000},
	};

	return r;
}

static struct collect_opts offcpu_env = {.modes = MODE_OFFCPU};

static void test_offcpu_agg__records_summed_per_stack_and_state(void **state)
{
	struct offcpu_rec sleep = offcpu_rec(PROF_OFFCPU_BLOCKED, 300000000, 0x401000);
	struct offcpu_rec wait = offcpu_rec(PROF_OFFCPU_BLOCKED, 100000000, 0x401100);
	struct offcpu_rec preempted = offcpu_rec(PROF_OFFCPU_RUNNABLE, 20000, 0x401000);
	struct offcpu_agg_key k = {.pid = PID, .tid = TID, .state = PROF_OFFCPU_BLOCKED};
	const struct offcpu_agg_value *v;
	struct collect *c;

	(void)state;
	assert_int_equal(open_collect(&c, &offcpu_env), 0);
	for (int i = 0; i < 3; i++) {
		assert_int_equal(collect__on_event(c, &sleep, sizeof(sleep)), 0);
		assert_int_equal(collect__on_event(c, &wait, sizeof(wait)), 0);
	}
	assert_int_equal(collect__on_event(c, &preempted, sizeof(preempted)), 0);
	assert_int_equal(collect__bad_records(c), 0);
	/* user stacks {401000, 402000}, {401100, 402000}; one kernel stack */
	assert_int_equal(stackres__count(parts.stacks), 3);
	assert_int_equal(
		stackres__intern(parts.stacks, &k.kern_stack, PID, STACK_KERNEL, sleep.frames, 1),
		0);
	assert_int_equal(
		stackres__intern(parts.stacks, &k.user_stack, PID, STACK_USER, sleep.frames + 1, 2),
		0);
	v = offcpu_agg__get(collect__offcpu(c), &k);
	assert_non_null(v);
	assert_int_equal(v->count, 3);
	assert_int_equal(v->ns, 900000000);
	k.state = PROF_OFFCPU_RUNNABLE;
	v = offcpu_agg__get(collect__offcpu(c), &k);
	assert_non_null(v);
	assert_int_equal(v->count, 1);
	assert_int_equal(v->ns, 20000);
	close_collect(c);
}

static void test_offcpu_agg__malformed_records_are_bad(void **state)
{
	struct offcpu_rec r = offcpu_rec(PROF_OFFCPU_BLOCKED, 1000, 0x401000);
	size_t it = 0;
	const struct offcpu_agg_value *v;
	const struct offcpu_agg_key *k;
	struct collect *c;

	(void)state;
	assert_int_equal(open_collect(&c, &offcpu_env), 0);
	/* one frame short */
	assert_int_equal(collect__on_event(c, &r, sizeof(r) - 8), 0);
	/* shorter than its header */
	assert_int_equal(collect__on_event(c, &r, sizeof(r.e) - 1), 0);
	/* a state we do not know */
	r.e.state = PROF_OFFCPU__COUNT;
	assert_int_equal(collect__on_event(c, &r, sizeof(r)), 0);
	/* more kernel frames than a stack can have */
	r.e.state = PROF_OFFCPU_BLOCKED;
	r.e.nkern = PROF_KERN_FRAMES + 1;
	assert_int_equal(collect__on_event(c, &r, sizeof(r)), 0);
	assert_int_equal(collect__bad_records(c), 4);
	assert_int_equal(offcpu_agg__next(collect__offcpu(c), &it, &k, &v), 0);
	assert_int_equal(stackres__count(parts.stacks), 0);
	close_collect(c);
}

/*
 * A stack deeper than the thread's record (bpf/offcpu.bpf.c keeps it in a record of its own):
 * taken whole up to the other modes' cap, refused past it.
 */
static void test_offcpu_agg__deep_records_taken_whole(void **state)
{
	enum { NUSER = 2 * PROF_OFFCPU_WORDS + 1 };
	static struct prof_offcpu_deep d;
	struct offcpu_agg_key k = {.pid = PID, .tid = TID, .state = PROF_OFFCPU_BLOCKED};
	size_t size = sizeof(d.e) + (1 + NUSER) * sizeof(uint64_t);
	const struct offcpu_agg_value *v;
	struct collect *c;

	(void)state;
	d.e = (struct prof_offcpu_event){.type = PROF_REC_OFFCPU,
					 .pid = PID,
					 .tid = TID,
					 .nkern = 1,
					 .nuser = NUSER,
					 .ns = 5000,
					 .state = PROF_OFFCPU_BLOCKED,
					 .deep = 1};
	d.frames[0] = 0xffffffff81001000;
	for (int i = 0; i < NUSER; i++)
		d.frames[1 + i] = 0x401000 + 16 * (uint64_t)i;
	assert_int_equal(open_collect(&c, &offcpu_env), 0);
	assert_int_equal(collect__on_event(c, &d, size), 0);
	assert_int_equal(collect__bad_records(c), 0);
	assert_int_equal(stackres__intern(parts.stacks, &k.kern_stack, PID, STACK_KERNEL,
					  (uint64_t *)d.frames, 1),
			 0);
	assert_int_equal(stackres__intern(parts.stacks, &k.user_stack, PID, STACK_USER,
					  (uint64_t *)d.frames + 1, NUSER),
			 0);
	assert_int_equal(stackres__count(parts.stacks), 2); /* the same two stacks */
	v = offcpu_agg__get(collect__offcpu(c), &k);
	assert_non_null(v);
	assert_int_equal(v->count, 1);
	assert_int_equal(v->ns, 5000);
	/* the largest a record can be: the cap's words and a whole kernel stack */
	d.e.nkern = PROF_KERN_FRAMES;
	d.e.nuser = PROF_STACK_WORDS;
	assert_int_equal(collect__on_event(c, &d, sizeof(d)), 0);
	assert_int_equal(collect__bad_records(c), 0);
	/* past the cap: refused, whatever its size says */
	d.e.nkern = 0;
	d.e.nuser = PROF_STACK_WORDS + 1;
	assert_int_equal(collect__on_event(c, &d, sizeof(d)), 0);
	assert_int_equal(collect__bad_records(c), 1);
	close_collect(c);
}

/* The profile of those records: both sample types, one sample per state, labelled. */
static void test_offcpu_agg__profile_has_state_labels(void **state)
{
	struct offcpu_rec sleep = offcpu_rec(PROF_OFFCPU_BLOCKED, 300000000, 0x401000);
	struct offcpu_rec preempted = offcpu_rec(PROF_OFFCPU_RUNNABLE, 20000, 0x401000);
	struct profile_run run = {.cmdline = "test"};
	struct build_inputs in;
	int blocked = -1, runnable = -1;
	struct collect *c;
	struct profile *p;

	(void)state;
	assert_int_equal(open_collect(&c, &offcpu_env), 0);
	for (int i = 0; i < 3; i++)
		assert_int_equal(collect__on_event(c, &sleep, sizeof(sleep)), 0);
	assert_int_equal(collect__on_event(c, &preempted, sizeof(preempted)), 0);
	collect__snapshot(c, true);
	in = (struct build_inputs){.stacks = parts.stacks, .procs = parts.procs, .run = &run};
	assert_int_equal(offcpu_profile__build(&p, collect__offcpu(c), &in), 0);
	assert_string_equal(p->mode, "offcpu");
	assert_int_equal(p->ntypes, 2);
	assert_string_equal(p->types[0].type, "events");
	assert_string_equal(p->types[0].unit, "count");
	assert_string_equal(p->types[1].type, "offcpu");
	assert_string_equal(p->types[1].unit, "nanoseconds");
	assert_int_equal(p->default_type, 1);
	assert_int_equal(p->nsamples, 2);
	for (uint32_t i = 0; i < p->nsamples; i++) {
		assert_non_null(p->samples[i].state);
		if (!strcmp(p->samples[i].state, "idle"))
			blocked = (int)i;
		else if (!strcmp(p->samples[i].state, "runnable"))
			runnable = (int)i;
	}
	assert_true(blocked >= 0 && runnable >= 0);
	assert_int_equal(p->samples[blocked].values[0], 3);
	assert_int_equal(p->samples[blocked].values[1], 900000000);
	assert_int_equal(p->samples[runnable].values[0], 1);
	assert_int_equal(p->samples[runnable].values[1], 20000);
	/* the same stack: kernel frame leafward of the two user frames */
	assert_int_equal(p->samples[blocked].nlocs, 3);
	assert_memory_equal(p->samples[blocked].loc_ids, p->samples[runnable].loc_ids,
			    3 * sizeof(uint32_t));
	assert_int_equal(p->samples[blocked].pid, PID);
	assert_int_equal(p->samples[blocked].tid, TID);
	profile__free(p);
	close_collect(c);
}

static void test_offcpu_agg__state_names(void **state)
{
	(void)state;
	assert_string_equal(offcpu_profile__state_name(PROF_OFFCPU_BLOCKED), "idle");
	assert_string_equal(offcpu_profile__state_name(PROF_OFFCPU_RUNNABLE), "runnable");
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_offcpu_agg__sums_periods_per_key),
		cmocka_unit_test(test_offcpu_agg__reset_starts_from_zero),
		cmocka_unit_test(test_offcpu_agg__records_summed_per_stack_and_state),
		cmocka_unit_test(test_offcpu_agg__malformed_records_are_bad),
		cmocka_unit_test(test_offcpu_agg__deep_records_taken_whole),
		cmocka_unit_test(test_offcpu_agg__profile_has_state_labels),
		cmocka_unit_test(test_offcpu_agg__state_names),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
