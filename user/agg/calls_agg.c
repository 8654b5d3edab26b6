// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
#include "agg/calls_agg.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "util/hashmap.h"
#include "util/strpool.h"

/* Fixed nodes: the root, and the unknown caller of return-only calls (always partial). */
#define NODE_ROOT	 0
#define NODE_RETURN_ONLY 1

/* A moment of a thread: the time, and its on-CPU clock then (prof_call_event.busy). */
struct when {
	uint64_t wall, busy;
};

struct frame {
	uint64_t name_id;
	struct when start; /* entry */
	struct when child; /* inclusive times of its completed callees */
	uint64_t sp;	   /* PROF_CALL_F_FRAME: its Java frame's SP at entry, else 0 */
	uint32_t site;	   /* PROF_CALL_F_FRAME: where in the Java code its entry probe ran */
	uint32_t node;
};

struct thread {
	struct frame *stack;
	uint32_t depth, cap;
	uint32_t overflow;	/* entries beyond CALLS_AGG_MAX_DEPTH still open */
	uint32_t outer;		/* placeholders named so far: frames below the first one seen */
	uint32_t base;		/* node under the stack: the root, or a placeholder */
	struct when base_start; /* when we started seeing the frames above base */
	struct when base_child; /* inclusive times of completed frames directly on base */
	struct when last;	/* its latest event */
	struct when now;	/* the event being handled */
	uint64_t ready;		/* events before this time are from the attach window */
};

struct thread_key {
	uint32_t pid, tid;
};

struct node_key {
	uint32_t parent, line;
	uint64_t name_id;
};

struct sample_key {
	uint32_t pid, tid, node;
	uint32_t pad; /* 16 bytes: the values stored after the key stay 8-byte aligned */
};

/* A name with the process it belongs to (ids hash the pid in: never shared). */
struct name {
	struct calls_name n; /* first: calls_agg__lookup_name hands out &name.n */
	uint32_t pid;
};

struct calls_agg {
	struct calls_node *nodes;
	uint32_t nnodes, cap;
	struct hashmap *node_index; /* node_key -> uint32_t node id (named nodes only) */
	struct hashmap *threads;    /* thread_key -> struct thread */
	struct hashmap *samples;    /* sample_key -> struct calls_values */
	struct hashmap *names;	    /* uint64_t name id -> struct name */
	struct strpool *strings;
	bool names_dropped; /* names forgotten since the last sweep of their strings */
	struct calls_agg_stats stats;
};

static int new_node(struct calls_agg *a, uint32_t *out, uint32_t parent, uint64_t name_id,
		    uint32_t line)
{
	if (a->nnodes == a->cap) {
		uint32_t cap = a->cap ? a->cap * 2 : 1024;
		struct calls_node *n = realloc(a->nodes, cap * sizeof(*n));

		if (!n)
			return -ENOMEM;
		a->nodes = n;
		a->cap = cap;
	}
	a->nodes[a->nnodes] =
		(struct calls_node){.parent = parent, .line = line, .name_id = name_id};
	*out = a->nnodes++;
	return 0;
}

int calls_agg__new(struct calls_agg **out)
{
	struct calls_agg *a = calloc(1, sizeof(*a));
	uint32_t id;
	int err;

	if (!a)
		return -ENOMEM;
	err = hashmap__new(&a->node_index, sizeof(struct node_key), sizeof(uint32_t));
	if (!err)
		err = hashmap__new(&a->threads, sizeof(struct thread_key), sizeof(struct thread));
	if (!err)
		err = hashmap__new(&a->samples, sizeof(struct sample_key),
				   sizeof(struct calls_values));
	if (!err)
		err = hashmap__new(&a->names, sizeof(uint64_t), sizeof(struct name));
	if (!err)
		err = strpool__new(&a->strings);
	if (!err)
		err = new_node(a, &id, NODE_ROOT, 0, 0);
	if (!err)
		err = new_node(a, &id, NODE_ROOT, 0, 0);
	if (err) {
		calls_agg__free(a);
		return err;
	}
	*out = a;
	return 0;
}

