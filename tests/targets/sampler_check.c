// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * Run under LD_PRELOAD=build/libbpftrace-prof-sampler.so (tests/unit/test_sampler.c): checks
 * every function of the malloc family on sampled and unsampled blocks, without a profiler.
 * The semaphores are raised as the kernel raises them on attach (here by dlsym), unless "off".
 *
 *   sampler_check family [off|interposed] [bypassed]
 *                                            the family, errors, errno, threads, fork
 *   sampler_check fuzz N [interposed] [bypassed]
 *                                            N random family calls against a shadow model
 * "bypassed": the second allocator is preloaded before the sampler, which must then sample
 * nothing (semaphores raised or not) and pass every call on to it.
 *   sampler_check stats                      200,000 mixed sizes: weights sum to the bytes, ±5 %
 *   sampler_check seq                        which of 2,000 mallocs were sampled (a 0/1 line)
 *   sampler_check full                       more live sampled blocks than the set holds
 *   sampler_check grow                       a big sampled block grown and shrunk by realloc is
 *                                            not copied (run it with every allocation sampled)
 * Exit 0 when everything held; each mismatch is one line on stderr.
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <errno.h>
#include <malloc.h>
#include <math.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include "prof_sampler.h"

static prof_sampler_stats_fn stats_fn;
static bool interposed; /* a second allocator sits under the sampler */
static bool bypassed;	/* ... or before it */
static int failures;

#define CHECK(cond, ...)                                                    \
	do {                                                                \
		if (!(cond)) {                                              \
			fprintf(stderr, "%s:%d: ", __func__, __LINE__);     \
			fprintf(stderr, __VA_ARGS__);                       \
			fputc('\n', stderr);                                \
			__atomic_fetch_add(&failures, 1, __ATOMIC_RELAXED); \
		}                                                           \
	} while (0)

static struct prof_sampler_stats stats(void)
{
	struct prof_sampler_stats s;

	stats_fn(&s);
	return s;
}

/* Per thread: was the allocation since the last call sampled?  (One thread allocates at a time
 * in the checks that ask.) */
static __thread uint64_t last_sampled;
static bool sampled_since(void)
{
	uint64_t now = stats().sampled;
	bool r = now != last_sampled;

	last_sampled = now;
	return r;
}

static uint64_t rng_state = 88172645463325252ULL;
static __thread uint64_t trng;
static uint64_t rnd(void)
{
	uint64_t *x = trng ? &trng : &rng_state;

	*x ^= *x << 13;
	*x ^= *x >> 7;
	*x ^= *x << 17;
	return *x;
}

static void fill(void *p, size_t n, unsigned seed)
{
	for (size_t i = 0; i < n; i++)
		((unsigned char *)p)[i] = (unsigned char)(seed + i * 7);
}

static bool holds(const void *p, size_t n, unsigned seed)
{
	for (size_t i = 0; i < n; i++)
		if (((const unsigned char *)p)[i] != (unsigned char)(seed + i * 7))
			return false;
	return true;
}

static void raise_semaphores(void)
{
	unsigned short *a = dlsym(RTLD_DEFAULT, "otel_memory_alloc_semaphore");
	unsigned short *f = dlsym(RTLD_DEFAULT, "otel_memory_free_semaphore");

	if (!a || !f) {
		fprintf(stderr, "no otel_memory semaphores: is the sampler preloaded?\n");
		exit(3);
	}
	(*a)++;
	(*f)++;
}

/*
 * Where dlsym(RTLD_DEFAULT) finds malloc, free, calloc and realloc: 1 when all four are in the
 * executable.  The program takes their addresses in code, so a non-PIE build
 * (sampler_check_nopie, as Debian's python3) imports them through canonical PLT entries, which
 * dlsym returns though the calls reach the sampler; a PIE build gets the sampler's own.
 */
