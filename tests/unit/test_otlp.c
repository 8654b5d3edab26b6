// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * export/otlp: the request decoded back here with a wire-format reader of our own (written from
 * the field numbers of opentelemetry-proto v1.11.0, not from otlp.c's enum) and checked against
 * the ProfilesDictionary rules: every table's entry 0 the zero value, no duplicates, every index
 * in range; then the attributes and times.  Also the response parser, the retry classification,
 * the endpoint, OTEL_EXPORTER_OTLP_HEADERS and which variables CMD does not get.
 */
#include <errno.h>
#include <inttypes.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "export/otlp.h"
#include "export/push.h"
#include "profile/profile.h"
#include "util/protobuf.h"

#define T0   1700000000123456789LL
#define DUR  2000000000LL
#define MAXF 4096

/* ---- a small wire-format reader ---- */

struct fld {
	uint32_t num, wt;
	uint64_t v; /* varint or fixed64 */
	const uint8_t *d;
	size_t len; /* wire type 2 */
};

struct msg {
	struct fld f[MAXF];
	size_t n;
};

static uint64_t varint(const uint8_t **p, const uint8_t *end)
{
	uint64_t v = 0;

	for (unsigned s = 0; s < 64; s += 7) {
		assert_true(*p < end);
		v |= (uint64_t)(**p & 0x7f) << s;
		if (!(*(*p)++ & 0x80))
			return v;
	}
	fail_msg("varint too long");
	return 0;
}

static struct msg *decode(const uint8_t *d, size_t len)
{
	struct msg *m = calloc(1, sizeof(*m));
	const uint8_t *p = d, *end = d + len;

	assert_non_null(m);
	while (p < end) {
		uint64_t tag = varint(&p, end);
		struct fld *f = &m->f[m->n++];

		assert_true(m->n < MAXF);
		f->num = (uint32_t)(tag >> 3);
		f->wt = (uint32_t)(tag & 7);
		assert_true(f->num > 0);
		if (f->wt == 0) {
			f->v = varint(&p, end);
		} else if (f->wt == 1) {
			assert_true(end - p >= 8);
			for (int i = 0; i < 8; i++)
				f->v |= (uint64_t)p[i] << (8 * i);
			p += 8;
		} else {
			assert_int_equal(f->wt, 2);
			f->len = varint(&p, end);
			assert_true(f->len <= (size_t)(end - p));
			f->d = p;
			p += f->len;
		}
	}
	return m;
}

static size_t count(const struct msg *m, uint32_t num)
{
	size_t n = 0;

	for (size_t i = 0; i < m->n; i++)
		n += m->f[i].num == num;
	return n;
}

/* The k-th field num, NULL when there are fewer. */
static const struct fld *nth(const struct msg *m, uint32_t num, size_t k)
{
	for (size_t i = 0; i < m->n; i++)
		if (m->f[i].num == num && !k--)
			return &m->f[i];
	return NULL;
}

static uint64_t num_or0(const struct msg *m, uint32_t num)
{
	const struct fld *f = nth(m, num, 0);

	return f ? f->v : 0;
}

static struct msg *sub(const struct fld *f)
{
	assert_non_null(f);
	assert_int_equal(f->wt, 2);
	return decode(f->d, f->len);
}

/* A packed repeated int32 field's values (all occurrences), into out. */
static size_t packed(const struct msg *m, uint32_t num, uint64_t *out, size_t max)
{
	size_t n = 0;

	for (size_t i = 0; i < m->n; i++) {
		const struct fld *f = &m->f[i];
		const uint8_t *p, *end;

		if (f->num != num)
			continue;
		if (f->wt == 0) {
			out[n++] = f->v;
			continue;
		}
		for (p = f->d, end = f->d + f->len; p < end && n < max;)
			out[n++] = varint(&p, end);
	}
	return n;
}

/* ---- the dictionary ---- */

struct dict {
	const struct fld *t[8][MAXF]; /* by field number 1..7 */
	size_t n[8];
};

static void read_dict(struct dict *d, const struct msg *m)
{
	memset(d, 0, sizeof(*d));
	for (size_t i = 0; i < m->n; i++) {
		uint32_t num = m->f[i].num;

		assert_true(num >= 1 && num <= 7);
		d->t[num][d->n[num]++] = &m->f[i];
	}
	for (uint32_t t = 1; t <= 7; t++) {
		/* Present, entry 0 the zero value, and no entry twice. */
		assert_true(d->n[t] >= 1);
		assert_int_equal(d->t[t][0]->len, 0);
		for (size_t i = 0; i < d->n[t]; i++)
			for (size_t j = i + 1; j < d->n[t]; j++)
				assert_false(
					d->t[t][i]->len == d->t[t][j]->len &&
					!memcmp(d->t[t][i]->d, d->t[t][j]->d, d->t[t][i]->len));
	}
}

