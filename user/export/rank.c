// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
#include "export/rank.h"

#include <errno.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "profile/profile.h"
#include "util/hashmap.h"
#include "util/strpool.h"

struct node {
	uint32_t stamp; /* 1 + position of the last sample that counted this node's cum */
	bool touched;
	bool sched; /* off-CPU: a kernel frame of the scheduler's (is_sched_frame) */
};

struct rank {
	const struct profile *p;
	struct strpool *names;
	struct rank_row *rows; /* per node: name and the sums of the current computation */
	struct node *nodes;
	uint32_t nnodes;
	uint32_t *loc_node; /* location id -> node index */
	uint32_t *touched;  /* nodes touched by the current computation */
	struct rank_row *sorted;
};

/*
 * The kernel's own way into a context switch: every off-CPU stack starts with them, so as the
 * "own" frame they would say nothing (__schedule 100 %).  The frame below them says why the
 * thread waited (do_nanosleep, futex_wait_queue, do_epoll_wait, pipe_read).
 */
static bool is_sched_frame(const char *name)
{
	static const char *const prefixes[] = {
		"__schedule", "schedule", "io_schedule", "preempt_schedule", "__cond_resched",
	};

	for (size_t i = 0; i < sizeof(prefixes) / sizeof(prefixes[0]); i++)
		if (!strncmp(name, prefixes[i], strlen(prefixes[i])))
			return true;
	return false;
}

static int build_nodes(struct rank *r)
{
	bool offcpu = r->p->mode && !strcmp(r->p->mode, "offcpu");
	const struct profile *p = r->p;
	struct hashmap *by_name = NULL; /* interned name pointer -> node index */
	char buf[256];
	int err;

	err = hashmap__new(&by_name, sizeof(const char *), sizeof(uint32_t));
	if (err)
		return err;
	for (uint32_t id = 1; id <= p->nlocations; id++) {
		const char *name =
			strpool__intern(r->names, profile__location_name(p, id, buf, sizeof(buf)));
		uint32_t *idx;
		bool created;

		if (!name) {
			err = -ENOMEM;
			goto cleanup;
		}
		err = hashmap__upsert(by_name, (void **)&idx, &name, &created);
		if (err)
			goto cleanup;
		if (created) {
			*idx = r->nnodes++;
			r->rows[*idx].name = name;
		}
		r->loc_node[id] = *idx;
		if (offcpu && profile__location_kind(p, id) == PROFILE_FRAME_KERNEL &&
		    is_sched_frame(name))
			r->nodes[*idx].sched = true;
	}
cleanup:
	hashmap__free(by_name);
	return err;
}

int rank__new(struct rank **out, const struct profile *p)
{
	struct rank *r = calloc(1, sizeof(*r));
	size_t n = (size_t)p->nlocations + 1;
	int err;

	if (!r)
		return -ENOMEM;
	r->p = p;
	r->loc_node = calloc(n, sizeof(*r->loc_node));
	r->rows = calloc(n, sizeof(*r->rows));
	r->nodes = calloc(n, sizeof(*r->nodes));
	r->touched = calloc(n, sizeof(*r->touched));
	r->sorted = calloc(n, sizeof(*r->sorted));
	if (!r->loc_node || !r->rows || !r->nodes || !r->touched || !r->sorted) {
		err = -ENOMEM;
		goto cleanup;
	}
	err = strpool__new(&r->names);
	if (err)
		goto cleanup;
	err = build_nodes(r);
cleanup:
	if (err) {
		rank__free(r);
		return err;
	}
	*out = r;
	return 0;
}

void rank__free(struct rank *r)
{
	if (!r)
		return;
	free(r->loc_node);
	free(r->rows);
	free(r->nodes);
	free(r->touched);
	free(r->sorted);
	strpool__free(r->names);
	free(r);
}

/* Descending by the order's value, then by the other one, then by name (a stable output). */
static int cmp_row(const void *a, const void *b, void *arg)
{
	const struct rank_row *x = a, *y = b;
	bool by_cum = *(const enum rank_order *)arg == RANK_BY_CUM;
	int64_t x1 = by_cum ? x->cum : x->flat, y1 = by_cum ? y->cum : y->flat;
	int64_t x2 = by_cum ? x->flat : x->cum, y2 = by_cum ? y->flat : y->cum;

	if (x1 != y1)
		return x1 > y1 ? -1 : 1;
	if (x2 != y2)
		return x2 > y2 ? -1 : 1;
	return strcmp(x->name, y->name);
}

int rank__compute(struct rank *r, const struct rank_row **out, uint32_t *nrows,
		  const uint32_t *samples, uint32_t nsamples, uint32_t t, enum rank_order order)
{
	const struct profile *p = r->p;
	uint32_t ntouched = 0, n = 0;

	if (t >= p->ntypes || t >= PROFILE_MAX_VALUES)
		return -EINVAL;
	if (!samples)
		nsamples = p->nsamples;
	for (uint32_t k = 0; k < nsamples; k++) {
		const struct profile_sample *s = &p->samples[samples ? samples[k] : k];
		int64_t v = s->values[t];
		uint32_t own = 0;

		if (!v)
			continue;
		while (own < s->nlocs && r->nodes[r->loc_node[s->loc_ids[own]]].sched)
			own++;
		if (own == s->nlocs) /* nothing but the scheduler: the leaf it is */
			own = 0;
		for (uint32_t i = 0; i < s->nlocs; i++) {
			uint32_t idx = r->loc_node[s->loc_ids[i]];
			struct node *nd = &r->nodes[idx];

			if (!nd->touched) {
				nd->touched = true;
				r->touched[ntouched++] = idx;
			}
			if (i == own)
				r->rows[idx].flat += v;
			/* A recursive function is on the stack more than once but costs it once. */
			if (nd->stamp != k + 1) {
				nd->stamp = k + 1;
				r->rows[idx].cum += v;
			}
		}
	}
	/* Copy out and reset, so the next computation starts from zero. */
	for (uint32_t i = 0; i < ntouched; i++) {
		uint32_t idx = r->touched[i];

		if (r->rows[idx].flat || r->rows[idx].cum)
			r->sorted[n++] = r->rows[idx];
		r->rows[idx].flat = r->rows[idx].cum = 0;
		r->nodes[idx].stamp = 0;
		r->nodes[idx].touched = false;
	}
	qsort_r(r->sorted, n, sizeof(*r->sorted), cmp_row, &order);
	*out = r->sorted;
	*nrows = n;
	return 0;
}