static int family_in_executable(void)
{
	void *volatile fn[] = {(void *)malloc, (void *)free, (void *)calloc, (void *)realloc};
	static const char *const names[] = {"malloc", "free", "calloc", "realloc"};
	Dl_info self, found;
	int all = 1;

	if (!dladdr((void *)family_in_executable, &self))
		return -1;
	for (int i = 0; i < 4; i++) {
		void *f = dlsym(RTLD_DEFAULT, names[i]);

		all &= dladdr(f, &found) && found.dli_fbase == self.dli_fbase && f == fn[i];
	}
	return all;
}

enum fn {
	F_MALLOC,
	F_CALLOC,
	F_MEMALIGN,
	F_POSIX_MEMALIGN,
	F_ALIGNED_ALLOC,
	F_VALLOC,
	F_PVALLOC,
	F_N
};
static const char *fn_name[F_N] = {"malloc",	    "calloc", "memalign", "posix_memalign",
				   "aligned_alloc", "valloc", "pvalloc"};

/* One block from fn, checked (alignment, usable size, zeroes, errno kept), filled, freed. */
static void one_block(enum fn fn, size_t n, size_t align, bool *was_sampled)
{
	size_t page = (size_t)sysconf(_SC_PAGESIZE), want_align = 16;
	uint64_t freed_before;
	void *p = NULL;
	int rc;

	errno = 4321;
	switch (fn) {
	case F_MALLOC:
		p = malloc(n);
		break;
	case F_CALLOC:
		p = calloc(n, 1);
		break;
	case F_MEMALIGN:
		p = memalign(align, n);
		want_align = align;
		break;
	case F_POSIX_MEMALIGN:
		rc = posix_memalign(&p, align, n);
		CHECK(rc == 0, "posix_memalign(%zu, %zu) = %d", align, n, rc);
		want_align = align;
		break;
	case F_ALIGNED_ALLOC:
		p = aligned_alloc(align, n);
		want_align = align;
		break;
	case F_VALLOC:
		p = valloc(n);
		want_align = page;
		break;
	case F_PVALLOC:
		p = pvalloc(n);
		want_align = page;
		break;
	default:
		break;
	}
	*was_sampled = sampled_since();
	CHECK(p, "%s(%zu) failed", fn_name[fn], n);
	if (!p)
		return;
	CHECK(errno == 4321, "%s changed errno to %d", fn_name[fn], errno);
	CHECK((uintptr_t)p % want_align == 0, "%s: %p not aligned to %zu", fn_name[fn], p,
	      want_align);
	CHECK(malloc_usable_size(p) >= n, "%s: usable %zu < %zu", fn_name[fn],
	      malloc_usable_size(p), n);
	if (fn == F_PVALLOC)
		CHECK(malloc_usable_size(p) >= (n + page - 1) / page * page,
		      "pvalloc: usable %zu not whole pages", malloc_usable_size(p));
	if (fn == F_CALLOC)
		for (size_t i = 0; i < n; i++)
			if (((unsigned char *)p)[i]) {
				CHECK(0, "calloc(%zu): byte %zu not zero", n, i);
				break;
			}
	fill(p, malloc_usable_size(p), (unsigned)n);
	CHECK(holds(p, malloc_usable_size(p), (unsigned)n), "%s: content lost", fn_name[fn]);
	freed_before = stats().freed;
	errno = 4321;
	free(p);
	CHECK(errno == 4321, "free changed errno");
	CHECK(stats().freed == freed_before + *was_sampled, "%s: free of a %s block fired %llu",
	      fn_name[fn], *was_sampled ? "sampled" : "unsampled",
	      (unsigned long long)(stats().freed - freed_before));
}

/* Every function until it gave both a sampled and an unsampled block (or, off, none sampled). */
static void check_family(bool on)
{
	static const size_t aligns[] = {1, 8, 16, 32, 64, 256, 4096};

	for (int fn = 0; fn < F_N; fn++) {
		int seen[2] = {0, 0};

		for (int i = 0; i < 4000 && (!on || !seen[0] || !seen[1]); i++) {
			size_t n = 1 + rnd() % 300, align = aligns[rnd() % 7];
			bool s;

			if (fn == F_POSIX_MEMALIGN && align < sizeof(void *))
				align = sizeof(void *);
			one_block(fn, n, align, &s);
			seen[s]++;
		}
		if (on)
			CHECK(seen[0] && seen[1], "%s: %d sampled, %d not", fn_name[fn], seen[1],
			      seen[0]);
		else
			CHECK(!seen[1], "%s: %d sampled with the semaphore at 0", fn_name[fn],
			      seen[1]);
	}
}

