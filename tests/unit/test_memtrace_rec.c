// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/* The recorder's sample counts and its table of live objects (trace/memtrace_rec.c); the
 * recording itself runs end to end (tests/e2e/test_memtrace.sh). */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "agg/collect.h"
#include "sym/stackres.h"
#include "sym/symbolizer.h"
#include "trace/memtrace_rec.h"

static void test_memtrace_rec__nsamples_every_allocation_is_words(void **state)
{
	(void)state;
	assert_int_equal(memtrace_rec__nsamples(64, 0, 0.5), 8);
	assert_int_equal(memtrace_rec__nsamples(65, 0, 0.5), 9);
	assert_int_equal(memtrace_rec__nsamples(0, 0, 0.5), 0);
}

/* A block of size s taken with probability 1 - exp(-s/N) stands for s / (1 - exp(-s/N)) bytes:
 * x samples of N bytes, rounded at random so the mean stays x. */
static void test_memtrace_rec__nsamples_unbiased(void **state)
{
	const uint64_t n = 16384, sizes[] = {1, 64, 4096, 16384, 100000, 1 << 20};

	(void)state;
	assert_int_equal(memtrace_rec__nsamples(0, n, 0.5), 1);
	/* s = N: x = 1 / (1 - 1/e) = 1.58198 */
	assert_int_equal(memtrace_rec__nsamples(n, n, 0.5), 2);
	assert_int_equal(memtrace_rec__nsamples(n, n, 0.6), 1);
	for (size_t i = 0; i < sizeof(sizes) / sizeof(sizes[0]); i++) {
		double x = ((double)sizes[i] / n) / -expm1(-(double)sizes[i] / n), sum = 0;

		for (int k = 0; k < 1000; k++)
			sum += (double)memtrace_rec__nsamples(sizes[i], n, (k + 0.5) / 1000);
		assert_true(fabs(sum / 1000 - x) < 0.001);
		assert_true(memtrace_rec__nsamples(sizes[i], n, 0.0) >= 1);
	}
}

struct fixture {
	char dir[64], path[96];
	struct symbolizer *sym;
	struct stackres *stacks;
	struct memtrace_rec *r;
};

/* A recorder writing into a fresh directory; stacks from an empty symbolizer (events carry
 * none). */
static int setup(void **state)
{
	struct fixture *x = calloc(1, sizeof(*x));
	struct symbolizer_opts opts = {.debug_dir = "", .kallsyms = "/nonexistent"};

	if (!x)
		return -1;
	strcpy(x->dir, "/tmp/memtrace_rec.XXXXXX");
	if (!mkdtemp(x->dir))
		return -1;
	snprintf(x->path, sizeof(x->path), "%s/t.memtrace", x->dir);
	opts.proc_root = x->dir;
	opts.perfmap_dir = x->dir;
	if (symbolizer__new(&x->sym, &opts) || stackres__new(&x->stacks, x->sym) ||
	    memtrace_rec__new(&x->r, &(struct memtrace_rec_opts){.path = x->path, .pid = 1},
			      x->stacks))
		return -1;
	*state = x;
	return 0;
}

static int teardown(void **state)
{
	struct fixture *x = *state;

	memtrace_rec__free(x->r);
	stackres__free(x->stacks);
	symbolizer__free(x->sym);
	unlink(x->path);
	rmdir(x->dir);
	free(x);
	return 0;
}

static void heap(struct fixture *x, enum collect_heap_kind kind, uint32_t pid, uint64_t addr,
		 bool untracked)
{
	struct collect_heap_event e = {.kind = kind,
				       .pid = pid,
				       .tid = pid,
				       .stack_id = STACKRES_NONE,
				       .addr = addr,
				       .size = 64,
				       .untracked = untracked};

	assert_int_equal(memtrace_rec__on_heap(x->r, &e), 0);
}

#define ALLOC(x, pid, addr) heap(x, COLLECT_HEAP_ALLOC, pid, addr, false)
#define FREE(x, pid, addr)  heap(x, COLLECT_HEAP_FREE, pid, addr, false)

