/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/* What tests/unit/test_ring.c asks tests/bpf/ring_feed.bpf.c to write (its run's context). */
#ifndef RING_FEED_H
#define RING_FEED_H

#define RING_FEED_BYTES (64 << 10) /* the ring: small, so that a test goes round it */
#define RING_FEED_MAX	4096	   /* records one run writes, at most */
#define RING_FEED_WORDS 16	   /* a record's words, at most */

struct ring_feed {
	__u32 n;	     /* records to write */
	__u32 seq;	     /* the first one's number */
	__u32 discard_every; /* reserve then discard every this many (0: none) */
	__u32 failed;	     /* out: records the ring had no room for */
};

/* Record seq's words and bytes. */
static inline __u32 ring_feed_words(__u32 seq)
{
	return 2 + seq % (RING_FEED_WORDS - 1);
}

static inline __u32 ring_feed_len(__u32 seq)
{
	return ring_feed_words(seq) * 8 - (seq & 1) * 4;
}

#endif /* RING_FEED_H */
