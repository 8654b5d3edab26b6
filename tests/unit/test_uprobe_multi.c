// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * uprobe_multi and session links on real processes: tests/bpf/uprobe_multi_test.bpf.c counts
 * per process what the links deliver while build/targets/malloc_count makes an exact number of
 * malloc and calloc calls, beside a second copy of it (same libc) that the pid filter excludes.
 * Needs BPF (root): skipped without it, except under CI=true.
 */
#include <dirent.h>
#include <errno.h>
#include <limits.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmocka.h>

#include <bpf/bpf.h>
#include <bpf/libbpf.h>
#include <linux/types.h>

#include "attach/prologue.h"
#include "attach/uprobe_multi.h"
#include "bpf_or_skip.h"
#include "proc/maps.h"
#include "sym/elf_file.h"
#include "tests/uprobe_multi_test.skel.h"
#include "../bpf/uprobe_multi_test.h"

#define TARGET "build/targets/malloc_count"
#define KEEP   64 /* the session program's umt_keep */

static bool no_bpf; /* no privileges for BPF outside CI: every test skips */

struct child {
	pid_t pid;
	int gate; /* its stdin */
};

/* Start malloc_count and wait for its "ready": its libc is mapped, its first calls made. */
static void child_start3(struct child *c, long mallocs, long callocs, long aligned)
{
	int in[2], out[2];
	char a1[32], a2[32], a3[32], buf[8];

	snprintf(a1, sizeof(a1), "%ld", mallocs);
	snprintf(a2, sizeof(a2), "%ld", callocs);
	snprintf(a3, sizeof(a3), "%ld", aligned);
	assert_int_equal(pipe(in), 0);
	assert_int_equal(pipe(out), 0);
	c->pid = fork();
	assert_true(c->pid >= 0);
	if (c->pid == 0) {
		dup2(in[0], 0);
		dup2(out[1], 1);
		close(in[1]);
		close(out[0]);
		execl(TARGET, TARGET, a1, a2, a3, (char *)NULL);
		_exit(127);
	}
	close(in[0]);
	close(out[1]);
	c->gate = in[1];
	assert_int_equal(read(out[0], buf, 6), 6);
	assert_memory_equal(buf, "ready\n", 6);
	close(out[0]);
}

static void child_start(struct child *c, long mallocs, long callocs)
{
	child_start3(c, mallocs, callocs, 0);
}

/* Open its gate and wait for its exit (status 0). */
static void child_finish(struct child *c)
{
	int status;

	assert_int_equal(write(c->gate, "g", 1), 1);
	close(c->gate);
	assert_int_equal(waitpid(c->pid, &status, 0), c->pid);
	assert_true(WIFEXITED(status));
	assert_int_equal(WEXITSTATUS(status), 0);
}

/* The libc pid maps (by its path in our mount namespace) and the file offsets of functions. */
static void libc_of(pid_t pid, char *path, size_t size, uint64_t *malloc_off, uint64_t *calloc_off)
{
	struct maps *m = NULL;
	struct elf_file *ef = NULL;
	struct elf_func fn;
	bool found = false;

	assert_int_equal(maps__read_pid(&m, "/proc", (uint32_t)pid), 0);
	for (size_t i = 0; i < m->count && !found; i++) {
		const char *p = m->entries[i].path, *slash = strrchr(p, '/');

		if (m->entries[i].exec && slash && !strcmp(slash, "/libc.so.6")) {
			snprintf(path, size, "%s", p);
			found = true;
		}
	}
	maps__free(m);
	assert_true(found);
	assert_int_equal(elf_file__open(&ef, path, NULL), 0);
	assert_int_equal(elf_file__find_symbol(ef, &fn, "malloc"), 0);
	*malloc_off = fn.file_offset;
	assert_int_equal(elf_file__find_symbol(ef, &fn, "calloc"), 0);
	*calloc_off = fn.file_offset;
	elf_file__free(ef);
}

/* What the programs counted for pid; false when they saw nothing of it. */
static bool counts_of(struct uprobe_multi_test_bpf *skel, pid_t pid, struct umt_counts *out)
{
	__u32 key = (__u32)pid;

	memset(out, 0, sizeof(*out));
	return bpf_map_lookup_elem(bpf_map__fd(skel->maps.umt_counts), &key, out) == 0;
}

/* Processes the programs saw. */
static unsigned processes_seen(struct uprobe_multi_test_bpf *skel)
{
	__u32 key, next, *prev = NULL;
	unsigned n = 0;

	while (!bpf_map_get_next_key(bpf_map__fd(skel->maps.umt_counts), prev, &next)) {
		key = next;
		prev = &key;
		n++;
	}
	return n;
}

