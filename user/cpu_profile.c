// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
#include "cpu_profile.h"

#include <errno.h>
#include <stdlib.h>

#include "cli.h"
#include "collect.h"
#include "cpu_agg.h"
#include "procinfo.h"
#include "prof_common.h"
#include "profile.h"
#include "report.h"
#include "stackres.h"

static int add(struct collect *c, struct profile *p, const struct cpu_agg_key *k, uint64_t count)
{
	uint32_t locs[2 * PROF_MAX_FRAMES], n = 0;
	int64_t vals[2] = {(int64_t)count, (int64_t)count * p->period};
	int err;

	/* As perf shows them: kernel frames on top of (leafward of) the user frames. */
	err = stackres__locations(collect__stacks(c), p, k->kern_stack, locs, 2 * PROF_MAX_FRAMES,
				  &n);
	if (!err)
		err = stackres__locations(collect__stacks(c), p, k->user_stack, locs,
					  2 * PROF_MAX_FRAMES, &n);
	if (err)
		return err;
	return profile__add_sample(
		p, k->pid, k->tid, procinfo__comm(collect__procinfo(c), k->pid, k->tid),
		procinfo__process(collect__procinfo(c), k->pid), locs, n, vals, false);
}

int cpu_profile__build(struct collect *c, const struct env *env, struct profile **out)
{
	struct cpu_agg *cpu = collect__cpu(c);
	const struct cpu_agg_key *k;
	struct profile *p = NULL;
	uint64_t count;
	size_t it = 0;
	int err;

	err = profile__new(&p, "cpu");
	if (err)
		return err;
	err = profile__add_type(p, "samples", "count");
	if (!err)
		err = profile__add_type(p, "cpu", "nanoseconds");
	if (err)
		goto cleanup;
	p->default_type = 1;
	p->text_types[0] = 1;
	p->ntext_types = 1;
	p->period_type.type = profile__intern(p, "cpu");
	p->period_type.unit = profile__intern(p, "nanoseconds");
	p->period = 1000000000LL / env->cpu_hz;
	while (cpu && cpu_agg__next(cpu, &it, &k, &count)) {
		err = add(c, p, k, count);
		if (err)
			goto cleanup;
	}
	err = report__add_common(c, env, p);
	if (!err)
		err = profile__add_comment(p, "cpu-clock sampling at %u Hz", env->cpu_hz);
	if (err)
		goto cleanup;
	*out = p;
	return 0;
cleanup:
	profile__free(p);
	return err;
}
