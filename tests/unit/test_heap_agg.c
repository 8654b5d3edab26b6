// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>

#include <cmocka.h>

#include "agg/heap_agg.h"
#include "agg/live_cap.h"

static int setup(void **state)
{
	struct heap_agg *h;

	if (heap_agg__new(&h, 0))
		return -1;
	*state = h;
	return 0;
}

static int teardown(void **state)
{
	heap_agg__free(*state);
	return 0;
}

static void count_gone(void *ctx, uint64_t addr)
{
	uint64_t *sum = ctx;

	sum[0]++;
	sum[1] += addr;
}

/* Continuous mode: an interval ends: allocations restart from zero, in-use carries over, empty
 * sites go; a dead process is forgotten with every live block reported. */
static void test_heap_agg__interval_and_forget(void **state)
{
	struct heap_agg *h = *state;
	const struct heap_site_values *v;
	uint64_t gone[2] = {0};

	heap_agg__alloc(h, 1, 1, 5, 0, 0x1000, 100);
	heap_agg__alloc(h, 1, 1, 5, 0, 0x2000, 100);
	heap_agg__alloc(h, 1, 1, 6, 0, 0x3000, 50);
	heap_agg__free_block(h, 1, 0x3000);
	heap_agg__alloc(h, 2, 2, 5, 0, 0x1000, 30);
	assert_int_equal(heap_agg__new_interval(h), 0);
	v = heap_agg__site(h, 1, 1, 5, 0);
	assert_non_null(v);
	assert_int_equal((int64_t)v->alloc_bytes, 0);
	assert_int_equal((int64_t)v->inuse_bytes, 200);
	assert_null(heap_agg__site(h, 1, 1, 6, 0)); /* nothing left in use: forgotten */
	assert_int_equal(heap_agg__stats(h)->allocs, 0);
	assert_int_equal(heap_agg__forget_pid(h, 1, count_gone, gone), 0);
	assert_int_equal(gone[0], 2);
	assert_int_equal(gone[1], 0x3000);
	assert_null(heap_agg__site(h, 1, 1, 5, 0));
	v = heap_agg__site(h, 2, 2, 5, 0);
	assert_non_null(v);
	assert_int_equal((int64_t)v->inuse_bytes, 30);
	heap_agg__free_block(h, 1, 0x1000); /* pid 1's block is gone: an unknown free now */
	assert_int_equal(heap_agg__stats(h)->unknown_frees, 1);
}

static void test_heap_agg__alloc_and_free(void **state)
{
	struct heap_agg *h = *state;
	const struct heap_site_values *v;

	for (uint64_t i = 0; i < 10; i++)
		heap_agg__alloc(h, 100, 101, 7, 0, 0x1000 + i * 64, 64);
	for (uint64_t i = 0; i < 4; i++)
		heap_agg__free_block(h, 100, 0x1000 + i * 64);
	v = heap_agg__site(h, 100, 101, 7, 0);
	assert_non_null(v);
	assert_int_equal((int64_t)v->alloc_objects, 10);
	assert_int_equal((int64_t)v->alloc_bytes, 640);
	assert_int_equal((int64_t)v->inuse_objects, 6);
	assert_int_equal((int64_t)v->inuse_bytes, 384);
	assert_int_equal(heap_agg__stats(h)->frees, 4);
	assert_int_equal(heap_agg__stats(h)->unknown_frees, 0);
}

static void test_heap_agg__unknown_free_counted_not_guessed(void **state)
{
	struct heap_agg *h = *state;

	heap_agg__alloc(h, 1, 1, 3, 0, 0x5000, 10);
	heap_agg__free_block(h, 1, 0x6000); /* allocated before attach */
	heap_agg__free_block(h, 2, 0x5000); /* same address, other process */
	assert_int_equal(heap_agg__stats(h)->unknown_frees, 2);
	assert_int_equal((int64_t)heap_agg__site(h, 1, 1, 3, 0)->inuse_bytes, 10);
}

static void test_heap_agg__free_null_ignored(void **state)
{
	struct heap_agg *h = *state;

	heap_agg__free_block(h, 1, 0);
	assert_int_equal(heap_agg__stats(h)->unknown_frees, 0);
	assert_int_equal(heap_agg__stats(h)->frees, 0);
}

