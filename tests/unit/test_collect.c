// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/* The consumer without BPF: a NULL loader stands for one whose ring buffer never opened. */
#include <errno.h>
#include <fcntl.h>
#include <sched.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmocka.h>

#include "agg/collect.h"
#include "collect_fixture.h"
#include "agg/cpu_agg.h"
#include "agg/heap_agg.h"
#include "prof_cpu.h"
#include "prof_heap.h"
#include "profile/build.h"
#include "profile/heap_profile.h"
#include "profile/profile.h"
#include "profile/run.h"
#include "sym/stackres.h"
#include "track/tracker.h"

static struct collect_opts heap_env = {.modes = MODE_HEAP};

static void test_collect__exiting_before_events_started(void **state)
{
	struct collect *c;

	/*
	 * loader__start_events failed: the session cleans up, and a traced CMD's exit stop
	 * lands here.  Nothing may poll the ring buffer that does not exist.
	 */
	assert_int_equal(open_collect(&c, &heap_env), 0);
	tracker__process_exiting(parts.tracker, (uint32_t)getpid());
	assert_int_equal(collect__error(c), 0);
	close_collect(c);
}

static void send_alloc(struct collect *c, uint32_t pid, uint64_t addr, uint64_t size)
{
	struct prof_heap_event e = {
		.type = PROF_REC_HEAP_ALLOC,
		.pid = pid,
		.tid = pid,
		.addr = addr,
		.size = size,
	};

	assert_int_equal(collect__on_event(c, &e, sizeof(e)), 0);
}

static void test_collect__exec_ends_live_blocks(void **state)
{
	const uint32_t pid = 999999; /* no such process: nothing to read or attach */
	struct prof_proc_event ex = {.type = PROF_REC_PROC_EXEC, .pid = pid, .tid = pid};
	const struct heap_site_values *v;
	struct collect *c;

	assert_int_equal(open_collect(&c, &heap_env), 0);
	for (uint64_t i = 0; i < 10; i++)
		send_alloc(c, pid, 0x1000 + i * 32, 32);
	memcpy(ex.comm, "newimage", 9);
	assert_int_equal(collect__on_event(c, &ex, sizeof(ex)), 0);
	v = heap_agg__site(collect__heap(c), pid, pid, -1, 0);
	assert_non_null(v);
	assert_int_equal((int64_t)v->alloc_objects, 10);
	assert_int_equal((int64_t)v->inuse_objects, 0);
	assert_int_equal((int64_t)v->inuse_bytes, 0);
	assert_int_equal(heap_agg__stats(collect__heap(c))->exec_released, 10);
	close_collect(c);
}

/* A heap record with its frames, as bpf/heap.bpf.c sends it. */
struct heap_rec {
	struct prof_heap_event e;
	uint64_t frames[4];
};

static struct heap_rec heap_rec(uint32_t pid, uint64_t addr, uint64_t root)
{
	struct heap_rec r = {
		.e = {.type = PROF_REC_HEAP_ALLOC,
		      .pid = pid,
		      .tid = pid,
		      .nframes = 3,
		      .addr = addr,
		      .size = 16},
		.frames = {0x401000, 0x402000, root},
	};
	return r;
}

