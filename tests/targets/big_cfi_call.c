// Calls into a file with a very large unwind table (tests/targets/gen_big_cfi.py): maps FILE
// as a loader maps its one R+X segment, prints READY, waits for a line on stdin, then calls
// the file's big_call (its e_entry) 1,000 times, each with alloc_leaf, which keeps 1,000 bytes:
// 1,000,000 bytes on the stack alloc_leaf <- big_call <- main.  big_call has no frame pointer:
// its caller is found through its FDE alone, the last of about 5 M rows.
// Usage: big_cfi_call FILE
#include <elf.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#define NOINLINE __attribute__((noinline))

static void *keep[1000];
static int nkeep;

NOINLINE void alloc_leaf(void)
{
	keep[nkeep++] = malloc(1000);
	__asm__ volatile("" ::: "memory");
}

int main(int argc, char **argv)
{
	void (*big_call)(void (*)(void));
	const Elf64_Ehdr *eh;
	struct stat st;
	char buf[8];
	void *base;
	int fd;

	if (argc != 2 || (fd = open(argv[1], O_RDONLY)) < 0 || fstat(fd, &st))
		return 2;
	base = mmap(NULL, st.st_size, PROT_READ | PROT_EXEC, MAP_PRIVATE, fd, 0);
	if (base == MAP_FAILED)
		return 2;
	eh = base;
	if (eh->e_entry >= (Elf64_Addr)st.st_size)
		return 2;
	big_call = (void (*)(void (*)(void)))((char *)base + eh->e_entry);
	printf("READY %d\n", getpid());
	fflush(stdout);
	if (!fgets(buf, sizeof(buf), stdin))
		return 1;
	for (int i = 0; i < 1000; i++)
		big_call(alloc_leaf);
	printf("DONE %d\n", nkeep);
	fflush(stdout);
	if (!fgets(buf, sizeof(buf), stdin))
		return 1;
	return 0;
}
