/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/* --cpu: build the cpu profile (samples/count, cpu/nanoseconds) from the samples the consumer
 * counted (user/cpu_agg.c). */
#ifndef PROF_CPU_PROFILE_H
#define PROF_CPU_PROFILE_H

struct collect;
struct env;
struct profile;

int cpu_profile__build(struct collect *c, const struct env *env, struct profile **out);

#endif /* PROF_CPU_PROFILE_H */
