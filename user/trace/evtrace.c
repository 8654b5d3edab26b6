// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
#include "trace/evtrace.h"

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "agg/calls_agg.h"
#include "agg/live_cap.h"
#include "sym/stackres.h"
#include "trace/trace_sink.h"
#include "prof_python.h"
#include "proc/procinfo.h"
#include "profile/calls_profile.h"
#include "util/hashmap.h"
#include "util/strpool.h"

struct frame {
	uint64_t name_id;
	uint64_t sp;   /* PROF_CALL_F_FRAME: the Java frame's SP at entry, else 0 */
	uint32_t site; /* PROF_CALL_F_FRAME: the entry probe's site */
};

struct thread_key {
	uint32_t pid, tid;
};

struct thread {
	struct frame *stack;
	uint32_t depth, cap;
	uint32_t overflow; /* entries past EVTRACE_MAX_DEPTH still open (not written) */
	uint64_t last_ts;
};

/* --heap, formats with a heap counter: a live block, per process (a forked child's copy of an
 * address is another block). */
struct block_key {
	uint32_t pid, pad;
	uint64_t addr;
};

struct heap_proc {
	uint64_t in_use;
	uint64_t last_ts; /* of its counter: it never goes back, whichever thread moved it */
};

/* --cpu: a sample waiting in the spill file for its stacks' names. */
struct cpu_rec {
	uint64_t ts;
	uint32_t pid, tid;
	int32_t user, kern;
};

struct name {
	uint32_t iid;
	bool unknown; /* its name record had not arrived: looked up again at each use */
	const char *text;
};

struct evtrace {
	struct trace_sink *sink;
	const struct calls_agg *names_src;
	struct procinfo *procs;
	struct hashmap *threads;    /* thread_key -> struct thread */
	struct hashmap *procs_seen; /* pid -> uint8_t */
	struct hashmap *ready;	    /* pid -> uint64_t: events before it are skipped */
	struct hashmap *names;	    /* name_id -> struct name */
	struct hashmap *blocks;	    /* block_key -> uint64_t size (--heap, live blocks) */
	struct hashmap *heap_procs; /* pid -> struct heap_proc (heap counter) */
	struct strpool *strings;
	uint32_t next_iid;
	uint32_t large_iid;    /* EVTRACE_LARGE_ALLOC_NAME's, 0 until its first use */
	struct live_cap *caps; /* blocks' per process, under the heap caps */
	const struct stackres *stacks;
	FILE *cpu_spill;	/* --cpu: struct cpu_rec, in arrival order */
	uint64_t cpu_samples;	/* in it */
	uint64_t cpu_period;	/* ns between two samples of a thread (0: not known) */
	struct hashmap *leaves; /* --cpu: interned leaf name (pointer) -> uint32_t iid */
	bool finished;
	struct evtrace_stats stats;
};

int evtrace__new_sink(struct evtrace **out, struct trace_sink *sink)
{
	struct evtrace *t = calloc(1, sizeof(*t));
	int err;

	if (!t) {
		sink->ops->free(sink);
		return -ENOMEM;
	}
	t->sink = sink;
	t->next_iid = 1;
	err = hashmap__new(&t->threads, sizeof(struct thread_key), sizeof(struct thread));
	if (!err)
		err = hashmap__new(&t->procs_seen, sizeof(uint32_t), sizeof(uint8_t));
	if (!err)
		err = hashmap__new(&t->names, sizeof(uint64_t), sizeof(struct name));
	if (!err)
		err = hashmap__new(&t->ready, sizeof(uint32_t), sizeof(uint64_t));
	if (!err)
		err = strpool__new(&t->strings);
	if (!err && (sink->ops->heap_in_use || sink->ops->heap))
		err = hashmap__new(&t->blocks, sizeof(struct block_key), sizeof(uint64_t));
	if (!err && (sink->ops->heap_in_use || sink->ops->heap))
		err = live_cap__new(&t->caps);
	if (!err && sink->ops->heap_in_use)
		err = hashmap__new(&t->heap_procs, sizeof(uint32_t), sizeof(struct heap_proc));
	if (err)
		goto cleanup;
	*out = t;
	return 0;
cleanup:
	evtrace__free(t);
	return err;
}

