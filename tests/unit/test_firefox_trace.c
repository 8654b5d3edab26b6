// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/* -f firefox: the processed format's tables for known event sequences, column by column. */
#include <dirent.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <zlib.h>

#include <cmocka.h>

#include "agg/calls_agg.h"
#include "trace/evtrace.h"
#include "trace/trace_sink.h"

#define PID 7

struct fixture {
	struct calls_agg *names;
	struct evtrace *t;
	FILE *f;
	char *buf;
	size_t len;
};

static void add_name(struct calls_agg *a, uint64_t id, const char *fn, const char *file)
{
	struct prof_call_name n = {
		.type = PROF_REC_CALL_NAME, .pid = PID, .name_id = id, .runtime = PROF_RT_PHP};

	n.fn_len = (uint16_t)strlen(fn);
	n.file_len = (uint16_t)strlen(file);
	memcpy(n.fn, fn, n.fn_len);
	memcpy(n.file, file, n.file_len);
	assert_int_equal(calls_agg__name(a, &n), 0);
}

static struct fixture *start(bool gzip, const char *spill_dir)
{
	struct fixture *x = calloc(1, sizeof(*x));
	struct trace_sink *sink;

	assert_non_null(x);
	assert_int_equal(calls_agg__new(&x->names), 0);
	add_name(x->names, 10, "f", "/src/a.php");
	add_name(x->names, 11, "g", "/src/a.php");
	add_name(x->names, 12, "q\"\\\n\xe2\x80\xa8\xff", "");
	x->f = open_memstream(&x->buf, &x->len);
	assert_non_null(x->f);
	assert_int_equal(firefox_trace__new(&sink, x->f, gzip, spill_dir), 0);
	assert_int_equal(evtrace__new_sink(&x->t, sink), 0);
	evtrace__set_sources(x->t, x->names, NULL);
	return x;
}

static void ev(struct fixture *x, uint32_t tid, uint32_t type, uint64_t ts, uint64_t id,
	       uint32_t line, uint8_t flags)
{
	struct prof_call_event e = {.type = type,
				    .pid = PID,
				    .tid = tid,
				    .ts = ts,
				    .name_id = id,
				    .runtime = PROF_RT_PHP,
				    .line = line,
				    .flags = flags};

	assert_int_equal(evtrace__call(x->t, &e), 0);
}

#define ENTRY(x, tid, ts, id, line) ev(x, tid, PROF_REC_CALL_ENTRY, ts, id, line, 0)
#define RETURN(x, tid, ts, id)	    ev(x, tid, PROF_REC_CALL_RETURN, ts, id, 0, 0)

static const char *finish(struct fixture *x, uint64_t ts)
{
	static const char *const names[] = {"ringbuf_full"};
	static const uint64_t values[] = {3};

	assert_int_equal(evtrace__finish(x->t, ts, names, values, 1), 0);
	assert_int_equal(fflush(x->f), 0);
	return x->buf;
}

static void done(struct fixture *x)
{
	evtrace__free(x->t);
	fclose(x->f);
	free(x->buf);
	calls_agg__free(x->names);
	free(x);
}

static void has(const char *s, const char *want)
{
	if (!s || !want || !strstr(s, want)) {
		fprintf(stderr, "missing: %s\nin: %s\n", want ? want : "", s ? s : "");
		fail();
	}
}

static unsigned count(const char *s, const char *what)
{
	unsigned n = 0;

	for (const char *p = s; (p = strstr(p, what)); p += strlen(what))
		n++;
	return n;
}

