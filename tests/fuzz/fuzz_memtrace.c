// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/* memtrace traces, read back by `bpftrace-prof report FILE` (any writer's: foreign bytes), with
 * and without --at; the profile built from them is written out as pprof, folded and text. */
#include <errno.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "export/folded.h"
#include "trace/memtrace_read.h"
#include "export/pprof.h"
#include "export/text.h"
#include "profile/profile.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct memtrace_read_opts at = {.at = true, .at_s = 0.5};
	const struct memtrace_read_opts *opts[] = {NULL, &at};
	char msg[256];

	if (!size)
		return 0;
	for (size_t i = 0; i < 2; i++) {
		struct profile *p = NULL;
		FILE *f = fmemopen((void *)data, size, "r"), *out;
		int err;

		if (!f)
			return 0;
		err = memtrace_read__profile(&p, NULL, f, opts[i], msg, sizeof(msg));
		fclose(f);
		/* A refusal is -EBADMSG with its one line, or out of memory. */
		if (err && err != -EBADMSG && err != -ENOMEM)
			__builtin_trap();
		if (err == -EBADMSG && (!msg[0] || strchr(msg, '\n')))
			__builtin_trap();
		if (err)
			continue;
		out = fopen("/dev/null", "w");
		if (out) {
			pprof__write(p, out);
			folded__write(p, out);
			text__write(p, out, 5);
			fclose(out);
		}
		profile__free(p);
	}
	return 0;
}
