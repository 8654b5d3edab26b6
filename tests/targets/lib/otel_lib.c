// A library carrying the otel_memory probes (tests/targets/lib/otel_sampler.h), dlopen'd by
// tests/targets/dlopen_nofp.c after the profiler started (tests/e2e/test_otel.sh):
//
//   otel_lib_alloc  200 x 2000 bytes through the sampler, from dlo_work, kept: 50 samples of
//                   8000 bytes: alloc_space 400000, alloc_objects 200, inuse_space 400000
//
// Built with -DOTEL_LIB_CTOR, its constructor calls otel_lib_alloc instead (LD_PRELOADed into a
// program that knows nothing of it).
#include "otel_sampler.h"

#define WORK_COUNT 200
#define WORK_SIZE  2000

static void *kept[WORK_COUNT];

NOIPA void otel_lib_alloc(void)
{
	for (int i = 0; i < WORK_COUNT; i++)
		kept[i] = sampled_malloc(WORK_SIZE);
}

NOIPA void dlo_work(void)
{
#ifndef OTEL_LIB_CTOR
	otel_lib_alloc();
#endif
}

#ifdef OTEL_LIB_CTOR
__attribute__((constructor)) NOIPA static void otel_lib_ctor(void)
{
	otel_lib_alloc();
}
#endif