/* f [g] f: one sample per stack change, each weighted by the time to the next. */
static void test_firefox_trace__samples_exact(void **state)
{
	struct fixture *x = start(false, NULL);
	const char *s;

	(void)state;
	ENTRY(x, PID, 1000, 10, 5);
	ENTRY(x, PID, 2500, 11, 9);
	RETURN(x, PID, 3001, 11);
	RETURN(x, PID, 4000, 10);
	s = finish(x, 5000);
	has(s, "\"preprocessedProfileVersion\":55");
	has(s, "\"samples\":{\"weightType\":\"tracing-ms\",\"length\":4,\"stack\":[0,1,0,null],"
	       "\"time\":[0.000000,0.001500,0.002001,0.003000],"
	       "\"weight\":[0.001500,0.000501,0.000999,0.000000]}");
	has(s, "\"registerTime\":0.000000,\"unregisterTime\":0.003000");
	has(s, "\"funcTable\":{\"length\":2,\"name\":[0,2],\"isJS\":[false,false],"
	       "\"relevantForJS\":[false,false],\"resource\":[-1,-1],\"fileName\":[1,1],"
	       "\"lineNumber\":[null,null],\"columnNumber\":[null,null]}");
	has(s, "\"func\":[0,1],\"nativeSymbol\":[null,null],\"innerWindowID\":[0,0],"
	       "\"line\":[5,9],\"column\":[null,null]}");
	has(s, "\"stackTable\":{\"length\":2,\"frame\":[0,1],\"prefix\":[null,0]}");
	has(s, "\"stringArray\":[\"f\",\"/src/a.php\",\"g\"]}");
	has(s, "\"isMainThread\":true,\"pid\":\"7\",\"tid\":7,");
	has(s, "{\"label\":\"ringbuf_full\",\"format\":\"integer\",\"value\":3}");
	has(s, "{\"label\":\"trace_unmatched_returns\",\"format\":\"integer\",\"value\":0}");
	done(x);
}

/* The same path is the same stack; recursion is a new one whose prefix is its caller. */
static void test_firefox_trace__stacks_shared_and_recursive(void **state)
{
	struct fixture *x = start(false, NULL);
	const char *s;

	(void)state;
	ENTRY(x, PID, 100, 10, 5);
	ENTRY(x, PID, 200, 11, 9);
	RETURN(x, PID, 300, 11);
	ENTRY(x, PID, 400, 11, 9);
	ENTRY(x, PID, 500, 11, 9);
	RETURN(x, PID, 600, 11);
	RETURN(x, PID, 700, 11);
	RETURN(x, PID, 800, 10);
	s = finish(x, 900);
	has(s, "\"stack\":[0,1,0,1,2,1,0,null]");
	has(s, "\"stackTable\":{\"length\":3,\"frame\":[0,1,1],\"prefix\":[null,0,1]}");
	has(s, "\"frameTable\":{\"length\":2,");
	done(x);
}

/* Each OS thread has its own tables and its own time span; isMainThread is tid == pid. */
static void test_firefox_trace__one_thread_each(void **state)
{
	struct fixture *x = start(false, NULL);
	const char *s;

	(void)state;
	ENTRY(x, PID, 1000, 10, 5);
	ENTRY(x, 8, 1500, 11, 9);
	RETURN(x, PID, 2000, 10);
	RETURN(x, 8, 4000, 11);
	s = finish(x, 5000);
	assert_int_equal(count(s, "\"processType\":\"default\""), 2);
	has(s, "\"isMainThread\":true,\"pid\":\"7\",\"tid\":7,\"samples\":{\"weightType\":"
	       "\"tracing-ms\",\"length\":2,\"stack\":[0,null],\"time\":[0.000000,0.001000],"
	       "\"weight\":[0.001000,0.000000]}");
	has(s, "\"registerTime\":0.000500,\"unregisterTime\":0.003000");
	has(s, "\"isMainThread\":false,\"pid\":\"7\",\"tid\":8,\"samples\":{\"weightType\":"
	       "\"tracing-ms\",\"length\":2,\"stack\":[0,null],\"time\":[0.000500,0.003000],"
	       "\"weight\":[0.002500,0.000000]}");
	has(s, "\"stringArray\":[\"g\",\"/src/a.php\"]}");
	done(x);
}

/* Names from other processes stay one JSON string each; a function without a file has none. */
static void test_firefox_trace__nasty_names_escaped(void **state)
{
	struct fixture *x = start(false, NULL);
	const char *s;

	(void)state;
	ENTRY(x, PID, 1000, 12, 0);
	RETURN(x, PID, 2000, 12);
	s = finish(x, 3000);
	has(s, "\"stringArray\":[\"q\\\"\\\\\\n\\u2028\xef\xbf\xbd\"]}");
	has(s, "\"fileName\":[null]");
	has(s, "\"line\":[null]");
	done(x);
}

/* A call whose start the runtime does not tell is a zero-length one. */
static void test_firefox_trace__return_only_zero_length(void **state)
{
	struct fixture *x = start(false, NULL);
	const char *s;

	(void)state;
	ev(x, PID, PROF_REC_CALL_RETURN, 1000, 10, 0, PROF_CALL_F_RETURN_ONLY);
	s = finish(x, 2000);
	has(s, "\"stack\":[0,null],\"time\":[0.000000,0.000000],\"weight\":[0.000000,0.000000]");
	done(x);
}

