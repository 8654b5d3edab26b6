// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * Debug files from debuginfod: the fetcher against a small HTTP server of this test on the
 * loopback (libdebuginfod itself asks it, over real sockets) that serves the symfix fixture's
 * debug file, answers 404, stalls, or announces a file over the size cap; and the symbolizer's
 * side: a stack interned while the file was still being fetched is named once it arrives.
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <netinet/in.h>
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include <cmocka.h>

#include "fixture_nm.h"

#include "sym/debuginfod.h"
#include "sym/stackres.h"
#include "sym/symbolizer.h"

#define FIX	      "build/fixtures/"
#define PID	      4343
#define STRIPPED_BIAS 0x560000000000ULL

/*
 * libdebuginfod writes its cache's settings with dprintf(), which leaks the 8 KiB buffer glibc
 * 2.36 allocates for a seekable fd: not ours, once per new cache.
 */
const char *__lsan_default_suppressions(void);
const char *__lsan_default_suppressions(void)
{
	return "leak:libdebuginfod.so\n";
}

/* Whole stacks at malloc (libc has no frame pointers), so the suppression sees the library. */
const char *__asan_default_options(void);
const char *__asan_default_options(void)
{
	return "fast_unwind_on_malloc=0";
}

enum serve {
	SERVE_FILE,  /* the fixture's debug file for its build id, 404 for any other */
	SERVE_STALL, /* accept, never answer */
	SERVE_HUGE,  /* announce 1 GiB, send a little, stall */
};

static struct {
	int lfd, port;
	enum serve mode;
	pthread_t thread;
	unsigned requests;
	int held[16];
	unsigned nheld;
	char bid[128], debug[PATH_MAX], cache[64], root[64];
} srv;

static void read_request(int fd, char *path, size_t size)
{
	char buf[4096];
	size_t n = 0;
	ssize_t r;

	while (n < sizeof(buf) - 1 && (r = read(fd, buf + n, sizeof(buf) - 1 - n)) > 0) {
		n += (size_t)r;
		buf[n] = '\0';
		if (strstr(buf, "\r\n\r\n"))
			break;
	}
	buf[n] = '\0';
	path[0] = '\0';
	sscanf(buf, "GET %1023s", path);
	(void)size;
}

static void answer(int fd, const char *path)
{
	char want[512], head[256];
	struct stat st;
	int in;

	snprintf(want, sizeof(want), "/buildid/%s/debuginfo", srv.bid);
	if (strcmp(path, want) || (in = open(srv.debug, O_RDONLY)) < 0) {
		dprintf(fd,
			"HTTP/1.1 404 Not Found\r\nContent-Length: 0\r\nConnection: close\r\n\r\n");
		return;
	}
	fstat(in, &st);
	snprintf(head, sizeof(head),
		 "HTTP/1.1 200 OK\r\nContent-Length: %lld\r\nConnection: close\r\n\r\n",
		 (long long)st.st_size);
	assert_true(write(fd, head, strlen(head)) > 0);
	for (;;) {
		char buf[65536];
		ssize_t r = read(in, buf, sizeof(buf));

		if (r <= 0 || write(fd, buf, (size_t)r) != r)
			break;
	}
	close(in);
}

static void *serve_main(void *arg)
{
	char path[1024];
	int fd;

	(void)arg;
	while ((fd = accept(srv.lfd, NULL, NULL)) >= 0) {
		read_request(fd, path, sizeof(path));
		__atomic_fetch_add(&srv.requests, 1, __ATOMIC_RELAXED);
		if (srv.mode == SERVE_FILE) {
			answer(fd, path);
			close(fd);
			continue;
		}
		if (srv.mode == SERVE_HUGE)
			dprintf(fd,
				"HTTP/1.1 200 OK\r\nContent-Length: 1073741824\r\n\r\n0123456789");
		if (srv.nheld < 16)
			srv.held[srv.nheld++] = fd; /* held open, unanswered, until the test ends */
		else
			close(fd);
	}
	return NULL;
}

