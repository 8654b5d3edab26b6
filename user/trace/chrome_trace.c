// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * Trace Event JSON (the format of chrome://tracing, Perfetto's UI and speedscope): one array of
 * events, B/E slices per thread, M events naming processes and threads.  "ts" is in
 * microseconds: our nanoseconds are printed with three decimals, exactly, without floating
 * point.
 *
 * --cpu samples are written twice: as instants with their stack as text (what Perfetto's UI and
 * chrome://tracing show on a thread's track), and as a CPU profile per thread, Chrome's own
 * "Profile" / "ProfileChunk" events (a tree of call-frame nodes, the samples' leaf nodes and
 * the time between them), which speedscope and Chrome DevTools draw as stacks: without them
 * speedscope found no profile in a --cpu trace.  A sample lasts until the thread's next one, at
 * most a sampling period; the time after it, when the thread was not sampled, goes to the
 * root node, which viewers count as idle.
 */
#include <errno.h>
#include <stdbool.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "trace/trace_sink.h"
#include "util/gzfile.h"
#include "util/hashmap.h"
#include "util/json.h"

/* Chrome's category of its CPU profile events (DevTools looks for it). */
#define CPU_PROFILE_CAT "disabled-by-default-v8.cpu_profiler"
/* Samples a ProfileChunk holds: the memory held per thread between chunks. */
#define CPU_CHUNK	1000
#define ROOT_NODE	1
static const char root_name[] = "(root)", no_stack_name[] = "[no stack]";

/* A call-frame node of a thread's profile, not written yet. */
struct cpu_node {
	uint32_t parent; /* 0: none (the root) */
	const char *name;
};

struct cpu_sample {
	uint64_t ts;
	uint32_t node;
};

/* --cpu: a thread's profile. */
struct cpu_thread {
	uint32_t pid, tid;
	uint32_t nodes;		/* made so far, ids 1 … nodes (1: the root) */
	struct cpu_node *fresh; /* nodes nodes - nfresh + 1 … nodes: not written yet */
	uint32_t nfresh, fresh_cap;
	struct cpu_sample *samples; /* not written yet */
	uint32_t nsamples, samples_cap;
	uint64_t start, last; /* the first sample's time, the last one's (written or not) */
	uint64_t written_ts;  /* the last written sample's (the next delta's base) */
	uint64_t end_period;  /* the sampling period: how long its last sample lasts */
	bool started;	      /* its Profile event is written */
};

struct cpu_thread_key {
	uint32_t pid, tid;
};

/* A node of thread (pid, tid): the frame named name under parent. */
struct cpu_node_key {
	uint32_t pid, tid, parent, pad;
	const char *name; /* interned by the recorder: one pointer per text */
};

struct chrome_trace {
	struct trace_sink sink;
	FILE *f;		     /* what we print to: the output, or the gzip stream into it */
	FILE *gz;		     /* the gzip stream, NULL without compression */
	bool first;		     /* no event written yet (no comma before the next) */
	struct hashmap *cpu_threads; /* cpu_thread_key -> struct cpu_thread */
	struct hashmap *cpu_nodes;   /* cpu_node_key -> uint32_t node id */
};

static struct chrome_trace *ct(struct trace_sink *s)
{
	return (struct chrome_trace *)s;
}

static int status(struct chrome_trace *t)
{
	return ferror(t->f) ? -EIO : 0;
}

/* The separator and the fields every event has. */
static void head(struct chrome_trace *t, const char *ph, uint32_t pid, uint32_t tid)
{
	fprintf(t->f, "%s{\"ph\":\"%s\",\"pid\":%" PRIu32 ",\"tid\":%" PRIu32,
		t->first ? "" : ",\n", ph, pid, tid);
	t->first = false;
}

/* Nanoseconds as microseconds, exactly. */
static void ts_us(FILE *f, uint64_t ns)
{
	fprintf(f, "%" PRIu64 ".%03u", ns / 1000, (unsigned)(ns % 1000));
}

static void ts_field(struct chrome_trace *t, uint64_t ts)
{
	fputs(",\"ts\":", t->f);
	ts_us(t->f, ts);
}

/* Metadata events carry a category and a time as Chrome writes them: speedscope takes a file
 * for a Chrome trace only when its first event has "cat", and sorts the events by "ts". */
static int meta(struct chrome_trace *t, const char *what, uint32_t pid, uint32_t tid,
		const char *name)
{
	head(t, "M", pid, tid);
	fprintf(t->f, ",\"ts\":0,\"cat\":\"__metadata\",\"name\":\"%s\",\"args\":{\"name\":", what);
	json__write_string(t->f, name, strlen(name));
	fputs("}}", t->f);
	return status(t);
}

static int chrome_process(struct trace_sink *s, uint32_t pid, const char *name)
{
	return meta(ct(s), "process_name", pid, pid, name);
}

static int chrome_thread(struct trace_sink *s, uint32_t pid, uint32_t tid, const char *name)
{
	return meta(ct(s), "thread_name", pid, tid, name);
}

static int chrome_name(struct trace_sink *s, uint32_t iid, const char *name)
{
	(void)s, (void)iid, (void)name;
	return 0; /* JSON repeats names in each event */
}

static int named(struct chrome_trace *t, const char *ph, uint32_t pid, uint32_t tid, uint64_t ts,
		 const char *name)
{
	head(t, ph, pid, tid);
	ts_field(t, ts);
	/* Instant events are thread-scoped ("s":"t"): they belong on the thread's track. */
	fputs(*ph == 'i' ? ",\"s\":\"t\",\"cat\":\"calls\",\"name\":"
			 : ",\"cat\":\"calls\",\"name\":",
	      t->f);
	json__write_string(t->f, name, strlen(name));
	putc('}', t->f);
	return status(t);
}

static int chrome_begin(struct trace_sink *s, uint32_t pid, uint32_t tid, uint64_t ts, uint32_t iid,
			const char *name)
{
	(void)iid;
	return named(ct(s), "B", pid, tid, ts, name);
}

static int chrome_end(struct trace_sink *s, uint32_t pid, uint32_t tid, uint64_t ts)
{
	struct chrome_trace *t = ct(s);

	head(t, "E", pid, tid);
	ts_field(t, ts);
	putc('}', t->f);
	return status(t);
}

static int chrome_instant(struct trace_sink *s, uint32_t pid, uint32_t tid, uint64_t ts,
			  uint32_t iid, const char *name)
{
	(void)iid;
	return named(ct(s), "i", pid, tid, ts, name);
}

/* --heap: a counter per process ("C" events are process-scoped; args name its series). */
static int chrome_heap_in_use(struct trace_sink *s, uint32_t pid, uint64_t ts, uint64_t bytes)
{
	struct chrome_trace *t = ct(s);

	head(t, "C", pid, pid);
	ts_field(t, ts);
	fprintf(t->f,
		",\"cat\":\"heap\",\"name\":\"heap in use\",\"args\":{\"bytes\":%" PRIu64 "}}",
		bytes);
	return status(t);
}

static int chrome_large_alloc(struct trace_sink *s, uint32_t pid, uint32_t tid, uint64_t ts,
			      uint32_t iid, const char *name, uint64_t addr, uint64_t size)
{
	struct chrome_trace *t = ct(s);

	(void)iid;
	head(t, "i", pid, tid);
	ts_field(t, ts);
	fputs(",\"s\":\"t\",\"cat\":\"heap\",\"name\":", t->f);
	json__write_string(t->f, name, strlen(name));
	fprintf(t->f, ",\"args\":{\"bytes\":%" PRIu64 ",\"addr\":\"0x%" PRIx64 "\"}}", size, addr);
	return status(t);
}

/* --cpu: an instant on the thread named after the leaf, its stack as an argument. */
static int chrome_cpu_sample(struct trace_sink *s, uint32_t pid, uint32_t tid, uint64_t ts,
			     uint32_t iid, const char *name, const char *stack)
{
	struct chrome_trace *t = ct(s);

	(void)iid;
	head(t, "i", pid, tid);
	ts_field(t, ts);
	fputs(",\"s\":\"t\",\"cat\":\"cpu\",\"name\":", t->f);
	json__write_string(t->f, name, strlen(name));
	fputs(",\"args\":{\"stack\":", t->f);
	json__write_string(t->f, stack, strlen(stack));
	fputs("}}", t->f);
	return status(t);
}

/* The fields of thread th's Profile and ProfileChunk events, up to "args". */
static void profile_head(struct chrome_trace *t, const struct cpu_thread *th, uint64_t ts,
			 const char *name)
{
	head(t, "P", th->pid, th->tid);
	ts_field(t, ts);
	fprintf(t->f, ",\"cat\":\"" CPU_PROFILE_CAT "\",\"name\":\"%s\",\"id\":\"0x%" PRIx64 "\"",
		name, (uint64_t)th->pid << 32 | th->tid);
}

/* Thread th's nodes and samples not written yet, as one ProfileChunk (end: its last, with the
 * profile's end time). */
static int write_chunk(struct chrome_trace *t, struct cpu_thread *th, bool end)
{
	uint32_t first = th->nodes - th->nfresh + 1;

	if (!th->nsamples && !end)
		return 0;
	if (!th->started) {
		profile_head(t, th, th->start, "Profile");
		fputs(",\"args\":{\"data\":{\"startTime\":", t->f);
		ts_us(t->f, th->start);
		fputs("}}}", t->f);
		th->started = true;
	}
	profile_head(t, th, th->nsamples ? th->samples[0].ts : th->last, "ProfileChunk");
	fputs(",\"args\":{\"data\":{\"cpuProfile\":{\"nodes\":[", t->f);
	for (uint32_t i = 0; i < th->nfresh; i++) {
		const struct cpu_node *n = &th->fresh[i];

		fprintf(t->f, "%s{\"id\":%" PRIu32, i ? "," : "", first + i);
		if (n->parent)
			fprintf(t->f, ",\"parent\":%" PRIu32, n->parent);
		fputs(",\"callFrame\":{\"functionName\":", t->f);
		json__write_string(t->f, n->name, strlen(n->name));
		fputs(",\"url\":\"\",\"scriptId\":0,\"lineNumber\":-1,\"columnNumber\":-1}}", t->f);
	}
	fputs("],\"samples\":[", t->f);
	for (uint32_t i = 0; i < th->nsamples; i++)
		fprintf(t->f, "%s%" PRIu32, i ? "," : "", th->samples[i].node);
	fputs("]},\"timeDeltas\":[", t->f);
	for (uint32_t i = 0; i < th->nsamples; i++) {
		const struct cpu_sample *smp = &th->samples[i];

		if (i)
			putc(',', t->f);
		ts_us(t->f, smp->ts - th->written_ts);
		th->written_ts = smp->ts;
	}
	putc(']', t->f);
	if (end) {
		fputs(",\"endTime\":", t->f);
		ts_us(t->f, th->last);
	}
	fputs("}}}", t->f);
	th->nfresh = th->nsamples = 0;
	return status(t);
}

/* Thread th's node for name under parent (made, to be written with the next chunk). */
static int cpu_node(struct chrome_trace *t, struct cpu_thread *th, uint32_t parent,
		    const char *name, uint32_t *out)
{
	struct cpu_node_key k = {.pid = th->pid, .tid = th->tid, .parent = parent, .name = name};
	uint32_t *id;
	bool created;
	int err = hashmap__upsert(t->cpu_nodes, (void **)&id, &k, &created);

	if (err)
		return err;
	if (created) {
		if (th->nfresh == th->fresh_cap) {
			uint32_t cap = th->fresh_cap ? 2 * th->fresh_cap : 64;
			struct cpu_node *p = realloc(th->fresh, cap * sizeof(*p));

			if (!p) {
				hashmap__delete(t->cpu_nodes, &k);
				return -ENOMEM;
			}
			th->fresh = p;
			th->fresh_cap = cap;
		}
		th->fresh[th->nfresh++] = (struct cpu_node){.parent = parent, .name = name};
		*id = ++th->nodes;
	}
	*out = *id;
	return 0;
}

/* A sample of thread th at node from ts (never before its last). */
static int cpu_push(struct chrome_trace *t, struct cpu_thread *th, uint64_t ts, uint32_t node)
{
	if (th->nsamples == th->samples_cap) {
		uint32_t cap = th->samples_cap ? 2 * th->samples_cap : 64;
		struct cpu_sample *p = realloc(th->samples, cap * sizeof(*p));

		if (!p)
			return -ENOMEM;
		th->samples = p;
		th->samples_cap = cap;
	}
	if (ts < th->last)
		ts = th->last;
	th->samples[th->nsamples++] = (struct cpu_sample){.ts = ts, .node = node};
	th->last = ts;
	return th->nsamples >= CPU_CHUNK ? write_chunk(t, th, false) : 0;
}

static int chrome_cpu_stack(struct trace_sink *s, uint32_t pid, uint32_t tid,
			    const struct trace_stack *st)
{
	struct chrome_trace *t = ct(s);
	struct cpu_thread_key k = {.pid = pid, .tid = tid};
	struct cpu_thread *th;
	uint32_t node = ROOT_NODE;
	bool created;
	int err;

	err = hashmap__upsert(t->cpu_threads, (void **)&th, &k, &created);
	if (err)
		return err;
	if (created) {
		th->pid = pid;
		th->tid = tid;
		th->start = th->last = th->written_ts = st->ts;
		err = cpu_node(t, th, 0, root_name, &node);
	} else if (st->period && st->ts > th->last + st->period + st->period / 2) {
		/* Not sampled for a while (off the CPU): that time is no function's. */
		err = cpu_push(t, th, th->last + st->period, ROOT_NODE);
	}
	for (uint32_t i = 0; !err && i < st->n; i++)
		err = cpu_node(t, th, node, st->names[i], &node);
	if (!err && !st->n)
		err = cpu_node(t, th, ROOT_NODE, no_stack_name, &node);
	if (!err)
		err = cpu_push(t, th, st->ts, node);
	/* Its end: the root after a period (the last sample lasts until the next one). */
	if (!err && st->period)
		th->end_period = st->period;
	return err;
}

/* --cpu: every thread's last chunk, its last sample given its period. */
static int write_cpu_profiles(struct chrome_trace *t)
{
	struct cpu_thread *th;
	const void *k;
	size_t it = 0;
	int err = 0;

	while (!err && hashmap__next(t->cpu_threads, &it, &k, (void **)&th)) {
		if (th->end_period)
			err = cpu_push(t, th, th->last + th->end_period, ROOT_NODE);
		if (!err)
			err = write_chunk(t, th, true);
	}
	return err;
}

/* The counters (losses and bookkeeping) go into the top-level "metadata" object, which
 * viewers keep aside. */
static int chrome_finish(struct trace_sink *s, uint64_t ts, const char *const *names,
			 const uint64_t *values, size_t n)
{
	struct chrome_trace *t = ct(s);
	int err = write_cpu_profiles(t);

	if (err)
		return err;
	fprintf(t->f, "\n],\"metadata\":{\"end_ts_ns\":%" PRIu64 ",\"counters\":{", ts);
	for (size_t i = 0; i < n; i++) {
		if (i)
			putc(',', t->f);
		json__write_string(t->f, names[i], strlen(names[i]));
		fprintf(t->f, ":%" PRIu64, values[i]);
	}
	fputs("}}}\n", t->f);
	err = status(t);
	if (t->gz) {
		if (fclose(t->gz) && !err)
			err = -(errno ? errno : EIO);
		t->gz = NULL;
		t->f = NULL;
	}
	return err;
}

static void chrome_free(struct trace_sink *s)
{
	struct chrome_trace *t = ct(s);
	struct cpu_thread *th;
	const void *k;
	size_t it = 0;

	if (!t)
		return;
	if (t->gz)
		fclose(t->gz);
	while (t->cpu_threads && hashmap__next(t->cpu_threads, &it, &k, (void **)&th)) {
		free(th->fresh);
		free(th->samples);
	}
	hashmap__free(t->cpu_threads);
	hashmap__free(t->cpu_nodes);
	free(t);
}

static const struct trace_sink_ops chrome_ops = {
	.process = chrome_process,
	.thread = chrome_thread,
	.name = chrome_name,
	.begin = chrome_begin,
	.end = chrome_end,
	.instant = chrome_instant,
	.finish = chrome_finish,
	.free = chrome_free,
	.heap_in_use = chrome_heap_in_use,
	.large_alloc = chrome_large_alloc,
	.cpu_sample = chrome_cpu_sample,
	.cpu_stack = chrome_cpu_stack,
};

int chrome_trace__new(struct trace_sink **out, FILE *f, int gzip)
{
	struct chrome_trace *t = calloc(1, sizeof(*t));
	int err = 0;

	if (!t)
		return -ENOMEM;
	t->sink.ops = &chrome_ops;
	t->first = true;
	t->f = f;
	err = hashmap__new(&t->cpu_threads, sizeof(struct cpu_thread_key),
			   sizeof(struct cpu_thread));
	if (!err)
		err = hashmap__new(&t->cpu_nodes, sizeof(struct cpu_node_key), sizeof(uint32_t));
	if (err)
		goto cleanup;
	if (gzip) {
		err = gzfile__open(&t->gz, f);
		if (err)
			goto cleanup;
		t->f = t->gz;
	}
	fputs("{\"displayTimeUnit\":\"ns\",\"traceEvents\":[\n", t->f);
	err = status(t);
cleanup:
	if (err) {
		chrome_free(&t->sink);
		return err;
	}
	*out = &t->sink;
	return 0;
}
