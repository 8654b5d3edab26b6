// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
// An executable with an allocator of its own linked in, as a program built with a static
// tcmalloc or jemalloc exports malloc and free (tests/e2e/test_sampling.sh): its malloc, free,
// calloc and realloc are found before any preloaded library's.  A bump allocator whose blocks
// carry a magic word; free, realloc and malloc_usable_size of a pointer it did not give out
// abort, so a preloaded sampler that hands the program a block of another allocator's (through
// reallocarray, which this one lacks: glibc's takes it and calls our realloc) is caught.
//
//   own_alloc [--wait]   --wait: print "READY pid", wait for a line on stdin before allocating
//
// Prints "DONE" when the allocations are done (then, with --wait, waits for another line).
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#define REGION (1ULL << 30)
#define MAGIC  0x0c0ffee0a110c8edULL
/* Out of line, as a linked-in allocator's are: every call is one the probes see. */
#define EXPORT __attribute__((visibility("default"), used, noinline))

static char *region;
static size_t used;

struct hdr {
	uint64_t magic, size;
};

static struct hdr *hdr_of(void *p)
{
	struct hdr *h = (struct hdr *)p - 1;

	if (h->magic != MAGIC) {
		static const char msg[] = "own_alloc: a pointer this allocator never gave out\n";

		write(2, msg, sizeof(msg) - 1);
		abort();
	}
	return h;
}

EXPORT void *malloc(size_t n)
{
	size_t need = (n + 15) / 16 * 16 + sizeof(struct hdr), at;
	struct hdr *h;

	if (!region) {
		void *m = mmap(NULL, REGION, PROT_READ | PROT_WRITE,
			       MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);

		if (m == MAP_FAILED)
			abort();
		region = m;
	}
	if (n > REGION)
		return NULL;
	at = __atomic_fetch_add(&used, need, __ATOMIC_RELAXED);
	if (at + need > REGION)
		return NULL;
	h = (struct hdr *)(region + at);
	h->magic = MAGIC;
	h->size = n;
	return h + 1;
}

EXPORT void free(void *p)
{
	if (p)
		hdr_of(p)->magic = ~MAGIC; /* never reused; a second free aborts */
}

EXPORT void *calloc(size_t c, size_t s)
{
	size_t n;
	void *p;

	if (__builtin_mul_overflow(c, s, &n))
		return NULL;
	p = malloc(n);
	if (p)
		memset(p, 0, n);
	return p;
}

EXPORT void *realloc(void *p, size_t n)
{
	size_t old;
	void *q;

	if (!p)
		return malloc(n);
	old = hdr_of(p)->size;
	q = malloc(n);
	if (q) {
		memcpy(q, p, old < n ? old : n);
		free(p);
	}
	return q;
}

EXPORT size_t malloc_usable_size(void *p)
{
	return p ? hdr_of(p)->size : 0;
}

/* The allocation sites the profile must show: 4,000 blocks of 1,000 bytes, grown by
 * reallocarray to 2,000. */
__attribute__((noinline)) void *own_alloc_site(void)
{
	void *p = malloc(1000);

	__asm__ volatile("" : : "r"(p) : "memory"); /* a call, not a tail jump */
	return p;
}

__attribute__((noinline)) void *own_grow_site(void *p)
{
	void *q = reallocarray(p, 2, 1000);

	__asm__ volatile("" : : "r"(q) : "memory");
	return q;
}

int main(int argc, char **argv)
{
	int wait = argc > 1 && !strcmp(argv[1], "--wait");
	static void *keep[4000];
	char line[16];

	setvbuf(stdout, NULL, _IOLBF, 0);
	if (wait) {
		printf("READY %d\n", (int)getpid());
		if (!fgets(line, sizeof(line), stdin))
			return 1;
	}
	for (int i = 0; i < 4000; i++) {
		keep[i] = own_grow_site(own_alloc_site());
		if (!keep[i])
			return 1;
		memset(keep[i], i, 2000);
	}
	for (int i = 0; i < 4000; i++)
		free(keep[i]);
	printf("DONE\n");
	if (wait && !fgets(line, sizeof(line), stdin))
		return 1;
	return 0;
}
