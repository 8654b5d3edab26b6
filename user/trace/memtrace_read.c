// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
#include "trace/memtrace_read.h"

#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

#include "profile/build.h"
#include "profile/heap_profile.h"
#include "profile/profile.h"
#include "trace/memtrace.h"
#include "util/hashmap.h"

/* Bounds on what a foreign trace may make us hold. */
#define MAX_DOMAINS   64
#define MAX_BACKTRACE (1u << 20) /* frames of one decoded backtrace */
/* Locations of one profile stack, leaf first: a longer backtrace loses its root end (counted),
 * so that one allocation costs a bounded amount whatever prefix it shares. */
#define MAX_STACK     1024

struct cursor {
	const uint8_t *p;
	size_t len, pos;
};

/* Per domain: memtrace keeps string tables, the backtrace cache and the clock per domain. */
struct domain {
	uint16_t id;
	struct memtrace_mtf files;
	uint64_t cache_loc[MEMTRACE_CACHE_SIZE];
	uint16_t cache_pred[MEMTRACE_CACHE_SIZE];
	uint64_t *bt; /* the last backtrace, root first */
	uint32_t bt_len, bt_cap;
	uint64_t last_ts;
};

/* A location code's profile locations: pool[first .. first + n), outermost first. */
struct code_locs {
	uint32_t first, n;
};

/* A live object: its sample and the values it added there. */
struct live_obj {
	uint32_t sample;
	uint32_t pad;
	double objects, bytes;
};

struct reader {
	FILE *f;
	char *msg;
	size_t msglen;
	uint64_t offset; /* of the current packet, for messages */
	struct profile *p;
	struct memtrace_read_stats st;
	double sample_rate;
	unsigned word_size;
	uint64_t pid, start, end;
	const char *comm;
	bool at;
	uint64_t at_us;
	double at_s;
	struct domain *doms[MAX_DOMAINS];
	unsigned ndoms;
	struct hashmap *codes; /* uint64_t code -> struct code_locs */
	uint32_t *pool;
	uint32_t npool, cap_pool;
	struct hashmap *live; /* uint64_t obj id -> struct live_obj */
	struct acc *acc;      /* per profile sample: the values before rounding */
	uint32_t cap_acc;
	double inuse, peak;	/* bytes live now, and the most at once */
	uint64_t seq, peak_seq; /* changes of live bytes, and the one that made the peak */
	uint64_t *scratch;	/* backtrace decoded and dropped (see decode_backtrace) */
	uint32_t scratch_cap;
	uint32_t *stack; /* profile locations of one allocation, leaf first */
	uint32_t cap_stack;
	uint8_t pkt[MEMTRACE_MAX_PACKET];
};

__attribute__((format(printf, 2, 3))) static int bad(struct reader *r, const char *fmt, ...)
{
	va_list ap;
	int n;

	if (r->msg && r->msglen && !r->msg[0]) {
		n = snprintf(r->msg, r->msglen, "malformed memtrace at packet offset %" PRIu64 ": ",
			     r->offset);
		va_start(ap, fmt);
		if (n >= 0 && (size_t)n < r->msglen)
			vsnprintf(r->msg + n, r->msglen - (size_t)n, fmt, ap);
		va_end(ap);
	}
	return -EBADMSG;
}

static int need(struct cursor *c, size_t n)
{
	return c->len - c->pos >= n ? 0 : -EBADMSG;
}

static uint64_t rd(struct cursor *c, unsigned n)
{
	uint64_t v = 0;

	for (unsigned i = 0; i < n; i++)
		v |= (uint64_t)c->p[c->pos + i] << (8 * i);
	c->pos += n;
	return v;
}

static int get(struct reader *r, struct cursor *c, uint64_t *v, unsigned n, const char *what)
{
	if (need(c, n))
		return bad(r, "%s cut short", what);
	*v = rd(c, n);
	return 0;
}

