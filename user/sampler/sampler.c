// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * The preloaded heap sampler: wraps the malloc family of the next allocator (dlsym RTLD_NEXT),
 * samples about one allocation per BPFTRACE_PROF_SAMPLE_BYTES bytes with a per-thread
 * exponential byte countdown, and fires the otel_memory USDT probes for sampled blocks only,
 * while a profiler holds the alloc semaphore up.  A sampled block carries a 16-byte header
 * (base, tag) so free recognises it without a lookup; a match of the tag is confirmed in a small
 * set of the sampled pointers.  docs/how-it-works.md, "The preloaded sampler".
 */
#include "sampler/sampler.h"

#include <dlfcn.h>
#include <link.h>
#include <math.h>
#include <pthread.h>
#include <sched.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <time.h>
#include <unistd.h>

/* In .probes, as <sys/sdt.h>'s users put them: libbpf finds them through the note's address. */
unsigned short otel_memory_alloc_semaphore __attribute__((section(".probes")));
unsigned short otel_memory_free_semaphore __attribute__((section(".probes")));
extern unsigned short sampler_alloc_semaphore __attribute__((alias("otel_memory_alloc_semaphore")));
/* Our own probe's: a profiler counting the samples lost to a full set raises it. */
unsigned short bpftrace_prof_sampler_lost_semaphore __attribute__((section(".probes")));

__thread struct sampler_thread sampler_ts __attribute__((tls_model("initial-exec")));
int sampler_ready;
int sampler_front;
struct prof_sampler_stats sampler_stats;
uint32_t sampler_set_count;

static struct {
	void *(*malloc)(size_t);
	void (*free)(void *);
	void *(*calloc)(size_t, size_t);
	void *(*realloc)(void *, size_t);
	void *(*reallocarray)(void *, size_t, size_t);
	void *(*memalign)(size_t, size_t);
	int (*posix_memalign)(void **, size_t, size_t);
	void *(*aligned_alloc)(size_t, size_t);
	void *(*valloc)(size_t);
	void *(*pvalloc)(size_t);
	size_t (*usable)(void *);
} next;

static uint64_t mean_bytes = PROF_SAMPLER_DEFAULT_BYTES;
static uint64_t seed_base;
static bool seed_fixed;
static uint64_t threads_seeded;
static size_t page_size = 4096;

/*
 * dlsym may allocate (calloc for its error state) before it has told us where calloc is: those
 * few blocks come from here, are never reused and never reach the next allocator.  Each has a
 * 16-byte header holding its size.
 */
#define ARENA_SIZE 16384
static char arena[ARENA_SIZE] __attribute__((aligned(16)));
static size_t arena_used;

static bool in_arena(const void *p)
{
	return (const char *)p >= arena && (const char *)p < arena + ARENA_SIZE;
}

static void *arena_alloc(size_t n)
{
	size_t need, at;

	if (n > ARENA_SIZE)
		goto full;
	need = (n + 15) / 16 * 16 + 16;
	at = __atomic_fetch_add(&arena_used, need, __ATOMIC_RELAXED);
	if (at + need > ARENA_SIZE)
		goto full;
	*(size_t *)(arena + at) = n;
	return arena + at + 16;
full:
	errno = ENOMEM;
	return NULL;
}

static size_t arena_size(const void *p)
{
	return *(const size_t *)((const char *)p - 16);
}

/* A positive decimal number of bytes up to 1 TiB; anything else is the default. */
static uint64_t parse_u64(const char *s, uint64_t max, uint64_t dflt)
{
	uint64_t v = 0;

	if (!s || !*s)
		return dflt;
	for (; *s; s++) {
		if (*s < '0' || *s > '9')
			return dflt;
		v = v * 10 + (uint64_t)(*s - '0');
		if (v > max)
			return dflt;
	}
	return v ? v : dflt;
}