/* Two objects a process followed: a third is traced, never collected, counted; another process
 * keeps its room; a free makes room again; exec and exit bring the count to zero. */
static void test_memtrace_rec__live_objects_capped_per_process(void **state)
{
	struct fixture *x = *state;
	const struct memtrace_rec_stats *st = memtrace_rec__stats(x->r);

	memtrace_rec__set_caps(x->r, 2, 0);
	ALLOC(x, 1, 0xa000);
	ALLOC(x, 1, 0xb000);
	ALLOC(x, 1, 0xc000);
	ALLOC(x, 2, 0xa000);
	ALLOC(x, 2, 0xb000);
	FREE(x, 1, 0xc000); /* never followed: unknown */
	FREE(x, 1, 0xa000);
	ALLOC(x, 1, 0xd000);
	heap(x, COLLECT_HEAP_EXEC, 1, 0, false);
	ALLOC(x, 1, 0xe000);
	ALLOC(x, 1, 0xf000);
	heap(x, COLLECT_HEAP_EXIT, 2, 0, false);
	ALLOC(x, 2, 0xc000);
	ALLOC(x, 2, 0xd000);
	FREE(x, 2, 0xa000); /* let go at its exit, uncollected: unknown now */
	assert_int_equal(memtrace_rec__finish(x->r), 0);
	assert_int_equal(st->allocs, 10);
	assert_int_equal(st->live_capped, 1);
	assert_int_equal(st->unknown_frees, 2);
	/* 0xa000 freed, 0xb000 and 0xd000 at the exec. */
	assert_int_equal(st->collects, 3);
	assert_int_equal(st->exec_released, 2);
	assert_int_equal(st->replaced_live, 0);
	assert_int_equal(access(x->path, F_OK), 0);
}

/* In all: past the total, another process is capped too. */
static void test_memtrace_rec__live_objects_capped_in_all(void **state)
{
	struct fixture *x = *state;
	const struct memtrace_rec_stats *st = memtrace_rec__stats(x->r);

	memtrace_rec__set_caps(x->r, 0, 2);
	ALLOC(x, 1, 0xa000);
	ALLOC(x, 2, 0xa000);
	ALLOC(x, 3, 0xa000);
	FREE(x, 3, 0xa000);
	FREE(x, 1, 0xa000);
	ALLOC(x, 3, 0xb000);
	FREE(x, 3, 0xb000);
	assert_int_equal(memtrace_rec__finish(x->r), 0);
	assert_int_equal(st->live_capped, 1);
	assert_int_equal(st->unknown_frees, 1);
	assert_int_equal(st->collects, 2);
}

/* An object BPF keeps no record of is traced, never followed (its free will not come) and
 * counted; it takes no room; handed out again, it replaces nothing. */
static void test_memtrace_rec__untracked_not_followed(void **state)
{
	struct fixture *x = *state;
	const struct memtrace_rec_stats *st = memtrace_rec__stats(x->r);

	memtrace_rec__set_caps(x->r, 1, 0);
	heap(x, COLLECT_HEAP_ALLOC, 1, 0xa000, true);
	ALLOC(x, 1, 0xb000);
	ALLOC(x, 1, 0xa000);
	FREE(x, 1, 0xb000);
	assert_int_equal(memtrace_rec__finish(x->r), 0);
	assert_int_equal(st->allocs, 3);
	assert_int_equal(st->untracked, 1);
	assert_int_equal(st->live_capped, 1);
	assert_int_equal(st->replaced_live, 0);
	assert_int_equal(st->collects, 1);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_memtrace_rec__nsamples_every_allocation_is_words),
		cmocka_unit_test(test_memtrace_rec__nsamples_unbiased),
		cmocka_unit_test_setup_teardown(test_memtrace_rec__live_objects_capped_per_process,
						setup, teardown),
		cmocka_unit_test_setup_teardown(test_memtrace_rec__live_objects_capped_in_all,
						setup, teardown),
		cmocka_unit_test_setup_teardown(test_memtrace_rec__untracked_not_followed, setup,
						teardown),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
