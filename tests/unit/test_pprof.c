// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/* pprof__write's output gunzipped and walked with a minimal protobuf decoder written here, so
 * the encoder is not checked against itself. */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <zlib.h>

#include <cmocka.h>

#include "export/pprof.h"
#include "profile/profile.h"

/* One decoded field: a varint, or a length-delimited span. */
struct field {
	uint32_t num;
	int wire;
	uint64_t v;
	const uint8_t *data;
	size_t len;
};

struct cursor {
	const uint8_t *p, *end;
};

static uint64_t get_varint(struct cursor *c)
{
	uint64_t v = 0;

	for (int shift = 0; shift < 64; shift += 7) {
		assert_true(c->p < c->end);
		v |= (uint64_t)(*c->p & 0x7f) << shift;
		if (!(*c->p++ & 0x80))
			return v;
	}
	fail_msg("varint longer than 10 bytes");
	return 0;
}

static bool next_field(struct cursor *c, struct field *f)
{
	uint64_t tag;

	if (c->p >= c->end)
		return false;
	tag = get_varint(c);
	f->num = (uint32_t)(tag >> 3);
	f->wire = (int)(tag & 7);
	if (f->wire == 0) {
		f->v = get_varint(c);
	} else if (f->wire == 2) {
		f->len = get_varint(c);
		assert_true(f->len <= (size_t)(c->end - c->p));
		f->data = c->p;
		c->p += f->len;
	} else {
		fail_msg("unexpected wire type %d", f->wire);
	}
	return true;
}

static struct cursor sub(const struct field *f)
{
	assert_int_equal(f->wire, 2);
	return (struct cursor){f->data, f->data + f->len};
}

/* The decoded top level, with the string table gathered. */
struct decoded {
	uint8_t *buf;
	size_t len;
	char **strs;
	size_t nstrs;
};

static const char *str(const struct decoded *d, uint64_t idx)
{
	assert_true(idx < d->nstrs);
	return d->strs[idx];
}

static void gunzip(FILE *f, struct decoded *d)
{
	uint8_t in[4096];
	size_t cap = 1 << 16, n;
	z_stream z;
	int ret = Z_OK;

	memset(&z, 0, sizeof(z));
	assert_int_equal(inflateInit2(&z, 15 + 16), Z_OK); /* gzip only: a raw zlib stream fails */
	d->buf = malloc(cap);
	assert_non_null(d->buf);
	d->len = 0;
	rewind(f);
	while (ret != Z_STREAM_END && (n = fread(in, 1, sizeof(in), f)) > 0) {
		z.next_in = in;
		z.avail_in = (uInt)n;
		while (z.avail_in && ret != Z_STREAM_END) {
			if (cap - d->len < 4096) {
				cap *= 2;
				d->buf = realloc(d->buf, cap);
				assert_non_null(d->buf);
			}
			z.next_out = d->buf + d->len;
			z.avail_out = (uInt)(cap - d->len);
			ret = inflate(&z, Z_NO_FLUSH);
			assert_true(ret == Z_OK || ret == Z_STREAM_END);
			d->len = cap - z.avail_out;
		}
	}
	assert_int_equal(ret, Z_STREAM_END);
	inflateEnd(&z);
}

static void decode(const struct profile *p, struct decoded *d)
{
	FILE *f = tmpfile();
	struct cursor c;
	struct field fl;

	assert_non_null(f);
	assert_int_equal(pprof__write(p, f), 0);
	gunzip(f, d);
	fclose(f);
	d->strs = NULL;
	d->nstrs = 0;
	c = (struct cursor){d->buf, d->buf + d->len};
	while (next_field(&c, &fl)) {
		if (fl.num != 6)
			continue;
		assert_int_equal(fl.wire, 2);
		d->strs = realloc(d->strs, (d->nstrs + 1) * sizeof(*d->strs));
		assert_non_null(d->strs);
		d->strs[d->nstrs] = strndup((const char *)fl.data, fl.len);
		assert_non_null(d->strs[d->nstrs]);
		d->nstrs++;
	}
}

static void decoded_free(struct decoded *d)
{
	for (size_t i = 0; i < d->nstrs; i++)
		free(d->strs[i]);
	free(d->strs);
	free(d->buf);
}

