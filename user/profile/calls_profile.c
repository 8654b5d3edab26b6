// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
#include "profile/calls_profile.h"

#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "agg/calls_agg.h"
#include "profile/build.h"
#include "profile/profile.h"
#include "profile/run.h"

void calls_profile__format_name(const struct calls_name *n, char *name, size_t name_len,
				char *system_name, size_t system_len)
{
	switch (n->runtime) {
	case PROF_RT_RUBY:
		snprintf(name, name_len, "%s%s%s", n->cls, *n->cls ? "#" : "", n->fn);
		break;
	case PROF_RT_PHP:
		snprintf(name, name_len, "%s%s%s", n->cls, *n->cls ? "::" : "", n->fn);
		break;
	case PROF_RT_JAVA:
		/* JVM internal form "java/lang/String" -> "java.lang.String". */
		snprintf(name, name_len, "%s%s%s", n->cls, *n->cls ? "." : "", n->fn);
		for (char *c = name; *c; c++)
			if (*c == '/')
				*c = '.';
		snprintf(system_name, system_len, "%s%s", name, n->file);
		return;
	default:
		snprintf(name, name_len, "%s", n->fn);
		break;
	}
	snprintf(system_name, system_len, "%s", name);
}

struct build {
	struct profile *p;
	struct calls_agg *agg;
	uint32_t *loc_of_node; /* node id -> location id, 0 = not made yet */
	uint32_t *locs;
	uint32_t cap;
};

static int node_location(struct build *b, uint32_t node, uint32_t *out)
{
	const struct calls_node *n = calls_agg__node(b->agg, node);
	const struct calls_name *nm = calls_agg__lookup_name(b->agg, n->name_id);
	char name[512], sys[1024];
	const char *file = "";
	uint32_t fid;
	int err;

	if (b->loc_of_node[node]) {
		*out = b->loc_of_node[node];
		return 0;
	}
	if (nm) {
		calls_profile__format_name(nm, name, sizeof(name), sys, sizeof(sys));
		if (nm->runtime != PROF_RT_JAVA)
			file = nm->file; /* Java's third string is the signature */
	} else {
		/* Its name record was lost (ring buffer full): keep the call, unnamed. */
		snprintf(name, sizeof(name), "[unknown function %016" PRIx64 "]", n->name_id);
		snprintf(sys, sizeof(sys), "%s", name);
	}
	err = profile__function(b->p, &fid, name, sys, file, 0);
	if (!err)
		err = profile__location(b->p, &b->loc_of_node[node], 0, 0, fid, n->line);
	if (!err)
		*out = b->loc_of_node[node];
	return err;
}

/* Leaf-first locations of node's path; *partial when it ends in a caller never seen. */
static int path_locations(struct build *b, uint32_t node, uint32_t *n, bool *partial)
{
	int err;

	*n = 0;
	*partial = false;
	while (node) {
		const struct calls_node *cn = calls_agg__node(b->agg, node);

		/* Entered frames and named outer frames are each capped at the depth limit. */
		if (*n >= 2 * CALLS_AGG_MAX_DEPTH + 2) {
			*partial = true;
			break;
		}
		if (!cn)
			return -EINVAL;
		if (!cn->name_id) {
			*partial = true; /* a placeholder: the callers from here on are unknown */
			break;
		}
		if (*n == b->cap) {
			uint32_t cap = b->cap ? b->cap * 2 : 256;
			uint32_t *l = realloc(b->locs, cap * sizeof(*l));

			if (!l)
				return -ENOMEM;
			b->locs = l;
			b->cap = cap;
		}
		err = node_location(b, node, &b->locs[*n]);
		if (err)
			return err;
		(*n)++;
		node = cn->parent;
	}
	return 0;
}

static const char *const calls_types[][2] = {
	{"calls", "count"},
	{"wall", "nanoseconds"},
	{"busy", "nanoseconds"},
	{"idle", "nanoseconds"},
};

int calls_profile__build(struct profile **out, struct calls_agg *agg, const struct build_inputs *in,
			 const char *const *notes, size_t nnotes)
{
	struct build b = {.agg = agg};
	const struct calls_values *v;
	uint64_t total_calls = 0, total_wall = 0;
	uint32_t pid, tid, node;
	size_t it = 0;
	int err;

	/* Wall time first in the text report, then calls. */
	err = build__profile(&b.p, in,
			     &(struct build_shape){
				     .mode = "calls",
				     .types = calls_types,
				     .ntypes = 4,
				     .default_type = 1,
				     .text_types = {1, 0},
				     .ntext_types = 2,
			     });
	if (err)
		return err;

	if (b.agg) {
		b.loc_of_node = calloc(calls_agg__node_count(b.agg), sizeof(*b.loc_of_node));
		if (!b.loc_of_node) {
			err = -ENOMEM;
			goto cleanup;
		}
		while (calls_agg__next_sample(b.agg, &it, &pid, &tid, &node, &v)) {
			uint64_t busy = v->busy_ns < v->wall_ns ? v->busy_ns : v->wall_ns;
			int64_t vals[4] = {(int64_t)v->calls, (int64_t)v->wall_ns, (int64_t)busy,
					   (int64_t)(v->wall_ns - busy)};
			bool partial;
			uint32_t n;

			if (!v->calls && !v->wall_ns)
				continue;
			err = path_locations(&b, node, &n, &partial);
			if (!err)
				err = build__sample(b.p, in, pid, tid, b.locs, n, vals, partial);
			if (err)
				goto cleanup;
			total_calls += v->calls;
			total_wall += v->wall_ns;
		}
	}
	/* Return-only runtimes (CPython 3.11) give counts without times: a wall default would
	 * show only zeros in folded output and the summary, so calls become the default. */
	if (total_calls && !total_wall) {
		b.p->default_type = 0;
		b.p->text_types[0] = 0;
		b.p->ntext_types = 1;
		err = profile__add_comment(b.p, "no wall time was measured (return-only probes): "
						"default sample type is calls");
		if (err)
			goto cleanup;
	}
	err = profile__add_comment(b.p, "calls: completed calls of the leaf; wall: self "
					"wall time of the leaf (frames above it give the "
					"inclusive time); busy: of which on the CPU; idle: of "
					"which off the CPU (waiting: asleep, blocked or "
					"preempted)");
	for (size_t i = 0; i < nnotes && !err; i++)
		err = profile__add_comment(b.p, "limit: %s", notes[i]);
	if (!err && b.agg)
		err = run__add_call_stats(b.p, calls_agg__stats(b.agg));
	if (err)
		goto cleanup;
	*out = b.p;
	b.p = NULL;
cleanup:
	free(b.loc_of_node);
	free(b.locs);
	profile__free(b.p);
	return err;
}
