// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
#include "profile/heap_profile.h"

#include <math.h>

#include "agg/heap_agg.h"
#include "prof_common.h"
#include "profile/build.h"
#include "profile/profile.h"
#include "profile/run.h"

static const char *const heap_types[][2] = {
	{"alloc_objects", "count"},
	{"alloc_space", "bytes"},
	{"inuse_objects", "count"},
	{"inuse_space", "bytes"},
};

int heap_profile__new(struct profile **out, const struct build_inputs *in, int64_t period)
{
	/* In use first in the text report, then allocated. */
	return build__profile(out, in,
			      &(struct build_shape){
				      .mode = "heap",
				      .types = heap_types,
				      .ntypes = 4,
				      .default_type = 3,
				      .text_types = {3, 1},
				      .ntext_types = 2,
				      .period_type = "space",
				      .period_unit = "bytes",
				      .period = period,
			      });
}

int heap_profile__build(struct profile **out, struct heap_agg *h, const struct build_inputs *in,
			uint64_t sample_bytes)
{
	const struct heap_site_values *v;
	struct profile *p = NULL;
	uint32_t locs[PROF_STACK_WORDS];
	uint32_t pid, tid, py;
	int32_t stack_id;
	size_t it = 0;
	int err;

	err = heap_profile__new(&p, in, (int64_t)sample_bytes);
	if (err)
		return err;
	while (h && heap_agg__next_site(h, &it, &pid, &tid, &stack_id, &py, &v)) {
		int64_t vals[4] = {llround(v->alloc_objects), llround(v->alloc_bytes),
				   llround(v->inuse_objects), llround(v->inuse_bytes)};
		uint32_t n = 0;

		err = build__locations(p, in->stacks, stack_id, locs, PROF_STACK_WORDS, &n);
		if (!err)
			err = build__sample(p, in, pid, tid, locs, n, vals, build__py_flags(py));
		if (err)
			goto cleanup;
	}
	if (sample_bytes)
		err = profile__add_comment(p,
					   "sampled: one allocation per %llu bytes on average, "
					   "values scaled to unbiased totals",
					   (unsigned long long)sample_bytes);
	if (!err && h)
		err = run__add_heap_stats(p, heap_agg__stats(h));
	if (err)
		goto cleanup;
	*out = p;
	return 0;
cleanup:
	profile__free(p);
	return err;
}
