// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/* The event-trace recorder and its writers: exact bytes written for known event sequences. */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <zlib.h>

#include <cmocka.h>

#include "agg/calls_agg.h"
#include "sym/stackres.h"
#include "trace/evtrace.h"
#include "trace/trace_sink.h"
#include "prof_python.h"
#include "sym/symbolizer.h"

#define PID 1
#define TID 2

struct fixture {
	struct calls_agg *names;
	struct evtrace *t;
	FILE *f;
	char *buf;
	size_t len;
};

static void add_name(struct calls_agg *a, uint64_t id, const char *cls, const char *fn)
{
	struct prof_call_name n = {
		.type = PROF_REC_CALL_NAME, .pid = PID, .name_id = id, .runtime = PROF_RT_PHP};

	n.cls_len = (uint16_t)strlen(cls);
	n.fn_len = (uint16_t)strlen(fn);
	memcpy(n.cls, cls, n.cls_len);
	memcpy(n.fn, fn, n.fn_len);
	assert_int_equal(calls_agg__name(a, &n), 0);
}

static struct fixture *start(enum evtrace_format fmt, bool gzip)
{
	struct fixture *x = calloc(1, sizeof(*x));

	assert_non_null(x);
	assert_int_equal(calls_agg__new(&x->names), 0);
	add_name(x->names, 10, "", "f");
	add_name(x->names, 11, "", "g");
	x->f = open_memstream(&x->buf, &x->len);
	assert_non_null(x->f);
	assert_int_equal(evtrace__new(&x->t, x->f, fmt, gzip), 0);
	evtrace__set_sources(x->t, x->names, NULL);
	return x;
}

static void ev(struct fixture *x, uint32_t type, uint64_t ts, uint64_t name_id, uint8_t flags)
{
	struct prof_call_event e = {.type = type,
				    .pid = PID,
				    .tid = TID,
				    .ts = ts,
				    .name_id = name_id,
				    .runtime = PROF_RT_PHP,
				    .flags = flags};

	assert_int_equal(evtrace__call(x->t, &e), 0);
}

#define ENTRY(x, ts, id)  ev(x, PROF_REC_CALL_ENTRY, ts, id, 0)
#define RETURN(x, ts, id) ev(x, PROF_REC_CALL_RETURN, ts, id, 0)

