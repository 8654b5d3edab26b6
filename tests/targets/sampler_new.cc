// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * C++ operator new and delete under the preloaded sampler (tests/unit/test_sampler.c), the
 * semaphores raised as the kernel raises them: every variant on sampled and unsampled blocks
 * (alignment, contents, usable size, the free probe), one sampling decision per new (not one
 * more in the malloc it calls), bad_alloc and the new_handler loop still the C++ library's.
 * Exit 0 when everything held; each mismatch is one line on stderr.
 */
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <dlfcn.h>
#include <malloc.h>
#include <new>

#include "prof_sampler.h"

static prof_sampler_stats_fn stats_fn;
static int failures;
static void *volatile sink;

#define CHECK(cond, ...)                                                \
	do {                                                            \
		if (!(cond)) {                                          \
			fprintf(stderr, "%s:%d: ", __func__, __LINE__); \
			fprintf(stderr, __VA_ARGS__);                   \
			fputc('\n', stderr);                            \
			failures++;                                     \
		}                                                       \
	} while (0)

static prof_sampler_stats stats()
{
	prof_sampler_stats s;

	stats_fn(&s);
	return s;
}

struct P64 {
	char b[64];
};
struct alignas(64) A64 {
	char b[200];
};
struct alignas(256) A256 {
	char b[100];
};

enum variant { NEW, NEW_ARRAY, NOTHROW, NOTHROW_ARRAY, ALIGNED, ALIGNED_ARRAY, ALIGNED_NOTHROW, N };
static const char *name[N] = {"new",	 "new[]",     "new(nothrow)",	 "new[](nothrow)",
			      "new(al)", "new[](al)", "new(al, nothrow)"};

/* One object of the variant, checked and deleted as its variant is deleted; sampled or not. */
static bool one(variant v)
{
	prof_sampler_stats before = stats();
	size_t size = 64, align = 16;
	unsigned char *p = nullptr;
	bool sampled;

	switch (v) {
	case NEW:
		p = reinterpret_cast<unsigned char *>(new P64);
		break;
	case NEW_ARRAY:
		p = new unsigned char[64];
		break;
	case NOTHROW:
		p = static_cast<unsigned char *>(operator new(64, std::nothrow));
		break;
	case NOTHROW_ARRAY:
		p = new (std::nothrow) unsigned char[64];
		break;
	case ALIGNED:
		p = reinterpret_cast<unsigned char *>(new A64);
		size = sizeof(A64), align = 64;
		break;
	case ALIGNED_ARRAY:
		p = reinterpret_cast<unsigned char *>(new A256[2]);
		size = 2 * sizeof(A256), align = 256;
		break;
	case ALIGNED_NOTHROW:
		p = reinterpret_cast<unsigned char *>(new (std::nothrow) A64);
		size = sizeof(A64), align = 64;
		break;
	default:
		break;
	}
	sampled = stats().sampled != before.sampled;
	CHECK(p, "%s failed", name[v]);
	if (!p)
		return false;
	CHECK(reinterpret_cast<uintptr_t>(p) % align == 0, "%s: %p not aligned to %zu", name[v],
	      static_cast<void *>(p), align);
	CHECK(malloc_usable_size(p) >= size, "%s: usable %zu < %zu", name[v], malloc_usable_size(p),
	      size);
	for (size_t i = 0; i < size; i++)
		p[i] = static_cast<unsigned char>(i * 13);
	sink = p;
	for (size_t i = 0; i < size; i++)
		if (static_cast<unsigned char *>(sink)[i] != static_cast<unsigned char>(i * 13)) {
			CHECK(false, "%s: content lost", name[v]);
			break;
		}
	switch (v) {
	case NEW:
		delete reinterpret_cast<P64 *>(p); /* sized delete */
		break;
	case NEW_ARRAY:
	case NOTHROW_ARRAY:
		delete[] p;
		break;
	case NOTHROW:
		operator delete(p, std::nothrow);
		break;
	case ALIGNED:
	case ALIGNED_NOTHROW:
		delete reinterpret_cast<A64 *>(p); /* sized, aligned delete */
		break;
	case ALIGNED_ARRAY:
		delete[] reinterpret_cast<A256 *>(p);
		break;
	default:
		break;
	}
	CHECK(stats().freed == before.freed + sampled,
	      "%s: delete fired free %llu times for a %s block", name[v],
	      static_cast<unsigned long long>(stats().freed - before.freed),
	      sampled ? "sampled" : "unsampled");
	return sampled;
}