static void test_collect__heap_frames_interned_per_stack(void **state)
{
	const uint32_t pid = 999999;
	struct heap_rec a = heap_rec(pid, 0x1000, 0x403000), b = heap_rec(pid, 0x2000, 0x403000);
	struct heap_rec other = heap_rec(pid, 0x3000, 0x404000);
	const struct heap_site_values *v;
	struct collect *c;
	int32_t id;

	assert_int_equal(open_collect(&c, &heap_env), 0);
	/* a, then b with the same frames (the last-stack fast path), then another stack, then a's
	 * frames again (the interned path) */
	assert_int_equal(collect__on_event(c, &a, sizeof(a.e) + 3 * 8), 0);
	assert_int_equal(collect__on_event(c, &b, sizeof(b.e) + 3 * 8), 0);
	assert_int_equal(collect__on_event(c, &other, sizeof(other.e) + 3 * 8), 0);
	a.e.addr = 0x4000;
	assert_int_equal(collect__on_event(c, &a, sizeof(a.e) + 3 * 8), 0);
	assert_int_equal(stackres__count(parts.stacks), 2);
	assert_int_equal(stackres__intern(parts.stacks, &id, pid, STACK_USER_RET, a.frames, 3), 0);
	v = heap_agg__site(collect__heap(c), pid, pid, id, 0);
	assert_non_null(v);
	assert_int_equal((int64_t)v->alloc_objects, 3);
	assert_int_equal(stackres__intern(parts.stacks, &id, pid, STACK_USER_RET, other.frames, 3),
			 0);
	assert_int_equal((int64_t)heap_agg__site(collect__heap(c), pid, pid, id, 0)->alloc_objects,
			 1);
	assert_int_equal(heap_agg__stats(collect__heap(c))->no_stack, 0);
	assert_int_equal(collect__bad_records(c), 0);
	close_collect(c);
}

/* In use by age: the record's time is each block's birth; the profile splits a stack's in-use
 * values by age bucket (the `age` label), its allocations on the youngest bucket's sample, and
 * --min-age keeps younger blocks out of inuse_*.  Buckets at their bounds: 10 s, 1 min, 10 min,
 * 1 h. */
static void test_collect__heap_inuse_by_age(void **state)
{
	const uint32_t pid = 999999;
	const uint64_t s = 1000000000ULL, now = 100000 * s;
	/* ages 0, 9.9 s, 10 s, 59 s, 60 s, 10 min, 1 h, 2 h: 8 blocks of 16 bytes, one stack */
	const uint64_t ages[] = {0,	 9900000000ULL, 10 * s,	  59 * s,
				 60 * s, 600 * s,	3600 * s, 7200 * s};
	const char *want[] = {"0-10s",	"0-10s",  "10s-1m", "10s-1m",
			      "1m-10m", "10m-1h", "1h+",    "1h+"};
	const char *names[HEAP_AGE_BUCKETS] = {"0-10s", "10s-1m", "1m-10m", "10m-1h", "1h+"};
	struct profile_run run = {.cmdline = "test"};
	int64_t inuse[HEAP_AGE_BUCKETS + 1] = {0}, alloc = 0;
	struct heap_rec r = heap_rec(pid, 0, 0x403000);
	struct build_inputs in;
	struct profile *p;
	struct collect *c;

	(void)state;
	for (size_t i = 0; i < sizeof(ages) / sizeof(ages[0]); i++)
		assert_string_equal(heap_profile__age_name(ages[i]), want[i]);
	assert_int_equal(open_collect(&c, &heap_env), 0);
	for (size_t i = 0; i < sizeof(ages) / sizeof(ages[0]); i++) {
		r.e.addr = 0x1000 + i * 16;
		r.e.ts = now - ages[i];
		assert_int_equal(collect__on_event(c, &r, sizeof(r.e) + 3 * 8), 0);
	}
	in = (struct build_inputs){.stacks = parts.stacks, .procs = parts.procs, .run = &run};
	for (int min = 0; min < 2; min++) {
		struct heap_age age = {.now = now, .min_age_ns = min ? 60 * s : 0};

		memset(inuse, 0, sizeof(inuse));
		alloc = 0;
		assert_int_equal(heap_profile__build(&p, collect__heap(c), &in, 0, &age), 0);
		for (uint32_t i = 0; i < p->nsamples; i++) {
			const struct profile_sample *x = &p->samples[i];
			int b = HEAP_AGE_BUCKETS;

			alloc += x->values[1];
			assert_non_null(x->state);
			for (int k = 0; k < HEAP_AGE_BUCKETS; k++)
				if (!strcmp(x->state, names[k]))
					b = k;
			assert_true(b < HEAP_AGE_BUCKETS);
			inuse[b] += x->values[3];
			/* the allocations ride on the youngest bucket's sample */
			if (x->values[1])
				assert_string_equal(x->state, names[min ? 2 : 0]);
		}
		assert_int_equal(p->nsamples, min ? 3 : 5);
		assert_string_equal(p->state_key, "age");
		assert_int_equal(alloc, 8 * 16);
		/* without --min-age: 2, 2, 1, 1, 2 blocks; with 60 s: the youngest four left out */
		assert_int_equal(inuse[0], min ? 0 : 32);
		assert_int_equal(inuse[1], min ? 0 : 32);
		assert_int_equal(inuse[2], 16);
		assert_int_equal(inuse[3], 16);
		assert_int_equal(inuse[4], 32);
		profile__free(p);
	}
	close_collect(c);
}

