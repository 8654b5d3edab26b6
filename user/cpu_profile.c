// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
#include "cpu_profile.h"

#include <errno.h>
#include <stdlib.h>

#include <bpf/bpf.h>

#include "cli.h"
#include "collect.h"
#include "loader.h"
#include "procinfo.h"
#include "prof_cpu.h"
#include "profile.h"
#include "report.h"
#include "stackres.h"

/* Calls fn for every (key, count) in the count map. */
static int for_each_count(struct collect *c,
			  int (*fn)(struct collect *, const struct prof_cpu_key *, uint64_t,
				    void *),
			  void *arg)
{
	int fd = loader__cpu_counts_fd(collect__loader(c));
	struct prof_cpu_key key, next;
	void *prev = NULL;
	uint64_t count;
	int err;

	if (fd < 0)
		return 0;
	while (bpf_map_get_next_key(fd, prev, &next) == 0) {
		key = next;
		prev = &key;
		if (bpf_map_lookup_elem(fd, &key, &count))
			continue;
		err = fn(c, &key, count, arg);
		if (err)
			return err;
	}
	return 0;
}

static int note(struct collect *c, const struct prof_cpu_key *k, uint64_t count, void *arg)
{
	int err = procinfo__note(collect__procinfo(c), k->pid, k->tid);

	if (!err)
		err = stackres__note(collect__stacks(c), k->pid, k->user_stack_id, STACK_USER);
	if (!err)
		err = stackres__note(collect__stacks(c), k->pid, k->kern_stack_id, STACK_KERNEL);
	return err;
}

int cpu_profile__scan(struct collect *c)
{
	return for_each_count(c, note, NULL);
}

static int add(struct collect *c, const struct prof_cpu_key *k, uint64_t count, void *arg)
{
	struct profile *p = arg;
	uint32_t locs[2 * PROF_MAX_FRAMES], n = 0;
	int64_t vals[2] = {(int64_t)count, (int64_t)count * p->period};
	int err;

	note(c, k, count, NULL);
	/* As perf shows them: kernel frames on top of (leafward of) the user frames. */
	err = stackres__locations(collect__stacks(c), p, k->pid, k->kern_stack_id, STACK_KERNEL,
				  locs, 2 * PROF_MAX_FRAMES, &n);
	if (!err)
		err = stackres__locations(collect__stacks(c), p, k->pid, k->user_stack_id,
					  STACK_USER, locs, 2 * PROF_MAX_FRAMES, &n);
	if (err)
		return err;
	return profile__add_sample(
		p, k->pid, k->tid, procinfo__comm(collect__procinfo(c), k->pid, k->tid),
		procinfo__process(collect__procinfo(c), k->pid), locs, n, vals, false);
}

int cpu_profile__build(struct collect *c, const struct env *env, struct profile **out)
{
	struct profile *p = NULL;
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
	err = for_each_count(c, add, p);
	if (!err)
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