int evtrace__new(struct evtrace **out, FILE *f, enum evtrace_format fmt, bool gzip)
{
	struct trace_sink *sink;
	int err = fmt == EVTRACE_PERFETTO ? perfetto_trace__new(&sink, f)
					  : chrome_trace__new(&sink, f, gzip);

	return err ? err : evtrace__new_sink(out, sink);
}

void evtrace__free(struct evtrace *t)
{
	size_t it = 0;
	const void *k;
	void *v;

	if (!t)
		return;
	if (t->threads)
		while (hashmap__next(t->threads, &it, &k, &v))
			free(((struct thread *)v)->stack);
	hashmap__free(t->threads);
	hashmap__free(t->procs_seen);
	hashmap__free(t->ready);
	hashmap__free(t->names);
	hashmap__free(t->blocks);
	hashmap__free(t->heap_procs);
	live_cap__free(t->caps);
	hashmap__free(t->leaves);
	if (t->cpu_spill)
		fclose(t->cpu_spill);
	if (t->sink)
		t->sink->ops->free(t->sink);
	strpool__free(t->strings); /* after the sink: it holds the frames' names */
	free(t);
}

void evtrace__set_sources(struct evtrace *t, const struct calls_agg *names, struct procinfo *procs)
{
	t->names_src = names;
	t->procs = procs;
}

const struct evtrace_stats *evtrace__stats(const struct evtrace *t)
{
	return &t->stats;
}

/* The name's number, interned (and announced to the sink) at its first use, in pid. */
static int name_of(struct evtrace *t, uint32_t pid, uint64_t name_id, const struct name **out)
{
	const struct calls_name *cn =
		t->names_src ? calls_agg__lookup_name(t->names_src, name_id) : NULL;
	char text[512], sys[1024];
	struct name *n;
	bool created;
	int err;

	n = hashmap__find(t->names, &name_id);
	if (n && !(n->unknown && cn)) {
		if (n->unknown)
			t->stats.unnamed++;
		*out = n;
		return 0;
	}
	if (cn) {
		calls_profile__format_name(cn, text, sizeof(text), sys, sizeof(sys));
	} else {
		/* Its name record was lost (ring buffer full): the slice stays, unnamed. */
		snprintf(text, sizeof(text), "[unknown function %016" PRIx64 "]", name_id);
		t->stats.unnamed++;
	}
	err = hashmap__upsert(t->names, (void **)&n, &name_id, &created);
	if (err)
		return err;
	n->text = strpool__intern(t->strings, text);
	if (!n->text) {
		hashmap__delete(t->names, &name_id);
		return -ENOMEM;
	}
	n->iid = t->next_iid++;
	n->unknown = !cn;
	*out = n;
	err = t->sink->ops->name(t->sink, n->iid, n->text);
	/* Java's third string is its signature, not a file. */
	if (!err && cn && t->sink->ops->source && cn->runtime != PROF_RT_JAVA && *cn->file)
		err = t->sink->ops->source(t->sink, n->iid, pid, cn->file);
	return err;
}

static const char *or_empty(const char *s)
{
	return s ? s : "";
}

/* First event of a thread: its process (once per image) and its own name. */
static int announce(struct evtrace *t, uint32_t pid, uint32_t tid)
{
	uint8_t *seen;
	bool created;
	int err;

	err = hashmap__upsert(t->procs_seen, (void **)&seen, &pid, &created);
	if (err)
		return err;
	if (created) {
		err = t->sink->ops->process(
			t->sink, pid, or_empty(t->procs ? procinfo__process(t->procs, pid) : NULL));
		if (err)
			return err;
	}
	return t->sink->ops->thread(t->sink, pid, tid,
				    or_empty(t->procs ? procinfo__comm(t->procs, pid, tid) : NULL));
}

static int get_thread(struct evtrace *t, struct thread **out, uint32_t pid, uint32_t tid)
{
	struct thread_key k = {.pid = pid, .tid = tid};
	bool created;
	int err;

	err = hashmap__upsert(t->threads, (void **)out, &k, &created);
	if (err || !created)
		return err;
	err = announce(t, pid, tid);
	if (err)
		return err;
	/* announce() inserted nothing into threads: *out is still valid. */
	return 0;
}

static int pop(struct evtrace *t, const struct thread_key *k, struct thread *th, uint64_t ts)
{
	th->depth--;
	return t->sink->ops->end(t->sink, k->pid, k->tid, ts);
}