/* Ends the trace at ts (no BPF counters) and returns what was written. */
static const char *finish(struct fixture *x, uint64_t ts)
{
	assert_int_equal(evtrace__finish(x->t, ts, NULL, NULL, 0), 0);
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

static unsigned count(const char *s, const char *what)
{
	unsigned n = 0;

	for (const char *p = s; (p = strstr(p, what)); p += strlen(what))
		n++;
	return n;
}

static const char *const no_drops = "\n],\"metadata\":{\"end_ts_ns\":5000,\"counters\":{"
				    "\"trace_unmatched_returns\":0,\"trace_unwound_frames\":0,"
				    "\"trace_unfinished_frames\":0,\"trace_depth_exceeded\":0,"
				    "\"trace_resyncs\":0,\"trace_before_attach\":0,"
				    "\"trace_unnamed\":0,\"trace_heap_unknown_frees\":0,"
				    "\"trace_heap_untracked\":0}}}\n";

static void test_evtrace__chrome_exact_nesting(void **state)
{
	struct fixture *x = start(EVTRACE_CHROME, false);
	char want[2048];

	(void)state;
	ENTRY(x, 1000, 10);
	ENTRY(x, 2500, 11);
	RETURN(x, 3001, 11);
	RETURN(x, 4000, 10);
	snprintf(want, sizeof(want), "%s%s",
		 "{\"displayTimeUnit\":\"ns\",\"traceEvents\":[\n"
		 "{\"ph\":\"M\",\"pid\":1,\"tid\":1,\"ts\":0,\"cat\":\"__metadata\","
		 "\"name\":\"process_name\",\"args\":{\"name\":\"\"}},\n"
		 "{\"ph\":\"M\",\"pid\":1,\"tid\":2,\"ts\":0,\"cat\":\"__metadata\","
		 "\"name\":\"thread_name\",\"args\":{\"name\":\"\"}},\n"
		 "{\"ph\":\"B\",\"pid\":1,\"tid\":2,\"ts\":1.000,\"cat\":\"calls\",\"name\":\"f\"},"
		 "\n"
		 "{\"ph\":\"B\",\"pid\":1,\"tid\":2,\"ts\":2.500,\"cat\":\"calls\",\"name\":\"g\"},"
		 "\n"
		 "{\"ph\":\"E\",\"pid\":1,\"tid\":2,\"ts\":3.001},\n"
		 "{\"ph\":\"E\",\"pid\":1,\"tid\":2,\"ts\":4.000}",
		 no_drops);
	assert_string_equal(finish(x, 5000), want);
	done(x);
}

static void test_evtrace__unmatched_return_skipped(void **state)
{
	struct fixture *x = start(EVTRACE_CHROME, false);
	const char *out;

	(void)state;
	RETURN(x, 1000, 11); /* entered before the attach */
	ENTRY(x, 2000, 10);
	RETURN(x, 3000, 10);
	RETURN(x, 4000, 11); /* its caller, also older than the attach */
	out = finish(x, 5000);
	assert_int_equal(count(out, "\"ph\":\"B\""), 1);
	assert_int_equal(count(out, "\"ph\":\"E\""), 1);
	assert_int_equal(evtrace__stats(x->t)->unmatched_returns, 2);
	assert_non_null(strstr(out, "\"trace_unmatched_returns\":2"));
	done(x);
}

/* Probes attach one by one: an entry seen before its return probe was in has no return. */
static void test_evtrace__events_before_attach_skipped(void **state)
{
	struct fixture *x = start(EVTRACE_CHROME, false);
	const char *out;

	(void)state;
	assert_int_equal(evtrace__attached(x->t, PID, 2000), 0);
	ENTRY(x, 1000, 10); /* its return never comes */
	ENTRY(x, 1500, 11);
	RETURN(x, 2500, 11); /* entered before the attach: unmatched */
	ENTRY(x, 3000, 11);
	RETURN(x, 4000, 11);
	out = finish(x, 5000);
	assert_int_equal(count(out, "\"ph\":\"B\""), 1);
	assert_int_equal(count(out, "\"ph\":\"E\""), 1);
	assert_non_null(strstr(out, "\"ts\":3.000,\"cat\":\"calls\",\"name\":\"g\"}"));
	assert_int_equal(evtrace__stats(x->t)->before_attach, 2);
	assert_int_equal(evtrace__stats(x->t)->unmatched_returns, 1);
	assert_int_equal(evtrace__stats(x->t)->unfinished_frames, 0);
	done(x);
}

static void test_evtrace__open_frames_closed_at_end(void **state)
{
	struct fixture *x = start(EVTRACE_CHROME, false);
	const char *out;

	(void)state;
	ENTRY(x, 1000, 10);
	ENTRY(x, 2000, 11);
	out = finish(x, 9000);
	assert_int_equal(count(out, "{\"ph\":\"E\",\"pid\":1,\"tid\":2,\"ts\":9.000}"), 2);
	assert_int_equal(evtrace__stats(x->t)->unfinished_frames, 2);
	done(x);
}

static void test_evtrace__thread_exit_closes_at_last_event(void **state)
{
	struct fixture *x = start(EVTRACE_CHROME, false);
	const char *out;

	(void)state;
	ENTRY(x, 1000, 10);
	ENTRY(x, 2000, 11);
	assert_int_equal(evtrace__thread_exit(x->t, PID, TID), 0);
	out = finish(x, 9000);
	assert_int_equal(count(out, "\"ph\":\"E\",\"pid\":1,\"tid\":2,\"ts\":2.000}"), 2);
	assert_int_equal(count(out, "\"ph\":\"E\""), 2);
	assert_int_equal(evtrace__stats(x->t)->unfinished_frames, 2);
	done(x);
}

static void test_evtrace__exception_closes_inner_frames(void **state)
{
	struct fixture *x = start(EVTRACE_CHROME, false);
	const char *out;

	(void)state;
	ENTRY(x, 1000, 10);
	ENTRY(x, 2000, 11);
	RETURN(x, 3000, 10); /* g left by an exception: no return of its own */
	out = finish(x, 5000);
	assert_int_equal(count(out, "\"ph\":\"E\",\"pid\":1,\"tid\":2,\"ts\":3.000}"), 2);
	assert_int_equal(evtrace__stats(x->t)->unwound_frames, 1);
	assert_int_equal(evtrace__stats(x->t)->unfinished_frames, 0);
	done(x);
}

static void test_evtrace__lost_events_close_the_stack(void **state)
{
	struct fixture *x = start(EVTRACE_CHROME, false);
	const char *out;

	(void)state;
	ENTRY(x, 1000, 10);
	ev(x, PROF_REC_CALL_ENTRY, 3000, 11, PROF_CALL_F_LOST);
	RETURN(x, 4000, 11);
	out = finish(x, 5000);
	/* f closes where we last knew it, g is a new slice. */
	assert_non_null(
		strstr(out, "{\"ph\":\"E\",\"pid\":1,\"tid\":2,\"ts\":1.000},\n"
			    "{\"ph\":\"B\",\"pid\":1,\"tid\":2,\"ts\":3.000,\"cat\":\"calls\","
			    "\"name\":\"g\"},\n{\"ph\":\"E\",\"pid\":1,\"tid\":2,\"ts\":4.000}"));
	assert_int_equal(evtrace__stats(x->t)->resyncs, 1);
	done(x);
}

static void test_evtrace__return_only_is_instant(void **state)
{
	struct fixture *x = start(EVTRACE_CHROME, false);
	const char *out;

	(void)state;
	ev(x, PROF_REC_CALL_RETURN, 7000, 10, PROF_CALL_F_RETURN_ONLY);
	out = finish(x, 9000);
	assert_non_null(strstr(out, "{\"ph\":\"i\",\"pid\":1,\"tid\":2,\"ts\":7.000,\"s\":\"t\","
				    "\"cat\":\"calls\",\"name\":\"f\"}"));
	assert_int_equal(count(out, "\"ph\":\"B\""), 0);
	assert_int_equal(evtrace__stats(x->t)->unmatched_returns, 0);
	done(x);
}

static void test_evtrace__unknown_name_kept_and_counted(void **state)
{
	struct fixture *x = start(EVTRACE_CHROME, false);
	const char *out;

	(void)state;
	ENTRY(x, 1000, 0xff);
	RETURN(x, 2000, 0xff);
	out = finish(x, 5000);
	assert_non_null(strstr(out, "\"name\":\"[unknown function 00000000000000ff]\""));
	assert_int_equal(evtrace__stats(x->t)->unnamed, 1);
	done(x);
}

static void test_evtrace__nasty_names_escaped(void **state)
{
	struct fixture *x = start(EVTRACE_CHROME, false);
	const char *out;

	(void)state;
	add_name(x->names, 12, "K\"}", "m\n\xff\xe2\x80\xa8");
	ENTRY(x, 1000, 12);
	RETURN(x, 2000, 12);
	out = finish(x, 5000);
	assert_non_null(strstr(out, "\"name\":\"K\\\"}::m\\n\xef\xbf\xbd\\u2028\"}"));
	done(x);
}

static void test_evtrace__depth_limit(void **state)
{
	struct fixture *x = start(EVTRACE_CHROME, false);
	const char *out;

	(void)state;
	for (unsigned i = 0; i <= EVTRACE_MAX_DEPTH; i++)
		ENTRY(x, 1000 + i, 10);
	for (unsigned i = 0; i <= EVTRACE_MAX_DEPTH; i++)
		RETURN(x, 10000 + i, 10);
	out = finish(x, 20000);
	assert_int_equal(count(out, "\"ph\":\"B\""), EVTRACE_MAX_DEPTH);
	assert_int_equal(count(out, "\"ph\":\"E\""), EVTRACE_MAX_DEPTH);
	assert_int_equal(evtrace__stats(x->t)->depth_exceeded, 1);
	assert_int_equal(evtrace__stats(x->t)->unmatched_returns, 0);
	done(x);
}

static void test_evtrace__drops_in_metadata(void **state)
{
	struct fixture *x = start(EVTRACE_CHROME, false);
	const char *names[] = {"ringbuf_full", "call_name_full"};
	const uint64_t values[] = {3, 0};

	(void)state;
	assert_int_equal(evtrace__finish(x->t, 5000, names, values, 2), 0);
	assert_int_equal(fflush(x->f), 0);
	assert_non_null(strstr(x->buf, "\"counters\":{\"ringbuf_full\":3,\"call_name_full\":0,"
				       "\"trace_unmatched_returns\":0,"));
	/* Nothing after the end. */
	assert_int_equal(evtrace__finish(x->t, 6000, NULL, NULL, 0), -EINVAL);
	done(x);
}

static void test_evtrace__gzip_is_the_same_json(void **state)
{
	struct fixture *plain = start(EVTRACE_CHROME, false), *gz = start(EVTRACE_CHROME, true);
	const char *want;
	char out[4096];
	z_stream z = {0};

	(void)state;
	ENTRY(plain, 1000, 10);
	RETURN(plain, 2000, 10);
	ENTRY(gz, 1000, 10);
	RETURN(gz, 2000, 10);
	want = finish(plain, 5000);
	finish(gz, 5000);
	assert_int_equal(gz->buf[0] & 0xff, 0x1f); /* gzip magic */
	assert_int_equal(gz->buf[1] & 0xff, 0x8b);
	/* zlib reads it back: one gzip member, the same bytes. */
	assert_int_equal(inflateInit2(&z, 16 + 15), Z_OK);
	z.next_in = (Bytef *)gz->buf;
	z.avail_in = (uInt)gz->len;
	z.next_out = (Bytef *)out;
	z.avail_out = sizeof(out) - 1;
	assert_int_equal(inflate(&z, Z_FINISH), Z_STREAM_END);
	out[z.total_out] = 0;
	inflateEnd(&z);
	assert_string_equal(out, want);
	done(plain);
	done(gz);
}

/* Perfetto's packets, byte for byte from the field numbers (trace_packet.proto: timestamp 8,
 * trusted_packet_sequence_id 10, track_event 11, interned_data 12, sequence_flags 13;
 * TrackEvent: type 9, name_iid 10, track_uuid 11; InternedData.event_names 2 {iid 1, name 2}).
 * The thread track of pid 1 tid 2 is uuid 1 << 32 | 2: varint 82 80 80 80 10. */
static void test_evtrace__perfetto_packet_bytes(void **state)
{
	static const uint8_t want[] = {
		/* the first packet clears the incremental state */
		0x0a,
		0x04,
		0x68,
		0x01,
		0x50,
		0x01,
		/* begin at ts 5 on the thread, name iid 1, "f" interned in the same packet */
		0x0a,
		0x1b,
		0x40,
		0x05,
		0x5a,
		0x0a,
		0x48,
		0x01,
		0x58,
		0x82,
		0x80,
		0x80,
		0x80,
		0x10,
		0x50,
		0x01,
		0x62,
		0x07,
		0x12,
		0x05,
		0x08,
		0x01,
		0x12,
		0x01,
		0x66,
		0x68,
		0x02,
		0x50,
		0x01,
		/* end at ts 9 */
		0x0a,
		0x10,
		0x40,
		0x09,
		0x5a,
		0x08,
		0x48,
		0x02,
		0x58,
		0x82,
		0x80,
		0x80,
		0x80,
		0x10,
		0x68,
		0x02,
		0x50,
		0x01,
	};
	struct trace_sink *s = NULL;
	char *buf = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&buf, &len);

	(void)state;
	assert_non_null(f);
	assert_int_equal(perfetto_trace__new(&s, f), 0);
	assert_int_equal(s->ops->name(s, 1, "f"), 0);
	assert_int_equal(s->ops->begin(s, 1, 2, 5, 1, "f"), 0);
	assert_int_equal(s->ops->end(s, 1, 2, 9), 0);
	assert_int_equal(fflush(f), 0);
	assert_int_equal(len, sizeof(want));
	assert_memory_equal(buf, want, sizeof(want));
	s->ops->free(s);
	fclose(f);
	free(buf);
}