static int get_vint(struct reader *r, struct cursor *c, uint64_t *v, const char *what)
{
	size_t used;

	if (memtrace__get_vint(v, &used, c->p + c->pos, c->len - c->pos))
		return bad(r, "%s cut short", what);
	c->pos += used;
	return 0;
}

static int get_str(struct reader *r, struct cursor *c, const char **s, const char *what)
{
	const uint8_t *end = memchr(c->p + c->pos, 0, c->len - c->pos);

	if (!end)
		return bad(r, "%s: string without its end", what);
	*s = (const char *)c->p + c->pos;
	c->pos = (size_t)(end - c->p) + 1;
	return 0;
}

/* One packet into r->pkt: 1 at the end of the file, 0, or -EBADMSG / -EIO. */
static int read_packet(struct reader *r, struct memtrace_header *h, struct cursor *content)
{
	uint8_t *b = r->pkt;
	size_t got, hlen, want;
	int err;

	got = fread(b, 1, 30, r->f);
	if (got == 0 && feof(r->f))
		return 1;
	if (ferror(r->f))
		return -EIO;
	if (got < 30)
		return bad(r, "truncated packet header");
	want = (b[28] | b[29] << 8) >= 3 ? MEMTRACE_HEADER_SIZE : MEMTRACE_HEADER_SIZE - 2;
	if (fread(b + 30, 1, want - 30, r->f) != want - 30)
		return ferror(r->f) ? -EIO : bad(r, "truncated packet header");
	err = memtrace__get_header(h, &hlen, b, want);
	if (err == -ENOTSUP)
		return bad(r, "format version %u is newer than %u", b[28] | b[29] << 8,
			   MEMTRACE_VERSION);
	if (err)
		return bad(r, "not a memtrace packet header (magic, size, times or ids)");
	if (h->packet_bits / 8 > MEMTRACE_MAX_PACKET)
		return bad(r, "packet of %u bytes (at most %u)", h->packet_bits / 8,
			   MEMTRACE_MAX_PACKET);
	want = h->packet_bits / 8 - hlen;
	if (fread(b + hlen, 1, want, r->f) != want)
		return ferror(r->f) ? -EIO : bad(r, "truncated packet");
	content->p = b + hlen;
	content->len = want;
	content->pos = 0;
	return 0;
}

static int event_header(struct reader *r, struct cursor *c, const struct memtrace_header *h,
			unsigned *code, uint64_t *ts)
{
	const uint64_t mask = (1u << MEMTRACE_TIME_BITS) - 1;
	uint64_t v, low, start_low;
	int err;

	err = get(r, c, &v, 4, "event header");
	if (err)
		return err;
	*code = (unsigned)(v >> MEMTRACE_TIME_BITS);
	low = v & mask;
	start_low = h->ts_begin & mask;
	if (low < start_low)
		low += 1ull << MEMTRACE_TIME_BITS; /* the low bits wrapped within the packet */
	*ts = (h->ts_begin & ~mask) + low;
	if (*ts < h->ts_begin || *ts > h->ts_end)
		return bad(r, "event time outside its packet");
	return 0;
}

