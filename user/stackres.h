/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * Stack ids -> symbolized frames -> profile locations.  A stack is copied out of the BPF stack
 * map and symbolized the first time it is seen, while its process is alive (so mappings added
 * by dlopen are still readable); locations are made when a profile is built.
 */
#ifndef PROF_STACKRES_H
#define PROF_STACKRES_H

#include <stdbool.h>
#include <stdint.h>

struct stackres;
struct loader;
struct symbolizer;
struct profile;

enum stack_kind {
	STACK_USER_RET, /* user stack whose every frame is a return address (taken at a uretprobe)
			 */
	STACK_USER,	/* user stack whose leaf is the interrupted instruction */
	STACK_KERNEL,
};

int stackres__new(struct stackres **out, struct loader *l, struct symbolizer *s);
void stackres__free(struct stackres *r);

/* First sight of (pid, stack_id): copy and symbolize.  Cheap when already known.
 * 0 (also when the stack is gone from the map) or -ENOMEM. */
int stackres__note(struct stackres *r, uint32_t pid, int32_t stack_id, enum stack_kind kind);

/*
 * Append the stack's profile location ids (leaf first) to out[*n..max), creating mappings,
 * functions and locations in p.  A stack never noted or lost adds nothing.
 */
int stackres__locations(struct stackres *r, struct profile *p, uint32_t pid, int32_t stack_id,
			enum stack_kind kind, uint32_t *out, uint32_t max, uint32_t *n);

#endif /* PROF_STACKRES_H */
