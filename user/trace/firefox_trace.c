// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * The Firefox Profiler's processed format (preprocessedProfileVersion 55), as FunctionTrace
 * writes it: one thread per OS thread, each with its own string, function, frame and stack
 * tables, and "tracing-ms" samples: one sample per stack change, weighted by the time until the
 * next change, so a function's self time is exact and its calls can be counted from the stack
 * transitions.
 *
 * A thread's tables are column arrays, written whole: every event of the thread must be known
 * first.  Events wait in an unlinked temporary file (40 bytes each), not in memory; at the end
 * each thread replays its own events four times (tables and count, then the stack, time and
 * weight columns), holding only its distinct stacks, frames and functions in memory.
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "prof_calls.h"
#include "util/clock.h"
#include "trace/trace_sink.h"
#include "util/gzfile.h"
#include "util/hashmap.h"
#include "util/json.h"
#include "util/strpool.h"

/* One event in the spill file: iid 0 ends the innermost call, FF_HEAP is an allocation
 * (weight > 0) or a free (weight < 0) at addr, FF_MARK + (kind << 1 | arg) a marker (addr: its
 * interned text, weight: its interned file), others begin a call. */
struct ff_rec {
	uint64_t ts;
	uint32_t pid, tid;
	uint32_t iid;
	uint32_t line;
	uint64_t addr;
	int64_t weight;
};
_Static_assert(sizeof(struct ff_rec) == 40, "ff_rec layout");

#define FF_HEAP UINT32_MAX
/* --cpu: a sample of addr frames, whose records (their iids, root first) follow. */
#define FF_CPU	(UINT32_MAX - 1)
#define FF_MARK 0xffff0000u
_Static_assert(FF_MARK + (PROF_MARK__COUNT << 1) < FF_CPU, "marker iids below FF_CPU");
/* Marker texts kept in memory (interned) in all; beyond, new texts are written as
 * "[not kept]" and counted (marker_texts_dropped). */
#define FF_MARKER_TEXT_MAX (64u << 20)
/* Imports open at once on a thread; deeper starts are written unpaired (IntervalStart). */
#define FF_IMPORT_DEPTH	   64

struct ff_thread {
	uint32_t pid, tid;
	const char *name;
	uint64_t first_ts, last_ts; /* of its call events and markers */
	uint64_t nrec, ncalls;	    /* ncalls: call events and markers */
};

struct ff_trace {
	struct trace_sink sink;
	FILE *out; /* the output file */
	bool gzip;
	int spill_fd;
	FILE *spill;
	uint64_t t0; /* the first event's time: the profile's zero */
	bool have_t0;
	struct ff_thread *threads; /* in order of first sight */
	uint32_t nthreads, cap_threads;
	struct hashmap *thread_ix;   /* (pid, tid) -> uint32_t index */
	struct hashmap *pnames;	     /* pid -> const char * */
	const char **names, **files; /* by iid (interned; files NULL when none) */
	uint32_t nnames;
	struct strpool *strings;
	bool cpu;		/* --cpu: samples are cpu samples, weight 1 each */
	uint64_t texts_dropped; /* marker texts past FF_MARKER_TEXT_MAX */
};

static struct ff_trace *fft(struct trace_sink *s)
{
	return (struct ff_trace *)s;
}

static int grow_names(struct ff_trace *t, uint32_t iid)
{
	uint32_t cap = t->nnames ? t->nnames : 64;
	const char **n, **f;

	if (iid < t->nnames)
		return 0;
	while (cap <= iid)
		cap *= 2;
	n = realloc(t->names, cap * sizeof(*n));
	if (!n)
		return -ENOMEM;
	t->names = n;
	f = realloc(t->files, cap * sizeof(*f));
	if (!f)
		return -ENOMEM;
	t->files = f;
	for (uint32_t i = t->nnames; i < cap; i++)
		n[i] = f[i] = NULL;
	t->nnames = cap;
	return 0;
}

static int ff_process(struct trace_sink *s, uint32_t pid, const char *name)
{
	struct ff_trace *t = fft(s);
	const char *p = strpool__intern(t->strings, name), **v;
	bool created;
	int err;

	if (!p)
		return -ENOMEM;
	err = hashmap__upsert(t->pnames, (void **)&v, &pid, &created);
	if (!err)
		*v = p;
	return err;
}

static int ff_thread(struct trace_sink *s, uint32_t pid, uint32_t tid, const char *name)
{
	struct ff_trace *t = fft(s);
	uint64_t key = (uint64_t)pid << 32 | tid;
	const char *p = strpool__intern(t->strings, name);
	uint32_t *ix;
	bool created;
	int err;

	if (!p)
		return -ENOMEM;
	err = hashmap__upsert(t->thread_ix, (void **)&ix, &key, &created);
	if (err)
		return err;
	if (!created) {
		t->threads[*ix].name = p; /* named again after an exec */
		return 0;
	}
	if (t->nthreads == t->cap_threads) {
		uint32_t cap = t->cap_threads ? 2 * t->cap_threads : 8;
		struct ff_thread *n = realloc(t->threads, cap * sizeof(*n));

		if (!n) {
			hashmap__delete(t->thread_ix, &key);
			return -ENOMEM;
		}
		t->threads = n;
		t->cap_threads = cap;
	}
	*ix = t->nthreads;
	t->threads[t->nthreads++] = (struct ff_thread){.pid = pid, .tid = tid, .name = p};
	return 0;
}