static void test_evtrace__perfetto_names_interned_once(void **state)
{
	struct fixture *x = start(EVTRACE_PERFETTO, false);
	const char *out;
	size_t n = 0;

	(void)state;
	for (unsigned i = 0; i < 5; i++) {
		ENTRY(x, 1000 + 10 * i, 10);
		RETURN(x, 1005 + 10 * i, 10);
	}
	out = finish(x, 5000);
	/* EventName {iid 1, name "f"}: once, in the first begin's packet. */
	for (size_t i = 0; i + 5 <= x->len; i++)
		n += !memcmp(out + i, "\x08\x01\x12\x01\x66", 5);
	assert_int_equal(n, 1);
	done(x);
}

#define MiB (1ULL << 20)

/* The heap counter's values and the large allocations, in the order written. */
static void test_evtrace__chrome_heap_counter_exact(void **state)
{
	struct fixture *x = start(EVTRACE_CHROME, false);
	const char *out;
	const char *want[] = {
		"{\"ph\":\"C\",\"pid\":1,\"tid\":1,\"ts\":1.000,\"cat\":\"heap\","
		"\"name\":\"heap in use\",\"args\":{\"bytes\":100}}",
		"{\"ph\":\"i\",\"pid\":1,\"tid\":2,\"ts\":2.000,\"s\":\"t\",\"cat\":\"heap\","
		"\"name\":\"large allocation\",\"args\":{\"bytes\":2097152,\"addr\":\"0xb000\"}}",
		"\"ts\":2.000,\"cat\":\"heap\",\"name\":\"heap in "
		"use\",\"args\":{\"bytes\":2097252}}",
		"\"ts\":3.000,\"cat\":\"heap\",\"name\":\"heap in "
		"use\",\"args\":{\"bytes\":2097152}}",
		"\"args\":{\"bytes\":3145728,\"addr\":\"0xd000\"}}",
		"\"ts\":5.000,\"cat\":\"heap\",\"name\":\"heap in "
		"use\",\"args\":{\"bytes\":3145728}}",
		"\"ts\":6.000,\"cat\":\"heap\",\"name\":\"heap in use\",\"args\":{\"bytes\":0}}",
	};
	const char *p;

	(void)state;
	assert_int_equal(evtrace__alloc(x->t, PID, TID, 1000, 0xa000, 0, 100), 0);
	assert_int_equal(evtrace__alloc(x->t, PID, TID, 2000, 0xb000, 0, 2 * MiB), 0);
	assert_int_equal(evtrace__free_block(x->t, PID, TID, 3000, 0xa000), 0);
	/* Allocated before the trace: counted, the counter does not move. */
	assert_int_equal(evtrace__free_block(x->t, PID, TID, 4000, 0xc000), 0);
	/* realloc: the old block goes, the new one comes, one value. */
	assert_int_equal(evtrace__alloc(x->t, PID, TID, 5000, 0xd000, 0xb000, 3 * MiB), 0);
	assert_int_equal(evtrace__heap_exec(x->t, PID, 6000), 0);
	/* After the exec its old blocks are unknown. */
	assert_int_equal(evtrace__free_block(x->t, PID, TID, 6500, 0xd000), 0);
	out = finish(x, 7000);
	p = out;
	for (size_t i = 0; i < sizeof(want) / sizeof(*want); i++) {
		p = strstr(p, want[i]);
		if (!p)
			fail_msg("missing, or out of order: %s\nin %s", want[i], out);
	}
	assert_int_equal(count(out, "\"ph\":\"C\""), 5);
	assert_int_equal(count(out, "large allocation"), 2);
	assert_int_equal(evtrace__stats(x->t)->heap_unknown_frees, 2);
	assert_non_null(strstr(out, "\"trace_heap_unknown_frees\":2,\"trace_heap_untracked\":0"));
	done(x);
}

