// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/* Symbol names from a target's ELF file, demangled for display. */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "sym/demangle.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char *name = malloc(size + 1), *out = NULL;

	if (!name)
		return 0;
	memcpy(name, data, size);
	name[size] = '\0';
	if (!demangle__name(&out, name) && !out)
		__builtin_trap();
	free(out);
	free(name);
	return 0;
}