static void test_heap_agg__realloc_moves_block(void **state)
{
	struct heap_agg *h = *state;
	const struct heap_site_values *a, *b;

	heap_agg__alloc(h, 1, 1, 10, 0, 0x1000, 100);
	heap_agg__realloc(h, 1, 1, 20, 0, 0x1000, 0x2000, 300); /* moved */
	heap_agg__realloc(h, 1, 1, 20, 0, 0x2000, 0x2000, 400); /* in place */
	a = heap_agg__site(h, 1, 1, 10, 0);
	b = heap_agg__site(h, 1, 1, 20, 0);
	assert_int_equal((int64_t)a->alloc_bytes, 100);
	assert_int_equal((int64_t)a->inuse_bytes, 0);
	assert_int_equal((int64_t)b->alloc_objects, 2);
	assert_int_equal((int64_t)b->alloc_bytes, 700);
	assert_int_equal((int64_t)b->inuse_objects, 1);
	assert_int_equal((int64_t)b->inuse_bytes, 400);
}

/* otel_memory:alloc: the sampler's weight as given, whatever --sample-bytes is; its free ends
 * all of it. */
static void test_heap_agg__weighted_block_counts_its_weight(void **state)
{
	struct heap_agg *h;
	const struct heap_site_values *v;

	(void)state;
	assert_int_equal(heap_agg__new(&h, 524288), 0);
	heap_agg__alloc_weighted(h, 1, 1, 7, 0, 0x1000, 1000, 4000);
	heap_agg__alloc_weighted(h, 1, 1, 7, 0, 0x2000, 1000, 4000);
	/* a weight under the size is still the one allocation sampled */
	heap_agg__alloc_weighted(h, 1, 1, 8, 0, 0x3000, 1000, 10);
	heap_agg__free_block(h, 1, 0x2000);
	v = heap_agg__site(h, 1, 1, 7, 0);
	assert_non_null(v);
	assert_int_equal((int64_t)v->alloc_bytes, 8000);
	assert_int_equal((int64_t)v->alloc_objects, 8);
	assert_int_equal((int64_t)v->inuse_bytes, 4000);
	assert_int_equal((int64_t)v->inuse_objects, 4);
	v = heap_agg__site(h, 1, 1, 8, 0);
	assert_non_null(v);
	assert_int_equal((int64_t)v->alloc_bytes, 10);
	assert_int_equal((int64_t)v->alloc_objects, 1);
	heap_agg__free(h);
}

static void test_heap_agg__realloc_null_is_malloc_and_failure_keeps_old(void **state)
{
	struct heap_agg *h = *state;

	heap_agg__realloc(h, 1, 1, 5, 0, 0, 0x3000, 50);	/* realloc(NULL, 50) */
	heap_agg__realloc(h, 1, 1, 5, 0, 0x3000, 0, 1UL << 40); /* failed: old stays */
	assert_int_equal((int64_t)heap_agg__site(h, 1, 1, 5, 0)->inuse_bytes, 50);
	assert_int_equal(heap_agg__stats(h)->unknown_frees, 0);
}

static void test_heap_agg__failed_alloc_and_lost_stack(void **state)
{
	struct heap_agg *h = *state;

	heap_agg__alloc(h, 1, 1, 5, 0, 0, 50);
	heap_agg__alloc(h, 1, 1, -14, 0, 0x10, 8);
	assert_int_equal(heap_agg__stats(h)->failed_allocs, 1);
	assert_int_equal(heap_agg__stats(h)->no_stack, 1);
	assert_null(heap_agg__site(h, 1, 1, 5, 0));
	assert_non_null(heap_agg__site(h, 1, 1, -1, 0));
}

static void test_heap_agg__reused_address_not_double_counted(void **state)
{
	struct heap_agg *h = *state;

	heap_agg__alloc(h, 1, 1, 5, 0, 0x10, 8);
	heap_agg__alloc(h, 1, 1, 5, 0, 0x10, 8); /* its free was lost */
	assert_int_equal((int64_t)heap_agg__site(h, 1, 1, 5, 0)->inuse_objects, 1);
	assert_int_equal((int64_t)heap_agg__site(h, 1, 1, 5, 0)->alloc_objects, 2);
	assert_int_equal(heap_agg__stats(h)->replaced_live, 1);
}