static int ff_name(struct trace_sink *s, uint32_t iid, const char *name)
{
	struct ff_trace *t = fft(s);
	int err = grow_names(t, iid);

	if (err)
		return err;
	t->names[iid] = strpool__intern(t->strings, name);
	return t->names[iid] ? 0 : -ENOMEM;
}

static int ff_source(struct trace_sink *s, uint32_t iid, uint32_t pid, const char *file)
{
	struct ff_trace *t = fft(s);
	int err = grow_names(t, iid);

	(void)pid;
	if (err)
		return err;
	t->files[iid] = strpool__intern(t->strings, file);
	return t->files[iid] ? 0 : -ENOMEM;
}

static int spill(struct ff_trace *t, const struct ff_rec *rec)
{
	uint64_t key = (uint64_t)rec->pid << 32 | rec->tid, ts = rec->ts;
	const uint32_t *ix = hashmap__find(t->thread_ix, &key);
	struct ff_rec r = *rec;
	struct ff_thread *th;

	if (!ix)
		return -EINVAL; /* the recorder announces every thread first */
	th = &t->threads[*ix];
	th->nrec++;
	/* The thread's span is its calls' and markers' (the sample weights cover exactly
	 * that). */
	if (r.iid != FF_HEAP) {
		if (!th->ncalls++)
			th->first_ts = ts;
		th->last_ts = ts;
	} else if (!th->ncalls) {
		/* Allocations alone so far: they place the thread until a call comes. */
		if (th->nrec == 1)
			th->first_ts = ts;
		th->last_ts = ts;
	}
	if (!t->have_t0 || ts < t->t0) {
		t->t0 = ts;
		t->have_t0 = true;
	}
	return fwrite(&r, sizeof(r), 1, t->spill) == 1 ? 0 : -EIO;
}

static int ff_begin_line(struct trace_sink *s, uint32_t pid, uint32_t tid, uint64_t ts,
			 uint32_t iid, const char *name, uint32_t line)
{
	(void)name;
	return spill(fft(s),
		     &(struct ff_rec){.ts = ts, .pid = pid, .tid = tid, .iid = iid, .line = line});
}

static int ff_begin(struct trace_sink *s, uint32_t pid, uint32_t tid, uint64_t ts, uint32_t iid,
		    const char *name)
{
	return ff_begin_line(s, pid, tid, ts, iid, name, 0);
}

static int ff_end(struct trace_sink *s, uint32_t pid, uint32_t tid, uint64_t ts)
{
	return spill(fft(s), &(struct ff_rec){.ts = ts, .pid = pid, .tid = tid});
}

/* A marker's text, kept for the end: interned (a class or module repeats), bounded. */
static const char *keep_text(struct ff_trace *t, const char *s)
{
	if (!*s)
		return "";
	if (strpool__bytes(t->strings) > FF_MARKER_TEXT_MAX) {
		t->texts_dropped++;
		return "[not kept]";
	}
	return strpool__intern(t->strings, s);
}

static int ff_marker(struct trace_sink *s, uint32_t pid, uint32_t tid, uint64_t ts, uint32_t kind,
		     const char *text, const char *file, uint32_t line, uint32_t arg)
{
	struct ff_trace *t = fft(s);
	const char *tx, *fl;

	if (kind == PROF_MARK_NONE || kind >= PROF_MARK__COUNT)
		return 0;
	tx = keep_text(t, text);
	fl = keep_text(t, file);
	if (!tx || !fl)
		return -ENOMEM;
	return spill(t, &(struct ff_rec){.ts = ts,
					 .pid = pid,
					 .tid = tid,
					 .iid = FF_MARK + (kind << 1 | (arg ? 1 : 0)),
					 .line = line,
					 .addr = (uint64_t)(uintptr_t)tx,
					 .weight = (int64_t)(uintptr_t)fl});
}

/* A free carries its block's size, negated (the recorder paired it by address). */
static int ff_heap(struct trace_sink *s, uint32_t pid, uint32_t tid, uint64_t ts, uint64_t addr,
		   int64_t bytes)
{
	return spill(fft(s), &(struct ff_rec){.ts = ts,
					      .pid = pid,
					      .tid = tid,
					      .iid = FF_HEAP,
					      .addr = addr,
					      .weight = bytes});
}

/* --cpu: a sample, its frames in the records after it. */
static int ff_cpu_stack(struct trace_sink *s, uint32_t pid, uint32_t tid,
			const struct trace_stack *st)
{
	struct ff_trace *t = fft(s);
	int err = spill(
		t, &(struct ff_rec){
			   .ts = st->ts, .pid = pid, .tid = tid, .iid = FF_CPU, .addr = st->n});

	t->cpu = true;
	for (uint32_t i = 0; !err && i < st->n; i++)
		err = spill(t, &(struct ff_rec){
				       .ts = st->ts, .pid = pid, .tid = tid, .iid = st->iids[i]});
	return err;
}

