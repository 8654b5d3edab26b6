// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * Python thread names (sym/pythreads.h): _PyRuntime -> interpreters -> sys.modules ->
 * threading.__dict__ -> _active -> each Thread's _name.  Dicts, instance attributes and ints are
 * decoded per version (enum py_obj_layout); every count read is capped, every pointer followed
 * only through the reader, every loop bounded.
 */
#include <errno.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "sym/pythreads.h"
#include "util/log.h"

/* PyModuleObject: md_dict right after the object header, in every version. */
#define PY_MODULE_DICT		 16
/* PyLong: ob_size (<= 3.11) or lv_tag (3.12+) after the header, then 30-bit digits. */
#define PY_LONG_SIZE		 16
#define PY_LONG_DIGITS		 24
#define PY_LONG_SHIFT		 30
/* Type flags: attributes kept by the interpreter next to the object (3.11+), inline (3.13). */
#define PY_TPFLAGS_MANAGED_DICT	 (1ULL << 4)
#define PY_TPFLAGS_INLINE_VALUES (1ULL << 2)
/* Where a managed dict keeps its pointers, before the object (pycore_object.h). */
#define PY_MANAGED_DICT_AT	 24 /* obj - 24: the dict (3.12: dict, or values - 1: odd) */
#define PY_MANAGED_VALUES_AT	 32 /* obj - 32: the values (3.11) */
/* An instance's __dict__ lies within its object: farther is a broken type. */
#define PY_DICTOFFSET_MAX	 4096

/* Entries read at once. */
#define CHUNK 64

struct rd {
	const struct py_version *v;
	pycode_read_fn read;
	void *ctx;
};

static int rd_bytes(const struct rd *r, uint64_t addr, void *buf, size_t len)
{
	if (!addr || addr + len < addr)
		return -EFAULT;
	return r->read(r->ctx, addr, buf, len) ? -EFAULT : 0;
}

/* The u64 at base + off (off may be negative: managed dicts live before the object). */
static int rd_u64(const struct rd *r, uint64_t base, int64_t off, uint64_t *out)
{
	uint64_t addr = base + (uint64_t)off;

	*out = 0;
	if (!base || (off < 0 && (uint64_t)-off > base) || (off > 0 && addr < base))
		return -EFAULT;
	return rd_bytes(r, addr, out, sizeof(*out));
}

/* A dict's entries as read: where they are, how many, and where a value is. */
struct dview {
	uint64_t entries; /* the first entry */
	uint64_t values;  /* split dict: values[0]; 0: values are in the entries */
	uint32_t n;	  /* entries in use (deleted ones included) */
	uint8_t esize, key_at, value_at;
};

/* The keys object at keys; values (not 0) is a split dict's PyDictValues or values array. */
static int keys_view(const struct rd *r, uint64_t keys, uint64_t values, uint32_t cap,
		     struct dview *out)
{
	const struct py_version *v = r->v;
	uint8_t head[64];
	uint64_t nentries, index_bytes;
	int err;

	memset(out, 0, sizeof(*out));
	if ((size_t)v->dk_nentries + 8 > sizeof(head) || v->dk_indices > sizeof(head))
		return -EINVAL;
	err = rd_bytes(r, keys, head, v->dk_indices);
	if (err)
		return err;
	memcpy(&nentries, head + v->dk_nentries, sizeof(nentries));
	if (v->obj_layout == PY_OBJ_38) {
		uint64_t size;

		/* dk_size: a power of two; the index width follows from it. */
		memcpy(&size, head + 8, sizeof(size));
		if (!size || size & (size - 1) || size > (1ULL << 30))
			return -EINVAL;
		index_bytes = size * (size <= 0xff ? 1 : size <= 0xffff ? 2 : 4);
		if (nentries > size)
			return -EINVAL;
		out->esize = 24; /* hash, key, value */
		out->key_at = 8;
	} else {
		uint8_t log2_size = head[8], log2_index_bytes = head[9], kind = head[10];

		if (log2_size > 30 || log2_index_bytes > log2_size + 3 || kind > 2 ||
		    nentries > (1ULL << log2_size))
			return -EINVAL;
		index_bytes = 1ULL << log2_index_bytes;
		/* DICT_KEYS_GENERAL keeps the hash; unicode and split keys do not. */
		out->esize = kind == 0 ? 24 : 16;
		out->key_at = kind == 0 ? 8 : 0;
	}
	if (nentries > cap)
		return -E2BIG;
	out->value_at = out->key_at + 8;
	out->entries = keys + v->dk_indices + index_bytes;
	out->values = values ? values + v->dv_values : 0;
	out->n = (uint32_t)nentries;
	if (out->entries < keys || (out->values && out->values < values))
		return -EFAULT;
	return 0;
}

