// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
#include "sym/dwarf_inline.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "util/hashmap.h"

#define MAX_UNITS    (1u << 20)
#define MAX_CODES    (1u << 16) /* abbreviation codes of a table (GCC numbers them from 1) */
#define MAX_SPECS    (1u << 20) /* attribute specs of a table */
#define MAX_DEPTH    256	/* DIE nesting: far deeper than any compiler's */
#define MAX_HOPS     16		/* abstract_origin / specification links followed for a name */
#define MAX_RANGES   4096	/* entries of one range list */
#define MAX_SCAN     4096	/* ranges looked at by one lookup */
#define RANGE_BYTES  sizeof(struct dwinl_range)
#define TAG_INLINED  0x1d
#define TAG_SUBPROG  0x2e
#define TAG_CU	     0x11
#define TAG_SKELETON 0x4a

struct spec {
	uint32_t name, form;
	int64_t implicit;
};

struct abbrev {
	uint64_t tag;
	uint32_t spec, nspec;
	bool children, present;
};

/* One abbreviation table, decoded (codes index by_code). */
struct abbrevs {
	const uint8_t *sec; /* the .debug_abbrev it is of: the file walked's, or the alternate's */
	uint64_t off;
	bool valid;
	struct abbrev *by_code;
	uint32_t ncodes;
	struct spec *specs;
	uint32_t nspecs, specs_cap;
};

struct unit {
	struct dwunit u;
	uint64_t end, die_off, abbrev_off, stmt, low_pc;
	bool has_stmt;
};

/* What a DIE says that the walk uses. */
enum {
	A_NAME,
	A_LINKAGE,
	A_LOW,
	A_HIGH,
	A_RANGES,
	A_ORIGIN,
	A_SPEC,
	A_CALL_FILE,
	A_CALL_LINE,
	A_STMT,
	A_STR_BASE,
	A_ADDR_BASE,
	A_RNG_BASE,
	A_N,
};

struct die {
	uint64_t tag;
	bool children;
	uint32_t has; /* bit per A_* */
	struct dwval v[A_N];
};

/* The DWARF of one file: the one walked (MAIN), or dwz's alternate file its names may be in. */
struct side {
	const struct dwsecs *s;
	struct unit *units;
	size_t nunits;
	struct abbrevs other; /* the table of a unit a reference leads to */
};

enum { MAIN, ALT };

struct walk {
	struct dwinl *x;
	const struct dwsecs *s; /* in[MAIN].s */
	dwinl_file_fn file;
	void *ctx;
	uint64_t max_bytes;
	struct side in[2];
	struct abbrevs cur;    /* the unit walked */
	struct hashmap *names; /* uint64_t DIE offset (bit 63: ALT) -> uint32_t name */
};

static int attr_slot(uint64_t name)
{
	switch (name) {
	case 0x03:
		return A_NAME;
	case 0x6e:   /* linkage_name */
	case 0x2007: /* MIPS_linkage_name: GCC's before DWARF 4 */
		return A_LINKAGE;
	case 0x11:
		return A_LOW;
	case 0x12:
		return A_HIGH;
	case 0x55:
		return A_RANGES;
	case 0x31:
		return A_ORIGIN;
	case 0x47:
		return A_SPEC;
	case 0x58:
		return A_CALL_FILE;
	case 0x59:
		return A_CALL_LINE;
	case 0x10:
		return A_STMT;
	case 0x72:
		return A_STR_BASE;
	case 0x73:
		return A_ADDR_BASE;
	case 0x74:
		return A_RNG_BASE;
	default:
		return -1;
	}
}

static void abbrevs_release(struct abbrevs *a)
{
	free(a->by_code);
	free(a->specs);
	memset(a, 0, sizeof(*a));
}

