// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
#include "util/gzfile.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <zlib.h>

struct gzfile {
	z_stream z;
	FILE *sink;
	int err; /* first failure, sticky: 0 or an errno */
	unsigned char out[64 * 1024];
};

static int deflate_to_sink(struct gzfile *g, const void *data, size_t len, int flush)
{
	int ret;

	g->z.next_in = (Bytef *)data;
	g->z.avail_in = (uInt)len;
	do {
		size_t have;

		g->z.next_out = g->out;
		g->z.avail_out = sizeof(g->out);
		ret = deflate(&g->z, flush);
		if (ret == Z_STREAM_ERROR)
			return EIO;
		have = sizeof(g->out) - g->z.avail_out;
		if (have && fwrite(g->out, 1, have, g->sink) != have)
			return errno ? errno : EIO;
	} while (g->z.avail_out == 0 || (flush == Z_FINISH && ret != Z_STREAM_END));
	return 0;
}

static ssize_t gz_write(void *cookie, const char *buf, size_t size)
{
	struct gzfile *g = cookie;

	if (!g->err)
		g->err = deflate_to_sink(g, buf, size, Z_NO_FLUSH);
	if (g->err) {
		errno = g->err;
		return -1;
	}
	return (ssize_t)size;
}

static int gz_close(void *cookie)
{
	struct gzfile *g = cookie;
	int err;

	if (!g->err)
		g->err = deflate_to_sink(g, NULL, 0, Z_FINISH);
	err = g->err;
	deflateEnd(&g->z);
	free(g);
	if (err) {
		errno = err;
		return -1;
	}
	return 0;
}

int gzfile__open(FILE **out, FILE *sink)
{
	cookie_io_functions_t io = {.write = gz_write, .close = gz_close};
	struct gzfile *g = calloc(1, sizeof(*g));
	FILE *f;

	if (!g)
		return -ENOMEM;
	g->sink = sink;
	/* windowBits 15 + 16: a gzip header and trailer.  Level 1: traces are large and
	 * repetitive, the fastest level already shrinks them several times. */
	if (deflateInit2(&g->z, 1, Z_DEFLATED, 15 + 16, 8, Z_DEFAULT_STRATEGY) != Z_OK) {
		free(g);
		return -ENOMEM;
	}
	f = fopencookie(g, "w", io);
	if (!f) {
		deflateEnd(&g->z);
		free(g);
		return -ENOMEM;
	}
	*out = f;
	return 0;
}