/* A zero-byte block is a block (its free is known); a free never moves time back. */
static void test_evtrace__heap_zero_size_and_time(void **state)
{
	struct fixture *x = start(EVTRACE_CHROME, false);
	const char *out;

	(void)state;
	ENTRY(x, 5000, 10);
	assert_int_equal(evtrace__alloc(x->t, PID, TID, 1000, 0xa000, 0, 0), 0);
	assert_int_equal(evtrace__free_block(x->t, PID, TID, 1500, 0xa000), 0);
	RETURN(x, 6000, 10);
	out = finish(x, 7000);
	assert_int_equal(evtrace__stats(x->t)->heap_unknown_frees, 0);
	/* The allocation is written at the thread's last event (5 us), not before. */
	assert_non_null(strstr(out, "\"ts\":5.000,\"cat\":\"heap\",\"name\":\"heap in use\","
				    "\"args\":{\"bytes\":0}}"));
	assert_null(strstr(out, "\"ts\":1.000"));
	done(x);
}

/* Past the limit of blocks followed in all: counted, not in the counter, still an instant if
 * large. */
static void test_evtrace__heap_blocks_bounded(void **state)
{
	struct fixture *x = start(EVTRACE_CHROME, false);
	const char *out;

	(void)state;
	evtrace__set_caps(x->t, 0, 2);
	assert_int_equal(evtrace__alloc(x->t, PID, TID, 1000, 0xa000, 0, 10), 0);
	assert_int_equal(evtrace__alloc(x->t, PID, TID, 1000, 0xb000, 0, 20), 0);
	assert_int_equal(evtrace__alloc(x->t, PID, TID, 1000, 0xc000, 0, MiB), 0);
	assert_int_equal(evtrace__free_block(x->t, PID, TID, 1000, 0xc000), 0);
	/* Room again. */
	assert_int_equal(evtrace__free_block(x->t, PID, TID, 1000, 0xa000), 0);
	assert_int_equal(evtrace__alloc(x->t, PID, TID, 1000, 0xd000, 0, 40), 0);
	out = finish(x, 7000);
	assert_int_equal(evtrace__stats(x->t)->heap_untracked, 1);
	assert_int_equal(evtrace__stats(x->t)->heap_unknown_frees, 1);
	assert_int_equal(count(out, "large allocation"), 1);
	assert_int_equal(count(out, "\"ph\":\"C\""), 4);
	assert_non_null(strstr(out, "{\"bytes\":60}}\n]"));
	done(x);
}

