/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * The profile model: what every mode's aggregator produces and every writer (pprof, folded,
 * text) reads.  It mirrors pprof's profile.proto — samples point at deduplicated locations,
 * locations at mappings and functions — so no writer ever re-walks raw events.
 * Ids are 1-based indexes into the arrays (0 = none), as in profile.proto.
 * All strings are interned in the profile's pool and live as long as the profile.
 */
#ifndef PROF_PROFILE_H
#define PROF_PROFILE_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#include "prof_common.h"
#include "util/strpool.h"

#define PROFILE_MAX_VALUES 6

struct profile_value_type {
	const char *type; /* "alloc_space" */
	const char *unit; /* "bytes" */
};

struct profile_mapping {
	uint64_t start, limit, offset;
	const char *file;     /* path as the target saw it, "[kernel.kallsyms]", "[unknown]" */
	const char *build_id; /* lowercase hex, "" when none */
	bool has_functions;   /* symbols were found for this file */
};

struct profile_function {
	const char *name;	 /* demangled / language-level name */
	const char *system_name; /* raw symbol name */
	const char *file;	 /* source file, "" when unknown */
	int64_t start_line;
};

/*
 * A location is one frame of the stacks.  Where a function was inlined, each level of the
 * inlined calls at an address is a location of its own (so folded, text, svg and every other
 * frame-name output show it as a frame): the inlined one marked `inlined` and named by its
 * caller's `inner`, the caller next to it rootward in every sample.  pprof joins such a chain
 * into one Location with a Line per level (export/pprof.c).
 */
struct profile_location {
	uint64_t address;     /* runtime address; 0 for interpreter frames */
	uint32_t mapping_id;  /* 0 = none */
	uint32_t function_id; /* 0 = address did not symbolize */
	int64_t line;
	uint32_t inner; /* the location of the function inlined here (same address), 0: none */
	bool inlined;	/* inlined into the location whose inner it is */
};

struct profile_sample {
	uint32_t pid, tid;
	const char *comm;    /* thread name */
	const char *process; /* process name */
	uint32_t nlocs;
	uint32_t *loc_ids; /* leaf first */
	int64_t values[PROFILE_MAX_VALUES];
	bool partial;	 /* stack known to be incomplete (e.g. Python 3.11 returns only) */
	const char *gil; /* Python threads: "held" | "released" (the `gil` label); NULL: none */
	const char *thread_name; /* Python threads: threading's name (`thread_name`); NULL: none */
	const char *state;	 /* the `state` label (offcpu: "blocked", "runnable"); NULL: none */
	/* the process's executable (OTLP's process.executable.path; procinfo's string, as comm and
	 * process are); NULL: unknown */
	const char *exe;
};

/* What profile__add_sample's flags say of a sample (samples differing in them stay apart). */
enum profile_sample_flags {
	PROFILE_SAMPLE_PARTIAL = 1,	 /* stack known to be incomplete */
	PROFILE_SAMPLE_GIL_HELD = 2,	 /* a Python thread holding the GIL */
	PROFILE_SAMPLE_GIL_RELEASED = 4, /* a Python thread not holding it */
};

/* What a process's samples are labelled with besides pid/tid/comm/process (container and host
 * modes): shared by every sample of the pid. */
struct profile_process {
	uint32_t pid;
	uint32_t ns_pid;	  /* its pid in its own pid namespace; 0 = the same as pid */
	const char *container_id; /* "" when the cgroup path names none */
	const char *cgroup;	  /* path relative to the cgroup2 mount, "" when unknown */
};

/* A label every sample of the profile carries besides its own (an OOM kill's: oom_kill, …): a
 * string one when str is set, else a number.  series: --push also names the series with it. */
struct profile_label {
	const char *key;
	const char *str;
	int64_t num;
	bool series;
};

/* A named counter (drops, unknown frees, …): where each writer shows it depends on its kind. */
struct profile_counter {
	const char *name;
	const char *desc;
	uint64_t value;
	enum prof_counter_kind
		kind; /* include/prof_common.h: a drop, an event total, bookkeeping */
};

static inline bool profile_counter__is_drop(const struct profile_counter *c)
{
	return c->kind == PROF_KIND_DROP;
}

struct profile {
	const char *mode; /* "heap", "cpu", "calls" */
	/* The key of the samples' `state` strings in pprof: "state" when NULL (offcpu), "age"
	 * (heap: in use by age). */
	const char *state_key;
	struct profile_value_type types[PROFILE_MAX_VALUES];
	uint32_t ntypes;
	uint32_t default_type;	/* index into types */
	uint32_t text_types[2]; /* text report: one top table per listed type index */
	uint32_t ntext_types;
	struct profile_value_type period_type;
	int64_t period;
	int64_t time_nanos;	/* wall-clock start */
	int64_t duration_nanos; /* collection length */

	const char **comments;
	uint32_t ncomments;
	struct profile_counter *counters;
	uint32_t ncounters;
	struct profile_label *labels; /* on every sample */
	uint32_t nlabels;

