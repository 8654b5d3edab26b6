// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * Who keeps a probed file: the processes mapping it and the roots / executables it was probed
 * for while a process runs in them.  Each test asserts the exact set the sweep hands back.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <errno.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cmocka.h>

#include "attach/owners.h"

#define K(i) (&(struct owners_key){.dev = 8, .ino = (i)})

/* What a sweep handed back, as "f3 f7 r100 i200 " in the order given. */
struct gone {
	char text[512];
};

static void note_gone(void *ctx, enum owners_kind kind, const struct owners_key *key)
{
	struct gone *g = ctx;
	char one[32];

	snprintf(one, sizeof(one), "%c%llu ",
		 kind == OWNERS_FILE   ? 'f'
		 : kind == OWNERS_ROOT ? 'r'
				       : 'i',
		 (unsigned long long)key->ino);
	strncat(g->text, one, sizeof(g->text) - strlen(g->text) - 1);
}

/* The sweep's result with files sorted (hash order is not ours to assert). */
static void sweep(struct owners *o, const char *want, int want_n)
{
	struct gone g = {{0}};
	char *words[64], *save = NULL, sorted[512] = "";
	int n = 0;

	assert_int_equal(owners__sweep(o, note_gone, &g), want_n);
	for (char *w = strtok_r(g.text, " ", &save); w && n < 64; w = strtok_r(NULL, " ", &save))
		words[n++] = w;
	/* groups first (by letter), then files; within each, by number */
	for (int i = 1; i < n; i++)
		for (int j = i; j > 0; j--) {
			char *a = words[j - 1], *b = words[j];
			int ga = a[0] != 'f', gb = b[0] != 'f';

			if (ga < gb ||
			    (ga == gb && (a[0] > b[0] ||
					  (a[0] == b[0] && strtoull(a + 1, NULL, 10) >
								   strtoull(b + 1, NULL, 10))))) {
				words[j - 1] = b;
				words[j] = a;
			}
		}
	for (int i = 0; i < n; i++) {
		strcat(sorted, words[i]);
		strcat(sorted, " ");
	}
	assert_string_equal(sorted, want);
}

static void test_owners__file_goes_with_its_last_process(void **state)
{
	const struct owners_key a[] = {*K(1), *K(2), *K(3)}, b[] = {*K(2), *K(4)};
	struct owners *o;

	(void)state;
	assert_int_equal(owners__new(&o), 0);
	assert_int_equal(owners__set_files(o, 100, a, 3), 0);
	assert_int_equal(owners__set_files(o, 200, b, 2), 0);
	assert_int_equal(owners__file_refs(o, K(2)), 2);
	sweep(o, "", 0); /* everybody alive: nothing goes */
	owners__release(o, 100);
	assert_int_equal(owners__file_refs(o, K(2)), 1);
	sweep(o, "f1 f3 ", 2);
	assert_int_equal(owners__file_refs(o, K(1)), 0);
	sweep(o, "", 0); /* handed back once */
	owners__release(o, 200);
	owners__release(o, 200); /* twice is nothing */
	sweep(o, "f2 f4 ", 2);
	owners__free(o);
}

static void test_owners__duplicates_count_once(void **state)
{
	const struct owners_key a[] = {*K(5), *K(1), *K(5), *K(1), *K(5)};
	struct owners *o;

	(void)state;
	assert_int_equal(owners__new(&o), 0);
	/* a file with several executable segments shows up once per segment */
	assert_int_equal(owners__set_files(o, 7, a, 5), 0);
	assert_int_equal(owners__set_files(o, 7, a, 5), 0); /* a DLOPEN re-read: the same */
	assert_int_equal(owners__file_refs(o, K(5)), 1);
	assert_int_equal(owners__file_refs(o, K(1)), 1);
	owners__release(o, 7);
	sweep(o, "f1 f5 ", 2);
	owners__free(o);
}