/* Decode the table at off of .debug_abbrev into a.  0, -EINVAL (malformed), -ENOMEM. */
static int abbrevs_load(struct abbrevs *a, const struct cur *sec, uint64_t off)
{
	struct cur r = *sec;

	if (a->valid && a->off == off && a->sec == sec->p)
		return 0;
	abbrevs_release(a);
	if (!r.p || off >= (uint64_t)(r.end - r.p))
		return -EINVAL;
	r.err = false;
	r.p += off;
	for (;;) {
		uint64_t code = rd_uleb(&r), name, form;
		struct abbrev ab = {0};

		if (r.err)
			return -EINVAL;
		if (!code)
			break;
		if (code >= MAX_CODES)
			return -EINVAL;
		ab.tag = rd_uleb(&r);
		ab.children = rd_u(&r, 1) != 0;
		ab.spec = a->nspecs;
		ab.present = true;
		for (;;) {
			int64_t implicit = 0;

			name = rd_uleb(&r);
			form = rd_uleb(&r);
			if (form == 0x21)
				implicit = rd_sleb(&r);
			if (r.err)
				return -EINVAL;
			if (!name && !form)
				break;
			if (a->nspecs == a->specs_cap) {
				uint32_t cap = a->specs_cap ? 2 * a->specs_cap : 256;
				struct spec *v;

				if (cap > MAX_SPECS)
					return -EINVAL;
				v = realloc(a->specs, cap * sizeof(*v));
				if (!v)
					return -ENOMEM;
				a->specs = v;
				a->specs_cap = cap;
			}
			a->specs[a->nspecs++] =
				(struct spec){(uint32_t)name, (uint32_t)form, implicit};
		}
		ab.nspec = a->nspecs - ab.spec;
		if (code >= a->ncodes) {
			uint32_t n = (uint32_t)code + 1 > 2 * a->ncodes ? (uint32_t)code + 1
									: 2 * a->ncodes;
			struct abbrev *v = realloc(a->by_code, n * sizeof(*v));

			if (!v)
				return -ENOMEM;
			memset(v + a->ncodes, 0, (n - a->ncodes) * sizeof(*v));
			a->by_code = v;
			a->ncodes = n;
		}
		a->by_code[code] = ab;
	}
	a->sec = sec->p;
	a->off = off;
	a->valid = true;
	return 0;
}

/* The DIE at r (its code read here) into *d: false at a null entry or a malformed one (r->err). */
static bool read_die(struct cur *r, const struct abbrevs *a, const struct dwunit *u, struct die *d)
{
	uint64_t code = rd_uleb(r);
	const struct abbrev *ab;

	if (r->err || !code)
		return false;
	if (code >= a->ncodes || !a->by_code[code].present) {
		r->err = true;
		return false;
	}
	ab = &a->by_code[code];
	d->tag = ab->tag;
	d->children = ab->children;
	d->has = 0;
	for (uint32_t i = 0; i < ab->nspec && !r->err; i++) {
		const struct spec *sp = &a->specs[ab->spec + i];
		int slot = attr_slot(sp->name);

		if (slot < 0) {
			struct dwval skip;

			if (sp->form == 0x21)
				continue;
			dwform__read(r, sp->form, 0, u, &skip);
			continue;
		}
		dwform__read(r, sp->form, sp->implicit, u, &d->v[slot]);
		d->has |= 1u << slot;
	}
	return !r->err;
}

static bool has(const struct die *d, int slot)
{
	return d->has & (1u << slot);
}

/* The unit of side sd holding .debug_info offset off, or NULL. */
static const struct unit *unit_of(const struct side *sd, uint64_t off)
{
	size_t lo = 0, hi = sd->nunits;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (sd->units[mid].u.off <= off)
			lo = mid + 1;
		else
			hi = mid;
	}
	if (!lo || off >= sd->units[lo - 1].end || off < sd->units[lo - 1].die_off)
		return NULL;
	return &sd->units[lo - 1];
}