/* Two processes, a merged sample, an unsymbolized frame, a partial stack, a counter. */
static int setup(void **state)
{
	struct profile_mapping exe = {0x400000, 0x500000, 0, "/usr/bin/leaky", "abc123", true};
	struct profile_mapping libc = {
		0x7f0000000000, 0x7f0000100000, 0x1000, "/lib/x86_64-linux-gnu/libc.so.6", "",
		false};
	uint32_t m1, m2, f_leak, f_main, l_leak, l_main, l_unk;
	int64_t v[] = {1000, 4096000};
	struct profile *p;
	int err = 0;

	if (profile__new(&p, "heap"))
		return -1;
	err |= profile__add_type(p, "inuse_objects", "count");
	err |= profile__add_type(p, "inuse_space", "bytes");
	p->default_type = 1;
	p->period_type.type = profile__intern(p, "space");
	p->period_type.unit = profile__intern(p, "bytes");
	p->period = 524288;
	p->time_nanos = 1700000000123456789;
	p->duration_nanos = 5000000000;
	err |= profile__mapping(p, &m1, &exe);
	err |= profile__mapping(p, &m2, &libc);
	err |= profile__function(p, &f_leak, "leak_pages", "leak_pages", "leaky.c", 10);
	err |= profile__function(p, &f_main, "main", "main", "leaky.c", 30);
	err |= profile__location(p, &l_leak, 0x401000, m1, f_leak, 12);
	err |= profile__location(p, &l_main, 0x402000, m1, f_main, 33);
	err |= profile__location(p, &l_unk, 0x7f0000005555, m2, 0, 0);
	err |= profile__add_sample(p, 100, 101, "worker", "leaky",
				   (uint32_t[]){l_unk, l_leak, l_main}, 3, v, false);
	err |= profile__add_sample(p, 100, 101, "worker", "leaky",
				   (uint32_t[]){l_unk, l_leak, l_main}, 3, v, false);
	err |= profile__add_sample(p, 200, 200, "leaky", "leaky", (uint32_t[]){l_main}, 1, v, true);
	err |= profile__add_comment(p, "cmdline: bpftrace-prof --heap -p 100");
	err |= profile__add_counter(p, "ringbuf_full", "events lost: ring buffer full", 0);
	err |= profile__add_counter(p, "unknown_free", "frees of blocks never seen", 7);
	if (err) {
		profile__free(p);
		return -1;
	}
	*state = p;
	return 0;
}

static int teardown(void **state)
{
	profile__free(*state);
	return 0;
}

static void test_pprof__string_table_starts_empty_and_is_unique(void **state)
{
	struct decoded d;

	decode(*state, &d);
	assert_true(d.nstrs > 1);
	assert_string_equal(d.strs[0], "");
	for (size_t i = 0; i < d.nstrs; i++)
		for (size_t j = i + 1; j < d.nstrs; j++)
			assert_string_not_equal(d.strs[i], d.strs[j]);
	decoded_free(&d);
}

static void test_pprof__header_fields(void **state)
{
	struct decoded d;
	struct cursor c, vc;
	struct field f, vf;
	const char *types[2][2];
	int ntypes = 0, seen_period_type = 0;
	int64_t period = 0, time_nanos = 0, duration = 0;
	const char *dflt = NULL;

	decode(*state, &d);
	c = (struct cursor){d.buf, d.buf + d.len};
	while (next_field(&c, &f)) {
		switch (f.num) {
		case 1:	 /* sample_type */
		case 11: /* period_type */
			vc = sub(&f);
			if (f.num == 1) {
				assert_true(ntypes < 2);
				types[ntypes][0] = types[ntypes][1] = "";
			}
			while (next_field(&vc, &vf)) {
				const char *s = str(&d, vf.v);

				assert_true(vf.num == 1 || vf.num == 2);
				if (f.num == 1)
					types[ntypes][vf.num - 1] = s;
				else
					assert_string_equal(s, vf.num == 1 ? "space" : "bytes");
			}
			if (f.num == 1)
				ntypes++;
			else
				seen_period_type++;
			break;
		case 9:
			time_nanos = (int64_t)f.v;
			break;
		case 10:
			duration = (int64_t)f.v;
			break;
		case 12:
			period = (int64_t)f.v;
			break;
		case 14:
			dflt = str(&d, f.v);
			break;
		}
	}
	assert_int_equal(ntypes, 2);
	assert_string_equal(types[0][0], "inuse_objects");
	assert_string_equal(types[0][1], "count");
	assert_string_equal(types[1][0], "inuse_space");
	assert_string_equal(types[1][1], "bytes");
	assert_non_null(dflt);
	assert_string_equal(dflt, "inuse_space");
	assert_int_equal(seen_period_type, 1);
	assert_int_equal(period, 524288);
	assert_int_equal(time_nanos, 1700000000123456789);
	assert_int_equal(duration, 5000000000);
	decoded_free(&d);
}