void calls_agg__free(struct calls_agg *a)
{
	const void *k;
	void *v;
	size_t it = 0;

	if (!a)
		return;
	if (a->threads)
		while (hashmap__next(a->threads, &it, &k, &v))
			free(((struct thread *)v)->stack);
	hashmap__free(a->threads);
	hashmap__free(a->node_index);
	hashmap__free(a->samples);
	hashmap__free(a->names);
	strpool__free(a->strings);
	free(a->nodes);
	free(a);
}

/* The child of parent for (name_id, line); 0 on allocation failure (the root: the call is
 * still counted, on a shorter path, rather than lost). */
static uint32_t child_node(struct calls_agg *a, uint32_t parent, uint64_t name_id, uint32_t line)
{
	struct node_key key = {.parent = parent, .line = line, .name_id = name_id};
	uint32_t *id, nid;
	bool created;

	if (hashmap__upsert(a->node_index, (void **)&id, &key, &created))
		return NODE_ROOT;
	if (!created)
		return *id;
	if (new_node(a, &nid, parent, name_id, line)) {
		hashmap__delete(a->node_index, &key);
		return NODE_ROOT;
	}
	*id = nid;
	return nid;
}

static void add_sample(struct calls_agg *a, uint32_t pid, uint32_t tid, uint32_t node,
		       uint64_t calls, struct when self)
{
	struct sample_key key = {.pid = pid, .tid = tid, .node = node};
	struct calls_values *v;

	if (hashmap__upsert(a->samples, (void **)&v, &key, NULL))
		return;
	v->calls += calls;
	v->wall_ns += self.wall;
	v->busy_ns += self.busy;
}

static uint64_t elapsed(struct calls_agg *a, uint64_t from, uint64_t to)
{
	if (to >= from)
		return to - from;
	a->stats.clamped_times++;
	return 0;
}

/*
 * From one moment to a later one: the wall time, and the on-CPU time within it.  The clocks
 * are two (a time and a run-time count that is exact at switches only, up to a tick behind
 * otherwise): on-CPU time is bounded by the wall time, and a run-time count behind an earlier
 * exact reading is no time, not an error.
 */
static struct when span(struct calls_agg *a, struct when from, struct when to)
{
	struct when d = {.wall = elapsed(a, from.wall, to.wall)};

	d.busy = to.busy > from.busy ? to.busy - from.busy : 0;
	if (d.busy > d.wall)
		d.busy = d.wall;
	return d;
}

/* Self times: inclusive less the callees', each at least 0. */
static struct when self_of(struct when incl, struct when child)
{
	return (struct when){
		.wall = incl.wall > child.wall ? incl.wall - child.wall : 0,
		.busy = incl.busy > child.busy ? incl.busy - child.busy : 0,
	};
}

static void add_to_parent(struct thread *t, struct when incl)
{
	struct when *c = t->depth ? &t->stack[t->depth - 1].child : &t->base_child;

	c->wall += incl.wall;
	c->busy += incl.busy;
}

/* Pop the top frame, ending at at; calls = 1 when it returned, 0 when it is cut short. */
static void pop(struct calls_agg *a, const struct thread_key *k, struct thread *t, struct when at,
		uint64_t calls)
{
	struct frame *f = &t->stack[--t->depth];
	struct when incl = span(a, f->start, at);

	add_sample(a, k->pid, k->tid, f->node, calls, self_of(incl, f->child));
	add_to_parent(t, incl);
}

/* Close every open frame at ts without counting calls: their time so far is real. */
static void close_open(struct calls_agg *a, const struct thread_key *k, struct thread *t,
		       struct when at)
{
	while (t->depth) {
		a->stats.unfinished_frames++;
		pop(a, k, t, at, 0);
	}
	t->overflow = 0;
}