static size_t bytes(const struct dwinl *x)
{
	return x->calls_cap * sizeof(*x->calls) + x->ranges_cap * RANGE_BYTES + x->names.cap;
}

/* Store s in the names: its offset, DWINL_NONE when empty; -ENOMEM or -E2BIG (cap). */
static int add_name(struct walk *w, const char *s, uint32_t *out)
{
	size_t off, len = s ? strlen(s) : 0;

	*out = DWINL_NONE;
	if (!len)
		return 0;
	if (bytes(w->x) + len + 1 > w->max_bytes || w->x->names.len + len + 1 >= DWINL_NONE)
		return -E2BIG;
	if (strarena__add(&w->x->names, &off, s, len))
		return -ENOMEM;
	*out = (uint32_t)off;
	return 0;
}

/*
 * The name of the function the DIE at off of side's .debug_info stands for: its linkage name,
 * else its name, else that of its specification or abstract origin (in the same file, or through
 * ref_alt in the alternate one), at most MAX_HOPS links away (a cycle ends there).  Cached per
 * offset.  0 (*out DWINL_NONE when none), -ENOMEM, -E2BIG.
 */
static int name_of(struct walk *w, int side, uint64_t off, unsigned hops, uint32_t *out)
{
	struct side *sd = &w->in[side];
	const struct unit *un = sd->s ? unit_of(sd, off) : NULL;
	uint64_t key = off | (uint64_t)side << 63;
	const struct abbrevs *a;
	uint32_t *cached;
	struct die d;
	struct cur r;
	const char *s = NULL;
	int err;
	void *v;

	*out = DWINL_NONE;
	cached = hashmap__find(w->names, &key);
	if (cached) {
		*out = *cached;
		return 0;
	}
	if (!un || hops > MAX_HOPS || off >> 63) {
		w->x->malformed += sd->s != NULL; /* no alternate file: not malformed, unnamed */
		return 0;
	}
	if (w->cur.valid && w->cur.off == un->abbrev_off && w->cur.sec == sd->s->abbrev.p) {
		a = &w->cur;
	} else {
		err = abbrevs_load(&sd->other, &sd->s->abbrev, un->abbrev_off);
		if (err == -ENOMEM)
			return err;
		if (err) {
			w->x->malformed++;
			return 0;
		}
		a = &sd->other;
	}
	r = (struct cur){sd->s->info.p + off, sd->s->info.p + un->end, false};
	if (!read_die(&r, a, &un->u, &d)) {
		w->x->malformed++;
		return 0;
	}
	if (has(&d, A_LINKAGE))
		s = dwform__string(sd->s, &un->u, &d.v[A_LINKAGE]);
	if ((!s || !s[0]) && has(&d, A_NAME))
		s = dwform__string(sd->s, &un->u, &d.v[A_NAME]);
	if (s && s[0]) {
		err = add_name(w, s, out);
	} else {
		/* Values copied out of the table: following a link may load another one. */
		int link = has(&d, A_SPEC) ? A_SPEC : has(&d, A_ORIGIN) ? A_ORIGIN : -1;
		enum dwval_kind k = link >= 0 ? d.v[link].kind : DWVAL_NONE;

		err = k == DWVAL_REF || k == DWVAL_REF_ALT
			      ? name_of(w, k == DWVAL_REF ? side : ALT, d.v[link].u, hops + 1, out)
			      : 0;
	}
	if (err)
		return err;
	if (hashmap__upsert(w->names, &v, &key, NULL))
		return -ENOMEM;
	*(uint32_t *)v = *out;
	return 0;
}