struct label {
	const char *key, *str;
	int64_t num;
	bool is_num;
};

static void test_pprof__samples_with_labels(void **state)
{
	struct decoded d;
	struct cursor c, sc, pc, lc;
	struct field f, sf, lf;
	int nsamples = 0;

	decode(*state, &d);
	c = (struct cursor){d.buf, d.buf + d.len};
	while (next_field(&c, &f)) {
		uint64_t locs[8], vals[4];
		struct label labels[8];
		int nlocs = 0, nvals = 0, nlabels = 0;

		if (f.num != 2)
			continue;
		sc = sub(&f);
		while (next_field(&sc, &sf)) {
			if (sf.num == 1 || sf.num == 2) { /* packed */
				pc = sub(&sf);
				while (pc.p < pc.end) {
					if (sf.num == 1)
						locs[nlocs++] = get_varint(&pc);
					else
						vals[nvals++] = get_varint(&pc);
				}
			} else if (sf.num == 3) {
				struct label *l = &labels[nlabels++];

				memset(l, 0, sizeof(*l));
				lc = sub(&sf);
				while (next_field(&lc, &lf)) {
					if (lf.num == 1)
						l->key = str(&d, lf.v);
					else if (lf.num == 2)
						l->str = str(&d, lf.v);
					else if (lf.num == 3)
						l->is_num = true, l->num = (int64_t)lf.v;
				}
			}
		}
		assert_int_equal(nvals, 2);
		if (nsamples == 0) {
			/* Merged: the same stack and thread added twice. */
			assert_int_equal(nlocs, 3);
			assert_int_equal(locs[0], 3); /* leaf first */
			assert_int_equal(locs[1], 1);
			assert_int_equal(locs[2], 2);
			assert_int_equal(vals[0], 2000);
			assert_int_equal(vals[1], 8192000);
			assert_int_equal(nlabels, 4);
			assert_string_equal(labels[0].key, "pid");
			assert_true(labels[0].is_num);
			assert_int_equal(labels[0].num, 100);
			assert_string_equal(labels[1].key, "tid");
			assert_int_equal(labels[1].num, 101);
			assert_string_equal(labels[2].key, "comm");
			assert_string_equal(labels[2].str, "worker");
			assert_string_equal(labels[3].key, "process");
			assert_string_equal(labels[3].str, "leaky");
		} else {
			assert_int_equal(nlocs, 1);
			assert_int_equal(nlabels, 5);
			assert_int_equal(labels[0].num, 200);
			assert_string_equal(labels[2].str, "leaky");
			assert_string_equal(labels[4].key, "stack");
			assert_string_equal(labels[4].str, "partial");
		}
		nsamples++;
	}
	assert_int_equal(nsamples, 2);
	decoded_free(&d);
}

