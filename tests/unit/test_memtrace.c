// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/* memtrace's byte-level pieces, and the writer read back by the reader (trace/memtrace*.c).
 * With MEMTRACE_SEED_DIR set, the traces made here are saved there (the fuzzer's seeds). */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "trace/memtrace.h"
#include "trace/memtrace_read.h"
#include "profile/profile.h"

#define START 1700000000000000ull /* µs */

static void save_seed(const char *name, FILE *f)
{
	const char *dir = getenv("MEMTRACE_SEED_DIR");
	char path[512], buf[4096];
	size_t n;
	FILE *o;

	if (!dir)
		return;
	snprintf(path, sizeof(path), "%s/%s", dir, name);
	o = fopen(path, "wb");
	assert_non_null(o);
	rewind(f);
	while ((n = fread(buf, 1, sizeof(buf), f)))
		fwrite(buf, 1, n, o);
	fclose(o);
}

static void test_memtrace__vint_lengths_and_round_trip(void **state)
{
	const struct {
		uint64_t v;
		size_t len;
	} cases[] = {{0, 1},	   {252, 1},	    {253, 3},	     {0xFFFF, 3},
		     {0x10000, 5}, {0x7FFFFFFF, 5}, {0x80000000, 9}, {UINT64_MAX, 9}};
	uint8_t buf[9];
	uint64_t v;
	size_t used;

	(void)state;
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		assert_int_equal(memtrace__put_vint(buf, cases[i].v), cases[i].len);
		assert_int_equal(memtrace__get_vint(&v, &used, buf, cases[i].len), 0);
		assert_int_equal(used, cases[i].len);
		assert_true(v == cases[i].v);
		/* one byte short */
		assert_int_equal(memtrace__get_vint(&v, &used, buf, cases[i].len - 1), -EBADMSG);
	}
	memtrace__put_vint(buf, 300);
	assert_int_equal(buf[0], 253);
	assert_int_equal(buf[1], 300 & 0xFF);
	assert_int_equal(buf[2], 300 >> 8);
}

static void test_memtrace__location_packing(void **state)
{
	uint32_t line, sc, ec;
	unsigned fc, dc;
	uint64_t bits;

	(void)state;
	bits = memtrace__pack_loc(123456, 7, 900, 31, 5);
	assert_true(bits == (123456ull | 7ull << 20 | 900ull << 28 | 31ull << 38 | 5ull << 43));
	assert_true(bits < 1ull << 48);
	memtrace__unpack_loc(bits, &line, &sc, &ec, &fc, &dc);
	assert_int_equal(line, 123456);
	assert_int_equal(sc, 7);
	assert_int_equal(ec, 900);
	assert_int_equal(fc, 31);
	assert_int_equal(dc, 5);
	/* too wide: clamped to the field, never spilling into the next one */
	bits = memtrace__pack_loc(5000000, 300, 5000, 40, 40);
	memtrace__unpack_loc(bits, &line, &sc, &ec, &fc, &dc);
	assert_int_equal(line, 0xFFFFF);
	assert_int_equal(sc, 0xFF);
	assert_int_equal(ec, 0x3FF);
	assert_int_equal(fc, 31);
	assert_int_equal(dc, 31);
	/* the code: stable, 62 bits, different lines differ */
	assert_true(memtrace__loc_code("a.c", "f", 1) == memtrace__loc_code("a.c", "f", 1));
	assert_true(memtrace__loc_code("a.c", "f", 1) != memtrace__loc_code("a.c", "f", 2));
	assert_true(memtrace__loc_code("a.c", "fx", 1) != memtrace__loc_code("a.cf", "x", 1));
	assert_true(memtrace__loc_code("a.c", "f", 1) <= MEMTRACE_CODE_MASK);
	/* FNV-1a 64 of "\0" "\0" and the line's 4 bytes, cut to 62 bits (python3 computes it) */
	assert_true(memtrace__loc_code("", "", 0) == 0x17e4fcfa299d713dull);
}

