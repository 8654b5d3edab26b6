// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
#include "agg/heap_agg.h"

#include <errno.h>
#include <math.h>
#include <stdbool.h>
#include <stdlib.h>

#include "agg/live_cap.h"
#include "util/hashmap.h"
#include "util/log.h"

struct site_key {
	uint32_t pid, tid;
	int32_t stack_id;
	uint32_t py; /* enum prof_py_thread: the gil label (the site's former padding) */
};

/* A site's values, and where they stand against its process's peak. */
struct site_state {
	struct heap_site_values v; /* first: the values handed out are its address */
	uint64_t changed;	   /* h->seq of the last change of its in-use values */
};

/* A process's peak, and the change (h->seq) that made it. */
struct pid_peak {
	struct heap_peak pk;
	uint64_t seq;
};

struct live_key {
	uint64_t addr;
	uint32_t pid;
	uint32_t pad;
};

struct live_block {
	struct site_key site;
	double objects, bytes; /* what this block added to its site's in-use values */
	uint64_t born;	       /* heap_agg__at's time when it was allocated */
};

struct heap_agg {
	uint64_t sample_bytes;
	struct hashmap *sites; /* site_key -> site_state */
	struct hashmap *peaks; /* pid -> pid_peak */
	struct pid_peak
		*last_peak; /* the last one changed (NULL after any insertion or deletion) */
	uint32_t last_pid;
	uint64_t seq;	       /* changes of in-use values so far */
	struct hashmap *live;  /* live_key -> live_block */
	struct live_cap *caps; /* its blocks per process, checked against the caps per block */
	struct heap_agg_stats stats;
	uint64_t now;		     /* heap_agg__at */
	uint64_t min_size, max_size; /* heap_agg__set_sizes */
	bool oom_reported;
};

int heap_agg__new(struct heap_agg **out, uint64_t sample_bytes)
{
	struct heap_agg *h = calloc(1, sizeof(*h));
	int err;

	if (!h)
		return -ENOMEM;
	h->sample_bytes = sample_bytes;
	err = live_cap__new(&h->caps);
	if (err)
		goto cleanup;
	err = hashmap__new(&h->sites, sizeof(struct site_key), sizeof(struct site_state));
	if (!err)
		err = hashmap__new(&h->peaks, sizeof(uint32_t), sizeof(struct pid_peak));
	if (err)
		goto cleanup;
	err = hashmap__new(&h->live, sizeof(struct live_key), sizeof(struct live_block));
	if (err)
		goto cleanup;
	*out = h;
	return 0;
cleanup:
	heap_agg__free(h);
	return err;
}

void heap_agg__free(struct heap_agg *h)
{
	if (!h)
		return;
	hashmap__free(h->sites);
	hashmap__free(h->peaks);
	hashmap__free(h->live);
	live_cap__free(h->caps);
	free(h);
}

void heap_agg__set_caps(struct heap_agg *h, uint32_t per_pid, uint32_t total)
{
	live_cap__set(h->caps, per_pid, total);
}

uint32_t heap_agg__live_count(const struct heap_agg *h, uint32_t pid)
{
	return live_cap__count(h->caps, pid);
}

/* A new live block of lk->pid, counted.  0 or -ENOMEM (nothing changed). */
static int track(struct heap_agg *h, struct live_block **out, const struct live_key *lk)
{
	int err = live_cap__add(h->caps, lk->pid);

	if (err)
		return err;
	err = hashmap__upsert(h->live, (void **)out, lk, NULL);
	if (err)
		live_cap__sub(h->caps, lk->pid);
	return err;
}

/* What heap_agg__exec and heap_agg__forget_pid take a pid's live blocks out with. */
struct pid_ctx {
	struct heap_agg *h;
	uint32_t pid;
	bool uncount;				/* exec: their in-use shares leave too */
	void (*gone)(void *ctx, uint64_t addr); /* forget_pid: told each address */
	void *gone_ctx;
	uint64_t n; /* blocks taken out */
};