static void read_config(void)
{
	const char *seed = getenv(PROF_SAMPLER_ENV_SEED);
	long ps = sysconf(_SC_PAGESIZE);

	mean_bytes =
		parse_u64(getenv(PROF_SAMPLER_ENV_BYTES), 1ULL << 40, PROF_SAMPLER_DEFAULT_BYTES);
	sampler_stats.mean_bytes = mean_bytes;
	if (seed && *seed) {
		seed_fixed = true;
		seed_base = parse_u64(seed, UINT64_MAX / 10, 0);
	}
	if (ps > 0)
		page_size = (size_t)ps;
}

void *sampler_dlsym_next(const char *name)
{
	void *f;

	sampler_ts.busy++;
	f = dlsym(RTLD_NEXT, name);
	sampler_ts.busy--;
	return f;
}

static bool resolve_front(void);

void sampler_resolve(void)
{
	static int state; /* 0 not yet, 1 a thread is at it, 2 done */
	int zero = 0, saved = errno;

	if (!__atomic_compare_exchange_n(&state, &zero, 1, false, __ATOMIC_ACQUIRE,
					 __ATOMIC_RELAXED)) {
		/* Another thread resolves; we wait, unless it is our own dlsym calling back. */
		while (!sampler_ts.resolving && __atomic_load_n(&state, __ATOMIC_ACQUIRE) != 2)
			sched_yield();
		return;
	}
	sampler_ts.resolving = 1;
	read_config();
	next.malloc = sampler_dlsym_next("malloc");
	next.free = sampler_dlsym_next("free");
	next.calloc = sampler_dlsym_next("calloc");
	next.realloc = sampler_dlsym_next("realloc");
	next.reallocarray = sampler_dlsym_next("reallocarray");
	next.memalign = sampler_dlsym_next("memalign");
	next.posix_memalign = sampler_dlsym_next("posix_memalign");
	next.aligned_alloc = sampler_dlsym_next("aligned_alloc");
	next.valloc = sampler_dlsym_next("valloc");
	next.pvalloc = sampler_dlsym_next("pvalloc");
	next.usable = sampler_dlsym_next("malloc_usable_size");
	/* Still resolving: a block dlsym asks for comes from the arena. */
	sampler_front = resolve_front();
	sampler_ts.resolving = 0;
	/* Without a next malloc there is nothing to wrap: a broken process either way. */
	if (!next.malloc || !next.free || !next.calloc || !next.realloc)
		abort();
	__atomic_store_n(&sampler_ready, 1, __ATOMIC_RELEASE);
	__atomic_store_n(&state, 2, __ATOMIC_RELEASE);
	errno = saved;
}

/* A wrapper called before the next allocator is known: resolve it, unless we are resolving. */
static bool bootstrapping(void)
{
	if (__builtin_expect(__atomic_load_n(&sampler_ready, __ATOMIC_ACQUIRE), 1))
		return false;
	if (sampler_ts.resolving)
		return true;
	sampler_resolve();
	return false;
}

/* ---- sampling ---------------------------------------------------------------------------- */

static uint64_t splitmix64(uint64_t x)
{
	x += 0x9e3779b97f4a7c15ULL;
	x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
	x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
	return x ^ (x >> 31);
}

/* Thread k of the process gets seed+k with a fixed seed, else bytes from the kernel. */
static uint64_t thread_seed(void)
{
	uint64_t k = __atomic_fetch_add(&threads_seeded, 1, __ATOMIC_RELAXED), r = 0;
	struct timespec ts;

	if (seed_fixed)
		return splitmix64(seed_base + k) | 1;
	if (getrandom(&r, sizeof(r), GRND_NONBLOCK) != sizeof(r)) {
		clock_gettime(CLOCK_MONOTONIC, &ts);
		r = (uint64_t)ts.tv_nsec ^ ((uint64_t)ts.tv_sec << 32) ^ (uint64_t)gettid() ^
		    (uint64_t)(uintptr_t)&sampler_ts;
	}
	return splitmix64(r ^ k) | 1;
}

