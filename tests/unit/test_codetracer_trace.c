// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/* -f codetracer: the exact records of known event sequences, the copied sources, and the
 * atomic trace folder (export/outdir.c). */
#include <errno.h>
#include <fcntl.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cmocka.h>

#include "agg/calls_agg.h"
#include "trace/evtrace.h"
#include "export/outdir.h"
#include "trace/trace_sink.h"

struct fixture {
	char root[64];	/* a scratch directory */
	char src[128];	/* a source file in it */
	char path[128]; /* the trace folder */
	struct calls_agg *names;
	struct outdir *dir;
	struct trace_sink *sink;
	struct evtrace *t;
	uint32_t pid;
};

static void add_name(struct fixture *x, uint64_t id, const char *fn, const char *file)
{
	struct prof_call_name n = {
		.type = PROF_REC_CALL_NAME, .pid = x->pid, .name_id = id, .runtime = PROF_RT_PHP};

	n.fn_len = (uint16_t)strlen(fn);
	n.file_len = (uint16_t)strlen(file);
	memcpy(n.fn, fn, n.fn_len);
	memcpy(n.file, file, n.file_len);
	assert_int_equal(calls_agg__name(x->names, &n), 0);
}

static void write_file(const char *path, const char *text)
{
	FILE *f = fopen(path, "w");

	assert_non_null(f);
	fputs(text, f);
	assert_int_equal(fclose(f), 0);
}

/* The source's text; the trace is written by this very process, whose root is "/". */
static const char src_text[] = "<?php\nfunction f() { g(); }\nfunction g() {}\n";

static struct fixture *start(void)
{
	struct fixture *x = calloc(1, sizeof(*x));

	assert_non_null(x);
	snprintf(x->root, sizeof(x->root), "/tmp/ct_unit.XXXXXX");
	assert_non_null(mkdtemp(x->root));
	snprintf(x->src, sizeof(x->src), "%s/a.php", x->root);
	snprintf(x->path, sizeof(x->path), "%s/trace", x->root);
	write_file(x->src, src_text);
	x->pid = (uint32_t)getpid();
	assert_int_equal(calls_agg__new(&x->names), 0);
	add_name(x, 10, "f", x->src);
	add_name(x, 11, "g", x->src);
	add_name(x, 12, "h", "/nonexistent/b.php");
	add_name(x, 13, "r", "rel/c.php");
	add_name(x, 14, "d", "/tmp/../etc/passwd");
	add_name(x, 15, "q\"\n", "");
	assert_int_equal(outdir__open(&x->dir, x->path), 0);
	assert_int_equal(codetracer_trace__new(&x->sink, outdir__fd(x->dir), "/proc"), 0);
	assert_int_equal(evtrace__new_sink(&x->t, x->sink), 0);
	evtrace__set_sources(x->t, x->names, NULL);
	return x;
}

static void ev(struct fixture *x, uint32_t tid, uint32_t type, uint64_t ts, uint64_t id,
	       uint32_t line)
{
	struct prof_call_event e = {.type = type,
				    .pid = x->pid,
				    .tid = tid,
				    .ts = ts,
				    .name_id = id,
				    .runtime = PROF_RT_PHP,
				    .line = line};

	assert_int_equal(evtrace__call(x->t, &e), 0);
}

#define ENTRY(x, tid, ts, id, line) ev(x, tid, PROF_REC_CALL_ENTRY, ts, id, line)
#define RETURN(x, tid, ts, id)	    ev(x, tid, PROF_REC_CALL_RETURN, ts, id, 0)

static char *slurp(const char *dir, const char *name)
{
	char path[256], *buf;
	FILE *f;
	long n;

	snprintf(path, sizeof(path), "%s/%s", dir, name);
	f = fopen(path, "r");
	if (!f)
		return NULL;
	fseek(f, 0, SEEK_END);
	n = ftell(f);
	rewind(f);
	buf = calloc(1, (size_t)n + 1);
	assert_non_null(buf);
	assert_int_equal(fread(buf, 1, (size_t)n, f), (size_t)n);
	fclose(f);
	return buf;
}