static int trace_info(struct reader *r, const struct memtrace_header *h, struct cursor *c)
{
	const char *exe = "", *host = "", *params = "", *ctx = "", *base;
	uint64_t bits, v;
	unsigned code;
	uint64_t ts;
	int err;

	err = event_header(r, c, h, &code, &ts);
	if (err)
		return err;
	if (code != MEMTRACE_EV_TRACE_INFO || ts != h->ts_begin)
		return bad(r, "the first event is not trace_info");
	err = get(r, c, &bits, 8, "trace_info");
	if (!err)
		err = get(r, c, &v, 1, "trace_info");
	if (err)
		return err;
	memcpy(&r->sample_rate, &bits, sizeof(bits));
	r->word_size = (unsigned)v;
	if (!(r->sample_rate > 0 && r->sample_rate <= 1) || !r->word_size || r->word_size > 64)
		return bad(r, "sample rate %g or word size %u out of range", r->sample_rate,
			   r->word_size);
	err = get_str(r, c, &exe, "executable");
	if (!err)
		err = get_str(r, c, &host, "host");
	if (!err)
		err = get_str(r, c, &params, "runtime parameters");
	if (!err)
		err = get(r, c, &r->pid, 8, "trace_info pid");
	if (!err && h->version >= 2)
		err = get_str(r, c, &ctx, "context");
	if (err)
		return err;
	if (c->pos != c->len)
		return bad(r, "bytes after trace_info");
	r->start = r->end = h->ts_begin;
	base = strrchr(exe, '/');
	r->comm = profile__intern(r->p, base ? base + 1 : exe);
	if (!r->comm)
		return -ENOMEM;
	if (profile__add_comment(r->p, "memtrace of %s (pid %" PRIu64 ") on %s", exe, r->pid,
				 host) ||
	    (*ctx && profile__add_comment(r->p, "memtrace context: %s", ctx)))
		return -ENOMEM;
	return 0;
}

static int domain_of(struct reader *r, struct domain **out, uint16_t id)
{
	struct domain *d = NULL;

	for (unsigned i = 0; i < r->ndoms; i++)
		if (r->doms[i]->id == id) {
			*out = r->doms[i];
			return 0;
		}
	if (r->ndoms == MAX_DOMAINS)
		return bad(r, "more than %d domains", MAX_DOMAINS);
	d = calloc(1, sizeof(*d));
	if (!d)
		return -ENOMEM;
	d->id = id;
	d->last_ts = r->start;
	r->doms[r->ndoms++] = d;
	*out = d;
	return 0;
}

static void domain_free(struct domain *d)
{
	for (unsigned i = 0; i < d->files.n; i++) {
		free(d->files.name[i]);
		memtrace_mtf__free(d->files.sub[i]);
	}
	free(d->bt);
	free(d);
}

static int grow(void **arr, uint32_t *cap, uint32_t need_n, size_t elem)
{
	uint32_t n;
	void *a;

	if (need_n <= *cap)
		return 0;
	n = *cap ? *cap : 64;
	while (n < need_n)
		n *= 2;
	a = realloc(*arr, (size_t)n * elem);
	if (!a)
		return -ENOMEM;
	*arr = a;
	*cap = n;
	return 0;
}

/* The profile location of one memtrace location. */
static int profile_loc(struct reader *r, uint32_t *out, const char *file, const char *def,
		       uint32_t line)
{
	uint32_t fn;
	int err;

	err = profile__function(r->p, &fn, def, def, file, 0);
	if (!err)
		err = profile__location(r->p, out, 0, 0, fn, line);
	return err;
}