static const char *string_at(const struct dict *d, uint64_t i, char *buf, size_t size)
{
	const struct fld *f;

	assert_true(i < d->n[5]);
	f = d->t[5][i];
	assert_true(f->len < size);
	memcpy(buf, f->d, f->len);
	buf[f->len] = 0;
	return buf;
}

/* Attribute i as "key=value" (string or integer value). */
static const char *attr_at(const struct dict *d, uint64_t i, char *buf, size_t size)
{
	struct msg *kv, *any;
	char key[128], val[128];
	const struct fld *s;

	assert_true(i > 0 && i < d->n[6]);
	kv = sub(d->t[6][i]);
	string_at(d, num_or0(kv, 1), key, sizeof(key));
	any = sub(nth(kv, 2, 0));
	s = nth(any, 1, 0);
	if (s)
		snprintf(val, sizeof(val), "%.*s", (int)s->len, s->d);
	else
		snprintf(val, sizeof(val), "%" PRId64, (int64_t)num_or0(any, 3));
	snprintf(buf, size, "%s=%s", key, val);
	free(kv);
	free(any);
	return buf;
}

static bool has_attr(const struct dict *d, const uint64_t *idx, size_t n, const char *want)
{
	char buf[300];

	for (size_t i = 0; i < n; i++)
		if (!strcmp(attr_at(d, idx[i], buf, sizeof(buf)), want))
			return true;
	return false;
}

/* Every index of every table entry in range. */
static void check_tables(const struct dict *d)
{
	uint64_t idx[256];

	for (size_t i = 1; i < d->n[1]; i++) { /* mappings */
		struct msg *m = sub(d->t[1][i]);
		size_t n = packed(m, 5, idx, 256);

		assert_true(num_or0(m, 4) < d->n[5]);
		for (size_t k = 0; k < n; k++)
			assert_true(idx[k] > 0 && idx[k] < d->n[6]);
		free(m);
	}
	for (size_t i = 1; i < d->n[2]; i++) { /* locations */
		struct msg *m = sub(d->t[2][i]);

		assert_true(num_or0(m, 1) < d->n[1]);
		for (size_t k = 0; k < count(m, 3); k++) {
			struct msg *line = sub(nth(m, 3, k));

			assert_true(num_or0(line, 1) < d->n[3]);
			free(line);
		}
		free(m);
	}
	for (size_t i = 1; i < d->n[3]; i++) { /* functions */
		struct msg *m = sub(d->t[3][i]);

		for (uint32_t f = 1; f <= 3; f++)
			assert_true(num_or0(m, f) < d->n[5]);
		free(m);
	}
	for (size_t i = 1; i < d->n[6]; i++) { /* attributes */
		struct msg *m = sub(d->t[6][i]);

		assert_true(num_or0(m, 1) > 0 && num_or0(m, 1) < d->n[5]);
		free(m);
	}
	for (size_t i = 1; i < d->n[7]; i++) { /* stacks */
		struct msg *m = sub(d->t[7][i]);
		size_t n = packed(m, 1, idx, 256);

		assert_true(n > 0);
		for (size_t k = 0; k < n; k++)
			assert_true(idx[k] > 0 && idx[k] < d->n[2]);
		free(m);
	}
}

/* ---- the profile ---- */

static struct profile *heap_profile(void)
{
	struct profile_mapping m1 = {0x1000, 0x2000, 0, "/usr/bin/app", "abcd", true};
	struct profile_mapping m2 = {0x7000, 0x8000, 0, "/lib/libc.so.6", "", true};
	uint32_t mid1, mid2, f1, f2, f3, l1, l2, l3, s1[2], s2[2];
	int64_t v1[2] = {4096, 2}, v2[2] = {64, 0};
	struct profile *p;