/* Close every open frame at ts (counted in *stat). */
static int close_all(struct evtrace *t, const struct thread_key *k, struct thread *th, uint64_t ts,
		     uint64_t *stat)
{
	int err = 0;

	while (!err && th->depth) {
		(*stat)++;
		err = pop(t, k, th, ts);
	}
	*stat += th->overflow;
	th->overflow = 0;
	return err;
}

/* HotSpot's compiled code fires no return for frames an exception unwinds: a new entry's
 * frame pointer tells which open frames are gone (the same rule as calls_agg's). */
static int pop_unwound(struct evtrace *t, const struct thread_key *k, struct thread *th,
		       const struct prof_call_event *e)
{
	uint32_t i;
	int err = 0;

	while (!err && th->depth && th->stack[th->depth - 1].sp &&
	       th->stack[th->depth - 1].sp < e->frame_sp) {
		t->stats.unwound_frames++;
		err = pop(t, k, th, e->ts);
	}
	for (i = th->depth; i > 0 && th->stack[i - 1].sp == e->frame_sp; i--)
		if (th->stack[i - 1].site == e->site)
			break;
	if (err || i == 0 || th->stack[i - 1].sp != e->frame_sp)
		return err;
	while (!err && th->depth >= i) {
		t->stats.unwound_frames++;
		err = pop(t, k, th, e->ts);
	}
	return err;
}

static int on_entry(struct evtrace *t, const struct thread_key *k, struct thread *th,
		    const struct prof_call_event *e)
{
	const struct name *n;
	int err = 0;

	if (e->frame_sp && !th->overflow)
		err = pop_unwound(t, k, th, e);
	if (err)
		return err;
	if (th->overflow || th->depth >= EVTRACE_MAX_DEPTH) {
		t->stats.depth_exceeded++;
		th->overflow++;
		return 0;
	}
	if (th->depth == th->cap) {
		uint32_t cap = th->cap ? 2 * th->cap : 16;
		struct frame *s = realloc(th->stack, cap * sizeof(*s));

		if (!s)
			return -ENOMEM;
		th->stack = s;
		th->cap = cap;
	}
	err = name_of(t, e->pid, e->name_id, &n);
	if (err)
		return err;
	th->stack[th->depth++] =
		(struct frame){.name_id = e->name_id, .sp = e->frame_sp, .site = e->site};
	if (t->sink->ops->begin_line)
		return t->sink->ops->begin_line(t->sink, k->pid, k->tid, e->ts, n->iid, n->text,
						e->line);
	return t->sink->ops->begin(t->sink, k->pid, k->tid, e->ts, n->iid, n->text);
}

static int on_return(struct evtrace *t, const struct thread_key *k, struct thread *th,
		     const struct prof_call_event *e)
{
	uint32_t i;
	int err = 0;

	if (th->overflow) {
		th->overflow--; /* its entry was beyond the depth limit */
		return 0;
	}
	/* Usually the top frame; deeper when an exception left frames without their returns. */
	for (i = th->depth; i > 0; i--)
		if (th->stack[i - 1].name_id == e->name_id)
			break;
	if (i == 0) {
		t->stats.unmatched_returns++; /* entered before we attached, or its entry lost */
		return 0;
	}
	while (!err && th->depth > i) {
		t->stats.unwound_frames++;
		err = pop(t, k, th, e->ts);
	}
	return err ? err : pop(t, k, th, e->ts);
}

int evtrace__call(struct evtrace *t, const struct prof_call_event *e)
{
	struct thread_key k = {.pid = e->pid, .tid = e->tid};
	struct prof_call_event ev;
	const uint64_t *ready;
	const struct name *n;
	struct thread *th;
	int err;

	if (t->finished)
		return 0;
	ready = hashmap__find(t->ready, &e->pid);
	if (ready && e->ts < *ready) {
		t->stats.before_attach++;
		return 0;
	}
	err = get_thread(t, &th, e->pid, e->tid);
	if (err)
		return err;
	if (e->type == PROF_REC_CALL_RETURN && (e->flags & PROF_CALL_F_RETURN_ONLY)) {
		/* A whole call whose start the runtime does not tell (CPython 3.11): an instant. */
		err = name_of(t, e->pid, e->name_id, &n);
		if (!err)
			err = t->sink->ops->instant(t->sink, e->pid, e->tid, e->ts, n->iid,
						    n->text);
		return err;
	}
	if (e->flags & PROF_CALL_F_LOST) {
		/* Events of this thread were dropped: what is open is not known any more.  Close
		 * it where we last knew it. */
		t->stats.resyncs++;
		err = close_all(t, &k, th, th->last_ts, &t->stats.unwound_frames);
		if (err)
			return err;
	}
	/* Slices of one thread never go back in time, whatever the clock did. */
	if (e->ts > th->last_ts)
		th->last_ts = e->ts;
	ev = *e;
	ev.ts = th->last_ts;
	return ev.type == PROF_REC_CALL_ENTRY ? on_entry(t, &k, th, &ev)
					      : on_return(t, &k, th, &ev);
}