/* The record's Python thread state reaches the heap site (the gil label): the same stack
 * allocated with and without the GIL is two sites. */
static void test_collect__heap_python_state_kept(void **state)
{
	const uint32_t pid = 999999;
	struct heap_rec a = heap_rec(pid, 0x1000, 0x403000), b = heap_rec(pid, 0x2000, 0x403000);
	const struct heap_agg *h;
	struct collect *c;
	int32_t id;

	assert_int_equal(open_collect(&c, &heap_env), 0);
	a.e.py = PROF_PY_THREAD_GIL;
	b.e.py = PROF_PY_THREAD_NO_GIL;
	assert_int_equal(collect__on_event(c, &a, sizeof(a.e) + 3 * 8), 0);
	assert_int_equal(collect__on_event(c, &b, sizeof(b.e) + 3 * 8), 0);
	assert_int_equal(stackres__intern(parts.stacks, &id, pid, STACK_USER_RET, a.frames, 3), 0);
	h = collect__heap(c);
	assert_non_null(heap_agg__site(h, pid, pid, id, PROF_PY_THREAD_GIL));
	assert_int_equal((int64_t)heap_agg__site(h, pid, pid, id, PROF_PY_THREAD_GIL)->alloc_bytes,
			 16);
	assert_non_null(heap_agg__site(h, pid, pid, id, PROF_PY_THREAD_NO_GIL));
	assert_int_equal(
		(int64_t)heap_agg__site(h, pid, pid, id, PROF_PY_THREAD_NO_GIL)->alloc_bytes, 16);
	assert_null(heap_agg__site(h, pid, pid, id, PROF_PY_THREAD_NONE));
	close_collect(c);
}

static void test_collect__short_records_are_bad(void **state)
{
	struct heap_rec a = heap_rec(999999, 0x1000, 0x403000);
	struct prof_cpu_sample s = {.type = PROF_REC_CPU_SAMPLE, .pid = 1, .tid = 1, .nuser = 2};
	static struct collect_opts both = {.modes = MODE_HEAP | MODE_CPU};
	struct collect *c;

	assert_int_equal(open_collect(&c, &both), 0);
	/* one frame short */
	assert_int_equal(collect__on_event(c, &a, sizeof(a.e) + 2 * 8), 0);
	/* more frames than a stack can have */
	a.e.nframes = 128;
	assert_int_equal(collect__on_event(c, &a, sizeof(a)), 0);
	/* a cpu sample announcing two frames and carrying none */
	assert_int_equal(collect__on_event(c, &s, sizeof(s)), 0);
	assert_int_equal(collect__bad_records(c), 3);
	assert_int_equal(heap_agg__stats(collect__heap(c))->allocs, 0);
	assert_int_equal(stackres__count(parts.stacks), 0);
	close_collect(c);
}

