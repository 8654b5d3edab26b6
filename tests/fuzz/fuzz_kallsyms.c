// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/* /proc/kallsyms text, or a copy of it handed to us (symbolizer_opts.kallsyms). */
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "sym/kallsyms.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct kallsyms *k = NULL;
	uint64_t addr = 0;
	FILE *f;

	if (!size)
		return 0;
	f = fmemopen((void *)data, size, "r");
	if (!f)
		return 0;
	if (!kallsyms__parse(&k, f)) {
		const struct ksym *s;

		memcpy(&addr, data, size < sizeof(addr) ? size : sizeof(addr));
		kallsyms__resolve(k, 0);
		kallsyms__resolve(k, UINT64_MAX);
		s = kallsyms__resolve(k, addr);
		if (s && (s->addr > addr || !s->name[0] || (s->module && strlen(s->module) > size)))
			__builtin_trap();
		kallsyms__count(k);
		kallsyms__free(k);
	}
	fclose(f);
	return 0;
}