static void finish(struct fixture *x)
{
	assert_int_equal(evtrace__finish(x->t, 9000, NULL, NULL, 0), 0);
	assert_int_equal(outdir__commit(x->dir), 0);
	x->dir = NULL;
}

static void done(struct fixture *x)
{
	char cmd[256];

	evtrace__free(x->t);
	outdir__abort(x->dir);
	calls_agg__free(x->names);
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", x->root);
	assert_int_equal(system(cmd), 0);
	free(x);
}

static const char none_ret[] = "{\"Return\":{\"return_value\":{\"kind\":\"None\",\"type_id\":0}}}";

static void test_codetracer_trace__records_exact(void **state)
{
	struct fixture *x = start();
	char want[4096], *got, *paths, *copy, files[256];
	uint64_t copied, missing;
	struct stat st;

	(void)state;
	ENTRY(x, x->pid, 1000, 10, 2);
	ENTRY(x, x->pid, 1500, 11, 3);
	RETURN(x, x->pid, 1600, 11);
	ENTRY(x, x->pid, 1700, 11, 3);
	RETURN(x, x->pid, 1800, 11);
	RETURN(x, x->pid, 2000, 10);
	finish(x);
	snprintf(want, sizeof(want),
		 "[\n{\"Path\":\"%s\"},\n"
		 "{\"Function\":{\"path_id\":0,\"line\":1,\"name\":\"<toplevel>\"}},\n"
		 "{\"Call\":{\"function_id\":0,\"args\":[]}},\n"
		 "{\"Type\":{\"kind\":30,\"lang_type\":\"None\",\"specific_info\":{\"kind\":"
		 "\"None\"}}},\n"
		 "{\"ThreadStart\":%u},\n"
		 "{\"Function\":{\"path_id\":0,\"line\":2,\"name\":\"f\"}},\n"
		 "{\"Call\":{\"function_id\":1,\"args\":[]}},\n"
		 "{\"Step\":{\"path_id\":0,\"line\":2}},\n"
		 "{\"Function\":{\"path_id\":0,\"line\":3,\"name\":\"g\"}},\n"
		 "{\"Call\":{\"function_id\":2,\"args\":[]}},\n"
		 "{\"Step\":{\"path_id\":0,\"line\":3}},\n%s,\n"
		 "{\"Call\":{\"function_id\":2,\"args\":[]}},\n"
		 "{\"Step\":{\"path_id\":0,\"line\":3}},\n%s,\n%s,\n%s,\n"
		 "{\"ThreadExit\":%u}\n]\n",
		 x->src, x->pid, none_ret, none_ret, none_ret, none_ret, x->pid);
	got = slurp(x->path, "trace.json");
	assert_non_null(got);
	assert_string_equal(got, want);
	paths = slurp(x->path, "trace_paths.json");
	snprintf(want, sizeof(want), "[\"%s\"]\n", x->src);
	assert_string_equal(paths, want);
	snprintf(files, sizeof(files), "files%s", x->src);
	copy = slurp(x->path, files);
	assert_non_null(copy);
	assert_string_equal(copy, src_text);
	codetracer_trace__files(x->sink, &copied, &missing);
	assert_int_equal(copied, 1);
	assert_int_equal(missing, 0);
	assert_int_equal(stat(x->path, &st), 0);
	assert_int_equal(st.st_mode & 07777, 0700);
	free(got);
	free(paths);
	free(copy);
	done(x);
}

/* Sources that are missing, relative or climb with ".." are counted, their paths kept, nothing
 * copied; names are escaped; a function without a file uses path 0. */
