// Heap end-to-end target built without frame pointers (Makefile: *_nofp), so only an .eh_frame
// unwinder finds the callers; tests/e2e/test_unwind.sh asserts these exact numbers:
//
//   alloc_a      1000 x malloc(3000), kept                   3 000 000 bytes
//   alloc_b      1000 x malloc(1000), kept                   1 000 000 bytes
//   use_strdup   500 x strdup of a 63-character string, kept    32 000 bytes (malloc in strdup)
//   use_fopen    200 x fopen("/dev/null") + fclose: one FILE each, freed (malloc in fopen)
//
// It sleeps 1 s before allocating: `bpftrace-prof -- CMD` builds the unwind tables of the files
// this process maps in the background, and a sleep needs no help from the test, unlike a byte on
// stdin.  Prints "DONE" at the end.
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

// noipa: no clones (alloc_a.constprop.0) and no inlining, so each name the tests look for is
// one real frame.
#define NOIPA __attribute__((noinline, noipa))

#define A_COUNT	     1000
#define A_SIZE	     3000
#define B_COUNT	     1000
#define B_SIZE	     1000
#define STRDUP_COUNT 500
#define FOPEN_COUNT  200

static const char text63[] = "0123456789abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ_";

static void *kept_a[A_COUNT], *kept_b[B_COUNT];
static char *kept_s[STRDUP_COUNT];

NOIPA void alloc_a(void)
{
	for (int i = 0; i < A_COUNT; i++) {
		kept_a[i] = malloc(A_SIZE);
		if (!kept_a[i])
			exit(1);
	}
}

NOIPA void alloc_b(void)
{
	for (int i = 0; i < B_COUNT; i++) {
		kept_b[i] = malloc(B_SIZE);
		if (!kept_b[i])
			exit(1);
	}
}

NOIPA void use_strdup(void)
{
	for (int i = 0; i < STRDUP_COUNT; i++) {
		kept_s[i] = strdup(text63);
		if (!kept_s[i])
			exit(1);
	}
}

NOIPA void use_fopen(void)
{
	for (int i = 0; i < FOPEN_COUNT; i++) {
		FILE *f = fopen("/dev/null", "r");

		if (!f)
			exit(1);
		fclose(f);
	}
}

int main(void)
{
	_Static_assert(sizeof(text63) == 64, "strdup size");
	sleep(1);
	alloc_a();
	alloc_b();
	use_strdup();
	use_fopen();
	printf("DONE %d\n", kept_a[0] != kept_b[0] && kept_s[0][0] == '0');
	return 0;
}
