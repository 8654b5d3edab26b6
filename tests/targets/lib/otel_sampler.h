// A tiny deterministic in-process heap sampler firing the otel_memory USDT probes (the
// OpenTelemetry eBPF profiler's memory contract, docs/how-it-works.md), for the e2e targets
// tests/targets/otel_probes.c and tests/targets/lib/otel_lib.c: every OTEL_K-th block that goes
// through sampled_malloc fires alloc(ptr, size, OTEL_K * size); sampled_free fires free(ptr) for
// a block that was sampled.  Both probes have semaphores: nothing fires unless a profiler
// listens.  Blocks are counted whether or not one listens, so the numbers are exact only when
// the profiler is attached before the first block (the targets wait for it).
#include <stdlib.h>

#define _SDT_HAS_SEMAPHORES 1
#include <sys/sdt.h>

#ifdef __clang__
#define NOIPA __attribute__((noinline))
#else
#define NOIPA __attribute__((noinline, noipa))
#endif
/* Kept even where a file does not call it: every file carrying the sampler has both probes. */
#define SAMPLER NOIPA __attribute__((used))
#define OTEL_K 4
#define OTEL_MAX_LIVE 4096

/* The semaphores the kernel counts up while a probe is attached (libbpf's ref_ctr_offset). */
__attribute__((used, section(".probes"))) static volatile unsigned short
	otel_memory_alloc_semaphore;
__attribute__((used, section(".probes"))) static volatile unsigned short
	otel_memory_free_semaphore;

static unsigned long otel_count;
static void *otel_live[OTEL_MAX_LIVE];
static unsigned otel_nlive;

/* The allocation function the program calls: the probe fires inside it, as inside a preloaded
 * sampler's malloc. */
SAMPLER static void *sampled_malloc(size_t size)
{
	void *p = malloc(size);

	if (!p)
		abort();
	if (++otel_count % OTEL_K == 0 && otel_memory_alloc_semaphore) {
		if (otel_nlive == OTEL_MAX_LIVE)
			abort();
		otel_live[otel_nlive++] = p;
		STAP_PROBE3(otel_memory, alloc, p, size, OTEL_K * size);
	}
	return p;
}

SAMPLER static void sampled_free(void *p)
{
	for (unsigned i = 0; i < otel_nlive; i++) {
		if (otel_live[i] != p)
			continue;
		otel_live[i] = otel_live[--otel_nlive];
		if (otel_memory_free_semaphore)
			STAP_PROBE1(otel_memory, free, p);
		break;
	}
	free(p);
}