/* A whole call of unknown length (CPython 3.11): a zero-length one. */
static int ff_instant(struct trace_sink *s, uint32_t pid, uint32_t tid, uint64_t ts, uint32_t iid,
		      const char *name)
{
	int err = ff_begin(s, pid, tid, ts, iid, name);

	return err ? err : ff_end(s, pid, tid, ts);
}

/* ---- building one thread's tables at the end ---- */

/* Distinct pairs numbered in order of first sight (functions, frames, stacks, strings). */
struct table {
	struct hashmap *ix; /* uint64_t pair -> uint32_t */
	uint64_t *pairs;
	uint32_t n, cap;
};

static int table__get(struct table *tb, uint64_t pair, uint32_t *out)
{
	uint32_t *ix;
	bool created;
	int err = hashmap__upsert(tb->ix, (void **)&ix, &pair, &created);

	if (err)
		return err;
	if (created) {
		if (tb->n == tb->cap) {
			uint32_t cap = tb->cap ? 2 * tb->cap : 64;
			uint64_t *p = realloc(tb->pairs, cap * sizeof(*p));

			if (!p) {
				hashmap__delete(tb->ix, &pair);
				return -ENOMEM;
			}
			tb->pairs = p;
			tb->cap = cap;
		}
		tb->pairs[tb->n] = pair;
		*ix = tb->n++;
	}
	*out = *ix;
	return 0;
}

static void table__free(struct table *tb)
{
	hashmap__free(tb->ix);
	free(tb->pairs);
}

enum { T_FUNC, T_FRAME, T_STACK, T_STRING, T__COUNT };

/* An import whose end is not seen yet. */
struct ff_import {
	uint64_t ts;
	const char *module;
};

struct build {
	struct ff_trace *t;
	const struct ff_thread *th;
	struct table tb[T__COUNT];
	uint32_t *stack; /* open stack nodes */
	uint32_t depth, cap;
	uint64_t nsamples, nallocs, nmarkers;
	uint64_t cpu_left, cpu_ts; /* --cpu: frames still to come of the sample at cpu_ts */
	struct ff_import imports[FF_IMPORT_DEPTH]; /* open imports, innermost last */
	uint32_t nimports;
	int err; /* of the marker passes (string table) */
	FILE *f;
};

/* What a replay pass does with each sample. */
enum pass {
	PASS_COUNT,
	PASS_STACK,
	PASS_TIME,
	PASS_WEIGHT,
	PASS_A_STACK, /* nativeAllocations' columns */
	PASS_A_TIME,
	PASS_A_WEIGHT,
	PASS_A_ADDR,
	PASS_M_NAME, /* markers' columns */
	PASS_M_START,
	PASS_M_END,
	PASS_M_PHASE,
	PASS_M_CATEGORY,
	PASS_M_DATA,
};

/* Marker phases of the processed format. */
enum { PH_INSTANT = 0, PH_INTERVAL, PH_START, PH_END };
/* meta.categories: 0 is every frame's. */
enum { CAT_OTHER = 0, CAT_EXCEPTION, CAT_IMPORT, CAT_LOG };

static const struct {
	const char *name, *type, *event;
	int category;
} mark_kinds[PROF_MARK__COUNT] = {
	[PROF_MARK_EXC_THROWN] = {"Exception thrown", "Exception", "thrown", CAT_EXCEPTION},
	[PROF_MARK_EXC_CAUGHT] = {"Exception caught", "Exception", "caught", CAT_EXCEPTION},
	[PROF_MARK_ERROR] = {"Log", "Log", NULL, CAT_LOG},
	[PROF_MARK_IMPORT_START] = {"Import", "Import", NULL, CAT_IMPORT},
	[PROF_MARK_IMPORT_DONE] = {"Import", "Import", NULL, CAT_IMPORT},
	[PROF_MARK_CLASS_LOAD] = {"Class load", "ClassLoad", NULL, CAT_IMPORT},
};

static void ms(FILE *f, uint64_t ns)
{
	fprintf(f, "%" PRIu64 ".%06" PRIu64, ns / 1000000, ns % 1000000);
}

/* An allocation or free of the nativeAllocations table, on the stack open then. */
static void emit_alloc(struct build *b, enum pass pass, int64_t stack, const struct ff_rec *r)
{
	if (pass < PASS_A_STACK || pass > PASS_A_ADDR) {
		b->nallocs += pass == PASS_COUNT;
		return;
	}
	if (b->nallocs++)
		putc(',', b->f);
	if (pass == PASS_A_STACK && stack < 0)
		fputs("null", b->f);
	else if (pass == PASS_A_STACK)
		fprintf(b->f, "%" PRId64, stack);
	else if (pass == PASS_A_TIME)
		ms(b->f, r->ts - b->t->t0);
	else if (pass == PASS_A_WEIGHT)
		fprintf(b->f, "%" PRId64, r->weight);
	else
		fprintf(b->f, "%" PRIu64, r->addr);
}

static void emit(struct build *b, enum pass pass, int64_t stack, uint64_t ts, uint64_t weight)
{
	if (pass >= PASS_A_STACK)
		return;
	if (pass != PASS_COUNT && b->nsamples)
		putc(',', b->f);
	b->nsamples++;
	switch (pass) {
	case PASS_STACK:
		if (stack < 0)
			fputs("null", b->f);
		else
			fprintf(b->f, "%" PRId64, stack);
		break;
	case PASS_TIME:
		ms(b->f, ts - b->t->t0);
		break;
	case PASS_WEIGHT:
		if (b->t->cpu)
			fprintf(b->f, "%" PRIu64, weight); /* weightType "samples" */
		else
			ms(b->f, weight);
		break;
	default: /* PASS_COUNT */
		break;
	}
}

