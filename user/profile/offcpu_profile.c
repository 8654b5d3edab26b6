// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
#include "profile/offcpu_profile.h"

#include "agg/offcpu_agg.h"
#include "prof_offcpu.h"
#include "profile/build.h"
#include "profile/profile.h"

static const char *const offcpu_types[][2] = {{"events", "count"}, {"offcpu", "nanoseconds"}};

const char *offcpu_profile__state_name(unsigned state)
{
	return state == PROF_OFFCPU_RUNNABLE ? "runnable" : "idle";
}

static int add(struct profile *p, const struct build_inputs *in, const struct offcpu_agg_key *k,
	       const struct offcpu_agg_value *v)
{
	uint32_t locs[PROF_KERN_FRAMES + PROF_STACK_WORDS], n = 0;
	int64_t vals[2] = {(int64_t)v->count, (int64_t)v->ns};
	int err;

	/* As the cpu profile: kernel frames (the way into the scheduler) leafward of user frames.
	 */
	err = build__tracepoint_locations(p, in->stacks, k->kern_stack, locs,
					  PROF_KERN_FRAMES + PROF_STACK_WORDS, &n);
	if (!err)
		err = build__locations(p, in->stacks, k->user_stack, locs,
				       PROF_KERN_FRAMES + PROF_STACK_WORDS, &n);
	if (err)
		return err;
	return build__sample_state(p, in, k->pid, k->tid, locs, n, vals, build__py_flags(k->py),
				   offcpu_profile__state_name(k->state));
}

int offcpu_profile__build(struct profile **out, struct offcpu_agg *a, const struct build_inputs *in)
{
	const struct offcpu_agg_value *v;
	const struct offcpu_agg_key *k;
	struct profile *p = NULL;
	size_t it = 0;
	int err;

	err = build__profile(&p, in,
			     &(struct build_shape){
				     .mode = "offcpu",
				     .types = offcpu_types,
				     .ntypes = 2,
				     .default_type = 1,
				     .text_types = {1},
				     .ntext_types = 1,
			     });
	if (err)
		return err;
	while (a && offcpu_agg__next(a, &it, &k, &v)) {
		err = add(p, in, k, v);
		if (err)
			goto cleanup;
	}
	err = profile__add_comment(p, "off-CPU time from sched_switch: state=idle (asleep, "
				      "waiting) or runnable (preempted, waiting for a CPU)");
	if (err)
		goto cleanup;
	*out = p;
	return 0;
cleanup:
	profile__free(p);
	return err;
}