static int add_range(struct walk *w, uint64_t lo, uint64_t hi, uint32_t call)
{
	struct dwinl *x = w->x;

	if (hi <= lo)
		return 0;
	if (x->nranges == x->ranges_cap) {
		size_t cap = x->ranges_cap ? 2 * x->ranges_cap : 256;
		struct dwinl_range *v;

		if (bytes(x) + (cap - x->ranges_cap) * RANGE_BYTES > w->max_bytes)
			return -E2BIG;
		v = realloc(x->ranges, cap * RANGE_BYTES);
		if (!v)
			return -ENOMEM;
		x->ranges = v;
		x->ranges_cap = cap;
	}
	x->ranges[x->nranges++] = (struct dwinl_range){lo, hi, 0, call};
	return 0;
}

/* A DWARF 5 range list at off of .debug_rnglists. */
static int rnglist(struct walk *w, const struct unit *un, uint64_t off, uint32_t call)
{
	const struct cur *sec = &w->s->rnglists;
	uint64_t base = un->low_pc;
	struct cur r;
	int err = 0;

	if (!sec->p || off >= (uint64_t)(sec->end - sec->p))
		return 0;
	r = (struct cur){sec->p + off, sec->end, false};
	for (unsigned n = 0; n < MAX_RANGES && !err && !r.err; n++) {
		unsigned kind = (unsigned)rd_u(&r, 1);
		struct dwval a = {DWVAL_ADDRX, 0, NULL}, b = a;
		uint64_t lo = 0, hi = 0;

		switch (kind) {
		case 0: /* end_of_list */
			return 0;
		case 1: /* base_addressx */
			a.u = rd_uleb(&r);
			if (!dwform__addr(w->s, &un->u, &a, &base))
				return 0;
			continue;
		case 2: /* startx_endx */
			a.u = rd_uleb(&r);
			b.u = rd_uleb(&r);
			if (!dwform__addr(w->s, &un->u, &a, &lo) ||
			    !dwform__addr(w->s, &un->u, &b, &hi))
				continue;
			break;
		case 3: /* startx_length */
			a.u = rd_uleb(&r);
			hi = rd_uleb(&r);
			if (!dwform__addr(w->s, &un->u, &a, &lo))
				continue;
			hi += lo;
			break;
		case 4: /* offset_pair */
			lo = base + rd_uleb(&r);
			hi = base + rd_uleb(&r);
			break;
		case 5: /* base_address */
			base = rd_u(&r, un->u.asz);
			continue;
		case 6: /* start_end */
			lo = rd_u(&r, un->u.asz);
			hi = rd_u(&r, un->u.asz);
			break;
		case 7: /* start_length */
			lo = rd_u(&r, un->u.asz);
			hi = lo + rd_uleb(&r);
			break;
		default:
			return 0;
		}
		if (!r.err)
			err = add_range(w, lo, hi, call);
	}
	return err;
}

/* A DWARF 2-4 range list at off of .debug_ranges. */
static int ranges_v4(struct walk *w, const struct unit *un, uint64_t off, uint32_t call)
{
	const struct cur *sec = &w->s->ranges;
	uint64_t base = un->low_pc, max = un->u.asz == 4 ? UINT32_MAX : UINT64_MAX;
	struct cur r;
	int err = 0;

	if (!sec->p || off >= (uint64_t)(sec->end - sec->p))
		return 0;
	r = (struct cur){sec->p + off, sec->end, false};
	for (unsigned n = 0; n < MAX_RANGES && !err; n++) {
		uint64_t a = rd_u(&r, un->u.asz), b = rd_u(&r, un->u.asz);

		if (r.err || (!a && !b))
			break;
		if (a == max)
			base = b;
		else
			err = add_range(w, base + a, base + b, call);
	}
	return err;
}

