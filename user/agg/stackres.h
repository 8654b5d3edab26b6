/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * Stacks as they arrive in records (raw frames) -> small ids -> symbolized frames -> profile
 * frames (profile/build.c makes them profile locations).  A stack is interned and symbolized the
 * first time it is seen, while its process is alive (so mappings added by dlopen are still
 * readable).
 */
#ifndef PROF_STACKRES_H
#define PROF_STACKRES_H

#include <stdbool.h>
#include <stdint.h>

#include "sym/symbolizer.h"

struct hashmap;
struct stackres;

enum stack_kind {
	STACK_USER_RET, /* user stack whose every frame is a return address (taken at a uretprobe)
			 */
	STACK_USER,	/* user stack whose leaf is the interrupted instruction */
	STACK_KERNEL,
};

/* The id of the empty stack (no frames, or lost): it adds no location. */
#define STACKRES_NONE (-1)

int stackres__new(struct stackres **out, struct symbolizer *s);
void stackres__free(struct stackres *r);

/*
 * The id of the stack ips[0..n) (leaf first) of process pid: the same (pid, kind, frames) give
 * the same id; kernel stacks are shared by every process.  A stack seen for the first time is
 * symbolized now.  n == 0 gives STACKRES_NONE.  0 or -ENOMEM.
 */
int stackres__intern(struct stackres *r, int32_t *id, uint32_t pid, enum stack_kind kind,
		     const uint64_t *ips, unsigned n);

/* pid exec'd: its addresses now mean other code, so its later stacks are interned afresh. */
int stackres__exec(struct stackres *r, uint32_t pid);

/*
 * Continuous mode: pid is gone and its interval written; its user stacks are freed and their
 * ids reused.  The caller guarantees no aggregate refers to them any more.
 */
void stackres__forget_pid(struct stackres *r, uint32_t pid);
/* Add every pointer the interned stacks hold from the symbolizer (each frame's map, name,
 * system_name and file, as `const void *` keys) to used, for symbolizer__sweep.  0 or -ENOMEM. */
int stackres__used(const struct stackres *r, struct hashmap *used);

/* Stacks interned so far (STACKRES_NONE is not one). */
unsigned stackres__count(const struct stackres *r);

/* A frame of an interned stack: its address and what it symbolized to (at intern time). */
struct stackres_frame {
	uint64_t addr;
	struct sym_result sym;
};

/* The frames (leaf first) of stack id; STACKRES_NONE or an unknown id: none (*n = 0). */
const struct stackres_frame *stackres__frames(const struct stackres *r, int32_t id, unsigned *n);

#endif /* PROF_STACKRES_H */
