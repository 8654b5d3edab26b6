// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
#include "util/strarena.h"

#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

int strarena__add(struct strarena *a, size_t *out, const char *s, size_t len)
{
	if (len >= SIZE_MAX / 2 - a->len)
		return -ENOMEM;
	if (a->len + len + 1 > a->cap) {
		size_t ncap = a->cap ? a->cap * 2 : a->first_cap ? a->first_cap : 4096;
		char *n;

		while (a->len + len + 1 > ncap)
			ncap *= 2;
		n = realloc(a->buf, ncap);
		if (!n)
			return -ENOMEM;
		a->buf = n;
		a->cap = ncap;
	}
	memcpy(a->buf + a->len, s, len);
	a->buf[a->len + len] = '\0';
	*out = a->len;
	a->len += len + 1;
	return 0;
}

void strarena__release(struct strarena *a)
{
	free(a->buf);
	a->buf = NULL;
	a->len = 0;
	a->cap = 0;
}