static void start_server(enum serve mode)
{
	struct sockaddr_in a = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
	socklen_t len = sizeof(a);
	char url[64];

	srv.mode = mode;
	srv.requests = 0;
	srv.nheld = 0;
	srv.lfd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	assert_true(srv.lfd >= 0);
	assert_int_equal(bind(srv.lfd, (struct sockaddr *)&a, sizeof(a)), 0);
	assert_int_equal(listen(srv.lfd, 16), 0);
	assert_int_equal(getsockname(srv.lfd, (struct sockaddr *)&a, &len), 0);
	srv.port = ntohs(a.sin_port);
	snprintf(url, sizeof(url), "http://127.0.0.1:%d", srv.port);
	setenv("DEBUGINFOD_URLS", url, 1);
	assert_int_equal(pthread_create(&srv.thread, NULL, serve_main, NULL), 0);
}

static void stop_server(void)
{
	shutdown(srv.lfd, SHUT_RDWR);
	pthread_join(srv.thread, NULL);
	close(srv.lfd);
	for (unsigned i = 0; i < srv.nheld; i++)
		close(srv.held[i]);
}

static int setup(void **state)
{
	FILE *f = fopen(FIX "symfix-pie.buildid", "r");

	(void)state;
	assert_non_null(f);
	assert_non_null(fgets(srv.bid, sizeof(srv.bid), f));
	srv.bid[strcspn(srv.bid, "\n")] = '\0';
	fclose(f);
	assert_non_null(realpath(FIX "symfix-pie.debug", srv.debug));
	strcpy(srv.cache, "/tmp/dbgcache.XXXXXX");
	assert_non_null(mkdtemp(srv.cache));
	setenv("DEBUGINFOD_CACHE_PATH", srv.cache, 1);
	unsetenv("DEBUGINFOD_MAXSIZE");
	return 0;
}

static int teardown(void **state)
{
	char cmd[160];

	(void)state;
	snprintf(cmd, sizeof(cmd), "rm -rf '%s' '%s'", srv.cache, srv.root[0] ? srv.root : "");
	srv.root[0] = '\0';
	return system(cmd);
}

static struct dbgfetch *new_fetch(unsigned timeout_s)
{
	struct dbgfetch *f = NULL;

	assert_int_equal(dbgfetch__new(&f, &(struct dbgfetch_opts){.timeout_s = timeout_s}), 0);
	assert_non_null(f);
	return f;
}

static void test_debuginfod__off_without_urls(void **state)
{
	struct dbgfetch *f = (void *)1;

	(void)state;
	unsetenv("DEBUGINFOD_URLS");
	assert_int_equal(dbgfetch__new(&f, NULL), 0);
	assert_null(f);
	setenv("DEBUGINFOD_URLS", "  ", 1);
	assert_int_equal(dbgfetch__new(&f, NULL), 0);
	assert_null(f);
}

static void test_debuginfod__only_build_ids_asked(void **state)
{
	struct dbgfetch *f;

	(void)state;
	setenv("DEBUGINFOD_URLS", "http://127.0.0.1:9", 1);
	f = new_fetch(1);
	assert_int_equal(dbgfetch__want(f, ""), -EINVAL);
	assert_int_equal(dbgfetch__want(f, "abc"), -EINVAL);	   /* odd */
	assert_int_equal(dbgfetch__want(f, "ABCD"), -EINVAL);	   /* not lowercase */
	assert_int_equal(dbgfetch__want(f, "../../etc"), -EINVAL); /* not hex */
	assert_int_equal(dbgfetch__pending(f), 0);
	dbgfetch__free(f);
}