/* realloc and reallocarray between sampled and unsampled blocks, each way, growing and
 * shrinking; the content survives every move. */
static void check_realloc(bool on)
{
	int seen[2][2] = {{0}};

	for (int i = 0; i < 20000; i++) {
		size_t n1 = 1 + rnd() % 400, n2 = 1 + rnd() % 400;
		bool s1, s2, arr = rnd() & 1;
		uint64_t freed;
		void *p = malloc(n1), *q;

		s1 = sampled_since();
		CHECK(p, "malloc(%zu)", n1);
		fill(p, n1, (unsigned)i);
		freed = stats().freed;
		errno = 4321;
		q = arr ? reallocarray(p, n2, 1) : realloc(p, n2);
		s2 = sampled_since();
		CHECK(q, "realloc(%zu -> %zu)", n1, n2);
		if (!q)
			continue;
		CHECK(errno == 4321, "realloc changed errno to %d", errno);
		CHECK(holds(q, n1 < n2 ? n1 : n2, (unsigned)i),
		      "realloc %zu -> %zu (%d -> %d) lost data", n1, n2, s1, s2);
		CHECK(malloc_usable_size(q) >= n2, "realloc: usable %zu < %zu",
		      malloc_usable_size(q), n2);
		/* A sampled block that moved fired free (one staying unsampled never does). */
		if (s1 && (s2 || q != p))
			CHECK(stats().freed == freed + 1, "realloc of a sampled block: no free");
		if (!s1)
			CHECK(stats().freed == freed, "realloc of an unsampled block fired free");
		seen[s1][s2]++;
		fill(q, n2, (unsigned)i + 1);
		free(q);
	}
	for (int a = 0; a < 2; a++)
		for (int b = 0; b < 2; b++)
			CHECK(on ? seen[a][b] > 0 : (a || b ? !seen[a][b] : 1),
			      "realloc %s -> %s seen %d times", a ? "sampled" : "unsampled",
			      b ? "sampled" : "unsampled", seen[a][b]);
}

/* realloc's edges: NULL is malloc, 0 frees (as glibc: NULL back), a sampled block too. */
static void check_realloc_edges(void)
{
	int zero_sampled = 0;

	for (int i = 0; i < 2000; i++) {
		void *p = realloc(NULL, 100);
		bool s = sampled_since();
		uint64_t freed = stats().freed;

		CHECK(p, "realloc(NULL, 100)");
		fill(p, 100, 9);
		CHECK(realloc(p, 0) == NULL, "realloc(p, 0) did not free");
		CHECK(stats().freed == freed + s, "realloc(%s, 0): free fired %llu",
		      s ? "sampled" : "unsampled", (unsigned long long)(stats().freed - freed));
		zero_sampled += s;
	}
	CHECK(zero_sampled > 0, "realloc(NULL, 100) never sampled");
}