/* A live block leaves the table, and its process's count with it. */
static void untrack(struct heap_agg *h, const struct live_key *lk)
{
	if (!hashmap__delete(h->live, lk))
		live_cap__sub(h->caps, lk->pid);
}

static void oom(struct heap_agg *h)
{
	if (!h->oom_reported)
		pr_err("out of memory while aggregating; the profile will be incomplete\n");
	h->oom_reported = true;
}

/* Expected number of allocations one sampled allocation of this size stands for. */
static double weight(const struct heap_agg *h, uint64_t size)
{
	if (!h->sample_bytes || !size)
		return 1.0;
	return 1.0 / -expm1(-(double)size / (double)h->sample_bytes);
}

/*
 * Change a site's in-use values, and its process's.  What the site held at the process's last
 * peak is kept first, if it has not changed since: what it holds is what it held then.
 */
static void change_inuse(struct heap_agg *h, struct site_state *s, uint32_t pid, double objects,
			 double bytes)
{
	struct pid_peak *pp = h->last_peak;

	/* Events come in runs of one process: its peak is the last one changed. */
	if (!pp || h->last_pid != pid) {
		if (hashmap__upsert(h->peaks, (void **)&pp, &pid, NULL)) {
			oom(h);
			pp = NULL;
		}
		/* An insertion may move every value: none but this one is pointed to. */
		h->last_peak = pp;
		h->last_pid = pid;
	}
	if (pp && s->changed <= pp->seq) {
		s->v.peak_objects = s->v.inuse_objects;
		s->v.peak_bytes = s->v.inuse_bytes;
	}
	s->changed = ++h->seq;
	s->v.inuse_objects += objects;
	s->v.inuse_bytes += bytes;
	if (!pp)
		return;
	pp->pk.inuse_bytes += bytes;
	if (bytes > 0 && pp->pk.inuse_bytes > pp->pk.bytes) {
		pp->pk.bytes = pp->pk.inuse_bytes;
		pp->pk.at = h->now;
		pp->seq = s->changed;
	}
}

/* Take a live block's share out of its site's in-use values. */
static void uncount(struct heap_agg *h, const struct live_block *b)
{
	struct site_state *s = hashmap__find(h->sites, &b->site);

	if (s)
		change_inuse(h, s, b->site.pid, -b->objects, -b->bytes);
}

void heap_agg__free_block(struct heap_agg *h, uint32_t pid, uint64_t addr)
{
	struct live_key lk = {.addr = addr, .pid = pid};
	struct live_block *b;

	if (!addr)
		return;
	b = hashmap__find(h->live, &lk);
	if (!b) {
		h->stats.unknown_frees++;
		return;
	}
	uncount(h, b);
	h->stats.frees++;
	untrack(h, &lk);
}

void heap_agg__untrack(struct heap_agg *h, uint32_t pid, uint64_t addr)
{
	struct live_key lk = {.addr = addr, .pid = pid};
	struct live_block *b = hashmap__find(h->live, &lk);

	if (!b)
		return;
	uncount(h, b);
	untrack(h, &lk);
}

/* A block standing for objects allocations of bytes in all. */
static void add_block(struct heap_agg *h, uint32_t pid, uint32_t tid, int32_t stack_id, uint8_t py,
		      uint64_t addr, double objects, double bytes)
{
	struct site_key sk = {
		.pid = pid, .tid = tid, .stack_id = stack_id < 0 ? -1 : stack_id, .py = py};
	struct live_key lk = {.addr = addr, .pid = pid};
	struct site_state *s;
	struct live_block *b;

	if (!addr) {
		h->stats.failed_allocs++;
		return;
	}
	if (stack_id < 0)
		h->stats.no_stack++;
	b = hashmap__find(h->live, &lk);
	if (b) {
		/* Its free was lost (or happened before an exec): the slot is reused below. */
		h->stats.replaced_live++;
		uncount(h, b);
	}
	if (hashmap__upsert(h->sites, (void **)&s, &sk, NULL)) {
		oom(h);
		return;
	}
	s->v.alloc_objects += objects;
	s->v.alloc_bytes += bytes;
	h->stats.allocs++;
	/* Past a cap the allocation still counts, but is not in use as far as we know. */
	if (!b && !live_cap__room(h->caps, pid)) {
		h->stats.live_capped++;
		return;
	}
	if (!b && track(h, &b, &lk)) {
		oom(h);
		return;
	}
	change_inuse(h, s, pid, objects, bytes);
	b->site = sk;
	b->objects = objects;
	b->bytes = bytes;
	b->born = h->now;
}

