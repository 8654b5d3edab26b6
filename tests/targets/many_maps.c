// A target whose /proc/PID/maps is larger than the profiler reads (tests/e2e/test_hostile.sh):
// it maps one page of a file N times (each mapping its own line: same offset, so none merge)
// from a folder nested under DIR until the path is about 3,900 bytes long, so 5,000 mappings
// make about 20 MB of maps text.  Then it prints "READY pid", waits for a line on stdin and
// spins in spin_here() for SECONDS.
// Usage: many_maps DIR N SECONDS
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#define NOINLINE __attribute__((noinline))

static volatile unsigned long sink;

NOINLINE void spin_here(double seconds)
{
	struct timespec a, b;
	unsigned long x = sink;

	clock_gettime(CLOCK_MONOTONIC, &a);
	do {
		for (int i = 0; i < 1000000; i++)
			x = x * 6364136223846793005UL + 1442695040888963407UL;
		sink = x;
		clock_gettime(CLOCK_MONOTONIC, &b);
	} while ((double)(b.tv_sec - a.tv_sec) + (b.tv_nsec - a.tv_nsec) / 1e9 < seconds);
}

int main(int argc, char **argv)
{
	char part[201], line[16];
	size_t len;
	int dfd, fd;

	if (argc != 4) {
		fprintf(stderr, "usage: many_maps DIR N SECONDS\n");
		return 2;
	}
	memset(part, 'd', 200);
	part[200] = '\0';
	dfd = open(argv[1], O_RDONLY | O_DIRECTORY);
	if (dfd < 0) {
		perror(argv[1]);
		return 1;
	}
	/* Folder by folder (openat): no single path we pass is longer than 200 bytes. */
	for (len = strlen(argv[1]); len + 201 < 3900; len += 201) {
		int next;

		if (mkdirat(dfd, part, 0700) && errno != EEXIST) {
			perror("mkdirat");
			return 1;
		}
		next = openat(dfd, part, O_RDONLY | O_DIRECTORY);
		if (next < 0) {
			perror("openat");
			return 1;
		}
		close(dfd);
		dfd = next;
	}
	fd = openat(dfd, "page", O_RDWR | O_CREAT, 0600);
	if (fd < 0 || ftruncate(fd, 4096)) {
		perror("page");
		return 1;
	}
	for (int i = 0, n = atoi(argv[2]); i < n; i++)
		if (mmap(NULL, 4096, PROT_READ, MAP_PRIVATE, fd, 0) == MAP_FAILED) {
			perror("mmap");
			return 1;
		}
	printf("READY %d\n", getpid());
	fflush(stdout);
	if (!fgets(line, sizeof(line), stdin))
		return 1;
	spin_here(atof(argv[3]));
	return 0;
}