static int end_thread(struct evtrace *t, const struct thread_key *k, struct thread *th, uint64_t ts)
{
	int err = close_all(t, k, th, ts, &t->stats.unfinished_frames);

	free(th->stack);
	th->stack = NULL;
	th->depth = th->cap = 0;
	return err;
}

int evtrace__attached(struct evtrace *t, uint32_t pid, uint64_t ts)
{
	uint64_t *ready;

	if (hashmap__upsert(t->ready, (void **)&ready, &pid, NULL))
		return -ENOMEM;
	if (ts > *ready)
		*ready = ts;
	return 0;
}

/* An allocation (bytes > 0) or a free (bytes < 0: its block's) on tid's current stack, no
 * earlier than its last event. */
static int heap_event(struct evtrace *t, uint32_t pid, uint32_t tid, uint64_t ts, uint64_t addr,
		      int64_t bytes)
{
	struct thread *th;
	int err;

	if (t->finished || !t->sink->ops->heap)
		return 0;
	err = get_thread(t, &th, pid, tid);
	if (err)
		return err;
	return t->sink->ops->heap(t->sink, pid, tid, ts > th->last_ts ? ts : th->last_ts, addr,
				  bytes);
}

/* The block at addr of pid is gone: its size (0: not followed, counted). */
static uint64_t forget_block(struct evtrace *t, uint32_t pid, uint64_t addr)
{
	struct block_key k = {.pid = pid, .addr = addr};
	uint64_t *known = hashmap__find(t->blocks, &k), size;

	if (!known) {
		t->stats.heap_unknown_frees++;
		return 0;
	}
	size = *known;
	hashmap__delete(t->blocks, &k);
	live_cap__sub(t->caps, pid);
	return size;
}

/* What an allocation or free did to the table of live blocks. */
struct block_change {
	uint64_t freed; /* bytes of the block freed (a free's, a realloc's old one; 0: unknown) */
	uint64_t replaced; /* bytes of the block at addr whose free was missed (0: none) */
	bool entered;	   /* addr is followed now (its size counted) */
	bool changed;	   /* a followed block came or went */
};

/*
 * Frees paired with allocations by address, per process, for every format that takes --heap
 * (chrome, perfetto: the heap counter; firefox: a free carries its block's size), under the
 * caps of agg/live_cap.h.  An allocation (alloc) of size bytes at addr, replacing old_addr (a
 * realloc's, 0: none); else a free of addr.  follow: the allocation's free will come (else it
 * is never entered: nothing would take it out).  0 or -ENOMEM.
 */
static int follow_block(struct evtrace *t, struct block_change *out, uint32_t pid, uint64_t addr,
			uint64_t old_addr, uint64_t size, bool alloc, bool follow)
{
	struct block_key k = {.pid = pid, .addr = addr};
	uint64_t *known;
	bool created = false;
	int err;

	*out = (struct block_change){0};
	if (old_addr || !alloc) {
		out->freed = forget_block(t, pid, alloc ? old_addr : addr);
		out->changed = out->freed != 0;
	}
	known = alloc ? hashmap__find(t->blocks, &k) : NULL;
	if (known && !follow) {
		/* Its free was missed, and this one's will not come: the old block goes. */
		out->replaced = forget_block(t, pid, addr);
		out->changed = true;
	} else if (alloc && follow && !known && !live_cap__room(t->caps, pid)) {
		t->stats.heap_untracked++;
	} else if (alloc && follow) {
		err = hashmap__upsert(t->blocks, (void **)&known, &k, &created);
		if (!err && created)
			err = live_cap__add(t->caps, pid);
		if (err) {
			if (created)
				hashmap__delete(t->blocks, &k);
			return err;
		}
		/* Its free was missed (a block is not handed out twice): replaced. */
		if (!created)
			out->replaced = *known;
		*known = size;
		out->entered = out->changed = true;
	}
	return 0;
}

