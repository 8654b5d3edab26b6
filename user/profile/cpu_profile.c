// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
#include "profile/cpu_profile.h"

#include "agg/cpu_agg.h"
#include "prof_common.h"
#include "prof_python.h"
#include "profile/build.h"
#include "profile/profile.h"

static const char *const cpu_types[][2] = {{"samples", "count"}, {"cpu", "nanoseconds"}};

static int add(struct profile *p, const struct build_inputs *in, const struct cpu_agg_key *k,
	       uint64_t count)
{
	uint32_t locs[PROF_KERN_FRAMES + PROF_STACK_WORDS], n = 0;
	int64_t vals[2] = {(int64_t)count, (int64_t)count * p->period};
	int err;

	/* As perf shows them: kernel frames on top of (leafward of) the user frames. */
	err = build__locations(p, in->stacks, k->kern_stack, locs,
			       PROF_KERN_FRAMES + PROF_STACK_WORDS, &n);
	if (!err)
		err = build__locations(p, in->stacks, k->user_stack, locs,
				       PROF_KERN_FRAMES + PROF_STACK_WORDS, &n);
	if (err)
		return err;
	return build__sample(p, in, k->pid, k->tid, locs, n, vals, build__py_flags(k->py));
}

int cpu_profile__build(struct profile **out, struct cpu_agg *cpu, const struct build_inputs *in,
		       unsigned hz)
{
	const struct cpu_agg_key *k;
	struct profile *p = NULL;
	uint64_t count;
	size_t it = 0;
	int err;

	err = build__profile(&p, in,
			     &(struct build_shape){
				     .mode = "cpu",
				     .types = cpu_types,
				     .ntypes = 2,
				     .default_type = 1,
				     .text_types = {1},
				     .ntext_types = 1,
				     .period_type = "cpu",
				     .period_unit = "nanoseconds",
				     .period = 1000000000LL / hz,
			     });
	if (err)
		return err;
	while (cpu && cpu_agg__next(cpu, &it, &k, &count)) {
		err = add(p, in, k, count);
		if (err)
			goto cleanup;
	}
	err = profile__add_comment(p, "cpu-clock sampling at %u Hz", hz);
	if (err)
		goto cleanup;
	*out = p;
	return 0;
cleanup:
	profile__free(p);
	return err;
}