static void ms_or_null(struct build *b, bool have, uint64_t ts)
{
	if (have)
		ms(b->f, ts - b->t->t0);
	else
		fputs("null", b->f);
}

/* A marker's data: {"type":…, its fields} (the schemas of FF_MARKER_SCHEMA). */
static void marker_data(struct build *b, uint32_t kind, const char *text, const char *file,
			uint32_t line, int found)
{
	/* PHP's rethrow of the exception in flight names none. */
	const char *cls = *text ? text : kind == PROF_MARK_EXC_THROWN ? "[rethrown]" : "";
	FILE *f = b->f;

	fprintf(f, "{\"type\":\"%s\"", mark_kinds[kind].type);
	switch (kind) {
	case PROF_MARK_EXC_THROWN:
	case PROF_MARK_EXC_CAUGHT:
	case PROF_MARK_CLASS_LOAD:
		fputs(",\"class\":", f);
		json__write_string(f, cls, strlen(cls));
		if (kind == PROF_MARK_CLASS_LOAD)
			fprintf(f, ",\"shared\":\"%s\"", found ? "yes" : "no");
		else
			fprintf(f, ",\"event\":\"%s\"", mark_kinds[kind].event);
		break;
	case PROF_MARK_ERROR:
		fputs(",\"message\":", f);
		json__write_string(f, text, strlen(text));
		if (*file) {
			fputs(",\"file\":", f);
			json__write_string(f, file, strlen(file));
		}
		if (line)
			fprintf(f, ",\"line\":%" PRIu32, line);
		break;
	default: /* imports */
		fputs(",\"module\":", f);
		json__write_string(f, text, strlen(text));
		if (found >= 0)
			fprintf(f, ",\"found\":\"%s\"", found ? "yes" : "no");
		break;
	}
	putc('}', f);
}

/* One marker of the table: the column pass decides which of its values is written. */
static void emit_marker(struct build *b, enum pass pass, int phase, uint64_t start, uint64_t end,
			uint32_t kind, const char *text, const char *file, uint32_t line, int found)
{
	uint32_t name = 0;

	if (pass < PASS_M_NAME) {
		b->nmarkers += pass == PASS_COUNT;
		return;
	}
	if (b->nmarkers++)
		putc(',', b->f);
	switch (pass) {
	case PASS_M_NAME:
		if (!b->err)
			b->err = table__get(&b->tb[T_STRING],
					    (uint64_t)(uintptr_t)mark_kinds[kind].name, &name);
		fprintf(b->f, "%" PRIu32, name);
		break;
	case PASS_M_START:
		ms_or_null(b, phase != PH_END, start);
		break;
	case PASS_M_END:
		ms_or_null(b, phase == PH_INTERVAL || phase == PH_END, end);
		break;
	case PASS_M_PHASE:
		fprintf(b->f, "%d", phase);
		break;
	case PASS_M_CATEGORY:
		fprintf(b->f, "%d", mark_kinds[kind].category);
		break;
	default:
		marker_data(b, kind, text, file, line, found);
		break;
	}
}

/* Imports still open (their ends not seen, or the trace ended first) down to depth: written as
 * interval starts. */
static void close_imports(struct build *b, enum pass pass, uint32_t depth)
{
	while (b->nimports > depth) {
		const struct ff_import *o = &b->imports[--b->nimports];

		emit_marker(b, pass, PH_START, o->ts, 0, PROF_MARK_IMPORT_START, o->module, "", 0,
			    -1);
	}
}

/* A marker record: instants as they come; an import's start waits for its end (the same
 * module, innermost first), which makes them one interval. */
static void marker(struct build *b, enum pass pass, const struct ff_rec *r)
{
	uint32_t kind = (r->iid - FF_MARK) >> 1, i;
	int arg = (int)((r->iid - FF_MARK) & 1);
	const char *text = (const char *)(uintptr_t)r->addr;
	const char *file = (const char *)(uintptr_t)r->weight;

	if (kind == PROF_MARK_IMPORT_START) {
		if (b->nimports < FF_IMPORT_DEPTH)
			b->imports[b->nimports++] = (struct ff_import){.ts = r->ts, .module = text};
		else
			emit_marker(b, pass, PH_START, r->ts, 0, kind, text, file, 0, -1);
		return;
	}
	if (kind != PROF_MARK_IMPORT_DONE) {
		emit_marker(b, pass, PH_INSTANT, r->ts, 0, kind, text, file, r->line, arg);
		return;
	}
	/* Texts are interned: one module, one pointer. */
	for (i = b->nimports; i > 0 && b->imports[i - 1].module != text; i--)
		;
	if (!i) {
		emit_marker(b, pass, PH_END, 0, r->ts, kind, text, file, 0, arg);
		return;
	}
	close_imports(b, pass, i); /* starts above it lost their ends */
	b->nimports--;
	emit_marker(b, pass, PH_INTERVAL, b->imports[i - 1].ts, r->ts, kind, text, file, 0, arg);
}