/* The address ranges of DIE d (call's) of unit un. */
static int die_ranges(struct walk *w, const struct unit *un, const struct die *d, uint32_t call)
{
	uint64_t lo, hi, off;

	if (has(d, A_LOW) && has(d, A_HIGH) && dwform__addr(w->s, &un->u, &d->v[A_LOW], &lo)) {
		if (d->v[A_HIGH].kind == DWVAL_NUM)
			hi = lo + d->v[A_HIGH].u;
		else if (!dwform__addr(w->s, &un->u, &d->v[A_HIGH], &hi))
			return 0;
		return add_range(w, lo, hi, call);
	}
	if (!has(d, A_RANGES))
		return 0;
	if (un->u.version < 5)
		return d->v[A_RANGES].kind == DWVAL_NUM ? ranges_v4(w, un, d->v[A_RANGES].u, call)
							: 0;
	off = d->v[A_RANGES].u;
	if (d->v[A_RANGES].kind == DWVAL_RNGX) {
		/* An index into the offsets after the unit's rnglists_base, relative to it. */
		const struct cur *sec = &w->s->rnglists;
		uint64_t size = sec->p ? (uint64_t)(sec->end - sec->p) : 0,
			 base = un->u.rnglists_base;
		struct cur r;

		if (!sec->p || off > size / un->u.offsz || base > size - off * un->u.offsz)
			return 0;
		r = (struct cur){sec->p + base + off * un->u.offsz, sec->end, false};
		off = base + rd_u(&r, un->u.offsz);
		if (r.err)
			return 0;
	} else if (d->v[A_RANGES].kind != DWVAL_NUM) {
		return 0;
	}
	return rnglist(w, un, off, call);
}

/* An inlined call (DIE d at depth in unit un, inside inlined call parent). */
static int add_call(struct walk *w, const struct unit *un, const struct die *d, uint32_t parent,
		    unsigned depth, uint32_t *idx)
{
	struct dwinl *x = w->x;
	struct dwinl_call c = {DWINL_NONE, DWINL_NONE, 0, parent, depth};
	int err = 0;

	*idx = DWINL_NONE;
	if (x->ncalls == x->calls_cap) {
		size_t cap = x->calls_cap ? 2 * x->calls_cap : 256;
		struct dwinl_call *v;

		if (cap >= DWINL_NONE ||
		    bytes(x) + (cap - x->calls_cap) * sizeof(*v) > w->max_bytes)
			return -E2BIG;
		v = realloc(x->calls, cap * sizeof(*v));
		if (!v)
			return -ENOMEM;
		x->calls = v;
		x->calls_cap = cap;
	}
	if (has(d, A_ORIGIN) && d->v[A_ORIGIN].kind == DWVAL_REF)
		err = name_of(w, MAIN, d->v[A_ORIGIN].u, 0, &c.name);
	else if (has(d, A_ORIGIN) && d->v[A_ORIGIN].kind == DWVAL_REF_ALT)
		err = name_of(w, ALT, d->v[A_ORIGIN].u, 0, &c.name);
	if (err)
		return err;
	if (c.name == DWINL_NONE)
		x->unnamed++;
	if (has(d, A_CALL_FILE) && d->v[A_CALL_FILE].kind == DWVAL_NUM && un->has_stmt)
		c.call_file = w->file(w->ctx, un->stmt, d->v[A_CALL_FILE].u);
	if (has(d, A_CALL_LINE) && d->v[A_CALL_LINE].kind == DWVAL_NUM &&
	    d->v[A_CALL_LINE].u < INT32_MAX)
		c.call_line = (uint32_t)d->v[A_CALL_LINE].u;
	*idx = (uint32_t)x->ncalls;
	x->calls[x->ncalls++] = c;
	return die_ranges(w, un, d, *idx);
}

