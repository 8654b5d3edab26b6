/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * What every mode's builder shares: its explicit inputs (interned stacks, process and thread
 * names), stack ids made profile locations, and one sample added with its pid/tid labels.
 */
#ifndef PROF_BUILD_H
#define PROF_BUILD_H

#include <stdbool.h>
#include <stdint.h>

struct procinfo;
struct profile;
struct profile_run;
struct stackres;

struct build_inputs {
	struct stackres *stacks;
	struct procinfo *procs;
	/* what every profile of the run records first; NULL: not a run of ours (a trace read back)
	 */
	const struct profile_run *run;
};

/*
 * What a mode's profile is before its first sample: its sample types ("name/unit" pairs), the
 * default one, the ones the text report ranks by (indexes into types), and its period (none
 * when period_type is NULL).
 */
struct build_shape {
	const char *mode;
	const char *const (*types)[2];
	uint32_t ntypes;
	uint32_t default_type;
	uint32_t text_types[2];
	uint32_t ntext_types;
	const char *period_type, *period_unit;
	int64_t period;
};

/* A new profile of shape s with the run's metadata applied: 0 or -ENOMEM. */
int build__profile(struct profile **out, const struct build_inputs *in,
		   const struct build_shape *s);

/*
 * Append the stack's profile location ids (leaf first) to out[*n..max), creating mappings,
 * functions and locations in p.  STACKRES_NONE or an unknown id adds nothing.
 */
int build__locations(struct profile *p, struct stackres *r, int32_t id, uint32_t *out, uint32_t max,
		     uint32_t *n);
/*
 * The same for a kernel stack taken by a BPF program on a tracepoint, whose skipped frames end
 * at the tracepoint's caller only while the tracepoint has one probe: with more (any trace event
 * enabled makes ftrace add its own sched_switch probe), its iterator __traceiter_NAME comes
 * first, and is left out here.
 */
int build__tracepoint_locations(struct profile *p, struct stackres *r, int32_t id, uint32_t *out,
				uint32_t max, uint32_t *n);

/* One sample of pid/tid with locs[0..n) (leaf first), labelled with its thread and process
 * names; flags: enum profile_sample_flags. */
int build__sample(struct profile *p, const struct build_inputs *in, uint32_t pid, uint32_t tid,
		  const uint32_t *locs, uint32_t n, const int64_t *vals, uint32_t flags);
/* The sample flags (the `gil` label) of a thread in enum prof_py_thread state py. */
uint32_t build__py_flags(uint32_t py);
/* The same with a `state` label (NULL: none). */
int build__sample_state(struct profile *p, const struct build_inputs *in, uint32_t pid,
			uint32_t tid, const uint32_t *locs, uint32_t n, const int64_t *vals,
			uint32_t flags, const char *state);

/*
 * Mark the main executable's mapping (profile.main_mapping): the executable of the process with
 * the most weight (first sample type) in p, where one of p's mappings maps it.  0 or -ENOMEM.
 */
int build__main_mapping(struct profile *p, struct procinfo *procs);

#endif /* PROF_BUILD_H */
