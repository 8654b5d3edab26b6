// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
#include "trace/memtrace_rec.h"

#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "agg/collect.h"
#include "agg/live_cap.h"
#include "sym/stackres.h"
#include "trace/memtrace.h"
#include "export/output.h"
#include "prof_python.h"
#include "util/hashmap.h"
#include "util/clock.h"

/* Events held until their stacks are symbolized: one sync per this many. */
#define REC_QUEUE	 4096
/* Room kept in trace_info for the context that the end of the run writes. */
#define REC_CONTEXT_ROOM 480

struct queued {
	struct collect_heap_event e;
	uint64_t ts; /* µs since the epoch, when the event was consumed */
};

struct live_key {
	uint64_t addr;
	uint32_t pid;
	uint32_t pad;
};

struct memtrace_rec {
	struct output *out;
	struct memtrace_writer *w;
	struct stackres *stacks;
	uint64_t sample_bytes;
	char *cmdline;
	struct hashmap *live;  /* live_key -> uint64_t object id */
	struct live_cap *caps; /* live's objects per process, under the heap caps */
	struct queued *q;
	unsigned nq;
	uint64_t rng;
	uint64_t codes[PROF_STACK_WORDS];
	struct memtrace_rec_stats st;
};

/* xorshift64*: a uniform double in [0, 1) for the rounding of nsamples. */
static double uniform(struct memtrace_rec *r)
{
	r->rng ^= r->rng >> 12;
	r->rng ^= r->rng << 25;
	r->rng ^= r->rng >> 27;
	return (double)((r->rng * 0x2545F4914F6CDD1Dull) >> 11) / 9007199254740992.0;
}

uint64_t memtrace_rec__nsamples(uint64_t size, uint64_t sample_bytes, double u)
{
	double x, whole;

	if (!sample_bytes)
		return (size + 7) / 8; /* every allocation: every word is a sample */
	if (!size)
		return 1;
	/* The sampler took this block with probability 1 - exp(-size / N): it stands for
	 * size / that bytes, x samples of N bytes (x >= 1). */
	x = ((double)size / (double)sample_bytes) / -expm1(-(double)size / (double)sample_bytes);
	whole = floor(x);
	return (uint64_t)whole + (u < x - whole ? 1 : 0);
}

/* A block a process's own sampler weighted (otel_memory:alloc): weight bytes in samples of
 * sample_bytes (words when every allocation is traced), rounded at random with u so the
 * trace's totals stay unbiased (0 samples when its weight is well under sample_bytes). */
static uint64_t weighted_nsamples(uint64_t weight, uint64_t sample_bytes, double u)
{
	double x, whole;

	if (!sample_bytes)
		return (weight + 7) / 8;
	x = (double)weight / (double)sample_bytes;
	whole = floor(x);
	return (uint64_t)whole + (u < x - whole ? 1 : 0);
}

int memtrace_rec__new(struct memtrace_rec **out, const struct memtrace_rec_opts *o,
		      struct stackres *stacks)
{
	struct memtrace_rec *r = calloc(1, sizeof(*r));
	char host[256] = "", ctx[REC_CONTEXT_ROOM];
	int err;

	if (!r)
		return -ENOMEM;
	r->stacks = stacks;
	r->sample_bytes = o->sample_bytes;
	r->rng = 0x9E3779B97F4A7C15ull ^ o->pid;
	r->cmdline = strdup(o->cmdline ? o->cmdline : "");
	r->q = calloc(REC_QUEUE, sizeof(*r->q));
	if (!r->cmdline || !r->q) {
		err = -ENOMEM;
		goto cleanup;
	}
	err = hashmap__new(&r->live, sizeof(struct live_key), sizeof(uint64_t));
	if (!err)
		err = live_cap__new(&r->caps);
	if (err)
		goto cleanup;
	err = output__open(&r->out, o->path);
	if (err)
		goto cleanup;
	gethostname(host, sizeof(host) - 1);
	snprintf(ctx, sizeof(ctx), "bpftrace-prof: recording (an unfinished trace)");
	err = memtrace_writer__new(
		&r->w, output__file(r->out),
		&(struct memtrace_writer_opts){
			/* memtrace samples words: one sample per sample_bytes is a rate of
			 * word_size / sample_bytes per word; 0 traces every word. */
			.sample_rate = o->sample_bytes ? 8.0 / (double)o->sample_bytes : 1.0,
			.word_size = 8,
			.executable = o->executable,
			.host = host,
			.runtime_params = "",
			.pid = o->pid,
			.start_us = (uint64_t)clock__real_ns() / 1000u,
			.context_room = REC_CONTEXT_ROOM,
			.context = ctx,
		});
	if (err)
		goto cleanup;
	*out = r;
	return 0;
cleanup:
	memtrace_rec__free(r);
	return err;
}