static int push(struct build *b, const struct ff_rec *r)
{
	uint32_t func, frame, node;
	int err = table__get(&b->tb[T_FUNC], r->iid, &func);

	if (!err)
		err = table__get(&b->tb[T_FRAME], (uint64_t)func << 32 | r->line, &frame);
	/* A stack is (its prefix + 1, 0 for none; its frame). */
	if (!err)
		err = table__get(
			&b->tb[T_STACK],
			(uint64_t)(b->depth ? b->stack[b->depth - 1] + 1 : 0) << 32 | frame, &node);
	if (err)
		return err;
	if (b->depth == b->cap) {
		uint32_t cap = b->cap ? 2 * b->cap : 64;
		uint32_t *s = realloc(b->stack, cap * sizeof(*s));

		if (!s)
			return -ENOMEM;
		b->stack = s;
		b->cap = cap;
	}
	b->stack[b->depth++] = node;
	return 0;
}

/* The thread's events in order, each one a sample of the stack it leaves, weighted by the
 * time to the next (the last one: 0). */
static int replay(struct build *b, enum pass pass)
{
	static struct ff_rec buf[2048];
	int64_t pend_stack = -1;
	uint64_t pend_ts = 0;
	bool have = false;
	off_t off = 0;
	ssize_t n;
	int err = 0;

	b->depth = 0;
	b->nsamples = 0;
	b->nallocs = 0;
	b->nmarkers = 0;
	b->nimports = 0;
	b->cpu_left = 0;
	for (;;) {
		n = pread(b->t->spill_fd, buf, sizeof(buf), off);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			return -errno;
		if (n == 0)
			break;
		off += n - n % (ssize_t)sizeof(buf[0]);
		for (ssize_t i = 0; i < n / (ssize_t)sizeof(buf[0]); i++) {
			const struct ff_rec *r = &buf[i];

			if (r->pid != b->th->pid || r->tid != b->th->tid)
				continue;
			if (r->iid == FF_HEAP) {
				emit_alloc(b, pass, b->depth ? (int64_t)b->stack[b->depth - 1] : -1,
					   r);
				continue;
			}
			/* --cpu: each sample its own stack, weight 1. */
			if (r->iid == FF_CPU || b->cpu_left) {
				if (r->iid == FF_CPU) {
					b->depth = 0;
					b->cpu_left = r->addr;
					b->cpu_ts = r->ts;
				} else {
					err = push(b, r);
					b->cpu_left--;
				}
				if (err)
					return err;
				if (!b->cpu_left)
					emit(b, pass,
					     b->depth ? (int64_t)b->stack[b->depth - 1] : -1,
					     b->cpu_ts, 1);
				continue;
			}
			if (r->iid >= FF_MARK) {
				marker(b, pass, r);
				/* A marker before any call opens the thread: an empty stack. */
				if (!have) {
					pend_stack = -1;
					pend_ts = r->ts;
					have = true;
				}
				continue;
			}
			if (r->iid)
				err = push(b, r);
			else if (b->depth)
				b->depth--;
			if (err)
				return err;
			if (have)
				emit(b, pass, pend_stack, pend_ts, r->ts - pend_ts);
			pend_stack = b->depth ? (int64_t)b->stack[b->depth - 1] : -1;
			pend_ts = r->ts;
			have = true;
		}
		if (n % (ssize_t)sizeof(buf[0]))
			continue; /* a partial record: read it again whole */
	}
	/* The last sample lasts to the thread's last event (a marker after its last call). */
	if (have)
		emit(b, pass, pend_stack, pend_ts,
		     b->th->last_ts > pend_ts ? b->th->last_ts - pend_ts : 0);
	close_imports(b, pass, 0);
	if (b->err)
		return b->err;
	return ferror(b->f) ? -EIO : 0;
}

static int string_ix(struct build *b, const char *s, uint32_t *out)
{
	return table__get(&b->tb[T_STRING], (uint64_t)(uintptr_t)s, out);
}

/* A column of n values, each printed by col(b, i). */
#define COLUMN(b, key, n, ...)                          \
	do {                                            \
		fprintf((b)->f, ",\"%s\":[", key);      \
		for (uint32_t i_ = 0; i_ < (n); i_++) { \
			if (i_)                         \
				putc(',', (b)->f);      \
			fprintf((b)->f, __VA_ARGS__);   \
		}                                       \
		putc(']', (b)->f);                      \
	} while (0)