static void test_codetracer_trace__missing_and_refused_sources(void **state)
{
	struct fixture *x = start();
	uint64_t copied, missing;
	char *got, *paths;

	(void)state;
	ENTRY(x, x->pid, 1000, 12, 4);
	ENTRY(x, x->pid, 1100, 13, 5);
	ENTRY(x, x->pid, 1200, 14, 6);
	ENTRY(x, x->pid, 1300, 15, 7);
	finish(x);
	codetracer_trace__files(x->sink, &copied, &missing);
	assert_int_equal(copied, 0);
	assert_int_equal(missing, 3);
	paths = slurp(x->path, "trace_paths.json");
	assert_string_equal(paths,
			    "[\"/nonexistent/b.php\",\n\"rel/c.php\",\n\"/tmp/../etc/passwd\"]\n");
	got = slurp(x->path, "trace.json");
	assert_non_null(strstr(got, "{\"Function\":{\"path_id\":2,\"line\":6,\"name\":\"d\"}}"));
	assert_non_null(
		strstr(got, "{\"Function\":{\"path_id\":0,\"line\":7,\"name\":\"q\\\"\\n\"}}"));
	assert_null(slurp(x->path, "files/etc/passwd"));
	assert_null(slurp(x->path, "files/tmp/../etc/passwd"));
	free(got);
	free(paths);
	done(x);
}

/* Two threads: each starts once, a switch says whose records follow, an exit ends one; the
 * first thread's exit waits for <toplevel>, its call, to return at the end. */
static void test_codetracer_trace__threads(void **state)
{
	struct fixture *x = start();
	char *got, want[512];

	(void)state;
	ENTRY(x, 100, 1000, 10, 2);
	ENTRY(x, 101, 1100, 11, 3);
	RETURN(x, 101, 1200, 11);
	assert_int_equal(evtrace__thread_exit(x->t, x->pid, 101), 0);
	RETURN(x, 100, 1300, 10);
	assert_int_equal(evtrace__thread_exit(x->t, x->pid, 100), 0);
	finish(x);
	got = slurp(x->path, "trace.json");
	assert_non_null(strstr(got, "{\"ThreadStart\":100},\n{\"Function\""));
	snprintf(want, sizeof(want),
		 "{\"ThreadStart\":101},\n{\"Function\":{\"path_id\":0,\"line\":3,\"name\":\"g\"}},"
		 "\n"
		 "{\"Call\":{\"function_id\":2,\"args\":[]}},\n{\"Step\":{\"path_id\":0,\"line\":3}"
		 "},\n"
		 "%s,\n{\"ThreadExit\":101},\n{\"ThreadSwitch\":100},\n%s,\n%s,\n{\"ThreadExit\":"
		 "100}\n]\n",
		 none_ret, none_ret, none_ret);
	assert_non_null(strstr(got, want));
	assert_int_equal(strlen(strstr(got, want)), strlen(want)); /* the file's end */
	free(got);
	done(x);
}

