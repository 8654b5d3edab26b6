// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
#include "profile/split.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "profile/profile.h"
#include "util/hashmap.h"

/* Interned strings of one profile are equal exactly when their pointers are. */
struct service_key {
	const char *name;
	uint64_t is_container;
};

/*
 * Scratch tables indexed by the original's ids.  A stamp equal to the current part's number
 * marks an entry as valid for that part, so no table is cleared between parts.
 */
struct split_ctx {
	const struct profile *p;
	uint32_t *map_stamp, *map_new;
	uint32_t *fn_stamp, *fn_new;
	uint32_t *loc_stamp, *loc_new;
	uint32_t *ids; /* one sample's new location ids */
};

static const char *service_of(const struct profile *p, const struct profile_sample *s,
			      bool *is_container)
{
	const struct profile_process *pp = profile__process(p, s->pid);

	*is_container = pp && pp->container_id && *pp->container_id;
	if (*is_container)
		return pp->container_id;
	if (s->process && *s->process)
		return s->process;
	if (s->comm && *s->comm)
		return s->comm;
	return "unknown";
}

static int copy_header(struct profile *q, const struct profile *p)
{
	int err;

	for (uint32_t i = 0; i < p->ntypes; i++) {
		err = profile__add_type(q, p->types[i].type, p->types[i].unit);
		if (err)
			return err;
	}
	q->default_type = p->default_type;
	q->state_key = p->state_key; /* a static string */
	memcpy(q->text_types, p->text_types, sizeof(q->text_types));
	q->ntext_types = p->ntext_types;
	q->period_type.type = profile__intern(q, p->period_type.type);
	q->period_type.unit = profile__intern(q, p->period_type.unit);
	if (!q->period_type.type || !q->period_type.unit)
		return -ENOMEM;
	q->period = p->period;
	q->time_nanos = p->time_nanos;
	q->duration_nanos = p->duration_nanos;
	for (uint32_t i = 0; i < p->ncomments; i++) {
		err = profile__add_comment(q, "%s", p->comments[i]);
		if (err)
			return err;
	}
	for (uint32_t i = 0; i < p->nlabels; i++) {
		err = profile__add_label(q, p->labels[i].key, p->labels[i].str, p->labels[i].num,
					 p->labels[i].series);
		if (err)
			return err;
	}
	for (uint32_t i = 0; i < p->ncounters; i++) {
		err = profile__add_counter_kind(q, p->counters[i].name, p->counters[i].desc,
						p->counters[i].value, p->counters[i].kind);
		if (err)
			return err;
	}
	return 0;
}

/* The location's new id in q, copying its function on first use. */
static int copy_location(struct split_ctx *c, struct profile *q, uint32_t stamp, uint32_t loc_id,
			 uint32_t *out)
{
	const struct profile_location *loc = &c->p->locations[loc_id - 1];
	const struct profile_function *fn;
	uint32_t fn_id = 0;
	int err;

	if (c->loc_stamp[loc_id] == stamp) {
		*out = c->loc_new[loc_id];
		return 0;
	}
	if (loc->function_id) {
		if (c->fn_stamp[loc->function_id] != stamp) {
			fn = &c->p->functions[loc->function_id - 1];
			err = profile__function(q, &c->fn_new[loc->function_id], fn->name,
						fn->system_name, fn->file, fn->start_line);
			if (err)
				return err;
			c->fn_stamp[loc->function_id] = stamp;
		}
		fn_id = c->fn_new[loc->function_id];
	}
	err = profile__location(q, &c->loc_new[loc_id], loc->address,
				loc->mapping_id ? c->map_new[loc->mapping_id] : 0, fn_id,
				loc->line);
	if (err)
		return err;
	c->loc_stamp[loc_id] = stamp;
	*out = c->loc_new[loc_id];
	/* The function inlined here: copied as well (a sample holds it just before). */
	if (loc->inner && loc->inner < loc_id) {
		uint32_t inner;

		err = copy_location(c, q, stamp, loc->inner, &inner);
		if (!err)
			err = profile__inline_pair(q, *out, inner);
	}
	return err;
}

