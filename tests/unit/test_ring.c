// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * The ring buffer's consumer (user/attach/ring.c) on a real BPF ring: tests/bpf/ring_feed.bpf.c
 * writes numbered records of every length and alignment, with discarded ones between them, into
 * a 64 KiB ring; the consumer must hand over each kept record once, in order, with its length
 * and bytes, go round the ring many times without the producer ever finding it full (its
 * position reaches the kernel), and stop at a callback's error.  With the backlog (ring__backlog)
 * its thread must move a burst many times the ring's size into memory while nobody consumes, hand
 * the records over in order, also to a callback that consumes again, and stop at its cap (the
 * producer then counts what the ring cannot take).  Needs BPF (root): skipped without it,
 * except under CI=true.
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>

#include <bpf/bpf.h>
#include <bpf/libbpf.h>
#include <linux/types.h>

#include "attach/ring.h"
#include "bpf_or_skip.h"
#include "tests/ring_feed.skel.h"
#include "../bpf/ring_feed.h"

static bool no_bpf; /* no privileges for BPF outside CI: every test skips */

struct seen {
	uint32_t next; /* the number expected next */
	uint32_t discard_every;
	uint32_t n;	   /* records handed over */
	uint32_t bad;	   /* records with a wrong number, length or byte */
	uint32_t stop_at;  /* return -EIO for this number (0: never) */
	bool gaps;	   /* records may be missing (the producer counted them): in order */
	struct ring *nest; /* consume this ring again from the callback of nest_at */
	uint32_t nest_at;
	int nested; /* what that consume returned */
};

static uint32_t skip_discarded(const struct seen *s, uint32_t seq)
{
	while (s->discard_every && seq % s->discard_every == 0)
		seq++;
	return seq;
}

static int on_record(void *ctx, void *data, size_t size)
{
	struct seen *s = ctx;
	const uint64_t *w = data;
	uint32_t seq = skip_discarded(s, s->next), words;
	uint32_t tail = 0;

	if (s->gaps && size >= 8 && w[0] >= seq && w[0] <= UINT32_MAX)
		seq = (uint32_t)w[0]; /* later than expected, never earlier */
	words = ring_feed_words(seq);
	s->n++;
	if (size != ring_feed_len(seq) || w[0] != seq || (uint32_t)w[1] != words)
		s->bad++;
	for (uint32_t j = 2; j + 1 < words; j++)
		s->bad += w[j] != seq;
	/* The last word after word 1: whole, or (odd numbers) its low half */
	if (words > 2) {
		memcpy(&tail, &w[words - 1], sizeof(tail));
		s->bad += tail != seq;
	}
	s->next = seq + 1;
	if (s->nest && seq == s->nest_at)
		s->nested = ring__consume(s->nest);
	return s->stop_at && seq == s->stop_at ? -EIO : 0;
}

/* One run of the producer: n records from seq; the records it found no room for. */
static uint32_t feed(struct ring_feed_bpf *skel, uint32_t seq, uint32_t n, uint32_t discard_every)
{
	struct ring_feed f = {.n = n, .seq = seq, .discard_every = discard_every};
	/* A syscall program's context comes back in ctx_in (the kernel takes no ctx_out). */
	LIBBPF_OPTS(bpf_test_run_opts, opts, .ctx_in = &f, .ctx_size_in = sizeof(f));

	assert_int_equal(bpf_prog_test_run_opts(bpf_program__fd(skel->progs.ring_feed), &opts), 0);
	return f.failed;
}

/* The producer loaded and our consumer on its ring, handing records to s. */
struct fed {
	struct ring_feed_bpf *skel;
	struct ring *r;
};

static struct fed fed_open(struct seen *s, size_t release)
{
	struct fed f = {.skel = ring_feed_bpf__open_and_load()};

	assert_non_null(f.skel);
	f.r = ring__open(bpf_map__fd(f.skel->maps.ring), on_record, s, release);
	assert_non_null(f.r);
	return f;
}

/* fed_open's, with the backlog's thread moving the records out (max: its cap; 0: none). */
static struct fed fed_backlog(struct seen *s, size_t max)
{
	struct fed f = fed_open(s, 0);

	if (max)
		assert_int_equal(ring__backlog(f.r, max), 0);
	return f;
}

static void fed_close(struct fed *f)
{
	ring__free(f->r);
	ring_feed_bpf__destroy(f->skel);
}

