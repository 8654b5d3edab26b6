/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/* Heap tracing: allocator probes (bpf/heap.bpf.c) -> heap aggregator (user/agg/heap_agg.c). */
#ifndef PROF_HEAP_H
#define PROF_HEAP_H

#include "prof_common.h"
#include "prof_python.h"

/* Which allocator entry point a pending call belongs to; also the uprobe cookie. */
enum prof_alloc_fn {
	PROF_FN_MALLOC = 1,
	PROF_FN_CALLOC,
	PROF_FN_REALLOC,
	PROF_FN_REALLOCARRAY,
	PROF_FN_POSIX_MEMALIGN,
	PROF_FN_ALIGNED_ALLOC,
	PROF_FN_MEMALIGN,
	PROF_FN_VALLOC,
	PROF_FN_PVALLOC,
	PROF_FN_FREE,
	/*
	 * operator new and its variants, one id each: new[] calls new (often as a tail call) and
	 * new calls malloc; only the outermost call in flight is counted, so ids must differ.
	 */
	PROF_FN_CXX_NEW,
	PROF_FN_CXX_NEW_ARRAY,
	PROF_FN_CXX_NEW_NOTHROW,
	PROF_FN_CXX_NEW_ARRAY_NOTHROW,
	PROF_FN_CXX_NEW_ALIGNED,
	PROF_FN_CXX_NEW_ARRAY_ALIGNED,
	PROF_FN_CXX_NEW_ALIGNED_NOTHROW,
	PROF_FN_CXX_NEW_ARRAY_ALIGNED_NOTHROW,
	/* __cxa_throw: an exception leaving an operator new in flight (entry probe only). */
	PROF_FN_CXX_THROW,
	PROF_FN__COUNT,
};

static inline int prof_fn_is_cxx_new(__u32 fn)
{
	return fn >= PROF_FN_CXX_NEW && fn <= PROF_FN_CXX_NEW_ARRAY_ALIGNED_NOTHROW;
}

/*
 * Probed at entry only, without a uretprobe: operator new and new[], which throw std::bad_alloc.
 * A uretprobe puts the kernel's trampoline in the return-address slot, where the C++ unwinder
 * finds no unwind info and calls std::terminate; writing the slot back from BPF is refused under
 * kernel lockdown.  Their block is reported by the return of the allocator they call
 * (bpf/heap.bpf.c new_returned).  The aligned variants keep their uretprobe: they use %rbp as a
 * scratch register, so no stack can be walked from inside them.
 */
static inline int prof_fn_entry_only(__u32 fn)
{
	return fn == PROF_FN_CXX_NEW || fn == PROF_FN_CXX_NEW_ARRAY;
}

/* Operator new variants that let std::bad_alloc out (the nothrow ones catch it inside). */
static inline int prof_fn_cxx_throws(__u32 fn)
{
	return fn == PROF_FN_CXX_NEW || fn == PROF_FN_CXX_NEW_ARRAY ||
	       fn == PROF_FN_CXX_NEW_ALIGNED || fn == PROF_FN_CXX_NEW_ARRAY_ALIGNED;
}

/* prof_heap_pending.flags */
enum prof_pending_flags {
	/*
	 * --sample-bytes: the outermost call in flight drew and was not sampled.  Its entry stays
	 * so that inner calls (operator new -> malloc) neither draw again nor report.
	 */
	PROF_PENDING_UNSAMPLED = 1,
};

/* Entry arguments kept per thread until the return probe fires. */
struct prof_heap_pending {
	__u64 size;
	__u64 old_addr; /* realloc: block passed in; posix_memalign: the memptr out-parameter */
	__u64 sp;	/* stack pointer at entry: the return must come back to sp + 8 */
	/* Entry-only operator new: its code, [probe address, + symbol size).  Only an allocator
	 * returning into it made its block (not one called deeper, like the exception's). */
	__u64 code_start, code_end;
	__u32 fn;    /* enum prof_alloc_fn */
	__u32 flags; /* enum prof_pending_flags */
};
_Static_assert(sizeof(struct prof_heap_pending) == 48, "prof_heap_pending layout");

/* Uprobe cookie: the function id, and for entry-only operator new its symbol size above. */
#define PROF_COOKIE(fn, size) ((__u64)(fn) | (__u64)(size) << 32)
/* ... and this bit on the links of one process of a wide scope (PROF_PATH_OWN). */
#define PROF_COOKIE_OWN	      (1ULL << 63)
#define PROF_COOKIE_SIZE(c)   (((c) & ~PROF_COOKIE_OWN) >> 32)