/* An old trace folder is replaced whole; links, files and foreign folders are refused. */
static void test_codetracer_trace__outdir_replace_and_refuse(void **state)
{
	char root[] = "/tmp/ct_dir.XXXXXX", path[128], other[128], cmd[160];
	struct outdir *d;
	int fd;

	(void)state;
	assert_non_null(mkdtemp(root));
	snprintf(path, sizeof(path), "%s/t/", root); /* a trailing slash names the same folder */
	assert_int_equal(outdir__open(&d, path), 0);
	fd = openat(outdir__fd(d), "trace_metadata.json", O_WRONLY | O_CREAT, 0600);
	assert_true(fd >= 0);
	close(fd);
	assert_int_equal(outdir__commit(d), 0);
	snprintf(path, sizeof(path), "%s/t/old", root);
	write_file(path, "old");
	snprintf(path, sizeof(path), "%s/t", root);
	assert_int_equal(outdir__open(&d, path), 0);
	assert_int_equal(outdir__commit(d), 0);
	snprintf(other, sizeof(other), "%s/t/old", root);
	assert_int_equal(access(other, F_OK), -1);
	assert_int_equal(access(path, F_OK), 0);
	/* t is empty now: it may be replaced again; a folder with other files may not. */
	snprintf(other, sizeof(other), "%s/t/notes", root);
	write_file(other, "mine");
	assert_int_equal(outdir__open(&d, path), -ENOTEMPTY);
	snprintf(other, sizeof(other), "%s/link", root);
	assert_int_equal(symlink(path, other), 0);
	assert_int_equal(outdir__open(&d, other), -ELOOP);
	snprintf(other, sizeof(other), "%s/t/notes", root);
	assert_int_equal(outdir__open(&d, other), -ENOTDIR);
	/* An aborted folder leaves nothing beside it. */
	snprintf(other, sizeof(other), "%s/u", root);
	assert_int_equal(outdir__open(&d, other), 0);
	fd = openat(outdir__fd(d), "x", O_WRONLY | O_CREAT, 0600);
	assert_true(fd >= 0);
	close(fd);
	outdir__abort(d);
	snprintf(cmd, sizeof(cmd), "test -z \"$(ls -A '%s' | grep -v -x -e t -e link)\"", root);
	assert_int_equal(system(cmd), 0);
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", root);
	assert_int_equal(system(cmd), 0);
}

/* A fake proc root: pid's status (ours) and its root, a symbolic link to root_dir. */
static void fake_pid(const char *proc, uint32_t pid, const char *root_dir)
{
	char p[256], status[8192];
	ssize_t n;
	int fd;

	snprintf(p, sizeof(p), "%s/%u", proc, pid);
	assert_int_equal(mkdir(p, 0755), 0);
	fd = open("/proc/self/status", O_RDONLY); /* its size reads 0: not slurp's */
	assert_true(fd >= 0);
	n = read(fd, status, sizeof(status));
	assert_true(n > 0);
	close(fd);
	snprintf(p, sizeof(p), "%s/%u/status", proc, pid);
	fd = open(p, O_WRONLY | O_CREAT | O_EXCL, 0644);
	assert_true(fd >= 0);
	assert_int_equal(write(fd, status, (size_t)n), n);
	close(fd);
	snprintf(p, sizeof(p), "%s/%u/root", proc, pid);
	assert_int_equal(symlink(root_dir, p), 0);
}

static void call_in(struct fixture *x, uint32_t pid, uint64_t ts, uint64_t id)
{
	struct prof_call_event e = {.type = PROF_REC_CALL_ENTRY,
				    .pid = pid,
				    .tid = pid,
				    .ts = ts,
				    .name_id = id,
				    .runtime = PROF_RT_PHP,
				    .line = 1};

	assert_int_equal(evtrace__call(x->t, &e), 0);
}

/* Two roots (two containers) naming the same path: two Path records, two copies, each with its
 * root's bytes; a third process in the first root shares the first's. */