	assert_int_equal(profile__new(&p, "heap"), 0);
	assert_int_equal(profile__add_type(p, "alloc_space", "bytes"), 0);
	assert_int_equal(profile__add_type(p, "alloc_objects", "count"), 0);
	p->time_nanos = T0;
	p->duration_nanos = DUR;
	assert_int_equal(profile__mapping(p, &mid1, &m1), 0);
	assert_int_equal(profile__mapping(p, &mid2, &m2), 0);
	assert_int_equal(profile__function(p, &f1, "app_work", "app_work", "app.c", 10), 0);
	assert_int_equal(profile__function(p, &f2, "main", "main", "app.c", 1), 0);
	assert_int_equal(profile__function(p, &f3, "malloc", "malloc", "", 0), 0);
	assert_int_equal(profile__location(p, &l1, 0x1100, mid1, f1, 12), 0);
	assert_int_equal(profile__location(p, &l2, 0x1200, mid1, f2, 3), 0);
	assert_int_equal(profile__location(p, &l3, 0x7100, mid2, f3, 0), 0);
	s1[0] = l1;
	s1[1] = l2;
	s2[0] = l3;
	s2[1] = l2;
	assert_int_equal(profile__add_sample(p, 10, 11, "worker", "app", s1, 2, v1, 0), 0);
	p->samples[p->last_sample].exe = profile__intern(p, "/opt/app/bin/app");
	assert_int_equal(profile__add_sample(p, 20, 20, "db", "db", s2, 2, v2, 0), 0);
	assert_int_equal(profile__add_label(p, "oom_kill", "yes", 0, true), 0);
	return p;
}

static void test_otlp__request_decodes_with_a_valid_dictionary(void **state)
{
	struct profile *p = heap_profile();
	struct otlp_part parts[2] = {{"app", false, p}, {"c0ffee", true, p}};
	struct dict *d = calloc(1, sizeof(*d));
	struct msg *req, *dm;
	struct pbuf b;
	char buf[300];
	bool pid10 = false, worker = false, oom = false, build_id = false, fn = false;

	(void)state;
	pbuf__init(&b);
	assert_int_equal(otlp__encode(&b, parts, 2, "h1"), 0);
	req = decode(b.data, b.len);
	assert_int_equal(count(req, 1), 2); /* a ResourceProfiles per part */
	assert_int_equal(count(req, 2), 1); /* one dictionary */
	dm = sub(nth(req, 2, 0));
	read_dict(d, dm);
	check_tables(d);
	/* Both parts share the tables: each function once though it was encoded twice. */
	assert_int_equal(d->n[3], 4);
	assert_int_equal(d->n[4], 1); /* links: only the zero entry */
	for (size_t i = 1; i < d->n[5]; i++)
		fn |= !strcmp(string_at(d, i, buf, sizeof(buf)), "app_work");
	assert_true(fn);
	for (size_t i = 1; i < d->n[1]; i++) {
		struct msg *m = sub(d->t[1][i]);
		uint64_t idx[4];
		size_t n = packed(m, 5, idx, 4);

		build_id |= has_attr(d, idx, n, "process.executable.build_id.gnu=abcd");
		free(m);
	}
	assert_true(build_id);

	for (size_t r = 0; r < 2; r++) {
		struct msg *rp = sub(nth(req, 1, r)), *res = sub(nth(rp, 1, 0));
		struct msg *sp = sub(nth(rp, 2, 0));
		bool svc = false, cid = false;

		for (size_t k = 0; k < count(res, 1); k++) {
			struct msg *kv = sub(nth(res, 1, k)), *any = sub(nth(kv, 2, 0));
			const struct fld *key = nth(kv, 1, 0), *val = nth(any, 1, 0);

			snprintf(buf, sizeof(buf), "%.*s=%.*s", (int)key->len, key->d,
				 (int)val->len, val->d);
			svc |= !strcmp(buf, r ? "service.name=c0ffee" : "service.name=app");
			cid |= !strcmp(buf, "container.id=c0ffee");
			free(kv);
			free(any);
		}
		assert_true(svc);
		assert_int_equal(cid, r == 1);
		assert_int_equal(count(sp, 2), 2); /* a Profile per sample type */
		for (size_t t = 0; t < 2; t++) {
			struct msg *prof = sub(nth(sp, 2, t)), *vt = sub(nth(prof, 1, 0));
			const struct fld *time = nth(prof, 3, 0);

			assert_string_equal(string_at(d, num_or0(vt, 1), buf, sizeof(buf)),
					    t ? "alloc_objects" : "alloc_space");
			assert_non_null(time);
			assert_int_equal(time->wt, 1); /* fixed64 */
			assert_int_equal(time->v, T0);
			assert_int_equal(num_or0(prof, 4), DUR);
			/* alloc_objects of the second sample is 0: not sent. */
			assert_int_equal(count(prof, 2), t ? 1 : 2);
			for (size_t s = 0; s < count(prof, 2); s++) {
				struct msg *sm = sub(nth(prof, 2, s));
				uint64_t idx[32], vals[2];
				size_t n = packed(sm, 2, idx, 32);

				assert_true(num_or0(sm, 1) > 0 && num_or0(sm, 1) < d->n[7]);
				for (size_t k = 0; k < n; k++)
					assert_true(idx[k] > 0 && idx[k] < d->n[6]);
				/* Attribute keys unique within the sample. */
				for (size_t k = 0; k < n; k++)
					for (size_t l = k + 1; l < n; l++)
						assert_true(idx[k] != idx[l]);
				assert_int_equal(packed(sm, 4, vals, 2), 1);
				if (has_attr(d, idx, n, "process.pid=10")) {
					pid10 = true;
					assert_int_equal(vals[0], t ? 2 : 4096);
					worker |=
						has_attr(d, idx, n, "thread.name=worker") &&
						has_attr(d, idx, n, "thread.id=11") &&
						has_attr(d, idx, n,
							 "process.executable.name=app") &&
						has_attr(
							d, idx, n,
							"process.executable.path=/opt/app/bin/app");
				}
				oom |= has_attr(d, idx, n, "oom_kill=yes");
				free(sm);
			}
			free(prof);
			free(vt);
		}
		free(rp);
		free(res);
		free(sp);
	}
	assert_true(pid10);
	assert_true(worker);
	assert_true(oom);
	free(dm);
	free(req);
	free(d);
	pbuf__release(&b);
	profile__free(p);
}