static int location(struct reader *r, struct domain *d, struct cursor *c)
{
	struct code_locs cl, *old;
	uint64_t code, n, lo, hi;
	bool created;
	int err;

	err = get(r, c, &code, 8, "location code");
	if (!err)
		err = get(r, c, &n, 1, "location count");
	if (err)
		return err;
	cl.first = r->npool;
	cl.n = (uint32_t)n;
	err = grow((void **)&r->pool, &r->cap_pool, r->npool + cl.n, sizeof(*r->pool));
	if (err)
		return err;
	for (uint32_t i = 0; i < cl.n; i++) {
		struct memtrace_mtf_entry_ref file, def;
		uint32_t line, sc, ec;
		unsigned fc, dc;
		const char *s = NULL;

		err = get(r, c, &lo, 4, "location");
		if (!err)
			err = get(r, c, &hi, 2, "location");
		if (err)
			return err;
		memtrace__unpack_loc(lo | hi << 32, &line, &sc, &ec, &fc, &dc);
		if (fc == MEMTRACE_MTF_LEN && (err = get_str(r, c, &s, "file name")))
			return err;
		err = memtrace_mtf__decode(&file, &d->files, fc, s, true);
		if (err == -EBADMSG)
			return bad(r, "file name code %u names no string yet", fc);
		if (err)
			return err;
		s = NULL;
		if (dc == MEMTRACE_MTF_LEN && (err = get_str(r, c, &s, "function name")))
			return err;
		err = memtrace_mtf__decode(&def, file.sub, dc, s, false);
		if (err == -EBADMSG)
			return bad(r, "function name code %u names no string yet", dc);
		if (err)
			return err;
		err = profile_loc(r, &r->pool[r->npool + i], file.name, def.name, line);
		if (err)
			return err;
	}
	err = hashmap__upsert(r->codes, (void **)&old, &code, &created);
	if (err)
		return err;
	if (created) {
		*old = cl;
		r->npool += cl.n;
		r->st.locations++;
		return 0;
	}
	/* A code described again must say the same (memtrace checks it too). */
	if (old->n != cl.n ||
	    memcmp(&r->pool[old->first], &r->pool[cl.first], cl.n * sizeof(*r->pool)))
		return bad(r, "location %#" PRIx64 " described twice, differently", code);
	return 0;
}

static int bt_put(struct reader *r, uint64_t **buf, uint32_t *cap, uint32_t pos, uint64_t v)
{
	if (pos >= MAX_BACKTRACE)
		return bad(r, "backtrace longer than %u frames", MAX_BACKTRACE);
	if (grow((void **)buf, cap, pos + 1, sizeof(**buf)))
		return -ENOMEM;
	(*buf)[pos] = v;
	return 0;
}

/* memtrace's backtrace codes (a cache of location codes with predicted successors) into buf
 * from pos on; *end gets the length. */
static int decode_codes(struct reader *r, struct domain *d, struct cursor *c, uint64_t nenc,
			uint64_t **buf, uint32_t *cap, uint32_t pos, uint32_t *end)
{
	uint32_t pred = 0;
	int err;

	for (uint64_t i = 0; i < nenc; i++) {
		uint64_t cw, v, ncorrect = 0;
		uint32_t bucket;

		err = get(r, c, &cw, 2, "backtrace code");
		if (err)
			return err;
		bucket = (uint32_t)(cw >> 2);
		d->cache_pred[pred] = (uint16_t)bucket;
		if ((cw & 3) == 3) {
			err = get(r, c, &v, 8, "backtrace location");
			if (err)
				return err;
			d->cache_loc[bucket] = v;
			err = bt_put(r, buf, cap, pos++, v);
			if (err)
				return err;
			pred = bucket;
			continue;
		}
		ncorrect = cw & 3;
		if (ncorrect == 2 && (err = get(r, c, &ncorrect, 1, "backtrace prediction")))
			return err;
		err = bt_put(r, buf, cap, pos++, d->cache_loc[bucket]);
		pred = bucket;
		for (uint64_t k = 0; !err && k < ncorrect; k++) {
			pred = d->cache_pred[pred];
			err = bt_put(r, buf, cap, pos++, d->cache_loc[pred]);
		}
		if (err)
			return err;
	}
	*end = pos;
	return 0;
}

/*
 * A sample's values as heap_profile's (alloc, in use, and in use at the trace's peak) and the
 * change of its in-use values that came last: unchanged since the peak, they are its peak's.
 */
struct acc {
	double v[6];
	uint64_t changed;
};

