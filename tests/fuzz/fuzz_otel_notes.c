// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/* An ELF file's .note.stapsdt, read for the otel_memory probes (any mapped file of a target). */
#include <errno.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "attach/otel_notes.h"

struct mem {
	const uint8_t *data;
	size_t size;
};

/* Reads past the end are refused, as pread's short read is: the parser must bound them. */
static int read_mem(void *ctx, void *buf, size_t len, uint64_t off)
{
	const struct mem *m = ctx;

	if (off > m->size || len > m->size - off)
		__builtin_trap();
	memcpy(buf, m->data + off, len);
	return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct mem m = {data, size};
	unsigned found = 0;
	int err;

	/* The whole input as a file, and as the bytes of a section. */
	err = otel_notes__read(&found, read_mem, &m, size);
	if ((err && found) ||
	    (found & ~(unsigned)(OTEL_NOTES_BOTH | OTEL_NOTES_LOST | OTEL_NOTES_NOP5)))
		__builtin_trap();
	if (otel_notes__scan(data, size) & ~(unsigned)(OTEL_NOTES_BOTH | OTEL_NOTES_LOST))
		__builtin_trap();
	return 0;
}