/* Put a fresh placeholder under an empty stack: what comes next has unknown callers. */
static int new_base(struct calls_agg *a, struct thread *t, struct when at)
{
	uint32_t id;
	int err = new_node(a, &id, NODE_ROOT, 0, 0);

	if (err)
		return err;
	t->base = id;
	t->base_start = at;
	t->base_child = (struct when){0};
	t->outer = 0;
	return 0;
}

static struct thread *get_thread(struct calls_agg *a, const struct thread_key *k, struct when at)
{
	struct thread *t;
	bool created;

	if (hashmap__upsert(a->threads, (void **)&t, k, &created))
		return NULL;
	if (created) {
		/* First seen after attach and not listed as pre-existing: seen from its start. */
		t->base = NODE_ROOT;
		t->base_start = at;
	}
	return t;
}

static int push(struct calls_agg *a, struct thread *t, const struct prof_call_event *e)
{
	uint32_t parent = t->depth ? t->stack[t->depth - 1].node : t->base;

	if (t->depth == t->cap) {
		uint32_t cap = t->cap ? t->cap * 2 : 32;
		struct frame *s = realloc(t->stack, cap * sizeof(*s));

		if (!s)
			return -ENOMEM;
		t->stack = s;
		t->cap = cap;
	}
	t->stack[t->depth++] = (struct frame){
		.name_id = e->name_id,
		.start = {e->ts, e->busy},
		.sp = e->frame_sp,
		.site = e->site,
		.node = child_node(a, parent, e->name_id, e->line),
	};
	return 0;
}

/*
 * HotSpot's compiled code fires no method__return for frames an exception unwinds.  A new
 * entry shows which open frames are gone.  Open frames deeper than the new one (lower SP)
 * are.  Frames at the same SP share one physical frame (methods inlined into one compiled
 * frame); each inlined entry probe has its own site, so if one of them has the new entry's
 * site, that probe is running again: it and what it entered were left.  Live callers are
 * above (higher SP), or in the same frame at other sites.
 */
static void pop_unwound(struct calls_agg *a, const struct thread_key *k, struct thread *t,
			const struct prof_call_event *e)
{
	uint32_t i;

	while (t->depth && t->stack[t->depth - 1].sp && t->stack[t->depth - 1].sp < e->frame_sp) {
		a->stats.unwound_frames++;
		pop(a, k, t, t->now, 1);
	}
	for (i = t->depth; i > 0 && t->stack[i - 1].sp == e->frame_sp; i--)
		if (t->stack[i - 1].site == e->site)
			break;
	if (i == 0 || t->stack[i - 1].sp != e->frame_sp)
		return; /* no frame of this site in the new entry's frame */
	while (t->depth >= i) {
		a->stats.unwound_frames++;
		pop(a, k, t, t->now, 1);
	}
}

/*
 * The base placeholder turns out to be a frame of name_id that returned at ts: name it,
 * count its call with the time we saw of it (a lower bound: it began before base_start),
 * and give it a new placeholder as caller.
 */
static void name_base(struct calls_agg *a, const struct thread_key *k, struct thread *t,
		      uint64_t name_id, uint32_t line, struct when at)
{
	struct when incl = span(a, t->base_start, at);
	uint32_t old = t->base, outer = t->outer;

	a->nodes[old].name_id = name_id;
	a->nodes[old].line = line;
	add_sample(a, k->pid, k->tid, old, 1, self_of(incl, t->base_child));
	if (new_base(a, t, t->base_start)) {
		t->base = NODE_ROOT; /* out of memory: what follows goes on the root */
		return;
	}
	a->nodes[old].parent = t->base;
	t->base_child = incl;
	t->outer = outer + 1;
}