/* exec (or a dlclose): the files of the image before that the new one lacks lose the pid. */
static void test_owners__exec_replaces_a_process_files(void **state)
{
	const struct owners_key before[] = {*K(1), *K(2), *K(3)}, after[] = {*K(3), *K(9)};
	struct owners *o;

	(void)state;
	assert_int_equal(owners__new(&o), 0);
	assert_int_equal(owners__set_files(o, 42, before, 3), 0);
	assert_int_equal(owners__set_files(o, 42, after, 2), 0);
	assert_int_equal(owners__file_refs(o, K(3)), 1);
	assert_int_equal(owners__file_refs(o, K(9)), 1);
	sweep(o, "f1 f2 ", 2);
	/* and back: a file that went comes again as new */
	assert_int_equal(owners__set_files(o, 42, before, 3), 0);
	assert_int_equal(owners__file_refs(o, K(1)), 1);
	sweep(o, "f9 ", 1);
	assert_int_equal(owners__set_files(o, 42, NULL, 0), 0);
	sweep(o, "f1 f2 f3 ", 3);
	owners__free(o);
}

/* A root keeps the files probed in advance for it while a process runs there, even files no
 * process maps; its last process gone, the root goes first, then those files. */
static void test_owners__root_keeps_its_files_while_a_process_runs_there(void **state)
{
	const struct owners_key maps[] = {*K(1)};
	struct owners *o;

	(void)state;
	assert_int_equal(owners__new(&o), 0);
	assert_int_equal(owners__join(o, 10, OWNERS_ROOT, K(100)), 0);
	assert_int_equal(owners__join(o, 11, OWNERS_ROOT, K(100)), 0);
	assert_int_equal(owners__join(o, 11, OWNERS_ROOT, K(100)), 0); /* again: one process */
	assert_int_equal(owners__group_pids(o, OWNERS_ROOT, K(100)), 2);
	assert_int_equal(owners__group_file(o, OWNERS_ROOT, K(100), K(1)), 0);
	assert_int_equal(owners__group_file(o, OWNERS_ROOT, K(100), K(2)), 0);
	assert_int_equal(owners__group_file(o, OWNERS_ROOT, K(100), K(2)), 0);
	assert_int_equal(owners__set_files(o, 10, maps, 1), 0);
	assert_int_equal(owners__file_refs(o, K(1)), 2); /* the root and process 10 */
	assert_int_equal(owners__file_refs(o, K(2)), 1);
	owners__release(o, 10);
	sweep(o, "", 0); /* 11 still runs there */
	owners__release(o, 11);
	sweep(o, "r100 f1 f2 ", 3);
	assert_int_equal(owners__group_pids(o, OWNERS_ROOT, K(100)), 0);
	/* a process there later: the root is new again (its caller probes it afresh) */
	assert_int_equal(owners__join(o, 12, OWNERS_ROOT, K(100)), 0);
	assert_int_equal(owners__group_pids(o, OWNERS_ROOT, K(100)), 1);
	assert_int_equal(owners__file_refs(o, K(2)), 0);
	owners__free(o);
}

/* Files probed for a group nobody joined go at the sweep with the group. */
static void test_owners__group_without_process_goes(void **state)
{
	struct owners *o;

	(void)state;
	assert_int_equal(owners__new(&o), 0);
	assert_int_equal(owners__group_file(o, OWNERS_IMAGE, K(300), K(3)), 0);
	assert_int_equal(owners__group_file(o, OWNERS_FILE, K(300), K(3)), -EINVAL);
	assert_int_equal(owners__join(o, 1, OWNERS_FILE, K(300)), -EINVAL);
	sweep(o, "i300 f3 ", 2);
	owners__free(o);
}