static void test_collect__cpu_samples_counted_per_stacks(void **state)
{
	static struct collect_opts cpu_env = {.modes = MODE_CPU};
	struct {
		struct prof_cpu_sample s;
		uint64_t frames[3];
	} in_kernel = {{.type = PROF_REC_CPU_SAMPLE,
			.pid = 999999,
			.tid = 999998,
			.nuser = 2,
			.nkern = 1},
		       {0xffffffff81001000, 0x401000, 0x402000}},
	  in_user = {{.type = PROF_REC_CPU_SAMPLE, .pid = 999999, .tid = 999998, .nuser = 2},
		     {0x401000, 0x402000}};
	struct cpu_agg_key k = {.pid = 999999, .tid = 999998};
	struct collect *c;

	assert_int_equal(open_collect(&c, &cpu_env), 0);
	for (int i = 0; i < 3; i++)
		assert_int_equal(collect__on_event(c, &in_kernel, sizeof(in_kernel)), 0);
	assert_int_equal(collect__on_event(c, &in_user, sizeof(in_user.s) + 2 * 8), 0);
	assert_int_equal(collect__bad_records(c), 0);
	/* user stack {401000, 402000} and kernel stack {ffffffff81001000} */
	assert_int_equal(stackres__count(parts.stacks), 2);
	assert_int_equal(
		stackres__intern(parts.stacks, &k.user_stack, k.pid, STACK_USER, in_user.frames, 2),
		0);
	assert_int_equal(stackres__intern(parts.stacks, &k.kern_stack, k.pid, STACK_KERNEL,
					  in_kernel.frames, 1),
			 0);
	assert_int_equal(cpu_agg__count(collect__cpu(c), &k), 3);
	k.kern_stack = STACKRES_NONE;
	assert_int_equal(cpu_agg__count(collect__cpu(c), &k), 1);
	close_collect(c);
}

/* Records as deep as a stack can travel (include/prof_stack.h) are kept whole; one word more is
 * a bad record. */
static void test_collect__deepest_records_kept_whole(void **state)
{
	static struct collect_opts both = {.modes = MODE_HEAP | MODE_CPU};
	static struct {
		struct prof_cpu_sample s;
		uint64_t frames[PROF_KERN_FRAMES + PROF_STACK_WORDS + 1];
	} cpu;
	static struct {
		struct prof_heap_event e;
		uint64_t frames[PROF_STACK_WORDS + 1];
	} heap;
	struct cpu_agg_key k = {.pid = 999999, .tid = 999998};
	const struct heap_site_values *v;
	struct collect *c;
	int32_t id;
	unsigned n;

	for (unsigned i = 0; i < PROF_KERN_FRAMES; i++)
		cpu.frames[i] = 0xffffffff81001000 + 16 * i;
	for (unsigned i = 0; i <= PROF_STACK_WORDS; i++)
		cpu.frames[PROF_KERN_FRAMES + i] = heap.frames[i] = 0x401000 + 16 * i;
	cpu.s = (struct prof_cpu_sample){.type = PROF_REC_CPU_SAMPLE,
					 .pid = k.pid,
					 .tid = k.tid,
					 .nuser = PROF_STACK_WORDS,
					 .nkern = PROF_KERN_FRAMES};
	heap.e = (struct prof_heap_event){.type = PROF_REC_HEAP_ALLOC,
					  .pid = k.pid,
					  .tid = k.pid,
					  .nframes = PROF_STACK_WORDS,
					  .addr = 0x1000,
					  .size = 16};
	assert_int_equal(open_collect(&c, &both), 0);
	assert_int_equal(collect__on_event(c, &cpu, sizeof(cpu) - 8), 0);
	assert_int_equal(collect__on_event(c, &heap, sizeof(heap) - 8), 0);
	assert_int_equal(collect__bad_records(c), 0);
	assert_int_equal(stackres__intern(parts.stacks, &k.user_stack, k.pid, STACK_USER,
					  &cpu.frames[PROF_KERN_FRAMES], PROF_STACK_WORDS),
			 0);
	stackres__frames(parts.stacks, k.user_stack, &n);
	assert_int_equal(n, PROF_STACK_WORDS);
	assert_int_equal(stackres__intern(parts.stacks, &k.kern_stack, k.pid, STACK_KERNEL,
					  cpu.frames, PROF_KERN_FRAMES),
			 0);
	assert_int_equal(cpu_agg__count(collect__cpu(c), &k), 1);
	assert_int_equal(stackres__intern(parts.stacks, &id, k.pid, STACK_USER_RET, heap.frames,
					  PROF_STACK_WORDS),
			 0);
	v = heap_agg__site(collect__heap(c), k.pid, k.pid, id, 0);
	assert_non_null(v);
	assert_int_equal((int64_t)v->alloc_objects, 1);
	/* one word more than a stack can have */
	cpu.s.nuser = PROF_STACK_WORDS + 1;
	heap.e.nframes = PROF_STACK_WORDS + 1;
	assert_int_equal(collect__on_event(c, &cpu, sizeof(cpu)), 0);
	assert_int_equal(collect__on_event(c, &heap, sizeof(heap)), 0);
	assert_int_equal(collect__bad_records(c), 2);
	close_collect(c);
}