/* The errors as the C library gives them: what the next allocator says, errno included. */
static void check_errors(void)
{
	void *libc = dlopen("libc.so.6", RTLD_NOLOAD | RTLD_LAZY), *p = NULL;
	void *(*libc_memalign)(size_t, size_t) = libc ? dlsym(libc, "memalign") : NULL;
	void *(*libc_aligned)(size_t, size_t) = libc ? dlsym(libc, "aligned_alloc") : NULL;
	int (*libc_posix)(void **, size_t, size_t) = libc ? dlsym(libc, "posix_memalign") : NULL;
	static const size_t bad[] = {0, 3, 4, 24, 48, 100, SIZE_MAX / 2 + 2, SIZE_MAX};

	errno = 0;
	CHECK(!calloc(SIZE_MAX / 2, 3) && errno == ENOMEM, "calloc(n*size overflows): errno %d",
	      errno);
	errno = 0;
	CHECK(!calloc(1, SIZE_MAX - 8) && errno == ENOMEM, "calloc(header overflows): errno %d",
	      errno);
	errno = 0;
	CHECK(!malloc(SIZE_MAX - 8) && errno == ENOMEM, "malloc(SIZE_MAX-8): errno %d", errno);
	errno = 0;
	CHECK(!reallocarray(NULL, SIZE_MAX / 2, 3) && errno == ENOMEM,
	      "reallocarray overflow: errno %d", errno);
	errno = 0;
	CHECK(!realloc(NULL, SIZE_MAX - 4) && errno == ENOMEM, "realloc(NULL, huge): errno %d",
	      errno);
	CHECK(malloc_usable_size(NULL) == 0, "malloc_usable_size(NULL)");
	p = malloc(0);
	CHECK(p, "malloc(0)");
	free(p);
	free(NULL);
	if (interposed)
		return; /* the alignment errors are the interposer's, not glibc's */
	CHECK(libc_memalign && libc_aligned && libc_posix, "no libc.so.6 functions");
	if (!libc_memalign || !libc_aligned || !libc_posix)
		return;
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		for (int rep = 0; rep < 50; rep++) { /* some of these would be sampled */
			void *a, *b;
			int ea, eb, ra, rb;

			errno = 0;
			a = memalign(bad[i], 64);
			ea = errno;
			errno = 0;
			b = libc_memalign(bad[i], 64);
			eb = errno;
			CHECK(!a == !b && ea == eb, "memalign(%zu): %p/%d, glibc %p/%d", bad[i], a,
			      ea, b, eb);
			free(a);
			free(b);
			errno = 0;
			a = aligned_alloc(bad[i], 64);
			ea = errno;
			errno = 0;
			b = libc_aligned(bad[i], 64);
			eb = errno;
			CHECK(!a == !b && ea == eb, "aligned_alloc(%zu): %p/%d, glibc %p/%d",
			      bad[i], a, ea, b, eb);
			free(a);
			free(b);
			a = b = NULL;
			errno = 77;
			ra = posix_memalign(&a, bad[i], 64);
			rb = libc_posix(&b, bad[i], 64);
			CHECK(ra == rb && errno == 77,
			      "posix_memalign(%zu): %d, glibc %d, errno %d", bad[i], ra, rb, errno);
			if (!ra)
				free(a);
			if (!rb)
				free(b);
		}
	}
	errno = 0;
	CHECK(!pvalloc(SIZE_MAX - 10) && errno == ENOMEM, "pvalloc(huge): errno %d", errno);
}

/* Threads allocate, move and free while the main thread forks; every child must allocate too
 * (the set's lock is not left held) and see its inherited blocks whole. */
static void *churn(void *arg)
{
	uintptr_t k = (uintptr_t)arg;
	void *keep[32] = {0};
	size_t size[32] = {0};

	trng = 0x9e3779b97f4a7c15ULL * (k + 1);
	for (int i = 0; i < 40000; i++) {
		int j = (int)(rnd() % 32);

		if (keep[j]) {
			CHECK(holds(keep[j], size[j], (unsigned)(j + k)),
			      "thread %lu: block lost data", (unsigned long)k);
			if (rnd() & 1) {
				size_t n = 1 + rnd() % 600;
				void *q = realloc(keep[j], n);

				CHECK(q, "thread realloc");
				keep[j] = q;
				size[j] = size[j] < n ? size[j] : n;
				fill(q, n, (unsigned)(j + k));
				size[j] = n;
				continue;
			}
			free(keep[j]);
			keep[j] = NULL;
			continue;
		}
		size[j] = 1 + rnd() % 600;
		keep[j] = (rnd() & 1) ? malloc(size[j]) : calloc(1, size[j]);
		CHECK(keep[j], "thread malloc");
		fill(keep[j], size[j], (unsigned)(j + k));
	}
	for (int j = 0; j < 32; j++)
		free(keep[j]);
	return NULL;
}