/* Per process: one process past its cap is counted and left out of its counter while another
 * keeps its room; frees bring the count down, and exec and exit to zero. */
static void test_evtrace__heap_blocks_bounded_per_process(void **state)
{
	struct fixture *x = start(EVTRACE_CHROME, false);
	const char *out;

	(void)state;
	evtrace__set_caps(x->t, 2, 0);
	assert_int_equal(evtrace__alloc(x->t, PID, TID, 1000, 0xa000, 0, 10), 0);
	assert_int_equal(evtrace__alloc(x->t, PID, TID, 1000, 0xb000, 0, 20), 0);
	assert_int_equal(evtrace__alloc(x->t, PID, TID, 1000, 0xc000, 0, 40), 0);
	/* Another process keeps its room. */
	assert_int_equal(evtrace__alloc(x->t, 7, 7, 1000, 0xa000, 0, 1), 0);
	assert_int_equal(evtrace__alloc(x->t, 7, 7, 1000, 0xb000, 0, 2), 0);
	assert_int_equal(evtrace__stats(x->t)->heap_untracked, 1);
	/* A free makes room again (the capped block's own free is unknown). */
	assert_int_equal(evtrace__free_block(x->t, PID, TID, 2000, 0xc000), 0);
	assert_int_equal(evtrace__free_block(x->t, PID, TID, 2000, 0xa000), 0);
	assert_int_equal(evtrace__alloc(x->t, PID, TID, 2000, 0xd000, 0, 80), 0);
	assert_int_equal(evtrace__stats(x->t)->heap_untracked, 1);
	/* Exec: the process's count back to zero, two blocks fit again. */
	assert_int_equal(evtrace__heap_exec(x->t, PID, 3000), 0);
	assert_int_equal(evtrace__alloc(x->t, PID, TID, 3000, 0xe000, 0, 160), 0);
	assert_int_equal(evtrace__alloc(x->t, PID, TID, 3000, 0xf000, 0, 320), 0);
	assert_int_equal(evtrace__stats(x->t)->heap_untracked, 1);
	/* Exit: the same, its counter keeps its last value. */
	assert_int_equal(evtrace__heap_exit(x->t, 7), 0);
	assert_int_equal(evtrace__alloc(x->t, 7, 7, 4000, 0xc000, 0, 4), 0);
	assert_int_equal(evtrace__alloc(x->t, 7, 7, 4000, 0xd000, 0, 8), 0);
	assert_int_equal(evtrace__stats(x->t)->heap_untracked, 1);
	out = finish(x, 7000);
	assert_int_equal(evtrace__stats(x->t)->heap_unknown_frees, 1);
	assert_non_null(strstr(out, "\"trace_heap_untracked\":1"));
	assert_non_null(strstr(out, "{\"bytes\":480}}"));
	/* pid 7 after its exit: a new counter from 0 (4, then 12). */
	assert_non_null(strstr(out, "{\"bytes\":12}}\n]"));
	done(x);
}

