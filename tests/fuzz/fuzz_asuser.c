// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/* /proc/PID/status as -f codetracer's source copier reads it for the credentials to open a file
 * with (proc/asuser.c): the kernel writes it, but a process names itself in its first line. */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "proc/asuser.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct asuser_cred c, again;
	char *text = malloc(size ? size : 1);

	if (!text)
		return 0;
	/* Exact-length buffer: ASan sees any read past the input. */
	memcpy(text, data, size);
	if (!asuser__parse_status(&c, text, size)) {
		if (c.ngroups > ASUSER_GROUPS_MAX)
			__builtin_trap();
		if (asuser__parse_status(&again, text, size) || !asuser__same_cred(&c, &again))
			__builtin_trap();
	}
	free(text);
	return 0;
}