static int values_of(struct reader *r, uint32_t sample, double objects, double bytes, int sign,
		     bool alloc)
{
	uint32_t old = r->cap_acc;
	int err = grow((void **)&r->acc, &r->cap_acc, r->p->nsamples, sizeof(*r->acc));
	struct acc *a;

	if (err)
		return err;
	memset(r->acc + old, 0, (size_t)(r->cap_acc - old) * sizeof(*r->acc));
	a = &r->acc[sample];
	if (alloc) {
		a->v[0] += objects;
		a->v[1] += bytes;
	}
	if (a->changed <= r->peak_seq) {
		a->v[4] = a->v[2];
		a->v[5] = a->v[3];
	}
	a->changed = ++r->seq;
	a->v[2] += sign * objects;
	a->v[3] += sign * bytes;
	r->inuse += sign * bytes;
	if (sign > 0 && r->inuse > r->peak) {
		r->peak = r->inuse;
		r->peak_seq = a->changed;
	}
	return 0;
}

/* The profile stack (leaf first) of backtrace bt[0..n) (root first). */
static int stack_of(struct reader *r, const uint64_t *bt, uint32_t n, uint32_t *nlocs)
{
	uint32_t k = 0;
	int err;

	err = grow((void **)&r->stack, &r->cap_stack, MAX_STACK, sizeof(*r->stack));
	if (err)
		return err;
	for (uint32_t i = n; i-- > 0;) {
		struct code_locs *cl = hashmap__find(r->codes, &bt[i]);

		if (k == MAX_STACK) {
			r->st.cut_stacks++;
			break;
		}
		if (!cl) {
			char name[48];

			/* Named as memtrace prints a code it cannot resolve. */
			snprintf(name, sizeof(name), "$%" PRIu64, bt[i]);
			err = profile_loc(r, &r->stack[k++], "", name, 0);
			if (err)
				return err;
			r->st.unknown_codes++;
			continue;
		}
		for (uint32_t j = cl->n; j-- > 0 && k < MAX_STACK;)
			r->stack[k++] = r->pool[cl->first + j];
	}
	*nlocs = k;
	return 0;
}

static int alloc(struct reader *r, struct domain *d, struct cursor *c, unsigned code, bool apply,
		 uint64_t id)
{
	uint64_t length, nsamples = 1, src = MEMTRACE_SRC_MINOR, prefix, nenc;
	const uint64_t *bt;
	uint32_t n, nlocs = 0;
	int64_t zero[PROFILE_MAX_VALUES] = {0};
	double objects, bytes;
	struct live_obj *lo;
	int err;

	if (code == MEMTRACE_EV_ALLOC) {
		err = get_vint(r, c, &length, "alloc length");
		if (!err)
			err = get_vint(r, c, &nsamples, "alloc samples");
		if (!err)
			err = get(r, c, &src, 1, "alloc source");
		if (err)
			return err;
		if (src > MEMTRACE_SRC_EXTERNAL)
			return bad(r, "allocation source %" PRIu64, src);
	} else {
		length = code - MEMTRACE_EV_SHORT_ALLOC;
	}
	err = get_vint(r, c, &prefix, "common prefix");
	if (!err)
		err = get(r, c, &nenc, code == MEMTRACE_EV_ALLOC ? 2 : 1, "backtrace length");
	if (err)
		return err;
	if (prefix <= d->bt_len) {
		err = decode_codes(r, d, c, nenc, &d->bt, &d->bt_cap, (uint32_t)prefix, &d->bt_len);
	} else {
		/* After a cut backtrace: decode (the cache must follow) and keep the last one,
		 * as memtrace does. */
		err = decode_codes(r, d, c, nenc, &r->scratch, &r->scratch_cap, 0, &n);
	}
	if (err)
		return err;
	bt = d->bt;
	n = d->bt_len;
	r->st.allocs++;
	if (!apply)
		return 0;
	err = stack_of(r, bt, n, &nlocs);
	if (err)
		return err;
	/* Each word is sampled with probability sample_rate: nsamples stand for nsamples /
	 * rate words; objects are those bytes over the block's own size. */
	bytes = (double)nsamples / r->sample_rate * r->word_size;
	objects = (double)nsamples / (r->sample_rate * (double)(length ? length : 1));
	err = profile__add_sample(r->p, (uint32_t)r->pid, (uint32_t)r->pid, r->comm, r->comm,
				  r->stack, nlocs, zero, 0);
	if (!err)
		err = values_of(r, r->p->last_sample, objects, bytes, 1, true);
	if (!err)
		err = hashmap__upsert(r->live, (void **)&lo, &id, NULL);
	if (err)
		return err;
	lo->sample = r->p->last_sample;
	lo->objects = objects;
	lo->bytes = bytes;
	return 0;
}

