// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/* /proc/PID/environ as preload__each reads it for the LD_PRELOAD names (proc/preload.c): a
 * process writes its own environment. */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "proc/preload.h"

struct seen {
	const char *lo, *hi; /* the input */
	unsigned names;
};

static int check(const char *name, size_t nlen, void *arg)
{
	struct seen *s = arg;

	/* Every name lies inside the input, is not empty, and holds no separator. */
	if (!nlen || name < s->lo || name + nlen > s->hi || memchr(name, ':', nlen) ||
	    memchr(name, ' ', nlen) || memchr(name, '\0', nlen) || ++s->names > PRELOAD_NAMES_MAX)
		__builtin_trap();
	return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char *text = malloc(size ? size : 1);
	struct seen s;

	if (!text)
		return 0;
	/* Exact-length buffer: ASan sees any read past the input. */
	memcpy(text, data, size);
	s = (struct seen){.lo = text, .hi = text + size};
	if (preload__each(text, size, check, &s))
		__builtin_trap();
	free(text);
	return 0;
}
