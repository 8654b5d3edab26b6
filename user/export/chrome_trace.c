// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * Trace Event JSON (the format of chrome://tracing, Perfetto's UI and speedscope): one array of
 * events, B/E slices per thread, M events naming processes and threads.  "ts" is in
 * microseconds: our nanoseconds are printed with three decimals, exactly, without floating
 * point.
 */
#include <errno.h>
#include <stdbool.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "export/gzfile.h"
#include "export/json.h"
#include "export/trace_sink.h"

struct chrome_trace {
	struct trace_sink sink;
	FILE *f;    /* what we print to: the output, or the gzip stream into it */
	FILE *gz;   /* the gzip stream, NULL without compression */
	bool first; /* no event written yet (no comma before the next) */
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

static void ts_field(struct chrome_trace *t, uint64_t ts)
{
	fprintf(t->f, ",\"ts\":%" PRIu64 ".%03u", ts / 1000, (unsigned)(ts % 1000));
}

static int meta(struct chrome_trace *t, const char *what, uint32_t pid, uint32_t tid,
		const char *name)
{
	head(t, "M", pid, tid);
	fprintf(t->f, ",\"name\":\"%s\",\"args\":{\"name\":", what);
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

/* The counters (losses and bookkeeping) go into the top-level "metadata" object, which
 * viewers keep aside. */
static int chrome_finish(struct trace_sink *s, uint64_t ts, const char *const *names,
			 const uint64_t *values, size_t n)
{
	struct chrome_trace *t = ct(s);
	int err;

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

	if (t && t->gz)
		fclose(t->gz);
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