static void test_firefox_trace__gzip_is_the_same_json(void **state)
{
	struct fixture *plain = start(false, NULL), *gz = start(true, NULL);
	char out[65536];
	uLongf n = sizeof(out);
	z_stream z = {0};
	const char *a, *b;

	(void)state;
	for (int i = 0; i < 2; i++) {
		struct fixture *x = i ? gz : plain;

		ENTRY(x, PID, 1000, 10, 5);
		RETURN(x, PID, 2000, 10);
	}
	a = finish(plain, 3000);
	b = finish(gz, 3000);
	assert_true(gz->len > 2 && (unsigned char)b[0] == 0x1f && (unsigned char)b[1] == 0x8b);
	assert_int_equal(inflateInit2(&z, 16 + MAX_WBITS), Z_OK);
	z.next_in = (Bytef *)b;
	z.avail_in = (uInt)gz->len;
	z.next_out = (Bytef *)out;
	z.avail_out = (uInt)n;
	assert_int_equal(inflate(&z, Z_FINISH), Z_STREAM_END);
	n = z.total_out;
	inflateEnd(&z);
	/* meta.startTime is the wall clock: compare from the threads on. */
	assert_int_equal(n - (size_t)(strstr(out, "\"threads\"") - out),
			 strlen(strstr(a, "\"threads\"")));
	assert_memory_equal(strstr(out, "\"threads\""), strstr(a, "\"threads\""),
			    strlen(strstr(a, "\"threads\"")));
	done(plain);
	done(gz);
}

/* The events wait in an unnamed file: nothing appears in the output's directory. */
static void test_firefox_trace__spill_leaves_no_file(void **state)
{
	char dir[] = "/tmp/ff_spill.XXXXXX";
	struct fixture *x;
	struct dirent *de;
	unsigned entries = 0;
	DIR *d;

	(void)state;
	assert_non_null(mkdtemp(dir));
	x = start(false, dir);
	for (uint64_t i = 0; i < 5000; i++) {
		ENTRY(x, PID, 1000 + 4 * i, 10, 5);
		RETURN(x, PID, 1002 + 4 * i, 10);
	}
	d = opendir(dir);
	assert_non_null(d);
	while ((de = readdir(d)))
		entries += strcmp(de->d_name, ".") && strcmp(de->d_name, "..");
	closedir(d);
	assert_int_equal(entries, 0);
	has(finish(x, 30000), "\"samples\":{\"weightType\":\"tracing-ms\",\"length\":10000,");
	done(x);
	assert_int_equal(rmdir(dir), 0);
}

/* --heap: allocations on the stack open then (never before the thread's last call event),
 * a realloc as a free and an allocation, frees negative and paired by address; a free of a
 * block never seen is counted, not written. */
static void test_firefox_trace__heap_paired_by_address(void **state)
{
	struct fixture *x = start(false, NULL);
	const char *s;

	(void)state;
	ENTRY(x, PID, 1000, 10, 5);
	assert_int_equal(evtrace__alloc(x->t, PID, PID, 500, 0x1000, 0, 100), 0);
	assert_int_equal(evtrace__alloc(x->t, PID, PID, 1500, 0x2000, 0x1000, 300), 0);
	RETURN(x, PID, 2000, 10);
	assert_int_equal(evtrace__free_block(x->t, PID, PID, 2500, 0x2000), 0);
	assert_int_equal(evtrace__free_block(x->t, PID, PID, 2600, 0x9999), 0);
	assert_int_equal(evtrace__alloc(x->t, PID, 9, 2200, 0x3000, 0, 50), 0);
	s = finish(x, 3000);
	/* A thread that only allocated: placed by its allocations, no samples. */
	has(s, "\"registerTime\":0.001200,\"unregisterTime\":0.001200");
	has(s, "\"tid\":9,\"samples\":{\"weightType\":\"tracing-ms\",\"length\":0,"
	       "\"stack\":[],\"time\":[],\"weight\":[]},\"nativeAllocations\":{\"weightType\":"
	       "\"bytes\",\"length\":1,\"stack\":[null],\"time\":[0.001200],\"weight\":[50],"
	       "\"memoryAddress\":[12288],\"threadId\":[9]}");
	has(s, "\"nativeAllocations\":{\"weightType\":\"bytes\",\"length\":4,"
	       "\"stack\":[0,0,0,null],\"time\":[0.000000,0.000500,0.000500,0.001500],"
	       "\"weight\":[100,-100,300,-300],\"memoryAddress\":[4096,4096,8192,8192],"
	       "\"threadId\":[7,7,7,7]}");
	/* The samples' span is the calls': allocations after them do not stretch it. */
	has(s, "\"stack\":[0,null],\"time\":[0.000000,0.001000],\"weight\":[0.001000,0.000000]}");
	has(s, "{\"label\":\"trace_heap_unknown_frees\",\"format\":\"integer\",\"value\":1}");
	done(x);
}