/*
 * Bytes to the next sample: exponential with mean mean_bytes, as floor(x)+1, so a block of s
 * bytes is sampled (countdown <= s) with probability 1 - exp(-s/mean) exactly.
 */
static int64_t draw(struct sampler_thread *t)
{
	uint64_t x = t->rng;
	double u, d;

	x ^= x >> 12;
	x ^= x << 25;
	x ^= x >> 27;
	t->rng = x;
	u = (double)(((x * 0x2545f4914f6cdd1dULL) >> 11) + 1) * 0x1.0p-53; /* (0, 1] */
	d = -log(u) * (double)mean_bytes;
	if (d > 0x1.0p62)
		d = 0x1.0p62;
	return (int64_t)d + 1;
}

bool sampler_draw_sample(size_t n)
{
	struct sampler_thread *t = &sampler_ts;
	int saved = errno;
	bool sampled;

	if (!t->drawn) {
		t->rng = thread_seed();
		t->countdown = draw(t);
		t->drawn = 1;
	}
	sampled = (uint64_t)t->countdown <= n;
	/* Memoryless: the next sample point after this block is a fresh draw from its end. */
	t->countdown = sampled ? draw(t) : t->countdown - (int64_t)n;
	errno = saved;
	return sampled;
}

/* What one sampled block of n bytes stands for: n / P(sampled), as user/agg/heap_agg.c weighs. */
uint64_t sampler_weight(size_t n)
{
	double w = (double)n / -expm1(-(double)n / (double)mean_bytes);
	uint64_t r = w >= 0x1.0p64 ? UINT64_MAX : (uint64_t)(w + 0.5);

	return r < n ? n : r;
}

/* ---- the set of sampled blocks ------------------------------------------------------------ */

/* Open addressing, at most half full, under a spin lock: sampled blocks are rare. */
#define SET_BITS  17
#define SET_SLOTS (1U << SET_BITS)
_Static_assert(SET_SLOTS >= 2 * PROF_SAMPLER_MAX_LIVE, "the set stays at most half full");
static uintptr_t set_slot[SET_SLOTS];
static int set_lock;

static void lock(void)
{
	for (int spins = 0; __atomic_exchange_n(&set_lock, 1, __ATOMIC_ACQUIRE); spins++) {
		while (__atomic_load_n(&set_lock, __ATOMIC_RELAXED)) {
			if (++spins > 100)
				sched_yield();
#if defined(__x86_64__) || defined(__i386__)
			else
				__builtin_ia32_pause();
#endif
		}
	}
}

static void unlock(void)
{
	__atomic_store_n(&set_lock, 0, __ATOMIC_RELEASE);
}

static uint32_t slot_of(uintptr_t p)
{
	return (uint32_t)(((p >> 4) * 0x9e3779b97f4a7c15ULL) >> (64 - SET_BITS));
}

/* The slot holding p, or the empty slot where it would go. */
static uint32_t find(uintptr_t p)
{
	uint32_t i = slot_of(p);

	while (set_slot[i] && set_slot[i] != p)
		i = (i + 1) & (SET_SLOTS - 1);
	return i;
}

/* force: past the cap (never past the slots: the set is twice the cap), for a block that was
 * in the set a moment ago and must go back (a realloc that failed). */
static bool set_insert(uintptr_t p, bool force)
{
	bool ok = false;

	lock();
	if (force || sampler_set_count < PROF_SAMPLER_MAX_LIVE) {
		uint32_t i = find(p);

		if (!set_slot[i]) {
			set_slot[i] = p;
			__atomic_store_n(&sampler_set_count, sampler_set_count + 1,
					 __ATOMIC_RELAXED);
		}
		ok = true;
	}
	unlock();
	return ok;
}

bool sampler_set_insert(void *user)
{
	return set_insert((uintptr_t)user, false);
}

bool sampler_set_contains(void *user)
{
	bool found;

	lock();
	found = set_slot[find((uintptr_t)user)] != 0;
	unlock();
	return found;
}