/* A block BPF keeps no record of (its free will not come): not in the counter, not counted
 * here; its free, should one come, is unknown; handed out again over a followed block, that
 * block goes. */
static void test_evtrace__heap_untracked_not_followed(void **state)
{
	struct fixture *x = start(EVTRACE_CHROME, false);
	const char *out;

	(void)state;
	evtrace__set_caps(x->t, 1, 0);
	assert_int_equal(evtrace__alloc_untracked(x->t, PID, TID, 1000, 0xa000, 0, 10), 0);
	/* The one block of room is still there. */
	assert_int_equal(evtrace__alloc(x->t, PID, TID, 1000, 0xb000, 0, 20), 0);
	assert_int_equal(evtrace__free_block(x->t, PID, TID, 2000, 0xa000), 0);
	assert_int_equal(evtrace__alloc_untracked(x->t, PID, TID, 3000, 0xb000, 0, 40), 0);
	/* 0xb000 went: room for another. */
	assert_int_equal(evtrace__alloc(x->t, PID, TID, 4000, 0xc000, 0, 80), 0);
	out = finish(x, 7000);
	assert_int_equal(evtrace__stats(x->t)->heap_untracked, 0);
	assert_int_equal(evtrace__stats(x->t)->heap_unknown_frees, 1);
	assert_int_equal(count(out, "\"ph\":\"C\""), 3);
	assert_non_null(strstr(out, "\"ts\":1.000,\"cat\":\"heap\",\"name\":\"heap in use\","
				    "\"args\":{\"bytes\":20}}"));
	assert_non_null(strstr(out, "\"ts\":3.000,\"cat\":\"heap\",\"name\":\"heap in use\","
				    "\"args\":{\"bytes\":0}}"));
	assert_non_null(strstr(out, "{\"bytes\":80}}\n]"));
	done(x);
}

/* Perfetto: a counter track (unit bytes) child of the process's, counter values, the large
 * allocation's debug annotations. */
static bool has(const char *buf, size_t len, const void *what, size_t n)
{
	for (size_t i = 0; i + n <= len; i++)
		if (!memcmp(buf + i, what, n))
			return true;
	return false;
}

static void test_evtrace__perfetto_heap_fields(void **state)
{
	struct fixture *x = start(EVTRACE_PERFETTO, false);
	const char *out;

	(void)state;
	assert_int_equal(evtrace__alloc(x->t, PID, TID, 1000, 0xa000, 0, 2 * MiB), 0);
	assert_int_equal(evtrace__alloc(x->t, 7, 7, 1000, 0xa000, 0, 5), 0);
	out = finish(x, 7000);
	/* TrackDescriptor {uuid 1<<61|1, parent_uuid 1<<32, name "heap in use",
	 * counter {unit UNIT_SIZE_BYTES}} */
	assert_true(has(out, x->len,
			"\x08\x81\x80\x80\x80\x80\x80\x80\x80\x20\x28\x80\x80\x80\x80\x10"
			"\x12\x0bheap in use\x42\x02\x18\x03",
			31));
	/* counter_value 2 MiB, then 5 on the other process's track (uuid 1<<61|7). */
	assert_true(has(out, x->len, "\xf0\x01\x80\x80\x80\x01", 6));
	assert_true(has(out, x->len, "\x58\x87\x80\x80\x80\x80\x80\x80\x80\x20\xf0\x01\x05", 13));
	/* DebugAnnotation {name "bytes", uint_value}, {name "addr", pointer_value 0xa000} */
	assert_true(has(out, x->len, "\x22\x0c\x52\x05\x62ytes\x18\x80\x80\x80\x01", 14));
	assert_true(has(out, x->len, "\x22\x0a\x52\x04\x61\x64\x64\x72\x38\x80\xc0\x02", 12));
	/* "large allocation" interned once. */
	assert_true(has(out, x->len, "\x12\x10large allocation", 18));
	done(x);
}

/* --cpu: samples wait for the end (their stacks are named then), each an instant with its
 * stack; without stacks to name them, "[no stack]". */
