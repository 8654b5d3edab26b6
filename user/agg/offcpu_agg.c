// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
#include "agg/offcpu_agg.h"

#include <errno.h>
#include <stdlib.h>

#include "util/hashmap.h"

_Static_assert(sizeof(struct offcpu_agg_key) == 20, "offcpu_agg_key has no padding");

struct offcpu_agg {
	struct hashmap *rows; /* offcpu_agg_key -> offcpu_agg_value */
};

static int rows_new(struct hashmap **out)
{
	return hashmap__new(out, sizeof(struct offcpu_agg_key), sizeof(struct offcpu_agg_value));
}

int offcpu_agg__new(struct offcpu_agg **out)
{
	struct offcpu_agg *a = calloc(1, sizeof(*a));
	int err;

	if (!a)
		return -ENOMEM;
	err = rows_new(&a->rows);
	if (err) {
		free(a);
		return err;
	}
	*out = a;
	return 0;
}

void offcpu_agg__free(struct offcpu_agg *a)
{
	if (!a)
		return;
	hashmap__free(a->rows);
	free(a);
}

int offcpu_agg__add(struct offcpu_agg *a, const struct offcpu_agg_key *key, uint64_t ns)
{
	struct offcpu_agg_value *v;

	if (hashmap__upsert(a->rows, (void **)&v, key, NULL))
		return -ENOMEM;
	v->count++;
	v->ns += ns;
	return 0;
}

int offcpu_agg__reset(struct offcpu_agg *a)
{
	struct hashmap *fresh;
	int err;

	err = rows_new(&fresh);
	if (err)
		return err;
	hashmap__free(a->rows);
	a->rows = fresh;
	return 0;
}

const struct offcpu_agg_value *offcpu_agg__get(const struct offcpu_agg *a,
					       const struct offcpu_agg_key *key)
{
	return hashmap__find(a->rows, key);
}

int offcpu_agg__next(const struct offcpu_agg *a, size_t *it, const struct offcpu_agg_key **key,
		     const struct offcpu_agg_value **value)
{
	void *v;

	if (!hashmap__next(a->rows, it, (const void **)key, &v))
		return 0;
	*value = v;
	return 1;
}
