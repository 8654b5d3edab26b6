// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/* The push spool on real files in a temporary directory: what is written is read back whole,
 * oldest first; damaged, old and over-the-bound files are counted where they went. */
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
#include <time.h>
#include <unistd.h>

#include <cmocka.h>

#include "export/push.h"
#include "export/spool.h"

struct fixture {
	char dir[64];
	char spool[80];
	struct spool *s;
};

static const struct spool_opts opts = {.max_files = 10, .max_bytes = 1 << 20, .max_age_s = 3600};

static int setup(void **state)
{
	struct fixture *fx = calloc(1, sizeof(*fx));

	if (!fx)
		return -1;
	strcpy(fx->dir, "/tmp/test_spool.XXXXXX");
	if (!mkdtemp(fx->dir)) {
		free(fx);
		return -1;
	}
	snprintf(fx->spool, sizeof(fx->spool), "%s/spool", fx->dir);
	*state = fx;
	return 0;
}

static int teardown(void **state)
{
	struct fixture *fx = *state;
	char cmd[128];

	spool__free(fx->s);
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", fx->dir);
	if (system(cmd) != 0)
		return -1;
	free(fx);
	return 0;
}

/* A record pointing at fixed strings (spool__write copies nothing it keeps). */
static struct spool_rec rec(int64_t from_ns, struct push_label *labels, uint32_t nlabels)
{
	static char name[] = "process_cpu";
	static uint8_t data[] = {0x1f, 0x8b, 0, '\n', ' ', '%', 0xff};
	struct spool_rec r = {
		.name = name,
		.labels = labels,
		.nlabels = nlabels,
		.from_ns = from_ns,
		.until_ns = from_ns + 10,
		.data = data,
		.len = sizeof(data),
	};

	snprintf(r.id, sizeof(r.id), "id-%lld", (long long)from_ns);
	return r;
}

static void test_spool__written_then_read_back_whole(void **state)
{
	struct fixture *fx = *state;
	/* Spaces, '%', a newline: escaped in the file, whole when read back. */
	struct push_label labels[] = {{"service_name", "my app 100%"}, {"hostname", "h\nx"}};
	struct spool_rec w = rec(1700000000123456789LL, labels, 2), r = {0};
	char name[SPOOL_NAME_LEN], path[256];
	struct stat st;
	uint64_t size = 0;

	assert_int_equal(spool__open(&fx->s, fx->dir, &opts), 0);
	assert_string_equal(spool__path(fx->s), fx->spool);
	assert_int_equal(stat(fx->spool, &st), 0);
	assert_int_equal(st.st_mode & 0777, 0700);
	assert_int_equal(spool__write(fx->s, &w), 0);
	assert_int_equal(spool__files(fx->s), 1);

	assert_int_equal(spool__read_oldest(fx->s, &r, name, &size), 0);
	/* Named by the start time (then pid and a sequence number): oldest first. */
	assert_memory_equal(name, "1700000000123456789-", 20);
	snprintf(path, sizeof(path), "%s/%s", fx->spool, name);
	assert_int_equal(stat(path, &st), 0);
	assert_int_equal(st.st_mode & 0777, 0600);
	assert_int_equal(size, (uint64_t)st.st_size);
	assert_string_equal(r.name, "process_cpu");
	assert_string_equal(r.id, "id-1700000000123456789");
	assert_int_equal(r.from_ns, w.from_ns);
	assert_int_equal(r.until_ns, w.until_ns);
	assert_int_equal(r.nlabels, 2);
	assert_string_equal(r.labels[0].name, "service_name");
	assert_string_equal(r.labels[0].value, "my app 100%");
	assert_string_equal(r.labels[1].value, "h\nx");
	assert_int_equal(r.len, w.len);
	assert_memory_equal(r.data, w.data, w.len);
	spool_rec__clear(&r);

	spool__remove(fx->s, name, size);
	assert_int_equal(spool__files(fx->s), 0);
	assert_int_equal(access(path, F_OK), -1);
}

static void test_spool__oldest_first(void **state)
{
	struct fixture *fx = *state;
	struct spool_rec late = rec(2000, NULL, 0), early = rec(1000, NULL, 0), r = {0};
	char name[SPOOL_NAME_LEN];
	uint64_t size;

	assert_int_equal(spool__open(&fx->s, fx->dir, &opts), 0);
	assert_int_equal(spool__write(fx->s, &late), 0);
	assert_int_equal(spool__write(fx->s, &early), 0);
	assert_int_equal(spool__read_oldest(fx->s, &r, name, &size), 0);
	assert_int_equal(r.from_ns, 1000);
	spool_rec__clear(&r);
	spool__remove(fx->s, name, size);
	memset(&r, 0, sizeof(r));
	assert_int_equal(spool__read_oldest(fx->s, &r, name, &size), 0);
	assert_int_equal(r.from_ns, 2000);
	spool_rec__clear(&r);
	spool__remove(fx->s, name, size);
	assert_int_equal(spool__read_oldest(fx->s, &r, name, &size), 0);
	assert_string_equal(name, "");
}