static void test_debuginfod__fetched_once_and_misses_counted(void **state)
{
	struct dbgfetch_file *files;
	struct dbgfetch_stats st;
	struct dbgfetch *f;
	struct stat a, b;
	size_t n;

	(void)state;
	start_server(SERVE_FILE);
	f = new_fetch(10);
	assert_int_equal(dbgfetch__want(f, srv.bid), 0);
	assert_int_equal(dbgfetch__want(f, srv.bid), 0); /* asked once */
	assert_int_equal(dbgfetch__want(f, "0123456789abcdef0123456789abcdef01234567"), 0);
	assert_true(dbgfetch__wait(f, 20000));
	dbgfetch__stats(f, &st);
	assert_int_equal(st.fetched, 1);
	assert_int_equal(st.missing, 1);
	assert_int_equal(st.timeouts + st.failed, 0);
	assert_int_equal(srv.requests, 2);
	assert_true(dbgfetch__arrived(f));
	dbgfetch__take(f, &files, &n);
	assert_int_equal(n, 1);
	assert_string_equal(files[0].build_id, srv.bid);
	/* In the cache, whole. */
	assert_int_equal(strncmp(files[0].path, srv.cache, strlen(srv.cache)), 0);
	assert_int_equal(stat(files[0].path, &a), 0);
	assert_int_equal(stat(srv.debug, &b), 0);
	assert_int_equal(a.st_size, b.st_size);
	dbgfetch__free_files(files, n);
	assert_false(dbgfetch__arrived(f));
	dbgfetch__free(f);
	stop_server();
}

/* A server that never answers: the fetch is cut at the timeout, counted, and leaves no negative
 * entry in the cache (libdebuginfod 0.188 writes one for a cut fetch). */
static void test_debuginfod__stalled_server_cut_at_timeout(void **state)
{
	struct dbgfetch_stats st;
	struct dbgfetch *f;
	char neg[PATH_MAX];
	struct stat sb;

	(void)state;
	start_server(SERVE_STALL);
	f = new_fetch(1);
	assert_int_equal(dbgfetch__want(f, srv.bid), 0);
	assert_true(dbgfetch__wait(f, 10000));
	dbgfetch__stats(f, &st);
	assert_int_equal(st.timeouts, 1);
	assert_int_equal(st.fetched + st.missing + st.failed, 0);
	assert_false(dbgfetch__arrived(f));
	snprintf(neg, sizeof(neg), "%s/%s/debuginfo", srv.cache, srv.bid);
	assert_int_equal(stat(neg, &sb), -1);
	dbgfetch__free(f);
	stop_server();
}

/* The last profile is next: what is under way and queued is cut and counted, nothing more asked. */
static void test_debuginfod__finish_cuts_what_is_pending(void **state)
{
	struct dbgfetch_stats st;
	struct dbgfetch *f;

	(void)state;
	start_server(SERVE_STALL);
	f = new_fetch(60);
	assert_int_equal(dbgfetch__want(f, srv.bid), 0);
	assert_int_equal(dbgfetch__want(f, "0123456789abcdef0123456789abcdef01234567"), 0);
	assert_int_equal(dbgfetch__pending(f), 2);
	dbgfetch__finish(f, 0);
	assert_int_equal(dbgfetch__pending(f), 0);
	dbgfetch__stats(f, &st);
	assert_int_equal(st.timeouts, 2);
	assert_int_equal(dbgfetch__want(f, "00112233445566778899aabbccddeeff00112233"), 0);
	assert_int_equal(dbgfetch__pending(f), 0);
	dbgfetch__free(f);
	stop_server();
}

static void test_debuginfod__over_the_size_cap_not_fetched(void **state)
{
	struct dbgfetch_stats st;
	struct dbgfetch *f;

	(void)state;
	setenv("DEBUGINFOD_MAXSIZE", "100000", 1);
	start_server(SERVE_HUGE);
	f = new_fetch(20);
	assert_int_equal(dbgfetch__want(f, srv.bid), 0);
	assert_true(dbgfetch__wait(f, 20000));
	dbgfetch__stats(f, &st);
	assert_int_equal(st.fetched + st.timeouts, 0);
	assert_int_equal(st.failed + st.missing, 1);
	assert_false(dbgfetch__arrived(f));
	dbgfetch__free(f);
	stop_server();
}

