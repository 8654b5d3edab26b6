// JIT-like target: its hot code lives in an anonymous executable mapping, as a JIT's does, so
// only a perf map (/tmp/perf-PID.map) can name it.
// Prints "READY <pid> <code address> <code size>", then calls that code until killed.
#define _GNU_SOURCE
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

/* mov $1000000,%ecx; 1: dec %ecx; jnz 1b; ret */
static const unsigned char code[] = {0xb9, 0x40, 0x42, 0x0f, 0x00, 0xff, 0xc9, 0x75, 0xfc, 0xc3};

int main(void)
{
	void (*fn)(void);
	void *page;

	page = mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (page == MAP_FAILED)
		return 1;
	memcpy(page, code, sizeof(code));
	if (mprotect(page, 4096, PROT_READ | PROT_EXEC))
		return 1;
	fn = (void (*)(void))page;
	printf("READY %d %lx %zx\n", getpid(), (unsigned long)page, sizeof(code));
	fflush(stdout);
	for (;;)
		fn();
}
