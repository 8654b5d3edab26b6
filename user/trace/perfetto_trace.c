// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * Perfetto's protobuf trace: a stream of Trace.packet (field 1) TracePackets, one written per
 * event as it comes, so nothing but the names not yet sent is held.  Field numbers are
 * perfetto/trace/trace_packet.proto, track_event/track_event.proto, track_descriptor.proto,
 * interned_data.proto (shared/notes/formats.md).
 *
 * One packet sequence (trusted_packet_sequence_id 1): the first packet clears the incremental
 * state, event packets need it (the interned names); a name is interned in the packet of its
 * first use.  Tracks: one per process (uuid pid << 32) and one per thread (pid << 32 | tid, a
 * child of its process's); with --heap, a counter track per process (HEAP_UUID_BASE | pid, a
 * child of its process's) of the bytes in use, and large allocations as instants on their
 * thread with their size and address as debug annotations; our counters (losses and
 * bookkeeping) are counter tracks with one value at the end.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "trace/trace_sink.h"
#include "util/hashmap.h"
#include "util/protobuf.h"

enum {
	TRACE_PACKET = 1,
	/* TracePacket */
	PKT_TIMESTAMP = 8,
	PKT_SEQUENCE_ID = 10,
	PKT_TRACK_EVENT = 11,
	PKT_INTERNED_DATA = 12,
	PKT_SEQUENCE_FLAGS = 13,
	PKT_TRACK_DESCRIPTOR = 60,
	SEQ_INCREMENTAL_STATE_CLEARED = 1,
	SEQ_NEEDS_INCREMENTAL_STATE = 2,
	/* TrackDescriptor */
	TD_UUID = 1,
	TD_NAME = 2,
	TD_PROCESS = 3,
	TD_THREAD = 4,
	TD_PARENT_UUID = 5,
	TD_COUNTER = 8,
	CD_UNIT = 3,
	UNIT_SIZE_BYTES = 3,
	PD_PID = 1,
	PD_PROCESS_NAME = 6,
	THD_PID = 1,
	THD_TID = 2,
	THD_THREAD_NAME = 5,
	/* TrackEvent */
	TE_TYPE = 9,
	TE_NAME_IID = 10,
	TE_TRACK_UUID = 11,
	TE_COUNTER_VALUE = 30,
	TE_DEBUG_ANNOTATIONS = 4,
	/* DebugAnnotation */
	DA_NAME = 10,
	DA_UINT_VALUE = 3,
	DA_POINTER_VALUE = 7,
	DA_STRING_VALUE = 6,
	TYPE_SLICE_BEGIN = 1,
	TYPE_SLICE_END = 2,
	TYPE_INSTANT = 3,
	TYPE_COUNTER = 4,
	/* InternedData.event_names: EventName */
	ID_EVENT_NAMES = 2,
	EN_IID = 1,
	EN_NAME = 2,
};

#define SEQUENCE_ID    1
/* Counter tracks of our counters: uuids no pid << 32 | tid reaches (pid < 2^22). */
#define DROP_UUID_BASE (1ULL << 62)
/* Heap counter tracks: | pid, below the counters' and above every thread's. */
#define HEAP_UUID_BASE (1ULL << 61)

struct pending_name {
	uint32_t iid;
	char *name;
};

struct perfetto_trace {
	struct trace_sink sink;
	FILE *f;
	struct pbuf pkt, msg, sub;    /* reused for every packet */
	struct pending_name *pending; /* names to intern in the next event packet */
	size_t npending, pending_cap;
	struct hashmap *heap_tracks; /* pid -> uint8_t: its heap counter track is declared */
};

static struct perfetto_trace *pt(struct trace_sink *s)
{
	return (struct perfetto_trace *)s;
}

static uint64_t process_uuid(uint32_t pid)
{
	return (uint64_t)pid << 32;
}

static uint64_t thread_uuid(uint32_t pid, uint32_t tid)
{
	return (uint64_t)pid << 32 | tid;
}

/* Trace.packet: tag, length, the packet; then the buffers are ready for the next one. */
static int emit(struct perfetto_trace *t)
{
	uint8_t head[1 + PB_VARINT_MAX];
	size_t n;
	int err;

	pb__field_varint(&t->pkt, PKT_SEQUENCE_ID, SEQUENCE_ID);
	err = pbuf__err(&t->pkt);
	if (err)
		return err;
	head[0] = TRACE_PACKET << 3 | PB_WIRE_LEN;
	n = 1 + pb__encode_varint(head + 1, t->pkt.len);
	if (fwrite(head, 1, n, t->f) != n || fwrite(t->pkt.data, 1, t->pkt.len, t->f) != t->pkt.len)
		return -EIO;
	pbuf__reset(&t->pkt);
	pbuf__reset(&t->msg);
	pbuf__reset(&t->sub);
	return 0;
}

static int descriptor(struct perfetto_trace *t, uint64_t uuid, uint64_t parent, uint32_t what,
		      const struct pbuf *desc, const char *name)
{
	pb__field_varint(&t->msg, TD_UUID, uuid);
	if (parent)
		pb__field_varint(&t->msg, TD_PARENT_UUID, parent);
	if (name)
		pb__field_string(&t->msg, TD_NAME, name);
	pb__field_message(&t->msg, what, desc);
	pb__field_message(&t->pkt, PKT_TRACK_DESCRIPTOR, &t->msg);
	return emit(t);
}

static int perfetto_process(struct trace_sink *s, uint32_t pid, const char *name)
{
	struct perfetto_trace *t = pt(s);

	pb__field_varint(&t->sub, PD_PID, pid);
	pb__field_string(&t->sub, PD_PROCESS_NAME, name);
	return descriptor(t, process_uuid(pid), 0, TD_PROCESS, &t->sub, NULL);
}

static int perfetto_thread(struct trace_sink *s, uint32_t pid, uint32_t tid, const char *name)
{
	struct perfetto_trace *t = pt(s);

	pb__field_varint(&t->sub, THD_PID, pid);
	pb__field_varint(&t->sub, THD_TID, tid);
	pb__field_string(&t->sub, THD_THREAD_NAME, name);
	return descriptor(t, thread_uuid(pid, tid), process_uuid(pid), TD_THREAD, &t->sub, NULL);
}

static int perfetto_name(struct trace_sink *s, uint32_t iid, const char *name)
{
	struct perfetto_trace *t = pt(s);
	struct pending_name *p;

	if (t->npending == t->pending_cap) {
		size_t cap = t->pending_cap ? 2 * t->pending_cap : 8;

		p = realloc(t->pending, cap * sizeof(*p));
		if (!p)
			return -ENOMEM;
		t->pending = p;
		t->pending_cap = cap;
	}
	p = &t->pending[t->npending];
	p->name = strdup(name);
	if (!p->name)
		return -ENOMEM;
	p->iid = iid;
	t->npending++;
	return 0;
}

/* One TrackEvent packet; names first used by it are interned in it.  extra: more TrackEvent
 * fields, encoded (NULL: none). */
static int event(struct perfetto_trace *t, uint64_t track, uint64_t ts, uint32_t type, uint32_t iid,
		 const uint64_t *counter, const struct pbuf *extra)
{
	pb__field_varint(&t->pkt, PKT_TIMESTAMP, ts);
	pb__field_varint(&t->msg, TE_TYPE, type);
	pb__field_varint(&t->msg, TE_TRACK_UUID, track);
	if (iid)
		pb__field_varint(&t->msg, TE_NAME_IID, iid);
	if (counter)
		pb__field_varint(&t->msg, TE_COUNTER_VALUE, *counter);
	if (extra)
		pbuf__append(&t->msg, extra->data, extra->len);
	pb__field_message(&t->pkt, PKT_TRACK_EVENT, &t->msg);
	if (t->npending) {
		struct pbuf names, one;

		pbuf__init(&names);
		pbuf__init(&one);
		for (size_t i = 0; i < t->npending; i++) {
			pbuf__reset(&one);
			pb__field_varint(&one, EN_IID, t->pending[i].iid);
			pb__field_string(&one, EN_NAME, t->pending[i].name);
			pb__field_message(&names, ID_EVENT_NAMES, &one);
			free(t->pending[i].name);
		}
		t->npending = 0;
		pb__field_message(&t->pkt, PKT_INTERNED_DATA, &names);
		pbuf__release(&names);
		pbuf__release(&one);
	}
	pb__field_varint(&t->pkt, PKT_SEQUENCE_FLAGS, SEQ_NEEDS_INCREMENTAL_STATE);
	return emit(t);
}

static int perfetto_begin(struct trace_sink *s, uint32_t pid, uint32_t tid, uint64_t ts,
			  uint32_t iid, const char *name)
{
	(void)name;
	return event(pt(s), thread_uuid(pid, tid), ts, TYPE_SLICE_BEGIN, iid, NULL, NULL);
}

static int perfetto_end(struct trace_sink *s, uint32_t pid, uint32_t tid, uint64_t ts)
{
	return event(pt(s), thread_uuid(pid, tid), ts, TYPE_SLICE_END, 0, NULL, NULL);
}

static int perfetto_instant(struct trace_sink *s, uint32_t pid, uint32_t tid, uint64_t ts,
			    uint32_t iid, const char *name)
{
	(void)name;
	return event(pt(s), thread_uuid(pid, tid), ts, TYPE_INSTANT, iid, NULL, NULL);
}

/* --heap: the process's counter track, declared at its first value. */
static int perfetto_heap_in_use(struct trace_sink *s, uint32_t pid, uint64_t ts, uint64_t bytes)
{
	struct perfetto_trace *t = pt(s);
	uint8_t *seen;
	bool created;
	int err;

	err = hashmap__upsert(t->heap_tracks, (void **)&seen, &pid, &created);
	if (!err && created) {
		pb__field_varint(&t->sub, CD_UNIT, UNIT_SIZE_BYTES);
		err = descriptor(t, HEAP_UUID_BASE | pid, process_uuid(pid), TD_COUNTER, &t->sub,
				 "heap in use");
	}
	return err ? err : event(t, HEAP_UUID_BASE | pid, ts, TYPE_COUNTER, 0, &bytes, NULL);
}

/* One DebugAnnotation {name, field: value (a string when str, else the number v)} into sub. */
static void annotate(struct pbuf *sub, const char *name, uint32_t field, uint64_t v,
		     const char *str)
{
	struct pbuf one;

	pbuf__init(&one);
	pb__field_string(&one, DA_NAME, name);
	if (str)
		pb__field_string(&one, field, str);
	else
		pb__field_varint(&one, field, v);
	pb__field_message(sub, TE_DEBUG_ANNOTATIONS, &one); /* one's error becomes sub's */
	pbuf__release(&one);
}

/* An instant on the thread with the annotations in t->sub. */
static int annotated_instant(struct perfetto_trace *t, uint32_t pid, uint32_t tid, uint64_t ts,
			     uint32_t iid)
{
	int err = pbuf__err(&t->sub);

	return err ? err : event(t, thread_uuid(pid, tid), ts, TYPE_INSTANT, iid, NULL, &t->sub);
}

/* An instant with DebugAnnotations {name "bytes", uint_value} and {name "addr", pointer_value}. */
static int perfetto_large_alloc(struct trace_sink *s, uint32_t pid, uint32_t tid, uint64_t ts,
				uint32_t iid, const char *name, uint64_t addr, uint64_t size)
{
	struct perfetto_trace *t = pt(s);

	(void)name;
	annotate(&t->sub, "bytes", DA_UINT_VALUE, size, NULL);
	annotate(&t->sub, "addr", DA_POINTER_VALUE, addr, NULL);
	return annotated_instant(t, pid, tid, ts, iid);
}

/* --cpu: an instant on the thread, with DebugAnnotation {name "stack", string_value}. */
static int perfetto_cpu_sample(struct trace_sink *s, uint32_t pid, uint32_t tid, uint64_t ts,
			       uint32_t iid, const char *name, const char *stack)
{
	struct perfetto_trace *t = pt(s);

	(void)name;
	annotate(&t->sub, "stack", DA_STRING_VALUE, 0, stack);
	return annotated_instant(t, pid, tid, ts, iid);
}

/* Each counter: a counter track named after it, and its value at the end. */
static int perfetto_finish(struct trace_sink *s, uint64_t ts, const char *const *names,
			   const uint64_t *values, size_t n)
{
	struct perfetto_trace *t = pt(s);
	int err = 0;

	for (size_t i = 0; !err && i < n; i++) {
		char name[128];

		snprintf(name, sizeof(name), "bpftrace-prof counter: %s", names[i]);
		err = descriptor(t, DROP_UUID_BASE + i, 0, TD_COUNTER, &t->sub, name);
		if (!err)
			err = event(t, DROP_UUID_BASE + i, ts, TYPE_COUNTER, 0, &values[i], NULL);
	}
	if (!err && fflush(t->f))
		err = -EIO;
	return err;
}

static void perfetto_free(struct trace_sink *s)
{
	struct perfetto_trace *t = pt(s);

	if (!t)
		return;
	for (size_t i = 0; i < t->npending; i++)
		free(t->pending[i].name);
	free(t->pending);
	hashmap__free(t->heap_tracks);
	pbuf__release(&t->pkt);
	pbuf__release(&t->msg);
	pbuf__release(&t->sub);
	free(t);
}

static const struct trace_sink_ops perfetto_ops = {
	.process = perfetto_process,
	.thread = perfetto_thread,
	.name = perfetto_name,
	.begin = perfetto_begin,
	.end = perfetto_end,
	.instant = perfetto_instant,
	.finish = perfetto_finish,
	.free = perfetto_free,
	.heap_in_use = perfetto_heap_in_use,
	.large_alloc = perfetto_large_alloc,
	.cpu_sample = perfetto_cpu_sample,
};

int perfetto_trace__new(struct trace_sink **out, FILE *f)
{
	struct perfetto_trace *t = calloc(1, sizeof(*t));
	int err;

	if (!t)
		return -ENOMEM;
	t->sink.ops = &perfetto_ops;
	t->f = f;
	pbuf__init(&t->pkt);
	pbuf__init(&t->msg);
	pbuf__init(&t->sub);
	err = hashmap__new(&t->heap_tracks, sizeof(uint32_t), sizeof(uint8_t));
	if (err) {
		perfetto_free(&t->sink);
		return err;
	}
	/* The sequence starts from a clean incremental state (no names interned yet). */
	pb__field_varint(&t->pkt, PKT_SEQUENCE_FLAGS, SEQ_INCREMENTAL_STATE_CLEARED);
	err = emit(t);
	if (err) {
		perfetto_free(&t->sink);
		return err;
	}
	*out = &t->sink;
	return 0;
}