static void test_evtrace__cpu_samples_written_at_end(void **state)
{
	struct fixture *x = start(EVTRACE_CHROME, false);
	const char *out;

	(void)state;
	assert_int_equal(evtrace__cpu_sample(x->t, PID, TID, 1000, -1, -1), 0);
	ENTRY(x, 1500, 10);
	assert_int_equal(evtrace__cpu_sample(x->t, PID, TID, 2000, -1, -1), 0);
	RETURN(x, 2500, 10);
	assert_int_equal(fflush(x->f), 0);
	assert_null(strstr(x->buf, "\"cat\":\"cpu\""));
	out = finish(x, 5000);
	assert_non_null(
		strstr(out, "{\"ph\":\"i\",\"pid\":1,\"tid\":2,\"ts\":1.000,\"s\":\"t\","
			    "\"cat\":\"cpu\",\"name\":\"[no stack]\",\"args\":{\"stack\":\"\"}}"));
	assert_non_null(strstr(out, "\"ts\":2.000,\"s\":\"t\",\"cat\":\"cpu\""));
	assert_int_equal(count(out, "\"cat\":\"cpu\""), 2);
	/* After the calls' events, before the counters. */
	assert_true(strstr(out, "\"cat\":\"cpu\"") > strstr(out, "\"ts\":2.500"));
	done(x);
}

/* --cpu: a Python frame's fingerprint word (its second stack slot) is no frame in any format: the
 * sample's stack is the one pprof shows (issue 25: a 0x… frame before every Python frame). */
static void test_evtrace__cpu_python_fingerprint_is_no_frame(void **state)
{
	struct symbolizer_opts opts = {.debug_dir = ""};
	char root[] = "/tmp/evtrace.XXXXXX";
	struct fixture *x = start(EVTRACE_CHROME, false);
	struct symbolizer *sym = NULL;
	struct stackres *r = NULL;
	/* leaf first: a Python frame, its fingerprint, the native frame that ran it */
	const uint64_t ips[] = {prof_py_frame(0x1000, 0), PROF_PY_PRINT_TAG | 0x1234, 0x400000};
	int32_t id;
	const char *out;

	(void)state;
	assert_non_null(mkdtemp(root));
	opts.proc_root = root;
	opts.kallsyms = "/nonexistent";
	opts.perfmap_dir = root;
	assert_int_equal(symbolizer__new(&sym, &opts), 0);
	assert_int_equal(stackres__new(&r, sym), 0);
	assert_int_equal(stackres__intern(r, &id, PID, STACK_USER, ips, 3), 0);
	evtrace__set_stacks(x->t, r);
	assert_int_equal(evtrace__cpu_sample(x->t, PID, TID, 1000, id, STACKRES_NONE), 0);
	out = finish(x, 5000);
	/* The Python frame is named [python] here (no interpreter to read it from). */
	assert_non_null(
		strstr(out, "\"name\":\"[python]\",\"args\":{\"stack\":\"0x400000;[python]\"}"));
	assert_null(strstr(out, "1234"));
	done(x);
	stackres__free(r);
	symbolizer__free(sym);
	rmdir(root);
}

/* --cpu, chrome: each thread's samples also as Chrome's CPU profile (Profile, then ProfileChunk:
 * call-frame nodes, the samples' leaf nodes, the microseconds between them), which speedscope
 * draws.  A sample lasts until the next one; a gap of more than 1.5 periods goes to the root
 * (idle) after one period, and so does the time after the last sample. */
static void test_evtrace__chrome_cpu_profile_exact(void **state)
{
	static const uint32_t iids[] = {1, 2, 3};
	static const char *const ab[] = {"a", "b"}, *const ac[] = {"a", "c"};
	struct trace_sink *s = NULL;
	char *buf = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&buf, &len);
	const char *p;

	(void)state;
	assert_non_null(f);
	assert_int_equal(chrome_trace__new(&s, f, 0), 0);
	assert_int_equal(
		s->ops->cpu_stack(
			s, 1, 2,
			&(struct trace_stack){
				.ts = 10000, .period = 1000, .iids = iids, .names = ab, .n = 2}),
		0);
	assert_int_equal(
		s->ops->cpu_stack(
			s, 1, 2,
			&(struct trace_stack){
				.ts = 11000, .period = 1000, .iids = iids, .names = ac, .n = 2}),
		0);
	/* off the CPU from 12000 to 20000 */
	assert_int_equal(
		s->ops->cpu_stack(
			s, 1, 2,
			&(struct trace_stack){
				.ts = 20000, .period = 1000, .iids = iids, .names = ab, .n = 2}),
		0);
	assert_int_equal(s->ops->finish(s, 30000, NULL, NULL, 0), 0);
	assert_int_equal(fflush(f), 0);
	p = strstr(buf, "{\"ph\":\"P\"");
	assert_non_null(p);
	assert_string_equal(
		p,
		"{\"ph\":\"P\",\"pid\":1,\"tid\":2,\"ts\":10.000,"
		"\"cat\":\"disabled-by-default-v8.cpu_profiler\",\"name\":\"Profile\","
		"\"id\":\"0x100000002\",\"args\":{\"data\":{\"startTime\":10.000}}},\n"
		"{\"ph\":\"P\",\"pid\":1,\"tid\":2,\"ts\":10.000,"
		"\"cat\":\"disabled-by-default-v8.cpu_profiler\",\"name\":\"ProfileChunk\","
		"\"id\":\"0x100000002\",\"args\":{\"data\":{\"cpuProfile\":{\"nodes\":["
		"{\"id\":1,\"callFrame\":{\"functionName\":\"(root)\",\"url\":\"\",\"scriptId\":0,"
		"\"lineNumber\":-1,\"columnNumber\":-1}},"
		"{\"id\":2,\"parent\":1,\"callFrame\":{\"functionName\":\"a\",\"url\":\"\","
		"\"scriptId\":0,\"lineNumber\":-1,\"columnNumber\":-1}},"
		"{\"id\":3,\"parent\":2,\"callFrame\":{\"functionName\":\"b\",\"url\":\"\","
		"\"scriptId\":0,\"lineNumber\":-1,\"columnNumber\":-1}},"
		"{\"id\":4,\"parent\":2,\"callFrame\":{\"functionName\":\"c\",\"url\":\"\","
		"\"scriptId\":0,\"lineNumber\":-1,\"columnNumber\":-1}}],"
		"\"samples\":[3,4,1,3,1]},"
		"\"timeDeltas\":[0.000,1.000,1.000,8.000,1.000],\"endTime\":21.000}}}\n"
		"],\"metadata\":{\"end_ts_ns\":30000,\"counters\":{}}}\n");
	s->ops->free(s);
	fclose(f);
	free(buf);
}

