// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
#include "agg/cpu_agg.h"

#include <errno.h>
#include <stdlib.h>

#include "util/hashmap.h"

struct cpu_agg {
	struct hashmap *counts; /* cpu_agg_key -> uint64_t samples */
};

int cpu_agg__new(struct cpu_agg **out)
{
	struct cpu_agg *a = calloc(1, sizeof(*a));
	int err;

	if (!a)
		return -ENOMEM;
	err = hashmap__new(&a->counts, sizeof(struct cpu_agg_key), sizeof(uint64_t));
	if (err) {
		free(a);
		return err;
	}
	*out = a;
	return 0;
}

void cpu_agg__free(struct cpu_agg *a)
{
	if (!a)
		return;
	hashmap__free(a->counts);
	free(a);
}

int cpu_agg__add(struct cpu_agg *a, const struct cpu_agg_key *key)
{
	uint64_t *v;

	if (hashmap__upsert(a->counts, (void **)&v, key, NULL))
		return -ENOMEM;
	(*v)++;
	return 0;
}

int cpu_agg__reset(struct cpu_agg *a)
{
	struct hashmap *fresh;
	int err;

	err = hashmap__new(&fresh, sizeof(struct cpu_agg_key), sizeof(uint64_t));
	if (err)
		return err;
	hashmap__free(a->counts);
	a->counts = fresh;
	return 0;
}

uint64_t cpu_agg__count(const struct cpu_agg *a, const struct cpu_agg_key *key)
{
	const uint64_t *v = hashmap__find(a->counts, key);

	return v ? *v : 0;
}

int cpu_agg__next(const struct cpu_agg *a, size_t *it, const struct cpu_agg_key **key,
		  uint64_t *count)
{
	void *v;

	if (!hashmap__next(a->counts, it, (const void **)key, &v))
		return 0;
	*count = *(const uint64_t *)v;
	return 1;
}