static int write_funcs(struct build *b)
{
	struct table *fn = &b->tb[T_FUNC];
	uint32_t *name = calloc(fn->n + 1, sizeof(*name)), *file = calloc(fn->n + 1, sizeof(*file));
	int err = name && file ? 0 : -ENOMEM;
	FILE *f = b->f;

	for (uint32_t i = 0; !err && i < fn->n; i++) {
		uint32_t iid = (uint32_t)fn->pairs[i];
		const char *nm = iid < b->t->nnames ? b->t->names[iid] : NULL;
		const char *fl = iid < b->t->nnames ? b->t->files[iid] : NULL;

		err = string_ix(b, nm ? nm : "[unknown function]", &name[i]);
		file[i] = UINT32_MAX;
		if (!err && fl)
			err = string_ix(b, fl, &file[i]);
	}
	if (err)
		goto cleanup;
	fprintf(f, ",\"funcTable\":{\"length\":%" PRIu32, fn->n);
	COLUMN(b, "name", fn->n, "%" PRIu32, name[i_]);
	COLUMN(b, "isJS", fn->n, "false");
	COLUMN(b, "relevantForJS", fn->n, "false");
	COLUMN(b, "resource", fn->n, "-1");
	fputs(",\"fileName\":[", f);
	for (uint32_t i = 0; i < fn->n; i++) {
		if (i)
			putc(',', f);
		if (file[i] == UINT32_MAX)
			fputs("null", f);
		else
			fprintf(f, "%" PRIu32, file[i]);
	}
	putc(']', f);
	COLUMN(b, "lineNumber", fn->n, "null");
	COLUMN(b, "columnNumber", fn->n, "null");
	putc('}', f);
cleanup:
	free(name);
	free(file);
	return err;
}

static void write_frames_stacks(struct build *b)
{
	struct table *fr = &b->tb[T_FRAME], *st = &b->tb[T_STACK];
	FILE *f = b->f;

	fprintf(f, ",\"frameTable\":{\"length\":%" PRIu32, fr->n);
	COLUMN(b, "address", fr->n, "-1");
	COLUMN(b, "inlineDepth", fr->n, "0");
	COLUMN(b, "category", fr->n, "0");
	COLUMN(b, "subcategory", fr->n, "0");
	COLUMN(b, "func", fr->n, "%" PRIu32, (uint32_t)(fr->pairs[i_] >> 32));
	COLUMN(b, "nativeSymbol", fr->n, "null");
	COLUMN(b, "innerWindowID", fr->n, "0");
	fputs(",\"line\":[", f);
	for (uint32_t i = 0; i < fr->n; i++) {
		uint32_t line = (uint32_t)fr->pairs[i];

		if (i)
			putc(',', f);
		if (line)
			fprintf(f, "%" PRIu32, line);
		else
			fputs("null", f);
	}
	putc(']', f);
	COLUMN(b, "column", fr->n, "null");
	fprintf(f, "},\"stackTable\":{\"length\":%" PRIu32, st->n);
	COLUMN(b, "frame", st->n, "%" PRIu32, (uint32_t)st->pairs[i_]);
	fputs(",\"prefix\":[", f);
	for (uint32_t i = 0; i < st->n; i++) {
		uint32_t prefix = (uint32_t)(st->pairs[i] >> 32);

		if (i)
			putc(',', f);
		if (prefix)
			fprintf(f, "%" PRIu32, prefix - 1);
		else
			fputs("null", f);
	}
	fputs("]}", f);
}

static const struct {
	enum pass pass;
	const char *key;
} marker_cols[] = {{PASS_M_NAME, "name"},   {PASS_M_START, "startTime"},   {PASS_M_END, "endTime"},
		   {PASS_M_PHASE, "phase"}, {PASS_M_CATEGORY, "category"}, {PASS_M_DATA, "data"}};

