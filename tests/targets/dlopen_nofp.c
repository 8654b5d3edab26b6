// dlopen end-to-end target, built without frame pointers (Makefile: *_nofp): dlopens each
// library named on its command line (RTLD_NOW, kept open) and calls its dlo_work, the
// libraries' own allocations being exactly known (tests/targets/lib/dlo_lib.c).  Each library
// is mapped after the profiler started, so its first stacks — the constructor's, inside dlopen
// — unwind only if its table is in before they run (tests/e2e/test_dlopen.sh).
//
//   dlopen_nofp [--wait] LIB...   --wait: print READY, wait for a line on stdin before the
//                                 dlopens and for another before exiting (-p); else sleep 1 s
//                                 first (`-- CMD` builds the tables of what it maps at exec).
//   dlopen_nofp --wait --open-first LIB...   the dlopens before READY (the libraries mapped
//                                 before -p attaches), each dlo_work after the first line.
//   dlopen_nofp --settle MS LIB...  no sleep first: sleep MS after each dlopen, before its
//                                 dlo_work (the library's table has had time to come in).
//   dlopen_nofp --loop N LIB...   N rounds of dlopen + dlo_work of every LIB, then dlclose of
//                                 them (bench/dlopen_bench.sh): also prints "NS t", the
//                                 rounds' wall time.
//
// Prints "DONE n" (n: libraries opened) at the end.
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define NOIPA __attribute__((noinline, noipa))

static void wait_line(void)
{
	char buf[64];

	if (!fgets(buf, sizeof(buf), stdin))
		exit(1);
}

NOIPA static void *open_lib(const char *path)
{
	void *h = dlopen(path, RTLD_NOW | RTLD_LOCAL);

	if (!h) {
		fprintf(stderr, "dlopen %s: %s\n", path, dlerror());
		exit(1);
	}
	return h;
}

NOIPA static void call_lib(void *h)
{
	void (*work)(void) = (void (*)(void))dlsym(h, "dlo_work");

	if (!work)
		exit(1);
	work();
}

int main(int argc, char **argv)
{
	static void *first[4096];
	int i = 1, n = 0, wait = 0, open_first = 0;
	long loops = 0, settle_ms = 0;

	if (i < argc && !strcmp(argv[i], "--wait"))
		wait = i++;
	if (wait && i < argc && !strcmp(argv[i], "--open-first"))
		open_first = i++;
	if (i + 1 < argc && !strcmp(argv[i], "--settle")) {
		settle_ms = strtol(argv[i + 1], NULL, 10);
		i += 2;
	}
	if (argc - i > 4096)
		return 2;
	if (i + 1 < argc && !strcmp(argv[i], "--loop")) {
		loops = strtol(argv[i + 1], NULL, 10);
		i += 2;
	}
	if (loops > 0 && i < argc) {
		void *h[256];
		int nl = argc - i < 256 ? argc - i : 256;
		struct timespec t0, t1;

		clock_gettime(CLOCK_MONOTONIC, &t0);
		for (long k = 0; k < loops; k++) {
			for (int j = 0; j < nl; j++) {
				h[j] = open_lib(argv[i + j]);
				call_lib(h[j]);
			}
			for (int j = 0; j < nl; j++)
				dlclose(h[j]);
		}
		clock_gettime(CLOCK_MONOTONIC, &t1);
		printf("DONE %ld\nNS %lld\n", loops * nl,
		       (long long)(t1.tv_sec - t0.tv_sec) * 1000000000LL + t1.tv_nsec - t0.tv_nsec);
		return 0;
	}
	for (int j = 0; open_first && j < argc - i; j++)
		first[j] = open_lib(argv[i + j]);
	if (wait) {
		printf("READY\n");
		fflush(stdout);
		wait_line();
	} else if (!settle_ms) {
		sleep(1);
	}
	for (; i < argc; i++, n++) {
		void *h = open_first ? first[n] : open_lib(argv[i]);

		if (settle_ms > 0)
			nanosleep(&(struct timespec){settle_ms / 1000, settle_ms % 1000 * 1000000L},
				  NULL);
		call_lib(h);
	}
	printf("DONE %d\n", n);
	fflush(stdout);
	if (wait)
		wait_line();
	return 0;
}
