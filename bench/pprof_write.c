// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * How long pprof__write takes on a large profile: 100000 distinct stacks of 10-30 frames over
 * 5000 functions in 20 mappings, several processes and threads, written to a temporary file.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <time.h>

#include "export/pprof.h"
#include "profile/profile.h"

#define NSTACKS		   100000
#define NFUNCTIONS	   5000
#define NMAPPINGS	   20
#define SITES_PER_FUNCTION 4

static uint64_t rng_state = 0x9e3779b97f4a7c15ULL;

/* xorshift64*: deterministic, so every run measures the same profile. */
static uint64_t rnd(void)
{
	rng_state ^= rng_state >> 12;
	rng_state ^= rng_state << 25;
	rng_state ^= rng_state >> 27;
	return rng_state * 2685821657736338717ULL;
}

static int build(struct profile *p)
{
	uint32_t locs[NFUNCTIONS * SITES_PER_FUNCTION], stack[30];
	char name[64], file[64];
	int err;

	err = profile__add_type(p, "alloc_objects", "count");
	err = err ?: profile__add_type(p, "alloc_space", "bytes");
	err = err ?: profile__add_type(p, "inuse_objects", "count");
	err = err ?: profile__add_type(p, "inuse_space", "bytes");
	if (err)
		return err;
	p->default_type = 3;
	for (uint32_t f = 0; f < NFUNCTIONS; f++) {
		uint32_t m = f % NMAPPINGS, mid, fid;
		uint64_t base = 0x7f0000000000ULL + (uint64_t)m * 0x1000000;
		struct profile_mapping pm = {
			.start = base,
			.limit = base + 0x1000000,
			.file = file,
			.build_id = "0123456789abcdef0123456789abcdef01234567",
			.has_functions = true,
		};

		snprintf(file, sizeof(file), "/usr/lib/x86_64-linux-gnu/libbench%u.so.1", m);
		snprintf(name, sizeof(name), "bench::module%u::function_%u(int, char const*)", m,
			 f);
		err = profile__mapping(p, &mid, &pm);
		err = err ?: profile__function(p, &fid, name, name + 7, "bench.cc", f);
		if (err)
			return err;
		for (uint32_t s = 0; s < SITES_PER_FUNCTION; s++) {
			err = profile__location(p, &locs[f * SITES_PER_FUNCTION + s],
						base + f * 0x100 + s * 8, mid, fid, 0);
			if (err)
				return err;
		}
	}
	while (p->nsamples < NSTACKS) {
		uint32_t n = 10 + rnd() % 21, pid = 1000 + rnd() % 50;
		int64_t size = 16 << (rnd() % 12), v[4] = {1, size, 1, size};

		for (uint32_t i = 0; i < n; i++)
			stack[i] = locs[rnd() % (NFUNCTIONS * SITES_PER_FUNCTION)];
		err = profile__add_sample(p, pid, pid + rnd() % 8, "worker", "benchd", stack, n, v,
					  false);
		if (err)
			return err;
	}
	return 0;
}

int main(void)
{
	struct timespec t0, t1;
	struct profile *p;
	struct stat st;
	FILE *f;
	int err;

	err = profile__new(&p, "heap");
	if (err || (err = build(p))) {
		fprintf(stderr, "pprof_write: building the profile failed: %d\n", err);
		return 1;
	}
	f = tmpfile();
	if (!f) {
		perror("pprof_write: tmpfile");
		return 1;
	}
	clock_gettime(CLOCK_MONOTONIC, &t0);
	err = pprof__write(p, f);
	if (!err && fflush(f))
		err = -1;
	clock_gettime(CLOCK_MONOTONIC, &t1);
	if (err || fstat(fileno(f), &st)) {
		fprintf(stderr, "pprof_write: writing failed: %d\n", err);
		return 1;
	}
	printf("pprof_write: %u stacks, %lld bytes gz, %.1f ms\n", p->nsamples,
	       (long long)st.st_size,
	       (double)(t1.tv_sec - t0.tv_sec) * 1e3 + (double)(t1.tv_nsec - t0.tv_nsec) / 1e6);
	fclose(f);
	profile__free(p);
	return 0;
}