static void check_threads_fork(bool on)
{
	pthread_t th[4];
	void *inherited[64];
	uint64_t sampled_before = stats().sampled;

	for (int i = 0; i < 64; i++) {
		inherited[i] = malloc(64 + i);
		fill(inherited[i], 64 + (size_t)i, (unsigned)i);
	}
	for (uintptr_t k = 0; k < 4; k++)
		pthread_create(&th[k], NULL, churn, (void *)k);
	for (int f = 0; f < 8; f++) {
		pid_t pid = fork();
		int st;

		if (pid == 0) {
			alarm(20); /* a lock left held in the child would hang it */
			for (int i = 0; i < 64; i++) {
				CHECK(holds(inherited[i], 64 + (size_t)i, (unsigned)i),
				      "child: inherited block %d lost", i);
				free(inherited[i]);
			}
			trng = 12345 + (uint64_t)f;
			churn((void *)(uintptr_t)(100 + f));
			_exit(failures ? 1 : 0);
		}
		CHECK(pid > 0, "fork");
		CHECK(waitpid(pid, &st, 0) == pid && WIFEXITED(st) && WEXITSTATUS(st) == 0,
		      "child %d failed (status %#x)", f, st);
	}
	for (int k = 0; k < 4; k++)
		pthread_join(th[k], NULL);
	for (int i = 0; i < 64; i++) {
		CHECK(holds(inherited[i], 64 + (size_t)i, (unsigned)i), "block %d lost", i);
		free(inherited[i]);
	}
	if (on)
		CHECK(stats().sampled > sampled_before, "threads: nothing sampled");
	else
		CHECK(stats().sampled == sampled_before,
		      "threads: sampled with the semaphore at 0");
}

/* Random family calls on 64 slots against a shadow of sizes and contents. */
static void fuzz(long ops)
{
	struct {
		void *p;
		size_t n;
		unsigned seed;
	} slot[64] = {{0}};

	for (long i = 0; i < ops; i++) {
		int j = (int)(rnd() % 64), op = (int)(rnd() % 9);
		size_t n = (rnd() & 7) ? rnd() % 512 : rnd() % 70000;
		size_t align = (size_t)1 << (3 + rnd() % 10);
		void *p = NULL;

		if (slot[j].p) {
			CHECK(holds(slot[j].p, slot[j].n, slot[j].seed),
			      "op %ld: slot %d lost data", i, j);
			CHECK(malloc_usable_size(slot[j].p) >= slot[j].n, "op %ld: usable < size",
			      i);
			if (op < 4) {
				void *q = op & 1 ? reallocarray(slot[j].p, n, 1)
						 : realloc(slot[j].p, n);

				if (!n) { /* realloc(p, 0) frees; reallocarray(p, 0, 1) too */
					CHECK(!q, "op %ld: realloc(p, 0) returned a block", i);
					slot[j].p = NULL;
					continue;
				}
				CHECK(q, "op %ld: realloc(%zu)", i, n);
				CHECK(holds(q, slot[j].n < n ? slot[j].n : n, slot[j].seed),
				      "op %ld: realloc lost data", i);
				slot[j].p = q;
			} else {
				free(slot[j].p);
				slot[j].p = NULL;
				continue;
			}
		} else {
			switch (op) {
			case 0:
			case 1:
				p = malloc(n);
				break;
			case 2:
				p = calloc(1, n);
				for (size_t k = 0; p && k < n; k++)
					if (((unsigned char *)p)[k]) {
						CHECK(0, "op %ld: calloc not zero", i);
						break;
					}
				break;
			case 3:
				p = memalign(align, n);
				break;
			case 4:
				CHECK(!posix_memalign(&p, align, n), "op %ld: posix_memalign", i);
				break;
			case 5:
				p = aligned_alloc(align, n);
				break;
			case 6:
				p = valloc(n);
				align = (size_t)sysconf(_SC_PAGESIZE);
				break;
			case 7:
				p = pvalloc(n);
				align = (size_t)sysconf(_SC_PAGESIZE);
				break;
			default:
				p = realloc(NULL, n);
				align = 16;
				break;
			}
			if (op < 3)
				align = 16;
			CHECK(p, "op %ld: allocation %d of %zu failed", i, op, n);
			CHECK((uintptr_t)p % align == 0, "op %ld: %p not aligned to %zu", i, p,
			      align);
			if (!p)
				continue;
			slot[j].p = p;
		}
		slot[j].n = n;
		slot[j].seed = (unsigned)rnd();
		fill(slot[j].p, n, slot[j].seed);
	}
	for (int j = 0; j < 64; j++)
		free(slot[j].p);
}

