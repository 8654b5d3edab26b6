// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
#include "sym/minidebug.h"

#include <errno.h>
#include <lzma.h>
#include <stdint.h>
#include <stdlib.h>

int minidebug__inflate(void **out, size_t *out_len, const void *xz, size_t len, size_t max)
{
	lzma_stream strm = LZMA_STREAM_INIT;
	size_t cap = len * 4 < max ? len * 4 : max, used;
	uint8_t *buf = NULL, *grown;
	lzma_ret ret;
	int err;

	*out = NULL;
	*out_len = 0;
	if (len > MINIDEBUG_MAX_IN)
		return -EFBIG;
	if (cap < 4096)
		cap = max < 4096 ? max : 4096;
	if (!cap)
		return -EFBIG;
	ret = lzma_stream_decoder(&strm, MINIDEBUG_MEMLIMIT, 0);
	if (ret != LZMA_OK)
		return ret == LZMA_MEM_ERROR ? -ENOMEM : -ENOEXEC;
	buf = malloc(cap);
	if (!buf) {
		err = -ENOMEM;
		goto cleanup;
	}
	strm.next_in = xz;
	strm.avail_in = len;
	strm.next_out = buf;
	strm.avail_out = cap;
	for (;;) {
		/* All input is given at once: LZMA_FINISH, so a truncated stream is an error. */
		ret = lzma_code(&strm, LZMA_FINISH);
		if (ret == LZMA_STREAM_END)
			break;
		if (ret != LZMA_OK && ret != LZMA_BUF_ERROR) {
			err = ret == LZMA_MEM_ERROR ? -ENOMEM : -ENOEXEC;
			goto cleanup;
		}
		if (strm.avail_out) {
			if (ret == LZMA_OK)
				continue;
			err = -ENOEXEC; /* no progress with room left: truncated */
			goto cleanup;
		}
		if (cap == max) {
			err = -EFBIG;
			goto cleanup;
		}
		used = cap;
		cap = cap > max / 2 ? max : 2 * cap;
		grown = realloc(buf, cap);
		if (!grown) {
			err = -ENOMEM;
			goto cleanup;
		}
		buf = grown;
		strm.next_out = buf + used;
		strm.avail_out = cap - used;
	}
	*out_len = (size_t)(strm.next_out - buf);
	*out = buf;
	buf = NULL;
	err = 0;
cleanup:
	lzma_end(&strm);
	free(buf);
	return err;
}