static void test_heap_agg__exec_releases_live_blocks(void **state)
{
	struct heap_agg *h = *state;

	/* 300 live blocks in pid 1 (two sites, one reached by realloc), 2 in pid 2. */
	for (uint64_t i = 0; i < 200; i++)
		heap_agg__alloc(h, 1, 1, 5, 0, 0x10000 + i * 16, 16);
	for (uint64_t i = 0; i < 100; i++)
		heap_agg__realloc(h, 1, 3, 6, 0, 0, 0x90000 + i * 32, 32);
	heap_agg__alloc(h, 2, 2, 5, 0, 0x10000, 100);
	heap_agg__alloc(h, 2, 2, 5, 0, 0x20000, 100);
	assert_int_equal(heap_agg__exec(h, 1), 0);
	/* The old image's blocks are gone with its address space: not in use, still allocated. */
	assert_int_equal((int64_t)heap_agg__site(h, 1, 1, 5, 0)->inuse_objects, 0);
	assert_int_equal((int64_t)heap_agg__site(h, 1, 1, 5, 0)->inuse_bytes, 0);
	assert_int_equal((int64_t)heap_agg__site(h, 1, 1, 5, 0)->alloc_objects, 200);
	assert_int_equal((int64_t)heap_agg__site(h, 1, 3, 6, 0)->inuse_bytes, 0);
	assert_int_equal(heap_agg__stats(h)->exec_released, 300);
	/* Another process is untouched. */
	assert_int_equal((int64_t)heap_agg__site(h, 2, 2, 5, 0)->inuse_bytes, 200);
	/* The new image's allocator hands out the same addresses: new blocks, nothing replaced. */
	heap_agg__alloc(h, 1, 1, 7, 0, 0x10000, 16);
	assert_int_equal(heap_agg__stats(h)->replaced_live, 0);
	heap_agg__free_block(h, 1, 0x10010);
	assert_int_equal(heap_agg__stats(h)->unknown_frees, 1);
	assert_int_equal((int64_t)heap_agg__site(h, 1, 1, 7, 0)->inuse_objects, 1);
}

static void test_heap_agg__sampling_weights_are_unbiased(void **state)
{
	const uint64_t rate = 4096, n = 2000000, size = 256;
	struct heap_agg *h;
	uint64_t left, kept = 0;
	double expect = (double)n * size;
	const struct heap_site_values *v;

	/* Simulate BPF's exponential intervals in userspace: the accounting must undo them. */
	assert_int_equal(heap_agg__new(&h, rate), 0);
	srand(1);
	left = (uint64_t)(-log((rand() + 1.0) / (RAND_MAX + 2.0)) * rate);
	for (uint64_t i = 0; i < n; i++) {
		if (left > size) {
			left -= size;
			continue;
		}
		left = (uint64_t)(-log((rand() + 1.0) / (RAND_MAX + 2.0)) * rate);
		heap_agg__alloc(h, 1, 1, 1, 0, 0x100000 + i * 8, size);
		kept++;
	}
	v = heap_agg__site(h, 1, 1, 1, 0);
	assert_true(kept < n / 10);
	assert_true(fabs(v->alloc_bytes - expect) / expect < 0.03);
	assert_true(fabs(v->alloc_objects - (double)n) / (double)n < 0.03);
	heap_agg__free(h);
}

/* The Python thread state (the gil label) is part of a site: the same stack with and without
 * the GIL is two sites, each reported with its state; a realloc's new block is its own. */
static void test_heap_agg__python_state_splits_sites(void **state)
{
	struct heap_agg *h = *state;
	const struct heap_site_values *v;
	const struct heap_site_values *vals;
	uint32_t pid, tid, py, seen = 0;
	int32_t sid;
	size_t it = 0;

	heap_agg__alloc(h, 1, 2, 5, 1, 0x1000, 100);
	heap_agg__alloc(h, 1, 2, 5, 2, 0x2000, 10);
	heap_agg__realloc(h, 1, 2, 5, 1, 0x2000, 0x3000, 20);
	v = heap_agg__site(h, 1, 2, 5, 1);
	assert_non_null(v);
	assert_int_equal((int64_t)v->alloc_bytes, 120);
	assert_int_equal((int64_t)v->inuse_bytes, 120);
	v = heap_agg__site(h, 1, 2, 5, 2);
	assert_non_null(v);
	assert_int_equal((int64_t)v->alloc_bytes, 10);
	assert_int_equal((int64_t)v->inuse_bytes, 0);
	assert_null(heap_agg__site(h, 1, 2, 5, 0));
	while (heap_agg__next_site(h, &it, &pid, &tid, &sid, &py, &vals)) {
		assert_int_equal(pid, 1);
		assert_int_equal(tid, 2);
		assert_int_equal(sid, 5);
		assert_ptr_equal(vals, heap_agg__site(h, pid, tid, sid, (uint8_t)py));
		seen |= 1u << py;
	}
	assert_int_equal(seen, (1u << 1) | (1u << 2));
}