	struct profile_mapping *mappings;
	uint32_t nmappings;
	/* The main executable's mapping id: writers that order mappings put it first (pprof's
	 * convention: go tool pprof names the profile after it).  0: in the order added. */
	uint32_t main_mapping;
	struct profile_function *functions;
	uint32_t nfunctions;
	struct profile_location *locations;
	uint32_t nlocations;
	struct profile_sample *samples;
	uint32_t nsamples;
	uint32_t last_sample; /* index of the sample profile__add_sample added to last */
	struct profile_process *processes; /* sorted by nothing; profile__process() finds one */
	uint32_t nprocesses;

	struct strpool *strings;
	struct profile_index *index; /* private: dedup tables */
};

int profile__new(struct profile **out, const char *mode);
void profile__free(struct profile *p);

/* Interned copy of s ("" for NULL). */
const char *profile__intern(struct profile *p, const char *s);
/* Append a sample type; the first call's index is 0. */
int profile__add_type(struct profile *p, const char *type, const char *unit);

/* Deduplicating constructors; *out gets the 1-based id. */
int profile__mapping(struct profile *p, uint32_t *out, const struct profile_mapping *m);
int profile__function(struct profile *p, uint32_t *out, const char *name, const char *system_name,
		      const char *file, int64_t start_line);
int profile__location(struct profile *p, uint32_t *out, uint64_t address, uint32_t mapping_id,
		      uint32_t function_id, int64_t line);
/* Location inner (made before outer) is a function inlined at location outer (same address): 0
 * or -EINVAL. */
int profile__inline_pair(struct profile *p, uint32_t outer, uint32_t inner);

/* Append a sample (copies loc_ids); samples with the same pid, tid, stack and flags (enum
 * profile_sample_flags) are merged. */
int profile__add_sample(struct profile *p, uint32_t pid, uint32_t tid, const char *comm,
			const char *process, const uint32_t *loc_ids, uint32_t nlocs,
			const int64_t *values, uint32_t flags);
/* The same with a `state` label (NULL: none): samples of different states stay apart. */
int profile__add_sample_state(struct profile *p, uint32_t pid, uint32_t tid, const char *comm,
			      const char *process, const uint32_t *loc_ids, uint32_t nlocs,
			      const int64_t *values, uint32_t flags, const char *state);

/* Record pid's container labels (copied; a second call for one pid replaces the first). */
int profile__set_process(struct profile *p, const struct profile_process *pp);
/* pid's labels, NULL when none were set. */
const struct profile_process *profile__process(const struct profile *p, uint32_t pid);

int profile__add_comment(struct profile *p, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));
/* A label on every sample (copied; str NULL: the number num).  0 or -ENOMEM. */
int profile__add_label(struct profile *p, const char *key, const char *str, int64_t num,
		       bool series);
/* A counter of lost or doubtful data (writers show it when non-zero, "no drops" when none is). */
int profile__add_counter(struct profile *p, const char *name, const char *desc, uint64_t value);
/* A count of what happened, not a loss (PROF_KIND_EVENT): pprof comments carry it when
 * non-zero; nothing lists it as a drop. */
int profile__add_stat(struct profile *p, const char *name, const char *desc, uint64_t value);
/* Any kind (enum prof_counter_kind): BOOK counters stay out of the pprof comments. */
int profile__add_counter_kind(struct profile *p, const char *name, const char *desc, uint64_t value,
			      enum prof_counter_kind kind);

/* Sum of sample type t over every sample. */
int64_t profile__type_total(const struct profile *p, uint32_t t);
/* The index of sample type name in p, or -ENOENT. */
int profile__type_index(const struct profile *p, const char *name);

/* In use under 1 % of what was allocated (or nothing): pictures show the allocations. */
#define PROFILE_INUSE_TINY 0.01
/*
 * The type a picture (svg, the live view) shows for type t: t, unless it is an in-use type
 * (inuse_space, inuse_objects) whose total is under PROFILE_INUSE_TINY of its alloc_ twin's.
 * A server attached with -p frees what it allocates while we watch: its in-use picture is
 * empty, its allocations are the picture.  *inuse gets the in-use total when the twin is
 * returned (else -1), for the caller to say so.
 */
uint32_t profile__shown_type(const struct profile *p, uint32_t t, int64_t *inuse);

/* What ran at a location: the kernel (mapping [kernel.kallsyms]), an interpreter's frame (a
 * function and no address) or native code (anything else, an unknown id too); or the frames cut
 * out of a deep stack (no address, no mapping, "[N frames cut]": include/prof_stack.h). */
enum profile_frame_kind {
	PROFILE_FRAME_NATIVE,
	PROFILE_FRAME_KERNEL,
	PROFILE_FRAME_INTERP,
	PROFILE_FRAME_CUT,
};
enum profile_frame_kind profile__location_kind(const struct profile *p, uint32_t loc_id);

/* Display name of a location's leaf function, or "[unknown] 0x…" text written into buf. */
const char *profile__location_name(const struct profile *p, uint32_t loc_id, char *buf, size_t len);

#endif /* PROF_PROFILE_H */