static void test_memtrace__packet_header(void **state)
{
	struct memtrace_header h =
				       {
					       .packet_bits = 8 * 100,
					       .ts_begin = START,
					       .ts_end = START + 5,
					       .pid = 4242,
					       .domain = 0,
					       .verify_ix = MEMTRACE_NO_VERIFIER,
					       .alloc_id_begin = 10,
					       .alloc_id_end = 13,
				       },
			       g;
	uint8_t b[MEMTRACE_HEADER_SIZE];
	size_t used;

	(void)state;
	memtrace__put_header(b, &h);
	assert_memory_equal(b, "\xC1\x1F\xFC\xC1", 4);
	assert_int_equal(b[4] | b[5] << 8, 800);
	assert_int_equal(b[28], 3); /* version */
	assert_int_equal(b[29], 0);
	assert_int_equal(b[30] | b[31] << 8, 4242);   /* pid */
	assert_int_equal(b[40] | b[41] << 8, 0xFFFF); /* no verifier */
	assert_int_equal(b[52], 10);
	assert_int_equal(b[60], 13);
	assert_int_equal(memtrace__get_header(&g, &used, b, sizeof(b)), 0);
	assert_int_equal(used, 68);
	assert_true(g.ts_begin == START && g.ts_end == START + 5 && g.pid == 4242);
	assert_true(g.alloc_id_begin == 10 && g.alloc_id_end == 13);
	assert_int_equal(memtrace__get_header(&g, &used, b, 67), -EBADMSG);

	/* a version-2 header has no domain: 66 bytes */
	b[28] = 2;
	memmove(b + 38, b + 40, 28);
	assert_int_equal(memtrace__get_header(&g, &used, b, 66), 0);
	assert_int_equal(used, 66);
	assert_true(g.alloc_id_end == 13);

	memtrace__put_header(b, &h);
	b[28] = 4;
	assert_int_equal(memtrace__get_header(&g, &used, b, sizeof(b)), -ENOTSUP);
	h.ts_end = START - 1;
	memtrace__put_header(b, &h);
	assert_int_equal(memtrace__get_header(&g, &used, b, sizeof(b)), -EBADMSG);
	h.ts_end = START;
	h.packet_bits = 8 * 67; /* smaller than its own header */
	memtrace__put_header(b, &h);
	assert_int_equal(memtrace__get_header(&g, &used, b, sizeof(b)), -EBADMSG);
	h.packet_bits = 8 * 100;
	memtrace__put_header(b, &h);
	b[0] ^= 1;
	assert_int_equal(memtrace__get_header(&g, &used, b, sizeof(b)), -EBADMSG);
}

/* What the encoder writes, a decoder fed the same codes reads back, across push-offs. */
static void test_memtrace__mtf_encode_decode_agree(void **state)
{
	struct memtrace_mtf *enc = calloc(1, sizeof(*enc)), *dec = calloc(1, sizeof(*dec));
	struct memtrace_mtf_entry_ref ref;
	char name[16];
	int code;

	(void)state;
	assert_non_null(enc);
	assert_non_null(dec);
	for (int i = 0; i < 400; i++) {
		/* 45 names: a table of 31 keeps pushing some off */
		snprintf(name, sizeof(name), "n%d", (i * 7) % 45);
		code = memtrace_mtf__encode(enc, name, true);
		assert_true(code >= 0 && code <= MEMTRACE_MTF_LEN);
		assert_int_equal(memtrace_mtf__decode(&ref, dec, (unsigned)code,
						      code == MEMTRACE_MTF_LEN ? name : NULL, true),
				 0);
		assert_string_equal(ref.name, name);
		assert_string_equal(enc->name[0], name);
	}
	assert_int_equal(enc->n, MEMTRACE_MTF_LEN);
	/* a code naming an empty slot */
	memtrace_mtf__free(dec);
	dec = calloc(1, sizeof(*dec));
	assert_int_equal(memtrace_mtf__decode(&ref, dec, 0, NULL, false), -EBADMSG);
	memtrace_mtf__free(enc);
	memtrace_mtf__free(dec);
}

static int64_t value_of(const struct profile *p, const char *leaf, int type)
{
	char buf[64];
	int64_t v = 0;

	for (uint32_t i = 0; i < p->nsamples; i++) {
		const struct profile_sample *s = &p->samples[i];

		if (s->nlocs &&
		    !strcmp(profile__location_name(p, s->loc_ids[0], buf, sizeof(buf)), leaf))
			v += s->values[type];
	}
	return v;
}