/* Every DIE of unit un: its inlined calls.  0, -ENOMEM, -E2BIG (cap); malformed: counted. */
static int walk_unit(struct walk *w, const struct unit *un)
{
	uint32_t inl[MAX_DEPTH + 1];
	unsigned depth = 0;
	struct cur r;
	int err;

	err = abbrevs_load(&w->cur, &w->s->abbrev, un->abbrev_off);
	if (err)
		return err == -ENOMEM ? err : (w->x->malformed++, 0);
	r = (struct cur){w->s->info.p + un->die_off, w->s->info.p + un->end, false};
	inl[0] = DWINL_NONE;
	while (r.p < r.end && !r.err) {
		struct die d;
		uint32_t idx = DWINL_NONE;

		if (!read_die(&r, &w->cur, &un->u, &d)) {
			if (r.err)
				break;
			if (!depth)
				return 0; /* padding after the unit's DIE */
			depth--;
			continue;
		}
		if (d.tag == TAG_INLINED) {
			err = add_call(w, un, &d, inl[depth], depth, &idx);
			if (err)
				return err;
		}
		if (!d.children)
			continue;
		if (++depth > MAX_DEPTH) {
			r.err = true;
			break;
		}
		inl[depth] = d.tag == TAG_INLINED   ? idx
			     : d.tag == TAG_SUBPROG ? DWINL_NONE
						    : inl[depth - 1];
	}
	if (r.err)
		w->x->malformed++;
	return 0;
}

/* The unit headers of side's .debug_info and what their first DIE says (bases, line table). */
static int read_units(struct walk *w, struct side *sd)
{
	const struct dwsecs *s = sd->s;
	struct cur info = s->info;
	size_t cap = 0;
	int err = 0;

	while (!err && !info.err && info.p < info.end && sd->nunits < MAX_UNITS) {
		uint64_t start = (uint64_t)(info.p - s->info.p), len = rd_u(&info, 4);
		struct unit un = {0};
		unsigned type = 1;
		struct die d;
		struct cur u;

		un.u.offsz = 4;
		if (len == 0xffffffff) {
			len = rd_u(&info, 8);
			un.u.offsz = 8;
		}
		if (info.err || len > (uint64_t)(info.end - info.p))
			break;
		u = (struct cur){info.p, info.p + len, false};
		info.p += len;
		un.u.off = start;
		un.end = (uint64_t)(info.p - s->info.p);
		un.u.version = (unsigned)rd_u(&u, 2);
		if (un.u.version >= 5) {
			type = (unsigned)rd_u(&u, 1);
			un.u.asz = (unsigned)rd_u(&u, 1);
			un.abbrev_off = rd_u(&u, un.u.offsz);
			if (type == 4 || type == 5)
				rd_skip(&u, 8);
			else if (type == 2 || type == 6)
				rd_skip(&u, 8 + un.u.offsz);
		} else {
			un.abbrev_off = rd_u(&u, un.u.offsz);
			un.u.asz = (unsigned)rd_u(&u, 1);
		}
		/* Compile and partial units only: type units hold no code. */
		if (u.err || un.u.version < 2 || un.u.version > 5 || (type != 1 && type != 3) ||
		    (un.u.asz != 4 && un.u.asz != 8))
			continue;
		un.die_off = (uint64_t)(u.p - s->info.p);
		err = abbrevs_load(&w->cur, &s->abbrev, un.abbrev_off);
		if (err == -ENOMEM)
			break;
		err = 0;
		if (!w->cur.valid || !read_die(&u, &w->cur, &un.u, &d)) {
			w->x->malformed++;
			continue;
		}
		/* The bases first: the unit's low_pc may be an addrx. */
		if (has(&d, A_STR_BASE) && d.v[A_STR_BASE].kind == DWVAL_NUM)
			un.u.str_offsets_base = d.v[A_STR_BASE].u;
		if (has(&d, A_ADDR_BASE) && d.v[A_ADDR_BASE].kind == DWVAL_NUM)
			un.u.addr_base = d.v[A_ADDR_BASE].u;
		if (has(&d, A_RNG_BASE) && d.v[A_RNG_BASE].kind == DWVAL_NUM)
			un.u.rnglists_base = d.v[A_RNG_BASE].u;
		if (!has(&d, A_LOW) || !dwform__addr(s, &un.u, &d.v[A_LOW], &un.low_pc))
			un.low_pc = 0;
		if (has(&d, A_STMT) && d.v[A_STMT].kind == DWVAL_NUM) {
			un.stmt = d.v[A_STMT].u;
			un.has_stmt = true;
		}
		if (sd->nunits == cap) {
			struct unit *v;

			cap = cap ? 2 * cap : 64;
			v = realloc(sd->units, cap * sizeof(*v));
			if (!v)
				return -ENOMEM;
			sd->units = v;
		}
		sd->units[sd->nunits++] = un;
	}
	return err;
}