/*
 * The heap counter's formats: the process's bytes in use written after each change, large
 * allocations as instants on their thread.
 */
static int heap_counted(struct evtrace *t, uint32_t pid, uint32_t tid, uint64_t ts, uint64_t addr,
			uint64_t old_addr, uint64_t size, bool alloc, bool follow)
{
	struct block_change c;
	struct heap_proc *hp;
	struct thread *th;
	int err;

	err = get_thread(t, &th, pid, tid);
	if (err)
		return err;
	if (ts < th->last_ts)
		ts = th->last_ts;
	err = hashmap__upsert(t->heap_procs, (void **)&hp, &pid, NULL);
	if (err)
		return err;
	if (ts < hp->last_ts)
		ts = hp->last_ts;
	hp->last_ts = ts;
	err = follow_block(t, &c, pid, addr, old_addr, size, alloc, follow);
	if (err)
		return err;
	hp->in_use -= c.freed < hp->in_use ? c.freed : hp->in_use;
	hp->in_use -= c.replaced < hp->in_use ? c.replaced : hp->in_use;
	if (c.entered)
		hp->in_use += size;
	if (alloc && size >= EVTRACE_LARGE_ALLOC) {
		if (!t->large_iid) {
			t->large_iid = t->next_iid++;
			err = t->sink->ops->name(t->sink, t->large_iid, EVTRACE_LARGE_ALLOC_NAME);
			if (err)
				return err;
		}
		err = t->sink->ops->large_alloc(t->sink, pid, tid, ts, t->large_iid,
						EVTRACE_LARGE_ALLOC_NAME, addr, size);
		if (err)
			return err;
	}
	return c.changed ? t->sink->ops->heap_in_use(t->sink, pid, ts, hp->in_use) : 0;
}

static int64_t clamp_bytes(uint64_t n)
{
	return n > INT64_MAX ? INT64_MAX : (int64_t)n;
}

/*
 * The allocation formats (firefox): every allocation written, a free with its block's size when
 * the block is followed, else counted (heap_unknown_frees) and left out; a block of 0 bytes
 * shows neither.
 */
static int heap_written(struct evtrace *t, uint32_t pid, uint32_t tid, uint64_t ts, uint64_t addr,
			uint64_t old_addr, uint64_t size, bool alloc, bool follow)
{
	struct block_change c;
	int err = follow_block(t, &c, pid, addr, old_addr, size, alloc, follow);

	if (!err && c.freed)
		err = heap_event(t, pid, tid, ts, alloc ? old_addr : addr, -clamp_bytes(c.freed));
	if (!err && alloc && size)
		err = heap_event(t, pid, tid, ts, addr, clamp_bytes(size));
	return err;
}

/* The change in the format's own view of the heap (a sink without one: ignored). */
static int heap_change(struct evtrace *t, uint32_t pid, uint32_t tid, uint64_t ts, uint64_t addr,
		       uint64_t old_addr, uint64_t size, bool alloc, bool follow)
{
	if (t->finished || !t->blocks)
		return 0;
	return (t->sink->ops->heap_in_use ? heap_counted : heap_written)(
		t, pid, tid, ts, addr, old_addr, size, alloc, follow);
}

int evtrace__alloc(struct evtrace *t, uint32_t pid, uint32_t tid, uint64_t ts, uint64_t addr,
		   uint64_t old_addr, uint64_t size)
{
	return heap_change(t, pid, tid, ts, addr, old_addr, size, true, true);
}

int evtrace__alloc_untracked(struct evtrace *t, uint32_t pid, uint32_t tid, uint64_t ts,
			     uint64_t addr, uint64_t old_addr, uint64_t size)
{
	return heap_change(t, pid, tid, ts, addr, old_addr, size, true, false);
}

int evtrace__free_block(struct evtrace *t, uint32_t pid, uint32_t tid, uint64_t ts, uint64_t addr)
{
	return heap_change(t, pid, tid, ts, addr, 0, 0, false, true);
}

bool evtrace__wants_markers(const struct evtrace *t)
{
	return t->sink->ops->marker != NULL;
}