/* --heap under the live caps (2 blocks a process, 3 in all here): an allocation past either is
 * written but not followed, so its free is not (an unknown free); a block BPF could not keep
 * (untracked) takes no room; a process's blocks leave the table at its exit and exec, so their
 * room comes back and a free after the exec pairs with nothing of the old image. */
static void test_firefox_trace__heap_caps_untracked_exit_exec(void **state)
{
	struct fixture *x = start(false, NULL);
	const char *s;

	(void)state;
	evtrace__set_caps(x->t, 2, 3);
	assert_int_equal(evtrace__alloc_untracked(x->t, PID, PID, 100, 0xa000, 0, 10), 0);
	assert_int_equal(evtrace__alloc(x->t, PID, PID, 200, 0x1000, 0, 11), 0);
	assert_int_equal(evtrace__alloc(x->t, PID, PID, 300, 0x2000, 0, 12), 0);
	assert_int_equal(evtrace__alloc(x->t, PID, PID, 400, 0x3000, 0, 13), 0); /* past 2 */
	assert_int_equal(evtrace__free_block(x->t, PID, PID, 500, 0x1000), 0);
	assert_int_equal(evtrace__free_block(x->t, PID, PID, 600, 0x3000), 0);
	assert_int_equal(evtrace__alloc(x->t, 8, 8, 700, 0x4000, 0, 14), 0);
	assert_int_equal(evtrace__alloc(x->t, 8, 8, 800, 0x5000, 0, 15), 0);
	assert_int_equal(evtrace__alloc(x->t, 8, 8, 900, 0x6000, 0, 16), 0); /* past 3 in all */
	assert_int_equal(evtrace__stats(x->t)->heap_untracked, 2);
	assert_int_equal(evtrace__heap_exit(x->t, 8), 0);
	assert_int_equal(evtrace__alloc(x->t, PID, PID, 1000, 0x7000, 0, 17), 0);
	assert_int_equal(evtrace__free_block(x->t, PID, PID, 1100, 0x7000), 0);
	assert_int_equal(evtrace__heap_exec(x->t, PID, 1200), 0);
	assert_int_equal(evtrace__free_block(x->t, PID, PID, 1300, 0x2000), 0);
	s = finish(x, 2000);
	has(s, "\"weight\":[10,11,12,13,-11,17,-17],\"memoryAddress\":[40960,4096,8192,12288,"
	       "4096,28672,28672]");
	has(s, "\"weight\":[14,15,16],\"memoryAddress\":[16384,20480,24576]");
	has(s, "{\"label\":\"trace_heap_untracked\",\"format\":\"integer\",\"value\":2}");
	has(s, "{\"label\":\"trace_heap_unknown_frees\",\"format\":\"integer\",\"value\":2}");
	done(x);
}

static void mark(struct fixture *x, uint32_t tid, uint64_t ts, uint8_t kind, const char *text,
		 const char *file, uint32_t line, uint32_t arg)
{
	struct prof_call_marker m = {.type = PROF_REC_CALL_MARKER,
				     .pid = PID,
				     .tid = tid,
				     .ts = ts,
				     .runtime = PROF_RT_PHP,
				     .kind = kind,
				     .line = line,
				     .arg = arg};

	m.text_len = (uint16_t)strlen(text);
	m.file_len = (uint16_t)strlen(file);
	memcpy(m.text, text, m.text_len < sizeof(m.text) ? m.text_len : sizeof(m.text));
	memcpy(m.file, file, m.file_len < sizeof(m.file) ? m.file_len : sizeof(m.file));
	assert_int_equal(evtrace__marker(x->t, &m), 0);
}

/* Exceptions and logs are instants (phase 0, no end) of their schema's type and category, in
 * the thread's own string table; a log after the last call stretches the thread to it. */
