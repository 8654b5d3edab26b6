// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/* The first bytes of a target's function, decoded to place its entry probe. */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "attach/prologue.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	uint8_t *copy = malloc(size ? size : 1);
	size_t off;

	if (!copy)
		return 0;
	memcpy(copy, data, size);
	off = prologue__probe_offset(copy, size);
	/* The probe lands on an instruction inside the bytes read. */
	if (off && off >= size)
		__builtin_trap();
	free(copy);
	return 0;
}
