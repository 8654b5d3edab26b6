/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * --cpu accounting from sample records: samples per (pid, tid, user stack, kernel stack), the
 * stacks being stackres ids.  Pure logic, no BPF: fed by the consumer, read by cpu_profile.
 */
#ifndef PROF_CPU_AGG_H
#define PROF_CPU_AGG_H

#include <stddef.h>
#include <stdint.h>

struct cpu_agg;

/* One row of the aggregate. */
struct cpu_agg_key {
	uint32_t pid, tid;
	int32_t user_stack; /* stackres id, STACKRES_NONE when there is none */
	int32_t kern_stack;
	uint32_t py; /* enum prof_py_thread (include/prof_python.h) */
};

int cpu_agg__new(struct cpu_agg **out);
void cpu_agg__free(struct cpu_agg *a);

/* One more sample of this key.  0 or -ENOMEM. */
int cpu_agg__add(struct cpu_agg *a, const struct cpu_agg_key *key);

/* Continuous mode: forget every count (the next interval starts from zero).  0 or -ENOMEM
 * (the counts are kept then). */
int cpu_agg__reset(struct cpu_agg *a);

/* Samples of one key (0 if never seen). */
uint64_t cpu_agg__count(const struct cpu_agg *a, const struct cpu_agg_key *key);

/* Iterate: size_t it = 0; while (cpu_agg__next(a, &it, &key, &count)) … */
int cpu_agg__next(const struct cpu_agg *a, size_t *it, const struct cpu_agg_key **key,
		  uint64_t *count);

#endif /* PROF_CPU_AGG_H */
