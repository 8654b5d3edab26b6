// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/* split__by_service: one profile per container or process name, with exact values. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

#include "profile/profile.h"
#include "profile/split.h"

static uint32_t loc(struct profile *p, uint32_t map, const char *fn, uint64_t addr)
{
	uint32_t f, l;

	assert_int_equal(profile__function(p, &f, fn, fn, "", 0), 0);
	assert_int_equal(profile__location(p, &l, addr, map, f, 0), 0);
	return l;
}

static void add(struct profile *p, uint32_t pid, const char *process, const uint32_t *locs,
		uint32_t n, int64_t count)
{
	int64_t v[2] = {count, count * 10};

	assert_int_equal(profile__add_sample(p, pid, pid, process, process, locs, n, v, false), 0);
}

/* Samples of the part's pid with the given leaf function name, summed. */
static int64_t leaf_sum(const struct profile *q, uint32_t pid, const char *fn, int idx)
{
	int64_t sum = 0;
	char buf[64];

	for (uint32_t i = 0; i < q->nsamples; i++) {
		const struct profile_sample *s = &q->samples[i];

		if (s->pid == pid && !strcmp(profile__location_name(q, s->loc_ids[0], buf, 64), fn))
			sum += s->values[idx];
	}
	return sum;
}

/*
 * Three services: container "c0ffee" (pids 10 and 11, different process names), process "nginx"
 * (pid 20, no container labels) and process "redis" (pid 30, labels without a container id).
 */
static void test_split__three_services_exact(void **state)
{
	struct profile_mapping m1 = {0x1000, 0x2000, 0, "/usr/bin/app", "ab", true};
	struct profile_mapping m2 = {0x5000, 0x6000, 0, "/usr/sbin/nginx", "", true};
	struct profile_mapping m3 = {0x7000, 0x8000, 0, "/lib/libc.so.6", "", true};
	struct split_part *parts;
	struct profile *p;
	uint32_t mid1, mid2, mid3, nparts, nfolded, a, b, c, d, s1[2], s2[2], s3[1];

	(void)state;
	assert_int_equal(profile__new(&p, "cpu"), 0);
	assert_int_equal(profile__add_type(p, "samples", "count"), 0);
	assert_int_equal(profile__add_type(p, "cpu", "nanoseconds"), 0);
	p->default_type = 1;
	p->period = 10101010;
	p->time_nanos = 1700000000000000000LL;
	p->duration_nanos = 2000000000LL;
	assert_int_equal(profile__add_comment(p, "cmdline: x"), 0);
	assert_int_equal(profile__add_counter(p, "ringbuf_full", "lost", 3), 0);
	assert_int_equal(profile__mapping(p, &mid1, &m1), 0);
	assert_int_equal(profile__mapping(p, &mid2, &m2), 0);
	assert_int_equal(profile__mapping(p, &mid3, &m3), 0);
	a = loc(p, mid1, "app_work", 0x1100);
	b = loc(p, mid3, "memcpy", 0x7100);
	c = loc(p, mid2, "ngx_loop", 0x5100);
	d = loc(p, mid1, "app_main", 0x1200);
	s1[0] = a;
	s1[1] = d;
	s2[0] = b;
	s2[1] = c;
	s3[0] = b;
	assert_int_equal(
		profile__set_process(p, &(struct profile_process){10, 1, "c0ffee", "/d/c"}), 0);
	assert_int_equal(
		profile__set_process(p, &(struct profile_process){11, 2, "c0ffee", "/d/c"}), 0);
	assert_int_equal(profile__set_process(p, &(struct profile_process){30, 0, "", "/sys"}), 0);
	add(p, 20, "nginx", s2, 2, 5);
	add(p, 10, "app", s1, 2, 7);
	add(p, 11, "helper", s3, 1, 2);
	add(p, 30, "redis", s3, 1, 4);
	add(p, 10, "app", s1, 2, 1); /* merges with the 7 */
	add(p, 20, "nginx", s3, 1, 6);

	assert_int_equal(split__by_service(&parts, &nparts, &nfolded, p, 0), 0);
	assert_int_equal(nparts, 3);
	assert_int_equal(nfolded, 0);
	/* First-seen order: nginx, the container, redis. */
	assert_string_equal(parts[0].service, "nginx");
	assert_false(parts[0].is_container);
	assert_string_equal(parts[1].service, "c0ffee");
	assert_true(parts[1].is_container);
	assert_string_equal(parts[2].service, "redis");
	assert_false(parts[2].is_container);

	for (uint32_t i = 0; i < nparts; i++) {
		struct profile *q = parts[i].profile;

		assert_string_equal(q->mode, "cpu");
		assert_int_equal(q->ntypes, 2);
		assert_string_equal(q->types[1].type, "cpu");
		assert_int_equal(q->default_type, 1);
		assert_int_equal(q->period, 10101010);
		assert_int_equal(q->time_nanos, 1700000000000000000LL);
		assert_int_equal(q->duration_nanos, 2000000000LL);
		assert_int_equal(q->ncomments, 1);
		assert_int_equal(q->ncounters, 1);
		assert_int_equal(q->counters[0].value, 3);
	}

	/* nginx: its two samples, two mappings in the original's order (nginx before libc). */
	assert_int_equal(parts[0].profile->nsamples, 2);
	assert_int_equal(leaf_sum(parts[0].profile, 20, "memcpy", 0), 11);
	assert_int_equal(leaf_sum(parts[0].profile, 20, "memcpy", 1), 110);
	assert_int_equal(parts[0].profile->nmappings, 2);
	assert_string_equal(parts[0].profile->mappings[0].file, "/usr/sbin/nginx");
	assert_string_equal(parts[0].profile->mappings[1].file, "/lib/libc.so.6");
	assert_int_equal(parts[0].profile->nlocations, 2);
	assert_int_equal(parts[0].profile->nprocesses, 0);

	/* The container: pids 10 and 11 with their labels; app first among its mappings. */
	assert_int_equal(parts[1].profile->nsamples, 2);
	assert_int_equal(leaf_sum(parts[1].profile, 10, "app_work", 0), 8);
	assert_int_equal(leaf_sum(parts[1].profile, 10, "app_work", 1), 80);
	assert_int_equal(leaf_sum(parts[1].profile, 11, "memcpy", 0), 2);
	assert_int_equal(parts[1].profile->nmappings, 2);
	assert_string_equal(parts[1].profile->mappings[0].file, "/usr/bin/app");
	assert_string_equal(parts[1].profile->mappings[0].build_id, "ab");
	assert_int_equal(parts[1].profile->nfunctions, 3);
	assert_int_equal(parts[1].profile->nprocesses, 2);
	assert_int_equal(profile__process(parts[1].profile, 11)->ns_pid, 2);
	assert_string_equal(profile__process(parts[1].profile, 10)->container_id, "c0ffee");
	/* The stack keeps its order: leaf first. */
	assert_string_equal(
		parts[1].profile
			->functions[parts[1].profile
					    ->locations[parts[1].profile->samples[0].loc_ids[1] - 1]
					    .function_id -
				    1]
			.name,
		"app_main");

	/* redis: labels without a container id do not make it a container. */
	assert_int_equal(parts[2].profile->nsamples, 1);
	assert_int_equal(leaf_sum(parts[2].profile, 30, "memcpy", 0), 4);
	assert_int_equal(parts[2].profile->nmappings, 1);
	assert_string_equal(profile__process(parts[2].profile, 30)->cgroup, "/sys");

	split__free(parts, nparts);
	profile__free(p);
}

