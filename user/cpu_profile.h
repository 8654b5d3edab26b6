/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/* --cpu: read the in-kernel sample counts, symbolize their stacks while the threads live, and
 * build the cpu profile (samples/count, cpu/nanoseconds). */
#ifndef PROF_CPU_PROFILE_H
#define PROF_CPU_PROFILE_H

struct collect;
struct env;
struct profile;

/* Note stacks and thread names of samples seen so far (called about once a second). */
int cpu_profile__scan(struct collect *c);
int cpu_profile__build(struct collect *c, const struct env *env, struct profile **out);

#endif /* PROF_CPU_PROFILE_H */