int evtrace__marker(struct evtrace *t, const struct prof_call_marker *m)
{
	char text[PROF_MARKER_TEXT_LEN + 1], file[PROF_MARKER_FILE_LEN + 1];
	struct thread *th;
	int err;

	if (t->finished || !t->sink->ops->marker)
		return 0;
	err = get_thread(t, &th, m->pid, m->tid);
	if (err)
		return err;
	snprintf(text, sizeof(text), "%.*s",
		 (int)(m->text_len < sizeof(m->text) ? m->text_len : sizeof(m->text)), m->text);
	snprintf(file, sizeof(file), "%.*s",
		 (int)(m->file_len < sizeof(m->file) ? m->file_len : sizeof(m->file)), m->file);
	/* One clock with the thread's calls: never back in time. */
	if (m->ts > th->last_ts)
		th->last_ts = m->ts;
	return t->sink->ops->marker(t->sink, m->pid, m->tid, th->last_ts, m->kind, text, file,
				    m->line, m->arg);
}

void evtrace__set_stacks(struct evtrace *t, const struct stackres *stacks)
{
	t->stacks = stacks;
}

void evtrace__set_cpu_period(struct evtrace *t, uint64_t ns)
{
	t->cpu_period = ns;
}

int evtrace__cpu_sample(struct evtrace *t, uint32_t pid, uint32_t tid, uint64_t ts, int32_t user,
			int32_t kern)
{
	struct cpu_rec r = {.ts = ts, .pid = pid, .tid = tid, .user = user, .kern = kern};
	struct thread *th;
	int err;

	if (t->finished || !(t->sink->ops->cpu_sample || t->sink->ops->cpu_stack))
		return 0;
	/* The thread's tracks are declared now, with its name while it lives. */
	err = get_thread(t, &th, pid, tid);
	if (err)
		return err;
	if (!t->cpu_spill) {
		t->cpu_spill = tmpfile();
		if (!t->cpu_spill)
			return -errno;
	}
	if (fwrite(&r, sizeof(r), 1, t->cpu_spill) != 1)
		return -EIO;
	t->cpu_samples++;
	return 0;
}

/* One frame's name: the symbol's, else its address. */
static void frame_text(char *buf, size_t size, const struct stackres_frame *f, bool kernel)
{
	if (f->sym.name)
		snprintf(buf, size, "%s%s", kernel ? "[k] " : "", f->sym.name);
	else
		snprintf(buf, size, "%s0x%" PRIx64, kernel ? "[k] " : "", f->addr);
}

/* A frame name's number, announced to the sink at its first use; name: the interned text. */
static int frame_iid(struct evtrace *t, const char *text, uint32_t *out, const char **name)
{
	const char *in = strpool__intern(t->strings, text);
	uint64_t key = (uint64_t)(uintptr_t)in;
	uint32_t *iid;
	bool created;
	int err;

	if (!in)
		return -ENOMEM;
	err = hashmap__upsert(t->leaves, (void **)&iid, &key, &created);
	if (err)
		return err;
	if (created) {
		*iid = t->next_iid++;
		err = t->sink->ops->name(t->sink, *iid, in);
	}
	*out = *iid;
	if (name)
		*name = in;
	return err;
}

/* --cpu: one sample's frames as they are written, in every format. */
struct cpu_frames {
	uint32_t *iids;
	const char **names;
	uint32_t n, cap;
};

/*
 * The frames of sample r, root first (user frames, then kernel ones "[k] …"), the same as its
 * pprof stack (profile/build.c): a Python frame's second word, its fingerprint, names nothing
 * (stackres resolves the pair into the frame before it) and is no frame.
 */
static int cpu_frames(struct evtrace *t, const struct cpu_rec *r, struct cpu_frames *out)
{
	const struct stackres_frame *fr[2] = {NULL, NULL};
	unsigned n[2] = {0, 0};
	char one[512];
	int err = 0;

	out->n = 0;
	if (t->stacks) {
		fr[0] = stackres__frames(t->stacks, r->user, &n[0]);
		fr[1] = stackres__frames(t->stacks, r->kern, &n[1]);
	}
	if (n[0] + n[1] > out->cap) {
		uint32_t cap = n[0] + n[1];
		uint32_t *iids = realloc(out->iids, cap * sizeof(*iids));
		const char **names;

		if (!iids)
			return -ENOMEM;
		out->iids = iids;
		names = realloc(out->names, cap * sizeof(*names));
		if (!names)
			return -ENOMEM;
		out->names = names;
		out->cap = cap;
	}
	for (int s = 0; s < 2 && !err; s++)
		for (unsigned i = n[s]; i > 0 && !err; i--) {
			if (prof_py_is_print(fr[s][i - 1].addr))
				continue;
			frame_text(one, sizeof(one), &fr[s][i - 1], s == 1);
			err = frame_iid(t, one, &out->iids[out->n], &out->names[out->n]);
			out->n++;
		}
	return err;
}

