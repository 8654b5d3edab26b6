/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/* --offcpu: build the offcpu profile (events/count, offcpu/nanoseconds) from the periods the
 * consumer summed (agg/offcpu_agg.c), each sample labelled with its state. */
#ifndef PROF_OFFCPU_PROFILE_H
#define PROF_OFFCPU_PROFILE_H

struct build_inputs;
struct offcpu_agg;
struct profile;

/* The `state` label's value of an enum prof_offcpu_state ("blocked", "runnable"). */
const char *offcpu_profile__state_name(unsigned state);

int offcpu_profile__build(struct profile **out, struct offcpu_agg *a,
			  const struct build_inputs *in);

#endif /* PROF_OFFCPU_PROFILE_H */
