// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
#include "trace/memtrace.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "util/hashmap.h"

static void put16(uint8_t *p, uint16_t v)
{
	p[0] = (uint8_t)v;
	p[1] = (uint8_t)(v >> 8);
}

static void put32(uint8_t *p, uint32_t v)
{
	for (int i = 0; i < 4; i++)
		p[i] = (uint8_t)(v >> (8 * i));
}

static void put64(uint8_t *p, uint64_t v)
{
	for (int i = 0; i < 8; i++)
		p[i] = (uint8_t)(v >> (8 * i));
}

static uint64_t getn(const uint8_t *p, unsigned n)
{
	uint64_t v = 0;

	for (unsigned i = 0; i < n; i++)
		v |= (uint64_t)p[i] << (8 * i);
	return v;
}

size_t memtrace__put_vint(uint8_t *buf, uint64_t v)
{
	if (v <= 252) {
		buf[0] = (uint8_t)v;
		return 1;
	}
	if (v <= 0xFFFF) {
		buf[0] = 253;
		put16(buf + 1, (uint16_t)v);
		return 3;
	}
	/* memtrace's own writer reads a u32 vint as signed: larger values take 8 bytes. */
	if (v <= 0x7FFFFFFF) {
		buf[0] = 254;
		put32(buf + 1, (uint32_t)v);
		return 5;
	}
	buf[0] = 255;
	put64(buf + 1, v);
	return 9;
}

int memtrace__get_vint(uint64_t *out, size_t *used, const uint8_t *buf, size_t len)
{
	static const unsigned extra[] = {2, 4, 8};
	unsigned n;

	if (!len)
		return -EBADMSG;
	if (buf[0] <= 252) {
		*out = buf[0];
		*used = 1;
		return 0;
	}
	n = extra[buf[0] - 253];
	if (len < 1 + n)
		return -EBADMSG;
	*out = getn(buf + 1, n);
	*used = 1 + n;
	return 0;
}

void memtrace__put_header(uint8_t out[MEMTRACE_HEADER_SIZE], const struct memtrace_header *h)
{
	put32(out, MEMTRACE_MAGIC);
	put32(out + 4, h->packet_bits);
	put64(out + 8, h->ts_begin);
	put64(out + 16, h->ts_end);
	put32(out + 24, h->flush_duration);
	put16(out + 28, MEMTRACE_VERSION);
	put64(out + 30, h->pid);
	put16(out + 38, h->domain);
	put16(out + 40, h->verify_ix);
	put16(out + 42, h->verify_pred);
	put64(out + 44, h->verify_val);
	put64(out + 52, h->alloc_id_begin);
	put64(out + 60, h->alloc_id_end);
}

int memtrace__get_header(struct memtrace_header *out, size_t *used, const uint8_t *buf, size_t len)
{
	struct memtrace_header h = {0};
	size_t off, size;

	if (len < 30 || getn(buf, 4) != MEMTRACE_MAGIC)
		return -EBADMSG;
	h.packet_bits = (uint32_t)getn(buf + 4, 4);
	h.ts_begin = getn(buf + 8, 8);
	h.ts_end = getn(buf + 16, 8);
	h.flush_duration = (uint32_t)getn(buf + 24, 4);
	h.version = (uint16_t)getn(buf + 28, 2);
	if (h.version > MEMTRACE_VERSION)
		return -ENOTSUP;
	size = h.version >= 3 ? MEMTRACE_HEADER_SIZE : MEMTRACE_HEADER_SIZE - 2;
	if (len < size)
		return -EBADMSG;
	h.pid = getn(buf + 30, 8);
	off = 38;
	if (h.version >= 3) {
		h.domain = (uint16_t)getn(buf + off, 2);
		off += 2;
	}
	h.verify_ix = (uint16_t)getn(buf + off, 2);
	h.verify_pred = (uint16_t)getn(buf + off + 2, 2);
	h.verify_val = getn(buf + off + 4, 8);
	h.alloc_id_begin = getn(buf + off + 12, 8);
	h.alloc_id_end = getn(buf + off + 20, 8);
	if (h.packet_bits % 8 || h.packet_bits / 8 < size || h.ts_begin > h.ts_end ||
	    h.alloc_id_begin > h.alloc_id_end)
		return -EBADMSG;
	*out = h;
	*used = size;
	return 0;
}

static uint64_t clamp(uint64_t v, uint64_t max)
{
	return v > max ? max : v;
}

