// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * The OTLP response parser (user/export/otlp.c) on arbitrary bytes: what an OTLP receiver, or
 * anything answering at its address, sends back.  It must not read past the bytes, and what it
 * gives must be sane: the message NUL-terminated, printable and within its buffer, the count
 * zero when the bytes were refused; the same bytes always give the same answer.
 */
#include <ctype.h>
#include <errno.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "export/otlp.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct otlp_response a, b;
	/* A copy of exactly size bytes: ASan sees a read past the end. */
	uint8_t *copy = malloc(size ? size : 1);
	int err;

	if (!copy)
		return 0;
	memcpy(copy, data, size);
	err = otlp__parse_response(&a, copy, size);
	if (memchr(a.message, 0, sizeof(a.message)) == NULL)
		abort();
	for (size_t i = 0; a.message[i]; i++)
		if (!isprint((unsigned char)a.message[i]))
			abort();
	if (err && err != -EBADMSG)
		abort();
	if (otlp__parse_response(&b, copy, size) != err ||
	    a.rejected_profiles != b.rejected_profiles || strcmp(a.message, b.message))
		abort();
	if (!size && (err || a.rejected_profiles || a.message[0]))
		abort();
	free(copy);
	return 0;
}
