// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * C++ operator new and delete, wrapped so that the alloc probe fires inside the operator new
 * the program called: its stack then has the new as frame 0 (dropped by the otel_memory
 * consumer) and the program's function as the leaf, where a probe in the malloc that new calls
 * would name new.  Each wrapper calls the next operator new (its new_handler loop and bad_alloc
 * stay the C++ library's) with our reentrancy guard up, so the malloc it reaches decides
 * nothing.  delete is wrapped too: a sampled block goes back to the next delete as the base the
 * next new returned (an allocator's own delete may not go through free).
 */
#include "sampler/sampler.h"

#include <dlfcn.h>
#include <stdlib.h>

typedef void *(*new_fn)(size_t);
typedef void *(*new_nothrow_fn)(size_t, const void *);
typedef void *(*new_aligned_fn)(size_t, size_t);
typedef void *(*new_aligned_nothrow_fn)(size_t, size_t, const void *);
typedef void (*delete_fn)(void *);
typedef void (*delete_aligned_fn)(void *, size_t);

/*
 * The next definition of a C++ library function.  A C++ library loaded later with RTLD_LOCAL
 * (a Python extension's) is not in the global scope RTLD_NEXT searches: ask libstdc++ itself.
 */
static void *next_cxx(void **slot, const char *name)
{
	void *f = __atomic_load_n(slot, __ATOMIC_ACQUIRE), *h;

	if (__builtin_expect(f != NULL, 1))
		return f;
	f = sampler_dlsym_next(name);
	if (!f) {
		sampler_ts.busy++;
		h = dlopen("libstdc++.so.6", RTLD_NOLOAD | RTLD_LAZY);
		if (h) {
			f = dlsym(h, name);
			dlclose(h); /* still loaded: whoever called this operator loaded it */
		}
		sampler_ts.busy--;
	}
	if (!f)
		abort(); /* an operator of the C++ library called with no C++ library loaded */
	__atomic_store_n(slot, f, __ATOMIC_RELEASE);
	return f;
}

#define STR_(x) #x
#define STR(x)	STR_(x)
#define NEXT(type, sym)                            \
	({                                         \
		static void *slot_;                \
		(type) next_cxx(&slot_, STR(sym)); \
	})

/* The guard comes down however the call ends, a bad_alloc thrown through us included. */
static void guard_down(uint32_t *unused)
{
	sampler_ts.busy--;
}
#define GUARD_UP() uint32_t guard_ __attribute__((cleanup(guard_down), unused)) = sampler_ts.busy++

/* The header below the user part: 16 bytes, or the alignment when that is larger. */
static size_t header_for(size_t align)
{
	return align > PROF_SAMPLER_HEADER ? align : PROF_SAMPLER_HEADER;
}

/*
 * One operator new: sampled, ask the next new for room for the header too; the probe fires
 * here, in the body of the exported function.  NEXT_CALL(size) calls the next operator.
 */
#define SAMPLED_NEW(sym, n, align, NEXT_CALL)                                                  \
	do {                                                                                   \
		size_t off_ = header_for(align);                                               \
		uint64_t w_ = 0;                                                               \
		void *base_, *user_;                                                           \
                                                                                               \
		if (!sampler_listening())                                                      \
			return NEXT_CALL(n);                                                   \
		if (SAMPLER_UNLIKELY(!__atomic_load_n(&sampler_ready, __ATOMIC_ACQUIRE)))      \
			sampler_resolve();                                                     \
		GUARD_UP();                                                                    \
		if (!sampler_should_sample(n) || (align & (align - 1)) || n > SIZE_MAX - off_) \
			return NEXT_CALL(n);                                                   \
		base_ = NEXT_CALL(n + off_);                                                   \
		if (!base_)                                                                    \
			return NEXT_CALL(n); /* nothrow: maybe the smaller block fits */       \
		user_ = sampler_tag(base_, off_, n, &w_);                                      \
		if (!user_)                                                                    \
			return base_; /* the set is full: an ordinary block, only larger */    \
		SAMPLER_FIRE_ALLOC(user_, n, w_);                                              \
		return user_;                                                                  \
	} while (0)

#define PLAIN(n)	   NEXT(new_fn, SYM)(n)
#define NOTHROW(n)	   NEXT(new_nothrow_fn, SYM)(n, nt)
#define ALIGNED(n)	   NEXT(new_aligned_fn, SYM)(n, align)
#define ALIGNED_NOTHROW(n) NEXT(new_aligned_nothrow_fn, SYM)(n, align, nt)

#define SYM _Znwm
SAMPLER_EXPORT void *_Znwm(size_t n)
{
	SAMPLED_NEW(SYM, n, (size_t)0, PLAIN);
}
#undef SYM
#define SYM _Znam
SAMPLER_EXPORT void *_Znam(size_t n)
{
	SAMPLED_NEW(SYM, n, (size_t)0, PLAIN);
}
#undef SYM
#define SYM _ZnwmRKSt9nothrow_t
SAMPLER_EXPORT void *_ZnwmRKSt9nothrow_t(size_t n, const void *nt)
{
	SAMPLED_NEW(SYM, n, (size_t)0, NOTHROW);
}
#undef SYM
#define SYM _ZnamRKSt9nothrow_t
SAMPLER_EXPORT void *_ZnamRKSt9nothrow_t(size_t n, const void *nt)
{
	SAMPLED_NEW(SYM, n, (size_t)0, NOTHROW);
}
#undef SYM
#define SYM _ZnwmSt11align_val_t
SAMPLER_EXPORT void *_ZnwmSt11align_val_t(size_t n, size_t align)
{
	SAMPLED_NEW(SYM, n, align, ALIGNED);
}
#undef SYM
#define SYM _ZnamSt11align_val_t
SAMPLER_EXPORT void *_ZnamSt11align_val_t(size_t n, size_t align)
{
	SAMPLED_NEW(SYM, n, align, ALIGNED);
}
#undef SYM
#define SYM _ZnwmSt11align_val_tRKSt9nothrow_t
SAMPLER_EXPORT void *_ZnwmSt11align_val_tRKSt9nothrow_t(size_t n, size_t align, const void *nt)
{
	SAMPLED_NEW(SYM, n, align, ALIGNED_NOTHROW);
}
#undef SYM
#define SYM _ZnamSt11align_val_tRKSt9nothrow_t
SAMPLER_EXPORT void *_ZnamSt11align_val_tRKSt9nothrow_t(size_t n, size_t align, const void *nt)
{
	SAMPLED_NEW(SYM, n, align, ALIGNED_NOTHROW);
}
#undef SYM

/* A sampled block to the next plain delete (the unsized one: sizes differ by the header). */
#define DELETE(p)                                                     \
	do {                                                          \
		if (!p)                                               \
			return;                                       \
		if (sampler_maybe_tagged(p) && sampler_set_take(p)) { \
			SAMPLER_FIRE_FREE(p);                         \
			p = sampler_untag(p);                         \
		}                                                     \
	} while (0)

SAMPLER_EXPORT void _ZdlPv(void *p)
{
	DELETE(p);
	NEXT(delete_fn, _ZdlPv)(p);
}

SAMPLER_EXPORT void _ZdaPv(void *p)
{
	DELETE(p);
	NEXT(delete_fn, _ZdaPv)(p);
}

SAMPLER_EXPORT void _ZdlPvm(void *p, size_t n)
{
	DELETE(p);
	NEXT(delete_fn, _ZdlPv)(p);
}

SAMPLER_EXPORT void _ZdaPvm(void *p, size_t n)
{
	DELETE(p);
	NEXT(delete_fn, _ZdaPv)(p);
}

SAMPLER_EXPORT void _ZdlPvRKSt9nothrow_t(void *p, const void *nt)
{
	DELETE(p);
	NEXT(delete_fn, _ZdlPv)(p);
}

SAMPLER_EXPORT void _ZdaPvRKSt9nothrow_t(void *p, const void *nt)
{
	DELETE(p);
	NEXT(delete_fn, _ZdaPv)(p);
}

SAMPLER_EXPORT void _ZdlPvSt11align_val_t(void *p, size_t align)
{
	DELETE(p);
	NEXT(delete_aligned_fn, _ZdlPvSt11align_val_t)(p, align);
}

SAMPLER_EXPORT void _ZdaPvSt11align_val_t(void *p, size_t align)
{
	DELETE(p);
	NEXT(delete_aligned_fn, _ZdaPvSt11align_val_t)(p, align);
}

SAMPLER_EXPORT void _ZdlPvmSt11align_val_t(void *p, size_t n, size_t align)
{
	DELETE(p);
	NEXT(delete_aligned_fn, _ZdlPvSt11align_val_t)(p, align);
}

SAMPLER_EXPORT void _ZdaPvmSt11align_val_t(void *p, size_t n, size_t align)
{
	DELETE(p);
	NEXT(delete_aligned_fn, _ZdaPvSt11align_val_t)(p, align);
}

SAMPLER_EXPORT void _ZdlPvSt11align_val_tRKSt9nothrow_t(void *p, size_t align, const void *nt)
{
	DELETE(p);
	NEXT(delete_aligned_fn, _ZdlPvSt11align_val_t)(p, align);
}

SAMPLER_EXPORT void _ZdaPvSt11align_val_tRKSt9nothrow_t(void *p, size_t align, const void *nt)
{
	DELETE(p);
	NEXT(delete_aligned_fn, _ZdaPvSt11align_val_t)(p, align);
}