/* --offcpu: a slice of its length inside the calls open then, never before the thread's last
 * event. */
static void test_evtrace__offcpu_slices(void **state)
{
	struct fixture *x = start(EVTRACE_CHROME, false);
	const char *out;

	(void)state;
	ENTRY(x, 1000, 10);
	assert_int_equal(evtrace__offcpu(x->t, PID, TID, 2000, 3000, false), 0);
	/* Reported with a start before the thread's last event (5 us): moved there. */
	assert_int_equal(evtrace__offcpu(x->t, PID, TID, 4000, 500, true), 0);
	RETURN(x, 9000, 10);
	out = finish(x, 10000);
	assert_non_null(strstr(out,
			       "{\"ph\":\"B\",\"pid\":1,\"tid\":2,\"ts\":2.000,\"cat\":\"calls\","
			       "\"name\":\"off-CPU: idle\"},\n"
			       "{\"ph\":\"E\",\"pid\":1,\"tid\":2,\"ts\":5.000},\n"
			       "{\"ph\":\"B\",\"pid\":1,\"tid\":2,\"ts\":5.000,\"cat\":\"calls\","
			       "\"name\":\"off-CPU: runnable\"},\n"
			       "{\"ph\":\"E\",\"pid\":1,\"tid\":2,\"ts\":5.500},\n"
			       "{\"ph\":\"E\",\"pid\":1,\"tid\":2,\"ts\":9.000}"));
	done(x);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_evtrace__chrome_exact_nesting),
		cmocka_unit_test(test_evtrace__unmatched_return_skipped),
		cmocka_unit_test(test_evtrace__events_before_attach_skipped),
		cmocka_unit_test(test_evtrace__open_frames_closed_at_end),
		cmocka_unit_test(test_evtrace__thread_exit_closes_at_last_event),
		cmocka_unit_test(test_evtrace__exception_closes_inner_frames),
		cmocka_unit_test(test_evtrace__lost_events_close_the_stack),
		cmocka_unit_test(test_evtrace__return_only_is_instant),
		cmocka_unit_test(test_evtrace__unknown_name_kept_and_counted),
		cmocka_unit_test(test_evtrace__nasty_names_escaped),
		cmocka_unit_test(test_evtrace__depth_limit),
		cmocka_unit_test(test_evtrace__drops_in_metadata),
		cmocka_unit_test(test_evtrace__gzip_is_the_same_json),
		cmocka_unit_test(test_evtrace__perfetto_packet_bytes),
		cmocka_unit_test(test_evtrace__perfetto_names_interned_once),
		cmocka_unit_test(test_evtrace__chrome_heap_counter_exact),
		cmocka_unit_test(test_evtrace__heap_zero_size_and_time),
		cmocka_unit_test(test_evtrace__heap_blocks_bounded),
		cmocka_unit_test(test_evtrace__heap_blocks_bounded_per_process),
		cmocka_unit_test(test_evtrace__heap_untracked_not_followed),
		cmocka_unit_test(test_evtrace__perfetto_heap_fields),
		cmocka_unit_test(test_evtrace__cpu_samples_written_at_end),
		cmocka_unit_test(test_evtrace__cpu_python_fingerprint_is_no_frame),
		cmocka_unit_test(test_evtrace__chrome_cpu_profile_exact),
		cmocka_unit_test(test_evtrace__offcpu_slices),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