/* 200,000 allocations of four sizes, shuffled: the weights of each size's sampled blocks sum to
 * its bytes within 5 % (the estimator is unbiased for every size). */
static void check_stats(void)
{
	static const size_t size[4] = {16, 1024, 65536, 1 << 20};
	static const long count[4] = {140000, 40000, 15000, 5000};
	long left[4] = {count[0], count[1], count[2], count[3]}, total = 0;
	double weight[4] = {0};
	uint64_t before = stats().weight_bytes, samples[4] = {0};

	for (int c = 0; c < 4; c++)
		total += count[c];
	for (long i = 0; i < total; i++) {
		long r = (long)(rnd() % (uint64_t)(total - i));
		int c = 0;
		uint64_t w, s;
		void *p;

		while (r >= left[c])
			r -= left[c++];
		left[c]--;
		s = stats().sampled;
		p = malloc(size[c]);
		CHECK(p, "malloc(%zu)", size[c]);
		w = stats().weight_bytes - before;
		before += w;
		if (stats().sampled != s) {
			CHECK(w >= size[c], "weight %llu < size %zu", (unsigned long long)w,
			      size[c]);
			samples[c]++;
		}
		weight[c] += (double)w;
		free(p);
	}
	for (int c = 0; c < 4; c++) {
		double bytes = (double)size[c] * (double)count[c], ratio = weight[c] / bytes;

		printf("size %zu: %llu samples, weights/bytes %.4f\n", size[c],
		       (unsigned long long)samples[c], ratio);
		CHECK(fabs(ratio - 1) <= 0.05, "size %zu: weights %.0f for %.0f bytes", size[c],
		      weight[c], bytes);
	}
}

/* Past PROF_SAMPLER_MAX_LIVE live sampled blocks, allocations go unsampled and are counted;
 * every block stays whole and frees alike, and the set takes samples again once blocks go. */
static void check_full(void)
{
	enum { N = PROF_SAMPLER_MAX_LIVE + 5000 };
	static void *block[N];
	struct prof_sampler_stats s;

	for (int i = 0; i < N; i++) {
		block[i] = i & 1 ? malloc(64) : calloc(1, 64);
		CHECK(block[i], "allocation %d", i);
		fill(block[i], 64, (unsigned)i);
	}
	s = stats();
	CHECK(s.live == PROF_SAMPLER_MAX_LIVE, "%llu live sampled blocks",
	      (unsigned long long)s.live);
	CHECK(s.table_full > 0, "no table_full");
	for (int i = 0; i < N; i++) {
		CHECK(holds(block[i], 64, (unsigned)i), "block %d lost data", i);
		CHECK(malloc_usable_size(block[i]) >= 64, "block %d: usable", i);
		block[i] = realloc(block[i], 100);
		CHECK(block[i] && holds(block[i], 64, (unsigned)i), "block %d: realloc", i);
	}
	for (int i = 0; i < N; i++)
		free(block[i]);
	s = stats();
	CHECK(s.live == 0, "%llu live after every free", (unsigned long long)s.live);
	free(malloc(64));
	CHECK(stats().sampled > s.sampled, "no samples once the set emptied");
}

static long minor_faults(void)
{
	struct rusage ru;

	getrusage(RUSAGE_SELF, &ru);
	return ru.ru_minflt;
}