static int cmp_range(const void *a, const void *b)
{
	const struct dwinl_range *x = a, *y = b;

	if (x->lo != y->lo)
		return x->lo < y->lo ? -1 : 1;
	return x->call < y->call ? -1 : x->call > y->call;
}

int dwinl__build(struct dwinl *x, const struct dwsecs *s, const struct dwsecs *alt,
		 dwinl_file_fn file, void *ctx, uint64_t max_bytes)
{
	struct walk w = {.x = x, .s = s, .file = file, .ctx = ctx, .max_bytes = max_bytes};
	int err;

	memset(x, 0, sizeof(*x));
	if (!s->info.p || !s->abbrev.p)
		return 0;
	w.in[MAIN].s = s;
	if (alt && alt->info.p && alt->abbrev.p)
		w.in[ALT].s = alt;
	err = hashmap__new(&w.names, sizeof(uint64_t), sizeof(uint32_t));
	if (!err)
		err = read_units(&w, &w.in[MAIN]);
	if (!err && w.in[ALT].s)
		err = read_units(&w, &w.in[ALT]);
	for (size_t i = 0; !err && i < w.in[MAIN].nunits; i++)
		err = walk_unit(&w, &w.in[MAIN].units[i]);
	if (err == -E2BIG) {
		x->capped = true; /* what was read serves */
		err = 0;
	}
	if (!err && x->nranges) {
		uint64_t maxhi = 0;

		qsort(x->ranges, x->nranges, RANGE_BYTES, cmp_range);
		for (size_t i = 0; i < x->nranges; i++) {
			maxhi = x->ranges[i].hi > maxhi ? x->ranges[i].hi : maxhi;
			x->ranges[i].maxhi = maxhi;
		}
	}
	abbrevs_release(&w.cur);
	hashmap__free(w.names);
	for (int i = MAIN; i <= ALT; i++) {
		abbrevs_release(&w.in[i].other);
		free(w.in[i].units);
	}
	if (err)
		dwinl__release(x);
	return err;
}

void dwinl__release(struct dwinl *x)
{
	free(x->calls);
	free(x->ranges);
	strarena__release(&x->names);
	memset(x, 0, sizeof(*x));
}

size_t dwinl__bytes(const struct dwinl *x)
{
	return bytes(x);
}

unsigned dwinl__lookup(const struct dwinl *x, uint64_t vaddr, uint32_t *out, unsigned max)
{
	size_t lo = 0, hi = x->nranges;
	uint32_t best = DWINL_NONE;
	unsigned n = 0;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (x->ranges[mid].lo <= vaddr)
			lo = mid + 1;
		else
			hi = mid;
	}
	/* Ranges starting at or before vaddr, back while one of them may still reach past it. */
	for (size_t i = lo, k = 0; i > 0 && k < MAX_SCAN && x->ranges[i - 1].maxhi > vaddr;
	     i--, k++) {
		const struct dwinl_range *r = &x->ranges[i - 1];

		if (r->hi > vaddr &&
		    (best == DWINL_NONE || x->calls[r->call].depth > x->calls[best].depth))
			best = r->call;
	}
	/* Outward through the calls it sits in: parents have lower indexes, so this ends. */
	while (best != DWINL_NONE && n < max) {
		out[n++] = best;
		best = x->calls[best].parent < best ? x->calls[best].parent : DWINL_NONE;
	}
	return n;
}