uint64_t memtrace__pack_loc(uint32_t line, uint32_t start_char, uint32_t end_char,
			    unsigned file_code, unsigned def_code)
{
	return clamp(line, 0xFFFFF) | clamp(start_char, 0xFF) << 20 | clamp(end_char, 0x3FF) << 28 |
	       clamp(file_code, 0x1F) << 38 | clamp(def_code, 0x1F) << 43;
}

void memtrace__unpack_loc(uint64_t bits, uint32_t *line, uint32_t *start_char, uint32_t *end_char,
			  unsigned *file_code, unsigned *def_code)
{
	*line = bits & 0xFFFFF;
	*start_char = (bits >> 20) & 0xFF;
	*end_char = (bits >> 28) & 0x3FF;
	*file_code = (bits >> 38) & 0x1F;
	*def_code = (bits >> 43) & 0x1F;
}

void memtrace_mtf__free(struct memtrace_mtf *t)
{
	if (!t)
		return;
	for (unsigned i = 0; i < t->n; i++) {
		free(t->name[i]);
		memtrace_mtf__free(t->sub[i]);
	}
	free(t);
}

static void to_front(struct memtrace_mtf *t, unsigned i)
{
	char *name = t->name[i];
	struct memtrace_mtf *sub = t->sub[i];

	memmove(&t->name[1], &t->name[0], i * sizeof(t->name[0]));
	memmove(&t->sub[1], &t->sub[0], i * sizeof(t->sub[0]));
	t->name[0] = name;
	t->sub[0] = sub;
}

/* Push (name, sub) in front; the last entry, if the table was full, is handed back. */
static void push(struct memtrace_mtf *t, char *name, struct memtrace_mtf *sub, char **old_name,
		 struct memtrace_mtf **old_sub)
{
	*old_name = NULL;
	*old_sub = NULL;
	if (t->n == MEMTRACE_MTF_LEN) {
		*old_name = t->name[t->n - 1];
		*old_sub = t->sub[t->n - 1];
		t->n--;
	}
	memmove(&t->name[1], &t->name[0], t->n * sizeof(t->name[0]));
	memmove(&t->sub[1], &t->sub[0], t->n * sizeof(t->sub[0]));
	t->name[0] = name;
	t->sub[0] = sub;
	t->n++;
}

int memtrace_mtf__encode(struct memtrace_mtf *t, const char *s, bool with_sub)
{
	struct memtrace_mtf *sub = NULL, *old_sub;
	char *name, *old_name;

	for (unsigned i = 0; i < t->n; i++)
		if (!strcmp(t->name[i], s)) {
			to_front(t, i);
			return (int)i;
		}
	name = strdup(s);
	if (with_sub)
		sub = calloc(1, sizeof(*sub));
	if (!name || (with_sub && !sub)) {
		free(name);
		free(sub);
		return -ENOMEM;
	}
	push(t, name, sub, &old_name, &old_sub);
	free(old_name);
	memtrace_mtf__free(old_sub);
	return MEMTRACE_MTF_LEN;
}

int memtrace_mtf__decode(struct memtrace_mtf_entry_ref *out, struct memtrace_mtf *t, unsigned code,
			 const char *s, bool with_sub)
{
	struct memtrace_mtf *sub = NULL, *old_sub;
	char *name, *old_name;

	if (code < MEMTRACE_MTF_LEN) {
		if (code >= t->n)
			return -EBADMSG;
		to_front(t, code);
	} else {
		bool full = t->n == MEMTRACE_MTF_LEN;

		name = strdup(s);
		if (!name)
			return -ENOMEM;
		/* memtrace's reader hands the new file the function table of the one pushed
		 * off (its first encoder relied on it); the current encoder never does. */
		if (with_sub && full) {
			sub = t->sub[t->n - 1];
			t->sub[t->n - 1] = NULL;
		} else if (with_sub) {
			sub = calloc(1, sizeof(*sub));
			if (!sub) {
				free(name);
				return -ENOMEM;
			}
		}
		push(t, name, sub, &old_name, &old_sub);
		free(old_name);
		memtrace_mtf__free(old_sub);
	}
	out->name = t->name[0];
	out->sub = t->sub[0];
	return 0;
}

uint64_t memtrace__loc_code(const char *file, const char *function, uint32_t line)
{
	uint64_t h = 0xcbf29ce484222325ull;
	const char *parts[2] = {file ? file : "", function ? function : ""};
	uint8_t lb[4];

	for (int i = 0; i < 2; i++)
		for (const char *c = parts[i];; c++) {
			h = (h ^ (uint8_t)*c) * 0x100000001b3ull;
			if (!*c)
				break;
		}
	put32(lb, line);
	for (int i = 0; i < 4; i++)
		h = (h ^ lb[i]) * 0x100000001b3ull;
	return h & MEMTRACE_CODE_MASK;
}