static void test_firefox_trace__markers_instants(void **state)
{
	struct fixture *x = start(false, NULL);
	const char *s;

	(void)state;
	ENTRY(x, PID, 1000, 10, 5);
	mark(x, PID, 1500, PROF_MARK_EXC_THROWN, "MyErr", "", 0, 0);
	mark(x, PID, 1800, PROF_MARK_EXC_CAUGHT, "MyErr", "", 0, 0);
	RETURN(x, PID, 2000, 10);
	mark(x, PID, 2500, PROF_MARK_ERROR, "bad \"thing\"\n", "/src/a.php", 12, 0);
	mark(x, PID, 2600, PROF_MARK_EXC_THROWN, "", "", 0, 0);
	s = finish(x, 3000);
	has(s, "\"markers\":{\"length\":4,\"name\":[0,1,2,0],"
	       "\"startTime\":[0.000500,0.000800,0.001500,0.001600],"
	       "\"endTime\":[null,null,null,null],\"phase\":[0,0,0,0],\"category\":[1,1,3,1],"
	       "\"data\":[{\"type\":\"Exception\",\"class\":\"MyErr\",\"event\":\"thrown\"},"
	       "{\"type\":\"Exception\",\"class\":\"MyErr\",\"event\":\"caught\"},"
	       "{\"type\":\"Log\",\"message\":\"bad \\\"thing\\\"\\n\",\"file\":\"/src/a.php\","
	       "\"line\":12},"
	       "{\"type\":\"Exception\",\"class\":\"[rethrown]\",\"event\":\"thrown\"}]}");
	has(s, "\"stringArray\":[\"Exception thrown\",\"Exception caught\",\"Log\",\"f\","
	       "\"/src/a.php\"]}");
	/* The samples reach the last marker: the weights are still the thread's span. */
	has(s, "\"registerTime\":0.000000,\"unregisterTime\":0.001600");
	has(s, "\"stack\":[0,null],\"time\":[0.000000,0.001000],\"weight\":[0.001000,0.000600]}");
	/* Every data type has its schema, every category its entry. */
	has(s, "\"markerSchema\":[{\"name\":\"Exception\",");
	has(s, "{\"name\":\"Log\",\"display\":[\"marker-chart\",\"marker-table\","
	       "\"timeline-overview\"]");
	has(s, "{\"name\":\"Import\",");
	has(s, "{\"name\":\"ClassLoad\",");
	has(s, "{\"key\":\"line\",\"label\":\"Line\",\"format\":\"integer\"}");
	has(s, "{\"name\":\"Log\",\"color\":\"yellow\",\"subcategories\":[\"Other\"]}]");
	has(s, "{\"label\":\"marker_texts_dropped\",\"format\":\"integer\",\"value\":0}");
	done(x);
}

/* An import is one interval from its start to the end of the same module, nested ones inside;
 * an end without its start is an IntervalEnd (phase 3), a start never ended an IntervalStart
 * (phase 2).  A thread of markers alone has one empty-stack sample over its span. */
static void test_firefox_trace__markers_imports_paired(void **state)
{
	struct fixture *x = start(false, NULL);
	const char *s;

	(void)state;
	mark(x, PID, 1000, PROF_MARK_IMPORT_START, "a", "", 0, 0);
	mark(x, PID, 1100, PROF_MARK_IMPORT_START, "b", "", 0, 0);
	mark(x, PID, 1200, PROF_MARK_IMPORT_DONE, "b", "", 0, 1);
	mark(x, PID, 1300, PROF_MARK_IMPORT_DONE, "a", "", 0, 1);
	mark(x, PID, 1400, PROF_MARK_IMPORT_START, "c", "", 0, 0);
	mark(x, PID, 1500, PROF_MARK_IMPORT_DONE, "z", "", 0, 0);
	s = finish(x, 3000);
	has(s, "\"markers\":{\"length\":4,\"name\":[0,0,0,0],"
	       "\"startTime\":[0.000100,0.000000,null,0.000400],"
	       "\"endTime\":[0.000200,0.000300,0.000500,null],\"phase\":[1,1,3,2],"
	       "\"category\":[2,2,2,2],"
	       "\"data\":[{\"type\":\"Import\",\"module\":\"b\",\"found\":\"yes\"},"
	       "{\"type\":\"Import\",\"module\":\"a\",\"found\":\"yes\"},"
	       "{\"type\":\"Import\",\"module\":\"z\",\"found\":\"no\"},"
	       "{\"type\":\"Import\",\"module\":\"c\"}]}");
	has(s, "\"samples\":{\"weightType\":\"tracing-ms\",\"length\":1,\"stack\":[null],"
	       "\"time\":[0.000000],\"weight\":[0.000500]}");
	has(s, "\"registerTime\":0.000000,\"unregisterTime\":0.000500");
	has(s, "\"stringArray\":[\"Import\"]}");
	done(x);
}