static int dict_view(const struct rd *r, uint64_t dict, uint32_t cap, struct dview *out)
{
	uint64_t keys, values;
	int err;

	err = rd_u64(r, dict, r->v->ma_keys, &keys);
	if (!err)
		err = rd_u64(r, dict, r->v->ma_values, &values);
	if (err) {
		memset(out, 0, sizeof(*out));
		return err;
	}
	return keys_view(r, keys, values, cap, out);
}

/* Called on each live entry; 1 stops the walk, 0 goes on, -errno fails it. */
typedef int (*entry_fn)(const struct rd *r, void *arg, uint64_t key, uint64_t value);

static int dict_walk(const struct rd *r, const struct dview *d, entry_fn fn, void *arg)
{
	uint8_t ents[CHUNK * 24];
	uint64_t vals[CHUNK];

	for (uint32_t base = 0; base < d->n; base += CHUNK) {
		uint32_t cnt = d->n - base < CHUNK ? d->n - base : CHUNK;
		int err;

		err = rd_bytes(r, d->entries + (uint64_t)base * d->esize, ents,
			       (size_t)cnt * d->esize);
		if (!err && d->values)
			err = rd_bytes(r, d->values + (uint64_t)base * 8, vals, (size_t)cnt * 8);
		if (err)
			return err;
		for (uint32_t i = 0; i < cnt; i++) {
			uint64_t key, value;

			memcpy(&key, ents + (size_t)i * d->esize + d->key_at, 8);
			if (d->values)
				value = vals[i];
			else
				memcpy(&value, ents + (size_t)i * d->esize + d->value_at, 8);
			/* Deleted entries (and a split dict's unset values) have no value. */
			if (!key || !value)
				continue;
			err = fn(r, arg, key, value);
			if (err)
				return err < 0 ? err : 0;
		}
	}
	return 0;
}

struct lookup {
	const char *want;
	uint64_t value;
	bool found;
};

static int lookup_entry(const struct rd *r, void *arg, uint64_t key, uint64_t value)
{
	struct lookup *l = arg;
	char *s = NULL;
	bool same;

	/* A key that is not a readable str is not ours: keep looking. */
	if (pycode__read_str(r->v, r->read, r->ctx, key, &s))
		return 0;
	same = !strcmp(s, l->want);
	free(s);
	if (!same)
		return 0;
	l->value = value;
	l->found = true;
	return 1;
}

/* d[want] for a str key: 0 (*out set), -ENOENT, or the walk's -errno. */
static int dview_get(const struct rd *r, const struct dview *d, const char *want, uint64_t *out)
{
	struct lookup l = {.want = want};
	int err;

	*out = 0;
	err = dict_walk(r, d, lookup_entry, &l);
	if (err)
		return err;
	if (!l.found)
		return -ENOENT;
	*out = l.value;
	return 0;
}

static int dict_get(const struct rd *r, uint64_t dict, uint32_t cap, const char *want,
		    uint64_t *out)
{
	struct dview d;
	int err;

	*out = 0;
	err = dict_view(r, dict, cap, &d);
	return err ? err : dview_get(r, &d, want, out);
}

/* An instance's attributes kept as values beside its type's shared keys (3.11+). */
static int shared_get(const struct rd *r, uint64_t type, uint64_t values, uint32_t capacity,
		      const char *want, uint64_t *out)
{
	uint64_t keys;
	struct dview d;
	int err;

	*out = 0;
	err = rd_u64(r, type, r->v->ht_cached_keys, &keys);
	if (!err)
		err = keys_view(r, keys, values, PYTHREADS_MAX_ATTRS, &d);
	if (err)
		return err;
	if (d.n > capacity)
		d.n = capacity;
	return dview_get(r, &d, want, out);
}