static void test_pprof__mappings_locations_functions(void **state)
{
	struct decoded d;
	struct cursor c, mc, lc;
	struct field f, mf, lf;
	int nmap = 0, nloc = 0, nfn = 0;

	decode(*state, &d);
	c = (struct cursor){d.buf, d.buf + d.len};
	while (next_field(&c, &f)) {
		uint64_t v[11] = {0};
		uint64_t line_fn = 0, line_no = 0;

		if (f.num < 3 || f.num > 5)
			continue;
		mc = sub(&f);
		while (next_field(&mc, &mf)) {
			assert_true(mf.num < 11);
			if (f.num == 4 && mf.num == 4) { /* Location.line: a Line message */
				lc = sub(&mf);
				while (next_field(&lc, &lf))
					*(lf.num == 1 ? &line_fn : &line_no) = lf.v;
				continue;
			}
			v[mf.num] = mf.v;
		}
		if (f.num == 3) {
			nmap++;
			assert_int_equal(v[1], nmap);
			if (nmap == 1) {
				assert_int_equal(v[2], 0x400000);
				assert_int_equal(v[3], 0x500000);
				assert_int_equal(v[4], 0);
				assert_string_equal(str(&d, v[5]), "/usr/bin/leaky");
				assert_string_equal(str(&d, v[6]), "abc123");
				assert_int_equal(v[7], 1); /* has_functions */
			} else {
				assert_int_equal(v[4], 0x1000);
				assert_string_equal(str(&d, v[5]),
						    "/lib/x86_64-linux-gnu/libc.so.6");
				assert_int_equal(v[6], 0);
				assert_int_equal(v[7], 0);
			}
		} else if (f.num == 4) {
			nloc++;
			assert_int_equal(v[1], nloc);
			if (nloc == 1) {
				assert_int_equal(v[2], 1);
				assert_int_equal(v[3], 0x401000);
				assert_int_equal(line_fn, 1);
				assert_int_equal(line_no, 12);
			} else if (nloc == 3) {
				/* Unsymbolized: keeps its address and mapping, has no Line. */
				assert_int_equal(v[2], 2);
				assert_int_equal(v[3], 0x7f0000005555);
				assert_int_equal(line_fn, 0);
			}
		} else {
			nfn++;
			assert_int_equal(v[1], nfn);
			assert_string_equal(str(&d, v[2]), nfn == 1 ? "leak_pages" : "main");
			/* No system name when it is the name: pprof would "simplify" it. */
			assert_int_equal(v[3], 0);
			assert_string_equal(str(&d, v[4]), "leaky.c");
			assert_int_equal(v[5], nfn == 1 ? 10 : 30);
		}
	}
	assert_int_equal(nmap, 2);
	assert_int_equal(nloc, 3);
	assert_int_equal(nfn, 2);
	decoded_free(&d);
}

/* The main executable's mapping goes first on the wire, the others after it in their order, and
 * every location follows its mapping to its new id. */
static void test_pprof__main_mapping_first(void **state)
{
	struct profile *p = *state;
	struct decoded d;
	struct cursor c, mc;
	struct field f, mf;
	const char *file[3] = {0};
	uint64_t loc_map[4] = {0};
	int nmap = 0;

	p->main_mapping = 2; /* libc, added second */
	decode(p, &d);
	c = (struct cursor){d.buf, d.buf + d.len};
	while (next_field(&c, &f)) {
		uint64_t v[11] = {0};

		if (f.num != 3 && f.num != 4)
			continue;
		mc = sub(&f);
		while (next_field(&mc, &mf))
			if (mf.num < 11)
				v[mf.num] = mf.v;
		if (f.num == 3) {
			assert_true(v[1] >= 1 && v[1] <= 2);
			file[v[1]] = str(&d, v[5]);
			nmap++;
		} else {
			assert_true(v[1] >= 1 && v[1] <= 3);
			loc_map[v[1]] = v[2];
		}
	}
	assert_int_equal(nmap, 2);
	assert_string_equal(file[1], "/lib/x86_64-linux-gnu/libc.so.6");
	assert_string_equal(file[2], "/usr/bin/leaky");
	/* leak_pages and main were in the executable (now 2), the unknown frame in libc (now 1). */
	assert_int_equal(loc_map[1], 2);
	assert_int_equal(loc_map[2], 2);
	assert_int_equal(loc_map[3], 1);
	decoded_free(&d);
	p->main_mapping = 0;
}

static void test_pprof__comments_carry_counters(void **state)
{
	const char *want[] = {
		"cmdline: bpftrace-prof --heap -p 100",
		/* ringbuf_full is 0: zeros are left out */
		"unknown_free=7 (frees of blocks never seen)",
	};
	struct decoded d;
	struct cursor c;
	struct field f;
	size_t n = 0;

	decode(*state, &d);
	c = (struct cursor){d.buf, d.buf + d.len};
	while (next_field(&c, &f)) {
		if (f.num != 13)
			continue;
		assert_int_equal(f.wire, 0);
		assert_true(n < 2);
		assert_string_equal(str(&d, f.v), want[n++]);
	}
	assert_int_equal(n, 2);
	decoded_free(&d);
}

