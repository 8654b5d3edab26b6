// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/* /proc/PID/maps text, as a target's mappings (paths chosen by the target) make it. */
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "attach/calls_plan.h"
#include "proc/maps.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct calls_runtime_file files[4];
	struct maps *m = NULL;
	FILE *f;

	if (!size)
		return 0;
	f = fmemopen((void *)data, size, "r");
	if (!f)
		return 0;
	if (!maps__parse(&m, f)) {
		for (size_t i = 0; i < m->count; i++) {
			const struct maps_entry *e = &m->entries[i], *hit;

			/* What a lookup returns holds the address (the kernel's lines never
			 * overlap; these may, so which entry is found is not checked). */
			hit = maps__find(m, e->start);
			if (hit && (e->start < hit->start || e->start >= hit->end))
				__builtin_trap();
			maps__find(m, e->end);
			maps_entry__is_file(e);
			calls_plan__classify(e->path, &files[0]);
		}
		calls_plan__detect(m, files, sizeof(files) / sizeof(files[0]));
		maps__free(m);
	}
	fclose(f);
	return 0;
}