/* The instance attribute want of the object at obj (its __dict__, managed or inline). */
static int attr_get(const struct rd *r, uint64_t obj, const char *want, uint64_t *out)
{
	const struct py_version *v = r->v;
	uint64_t type, flags, dict = 0, values = 0;
	int64_t dictoffset;
	uint32_t capacity = PYTHREADS_MAX_ATTRS;
	int err;

	*out = 0;
	err = rd_u64(r, obj, 8, &type);
	if (!err)
		err = rd_u64(r, type, v->tp_flags, &flags);
	if (!err)
		err = rd_u64(r, type, v->tp_dictoffset, (uint64_t *)&dictoffset);
	if (err)
		return err;
	if (v->obj_layout != PY_OBJ_38 && (flags & PY_TPFLAGS_MANAGED_DICT)) {
		err = rd_u64(r, obj, -PY_MANAGED_DICT_AT, &dict);
		if (err)
			return err;
		if (v->obj_layout == PY_OBJ_311 && !dict) {
			err = rd_u64(r, obj, -PY_MANAGED_VALUES_AT, &values);
		} else if (v->obj_layout == PY_OBJ_312 && (dict & 1)) {
			values = dict + 1; /* stored as values - 1 */
			dict = 0;
		} else if (v->obj_layout == PY_OBJ_313 && !dict &&
			   (flags & PY_TPFLAGS_INLINE_VALUES)) {
			uint64_t basicsize;
			uint8_t head[4]; /* capacity, size, embedded, valid */

			err = rd_u64(r, type, v->tp_basicsize, &basicsize);
			if (!err && (basicsize > PY_DICTOFFSET_MAX || obj + basicsize < obj))
				err = -EINVAL;
			if (!err)
				err = rd_bytes(r, obj + basicsize, head, sizeof(head));
			if (!err && head[3]) {
				values = obj + basicsize;
				capacity = head[0];
			}
		}
		if (err)
			return err;
	} else {
		/* A __dict__ slot inside the object; negative offsets are for sized objects. */
		if (dictoffset <= 0 || dictoffset > PY_DICTOFFSET_MAX)
			return -ENOENT;
		err = rd_u64(r, obj, dictoffset, &dict);
		if (err)
			return err;
	}
	if (dict)
		return dict_get(r, dict, PYTHREADS_MAX_ATTRS, want, out);
	if (values)
		return shared_get(r, type, values, capacity, want, out);
	return -ENOENT;
}

/* A non-negative int that fits 64 bits; of type int_type when that is not 0. */
static int long_get(const struct rd *r, uint64_t obj, uint64_t int_type, uint64_t *out)
{
	uint8_t raw[PY_LONG_DIGITS + 12];
	uint64_t size, ndigits, val = 0;
	int err;

	*out = 0;
	err = rd_bytes(r, obj, raw, PY_LONG_DIGITS);
	if (err)
		return err;
	if (int_type && memcmp(raw + 8, &int_type, 8))
		return -EINVAL;
	memcpy(&size, raw + PY_LONG_SIZE, sizeof(size));
	if (r->v->obj_layout == PY_OBJ_38 || r->v->obj_layout == PY_OBJ_311) {
		if ((int64_t)size < 0)
			return -EINVAL;
		ndigits = size;
	} else {
		/* lv_tag: digit count << 3 | sign (0 positive, 1 zero, 2 negative). */
		if ((size & 3) == 2 || (size & 3) == 3)
			return -EINVAL;
		ndigits = (size & 3) == 1 ? 0 : size >> 3;
	}
	/* Three 30-bit digits hold 64 bits. */
	if (ndigits > 3)
		return -ERANGE;
	if (ndigits) {
		err = rd_bytes(r, obj + PY_LONG_DIGITS, raw + PY_LONG_DIGITS, ndigits * 4);
		if (err)
			return err;
	}
	for (uint64_t i = ndigits; i-- > 0;) {
		uint32_t digit;

		memcpy(&digit, raw + PY_LONG_DIGITS + i * 4, sizeof(digit));
		if (digit >> PY_LONG_SHIFT || (i == 2 && digit >> (64 - 2 * PY_LONG_SHIFT)))
			return -ERANGE;
		val = val << PY_LONG_SHIFT | digit;
	}
	*out = val;
	return 0;
}

/* One interpreter's thread states: pthread_t and (3.11+) OS thread id. */
struct tstate {
	uint64_t ident, tid;
};

struct walk {
	struct tstate *ts;
	size_t nts;
	struct pythread_name *out;
	size_t max, *n;
	unsigned dropped;
};

static int tstates_read(const struct rd *r, uint64_t interp, struct walk *w)
{
	const struct py_version *v = r->v;
	uint64_t ts;
	int err;

	w->nts = 0;
	err = rd_u64(r, interp, v->is_tstate_head, &ts);
	/* The cap also ends a list that loops. */
	while (!err && ts && w->nts < PYTHREADS_MAX_THREADS) {
		struct tstate *t = &w->ts[w->nts];

		err = rd_u64(r, ts, v->ts_thread_id, &t->ident);
		if (!err && v->ts_native_id)
			err = rd_u64(r, ts, v->ts_native_id, &t->tid);
		if (!err && t->ident)
			w->nts++;
		if (!err)
			err = rd_u64(r, ts, v->ts_next, &ts);
	}
	return err;
}

static bool valid_tid(uint64_t tid)
{
	/* The kernel's PID_MAX_LIMIT is 4M. */
	return tid > 0 && tid <= (1u << 22);
}

