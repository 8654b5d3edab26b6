/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/* --heap: the heap profile (alloc_objects/count, alloc_space/bytes, inuse_objects/count,
 * inuse_space/bytes, peak_objects/count, peak_space/bytes) from the heap aggregator's sites:
 * peak_* is what each stack held when its process held the most at once. */
#ifndef PROF_HEAP_PROFILE_H
#define PROF_HEAP_PROFILE_H

#include <stdint.h>

struct build_inputs;
struct heap_agg;
struct profile;

/*
 * An empty heap profile: the shape every heap profile has (--heap's, and a memtrace trace's read
 * back), with period bytes between samples and in's run metadata.
 */
int heap_profile__new(struct profile **out, const struct build_inputs *in, int64_t period);

/*
 * In use by age: each live block's in-use share goes to a sample of its stack labelled `age`
 * with its bucket (heap_profile__age_name), allocations to a sample without the label.  now:
 * the time ages are taken at (bpf_ktime_get_ns's clock); min_age_ns: younger blocks are left out
 * of inuse_* (--min-age).  Blocks of unknown birth (0) are in use without the label.
 */
struct heap_age {
	uint64_t now, min_age_ns;
	uint32_t pid; /* 0: every process; else only this one's sites (an OOM kill's profile) */
};

#define HEAP_AGE_BUCKETS 5
/* The `age` label of a block age_ns old: "0-10s", "10s-1m", "1m-10m", "10m-1h" or "1h+". */
const char *heap_profile__age_name(uint64_t age_ns);

/* sample_bytes: --sample-bytes (0: every allocation), the profile's period.  age: NULL, in-use
 * values per stack without ages. */
int heap_profile__build(struct profile **out, struct heap_agg *h, const struct build_inputs *in,
			uint64_t sample_bytes, const struct heap_age *age);

#endif /* PROF_HEAP_PROFILE_H */
