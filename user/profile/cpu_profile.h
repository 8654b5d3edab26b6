/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/* --cpu: build the cpu profile (samples/count, cpu/nanoseconds) from the samples the consumer
 * counted (agg/cpu_agg.c). */
#ifndef PROF_CPU_PROFILE_H
#define PROF_CPU_PROFILE_H

struct build_inputs;
struct cpu_agg;
struct profile;

/* hz: the sampling frequency (the period is 1e9 / hz nanoseconds). */
int cpu_profile__build(struct profile **out, struct cpu_agg *cpu, const struct build_inputs *in,
		       unsigned hz);

#endif /* PROF_CPU_PROFILE_H */