/* Locations of main, f (two per code: an inlined pair) and g. */
static void write_locations(struct memtrace_writer *w, uint64_t *c_main, uint64_t *c_f,
			    uint64_t *c_g)
{
	struct memtrace_loc m = {"main.c", "main", 10};
	struct memtrace_loc f[2] = {{"f.c", "f_outer", 20}, {"f.c", "f", 21}};
	struct memtrace_loc g = {"g.c", "g", 30};

	*c_main = memtrace__loc_code(m.file, m.defname, m.line);
	*c_f = memtrace__loc_code("f.c", "f", 21);
	*c_g = memtrace__loc_code(g.file, g.defname, g.line);
	assert_int_equal(memtrace_writer__location(w, *c_main, &m, 1), 0);
	assert_int_equal(memtrace_writer__location(w, *c_f, f, 2), 0);
	assert_int_equal(memtrace_writer__location(w, *c_g, &g, 1), 0);
	assert_true(memtrace_writer__has_location(w, *c_g));
}

static FILE *make_trace(unsigned nf, unsigned ng)
{
	struct memtrace_writer *w = NULL;
	uint64_t cm, cf, cg, id, codes[2];
	FILE *f = tmpfile();

	assert_non_null(f);
	assert_int_equal(memtrace_writer__new(&w, f,
					      &(struct memtrace_writer_opts){
						      .sample_rate = 8.0 / 16384,
						      .word_size = 8,
						      .executable = "/usr/bin/prog",
						      .host = "host",
						      .pid = 77,
						      .start_us = START,
						      .context_room = 64,
						      .context = "first",
					      }),
			 0);
	write_locations(w, &cm, &cf, &cg);
	codes[0] = cm;
	for (unsigned i = 0; i < nf; i++) {
		codes[1] = cf;
		assert_int_equal(memtrace_writer__alloc(w, &id, START + 10 + i, 8, 1,
							MEMTRACE_SRC_EXTERNAL, codes, 2),
				 0);
		assert_true(id == i);
		/* every other f block freed at once */
		if (i % 2)
			assert_int_equal(memtrace_writer__collect(w, START + 10 + i, id), 0);
	}
	for (unsigned i = 0; i < ng; i++) {
		codes[1] = cg;
		assert_int_equal(memtrace_writer__alloc(w, &id, START + 2000000, 512, 2,
							MEMTRACE_SRC_EXTERNAL, codes, 2),
				 0);
	}
	/* a collect of an id never given is refused */
	assert_int_equal(memtrace_writer__collect(w, START + 2000000, nf + ng), -EINVAL);
	assert_int_equal(memtrace_writer__finish(w, "final context"), 0);
	assert_true(memtrace_writer__allocs(w) == nf + ng);
	memtrace_writer__free(w);
	fflush(f);
	rewind(f);
	return f;
}