static void on_return(struct calls_agg *a, const struct thread_key *k, struct thread *t,
		      const struct prof_call_event *e)
{
	uint32_t i;

	if (t->overflow) {
		t->overflow--; /* its entry was beyond the depth limit */
		return;
	}
	/* Usually the top frame; deeper when frames were left by an exception without their
	 * returns (HotSpot's compiled code): those are closed here, as completed calls. */
	for (i = t->depth; i > 0; i--)
		if (t->stack[i - 1].name_id == e->name_id)
			break;
	if (i > 0) {
		while (t->depth > i) {
			a->stats.unwound_frames++;
			pop(a, k, t, t->now, 1);
		}
		pop(a, k, t, t->now, 1);
		return;
	}
	/* Seen from its start, yet no such frame: an entry the runtime never reported.  Or more
	 * outer frames than any real stack has: returns without entries, not a stack. */
	if (t->base == NODE_ROOT || t->outer >= CALLS_AGG_MAX_DEPTH) {
		a->stats.mismatched_returns++;
		return;
	}
	/* A frame older than anything we saw: everything open was called by it. */
	while (t->depth) {
		a->stats.unwound_frames++;
		pop(a, k, t, t->now, 1);
	}
	a->stats.outer_returns++;
	name_base(a, k, t, e->name_id, e->line, t->now);
}

int calls_agg__event(struct calls_agg *a, const struct prof_call_event *e)
{
	struct thread_key k = {.pid = e->pid, .tid = e->tid};
	struct thread *t;

	if (e->type == PROF_REC_CALL_RETURN && (e->flags & PROF_CALL_F_RETURN_ONLY)) {
		/* One whole call whose callers and duration the runtime does not tell. */
		a->stats.returns++;
		a->stats.return_only++;
		add_sample(a, e->pid, e->tid, child_node(a, NODE_RETURN_ONLY, e->name_id, e->line),
			   1, (struct when){0});
		return 0;
	}
	t = get_thread(a, &k, (struct when){e->ts, e->busy});
	if (!t)
		return -ENOMEM;
	if (e->ts < t->ready) {
		a->stats.attach_window++;
		return 0;
	}
	if (e->flags & PROF_CALL_F_LOST) {
		/* Entries or returns of this thread were dropped: its stack cannot be trusted.
		 * Close it where we last knew it; the frames still open will name the new
		 * placeholder as they return. */
		a->stats.resyncs++;
		close_open(a, &k, t, t->last);
		if (new_base(a, t, (struct when){e->ts, e->busy}))
			t->base = NODE_ROOT;
	}
	if (!t->last.wall) {
		/* Its first event: a thread there before the probes got its base without an
		 * on-CPU clock, which starts here. */
		t->base_start.busy = e->busy;
		t->last.busy = e->busy;
	}
	t->now = (struct when){e->ts, e->busy};
	if (e->ts > t->last.wall)
		t->last.wall = e->ts;
	if (e->busy > t->last.busy)
		t->last.busy = e->busy;
	if (e->type == PROF_REC_CALL_ENTRY) {
		a->stats.entries++;
		if (e->frame_sp && !t->overflow)
			pop_unwound(a, &k, t, e);
		if (t->overflow || t->depth >= CALLS_AGG_MAX_DEPTH) {
			a->stats.depth_exceeded++;
			t->overflow++;
			return 0;
		}
		return push(a, t, e);
	}
	a->stats.returns++;
	on_return(a, &k, t, e);
	return 0;
}

static void copy_field(char *dst, const char *src, uint16_t len, size_t size)
{
	size_t n = strnlen(src, len < size ? len : size);

	memcpy(dst, src, n);
	dst[n] = 0;
}