static int collect(struct reader *r, struct cursor *c, bool apply, uint64_t next_id)
{
	struct live_obj *lo;
	uint64_t delta, id;
	int err;

	err = get_vint(r, c, &delta, "collect");
	if (err)
		return err;
	r->st.collects++;
	if (!apply)
		return 0;
	id = next_id - 1 - delta;
	lo = delta < next_id ? hashmap__find(r->live, &id) : NULL;
	if (!lo) {
		r->st.unknown_collects++;
		return 0;
	}
	err = values_of(r, lo->sample, lo->objects, lo->bytes, -1, false);
	if (!err)
		hashmap__delete(r->live, &id);
	return err;
}

static int packet(struct reader *r, const struct memtrace_header *h, struct cursor *c)
{
	uint64_t id = h->alloc_id_begin, ts, v;
	struct domain *d = NULL;
	unsigned code;
	int err;

	err = domain_of(r, &d, h->domain);
	if (err)
		return err;
	if (h->verify_ix != MEMTRACE_NO_VERIFIER &&
	    (h->verify_ix >= MEMTRACE_CACHE_SIZE || d->cache_pred[h->verify_ix] != h->verify_pred ||
	     d->cache_loc[h->verify_ix] != h->verify_val))
		return bad(r, "backtrace cache verification failed");
	while (c->pos < c->len) {
		bool apply;

		err = event_header(r, c, h, &code, &ts);
		if (err)
			return err;
		if (ts < d->last_ts)
			return bad(r, "event times go backwards");
		d->last_ts = ts;
		if (ts > r->end)
			r->end = ts;
		apply = !r->at || ts - r->start <= r->at_us;
		if (!apply)
			r->st.late_events++;
		switch (code) {
		case MEMTRACE_EV_TRACE_INFO:
			return bad(r, "a second trace_info");
		case MEMTRACE_EV_LOCATION:
			err = location(r, d, c);
			break;
		case MEMTRACE_EV_ALLOC:
			err = alloc(r, d, c, code, apply, id++);
			break;
		case MEMTRACE_EV_PROMOTE:
			err = get_vint(r, c, &v, "promote");
			break;
		case MEMTRACE_EV_COLLECT:
			err = collect(r, c, apply, id);
			break;
		default:
			if (code > MEMTRACE_EV_SHORT_ALLOC &&
			    code <= MEMTRACE_EV_SHORT_ALLOC + 16) {
				err = alloc(r, d, c, code, apply, id++);
				break;
			}
			return bad(r, "unknown event code %u", code);
		}
		if (err)
			return err;
	}
	if (id != h->alloc_id_end)
		return bad(r, "%" PRIu64 " allocations where the header says %" PRIu64,
			   id - h->alloc_id_begin, h->alloc_id_end - h->alloc_id_begin);
	return 0;
}

/*
 * The most a value column adds up to, in magnitude: the estimates come from foreign counts
 * (samples over a rate), and every writer sums values in int64_t.  A column whose estimates go
 * past it has the rest cut (counted): no sum of its values can overflow.
 */
#define MEMTRACE_COLUMN_MAX 4611686018427387904.0 /* 2^62 */