bool sampler_set_take(void *user)
{
	uint32_t i, j, k;

	lock();
	i = find((uintptr_t)user);
	if (!set_slot[i]) {
		unlock();
		return false;
	}
	/* Backward-shift deletion keeps every probe chain unbroken without tombstones. */
	for (j = i;;) {
		j = (j + 1) & (SET_SLOTS - 1);
		if (!set_slot[j])
			break;
		k = slot_of(set_slot[j]);
		if ((j > i && (k <= i || k > j)) || (j < i && k <= i && k > j)) {
			set_slot[i] = set_slot[j];
			i = j;
		}
	}
	set_slot[i] = 0;
	__atomic_store_n(&sampler_set_count, sampler_set_count - 1, __ATOMIC_RELAXED);
	unlock();
	return true;
}

/*
 * The probe sites (sampler.h): out of line, kept whole (no clone, no merge, no inlining).  The
 * frame address taken makes gcc 12 keep alloc's frame pointer, which it drops in a leaf function
 * whatever the flags: a frame-pointer walk must see this frame, then the wrapper's.
 */
__attribute__((noinline, noipa)) void sampler_fire_alloc(void *p, size_t n, uint64_t w)
{
	__asm__ volatile("" : : "r"(__builtin_frame_address(0)));
	STAP_PROBE4(otel_memory, alloc, (uint64_t)(uintptr_t)p, (uint64_t)n, w,
		    SAMPLER_ALLOC_FRAMES);
}

__attribute__((noinline, noipa)) void sampler_fire_free(void *p)
{
	STAP_PROBE1(otel_memory, free, (uint64_t)(uintptr_t)p);
}

void sampler_lost(size_t n)
{
	__atomic_fetch_add(&sampler_stats.table_full, 1, __ATOMIC_RELAXED);
	/* One site, out of line: the loss is counted, its stack is not wanted. */
	if (SAMPLER_UNLIKELY(
		    __atomic_load_n(&bpftrace_prof_sampler_lost_semaphore, __ATOMIC_RELAXED)))
		SAMPLER_FIRE_LOST(n);
}

/* Is p a sampled block?  The tag first (no lock on the common path), the set to confirm. */
static inline __attribute__((always_inline)) bool is_sampled(void *p)
{
	return sampler_maybe_tagged(p) && sampler_set_contains(p);
}

static inline __attribute__((always_inline)) bool take_sampled(void *p)
{
	return sampler_maybe_tagged(p) && sampler_set_take(p);
}

static size_t sampled_usable(void *user)
{
	void *base = sampler_base_of(user);

	return next.usable(base) - (size_t)((char *)user - (char *)base);
}

/*
 * A sampled block of n bytes, its user part aligned to align (a power of two), from the next
 * allocator; NULL when it cannot be had (then the caller asks the next allocator for an
 * ordinary block, which also gives the errors exactly as it would).  errno is kept.
 */
static void *sampled_block(size_t n, size_t align, bool zero, uint64_t *w)
{
	size_t off = align > PROF_SAMPLER_HEADER ? align : PROF_SAMPLER_HEADER;
	int saved = errno;
	void *base = NULL, *user;

	if (n > SIZE_MAX - off)
		return NULL;
	sampler_ts.busy++;
	if (align > PROF_SAMPLER_HEADER) {
		if (next.posix_memalign(&base, align, n + off))
			base = NULL;
	} else {
		base = zero ? next.calloc(1, n + off) : next.malloc(n + off);
	}
	sampler_ts.busy--;
	errno = saved;
	if (!base)
		return NULL;
	user = sampler_tag(base, off, n, w);
	/* The set is full: base is an ordinary block, aligned as asked, only larger. */
	return user ? user : base;
}

/* ---- the malloc family -------------------------------------------------------------------- */

/* Each wrapper fires its probe in its own body (see sampler.h), through these inlined helpers. */
#define ALWAYS_INLINE static inline __attribute__((always_inline))

