/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * --offcpu accounting from off-CPU records: periods and nanoseconds off the CPU per (pid, tid,
 * user stack, kernel stack, state), the stacks being stackres ids.  Pure logic, no BPF: fed by
 * the consumer, read by offcpu_profile.
 */
#ifndef PROF_OFFCPU_AGG_H
#define PROF_OFFCPU_AGG_H

#include <stddef.h>
#include <stdint.h>

struct offcpu_agg;

/* One row of the aggregate (no padding: rows are hashed as bytes). */
struct offcpu_agg_key {
	uint32_t pid, tid;
	int32_t user_stack; /* stackres id, STACKRES_NONE when there is none */
	int32_t kern_stack;
	uint16_t state; /* enum prof_offcpu_state */
	uint16_t py;	/* enum prof_py_thread */
};

struct offcpu_agg_value {
	uint64_t count; /* periods off the CPU */
	uint64_t ns;	/* their total length */
};

int offcpu_agg__new(struct offcpu_agg **out);
void offcpu_agg__free(struct offcpu_agg *a);

/* One more period of ns nanoseconds off the CPU for this key.  0 or -ENOMEM. */
int offcpu_agg__add(struct offcpu_agg *a, const struct offcpu_agg_key *key, uint64_t ns);

/* Continuous mode: forget every row (the next interval starts from zero).  0 or -ENOMEM (the
 * rows are kept then). */
int offcpu_agg__reset(struct offcpu_agg *a);

/* A key's totals, NULL if never seen. */
const struct offcpu_agg_value *offcpu_agg__get(const struct offcpu_agg *a,
					       const struct offcpu_agg_key *key);

/* Iterate: size_t it = 0; while (offcpu_agg__next(a, &it, &key, &value)) … */
int offcpu_agg__next(const struct offcpu_agg *a, size_t *it, const struct offcpu_agg_key **key,
		     const struct offcpu_agg_value **value);

#endif /* PROF_OFFCPU_AGG_H */