/*
 * A process's heap path (the values of prof_otel_procs, bpf/heap_state.bpf.h).  Wide scopes
 * probe an allocator file once for every process; a file mapped by a process on its own
 * otel_memory probes is probed per process instead, so that process never traps in it, and the
 * processes that still need its allocator probes move onto links of their own: those links
 * serve exactly the processes on PROF_PATH_OWN, the file-wide ones every other.  Moving a
 * process is one map update: its own links are in (and idle) before, so no call is seen twice
 * or missed.
 */
enum prof_heap_path {
	PROF_PATH_ALLOC = 0, /* the allocator probes attached for every process */
	PROF_PATH_OTEL = 1,  /* its own otel_memory probes */
	PROF_PATH_OWN = 2,   /* allocator probes attached for it alone (PROF_COOKIE_OWN) */
};

/*
 * otel_memory:alloc's optional fourth argument (past the contract's ptr, size, weight): how many
 * frames from the probe site are the sampler's own, dropped from the stack (1 when absent, or
 * out of 1..PROF_OTEL_MAX_LEAVES: the site is in the allocation function itself).  Our sampler
 * gives 2 (user/sampler/sampler.h).
 */
#define PROF_OTEL_MAX_LEAVES 4

/* --sample-bytes: a sampled live block.  Per process: a forked child's copy of the address is
 * another block. */
struct prof_sampled_key {
	__u32 tgid;
	__u32 pad;
	__u64 addr;
};
_Static_assert(sizeof(struct prof_sampled_key) == 16, "prof_sampled_key layout");

/* prof_heap_event.flags */
enum prof_heap_event_flags {
	PROF_HEAP_STACK_FAILED = 1, /* the stack capture failed (counted in BPF): no frames */
	/* --sample-bytes: BPF keeps no record of the block (its process at its share of the
	 * sampled map, or the map full; counted): its free will not travel. */
	PROF_HEAP_UNTRACKED = 2,
};

/*
 * PROF_REC_HEAP_ALLOC and PROF_REC_HEAP_REALLOC, followed by __u64 frames[nframes] (leaf
 * first): the stack travels with the event, so no stack is lost to a map bucket.
 */
struct prof_heap_event {
	__u32 type;
	__u32 pid;
	__u32 tid;
	__u16 nframes;	/* words after this header (<= PROF_STACK_WORDS: include/prof_stack.h) */
	__u8 flags;	/* enum prof_heap_event_flags */
	__u8 py;	/* enum prof_py_thread (include/prof_python.h) */
	__u64 addr;	/* block returned; 0 = allocation failed */
	__u64 old_addr; /* realloc: block given back (0 if none) */
	__u64 size;	/* bytes requested */
	__u64 ts;	/* bpf_ktime_get_ns() at the allocator's return (event traces' time) */
	/* otel_memory:alloc: the bytes this sample stands for, as the process's own sampler gave
	 * them (alloc_space as is); 0 from the allocator probes (--sample-bytes' estimator). */
	__u64 weight;
};
_Static_assert(sizeof(struct prof_heap_event) == 56, "prof_heap_event layout");

/* The per-CPU scratch BPF builds a record in before sending it (room for the walk past the
 * cap); the record sent is its header and nframes words. */
struct prof_heap_record {
	struct prof_heap_event e;
	__u64 frames[PROF_WALK_WORDS];
};

/* PROF_REC_HEAP_FREE. */
struct prof_heap_free {
	__u32 type;
	__u32 pid;
	__u32 tid;
	__u32 pad;
	__u64 addr;
	__u64 ts; /* bpf_ktime_get_ns() at free's entry */
};
_Static_assert(sizeof(struct prof_heap_free) == 32, "prof_heap_free layout");

/* --sample-bytes: userspace fills this many exponentially distributed intervals. */
#define PROF_SAMPLE_TABLE 4096

/* Map sizes, set by the loader between open and load (1 when the map is not needed). */
/* bench/floor.bpf.c's pending-call hash (the heap programs keep theirs in task storage) */
#define PROF_PENDING_ENTRIES 16384
#define PROF_SAMPLED_ENTRIES (1 << 20) /* --sample-bytes: sampled blocks live at once */
/* --sample-bytes: the sampled blocks one process may hold in that map, so that a leak of one
 * leaves room for the others (a quarter: four leaking processes fill it, a few normal ones
 * never reach it). */
#define PROF_SAMPLED_SHARE   (PROF_SAMPLED_ENTRIES / 4)

#endif /* PROF_HEAP_H */
