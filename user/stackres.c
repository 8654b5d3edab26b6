// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
#include "stackres.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "hashmap.h"
#include "loader.h"
#include "profile.h"
#include "symbolizer.h"

struct stack_key {
	uint32_t pid; /* 0 for kernel stacks: the kernel's addresses are shared */
	int32_t stack_id;
	uint32_t kind;
};

struct frame {
	uint64_t addr;
	struct sym_result sym;
};

struct stack {
	unsigned n;
	struct frame *frames;
};

struct stackres {
	struct loader *loader;
	struct symbolizer *sym;
	struct hashmap *stacks; /* stack_key -> struct stack */
};

int stackres__new(struct stackres **out, struct loader *l, struct symbolizer *s)
{
	struct stackres *r = calloc(1, sizeof(*r));
	int err;

	if (!r)
		return -ENOMEM;
	r->loader = l;
	r->sym = s;
	err = hashmap__new(&r->stacks, sizeof(struct stack_key), sizeof(struct stack));
	if (err) {
		free(r);
		return err;
	}
	*out = r;
	return 0;
}

void stackres__free(struct stackres *r)
{
	size_t it = 0;
	void *v;

	if (!r)
		return;
	while (hashmap__next(r->stacks, &it, NULL, &v))
		free(((struct stack *)v)->frames);
	hashmap__free(r->stacks);
	free(r);
}

static struct stack_key make_key(uint32_t pid, int32_t stack_id, enum stack_kind kind)
{
	struct stack_key k = {
		.pid = kind == STACK_KERNEL ? 0 : pid, .stack_id = stack_id, .kind = kind};
	return k;
}

int stackres__note(struct stackres *r, uint32_t pid, int32_t stack_id, enum stack_kind kind)
{
	struct stack_key k = make_key(pid, stack_id, kind);
	uint64_t ips[PROF_MAX_FRAMES];
	struct stack *st;
	bool created;
	unsigned n;

	if (stack_id < 0)
		return 0;
	if (hashmap__upsert(r->stacks, (void **)&st, &k, &created))
		return -ENOMEM;
	/* A stack the map no longer holds stays empty: its samples keep no frames. */
	if (!created || loader__stack(r->loader, stack_id, ips, &n) || !n)
		return 0;
	st->frames = calloc(n, sizeof(*st->frames));
	if (!st->frames)
		return -ENOMEM;
	st->n = n;
	for (unsigned i = 0; i < n; i++) {
		/* A return address points after the call: look up the call itself. */
		uint64_t lookup = ips[i] - (kind == STACK_USER_RET || i > 0 ? 1 : 0);
		struct frame *f = &st->frames[i];

		f->addr = ips[i];
		if (kind == STACK_KERNEL)
			symbolizer__resolve_kernel(r->sym, lookup, &f->sym);
		else
			symbolizer__resolve_user(r->sym, pid, lookup, &f->sym);
	}
	return 0;
}

static int frame_location(struct profile *p, const struct frame *f, uint32_t *out)
{
	const struct sym_mapping *m = f->sym.map;
	uint32_t mapping_id = 0, function_id = 0;
	int err;

	if (m) {
		struct profile_mapping pm = {
			.start = m->start,
			.limit = m->limit,
			.offset = m->offset,
			.file = m->path,
			.build_id = m->build_id,
			.has_functions = m->has_symbols,
		};

		err = profile__mapping(p, &mapping_id, &pm);
		if (err)
			return err;
	}
	if (f->sym.name) {
		err = profile__function(p, &function_id, f->sym.name,
					f->sym.system_name ? f->sym.system_name : f->sym.name,
					f->sym.file, 0);
		if (err)
			return err;
	}
	return profile__location(p, out, f->addr, mapping_id, function_id, 0);
}

int stackres__locations(struct stackres *r, struct profile *p, uint32_t pid, int32_t stack_id,
			enum stack_kind kind, uint32_t *out, uint32_t max, uint32_t *n)
{
	struct stack_key k = make_key(pid, stack_id, kind);
	const struct stack *st;
	int err;

	if (stack_id < 0)
		return 0;
	st = hashmap__find(r->stacks, &k);
	if (!st)
		return 0;
	for (unsigned i = 0; i < st->n && *n < max; i++) {
		err = frame_location(p, &st->frames[i], &out[*n]);
		if (err)
			return err;
		(*n)++;
	}
	return 0;
}