ALWAYS_INLINE void *do_malloc(size_t n)
{
	uint64_t w = 0;
	void *p;

	if (SAMPLER_UNLIKELY(bootstrapping()))
		return arena_alloc(n);
	if (!sampler_listening() || !sampler_should_sample(n))
		return next.malloc(n);
	p = sampled_block(n, 0, false, &w);
	if (!p)
		return next.malloc(n);
	if (w)
		SAMPLER_FIRE_ALLOC(p, n, w);
	return p;
}

ALWAYS_INLINE void release_sampled(void *p)
{
	void *base = sampler_untag(p);

	SAMPLER_FIRE_FREE(p);
	next.free(base);
}

ALWAYS_INLINE void do_free(void *p)
{
	if (!p || SAMPLER_UNLIKELY(in_arena(p)))
		return;
	/* Checked whether or not a profiler listens: sampled blocks outlive it. */
	if (take_sampled(p)) {
		release_sampled(p);
		return;
	}
	if (SAMPLER_UNLIKELY(!next.free))
		return; /* not resolved yet: nothing but the arena has been handed out */
	next.free(p);
}

/*
 * realloc where a sampled block is on either side, and the old one is ordinary or has only its
 * header in front: the next allocator's realloc moves the block as it would unsampled (glibc:
 * mremap for a big one, no copy, no fresh page touched), and the data is shifted by the header
 * in place where it goes on or off.  A new block and a copy instead cost sqlite3's growing sorter
 * buffer a thousand page faults.  A sampled p leaves the set before the realloc frees it:
 * another thread may be handed the old address as soon as it is free.
 */
ALWAYS_INLINE void *realloc_shifted(void *p, size_t n, bool old_sampled, bool new_sampled)
{
	void *base = old_sampled ? (char *)p - PROF_SAMPLER_HEADER : p, *nb, *user;
	size_t keep = old_sampled ? sampled_usable(p) : next.usable(p); /* the bytes to move */
	uint64_t w = 0;

	if (n > SIZE_MAX - PROF_SAMPLER_HEADER) {
		errno = ENOMEM;
		return NULL;
	}
	if (old_sampled && !sampler_set_take(p)) {
		errno = ENOMEM; /* racing a free of p: undefined, refused */
		return NULL;
	}
	if (keep > n)
		keep = n;
	sampler_ts.busy++;
	nb = next.realloc(base, n + PROF_SAMPLER_HEADER);
	sampler_ts.busy--;
	if (!nb) {
		if (old_sampled)
			set_insert((uintptr_t)p, true); /* p stays as it was, sampled */
		return NULL;
	}
	if (old_sampled) {
		__atomic_fetch_add(&sampler_stats.freed, 1, __ATOMIC_RELAXED);
		SAMPLER_FIRE_FREE(p);
	}
	if (!new_sampled)
		goto ordinary;
	if (!old_sampled)
		memmove((char *)nb + PROF_SAMPLER_HEADER, nb, keep);
	user = sampler_tag(nb, PROF_SAMPLER_HEADER, n, &w);
	if (!user)
		goto ordinary; /* the set is full */
	SAMPLER_FIRE_ALLOC(user, n, w);
	return user;
ordinary: /* nb, its data moved to its start */
	memmove(nb, (char *)nb + PROF_SAMPLER_HEADER, keep);
	return nb;
}