/* Fills q with the samples listed from first through next[] (UINT32_MAX ends the list). */
static int fill_part(struct split_ctx *c, struct profile *q, uint32_t stamp, uint32_t first,
		     const uint32_t *next)
{
	const struct profile *p = c->p;
	int err;

	/* Mappings first, in the original's order, so the part's first one is a main executable
	 * whenever the original's was among those it uses. */
	for (uint32_t i = first; i != UINT32_MAX; i = next[i]) {
		const struct profile_sample *s = &p->samples[i];

		for (uint32_t j = 0; j < s->nlocs; j++) {
			uint32_t m = p->locations[s->loc_ids[j] - 1].mapping_id;

			if (m)
				c->map_stamp[m] = stamp;
		}
	}
	for (uint32_t m = 1; m <= p->nmappings; m++) {
		if (c->map_stamp[m] != stamp)
			continue;
		err = profile__mapping(q, &c->map_new[m], &p->mappings[m - 1]);
		if (err)
			return err;
	}
	for (uint32_t i = first; i != UINT32_MAX; i = next[i]) {
		const struct profile_sample *s = &p->samples[i];
		const struct profile_process *pp;
		uint32_t flags;

		for (uint32_t j = 0; j < s->nlocs; j++) {
			err = copy_location(c, q, stamp, s->loc_ids[j], &c->ids[j]);
			if (err)
				return err;
		}
		/* Every label of the sample goes with it: Python's gil and thread_name too. */
		flags = (s->partial ? PROFILE_SAMPLE_PARTIAL : 0) |
			(s->gil && !strcmp(s->gil, "held") ? PROFILE_SAMPLE_GIL_HELD : 0) |
			(s->gil && !strcmp(s->gil, "released") ? PROFILE_SAMPLE_GIL_RELEASED : 0);
		err = profile__add_sample_state(q, s->pid, s->tid, s->comm, s->process, c->ids,
						s->nlocs, s->values, flags, s->state);
		if (err)
			return err;
		if (s->thread_name) {
			const char *name = profile__intern(q, s->thread_name);

			if (!name)
				return -ENOMEM;
			q->samples[q->last_sample].thread_name = name;
		}
		if (!q->samples[q->last_sample].exe)
			q->samples[q->last_sample].exe = s->exe; /* procinfo's, as comm */
		pp = profile__process(p, s->pid);
		if (pp && !profile__process(q, s->pid)) {
			err = profile__set_process(q, pp);
			if (err)
				return err;
		}
	}
	return 0;
}

/* A service's claim to a part of its own: containers first, then the larger values, then the
 * first seen. */
struct service_rank {
	uint32_t idx;
	bool is_container;
	uint64_t weight;
};

static int rank_cmp(const void *a, const void *b)
{
	const struct service_rank *x = a, *y = b;

	if (x->is_container != y->is_container)
		return x->is_container ? -1 : 1;
	if (x->weight != y->weight)
		return x->weight > y->weight ? -1 : 1;
	return x->idx < y->idx ? -1 : x->idx > y->idx;
}

/*
 * More services than max_parts: the max_parts - 1 best ranked keep their parts, in first-seen
 * order, and the samples of all the others go to one last part, SPLIT_OTHER.  Renumbers parts[]
 * and svc[] (each sample's part) in place.
 */
static int fold(struct split_part *parts, uint32_t *nparts, uint32_t *nfolded, uint32_t *svc,
		const struct profile *p, uint32_t max_parts)
{
	uint32_t n = *nparts, keep = max_parts - 1, m = 0;
	struct service_rank *r = calloc(n, sizeof(*r));
	uint32_t *renum = calloc(n, sizeof(*renum));
	int err = 0;

	if (!r || !renum) {
		err = -ENOMEM;
		goto cleanup;
	}
	for (uint32_t k = 0; k < n; k++) {
		r[k].idx = k;
		r[k].is_container = parts[k].is_container;
	}
	for (uint32_t i = 0; p->default_type < p->ntypes && i < p->nsamples; i++) {
		int64_t v = p->samples[i].values[p->default_type];

		r[svc[i]].weight += v < 0 ? -(uint64_t)v : (uint64_t)v;
	}
	qsort(r, n, sizeof(*r), rank_cmp);
	for (uint32_t k = 0; k < n; k++)
		renum[k] = UINT32_MAX;
	for (uint32_t j = 0; j < keep; j++)
		renum[r[j].idx] = 0;
	for (uint32_t k = 0; k < n; k++) {
		if (renum[k] == UINT32_MAX) {
			renum[k] = keep;
			continue;
		}
		renum[k] = m;
		parts[m++] = parts[k];
	}
	parts[keep] = (struct split_part){.service = SPLIT_OTHER};
	for (uint32_t i = 0; i < p->nsamples; i++)
		svc[i] = renum[svc[i]];
	*nparts = keep + 1;
	*nfolded = n - keep;
cleanup:
	free(r);
	free(renum);
	return err;
}