static void test_pprof__empty_profile(void **state)
{
	struct profile *p;
	struct decoded d;

	(void)state;
	assert_int_equal(profile__new(&p, "cpu"), 0);
	decode(p, &d);
	assert_int_equal(d.nstrs >= 1, 1);
	assert_string_equal(d.strs[0], "");
	decoded_free(&d);
	profile__free(p);
}

/* Big enough to cross the writer's internal flush threshold several times. */
static void test_pprof__large_profile_roundtrips(void **state)
{
	struct profile *p;
	struct decoded d;
	struct cursor c;
	struct field f;
	uint32_t fid, lid, nsamples = 0;
	char name[32];

	(void)state;
	assert_int_equal(profile__new(&p, "cpu"), 0);
	assert_int_equal(profile__add_type(p, "samples", "count"), 0);
	for (uint32_t i = 0; i < 20000; i++) {
		int64_t v = i;

		snprintf(name, sizeof(name), "fn_%u", i);
		assert_int_equal(profile__function(p, &fid, name, name, "", 0), 0);
		assert_int_equal(profile__location(p, &lid, 0x1000 + i, 0, fid, 0), 0);
		assert_int_equal(profile__add_sample(p, 1, i, "t", "proc", &lid, 1, &v, false), 0);
	}
	decode(p, &d);
	c = (struct cursor){d.buf, d.buf + d.len};
	while (next_field(&c, &f))
		nsamples += f.num == 2;
	assert_int_equal(nsamples, 20000);
	/* "", 4 label keys + stack, 2 types, t, proc, 20000 names, "no drops" */
	assert_int_equal(d.nstrs, 1 + 5 + 2 + 2 + 20000 + 1);
	decoded_free(&d);
	profile__free(p);
}

/* The `state` label (offcpu) on the samples that have one, its key in no other profile. */
static void test_pprof__state_label_only_when_set(void **state)
{
	const char *states[2] = {NULL, NULL};
	int64_t v = 7, nstate_keys = 0;
	struct cursor c, sc, lc;
	struct field f, sf, lf;
	struct profile *p;
	struct decoded d;
	uint32_t lid, n = 0;

	(void)state;
	assert_int_equal(profile__new(&p, "offcpu"), 0);
	assert_int_equal(profile__add_type(p, "events", "count"), 0);
	assert_int_equal(profile__location(p, &lid, 0x1000, 0, 0, 0), 0);
	assert_int_equal(
		profile__add_sample_state(p, 1, 2, "t", "proc", &lid, 1, &v, false, "blocked"), 0);
	assert_int_equal(profile__add_sample(p, 1, 3, "t", "proc", &lid, 1, &v, false), 0);
	decode(p, &d);
	for (size_t i = 0; i < d.nstrs; i++)
		nstate_keys += !strcmp(d.strs[i], "state");
	assert_int_equal(nstate_keys, 1);
	c = (struct cursor){d.buf, d.buf + d.len};
	while (next_field(&c, &f)) {
		if (f.num != 2)
			continue;
		assert_true(n < 2);
		sc = sub(&f);
		while (next_field(&sc, &sf)) {
			const char *key = NULL, *val = NULL;

			if (sf.num != 3)
				continue;
			lc = sub(&sf);
			while (next_field(&lc, &lf)) {
				if (lf.num == 1)
					key = str(&d, lf.v);
				else if (lf.num == 2)
					val = str(&d, lf.v);
			}
			if (!strcmp(key, "state"))
				states[n] = val;
		}
		n++;
	}
	assert_int_equal(n, 2);
	assert_non_null(states[0]);
	assert_string_equal(states[0], "blocked");
	assert_null(states[1]);
	decoded_free(&d);
	profile__free(p);

	/* Without states the key is not even in the string table. */
	assert_int_equal(profile__new(&p, "cpu"), 0);
	assert_int_equal(profile__add_type(p, "samples", "count"), 0);
	assert_int_equal(profile__location(p, &lid, 0x1000, 0, 0, 0), 0);
	assert_int_equal(profile__add_sample(p, 1, 3, "t", "proc", &lid, 1, &v, false), 0);
	decode(p, &d);
	for (size_t i = 0; i < d.nstrs; i++)
		assert_string_not_equal(d.strs[i], "state");
	decoded_free(&d);
	profile__free(p);
}