/* Every kept record once, in order, whole; the discarded ones never. */
static void test_ring__records_in_order(void **state)
{
	struct seen s = {.next = 1, .discard_every = 7};
	struct fed f;

	(void)state;
	if (no_bpf)
		skip();
	f = fed_open(&s, 0);
	assert_int_equal(ring__consume(f.r), 0);
	assert_int_equal(feed(f.skel, 1, 500, 7), 0);
	assert_int_equal(ring__poll(f.r, 1000), 500 - 500 / 7);
	assert_int_equal(s.n, 500 - 500 / 7);
	assert_int_equal(s.bad, 0);
	assert_int_equal(skip_discarded(&s, s.next), 501);
	assert_int_equal(ring__poll(f.r, 0), 0);
	fed_close(&f);
}

/*
 * Round the ring seventeen times, a third of it per run: the producer finds room every time
 * only if the consumer's position reaches the kernel, whether it publishes as it goes (release:
 * 256 bytes) or only once it has caught up (release past the ring).
 */
static void test_ring__goes_round(void **state)
{
	const size_t releases[] = {256, (size_t)1 << 30};

	(void)state;
	if (no_bpf)
		skip();
	for (size_t k = 0; k < sizeof(releases) / sizeof(releases[0]); k++) {
		struct seen s = {.next = 1};
		struct fed f = fed_open(&s, releases[k]);
		uint32_t seq = 1, per = 300; /* ~75 bytes each: ~22 KiB of 64 */

		for (int run = 0; run < 50; run++) {
			assert_int_equal(feed(f.skel, seq, per, 0), 0);
			seq += per;
			assert_int_equal(ring__consume(f.r), per);
		}
		assert_int_equal(s.n, 50 * per);
		assert_int_equal(s.bad, 0);
		fed_close(&f);
	}
}

/* A callback's error stops the drain after its record; the next drain starts after it: from the
 * ring, and from the backlog. */
static void test_ring__callback_error_stops(void **state)
{
	(void)state;
	if (no_bpf)
		skip();
	for (int backlog = 0; backlog < 2; backlog++) {
		struct seen s = {.next = 1, .stop_at = 5};
		struct fed f = fed_backlog(&s, backlog ? 64 << 20 : 0);

		assert_int_equal(feed(f.skel, 1, 20, 0), 0);
		assert_int_equal(ring__consume(f.r), -EIO);
		assert_int_equal(s.n, 5);
		assert_int_equal(ring__consume(f.r), 15);
		assert_int_equal(s.n, 20);
		assert_int_equal(s.bad, 0);
		fed_close(&f);
	}
}

/* Until the backlog's thread has moved `moved` records or stopped at its cap (5 s at most). */
static struct ring_backlog_stats backlog_wait(struct ring *r, uint64_t moved)
{
	struct ring_backlog_stats st;

	for (int i = 0; i < 5000; i++) {
		st = ring__backlog_stats(r);
		if (st.moved >= moved || st.full)
			break;
		nanosleep(&(struct timespec){.tv_nsec = 1000000}, NULL);
	}
	return ring__backlog_stats(r);
}

/*
 * A burst seventeen times the ring's size while the consumer reads nothing: the backlog's thread
 * moves it out as it comes, the producer always finds room, and the consumer then gets every
 * record once, in order.  Without the backlog nothing is moved, and the 64 KiB ring holds less
 * than three runs.
 */
static void test_ring__backlog_holds_a_burst(void **state)
{
	struct seen s = {.next = 1, .discard_every = 11};
	struct ring_backlog_stats st;
	uint32_t seq = 1, per = 300, kept = 0;
	struct fed f;

	(void)state;
	if (no_bpf)
		skip();
	f = fed_backlog(&s, 64 << 20);
	for (int run = 0; run < 50; run++) {
		assert_int_equal(feed(f.skel, seq, per, 11), 0);
		for (uint32_t k = seq; k < seq + per; k++)
			kept += k % 11 != 0;
		seq += per;
		st = backlog_wait(f.r, kept);
		assert_int_equal(st.moved, kept);
	}
	assert_int_equal(s.n, 0); /* nothing handed over yet */
	st = ring__backlog_stats(f.r);
	assert_int_equal(st.full, 0);
	assert_true(st.peak >= (1u << 20) && st.peak <= st.max);
	assert_int_equal(ring__poll(f.r, 1000), kept);
	assert_int_equal(s.n, kept);
	assert_int_equal(s.bad, 0);
	assert_int_equal(skip_discarded(&s, s.next), seq);
	assert_int_equal(ring__poll(f.r, 0), 0);
	fed_close(&f);
}