int split__by_service(struct split_part **out, uint32_t *nout, uint32_t *nfolded,
		      const struct profile *p, uint32_t max_parts)
{
	struct split_ctx c = {.p = p};
	struct split_part *parts = NULL;
	uint32_t *first = NULL, *last = NULL, *next = NULL, *svc = NULL, nparts = 0, maxlocs = 0;
	struct hashmap *services = NULL;
	int err;

	*out = NULL;
	*nout = 0;
	*nfolded = 0;
	err = hashmap__new(&services, sizeof(struct service_key), sizeof(uint32_t));
	if (err)
		goto cleanup;
	next = calloc(p->nsamples + 1, sizeof(*next));
	svc = calloc(p->nsamples + 1, sizeof(*svc));
	/* At most one part per sample. */
	parts = calloc(p->nsamples + 1, sizeof(*parts));
	first = calloc(p->nsamples + 1, sizeof(*first));
	last = calloc(p->nsamples + 1, sizeof(*last));
	c.map_stamp = calloc(p->nmappings + 1, sizeof(uint32_t));
	c.map_new = calloc(p->nmappings + 1, sizeof(uint32_t));
	c.fn_stamp = calloc(p->nfunctions + 1, sizeof(uint32_t));
	c.fn_new = calloc(p->nfunctions + 1, sizeof(uint32_t));
	c.loc_stamp = calloc(p->nlocations + 1, sizeof(uint32_t));
	c.loc_new = calloc(p->nlocations + 1, sizeof(uint32_t));
	if (!next || !svc || !parts || !first || !last || !c.map_stamp || !c.map_new ||
	    !c.fn_stamp || !c.fn_new || !c.loc_stamp || !c.loc_new) {
		err = -ENOMEM;
		goto cleanup;
	}

	/* Each sample's service, numbered in first-seen order. */
	for (uint32_t i = 0; i < p->nsamples; i++) {
		struct service_key key;
		bool created, is_container;
		uint32_t *idx;

		memset(&key, 0, sizeof(key));
		key.name = service_of(p, &p->samples[i], &is_container);
		key.is_container = is_container;
		err = hashmap__upsert(services, (void **)&idx, &key, &created);
		if (err)
			goto cleanup;
		if (created) {
			*idx = nparts++;
			parts[*idx].service = key.name; /* the original's, replaced below */
			parts[*idx].is_container = is_container;
		}
		svc[i] = *idx;
		if (p->samples[i].nlocs > maxlocs)
			maxlocs = p->samples[i].nlocs;
	}
	if (max_parts && nparts > max_parts) {
		err = fold(parts, &nparts, nfolded, svc, p, max_parts);
		if (err)
			goto cleanup;
	}
	/* One linked list of samples per part. */
	for (uint32_t k = 0; k < nparts; k++)
		first[k] = UINT32_MAX;
	for (uint32_t i = 0; i < p->nsamples; i++) {
		if (first[svc[i]] == UINT32_MAX)
			first[svc[i]] = i;
		else
			next[last[svc[i]]] = i;
		last[svc[i]] = i;
		next[i] = UINT32_MAX;
	}
	c.ids = calloc(maxlocs + 1, sizeof(*c.ids));
	if (!c.ids) {
		err = -ENOMEM;
		goto cleanup;
	}

	for (uint32_t k = 0; k < nparts; k++) {
		struct profile *q;

		err = profile__new(&q, p->mode);
		if (err)
			goto cleanup;
		parts[k].profile = q;
		parts[k].service = profile__intern(q, parts[k].service);
		if (!parts[k].service) {
			err = -ENOMEM;
			goto cleanup;
		}
		err = copy_header(q, p);
		if (!err)
			err = fill_part(&c, q, k + 1, first[k], next);
		if (err)
			goto cleanup;
	}
	*out = parts;
	*nout = nparts;
	parts = NULL;
cleanup:
	if (parts)
		split__free(parts, nparts);
	if (err)
		*nfolded = 0;
	hashmap__free(services);
	free(next);
	free(svc);
	free(first);
	free(last);
	free(c.map_stamp);
	free(c.map_new);
	free(c.fn_stamp);
	free(c.fn_new);
	free(c.loc_stamp);
	free(c.loc_new);
	free(c.ids);
	return err;
}

void split__free(struct split_part *parts, uint32_t n)
{
	if (!parts)
		return;
	for (uint32_t i = 0; i < n; i++)
		profile__free(parts[i].profile);
	free(parts);
}