/* A process at its cap: its new blocks still count as allocated, not in use, counted as
 * live_capped; their frees are unknown frees; other processes keep their room; frees, exec
 * and forget bring the count back to zero. */
static void test_heap_agg__pid_cap_counted_others_unaffected(void **state)
{
	struct heap_agg *h = *state;
	const struct heap_site_values *v;

	heap_agg__set_caps(h, 3, 0);
	for (uint64_t i = 0; i < 5; i++)
		heap_agg__alloc(h, 1, 1, 5, 0, 0x1000 + i * 0x100, 100);
	for (uint64_t i = 0; i < 3; i++)
		heap_agg__alloc(h, 2, 2, 5, 0, 0x1000 + i * 0x100, 10);
	v = heap_agg__site(h, 1, 1, 5, 0);
	assert_int_equal((int64_t)v->alloc_objects, 5);
	assert_int_equal((int64_t)v->alloc_bytes, 500);
	assert_int_equal((int64_t)v->inuse_objects, 3);
	assert_int_equal((int64_t)v->inuse_bytes, 300);
	assert_int_equal(heap_agg__stats(h)->live_capped, 2);
	assert_int_equal(heap_agg__live_count(h, 1), 3);
	/* The other process had its whole room. */
	assert_int_equal((int64_t)heap_agg__site(h, 2, 2, 5, 0)->inuse_objects, 3);
	assert_int_equal(heap_agg__live_count(h, 2), 3);
	/* An untracked block's free: unknown, in-use values untouched. */
	heap_agg__free_block(h, 1, 0x1400);
	assert_int_equal(heap_agg__stats(h)->unknown_frees, 1);
	assert_int_equal((int64_t)v->inuse_objects, 3);
	/* A tracked block's free makes room again. */
	heap_agg__free_block(h, 1, 0x1000);
	assert_int_equal(heap_agg__live_count(h, 1), 2);
	heap_agg__alloc(h, 1, 1, 5, 0, 0x9000, 100);
	v = heap_agg__site(h, 1, 1, 5, 0);
	assert_int_equal((int64_t)v->inuse_objects, 3);
	assert_int_equal(heap_agg__stats(h)->live_capped, 2);
	/* A block handed out again takes no new room. */
	heap_agg__alloc(h, 1, 1, 5, 0, 0x9000, 100);
	assert_int_equal(heap_agg__live_count(h, 1), 3);
	assert_int_equal(heap_agg__stats(h)->live_capped, 2);
	/* Down to zero: frees, exec, and a process forgotten. */
	for (uint64_t i = 0; i < 3; i++)
		heap_agg__free_block(h, 2, 0x1000 + i * 0x100);
	assert_int_equal(heap_agg__live_count(h, 2), 0);
	assert_int_equal(heap_agg__exec(h, 1), 0);
	assert_int_equal(heap_agg__live_count(h, 1), 0);
	for (uint64_t i = 0; i < 3; i++)
		heap_agg__alloc(h, 1, 1, 6, 0, 0x1000 + i * 0x100, 10);
	assert_int_equal(heap_agg__live_count(h, 1), 3);
	assert_int_equal(heap_agg__forget_pid(h, 1, NULL, NULL), 0);
	assert_int_equal(heap_agg__live_count(h, 1), 0);
	assert_int_equal(heap_agg__stats(h)->live_capped, 2);
}