/* The packed varints of field f into out[0..max): how many. */
static size_t packed(const struct field *f, uint64_t *out, size_t max)
{
	struct cursor c = sub(f);
	size_t n = 0;

	while (c.p < c.end && n < max)
		out[n++] = get_varint(&c);
	return n;
}

/*
 * Functions inlined at one address, each a location of the model paired to its caller's: pprof
 * gets one Location with a Line per level, innermost first, and samples name the caller's only;
 * an inlined location a sample holds without its caller (a cut stack) is a Location of its own.
 */
static void test_pprof__inlined_chain_one_location(void **state)
{
	uint32_t f_leaf, f_mid, f_outer, f_main, l_leaf, l_mid, l_outer, l_main, l_cut;
	uint64_t ids[8], fn[8], line[8], loc_ids[2] = {0}, nsamples = 0;
	size_t nlocs = 0;
	struct profile *p;
	struct decoded d;
	struct cursor c;
	struct field fl;
	int64_t v = 1;

	(void)state;
	assert_int_equal(profile__new(&p, "cpu"), 0);
	assert_int_equal(profile__add_type(p, "samples", "count"), 0);
	assert_int_equal(profile__function(p, &f_leaf, "leaf", "leaf", "a.h", 1), 0);
	assert_int_equal(profile__function(p, &f_mid, "mid", "mid", "a.h", 10), 0);
	assert_int_equal(profile__function(p, &f_outer, "outer", "outer", "a.c", 20), 0);
	assert_int_equal(profile__function(p, &f_main, "main", "main", "a.c", 30), 0);
	assert_int_equal(profile__location(p, &l_leaf, 0x1000, 0, f_leaf, 3), 0);
	assert_int_equal(profile__location(p, &l_mid, 0x1000, 0, f_mid, 12), 0);
	assert_int_equal(profile__location(p, &l_outer, 0x1000, 0, f_outer, 25), 0);
	assert_int_equal(profile__location(p, &l_cut, 0x2000, 0, f_leaf, 4), 0);
	assert_int_equal(profile__location(p, &l_main, 0x2000, 0, f_main, 33), 0);
	assert_int_equal(profile__inline_pair(p, l_mid, l_leaf), 0);
	assert_int_equal(profile__inline_pair(p, l_outer, l_mid), 0);
	assert_int_equal(profile__inline_pair(p, l_main, l_cut), 0);
	assert_int_equal(profile__inline_pair(p, l_main, l_main), -EINVAL);
	assert_int_equal(profile__inline_pair(p, l_leaf, l_main), -EINVAL); /* inner ones first */
	assert_int_equal(profile__add_sample(p, 1, 1, "t", "proc",
					     (uint32_t[]){l_leaf, l_mid, l_outer, l_main}, 4, &v,
					     false),
			 0);
	/* l_cut without its caller after it (a stack cut there). */
	assert_int_equal(
		profile__add_sample(p, 1, 2, "t", "proc", (uint32_t[]){l_cut}, 1, &v, false), 0);
	decode(p, &d);
	c = (struct cursor){d.buf, d.buf + d.len};
	while (next_field(&c, &fl)) {
		struct cursor m;
		struct field g;
		uint64_t id = 0;
		size_t nl = 0;

		if (fl.num == 2) { /* Sample */
			m = sub(&fl);
			while (next_field(&m, &g))
				if (g.num == 1) {
					uint64_t got[8];
					size_t n = packed(&g, got, 8);

					if (nsamples++ == 0) {
						assert_int_equal(n, 2);
						loc_ids[0] = got[0];
						loc_ids[1] = got[1];
					} else {
						assert_int_equal(n, 1);
						assert_int_equal(got[0], l_cut);
					}
				}
			continue;
		}
		if (fl.num != 4) /* Location */
			continue;
		m = sub(&fl);
		while (next_field(&m, &g)) {
			struct cursor ln;
			struct field h;

			if (g.num == 1)
				id = g.v;
			if (g.num != 4)
				continue;
			ln = sub(&g);
			line[nl] = 0;
			while (next_field(&ln, &h)) {
				if (h.num == 1)
					fn[nl] = h.v;
				else if (h.num == 2)
					line[nl] = h.v;
			}
			nl++;
		}
		ids[nlocs++] = id;
		if (id == l_outer) { /* innermost first */
			assert_int_equal(nl, 3);
			assert_int_equal(fn[0], f_leaf);
			assert_int_equal(line[0], 3);
			assert_int_equal(fn[1], f_mid);
			assert_int_equal(line[1], 12);
			assert_int_equal(fn[2], f_outer);
			assert_int_equal(line[2], 25);
		} else if (id == l_main) {
			assert_int_equal(nl, 2); /* l_cut is inlined into it */
			assert_int_equal(fn[0], f_leaf);
			assert_int_equal(fn[1], f_main);
		} else {
			assert_int_equal(id, l_cut);
			assert_int_equal(nl, 1);
		}
	}
	assert_int_equal(nsamples, 2);
	assert_int_equal(loc_ids[0], l_outer);
	assert_int_equal(loc_ids[1], l_main);
	assert_int_equal(nlocs, 3); /* l_leaf and l_mid live in l_outer's */
	(void)ids;
	decoded_free(&d);
	profile__free(p);
}

