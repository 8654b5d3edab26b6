/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * `--heap -f memtrace`: heap events, as they arrive, into a memtrace trace written to the
 * output's temporary file.  Allocations carry their stack as location codes (a stable hash of
 * file, function and line per frame; each code's location written once, before first use);
 * frees of blocks in the trace are collect events; realloc is collect + alloc.
 *
 * Events wait in a bounded queue until their stacks are symbolized (stackres__sync), then are
 * written.  RAM: that queue, the live traced blocks (pid, address -> object id; at most the
 * caps of agg/live_cap.h, per process and in all), the location codes written, one packet.
 */
#ifndef PROF_MEMTRACE_REC_H
#define PROF_MEMTRACE_REC_H

#include <stdint.h>
#include <stdio.h>

#include "prof_common.h"

struct collect_heap_event;
struct memtrace_rec;
struct stackres;

struct memtrace_rec_opts {
	const char *path;      /* -o */
	uint64_t sample_bytes; /* --sample-bytes (0: every allocation) */
	uint64_t pid;	       /* the trace's pid (memtrace has one) */
	const char *executable;
	const char *cmdline; /* ours, for the trace's context */
};

/* What was traced, and what could not be traced faithfully (printed with the drops; in the
 * trace's context): include/prof_common.h's PROF_MEMTRACE_STATS. */
struct memtrace_rec_stats {
#define MEMTRACE_REC_FIELD(f, n, d, k) uint64_t f;
	PROF_MEMTRACE_STATS(MEMTRACE_REC_FIELD)
#undef MEMTRACE_REC_FIELD
};

int memtrace_rec__new(struct memtrace_rec **out, const struct memtrace_rec_opts *o,
		      struct stackres *stacks);
/* collect_heap_tap_fn: ctx is the memtrace_rec. */
int memtrace_rec__on_heap(void *ctx, const struct collect_heap_event *e);
/* Writes what is queued, the drops into the context, and renames the file into place. */
int memtrace_rec__finish(struct memtrace_rec *r);
const struct memtrace_rec_stats *memtrace_rec__stats(const struct memtrace_rec *r);
/* The non-zero drops, as the text summary prints counters. */
void memtrace_rec__print_drops(const struct memtrace_rec *r, FILE *f);
/* Tests: follow at most per_pid live objects a process and total in all (0: the defaults). */
void memtrace_rec__set_caps(struct memtrace_rec *r, uint32_t per_pid, uint32_t total);
/* Removes the temporary file unless finished.  NULL is a no-op. */
void memtrace_rec__free(struct memtrace_rec *r);

/* nsamples for one sampled allocation of size bytes at one sample per sample_bytes: its
 * expected bytes (size / P(sampled)) in samples of sample_bytes, rounded at random with u in
 * [0, 1) so that the count stays unbiased. */
uint64_t memtrace_rec__nsamples(uint64_t size, uint64_t sample_bytes, double u);

#endif /* PROF_MEMTRACE_REC_H */
