/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * A memtrace trace (ours or any other writer's: foreign bytes, every read bounds-checked) back
 * into a heap profile: per stack of locations, allocations and what is still live, estimated
 * as nsamples / sample_rate x word_size bytes.  `bpftrace-prof report FILE` uses it.
 */
#ifndef PROF_MEMTRACE_READ_H
#define PROF_MEMTRACE_READ_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

struct profile;

struct memtrace_read_opts {
	bool at; /* only events up to at_s seconds after the trace's start count */
	double at_s;
};

/* What a read met (the profile carries the same as counters). */
struct memtrace_read_stats {
	uint64_t packets;
	uint64_t foreign_packets; /* another pid's packets, skipped as memtrace does */
	uint64_t locations;
	uint64_t allocs;
	uint64_t collects;
	uint64_t unknown_collects; /* collect of an object never allocated (or collected twice) */
	uint64_t unknown_codes;	   /* backtrace codes no location event described */
	uint64_t cut_stacks;	   /* backtraces longer than the profile keeps (root end cut) */
	uint64_t late_events;	   /* --at: events after the moment, not applied */
	uint64_t clamped_values;   /* estimates cut so a column's total stays within 2^62 */
};

/*
 * Reads the whole trace from f into *out (mode "heap": alloc_objects, alloc_space,
 * inuse_objects, inuse_space).  0; -EBADMSG for a malformed or truncated trace with one line
 * saying where in msg; -ENOMEM or -EIO otherwise.  stats may be NULL.
 */
int memtrace_read__profile(struct profile **out, struct memtrace_read_stats *stats, FILE *f,
			   const struct memtrace_read_opts *o, char *msg, size_t msglen);

#endif /* PROF_MEMTRACE_READ_H */