/* An exec into another executable leaves the old image (and a chroot the old root). */
static void test_owners__join_moves_a_process_between_groups(void **state)
{
	struct owners *o;

	(void)state;
	assert_int_equal(owners__new(&o), 0);
	assert_int_equal(owners__join(o, 5, OWNERS_IMAGE, K(200)), 0);
	assert_int_equal(owners__join(o, 5, OWNERS_ROOT, K(100)), 0);
	assert_int_equal(owners__group_file(o, OWNERS_IMAGE, K(200), K(1)), 0);
	assert_int_equal(owners__group_file(o, OWNERS_IMAGE, K(201), K(2)), 0);
	assert_int_equal(owners__join(o, 5, OWNERS_IMAGE, K(201)), 0);
	assert_int_equal(owners__group_pids(o, OWNERS_IMAGE, K(200)), 0);
	assert_int_equal(owners__group_pids(o, OWNERS_IMAGE, K(201)), 1);
	assert_int_equal(owners__group_pids(o, OWNERS_ROOT, K(100)), 1);
	sweep(o, "i200 f1 ", 2);
	owners__release(o, 5);
	sweep(o, "i201 r100 f2 ", 3);
	owners__free(o);
}

/* A child that does not exec maps what its parent maps, in its root and image, after the
 * parent is gone too. */
static void test_owners__fork_copies_the_parent(void **state)
{
	const struct owners_key parent[] = {*K(1), *K(2)}, stale[] = {*K(7)};
	struct owners *o;

	(void)state;
	assert_int_equal(owners__new(&o), 0);
	assert_int_equal(owners__set_files(o, 1, parent, 2), 0);
	assert_int_equal(owners__join(o, 1, OWNERS_ROOT, K(100)), 0);
	assert_int_equal(owners__join(o, 1, OWNERS_IMAGE, K(200)), 0);
	/* pid 2 was somebody else before: what it kept is gone */
	assert_int_equal(owners__set_files(o, 2, stale, 1), 0);
	assert_int_equal(owners__fork(o, 2, 1), 0);
	assert_int_equal(owners__file_refs(o, K(1)), 2);
	assert_int_equal(owners__group_pids(o, OWNERS_ROOT, K(100)), 2);
	assert_int_equal(owners__group_pids(o, OWNERS_IMAGE, K(200)), 2);
	sweep(o, "f7 ", 1);
	owners__release(o, 1);
	sweep(o, "", 0);
	/* a parent we never saw: the child keeps nothing */
	assert_int_equal(owners__fork(o, 3, 99), 0);
	owners__release(o, 2);
	sweep(o, "i200 r100 f1 f2 ", 4);
	owners__free(o);
}

static void test_owners__group_fd_is_the_files_identity(void **state)
{
	char path[] = "/tmp/test_owners.XXXXXX";
	struct owners *o;
	struct stat st;
	int fd = mkstemp(path);

	(void)state;
	assert_true(fd >= 0);
	unlink(path);
	assert_int_equal(fstat(fd, &st), 0);
	assert_int_equal(owners__new(&o), 0);
	assert_int_equal(owners__group_fd(o, OWNERS_ROOT, K(100), fd), 0);
	assert_int_equal(
		owners__file_refs(o, &(struct owners_key){.dev = st.st_dev, .ino = st.st_ino}), 1);
	close(fd);
	assert_int_equal(owners__group_fd(o, OWNERS_ROOT, K(100), fd), -EBADF);
	owners__free(o);
}

