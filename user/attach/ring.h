/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * The consumer of the BPF ring buffer of records (bpf/events.bpf.h), read through the kernel's
 * mmap layout (kernel/bpf/ringbuf.c) rather than libbpf's ring_buffer: libbpf 1.1 publishes
 * its position after every record, and each producer's reserve reads that position.  While we
 * drain, every record then costs the traced program a cache line taken from this CPU.  Here the
 * position is published once per batch of bytes and whenever the reader catches up.  With
 * ring__backlog a thread moves the records into memory as they come (see there).
 */
#ifndef PROF_RING_H
#define PROF_RING_H

#include <stddef.h>
#include <stdint.h>

struct ring;

/* A record's bytes (the kernel's header stripped); < 0 stops the drain with that error. */
typedef int (*ring_record_fn)(void *ctx, void *data, size_t size);

/* Map the ring buffer map_fd; release: bytes read between publications of the position
 * (0: a 256th of the ring).  NULL and errno on failure. */
struct ring *ring__open(int map_fd, ring_record_fn fn, void *ctx, size_t release);

/* Wait up to timeout_ms for data (0: do not wait), then read every complete record.  The
 * records read, or a negative errno (the callback's, or the wait's other than EINTR). */
int ring__poll(struct ring *r, int timeout_ms);

/* Read every complete record without waiting: the records read or a negative errno. */
int ring__consume(struct ring *r);

/*
 * The backlog: from now on a thread of its own moves the records out of the ring into memory as
 * the producers wake it, up to max_bytes held (then the ring fills, and its producers count
 * what it cannot take); ring__poll and ring__consume hand them over from there, in order, on
 * the caller's thread.  The ring's lines are then read soon after they are written, so a small
 * ring serves, and the producers write into lines still in the caches.  0 or -errno (the ring
 * is then read as before).
 */
int ring__backlog(struct ring *r, size_t max_bytes);

struct ring_backlog_stats {
	uint64_t max;	/* the cap, bytes */
	uint64_t held;	/* bytes of memory held now */
	uint64_t peak;	/* most held */
	uint64_t full;	/* moves stopped at the cap with records waiting */
	uint64_t moved; /* records moved into the backlog */
};

/* Zeroes without a backlog. */
struct ring_backlog_stats ring__backlog_stats(struct ring *r);

void ring__free(struct ring *r);

#endif /* PROF_RING_H */
