// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
#include "profile/heap_profile.h"

#include <math.h>

#include "agg/heap_agg.h"
#include "prof_common.h"
#include "profile/build.h"
#include "profile/profile.h"
#include "profile/run.h"
#include "util/hashmap.h"

static const char *const heap_types[][2] = {
	{"alloc_objects", "count"}, {"alloc_space", "bytes"},  {"inuse_objects", "count"},
	{"inuse_space", "bytes"},   {"peak_objects", "count"}, {"peak_space", "bytes"},
};

int heap_profile__new(struct profile **out, const struct build_inputs *in, int64_t period)
{
	/* In use first in the text report, then allocated. */
	return build__profile(out, in,
			      &(struct build_shape){
				      .mode = "heap",
				      .types = heap_types,
				      .ntypes = 6,
				      .default_type = 3,
				      .text_types = {3, 1},
				      .ntext_types = 2,
				      .period_type = "space",
				      .period_unit = "bytes",
				      .period = period,
			      });
}

static const struct {
	uint64_t below_s;
	const char *name;
} age_buckets[HEAP_AGE_BUCKETS] = {
	{10, "0-10s"}, {60, "10s-1m"}, {600, "1m-10m"}, {3600, "10m-1h"}, {UINT64_MAX, "1h+"},
};

/* The bucket of a block age_ns old. */
static int age_bucket(uint64_t age_ns)
{
	uint64_t s = age_ns / 1000000000ULL;
	int i = 0;

	while (i < HEAP_AGE_BUCKETS - 1 && s >= age_buckets[i].below_s)
		i++;
	return i;
}

const char *heap_profile__age_name(uint64_t age_ns)
{
	return age_buckets[age_bucket(age_ns)].name;
}

/* A site (py: the gil label, as the site's). */
struct age_key {
	uint32_t pid, tid, py;
	int32_t stack_id;
};

/* Its live blocks old enough, per age bucket; the last slot for blocks born unknown. */
struct age_sums {
	double objects[HEAP_AGE_BUCKETS + 1], bytes[HEAP_AGE_BUCKETS + 1];
	bool any[HEAP_AGE_BUCKETS + 1];
};

static int add_sample(struct profile *p, const struct build_inputs *in, uint32_t pid, uint32_t tid,
		      int32_t stack_id, uint32_t py, const int64_t *vals, const char *age)
{
	uint32_t locs[PROF_STACK_WORDS];
	uint32_t n = 0;
	int err;

	err = build__locations(p, in->stacks, stack_id, locs, PROF_STACK_WORDS, &n);
	return err ? err
		   : build__sample_state(p, in, pid, tid, locs, n, vals, build__py_flags(py), age);
}

/* The live blocks old enough (age->min_age_ns), summed per site and age bucket. */
static int sum_by_age(struct hashmap **out, struct heap_agg *h, const struct heap_age *age)
{
	struct heap_live_block b;
	struct age_sums *v;
	size_t it = 0;
	int err;

	err = hashmap__new(out, sizeof(struct age_key), sizeof(struct age_sums));
	while (!err && heap_agg__next_live(h, &it, &b)) {
		uint64_t a = b.born && age->now > b.born ? age->now - b.born : 0;
		struct age_key key = {
			.pid = b.pid, .tid = b.tid, .py = b.py, .stack_id = b.stack_id};
		int k = HEAP_AGE_BUCKETS;

		if ((b.born && a < age->min_age_ns) || (age->pid && b.pid != age->pid))
			continue;
		if (b.born)
			k = age_bucket(a);
		err = hashmap__upsert(*out, (void **)&v, &key, NULL);
		if (!err) {
			v->objects[k] += b.objects;
			v->bytes[k] += b.bytes;
			v->any[k] = true;
		}
	}
	return err;
}

/*
 * A site's samples by age: its in-use blocks per bucket, each bucket a sample labelled with it,
 * the allocations and the peak riding on the youngest bucket's (one sample per stack while all
 * its blocks are of an age); without blocks in use (old enough), those alone, unlabelled.
 */
static int add_site_by_age(struct profile *p, const struct build_inputs *in,
			   const struct age_key *k, const struct heap_site_values *v,
			   const struct age_sums *sums)
{
	int64_t alloc[2] = {llround(v->alloc_objects), llround(v->alloc_bytes)};
	int64_t peak[2] = {llround(v->peak_objects), llround(v->peak_bytes)};
	bool first = true;
	int err = 0;

	for (int i = 0; !err && sums && i <= HEAP_AGE_BUCKETS; i++) {
		int j = i ? i - 1 : HEAP_AGE_BUCKETS; /* born unknown first, then youngest */
		int64_t vals[6] = {first ? alloc[0] : 0,      first ? alloc[1] : 0,
				   llround(sums->objects[j]), llround(sums->bytes[j]),
				   first ? peak[0] : 0,	      first ? peak[1] : 0};

		if (!sums->any[j])
			continue;
		err = add_sample(p, in, k->pid, k->tid, k->stack_id, k->py, vals,
				 j < HEAP_AGE_BUCKETS ? age_buckets[j].name : NULL);
		first = false;
	}
	if (!err && first && (alloc[0] || alloc[1] || peak[0] || peak[1]))
		err = add_sample(p, in, k->pid, k->tid, k->stack_id, k->py,
				 (const int64_t[6]){alloc[0], alloc[1], 0, 0, peak[0], peak[1]},
				 NULL);
	return err;
}

int heap_profile__build(struct profile **out, struct heap_agg *h, const struct build_inputs *in,
			uint64_t sample_bytes, const struct heap_age *age)
{
	const struct heap_site_values *v;
	struct hashmap *sums = NULL;
	struct profile *p = NULL;
	uint32_t pid, tid, py;
	int32_t stack_id;
	size_t it = 0;
	int err;

	err = heap_profile__new(&p, in, (int64_t)sample_bytes);
	if (err)
		return err;
	if (h)
		heap_agg__settle_peaks(h);
	if (age) {
		p->state_key = "age";
		err = h ? sum_by_age(&sums, h, age) : 0;
		if (err)
			goto cleanup;
	}
	while (h && heap_agg__next_site(h, &it, &pid, &tid, &stack_id, &py, &v)) {
		int64_t vals[6] = {llround(v->alloc_objects), llround(v->alloc_bytes),
				   llround(v->inuse_objects), llround(v->inuse_bytes),
				   llround(v->peak_objects),  llround(v->peak_bytes)};
		struct age_key k = {.pid = pid, .tid = tid, .py = py, .stack_id = stack_id};

		if (age && age->pid && pid != age->pid)
			continue;
		err = age ? add_site_by_age(p, in, &k, v, hashmap__find(sums, &k))
			  : add_sample(p, in, pid, tid, stack_id, py, vals, NULL);
		if (err)
			goto cleanup;
	}
	if (!err && age && age->min_age_ns)
		err = profile__add_comment(p, "in use: blocks at least %.3g s old (--min-age)",
					   age->min_age_ns / 1e9);
	if (!err && sample_bytes)
		err = profile__add_comment(p,
					   "sampled: one allocation per %llu bytes on average, "
					   "values scaled to unbiased totals",
					   (unsigned long long)sample_bytes);
	if (!err && h)
		err = run__add_heap_stats(p, heap_agg__stats(h));
	if (err)
		goto cleanup;
	hashmap__free(sums);
	*out = p;
	return 0;
cleanup:
	hashmap__free(sums);
	profile__free(p);
	return err;
}