int calls_agg__name(struct calls_agg *a, const struct prof_call_name *n)
{
	char cls[PROF_CALL_CLS_LEN + 1], fn[PROF_CALL_FN_LEN + 1], file[PROF_CALL_FILE_LEN + 1];
	struct name *v;

	/* BPF sends a name once (again only after its LRU forgot it): one past the cap stays
	 * unnamed for the life of its process. */
	if (!hashmap__find(a->names, &n->name_id) &&
	    hashmap__count(a->names) >= CALLS_AGG_MAX_NAMES) {
		a->stats.names_over_cap++;
		return 0;
	}
	/* Bounded by the stored lengths: HotSpot's strings are not NUL-terminated. */
	copy_field(cls, n->cls, n->cls_len, PROF_CALL_CLS_LEN);
	copy_field(fn, n->fn, n->fn_len, PROF_CALL_FN_LEN);
	copy_field(file, n->file, n->file_len, PROF_CALL_FILE_LEN);
	if (hashmap__upsert(a->names, (void **)&v, &n->name_id, NULL))
		return -ENOMEM;
	v->pid = n->pid;
	v->n.runtime = n->runtime < PROF_RT__COUNT ? (enum prof_runtime)n->runtime : PROF_RT_NONE;
	v->n.cls = strpool__intern(a->strings, cls);
	v->n.fn = strpool__intern(a->strings, fn);
	v->n.file = strpool__intern(a->strings, file);
	if (!v->n.cls || !v->n.fn || !v->n.file) {
		hashmap__delete(a->names, &n->name_id);
		return -ENOMEM;
	}
	return 0;
}

int calls_agg__thread_preexisting(struct calls_agg *a, uint32_t pid, uint32_t tid, uint64_t ts)
{
	struct thread_key k = {.pid = pid, .tid = tid};
	struct thread *t = get_thread(a, &k, (struct when){ts, 0});

	if (!t)
		return -ENOMEM;
	if (t->base != NODE_ROOT || t->depth)
		return 0; /* already known */
	t->ready = ts;
	/* (its on-CPU clock starts at its first event) */
	return new_base(a, t, (struct when){ts, t->last.busy});
}

void calls_agg__thread_exit(struct calls_agg *a, uint32_t pid, uint32_t tid)
{
	struct thread_key k = {.pid = pid, .tid = tid};
	struct thread *t = hashmap__find(a->threads, &k);

	if (!t)
		return;
	close_open(a, &k, t, t->last);
	free(t->stack);
	hashmap__delete(a->threads, &k);
}

void calls_agg__process_exec(struct calls_agg *a, uint32_t pid)
{
	const struct thread_key *k;
	struct thread_key *gone = NULL;
	size_t it = 0, n = 0, cap = 0;
	void *v;

	/* Collect first: deleting while iterating would move entries under the iterator. */
	while (hashmap__next(a->threads, &it, (const void **)&k, &v)) {
		if (k->pid != pid)
			continue;
		if (n == cap) {
			struct thread_key *g =
				realloc(gone, (cap = cap ? cap * 2 : 8) * sizeof(*g));

			if (!g)
				break;
			gone = g;
		}
		gone[n++] = *k;
	}
	for (size_t i = 0; i < n; i++)
		calls_agg__thread_exit(a, gone[i].pid, gone[i].tid);
	free(gone);
}

void calls_agg__finish(struct calls_agg *a, uint64_t ts, calls_agg_busy_fn busy_now, void *ctx)
{
	const struct thread_key *k;
	size_t it = 0;
	void *v;

	while (hashmap__next(a->threads, &it, (const void **)&k, &v)) {
		struct thread *t = v;
		struct when at = t->last;
		uint64_t busy;

		if (ts > at.wall)
			at.wall = ts;
		if (t->depth && busy_now && !busy_now(ctx, k->pid, k->tid, &busy) && busy > at.busy)
			at.busy = busy;
		close_open(a, k, t, at);
	}
}

/* Mark node and its callers live (remap[id] = 1), up to the first one already marked. */
static void mark_path(const struct calls_agg *a, uint32_t *remap, uint32_t node)
{
	while (node < a->nnodes && !remap[node]) {
		remap[node] = 1;
		node = a->nodes[node].parent;
	}
}