/* The test object with prog of the given kind loaded; NULL when the kernel refuses it. */
static struct uprobe_multi_test_bpf *
open_with(struct bpf_program *(*pick)(struct uprobe_multi_test_bpf *), bool session)
{
	struct uprobe_multi_test_bpf *skel = uprobe_multi_test_bpf__open();
	struct bpf_program *prog;

	assert_non_null(skel);
	prog = pick(skel);
	assert_int_equal(bpf_program__set_autoload(prog, true), 0);
	assert_int_equal(uprobe_multi__set_type(prog, session), 0);
	if (!session) { /* the return program comes with the entry one */
		assert_int_equal(bpf_program__set_autoload(skel->progs.umt_return, true), 0);
		assert_int_equal(uprobe_multi__set_type(skel->progs.umt_return, false), 0);
	}
	if (uprobe_multi_test_bpf__load(skel)) {
		uprobe_multi_test_bpf__destroy(skel);
		return NULL;
	}
	return skel;
}

static struct bpf_program *pick_session(struct uprobe_multi_test_bpf *s)
{
	return s->progs.umt_session;
}

static struct bpf_program *pick_entry(struct uprobe_multi_test_bpf *s)
{
	return s->progs.umt_entry;
}

static void test_uprobe_multi__session_skips_returns(void **state)
{
	const long n = 100 * KEEP;
	struct uprobe_multi_test_bpf *skel;
	struct child a, b;
	struct umt_counts c;
	char libc[PATH_MAX];
	uint64_t malloc_off, calloc_off;
	bool has_session, has_multi;
	int fd = -1, err = -ENOTSUP;

	if (no_bpf)
		skip();
	assert_int_equal(uprobe_multi__supported(&has_session, &has_multi), 0);
	child_start(&a, n, 0);
	child_start(&b, n, 0);
	libc_of(a.pid, libc, sizeof(libc), &malloc_off, &calloc_off);
	/* The direct attempt: the session program on malloc's first instruction, for a only. */
	skel = open_with(pick_session, true);
	if (skel) {
		struct uprobe_multi_opts o = {.path = libc,
					      .offsets = &malloc_off,
					      .cnt = 1,
					      .pid = a.pid,
					      .session = true};

		err = uprobe_multi__attach(&fd, bpf_program__fd(skel->progs.umt_session), &o);
	}
	/* Feature detection says what the kernel does. */
	assert_int_equal(has_session, err == 0);
	child_finish(&a);
	child_finish(&b);
	if (fd >= 0)
		close(fd);
	if (!has_session) {
		uprobe_multi_test_bpf__destroy(skel);
		skip();
	}
	assert_true(counts_of(skel, a.pid, &c));
	assert_int_equal(c.entries, n);
	/* Only the calls whose entry returned 0 (one in KEEP) had their return run. */
	assert_int_equal(c.returns, n / KEEP);
	assert_int_equal(c.cookie_ok, n / KEEP);
	/* The second process ran the same libc's malloc as often: the pid filter kept it out. */
	assert_false(counts_of(skel, b.pid, &c));
	assert_int_equal(processes_seen(skel), 1);
	uprobe_multi_test_bpf__destroy(skel);
}

static void test_uprobe_multi__multi_cookies_pid(void **state)
{
	const long nm = 1000, nc = 300;
	struct uprobe_multi_test_bpf *skel;
	struct child a, b;
	struct umt_counts c;
	char libc[PATH_MAX];
	uint64_t offs[2], cookies[2] = {1, 2};
	bool has_session, has_multi;
	int fd_entry = -1, fd_return = -1, err = -ENOTSUP;

	if (no_bpf)
		skip();
	assert_int_equal(uprobe_multi__supported(&has_session, &has_multi), 0);
	child_start(&a, nm, nc);
	child_start(&b, nm, nc);
	libc_of(a.pid, libc, sizeof(libc), &offs[0], &offs[1]);
	skel = open_with(pick_entry, false);
	if (skel) {
		/* One link for both functions, a cookie each; the returns through a second link. */
		struct uprobe_multi_opts o = {
			.path = libc, .offsets = offs, .cookies = cookies, .cnt = 2, .pid = a.pid};

		err = uprobe_multi__attach(&fd_entry, bpf_program__fd(skel->progs.umt_entry), &o);
		if (!err) {
			o.retprobe = true;
			err = uprobe_multi__attach(&fd_return,
						   bpf_program__fd(skel->progs.umt_return), &o);
		}
	}
	assert_int_equal(has_multi, err == 0);
	child_finish(&a);
	child_finish(&b);
	if (fd_entry >= 0)
		close(fd_entry);
	if (fd_return >= 0)
		close(fd_return);
	if (!has_multi) {
		uprobe_multi_test_bpf__destroy(skel);
		skip();
	}
	assert_true(counts_of(skel, a.pid, &c));
	assert_int_equal(c.entries, nm + nc);
	assert_int_equal(c.entries_by_cookie[1], nm);
	assert_int_equal(c.entries_by_cookie[2], nc);
	assert_int_equal(c.returns, nm + nc);
	assert_int_equal(c.returns_by_cookie[1], nm);
	assert_int_equal(c.returns_by_cookie[2], nc);
	assert_false(counts_of(skel, b.pid, &c));
	assert_int_equal(processes_seen(skel), 1);
	uprobe_multi_test_bpf__destroy(skel);
}

