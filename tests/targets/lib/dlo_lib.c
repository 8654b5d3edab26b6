// A library dlopen'd by tests/targets/dlopen_nofp.c, built by the e2e suite (tests/e2e/
// test_dlopen.sh) without frame pointers, so only its unwind table carries a stack through it:
//
//   dlo_ctor_alloc  100 x malloc(1000), from the constructor (runs inside dlopen)   100 000 bytes
//   dlo_alloc       200 x malloc(2000), from dlo_work, the first call after it     400 000 bytes
//
// All kept.  DLO_ID (-DDLO_ID=n) makes copies of it different files; DLO_NO_CTOR leaves the
// constructor out (nothing allocated inside dlopen).
#include <stdlib.h>

#ifndef DLO_ID
#define DLO_ID 0
#endif
#define NOIPA __attribute__((noinline, noipa))

#define CTOR_COUNT 100
#define CTOR_SIZE  1000
#define WORK_COUNT 200
#define WORK_SIZE  2000

static void *kept_ctor[CTOR_COUNT], *kept_work[WORK_COUNT];
volatile int dlo_id = DLO_ID;

NOIPA void dlo_ctor_alloc(void)
{
	for (int i = 0; i < CTOR_COUNT; i++) {
		kept_ctor[i] = malloc(CTOR_SIZE);
		if (!kept_ctor[i])
			abort();
	}
}

#ifndef DLO_NO_CTOR
__attribute__((constructor)) NOIPA static void dlo_ctor(void)
{
	dlo_ctor_alloc();
}
#endif

NOIPA void dlo_alloc(void)
{
	for (int i = 0; i < WORK_COUNT; i++) {
		kept_work[i] = malloc(WORK_SIZE);
		if (!kept_work[i])
			abort();
	}
}

NOIPA void dlo_work(void)
{
	dlo_alloc();
}