static int write_thread(struct ff_trace *t, const struct ff_thread *th, bool first)
{
	struct build b = {.t = t, .th = th, .f = t->out};
	const char **pname = hashmap__find(t->pnames, &th->pid);
	uint64_t nsamples, nallocs, nmarkers;
	int err = 0;

	for (int i = 0; !err && i < T__COUNT; i++)
		err = hashmap__new(&b.tb[i].ix, sizeof(uint64_t), sizeof(uint32_t));
	if (!err)
		err = replay(&b, PASS_COUNT);
	if (err)
		goto cleanup;
	nsamples = b.nsamples;
	nallocs = b.nallocs;
	nmarkers = b.nmarkers;
	fprintf(b.f, "%s{\"processType\":\"default\",\"processName\":", first ? "" : ",\n");
	json__write_string(b.f, pname ? *pname : "", strlen(pname ? *pname : ""));
	fputs(",\"processStartupTime\":", b.f);
	ms(b.f, th->first_ts - t->t0);
	fputs(",\"processShutdownTime\":null,\"registerTime\":", b.f);
	ms(b.f, th->first_ts - t->t0);
	fputs(",\"unregisterTime\":", b.f);
	ms(b.f, th->last_ts - t->t0);
	fputs(",\"pausedRanges\":[],\"name\":", b.f);
	json__write_string(b.f, th->name, strlen(th->name));
	fprintf(b.f,
		",\"isMainThread\":%s,\"pid\":\"%" PRIu32 "\",\"tid\":%" PRIu32
		",\"samples\":{\"weightType\":\"%s\",\"length\":%" PRIu64 ",\"stack\":[",
		th->pid == th->tid ? "true" : "false", th->pid, th->tid,
		t->cpu ? "samples" : "tracing-ms", nsamples);
	err = replay(&b, PASS_STACK);
	if (!err) {
		fputs("],\"time\":[", b.f);
		err = replay(&b, PASS_TIME);
	}
	if (!err) {
		fputs("],\"weight\":[", b.f);
		err = replay(&b, PASS_WEIGHT);
	}
	if (err)
		goto cleanup;
	fputs("]}", b.f);
	/* --heap: allocations (and frees, negative) on the stacks open then. */
	if (nallocs) {
		static const struct {
			enum pass pass;
			const char *key;
		} cols[] = {{PASS_A_STACK, "stack"},
			    {PASS_A_TIME, "time"},
			    {PASS_A_WEIGHT, "weight"},
			    {PASS_A_ADDR, "memoryAddress"}};

		fprintf(b.f, ",\"nativeAllocations\":{\"weightType\":\"bytes\",\"length\":%" PRIu64,
			nallocs);
		for (size_t i = 0; !err && i < sizeof(cols) / sizeof(cols[0]); i++) {
			fprintf(b.f, ",\"%s\":[", cols[i].key);
			err = replay(&b, cols[i].pass);
			putc(']', b.f);
		}
		if (err)
			goto cleanup;
		fputs(",\"threadId\":[", b.f);
		for (uint64_t i = 0; i < nallocs; i++)
			fprintf(b.f, "%s%" PRIu32, i ? "," : "", th->tid);
		fputs("]}", b.f);
	}
	/* Exceptions, imports, logs: each column a pass over the thread's events. */
	fprintf(b.f, ",\"markers\":{\"length\":%" PRIu64, nmarkers);
	for (size_t i = 0; !err && i < sizeof(marker_cols) / sizeof(marker_cols[0]); i++) {
		fprintf(b.f, ",\"%s\":[", marker_cols[i].key);
		err = nmarkers ? replay(&b, marker_cols[i].pass) : 0;
		putc(']', b.f);
	}
	putc('}', b.f);
	if (err)
		goto cleanup;
	err = write_funcs(&b);
	if (err)
		goto cleanup;
	write_frames_stacks(&b);
	fputs(",\"resourceTable\":{\"length\":0,\"lib\":[],\"name\":[],\"host\":[],\"type\":[]}"
	      ",\"nativeSymbols\":{\"length\":0,\"libIndex\":[],\"address\":[],\"name\":[],"
	      "\"functionSize\":[]},\"stringArray\":[",
	      b.f);
	for (uint32_t i = 0; i < b.tb[T_STRING].n; i++) {
		const char *s = (const char *)(uintptr_t)b.tb[T_STRING].pairs[i];

		if (i)
			putc(',', b.f);
		json__write_string(b.f, s, strlen(s));
	}
	fputs("]}", b.f);
	err = ferror(b.f) ? -EIO : 0;
cleanup:
	for (int i = 0; i < T__COUNT; i++)
		table__free(&b.tb[i]);
	free(b.stack);
	return err;
}

/*
 * How the profiler shows each marker data type (meta.markerSchema): where, with which labels,
 * and its fields.  Strings are written in the data ("string"), not through the string table.
 */
#define FF_DISPLAY "\"display\":[\"marker-chart\",\"marker-table\",\"timeline-overview\"]"
#define FF_MARKER_SCHEMA                                                                           \
	"[{\"name\":\"Exception\"," FF_DISPLAY ",\"chartLabel\":\"{marker.data.class}\","          \
	"\"tableLabel\":\"{marker.name}: {marker.data.class}\",\"tooltipLabel\":\"{marker.name}: " \
	"{marker.data.class}\",\"fields\":[{\"key\":\"class\",\"label\":\"Class\",\"format\":"     \
	"\"string\",\"searchable\":true},{\"key\":\"event\",\"label\":\"Event\",\"format\":"       \
	"\"string\"}]},"                                                                           \
	"{\"name\":\"Log\"," FF_DISPLAY ",\"chartLabel\":\"{marker.data.message}\","               \
	"\"tableLabel\":\"{marker.data.message}\",\"tooltipLabel\":\"Log: "                        \
	"{marker.data.message}\","                                                                 \
	"\"fields\":[{\"key\":\"message\",\"label\":\"Message\",\"format\":\"string\","            \
	"\"searchable\":true},{\"key\":\"file\",\"label\":\"File\",\"format\":\"file-path\"},"     \
	"{\"key\":\"line\",\"label\":\"Line\",\"format\":\"integer\"}]},"                          \
	"{\"name\":\"Import\"," FF_DISPLAY ",\"chartLabel\":\"{marker.data.module}\","             \
	"\"tableLabel\":\"import {marker.data.module}\",\"tooltipLabel\":\"import "                \
	"{marker.data.module}\",\"fields\":[{\"key\":\"module\",\"label\":\"Module\",\"format\":"  \
	"\"string\",\"searchable\":true},{\"key\":\"found\",\"label\":\"Found\",\"format\":"       \
	"\"string\"}]},"                                                                           \
	"{\"name\":\"ClassLoad\"," FF_DISPLAY ",\"chartLabel\":\"{marker.data.class}\","           \
	"\"tableLabel\":\"class load {marker.data.class}\",\"tooltipLabel\":\"class load "         \
	"{marker.data.class}\",\"fields\":[{\"key\":\"class\",\"label\":\"Class\",\"format\":"     \
	"\"string\",\"searchable\":true},{\"key\":\"shared\",\"label\":\"From the CDS "            \
	"archive\",\"format\":\"string\"}]}]"