void memtrace_rec__free(struct memtrace_rec *r)
{
	if (!r)
		return;
	memtrace_writer__free(r->w);
	output__abort(r->out);
	hashmap__free(r->live);
	live_cap__free(r->caps);
	free(r->q);
	free(r->cmdline);
	free(r);
}

void memtrace_rec__set_caps(struct memtrace_rec *r, uint32_t per_pid, uint32_t total)
{
	live_cap__set(r->caps, per_pid, total);
}

const struct memtrace_rec_stats *memtrace_rec__stats(const struct memtrace_rec *r)
{
	return &r->st;
}

static const char *base_name(const char *path)
{
	const char *s = strrchr(path, '/');

	return s ? s + 1 : path;
}

/* The location code of one frame, its location written first if new. */
static int frame_code(struct memtrace_rec *r, uint64_t *code, const struct stackres_frame *f)
{
	const struct sym_mapping *m = f->sym.map;
	const char *name = f->sym.name ? f->sym.name : f->sym.system_name;
	struct memtrace_loc loc;
	char unknown[320];

	if (name) {
		loc.defname = name;
		loc.file = f->sym.file ? f->sym.file : m ? m->path : "";
		loc.line = f->sym.line > 0 ? (uint32_t)f->sym.line : 0;
	} else {
		/* Named as the pprof and text outputs name an address without a symbol. */
		if (m)
			snprintf(unknown, sizeof(unknown), "[unknown] 0x%" PRIx64 " (%s)", f->addr,
				 base_name(m->path));
		else
			snprintf(unknown, sizeof(unknown), "[unknown] 0x%" PRIx64, f->addr);
		loc.defname = unknown;
		loc.file = m ? m->path : "[unknown]";
		loc.line = 0;
	}
	*code = memtrace__loc_code(loc.file, loc.defname, loc.line);
	return memtrace_writer__location(r->w, *code, &loc, 1);
}

static int collect_block(struct memtrace_rec *r, uint64_t ts, const struct live_key *k)
{
	uint64_t *id = hashmap__find(r->live, k);
	int err;

	if (!id)
		return -ENOENT;
	err = memtrace_writer__collect(r->w, ts, *id);
	if (err)
		return err;
	r->st.collects++;
	hashmap__delete(r->live, k);
	live_cap__sub(r->caps, k->pid);
	return 0;
}

static int on_alloc(struct memtrace_rec *r, const struct queued *q)
{
	struct live_key k = {.addr = q->e.addr, .pid = q->e.pid};
	const struct stackres_frame *frames;
	unsigned nframes, n = 0;
	uint64_t id, *slot;
	int err;

	if (!q->e.addr) {
		r->st.failed_allocs++;
		return 0;
	}
	err = collect_block(r, q->ts, &k);
	if (!err)
		r->st.replaced_live++; /* its free was lost */
	else if (err != -ENOENT)
		return err;
	if (q->e.stack_id < 0)
		r->st.no_stack++;
	frames = stackres__frames(r->stacks, q->e.stack_id, &nframes);
	/* memtrace wants the root first. */
	for (unsigned i = nframes; i-- > 0 && n < PROF_STACK_WORDS;) {
		if (prof_py_is_print(frames[i].addr))
			continue; /* the Python frame next to it says it all */
		err = frame_code(r, &r->codes[n++], &frames[i]);
		if (err)
			return err;
	}
	err = memtrace_writer__alloc(
		r->w, &id, q->ts, (q->e.size + 7) / 8,
		q->e.weight ? weighted_nsamples(q->e.weight, r->sample_bytes, uniform(r))
			    : memtrace_rec__nsamples(q->e.size, r->sample_bytes, uniform(r)),
		MEMTRACE_SRC_EXTERNAL, r->codes, n);
	if (err)
		return err;
	r->st.allocs++;
	/* An object not followed is never collected: live to the end for a reader (counted). */
	if (q->e.untracked) {
		r->st.untracked++;
		return 0;
	}
	if (!live_cap__room(r->caps, k.pid)) {
		r->st.live_capped++;
		return 0;
	}
	err = live_cap__add(r->caps, k.pid);
	if (err)
		return err;
	err = hashmap__upsert(r->live, (void **)&slot, &k, NULL);
	if (err) {
		live_cap__sub(r->caps, k.pid);
		return err;
	}
	*slot = id;
	return 0;
}

/* The objects of q's process leave the table: exec collects them (their address space is gone),
 * exit lets them go uncollected (live when it ended: its leaks). */