/* A fake /proc with PID mapping the stripped fixture whole at STRIPPED_BIAS. */
static void fake_proc(const char *stripped)
{
	char p[PATH_MAX];
	struct stat st;
	FILE *f;

	strcpy(srv.root, "/tmp/dbgproc.XXXXXX");
	assert_non_null(mkdtemp(srv.root));
	snprintf(p, sizeof(p), "%s/%d", srv.root, PID);
	assert_int_equal(mkdir(p, 0755), 0);
	snprintf(p, sizeof(p), "%s/%d/root", srv.root, PID);
	assert_int_equal(symlink("/", p), 0);
	snprintf(p, sizeof(p), "%s/%d/comm", srv.root, PID);
	f = fopen(p, "w");
	assert_non_null(f);
	fputs("fixture\n", f);
	fclose(f);
	assert_int_equal(stat(stripped, &st), 0);
	snprintf(p, sizeof(p), "%s/%d/maps", srv.root, PID);
	f = fopen(p, "w");
	assert_non_null(f);
	fprintf(f, "%llx-%llx r-xp 00000000 %02x:%02x %lu    %s\n", STRIPPED_BIAS,
		STRIPPED_BIAS + (((uint64_t)st.st_size + 0xfff) & ~0xfffULL), major(st.st_dev),
		minor(st.st_dev), (unsigned long)st.st_ino, stripped);
	fclose(f);
}

/*
 * symfix_local_helper is static: the stripped file names it by file offset only.  Its debug
 * file arrives after the stack was interned; the stack's frame is named then.
 */
static void test_debuginfod__stack_named_when_its_file_arrives(void **state)
{
	char stripped[PATH_MAX];
	struct symbolizer *s = NULL;
	struct stackres *r = NULL;
	const struct stackres_frame *fr;
	uint64_t ip;
	int32_t id;
	unsigned n;

	(void)state;
	assert_non_null(realpath(FIX "symfix-stripped", stripped));
	fake_proc(stripped);
	start_server(SERVE_FILE);
	assert_int_equal(symbolizer__new(&s,
					 &(struct symbolizer_opts){
						 .proc_root = srv.root,
						 .kallsyms = "/nonexistent",
						 .perfmap_dir = srv.root,
						 .debug_dir = "",
						 .debuginfod = true,
						 .debuginfod_timeout_s = 10,
					 }),
			 0);
	assert_int_equal(stackres__new(&r, s), 0);
	ip = STRIPPED_BIAS + nm_addr(FIX "symfix-pie.nm", "symfix_local_helper") + 1;
	assert_int_equal(stackres__intern(r, &id, PID, STACK_USER, &ip, 1), 0);
	fr = stackres__frames(r, id, &n);
	assert_int_equal(n, 1);
	assert_non_null(fr[0].sym.name);
	assert_non_null(strstr(fr[0].sym.name, "symfix-stripped+0x"));
	assert_false(fr[0].sym.map->has_symbols && !strcmp(fr[0].sym.name, "symfix_local_helper"));

	assert_int_equal(stackres__debug(r, STACKRES_LAST), 0);
	assert_int_equal(stackres__sync(r), 0);
	fr = stackres__frames(r, id, &n);
	assert_string_equal(fr[0].sym.name, "symfix_local_helper");
	assert_true(fr[0].sym.map->has_symbols);
	assert_int_equal(symbolizer__stats(s)->debuginfod_fetched, 1);
	/* New stacks in that file are named at once. */
	ip += 2;
	assert_int_equal(stackres__intern(r, &id, PID, STACK_USER, &ip, 1), 0);
	fr = stackres__frames(r, id, &n);
	assert_string_equal(fr[0].sym.name, "symfix_local_helper");
	assert_int_equal(srv.requests, 1);
	stackres__free(r);
	symbolizer__free(s);
	stop_server();
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_debuginfod__off_without_urls, setup, teardown),
		cmocka_unit_test_setup_teardown(test_debuginfod__only_build_ids_asked, setup,
						teardown),
		cmocka_unit_test_setup_teardown(test_debuginfod__fetched_once_and_misses_counted,
						setup, teardown),
		cmocka_unit_test_setup_teardown(test_debuginfod__stalled_server_cut_at_timeout,
						setup, teardown),
		cmocka_unit_test_setup_teardown(test_debuginfod__finish_cuts_what_is_pending, setup,
						teardown),
		cmocka_unit_test_setup_teardown(test_debuginfod__over_the_size_cap_not_fetched,
						setup, teardown),
		cmocka_unit_test_setup_teardown(test_debuginfod__stack_named_when_its_file_arrives,
						setup, teardown),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