static void test_split__empty_profile_has_no_parts(void **state)
{
	struct split_part *parts;
	struct profile *p;
	uint32_t n = 99, nfolded = 99;

	(void)state;
	assert_int_equal(profile__new(&p, "heap"), 0);
	assert_int_equal(split__by_service(&parts, &n, &nfolded, p, 0), 0);
	assert_int_equal(n, 0);
	assert_int_equal(nfolded, 0);
	split__free(parts, n);
	profile__free(p);
}

/* All of a part's samples' values of type idx, summed. */
static int64_t part_sum(const struct profile *q, int idx)
{
	int64_t sum = 0;

	for (uint32_t i = 0; i < q->nsamples; i++)
		sum += q->samples[i].values[idx];
	return sum;
}

/*
 * 70 host processes with distinct names (svc1 … svc70, svcN with N samples) and one container
 * with a single sample, cut to 8 series: the container and the six largest processes keep
 * theirs, in first-seen order, and the 64 others share "other" — every sample still there.
 */
static void test_split__services_past_the_cap_folded(void **state)
{
	struct profile_mapping m = {0x1000, 0x2000, 0, "/usr/bin/app", "", true};
	struct split_part *parts;
	struct profile *p;
	uint32_t mid, l, nparts, nfolded;
	int64_t total = 0;
	char name[16];

	(void)state;
	assert_int_equal(profile__new(&p, "cpu"), 0);
	assert_int_equal(profile__add_type(p, "samples", "count"), 0);
	assert_int_equal(profile__add_type(p, "cpu", "nanoseconds"), 0);
	p->default_type = 1;
	assert_int_equal(profile__mapping(p, &mid, &m), 0);
	l = loc(p, mid, "work", 0x1100);
	for (uint32_t i = 1; i <= 70; i++) {
		snprintf(name, sizeof(name), "svc%u", i);
		add(p, i, name, &l, 1, i);
	}
	assert_int_equal(
		profile__set_process(p, &(struct profile_process){1000, 1, "c0ffee", "/d/c"}), 0);
	add(p, 1000, "boxed", &l, 1, 1);

	/* Under the cap: one part per service, nothing folded. */
	assert_int_equal(split__by_service(&parts, &nparts, &nfolded, p, 71), 0);
	assert_int_equal(nparts, 71);
	assert_int_equal(nfolded, 0);
	for (uint32_t i = 0; i < nparts; i++)
		assert_string_not_equal(parts[i].service, SPLIT_OTHER);
	split__free(parts, nparts);

	assert_int_equal(split__by_service(&parts, &nparts, &nfolded, p, 8), 0);
	assert_int_equal(nparts, 8);
	assert_int_equal(nfolded, 64);
	for (uint32_t i = 0; i < 6; i++) {
		snprintf(name, sizeof(name), "svc%u", 65 + i);
		assert_string_equal(parts[i].service, name);
		assert_false(parts[i].is_container);
		assert_int_equal(parts[i].profile->nsamples, 1);
		assert_int_equal(part_sum(parts[i].profile, 0), 65 + i);
	}
	assert_string_equal(parts[6].service, "c0ffee");
	assert_true(parts[6].is_container);
	assert_int_equal(part_sum(parts[6].profile, 1), 10);
	assert_string_equal(parts[7].service, SPLIT_OTHER);
	assert_false(parts[7].is_container);
	/* svc1 … svc64: 64 samples, 1 + … + 64 = 2080, each keeping its own process label. */
	assert_int_equal(parts[7].profile->nsamples, 64);
	assert_int_equal(part_sum(parts[7].profile, 0), 2080);
	assert_int_equal(part_sum(parts[7].profile, 1), 20800);
	assert_int_equal(leaf_sum(parts[7].profile, 64, "work", 0), 64);
	assert_string_equal(parts[7].profile->samples[0].process, "svc1");
	for (uint32_t i = 0; i < nparts; i++)
		total += part_sum(parts[i].profile, 0);
	assert_int_equal(total, 70 * 71 / 2 + 1);
	split__free(parts, nparts);
	profile__free(p);
}