static int handler_calls;
static void handler()
{
	if (++handler_calls == 3)
		std::set_new_handler(nullptr);
}

int main()
{
	unsigned short *sem_alloc, *sem_free;
	const long n = 20000;
	long sampled = 0;
	uint64_t w0;

	stats_fn =
		reinterpret_cast<prof_sampler_stats_fn>(dlsym(RTLD_DEFAULT, PROF_SAMPLER_STATS_FN));
	sem_alloc =
		static_cast<unsigned short *>(dlsym(RTLD_DEFAULT, "otel_memory_alloc_semaphore"));
	sem_free = static_cast<unsigned short *>(dlsym(RTLD_DEFAULT, "otel_memory_free_semaphore"));
	if (!stats_fn || !sem_alloc || !sem_free) {
		fprintf(stderr, "the sampler is not preloaded\n");
		return 3;
	}
	++*sem_alloc;
	++*sem_free;

	for (int v = 0; v < N; v++) {
		int seen[2] = {0, 0};

		for (int i = 0; i < 2000 && (!seen[0] || !seen[1]); i++)
			seen[one(static_cast<variant>(v))]++;
		CHECK(seen[0] && seen[1], "%s: %d sampled, %d not", name[v], seen[1], seen[0]);
	}

	/* One decision per new of 64 bytes: p = 1 - e^(-64/mean); a second one in malloc (of 80
	 * bytes) would make it about 1 - e^(-144/mean). */
	w0 = stats().weight_bytes;
	for (long i = 0; i < n; i++) {
		uint64_t s = stats().sampled;
		char *p = new char[64];

		sink = p;
		sampled += stats().sampled != s;
		delete[] p;
	}
	{
		double mean = static_cast<double>(stats().mean_bytes), p = 1 - exp(-64 / mean);
		double rate = static_cast<double>(sampled) / n;
		double bytes = 64.0 * n, weights = static_cast<double>(stats().weight_bytes - w0);

		printf("new[64]: %ld of %ld sampled (expected %.3f), weights/bytes %.4f\n", sampled,
		       n, p, weights / bytes);
		CHECK(fabs(rate / p - 1) < 0.05, "new: sampled at %.3f, expected %.3f", rate, p);
		CHECK(fabs(weights / bytes - 1) < 0.05, "new: weights %.0f for %.0f bytes", weights,
		      bytes);
	}

	/* bad_alloc comes through us, and our guard comes down with it. */
	for (int i = 0; i < 3; i++) {
		bool thrown = false;

		try {
			sink = new char[SIZE_MAX / 4];
		} catch (const std::bad_alloc &) {
			thrown = true;
		}
		CHECK(thrown, "no bad_alloc");
	}
	CHECK(!operator new(SIZE_MAX / 4, std::nothrow), "new(nothrow) of too much");
	{
		uint64_t s = stats().sampled;

		for (int i = 0; i < 200; i++)
			delete[] static_cast<char *>(sink = new char[64]);
		CHECK(stats().sampled > s,
		      "nothing sampled after a bad_alloc: the guard stayed up");
	}
	/* The new_handler loop is the C++ library's: called until it gives up. */
	std::set_new_handler(handler);
	try {
		sink = new char[SIZE_MAX / 4];
		CHECK(false, "no bad_alloc after the handler gave up");
	} catch (const std::bad_alloc &) {
	}
	CHECK(handler_calls == 3, "new_handler called %d times", handler_calls);

	printf("sampled %llu, freed %llu, live %llu, failures %d\n",
	       static_cast<unsigned long long>(stats().sampled),
	       static_cast<unsigned long long>(stats().freed),
	       static_cast<unsigned long long>(stats().live), failures);
	return failures ? 1 : 0;
}