ALWAYS_INLINE void *do_realloc(void *p, size_t n)
{
	bool old_sampled, new_sampled;
	size_t old_size;
	uint64_t w = 0;
	void *q = NULL;

	if (!p)
		return do_malloc(n);
	if (SAMPLER_UNLIKELY(in_arena(p))) {
		q = do_malloc(n);
		if (q)
			memcpy(q, p, arena_size(p) < n ? arena_size(p) : n);
		return q;
	}
	old_sampled = is_sampled(p);
	if (!n) {
		/* As glibc: realloc(p, 0) frees p and returns NULL. */
		if (!old_sampled)
			return next.realloc(p, 0);
		if (sampler_set_take(p))
			release_sampled(p);
		return NULL;
	}
	new_sampled = sampler_listening() && sampler_should_sample(n);
	if (!old_sampled && !new_sampled)
		return next.realloc(p, n);
	if (!old_sampled || sampler_base_of(p) == (char *)p - PROF_SAMPLER_HEADER)
		return realloc_shifted(p, n, old_sampled, new_sampled);
	/* An aligned sampled block (more than its header in front): into a new block, copied. */
	q = new_sampled ? sampled_block(n, 0, false, &w) : NULL;
	if (!q && !(q = next.malloc(n)))
		return NULL;
	old_size = sampled_usable(p);
	memcpy(q, p, old_size < n ? old_size : n);
	if (sampler_set_take(p))
		release_sampled(p);
	if (w)
		SAMPLER_FIRE_ALLOC(q, n, w);
	return q;
}

static bool power_of_two(size_t a)
{
	return a && !(a & (a - 1));
}

/* memalign, aligned_alloc, valloc, pvalloc: sampled only for power-of-two alignments. */
ALWAYS_INLINE void *do_aligned(size_t align, size_t n, size_t weigh, uint64_t *w)
{
	if (!power_of_two(align) || !sampler_listening() || !sampler_should_sample(weigh))
		return NULL;
	return sampled_block(n, align, false, w);
}

SAMPLER_EXPORT void *malloc(size_t n)
{
	return do_malloc(n);
}

SAMPLER_EXPORT void free(void *p)
{
	do_free(p);
}

SAMPLER_EXPORT void *calloc(size_t count, size_t size)
{
	uint64_t w = 0;
	size_t n;
	void *p;

	if (__builtin_mul_overflow(count, size, &n)) {
		errno = ENOMEM;
		return NULL;
	}
	if (SAMPLER_UNLIKELY(bootstrapping()))
		return arena_alloc(n); /* static, never reused: zero */
	if (!sampler_listening() || !sampler_should_sample(n))
		return next.calloc(count, size);
	p = sampled_block(n, 0, true, &w);
	if (!p)
		return next.calloc(count, size);
	if (w)
		SAMPLER_FIRE_ALLOC(p, n, w);
	return p;
}

SAMPLER_EXPORT void *realloc(void *p, size_t n)
{
	if (SAMPLER_UNLIKELY(bootstrapping())) {
		void *q = arena_alloc(n);

		if (q && p)
			memcpy(q, p, arena_size(p) < n ? arena_size(p) : n);
		return q;
	}
	return do_realloc(p, n);
}

SAMPLER_EXPORT void *reallocarray(void *p, size_t count, size_t size)
{
	size_t n;

	if (__builtin_mul_overflow(count, size, &n)) {
		errno = ENOMEM;
		return NULL;
	}
	if (SAMPLER_UNLIKELY(bootstrapping()))
		return NULL;
	/* Not the program's allocator: its realloc, through glibc's reallocarray. */
	if (!sampler_front && next.reallocarray)
		return next.reallocarray(p, count, size);
	return do_realloc(p, n);
}

/*
 * memalign and aligned_alloc: an unsampled call (and any alignment we do not sample) goes to
 * the next one's own function, which gives its errors (aligned_alloc's EINVAL, memalign's
 * rounding up).  Its slot is read after bootstrapping() has filled it.
 */
ALWAYS_INLINE void *do_memalign(size_t align, size_t n, void *(*const *next_fn)(size_t, size_t))
{
	uint64_t w = 0;
	void *p;

	if (SAMPLER_UNLIKELY(bootstrapping()))
		return NULL;
	p = do_aligned(align, n, n, &w);
	if (!p)
		return (*next_fn)(align, n);
	if (w)
		SAMPLER_FIRE_ALLOC(p, n, w);
	return p;
}

SAMPLER_EXPORT void *memalign(size_t align, size_t n)
{
	return do_memalign(align, n, &next.memalign);
}

