// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * tests/unit/test_ring.c's producer: a run (BPF_PROG_TEST_RUN) writes n records numbered from
 * seq into a small ring, as the profiler's programs do: bpf_ringbuf_output of 2 to
 * RING_FEED_WORDS words, odd-numbered ones 4 bytes short (lengths the kernel rounds up to 8),
 * so that records land at every offset and across the ring's end; and records reserved then
 * discarded between them.  Record i: word 0 = i, word 1 = its length in words, the rest i.
 */
#include "vmlinux.h"
#include <bpf/bpf_helpers.h>

#include "ring_feed.h"

struct {
	__uint(type, BPF_MAP_TYPE_RINGBUF);
	__uint(max_entries, RING_FEED_BYTES);
} ring SEC(".maps");

struct feed_loop {
	struct ring_feed *f;
	__u64 rec[RING_FEED_WORDS];
};

static long feed_one(__u64 i, void *arg)
{
	struct feed_loop *l = arg;
	struct ring_feed *f = l->f;
	__u32 seq = f->seq + (__u32)i, words = ring_feed_words(seq);
	__u64 len;
	void *r;

	if (f->discard_every && seq % f->discard_every == 0) {
		r = bpf_ringbuf_reserve(&ring, 24, 0);
		if (!r) {
			f->failed++;
			return 0;
		}
		bpf_ringbuf_discard(r, 0);
		return 0;
	}
	for (int j = 0; j < RING_FEED_WORDS; j++)
		l->rec[j] = seq;
	l->rec[1] = words;
	len = words * 8 - (seq & 1) * 4;
	barrier_var(len); /* a bound the verifier sees (clang knows it already) */
	if (len > sizeof(l->rec))
		return 1;
	if (bpf_ringbuf_output(&ring, l->rec, len, 0))
		f->failed++;
	return 0;
}

SEC("syscall")
int ring_feed(struct ring_feed *f)
{
	struct feed_loop l = {.f = f};
	__u32 n = f->n;

	if (n > RING_FEED_MAX)
		n = RING_FEED_MAX;
	f->failed = 0;
	bpf_loop(n, feed_one, &l, 0);
	return 0;
}

char LICENSE[] SEC("license") = "Dual BSD/GPL";