/* Java's class loads; a text filling its field (no NUL) is cut at the field; a marker never
 * goes before its thread's last call event. */
static void test_firefox_trace__markers_class_load_and_bounds(void **state)
{
	struct fixture *x = start(false, NULL);
	char long_name[PROF_MARKER_TEXT_LEN + 10], want[PROF_MARKER_TEXT_LEN + 32];
	const char *s;

	(void)state;
	memset(long_name, 'x', sizeof(long_name) - 1);
	long_name[sizeof(long_name) - 1] = 0;
	ENTRY(x, PID, 1000, 10, 5);
	mark(x, PID, 900, PROF_MARK_CLASS_LOAD, "java/lang/String", "", 0, 1);
	mark(x, PID, 1100, PROF_MARK_CLASS_LOAD, long_name, "", 0, 0);
	RETURN(x, PID, 2000, 10);
	s = finish(x, 3000);
	has(s, "\"startTime\":[0.000000,0.000100],");
	has(s, "{\"type\":\"ClassLoad\",\"class\":\"java/lang/String\",\"shared\":\"yes\"}");
	/* The field's bytes, then the closing quote. */
	snprintf(want, sizeof(want), "\"class\":\"%.*s\",", PROF_MARKER_TEXT_LEN, long_name);
	has(s, want);
	done(x);
}

/* --cpu: each sample its own stack (frames root first), weight 1, weightType "samples". */
static void test_firefox_trace__cpu_samples(void **state)
{
	static const uint32_t mf[] = {1, 2}, mg[] = {1, 3};
	struct trace_sink *s = NULL;
	char *buf = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&buf, &len);

	(void)state;
	assert_non_null(f);
	assert_int_equal(firefox_trace__new(&s, f, 0, NULL), 0);
	assert_int_equal(s->ops->process(s, 1, "p"), 0);
	assert_int_equal(s->ops->thread(s, 1, 1, "t"), 0);
	assert_int_equal(s->ops->name(s, 1, "main"), 0);
	assert_int_equal(s->ops->name(s, 2, "f"), 0);
	assert_int_equal(s->ops->name(s, 3, "[k] g"), 0);
	assert_int_equal(
		s->ops->cpu_stack(s, 1, 1, &(struct trace_stack){.ts = 1000, .iids = mf, .n = 2}),
		0);
	assert_int_equal(
		s->ops->cpu_stack(s, 1, 1, &(struct trace_stack){.ts = 2000, .iids = mg, .n = 2}),
		0);
	assert_int_equal(
		s->ops->cpu_stack(s, 1, 1, &(struct trace_stack){.ts = 3000, .iids = mf, .n = 2}),
		0);
	assert_int_equal(
		s->ops->cpu_stack(s, 1, 1, &(struct trace_stack){.ts = 4000, .iids = NULL, .n = 0}),
		0);
	assert_int_equal(s->ops->finish(s, 5000, NULL, NULL, 0), 0);
	assert_int_equal(fflush(f), 0);
	has(buf, "\"samples\":{\"weightType\":\"samples\",\"length\":4,\"stack\":[1,2,1,null],"
		 "\"time\":[0.000000,0.001000,0.002000,0.003000],\"weight\":[1,1,1,1]}");
	/* main, main>f, main>[k] g */
	has(buf, "\"stackTable\":{\"length\":3,");
	has(buf, "\"prefix\":[null,0,0]");
	s->ops->free(s);
	fclose(f);
	free(buf);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_firefox_trace__samples_exact),
		cmocka_unit_test(test_firefox_trace__stacks_shared_and_recursive),
		cmocka_unit_test(test_firefox_trace__one_thread_each),
		cmocka_unit_test(test_firefox_trace__nasty_names_escaped),
		cmocka_unit_test(test_firefox_trace__return_only_zero_length),
		cmocka_unit_test(test_firefox_trace__gzip_is_the_same_json),
		cmocka_unit_test(test_firefox_trace__spill_leaves_no_file),
		cmocka_unit_test(test_firefox_trace__heap_paired_by_address),
		cmocka_unit_test(test_firefox_trace__heap_caps_untracked_exit_exec),
		cmocka_unit_test(test_firefox_trace__markers_instants),
		cmocka_unit_test(test_firefox_trace__markers_imports_paired),
		cmocka_unit_test(test_firefox_trace__markers_class_load_and_bounds),
		cmocka_unit_test(test_firefox_trace__cpu_samples),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