/* Writer. */

struct memtrace_writer {
	FILE *f;
	uint64_t pid;
	uint8_t pkt[MEMTRACE_MAX_PACKET];
	size_t len;		 /* bytes of pkt used (the header's room included) */
	uint64_t ts_begin, last; /* the packet's first event time; the last event's */
	uint64_t id_begin, next_id;
	bool events; /* the packet holds events */
	struct memtrace_mtf files;
	struct hashmap *codes; /* location codes given (uint64_t -> uint8_t) */
	uint8_t *locs;	       /* queued location bodies, each after a u16 length */
	size_t nlocs, locs_cap;
	long ctx_off; /* file offset of the context string; -1: cannot rewrite */
	size_t ctx_room;
};

static int write_all(FILE *f, const void *buf, size_t len)
{
	if (fwrite(buf, 1, len, f) != len)
		return errno ? -errno : -EIO;
	return 0;
}

static size_t put_str(uint8_t *p, const char *s, size_t max)
{
	size_t n = s ? strlen(s) : 0;

	if (n > max)
		n = max;
	if (n)
		memcpy(p, s, n);
	p[n] = 0;
	return n + 1;
}

#define MEMTRACE_STR_MAX 4000 /* executable, host, runtime parameters in trace_info */

int memtrace_writer__new(struct memtrace_writer **out, FILE *f,
			 const struct memtrace_writer_opts *o)
{
	struct memtrace_writer *w = calloc(1, sizeof(*w));
	struct memtrace_header h = {0};
	uint8_t *p;
	size_t n, ctx_len;
	long start;
	uint64_t bits;
	int err;

	if (!w)
		return -ENOMEM;
	err = hashmap__new(&w->codes, sizeof(uint64_t), sizeof(uint8_t));
	if (err)
		goto cleanup;
	w->f = f;
	w->pid = o->pid;
	w->last = o->start_us;
	w->ts_begin = o->start_us;
	w->len = MEMTRACE_HEADER_SIZE;
	ctx_len = o->context ? strlen(o->context) : 0;
	if (ctx_len > MEMTRACE_STR_MAX)
		ctx_len = MEMTRACE_STR_MAX;
	w->ctx_room = o->context_room > ctx_len ? o->context_room : ctx_len;
	if (w->ctx_room > MEMTRACE_STR_MAX)
		w->ctx_room = MEMTRACE_STR_MAX;

	/* trace_info, alone in the first packet. */
	p = w->pkt + MEMTRACE_HEADER_SIZE;
	put32(p, (uint32_t)(MEMTRACE_EV_TRACE_INFO << MEMTRACE_TIME_BITS) |
			 (uint32_t)(o->start_us & ((1u << MEMTRACE_TIME_BITS) - 1)));
	p += 4;
	memcpy(&bits, &o->sample_rate, sizeof(bits));
	put64(p, bits);
	p += 8;
	*p++ = o->word_size;
	p += put_str(p, o->executable, MEMTRACE_STR_MAX);
	p += put_str(p, o->host, MEMTRACE_STR_MAX);
	p += put_str(p, o->runtime_params, MEMTRACE_STR_MAX);
	put64(p, o->pid);
	p += 8;
	n = (size_t)(p - w->pkt);
	memset(p, ' ', w->ctx_room);
	if (ctx_len)
		memcpy(p, o->context, ctx_len);
	p[w->ctx_room] = 0;
	p += w->ctx_room + 1;
	h.packet_bits = (uint32_t)((p - w->pkt) * 8);
	h.ts_begin = h.ts_end = o->start_us;
	h.pid = o->pid;
	h.verify_ix = MEMTRACE_NO_VERIFIER;
	memtrace__put_header(w->pkt, &h);
	start = ftell(f);
	w->ctx_off = start >= 0 ? start + (long)n : -1;
	err = write_all(f, w->pkt, (size_t)(p - w->pkt));
	if (err)
		goto cleanup;
	*out = w;
	return 0;
cleanup:
	memtrace_writer__free(w);
	return err;
}

void memtrace_writer__free(struct memtrace_writer *w)
{
	if (!w)
		return;
	for (unsigned i = 0; i < w->files.n; i++) {
		free(w->files.name[i]);
		memtrace_mtf__free(w->files.sub[i]);
	}
	hashmap__free(w->codes);
	free(w->locs);
	free(w);
}

uint64_t memtrace_writer__allocs(const struct memtrace_writer *w)
{
	return w->next_id;
}