/* The total cap holds whatever the processes. */
static void test_heap_agg__total_cap(void **state)
{
	struct heap_agg *h = *state;

	heap_agg__set_caps(h, 0, 4);
	for (uint32_t pid = 1; pid <= 3; pid++) {
		heap_agg__alloc(h, pid, pid, 5, 0, 0x1000, 8);
		heap_agg__alloc(h, pid, pid, 5, 0, 0x2000, 8);
	}
	assert_int_equal(heap_agg__stats(h)->live_capped, 2);
	assert_int_equal(heap_agg__live_count(h, 1) + heap_agg__live_count(h, 2) +
				 heap_agg__live_count(h, 3),
			 4);
	assert_int_equal((int64_t)heap_agg__site(h, 3, 3, 5, 0)->alloc_objects, 2);
	assert_int_equal((int64_t)heap_agg__site(h, 3, 3, 5, 0)->inuse_objects, 0);
	heap_agg__free_block(h, 1, 0x1000);
	heap_agg__alloc(h, 3, 3, 5, 0, 0x3000, 8);
	assert_int_equal((int64_t)heap_agg__site(h, 3, 3, 5, 0)->inuse_objects, 1);
	assert_int_equal(heap_agg__stats(h)->live_capped, 2);
}

/* The default: one process keeps LIVE_CAP_PID blocks live, no more. */
static void test_heap_agg__default_pid_cap(void **state)
{
	struct heap_agg *h = *state;

	for (uint64_t i = 0; i <= LIVE_CAP_PID; i++)
		heap_agg__alloc(h, 1, 1, 5, 0, 0x10000 + i * 16, 16);
	heap_agg__alloc(h, 2, 2, 5, 0, 0x10000, 16);
	assert_int_equal(heap_agg__live_count(h, 1), LIVE_CAP_PID);
	assert_int_equal(heap_agg__stats(h)->live_capped, 1);
	assert_int_equal((int64_t)heap_agg__site(h, 2, 2, 5, 0)->inuse_objects, 1);
}

/* -z / -Z: blocks outside [min, max] are neither allocated nor in use, counted; their frees are
 * unknown frees.  The bounds are inclusive; a realloc's new size decides. */
static void test_heap_agg__size_filters(void **state)
{
	struct heap_agg *h = *state;
	const struct heap_site_values *v;

	heap_agg__set_sizes(h, 64, 128);
	heap_agg__alloc(h, 1, 1, 7, 0, 0x1000, 63);
	heap_agg__alloc(h, 1, 1, 7, 0, 0x2000, 64);
	heap_agg__alloc(h, 1, 1, 7, 0, 0x3000, 128);
	heap_agg__alloc(h, 1, 1, 7, 0, 0x4000, 129);
	heap_agg__alloc_weighted(h, 1, 1, 7, 0, 0x5000, 4096, 524288);
	heap_agg__realloc(h, 1, 1, 7, 0, 0x2000, 0x6000, 1000); /* grown out of range */
	v = heap_agg__site(h, 1, 1, 7, 0);
	assert_non_null(v);
	assert_int_equal((int64_t)v->alloc_objects, 2);
	assert_int_equal((int64_t)v->alloc_bytes, 192);
	assert_int_equal((int64_t)v->inuse_bytes, 128);
	assert_int_equal(heap_agg__stats(h)->size_filtered, 4);
	heap_agg__free_block(h, 1, 0x1000);
	assert_int_equal(heap_agg__stats(h)->unknown_frees, 1);
	/* no upper bound */
	heap_agg__set_sizes(h, 0, 0);
	heap_agg__alloc(h, 1, 1, 7, 0, 0x7000, 1 << 30);
	assert_int_equal(heap_agg__stats(h)->size_filtered, 4);
}

/* Peak: each stack's in-use values when its process held the most at once, not at the end, per
 * process; a stack changed after the peak keeps what it held then; an interval starts over. */