static int end_process(struct memtrace_rec *r, const struct queued *q, bool collect)
{
	struct live_key *keys = NULL;
	const struct live_key *k;
	size_t it = 0, n = 0, cap = live_cap__count(r->caps, q->e.pid);
	uint64_t *v;
	int err = 0;

	if (!cap)
		return 0;
	keys = malloc(cap * sizeof(*keys));
	if (!keys)
		return -ENOMEM;
	while (hashmap__next(r->live, &it, (const void **)&k, (void **)&v))
		if (k->pid == q->e.pid && n < cap)
			keys[n++] = *k;
	for (size_t i = 0; i < n && !err; i++) {
		if (!collect) {
			hashmap__delete(r->live, &keys[i]);
			continue;
		}
		err = collect_block(r, q->ts, &keys[i]);
		if (!err)
			r->st.exec_released++;
	}
	if (!collect)
		live_cap__drop(r->caps, q->e.pid);
	free(keys);
	return err;
}

static int on_one(struct memtrace_rec *r, const struct queued *q)
{
	struct live_key k = {.addr = q->e.addr, .pid = q->e.pid};
	int err;

	switch (q->e.kind) {
	case COLLECT_HEAP_REALLOC:
		if (q->e.old_addr) {
			struct live_key old = {.addr = q->e.old_addr, .pid = q->e.pid};

			err = collect_block(r, q->ts, &old);
			if (err == -ENOENT)
				r->st.unknown_frees++;
			else if (err)
				return err;
		}
		return on_alloc(r, q);
	case COLLECT_HEAP_ALLOC:
		return on_alloc(r, q);
	case COLLECT_HEAP_FREE:
		err = collect_block(r, q->ts, &k);
		if (err == -ENOENT) {
			r->st.unknown_frees++;
			return 0;
		}
		return err;
	case COLLECT_HEAP_EXEC:
		return end_process(r, q, true);
	case COLLECT_HEAP_EXIT:
		return end_process(r, q, false);
	}
	return 0;
}

/* The queued events' stacks are symbolized once the stack resolver is synced: write them. */
static int drain(struct memtrace_rec *r)
{
	int err;

	if (!r->nq)
		return 0;
	err = stackres__sync(r->stacks);
	for (unsigned i = 0; i < r->nq && !err; i++)
		err = on_one(r, &r->q[i]);
	r->nq = 0;
	return err;
}

int memtrace_rec__on_heap(void *ctx, const struct collect_heap_event *e)
{
	struct memtrace_rec *r = ctx;

	r->q[r->nq].e = *e;
	r->q[r->nq].ts = (uint64_t)clock__real_ns() / 1000u;
	if (++r->nq < REC_QUEUE)
		return 0;
	return drain(r);
}

int memtrace_rec__finish(struct memtrace_rec *r)
{
	char ctx[REC_CONTEXT_ROOM];
	size_t len;
	int err;

	err = drain(r);
	if (err)
		return err;
	len = (size_t)snprintf(ctx, sizeof(ctx), "bpftrace-prof: %s; times stamped when consumed;",
			       r->sample_bytes ? "sampled" : "every allocation");
	/* Each counter but the bookkeeping as field=value (the room is made for all of them). */
#define REC_CONTEXT(f, nm, d, k)                                  \
	if (PROF_KIND_##k != PROF_KIND_BOOK && len < sizeof(ctx)) \
		len += (size_t)snprintf(ctx + len, sizeof(ctx) - len, " %s=%" PRIu64, #f, r->st.f);
	PROF_MEMTRACE_STATS(REC_CONTEXT)
#undef REC_CONTEXT
	err = memtrace_writer__finish(r->w, ctx);
	if (!err) {
		err = output__commit(r->out);
		r->out = NULL; /* freed by commit either way */
	}
	return err;
}

void memtrace_rec__print_drops(const struct memtrace_rec *r, FILE *f)
{
	/* Losses only: frees of blocks allocated before attach are expected (as heap's
	 * unknown_frees), said in the summary line, never as a drop. */
	unsigned drops = 0;

#define REC_DROP(fl, nm, d, k)                                          \
	if (PROF_KIND_##k == PROF_KIND_DROP && r->st.fl) {              \
		if (!drops++)                                           \
			fprintf(f, "\nmemtrace drops:\n");              \
		fprintf(f, "  %s: %" PRIu64 "  %s\n", nm, r->st.fl, d); \
	}
	PROF_MEMTRACE_STATS(REC_DROP)
#undef REC_DROP
	fprintf(f,
		"memtrace: %" PRIu64 " allocations, %" PRIu64 " collects traced, %" PRIu64
		" frees of blocks not in the trace (memtrace_unknown_frees)%s\n",
		r->st.allocs, r->st.collects, r->st.unknown_frees, drops ? "" : ", no drops");
}