/*
 * After an interval's snapshot: only the paths of frames still open (and the fixed nodes) are
 * needed again; the others go and the kept ones are numbered anew.  All or nothing: on an
 * allocation failure the tree stays as it was (bigger, still right).
 */
static int compact_nodes(struct calls_agg *a)
{
	const uint32_t dead = UINT32_MAX;
	struct hashmap *index = NULL;
	struct calls_node *nodes = NULL;
	uint32_t *remap, n = 0, cap;
	const struct node_key *k;
	const struct thread_key *tk;
	const uint32_t *id;
	size_t it = 0;
	void *v;
	int err;

	remap = calloc(a->nnodes, sizeof(*remap));
	if (!remap)
		return -ENOMEM;
	remap[NODE_ROOT] = remap[NODE_RETURN_ONLY] = 1;
	while (hashmap__next(a->threads, &it, (const void **)&tk, &v)) {
		const struct thread *t = v;

		mark_path(a, remap, t->base);
		for (uint32_t i = 0; i < t->depth; i++)
			mark_path(a, remap, t->stack[i].node);
	}
	for (uint32_t i = 0; i < a->nnodes; i++)
		remap[i] = remap[i] ? n++ : dead;
	cap = n < 1024 ? 1024 : n;
	nodes = malloc(cap * sizeof(*nodes));
	err = nodes ? hashmap__new(&index, sizeof(struct node_key), sizeof(uint32_t)) : -ENOMEM;
	it = 0;
	while (!err && hashmap__next(a->node_index, &it, (const void **)&k, (void **)&id)) {
		struct node_key nk = *k;
		uint32_t *nid;

		if (remap[*id] == dead)
			continue;
		nk.parent = remap[k->parent];
		err = hashmap__upsert(index, (void **)&nid, &nk, NULL);
		if (!err)
			*nid = remap[*id];
	}
	if (err)
		goto cleanup;
	for (uint32_t i = 0; i < a->nnodes; i++) {
		if (remap[i] == dead)
			continue;
		nodes[remap[i]] = a->nodes[i];
		nodes[remap[i]].parent = remap[a->nodes[i].parent];
	}
	it = 0;
	while (hashmap__next(a->threads, &it, (const void **)&tk, &v)) {
		struct thread *t = v;

		t->base = remap[t->base];
		for (uint32_t i = 0; i < t->depth; i++)
			t->stack[i].node = remap[t->stack[i].node];
	}
	free(a->nodes);
	a->nodes = nodes;
	a->nnodes = n;
	a->cap = cap;
	nodes = NULL;
	hashmap__free(a->node_index);
	a->node_index = index;
	index = NULL;
cleanup:
	hashmap__free(index);
	free(nodes);
	free(remap);
	return err;
}

/* The names of forgotten processes are gone: a smaller table, and their strings freed. */
static int sweep_names(struct calls_agg *a)
{
	struct hashmap *names = NULL, *keep = NULL;
	const uint64_t *id;
	struct name *v, *nv;
	size_t it = 0;
	int err;

	err = hashmap__new(&names, sizeof(uint64_t), sizeof(struct name));
	if (!err)
		err = hashmap__new(&keep, sizeof(const char *), 0);
	while (!err && hashmap__next(a->names, &it, (const void **)&id, (void **)&v)) {
		const char *strs[3] = {v->n.cls, v->n.fn, v->n.file};
		void *unused;

		err = hashmap__upsert(names, (void **)&nv, id, NULL);
		if (!err)
			*nv = *v;
		for (int i = 0; i < 3 && !err; i++)
			err = hashmap__upsert(keep, &unused, &strs[i], NULL);
	}
	if (err)
		goto cleanup;
	hashmap__free(a->names);
	a->names = names;
	names = NULL;
	strpool__sweep(a->strings, keep);
	a->names_dropped = false;
cleanup:
	hashmap__free(names);
	hashmap__free(keep);
	return err;
}

