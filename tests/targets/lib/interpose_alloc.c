// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * A tiny allocator preloaded after the sampler (LD_PRELOAD="sampler.so this.so"): the sampler
 * must reach it through dlsym(RTLD_NEXT) and never hand it a pointer it did not give out.  Every
 * block it gives out looks sampled to a tag check that is not confirmed: the word below it is
 * the sampler's tag and the word below that an address that is no block of ours.  free of a
 * pointer it did not give out (or twice) aborts.  Bump allocation, never reused.
 */
#include <errno.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "prof_sampler.h"

#define REGION	 (1ULL << 32)
#define LIVE	 0x1a7e5a11c0ffee01ULL
#define FREED	 0xdeadf4eed0000001ULL
#define EXPORT	 __attribute__((visibility("default")))
#define HDR_SIZE 32

static char *region;
static size_t used;
static uint64_t calls;

static void *alloc(size_t align, size_t n)
{
	char *r = __atomic_load_n(&region, __ATOMIC_ACQUIRE);
	size_t need, at, user;
	uint64_t *h;

	if (!r) {
		char *m = mmap(NULL, REGION, PROT_READ | PROT_WRITE,
			       MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
		char *none = NULL;

		if (m == MAP_FAILED)
			abort();
		if (!__atomic_compare_exchange_n(&region, &none, m, false, __ATOMIC_ACQ_REL,
						 __ATOMIC_ACQUIRE))
			munmap(m, REGION);
		r = region;
	}
	if (align < 16)
		align = 16;
	if (n > REGION / 2 || align > REGION / 4) {
		errno = ENOMEM;
		return NULL;
	}
	need = n + HDR_SIZE + align;
	at = __atomic_fetch_add(&used, need, __ATOMIC_RELAXED);
	if (at + need > REGION) {
		errno = ENOMEM;
		return NULL;
	}
	user = ((size_t)(uintptr_t)(r + at) + HDR_SIZE + align - 1) & ~(align - 1);
	h = (uint64_t *)(uintptr_t)user - 4;
	h[0] = LIVE;
	h[1] = n;
	h[2] = (uint64_t)(uintptr_t)(r + 8); /* where a trusting sampler would find a "base" */
	h[3] = PROF_SAMPLER_TAG;
	__atomic_fetch_add(&calls, 1, __ATOMIC_RELAXED);
	return (void *)(uintptr_t)user;
}

static uint64_t *header(void *p)
{
	uint64_t *h = (uint64_t *)p - 4;
	char *r = __atomic_load_n(&region, __ATOMIC_ACQUIRE);

	if (!r || (char *)p < r + HDR_SIZE || (char *)p >= r + REGION || h[0] != LIVE)
		abort(); /* not a block of ours, or freed twice */
	return h;
}

EXPORT uint64_t interpose_alloc_calls(void)
{
	return __atomic_load_n(&calls, __ATOMIC_RELAXED);
}

EXPORT void *malloc(size_t n)
{
	return alloc(16, n);
}

EXPORT void free(void *p)
{
	if (p)
		header(p)[0] = FREED;
}

EXPORT void *calloc(size_t c, size_t s)
{
	size_t n;

	if (__builtin_mul_overflow(c, s, &n)) {
		errno = ENOMEM;
		return NULL;
	}
	return alloc(16, n); /* fresh pages, never reused: zero */
}

EXPORT size_t malloc_usable_size(void *p)
{
	return p ? header(p)[1] : 0;
}

EXPORT void *realloc(void *p, size_t n)
{
	void *q;
	size_t old;

	if (!p)
		return alloc(16, n);
	old = header(p)[1];
	if (!n) {
		free(p);
		return NULL;
	}
	q = alloc(16, n);
	if (!q)
		return NULL;
	memcpy(q, p, old < n ? old : n);
	free(p);
	return q;
}

static int bad_align(size_t a)
{
	return !a || (a & (a - 1));
}

EXPORT void *memalign(size_t a, size_t n)
{
	if (bad_align(a)) {
		errno = EINVAL;
		return NULL;
	}
	return alloc(a, n);
}

EXPORT void *aligned_alloc(size_t a, size_t n)
{
	return memalign(a, n);
}

EXPORT int posix_memalign(void **out, size_t a, size_t n)
{
	void *p;

	if (bad_align(a) || a % sizeof(void *))
		return EINVAL;
	p = alloc(a, n);
	if (!p)
		return ENOMEM;
	*out = p;
	return 0;
}

EXPORT void *valloc(size_t n)
{
	return alloc((size_t)sysconf(_SC_PAGESIZE), n);
}

EXPORT void *pvalloc(size_t n)
{
	size_t page = (size_t)sysconf(_SC_PAGESIZE);

	if (n > SIZE_MAX - page) {
		errno = ENOMEM;
		return NULL;
	}
	return alloc(page, (n + page - 1) / page * page);
}
