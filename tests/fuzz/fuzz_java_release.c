// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/* A JDK's `release` file, next to the target's libjvm.so: the target's bytes, no NUL. */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "attach/calls_plan.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	/* An exact-size copy, so that reading past size is an ASan error. */
	char *copy = malloc(size ? size : 1);

	if (!copy)
		return 0;
	memcpy(copy, data, size);
	calls_plan__java_release_major(copy, size);
	free(copy);
	return 0;
}
