/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * The preloaded heap sampler (user/sampler/, build/libbpftrace-prof-sampler.so): what a program
 * or a test sees of it besides the otel_memory USDT probes.  The sampler includes nothing else
 * of the profiler.
 */
#ifndef PROF_SAMPLER_H
#define PROF_SAMPLER_H

#include <stdint.h>

/* Environment, read once when the library loads. */
#define PROF_SAMPLER_ENV_BYTES	   "BPFTRACE_PROF_SAMPLE_BYTES"
#define PROF_SAMPLER_ENV_SEED	   "BPFTRACE_PROF_SAMPLER_SEED"
#define PROF_SAMPLER_DEFAULT_BYTES 524288ULL

/*
 * The word just below a sampled block's user pointer.  Its top bit is set, which the size field
 * glibc keeps there never has; under other allocators a match is confirmed in the set of
 * sampled pointers.  The word below it holds the base the next allocator returned.
 */
#define PROF_SAMPLER_TAG    0xb9f7a11c5a3b1e77ULL
#define PROF_SAMPLER_HEADER 16

/* At most this many sampled blocks live at once; past it allocations go unsampled (table_full). */
#define PROF_SAMPLER_MAX_LIVE 65536

/* Counts since load; bpftrace_prof_sampler_stats() copies them (tests read them by dlsym). */
struct prof_sampler_stats {
	uint64_t sampled;      /* allocations sampled (alloc probe fired) */
	uint64_t weight_bytes; /* the sum of their weights */
	uint64_t freed;	       /* sampled blocks freed or moved (free probe fired) */
	uint64_t live;	       /* sampled blocks not yet freed */
	uint64_t table_full;   /* allocations due for a sample, left unsampled: the set was full */
	uint64_t mean_bytes;   /* the mean in use (BPFTRACE_PROF_SAMPLE_BYTES or the default) */
	uint64_t bypassed;     /* 1: an allocator found before ours serves the program */
};

#define PROF_SAMPLER_STATS_FN "bpftrace_prof_sampler_stats"
typedef void (*prof_sampler_stats_fn)(struct prof_sampler_stats *out);

#endif /* PROF_SAMPLER_H */