static void test_memtrace__writer_read_back(void **state)
{
	struct memtrace_read_stats st;
	struct profile *p = NULL;
	char msg[200];
	FILE *f;

	(void)state;
	/* 6000 allocations with 10-byte codes each: several packets */
	f = make_trace(6000, 3);
	assert_int_equal(memtrace_read__profile(&p, &st, f, NULL, msg, sizeof(msg)), 0);
	assert_true(st.packets > 3);
	assert_int_equal(st.locations, 3);
	assert_int_equal(st.allocs, 6003);
	assert_int_equal(st.collects, 3000);
	assert_int_equal(st.unknown_collects, 0);
	assert_int_equal(st.unknown_codes, 0);
	/* one sample stands for 16384 bytes; objects: those over the block's 64 bytes */
	assert_int_equal(value_of(p, "f", 1), 6000 * 16384ll);
	assert_int_equal(value_of(p, "f", 3), 3000 * 16384ll);
	assert_int_equal(value_of(p, "f", 0), 6000 * 256ll);
	assert_int_equal(value_of(p, "f", 2), 3000 * 256ll);
	assert_int_equal(value_of(p, "g", 3), 3 * 2 * 16384ll);
	assert_int_equal(value_of(p, "g", 2), 3 * 8ll); /* 2 samples x 16384 / 4096 bytes */
	/* the trace's most live is at its end: every f block kept, then g's */
	assert_int_equal(value_of(p, "f", 5), 3000 * 16384ll);
	assert_int_equal(value_of(p, "g", 5), 3 * 2 * 16384ll);
	assert_int_equal(value_of(p, "g", 4), 3 * 8ll);
	assert_int_equal(p->period, 16384);
	/* --heap's shape, and none of a run's metadata: the trace's comments come first */
	assert_string_equal(p->mode, "heap");
	assert_int_equal(p->ntypes, 6);
	assert_string_equal(p->types[0].type, "alloc_objects");
	assert_string_equal(p->types[1].type, "alloc_space");
	assert_string_equal(p->types[2].type, "inuse_objects");
	assert_string_equal(p->types[3].type, "inuse_space");
	assert_string_equal(p->types[3].unit, "bytes");
	assert_string_equal(p->types[5].type, "peak_space");
	assert_int_equal(p->default_type, 3);
	assert_int_equal(p->ntext_types, 2);
	assert_int_equal(p->text_types[0], 3);
	assert_int_equal(p->text_types[1], 1);
	assert_string_equal(p->period_type.type, "space");
	assert_string_equal(p->period_type.unit, "bytes");
	assert_true(p->ncomments > 0);
	assert_non_null(strstr(p->comments[0], "memtrace of "));
	/* the inlined pair: f is the leaf, f_outer its caller, main the root */
	for (uint32_t i = 0; i < p->nsamples; i++) {
		char buf[64];

		assert_int_equal(p->samples[i].nlocs, p->samples[i].values[0] == 24 ? 2 : 3);
		assert_string_equal(
			profile__location_name(p, p->samples[i].loc_ids[p->samples[i].nlocs - 1],
					       buf, sizeof(buf)),
			"main");
	}
	/* the context rewritten at the end, in the room kept for it */
	{
		bool found = false;

		for (uint32_t i = 0; i < p->ncomments; i++)
			found |= strstr(p->comments[i], "memtrace context: final context") != NULL;
		assert_true(found);
	}
	profile__free(p);
	fclose(f);
}

static void test_memtrace__reader_rejects_damage(void **state)
{
	struct profile *p;
	char *buf = NULL, msg[200];
	size_t size = 0, n;
	FILE *f, *m;
	int ok = 0;

	(void)state;
	f = make_trace(300, 2);
	save_seed("unit_two_functions", f);
	rewind(f);
	m = open_memstream(&buf, &size);
	assert_non_null(m);
	while ((n = fread(msg, 1, sizeof(msg), f)))
		fwrite(msg, 1, n, m);
	fclose(m);
	fclose(f);
	/* Every cut: a shorter valid trace (at a packet boundary) or one line saying what is
	 * wrong; never anything else. */
	for (size_t len = 0; len < size; len++) {
		int err;

		f = fmemopen(buf, len ? len : 1, "r");
		assert_non_null(f);
		if (!len)
			fgetc(f);
		p = NULL;
		err = memtrace_read__profile(&p, NULL, f, NULL, msg, sizeof(msg));
		fclose(f);
		if (!err) {
			ok++;
			profile__free(p);
			continue;
		}
		assert_int_equal(err, -EBADMSG);
		assert_non_null(strstr(msg, "malformed memtrace") ? msg : (len ? NULL : msg));
		assert_null(strchr(msg, '\n'));
	}
	assert_true(ok >= 1 && ok < 10); /* the packet boundaries only */
	/* the second packet's magic, right after the first packet */
	n = (size_t)((uint8_t)buf[4] | (uint8_t)buf[5] << 8) / 8;
	assert_true(n > MEMTRACE_HEADER_SIZE && n < size);
	buf[n] ^= 0xFF;
	f = fmemopen(buf, size, "r");
	p = NULL;
	assert_int_not_equal(memtrace_read__profile(&p, NULL, f, NULL, msg, sizeof(msg)), 0);
	fclose(f);
	profile__free(p);
	free(buf);
}

/* Hand-made bytes in memtrace's own style: cache hits with predictions, a short allocation, a
 * shared prefix with the previous backtrace, a collect. */