SAMPLER_EXPORT void *aligned_alloc(size_t align, size_t n)
{
	return do_memalign(align, n, &next.aligned_alloc);
}

SAMPLER_EXPORT int posix_memalign(void **out, size_t align, size_t n)
{
	uint64_t w = 0;
	void *p;

	if (SAMPLER_UNLIKELY(bootstrapping()))
		return ENOMEM;
	/* posix_memalign also wants a multiple of sizeof(void *): EINVAL comes from the next. */
	p = align % sizeof(void *) ? NULL : do_aligned(align, n, n, &w);
	if (!p)
		return next.posix_memalign(out, align, n);
	*out = p;
	if (w)
		SAMPLER_FIRE_ALLOC(p, n, w);
	return 0;
}

SAMPLER_EXPORT void *valloc(size_t n)
{
	uint64_t w = 0;
	void *p;

	if (SAMPLER_UNLIKELY(bootstrapping()))
		return NULL;
	p = do_aligned(page_size, n, n, &w);
	if (!p)
		return next.valloc(n);
	if (w)
		SAMPLER_FIRE_ALLOC(p, n, w);
	return p;
}

SAMPLER_EXPORT void *pvalloc(size_t n)
{
	uint64_t w = 0;
	size_t rounded;
	void *p = NULL;

	if (SAMPLER_UNLIKELY(bootstrapping()))
		return NULL;
	/* glibc rounds the size up to whole pages; the sample is still of the bytes asked for. */
	if (!__builtin_add_overflow(n, page_size - 1, &rounded))
		p = do_aligned(page_size, rounded & ~(page_size - 1), n, &w);
	if (!p)
		return next.pvalloc(n);
	if (w)
		SAMPLER_FIRE_ALLOC(p, n, w);
	return p;
}

SAMPLER_EXPORT size_t malloc_usable_size(void *p)
{
	if (!p)
		return 0;
	if (SAMPLER_UNLIKELY(in_arena(p)))
		return arena_size(p);
	if (is_sampled(p))
		return sampled_usable(p);
	if (SAMPLER_UNLIKELY(bootstrapping()))
		return 0;
	return next.usable(p);
}

/* A dynamic-section address: glibc relocates them in place, except in a read-only section
 * (the vDSO's), which keeps them relative to the object's base. */
static const void *dyn_addr(const struct link_map *m, Elf64_Addr a)
{
	return (const void *)(a < m->l_addr ? a + m->l_addr : a);
}

static bool sym_defines(const Elf64_Sym *s, const char *strtab, const char *name)
{
	return s->st_shndx != SHN_UNDEF && s->st_value && !strcmp(strtab + s->st_name, name);
}

/*
 * Does object m define name (not merely import it)?  Its own hash tables, read in place: no
 * lock, no allocation, callable while the allocator is being resolved.
 */
static bool object_defines(const struct link_map *m, const char *name)
{
	const uint32_t *gnu = NULL, *sysv = NULL;
	const Elf64_Sym *symtab = NULL;
	const char *strtab = NULL;

	for (const Elf64_Dyn *d = m->l_ld; d && d->d_tag != DT_NULL; d++) {
		if (d->d_tag == DT_GNU_HASH)
			gnu = dyn_addr(m, d->d_un.d_ptr);
		else if (d->d_tag == DT_HASH)
			sysv = dyn_addr(m, d->d_un.d_ptr);
		else if (d->d_tag == DT_SYMTAB)
			symtab = dyn_addr(m, d->d_un.d_ptr);
		else if (d->d_tag == DT_STRTAB)
			strtab = dyn_addr(m, d->d_un.d_ptr);
	}
	if (!symtab || !strtab)
		return false;
	if (gnu) {
		/* nbuckets, symoffset, bloom words, bloom shift; the bloom filter; buckets; chains
		 */
		uint32_t nb = gnu[0], off = gnu[1], h = 5381;
		const uint32_t *bucket = gnu + 4 + gnu[2] * (sizeof(Elf64_Addr) / 4);
		const uint32_t *chain = bucket + nb;

		for (const unsigned char *c = (const unsigned char *)name; *c; c++)
			h = h * 33 + *c;
		if (!nb)
			return false;
		for (uint32_t i = bucket[h % nb]; i >= off && i; i++) {
			if ((chain[i - off] | 1) == (h | 1) &&
			    sym_defines(&symtab[i], strtab, name))
				return true;
			if (chain[i - off] & 1)
				break;
		}
		return false;
	}
	if (sysv) {
		uint32_t nb = sysv[0], h = 0, g;
		const uint32_t *bucket = sysv + 2, *chain = bucket + nb;

		for (const unsigned char *c = (const unsigned char *)name; *c; c++) {
			h = (h << 4) + *c;
			g = h & 0xf0000000;
			h ^= g >> 24;
			h &= ~g;
		}
		for (uint32_t i = nb ? bucket[h % nb] : 0; i; i = chain[i])
			if (sym_defines(&symtab[i], strtab, name))
				return true;
	}
	return false;
}

