/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/* --heap: the heap profile (alloc_objects/count, alloc_space/bytes, inuse_objects/count,
 * inuse_space/bytes) from the heap aggregator's sites. */
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

/* sample_bytes: --sample-bytes (0: every allocation), the profile's period. */
int heap_profile__build(struct profile **out, struct heap_agg *h, const struct build_inputs *in,
			uint64_t sample_bytes);

#endif /* PROF_HEAP_PROFILE_H */
