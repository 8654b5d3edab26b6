/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * The preloaded heap sampler's insides, shared by its malloc family (sampler.c) and its C++
 * operator new family (sampler_cxx.c).  Everything here is hidden: the library exports only
 * the wrapped allocator functions, the two otel_memory semaphores and the stats hook.
 *
 * The probe of each wrapper must sit in the wrapper's own body (a stack taken at it names the
 * wrapper as frame 0, which the otel_memory consumer drops, so the caller is the leaf): the
 * helpers that fire probes are always inlined.
 */
#ifndef SAMPLER_SAMPLER_H
#define SAMPLER_SAMPLER_H

#include <errno.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "prof_sampler.h"

#define _SDT_HAS_SEMAPHORES 1
#include <sys/sdt.h>
/*
 * Probe sites are <sys/sdt.h>'s one-byte nops, on purpose: Linux 6.18 turns a uprobe on a 5-byte
 * nop into a call (twice as cheap as int3), but the call writes below %rsp, into a leaf's red
 * zone, and a child forked after a site was turned crashes on it (SIGSEGV, seen on 6.18.44 with a
 * plain perf uprobe too).  The trap is paid per sampled allocation only.
 */

#define SAMPLER_EXPORT	    __attribute__((visibility("default")))
#define SAMPLER_HIDDEN	    __attribute__((visibility("hidden")))
#define SAMPLER_INLINE	    static inline __attribute__((always_inline))
#define SAMPLER_UNLIKELY(x) __builtin_expect(!!(x), 0)

extern unsigned short otel_memory_alloc_semaphore SAMPLER_EXPORT;
extern unsigned short otel_memory_free_semaphore SAMPLER_EXPORT;
/*
 * Our own semaphore, read without the GOT: the kernel raises the one our probe notes name, which
 * is ours even when another object of the process defines a semaphore of the same name.
 */
extern unsigned short sampler_alloc_semaphore SAMPLER_HIDDEN;
extern unsigned short bpftrace_prof_sampler_lost_semaphore SAMPLER_HIDDEN;

/* One a thread, initial-exec: no __tls_get_addr (which may allocate) on the allocation path. */
struct sampler_thread {
	int64_t countdown; /* bytes until the next sample, once drawn */
	uint64_t rng;	   /* xorshift64* state */
	uint32_t busy;	   /* inside the sampler or the next allocator on its behalf */
	uint8_t drawn;	   /* countdown and rng set (lazily: a zero countdown samples everything) */
	uint8_t resolving; /* this thread is looking the next allocator up */
};
extern __thread struct sampler_thread sampler_ts __attribute__((tls_model("initial-exec")))
SAMPLER_HIDDEN;

extern int sampler_ready SAMPLER_HIDDEN; /* the next allocator is resolved */
extern struct prof_sampler_stats sampler_stats SAMPLER_HIDDEN;

void sampler_resolve(void) SAMPLER_HIDDEN;
void *sampler_dlsym_next(const char *name) SAMPLER_HIDDEN;
bool sampler_draw_sample(size_t n) SAMPLER_HIDDEN; /* the countdown ran out: draw the next */
uint64_t sampler_weight(size_t n) SAMPLER_HIDDEN;
/* Put user in the set of sampled blocks; false when the set is full. */
bool sampler_set_insert(void *user) SAMPLER_HIDDEN;
/* A block of n bytes due for a sample left unsampled (the set full): counted, and told to a
 * profiler through bpftrace_prof:sampler_lost(size). */
void sampler_lost(size_t n) SAMPLER_HIDDEN;
/* Take p out of the set; false when it was not in it. */
bool sampler_set_take(void *p) SAMPLER_HIDDEN;
bool sampler_set_contains(void *p) SAMPLER_HIDDEN;
extern uint32_t sampler_set_count SAMPLER_HIDDEN;

/*
 * One site per probe, each in a function of its own (sampler.c): a site is a uprobe, and the
 * kernel removes every uprobe with a grace period of its own, one after another (about 85 ms
 * each on Linux 6.18).  With a site in the body of every wrapper (37 of them) a profiler took
 * 3 s to detach.  The wrappers call these, never jump to them: above the site are this
 * function's frame, then the wrapper's, then the allocating code.  alloc's fourth argument
 * (SAMPLER_ALLOC_FRAMES, past the otel_memory contract's three) says so to the profiler.
 */
