/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * Heap accounting from allocator events: per (pid, tid, stack, Python thread state) allocated
 * and in-use objects and bytes, and a live table address -> block.  Pure logic, no BPF: fed by the
 * consumer, exported into a profile at the end.  Memory stays proportional to live blocks + sites.
 */
#ifndef PROF_HEAP_AGG_H
#define PROF_HEAP_AGG_H

#include <stddef.h>
#include <stdint.h>

struct heap_agg;
struct profile;
struct stackres;

/* Values a site accumulates, scaled when sampling (see heap_agg__new's sample_bytes). */
struct heap_site_values {
	double alloc_objects, alloc_bytes;
	double inuse_objects, inuse_bytes;
	/* In use at its process's peak (the most in use at once since the start or the interval's
	 * start): complete after heap_agg__settle_peaks. */
	double peak_objects, peak_bytes;
};

/* A process's in-use peak: its bytes, and when (heap_agg__at's clock; 0: none yet). */
struct heap_peak {
	double bytes, inuse_bytes; /* the peak, and in use now */
	uint64_t at;
};

struct heap_agg_stats {
	uint64_t allocs;	/* allocation events accounted */
	uint64_t frees;		/* frees that matched a live block */
	uint64_t unknown_frees; /* frees of blocks never seen (allocated before attach) */
	uint64_t failed_allocs; /* allocator returned NULL */
	uint64_t replaced_live; /* block handed out again while we thought it live */
	uint64_t no_stack;	/* allocations whose stack was lost (kept, stack empty) */
	uint64_t exec_released; /* live blocks ended by their process's exec (freed, not leaked) */
	uint64_t live_capped;	/* allocations counted but not tracked live: a cap was reached */
	uint64_t size_filtered; /* allocations outside --min-size / --max-size, left out */
};

/* sample_bytes: 0 = every allocation recorded; N = allocations were sampled at one per N
 * bytes on average and are weighted by 1 / (1 - exp(-size / N)) so totals stay unbiased. */
int heap_agg__new(struct heap_agg **out, uint64_t sample_bytes);
void heap_agg__free(struct heap_agg *h);
/* Live blocks tracked per process and in all (0: the defaults of agg/live_cap.h).  A block past
 * either still counts as allocated; it is not in use (live_capped), its free unknown. */
void heap_agg__set_caps(struct heap_agg *h, uint32_t per_pid, uint32_t total);
/* Blocks of sizes outside [min, max] (max 0: no bound) are left out, counted (size_filtered);
 * their frees are unknown frees. */
void heap_agg__set_sizes(struct heap_agg *h, uint64_t min, uint64_t max);
/* Live blocks tracked for pid — for tests. */
uint32_t heap_agg__live_count(const struct heap_agg *h, uint32_t pid);

/* py: enum prof_py_thread (include/prof_python.h), part of the site like the stack. */
void heap_agg__alloc(struct heap_agg *h, uint32_t pid, uint32_t tid, int32_t stack_id, uint8_t py,
		     uint64_t addr, uint64_t size);
/* A block a process's own sampler reported (otel_memory:alloc): it stands for weight_bytes
 * allocated, weight_bytes / size allocations (at least 1), whatever --sample-bytes is. */
void heap_agg__alloc_weighted(struct heap_agg *h, uint32_t pid, uint32_t tid, int32_t stack_id,
			      uint8_t py, uint64_t addr, uint64_t size, uint64_t weight_bytes);
void heap_agg__free_block(struct heap_agg *h, uint32_t pid, uint64_t addr);
/* realloc(old, size) returned addr (0 = failed or size 0: the old block's fate is decided by
 * the free probe, which sees glibc's internal free of a zero-size realloc). */
void heap_agg__realloc(struct heap_agg *h, uint32_t pid, uint32_t tid, int32_t stack_id, uint8_t py,
		       uint64_t old_addr, uint64_t addr, uint64_t size);

/* A block just allocated whose free will not be seen (BPF keeps no record of it, counted
 * there): it leaves the live table and the in-use values, its allocation stays. */
void heap_agg__untrack(struct heap_agg *h, uint32_t pid, uint64_t addr);

/* pid exec'd: its address space, and every block still live in it, is gone.  Those blocks
 * leave the in-use values (they were not leaked).  0 or -ENOMEM (nothing released then). */
int heap_agg__exec(struct heap_agg *h, uint32_t pid);

/*
 * Continuous mode, at an interval's end: allocations (and the stats) start again from zero;
 * in-use values carry over, peaks start again from them, and sites left with nothing are
 * forgotten.  0 or -ENOMEM (then
 * nothing is forgotten, the rest is done).
 */
int heap_agg__new_interval(struct heap_agg *h);

/*
 * Continuous mode: pid is gone and the interval that saw it written.  Its sites and live blocks
 * are forgotten; gone(ctx, addr) is told each live block's address first (BPF keeps sampled
 * addresses).  0 or -ENOMEM (some kept: forgotten next time).
 */
int heap_agg__forget_pid(struct heap_agg *h, uint32_t pid, void (*gone)(void *ctx, uint64_t addr),
			 void *ctx);

/* The time (bpf_ktime_get_ns) of the events that follow: the blocks they allocate are born then
 * (their age in the profile). */
void heap_agg__at(struct heap_agg *h, uint64_t ts);

/* A live block as the in-use values count it: its site, its share, its birth (heap_agg__at). */
struct heap_live_block {
	uint32_t pid, tid, py;
	int32_t stack_id;
	double objects, bytes;
	uint64_t born;
};

/* Iterate live blocks: size_t it = 0; while (heap_agg__next_live(h, &it, &b)) */
int heap_agg__next_live(const struct heap_agg *h, size_t *it, struct heap_live_block *out);

/*
 * Every site's peak_* values made those of its process's peak.  Each change of a site's in-use
 * values keeps what they were at the last peak, so a peak costs nothing when it happens.
 */
void heap_agg__settle_peaks(struct heap_agg *h);
/* pid's peak (NULL if no block of it was ever in use). */
const struct heap_peak *heap_agg__peak(const struct heap_agg *h, uint32_t pid);
/* Iterate processes' peaks: size_t it = 0; while (heap_agg__next_peak(h, &it, &pid, &pk)) */
int heap_agg__next_peak(const struct heap_agg *h, size_t *it, uint32_t *pid,
			const struct heap_peak **pk);

/* Values of one site (NULL if never seen) — for tests and reports. */
const struct heap_site_values *heap_agg__site(const struct heap_agg *h, uint32_t pid, uint32_t tid,
					      int32_t stack_id, uint8_t py);
const struct heap_agg_stats *heap_agg__stats(const struct heap_agg *h);

/* Iterate sites: size_t it = 0; while (heap_agg__next_site(h, &it, &pid, &tid, &sid, &py, &v)) */
int heap_agg__next_site(const struct heap_agg *h, size_t *it, uint32_t *pid, uint32_t *tid,
			int32_t *stack_id, uint32_t *py, const struct heap_site_values **vals);

#endif /* PROF_HEAP_AGG_H */