/*
 * Are we the allocator the program calls?  The lookup scope starts with the executable, then the
 * preloaded libraries in order: an executable with an allocator linked in (tcmalloc, jemalloc,
 * mimalloc exporting malloc) or one preloaded before us is found first.  Then we never see its
 * malloc or free, and a block of ours would reach its free; the functions it lacks
 * (reallocarray, pvalloc) still come to us, and go on to their namesakes after us (glibc's
 * reallocarray calls the program's realloc).
 *
 * Asked of each object loaded before ours (the executable, the vDSO, libraries preloaded ahead)
 * by its symbol table, not by dlsym(RTLD_DEFAULT): a non-PIE executable that takes malloc's
 * address (Debian's python3) imports it through a canonical PLT entry, an undefined symbol with
 * a value, which dlsym returns as its address though the program's calls reach us.
 */
static bool resolve_front(void)
{
	static const char *const names[] = {"malloc", "free", "calloc", "realloc"};
	struct link_map *self = NULL, *m;
	Dl_info info;

	if (!dladdr1((void *)resolve_front, &info, (void **)&self, RTLD_DL_LINKMAP) || !self)
		return true;
	for (m = self; m->l_prev; m = m->l_prev)
		;
	for (; m && m != self; m = m->l_next)
		for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++)
			if (object_defines(m, names[i]))
				return false;
	return true;
}

SAMPLER_EXPORT void bpftrace_prof_sampler_stats(struct prof_sampler_stats *out)
{
	out->sampled = __atomic_load_n(&sampler_stats.sampled, __ATOMIC_RELAXED);
	out->weight_bytes = __atomic_load_n(&sampler_stats.weight_bytes, __ATOMIC_RELAXED);
	out->freed = __atomic_load_n(&sampler_stats.freed, __ATOMIC_RELAXED);
	out->live = __atomic_load_n(&sampler_set_count, __ATOMIC_RELAXED);
	out->table_full = __atomic_load_n(&sampler_stats.table_full, __ATOMIC_RELAXED);
	out->mean_bytes = mean_bytes;
	out->bypassed = !__atomic_load_n(&sampler_front, __ATOMIC_RELAXED);
}

/* ---- fork --------------------------------------------------------------------------------- */

/* The set's lock is held across fork, so the child's copy of the set is whole. */
static void fork_prepare(void)
{
	lock();
}

static void fork_parent(void)
{
	unlock();
}

/* The child draws afresh (seed+k of a new k with a fixed seed): it must not repeat the parent. */
static void fork_child(void)
{
	set_lock = 0;
	sampler_ts.drawn = 0;
}

__attribute__((constructor)) static void sampler_init(void)
{
	if (!__atomic_load_n(&sampler_ready, __ATOMIC_ACQUIRE))
		sampler_resolve();
	pthread_atfork(fork_prepare, fork_parent, fork_child);
}
