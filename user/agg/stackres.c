// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
#include "agg/stackres.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "util/hashmap.h"
#include "prof_common.h"
#include "sym/symbolizer.h"

/*
 * Index of interned stacks.  Frames do not fit a fixed-size key, so the key is their hash; two
 * different stacks with one hash take consecutive `dup` numbers, and a lookup compares frames
 * until it finds its own or a free number.
 */
struct stack_key {
	uint64_t hash;
	uint32_t pid; /* 0 for kernel stacks: the kernel's addresses are shared */
	uint16_t kind;
	uint16_t n;
	uint32_t dup;
	uint32_t image; /* how many execs of pid came before (0 for kernel stacks) */
};

struct stack {
	uint32_t pid;
	enum stack_kind kind;
	unsigned n;
	struct stackres_frame *frames;
};

struct stackres {
	struct symbolizer *sym;
	struct hashmap *index;	/* stack_key -> int32_t id */
	struct hashmap *images; /* pid -> uint32_t execs seen (absent: none) */
	struct stack *stacks;	/* by id */
	unsigned count, cap;
	int32_t *free_ids; /* ids of forgotten stacks, reused first */
	unsigned nfree, free_cap;
};

int stackres__new(struct stackres **out, struct symbolizer *s)
{
	struct stackres *r = calloc(1, sizeof(*r));
	int err;

	if (!r)
		return -ENOMEM;
	r->sym = s;
	err = hashmap__new(&r->index, sizeof(struct stack_key), sizeof(int32_t));
	if (!err)
		err = hashmap__new(&r->images, sizeof(uint32_t), sizeof(uint32_t));
	if (err) {
		stackres__free(r);
		return err;
	}
	*out = r;
	return 0;
}

void stackres__free(struct stackres *r)
{
	if (!r)
		return;
	for (unsigned i = 0; i < r->count; i++)
		free(r->stacks[i].frames);
	free(r->stacks);
	free(r->free_ids);
	hashmap__free(r->index);
	hashmap__free(r->images);
	free(r);
}

int stackres__exec(struct stackres *r, uint32_t pid)
{
	uint32_t *gen;

	if (hashmap__upsert(r->images, (void **)&gen, &pid, NULL))
		return -ENOMEM;
	(*gen)++;
	return 0;
}

unsigned stackres__count(const struct stackres *r)
{
	return r->count;
}

static bool same_frames(const struct stack *st, const uint64_t *ips, unsigned n)
{
	if (st->n != n)
		return false;
	for (unsigned i = 0; i < n; i++)
		if (st->frames[i].addr != ips[i])
			return false;
	return true;
}

/* A new stack: copied and symbolized into r->stacks[id], id a forgotten one or the next. */
static int add_stack(struct stackres *r, int32_t *id, uint32_t pid, enum stack_kind kind,
		     const uint64_t *ips, unsigned n)
{
	bool reused = r->nfree > 0;
	struct stack *st;

	if (!reused && r->count == r->cap) {
		unsigned cap = r->cap ? r->cap * 2 : 256;
		struct stack *s = realloc(r->stacks, cap * sizeof(*s));

		if (!s)
			return -ENOMEM;
		r->stacks = s;
		r->cap = cap;
	}
	*id = reused ? r->free_ids[r->nfree - 1] : (int32_t)r->count;
	st = &r->stacks[*id];
	st->frames = calloc(n, sizeof(*st->frames));
	if (!st->frames)
		return -ENOMEM;
	st->pid = pid;
	st->kind = kind;
	st->n = n;
	for (unsigned i = 0; i < n; i++) {
		/* A return address points after the call: look up the call itself. */
		uint64_t lookup = ips[i] - (kind == STACK_USER_RET || i > 0 ? 1 : 0);
		struct stackres_frame *f = &st->frames[i];

		f->addr = ips[i];
		if (kind == STACK_KERNEL)
			symbolizer__resolve_kernel(r->sym, lookup, &f->sym);
		else
			symbolizer__resolve_user(r->sym, pid, lookup, &f->sym);
	}
	if (reused)
		r->nfree--;
	else
		r->count++;
	return 0;
}