/*
 * From the backlog, a callback that consumes again (the tracker drains at a process's exit)
 * gets the records after its own, and the outer drain goes on after those, each record once.
 */
static void test_ring__backlog_nested(void **state)
{
	struct seen s = {.next = 1};
	struct fed f;

	(void)state;
	if (no_bpf)
		skip();
	f = fed_backlog(&s, 64 << 20);
	assert_int_equal(feed(f.skel, 1, 20, 0), 0);
	s.nest = f.r;
	s.nest_at = 8;
	assert_int_equal(ring__consume(f.r), 8); /* 1 … 8; the nested drain 9 … 20 */
	assert_int_equal(s.nested, 12);
	assert_int_equal(s.n, 20);
	assert_int_equal(s.bad, 0);
	for (uint32_t run = 0; run < 8; run++) { /* 8 × 250: more than the ring holds */
		assert_int_equal(feed(f.skel, 21 + run * 250, 250, 0), 0);
		assert_int_equal(backlog_wait(f.r, 20 + (run + 1) * 250).moved,
				 20 + (run + 1) * 250);
	}
	s.nest_at = 1000;
	assert_int_equal(ring__poll(f.r, 1000) + s.nested, 2000);
	assert_int_equal(s.n, 2020);
	assert_int_equal(s.bad, 0);
	fed_close(&f);
}

/*
 * At its cap the backlog stops taking records; the ring fills and the producer counts what it
 * cannot write.  The consumer gets every record written, in order, and those the producer
 * counted are the rest: none lost without a count.
 */
static void test_ring__backlog_stops_at_its_cap(void **state)
{
	struct seen s = {.next = 1, .gaps = true};
	struct ring_backlog_stats st;
	uint32_t seq = 1, per = 300, failed = 0;
	struct fed f;

	(void)state;
	if (no_bpf)
		skip();
	f = fed_backlog(&s, 1);		     /* one chunk */
	for (int run = 0; run < 80; run++) { /* ~1.7 MiB */
		failed += feed(f.skel, seq, per, 0);
		seq += per;
		backlog_wait(f.r, seq - 1 - failed);
	}
	st = ring__backlog_stats(f.r);
	assert_true(st.full > 0);
	assert_true(failed > 0);
	assert_int_equal(st.peak, st.held);
	assert_true(st.held >= (1u << 20) && st.held < (2u << 20));
	while (ring__poll(f.r, 100) > 0)
		;
	assert_int_equal(s.n + failed, seq - 1);
	assert_int_equal(s.bad, 0);
	/* Room again: the backlog moves once more. */
	assert_int_equal(feed(f.skel, seq, per, 0), 0);
	assert_int_equal(ring__poll(f.r, 1000), per);
	assert_int_equal(s.next, seq + per);
	assert_int_equal(s.bad, 0);
	fed_close(&f);
}

/* Only a ring buffer map is taken. */
static void test_ring__not_a_ring(void **state)
{
	int fd;

	(void)state;
	if (no_bpf)
		skip();
	fd = bpf_map_create(BPF_MAP_TYPE_ARRAY, "notring", 4, 8, 1, NULL);
	assert_true(fd >= 0);
	errno = 0;
	assert_null(ring__open(fd, on_record, NULL, 0));
	assert_int_equal(errno, EINVAL);
	close(fd);
	errno = 0;
	assert_null(ring__open(-1, on_record, NULL, 0));
	assert_int_not_equal(errno, 0);
}

static int setup(void **state)
{
	(void)state;
	return bpf_or_skip(&no_bpf);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_ring__records_in_order),
		cmocka_unit_test(test_ring__goes_round),
		cmocka_unit_test(test_ring__callback_error_stops),
		cmocka_unit_test(test_ring__backlog_holds_a_burst),
		cmocka_unit_test(test_ring__backlog_nested),
		cmocka_unit_test(test_ring__backlog_stops_at_its_cap),
		cmocka_unit_test(test_ring__not_a_ring),
	};

	return cmocka_run_group_tests(tests, setup, NULL);
}