/* Exit status of the reuse scenario, run as init of a fresh pid namespace. */
enum { REUSE_OK, REUSE_SIGNALLED, REUSE_SETUP };

static int reuse_scenario(void)
{
	static struct collect_opts cmd_env = {.modes = MODE_HEAP};
	struct prof_proc_event fork_ev = {.type = PROF_REC_PROC_FORK, .ppid = 1};
	struct collect *c;
	pid_t x, r, w;
	int fd, st;

	if (open_collect(&c, &cmd_env))
		return REUSE_SETUP;
	x = fork();
	if (x == 0) {
		pause();
		_exit(0);
	}
	/* A followed child... */
	fork_ev.pid = fork_ev.tid = (uint32_t)x;
	if (x < 0 || collect__on_event(c, &fork_ev, sizeof(fork_ev)))
		return REUSE_SETUP;
	/* ...dies, and its exit event is not consumed yet (or was lost)... */
	kill(x, SIGKILL);
	if (waitpid(x, NULL, 0) != x)
		return REUSE_SETUP;
	/* ...and a stranger takes its pid. */
	fd = open("/proc/sys/kernel/ns_last_pid", O_WRONLY);
	if (fd < 0 || dprintf(fd, "%d", (int)x - 1) < 0)
		return REUSE_SETUP;
	close(fd);
	r = fork();
	if (r == 0) {
		pause();
		_exit(0);
	}
	if (r != x)
		return REUSE_SETUP;
	tracker__signal_all(parts.tracker, SIGTERM);
	usleep(100000); /* a signal sent would have landed by now */
	w = waitpid(r, &st, WNOHANG);
	kill(r, SIGKILL);
	waitpid(r, NULL, 0);
	close_collect(c);
	return w == 0 ? REUSE_OK : REUSE_SIGNALLED;
}

static void test_collect__signal_never_reaches_a_reused_pid(void **state)
{
	pid_t outer = fork(), init;
	int st;

	assert_true(outer >= 0);
	if (outer == 0) {
		/* Own pid namespace (and user namespace, so no privilege is needed): its pids
		 * are ours to reuse through ns_last_pid. */
		if (unshare(CLONE_NEWUSER | CLONE_NEWPID))
			_exit(10 + REUSE_SETUP);
		init = fork();
		if (init == 0)
			_exit(10 + reuse_scenario());
		if (init < 0 || waitpid(init, &st, 0) != init || !WIFEXITED(st))
			_exit(10 + REUSE_SETUP);
		_exit(WEXITSTATUS(st));
	}
	assert_int_equal(waitpid(outer, &st, 0), outer);
	assert_true(WIFEXITED(st));
	assert_int_not_equal(WEXITSTATUS(st), 10 + REUSE_SETUP);
	assert_int_equal(WEXITSTATUS(st), 10 + REUSE_OK);
}