/*
 * A session whose entry sits past the prologue's flag setters, as today's entry probes do
 * (glibc's posix_memalign begins with a single-stepped cmpb): the return is still found, and
 * the call still returns its value to its caller (malloc_count checks every result).
 */
static void test_uprobe_multi__session_after_prologue(void **state)
{
	const long n = 10 * KEEP;
	struct uprobe_multi_test_bpf *skel;
	struct elf_file *ef = NULL;
	struct elf_func fn;
	struct child a;
	struct umt_counts c;
	char libc[PATH_MAX];
	uint8_t code[64];
	uint64_t off, unused;
	bool has_session, has_multi;
	int fd = -1;

	if (no_bpf)
		skip();
	assert_int_equal(uprobe_multi__supported(&has_session, &has_multi), 0);
	if (!has_session)
		skip();
	child_start3(&a, 0, 0, n);
	libc_of(a.pid, libc, sizeof(libc), &unused, &unused);
	assert_int_equal(elf_file__open(&ef, libc, NULL), 0);
	assert_int_equal(elf_file__find_symbol(ef, &fn, "posix_memalign"), 0);
	assert_int_equal(elf_file__read_at(ef, code, sizeof(code), fn.file_offset), 0);
	elf_file__free(ef);
	off = fn.file_offset + prologue__probe_offset(code, sizeof(code));
	assert_true(off >
		    fn.file_offset); /* the placement under test: past the first instruction */
	skel = open_with(pick_session, true);
	assert_non_null(skel);

	struct uprobe_multi_opts o = {
		.path = libc, .offsets = &off, .cnt = 1, .pid = a.pid, .session = true};
	assert_int_equal(uprobe_multi__attach(&fd, bpf_program__fd(skel->progs.umt_session), &o),
			 0);
	child_finish(&a); /* exit status 0: every result was right */
	close(fd);
	assert_true(counts_of(skel, a.pid, &c));
	assert_int_equal(c.entries, n);
	assert_int_equal(c.returns, n / KEEP);
	assert_int_equal(c.cookie_ok, n / KEEP);
	uprobe_multi_test_bpf__destroy(skel);
}

static unsigned open_fds(void)
{
	DIR *d = opendir("/proc/self/fd");
	unsigned n = 0;

	assert_non_null(d);
	while (readdir(d))
		n++;
	closedir(d);
	return n;
}

/* Refusals come back as -errno, and neither a refusal nor the probe leaves a descriptor open. */
static void test_uprobe_multi__errors_and_fds(void **state)
{
	struct uprobe_multi_test_bpf *skel;
	struct child a;
	char libc[PATH_MAX];
	uint64_t off[2];
	bool has_session, has_multi;
	unsigned before;
	int fd = -1, prog_fd;
	pid_t gone;

	if (no_bpf)
		skip();
	before = open_fds();
	assert_int_equal(uprobe_multi__supported(&has_session, &has_multi), 0);
	assert_int_equal(open_fds(), before);
	if (!has_multi)
		skip();
	child_start(&a, 0, 0);
	libc_of(a.pid, libc, sizeof(libc), &off[0], &off[1]);
	child_finish(&a);
	gone = a.pid; /* reaped: no such process now */
	skel = open_with(pick_entry, false);
	assert_non_null(skel);
	prog_fd = bpf_program__fd(skel->progs.umt_entry);
	before = open_fds();

	struct uprobe_multi_opts o = {.path = libc, .offsets = off, .cnt = 1, .pid = gone};
	assert_int_equal(uprobe_multi__attach(&fd, prog_fd, &o), -ESRCH);
	assert_int_equal(fd, -1);
	o.pid = 0;
	o.path = "/nonexistent/libc.so.6";
	assert_int_equal(uprobe_multi__attach(&fd, prog_fd, &o), -ENOENT);
	o.path = libc;
	o.cnt = 0;
	assert_int_equal(uprobe_multi__attach(&fd, prog_fd, &o), -EINVAL);
	o.cnt = 1;
	o.session = o.retprobe = true;
	assert_int_equal(uprobe_multi__attach(&fd, prog_fd, &o), -EINVAL);
	/* A multi program is not a session one: the kernel refuses the mismatch. */
	o.retprobe = false;
	assert_int_equal(uprobe_multi__attach(&fd, prog_fd, &o), -EINVAL);
	assert_int_equal(open_fds(), before);
	uprobe_multi_test_bpf__destroy(skel);
}

static int setup(void **state)
{
	(void)state;
	if (bpf_or_skip(&no_bpf))
		return -1;
	return no_bpf || !access(TARGET, X_OK) ? 0 : -1;
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_uprobe_multi__session_skips_returns),
		cmocka_unit_test(test_uprobe_multi__multi_cookies_pid),
		cmocka_unit_test(test_uprobe_multi__session_after_prologue),
		cmocka_unit_test(test_uprobe_multi__errors_and_fds),
	};

	return cmocka_run_group_tests(tests, setup, NULL);
}