static void test_heap_agg__peak_per_process(void **state)
{
	struct heap_agg *h = *state;
	const struct heap_site_values *a, *b;
	const struct heap_peak *pk;

	heap_agg__at(h, 10);
	heap_agg__alloc(h, 1, 1, 5, 0, 0x1000, 100); /* a: 100 */
	heap_agg__alloc(h, 1, 1, 6, 0, 0x2000, 300); /* b: 300 */
	heap_agg__at(h, 20);
	heap_agg__alloc(h, 1, 1, 5, 0, 0x3000, 100); /* a: 200, the peak: 500 */
	heap_agg__at(h, 30);
	heap_agg__free_block(h, 1, 0x2000);	     /* b: 0 */
	heap_agg__alloc(h, 1, 1, 6, 0, 0x4000, 50);  /* b: 50, 250 in all */
	heap_agg__alloc(h, 1, 1, 5, 0, 0x5000, 100); /* a: 300, 350 in all */
	heap_agg__alloc(h, 2, 2, 5, 0, 0x1000, 7);   /* another process */
	heap_agg__settle_peaks(h);
	a = heap_agg__site(h, 1, 1, 5, 0);
	b = heap_agg__site(h, 1, 1, 6, 0);
	assert_int_equal((int64_t)a->peak_bytes, 200);
	assert_int_equal((int64_t)a->peak_objects, 2);
	assert_int_equal((int64_t)b->peak_bytes, 300);
	assert_int_equal((int64_t)b->inuse_bytes, 50);
	pk = heap_agg__peak(h, 1);
	assert_non_null(pk);
	assert_int_equal((int64_t)pk->bytes, 500);
	assert_int_equal((int64_t)pk->inuse_bytes, 350);
	assert_int_equal(pk->at, 20);
	assert_int_equal((int64_t)heap_agg__site(h, 2, 2, 5, 0)->peak_bytes, 7);
	assert_int_equal((int64_t)heap_agg__peak(h, 2)->bytes, 7);

	/* A new peak after both changed: what they held then. */
	heap_agg__alloc(h, 1, 1, 6, 0, 0x6000, 200); /* b: 250, 550 */
	heap_agg__free_block(h, 1, 0x1000);	     /* a: 200 after the peak */
	heap_agg__settle_peaks(h);
	assert_int_equal((int64_t)a->peak_bytes, 300);
	assert_int_equal((int64_t)b->peak_bytes, 250);
	assert_int_equal((int64_t)heap_agg__peak(h, 1)->bytes, 550);

	/* An interval: the peak starts again from what is in use (450). */
	assert_int_equal(heap_agg__new_interval(h), 0);
	heap_agg__free_block(h, 1, 0x6000); /* b: 50 */
	heap_agg__settle_peaks(h);
	assert_int_equal((int64_t)heap_agg__peak(h, 1)->bytes, 450);
	assert_int_equal((int64_t)a->peak_bytes, 200);
	assert_int_equal((int64_t)b->peak_bytes, 250);
	assert_int_equal((int64_t)b->inuse_bytes, 50);
	assert_int_equal(heap_agg__forget_pid(h, 1, NULL, NULL), 0);
	assert_null(heap_agg__peak(h, 1));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_heap_agg__alloc_and_free, setup, teardown),
		cmocka_unit_test_setup_teardown(test_heap_agg__interval_and_forget, setup,
						teardown),
		cmocka_unit_test_setup_teardown(test_heap_agg__unknown_free_counted_not_guessed,
						setup, teardown),
		cmocka_unit_test_setup_teardown(test_heap_agg__free_null_ignored, setup, teardown),
		cmocka_unit_test(test_heap_agg__weighted_block_counts_its_weight),
		cmocka_unit_test_setup_teardown(test_heap_agg__realloc_moves_block, setup,
						teardown),
		cmocka_unit_test_setup_teardown(
			test_heap_agg__realloc_null_is_malloc_and_failure_keeps_old, setup,
			teardown),
		cmocka_unit_test_setup_teardown(test_heap_agg__failed_alloc_and_lost_stack, setup,
						teardown),
		cmocka_unit_test_setup_teardown(test_heap_agg__exec_releases_live_blocks, setup,
						teardown),
		cmocka_unit_test_setup_teardown(test_heap_agg__reused_address_not_double_counted,
						setup, teardown),
		cmocka_unit_test(test_heap_agg__sampling_weights_are_unbiased),
		cmocka_unit_test_setup_teardown(test_heap_agg__python_state_splits_sites, setup,
						teardown),
		cmocka_unit_test_setup_teardown(test_heap_agg__pid_cap_counted_others_unaffected,
						setup, teardown),
		cmocka_unit_test_setup_teardown(test_heap_agg__total_cap, setup, teardown),
		cmocka_unit_test_setup_teardown(test_heap_agg__default_pid_cap, setup, teardown),
		cmocka_unit_test_setup_teardown(test_heap_agg__size_filters, setup, teardown),
		cmocka_unit_test_setup_teardown(test_heap_agg__peak_per_process, setup, teardown),
	};

	return cmocka_run_group_tests_name("heap_agg", tests, NULL, NULL);
}