#define SAMPLER_ALLOC_FRAMES 2 /* at most PROF_OTEL_MAX_LEAVES (include/prof_heap.h) */
void sampler_fire_alloc(void *p, size_t n, uint64_t w) SAMPLER_HIDDEN;
void sampler_fire_free(void *p) SAMPLER_HIDDEN;
#define SAMPLER_FIRE_ALLOC(p, n, w) sampler_fire_alloc((p), (n), (w))
#define SAMPLER_FIRE_FREE(p)	    sampler_fire_free(p)
#define SAMPLER_FIRE_LOST(n)	    STAP_PROBE1(bpftrace_prof, sampler_lost, (uint64_t)(n))

/*
 * 1 when the program's malloc, free, calloc and realloc are ours; 0 when an allocator looked up
 * before us (one linked into the executable, or preloaded ahead of us) serves them: then its
 * free would get our blocks, so nothing is sampled and every call we still get passes on.
 */
extern int sampler_front SAMPLER_HIDDEN;

/* A profiler listens (the kernel raised the semaphore on attach), we are the program's
 * allocator and we are not inside ourselves. */
SAMPLER_INLINE bool sampler_listening(void)
{
	return SAMPLER_UNLIKELY(__atomic_load_n(&sampler_alloc_semaphore, __ATOMIC_RELAXED)) &&
	       sampler_front && !sampler_ts.busy;
}

/* Count n bytes down; true when this allocation is sampled.  Allocations of 0 bytes never are. */
SAMPLER_INLINE bool sampler_should_sample(size_t n)
{
	struct sampler_thread *t = &sampler_ts;

	if (__builtin_expect(t->drawn, 1) && (uint64_t)t->countdown > n) {
		t->countdown -= (int64_t)n;
		return false;
	}
	return sampler_draw_sample(n);
}

/* Could p be a sampled block?  Reads p-8 only when it lies in p's page. */
SAMPLER_INLINE bool sampler_maybe_tagged(const void *p)
{
	uintptr_t u = (uintptr_t)p;

	if ((u & 0xfff) >= PROF_SAMPLER_HEADER)
		return SAMPLER_UNLIKELY(((const uint64_t *)p)[-1] == PROF_SAMPLER_TAG);
	return SAMPLER_UNLIKELY(__atomic_load_n(&sampler_set_count, __ATOMIC_RELAXED) != 0);
}

SAMPLER_INLINE void *sampler_base_of(const void *user)
{
	return (void *)((const uintptr_t *)user)[-2];
}

/*
 * Tag a block the next allocator returned (base, with off >= 16 bytes before the user part,
 * off a multiple of the alignment) and put it in the set.  NULL when the set is full: base is
 * then handed out as an ordinary block (it is one, only larger).
 */
SAMPLER_INLINE void *sampler_tag(void *base, size_t off, size_t n, uint64_t *w)
{
	uint64_t *user = (uint64_t *)((char *)base + off);

	user[-2] = (uint64_t)(uintptr_t)base;
	user[-1] = PROF_SAMPLER_TAG;
	if (!sampler_set_insert(user)) {
		user[-1] = 0;
		sampler_lost(n);
		return NULL;
	}
	*w = sampler_weight(n);
	__atomic_fetch_add(&sampler_stats.sampled, 1, __ATOMIC_RELAXED);
	__atomic_fetch_add(&sampler_stats.weight_bytes, *w, __ATOMIC_RELAXED);
	return user;
}

/* A sampled block leaves the set: its tag is cleared and its base returned for the next free. */
SAMPLER_INLINE void *sampler_untag(void *user)
{
	uint64_t *u = user;
	void *base = (void *)(uintptr_t)u[-2];

	u[-1] = 0;
	__atomic_fetch_add(&sampler_stats.freed, 1, __ATOMIC_RELAXED);
	return base;
}

#endif /* SAMPLER_SAMPLER_H */