static void test_otlp__partial_success_parsed(void **state)
{
	static const uint8_t full[] = {0x0a, 0x07, 0x08, 0x03, 0x12, 0x03, 'b', 'a', 'd'};
	/* An unknown field (9, varint) and an unknown fixed32 first: skipped. */
	static const uint8_t unknown[] = {0x48, 0x01, 0x55, 1, 2, 3, 4, 0x0a, 0x02, 0x08, 0x05};
	static const uint8_t warning[] = {0x0a, 0x04, 0x12, 0x02, 'o', 'k'};
	struct otlp_response r;

	(void)state;
	assert_int_equal(otlp__parse_response(&r, full, sizeof(full)), 0);
	assert_int_equal(r.rejected_profiles, 3);
	assert_string_equal(r.message, "bad");
	assert_int_equal(otlp__parse_response(&r, unknown, sizeof(unknown)), 0);
	assert_int_equal(r.rejected_profiles, 5);
	assert_int_equal(otlp__parse_response(&r, warning, sizeof(warning)), 0);
	assert_int_equal(r.rejected_profiles, 0);
	assert_string_equal(r.message, "ok");
	assert_int_equal(otlp__parse_response(&r, "", 0), 0);
	assert_int_equal(r.rejected_profiles, 0);
	/* A body cut inside the message: the count still read. */
	assert_int_equal(otlp__parse_response(&r, full, sizeof(full) - 1), 0);
	assert_int_equal(r.rejected_profiles, 3);
	assert_string_equal(r.message, "ba");
}

static void test_otlp__bad_responses_refused(void **state)
{
	static const uint8_t group[] = {0x0b, 0x0c};
	static const uint8_t field0[] = {0x00, 0x01};
	static const uint8_t long_varint[] = {0x08, 0xff, 0xff, 0xff, 0xff, 0xff,
					      0xff, 0xff, 0xff, 0xff, 0xff, 0x01};
	static const uint8_t cut_other[] = {0x1a, 0x05, 'x'};
	static const uint8_t html[] = "<html>502</html>";
	struct otlp_response r;

	(void)state;
	assert_int_equal(otlp__parse_response(&r, group, sizeof(group)), -EBADMSG);
	assert_int_equal(otlp__parse_response(&r, field0, sizeof(field0)), -EBADMSG);
	assert_int_equal(otlp__parse_response(&r, long_varint, sizeof(long_varint)), -EBADMSG);
	assert_int_equal(otlp__parse_response(&r, cut_other, sizeof(cut_other)), -EBADMSG);
	assert_int_equal(otlp__parse_response(&r, html, sizeof(html) - 1), -EBADMSG);
	assert_int_equal(r.rejected_profiles, 0);
}

static void test_otlp__only_429_502_503_504_retried(void **state)
{
	static const long yes[] = {429, 502, 503, 504};
	static const long no[] = {200, 400, 401, 403, 404, 413, 500, 501, 505};

	(void)state;
	for (size_t i = 0; i < sizeof(yes) / sizeof(yes[0]); i++)
		assert_true(otlp__status_retryable(yes[i]));
	for (size_t i = 0; i < sizeof(no) / sizeof(no[0]); i++)
		assert_false(otlp__status_retryable(no[i]));
}