static void put(uint8_t **p, uint64_t v, unsigned n)
{
	for (unsigned i = 0; i < n; i++)
		*(*p)++ = (uint8_t)(v >> (8 * i));
}

static void loc_event(uint8_t **p, uint64_t code, const char *file, const char *def, unsigned fc,
		      unsigned dc)
{
	uint64_t bits = memtrace__pack_loc(1, 0, 0, fc, dc);

	put(p, (uint64_t)MEMTRACE_EV_LOCATION << 25 | (START & 0x1FFFFFF), 4);
	put(p, code, 8);
	put(p, 1, 1);
	put(p, bits, 6);
	if (fc == 31) {
		memcpy(*p, file, strlen(file) + 1);
		*p += strlen(file) + 1;
	}
	if (dc == 31) {
		memcpy(*p, def, strlen(def) + 1);
		*p += strlen(def) + 1;
	}
}

static void test_memtrace__reader_follows_cache_and_prefix(void **state)
{
	uint8_t data[2048], *p = data, *pkt;
	struct memtrace_header h = {
		.ts_begin = START, .ts_end = START, .pid = 5, .verify_ix = MEMTRACE_NO_VERIFIER};
	struct memtrace_read_stats st;
	struct profile *prof = NULL;
	uint64_t rate = 0;
	double one = 1.0;
	char msg[200];
	FILE *f;

	(void)state;
	/* trace_info */
	p += MEMTRACE_HEADER_SIZE;
	put(&p, START & 0x1FFFFFF, 4);
	memcpy(&rate, &one, 8);
	put(&p, rate, 8);
	put(&p, 8, 1);
	memcpy(p, "exe\0host\0\0", 10);
	p += 10;
	put(&p, 5, 8);
	*p++ = 0;
	h.packet_bits = (uint32_t)(p - data) * 8;
	memtrace__put_header(data, &h);

	/* locations A, B (same file), C, D */
	pkt = p;
	p += MEMTRACE_HEADER_SIZE;
	loc_event(&p, 0xA, "a.c", "A", 31, 31);
	loc_event(&p, 0xB, "a.c", "B", 0, 31);
	loc_event(&p, 0xC, "c.c", "C", 31, 31);
	loc_event(&p, 0xD, "a.c", "D", 1, 31); /* a.c is second in the file table now */
	h.packet_bits = (uint32_t)(p - pkt) * 8;
	memtrace__put_header(pkt, &h);

	/* events */
	pkt = p;
	p += MEMTRACE_HEADER_SIZE;
	/* 1: [A B C] as misses in buckets 1, 2, 3 (each predicting the next) */
	put(&p, (uint64_t)MEMTRACE_EV_ALLOC << 25 | ((START + 1) & 0x1FFFFFF), 4);
	put(&p, 4, 1);	/* length 4 words */
	put(&p, 32, 1); /* nsamples 32: 256 bytes at rate 1 */
	put(&p, MEMTRACE_SRC_MINOR, 1);
	put(&p, 0, 1);
	put(&p, 3, 2);
	put(&p, 1 << 2 | 3, 2);
	put(&p, 0xA, 8);
	put(&p, 2 << 2 | 3, 2);
	put(&p, 0xB, 8);
	put(&p, 3 << 2 | 3, 2);
	put(&p, 0xC, 8);
	/* 2: short allocation of 2 words, [A B C] again as one hit on bucket 1 + 2 predictions */
	put(&p, (uint64_t)(MEMTRACE_EV_SHORT_ALLOC + 2) << 25 | ((START + 2) & 0x1FFFFFF), 4);
	put(&p, 0, 1);
	put(&p, 1, 1);
	put(&p, 1 << 2 | 2, 2);
	put(&p, 2, 1);
	/* 3: [A B] shared with the last one, then D as a miss */
	put(&p, (uint64_t)MEMTRACE_EV_ALLOC << 25 | ((START + 3) & 0x1FFFFFF), 4);
	put(&p, 1, 1);
	put(&p, 8, 1);
	put(&p, MEMTRACE_SRC_EXTERNAL, 1);
	put(&p, 2, 1);
	put(&p, 1, 2);
	put(&p, 4 << 2 | 3, 2);
	put(&p, 0xD, 8);
	/* collect object 0 (three allocated: delta 3 - 1 - 0) */
	put(&p, (uint64_t)MEMTRACE_EV_COLLECT << 25 | ((START + 4) & 0x1FFFFFF), 4);
	put(&p, 2, 1);
	h.packet_bits = (uint32_t)(p - pkt) * 8;
	h.ts_end = START + 4;
	h.alloc_id_begin = 0;
	h.alloc_id_end = 3;
	memtrace__put_header(pkt, &h);

	f = fmemopen(data, (size_t)(p - data), "r");
	assert_non_null(f);
	save_seed("unit_cache_prefix", f);
	rewind(f);
	assert_int_equal(memtrace_read__profile(&prof, &st, f, NULL, msg, sizeof(msg)), 0);
	fclose(f);
	assert_int_equal(st.allocs, 3);
	assert_int_equal(st.unknown_codes, 0);
	assert_int_equal(st.locations, 4);
	assert_int_equal(value_of(prof, "C", 1), 256 + 8);
	assert_int_equal(value_of(prof, "C", 3), 8); /* the first one collected */
	assert_int_equal(value_of(prof, "D", 1), 64);
	assert_int_equal(value_of(prof, "D", 3), 64);
	for (uint32_t i = 0; i < prof->nsamples; i++) {
		char buf[32];

		assert_int_equal(prof->samples[i].nlocs, 3);
		assert_string_equal(
			profile__location_name(prof, prof->samples[i].loc_ids[2], buf, sizeof(buf)),
			"A");
		assert_string_equal(
			profile__location_name(prof, prof->samples[i].loc_ids[1], buf, sizeof(buf)),
			"B");
		assert_string_equal(
			prof->functions
				[prof->locations[prof->samples[i].loc_ids[1] - 1].function_id - 1]
					.file,
			"a.c");
	}
	profile__free(prof);
}