void heap_agg__at(struct heap_agg *h, uint64_t ts)
{
	h->now = ts;
}

int heap_agg__next_live(const struct heap_agg *h, size_t *it, struct heap_live_block *out)
{
	const struct live_block *b;

	if (!hashmap__next(h->live, it, NULL, (void **)&b))
		return 0;
	*out = (struct heap_live_block){.pid = b->site.pid,
					.tid = b->site.tid,
					.py = b->site.py,
					.stack_id = b->site.stack_id,
					.objects = b->objects,
					.bytes = b->bytes,
					.born = b->born};
	return 1;
}

void heap_agg__set_sizes(struct heap_agg *h, uint64_t min, uint64_t max)
{
	h->min_size = min;
	h->max_size = max;
}

/* A block of this size is left out (--min-size, --max-size): counted. */
static bool size_filtered(struct heap_agg *h, uint64_t size)
{
	if (size >= h->min_size && (!h->max_size || size <= h->max_size))
		return false;
	h->stats.size_filtered++;
	return true;
}

void heap_agg__alloc(struct heap_agg *h, uint32_t pid, uint32_t tid, int32_t stack_id, uint8_t py,
		     uint64_t addr, uint64_t size)
{
	double w = weight(h, size);

	if (size_filtered(h, size))
		return;
	add_block(h, pid, tid, stack_id, py, addr, w, w * (double)size);
}

void heap_agg__alloc_weighted(struct heap_agg *h, uint32_t pid, uint32_t tid, int32_t stack_id,
			      uint8_t py, uint64_t addr, uint64_t size, uint64_t weight_bytes)
{
	/* weight / size allocations, at least the one sampled. */
	double objects = size ? (double)weight_bytes / (double)size : 1.0;

	if (size_filtered(h, size))
		return;
	add_block(h, pid, tid, stack_id, py, addr, objects < 1.0 ? 1.0 : objects,
		  (double)weight_bytes);
}

void heap_agg__realloc(struct heap_agg *h, uint32_t pid, uint32_t tid, int32_t stack_id, uint8_t py,
		       uint64_t old_addr, uint64_t addr, uint64_t size)
{
	if (!addr)
		return;
	/* Moved or resized in place: the old block ends, a new one of the new size begins. */
	if (old_addr)
		heap_agg__free_block(h, pid, old_addr);
	heap_agg__alloc(h, pid, tid, stack_id, py, addr, size);
}

/* heap_agg__exec and heap_agg__forget_pid: a pid's entries (live_key, site_key: pid first). */
static bool of_pid(const void *key, const void *val, void *ctx)
{
	(void)val;
	return *(const uint32_t *)key == *(const uint32_t *)ctx;
}

static bool live_of_pid(const void *key, const void *val, void *ctx)
{
	struct pid_ctx *c = ctx;

	(void)val;
	return ((const struct live_key *)key)->pid == c->pid;
}

/* A live block of a pid leaves: its share, its count, and (forget_pid) BPF's record of it. */
static void live_gone(const void *key, void *val, void *ctx)
{
	const struct live_key *lk = key;
	struct pid_ctx *c = ctx;

	if (c->uncount)
		uncount(c->h, val);
	else if (c->gone)
		c->gone(c->gone_ctx, lk->addr);
	live_cap__sub(c->h->caps, lk->pid);
	c->n++;
}

int heap_agg__exec(struct heap_agg *h, uint32_t pid)
{
	struct pid_ctx c = {.h = h, .pid = pid, .uncount = true};
	/* All chosen before any goes: a failure leaves the values as they were. */
	int err = hashmap__delete_if(h->live, live_of_pid, live_gone, &c);

	h->stats.exec_released += c.n;
	return err;
}