static int finish(struct reader *r)
{
	struct profile *p = r->p;
	double total[6] = {0};
	int err = 0;

	for (uint32_t i = 0; i < p->nsamples && i < r->cap_acc; i++) {
		struct acc *a = &r->acc[i];

		if (a->changed <= r->peak_seq) {
			a->v[4] = a->v[2];
			a->v[5] = a->v[3];
		}
		for (int k = 0; k < 6; k++) {
			double v = a->v[k];
			double room = MEMTRACE_COLUMN_MAX - total[k];

			if (!isfinite(v) || fabs(v) > room) {
				v = v < 0 ? -room : room;
				r->st.clamped_values++;
			}
			total[k] += fabs(v);
			p->samples[i].values[k] = llround(v);
		}
	}
	p->period = llround(fmin(r->word_size / r->sample_rate, MEMTRACE_COLUMN_MAX));
	p->time_nanos = (int64_t)(r->start * 1000);
	p->duration_nanos = (int64_t)((r->end - r->start) * 1000);
	if (r->at)
		err = profile__add_comment(p, "live at %.6f s after the trace's start", r->at_s);
	if (!err)
		err = profile__add_counter(p, "memtrace_unknown_collects",
					   "collect events of objects not live in the trace",
					   r->st.unknown_collects);
	if (!err)
		err = profile__add_counter(p, "memtrace_unknown_codes",
					   "backtrace codes no location event described",
					   r->st.unknown_codes);
	if (!err)
		err = profile__add_counter(p, "memtrace_cut_stacks",
					   "backtraces longer than 1024 locations, root end cut",
					   r->st.cut_stacks);
	if (!err)
		err = profile__add_counter(p, "memtrace_clamped_values",
					   "estimates cut: a column's total would pass 2^62",
					   r->st.clamped_values);
	if (!err)
		err = profile__add_counter(p, "memtrace_foreign_packets",
					   "packets of another pid, skipped",
					   r->st.foreign_packets);
	return err;
}

int memtrace_read__profile(struct profile **out, struct memtrace_read_stats *stats, FILE *f,
			   const struct memtrace_read_opts *o, char *msg, size_t msglen)
{
	struct reader *r = calloc(1, sizeof(*r));
	struct memtrace_header h;
	struct cursor c;
	long pos;
	int err;

	if (!r)
		return -ENOMEM;
	if (msg && msglen)
		msg[0] = 0;
	r->f = f;
	r->msg = msg;
	r->msglen = msglen;
	r->at = o && o->at;
	if (r->at) {
		if (!(o->at_s >= 0 && o->at_s < 1e12)) {
			err = -EINVAL;
			goto cleanup;
		}
		r->at_us = (uint64_t)llround(o->at_s * 1e6);
		r->at_s = o->at_s;
	}
	err = hashmap__new(&r->codes, sizeof(uint64_t), sizeof(struct code_locs));
	if (!err)
		err = hashmap__new(&r->live, sizeof(uint64_t), sizeof(struct live_obj));
	/* --heap's shape, no run of ours; the period is the trace's, known at its end (finish). */
	if (!err)
		err = heap_profile__new(&r->p, &(struct build_inputs){0}, 0);
	if (err)
		goto cleanup;
	err = read_packet(r, &h, &c);
	if (err == 1)
		err = bad(r, "empty file");
	if (!err)
		err = trace_info(r, &h, &c);
	while (!err) {
		pos = ftell(f);
		r->offset = pos >= 0 ? (uint64_t)pos : 0;
		err = read_packet(r, &h, &c);
		if (err)
			break;
		r->st.packets++;
		if (h.pid != r->pid) {
			r->st.foreign_packets++;
			continue;
		}
		err = packet(r, &h, &c);
	}
	if (err == 1)
		err = finish(r);
	if (err)
		goto cleanup;
	if (stats)
		*stats = r->st;
	*out = r->p;
	r->p = NULL;
cleanup:
	for (unsigned i = 0; i < r->ndoms; i++)
		domain_free(r->doms[i]);
	hashmap__free(r->codes);
	hashmap__free(r->live);
	profile__free(r->p);
	free(r->pool);
	free(r->acc);
	free(r->scratch);
	free(r->stack);
	free(r);
	return err;
}