static void test_memtrace__at_keeps_what_was_live(void **state)
{
	struct memtrace_writer *w = NULL;
	struct memtrace_loc l = {"x.c", "x", 1};
	uint64_t code = memtrace__loc_code("x.c", "x", 1), id;
	const double at[] = {0.5, 2, 4};
	const int64_t live[] = {0, 16, 0}, allocated[] = {0, 16, 16};
	FILE *f = tmpfile();

	(void)state;
	assert_int_equal(memtrace_writer__new(&w, f,
					      &(struct memtrace_writer_opts){.sample_rate = 1,
									     .word_size = 8,
									     .pid = 1,
									     .start_us = START}),
			 0);
	assert_int_equal(memtrace_writer__location(w, code, &l, 1), 0);
	assert_int_equal(memtrace_writer__alloc(w, &id, START + 1000000, 2, 2,
						MEMTRACE_SRC_EXTERNAL, &code, 1),
			 0);
	assert_int_equal(memtrace_writer__collect(w, START + 3000000, id), 0);
	assert_int_equal(memtrace_writer__finish(w, NULL), 0);
	memtrace_writer__free(w);
	for (size_t i = 0; i < 3; i++) {
		struct memtrace_read_opts o = {.at = true, .at_s = at[i]};
		struct profile *p = NULL;
		char msg[100];

		rewind(f);
		assert_int_equal(memtrace_read__profile(&p, NULL, f, &o, msg, sizeof(msg)), 0);
		assert_int_equal(value_of(p, "x", 3), live[i]);
		assert_int_equal(value_of(p, "x", 1), allocated[i]);
		profile__free(p);
	}
	fclose(f);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_memtrace__vint_lengths_and_round_trip),
		cmocka_unit_test(test_memtrace__location_packing),
		cmocka_unit_test(test_memtrace__packet_header),
		cmocka_unit_test(test_memtrace__mtf_encode_decode_agree),
		cmocka_unit_test(test_memtrace__writer_read_back),
		cmocka_unit_test(test_memtrace__reader_rejects_damage),
		cmocka_unit_test(test_memtrace__reader_follows_cache_and_prefix),
		cmocka_unit_test(test_memtrace__at_keeps_what_was_live),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