bool memtrace_writer__has_location(const struct memtrace_writer *w, uint64_t code)
{
	return hashmap__find(w->codes, &code) != NULL;
}

static int locs_reserve(struct memtrace_writer *w, size_t more)
{
	uint8_t *n;
	size_t cap;

	if (w->nlocs + more <= w->locs_cap)
		return 0;
	cap = w->locs_cap ? w->locs_cap : 8192;
	while (cap < w->nlocs + more)
		cap *= 2;
	n = realloc(w->locs, cap);
	if (!n)
		return -ENOMEM;
	w->locs = n;
	w->locs_cap = cap;
	return 0;
}

int memtrace_writer__location(struct memtrace_writer *w, uint64_t code,
			      const struct memtrace_loc *locs, unsigned n)
{
	static const struct memtrace_loc unknown = {"<unknown>", "??", 1};
	size_t worst = 9, len;
	uint8_t *body, *p;
	bool created;
	uint8_t *seen;
	int err;

	if (memtrace_writer__has_location(w, code))
		return 0;
	for (unsigned i = 0; i < n; i++)
		worst += 6 + strlen(locs[i].file ? locs[i].file : "") + 1 +
			 strlen(locs[i].defname ? locs[i].defname : "") + 1;
	/* memtrace's rule: a record that could outgrow its bound says "unknown" instead. */
	if (n > 255 || worst > MEMTRACE_LOC_MAX) {
		locs = &unknown;
		n = 1;
		worst = 9 + 6 + strlen(unknown.file) + 1 + strlen(unknown.defname) + 1;
	}
	err = locs_reserve(w, 2 + worst);
	if (err)
		return err;
	err = hashmap__upsert(w->codes, (void **)&seen, &code, &created);
	if (err)
		return err;
	body = p = w->locs + w->nlocs + 2;
	put64(p, code);
	p += 8;
	*p++ = (uint8_t)n;
	for (unsigned i = 0; i < n; i++) {
		const char *file = locs[i].file ? locs[i].file : "";
		const char *def = locs[i].defname ? locs[i].defname : "";
		struct memtrace_mtf *defs;
		uint64_t bits;
		int fc, dc;

		fc = memtrace_mtf__encode(&w->files, file, true);
		if (fc < 0)
			return fc;
		defs = w->files.sub[0];
		dc = memtrace_mtf__encode(defs, def, false);
		if (dc < 0)
			return dc;
		bits = memtrace__pack_loc(locs[i].line, 0, 0, (unsigned)fc, (unsigned)dc);
		put32(p, (uint32_t)bits);
		put16(p + 4, (uint16_t)(bits >> 32));
		p += 6;
		if (fc == MEMTRACE_MTF_LEN)
			p += put_str(p, file, MEMTRACE_LOC_MAX);
		if (dc == MEMTRACE_MTF_LEN)
			p += put_str(p, def, MEMTRACE_LOC_MAX);
	}
	len = (size_t)(p - body);
	put16(w->locs + w->nlocs, (uint16_t)len);
	w->nlocs += 2 + len;
	*seen = 1;
	return 0;
}

static void event_header(uint8_t *p, unsigned code, uint64_t ts)
{
	put32(p, (uint32_t)code << MEMTRACE_TIME_BITS |
			 (uint32_t)(ts & ((1u << MEMTRACE_TIME_BITS) - 1)));
}

static int write_packet(struct memtrace_writer *w, uint8_t *pkt, size_t len, uint64_t ts_begin,
			uint64_t ts_end, uint64_t id_begin, uint64_t id_end)
{
	struct memtrace_header h = {
		.packet_bits = (uint32_t)(len * 8),
		.ts_begin = ts_begin,
		.ts_end = ts_end,
		.pid = w->pid,
		.verify_ix = MEMTRACE_NO_VERIFIER,
		.alloc_id_begin = id_begin,
		.alloc_id_end = id_end,
	};

	memtrace__put_header(pkt, &h);
	return write_all(w->f, pkt, len);
}

