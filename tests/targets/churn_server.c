// A server's heap as -p sees it: everything a request allocates is freed before the next one,
// and the 64 connection records allocated before READY are replaced, one a request, so the
// first 64 frees after an attach are of blocks allocated before it (unknown_frees).
//
//   handle_request   malloc(4096) + malloc(256) for the new connection record; frees the
//                    request buffer and the oldest record
//
// In use at any time: the 64 records (16 KiB); allocated: 4352 bytes a request.  A request
// every 20 us or so (a 1 ms pause every 50), until killed or SECONDS have passed.
// Usage: churn_server SECONDS   (prints "READY pid" once the records are allocated)
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define NOINLINE  __attribute__((noinline))
#define NRECORDS  64
#define REQ_BYTES 4096
#define REC_BYTES 256

static void *records[NRECORDS];
static void *volatile sink;

NOINLINE void *new_record(void)
{
	return malloc(REC_BYTES);
}

NOINLINE void handle_request(unsigned i)
{
	char *buf = malloc(REQ_BYTES);

	if (buf)
		memset(buf, (int)i, 64);
	sink = buf;
	free(buf);
	free(records[i % NRECORDS]);
	records[i % NRECORDS] = new_record();
}

int main(int argc, char **argv)
{
	const struct timespec pause = {0, 1000000};
	time_t until;

	if (argc != 2) {
		fprintf(stderr, "usage: churn_server SECONDS\n");
		return 2;
	}
	until = time(NULL) + atoi(argv[1]);
	for (int i = 0; i < NRECORDS; i++)
		records[i] = new_record();
	printf("READY %d\n", (int)getpid());
	fflush(stdout);
	for (unsigned i = 0; time(NULL) < until; i++) {
		handle_request(i);
		if (i % 50 == 49)
			nanosleep(&pause, NULL);
	}
	return 0;
}
