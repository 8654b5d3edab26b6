// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/* The one gzip writer (util/gzfile.c), both faces, read back with zlib's inflate. */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <zlib.h>

#include <cmocka.h>

#include "util/gzfile.h"

#define N (300 * 1024) /* more than one 64 KiB output buffer, even compressed */

/* Bytes that compress, but not to nothing: a counter in text. */
static char *sample(void)
{
	char *s = malloc(N);
	size_t i = 0;

	assert_non_null(s);
	for (unsigned n = 0; i < N; n++)
		i += (size_t)snprintf(s + i, N - i, "%u,", n * 2654435761u);
	return s;
}

/* Inflates buf[0..len) as one gzip member into *out (N bytes at most); zlib's last return. */
static int gunzip(const char *buf, size_t len, char *out, size_t *outlen)
{
	z_stream z = {0};
	int ret;

	assert_int_equal(inflateInit2(&z, 15 + 16), Z_OK); /* gzip only: a raw zlib stream fails */
	z.next_in = (Bytef *)buf;
	z.avail_in = (uInt)len;
	z.next_out = (Bytef *)out;
	z.avail_out = N;
	ret = inflate(&z, Z_FINISH);
	*outlen = z.total_out;
	inflateEnd(&z);
	return ret;
}

static void test_gzfile__calls_roundtrip_in_pieces(void **state)
{
	char *in = sample(), *out = malloc(N), *buf = NULL;
	size_t len = 0, outlen;
	FILE *sink = open_memstream(&buf, &len);
	struct gzfile *g;

	(void)state;
	assert_non_null(out);
	assert_non_null(sink);
	assert_int_equal(gzfile__new(&g, sink), 0);
	for (size_t off = 0; off < N; off += 7000)
		assert_int_equal(gzfile__write(g, in + off, N - off < 7000 ? N - off : 7000), 0);
	assert_int_equal(gzfile__finish(g), 0);
	gzfile__free(g);
	assert_int_equal(fclose(sink), 0);
	assert_true(len > 2 && len < N);       /* digits and commas: it shrinks */
	assert_int_equal(buf[0] & 0xff, 0x1f); /* gzip magic */
	assert_int_equal(buf[1] & 0xff, 0x8b);
	assert_int_equal(gunzip(buf, len, out, &outlen), Z_STREAM_END);
	assert_int_equal(outlen, N);
	assert_memory_equal(out, in, N);
	free(buf);
	free(out);
	free(in);
}

static void test_gzfile__stream_roundtrips(void **state)
{
	char *in = sample(), *out = malloc(N), *buf = NULL;
	size_t len = 0, outlen;
	FILE *sink = open_memstream(&buf, &len), *f;

	(void)state;
	assert_non_null(out);
	assert_non_null(sink);
	assert_int_equal(gzfile__open(&f, sink), 0);
	assert_int_equal(fwrite(in, 1, N, f), N);
	assert_int_equal(fclose(f), 0);
	assert_int_equal(fclose(sink), 0);
	assert_int_equal(gunzip(buf, len, out, &outlen), Z_STREAM_END);
	assert_int_equal(outlen, N);
	assert_memory_equal(out, in, N);
	free(buf);
	free(out);
	free(in);
}

/* Freed unfinished, the member has no end: a failed writer's output never reads as complete. */
static void test_gzfile__free_without_finish_leaves_no_trailer(void **state)
{
	char *in = sample(), *out = malloc(N), *buf = NULL;
	size_t len = 0, outlen;
	FILE *sink = open_memstream(&buf, &len);
	struct gzfile *g;

	(void)state;
	assert_non_null(out);
	assert_non_null(sink);
	assert_int_equal(gzfile__new(&g, sink), 0);
	assert_int_equal(gzfile__write(g, in, N), 0);
	gzfile__free(g);
	assert_int_equal(fclose(sink), 0);
	assert_int_not_equal(gunzip(buf, len, out, &outlen), Z_STREAM_END);
	free(buf);
	free(out);
	free(in);
}

/* A sink that fails: the error is its errno, and it sticks. */
static void test_gzfile__sink_error_is_sticky(void **state)
{
	char *in = sample();
	FILE *sink = fopen("/dev/full", "w"), *f;
	struct gzfile *g;

	(void)state;
	if (!sink)
		skip();
	setvbuf(sink, NULL, _IONBF, 0); /* so the failure shows at once, not at fclose */
	assert_int_equal(gzfile__new(&g, sink), 0);
	assert_int_equal(gzfile__write(g, in, N), -ENOSPC);
	assert_int_equal(gzfile__write(g, "x", 1), -ENOSPC);
	assert_int_equal(gzfile__finish(g), -ENOSPC);
	gzfile__free(g);

	assert_int_equal(gzfile__open(&f, sink), 0);
	fputs("a few bytes, compressed at fclose", f);
	errno = 0;
	assert_int_equal(fclose(f), EOF);
	assert_int_equal(errno, ENOSPC);
	fclose(sink);
	free(in);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_gzfile__calls_roundtrip_in_pieces),
		cmocka_unit_test(test_gzfile__stream_roundtrips),
		cmocka_unit_test(test_gzfile__free_without_finish_leaves_no_trailer),
		cmocka_unit_test(test_gzfile__sink_error_is_sticky),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