/* A site no live block references: every live block holds in-use objects. */
static bool empty_site(const void *key, const void *val, void *ctx)
{
	(void)key;
	(void)ctx;
	return !(((const struct site_state *)val)->v.inuse_objects > 0);
}

int heap_agg__new_interval(struct heap_agg *h)
{
	struct site_state *st;
	struct pid_peak *pp;
	size_t it = 0;

	h->stats = (struct heap_agg_stats){0};
	/* Each process's peak starts again from what it holds now: every site's in-use values. */
	h->seq++;
	while (hashmap__next(h->peaks, &it, NULL, (void **)&pp))
		*pp = (struct pid_peak){.pk = {.bytes = pp->pk.inuse_bytes,
					       .inuse_bytes = pp->pk.inuse_bytes,
					       .at = h->now},
					.seq = h->seq};
	it = 0;
	while (hashmap__next(h->sites, &it, NULL, (void **)&st))
		st->v.alloc_objects = st->v.alloc_bytes = 0;
	return hashmap__delete_if(h->sites, empty_site, NULL, NULL);
}

int heap_agg__forget_pid(struct heap_agg *h, uint32_t pid, void (*gone)(void *ctx, uint64_t addr),
			 void *ctx)
{
	struct pid_ctx c = {.h = h, .pid = pid, .gone = gone, .gone_ctx = ctx};
	int err = hashmap__delete_if(h->live, live_of_pid, live_gone, &c);

	if (!err)
		err = hashmap__delete_if(h->sites, of_pid, NULL, &pid);
	if (!err)
		hashmap__delete(h->peaks, &pid);
	h->last_peak = NULL; /* deletion moves values */
	return err;
}

void heap_agg__settle_peaks(struct heap_agg *h)
{
	const struct site_key *k;
	struct site_state *s;
	size_t it = 0;

	while (hashmap__next(h->sites, &it, (const void **)&k, (void **)&s)) {
		const struct pid_peak *pp = hashmap__find(h->peaks, &k->pid);

		if (pp && s->changed <= pp->seq) {
			s->v.peak_objects = s->v.inuse_objects;
			s->v.peak_bytes = s->v.inuse_bytes;
		} else if (!pp) {
			s->v.peak_objects = s->v.peak_bytes = 0;
		}
	}
}

const struct heap_peak *heap_agg__peak(const struct heap_agg *h, uint32_t pid)
{
	const struct pid_peak *pp = hashmap__find(h->peaks, &pid);

	return pp ? &pp->pk : NULL;
}

int heap_agg__next_peak(const struct heap_agg *h, size_t *it, uint32_t *pid,
			const struct heap_peak **pk)
{
	const uint32_t *k;
	void *v;

	if (!hashmap__next(h->peaks, it, (const void **)&k, &v))
		return 0;
	*pid = *k;
	*pk = &((const struct pid_peak *)v)->pk;
	return 1;
}

const struct heap_site_values *heap_agg__site(const struct heap_agg *h, uint32_t pid, uint32_t tid,
					      int32_t stack_id, uint8_t py)
{
	struct site_key sk = {
		.pid = pid, .tid = tid, .stack_id = stack_id < 0 ? -1 : stack_id, .py = py};

	return hashmap__find(h->sites, &sk);
}

const struct heap_agg_stats *heap_agg__stats(const struct heap_agg *h)
{
	return &h->stats;
}

int heap_agg__next_site(const struct heap_agg *h, size_t *it, uint32_t *pid, uint32_t *tid,
			int32_t *stack_id, uint32_t *py, const struct heap_site_values **vals)
{
	const struct site_key *k;
	void *v;

	if (!hashmap__next(h->sites, it, (const void **)&k, &v))
		return 0;
	*pid = k->pid;
	*tid = k->tid;
	*stack_id = k->stack_id;
	*py = k->py;
	*vals = v;
	return 1;
}