/*
 * A sampled block grown by realloc stays the allocator's to move (glibc: mremap, its pages
 * kept), and one shrunk stays where it is: 64 MiB copied into a new block would fault in its
 * 16,384 pages.  Every allocation sampled (a mean of 1 byte), so each realloc is sampled again.
 */
static void check_grow(void)
{
	enum { MIB = 1 << 20 };
	uint64_t sampled = stats().sampled, freed = stats().freed;
	char *p = malloc(64 * MIB), *q;
	long faults;

	CHECK(p && stats().sampled == sampled + 1, "64 MiB: not sampled");
	if (!p)
		return;
	fill(p, 64 * MIB, 7);
	faults = minor_faults();
	q = realloc(p, 128 * MIB);
	CHECK(q && stats().sampled == sampled + 2 && stats().freed == freed + 1,
	      "grown: not a free and a sample");
	faults = minor_faults() - faults;
	CHECK(faults < 1024, "grown to 128 MiB: %ld page faults (a copy)", faults);
	CHECK(q && holds(q, 64 * MIB, 7), "grown: data lost");
	p = q;
	q = realloc(p, 32 * MIB);
	CHECK(q == p, "shrunk: moved from %p to %p", (void *)p, (void *)q);
	CHECK(q && holds(q, 32 * MIB, 7), "shrunk: data lost");
	free(q);
	CHECK(stats().live == 0, "%llu live", (unsigned long long)stats().live);
}

int main(int argc, char **argv)
{
	const char *mode = argc > 1 ? argv[1] : "family";
	bool on = !(argc > 2 && !strcmp(argv[2], "off"));

	stats_fn = (prof_sampler_stats_fn)dlsym(RTLD_DEFAULT, PROF_SAMPLER_STATS_FN);
	if (!stats_fn) {
		fprintf(stderr, "%s not found: is the sampler preloaded?\n", PROF_SAMPLER_STATS_FN);
		return 3;
	}
	for (int i = 2; i < argc; i++) {
		interposed |= !strcmp(argv[i], "interposed");
		bypassed |= !strcmp(argv[i], "bypassed");
	}
	if (on)
		raise_semaphores();
	CHECK(stats().bypassed == bypassed, "bypassed %llu, expected %d",
	      (unsigned long long)stats().bypassed, bypassed);
	/* Bypassed, the raised semaphores must change nothing. */
	on &= !bypassed;
	last_sampled = stats().sampled;
	if (!strcmp(mode, "family")) {
		check_family(on);
		check_realloc(on);
		if (on)
			check_realloc_edges();
		check_errors();
		check_threads_fork(on);
		CHECK(stats().table_full == 0, "table full %llu times",
		      (unsigned long long)stats().table_full);
	} else if (!strcmp(mode, "fuzz")) {
		fuzz(argc > 2 ? atol(argv[2]) : 20000);
	} else if (!strcmp(mode, "stats")) {
		check_stats();
	} else if (!strcmp(mode, "full")) {
		check_full();
	} else if (!strcmp(mode, "grow")) {
		check_grow();
	} else if (!strcmp(mode, "seq")) {
		for (int i = 0; i < 2000; i++) {
			free(malloc(16));
			putchar(sampled_since() ? '1' : '0');
		}
		putchar('\n');
	} else {
		fprintf(stderr, "unknown mode %s\n", mode);
		return 2;
	}
	if (interposed) {
		uint64_t (*calls)(void) =
			(uint64_t(*)(void))dlsym(RTLD_DEFAULT, "interpose_alloc_calls");

		CHECK(calls, "the second allocator is not preloaded");
		if (calls)
			printf("interposer calls %llu\n", (unsigned long long)calls());
	}
	printf("table full %llu\n", (unsigned long long)stats().table_full);
	printf("bypassed %llu\n", (unsigned long long)stats().bypassed);
	printf("family in executable %d\n", family_in_executable());
	printf("sampled %llu, freed %llu, live %llu, mean %llu, failures %d\n",
	       (unsigned long long)stats().sampled, (unsigned long long)stats().freed,
	       (unsigned long long)stats().live, (unsigned long long)stats().mean_bytes, failures);
	return failures ? 1 : 0;
}