/* An OOM kill's record reaches the callback after the records before it; its profile holds the
 * victim's sites and blocks only (heap_age.pid). */
struct oom_seen {
	int calls;
	struct prof_oom_event e;
	uint32_t live; /* the victim's live blocks when told */
	struct collect *c;
};

static void on_oom(void *ctx, const struct prof_oom_event *e)
{
	struct oom_seen *s = ctx;

	s->calls++;
	s->e = *e;
	s->live = heap_agg__live_count(collect__heap(s->c), e->pid);
}

static void test_collect__oom_kill_told_and_profiled_alone(void **state)
{
	const uint32_t victim = 999990, other = 999991;
	struct heap_rec a = heap_rec(victim, 0x1000, 0x403000),
			b = heap_rec(other, 0x2000, 0x404000);
	struct prof_oom_event e = {.type = PROF_REC_OOM_VICTIM,
				   .pid = victim,
				   .tid = victim,
				   .oom_score_adj = 1000,
				   .flags = PROF_OOM_ADJ_KNOWN,
				   .ts = 1};
	struct profile_run run = {.cmdline = "test"};
	struct oom_seen seen = {0};
	struct build_inputs in;
	struct profile *p;
	struct collect *c;

	(void)state;
	assert_int_equal(open_collect(&c, &heap_env), 0);
	seen.c = c;
	/* not set: the record is dropped quietly */
	assert_int_equal(collect__on_event(c, &e, sizeof(e)), 0);
	collect__set_oom(c, on_oom, &seen);
	assert_int_equal(collect__on_event(c, &a, sizeof(a.e) + 3 * 8), 0);
	a.e.addr = 0x1100;
	assert_int_equal(collect__on_event(c, &a, sizeof(a.e) + 3 * 8), 0);
	assert_int_equal(collect__on_event(c, &b, sizeof(b.e) + 3 * 8), 0);
	/* short: not understood */
	assert_int_equal(collect__on_event(c, &e, sizeof(e) - 1), 0);
	assert_int_equal(seen.calls, 0);
	assert_int_equal(collect__on_event(c, &e, sizeof(e)), 0);
	assert_int_equal(seen.calls, 1);
	assert_int_equal(seen.e.pid, victim);
	assert_int_equal(seen.e.oom_score_adj, 1000);
	assert_int_equal(seen.live, 2);
	in = (struct build_inputs){.stacks = parts.stacks, .procs = parts.procs, .run = &run};
	assert_int_equal(heap_profile__build(&p, collect__heap(c), &in, 0,
					     &(struct heap_age){.now = 2, .pid = victim}),
			 0);
	assert_int_equal(p->nsamples, 1);
	assert_int_equal(p->samples[0].pid, victim);
	assert_int_equal(p->samples[0].values[3], 32);
	profile__free(p);
	/* without the filter: both processes */
	assert_int_equal(
		heap_profile__build(&p, collect__heap(c), &in, 0, &(struct heap_age){.now = 2}), 0);
	assert_int_equal(p->nsamples, 2);
	profile__free(p);
	close_collect(c);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_collect__oom_kill_told_and_profiled_alone),
		cmocka_unit_test(test_collect__exiting_before_events_started),
		cmocka_unit_test(test_collect__exec_ends_live_blocks),
		cmocka_unit_test(test_collect__heap_frames_interned_per_stack),
		cmocka_unit_test(test_collect__heap_inuse_by_age),
		cmocka_unit_test(test_collect__heap_python_state_kept),
		cmocka_unit_test(test_collect__short_records_are_bad),
		cmocka_unit_test(test_collect__cpu_samples_counted_per_stacks),
		cmocka_unit_test(test_collect__deepest_records_kept_whole),
		cmocka_unit_test(test_collect__signal_never_reaches_a_reused_pid),
	};

	return cmocka_run_group_tests_name("collect", tests, NULL, NULL);
}