static void test_otlp__endpoint(void **state)
{
	static const char *const cases[][3] = {
		{"http://c:4318", "", "http://c:4318/v1development/profiles"},
		{"http://c:4318/", "", "http://c:4318/v1development/profiles"},
		{"https://c/otlp", "", "https://c/otlp/v1development/profiles"},
		{"http://c:4318/v1development/profiles", "",
		 "http://c:4318/v1development/profiles"},
		{"http://c:4318/custom", "x", "http://c:4318/custom"},
	};
	char *u;

	(void)state;
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		assert_int_equal(otlp__url(&u, cases[i][0], *cases[i][1]), 0);
		assert_string_equal(u, cases[i][2]);
		free(u);
	}
}

static void test_otlp__env_endpoint_signal_first(void **state)
{
	bool exact;

	(void)state;
	unsetenv(OTLP_ENV_PROFILES_ENDPOINT);
	unsetenv(OTLP_ENV_ENDPOINT);
	assert_null(otlp__env_endpoint(&exact));
	setenv(OTLP_ENV_ENDPOINT, "http://gen:4318", 1);
	assert_string_equal(otlp__env_endpoint(&exact), "http://gen:4318");
	assert_false(exact);
	setenv(OTLP_ENV_PROFILES_ENDPOINT, "http://sig:4318/p", 1);
	assert_string_equal(otlp__env_endpoint(&exact), "http://sig:4318/p");
	assert_true(exact);
	unsetenv(OTLP_ENV_PROFILES_ENDPOINT);
	unsetenv(OTLP_ENV_ENDPOINT);
}

static void test_otlp__headers(void **state)
{
	char **h;

	(void)state;
	assert_int_equal(otlp__parse_headers(&h, "a=b, Authorization=Bearer%20t0k , ,x-y=1=2"), 0);
	assert_string_equal(h[0], "a: b");
	assert_string_equal(h[1], "Authorization: Bearer t0k");
	assert_string_equal(h[2], "x-y: 1=2");
	assert_null(h[3]);
	otlp__free_headers(h);
	assert_int_equal(otlp__parse_headers(&h, "novalue"), -EINVAL);
	assert_int_equal(otlp__parse_headers(&h, "=v"), -EINVAL);
	assert_int_equal(otlp__parse_headers(&h, "a b=v"), -EINVAL);
	assert_int_equal(otlp__parse_headers(&h, "a=b%0d%0aX: y"), -EINVAL);
}

static void test_otlp__cmd_keeps_otel_variables_unless_otlp(void **state)
{
	enum push_protocol proto;

	(void)state;
	assert_int_equal(push__parse_protocol(&proto, "parca"), 0);
	assert_false(push__is_secret_env("OTEL_EXPORTER_OTLP_HEADERS=a=b"));
	assert_int_equal(push__parse_protocol(&proto, "otlp"), 0);
	assert_int_equal(proto, PUSH_OTLP);
	assert_true(push__is_secret_env("OTEL_EXPORTER_OTLP_HEADERS=a=b"));
	assert_true(push__is_secret_env("OTEL_EXPORTER_OTLP_ENDPOINT=http://c"));
	assert_true(push__is_secret_env("OTEL_EXPORTER_OTLP_PROFILES_HEADERS=a=b"));
	assert_true(push__is_secret_env("OTEL_EXPORTER_OTLP_PROFILES_ENDPOINT=http://c"));
	assert_false(push__is_secret_env("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT=http://c"));
	assert_false(push__is_secret_env("OTEL_EXPORTER_OTLP_HEADERSX=1"));
	assert_true(push__is_secret_env("BPFTRACE_PROF_PUSH_TOKEN=t"));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_otlp__request_decodes_with_a_valid_dictionary),
		cmocka_unit_test(test_otlp__partial_success_parsed),
		cmocka_unit_test(test_otlp__bad_responses_refused),
		cmocka_unit_test(test_otlp__only_429_502_503_504_retried),
		cmocka_unit_test(test_otlp__endpoint),
		cmocka_unit_test(test_otlp__env_endpoint_signal_first),
		cmocka_unit_test(test_otlp__headers),
		cmocka_unit_test(test_otlp__cmd_keeps_otel_variables_unless_otlp),
	};

	return cmocka_run_group_tests_name("otlp", tests, NULL, NULL);
}
