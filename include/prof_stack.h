/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * How deep a user stack travels, and the frame that stands for the middle of a deeper one.
 *
 * The unwinder (bpf/unwind.bpf.h) keeps up to PROF_MAX_FRAMES frames of a user stack whole —
 * frames as a user counts them: a Python frame is one, though it takes two words
 * (include/prof_python.h).  Past that it walks on, up to PROF_WALK_WORDS words, and keeps both
 * ends: the leaf side (three quarters), one cut word, the root side.  The cut word says how many
 * frames it stands for; userspace names it "[N frames cut]" (user/sym/symbolizer.c), a frame of
 * every output.  Shared by BPF and userspace (the unit tests check the encoding).
 */
#ifndef PROF_STACK_H
#define PROF_STACK_H

#include "prof_common.h"

/* The cut word: bits 48..63 are 0xc000 (neither a user address, a kernel one nor a Python word:
 * those have bits 62..63 0b00 with bits 47..61 clear, 0b11 with bits 47..61 set, 0b01 or 0b10),
 * bit 32 set when the walk stopped at PROF_WALK_WORDS before the root (more were cut than it
 * says), bits 0..31 the frames cut. */
#define PROF_STACK_CUT_TAG     0xc000000000000000ULL
#define PROF_STACK_CUT_BOUND   (1ULL << 32)
/* Bit 33: the one word of a stack not kept, its process (or all) past the cap on stacks held
 * (user/sym/stackres.c); named PROF_STACK_CAPPED_NAME. */
#define PROF_STACK_CUT_CAPPED  (1ULL << 33)
#define PROF_STACK_CAPPED_NAME "[stacks capped]"

static inline int prof_stack_is_cut(__u64 w)
{
	return (w >> 48) == (PROF_STACK_CUT_TAG >> 48);
}

static inline __u64 prof_stack_cut_word(__u32 frames, int bounded)
{
	return PROF_STACK_CUT_TAG | (bounded ? PROF_STACK_CUT_BOUND : 0) | frames;
}

static inline __u32 prof_stack_cut_frames(__u64 w)
{
	return (__u32)w;
}

static inline int prof_stack_cut_bounded(__u64 w)
{
	return (w & PROF_STACK_CUT_BOUND) != 0;
}

/* How the cut word's frame is named ("[N frames cut]", "[N+ frames cut]", "[frames cut]"): the
 * end of its name. */
#define PROF_STACK_CUT_NAME_END "frames cut]"

/*
 * A cap on a stack: whole up to `frames` frames and `words` words; a deeper one keeps a leaf side
 * of 3/4 of each, the cut word, and a root side of what is left.
 */
struct prof_stack_cap {
	__u32 frames, words;
};

static inline __u32 prof_stack_leaf_frames(struct prof_stack_cap c)
{
	return c.frames / 4 * 3;
}

static inline __u32 prof_stack_leaf_words(struct prof_stack_cap c)
{
	return c.words / 4 * 3;
}

static inline __u32 prof_stack_root_frames(struct prof_stack_cap c)
{
	return c.frames - prof_stack_leaf_frames(c) - 1;
}

static inline __u32 prof_stack_root_words(struct prof_stack_cap c)
{
	return c.words - prof_stack_leaf_words(c) - 1;
}

/* The walker's knobs, set by the loader between open and load (bpf/unwind.bpf.h). */
struct prof_walk_knobs {
	__u32 mode; /* --unwind: enum unwind_mode (user/cli.h): 0 auto, 1 dwarf, 2 fp */
	/* --unwind fp: kernel.perf_event_max_stack, where bpf_get_stack stops (0: unknown) */
	__u32 fp_max_stack;
	/* The walk cache's slots per CPU - 1 (a power of two; prof_walk_cache_slots). */
	__u32 walk_cache_mask;
};

/*
 * The walk cache (bpf/unwind.bpf.h, the heap object): whole walks per CPU, by their start and
 * the process entry's generation, each with the stack words its frames depend on.
 */
#define PROF_WALK_LOG	       64 /* stack words a kept walk may have read (a bit each in a __u64) */
#define PROF_WALK_CACHE_WORDS  48   /* words of a kept walk */
#define PROF_WALK_CHECK_SPANS  8    /* copies of the stack a check may make */
#define PROF_WALK_SPAN	       8192 /* bytes of one copy, at most */
#define PROF_WALK_SPAN_GAP     2048 /* unneeded bytes a copy may take between two words */
#define PROF_WALK_CACHE_SLOTS  1024 /* per CPU, at most */
#define PROF_WALK_CACHE_WAYS   4    /* slots a start may take (one bucket), a power of two */
/* All CPUs' slots together, at most (fewer slots per CPU on a machine with many). */
#define PROF_WALK_CACHE_BUDGET (32ULL << 20)
#define PROF_WALK_CACHE_MIN    16
_Static_assert(PROF_WALK_CACHE_MIN >= PROF_WALK_CACHE_WAYS, "a bucket fits the fewest slots");

struct prof_walk_span {
	__u32 lo, len;	  /* bytes from the walk's first sp, and how many */
	__u16 first, end; /* its words: need_idx/need_val[first, end) */
};

struct prof_walk_cached {
	__u32 seq;	  /* odd while written */
	__u32 gen;	  /* 0: empty */
	__u64 ip, sp, bp; /* its start; bp only when a rule used it (bp_used) */
	__u32 n;
	__u16 nspans, bp_used;
	__u32 used; /* the CPU's walk count when it was last kept or found: the bucket's LRU */
	__u32 pad;
	__u64 frames[PROF_WALK_CACHE_WORDS];
	/* The words its frames depend on (needed entries of the walk's log), in spans of at most
	 * PROF_WALK_SPAN bytes: one copy each to check them.  need_idx: a word's index in its
	 * span (its offset from the span's start / 8: every word read is 8-byte aligned). */
	struct prof_walk_span span[PROF_WALK_CHECK_SPANS];
	__u16 need_idx[PROF_WALK_LOG];
	__u64 need_val[PROF_WALK_LOG];
};

/* Slots per CPU for ncpus CPUs (< 1: unknown, taken as 1): PROF_WALK_CACHE_SLOTS, halved
 * while all of them would pass PROF_WALK_CACHE_BUDGET (not below PROF_WALK_CACHE_MIN). */
static inline __u32 prof_walk_cache_slots(int ncpus)
{
	__u64 n = ncpus > 0 ? (__u64)ncpus : 1;
	__u32 slots = PROF_WALK_CACHE_SLOTS;

	while (slots > PROF_WALK_CACHE_MIN &&
	       slots * sizeof(struct prof_walk_cached) * n > PROF_WALK_CACHE_BUDGET)
		slots /= 2;
	return slots;
}

#endif /* PROF_STACK_H */