int calls_agg__new_interval(struct calls_agg *a)
{
	struct hashmap *samples = NULL;
	struct calls_values *v;
	size_t it = 0;
	int err;

	a->stats = (struct calls_agg_stats){0};
	/* The snapshot has every value: the samples start empty, so their nodes can go. */
	err = hashmap__new(&samples, sizeof(struct sample_key), sizeof(struct calls_values));
	if (err) {
		while (hashmap__next(a->samples, &it, NULL, (void **)&v))
			memset(v, 0, sizeof(*v)); /* the builder skips zero samples */
		return err;
	}
	hashmap__free(a->samples);
	a->samples = samples;
	err = compact_nodes(a);
	if (!err && a->names_dropped)
		err = sweep_names(a);
	return err;
}

void calls_agg__forget_pid(struct calls_agg *a, uint32_t pid)
{
	struct sample_key *gone = NULL;
	const struct sample_key *k;
	const uint64_t *id;
	uint64_t *ids = NULL;
	size_t it = 0, n = 0, cap = 0;
	struct name *nm;

	calls_agg__process_exec(a, pid); /* closes and drops its threads */
	while (hashmap__next(a->samples, &it, (const void **)&k, NULL)) {
		if (k->pid != pid)
			continue;
		if (n == cap) {
			struct sample_key *g =
				realloc(gone, (cap = cap ? 2 * cap : 64) * sizeof(*g));

			if (!g)
				break;
			gone = g;
		}
		gone[n++] = *k;
	}
	for (size_t i = 0; i < n; i++)
		hashmap__delete(a->samples, &gone[i]);
	free(gone);
	/* Its names: BPF's ids hash the pid in, so no other process names a call with them. */
	it = n = cap = 0;
	while (hashmap__next(a->names, &it, (const void **)&id, (void **)&nm)) {
		if (nm->pid != pid)
			continue;
		if (n == cap) {
			uint64_t *g = realloc(ids, (cap = cap ? 2 * cap : 64) * sizeof(*g));

			if (!g)
				break;
			ids = g;
		}
		ids[n++] = *id;
	}
	for (size_t i = 0; i < n; i++)
		hashmap__delete(a->names, &ids[i]);
	a->names_dropped |= n > 0;
	free(ids);
}

bool calls_agg__next_sample(const struct calls_agg *a, size_t *it, uint32_t *pid, uint32_t *tid,
			    uint32_t *node, const struct calls_values **vals)
{
	const struct sample_key *k;
	void *v;

	if (!hashmap__next(a->samples, it, (const void **)&k, &v))
		return false;
	*pid = k->pid;
	*tid = k->tid;
	*node = k->node;
	*vals = v;
	return true;
}

const struct calls_values *calls_agg__values(const struct calls_agg *a, uint32_t pid, uint32_t tid,
					     uint32_t node)
{
	struct sample_key key = {.pid = pid, .tid = tid, .node = node};

	return hashmap__find(a->samples, &key);
}

const struct calls_node *calls_agg__node(const struct calls_agg *a, uint32_t node)
{
	return node < a->nnodes ? &a->nodes[node] : NULL;
}

uint32_t calls_agg__node_count(const struct calls_agg *a)
{
	return a->nnodes;
}

uint32_t calls_agg__find_node(const struct calls_agg *a, uint32_t parent, uint64_t name_id,
			      uint32_t line)
{
	struct node_key key = {.parent = parent, .line = line, .name_id = name_id};
	uint32_t *id = hashmap__find(a->node_index, &key);

	return id ? *id : 0;
}

const struct calls_name *calls_agg__lookup_name(const struct calls_agg *a, uint64_t name_id)
{
	const struct name *n = hashmap__find(a->names, &name_id);

	return n ? &n->n : NULL;
}

uint32_t calls_agg__name_count(const struct calls_agg *a)
{
	return (uint32_t)hashmap__count(a->names);
}

const struct calls_agg_stats *calls_agg__stats(const struct calls_agg *a)
{
	return &a->stats;
}