/* Copy a UTF-8 name, cut at a character so the copy stays UTF-8. */
static void copy_name(char *dst, const char *src)
{
	size_t len = strlen(src);

	if (len >= PYTHREADS_NAME_MAX) {
		len = PYTHREADS_NAME_MAX - 1;
		while (len > 0 && ((uint8_t)src[len] & 0xc0) == 0x80)
			len--;
	}
	memcpy(dst, src, len);
	dst[len] = '\0';
}

/* One _active entry: ident -> Thread. */
static int thread_entry(const struct rd *r, void *arg, uint64_t key, uint64_t thread)
{
	struct walk *w = arg;
	const struct tstate *t = NULL;
	uint64_t ident, tid = 0, name;
	char *s = NULL;
	int err;

	if (*w->n >= w->max)
		return 1;
	err = long_get(r, key, 0, &ident);
	for (size_t i = 0; !err && i < w->nts && !t; i++)
		if (w->ts[i].ident == ident)
			t = &w->ts[i];
	/* A Thread whose thread state is gone (or never was) names no running thread. */
	if (!t)
		goto drop;
	tid = t->tid;
	if (!r->v->ts_native_id) {
		uint64_t obj, int_type;

		/*
		 * Before 3.11 the thread state has no OS id; threading stores it since 3.8.  It
		 * must be an int like the ident key (not None, say), so of the key's type.
		 */
		if (rd_u64(r, key, 8, &int_type) || attr_get(r, thread, "_native_id", &obj) ||
		    long_get(r, obj, int_type, &tid))
			goto drop;
	}
	if (!valid_tid(tid))
		goto drop;
	for (size_t i = 0; i < *w->n; i++)
		if (w->out[i].tid == tid)
			return 0;
	if (attr_get(r, thread, "_name", &name) ||
	    pycode__read_str(r->v, r->read, r->ctx, name, &s))
		goto drop;
	w->out[*w->n].tid = (uint32_t)tid;
	copy_name(w->out[*w->n].name, s);
	(*w->n)++;
	free(s);
	return 0;
drop:
	w->dropped++;
	return 0;
}

/* One interpreter's named threads: -ENOENT when it never imported threading. */
static int interp_read(const struct rd *r, uint64_t interp, struct walk *w)
{
	uint64_t modules, threading, mdict, active;
	struct dview d;
	int err;

	err = rd_u64(r, interp, r->v->is_modules, &modules);
	if (!err && !modules)
		return -ENOENT; /* not initialized yet, or finalized */
	if (!err)
		err = dict_get(r, modules, PYTHREADS_MAX_DICT, "threading", &threading);
	if (!err)
		err = rd_u64(r, threading, PY_MODULE_DICT, &mdict);
	if (!err)
		err = dict_get(r, mdict, PYTHREADS_MAX_DICT, "_active", &active);
	if (!err)
		err = dict_view(r, active, PYTHREADS_MAX_THREADS, &d);
	if (!err)
		err = tstates_read(r, interp, w);
	if (!err)
		err = dict_walk(r, &d, thread_entry, w);
	return err;
}

int pythreads__read(struct pythread_name *out, size_t max, size_t *n, const struct py_version *v,
		    pycode_read_fn read, void *ctx, uint64_t runtime_addr)
{
	const struct rd r = {.v = v, .read = read, .ctx = ctx};
	struct walk w = {.out = out, .max = max, .n = n};
	uint64_t interp;
	int err = 0;

	if (n)
		*n = 0;
	if (!n || (!out && max) || !v || !read || !v->obj_layout || !v->ts_thread_id ||
	    !v->is_modules || !v->is_tstate_head || !v->ma_keys || !v->dk_indices)
		return -EINVAL;
	w.ts = calloc(PYTHREADS_MAX_THREADS, sizeof(*w.ts));
	if (!w.ts)
		return -ENOMEM;
	err = rd_u64(&r, runtime_addr, v->rt_interp_head, &interp);
	/* The newest interpreter comes first, the main one last: walk them all. */
	for (unsigned k = 0; interp && k < PYTHREADS_MAX_INTERPS && *n < max; k++) {
		int ierr = interp_read(&r, interp, &w);

		if (ierr && ierr != -ENOENT) {
			pr_debug("pythreads: interpreter %#llx unreadable: %s\n",
				 (unsigned long long)interp, strerror(-ierr));
			if (!err)
				err = ierr;
		}
		if (rd_u64(&r, interp, v->is_next, &interp))
			break;
	}
	/* What a sub-interpreter hid does not undo what the others gave. */
	if (*n)
		err = 0;
	if (w.dropped)
		pr_debug("pythreads: %u threads of _active left out\n", w.dropped);
	free(w.ts);
	return err;
}