int stackres__intern(struct stackres *r, int32_t *id, uint32_t pid, enum stack_kind kind,
		     const uint64_t *ips, unsigned n)
{
	struct stack_key k = {.kind = (uint16_t)kind};
	const uint32_t *image;
	bool created;
	int32_t *v;
	int err;

	*id = STACKRES_NONE;
	if (!n)
		return 0;
	if (n > PROF_MAX_FRAMES)
		n = PROF_MAX_FRAMES;
	if (kind != STACK_KERNEL) {
		k.pid = pid;
		image = hashmap__find(r->images, &pid);
		k.image = image ? *image : 0;
	}
	k.n = (uint16_t)n;
	k.hash = hash_bytes(ips, n * sizeof(*ips));
	for (;; k.dup++) {
		if (hashmap__upsert(r->index, (void **)&v, &k, &created))
			return -ENOMEM;
		if (!created) {
			if (same_frames(&r->stacks[*v], ips, n)) {
				*id = *v;
				return 0;
			}
			continue; /* another stack with this hash */
		}
		/* Ids are positions in r->stacks; INT32_MAX of them is far beyond memory. */
		err = add_stack(r, id, k.pid, kind, ips, n);
		if (err) {
			hashmap__delete(r->index, &k);
			*id = STACKRES_NONE;
			return err;
		}
		/* v may have moved: add_stack inserted nothing, but look it up to be plain. */
		v = hashmap__find(r->index, &k);
		*v = *id;
		return 0;
	}
}

void stackres__forget_pid(struct stackres *r, uint32_t pid)
{
	const struct stack_key *k;
	struct stack_key *gone = NULL;
	size_t it = 0, n = 0, cap = 0;
	int32_t *v;

	if (!pid)
		return; /* kernel stacks are everyone's */
	while (hashmap__next(r->index, &it, (const void **)&k, (void **)&v)) {
		if (k->pid != pid)
			continue;
		if (n == cap) {
			struct stack_key *g =
				realloc(gone, (cap = cap ? 2 * cap : 64) * sizeof(*g));

			if (!g)
				break; /* the rest stays: forgotten next time */
			gone = g;
		}
		gone[n++] = *k;
	}
	for (size_t i = 0; i < n; i++) {
		int32_t *idp = hashmap__find(r->index, &gone[i]), id;
		struct stack *st;

		if (!idp)
			continue;
		id = *idp;
		hashmap__delete(r->index, &gone[i]);
		if (r->nfree == r->free_cap) {
			unsigned c = r->free_cap ? 2 * r->free_cap : 256;
			int32_t *f = realloc(r->free_ids, c * sizeof(*f));

			if (!f)
				continue; /* the slot is lost, its memory freed below all the same
					   */
			r->free_ids = f;
			r->free_cap = c;
		}
		st = &r->stacks[id];
		free(st->frames);
		*st = (struct stack){0};
		r->free_ids[r->nfree++] = id;
	}
	free(gone);
	hashmap__delete(r->images, &pid);
}

static int add_used(struct hashmap *used, const void *ptr)
{
	void *v;

	return ptr ? hashmap__upsert(used, &v, &ptr, NULL) : 0;
}

int stackres__used(const struct stackres *r, struct hashmap *used)
{
	for (unsigned i = 0; i < r->count; i++)
		for (unsigned j = 0; j < r->stacks[i].n; j++) {
			const struct sym_result *sym = &r->stacks[i].frames[j].sym;

			if (add_used(used, sym->map) || add_used(used, sym->name) ||
			    add_used(used, sym->system_name) || add_used(used, sym->file))
				return -ENOMEM;
		}
	return 0;
}

const struct stackres_frame *stackres__frames(const struct stackres *r, int32_t id, unsigned *n)
{
	if (id < 0 || (unsigned)id >= r->count) {
		*n = 0;
		return NULL;
	}
	*n = r->stacks[id].n;
	return r->stacks[id].frames;
}
