// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
#include "profile/build.h"

#include "prof_python.h"
#include "prof_stack.h"

#include <errno.h>
#include <string.h>

#include "sym/stackres.h"
#include "util/hashmap.h"
#include "proc/procinfo.h"
#include "profile/profile.h"
#include "profile/run.h"

int build__profile(struct profile **out, const struct build_inputs *in, const struct build_shape *s)
{
	struct profile *p = NULL;
	int err;

	err = profile__new(&p, s->mode);
	for (uint32_t i = 0; i < s->ntypes && !err; i++)
		err = profile__add_type(p, s->types[i][0], s->types[i][1]);
	if (!err && in->run)
		err = profile_run__apply(in->run, p);
	if (err)
		goto cleanup;
	p->default_type = s->default_type;
	memcpy(p->text_types, s->text_types, sizeof(p->text_types));
	p->ntext_types = s->ntext_types;
	if (s->period_type) {
		p->period_type.type = profile__intern(p, s->period_type);
		p->period_type.unit = profile__intern(p, s->period_unit);
		if (!p->period_type.type || !p->period_type.unit) {
			err = -ENOMEM;
			goto cleanup;
		}
		p->period = s->period;
	}
	*out = p;
	return 0;
cleanup:
	profile__free(p);
	return err;
}

static int frame_location(struct profile *p, const struct stackres_frame *f, uint32_t *out)
{
	const struct sym_mapping *m = f->sym.map;
	uint32_t mapping_id = 0, function_id = 0;
	int err;

	if (m) {
		struct profile_mapping pm = {
			.start = m->start,
			.limit = m->limit,
			.offset = m->offset,
			.file = m->path,
			.build_id = m->build_id,
			.has_functions = m->has_symbols,
		};

		err = profile__mapping(p, &mapping_id, &pm);
		if (err)
			return err;
	}
	if (f->sym.name) {
		err = profile__function(p, &function_id, f->sym.name,
					f->sym.system_name ? f->sym.system_name : f->sym.name,
					f->sym.file, f->sym.start_line);
		if (err)
			return err;
	}
	/* An interpreter frame, or the cut of a deep stack, has no address of its own: its
	 * function and line say it all. */
	return profile__location(
		p, out, prof_py_is_frame(f->addr) || prof_stack_is_cut(f->addr) ? 0 : f->addr,
		mapping_id, function_id, f->sym.line);
}

static int locations(struct profile *p, struct stackres *r, int32_t id, uint32_t *out, uint32_t max,
		     uint32_t *n, bool tracepoint)
{
	const struct stackres_frame *frames;
	unsigned nframes, i = 0;
	int err;

	frames = stackres__frames(r, id, &nframes);
	/* The tracepoint's iterator, called when it has more than one probe: not the thread's. */
	while (tracepoint && i < nframes && frames[i].sym.system_name &&
	       !strncmp(frames[i].sym.system_name, "__traceiter_", strlen("__traceiter_")))
		i++;
	for (; i < nframes && *n < max; i++) {
		if (prof_py_is_print(frames[i].addr))
			continue; /* the Python frame before it says it all */
		err = frame_location(p, &frames[i], &out[*n]);
		/* The function inlined here came just before, at the same address (a pair the
		 * model refuses, made in another order, stays two frames and two Locations). */
		if (!err && i && frames[i - 1].sym.inlined &&
		    frames[i - 1].addr == frames[i].addr && *n)
			profile__inline_pair(p, out[*n], out[*n - 1]);
		if (err)
			return err;
		(*n)++;
	}
	return 0;
}

int build__locations(struct profile *p, struct stackres *r, int32_t id, uint32_t *out, uint32_t max,
		     uint32_t *n)
{
	return locations(p, r, id, out, max, n, false);
}

int build__tracepoint_locations(struct profile *p, struct stackres *r, int32_t id, uint32_t *out,
				uint32_t max, uint32_t *n)
{
	return locations(p, r, id, out, max, n, true);
}

uint32_t build__py_flags(uint32_t py)
{
	if (py == PROF_PY_THREAD_GIL)
		return PROFILE_SAMPLE_GIL_HELD;
	return py == PROF_PY_THREAD_NO_GIL ? PROFILE_SAMPLE_GIL_RELEASED : 0;
}

int build__sample(struct profile *p, const struct build_inputs *in, uint32_t pid, uint32_t tid,
		  const uint32_t *locs, uint32_t n, const int64_t *vals, uint32_t flags)
{
	return build__sample_state(p, in, pid, tid, locs, n, vals, flags, NULL);
}

int build__sample_state(struct profile *p, const struct build_inputs *in, uint32_t pid,
			uint32_t tid, const uint32_t *locs, uint32_t n, const int64_t *vals,
			uint32_t flags, const char *state)
{
	const struct procinfo_labels *l = procinfo__labels(in->procs, pid);
	const char *name;
	int err;

	/* Container and host modes: where the process runs, once per profile. */
	if (l && !profile__process(p, pid)) {
		err = profile__set_process(p, &(struct profile_process){
						      .pid = pid,
						      .ns_pid = l->ns_pid,
						      .container_id = l->container_id,
						      .cgroup = l->cgroup,
					      });
		if (err)
			return err;
	}
	err = profile__add_sample_state(p, pid, tid, procinfo__comm(in->procs, pid, tid),
					procinfo__process(in->procs, pid), locs, n, vals, flags,
					state);
	name = in->stacks ? stackres__thread_name(in->stacks, pid, tid) : NULL;
	if (!err && name) {
		name = profile__intern(p, name);
		if (!name)
			return -ENOMEM;
		p->samples[p->last_sample].thread_name = name;
	}
	/* procinfo's own string, as comm and process are: it lives as long as procinfo. */
	if (!err && !p->samples[p->last_sample].exe)
		p->samples[p->last_sample].exe = procinfo__exe(in->procs, pid);
	return err;
}

int build__main_mapping(struct profile *p, struct procinfo *procs)
{
	struct hashmap *weight; /* uint64_t pid -> int64_t */
	const uint64_t *pid;
	const int64_t *w;
	uint32_t top = 0;
	int64_t best = -1;
	const char *exe;
	size_t it = 0;
	int err;

	if (!p->nmappings || !p->nsamples)
		return 0;
	err = hashmap__new(&weight, sizeof(uint64_t), sizeof(int64_t));
	for (uint32_t i = 0; i < p->nsamples && !err; i++) {
		uint64_t key = p->samples[i].pid;
		int64_t *v;

		err = hashmap__upsert(weight, (void **)&v, &key, NULL);
		if (!err)
			*v += p->samples[i].values[0];
	}
	while (!err && hashmap__next(weight, &it, (const void **)&pid, (void **)&w))
		if (*w > best || (*w == best && *pid < top)) {
			best = *w;
			top = (uint32_t)*pid;
		}
	hashmap__free(weight);
	if (err)
		return err;
	exe = procinfo__exe(procs, top);
	p->main_mapping = 0;
	/* Of the executable's mappings, the lowest: where its text is, before any data. */
	for (uint32_t i = 0; exe && i < p->nmappings; i++)
		if (!strcmp(p->mappings[i].file, exe) &&
		    (!p->main_mapping ||
		     p->mappings[i].start < p->mappings[p->main_mapping - 1].start))
			p->main_mapping = i + 1;
	return 0;
}