/* Many processes and files: counts stay exact through growth of every table. */
static void test_owners__many(void **state)
{
	struct owners_key files[8];
	struct owners *o;
	struct gone g = {{0}};

	(void)state;
	assert_int_equal(owners__new(&o), 0);
	for (uint32_t pid = 1; pid <= 3000; pid++) {
		for (unsigned i = 0; i < 8; i++)
			files[i] = *K(pid % 50 + i);
		assert_int_equal(owners__set_files(o, pid, files, 8), 0);
		assert_int_equal(owners__join(o, pid, OWNERS_ROOT, K(1000 + pid % 7)), 0);
	}
	assert_int_equal(owners__file_refs(o, K(0)), 60); /* pid % 50 == 0 only */
	for (uint32_t pid = 1; pid <= 3000; pid++)
		if (pid % 50 != 0)
			owners__release(o, pid);
	/* left: pids 50, 100, …: files 0..7, and the roots those pids are in */
	assert_int_equal(owners__file_refs(o, K(0)), 60);
	assert_int_equal(owners__file_refs(o, K(7)), 60);
	assert_int_equal(owners__sweep(o, note_gone, &g), 57 - 8);
	for (uint32_t pid = 50; pid <= 3000; pid += 50)
		owners__release(o, pid);
	assert_int_equal(owners__sweep(o, note_gone, &g), 7 + 8);
	owners__free(o);
}

static int cmp_u32(const void *a, const void *b)
{
	uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;

	return x < y ? -1 : x > y;
}

/* Who maps a file (a wide scope's allocator file probed per process), and what one maps. */
static void test_owners__pids_of_a_file_and_files_of_a_pid(void **state)
{
	struct owners_key a[] = {*K(3), *K(1)}, b[] = {*K(1)}, c[] = {*K(2)};
	const struct owners_key *files;
	struct owners *o;
	uint32_t *pids;
	size_t n;

	(void)state;
	assert_int_equal(owners__new(&o), 0);
	assert_int_equal(owners__pids_of(o, K(1), &pids, &n), 0);
	assert_int_equal(n, 0);
	free(pids);
	for (uint32_t pid = 1; pid <= 40; pid++) /* past the first allocation of the list */
		assert_int_equal(owners__set_files(o, pid, pid % 2 ? a : b, pid % 2 ? 2 : 1), 0);
	assert_int_equal(owners__set_files(o, 99, c, 1), 0);
	assert_int_equal(owners__fork(o, 100, 99), 0);
	assert_int_equal(owners__pids_of(o, K(1), &pids, &n), 0);
	assert_int_equal(n, 40);
	qsort(pids, n, sizeof(*pids), cmp_u32);
	for (uint32_t i = 0; i < 40; i++)
		assert_int_equal(pids[i], i + 1);
	free(pids);
	assert_int_equal(owners__pids_of(o, K(3), &pids, &n), 0);
	assert_int_equal(n, 20);
	free(pids);
	assert_int_equal(owners__pids_of(o, K(2), &pids, &n), 0);
	qsort(pids, n, sizeof(*pids), cmp_u32);
	assert_int_equal(n, 2);
	assert_int_equal(pids[0], 99);
	assert_int_equal(pids[1], 100);
	free(pids);
	/* sorted, as set */
	assert_int_equal(owners__files_of(o, 7, &files), 2);
	assert_int_equal(files[0].ino, 1);
	assert_int_equal(files[1].ino, 3);
	owners__release(o, 7);
	assert_int_equal(owners__files_of(o, 7, &files), 0);
	assert_null(files);
	assert_int_equal(owners__pids_of(o, K(3), &pids, &n), 0);
	assert_int_equal(n, 19);
	free(pids);
	owners__free(o);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_owners__file_goes_with_its_last_process),
		cmocka_unit_test(test_owners__duplicates_count_once),
		cmocka_unit_test(test_owners__exec_replaces_a_process_files),
		cmocka_unit_test(test_owners__root_keeps_its_files_while_a_process_runs_there),
		cmocka_unit_test(test_owners__group_without_process_goes),
		cmocka_unit_test(test_owners__join_moves_a_process_between_groups),
		cmocka_unit_test(test_owners__fork_copies_the_parent),
		cmocka_unit_test(test_owners__group_fd_is_the_files_identity),
		cmocka_unit_test(test_owners__many),
		cmocka_unit_test(test_owners__pids_of_a_file_and_files_of_a_pid),
	};

	return cmocka_run_group_tests_name("owners", tests, NULL, NULL);
}