/* The frames joined root first ("a;b;c"), cut at size (the leaf is named apart). */
static void stack_text(char *buf, size_t size, const struct cpu_frames *fr)
{
	size_t len = 0;

	buf[0] = '\0';
	for (uint32_t i = 0; i < fr->n; i++) {
		int w = snprintf(buf + len, size - len, "%s%s", len ? ";" : "", fr->names[i]);

		if (w < 0 || (size_t)w >= size - len)
			break;
		len += (size_t)w;
	}
}

/* --cpu: the samples, now that their stacks are symbolized. */
static int write_cpu_samples(struct evtrace *t)
{
	const size_t stack_size = 65536;
	struct cpu_frames fr = {0};
	char *stack = NULL;
	struct cpu_rec r;
	int err = 0;

	if (!t->cpu_spill)
		return 0;
	if (fflush(t->cpu_spill) || fseek(t->cpu_spill, 0, SEEK_SET))
		return -EIO;
	if (!t->leaves)
		err = hashmap__new(&t->leaves, sizeof(uint64_t), sizeof(uint32_t));
	stack = err ? NULL : malloc(stack_size);
	if (!err && !stack)
		err = -ENOMEM;
	for (uint64_t i = 0; !err && i < t->cpu_samples; i++) {
		const char *leaf = "[no stack]";
		uint32_t iid;

		if (fread(&r, sizeof(r), 1, t->cpu_spill) != 1) {
			err = -EIO;
			break;
		}
		err = cpu_frames(t, &r, &fr);
		if (!err && t->sink->ops->cpu_stack)
			err = t->sink->ops->cpu_stack(t->sink, r.pid, r.tid,
						      &(struct trace_stack){
							      .ts = r.ts,
							      .period = t->cpu_period,
							      .iids = fr.iids,
							      .names = fr.names,
							      .n = fr.n,
						      });
		if (err || !t->sink->ops->cpu_sample)
			continue;
		stack_text(stack, stack_size, &fr);
		if (fr.n)
			leaf = fr.names[fr.n - 1];
		err = frame_iid(t, leaf, &iid, &leaf);
		if (!err)
			err = t->sink->ops->cpu_sample(t->sink, r.pid, r.tid, r.ts, iid, leaf,
						       stack);
	}
	free(stack);
	free(fr.iids);
	free(fr.names);
	return err;
}

int evtrace__offcpu(struct evtrace *t, uint32_t pid, uint32_t tid, uint64_t start, uint64_t ns,
		    bool runnable)
{
	const char *name = runnable ? EVTRACE_OFFCPU_RUNNABLE : EVTRACE_OFFCPU_IDLE;
	struct thread *th;
	uint64_t end;
	uint32_t iid;
	int err;

	if (t->finished)
		return 0;
	err = get_thread(t, &th, pid, tid);
	if (!err && !t->leaves)
		err = hashmap__new(&t->leaves, sizeof(uint64_t), sizeof(uint32_t));
	if (!err)
		err = frame_iid(t, name, &iid, NULL);
	if (err)
		return err;
	/* Its calls' slices never overlap it: it ends before the thread's next event. */
	if (start < th->last_ts)
		start = th->last_ts;
	end = start + ns;
	th->last_ts = end;
	if (th->overflow)
		return 0; /* deeper than the limit: not written, like the calls around it */
	err = t->sink->ops->begin(t->sink, pid, tid, start, iid, name);
	return err ? err : t->sink->ops->end(t->sink, pid, tid, end);
}

void evtrace__set_caps(struct evtrace *t, uint32_t per_pid, uint32_t total)
{
	if (t->caps)
		live_cap__set(t->caps, per_pid, total);
}