static void test_pprof__write_error_reported(void **state)
{
	FILE *f = fopen("/dev/full", "w");

	if (!f)
		skip();
	setvbuf(f, NULL, _IONBF, 0); /* so the failure shows in pprof__write, not at fclose */
	assert_int_equal(pprof__write(*state, f), -ENOSPC);
	fclose(f);
}

/* A profile's own labels (an OOM kill's) come after each sample's, on every sample. */
static void test_pprof__profile_labels_on_every_sample(void **state)
{
	struct profile *p = *state;
	struct decoded d;
	struct cursor c, sc, lc;
	struct field f, sf, lf;
	int nsamples = 0;

	assert_int_equal(profile__add_label(p, "oom_kill", "true", 0, true), 0);
	assert_int_equal(profile__add_label(p, "memory_limit", NULL, 67108864, false), 0);
	decode(p, &d);
	c = (struct cursor){d.buf, d.buf + d.len};
	while (next_field(&c, &f)) {
		struct label labels[8];
		int nlabels = 0;

		if (f.num != 2)
			continue;
		sc = sub(&f);
		while (next_field(&sc, &sf)) {
			struct label *l;

			if (sf.num != 3)
				continue;
			l = &labels[nlabels++];
			memset(l, 0, sizeof(*l));
			lc = sub(&sf);
			while (next_field(&lc, &lf)) {
				if (lf.num == 1)
					l->key = str(&d, lf.v);
				else if (lf.num == 2)
					l->str = str(&d, lf.v);
				else if (lf.num == 3)
					l->is_num = true, l->num = (int64_t)lf.v;
			}
		}
		assert_true(nlabels >= 6);
		assert_string_equal(labels[nlabels - 2].key, "oom_kill");
		assert_string_equal(labels[nlabels - 2].str, "true");
		assert_string_equal(labels[nlabels - 1].key, "memory_limit");
		assert_true(labels[nlabels - 1].is_num);
		assert_int_equal(labels[nlabels - 1].num, 67108864);
		nsamples++;
	}
	assert_int_equal(nsamples, 2);
	decoded_free(&d);
}

int main(void)
{
#define T(name) cmocka_unit_test_setup_teardown(name, setup, teardown)
	const struct CMUnitTest tests[] = {
		T(test_pprof__profile_labels_on_every_sample),
		T(test_pprof__string_table_starts_empty_and_is_unique),
		T(test_pprof__header_fields),
		T(test_pprof__samples_with_labels),
		T(test_pprof__mappings_locations_functions),
		T(test_pprof__main_mapping_first),
		T(test_pprof__comments_carry_counters),
		cmocka_unit_test(test_pprof__empty_profile),
		cmocka_unit_test(test_pprof__large_profile_roundtrips),
		cmocka_unit_test(test_pprof__state_label_only_when_set),
		cmocka_unit_test(test_pprof__inlined_chain_one_location),
		T(test_pprof__write_error_reported),
	};
#undef T

	return cmocka_run_group_tests_name("pprof", tests, NULL, NULL);
}