int memtrace_writer__flush(struct memtrace_writer *w)
{
	uint64_t t = w->events ? w->ts_begin : w->last;
	uint8_t *lp = NULL;
	size_t off = 0;
	int err = 0;

	/* Locations first: the reader must know them before an event names them. */
	if (w->nlocs) {
		lp = malloc(MEMTRACE_MAX_PACKET);
		if (!lp)
			return -ENOMEM;
	}
	while (off < w->nlocs) {
		size_t len = MEMTRACE_HEADER_SIZE;

		while (off < w->nlocs) {
			size_t n = (size_t)getn(w->locs + off, 2);

			if (len + 4 + n > MEMTRACE_MAX_PACKET)
				break;
			event_header(lp + len, MEMTRACE_EV_LOCATION, t);
			memcpy(lp + len + 4, w->locs + off + 2, n);
			len += 4 + n;
			off += 2 + n;
		}
		err = write_packet(w, lp, len, t, t, w->id_begin, w->id_begin);
		if (err)
			goto cleanup;
	}
	w->nlocs = 0;
	if (w->events) {
		err = write_packet(w, w->pkt, w->len, w->ts_begin, w->last, w->id_begin,
				   w->next_id);
		if (err)
			goto cleanup;
	}
	w->events = false;
	w->len = MEMTRACE_HEADER_SIZE;
	w->id_begin = w->next_id;
cleanup:
	free(lp);
	return err;
}

/* Room for an event of size bytes at ts in the current packet, flushing it if need be. */
static int begin_event(struct memtrace_writer *w, uint64_t *ts, size_t size)
{
	int err;

	if (*ts < w->last)
		*ts = w->last; /* the clock went back: events stay in order */
	if (w->events && (w->len + size > MEMTRACE_MAX_PACKET ||
			  *ts - w->ts_begin >= MEMTRACE_PACKET_SPAN || w->nlocs > 65536)) {
		err = memtrace_writer__flush(w);
		if (err)
			return err;
	}
	if (!w->events) {
		w->ts_begin = *ts;
		w->events = true;
	}
	w->last = *ts;
	return 0;
}

/* Codes that fit one packet with the alloc's fixed part. */
#define MEMTRACE_MAX_CODES ((MEMTRACE_MAX_PACKET - MEMTRACE_HEADER_SIZE - 64) / 10)

int memtrace_writer__alloc(struct memtrace_writer *w, uint64_t *id, uint64_t ts_us, uint64_t length,
			   uint64_t nsamples, enum memtrace_source src, const uint64_t *codes,
			   unsigned ncodes)
{
	uint8_t *p;
	size_t size;
	int err;

	if (ncodes > MEMTRACE_MAX_CODES) {
		/* Keep the leaf end: codes are root first. */
		codes += ncodes - MEMTRACE_MAX_CODES;
		ncodes = MEMTRACE_MAX_CODES;
	}
	size = 4 + 9 + 9 + 1 + 1 + 2 + (size_t)ncodes * 10;
	err = begin_event(w, &ts_us, size);
	if (err)
		return err;
	p = w->pkt + w->len;
	event_header(p, MEMTRACE_EV_ALLOC, ts_us);
	p += 4;
	p += memtrace__put_vint(p, length);
	p += memtrace__put_vint(p, nsamples);
	*p++ = (uint8_t)src;
	p += memtrace__put_vint(p, 0); /* common prefix: none, every code is written */
	put16(p, (uint16_t)ncodes);
	p += 2;
	for (unsigned i = 0; i < ncodes; i++) {
		/* A miss (tag 3) into any bucket: the reader just stores the code there. */
		put16(p, (uint16_t)((codes[i] & (MEMTRACE_CACHE_SIZE - 1)) << 2 | 3));
		put64(p + 2, codes[i]);
		p += 10;
	}
	w->len = (size_t)(p - w->pkt);
	*id = w->next_id++;
	return 0;
}

int memtrace_writer__collect(struct memtrace_writer *w, uint64_t ts_us, uint64_t id)
{
	uint8_t *p;
	int err;

	if (id >= w->next_id)
		return -EINVAL;
	err = begin_event(w, &ts_us, 4 + 9);
	if (err)
		return err;
	p = w->pkt + w->len;
	event_header(p, MEMTRACE_EV_COLLECT, ts_us);
	p += 4;
	p += memtrace__put_vint(p, w->next_id - 1 - id);
	w->len = (size_t)(p - w->pkt);
	return 0;
}

int memtrace_writer__finish(struct memtrace_writer *w, const char *context)
{
	uint8_t buf[MEMTRACE_STR_MAX];
	size_t n;
	long end;
	int err;

	err = memtrace_writer__flush(w);
	if (err || !context || w->ctx_off < 0)
		return err;
	if (fflush(w->f))
		return -errno;
	end = ftell(w->f);
	if (end < 0 || fseek(w->f, w->ctx_off, SEEK_SET))
		return 0; /* not seekable (a pipe): the first context stays */
	n = strnlen(context, w->ctx_room);
	memset(buf, ' ', w->ctx_room);
	memcpy(buf, context, n);
	err = write_all(w->f, buf, w->ctx_room);
	if (!err && fseek(w->f, end, SEEK_SET))
		err = -errno;
	return err;
}