/* Every live block of pid leaves the table (its count to zero).  0 or -ENOMEM (none left). */
static int forget_blocks(struct evtrace *t, uint32_t pid)
{
	const struct block_key *k;
	struct block_key *gone;
	size_t it = 0, n = 0, cap = live_cap__count(t->caps, pid);
	void *v;

	if (!cap)
		return 0;
	gone = malloc(cap * sizeof(*gone));
	if (!gone)
		return -ENOMEM;
	/* Keys first, deletions after: a deletion shifts entries under the iterator. */
	while (hashmap__next(t->blocks, &it, (const void **)&k, &v))
		if (k->pid == pid && n < cap)
			gone[n++] = *k;
	for (size_t i = 0; i < n; i++)
		hashmap__delete(t->blocks, &gone[i]);
	live_cap__drop(t->caps, pid);
	free(gone);
	return 0;
}

int evtrace__heap_exec(struct evtrace *t, uint32_t pid, uint64_t ts)
{
	struct heap_proc *hp;
	int err;

	if (t->finished || !t->blocks)
		return 0;
	err = forget_blocks(t, pid);
	if (err || !t->heap_procs || !(hp = hashmap__find(t->heap_procs, &pid)))
		return err;
	if (ts < hp->last_ts)
		ts = hp->last_ts;
	hp->last_ts = ts;
	if (hp->in_use) {
		hp->in_use = 0;
		err = t->sink->ops->heap_in_use(t->sink, pid, ts, 0);
	}
	return err;
}

int evtrace__heap_exit(struct evtrace *t, uint32_t pid)
{
	int err;

	if (t->finished || !t->blocks)
		return 0;
	err = forget_blocks(t, pid);
	if (!err && t->heap_procs)
		hashmap__delete(t->heap_procs, &pid);
	return err;
}

int evtrace__thread_exit(struct evtrace *t, uint32_t pid, uint32_t tid)
{
	struct thread_key k = {.pid = pid, .tid = tid};
	struct thread *th = hashmap__find(t->threads, &k);
	int err;

	if (!th || t->finished)
		return 0;
	err = end_thread(t, &k, th, th->last_ts);
	if (!err && t->sink->ops->thread_exit)
		err = t->sink->ops->thread_exit(t->sink, pid, tid, th->last_ts);
	hashmap__delete(t->threads, &k);
	return err;
}

int evtrace__process_exec(struct evtrace *t, uint32_t pid)
{
	const struct thread_key *k;
	size_t it = 0;
	void *v;
	int err = 0;

	if (t->finished)
		return 0;
	while (!err && hashmap__next(t->threads, &it, (const void **)&k, &v))
		if (k->pid == pid)
			err = end_thread(t, k, v, ((struct thread *)v)->last_ts);
	hashmap__delete(t->procs_seen, &pid);
	/* Its threads are announced again with the new image's names (entries stay, empty). */
	it = 0;
	while (!err && hashmap__next(t->threads, &it, (const void **)&k, &v))
		if (k->pid == pid) {
			err = hashmap__delete(t->threads, k);
			it = 0; /* deletion shifts entries: start over */
		}
	return err;
}

int evtrace__finish(struct evtrace *t, uint64_t ts, const char *const *names,
		    const uint64_t *values, size_t n)
{
#define EVTRACE_ONE(f, nm, d, k) +1
	const size_t nown = 0 PROF_TRACE_STATS(EVTRACE_ONE);
#undef EVTRACE_ONE
	const char **all_names = NULL;
	uint64_t *all_values = NULL;
	const struct thread_key *k;
	size_t it = 0;
	void *v;
	int err = 0;

	if (t->finished)
		return -EINVAL;
	t->finished = true;
	while (!err && hashmap__next(t->threads, &it, (const void **)&k, &v))
		err = end_thread(
			t, k, v,
			ts > ((struct thread *)v)->last_ts ? ts : ((struct thread *)v)->last_ts);
	if (!err)
		err = write_cpu_samples(t);
	if (err)
		goto cleanup;
	all_names = calloc(n + nown, sizeof(*all_names));
	all_values = calloc(n + nown, sizeof(*all_values));
	if (!all_names || !all_values) {
		err = -ENOMEM;
		goto cleanup;
	}
	for (size_t i = 0; i < n; i++) {
		all_names[i] = names[i];
		all_values[i] = values[i];
	}
	{
		size_t i = n;
#define EVTRACE_VALUE(f, nm, d, k) all_names[i] = nm, all_values[i++] = t->stats.f;
		PROF_TRACE_STATS(EVTRACE_VALUE)
#undef EVTRACE_VALUE
	}
	err = t->sink->ops->finish(t->sink, ts, all_names, all_values, n + nown);
cleanup:
	free(all_names);
	free(all_values);
	return err;
}