/* The drop counters go in meta.extra, which the profiler shows in its profile info panel. */
static int ff_finish(struct trace_sink *s, uint64_t ts, const char *const *names,
		     const uint64_t *values, size_t n)
{
	struct ff_trace *t = fft(s);
	FILE *gz = NULL, *out = t->out;
	double start_ms;
	bool first = true;
	int err = 0;

	if (fflush(t->spill))
		return -EIO;
	if (t->gzip) {
		err = gzfile__open(&gz, out);
		if (err)
			return err;
		t->out = gz;
	}
	/* ts is now on the events' clock: the wall time of t0 is that much earlier. */
	start_ms = (double)clock__real_ns() / 1e6 -
		   (double)(ts - (t->have_t0 && ts > t->t0 ? t->t0 : ts)) / 1e6;
	fprintf(t->out,
		"{\"meta\":{\"interval\":1,\"startTime\":%.3f,\"processType\":0,"
		"\"product\":\"bpftrace-prof\",\"stackwalk\":0,\"version\":27,"
		"\"preprocessedProfileVersion\":55,\"symbolicated\":true,\"markerSchema\":",
		start_ms);
	fputs(FF_MARKER_SCHEMA, t->out);
	/* Categories in the order of CAT_*. */
	fputs(",\"categories\":[{\"name\":\"Other\",\"color\":\"grey\",\"subcategories\":"
	      "[\"Other\"]},{\"name\":\"Exception\",\"color\":\"red\",\"subcategories\":"
	      "[\"Other\"]},{\"name\":\"Import\",\"color\":\"blue\",\"subcategories\":"
	      "[\"Other\"]},{\"name\":\"Log\",\"color\":\"yellow\",\"subcategories\":"
	      "[\"Other\"]}],\"extra\":[{\"label\":\"bpftrace-prof drops\",\"entries\":[",
	      t->out);
	for (size_t i = 0; i < n; i++) {
		fputs(i ? ",{\"label\":" : "{\"label\":", t->out);
		json__write_string(t->out, names[i], strlen(names[i]));
		fprintf(t->out, ",\"format\":\"integer\",\"value\":%" PRIu64 "}", values[i]);
	}
	fprintf(t->out,
		"%s{\"label\":\"marker_texts_dropped\",\"format\":\"integer\",\"value\":%" PRIu64
		"}",
		n ? "," : "", t->texts_dropped);
	fputs("]}]},\"libs\":[],\"pages\":[],\"counters\":[],\"threads\":[\n", t->out);
	for (uint32_t i = 0; !err && i < t->nthreads; i++) {
		if (!t->threads[i].nrec)
			continue;
		err = write_thread(t, &t->threads[i], first);
		first = false;
	}
	fputs("\n]}\n", t->out);
	if (!err && ferror(t->out))
		err = -EIO;
	if (gz) {
		if (fclose(gz) && !err)
			err = -(errno ? errno : EIO);
		t->out = out;
	}
	return err;
}

static void ff_free(struct trace_sink *s)
{
	struct ff_trace *t = fft(s);

	if (!t)
		return;
	if (t->spill)
		fclose(t->spill); /* also closes spill_fd; the file was never linked */
	else if (t->spill_fd >= 0)
		close(t->spill_fd);
	hashmap__free(t->thread_ix);
	hashmap__free(t->pnames);
	strpool__free(t->strings);
	free(t->threads);
	free(t->names);
	free(t->files);
	free(t);
}

static const struct trace_sink_ops ff_ops = {
	.process = ff_process,
	.thread = ff_thread,
	.name = ff_name,
	.begin = ff_begin,
	.end = ff_end,
	.instant = ff_instant,
	.finish = ff_finish,
	.free = ff_free,
	.source = ff_source,
	.begin_line = ff_begin_line,
	.heap = ff_heap,
	.marker = ff_marker,
	.cpu_stack = ff_cpu_stack,
};

/* An unnamed file nobody else can open: in dir, else $TMPDIR, else /tmp. */
static int open_spill(const char *dir)
{
	const char *tries[] = {dir, getenv("TMPDIR"), "/tmp"};
	int fd = -ENOENT;

	for (size_t i = 0; i < sizeof(tries) / sizeof(tries[0]); i++) {
		if (!tries[i] || !*tries[i])
			continue;
		fd = open(tries[i], O_TMPFILE | O_RDWR | O_CLOEXEC, 0600);
		if (fd >= 0)
			return fd;
		fd = -errno;
	}
	return fd;
}

int firefox_trace__new(struct trace_sink **out, FILE *f, int gzip, const char *spill_dir)
{
	struct ff_trace *t = calloc(1, sizeof(*t));
	int err;

	if (!t)
		return -ENOMEM;
	t->sink.ops = &ff_ops;
	t->out = f;
	t->gzip = gzip;
	t->spill_fd = open_spill(spill_dir);
	if (t->spill_fd < 0) {
		err = t->spill_fd;
		goto cleanup;
	}
	t->spill = fdopen(t->spill_fd, "w");
	if (!t->spill) {
		err = -errno;
		goto cleanup;
	}
	err = hashmap__new(&t->thread_ix, sizeof(uint64_t), sizeof(uint32_t));
	if (!err)
		err = hashmap__new(&t->pnames, sizeof(uint32_t), sizeof(const char *));
	if (!err)
		err = strpool__new(&t->strings);
	if (err)
		goto cleanup;
	*out = &t->sink;
	return 0;
cleanup:
	ff_free(&t->sink);
	return err;
}
