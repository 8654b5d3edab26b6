// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/* A perf map, /tmp/perf-PID.map: written by whoever owns (or guessed) the pid. */
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "sym/perfmap.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct perfmap *pm = NULL;
	uint64_t addr = 0;
	FILE *f;

	if (!size)
		return 0;
	f = fmemopen((void *)data, size, "r");
	if (!f)
		return 0;
	if (!perfmap__parse(&pm, f)) {
		const struct perfmap_sym *s;

		if (perfmap__file_size(pm) > size)
			__builtin_trap();
		/* Lookups at addresses taken from the input, and at 0 and the top. */
		memcpy(&addr, data, size < sizeof(addr) ? size : sizeof(addr));
		perfmap__resolve(pm, 0);
		perfmap__resolve(pm, UINT64_MAX);
		s = perfmap__resolve(pm, addr);
		if (s && (addr < s->start || addr - s->start >= s->size || !s->name[0]))
			__builtin_trap();
		perfmap__count(pm);
		perfmap__free(pm);
	}
	fclose(f);
	return 0;
}