/* A Python thread's labels (gil, thread_name) and the partial flag stay with its sample in its
 * service's part: pushed profiles say what the written ones say. */
static void test_split__python_labels_kept(void **state)
{
	struct profile_mapping m = {0x1000, 0x2000, 0, "/usr/bin/python3", "", true};
	int64_t v[2] = {3, 30};
	struct split_part *parts;
	const struct profile_sample *s;
	struct profile *p;
	uint32_t mid, l, n, nfolded;

	(void)state;
	assert_int_equal(profile__new(&p, "cpu"), 0);
	assert_int_equal(profile__mapping(p, &mid, &m), 0);
	l = loc(p, mid, "work", 0x1100);
	assert_int_equal(profile__add_sample(p, 7, 8, "worker", "python3", &l, 1, v,
					     PROFILE_SAMPLE_GIL_HELD | PROFILE_SAMPLE_PARTIAL),
			 0);
	p->samples[p->last_sample].thread_name = profile__intern(p, "Thread-1 (work)");
	assert_int_equal(profile__add_sample(p, 7, 9, "main", "python3", &l, 1, v,
					     PROFILE_SAMPLE_GIL_RELEASED),
			 0);
	assert_int_equal(split__by_service(&parts, &n, &nfolded, p, 0), 0);
	assert_int_equal(n, 1);
	assert_int_equal(parts[0].profile->nsamples, 2);
	s = &parts[0].profile->samples[0];
	assert_int_equal(s->tid, 8);
	assert_string_equal(s->gil, "held");
	assert_true(s->partial);
	assert_string_equal(s->thread_name, "Thread-1 (work)");
	s = &parts[0].profile->samples[1];
	assert_string_equal(s->gil, "released");
	assert_false(s->partial);
	assert_null(s->thread_name);
	split__free(parts, n);
	profile__free(p);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_split__three_services_exact),
		cmocka_unit_test(test_split__empty_profile_has_no_parts),
		cmocka_unit_test(test_split__python_labels_kept),
		cmocka_unit_test(test_split__services_past_the_cap_folded),
	};

	return cmocka_run_group_tests_name("split", tests, NULL, NULL);
}