/* Not ours or damaged: deleted (it would block the spool for ever) and counted as dropped. */
static void test_spool__unreadable_file_deleted_and_counted(void **state)
{
	struct fixture *fx = *state;
	struct push_stats st = {0};
	struct spool_rec r = {0};
	char name[SPOOL_NAME_LEN], path[256];
	uint64_t size;
	int fd;

	assert_int_equal(mkdir(fx->spool, 0700), 0);
	snprintf(path, sizeof(path), "%s/0000000000000000001-1-1.spool", fx->spool);
	fd = open(path, O_WRONLY | O_CREAT | O_EXCL, 0600);
	assert_true(fd >= 0);
	assert_int_equal(write(fd, "not a spool file\n", 17), 17);
	close(fd);
	assert_int_equal(spool__open(&fx->s, fx->dir, &opts), 0);
	assert_int_equal(spool__files(fx->s), 1);
	assert_int_equal(spool__read_oldest(fx->s, &r, name, &size), 0);
	assert_string_equal(name, "");
	spool_rec__clear(&r);
	assert_int_equal(access(path, F_OK), -1);
	assert_int_equal(spool__files(fx->s), 0);
	spool__add_stats(fx->s, &st);
	assert_int_equal(st.dropped, 1);
	assert_int_equal(st.aged_out, 0);
}

/* Older than max_age_s: deleted unsent when the spool is opened (and counted). */
static void test_spool__old_file_aged_out(void **state)
{
	struct fixture *fx = *state;
	struct spool_rec w = rec(1000, NULL, 0), r = {0};
	struct timespec old[2] = {{.tv_sec = time(NULL) - 7200}, {.tv_sec = time(NULL) - 7200}};
	struct push_stats st = {0};
	char name[SPOOL_NAME_LEN], path[256];
	uint64_t size;

	assert_int_equal(spool__open(&fx->s, fx->dir, &opts), 0);
	assert_int_equal(spool__write(fx->s, &w), 0);
	assert_int_equal(spool__read_oldest(fx->s, &r, name, &size), 0);
	spool_rec__clear(&r);
	snprintf(path, sizeof(path), "%s/%s", fx->spool, name);
	assert_int_equal(utimensat(AT_FDCWD, path, old, 0), 0);
	spool__free(fx->s);
	fx->s = NULL;

	assert_int_equal(spool__open(&fx->s, fx->dir, &opts), 0);
	assert_int_equal(spool__files(fx->s), 0);
	assert_int_equal(access(path, F_OK), -1);
	spool__add_stats(fx->s, &st);
	assert_int_equal(st.aged_out, 1);
	assert_int_equal(st.dropped, 0);
}

static void test_spool__full_refuses(void **state)
{
	struct fixture *fx = *state;
	struct spool_opts one = opts;
	struct spool_rec w = rec(1000, NULL, 0);

	one.max_files = 1;
	assert_int_equal(spool__open(&fx->s, fx->dir, &one), 0);
	assert_int_equal(spool__write(fx->s, &w), 0);
	assert_int_equal(spool__write(fx->s, &w), -ENOSPC);
	assert_int_equal(spool__files(fx->s), 1);
}

/* Its files are read back: a spool others may write in is refused. */
static void test_spool__writable_by_others_refused(void **state)
{
	struct fixture *fx = *state;

	assert_int_equal(mkdir(fx->spool, 0700), 0);
	assert_int_equal(chmod(fx->spool, 0777), 0);
	assert_int_equal(spool__open(&fx->s, fx->dir, &opts), -EPERM);
	assert_null(fx->s);
}

int main(void)
{
#define T(name) cmocka_unit_test_setup_teardown(name, setup, teardown)
	const struct CMUnitTest tests[] = {
		T(test_spool__written_then_read_back_whole),
		T(test_spool__oldest_first),
		T(test_spool__unreadable_file_deleted_and_counted),
		T(test_spool__old_file_aged_out),
		T(test_spool__full_refuses),
		T(test_spool__writable_by_others_refused),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
#undef T
}