static void test_codetracer_trace__same_path_two_roots(void **state)
{
	struct fixture *x = calloc(1, sizeof(*x));
	char proc[96], p[160], *got;
	uint64_t copied, missing;

	(void)state;
	assert_non_null(x);
	snprintf(x->root, sizeof(x->root), "/tmp/ct_unit.XXXXXX");
	assert_non_null(mkdtemp(x->root));
	snprintf(proc, sizeof(proc), "%s/proc", x->root);
	assert_int_equal(mkdir(proc, 0755), 0);
	for (int i = 0; i < 2; i++) {
		snprintf(p, sizeof(p), "%s/root%c", x->root, 'A' + i);
		assert_int_equal(mkdir(p, 0755), 0);
		snprintf(p, sizeof(p), "%s/root%c/app", x->root, 'A' + i);
		assert_int_equal(mkdir(p, 0755), 0);
		snprintf(p, sizeof(p), "%s/root%c/app/main.php", x->root, 'A' + i);
		write_file(p, i ? "B's\n" : "A's\n");
		snprintf(p, sizeof(p), "%s/root%c", x->root, 'A' + i);
		fake_pid(proc, 100 + 100 * (uint32_t)i, p);
	}
	snprintf(p, sizeof(p), "%s/rootA", x->root);
	fake_pid(proc, 300, p);
	snprintf(x->path, sizeof(x->path), "%s/trace", x->root);
	x->pid = 100;
	assert_int_equal(calls_agg__new(&x->names), 0);
	add_name(x, 20, "a", "/app/main.php");
	add_name(x, 21, "b", "/app/main.php");
	add_name(x, 22, "c", "/app/main.php");
	assert_int_equal(outdir__open(&x->dir, x->path), 0);
	assert_int_equal(codetracer_trace__new(&x->sink, outdir__fd(x->dir), proc), 0);
	assert_int_equal(evtrace__new_sink(&x->t, x->sink), 0);
	evtrace__set_sources(x->t, x->names, NULL);
	call_in(x, 100, 1000, 20);
	call_in(x, 200, 1100, 21);
	call_in(x, 300, 1200, 22);
	finish(x);
	got = slurp(x->path, "trace_paths.json");
	assert_string_equal(got, "[\"/app/main.php\",\n\"/[root 2]/app/main.php\"]\n");
	free(got);
	got = slurp(x->path, "files/app/main.php");
	assert_string_equal(got, "A's\n");
	free(got);
	got = slurp(x->path, "files/[root 2]/app/main.php");
	assert_non_null(got);
	assert_string_equal(got, "B's\n");
	free(got);
	got = slurp(x->path, "trace.json");
	assert_non_null(strstr(got, "{\"Function\":{\"path_id\":1,\"line\":1,\"name\":\"b\"}}"));
	assert_non_null(strstr(got, "{\"Function\":{\"path_id\":0,\"line\":1,\"name\":\"c\"}}"));
	free(got);
	codetracer_trace__files(x->sink, &copied, &missing);
	assert_int_equal(copied, 2);
	assert_int_equal(missing, 0);
	done(x);
}

/* At most 4096 sources are tried: the ones named after are counted, not copied. */
static void test_codetracer_trace__files_capped(void **state)
{
	struct fixture *x = start();
	uint64_t copied, missing;
	char p[160], *got;

	(void)state;
	for (int i = 0; i < 4100; i++) {
		snprintf(p, sizeof(p), "%s/s%d.php", x->root, i);
		write_file(p, "<?php\n");
		add_name(x, 1000 + (uint64_t)i, "f", p);
		ENTRY(x, x->pid, 10000 + 2 * (uint64_t)i, 1000 + (uint64_t)i, 1);
		RETURN(x, x->pid, 10001 + 2 * (uint64_t)i, 1000 + (uint64_t)i);
	}
	finish(x);
	codetracer_trace__files(x->sink, &copied, &missing);
	assert_int_equal(copied, 4096);
	assert_int_equal(missing, 4);
	assert_int_equal(codetracer_trace__stats(x->sink)->files_cap, 4);
	snprintf(p, sizeof(p), "files%s/s4095.php", x->root);
	got = slurp(x->path, p);
	assert_non_null(got);
	free(got);
	snprintf(p, sizeof(p), "files%s/s4096.php", x->root);
	assert_null(slurp(x->path, p));
	done(x);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_codetracer_trace__records_exact),
		cmocka_unit_test(test_codetracer_trace__missing_and_refused_sources),
		cmocka_unit_test(test_codetracer_trace__threads),
		cmocka_unit_test(test_codetracer_trace__outdir_replace_and_refuse),
		cmocka_unit_test(test_codetracer_trace__same_path_two_roots),
		cmocka_unit_test(test_codetracer_trace__files_capped),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
